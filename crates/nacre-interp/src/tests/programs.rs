//! Whole programs (loops, memory, calls, recursion, externs, traps) against plain Rust.

use super::{compile, compile_linked, function, konst, single};
use crate::{ExecError, InterpExecutable, Interpreter};
use nacre_backend::{Backend, BackendError, Executable, ExternAddr, Linkage};
use nacre_ir::{
    verify, BinaryOp, BlockCall, CmpOp, ExternFunc, FuncId, Function, InstKind, Module, Scalar,
    Signature, Trap, Type,
};
use std::sync::{Arc, OnceLock};

/// `fn fib(n: i64) -> i64` as a loop over block parameters `(i, a, b)`.
fn fib_loop() -> InterpExecutable {
    single(vec![Type::I64], Some(Type::I64), |b, p| {
        let n = p[0];
        let zero = konst(b, Type::I64, 0);
        let one = konst(b, Type::I64, 1);
        let header = b.create_block();
        let i = b.append_block_param(header, Type::I64);
        let x = b.append_block_param(header, Type::I64);
        let y = b.append_block_param(header, Type::I64);
        let body = b.create_block();
        let exit = b.create_block();
        b.jump(header, vec![zero, zero, one]);
        b.switch_to_block(header);
        let c = b.cmp(CmpOp::Lt, i, n);
        b.branch(c, body, vec![], exit, vec![]);
        b.switch_to_block(body);
        let t = b.binary(BinaryOp::Add, x, y);
        let i1 = b.binary(BinaryOp::Add, i, one);
        b.jump(header, vec![i1, y, t]);
        b.switch_to_block(exit);
        b.ret(Some(x));
    })
}

fn fib_rust(n: u64) -> i64 {
    let (mut a, mut b) = (0i64, 1i64);
    for _ in 0..n {
        let t = a.wrapping_add(b);
        a = b;
        b = t;
    }
    a
}

#[test]
fn iterative_fibonacci() {
    let exe = fib_loop();
    for n in [0u64, 1, 2, 3, 10, 50, 92, 15_000] {
        assert_eq!(exe.call(&[n]), Ok(fib_rust(n) as u64), "fib({n})");
    }
}

#[test]
fn gcd_loop() {
    let exe = single(vec![Type::U32, Type::U32], Some(Type::U32), |b, p| {
        let zero = konst(b, Type::U32, 0);
        let head = b.create_block();
        let x = b.append_block_param(head, Type::U32);
        let y = b.append_block_param(head, Type::U32);
        let body = b.create_block();
        let exit = b.create_block();
        b.jump(head, vec![p[0], p[1]]);
        b.switch_to_block(head);
        let c = b.cmp(CmpOp::Ne, y, zero);
        b.branch(c, body, vec![], exit, vec![]);
        b.switch_to_block(body);
        let r = b.binary(BinaryOp::Rem, x, y);
        b.jump(head, vec![y, r]);
        b.switch_to_block(exit);
        b.ret(Some(x));
    });
    fn gcd(mut a: u32, mut b: u32) -> u32 {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    }
    for (a, b) in [
        (0, 0),
        (12, 18),
        (17, 5),
        (1071, 462),
        (u32::MAX, 65535),
        (7, 0),
        (0, 9),
    ] {
        assert_eq!(
            exe.call(&[u64::from(a), u64::from(b)]),
            Ok(u64::from(gcd(a, b))),
            "gcd({a}, {b})"
        );
    }
}

