//! A conformance suite for deep recursion (enabled by the `conformance` feature, for the
//! backends' tests): recursion deeper than any thread's stack must end in
//! [`Trap::StackOverflow`] on every backend, on any thread, and recursion within the limit
//! must compute the right result.
//!
//! A regression in a native backend overflows the machine stack and aborts the whole
//! process, so backends run the suite through [`isolated`], which runs a test's body in a
//! child process and turns a crash into a failed test.

use crate::{BackendError, Executable, Linkage};
use nacre_ir::{
    verify, BinaryOp, CmpOp, Const, FuncId, FuncKind, Function, FunctionBuilder, Module, Trap,
    Type, Value,
};
use std::process::Command;
use std::sync::Arc;

/// Compiles a module with its linkage (the backend under test).
pub type Compile<'a> = &'a dyn Fn(Module, Linkage) -> Result<Arc<dyn Executable>, BackendError>;

/// A recursion depth far beyond what any thread's stack holds in native frames.
pub const DEEP: u64 = 10_000_000;

/// The stack size of the small threads the suite runs on (256 KiB).
pub const SMALL_STACK: usize = 256 * 1024;

/// The environment variable that tells a child process of [`isolated`] which test to run.
pub const ISOLATED_TEST_ENV: &str = "NACRE_ISOLATED_TEST";

