//! Bounds checks hoisted out of counted loops.
//!
//! A loop `for i in init..x` (a header parameter `i` that enters as `init`, advances by one on
//! every back edge, and is tested by the header's `i < x`, the loop's only exit) that accesses
//! `p[i]` on every iteration, with `p`, its companions and `x` defined before the loop, touches
//! exactly the elements `p[init] ..= p[x - 1]` when it runs. Those are in bounds when the first
//! and the last are, so the check inside the loop is replaced by two checks before it (guarded by
//! `init < x`, so an empty loop checks nothing): the loop body then runs check-free, and the
//! backends keep their loop optimisations.
//!
//! The hoisted checks trap *before* the first iteration when some iteration would have gone out
//! of bounds, where the per-access check would have trapped at that iteration: the call fails
//! with the same [`crate::Trap::OutOfBounds`], but stores of the earlier iterations (and other
//! traps they would have raised first) do not happen. Every backend runs the same transformed
//! IR, so they all agree.

use crate::analysis::{compute_loops, DominatorTree, LoopInfo};
use crate::builder::FunctionBuilder;
use crate::entities::{Block, Inst, Value};
use crate::function::{Function, ValueDef};
use crate::instructions::{BinaryOp, CmpOp, InstKind};
use crate::types::Type;

/// Hoists the checks of `p[i]` accesses out of every counted loop of `func`; returns how many
/// checks were removed from loop bodies.
pub fn hoist_loop_checks(func: &mut Function) -> usize {
    let loops = compute_loops(func);
    let dom = DominatorTree::compute(func);
    let mut removed = 0;
    // Innermost first, so that checks hoisted out of an inner loop can leave the outer one.
    for &header in loops.headers.iter().rev() {
        if let Some(lp) = CountedLoop::find(func, &loops, &dom, header) {
            removed += lp.hoist(func, &dom);
        }
    }
    removed
}

/// A loop whose iterations, taken together, run its body for every `i` of `[init, bound)`:
/// a loop counting `i` from `init` up to (not including) `bound` by one, or a canonical
/// grid-stride loop of a kernel (`init` 0: its threads together cover `[0, bound)`).
pub struct CountedLoop {
    /// The header, which tests `i < bound` and is the loop's only exit.
    pub header: Block,
    /// The loop's blocks.
    pub body: Vec<Block>,
    /// The blocks that jump back to the header.
    pub latches: Vec<Block>,
    /// The one block outside the loop that enters it, by a jump; hoisted checks go at its end.
    pub preheader: Block,
    /// The header's parameter `i`.
    pub index: Value,
    /// The first `i`, available at the end of the preheader.
    pub init: Value,
    /// The bound, available at the end of the preheader.
    pub bound: Value,
}

impl CountedLoop {
    /// The counted loop headed by `header`, if it is one.
    pub fn find(
        func: &Function,
        loops: &LoopInfo,
        dom: &DominatorTree,
        header: Block,
    ) -> Option<Self> {
        let body: Vec<Block> = func
            .layout
            .iter()
            .copied()
            .filter(|&b| loops.contains(header, b))
            .collect();
        let preds = func.predecessors();
        let (latches, outside): (Vec<Block>, Vec<Block>) =
            preds[header].iter().partition(|p| body.contains(p));
        let [preheader] = outside[..] else {
            return None;
        };
        // The loop is entered only by an unconditional jump, so checks placed before that jump
        // run exactly when the loop starts.
        let enter = func.terminator(preheader)?;
        if !matches!(func.insts[enter].kind, InstKind::Jump(_)) {
            return None;
        }
        // The header's test is the only way out.
        let exits_elsewhere = body
            .iter()
            .any(|&b| b != header && func.successors(b).iter().any(|s| !body.contains(s)));
        if exits_elsewhere {
            return None;
        }
        let test = func.terminator(header)?;
        let InstKind::Branch {
            cond,
            then_dest,
            else_dest,
        } = &func.insts[test].kind
        else {
            return None;
        };
        if !body.contains(&then_dest.block) || body.contains(&else_dest.block) {
            return None;
        }
        let (index, bound) = match func.defining_inst(*cond)? {
            InstKind::Cmp(CmpOp::Lt, a, b) => (*a, *b),
            _ => None?,
        };
        let ValueDef::Param(pb, n) = func.values[index].def else {
            return None;
        };
        if pb != header || !func.values[index].ty.is_int() {
            return None;
        }
        if !defined_before(func, dom, bound, preheader) {
            return None;
        }
        let init = edge_arg(func, preheader, header, n as usize)?;
        let steps_by_one = latches.iter().all(|&l| {
            edge_arg(func, l, header, n as usize).is_some_and(|next| adds_one(func, next, index))
        });
        steps_by_one.then_some(CountedLoop {
            header,
            body,
            latches,
            preheader,
            index,
            init,
            bound,
        })
    }

    /// Replaces the checks of `p[index]` in blocks that run on every iteration by checks of the
    /// first and last index at the end of the preheader; returns how many were replaced.
    pub fn hoist(&self, func: &mut Function, dom: &DominatorTree) -> usize {
        let every_iteration: Vec<Block> = self
            .body
            .iter()
            .copied()
            // The header runs once more, with `i == bound`, to leave the loop.
            .filter(|&b| b != self.header && self.latches.iter().all(|&l| dom.dominates(b, l)))
            .collect();
        let mut removed = 0;
        for block in every_iteration {
            let insts = func.blocks[block].insts.clone();
            for inst in insts {
                if let Some(hoisted) = self.hoistable(func, dom, inst) {
                    check_range(func, self.preheader, self.init, self.bound, hoisted);
                    func.blocks[block].insts.retain(|&i| i != inst);
                    removed += 1;
                }
            }
        }
        removed
    }

