//! Integer value ranges: an [`Interval`] for every integer and `bool` value of a function, and
//! the narrower one a value has where the conditions of dominating branches hold.
//!
//! [`Ranges::compute`] bounds every value over all executions: constants are points,
//! arithmetic follows its operands (the type's whole range where it could wrap), a block
//! parameter joins the arguments of its incoming edges, and GPU indices are bounded by the
//! launch limits ([`GpuBounds`]). The fixpoint visits the blocks in reverse postorder; a block
//! parameter still changing after a few rounds widens to its type's range in the direction it
//! moves, so the analysis ends on any loop.
//!
//! [`Ranges::at`] narrows a value where it is used. A block entered only by one edge of its
//! single predecessor's branch knows that branch's condition, and so does every block it
//! dominates (SSA values do not change, and the condition's last evaluation chose that edge).
//! `i < n` there bounds `i` by `n`; the arithmetic that defines a value is re-evaluated under
//! those facts to a small depth, so that `t + s` under `t < s` with `s <= 128` is below 256.
//!
//! Intervals hold mathematical values (`i128`): a signed value's range is signed, an unsigned
//! one's unsigned, so comparisons and element indices read them directly.

use crate::analysis::DominatorTree;
use crate::entities::{Block, Inst, Value};
use crate::function::{Function, ValueDef};
use crate::instructions::{BinaryOp, CmpOp, Const, GpuIndex, InstKind, UnaryOp};
use crate::types::{Scalar, Type};
use cranelift_entity::SecondaryMap;

/// The values `lo ..= hi` (never empty).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Interval {
    /// The smallest value.
    pub lo: i128,
    /// The largest value.
    pub hi: i128,
}

impl Interval {
    /// `lo ..= hi`.
    pub const fn new(lo: i128, hi: i128) -> Interval {
        Interval { lo, hi }
    }

    /// The single value `x`.
    pub const fn point(x: i128) -> Interval {
        Interval { lo: x, hi: x }
    }

    /// Every value of an integer or `bool` type; `None` for floats, pointers and the 128-bit
    /// integers (whose unsigned range does not fit an `i128`: they are not tracked).
    pub fn of_type(ty: Type) -> Option<Interval> {
        let s = ty
            .scalar()
            .filter(|s| (s.is_int() && !s.is_wide()) || *s == Scalar::Bool)?;
        let bits = s.bits();
        Some(if s.is_signed_int() {
            Interval::new(-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            Interval::new(0, (1i128 << bits) - 1)
        })
    }

    /// The smallest interval holding both.
    pub fn join(self, other: Interval) -> Interval {
        Interval::new(self.lo.min(other.lo), self.hi.max(other.hi))
    }

    /// The values in both; `None` when they are disjoint.
    pub fn meet(self, other: Interval) -> Option<Interval> {
        let (lo, hi) = (self.lo.max(other.lo), self.hi.min(other.hi));
        (lo <= hi).then_some(Interval::new(lo, hi))
    }

    /// True if every value of `self` is in `other`.
    pub fn within(self, other: Interval) -> bool {
        other.lo <= self.lo && self.hi <= other.hi
    }

    /// `self` if every value fits type `ty` unchanged, else `ty`'s whole range (the operation
    /// that produced it may have wrapped).
    fn fit(self, ty: Type) -> Option<Interval> {
        let all = Interval::of_type(ty)?;
        Some(if self.within(all) { self } else { all })
    }

    /// The corners of `f` over both intervals, for `f` monotone in each argument.
    fn corners(self, b: Interval, f: impl Fn(i128, i128) -> Option<i128>) -> Option<Interval> {
        let xs = [
            f(self.lo, b.lo)?,
            f(self.lo, b.hi)?,
            f(self.hi, b.lo)?,
            f(self.hi, b.hi)?,
        ];
        Some(Interval::new(*xs.iter().min()?, *xs.iter().max()?))
    }
}

/// Upper bounds of the launch dimensions a kernel can run with: every runtime refuses a
/// launch beyond the limits in [`GpuBounds::LIMITS`], and a kernel whose launches all pass one
/// constant block size knows that size.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct GpuBounds {
    /// Largest threads per block in x, y, z.
    pub block: [u32; 3],
    /// Largest blocks per grid in x, y, z.
    pub grid: [u32; 3],
}

