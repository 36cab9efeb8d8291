//! A conformance suite for local arrays ([`nacre_ir::InstKind::LocalArray`]) in CPU
//! backends (enabled by the `conformance` feature, for the backends' tests): each call of a
//! function gets its own array, zeroed, alive while the call runs, even when the function
//! calls itself.
//!
//! A backend's test calls [`check_local_arrays`] with a closure that compiles a module.

use crate::launch_conformance::{function, Compile};
use crate::Linkage;
use nacre_ir::{verify, BinaryOp, CmpOp, FuncId, Module, Scalar, Type, Value};

/// The module: `rec(d)` takes a local array of `u64`s, reads its element 1 (zeroed: 0),
/// stores `d` into element 0, calls `rec(d - 1)` when `d > 0`, then reads element 0 back
/// (its own call's: `d`) and stores 77 into element 1 (seen by no later call); it returns
/// the sum of what it read over the recursion. `twice(d)` calls `rec(d)` twice and returns
/// `1000 * first + second`.
fn module() -> Module {
    let mut m = Module::new();
    let rec = FuncId::from_u32(0);
    let f = function("rec", vec![Type::U64], Some(Type::U64), |b, p| {
        let d = p[0];
        let a = b.local_array(Scalar::U64, 4);
        let one = b.const_u32(1);
        let second = b.elem_ptr(a, one);
        let z = b.load(second);
        b.store(a, d);
        let deeper = b.create_block();
        let back = b.create_block();
        let sub = b.append_block_param(back, Type::U64);
        let zero = b.const_u64(0);
        let positive = b.cmp(CmpOp::Gt, d, zero);
        b.branch(positive, deeper, vec![], back, vec![zero]);
        b.switch_to_block(deeper);
        let one64 = b.const_u64(1);
        let d1 = b.binary(BinaryOp::Sub, d, one64);
        let r = b.call(rec, vec![d1], Some(Type::U64)).expect("a result");
        b.jump(back, vec![r]);
        b.switch_to_block(back);
        let x = b.load(a);
        let k = b.const_u64(1000);
        let zk = b.binary(BinaryOp::Mul, z, k);
        let s = b.binary(BinaryOp::Add, sub, x);
        let s = b.binary(BinaryOp::Add, s, zk);
        let seventy_seven = b.const_u64(77);
        b.store(second, seventy_seven);
        b.ret(Some(s));
    });
    assert_eq!(m.add_function(f), rec);
    let twice = function("twice", vec![Type::U64], Some(Type::U64), |b, p| {
        let first = b.call(rec, vec![p[0]], Some(Type::U64)).expect("a result");
        let second = b.call(rec, vec![p[0]], Some(Type::U64)).expect("a result");
        let k = b.const_u64(1000);
        let f = b.binary(BinaryOp::Mul, first, k);
        let r: Value = b.binary(BinaryOp::Add, f, second);
        b.ret(Some(r));
    });
    m.entry = Some(m.add_function(twice));
    m
}

/// Checks local arrays with the backend that `compile` stands for (`backend` names it in
/// failures).
pub fn check_local_arrays(compile: Compile<'_>, backend: &str) {
    let m = module();
    verify(m.clone()).expect("the conformance module is valid IR");
    let exe = compile(m, Linkage::default()).unwrap_or_else(|e| panic!("{backend}: {e}"));
    for d in [0u64, 1, 5, 40] {
        let sum = d * (d + 1) / 2;
        assert_eq!(
            exe.call(&[d]),
            Ok(1000 * sum + sum),
            "{backend}: twice({d})"
        );
    }
}