/// Runs `n` iterations of a loop whose back edge permutes `(x, y, z)` as the given argument
/// order, and returns `x * 100 + y * 10 + z`.
fn permuting_loop(order: [usize; 3]) -> InterpExecutable {
    single(vec![Type::I64], Some(Type::I64), |b, p| {
        let zero = konst(b, Type::I64, 0);
        let one = konst(b, Type::I64, 1);
        let two = konst(b, Type::I64, 2);
        let three = konst(b, Type::I64, 3);
        let ten = konst(b, Type::I64, 10);
        let hundred = konst(b, Type::I64, 100);
        let head = b.create_block();
        let i = b.append_block_param(head, Type::I64);
        let vars: Vec<_> = (0..3)
            .map(|_| b.append_block_param(head, Type::I64))
            .collect();
        let exit = b.create_block();
        b.jump(head, vec![zero, one, two, three]);
        b.switch_to_block(head);
        let i1 = b.binary(BinaryOp::Add, i, one);
        let c = b.cmp(CmpOp::Ge, i, p[0]);
        let mut args = vec![i1];
        args.extend(order.iter().map(|&k| vars[k]));
        // Loop back through the `else` edge, which carries the permutation.
        b.branch(c, exit, vec![], head, args);
        b.switch_to_block(exit);
        let a = b.binary(BinaryOp::Mul, vars[0], hundred);
        let m = b.binary(BinaryOp::Mul, vars[1], ten);
        let s = b.binary(BinaryOp::Add, a, m);
        let r = b.binary(BinaryOp::Add, s, vars[2]);
        b.ret(Some(r));
    })
}

#[test]
fn parallel_moves_swap_and_rotate() {
    for order in [
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [0, 0, 1],
        [2, 2, 2],
        [0, 1, 2],
        [2, 1, 0],
    ] {
        let exe = permuting_loop(order);
        for n in 0..7u64 {
            let mut v = [1i64, 2, 3];
            for _ in 0..n {
                v = [v[order[0]], v[order[1]], v[order[2]]];
            }
            let want = v[0] * 100 + v[1] * 10 + v[2];
            assert_eq!(
                exe.call(&[n]),
                Ok(want as u64),
                "order {order:?}, {n} iterations"
            );
        }
    }
}

#[test]
fn swap_on_a_jump_edge() {
    // `jump b(v2, v1)` where b's parameters receive (v1, v2): a plain swap through a jump.
    let exe = single(
        vec![Type::I32, Type::I32, Type::I32],
        Some(Type::I32),
        |b, p| {
            let zero = konst(b, Type::I32, 0);
            let one = konst(b, Type::I32, 1);
            let k = konst(b, Type::I32, 1000);
            let head = b.create_block();
            let i = b.append_block_param(head, Type::I32);
            let x = b.append_block_param(head, Type::I32);
            let y = b.append_block_param(head, Type::I32);
            let body = b.create_block();
            let exit = b.create_block();
            b.jump(head, vec![zero, p[1], p[2]]);
            b.switch_to_block(head);
            let c = b.cmp(CmpOp::Lt, i, p[0]);
            b.branch(c, body, vec![], exit, vec![]);
            b.switch_to_block(body);
            let i1 = b.binary(BinaryOp::Add, i, one);
            b.jump(head, vec![i1, y, x]);
            b.switch_to_block(exit);
            let hi = b.binary(BinaryOp::Mul, x, k);
            let r = b.binary(BinaryOp::Add, hi, y);
            b.ret(Some(r));
        },
    );
    assert_eq!(exe.call(&[0, 1, 2]), Ok(1002));
    assert_eq!(exe.call(&[1, 1, 2]), Ok(2001));
    assert_eq!(exe.call(&[4, 1, 2]), Ok(1002));
    assert_eq!(exe.call(&[7, 1, 2]), Ok(2001));
}

/// `fn sum(p: *const i32, n: i64) -> i32` (wrapping).
fn sum_i32() -> InterpExecutable {
    single(
        vec![Type::ptr(Scalar::I32), Type::I64],
        Some(Type::I32),
        |b, p| {
            let zero64 = konst(b, Type::I64, 0);
            let zero = konst(b, Type::I32, 0);
            let one = konst(b, Type::I64, 1);
            let head = b.create_block();
            let i = b.append_block_param(head, Type::I64);
            let acc = b.append_block_param(head, Type::I32);
            let body = b.create_block();
            let exit = b.create_block();
            b.jump(head, vec![zero64, zero]);
            b.switch_to_block(head);
            let c = b.cmp(CmpOp::Lt, i, p[1]);
            b.branch(c, body, vec![], exit, vec![]);
            b.switch_to_block(body);
            let q = b.elem_ptr(p[0], i);
            let v = b.load(q);
            let acc1 = b.binary(BinaryOp::Add, acc, v);
            let i1 = b.binary(BinaryOp::Add, i, one);
            b.jump(head, vec![i1, acc1]);
            b.switch_to_block(exit);
            b.ret(Some(acc));
        },
    )
}

