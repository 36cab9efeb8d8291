//! Constant folding and propagation.
//!
//! One sweep over the reachable blocks in reverse postorder (definitions before uses, except
//! along loop back edges):
//!
//! - instructions whose operands are all constants are evaluated with [`crate::semantics`] and
//!   become `const` instructions in place (same result value). Integer division and remainder
//!   that would trap are left alone so that they trap at run time;
//! - algebraic identities that are exact for the type replace an instruction by one of its
//!   operands or by a constant (`x + 0`, `x * 1`, `x & -1`, `x | 0`, `x ^ 0`, `x - 0`, shifts by
//!   a multiple of the width, `x - x`, `x * 0`, `select` with a constant condition or equal arms,
//!   casts to the same type, ...). Identities are applied to integers (and to `bool` for the
//!   logical operators) only: on floats even `x * 1.0` is not bit-exact (a signalling NaN is
//!   quieted) and `x + 0.0` changes `-0.0`;
//! - a branch on a constant condition, or whose two edges are identical, becomes a jump;
//! - a parameter of a non-entry block whose incoming arguments (over the edges from reachable
//!   blocks that still exist) are all one value, or the parameter itself, is replaced by that
//!   value; if they are all equal constants, the parameter becomes a `const` at the top of the
//!   block. The parameter and its jump arguments are removed.
//!
//! Replaced values are substituted everywhere at the end, in one sweep.

use crate::analysis::dominators::postorder;
use crate::entities::{Inst, Value};
use crate::function::{Function, InstData, ValueDef};
use crate::instructions::{BinaryOp, BlockCall, CmpOp, Const, InstKind};
use crate::passes::support::{
    const_of, edge_call, filter_args, remove_params, Aliases, Edge, PredLists,
};
use crate::passes::PassStats;
use crate::semantics::{self, normalize};
use crate::types::{Scalar, Type};
use cranelift_entity::EntityRef;

/// Folds constants, applies exact algebraic identities, folds constant branches and removes
/// block parameters that always receive the same value. See the module docs.
///
/// Reports instructions (and parameters) replaced by constants or existing values in
/// [`PassStats::folded`], deleted instructions in [`PassStats::removed_insts`], removed block
/// parameters in [`PassStats::removed_params`] and branches turned into jumps in
/// [`PassStats::simplified_branches`].
pub fn const_fold(func: &mut Function) -> PassStats {
    let mut stats = PassStats::default();
    let Some(entry) = func.entry() else {
        return stats;
    };
    let mut rpo = postorder(func);
    rpo.reverse();
    let mut reachable = vec![false; func.blocks.len()];
    for b in &rpo {
        reachable[b.index()] = true;
    }
    let preds = PredLists::new(func);
    let mut aliases = Aliases::new(func);
    // The successor slot a folded branch keeps; the terminator is rewritten after the sweep so
    // that edge slots stay meaningful during it.
    let mut decided: Vec<Option<u8>> = vec![None; func.blocks.len()];
    let mut masks: Vec<Option<Vec<bool>>> = vec![None; func.blocks.len()];
    let mut any_mask = false;

    for &b in &rpo {
        let mut new_consts: Vec<Inst> = Vec::new();
        let nparams = func.blocks[b].params.len();
        if b != entry && nparams > 0 {
            let mut keep = vec![true; nparams];
            for (k, flag) in keep.iter_mut().enumerate() {
                let p = func.blocks[b].params[k];
                match incoming(
                    func,
                    preds.edges(b),
                    &decided,
                    &reachable,
                    k,
                    p,
                    &mut aliases,
                ) {
                    Incoming::Value(v) => {
                        aliases.set(p, v);
                        *flag = false;
                        stats.folded += 1;
                    }
                    Incoming::Const(c) => {
                        // The parameter's value becomes the result of a new `const`.
                        let inst = func.insts.push(InstData {
                            kind: InstKind::Const(c),
                            result: Some(p),
                        });
                        func.values[p].def = ValueDef::Result(inst);
                        new_consts.push(inst);
                        *flag = false;
                        stats.folded += 1;
                    }
                    Incoming::Unknown => {}
                }
            }
            if keep.contains(&false) {
                stats.removed_params += remove_params(func, b, &keep);
                masks[b.index()] = Some(keep);
                any_mask = true;
            }
        }

        let mut list = std::mem::take(&mut func.blocks[b].insts);
        list.retain(|&inst| {
            func.insts[inst].kind.map_operands(|v| aliases.resolve(v));
            match simplify(func, inst) {
                Simplified::Keep => true,
                Simplified::Const(c) => {
                    func.insts[inst].kind = InstKind::Const(c);
                    stats.folded += 1;
                    true
                }
                Simplified::Alias(v) => match func.insts[inst].result {
                    Some(r) => {
                        aliases.set(r, v);
                        stats.folded += 1;
                        stats.removed_insts += 1;
                        false
                    }
                    None => true,
                },
                Simplified::Decide(slot) => {
                    decided[b.index()] = Some(slot);
                    true
                }
            }
        });
        if !new_consts.is_empty() {
            list.splice(0..0, new_consts);
        }
        func.blocks[b].insts = list;
    }

    for &b in &rpo {
        if let Some(slot) = decided[b.index()] {
            if let Some(&inst) = func.blocks[b].insts.last() {
                let kind = &mut func.insts[inst].kind;
                if let InstKind::Branch {
                    then_dest,
                    else_dest,
                    ..
                } = kind
                {
                    let kept = if slot == 0 { then_dest } else { else_dest };
                    let dest = std::mem::replace(
                        kept,
                        BlockCall {
                            block: b,
                            args: Vec::new(),
                        },
                    );
                    *kind = InstKind::Jump(dest);
                    stats.simplified_branches += 1;
                }
            }
        }
    }
    if any_mask {
        filter_args(func, &masks);
    }
    aliases.apply(func);
    stats
}