/// Runs `body` for the test named `test` (its path as the test harness names it, such as
/// `tests::stack::deep_recursion`) in a child process: this test binary, re-run with only
/// that test and [`ISOLATED_TEST_ENV`] set. In the child, runs `body`; in the parent, asserts
/// that the child ran the test and passed, so a crash (a real stack overflow aborts the
/// process) is a failed test instead of a dead test runner.
///
/// # Panics
/// In the parent, when the child fails, crashes or does not run the test.
pub fn isolated(test: &str, body: impl FnOnce()) {
    if std::env::var(ISOLATED_TEST_ENV).as_deref() == Ok(test) {
        body();
        return;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = Command::new(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(ISOLATED_TEST_ENV, test)
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the isolated test {test} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

fn konst(b: &mut FunctionBuilder<'_>, bits: u64) -> Value {
    b.constant(Const {
        ty: Type::U64,
        bits: u128::from(bits),
    })
}

/// `depth(n: u64) -> u64 = if n == 0 { 0 } else { depth(n - 1) + 1 }`, one frame per unit of
/// `n` (the addition after the call keeps it from being a tail call).
pub fn depth_module() -> Module {
    let mut m = Module::new();
    let depth = m.add_function(Function::default());
    m.functions[depth] = FunctionBuilder::build(
        "depth",
        FuncKind::Host,
        &[Type::U64],
        Some(Type::U64),
        |b, p| {
            let zero = b.create_block();
            let more = b.create_block();
            let z = konst(b, 0);
            let done = b.cmp(CmpOp::Eq, p[0], z);
            b.branch(done, zero, vec![], more, vec![]);
            b.switch_to_block(zero);
            b.ret(Some(z));
            b.switch_to_block(more);
            let one = konst(b, 1);
            let n1 = b.binary(BinaryOp::Sub, p[0], one);
            let d = b.call(depth, vec![n1], Some(Type::U64)).expect("result");
            let r = b.binary(BinaryOp::Add, d, one);
            b.ret(Some(r));
        },
    );
    m.entry = Some(depth);
    m
}

/// `main(n) = even(n)`, with `even(n) = n == 0 ? 1 : odd(n - 1) + 0` and
/// `odd(n) = n == 0 ? 0 : even(n - 1) + 0` (mutual recursion through a non-recursive entry;
/// results as `u64`: 1 for even).
pub fn mutual_module() -> Module {
    let mut m = Module::new();
    let main = m.add_function(Function::default());
    let even = m.add_function(Function::default());
    let odd = m.add_function(Function::default());
    let half = |name: &str, base: u64, other: FuncId| {
        FunctionBuilder::build(
            name,
            FuncKind::Host,
            &[Type::U64],
            Some(Type::U64),
            |b, p| {
                let zero = b.create_block();
                let more = b.create_block();
                let z = konst(b, 0);
                let done = b.cmp(CmpOp::Eq, p[0], z);
                b.branch(done, zero, vec![], more, vec![]);
                b.switch_to_block(zero);
                let k = konst(b, base);
                b.ret(Some(k));
                b.switch_to_block(more);
                let one = konst(b, 1);
                let n1 = b.binary(BinaryOp::Sub, p[0], one);
                let r = b.call(other, vec![n1], Some(Type::U64)).expect("result");
                // `r | 0` is still `r`, but not a tail call.
                let r = b.binary(BinaryOp::Or, r, z);
                b.ret(Some(r));
            },
        )
    };
    m.functions[even] = half("even", 1, odd);
    m.functions[odd] = half("odd", 0, even);
    m.functions[main] = FunctionBuilder::build(
        "main",
        FuncKind::Host,
        &[Type::U64],
        Some(Type::U64),
        |b, p| {
            let r = b.call(even, vec![p[0]], Some(Type::U64));
            b.ret(r);
        },
    );
    m.entry = Some(main);
    m
}

fn compile(compile: Compile<'_>, m: Module) -> Arc<dyn Executable> {
    verify(m.clone()).expect("the conformance modules are valid IR");
    compile(m, Linkage::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `f` on a new thread with a stack of `size` bytes.
fn on_thread<R: Send + 'static>(size: usize, f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::Builder::new()
        .stack_size(size)
        .spawn(f)
        .expect("spawn a thread")
        .join()
        .expect("the thread ran to completion")
}

/// `exe(n)` on the current thread and on a thread with a [`SMALL_STACK`].
fn both_threads(exe: &Arc<dyn Executable>, n: u64) -> [Result<u64, Trap>; 2] {
    let here = exe.call(&[n]);
    let small = {
        let exe = Arc::clone(exe);
        on_thread(SMALL_STACK, move || exe.call(&[n]))
    };
    [here, small]
}

/// Recursion within the limit computes the right result; [`DEEP`] recursion is
/// [`Trap::StackOverflow`], on the current thread and on a small one; the executable still
/// works after a trap. Direct and mutual recursion.
pub fn check_deep_recursion(c: Compile<'_>) {
    let depth = compile(c, depth_module());
    for n in [0, 1, 1000] {
        assert_eq!(both_threads(&depth, n), [Ok(n), Ok(n)], "depth({n})");
    }
    assert_eq!(
        both_threads(&depth, DEEP),
        [Err(Trap::StackOverflow), Err(Trap::StackOverflow)],
        "depth({DEEP})"
    );
    assert_eq!(depth.call(&[10]), Ok(10), "depth(10) after a trap");

    let mutual = compile(c, mutual_module());
    for n in [0, 7, 1000] {
        let even = u64::from(n % 2 == 0);
        assert_eq!(both_threads(&mutual, n), [Ok(even), Ok(even)], "even({n})");
    }
    assert_eq!(
        both_threads(&mutual, DEEP),
        [Err(Trap::StackOverflow), Err(Trap::StackOverflow)],
        "even({DEEP})"
    );
}

/// The depth a thread with a stack of `size` bytes reaches before the trap is at least
/// `min_frames`, and a thread with 4 times the stack gets deeper: the limit follows the
/// thread's own stack. `deepest` finds the largest `n` for which `depth(n)` succeeds.
pub fn check_limit_follows_the_thread(c: Compile<'_>, size: usize, min_frames: u64) {
    let depth = compile(c, depth_module());
    let deepest = |size: usize| {
        let exe = Arc::clone(&depth);
        on_thread(size, move || {
            // Binary search for the last depth that does not trap.
            let (mut lo, mut hi) = (0u64, DEEP);
            while lo + 1 < hi {
                let mid = lo + (hi - lo) / 2;
                match exe.call(&[mid]) {
                    Ok(r) => {
                        assert_eq!(r, mid);
                        lo = mid;
                    }
                    Err(t) => {
                        assert_eq!(t, Trap::StackOverflow);
                        hi = mid;
                    }
                }
            }
            lo
        })
    };
    let small = deepest(size);
    let large = deepest(4 * size);
    assert!(
        small >= min_frames,
        "only {small} frames on a {size}-byte stack"
    );
    assert!(
        large > small,
        "{large} frames on a {}-byte stack, {small} on {size} bytes",
        4 * size
    );
}