#[test]
fn sum_over_an_array() {
    let data: Vec<i32> = (0..10_000)
        .map(|i: i32| i.wrapping_mul(2_654_435_761u32 as i32) ^ (i << 7))
        .collect();
    let want = data.iter().fold(0i32, |a, &x| a.wrapping_add(x));
    let exe = sum_i32();
    let got = exe.call(&[data.as_ptr() as u64, data.len() as u64]);
    assert_eq!(got, Ok(u64::from(want as u32)));
    assert_eq!(exe.call(&[data.as_ptr() as u64, 0]), Ok(0));
}

#[test]
fn stores_and_signed_indices() {
    // p[i] = p[i] * 2 + i for i in 0..n, on u16 elements, then return p[-1 + n] through an
    // i32 index; bools and f64 round-trip through memory too.
    let exe = single(
        vec![Type::ptr(Scalar::U16), Type::I32],
        Some(Type::U16),
        |b, p| {
            let zero = konst(b, Type::I32, 0);
            let one = konst(b, Type::I32, 1);
            let minus_one = konst(b, Type::I32, u64::from(u32::MAX));
            let two = konst(b, Type::U16, 2);
            let head = b.create_block();
            let i = b.append_block_param(head, Type::I32);
            let body = b.create_block();
            let exit = b.create_block();
            b.jump(head, vec![zero]);
            b.switch_to_block(head);
            let c = b.cmp(CmpOp::Lt, i, p[1]);
            b.branch(c, body, vec![], exit, vec![]);
            b.switch_to_block(body);
            let q = b.elem_ptr(p[0], i);
            let v = b.load(q);
            let d = b.binary(BinaryOp::Mul, v, two);
            let iu = b.cast(i, Type::U16);
            let w = b.binary(BinaryOp::Add, d, iu);
            b.store(q, w);
            let i1 = b.binary(BinaryOp::Add, i, one);
            b.jump(head, vec![i1]);
            b.switch_to_block(exit);
            let end = b.elem_ptr(p[0], p[1]);
            let last = b.elem_ptr(end, minus_one);
            let r = b.load(last);
            b.ret(Some(r));
        },
    );
    let mut data: Vec<u16> = vec![1, 40000, 7, 65535, 3];
    let want: Vec<u16> = data
        .iter()
        .enumerate()
        .map(|(i, &x)| x.wrapping_mul(2).wrapping_add(i as u16))
        .collect();
    let got = exe.call(&[data.as_mut_ptr() as u64, data.len() as u64]);
    assert_eq!(data, want);
    assert_eq!(got, Ok(u64::from(want[4])));

    for idx_ty in [
        Type::I8,
        Type::I16,
        Type::I32,
        Type::I64,
        Type::U8,
        Type::U16,
        Type::U32,
        Type::U64,
    ] {
        let params = vec![Type::ptr(Scalar::F64), idx_ty, Type::ptr(Scalar::Bool)];
        let exe = single(params, Some(Type::F64), |b, p| {
            let q = b.elem_ptr(p[0], p[1]);
            let v = b.load(q);
            let flag = b.load(p[2]);
            let not = b.unary(nacre_ir::UnaryOp::Not, flag);
            b.store(p[2], not);
            b.store(q, v);
            b.ret(Some(v));
        });
        let vals = [1.5f64, 2.5, 3.5, 4.5, 5.5];
        let mid = vals.as_ptr().wrapping_add(2) as u64;
        let mut flag = false;
        let fp = &mut flag as *mut bool as u64;
        assert_eq!(
            exe.call(&[mid, 2, fp]),
            Ok(5.5f64.to_bits()),
            "index type {idx_ty}"
        );
        assert!(flag, "bool stored through a pointer");
        if idx_ty.scalar().is_some_and(Scalar::is_signed_int) {
            let minus_two = nacre_ir::semantics::normalize(idx_ty, (-2i64) as u128) as u64;
            assert_eq!(
                exe.call(&[mid, minus_two, fp]),
                Ok(1.5f64.to_bits()),
                "index type {idx_ty}"
            );
            assert!(!flag);
        }
    }
}