impl GpuBounds {
    /// The block sizes every runtime enforces (CUDA's limits, which the CPU and Metal
    /// runtimes apply too); any grid size.
    pub const LIMITS: GpuBounds = GpuBounds {
        block: [1024, 1024, 64],
        grid: [u32::MAX; 3],
    };

    /// The range of a GPU index or dimension read in dimension `d` (0, 1 or 2).
    fn index(&self, index: GpuIndex, d: usize) -> Interval {
        let (block, grid) = (i128::from(self.block[d]), i128::from(self.grid[d]));
        match index {
            GpuIndex::ThreadIdx => Interval::new(0, block - 1),
            GpuIndex::BlockDim => Interval::new(1, block),
            GpuIndex::BlockIdx => Interval::new(0, grid - 1),
            GpuIndex::GridDim => Interval::new(1, grid),
        }
    }
}

impl Default for GpuBounds {
    fn default() -> Self {
        GpuBounds::LIMITS
    }
}

/// Rounds a block parameter may change before it widens.
const WIDEN_AFTER: u32 = 4;
/// Rounds of the fixpoint before the analysis gives up (every value: its type's range).
const MAX_ROUNDS: u32 = 64;
/// How deep [`Ranges::at`] re-evaluates a value's defining arithmetic.
const DEPTH: u32 = 3;

/// A condition known where a block runs: `cond` is `holds`.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
struct Fact {
    cond: Value,
    holds: bool,
}

/// The ranges of one function's integer values (see the module docs).
#[derive(Clone, Debug)]
pub struct Ranges {
    of: SecondaryMap<Value, Option<Interval>>,
    /// The branch condition known on entry to each block from its single predecessor.
    entry_fact: SecondaryMap<Block, Option<Fact>>,
    /// Each block's predecessors, once each.
    preds: SecondaryMap<Block, Vec<Block>>,
    dom: DominatorTree,
    gpu: GpuBounds,
}

impl Ranges {
    /// Bounds every integer value of `func`, GPU indices by `gpu`.
    pub fn compute(func: &Function, gpu: GpuBounds) -> Ranges {
        let dom = DominatorTree::compute(func);
        let mut preds = func.predecessors();
        for &b in &func.layout {
            preds[b].dedup();
        }
        let mut ranges = Ranges {
            of: SecondaryMap::new(),
            entry_fact: entry_facts(func),
            preds,
            dom,
            gpu,
        };
        if let Some(entry) = func.entry() {
            for &p in &func.blocks[entry].params {
                ranges.of[p] = Interval::of_type(func.value_type(p));
            }
        }
        if !ranges.fixpoint(func) {
            ranges.of = SecondaryMap::new();
        }
        ranges
    }

    /// The range of `v` over all executions (`None` for floats and pointers).
    pub fn range(&self, func: &Function, v: Value) -> Option<Interval> {
        self.of[v].or_else(|| Interval::of_type(func.value_type(v)))
    }

    /// The range of `v` where block `block` runs, narrowed by the branch conditions known
    /// there (see the module docs).
    pub fn at(&self, func: &Function, v: Value, block: Block) -> Option<Interval> {
        let facts = self.facts(func, block);
        self.eval(func, v, &facts, DEPTH)
    }

    /// Iterates to the fixpoint; false if it did not settle within [`MAX_ROUNDS`].
    fn fixpoint(&mut self, func: &Function) -> bool {
        let mut changes: SecondaryMap<Value, u32> = SecondaryMap::new();
        let rpo = self.dom.reverse_postorder().to_vec();
        for _ in 0..MAX_ROUNDS {
            let mut changed = false;
            for &b in &rpo {
                changed |= self.visit_params(func, b, &mut changes);
                for &inst in &func.blocks[b].insts {
                    changed |= self.visit_inst(func, inst);
                }
            }
            if !changed {
                return true;
            }
        }
        false
    }

