//! Short loops unrolled whole: [`unroll_short_loops`].
//!
//! Tiled kernels load their tile with a loop whose trip count depends on the thread but is
//! small and bounded by constants: `for (p = ty * 16 + tx; p < 324; p += 256)` runs once or
//! twice, never more, since `p` starts at 0 or above. Inside a thread loop of the CPU's
//! region lowering such a loop keeps the C compiler from vectorising across threads (only
//! innermost loops vectorise). Unrolled into its iterations, each guarded by the loop's test,
//! it is straight-line code that vectorises with masks.
//!
//! A loop qualifies when its header has the loop's only exit, a branch on `p < C` (or
//! `C > p`) for a header parameter `p` of an unsigned type and a constant `C`, and its one
//! latch passes `p + S` back (`S` a nonzero constant) with `C - 1 + S` representable: from
//! any `p ≥ 0` it runs at most `ceil(C / S)` times, at most [`MAX_TRIPS`]. The loop is
//! replaced by that many copies of its header and body, each latch going on to the next
//! copy's header, and a last copy of the header that leaves (the test is false there), with
//! the header's values reconnected after the loop.
//!
//! A loop that carries nothing but `p` and whose values are not used after it unrolls *in
//! sequence* instead: iteration `k` tests `first < C - k S` (`first` is `p` on entry; the
//! test of `p < C` without computing `p`, so nothing wraps) and runs its body with `p = first
//! + k S`, and both a failed test and the end of the body go on to iteration `k + 1`. The
//! iterations are then guarded sections one after the other, each test a function of the
//! thread's indices alone (the tile load's `ty * 16 + tx < 324`, then `< 68`), which the
//! region lowering can give thread loops of their own, each over the threads its test keeps
//! (`step::regions`).

use cranelift_entity::SecondaryMap;
use nacre_ir::analysis::{compute_loops, LoopInfo};
use nacre_ir::transform::{copy_blocks, repair_everywhere, Variable};
use nacre_ir::{
    BinaryOp, Block, BlockCall, CmpOp, FuncKind, Function, FunctionBuilder, InstKind, Module,
    Scalar, Type, Value,
};
use std::collections::HashMap;

/// The most iterations an unrolled loop may have.
pub const MAX_TRIPS: u64 = 4;

/// Unrolls the short loops (module docs) of every kernel of `module`; returns how many.
pub fn unroll_short_loops(module: &mut Module) -> usize {
    module
        .functions
        .values_mut()
        .filter(|f| f.kind == FuncKind::Kernel)
        .map(unroll_in)
        .sum()
}

/// Unrolls the short loops of `f`, innermost first, one at a time (each changes the loops).
fn unroll_in(f: &mut Function) -> usize {
    let mut done = 0;
    while let Some(lp) = {
        let loops = compute_loops(f);
        let preds = f.predecessors();
        loops
            .headers
            .iter()
            .rev()
            .find_map(|&h| ShortLoop::find(f, &loops, &preds, h))
    } {
        lp.unroll(f);
        done += 1;
    }
    if done > 0 {
        // A section's test in the block that computes what it tests (an iteration's header
        // merged into the block before it), where `step::regions` narrows thread loops; the
        // iterations' indices `first + k S` in `u64`, where they cannot wrap.
        nacre_ir::passes::simplify_cfg(f);
        crate::check_free::widen_thread_sums(f);
    }
    done
}

/// Each block's predecessors (`Function::predecessors`).
pub(crate) type Preds = SecondaryMap<Block, Vec<Block>>;

/// The blocks of the loop headed by `header`, the header first (the entry of each copy an
/// unroll makes) and the others in layout order, and its one latch; `None` where it has
/// several.
pub(crate) fn loop_blocks(
    f: &Function,
    loops: &LoopInfo,
    preds: &Preds,
    header: Block,
) -> Option<(Vec<Block>, Block)> {
    let rest = f.layout.iter().copied();
    let rest = rest.filter(|&b| b != header && loops.contains(header, b));
    let blocks: Vec<Block> = std::iter::once(header).chain(rest).collect();
    let mut latches = preds[header].iter().filter(|p| blocks.contains(p));
    match (latches.next(), latches.next()) {
        (Some(&latch), None) => Some((blocks, latch)),
        _ => None,
    }
}