/// Adds `fn fib(n: i64) -> i64 { if n < 2 { n } else { fib(n - 1) + fib(n - 2) } }`.
fn recursive_fib(m: &mut Module) -> FuncId {
    let id = m.add_function(Function::default());
    m.functions[id] = function("fib", vec![Type::I64], Some(Type::I64), |b, p| {
        let one = konst(b, Type::I64, 1);
        let two = konst(b, Type::I64, 2);
        let base = b.create_block();
        let rec = b.create_block();
        let c = b.cmp(CmpOp::Lt, p[0], two);
        b.branch(c, base, vec![], rec, vec![]);
        b.switch_to_block(base);
        b.ret(Some(p[0]));
        b.switch_to_block(rec);
        let n1 = b.binary(BinaryOp::Sub, p[0], one);
        let n2 = b.binary(BinaryOp::Sub, p[0], two);
        let f1 = b.call(id, vec![n1], Some(Type::I64)).expect("result");
        let f2 = b.call(id, vec![n2], Some(Type::I64)).expect("result");
        let s = b.binary(BinaryOp::Add, f1, f2);
        b.ret(Some(s));
    });
    id
}

#[test]
fn recursion() {
    let mut m = Module::new();
    m.entry = Some(recursive_fib(&mut m));
    let exe = compile(m);
    for n in [0u64, 1, 2, 5, 10, 20, 25] {
        assert_eq!(exe.call(&[n]), Ok(fib_rust(n) as u64), "fib({n})");
    }
}

/// Adds `fn sum(n: i64) -> i64 { if n == 0 { 0 } else { n + sum(n - 1) } }`, or its runaway
/// variant `sum(n + 1)` when `runaway`.
fn recursive_sum(m: &mut Module, runaway: bool) -> FuncId {
    let id = m.add_function(Function::default());
    m.functions[id] = function("sum", vec![Type::I64], Some(Type::I64), |b, p| {
        let zero = konst(b, Type::I64, 0);
        let one = konst(b, Type::I64, 1);
        let base = b.create_block();
        let rec = b.create_block();
        let c = b.cmp(CmpOp::Eq, p[0], zero);
        b.branch(c, base, vec![], rec, vec![]);
        b.switch_to_block(base);
        b.ret(Some(zero));
        b.switch_to_block(rec);
        let op = if runaway {
            BinaryOp::Add
        } else {
            BinaryOp::Sub
        };
        let n1 = b.binary(op, p[0], one);
        let r = b.call(id, vec![n1], Some(Type::I64)).expect("result");
        let s = b.binary(BinaryOp::Add, p[0], r);
        b.ret(Some(s));
    });
    id
}

#[test]
fn deep_recursion_uses_no_host_stack() {
    let mut m = Module::new();
    m.entry = Some(recursive_sum(&mut m, false));
    let exe = compile(m);
    let n = 200_000u64;
    assert_eq!(exe.try_call(&[n]), Ok(n * (n + 1) / 2));
    // The buffers are reusable afterwards.
    assert_eq!(exe.try_call(&[10]), Ok(55));
}

#[test]
fn runaway_recursion_is_an_error() {
    let mut m = Module::new();
    m.entry = Some(recursive_sum(&mut m, true));
    let exe = compile(m);
    assert_eq!(exe.try_call(&[1]), Err(ExecError::StackOverflow));
    assert_eq!(exe.call(&[1]), Err(Trap::StackOverflow));
}