    fn visit_inst(&mut self, func: &Function, inst: Inst) -> bool {
        let data = &func.insts[inst];
        let Some(result) = data.result else {
            return false;
        };
        let ty = func.value_type(result);
        let new = transfer(func, &data.kind, ty, &self.gpu, |v| self.of[v]);
        self.update(result, new)
    }

    /// Joins the incoming arguments of `block`'s parameters; widens those that keep moving.
    fn visit_params(
        &mut self,
        func: &Function,
        block: Block,
        changes: &mut SecondaryMap<Value, u32>,
    ) -> bool {
        let mut changed = false;
        for (n, &param) in func.blocks[block].params.iter().enumerate() {
            let Some(all) = Interval::of_type(func.value_type(param)) else {
                continue;
            };
            let Some(mut new) = self.incoming(func, block, n) else {
                continue;
            };
            if let Some(old) = self.of[param] {
                new = new.join(old);
                if new != old && changes[param] >= WIDEN_AFTER {
                    new = widen(old, new, all);
                }
            }
            if self.update(param, Some(new)) {
                changes[param] += 1;
                changed = true;
            }
        }
        changed
    }

    /// The join of the `n`th arguments of the edges into `block` evaluated so far (each
    /// narrowed by what is known at the end of its predecessor).
    fn incoming(&self, func: &Function, block: Block, n: usize) -> Option<Interval> {
        let mut joined: Option<Interval> = None;
        for &pred in &self.preds[block] {
            let Some(t) = func
                .terminator(pred)
                .filter(|_| self.dom.is_reachable(pred))
            else {
                continue;
            };
            for call in func.insts[t].kind.successors() {
                let arg = call.args.get(n).copied().filter(|_| call.block == block);
                // An argument not evaluated yet is still empty (a back edge in the first round).
                let Some(r) = arg
                    .filter(|&a| self.of[a].is_some())
                    .and_then(|a| self.at(func, a, pred))
                else {
                    continue;
                };
                joined = Some(joined.map_or(r, |j| j.join(r)));
            }
        }
        joined
    }

    fn update(&mut self, v: Value, new: Option<Interval>) -> bool {
        let changed = self.of[v] != new && new.is_some();
        if changed {
            self.of[v] = new;
        }
        changed
    }

    /// The facts known in `block`: the entry facts of it and of its dominators.
    fn facts(&self, func: &Function, block: Block) -> Vec<Fact> {
        let mut facts = Vec::new();
        let mut b = Some(block);
        while let Some(at) = b {
            if let Some(fact) = self.entry_fact[at] {
                expand(func, fact, &mut facts);
            }
            b = self.dom.idom(at);
        }
        facts
    }

    /// `v`'s range under `facts`, re-evaluating its definition `depth` levels deep.
    fn eval(&self, func: &Function, v: Value, facts: &[Fact], depth: u32) -> Option<Interval> {
        let mut r = self.of[v].or_else(|| Interval::of_type(func.value_type(v)))?;
        if depth > 0 {
            if let ValueDef::Result(inst) = func.values[v].def {
                let kind = &func.insts[inst].kind;
                let derived = transfer(func, kind, func.value_type(v), &self.gpu, |o| {
                    self.eval(func, o, facts, depth - 1)
                });
                r = derived.and_then(|d| d.meet(r)).unwrap_or(r);
            }
        }
        for fact in facts {
            r = self.refine(func, r, v, *fact, facts, depth);
        }
        Some(r)
    }