/// What a block parameter always receives.
enum Incoming {
    /// Always this value (or the parameter itself).
    Value(Value),
    /// Always this constant, from different `const` instructions.
    Const(Const),
    /// Different values, or no incoming edge.
    Unknown,
}

/// Classifies the arguments parameter `k` (value `p`) receives over the live edges `edges`.
fn incoming(
    func: &Function,
    edges: impl Iterator<Item = Edge>,
    decided: &[Option<u8>],
    reachable: &[bool],
    k: usize,
    p: Value,
    aliases: &mut Aliases,
) -> Incoming {
    let mut same: Option<Value> = None;
    let mut all_same = true;
    let mut konst: Option<Const> = None;
    let mut all_const = true;
    for e in edges {
        if !reachable[e.pred.index()] {
            continue;
        }
        if decided[e.pred.index()].is_some_and(|s| s != e.slot) {
            continue;
        }
        let Some(call) = edge_call(func, e) else {
            continue;
        };
        let Some(&arg) = call.args.get(k) else {
            return Incoming::Unknown;
        };
        let arg = aliases.resolve(arg);
        if arg == p {
            continue;
        }
        match same {
            None => same = Some(arg),
            Some(s) if s != arg => all_same = false,
            Some(_) => {}
        }
        if all_const {
            match (const_of(func, arg), konst) {
                (Some(c), None) => konst = Some(c),
                (Some(c), Some(k)) if c == k => {}
                _ => all_const = false,
            }
        }
        if !all_same && !all_const {
            return Incoming::Unknown;
        }
    }
    match (same, konst) {
        (Some(v), _) if all_same => Incoming::Value(v),
        (Some(_), Some(c)) if all_const => Incoming::Const(c),
        _ => Incoming::Unknown,
    }
}

/// The outcome of simplifying one instruction.
enum Simplified {
    /// Nothing to do.
    Keep,
    /// The instruction computes this constant.
    Const(Const),
    /// The instruction's result is this existing value.
    Alias(Value),
    /// The branch always takes this successor slot.
    Decide(u8),
}