/// Adds `fn div(a: i32, b: i32) -> i32 { a / b }` and a caller that sums `div(100, k)` for
/// `k` from `n` down to `0` (so it always ends up dividing by zero).
fn div_caller(m: &mut Module, op: BinaryOp) -> FuncId {
    let div = m.add_function(function(
        "div",
        vec![Type::I32, Type::I32],
        Some(Type::I32),
        |b, p| {
            let r = b.binary(op, p[0], p[1]);
            b.ret(Some(r));
        },
    ));
    m.add_function(function(
        "caller",
        vec![Type::I32],
        Some(Type::I32),
        |b, p| {
            let zero = konst(b, Type::I32, 0);
            let one = konst(b, Type::I32, 1);
            let hundred = konst(b, Type::I32, 100);
            let head = b.create_block();
            let k = b.append_block_param(head, Type::I32);
            let acc = b.append_block_param(head, Type::I32);
            let exit = b.create_block();
            b.jump(head, vec![p[0], zero]);
            b.switch_to_block(head);
            let q = b
                .call(div, vec![hundred, k], Some(Type::I32))
                .expect("result");
            let acc1 = b.binary(BinaryOp::Add, acc, q);
            let k1 = b.binary(BinaryOp::Sub, k, one);
            let c = b.cmp(CmpOp::Lt, k1, zero);
            b.branch(c, exit, vec![acc1], head, vec![k1, acc1]);
            let r = b.append_block_param(exit, Type::I32);
            b.switch_to_block(exit);
            b.ret(Some(r));
        },
    ))
}

#[test]
fn traps_propagate_out_of_callees() {
    for (op, trap) in [
        (BinaryOp::Div, Trap::DivisionByZero),
        (BinaryOp::Rem, Trap::RemainderByZero),
    ] {
        let mut m = Module::new();
        m.entry = Some(div_caller(&mut m, op));
        let exe = compile(m);
        assert_eq!(exe.call(&[5]), Err(trap));
        assert_eq!(exe.call(&[0]), Err(trap));
    }
    // A function that does not trap still runs after a trapping call on the same thread.
    assert_eq!(fib_loop().call(&[10]), Ok(55));
}

extern "C" fn mul_add(a: i64, b: i64, c: u8) -> i64 {
    a.wrapping_mul(b).wrapping_add(i64::from(c))
}

/// Trampoline for `extern "C" fn(i64, i64, u8) -> i64`.
///
/// # Safety
/// `addr` must be such a function and `args` must hold three arguments.
unsafe fn call_i64_i64_u8(addr: usize, args: &[u64]) -> u64 {
    // SAFETY: the caller guarantees `addr` is an `extern "C" fn(i64, i64, u8) -> i64`.
    let f: extern "C" fn(i64, i64, u8) -> i64 = unsafe { std::mem::transmute(addr) };
    f(args[0] as i64, args[1] as i64, args[2] as u8) as u64
}

extern "C" fn is_odd(a: u32) -> bool {
    a % 2 == 1
}

/// Trampoline for `extern "C" fn(u32) -> bool`.
///
/// # Safety
/// `addr` must be such a function and `args` must hold one argument.
unsafe fn call_u32_bool(addr: usize, args: &[u64]) -> u64 {
    // SAFETY: the caller guarantees `addr` is an `extern "C" fn(u32) -> bool`.
    let f: extern "C" fn(u32) -> bool = unsafe { std::mem::transmute(addr) };
    u64::from(f(args[0] as u32))
}