/// A loop's exit test (see [`exit_test`]).
pub(crate) struct ExitTest {
    /// The position of the tested parameter `p` among the header's parameters.
    pub param: usize,
    /// The bound `p` is compared with.
    pub limit: Value,
}

/// The loop's exit test, where its header (`blocks[0]`) ends in `br p < limit, A, B` (or
/// `limit > p`) for a header parameter `p`, with `A` in the loop and `B` out of it, and no other
/// block of the loop leaves it: the loop runs while `p < limit`.
pub(crate) fn exit_test(f: &Function, blocks: &[Block]) -> Option<ExitTest> {
    let header = *blocks.first()?;
    let leaves = |b: Block| f.successors(b).iter().any(|s| !blocks.contains(s));
    if blocks.iter().any(|&b| b != header && leaves(b)) {
        return None;
    }
    let InstKind::Branch {
        cond,
        ref then_dest,
        ref else_dest,
    } = f.insts[f.terminator(header)?].kind
    else {
        return None;
    };
    if !blocks.contains(&then_dest.block) || blocks.contains(&else_dest.block) {
        return None;
    }
    let (p, limit) = match *f.defining_inst(cond)? {
        InstKind::Cmp(CmpOp::Lt, a, b) => (a, b),
        InstKind::Cmp(CmpOp::Gt, a, b) => (b, a),
        _ => return None,
    };
    let param = f.blocks[header].params.iter().position(|&x| x == p)?;
    Some(ExitTest { param, limit })
}

/// A loop that qualifies (module docs).
struct ShortLoop {
    header: Block,
    /// The header, then its other blocks, in layout order.
    blocks: Vec<Block>,
    latch: Block,
    /// The most times its body runs.
    trips: u64,
    /// The test's constant bound `C` and the step `S`.
    limit: u64,
    step: u64,
}

/// A short loop unrolled in sequence (see [`ShortLoop::sequence`]).
struct Sequence {
    /// The block before the loop, which jumps to its header.
    pre: Block,
    /// The header's parameter.
    p: Value,
    /// Its value on entry.
    first: Value,
    /// The loop's exit (the header's `else`).
    exit: BlockCall,
    limit: u64,
    step: u64,
}

impl ShortLoop {
    fn find(f: &Function, loops: &LoopInfo, preds: &Preds, header: Block) -> Option<ShortLoop> {
        let (blocks, latch) = loop_blocks(f, loops, preds, header)?;
        // A shared array declared in the loop would be one array per copy.
        let shared = blocks
            .iter()
            .flat_map(|&b| &f.blocks[b].insts)
            .any(|&i| matches!(f.insts[i].kind, InstKind::SharedAlloc { .. }));
        if shared {
            return None;
        }
        let ExitTest { param: n, limit } = exit_test(f, &blocks)?;
        let p = f.blocks[header].params[n];
        let bits = match f.value_type(p) {
            Type::Scalar(s @ (Scalar::U8 | Scalar::U16 | Scalar::U32 | Scalar::U64)) => s.bits(),
            _ => return None,
        };
        let c = constant(f, limit)?;
        let InstKind::Jump(ref back) = f.insts[f.terminator(latch)?].kind else {
            return None;
        };
        let InstKind::Binary(BinaryOp::Add, x, step) = *f.defining_inst(back.args[n])? else {
            return None;
        };
        let s = constant(f, step)?;
        let max = if bits == 64 {
            u128::from(u64::MAX)
        } else {
            (1u128 << bits) - 1
        };
        let fits = c >= 1 && s >= 1 && u128::from(c) - 1 + u128::from(s) <= max;
        let trips = c.div_ceil(s.max(1));
        (x == p && fits && trips <= MAX_TRIPS).then_some(ShortLoop {
            header,
            blocks,
            latch,
            trips,
            limit: c,
            step: s,
        })
    }

    /// Replaces the loop by its iterations: one after the other where the loop carries
    /// nothing but `p` ([`ShortLoop::unroll_in_sequence`]), else nested (module docs).
    fn unroll(self, f: &mut Function) {
        match self.sequence(f) {
            Some(s) => self.unroll_in_sequence(f, s),
            None => self.unroll_nested(f),
        }
    }