/// Simplifies one instruction whose operands are already substituted.
fn simplify(func: &Function, inst: Inst) -> Simplified {
    let data = &func.insts[inst];
    let ty_of = |v: Value| func.values[v].ty;
    let cst = |v: Value| const_of(func, v);
    let rty = data.result.map(ty_of);
    let make = |bits: u128| match rty {
        Some(ty) => Simplified::Const(Const {
            ty,
            bits: normalize(ty, bits),
        }),
        None => Simplified::Keep,
    };
    match &data.kind {
        InstKind::Unary(op, a) => match (cst(*a), ty_of(*a).scalar()) {
            (Some(x), Some(s)) => make(semantics::unary(*op, s, x.bits)),
            _ => Simplified::Keep,
        },
        InstKind::Binary(op, a, b) => {
            let Some(s) = ty_of(*a).scalar() else {
                return Simplified::Keep;
            };
            match (cst(*a), cst(*b)) {
                (Some(x), Some(y)) => match semantics::binary(*op, s, x.bits, y.bits) {
                    Ok(r) => make(r),
                    Err(_) => Simplified::Keep,
                },
                _ if *op == BinaryOp::Add && s.is_int() => match div_rem_sum(func, *a, *b) {
                    Some(x) => Simplified::Alias(x),
                    None => binary_identity(*op, s, *a, *b, cst(*a), cst(*b), make),
                },
                (ca, cb) => binary_identity(*op, s, *a, *b, ca, cb, make),
            }
        }
        InstKind::Fma(a, b, c) => match (cst(*a), cst(*b), cst(*c), ty_of(*a).scalar()) {
            (Some(x), Some(y), Some(z), Some(s)) if s.is_float() => {
                make(semantics::fma(s, x.bits, y.bits, z.bits))
            }
            _ => Simplified::Keep,
        },
        InstKind::Math(f, a) => match (cst(*a), ty_of(*a).scalar()) {
            (Some(x), Some(s)) if s.is_float() => make(semantics::math(*f, s, x.bits)),
            _ => Simplified::Keep,
        },
        InstKind::Math2(f, a, b) => match (cst(*a), cst(*b), ty_of(*a).scalar()) {
            (Some(x), Some(y), Some(s)) if s.is_float() => {
                make(semantics::math2(*f, s, x.bits, y.bits))
            }
            _ => Simplified::Keep,
        },
        InstKind::Cmp(op, a, b) => {
            let ty = ty_of(*a);
            match (cst(*a), cst(*b)) {
                (Some(x), Some(y)) => make(u128::from(semantics::compare(*op, ty, x.bits, y.bits))),
                _ if a == b && !ty.is_float() => {
                    make(u128::from(matches!(op, CmpOp::Eq | CmpOp::Le | CmpOp::Ge)))
                }
                _ => Simplified::Keep,
            }
        }
        InstKind::Cast(a) => {
            let from = ty_of(*a);
            match (cst(*a), rty) {
                (_, Some(to)) if to == from => Simplified::Alias(*a),
                (Some(x), Some(to)) => make(semantics::cast(from, to, x.bits)),
                (None, Some(to)) => match round_trip_source(func, *a) {
                    Some(x) if ty_of(x) == to => Simplified::Alias(x),
                    _ => Simplified::Keep,
                },
                _ => Simplified::Keep,
            }
        }
        InstKind::Select(c, x, y) => match cst(*c) {
            Some(cond) => Simplified::Alias(if cond.bits & 1 != 0 { *x } else { *y }),
            None if x == y => Simplified::Alias(*x),
            None => match (cst(*x), cst(*y)) {
                (Some(cx), Some(cy)) if cx == cy => make(cx.bits),
                _ => Simplified::Keep,
            },
        },
        InstKind::Branch {
            cond,
            then_dest,
            else_dest,
        } => match cst(*cond) {
            Some(c) => Simplified::Decide(if c.bits & 1 != 0 { 0 } else { 1 }),
            None if then_dest == else_dest => Simplified::Decide(0),
            None => Simplified::Keep,
        },
        InstKind::Const(_)
        | InstKind::ElemPtr(..)
        | InstKind::Load(_)
        | InstKind::Store(..)
        | InstKind::BoundsCheck { .. }
        | InstKind::Call(..)
        | InstKind::CallExtern(..)
        | InstKind::GpuIndex(..)
        | InstKind::Barrier
        | InstKind::SharedAlloc { .. }
        | InstKind::LocalArray { .. }
        | InstKind::DynamicShared { .. }
        | InstKind::DynamicSharedBytes
        | InstKind::LaneId
        | InstKind::Shuffle(..)
        | InstKind::Warp(..)
        | InstKind::BlockVote(..)
        | InstKind::AtomicRmw { .. }
        | InstKind::AtomicCas { .. }
        | InstKind::Fence { .. }
        | InstKind::Launch(_)
        | InstKind::Jump(_)
        | InstKind::Return(_) => Simplified::Keep,
    }
}