#[test]
fn extern_calls() {
    let mut m = Module::new();
    let ma = m.declare_extern(ExternFunc {
        name: "mul_add".into(),
        signature: Signature {
            params: vec![Type::I64, Type::I64, Type::U8],
            ret: Some(Type::I64),
        },
    });
    let odd = m.declare_extern(ExternFunc {
        name: "is_odd".into(),
        signature: Signature {
            params: vec![Type::U32],
            ret: Some(Type::BOOL),
        },
    });
    let mut linkage = Linkage::default();
    linkage.externs.insert(
        ma,
        ExternAddr {
            addr: mul_add as extern "C" fn(i64, i64, u8) -> i64 as usize,
            dyn_call: call_i64_i64_u8,
        },
    );
    linkage.externs.insert(
        odd,
        ExternAddr {
            addr: is_odd as extern "C" fn(u32) -> bool as usize,
            dyn_call: call_u32_bool,
        },
    );
    let f = m.add_function(function(
        "f",
        vec![Type::I64, Type::I64, Type::U8],
        Some(Type::I64),
        |b, p| {
            let r = b
                .call_extern(ma, p.to_vec(), Some(Type::I64))
                .expect("result");
            let r32 = b.cast(r, Type::U32);
            let o = b
                .call_extern(odd, vec![r32], Some(Type::BOOL))
                .expect("result");
            let neg = b.unary(nacre_ir::UnaryOp::Neg, r);
            let s = b.select(o, neg, r);
            b.ret(Some(s));
        },
    ));
    m.entry = Some(f);
    let verified = verify(m.clone()).expect("valid IR");
    match Interpreter::new().compile_module(&verified, &Linkage::default()) {
        Err(BackendError::Unsupported { backend, what }) => {
            assert_eq!(backend, "interp");
            assert!(what.contains("linkage"), "{what}");
        }
        Err(e) => panic!("expected Unsupported, got {e}"),
        Ok(_) => panic!("an extern without an address compiled"),
    }
    let exe = compile_linked(m, &linkage);
    let expect = |a: i64, b: i64, c: u8| {
        let r = mul_add(a, b, c);
        if is_odd(r as u32) {
            r.wrapping_neg()
        } else {
            r
        }
    };
    for (a, b, c) in [
        (3i64, 4i64, 5u8),
        (6, 7, 0),
        (-9, 1 << 40, 255),
        (i64::MIN, -1, 1),
    ] {
        assert_eq!(
            exe.call(&[a as u64, b as u64, u64::from(c)]),
            Ok(expect(a, b, c) as u64)
        );
    }
}

static INNER: OnceLock<InterpExecutable> = OnceLock::new();

/// Calls back into an interpreted function from native code.
extern "C" fn reenter(n: i64) -> i64 {
    INNER
        .get()
        .and_then(|exe| exe.try_call(&[n as u64]).ok())
        .map_or(-1, |v| v as i64)
}

/// Trampoline for `extern "C" fn(i64) -> i64`.
///
/// # Safety
/// `addr` must be such a function and `args` must hold one argument.
unsafe fn call_i64_i64(addr: usize, args: &[u64]) -> u64 {
    // SAFETY: the caller guarantees `addr` is an `extern "C" fn(i64) -> i64`.
    let f: extern "C" fn(i64) -> i64 = unsafe { std::mem::transmute(addr) };
    f(args[0] as i64) as u64
}

#[test]
fn reentrant_calls_from_externs() {
    INNER.get_or_init(fib_loop);
    let mut m = Module::new();
    let ext = m.declare_extern(ExternFunc {
        name: "reenter".into(),
        signature: Signature {
            params: vec![Type::I64],
            ret: Some(Type::I64),
        },
    });
    let mut linkage = Linkage::default();
    linkage.externs.insert(
        ext,
        ExternAddr {
            addr: reenter as extern "C" fn(i64) -> i64 as usize,
            dyn_call: call_i64_i64,
        },
    );
    let f = m.add_function(function(
        "outer",
        vec![Type::I64],
        Some(Type::I64),
        |b, p| {
            let one = konst(b, Type::I64, 1);
            let x = b.binary(BinaryOp::Add, p[0], one);
            let r = b
                .call_extern(ext, vec![x], Some(Type::I64))
                .expect("result");
            let s = b.binary(BinaryOp::Add, r, p[0]);
            b.ret(Some(s));
        },
    ));
    m.entry = Some(f);
    let exe = compile_linked(m, &linkage);
    assert_eq!(exe.call(&[9]), Ok(55 + 9));
}