    /// What unrolling in sequence needs, where the loop allows it: its header has one
    /// parameter, `p`, and computes nothing with effects, that reads memory or that can
    /// trap (`p` is computed there in each iteration, and where the test fails it may have
    /// wrapped: nothing but the body, which then does not run, may use what the header
    /// computes from it), no value of the loop is used outside it, and one predecessor
    /// outside the loop jumps to the header.
    fn sequence(&self, f: &Function) -> Option<Sequence> {
        let header = &f.blocks[self.header];
        let [p] = header.params[..] else { return None };
        let term = f.terminator(self.header)?;
        let InstKind::Branch {
            cond,
            ref then_dest,
            ref else_dest,
        } = f.insts[term].kind
        else {
            return None;
        };
        let plain = header.insts.iter().all(|&i| {
            let kind = &f.insts[i].kind;
            i == term || (kind.is_pure(|v| f.value_type(v)) && !matches!(kind, InstKind::Load(_)))
        });
        let computed: Vec<Value> = header
            .insts
            .iter()
            .filter_map(|&i| f.insts[i].result)
            .filter(|&v| v != cond)
            .collect();
        let from_header = |a: &Value| *a == p || computed.contains(a);
        if !plain
            || then_dest
                .args
                .iter()
                .chain(&else_dest.args)
                .any(from_header)
        {
            return None;
        }
        let preds = f.predecessors();
        let outside: Vec<Block> = preds[self.header]
            .iter()
            .copied()
            .filter(|b| !self.blocks.contains(b))
            .collect();
        let [pre] = outside[..] else { return None };
        let InstKind::Jump(ref into) = f.insts[f.terminator(pre)?].kind else {
            return None;
        };
        let defined: Vec<Value> = self
            .blocks
            .iter()
            .flat_map(|&b| {
                let d = &f.blocks[b];
                let results = d.insts.iter().filter_map(|&i| f.insts[i].result);
                d.params.iter().copied().chain(results)
            })
            .collect();
        let used_outside = f
            .layout
            .iter()
            .filter(|b| !self.blocks.contains(b))
            .flat_map(|&b| &f.blocks[b].insts)
            .any(|&i| {
                let mut uses = false;
                f.insts[i]
                    .kind
                    .for_each_operand(|v| uses |= defined.contains(&v));
                uses
            });
        if used_outside {
            return None;
        }
        let (limit, step) = (self.limit, self.step);
        Some(Sequence {
            pre,
            p,
            first: into.args[0],
            exit: else_dest.clone(),
            limit,
            step,
        })
    }

    /// Iteration `k` (of `trips`) tests `first < limit - k step` (the test of `p < limit`
    /// without computing `p`, which may wrap where it fails) and runs the body with `p =
    /// first + k step` (below `limit` there: no wrap); a failed test and the body's end both
    /// go on to the next iteration's test, the last to the loop's exit. Every iteration is
    /// then a guarded section after the one before, and each test depends on `first` alone.
    fn unroll_in_sequence(self, f: &mut Function, s: Sequence) {
        let ty = f.value_type(s.p);
        let mut heads = Vec::new();
        let mut copies = Vec::new();
        for k in 0..self.trips {
            let mut em = FunctionBuilder::detached(f);
            let offset = em.const_bits(ty, k * s.step);
            let pk = em.binary(BinaryOp::Add, s.first, offset);
            let at_p = em.into_insts();
            let c = copy_blocks(f, &self.blocks, &HashMap::from([(s.p, pk)]), true);
            let head = c.blocks[&self.header];
            f.blocks[head].params.clear();
            let mut em = FunctionBuilder::detached(f);
            let bound = em.const_bits(ty, s.limit - k * s.step);
            let go = em.cmp(CmpOp::Lt, s.first, bound);
            let test = em.into_insts();
            let term = f.terminator(head).expect("a header ends in a branch");
            if let InstKind::Branch { cond, .. } = &mut f.insts[term].kind {
                *cond = go;
            }
            f.blocks[head].insts.splice(0..0, at_p);
            let n = f.blocks[head].insts.len();
            f.blocks[head].insts.splice(n - 1..n - 1, test);
            heads.push(head);
            copies.push(c);
        }
        for k in 0..self.trips as usize {
            let next = match heads.get(k + 1) {
                Some(&h) => BlockCall {
                    block: h,
                    args: Vec::new(),
                },
                None => s.exit.clone(),
            };
            let latch = copies[k].blocks[&self.latch];
            if let Some(t) = f.terminator(latch) {
                f.insts[t].kind = InstKind::Jump(next.clone());
            }
            if let Some(t) = f.terminator(heads[k]) {
                if let InstKind::Branch { else_dest, .. } = &mut f.insts[t].kind {
                    *else_dest = next;
                }
            }
        }
        if let Some(t) = f.terminator(s.pre) {
            f.insts[t].kind = InstKind::Jump(BlockCall {
                block: heads[0],
                args: Vec::new(),
            });
        }
        let at = f.layout.iter().position(|b| self.blocks.contains(b));
        f.layout.retain(|b| !self.blocks.contains(b));
        let laid: Vec<Block> = copies
            .iter()
            .flat_map(|c| self.blocks.iter().map(|b| c.blocks[b]))
            .collect();
        let at = at.unwrap_or(f.layout.len()).min(f.layout.len());
        f.layout.splice(at..at, laid);
    }