    /// Narrows `r`, the range of `v`, by a comparison fact that mentions `v`.
    fn refine(
        &self,
        func: &Function,
        r: Interval,
        v: Value,
        fact: Fact,
        facts: &[Fact],
        depth: u32,
    ) -> Interval {
        let ValueDef::Result(inst) = func.values[fact.cond].def else {
            return r;
        };
        let InstKind::Cmp(op, a, b) = func.insts[inst].kind else {
            return r;
        };
        let op = if fact.holds { op } else { negate(op) };
        // The other side's facts are read one level shallower; at the bottom, its plain range.
        let other = |x: Value| match depth {
            0 => self.range(func, x),
            _ => self.eval(func, x, facts, depth - 1),
        };
        let narrowed = if a == v && b != v {
            other(b).and_then(|rb| bound_left(op, r, rb))
        } else if b == v && a != v {
            other(a).and_then(|ra| bound_left(swap(op), r, ra))
        } else {
            None
        };
        narrowed.unwrap_or(r)
    }
}

/// The range of an instruction's result of type `ty` from its operands' ranges (`None`
/// while an operand is unknown, or for floats and pointers).
fn transfer(
    func: &Function,
    kind: &InstKind,
    ty: Type,
    gpu: &GpuBounds,
    operand: impl Fn(Value) -> Option<Interval>,
) -> Option<Interval> {
    let all = Interval::of_type(ty)?;
    match *kind {
        InstKind::Const(c) => Some(constant(c)),
        InstKind::GpuIndex(index, dim) => Some(gpu.index(index, dim.index())),
        InstKind::Binary(op, a, b) => Some(binary(op, ty, operand(a)?, operand(b)?)),
        InstKind::Unary(op, a) => Some(unary(op, ty, operand(a)?)),
        InstKind::Cast(a) if Interval::of_type(func.value_type(a)).is_some() => {
            Some(cast(ty, operand(a)?))
        }
        InstKind::Cmp(op, a, b) if Interval::of_type(func.value_type(a)).is_some() => {
            let decided = decide(op, operand(a)?, operand(b)?);
            Some(decided.map_or(Interval::new(0, 1), |t| Interval::point(i128::from(t))))
        }
        InstKind::Cmp(..) => Some(Interval::new(0, 1)),
        InstKind::Select(c, a, b) => match operand(c) {
            Some(Interval { lo: 1, hi: 1 }) => operand(a),
            Some(Interval { lo: 0, hi: 0 }) => operand(b),
            _ => Some(operand(a)?.join(operand(b)?)),
        },
        _ => Some(all),
    }
}

/// The outcome of `a op b` for every pair of values of the two ranges, if they all agree.
pub fn decide(op: CmpOp, a: Interval, b: Interval) -> Option<bool> {
    match op {
        CmpOp::Lt if a.hi < b.lo => Some(true),
        CmpOp::Lt if a.lo >= b.hi => Some(false),
        CmpOp::Le if a.hi <= b.lo => Some(true),
        CmpOp::Le if a.lo > b.hi => Some(false),
        CmpOp::Gt | CmpOp::Ge => decide(swap(op), b, a),
        CmpOp::Eq if a.lo == a.hi && a == b => Some(true),
        CmpOp::Eq if a.hi < b.lo || b.hi < a.lo => Some(false),
        CmpOp::Ne => decide(CmpOp::Eq, a, b).map(|t| !t),
        _ => None,
    }
}

/// The value of an integer or `bool` constant of at most 64 bits.
fn constant(c: Const) -> Interval {
    let x = match c.ty.scalar() {
        Some(s) if s.is_signed_int() => {
            let shift = 64 - s.bits();
            i128::from((((c.bits as u64) << shift) as i64) >> shift)
        }
        _ => i128::from(c.bits as u64),
    };
    Interval::point(x)
}