#[test]
fn void_functions_and_calls_without_results() {
    let mut m = Module::new();
    let store = m.add_function(function(
        "store",
        vec![Type::ptr(Scalar::I64), Type::I64],
        None,
        |b, p| {
            b.store(p[0], p[1]);
            b.ret(None);
        },
    ));
    let f = m.add_function(function("f", vec![Type::ptr(Scalar::I64)], None, |b, p| {
        let v = konst(b, Type::I64, 42);
        b.call(store, vec![p[0], v], None);
        b.ret(None);
    }));
    m.entry = Some(f);
    let exe = compile(m);
    let mut cell = 0i64;
    assert_eq!(exe.call(&[&mut cell as *mut i64 as u64]), Ok(0));
    assert_eq!(cell, 42);
}

#[test]
fn arguments_are_normalised() {
    let exe = single(vec![Type::I8, Type::BOOL], Some(Type::I64), |b, p| {
        let w = b.cast(p[0], Type::I64);
        let c = b.cast(p[1], Type::I64);
        let r = b.binary(BinaryOp::Add, w, c);
        b.ret(Some(r));
    });
    assert_eq!(exe.call(&[0xffff_ff80, 0xfe]), Ok(-128i64 as u64));
    assert_eq!(exe.call(&[0x1_0000_0005, 3]), Ok(6));
    assert_eq!(exe.call(&[]), Ok(0), "missing arguments read as 0");
}

#[test]
fn branch_with_identical_edges_and_unfused_conditions() {
    let exe = single(vec![Type::BOOL, Type::I32], Some(Type::I32), |b, p| {
        let join = b.create_block();
        let v = b.append_block_param(join, Type::I32);
        b.branch(p[0], join, vec![p[1]], join, vec![p[1]]);
        b.switch_to_block(join);
        let t = b.create_block();
        let e = b.create_block();
        b.branch(p[0], t, vec![], e, vec![]);
        b.switch_to_block(t);
        b.ret(Some(v));
        b.switch_to_block(e);
        let r = b.unary(nacre_ir::UnaryOp::Not, v);
        b.ret(Some(r));
    });
    assert_eq!(exe.call(&[1, 5]), Ok(5));
    assert_eq!(exe.call(&[0, 5]), Ok(u64::from(!5u32)));
}

#[test]
fn concurrent_calls_from_many_threads() {
    let exe: Arc<dyn Executable> = {
        let mut m = Module::new();
        m.entry = Some(recursive_fib(&mut m));
        Interpreter::new()
            .compile(&verify(m).expect("valid"), &Linkage::default())
            .expect("compiles")
    };
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let exe = Arc::clone(&exe);
            std::thread::spawn(move || {
                (0..30).all(|k| {
                    let n = (t * 7 + k) % 18;
                    exe.call(&[n]) == Ok(fib_rust(n) as u64)
                })
            })
        })
        .collect();
    for t in threads {
        assert!(t.join().expect("thread finishes"));
    }
}

#[test]
fn backend_interface_and_listing() {
    let backend = Interpreter::new();
    assert_eq!(backend.name(), "interp");
    let build = || {
        let mut m = Module::new();
        m.entry = Some(recursive_fib(&mut m));
        backend
            .compile(&verify(m).expect("valid"), &Linkage::default())
            .expect("compiles")
    };
    let (a, b) = (build(), build());
    assert!(a.native_entry().is_none());
    let listing = a.listing().expect("the interpreter keeps a listing");
    assert_eq!(Some(listing), b.listing(), "listings are deterministic");
    assert!(listing.contains("@fib (entry)"), "{listing}");
    assert!(listing.contains("call @fib(r"), "{listing}");
    assert!(
        listing.contains("jump_unless_slt64"),
        "comparison fused into the branch:\n{listing}"
    );
    let loop_listing = fib_loop().listing().map(str::to_owned).unwrap_or_default();
    assert!(loop_listing.contains("iadd64"), "{loop_listing}");
}

