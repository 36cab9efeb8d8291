//! Trace identity: values used in a trace they do not belong to fail it with a typed error that
//! names the operation; traced values used in direct mode panic with a message that says so.

use crate::cf::{self, Flow};
use crate::gpu::{self, Block, Grid};
use crate::{trace, Ptr, TraceError, Val, ValueOrigin};
use std::cell::Cell;

thread_local! {
    static KEPT_I32: Cell<Option<Val<i32>>> = const { Cell::new(None) };
    static KEPT_BOOL: Cell<Option<Val<bool>>> = const { Cell::new(None) };
    static KEPT_PTR: Cell<Option<Ptr<i32>>> = const { Cell::new(None) };
}

/// Traces a function that stores its parameters in the thread-locals above; the values outlive
/// their trace.
fn keep_values_of_a_finished_trace() {
    trace(&|x: Val<i32>, p: Ptr<i32>| {
        KEPT_I32.with(|k| k.set(Some(x)));
        KEPT_BOOL.with(|k| k.set(Some(x.lt(0))));
        KEPT_PTR.with(|k| k.set(Some(p)));
        x
    })
    .expect("the first trace is fine");
}

fn kept_i32() -> Val<i32> {
    KEPT_I32.with(|k| k.get()).expect("kept")
}
fn kept_bool() -> Val<bool> {
    KEPT_BOOL.with(|k| k.get()).expect("kept")
}
fn kept_ptr() -> Ptr<i32> {
    KEPT_PTR.with(|k| k.get()).expect("kept")
}

/// The parts of a `ForeignValue` error, and its message.
#[track_caller]
fn foreign(r: Result<crate::Traced, TraceError>) -> (&'static str, ValueOrigin, String, String) {
    match r {
        Err(e @ TraceError::ForeignValue { .. }) => {
            let message = e.to_string();
            let TraceError::ForeignValue {
                operation,
                origin,
                value,
                ..
            } = e
            else {
                unreachable!()
            };
            (operation, origin, value, message)
        }
        Err(other) => panic!("expected a ForeignValue error, got {other:?}: {other}"),
        Ok(t) => panic!(
            "expected a ForeignValue error, the trace succeeded:\n{}",
            t.module
        ),
    }
}

#[track_caller]
fn assert_advice(message: &str) {
    assert!(
        message.contains("pass it to the traced function as a parameter")
            && message.contains("`Val::new`"),
        "the message says what to do: {message}"
    );
}

#[test]
fn val_stays_small_and_copy() {
    fn copy<T: Copy>() {}
    copy::<Val<f64>>();
    copy::<Ptr<u8>>();
    assert!(std::mem::size_of::<Val<i128>>() <= 24);
    assert!(std::mem::size_of::<Ptr<i64>>() <= 24);
    assert_eq!(std::mem::size_of::<Option<crate::Handle>>(), 24);
}

#[test]
fn value_of_another_trace_kept_in_a_thread_local() {
    keep_values_of_a_finished_trace();
    let (operation, origin, value, message) = foreign(trace(&|y: Val<i32>| y + kept_i32()));
    assert_eq!(operation, "add");
    assert_eq!(origin, ValueOrigin::OtherTrace);
    assert_eq!(value, "Val<i32>");
    assert!(
        message.starts_with("a `Val<i32>` made in another trace")
            && message.contains("was used in this trace (by `add`"),
        "{message}"
    );
    assert_advice(&message);
}

#[test]
fn message_of_a_foreign_value_in_full() {
    let k = Val::new(5i32);
    let err = trace(&move |x: Val<i32>| x * k).unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with(
            "a `Val<i32>` made outside any trace was used in this trace (by `mul`, in traced \
             function `"
        ),
        "{message}"
    );
    assert!(
        message.ends_with(
            "a traced value belongs to the trace that made it: pass it to the traced function \
             as a parameter (or as an argument of `call`/`launch`), or create it inside the \
             traced function with `Val::new`"
        ),
        "{message}"
    );
}

#[test]
fn value_made_outside_any_trace_captured_by_the_closure() {
    let k = Val::new(5i32);
    let (operation, origin, _, message) = foreign(trace(&move |x: Val<i32>| x.max(k)));
    assert_eq!(operation, "max");
    assert_eq!(origin, ValueOrigin::OutsideTrace);
    assert!(message.contains("made outside any trace"), "{message}");
    assert_advice(&message);
    // The same value on the left of a comparison, and as a cast operand.
    let (operation, ..) = foreign(trace(&move |x: Val<i32>| k.lt(x)));
    assert_eq!(operation, "compare (<)");
    let (operation, ..) = foreign(trace(&move |_: Val<i32>| k.cast::<i64>()));
    assert_eq!(operation, "cast");
}

