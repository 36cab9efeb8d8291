use super::*;
use crate::builder::FunctionBuilder;
use crate::test_util::counted_loop;

/// `for i in init..bound` with an `i64` index (see [`counted_loop`]).
fn looped(
    ptrs: &[Type],
    carried: &[(Type, u64)],
    body: impl FnOnce(&mut FunctionBuilder<'_>, &[Value], Value, &[Value]) -> Vec<Value>,
) -> Function {
    counted_loop(ptrs, Type::I64, carried, body)
}

fn i32p() -> Type {
    Type::ptr(Scalar::I32)
}

fn f32p() -> Type {
    Type::ptr(Scalar::F32)
}

#[test]
fn an_integer_sum_is_a_reduction() {
    let f = looped(&[i32p()], &[(Type::I32, 0)], |b, p, i, acc| {
        let x = b.elem_ptr(p[0], i);
        let v = b.load(x);
        vec![b.binary(BinaryOp::Add, acc[0], v)]
    });
    let [lp] = &SimdLoop::find_all(&f)[..] else {
        panic!("one SIMD loop expected")
    };
    assert_eq!(lp.lanes(), 4);
    assert_eq!(lp.reductions.len(), 1);
    assert_eq!(lp.reductions[0].op, BinaryOp::Add);
    assert_eq!(lp.bases, vec![(f.blocks[f.layout[0]].params[0], false)]);
}

#[test]
fn saxpy_is_a_map_with_a_stored_base() {
    let f = looped(&[f32p(), f32p()], &[], |b, p, i, _| {
        let a = b.const_bits(Type::F32, 2.0f32.to_bits() as u64);
        let (x, y) = (b.elem_ptr(p[0], i), b.elem_ptr(p[1], i));
        let (xv, yv) = (b.load(x), b.load(y));
        let ax = b.binary(BinaryOp::Mul, a, xv);
        let r = b.binary(BinaryOp::Add, ax, yv);
        b.store(y, r);
        vec![]
    });
    let [lp] = &SimdLoop::find_all(&f)[..] else {
        panic!("one SIMD loop expected")
    };
    let params = &f.blocks[f.layout[0]].params;
    assert_eq!(lp.bases, vec![(params[0], false), (params[1], true)]);
    assert!(lp.reductions.is_empty());
    assert_eq!(lp.insts.len(), 9, "with the constant of the increment");
}

#[test]
fn float_reductions_traps_and_mixed_widths_are_refused() {
    let float_sum = looped(&[f32p()], &[(Type::F32, 0)], |b, p, i, acc| {
        let x = b.elem_ptr(p[0], i);
        let v = b.load(x);
        vec![b.binary(BinaryOp::Add, acc[0], v)]
    });
    assert!(SimdLoop::find_all(&float_sum).is_empty(), "not associative");
    let division = looped(&[i32p()], &[(Type::I32, 0)], |b, p, i, acc| {
        let x = b.elem_ptr(p[0], i);
        let v = b.load(x);
        let q = b.binary(BinaryOp::Div, acc[0], v);
        vec![q]
    });
    assert!(SimdLoop::find_all(&division).is_empty(), "division traps");
    let widening = looped(&[i32p()], &[(Type::I64, 0)], |b, p, i, acc| {
        let x = b.elem_ptr(p[0], i);
        let v = b.load(x);
        let w = b.cast(v, Type::I64);
        vec![b.binary(BinaryOp::Add, acc[0], w)]
    });
    assert!(SimdLoop::find_all(&widening).is_empty(), "casts are scalar");
}

#[test]
fn the_index_as_a_value_and_shifted_accesses_are_refused() {
    let iota = looped(&[Type::ptr(Scalar::I64)], &[], |b, p, i, _| {
        let x = b.elem_ptr(p[0], i);
        b.store(x, i);
        vec![]
    });
    assert!(SimdLoop::find_all(&iota).is_empty());
    let shifted = looped(&[i32p()], &[(Type::I32, 0)], |b, p, i, acc| {
        let one = b.const_bits(Type::I64, 1);
        let j = b.binary(BinaryOp::Add, i, one);
        let x = b.elem_ptr(p[0], j);
        let v = b.load(x);
        vec![b.binary(BinaryOp::Add, acc[0], v)]
    });
    assert!(SimdLoop::find_all(&shifted).is_empty());
    let escaping = looped(&[i32p()], &[(Type::I32, 0)], |b, p, i, acc| {
        let x = b.elem_ptr(p[0], i);
        let v = b.load(x);
        let s = b.binary(BinaryOp::Add, acc[0], v);
        b.store(x, s);
        vec![s]
    });
    assert!(
        SimdLoop::find_all(&escaping).is_empty(),
        "a running sum stored is a scan, not a reduction"
    );
}