    /// Replaces the loop by `trips` copies and a leaving header (module docs).
    fn unroll_nested(self, f: &mut Function) {
        let mut copies = vec![self.blocks.clone()];
        let mut maps = vec![HashMap::new()];
        for _ in 1..=self.trips {
            let c = copy_blocks(f, &self.blocks, &HashMap::new(), true);
            copies.push(self.blocks.iter().map(|b| c.blocks[b]).collect());
            maps.push(c.values);
        }
        // Each latch goes on to the next copy's header.
        for k in 0..self.trips as usize {
            let latch = copies[k][self.position(self.latch)];
            let next = copies[k + 1][0];
            if let Some(t) = f.terminator(latch) {
                for call in f.insts[t].kind.successors_mut() {
                    if call.block == copies[k][0] {
                        call.block = next;
                    }
                }
            }
        }
        // The last header leaves: its test is false.
        let last = copies[self.trips as usize][0];
        if let Some(t) = f.terminator(last) {
            if let InstKind::Branch { ref else_dest, .. } = f.insts[t].kind {
                let exit: BlockCall = else_dest.clone();
                f.insts[t].kind = InstKind::Jump(exit);
            }
        }
        self.lay_out(f, &copies);
        self.reconnect(f, &maps, &copies);
    }

    fn position(&self, b: Block) -> usize {
        self.blocks.iter().position(|&x| x == b).unwrap_or(0)
    }

    /// Lays the copies out after the original loop (the last one: its header only).
    fn lay_out(&self, f: &mut Function, copies: &[Vec<Block>]) {
        let at = f
            .layout
            .iter()
            .rposition(|b| self.blocks.contains(b))
            .map_or(f.layout.len(), |i| i + 1);
        let mut added: Vec<Block> = copies[1..self.trips as usize]
            .iter()
            .flatten()
            .copied()
            .collect();
        added.push(copies[self.trips as usize][0]);
        f.layout.splice(at..at, added);
    }

    /// Values of the header used after the loop now have one definition per copy of the
    /// header: reconnects their uses (those in the loop's copies are the copies' own).
    fn reconnect(&self, f: &mut Function, maps: &[HashMap<Value, Value>], copies: &[Vec<Block>]) {
        let mut defined: Vec<Value> = f.blocks[self.header].params.clone();
        defined.extend(
            f.blocks[self.header]
                .insts
                .iter()
                .filter_map(|&i| f.insts[i].result),
        );
        let vars: Vec<Variable> = defined
            .into_iter()
            .map(|v| Variable {
                value: v,
                redefs: (1..=self.trips as usize)
                    .map(|k| (copies[k][0], maps[k][&v]))
                    .collect(),
            })
            .collect();
        repair_everywhere(f, &vars);
    }
}

/// A constant's value, if `v` is a constant of at most 64 bits.
fn constant(f: &Function, v: Value) -> Option<u64> {
    match f.defining_inst(v)? {
        InstKind::Const(c) => u64::try_from(c.bits).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
