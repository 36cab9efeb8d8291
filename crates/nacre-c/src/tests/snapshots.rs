//! Snapshots of the emitted C for small functions. Each is also compiled and run, so a
//! snapshot is never of source that does not work.

use super::{compile, compile_linked, function, konst, module, verified};
use crate::emit_c;
use nacre_backend::{Executable, ExternAddr, Linkage};
use nacre_ir::{BinaryOp, CmpOp, ExternFunc, Module, Signature, Type, UnaryOp};

/// The C of a copy of `m`, verified.
fn emit(m: &Module) -> String {
    emit_c(&verified(m.clone())).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn add() {
    let m = module(vec![function(
        "add",
        &[Type::I32, Type::I32],
        Some(Type::I32),
        |b, p| {
            let s = b.binary(BinaryOp::Add, p[0], p[1]);
            b.ret(Some(s));
        },
    )]);
    insta::assert_snapshot!("add", emit(&m));
    let exe = compile(m);
    assert_eq!(
        exe.call(&[i32::MAX as u32 as u64, 1]),
        Ok(i32::MIN as u32 as u64)
    );
}

/// `sum(n) = 0 + 1 + ... + (n - 1)`, a loop with two block parameters.
fn sum_loop() -> Module {
    module(vec![function(
        "sum",
        &[Type::I64],
        Some(Type::I64),
        |b, p| {
            let zero = konst(b, Type::I64, 0);
            let header = b.create_block();
            let i = b.append_block_param(header, Type::I64);
            let acc = b.append_block_param(header, Type::I64);
            let body = b.create_block();
            let exit = b.create_block();
            let r = b.append_block_param(exit, Type::I64);
            b.jump(header, vec![zero, zero]);
            b.switch_to_block(header);
            let c = b.cmp(CmpOp::Lt, i, p[0]);
            b.branch(c, body, vec![], exit, vec![acc]);
            b.switch_to_block(body);
            let one = konst(b, Type::I64, 1);
            let i1 = b.binary(BinaryOp::Add, i, one);
            let acc1 = b.binary(BinaryOp::Add, acc, i);
            b.jump(header, vec![i1, acc1]);
            b.switch_to_block(exit);
            b.ret(Some(r));
        },
    )])
}

#[test]
fn loop_with_block_params() {
    let m = sum_loop();
    insta::assert_snapshot!("loop", emit(&m));
    let exe = compile(m);
    assert_eq!(exe.call(&[100]), Ok(4950));
    assert_eq!(exe.call(&[(-5i64) as u64]), Ok(0));
}

#[test]
fn branch() {
    // pick(a, b) = if a > b { a / b } else { -b }
    let m = module(vec![function(
        "pick",
        &[Type::I32, Type::I32],
        Some(Type::I32),
        |b, p| {
            let c = b.cmp(CmpOp::Gt, p[0], p[1]);
            let then_block = b.create_block();
            let else_block = b.create_block();
            b.branch(c, then_block, vec![], else_block, vec![]);
            b.switch_to_block(then_block);
            let q = b.binary(BinaryOp::Div, p[0], p[1]);
            b.ret(Some(q));
            b.switch_to_block(else_block);
            let n = b.unary(UnaryOp::Neg, p[1]);
            b.ret(Some(n));
        },
    )]);
    insta::assert_snapshot!("branch", emit(&m));
    let exe = compile(m);
    assert_eq!(exe.call(&[7, 2]), Ok(3));
    assert_eq!(exe.call(&[1, 2]), Ok((-2i32) as u32 as u64));
    assert_eq!(exe.call(&[1, 0]), Err(nacre_ir::Trap::DivisionByZero));
}

#[test]
fn call_and_recursion() {
    // main(n) = fact(n) + 1, fact(n) = if n == 0 { 1 } else { n * fact(n - 1) }
    let main = function("main", &[Type::U64], Some(Type::U64), |b, p| {
        let f = b
            .call(nacre_ir::FuncId::from_u32(1), vec![p[0]], Some(Type::U64))
            .unwrap();
        let one = konst(b, Type::U64, 1);
        let r = b.binary(BinaryOp::Add, f, one);
        b.ret(Some(r));
    });
    let fact = function("fact", &[Type::U64], Some(Type::U64), |b, p| {
        let zero = konst(b, Type::U64, 0);
        let c = b.cmp(CmpOp::Eq, p[0], zero);
        let base = b.create_block();
        let rec = b.create_block();
        b.branch(c, base, vec![], rec, vec![]);
        b.switch_to_block(base);
        let one = konst(b, Type::U64, 1);
        b.ret(Some(one));
        b.switch_to_block(rec);
        let one = konst(b, Type::U64, 1);
        let n1 = b.binary(BinaryOp::Sub, p[0], one);
        let f = b
            .call(nacre_ir::FuncId::from_u32(1), vec![n1], Some(Type::U64))
            .unwrap();
        let r = b.binary(BinaryOp::Mul, p[0], f);
        b.ret(Some(r));
    });
    let m = module(vec![main, fact]);
    insta::assert_snapshot!("call_and_recursion", emit(&m));
    let exe = compile(m);
    assert_eq!(exe.call(&[10]), Ok(3628801));
}

/// `swap(a, b, n)`: swaps `a` and `b` `n` times, then returns `a - b`.
pub(crate) fn swap_loop() -> Module {
    module(vec![function(
        "swap",
        &[Type::I32, Type::I32, Type::U32],
        Some(Type::I32),
        |b, p| {
            let header = b.create_block();
            let x = b.append_block_param(header, Type::I32);
            let y = b.append_block_param(header, Type::I32);
            let k = b.append_block_param(header, Type::U32);
            let done = b.create_block();
            let body = b.create_block();
            b.jump(header, vec![p[0], p[1], p[2]]);
            b.switch_to_block(header);
            let zero = konst(b, Type::U32, 0);
            let c = b.cmp(CmpOp::Eq, k, zero);
            b.branch(c, done, vec![], body, vec![]);
            b.switch_to_block(done);
            let d = b.binary(BinaryOp::Sub, x, y);
            b.ret(Some(d));
            b.switch_to_block(body);
            let one = konst(b, Type::U32, 1);
            let k1 = b.binary(BinaryOp::Sub, k, one);
            b.jump(header, vec![y, x, k1]);
        },
    )])
}

#[test]
fn swap() {
    let m = swap_loop();
    insta::assert_snapshot!("swap", emit(&m));
    let exe = compile(m);
    assert_eq!(exe.call(&[5, 2, 0]), Ok(3));
    assert_eq!(exe.call(&[5, 2, 1]), Ok((-3i32) as u32 as u64));
    assert_eq!(exe.call(&[5, 2, 1001]), Ok((-3i32) as u32 as u64));
    assert_eq!(exe.call(&[5, 2, 1000]), Ok(3));
}

extern "C" fn scale(x: f64, k: i32) -> f64 {
    x * f64::from(k)
}

/// An external call, float helpers and the float bit encoding of the array trampoline.
#[test]
fn extern_call_and_helpers() {
    let mut m = module(vec![function(
        "conv",
        &[Type::F32, Type::F64],
        Some(Type::I32),
        |b, p| {
            let wide = b.cast(p[0], Type::F64);
            let three = konst(b, Type::I32, 3);
            let scaled = b
                .call_extern(
                    nacre_ir::ExternId::from_u32(0),
                    vec![wide, three],
                    Some(Type::F64),
                )
                .unwrap();
            let m = b.binary(BinaryOp::Min, scaled, p[1]);
            let r = b.cast(m, Type::I32);
            b.ret(Some(r));
        },
    )]);
    unsafe fn call_scale(addr: usize, args: &[u64]) -> u64 {
        // SAFETY: the caller passes the address of `scale`.
        let f: extern "C" fn(f64, i32) -> f64 = unsafe { std::mem::transmute(addr) };
        f(f64::from_bits(args[0]), args[1] as i32).to_bits()
    }
    let id = m.declare_extern(ExternFunc {
        name: "scale".to_string(),
        signature: Signature {
            params: vec![Type::F64, Type::I32],
            ret: Some(Type::F64),
        },
    });
    let mut linkage = Linkage::default();
    linkage.externs.insert(
        id,
        ExternAddr {
            addr: scale as *const () as usize,
            dyn_call: call_scale,
        },
    );
    let src = emit(&m);
    assert!(
        !src.contains(&format!("{:x}", scale as *const () as usize)),
        "the source must not contain addresses"
    );
    insta::assert_snapshot!("extern_call", src);
    let exe = compile_linked(m, &linkage);
    let call = |x: f32, y: f64| {
        exe.call(&[u64::from(x.to_bits()), y.to_bits()])
            .map(|r| r as u32 as i32)
    };
    assert_eq!(call(1.5, 100.0), Ok(4));
    assert_eq!(call(1.5, f64::NAN), Ok(4));
    assert_eq!(call(f32::NAN, 7.9), Ok(7));
    assert_eq!(call(-1e30, 0.0), Ok(i32::MIN));
}