#[test]
fn value_made_outside_any_trace_returned() {
    let k = Val::new(5i32);
    let (operation, origin, ..) = foreign(trace(&move || k));
    assert_eq!(operation, "return value");
    assert_eq!(origin, ValueOrigin::OutsideTrace);
}

#[test]
fn value_of_the_caller_used_in_a_function_traced_by_call() {
    let (operation, origin, _, message) = foreign(trace(&|x: Val<i32>| {
        // A capturing closure is traced as a function of its own: `x` is not one of its values.
        cf::call(move |y: Val<i32>| y - x, (x,))
    }));
    assert_eq!(operation, "sub");
    let ValueOrigin::EnclosingFunction(caller) = origin else {
        panic!("expected the enclosing function, got {origin:?}");
    };
    assert!(caller.ends_with("_closure"), "{caller}");
    assert!(
        message.contains(&format!("made in the enclosing traced function `{caller}`")),
        "{message}"
    );
}

#[test]
fn pointer_of_the_host_function_used_in_a_kernel() {
    let (operation, origin, value, _) = foreign(trace(&|p: Ptr<i32>, n: Val<u32>| {
        gpu::launch(
            move |_: Val<u32>| p.store(0i64, 1i32),
            Grid::new(1u32),
            Block::new(1u32),
            (n,),
        );
    }));
    assert_eq!(operation, "store");
    assert_eq!(value, "Ptr<i32>");
    assert!(matches!(origin, ValueOrigin::EnclosingFunction(_)));
}

#[test]
fn pointer_of_another_trace_loaded_and_stored() {
    keep_values_of_a_finished_trace();
    let (operation, origin, value, _) = foreign(trace(&|i: Val<i64>| kept_ptr().load(i)));
    assert_eq!(
        (operation, origin, value.as_str()),
        ("load", ValueOrigin::OtherTrace, "Ptr<i32>")
    );
    let (operation, ..) = foreign(trace(&|p: Ptr<i32>| p.store(0i64, kept_i32())));
    assert_eq!(operation, "store");
    let (operation, ..) = foreign(trace(&|p: Ptr<i32>| p.load(kept_i32())));
    assert_eq!(operation, "pointer index");
    let (operation, ..) = foreign(trace(&|p: Ptr<i32>| p.eq(kept_ptr())));
    assert_eq!(operation, "compare (==)");
}

#[test]
fn condition_of_another_trace() {
    keep_values_of_a_finished_trace();
    let (operation, ..) = foreign(trace(&|x: Val<i32>| match cf::if_else(
        kept_bool(),
        x,
        |x| Flow::Next(x + 1),
        Flow::Next,
    ) {
        Flow::Next(v) => v,
        Flow::Exit => x,
    }));
    assert_eq!(operation, "branch condition");
    let (operation, ..) =
        foreign(trace(
            &|x: Val<i32>| match cf::while_loop(x, |_| kept_bool(), |x| Flow::Next(x + 1)) {
                Flow::Next(v) => v,
                Flow::Exit => x,
            },
        ));
    assert_eq!(operation, "loop condition");
    let (operation, ..) = foreign(trace(&|x: Val<i32>| cf::and(kept_bool(), || x.gt(0))));
    assert_eq!(operation, "`&&`/`||` operand");
}

#[test]
fn value_carried_into_a_loop_and_out_of_an_if() {
    let k = Val::new(0i32);
    let (operation, origin, ..) = foreign(trace(&move |n: Val<i32>| match cf::while_loop(
        k,
        |i| i.lt(n),
        |i| Flow::Next(i + 1),
    ) {
        Flow::Next(v) => v,
        Flow::Exit => n,
    }));
    assert_eq!(operation, "carried into a loop");
    assert_eq!(origin, ValueOrigin::OutsideTrace);
    let (operation, ..) = foreign(trace(&move |n: Val<i32>| match cf::if_else(
        n.gt(0),
        n,
        |_| Flow::Next(k),
        Flow::Next,
    ) {
        Flow::Next(v) => v,
        Flow::Exit => n,
    }));
    assert_eq!(operation, "carried out of a traced `if`");
}