#[test]
fn malformed_modules_are_errors_not_panics() {
    // The verifier rejects all of these; lowering must reject them too, without panicking.
    let lower = |m: Module| crate::lower::lower_module(&m, &Linkage::default());
    // No entry.
    assert!(lower(Module::new()).is_err());
    // A block without a terminator.
    let mut m = Module::new();
    m.entry = Some(
        m.add_function(function("f", vec![Type::I32], Some(Type::I32), |b, p| {
            b.binary(BinaryOp::Add, p[0], p[0]);
        })),
    );
    assert!(lower(m).is_err());
    // A jump with the wrong number of arguments.
    let mut m = Module::new();
    m.entry = Some(
        m.add_function(function("f", vec![Type::I32], Some(Type::I32), |b, p| {
            let next = b.create_block();
            b.append_block_param(next, Type::I32);
            b.jump(next, vec![]);
            b.switch_to_block(next);
            b.ret(Some(p[0]));
        })),
    );
    assert!(lower(m).is_err());
    // A terminator in the middle of a block, and a call with too few arguments.
    let mut m = Module::new();
    let mut f = function("f", vec![Type::I32], Some(Type::I32), |b, p| {
        b.ret(Some(p[0]));
    });
    let entry = f.layout[0];
    let extra = f.insts.push(nacre_ir::InstData {
        kind: InstKind::Return(None),
        result: None,
    });
    f.blocks[entry].insts.push(extra);
    m.entry = Some(m.add_function(f));
    assert!(lower(m).is_err());
    let mut m = Module::new();
    let id = m.add_function(Function::default());
    m.functions[id] = function("g", vec![Type::I32], None, |b, _| {
        b.call(id, vec![], None);
        b.ret(None);
    });
    m.entry = Some(id);
    assert!(lower(m).is_err());
    // A jump to a block that is not laid out.
    let mut m = Module::new();
    let mut f = function("f", vec![], None, |b, _| {
        b.ret(None);
    });
    let stray = f.blocks.push(nacre_ir::BlockData::default());
    let entry = f.layout[0];
    let term = f.blocks[entry].insts[0];
    f.insts[term].kind = InstKind::Jump(BlockCall {
        block: stray,
        args: vec![],
    });
    m.entry = Some(m.add_function(f));
    assert!(lower(m).is_err());
}

#[test]
fn results_written_into_jump_parameters_only_when_unobservable() {
    // head(i, x): body computes i1 = i + 1 first and then still reads i, so i1 must not be
    // written into i's slot early; x1 = x + i may be.
    let exe = single(vec![Type::I64], Some(Type::I64), |b, p| {
        let zero = konst(b, Type::I64, 0);
        let one = konst(b, Type::I64, 1);
        let head = b.create_block();
        let i = b.append_block_param(head, Type::I64);
        let x = b.append_block_param(head, Type::I64);
        let body = b.create_block();
        let exit = b.create_block();
        b.jump(head, vec![zero, zero]);
        b.switch_to_block(head);
        let c = b.cmp(CmpOp::Lt, i, p[0]);
        b.branch(c, body, vec![], exit, vec![]);
        b.switch_to_block(body);
        let i1 = b.binary(BinaryOp::Add, i, one);
        let x1 = b.binary(BinaryOp::Add, x, i);
        b.jump(head, vec![i1, x1]);
        b.switch_to_block(exit);
        b.ret(Some(x));
    });
    for n in [0u64, 1, 2, 10, 100] {
        assert_eq!(exe.call(&[n]), Ok((0..n).sum::<u64>()), "sum below {n}");
    }
    let listing = exe.listing().unwrap_or_default();
    assert!(
        listing.contains("= iadd64 r4, r3"),
        "x1 written into x's slot:\n{listing}"
    );
}
