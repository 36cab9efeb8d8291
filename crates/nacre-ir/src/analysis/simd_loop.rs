//! Counted loops whose iterations can run as SIMD lanes: the maps and reductions over arrays
//! (`y[i] = a * x[i] + y[i]`, `sum += x[i]`) a backend without an auto-vectoriser (the
//! Cranelift tier) runs several iterations at a time.
//!
//! A [`SimdLoop`] is a [`CountedLoop`] of two blocks, the header and one body block, whose
//! body holds only:
//!
//! - `elem_ptr(p, i)` of the loop index `i` and a pointer `p` defined before the loop, used
//!   only as the address of loads and stores (the bounds checks of such accesses were hoisted
//!   before the loop, so none is left in the body);
//! - loads and stores of those addresses;
//! - lane-wise operations that cannot trap and whose vector form rounds as the scalar one:
//!   integer `+ - & | ^` (and `*`, `min`, `max`, `abs` up to 32 bits), float `+ - * /`,
//!   `sqrt`, `abs` and negation;
//! - constants;
//! - the index's increment, and *reductions*: a header parameter other than the index, used
//!   only as an operand of one integer `+ - & | ^ min max` whose result goes back to the header
//!   and nowhere else. Integer reductions are associative and commutative (wrapping), so
//!   summing lanes apart gives the same bits; float reductions are not and are never taken.
//!
//! Every lane value (loaded, stored, computed) has one width, so all vectors have the same
//! number of lanes. The iterations are equivalent to the scalar loop's when the arrays written
//! do not overlap the others within a vector's width; [`SimdLoop::bases`] lists the pointers
//! for that run-time check, which the backend emits before the vector loop (falling back to
//! the scalar loop when it fails). The scalar loop always runs the remaining iterations.

use crate::analysis::{compute_loops, DominatorTree};
use crate::entities::{Block, Inst, Value};
use crate::function::{Function, ValueDef};
use crate::instructions::{BinaryOp, InstKind, UnaryOp};
use crate::transform::bounds::elide::{defined_before, edge_arg, CountedLoop};
use crate::types::{Scalar, Type};
use std::collections::HashSet;

/// A reduction carried by a header parameter.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Reduction {
    /// The header parameter's position.
    pub position: usize,
    /// The header parameter.
    pub param: Value,
    /// The operation (for [`BinaryOp::Sub`], the parameter is its first operand).
    pub op: BinaryOp,
    /// The integer type.
    pub scalar: Scalar,
}

/// A counted loop to run as SIMD lanes (module docs).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SimdLoop {
    /// The header, which tests `index < bound`.
    pub header: Block,
    /// The one body block.
    pub body: Block,
    /// The block that enters the loop by a jump.
    pub preheader: Block,
    /// The header parameter counting up by one, and its position.
    pub index: (Value, usize),
    /// The loop's bound, defined before it.
    pub bound: Value,
    /// The body's instructions to run as lanes, in order: all but the index's increment and
    /// the terminator.
    pub insts: Vec<Inst>,
    /// The reductions, by header position.
    pub reductions: Vec<Reduction>,
    /// The bytes of every lane value.
    pub lane_bytes: u32,
    /// The pointers indexed (defined before the loop), each with whether the body stores
    /// through it.
    pub bases: Vec<(Value, bool)>,
}

impl SimdLoop {
    /// The SIMD loops of `func`: innermost loops only, which is all a two-block loop can be.
    pub fn find_all(func: &Function) -> Vec<SimdLoop> {
        let loops = compute_loops(func);
        if loops.headers.is_empty() {
            return Vec::new();
        }
        let dom = DominatorTree::compute(func);
        loops
            .headers
            .iter()
            .filter_map(|&h| CountedLoop::find(func, &loops, &dom, h))
            .filter_map(|lp| Self::from_counted(func, &dom, &lp))
            .collect()
    }

