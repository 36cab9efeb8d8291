use super::*;
use crate::builder::FunctionBuilder;
use crate::instructions::CmpOp;
use crate::test_util::new_func;

/// `for i in 0..n` over the function's pointer parameters (then `n: i64`), carrying values
/// of `carried` (type, initial bits); `body` gets the parameters, `i` and the carried values
/// and returns the carried values' next ones. Returns the first carried value, if any.
fn looped(
    ptrs: &[Type],
    carried: &[(Type, u64)],
    body: impl FnOnce(&mut FunctionBuilder<'_>, &[Value], Value, &[Value]) -> Vec<Value>,
) -> Function {
    let mut params = ptrs.to_vec();
    params.push(Type::I64);
    let mut f = new_func(&params, carried.first().map(|c| c.0));
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let head = b.create_block();
    let i = b.append_block_param(head, Type::I64);
    let acc: Vec<Value> = carried
        .iter()
        .map(|(ty, _)| b.append_block_param(head, *ty))
        .collect();
    let (inner, exit) = (b.create_block(), b.create_block());
    let mut init = vec![b.const_bits(Type::I64, 0)];
    init.extend(carried.iter().map(|&(ty, bits)| b.const_bits(ty, bits)));
    b.jump(head, init);
    b.switch_to_block(head);
    let more = b.cmp(CmpOp::Lt, i, *p.last().unwrap());
    b.branch(more, inner, vec![], exit, vec![]);
    b.switch_to_block(inner);
    let next = body(&mut b, &p, i, &acc);
    let one = b.const_bits(Type::I64, 1);
    let i2 = b.binary(BinaryOp::Add, i, one);
    let mut args = vec![i2];
    args.extend(next);
    b.jump(head, args);
    b.switch_to_block(exit);
    b.ret(acc.first().copied());
    f
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
    let mut f = looped(&[f32p(), f32p()], &[], |b, p, i, _| {
        let a = b.const_bits(Type::F32, 2.0f32.to_bits() as u64);
        let (x, y) = (b.elem_ptr(p[0], i), b.elem_ptr(p[1], i));
        let (xv, yv) = (b.load(x), b.load(y));
        let ax = b.binary(BinaryOp::Mul, a, xv);
        let r = b.binary(BinaryOp::Add, ax, yv);
        b.store(y, r);
        vec![]
    });
    f.signature.ret = None;
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