/// `x` if `a + b` is `(x / c) * c + x % c` (in any order of the sum's and product's
/// operands): a 2-D index `(p / w, p % w)` flattened again, as tiled kernels write. Integer
/// division truncates and the remainder takes the dividend's sign, so the sum is `x` for
/// every `x` where the division does not trap; the division and remainder stay (they may
/// trap, and are not removed as dead code).
fn div_rem_sum(func: &Function, a: Value, b: Value) -> Option<Value> {
    let binary = |v: Value| match func.defining_inst(v)? {
        InstKind::Binary(op, x, y) => Some((*op, *x, *y)),
        _ => None,
    };
    let same = |x: Value, y: Value| {
        x == y || matches!((const_of(func, x), const_of(func, y)), (Some(p), Some(q)) if p == q)
    };
    let (((BinaryOp::Mul, m1, m2), (BinaryOp::Rem, x, c))
    | ((BinaryOp::Rem, x, c), (BinaryOp::Mul, m1, m2))) = (binary(a)?, binary(b)?)
    else {
        return None;
    };
    [(m1, m2), (m2, m1)].into_iter().find_map(|(q, c2)| {
        let (BinaryOp::Div, x2, c3) = binary(q)? else {
            return None;
        };
        (x2 == x && same(c, c2) && same(c, c3)).then_some(x)
    })
}

/// If `v` is an exact widening `cast<f32>(x)` of a half value `x` (or `cast<f64>` of an `f32`),
/// `x`: casting `v` back to `x`'s type gives `x` again. (Widening `widen_half` output, where
/// `cast<f16>(cast<f32>(x))` is common.)
fn round_trip_source(func: &Function, v: Value) -> Option<Value> {
    let InstKind::Cast(x) = func.defining_inst(v)? else {
        return None;
    };
    let (from, to) = (func.values[*x].ty.scalar()?, func.values[v].ty.scalar()?);
    let exact = (from.is_half() && to == Scalar::F32) || (from == Scalar::F32 && to == Scalar::F64);
    exact.then_some(*x)
}

