use super::*;
use crate::instructions::BinaryOp;
use crate::test_util::{eval, k, new_func, run};
use crate::types::Type;

/// How the inner loop's bound is made, for the nests of [`nest`].
#[derive(Copy, Clone)]
enum Bound {
    /// The parameter `m`, from before the outer loop.
    Param,
    /// `m + i`: changes with the outer loop.
    PerIteration,
}

/// `fn(n, m) -> acc`: `for i in 0..n { x = i; for k in 0..bound { x = 3x + k }; acc += x }`,
/// `acc` read after the outer loop straight from its header (a value the copy redefines).
/// With `second_inner`, the outer body has another inner loop after the first.
fn nest(bound: Bound, second_inner: bool) -> Function {
    let mut f = new_func(&[Type::I64, Type::I64], Some(Type::I64));
    let mut b = FunctionBuilder::new(&mut f);
    let entry = b.create_block();
    let (n, m) = (
        b.append_block_param(entry, Type::I64),
        b.append_block_param(entry, Type::I64),
    );
    let [outer, obody, inner, ibody, oend, exit] = [(); 6].map(|_| b.create_block());
    b.switch_to_block(entry);
    let zero = k(&mut b, Type::I64, 0);
    b.jump(outer, vec![zero, zero]);

    let (i, acc) = (
        b.append_block_param(outer, Type::I64),
        b.append_block_param(outer, Type::I64),
    );
    b.switch_to_block(outer);
    let more = b.cmp(CmpOp::Lt, i, n);
    b.branch(more, obody, vec![], exit, vec![]);

    b.switch_to_block(obody);
    let limit = match bound {
        Bound::Param => m,
        Bound::PerIteration => b.binary(BinaryOp::Add, m, i),
    };
    let zero = k(&mut b, Type::I64, 0);
    b.jump(inner, vec![zero, i]);

    let (kk, x) = (
        b.append_block_param(inner, Type::I64),
        b.append_block_param(inner, Type::I64),
    );
    b.switch_to_block(inner);
    let go = b.cmp(CmpOp::Lt, kk, limit);
    b.branch(go, ibody, vec![], oend, vec![]);

    b.switch_to_block(ibody);
    let three = k(&mut b, Type::I64, 3);
    let x3 = b.binary(BinaryOp::Mul, x, three);
    let x2 = b.binary(BinaryOp::Add, x3, kk);
    let one = k(&mut b, Type::I64, 1);
    let k2 = b.binary(BinaryOp::Add, kk, one);
    b.jump(inner, vec![k2, x2]);

    b.switch_to_block(oend);
    let acc2 = b.binary(BinaryOp::Add, acc, x);
    let one = k(&mut b, Type::I64, 1);
    let i2 = b.binary(BinaryOp::Add, i, one);
    if second_inner {
        let again = b.create_block();
        let j = b.append_block_param(again, Type::I64);
        b.jump(again, vec![zero]);
        b.switch_to_block(again);
        let j2 = b.binary(BinaryOp::Add, j, one);
        let go = b.cmp(CmpOp::Lt, j2, m);
        b.branch(go, again, vec![j2], outer, vec![i2, acc2]);
    } else {
        b.jump(outer, vec![i2, acc2]);
    }

    b.switch_to_block(exit);
    b.ret(Some(acc));
    f
}

/// The results of `f` over a grid of `(n, m)`, zero and negative bounds included.
fn results(f: &Function) -> Vec<Option<u64>> {
    let mut out = Vec::new();
    for n in [-1i64, 0, 1, 2, 5] {
        for m in [-3i64, 0, 1, 4] {
            out.push(eval(f, &[n as u64, m as u64]).unwrap());
        }
    }
    out
}

/// The comparison the block entering the outer loop branches on, if it branches.
fn guard_test(f: &Function) -> Option<InstKind> {
    let entry = f.layout[0];
    let InstKind::Jump(call) = &f.insts[f.terminator(entry)?].kind else {
        return None;
    };
    let InstKind::Branch { cond, .. } = &f.insts[f.terminator(call.block)?].kind else {
        return None;
    };
    f.defining_inst(*cond).cloned()
}

#[test]
fn a_nest_with_an_invariant_inner_bound_is_versioned_on_its_first_test() {
    let mut f = nest(Bound::Param, false);
    let before = results(&f);
    assert_eq!(run(&mut f, version_function), 1);
    assert_eq!(results(&f), before, "{f}");
    let m = f.blocks[f.layout[0]].params[1];
    let Some(InstKind::Cmp(CmpOp::Lt, zero, bound)) = guard_test(&f) else {
        panic!("the outer loop is entered through a comparison:\n{f}")
    };
    assert_eq!(bound, m);
    assert!(matches!(f.defining_inst(zero), Some(InstKind::Const(c)) if c.bits == 0));
    // The copy and the original: two outer and two inner loops.
    assert_eq!(compute_loops(&f).headers.len(), 4, "{f}");
    // Versioning again finds the nests guarded already.
    assert_eq!(run(&mut f, version_function), 0);
}

#[test]
fn a_bound_that_changes_with_the_outer_loop_is_left_alone() {
    let mut f = nest(Bound::PerIteration, false);
    assert_eq!(run(&mut f, version_function), 0);
}

#[test]
fn an_outer_loop_with_two_inner_loops_is_left_alone() {
    let mut f = nest(Bound::Param, true);
    let before = results(&f);
    assert_eq!(run(&mut f, version_function), 0);
    assert_eq!(results(&f), before);
}