fn binary(op: BinaryOp, ty: Type, a: Interval, b: Interval) -> Interval {
    let all = Interval::of_type(ty).unwrap_or(a);
    let r = match op {
        BinaryOp::Add => Some(Interval::new(a.lo + b.lo, a.hi + b.hi)),
        BinaryOp::Sub => Some(Interval::new(a.lo - b.hi, a.hi - b.lo)),
        BinaryOp::Mul => a.corners(b, i128::checked_mul),
        BinaryOp::Div => divide(a, b),
        BinaryOp::Rem => remainder(a, b),
        BinaryOp::And => and(a, b),
        BinaryOp::Or | BinaryOp::Xor => or(a, b),
        BinaryOp::Shl => {
            shift_amount(b, ty).and_then(|k| a.corners(k, |x, k| x.checked_mul(1i128 << k)))
        }
        BinaryOp::Shr => shift_amount(b, ty)
            .filter(|_| a.lo >= 0)
            .map(|k| Interval::new(a.lo >> k.hi, a.hi >> k.lo)),
        BinaryOp::Min => Some(Interval::new(a.lo.min(b.lo), a.hi.min(b.hi))),
        BinaryOp::Max => Some(Interval::new(a.lo.max(b.lo), a.hi.max(b.hi))),
        BinaryOp::Copysign => None,
    };
    r.and_then(|r| r.fit(ty)).unwrap_or(all)
}

/// Truncating division; a zero divisor traps, so only the nonzero divisors count.
fn divide(a: Interval, b: Interval) -> Option<Interval> {
    if b.lo >= 0 {
        let b = Interval::new(b.lo.max(1), b.hi);
        (b.lo <= b.hi).then_some(())?;
        a.corners(b, i128::checked_div)
    } else {
        None
    }
}

/// Remainder of a non-negative dividend by a positive divisor.
fn remainder(a: Interval, b: Interval) -> Option<Interval> {
    (a.lo >= 0 && b.lo >= 0 && b.hi >= 1).then(|| Interval::new(0, a.hi.min(b.hi - 1)))
}

fn and(a: Interval, b: Interval) -> Option<Interval> {
    match (a.lo >= 0, b.lo >= 0) {
        (true, true) => Some(Interval::new(0, a.hi.min(b.hi))),
        (true, false) => Some(Interval::new(0, a.hi)),
        (false, true) => Some(Interval::new(0, b.hi)),
        (false, false) => None,
    }
}

fn or(a: Interval, b: Interval) -> Option<Interval> {
    let top = a.hi.max(b.hi);
    (a.lo >= 0 && b.lo >= 0).then(|| {
        let bits = 128 - top.leading_zeros();
        Interval::new(0, (1i128 << bits) - 1)
    })
}

/// The shift amounts `b` takes, if all are below the width (shifts wrap the amount).
fn shift_amount(b: Interval, ty: Type) -> Option<Interval> {
    let bits = i128::from(ty.scalar()?.bits());
    (b.lo >= 0 && b.hi < bits).then_some(b)
}

fn unary(op: UnaryOp, ty: Type, a: Interval) -> Interval {
    let all = Interval::of_type(ty).unwrap_or(a);
    let r = match op {
        UnaryOp::Neg => Interval::new(-a.hi, -a.lo),
        UnaryOp::Not => Interval::new(all.hi + all.lo - a.hi, all.hi + all.lo - a.lo),
        UnaryOp::Abs if a.lo >= 0 => a,
        UnaryOp::Abs if a.hi <= 0 => Interval::new(-a.hi, -a.lo),
        UnaryOp::Abs => Interval::new(0, a.hi.max(-a.lo)),
        _ => all,
    };
    r.fit(ty).unwrap_or(all)
}

/// An integer or `bool` conversion (Rust `as`; to `bool` means `!= 0`).
fn cast(to: Type, a: Interval) -> Interval {
    if to.is_bool() {
        return match (a.lo, a.hi) {
            (0, 0) => Interval::point(0),
            _ if a.lo > 0 || a.hi < 0 => Interval::point(1),
            _ => Interval::new(0, 1),
        };
    }
    a.fit(to).unwrap_or(a)
}