    fn from_counted(func: &Function, dom: &DominatorTree, lp: &CountedLoop) -> Option<Self> {
        let [a, b] = lp.body[..] else { return None };
        let body = if a == lp.header { b } else { a };
        let ValueDef::Param(_, index_pos) = func.values[lp.index].def else {
            return None;
        };
        let index_pos = index_pos as usize;
        // The header holds only its test, so every header parameter but the index is
        // carried for the body.
        let header_insts = &func.blocks[lp.header].insts;
        if header_insts.len() != 2 {
            return None;
        }
        let outside = |v: Value| defined_before(func, dom, v, lp.preheader);
        let next_index = edge_arg(func, body, lp.header, index_pos)?;
        let mut plan = SimdLoop {
            header: lp.header,
            body,
            preheader: lp.preheader,
            index: (lp.index, index_pos),
            bound: lp.bound,
            insts: Vec::new(),
            reductions: Vec::new(),
            lane_bytes: 0,
            bases: Vec::new(),
        };
        let params = func.blocks[lp.header].params.clone();
        for (position, &param) in params.iter().enumerate() {
            if position != index_pos {
                plan.reductions
                    .push(reduction(func, body, lp.header, position, param)?);
            }
        }
        let mut lanes: HashSet<Value> = HashSet::new();
        let mut addresses: HashSet<Value> = HashSet::new();
        let reduced: HashSet<Value> = plan.reductions.iter().map(|r| r.param).collect();
        let insts = &func.blocks[body].insts;
        let (_, ops) = insts.split_last()?;
        for &inst in ops {
            let data = &func.insts[inst];
            if data.result == Some(next_index) {
                continue;
            }
            let lane = |v: &Value| lanes.contains(v) || reduced.contains(v) || outside(*v);
            let ok = match &data.kind {
                InstKind::Const(_) => true,
                InstKind::ElemPtr(p, i) if *i == lp.index && outside(*p) => {
                    let result = data.result?;
                    addresses.insert(result);
                    add_base(&mut plan.bases, *p, false);
                    true
                }
                InstKind::Load(p) if addresses.contains(p) => {
                    plan.width(func.values[data.result?].ty)?;
                    true
                }
                InstKind::Store(p, v) if addresses.contains(p) && lane(v) => {
                    plan.width(func.values[*v].ty)?;
                    let base = base_of(func, *p)?;
                    add_base(&mut plan.bases, base, true);
                    true
                }
                InstKind::Binary(op, x, y) if lane(x) && lane(y) => {
                    let ty = func.values[*x].ty;
                    plan.width(ty)? && lane_binary(*op, ty.scalar()?)
                }
                InstKind::Unary(op, x) if lane(x) => {
                    let ty = func.values[*x].ty;
                    plan.width(ty)? && lane_unary(*op, ty.scalar()?)
                }
                _ => false,
            };
            if !ok {
                return None;
            }
            if let Some(r) = data.result {
                if !addresses.contains(&r) {
                    lanes.insert(r);
                }
            }
            plan.insts.push(inst);
        }
        // The index is used only as an `elem_ptr` index and by its increment; addresses only
        // by loads and stores.
        let uses_ok = plan.insts.iter().all(|&inst| {
            let kind = &func.insts[inst].kind;
            let operands = operands(kind);
            match kind {
                InstKind::ElemPtr(p, _) => *p != lp.index,
                InstKind::Load(_) => true,
                InstKind::Store(_, v) => *v != lp.index && !addresses.contains(v),
                _ => operands
                    .iter()
                    .all(|v| *v != lp.index && !addresses.contains(v)),
            }
        });
        (uses_ok && plan.lane_bytes > 0).then_some(plan)
    }

    /// Records `ty` as a lane type: `Some(true)` if it has the loop's lane width (the first
    /// sets it), `None` if it cannot be a lane.
    fn width(&mut self, ty: Type) -> Option<bool> {
        let s = ty.scalar()?;
        let ok = (s.is_int() || s.is_float()) && !s.is_half() && !s.is_wide();
        if !ok {
            return None;
        }
        if self.lane_bytes == 0 {
            self.lane_bytes = s.bytes();
        }
        (self.lane_bytes == s.bytes()).then_some(true)
    }