/// Exact identities of a binary operator with at most one constant operand. `ca`/`cb` are the
/// operands' constants, if any; `make` builds a constant result.
fn binary_identity(
    op: BinaryOp,
    s: Scalar,
    a: Value,
    b: Value,
    ca: Option<Const>,
    cb: Option<Const>,
    make: impl Fn(u128) -> Simplified,
) -> Simplified {
    let int = s.is_int();
    let logical = int || s == Scalar::Bool;
    let ones_bits = normalize(Type::Scalar(s), u128::MAX);
    let is = |c: Option<Const>, bits: u128| c.is_some_and(|c| c.bits == bits);
    let (zero_a, zero_b) = (is(ca, 0), is(cb, 0));
    let (one_a, one_b) = (is(ca, 1), is(cb, 1));
    let (ones_a, ones_b) = (is(ca, ones_bits), is(cb, ones_bits));
    match op {
        BinaryOp::Add if int => {
            if zero_b {
                Simplified::Alias(a)
            } else if zero_a {
                Simplified::Alias(b)
            } else {
                Simplified::Keep
            }
        }
        BinaryOp::Sub if int => {
            if zero_b {
                Simplified::Alias(a)
            } else if a == b {
                make(0)
            } else {
                Simplified::Keep
            }
        }
        BinaryOp::Mul if int => {
            if one_b {
                Simplified::Alias(a)
            } else if one_a {
                Simplified::Alias(b)
            } else if zero_a || zero_b {
                make(0)
            } else {
                Simplified::Keep
            }
        }
        BinaryOp::Div if int && one_b => Simplified::Alias(a),
        BinaryOp::Rem if int && (one_b || (s.is_signed_int() && ones_b)) => make(0),
        BinaryOp::And if logical => {
            if ones_b || a == b {
                Simplified::Alias(a)
            } else if ones_a {
                Simplified::Alias(b)
            } else if zero_a || zero_b {
                make(0)
            } else {
                Simplified::Keep
            }
        }
        BinaryOp::Or if logical => {
            if zero_b || a == b {
                Simplified::Alias(a)
            } else if zero_a {
                Simplified::Alias(b)
            } else if ones_a || ones_b {
                make(ones_bits)
            } else {
                Simplified::Keep
            }
        }
        BinaryOp::Xor if logical => {
            if zero_b {
                Simplified::Alias(a)
            } else if zero_a {
                Simplified::Alias(b)
            } else if a == b {
                make(0)
            } else {
                Simplified::Keep
            }
        }
        BinaryOp::Shl | BinaryOp::Shr if int => {
            let mask = u128::from(s.bits() - 1);
            if cb.is_some_and(|c| c.bits & mask == 0) {
                Simplified::Alias(a)
            } else if zero_a {
                make(0)
            } else {
                Simplified::Keep
            }
        }
        BinaryOp::Min | BinaryOp::Max if int && a == b => Simplified::Alias(a),
        _ => Simplified::Keep,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::FunctionBuilder;
    use crate::instructions::UnaryOp;
    use crate::test_util::{eval, k, kb, kf, new_func, run};
    use insta::assert_snapshot;

    #[test]
    fn folds_constant_expressions() {
        let mut f = new_func(&[Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let x = b.create_entry_block()[0];
        let two = k(&mut b, Type::I32, 2);
        let three = k(&mut b, Type::I32, 3);
        let five = b.binary(BinaryOp::Add, two, three);
        let fifteen = b.binary(BinaryOp::Mul, five, three);
        let neg = b.unary(UnaryOp::Neg, fifteen);
        let wide = b.cast(neg, Type::I64);
        let back = b.cast(wide, Type::I32);
        let lt = b.cmp(CmpOp::Lt, back, two);
        let sel = b.select(lt, back, x);
        let r = b.binary(BinaryOp::Add, x, sel);
        b.ret(Some(r));
        let stats = run(&mut f, const_fold);
        assert_eq!(stats.folded, 7);
        assert_snapshot!(f.to_string());
        assert_eq!(
            eval(&f, &[10]),
            Ok(Some(semantics::normalize(Type::I32, -5i64 as u128) as u64))
        );
    }

    #[test]
    fn a_flattened_quotient_and_remainder_is_the_dividend() {
        // `(x / 18) * 18 + x % 18` and `x % c + c * (x / c)` (a non-constant divisor).
        let mut f = new_func(&[Type::I32, Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let p = b.create_entry_block();
        let (x, c) = (p[0], p[1]);
        let w = k(&mut b, Type::I32, 18);
        let (q, r) = (b.binary(BinaryOp::Div, x, w), b.binary(BinaryOp::Rem, x, w));
        let w2 = k(&mut b, Type::I32, 18);
        let m = b.binary(BinaryOp::Mul, q, w2);
        let first = b.binary(BinaryOp::Add, m, r);
        let (q2, r2) = (b.binary(BinaryOp::Div, x, c), b.binary(BinaryOp::Rem, x, c));
        let m2 = b.binary(BinaryOp::Mul, c, q2);
        let second = b.binary(BinaryOp::Add, r2, m2);
        // Another multiplier, divisor or dividend: not an identity.
        let seven = k(&mut b, Type::I32, 7);
        let m3 = b.binary(BinaryOp::Mul, q, seven);
        let third = b.binary(BinaryOp::Add, m3, r);
        let q7 = b.binary(BinaryOp::Div, x, seven);
        let m4 = b.binary(BinaryOp::Mul, q7, w);
        let fourth = b.binary(BinaryOp::Add, m4, r);
        let rc = b.binary(BinaryOp::Rem, c, w);
        let fifth = b.binary(BinaryOp::Add, m, rc);
        let third = b.binary(BinaryOp::Add, third, fourth);
        let third = b.binary(BinaryOp::Sub, third, fifth);
        let s1 = b.binary(BinaryOp::Xor, first, second);
        let s2 = b.binary(BinaryOp::Xor, s1, third);
        b.ret(Some(s2));
        run(&mut f, const_fold);
        let adds = f
            .live_insts()
            .filter(|d| matches!(d.kind, InstKind::Binary(BinaryOp::Add, ..)))
            .count();
        assert_eq!(adds, 4, "{f}");
        for (x, c) in [
            (100i64, 7i64),
            (-100, 7),
            (17, 3),
            (-1, 5),
            (i32::MAX as i64, 9),
        ] {
            let third =
                ((x / 18) * 7 + x % 18) + ((x / 7) * 18 + x % 18) - ((x / 18) * 18 + c % 18);
            let want = (x ^ x ^ third) as i32;
            let got = eval(&f, &[x as u64, c as u64]);
            let want = semantics::normalize(Type::I32, want as i64 as u128) as u64;
            assert_eq!(got, Ok(Some(want)), "{x} {c}");
        }
    }

    #[test]
    fn integer_identities() {
        let mut f = new_func(&[Type::I32, Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let p = b.create_entry_block();
        let (x, y) = (p[0], p[1]);
        let zero = k(&mut b, Type::I32, 0);
        let one = k(&mut b, Type::I32, 1);
        let ones = k(&mut b, Type::I32, -1);
        let thirty_two = k(&mut b, Type::I32, 32);
        let a = b.binary(BinaryOp::Add, x, zero);
        let a = b.binary(BinaryOp::Add, zero, a);
        let a = b.binary(BinaryOp::Sub, a, zero);
        let a = b.binary(BinaryOp::Mul, one, a);
        let a = b.binary(BinaryOp::And, a, ones);
        let a = b.binary(BinaryOp::Or, a, zero);
        let a = b.binary(BinaryOp::Xor, zero, a);
        let a = b.binary(BinaryOp::Shl, a, zero);
        let a = b.binary(BinaryOp::Shr, a, thirty_two);
        let a = b.binary(BinaryOp::Div, a, one);
        let a = b.binary(BinaryOp::Min, a, a);
        let z1 = b.binary(BinaryOp::Mul, y, zero);
        let z2 = b.binary(BinaryOp::Sub, y, y);
        let z3 = b.binary(BinaryOp::Rem, y, ones);
        let z = b.binary(BinaryOp::Add, z1, z2);
        let z = b.binary(BinaryOp::Add, z, z3);
        let r = b.binary(BinaryOp::Add, a, z);
        b.ret(Some(r));
        let stats = run(&mut f, const_fold);
        assert_eq!(stats.removed_insts, 12);
        assert_snapshot!(f.to_string());
    }

    #[test]
    fn float_identities_are_not_applied() {
        let mut f = new_func(&[Type::F64], Some(Type::F64));
        let mut b = FunctionBuilder::new(&mut f);
        let x = b.create_entry_block()[0];
        let zero = kf(&mut b, 0.0);
        let one = kf(&mut b, 1.0);
        let a = b.binary(BinaryOp::Add, x, zero);
        let m = b.binary(BinaryOp::Mul, a, zero);
        let m = b.binary(BinaryOp::Mul, m, one);
        let s = b.binary(BinaryOp::Sub, m, m);
        let c = b.cmp(CmpOp::Eq, s, s);
        let r = b.select(c, s, x);
        let sum = b.binary(BinaryOp::Add, one, one);
        let r = b.fma(r, sum, one);
        b.ret(Some(r));
        run(&mut f, const_fold);
        assert_snapshot!(f.to_string());
        // -0.0 + 0.0 is +0.0: folding `x + 0.0` to `x` would be wrong.
        assert_eq!(eval(&f, &[(-0.0f64).to_bits()]), Ok(Some(1.0f64.to_bits())));
    }

    #[test]
    fn trapping_division_is_not_folded() {
        let mut f = new_func(&[], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        b.create_entry_block();
        let seven = k(&mut b, Type::I32, 7);
        let zero = k(&mut b, Type::I32, 0);
        let min = k(&mut b, Type::I32, i32::MIN.into());
        let m1 = k(&mut b, Type::I32, -1);
        let wrapped = b.binary(BinaryOp::Div, min, m1);
        let rem = b.binary(BinaryOp::Rem, min, m1);
        let s = b.binary(BinaryOp::Add, wrapped, rem);
        let d = b.binary(BinaryOp::Div, seven, zero);
        let r = b.binary(BinaryOp::Add, s, d);
        b.ret(Some(r));
        run(&mut f, const_fold);
        assert_snapshot!(f.to_string());
        assert_eq!(eval(&f, &[]), Err(crate::Trap::DivisionByZero));
    }

    #[test]
    fn constant_and_trivial_branches_become_jumps() {
        let mut f = new_func(&[Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let x = b.create_entry_block()[0];
        let (t, e, j) = (b.create_block(), b.create_block(), b.create_block());
        let one = k(&mut b, Type::I32, 1);
        let two = k(&mut b, Type::I32, 2);
        let c = b.cmp(CmpOp::Gt, two, one);
        b.branch(c, t, vec![], e, vec![]);
        b.switch_to_block(t);
        let cx = b.cmp(CmpOp::Eq, x, one);
        b.branch(cx, j, vec![x], j, vec![x]);
        b.switch_to_block(e);
        b.jump(j, vec![two]);
        let r = b.append_block_param(j, Type::I32);
        b.switch_to_block(j);
        b.ret(Some(r));
        let stats = run(&mut f, const_fold);
        assert_eq!(stats.simplified_branches, 2);
        assert_snapshot!(f.to_string());
    }

    #[test]
    fn uniform_block_parameters_are_replaced() {
        let mut f = new_func(&[Type::BOOL, Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let p = b.create_entry_block();
        let (c, x) = (p[0], p[1]);
        let (t, e, j) = (b.create_block(), b.create_block(), b.create_block());
        b.branch(c, t, vec![], e, vec![]);
        b.switch_to_block(t);
        let k1 = k(&mut b, Type::I32, 4);
        b.jump(j, vec![x, k1, x]);
        b.switch_to_block(e);
        let k2 = k(&mut b, Type::I32, 4);
        b.jump(j, vec![x, k2, k2]);
        let pj = [Type::I32; 3].map(|ty| b.append_block_param(j, ty));
        b.switch_to_block(j);
        let s = b.binary(BinaryOp::Add, pj[0], pj[1]);
        let s = b.binary(BinaryOp::Add, s, pj[2]);
        b.ret(Some(s));
        let stats = run(&mut f, const_fold);
        assert_eq!(stats.removed_params, 2);
        assert_snapshot!(f.to_string());
        for (c, x) in [(0, 5), (1, 5), (1, 100)] {
            let expect = if c == 1 { 2 * x + 4 } else { x + 8 };
            assert_eq!(eval(&f, &[c, x]), Ok(Some(expect)));
        }
    }

    #[test]
    fn loop_invariant_parameter_is_replaced() {
        // block1(i, inv) loops with inv passed unchanged: inv is x.
        let mut f = new_func(&[Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let x = b.create_entry_block()[0];
        let (head, exit) = (b.create_block(), b.create_block());
        let zero = k(&mut b, Type::I32, 0);
        b.jump(head, vec![zero, x]);
        let i = b.append_block_param(head, Type::I32);
        let inv = b.append_block_param(head, Type::I32);
        b.switch_to_block(head);
        let one = k(&mut b, Type::I32, 1);
        let i2 = b.binary(BinaryOp::Add, i, one);
        let c = b.cmp(CmpOp::Lt, i2, inv);
        b.branch(c, head, vec![i2, inv], exit, vec![]);
        b.switch_to_block(exit);
        b.ret(Some(i2));
        run(&mut f, const_fold);
        assert_snapshot!(f.to_string());
        assert_eq!(eval(&f, &[10]), Ok(Some(10)));
    }

    #[test]
    fn selects_and_comparisons_of_equal_operands() {
        let mut f = new_func(&[Type::I32, Type::BOOL], Some(Type::BOOL));
        let mut b = FunctionBuilder::new(&mut f);
        let p = b.create_entry_block();
        let (x, c) = (p[0], p[1]);
        let t = kb(&mut b, true);
        let s1 = b.select(c, x, x);
        let s2 = b.select(t, s1, x);
        let le = b.cmp(CmpOp::Le, s2, x);
        let lt = b.cmp(CmpOp::Lt, x, s2);
        let r = b.binary(BinaryOp::Xor, le, lt);
        let r = b.binary(BinaryOp::And, r, c);
        let same = b.cast(r, Type::BOOL);
        b.ret(Some(same));
        run(&mut f, const_fold);
        assert_snapshot!(f.to_string());
    }
}