    /// The pointer, base, size and trap of a check of `p[index]` with everything but the
    /// index defined before the loop.
    fn hoistable(&self, func: &Function, dom: &DominatorTree, inst: Inst) -> Option<Hoisted> {
        let InstKind::BoundsCheck {
            addr,
            base,
            bytes,
            trap,
        } = func.insts[inst].kind
        else {
            return None;
        };
        let InstKind::ElemPtr(p, i) = func.defining_inst(addr)? else {
            return None;
        };
        let before = |v: Value| defined_before(func, dom, v, self.preheader);
        (*i == self.index && before(*p) && before(base) && before(bytes)).then_some(Hoisted {
            ptr: *p,
            base,
            bytes,
            trap,
        })
    }
}

/// Checks `p[init]` and `p[bound - 1]` (the first and last of the indices `init..bound`, whose
/// integer type they share) before the terminator of `block`, when `init < bound`; checks
/// nothing otherwise. Branch-free: an empty range checks its base against all of memory.
pub fn check_range(func: &mut Function, block: Block, init: Value, bound: Value, h: Hoisted) {
    let ty = func.values[init].ty;
    let mut b = FunctionBuilder::detached(func);
    let runs = b.cmp(CmpOp::Lt, init, bound);
    let one = b.const_bits(ty, 1);
    let last = b.binary(BinaryOp::Sub, bound, one);
    // Addresses are `p + i * size`, wrapping: the range is contiguous only while no
    // `i * size` wraps. An index of magnitude 2^58 or more is out of bounds of any
    // allocation, so such a loop traps (its first or last access would have).
    let bytes = match ty.scalar().filter(|s| s.bytes() == 8) {
        Some(s) => {
            let fits = |b: &mut FunctionBuilder<'_>, i: Value| {
                let x = if s.is_signed_int() {
                    let half = b.const_bits(ty, 1 << 58);
                    b.binary(BinaryOp::Add, i, half)
                } else {
                    i
                };
                let x = b.cast(x, Type::U64);
                let limit = b.const_bits(Type::U64, 1 << if s.is_signed_int() { 59 } else { 58 });
                b.cmp(CmpOp::Lt, x, limit)
            };
            let (f0, f1) = (fits(&mut b, init), fits(&mut b, last));
            let safe = b.binary(BinaryOp::And, f0, f1);
            let none = b.const_bits(Type::U64, 0);
            b.select(safe, h.bytes, none)
        }
        None => h.bytes,
    };
    let all = b.const_bits(Type::U64, u64::MAX);
    let bytes = b.select(runs, bytes, all);
    for i in [init, last] {
        let elem = b.elem_ptr(h.ptr, i);
        let addr = b.select(runs, elem, h.base);
        b.bounds_check(addr, h.base, bytes, h.trap);
    }
    let made = b.into_insts();
    let insts = &mut func.blocks[block].insts;
    let at = insts.len() - 1;
    insts.splice(at..at, made);
}

/// A check of `ptr[i]` to replace by checks of a range of `i`.
#[derive(Copy, Clone, Debug)]
pub struct Hoisted {
    /// The pointer indexed.
    pub ptr: Value,
    /// Its memory's base.
    pub base: Value,
    /// Its memory's size in bytes.
    pub bytes: Value,
    /// The trap of the check replaced.
    pub trap: crate::Trap,
}

/// The blocks of the natural loop headed by `header`, in layout order.
pub fn loop_body(func: &Function, header: Block) -> Vec<Block> {
    let loops = compute_loops(func);
    func.layout
        .iter()
        .copied()
        .filter(|&b| loops.contains(header, b))
        .collect()
}

/// The block defining `v` (an instruction's block or a parameter's).
pub(crate) fn def_block(func: &Function, v: Value) -> Option<Block> {
    match func.values[v].def {
        ValueDef::Param(b, _) => Some(b),
        ValueDef::Result(i) => func
            .layout
            .iter()
            .copied()
            .find(|&b| func.blocks[b].insts.contains(&i)),
    }
}

/// True if `v` is available at the end of `block`: defined in a block dominating it.
pub(crate) fn defined_before(func: &Function, dom: &DominatorTree, v: Value, block: Block) -> bool {
    def_block(func, v).is_some_and(|d| dom.dominates(d, block))
}

/// The `n`th argument `from` passes to `to` (from a jump; a branch must not target `to`
/// twice with different arguments).
pub(crate) fn edge_arg(func: &Function, from: Block, to: Block, n: usize) -> Option<Value> {
    let t = func.terminator(from)?;
    let mut args = func.insts[t]
        .kind
        .successors()
        .filter(|c| c.block == to)
        .map(|c| c.args.get(n).copied());
    let first = args.next()??;
    args.all(|a| a == Some(first)).then_some(first)
}

/// True if `next` is `index + 1`.
pub(crate) fn adds_one(func: &Function, next: Value, index: Value) -> bool {
    let is_one =
        |v: Value| matches!(func.defining_inst(v), Some(InstKind::Const(c)) if c.bits == 1);
    match func.defining_inst(next) {
        Some(InstKind::Binary(BinaryOp::Add, a, b)) => {
            (*a == index && is_one(*b)) || (*b == index && is_one(*a))
        }
        _ => false,
    }
}