    /// Lanes in a 128-bit vector.
    pub fn lanes(&self) -> u32 {
        16 / self.lane_bytes
    }
}

/// The pointer `addr` indexes (an `elem_ptr`'s first operand).
fn base_of(func: &Function, addr: Value) -> Option<Value> {
    match func.defining_inst(addr)? {
        InstKind::ElemPtr(p, _) => Some(*p),
        _ => None,
    }
}

fn add_base(bases: &mut Vec<(Value, bool)>, base: Value, stored: bool) {
    match bases.iter_mut().find(|(b, _)| *b == base) {
        Some(entry) => entry.1 |= stored,
        None => bases.push((base, stored)),
    }
}

/// The reduction carried by header parameter `param` at `position`, if it is one.
fn reduction(
    func: &Function,
    body: Block,
    header: Block,
    position: usize,
    param: Value,
) -> Option<Reduction> {
    let next = edge_arg(func, body, header, position)?;
    let InstKind::Binary(op, x, y) = func.defining_inst(next)? else {
        return None;
    };
    let scalar = func.values[param].ty.scalar()?;
    let commutes = matches!(
        op,
        BinaryOp::Add | BinaryOp::And | BinaryOp::Or | BinaryOp::Xor
    ) || (matches!(op, BinaryOp::Min | BinaryOp::Max) && scalar.bytes() <= 4);
    let first = *x == param && *y != param;
    let operand_ok = if *op == BinaryOp::Sub {
        first
    } else {
        commutes && (first || (*y == param && *x != param))
    };
    let int = scalar.is_int() && !scalar.is_wide();
    // The parameter feeds only the reduction, and the reduction only the header.
    let uses = |v: Value| uses_in(func, body, v);
    let next_used_once = uses(next) == 0 && used_in_terminator_once(func, body, next);
    (operand_ok
        && int
        && uses(param) == 1
        && next_used_once
        && func.blocks[header]
            .insts
            .iter()
            .all(|&i| !operands(&func.insts[i].kind).contains(&param)))
    .then_some(Reduction {
        position,
        param,
        op: *op,
        scalar,
    })
}

/// How many instructions of `block` other than its terminator use `v`.
fn uses_in(func: &Function, block: Block, v: Value) -> usize {
    let insts = &func.blocks[block].insts;
    let Some((_, ops)) = insts.split_last() else {
        return 0;
    };
    ops.iter()
        .filter(|&&i| operands(&func.insts[i].kind).contains(&v))
        .count()
}

/// True if `block`'s terminator passes `v` exactly once.
fn used_in_terminator_once(func: &Function, block: Block, v: Value) -> bool {
    func.terminator(block).is_some_and(|t| {
        operands(&func.insts[t].kind)
            .iter()
            .filter(|&&o| o == v)
            .count()
            == 1
    })
}

/// The value operands of `kind`, jump arguments included.
fn operands(kind: &InstKind) -> Vec<Value> {
    let mut out = Vec::new();
    kind.for_each_operand(|v| out.push(v));
    out
}

/// Whether lanes of `s` may run `op` as a vector operation.
fn lane_binary(op: BinaryOp, s: Scalar) -> bool {
    use BinaryOp::*;
    if s.is_float() {
        matches!(op, Add | Sub | Mul | Div)
    } else {
        matches!(op, Add | Sub | And | Or | Xor)
            || (matches!(op, Mul | Min | Max) && s.bytes() <= 4)
    }
}

/// Whether lanes of `s` may run `op` as a vector operation.
fn lane_unary(op: UnaryOp, s: Scalar) -> bool {
    if s.is_float() {
        matches!(op, UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Sqrt)
    } else {
        matches!(op, UnaryOp::Neg | UnaryOp::Not)
            || (op == UnaryOp::Abs && s.is_signed_int() && s.bytes() <= 4)
    }
}

#[cfg(test)]
mod tests;
