//! Whole programs: loops, recursion, memory, traps through calls, external calls, the entry
//! points, and compiler failures.

use super::{compile, compile_linked, function, konst, module, verified};
use crate::{emit_c, CBackend, CExecutable, COptions};
use nacre_backend::{Backend, BackendError, Executable, ExternAddr, Linkage};
use nacre_ir::verifier::VerifierErrorKind;
use nacre_ir::{
    BinaryOp, CmpOp, ExternFunc, ExternId, FuncId, FuncKind, Function, FunctionBuilder, Module,
    Scalar, Signature, Trap, Type, Value,
};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A counted loop `for i in 0..n { body(i) }` over `i64`, carrying `carried` values; `body`
/// returns the next carried values. Positions the builder in the exit block and returns the
/// carried values there.
fn counted_loop(
    b: &mut FunctionBuilder<'_>,
    n: Value,
    init: Vec<Value>,
    body: impl FnOnce(&mut FunctionBuilder<'_>, Value, &[Value]) -> Vec<Value>,
) -> Vec<Value> {
    let header = b.create_block();
    let i = b.append_block_param(header, Type::I64);
    let carried: Vec<Value> = init
        .iter()
        .map(|&v| b.append_block_param(header, b.value_type(v)))
        .collect();
    let body_block = b.create_block();
    let exit = b.create_block();
    let results: Vec<Value> = init
        .iter()
        .map(|&v| b.append_block_param(exit, b.value_type(v)))
        .collect();
    let zero = konst(b, Type::I64, 0);
    b.jump(header, [vec![zero], init].concat());
    b.switch_to_block(header);
    let c = b.cmp(CmpOp::Lt, i, n);
    b.branch(c, body_block, vec![], exit, carried.clone());
    b.switch_to_block(body_block);
    let next = body(b, i, &carried);
    let one = konst(b, Type::I64, 1);
    let i1 = b.binary(BinaryOp::Add, i, one);
    b.jump(header, [vec![i1], next].concat());
    b.switch_to_block(exit);
    results
}

/// `nest(n, m)`: `for i in 0..n { x = i; for k in 0..m { x = 3x + k }; acc += x }`, `acc`.
fn nest_reference(n: i64, m: i64) -> i64 {
    (0..n)
        .map(|i| (0..m).fold(i, |x, k| x.wrapping_mul(3).wrapping_add(k)))
        .fold(0i64, i64::wrapping_add)
}

#[test]
fn a_nest_whose_inner_loop_may_not_run_is_versioned_and_keeps_its_results() {
    let m = module(vec![function(
        "nest",
        &[Type::I64, Type::I64],
        Some(Type::I64),
        |b, p| {
            let (n, m) = (p[0], p[1]);
            let zero = konst(b, Type::I64, 0);
            let acc = counted_loop(b, n, vec![zero], |b, i, acc| {
                let x = counted_loop(b, m, vec![i], |b, k, x| {
                    let three = konst(b, Type::I64, 3);
                    let x3 = b.binary(BinaryOp::Mul, x[0], three);
                    vec![b.binary(BinaryOp::Add, x3, k)]
                });
                vec![b.binary(BinaryOp::Add, acc[0], x[0])]
            });
            b.ret(Some(acc[0]));
        },
    )]);
    let exe = compile(m);
    // The outer loop and its copy each multiply by three once.
    let source = exe.listing().unwrap_or_default();
    assert_eq!(source.matches(" * ").count(), 2, "{source}");
    for (n, m) in [(0i64, 0i64), (5, 0), (5, -2), (7, 1), (9, 4), (3, 40)] {
        let got = exe.call(&[n as u64, m as u64]).unwrap();
        assert_eq!(got as i64, nest_reference(n, m), "nest({n}, {m})");
    }
}

#[test]
fn array_sum_and_fill() {
    // fill(p, n): p[i] = i * i as f32; then returns sum of p[i] as f64.
    let f32p = Type::ptr(Scalar::F32);
    let m = module(vec![function(
        "fill_sum",
        &[f32p, Type::I64],
        Some(Type::F64),
        |b, p| {
            let (ptr, n) = (p[0], p[1]);
            counted_loop(b, n, vec![], |b, i, _| {
                let sq = b.binary(BinaryOp::Mul, i, i);
                let x = b.cast(sq, Type::F32);
                let slot = b.elem_ptr(ptr, i);
                b.store(slot, x);
                vec![]
            });
            let zero = konst(b, Type::F64, 0f64.to_bits());
            let sum = counted_loop(b, n, vec![zero], |b, i, acc| {
                let slot = b.elem_ptr(ptr, i);
                let x = b.load(slot);
                let x = b.cast(x, Type::F64);
                vec![b.binary(BinaryOp::Add, acc[0], x)]
            });
            b.ret(Some(sum[0]));
        },
    )]);
    let exe = compile(m);
    let mut data = vec![0f32; 10];
    let r = exe.call(&[data.as_mut_ptr() as u64, 10]).unwrap();
    assert_eq!(f64::from_bits(r), 285.0);
    assert_eq!(data, (0..10).map(|i| (i * i) as f32).collect::<Vec<_>>());
}

#[test]
fn negative_and_unsigned_indices() {
    // at(p, i: i32, j: u32) = p[i] * 100 + p[j], on a pointer into the middle of an array.
    let i16p = Type::ptr(Scalar::I16);
    let m = module(vec![function(
        "at",
        &[i16p, Type::I32, Type::U32],
        Some(Type::I16),
        |b, p| {
            let a = b.elem_ptr(p[0], p[1]);
            let a = b.load(a);
            let c = b.elem_ptr(p[0], p[2]);
            let c = b.load(c);
            let hundred = konst(b, Type::I16, 100);
            let a = b.binary(BinaryOp::Mul, a, hundred);
            let r = b.binary(BinaryOp::Add, a, c);
            b.ret(Some(r));
        },
    )]);
    let exe = compile(m);
    let data: Vec<i16> = (0..8).collect();
    let mid = data[4..].as_ptr() as u64;
    assert_eq!(exe.call(&[mid, (-3i32) as u32 as u64, 2]), Ok(106));
    assert_eq!(exe.call(&[mid, 3, 0]), Ok(704));
}

#[test]
fn bool_and_small_types_through_memory() {
    // flip(p: ptr<bool>, q: ptr<u8>) stores !p[0] into p[1] and q[0] + 1 into q[1]; void.
    let m = module(vec![function(
        "flip",
        &[Type::ptr(Scalar::Bool), Type::ptr(Scalar::U8)],
        None,
        |b, p| {
            let x = b.load(p[0]);
            let nx = b.unary(nacre_ir::UnaryOp::Not, x);
            let one = konst(b, Type::I64, 1);
            let s = b.elem_ptr(p[0], one);
            b.store(s, nx);
            let y = b.load(p[1]);
            let one8 = konst(b, Type::U8, 1);
            let y1 = b.binary(BinaryOp::Add, y, one8);
            let s = b.elem_ptr(p[1], one);
            b.store(s, y1);
            b.ret(None);
        },
    )]);
    let exe = compile(m);
    let mut flags = [true, true];
    let mut bytes = [255u8, 0];
    assert_eq!(
        exe.call(&[flags.as_mut_ptr() as u64, bytes.as_mut_ptr() as u64]),
        Ok(0)
    );
    assert_eq!(flags, [true, false]);
    assert_eq!(bytes, [255, 0]);
}

#[test]
fn rotation_loop_needs_a_temporary() {
    // (a, b, c) -> (b, c, a), n times; returns a * 100 + b * 10 + c.
    let m = module(vec![function(
        "rot",
        &[Type::I64, Type::I64, Type::I64, Type::I64],
        Some(Type::I64),
        |b, p| {
            let r = counted_loop(b, p[3], vec![p[0], p[1], p[2]], |_, _, v| {
                vec![v[1], v[2], v[0]]
            });
            let hundred = konst(b, Type::I64, 100);
            let ten = konst(b, Type::I64, 10);
            let a = b.binary(BinaryOp::Mul, r[0], hundred);
            let bb = b.binary(BinaryOp::Mul, r[1], ten);
            let s = b.binary(BinaryOp::Add, a, bb);
            let s = b.binary(BinaryOp::Add, s, r[2]);
            b.ret(Some(s));
        },
    )]);
    let src = emit_c(&verified(m.clone())).unwrap();
    assert!(src.contains("int64_t t0 = "), "{src}");
    let exe = compile(m);
    for (n, want) in [(0, 123), (1, 231), (2, 312), (3, 123), (301, 231)] {
        assert_eq!(exe.call(&[1, 2, 3, n]), Ok(want), "n = {n}");
    }
}

#[test]
fn fibonacci_loop_and_recursion() {
    // fib_loop(n): (a, b) -> (b, a + b); fib_rec(n) = n < 2 ? n : fib_rec(n-1) + fib_rec(n-2).
    let entry = function("both", &[Type::U32], Some(Type::U64), |b, p| {
        let n = b.cast(p[0], Type::I64);
        let zero = konst(b, Type::U64, 0);
        let one = konst(b, Type::U64, 1);
        let r = counted_loop(b, n, vec![zero, one], |b, _, v| {
            vec![v[1], b.binary(BinaryOp::Add, v[0], v[1])]
        });
        let rec = b
            .call(FuncId::from_u32(1), vec![p[0]], Some(Type::U64))
            .unwrap();
        // Both agree: return the loop result, or all ones if they do not.
        let same = b.cmp(CmpOp::Eq, r[0], rec);
        let bad = konst(b, Type::U64, u64::MAX);
        let out = b.select(same, r[0], bad);
        b.ret(Some(out));
    });
    let fib = function("fib", &[Type::U32], Some(Type::U64), |b, p| {
        let two = konst(b, Type::U32, 2);
        let small = b.cmp(CmpOp::Lt, p[0], two);
        let base = b.create_block();
        let rec = b.create_block();
        b.branch(small, base, vec![], rec, vec![]);
        b.switch_to_block(base);
        let n = b.cast(p[0], Type::U64);
        b.ret(Some(n));
        b.switch_to_block(rec);
        let one = konst(b, Type::U32, 1);
        let n1 = b.binary(BinaryOp::Sub, p[0], one);
        let n2 = b.binary(BinaryOp::Sub, n1, one);
        let a = b
            .call(FuncId::from_u32(1), vec![n1], Some(Type::U64))
            .unwrap();
        let c = b
            .call(FuncId::from_u32(1), vec![n2], Some(Type::U64))
            .unwrap();
        let s = b.binary(BinaryOp::Add, a, c);
        b.ret(Some(s));
    });
    let exe = compile(module(vec![entry, fib]));
    assert_eq!(exe.call(&[0]), Ok(0));
    assert_eq!(exe.call(&[1]), Ok(1));
    assert_eq!(exe.call(&[20]), Ok(6765));
    assert_eq!(exe.call(&[30]), Ok(832040));
}

/// `outer(x, p)` calls `middle(x)`, which calls `inner(x)` = `1000 / x` (and, for `x == 7`,
/// the void `rem_by(x - 7)`); after the call `outer` stores 1 through `p`.
fn trap_chain() -> Module {
    let outer = function(
        "outer",
        &[Type::I32, Type::ptr(Scalar::I32)],
        Some(Type::I32),
        |b, p| {
            let r = b
                .call(FuncId::from_u32(1), vec![p[0]], Some(Type::I32))
                .unwrap();
            let one = konst(b, Type::I32, 1);
            b.store(p[1], one);
            b.ret(Some(r));
        },
    );
    let middle = function("middle", &[Type::I32], Some(Type::I32), |b, p| {
        let r = b
            .call(FuncId::from_u32(2), vec![p[0]], Some(Type::I32))
            .unwrap();
        let one = konst(b, Type::I32, 1);
        let r1 = b.binary(BinaryOp::Add, r, one);
        b.ret(Some(r1));
    });
    let inner = function("inner", &[Type::I32], Some(Type::I32), |b, p| {
        let seven = konst(b, Type::I32, 7);
        let is7 = b.cmp(CmpOp::Eq, p[0], seven);
        let call_rem = b.create_block();
        let divide = b.create_block();
        b.branch(is7, call_rem, vec![], divide, vec![]);
        b.switch_to_block(call_rem);
        let z = b.binary(BinaryOp::Sub, p[0], seven);
        b.call(FuncId::from_u32(3), vec![z], None);
        b.jump(divide, vec![]);
        b.switch_to_block(divide);
        let k = konst(b, Type::I32, 1000);
        let q = b.binary(BinaryOp::Div, k, p[0]);
        b.ret(Some(q));
    });
    let rem_by = function("rem_by", &[Type::I32], None, |b, p| {
        let k = konst(b, Type::I32, 5);
        b.binary(BinaryOp::Rem, k, p[0]);
        b.ret(None);
    });
    module(vec![outer, middle, inner, rem_by])
}

#[test]
fn traps_propagate_through_calls() {
    let exe = compile(trap_chain());
    let mut flag = 0i32;
    let p = &mut flag as *mut i32 as u64;
    assert_eq!(exe.call(&[10, p]), Ok(101));
    assert_eq!(flag, 1);
    flag = 0;
    assert_eq!(exe.call(&[0, p]), Err(Trap::DivisionByZero));
    assert_eq!(flag, 0, "code after a trapping call must not run");
    assert_eq!(exe.call(&[7, p]), Err(Trap::RemainderByZero));
    assert_eq!(flag, 0);
    // The executable is reusable after a trap.
    assert_eq!(
        exe.call(&[-1i32 as u32 as u64, p]),
        Ok((-999i32) as u32 as u64)
    );
}

#[test]
fn native_entry_follows_the_calling_convention() {
    let exe = compile(trap_chain());
    let addr = exe.native_entry().expect("native code");
    // SAFETY: the entry of `trap_chain` is `int32_t (int32_t, int32_t *, uint32_t *)`.
    let f: extern "C" fn(i32, *mut i32, *mut u32) -> i32 = unsafe { std::mem::transmute(addr) };
    let mut flag = 0;
    let mut status = 0u32;
    assert_eq!(f(100, &mut flag, &mut status), 11);
    assert_eq!((status, flag), (0, 1));
    flag = 0;
    f(0, &mut flag, &mut status);
    assert_eq!((status, flag), (Trap::DivisionByZero.code(), 0));
}

#[test]
fn min_div_minus_one_wraps() {
    let m = module(vec![function(
        "dr",
        &[Type::I64, Type::I64],
        Some(Type::I64),
        |b, p| {
            let q = b.binary(BinaryOp::Div, p[0], p[1]);
            let r = b.binary(BinaryOp::Rem, p[0], p[1]);
            let s = b.binary(BinaryOp::Add, q, r);
            b.ret(Some(s));
        },
    )]);
    let exe = compile(m);
    assert_eq!(exe.call(&[i64::MIN as u64, u64::MAX]), Ok(i64::MIN as u64));
    assert_eq!(exe.call(&[7, (-2i64) as u64]), Ok((-3i64 + 1) as u64));
    assert_eq!(exe.call(&[7, 0]), Err(Trap::DivisionByZero));
}

static EXTERN_LOG: AtomicU64 = AtomicU64::new(0);

extern "C" fn log_value(x: u64) {
    EXTERN_LOG.fetch_add(x, Ordering::SeqCst);
}

extern "C" fn is_odd(x: i16, invert: bool) -> bool {
    (x % 2 != 0) != invert
}

extern "C" fn forty_two() -> i32 {
    42
}

unsafe fn no_dyn_call(_: usize, _: &[u64]) -> u64 {
    0
}

#[test]
fn extern_calls_of_every_shape() {
    let mut m = module(vec![function(
        "ext",
        &[Type::I16, Type::BOOL],
        Some(Type::I32),
        |b, p| {
            let odd = b
                .call_extern(ExternId::from_u32(1), vec![p[0], p[1]], Some(Type::BOOL))
                .unwrap();
            let w = b.cast(odd, Type::U64);
            b.call_extern(ExternId::from_u32(0), vec![w], None);
            let k = b
                .call_extern(ExternId::from_u32(2), vec![], Some(Type::I32))
                .unwrap();
            let w = b.cast(odd, Type::I32);
            let r = b.binary(BinaryOp::Add, k, w);
            b.ret(Some(r));
        },
    )]);
    let mut linkage = Linkage::default();
    let mut declare =
        |m: &mut Module, name: &str, params: Vec<Type>, ret: Option<Type>, addr: usize| {
            let id = m.declare_extern(ExternFunc {
                name: name.to_string(),
                signature: Signature { params, ret },
            });
            linkage.externs.insert(
                id,
                ExternAddr {
                    addr,
                    dyn_call: no_dyn_call,
                },
            );
        };
    declare(
        &mut m,
        "log_value",
        vec![Type::U64],
        None,
        log_value as *const () as usize,
    );
    declare(
        &mut m,
        "is_odd",
        vec![Type::I16, Type::BOOL],
        Some(Type::BOOL),
        is_odd as *const () as usize,
    );
    declare(
        &mut m,
        "forty_two",
        vec![],
        Some(Type::I32),
        forty_two as *const () as usize,
    );
    // Without the externs' addresses the module does not compile.
    let verified = nacre_ir::verify(m.clone()).expect("test IR is valid");
    match CBackend::new(COptions::default()).compile_module(&verified, &Linkage::default()) {
        Err(BackendError::Unsupported { backend, what }) => {
            assert_eq!(backend, "c");
            assert!(what.contains("linkage"), "{what}");
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
    let exe = compile_linked(m, &linkage);
    let before = EXTERN_LOG.load(Ordering::SeqCst);
    assert_eq!(exe.call(&[3, 0]), Ok(43));
    assert_eq!(exe.call(&[3, 1]), Ok(42));
    assert_eq!(exe.call(&[(-4i16) as u16 as u64, 1]), Ok(43));
    assert_eq!(EXTERN_LOG.load(Ordering::SeqCst) - before, 2);
}

#[test]
fn array_trampoline_round_trips_every_type() {
    let mut types: Vec<Type> = Scalar::HOST.iter().map(|&s| Type::Scalar(s)).collect();
    types.push(Type::ptr(Scalar::I32));
    for ty in types {
        let exe = compile(module(vec![function("id", &[ty], Some(ty), |b, p| {
            b.ret(Some(p[0]));
        })]));
        let inputs: Vec<u64> = vec![
            0,
            1,
            0x7f,
            0x80,
            0xff,
            0x8000,
            0x7fff_ffff,
            0x8000_0000,
            u64::MAX,
            0x1234_5678_9abc_def0,
        ];
        for x in inputs {
            // Bits beyond the type's width are ignored on the way in and zero on the way out.
            let want = match ty {
                Type::Scalar(Scalar::F32) if f32::from_bits(x as u32).is_nan() => {
                    let got = exe.call(&[x]).unwrap();
                    assert!(
                        f32::from_bits(got as u32).is_nan() && got >> 32 == 0,
                        "{ty} {x:#x}: {got:#x}"
                    );
                    continue;
                }
                Type::Scalar(Scalar::F64) if f64::from_bits(x).is_nan() => {
                    assert!(f64::from_bits(exe.call(&[x]).unwrap()).is_nan());
                    continue;
                }
                Type::Scalar(Scalar::Bool) => x & 1,
                _ => nacre_ir::semantics::normalize(ty, x.into()) as u64,
            };
            assert_eq!(exe.call(&[x]), Ok(want), "{ty} {x:#x}");
        }
    }
}

#[test]
fn mixed_parameters_in_order() {
    // mix(a: bool, b: i8, c: f32, d: f64, e: ptr<i32>, f: u16) -> f64
    //   = d * 1000 + c * 100 + b * 10 + f + (a ? 0.5 : 0) + *e
    let params = [
        Type::BOOL,
        Type::I8,
        Type::F32,
        Type::F64,
        Type::ptr(Scalar::I32),
        Type::U16,
    ];
    let m = module(vec![function("mix", &params, Some(Type::F64), |b, p| {
        let k = |b: &mut FunctionBuilder<'_>, x: f64| konst(b, Type::F64, x.to_bits());
        let c1000 = k(b, 1000.0);
        let c100 = k(b, 100.0);
        let c10 = k(b, 10.0);
        let half = k(b, 0.5);
        let zero = k(b, 0.0);
        let d = b.binary(BinaryOp::Mul, p[3], c1000);
        let c = b.cast(p[2], Type::F64);
        let c = b.binary(BinaryOp::Mul, c, c100);
        let bb = b.cast(p[1], Type::F64);
        let bb = b.binary(BinaryOp::Mul, bb, c10);
        let f = b.cast(p[5], Type::F64);
        let a = b.select(p[0], half, zero);
        let e = b.load(p[4]);
        let e = b.cast(e, Type::F64);
        let mut s = d;
        for x in [c, bb, f, a, e] {
            s = b.binary(BinaryOp::Add, s, x);
        }
        b.ret(Some(s));
    })]);
    let exe = compile(m);
    let e = 7i32;
    let args = [
        1,
        (-2i8) as u8 as u64,
        u64::from(3f32.to_bits()),
        4f64.to_bits(),
        &e as *const i32 as u64,
        5,
    ];
    assert_eq!(
        f64::from_bits(exe.call(&args).unwrap()),
        4000.0 + 300.0 - 20.0 + 5.0 + 0.5 + 7.0
    );
    let addr = exe.native_entry().unwrap();
    // SAFETY: the entry is `double (uint8_t, int8_t, float, double, int32_t *, uint16_t, uint32_t *)`.
    let f: extern "C" fn(bool, i8, f32, f64, *const i32, u16, *mut u32) -> f64 =
        unsafe { std::mem::transmute(addr) };
    let mut status = 0;
    assert_eq!(
        f(false, 1, 0.5, -1.0, &e, 65535, &mut status),
        -1000.0 + 50.0 + 10.0 + 65535.0 + 7.0
    );
    assert_eq!(status, 0);
}

#[test]
fn backend_interface() {
    let backend = CBackend::default();
    assert_eq!(backend.name(), "c");
    let m = module(vec![function("k", &[], Some(Type::U8), |b, _| {
        let c = konst(b, Type::U8, 200);
        b.ret(Some(c));
    })]);
    let m = verified(m);
    let exe: Arc<dyn Executable> = backend.compile(&m, &Linkage::default()).unwrap();
    assert_eq!(exe.call(&[]), Ok(200));
    assert_eq!(exe.listing(), Some(emit_c(&m).unwrap().as_str()));
    // Usable from several threads at once.
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let exe = Arc::clone(&exe);
            std::thread::spawn(move || (0..1000).all(|_| exe.call(&[]) == Ok(200)))
        })
        .collect();
    assert!(handles.into_iter().all(|h| h.join().unwrap()));
    fn send_sync<T: Send + Sync>() {}
    send_sync::<CExecutable>();
    send_sync::<CBackend>();
}

#[test]
fn function_names_are_sanitised_and_unique() {
    let callee = |name: &str, k: u64| {
        function(name, &[], Some(Type::U64), move |b, _| {
            let c = konst(b, Type::U64, k);
            b.ret(Some(c));
        })
    };
    let entry = function("main", &[], Some(Type::U64), |b, _| {
        let x = b
            .call(FuncId::from_u32(1), vec![], Some(Type::U64))
            .unwrap();
        let y = b
            .call(FuncId::from_u32(2), vec![], Some(Type::U64))
            .unwrap();
        let z = b
            .call(FuncId::from_u32(3), vec![], Some(Type::U64))
            .unwrap();
        let s = b.binary(BinaryOp::Add, x, y);
        let s = b.binary(BinaryOp::Add, s, z);
        b.ret(Some(s));
    });
    let m = module(vec![
        entry,
        callee("a.b", 1),
        callee("a_b", 20),
        callee("sqrt", 300),
    ]);
    let src = emit_c(&verified(m.clone())).unwrap();
    assert!(
        src.contains("static uint64_t f_a_b(uint32_t *status)"),
        "{src}"
    );
    assert!(
        src.contains("static uint64_t f_a_b_1(uint32_t *status)"),
        "{src}"
    );
    assert_eq!(compile(m).call(&[]), Ok(321));
}

#[test]
fn kernels_are_unsupported() {
    let mut k = Function::new("k", FuncKind::Kernel, Signature::default());
    let mut b = FunctionBuilder::new(&mut k);
    b.create_entry_block();
    b.ret(None);
    let mut m = Module::new();
    m.entry = Some(m.add_function(k));
    match emit_c(&verified(m)) {
        Err(BackendError::Unsupported { backend: "c", what }) => {
            assert!(what.contains("kernel"), "{what}")
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn malformed_modules_never_reach_the_printer() {
    // The printer takes verified modules only, so it does not check what the verifier
    // checks; these modules (which the printer used to reject itself) fail verification.
    let verifier_error = |f: Function| {
        let mut m = Module::new();
        m.entry = Some(m.add_function(f));
        nacre_ir::verify(m).expect_err("malformed IR does not verify")
    };
    let e = nacre_ir::verify(Module::new()).expect_err("a module without an entry");
    assert_eq!(e.kind, VerifierErrorKind::Module, "{e}");
    // A block without a terminator.
    let f = function("f", &[Type::I32], Some(Type::I32), |b, p| {
        b.binary(BinaryOp::Add, p[0], p[0]);
    });
    let e = verifier_error(f);
    assert_eq!(e.kind, VerifierErrorKind::Block, "{e}");
    assert!(e.message.contains("terminator"), "{e}");
    // A jump to a block that is not laid out.
    let mut f = function("f", &[Type::I32], Some(Type::I32), |b, p| {
        let next = b.create_block();
        b.jump(next, vec![]);
        b.switch_to_block(next);
        b.ret(Some(p[0]));
    });
    f.layout.pop();
    let e = verifier_error(f);
    assert_eq!(e.kind, VerifierErrorKind::Layout, "{e}");
    assert!(e.message.contains("not a laid-out block"), "{e}");
    // A value that does not exist.
    let mut f = function("f", &[Type::I32], Some(Type::I32), |b, p| {
        b.ret(Some(p[0]));
    });
    let ret = f.blocks[f.layout[0]].insts[0];
    f.insts[ret].kind = nacre_ir::InstKind::Return(Some(Value::from_u32(999)));
    let e = verifier_error(f);
    assert_eq!(e.kind, VerifierErrorKind::Definition, "{e}");
    assert!(e.message.contains("v999"), "{e}");
}

fn scratch_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nacre-c-test-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn simple() -> nacre_ir::VerifiedModule {
    nacre_ir::verify(module(vec![function(
        "one",
        &[],
        Some(Type::I32),
        |b, _| {
            let c = konst(b, Type::I32, 1);
            b.ret(Some(c));
        },
    )]))
    .unwrap()
}

#[test]
fn tuning_flags_are_what_the_compiler_accepts() {
    let cc = crate::tuning_flags("cc");
    assert_eq!(cc.first().map(String::as_str), Some("-O2"), "{cc:?}");
    // Probed once: the same answer again.
    assert_eq!(crate::tuning_flags("cc"), cc);
    // GCC takes the whole first set.
    let gcc = std::process::Command::new("cc")
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("Free Software Foundation"));
    if gcc {
        assert_eq!(
            cc,
            [
                "-O2",
                "-march=native",
                "-fvect-cost-model=dynamic",
                "--param=vect-max-version-for-alias-checks=32"
            ]
        );
    }
    // A compiler that does not run gets `-O2` alone (and its compile fails later, with a
    // typed error).
    assert_eq!(crate::tuning_flags("nacre-no-such-compiler"), ["-O2"]);
    // Clang rejects GCC's `-fvect-cost-model`; its tuning must still compile code (this is
    // `cc` on macOS).
    let clang_runs = std::process::Command::new("clang")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if clang_runs {
        let flags = crate::tuning_flags("clang");
        assert!(
            !flags.iter().any(|f| f.starts_with("-fvect-cost-model")),
            "{flags:?}"
        );
        let options = COptions {
            compiler: "clang".into(),
            ..COptions::default()
        };
        let exe = CBackend::new(options)
            .compile_module(&simple(), &Linkage::default())
            .unwrap();
        assert_eq!(exe.call(&[]), Ok(1));
    } else {
        eprintln!("clang part skipped: clang does not run here");
    }
}

#[test]
fn compiler_failure_keeps_the_source() {
    let options = COptions {
        flags: vec!["-Werror=nonexistent-flag".into()],
        ..COptions::default()
    };
    match CBackend::new(options).compile_module(&simple(), &Linkage::default()) {
        Err(BackendError::CCompiler {
            compiler,
            message,
            source_path,
        }) => {
            assert_eq!(compiler, "cc");
            assert!(message.contains("nonexistent"), "{message}");
            let kept = std::fs::read_to_string(&source_path).expect("the source is kept");
            assert_eq!(kept, emit_c(&simple()).unwrap());
            std::fs::remove_dir_all(source_path.parent().unwrap()).unwrap();
        }
        other => panic!("expected a compiler error, got {other:?}"),
    }
}

#[test]
fn keep_source_dir_keeps_copies() {
    let dir = scratch_dir("keep");
    let options = COptions {
        keep_source_dir: Some(dir.clone()),
        ..COptions::default()
    };
    let exe = CBackend::new(options.clone())
        .compile_module(&simple(), &Linkage::default())
        .unwrap();
    assert_eq!(exe.call(&[]), Ok(1));
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    assert_eq!(std::fs::read_to_string(&files[0]).unwrap(), exe.source());

    let failing = COptions {
        flags: vec!["-Werror=nonexistent-flag".into()],
        ..options
    };
    match CBackend::new(failing).compile_module(&simple(), &Linkage::default()) {
        Err(BackendError::CCompiler { source_path, .. }) => {
            assert_eq!(source_path.parent(), Some(dir.as_path()));
            assert!(source_path.exists());
        }
        other => panic!("expected a compiler error, got {other:?}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_compiler_is_an_io_error() {
    let options = COptions {
        compiler: "nacre-no-such-compiler".into(),
        ..COptions::default()
    };
    match CBackend::new(options).compile_module(&simple(), &Linkage::default()) {
        Err(e @ BackendError::Io { .. }) => {
            let text = e.to_string();
            assert!(text.contains("nacre-no-such-compiler"), "{text}");
        }
        other => panic!("expected an I/O error, got {other:?}"),
    }
}

#[test]
fn invalid_c_reports_the_compiler_message() {
    // A compiler wrapper that rejects everything, with a message on stderr.
    let dir = scratch_dir("fakecc");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("fakecc");
    std::fs::write(
        &script,
        "#!/bin/sh\necho 'fakecc: error: nope' >&2\nexit 3\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let options = COptions {
        compiler: script.display().to_string(),
        ..COptions::default()
    };
    let backend = CBackend::new(options);
    // Executing a script just written can fail with "text file busy" while another test thread
    // forks (the child briefly holds the write descriptor); that is not what this test checks.
    let mut result = backend.compile_module(&simple(), &Linkage::default());
    for _ in 0..20 {
        match &result {
            Err(BackendError::Io { source, .. })
                if source.raw_os_error() == Some(26 /* ETXTBSY */) =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
                result = backend.compile_module(&simple(), &Linkage::default());
            }
            _ => break,
        }
    }
    match result {
        Err(BackendError::CCompiler {
            message,
            source_path,
            ..
        }) => {
            assert_eq!(message, "fakecc: error: nope");
            assert!(source_path.exists());
            std::fs::remove_dir_all(source_path.parent().unwrap()).unwrap();
        }
        other => panic!("expected a compiler error, got {other:?}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