/// Moves the bounds that still change to the type's limits.
fn widen(old: Interval, new: Interval, all: Interval) -> Interval {
    let lo = if new.lo < old.lo { all.lo } else { new.lo };
    let hi = if new.hi > old.hi { all.hi } else { new.hi };
    Interval::new(lo, hi)
}

/// The negation of a comparison (on integers: `!(a < b)` is `a >= b`).
fn negate(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Eq => CmpOp::Ne,
        CmpOp::Ne => CmpOp::Eq,
        CmpOp::Lt => CmpOp::Ge,
        CmpOp::Le => CmpOp::Gt,
        CmpOp::Gt => CmpOp::Le,
        CmpOp::Ge => CmpOp::Lt,
    }
}

/// The comparison with its operands swapped (`a < b` is `b > a`).
fn swap(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        eq_or_ne => eq_or_ne,
    }
}

/// Narrows `a` knowing `a op b` with `b` in `rb`.
fn bound_left(op: CmpOp, a: Interval, rb: Interval) -> Option<Interval> {
    let bound = match op {
        CmpOp::Lt => Interval::new(a.lo, rb.hi - 1),
        CmpOp::Le => Interval::new(a.lo, rb.hi),
        CmpOp::Gt => Interval::new(rb.lo + 1, a.hi),
        CmpOp::Ge => Interval::new(rb.lo, a.hi),
        CmpOp::Eq => rb,
        CmpOp::Ne if rb.lo == rb.hi && rb.lo == a.lo => Interval::new(a.lo + 1, a.hi),
        CmpOp::Ne if rb.lo == rb.hi && rb.lo == a.hi => Interval::new(a.lo, a.hi - 1),
        CmpOp::Ne => a,
    };
    // Empty: the block cannot run with these values; keep `a` (nothing is claimed).
    a.meet(bound)
}

/// Adds `fact` to `facts`, with the parts of a conjunction that holds (or of a disjunction
/// that does not) and through logical not.
fn expand(func: &Function, fact: Fact, facts: &mut Vec<Fact>) {
    facts.push(fact);
    let ValueDef::Result(inst) = func.values[fact.cond].def else {
        return;
    };
    if !func.value_type(fact.cond).is_bool() {
        return;
    }
    match func.insts[inst].kind {
        InstKind::Binary(BinaryOp::And, a, b) if fact.holds => {
            expand(
                func,
                Fact {
                    cond: a,
                    holds: true,
                },
                facts,
            );
            expand(
                func,
                Fact {
                    cond: b,
                    holds: true,
                },
                facts,
            );
        }
        InstKind::Binary(BinaryOp::Or, a, b) if !fact.holds => {
            expand(
                func,
                Fact {
                    cond: a,
                    holds: false,
                },
                facts,
            );
            expand(
                func,
                Fact {
                    cond: b,
                    holds: false,
                },
                facts,
            );
        }
        InstKind::Unary(UnaryOp::Not, a) => {
            expand(
                func,
                Fact {
                    cond: a,
                    holds: !fact.holds,
                },
                facts,
            );
        }
        _ => {}
    }
}

/// For each block entered only by one edge of its single predecessor's branch, the
/// condition that edge implies.
fn entry_facts(func: &Function) -> SecondaryMap<Block, Option<Fact>> {
    let preds = func.predecessors();
    let mut facts = SecondaryMap::new();
    // The entry runs first without any edge, whatever jumps back to it.
    for &b in func.layout.iter().skip(1) {
        let [pred] = preds[b][..] else {
            continue;
        };
        let Some(t) = func.terminator(pred) else {
            continue;
        };
        if let InstKind::Branch {
            cond,
            ref then_dest,
            ref else_dest,
        } = func.insts[t].kind
        {
            if then_dest.block != else_dest.block {
                facts[b] = Some(Fact {
                    cond,
                    holds: then_dest.block == b,
                });
            }
        }
    }
    facts
}

#[cfg(test)]
mod tests;