#[test]
fn arguments_of_call_launch_and_invoke() {
    keep_values_of_a_finished_trace();
    fn id(y: Val<i32>) -> Val<i32> {
        y
    }
    let (operation, ..) = foreign(trace(&|_: Val<i32>| cf::call(id, (kept_i32(),))));
    assert_eq!(operation, "call argument");
    fn kernel(p: Ptr<i32>) {
        p.write(1i32);
    }
    let (operation, ..) = foreign(trace(&|_: Ptr<i32>| {
        gpu::launch(kernel, Grid::new(1u32), Block::new(1u32), (kept_ptr(),))
    }));
    assert_eq!(operation, "launch argument");
    let (operation, ..) = foreign(trace(&|p: Ptr<i32>| {
        let n = Val::new(1u32);
        let far = kept_i32().cast::<u32>();
        gpu::launch(kernel, Grid::new(far), Block::new(n), (p,))
    }));
    assert_eq!(operation, "cast", "the first misuse is reported");
    extern "C" fn twice(x: i32) -> i32 {
        2 * x
    }
    let (operation, ..) = foreign(trace(&|_: Val<i32>| {
        cf::invoke("twice", cf::extern_fn1(twice), (kept_i32(),))
    }));
    assert_eq!(operation, "extern call argument");
}

#[test]
fn the_grid_of_a_launch_from_outside() {
    fn kernel(p: Ptr<i32>) {
        p.write(1i32);
    }
    let grid = Grid::new(4u32);
    let (operation, origin, value, _) = foreign(trace(&move |p: Ptr<i32>| {
        gpu::launch(kernel, grid, Block::new(1u32), (p,))
    }));
    assert_eq!(
        (operation, origin, value.as_str()),
        ("launch grid size", ValueOrigin::OutsideTrace, "Val<u32>")
    );
}

#[test]
fn only_the_first_misuse_is_reported_and_the_trace_goes_on() {
    let k = Val::new(1i32);
    let err = trace(&move |x: Val<i32>| {
        let y = x / k; // first
        let z = y + k; // second, on the dummy result of the first
        match cf::while_loop(z, |i| i.lt(k), |i| Flow::Next(i + k)) {
            Flow::Next(v) => v,
            Flow::Exit => z,
        }
    })
    .unwrap_err();
    assert!(
        matches!(
            err,
            TraceError::ForeignValue {
                operation: "div",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn traces_of_well_formed_code_still_verify() {
    fn helper(y: Val<i32>) -> Val<i32> {
        y * 2
    }
    fn kernel(p: Ptr<i32>, v: Val<i32>) {
        p.store(gpu::global_id_x(), v);
    }
    // A failed trace does not poison the next one.
    let k = Val::new(3i32);
    assert!(trace(&move |x: Val<i32>| x + k).is_err());
    let traced = trace(&|x: Val<i32>, p: Ptr<i32>| {
        let k = Val::new(3i32);
        let r = match cf::while_loop(x, |i| i.lt(k), |i| Flow::Next(cf::call(helper, (i,)))) {
            Flow::Next(v) => v,
            Flow::Exit => x,
        };
        gpu::launch(kernel, Grid::new(2u32), Block::new(32u32), (p, r));
        r
    })
    .expect("traces");
    nacre_ir::verify(traced.module).expect("verifies");
}

#[test]
fn direct_mode_computes_on_values_made_outside_any_trace() {
    let k = Val::new(5i32);
    let r = (k + 2) * k;
    assert_eq!(format!("{r:?}"), "Val(35)");
    let mut xs = [1i32, 2, 3];
    // SAFETY: every access of the call below is in bounds of `xs`.
    let p = unsafe { crate::RawPtr::new(xs.as_mut_ptr()) };
    let lent = crate::Region {
        addr: p.as_ptr() as usize,
        bytes: std::mem::size_of_val(&xs),
        writable: true,
    };
    let bits = crate::direct_call(
        &move |p: Ptr<i32>, i: Val<i64>| {
            p.store(i, p.load(i) + k);
            p.load(i)
        },
        &[p.as_ptr() as usize as u64, 1],
        &[lent],
    )
    .expect("runs");
    assert_eq!((bits, xs), (7, [1, 7, 3]));
}

/// The panic message of `f`.
fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let payload = std::panic::catch_unwind(f).expect_err("panics");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn traced_value_used_in_direct_mode_panics_with_a_clear_message() {
    keep_values_of_a_finished_trace();
    let message = panic_message(|| {
        let _ = kept_i32() + 1;
    });
    assert!(
        message.contains("made while tracing")
            && message.contains("was used outside any trace (by `add`, in direct mode)"),
        "{message}"
    );
    let message = panic_message(|| {
        let _ = kept_ptr().load(0i64);
    });
    assert!(message.contains("(by `load`, in direct mode)"), "{message}");
    // Returned from a function run directly.
    let message = panic_message(|| {
        let _ = crate::direct_call(&|_: Val<i32>| kept_i32(), &[1], &[]);
    });
    assert!(message.contains("(by `return value`"), "{message}");
    // Printing one says which trace it belongs to instead of showing an index as a value.
    let shown = format!("{:?}", kept_i32());
    assert!(
        shown.starts_with("Val<i32>(v") && shown.contains("of trace"),
        "{shown}"
    );
}
