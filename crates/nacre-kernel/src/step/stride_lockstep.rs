//! Grid-stride loops run in lockstep: [`lockstep_strided_loops`].
//!
//! Run thread after thread, a grid-stride loop touches elements a whole grid apart and thrashes
//! the caches (see `stride_loops`). The general cure is a yield per iteration (or per
//! `stride_unroll`'s eight), which makes the whole kernel a state machine: every round
//! dispatches, reloads and saves each thread's state. Where the loop sits in uniform control
//! flow and its index starts at `u + threadIdx.x` (`u` uniform: `blockIdx.x * blockDim.x`, or
//! zero for a block-stride loop), its iterations can instead be counted once per block:
//!
//! ```text
//! i = u + tid                       j = u                          (uniform)
//! while i < n {                     while j < n {                  (uniform)
//!     body(i)                           i = j + tid
//!     i += s                            if i < n { body(i); i += s      (UNROLL copies,
//! }                                       if i < n { body(i); i += s     each leaving
//!                                           ... } }                      when i >= n)
//!                                       barrier
//!                                       j += UNROLL s
//!                                   }
//! ```
//!
//! Group `k` of the uniform loop runs iterations `UNROLL k` to `UNROLL k + UNROLL - 1` of
//! every thread that still has them: `j + tid` is the thread's own index, since both advance
//! by the same amount, and a thread whose index has passed `n` stays past it. The barrier is in
//! uniform control flow, so the region lowering takes the kernel: each group is one thread
//! loop, with no state machine. A thread touches [`UNROLL`] elements a grid apart and the next
//! thread their neighbours, so the group reads [`UNROLL`] sequential streams, which the
//! hardware prefetcher follows (one element per thread and group measured 2x slower on a grid
//! of 64 blocks, each group a fresh cache miss), and saves and reloads its carried values
//! once per group. Larger loops get fewer copies (at most [`MAX_COPIED`] instructions in
//! all). Between two barriers any interleaving of a block's threads is a
//! valid execution, and a barrier every thread reaches only narrows the choice; the barrier
//! before the uniform loop makes the code before it a thread loop of its own.
//!
//! The argument needs the indices not to wrap: `max(n, u) + UNROLL s + blockDim.x ≤ 2^32 - 1`,
//! checked once before the loop (uniform); otherwise the original loop runs, thread after
//! thread, without yields (correct, only slower).
//!
//! A loop qualifies when its header has its only exit, `br i < n` on a `u32` header parameter
//! `i`; its one latch passes `i + s` back, `s` computed from the grid or block size; `n` and
//! `s` are the same for every thread and iteration (uniform values from before the loop, or
//! arithmetic in it on those, constants and the block's sizes);
//! its one preheader is in uniform control flow and passes `u + threadIdx.x` (or
//! `threadIdx.x`) for `i`; nothing the loop defines but its header's parameters is used after
//! it; and the loop waits on nobody: arithmetic, loads, stores, bounds checks, `threadIdx` and
//! atomic read-modify-writes whose old value is unused (no barrier, collective, fence, call,
//! compare-and-swap or shared array). The other header parameters (a thread's running sum)
//! are carried through the barrier like any value, and after the loop come from whichever
//! loop ran (SSA repair). So is `i` where it is used after the loop (a thread's first index
//! past `n`, which it keeps once there); otherwise each group recomputes it as `j + tid`.

use super::stride_loops::sized_values;
use super::stride_unroll::UNROLL;
use crate::unroll::{exit_test, loop_blocks, ExitTest, Preds};
use nacre_ir::analysis::uniformity::{arithmetic, divergence, Divergence};
use nacre_ir::analysis::{compute_loops, LoopInfo};
use nacre_ir::transform::repair_everywhere;
use nacre_ir::transform::{copy_blocks, Variable};
use nacre_ir::{
    BinaryOp, Block, BlockCall, BlockData, CmpOp, Dim, Function, FunctionBuilder, GpuIndex, Inst,
    InstKind, Type, Value, ValueDef,
};
use std::collections::{HashMap, HashSet};

/// The most instructions the copies of one loop may hold together: a loop of more than
/// `MAX_COPIED / UNROLL` gets fewer copies, down to one.
pub const MAX_COPIED: usize = 512;

/// Rewrites the qualifying grid- and block-stride loops of kernel `f` (module docs); returns
/// the headers that must get neither a yield nor an unroll: each rewritten loop's uniform
/// header and the original loop, kept for launches whose indices could wrap.
pub(crate) fn lockstep_strided_loops(f: &mut Function) -> HashSet<Block> {
    let mut skip = HashSet::new();
    while let Some(lp) = Lockstep::find(f, &skip) {
        skip.insert(lp.header);
        skip.insert(lp.rewrite(f));
    }
    skip
}

/// A loop that qualifies (module docs).
struct Lockstep {
    header: Block,
    /// The header, then its other blocks, in layout order.
    blocks: Vec<Block>,
    latch: Block,
    /// The one predecessor of the header outside the loop.
    pre: Block,
    /// The index's position among the header's parameters.
    index: usize,
    /// The bound `n`.
    limit: Invariant,
    /// The stride `s`.
    stride: Invariant,
    /// `u` (`None`: the index starts at `threadIdx.x`).
    base: Option<Value>,
    /// Iterations per thread between two barriers.
    copies: usize,
    /// The positions of the header parameters carried through the uniform loop: all but the
    /// index, unless it is used after the loop (otherwise each group recomputes it).
    carried: Vec<usize>,
}

/// The analyses [`Lockstep::check`] reads.
struct Facts {
    div: Divergence,
    sized: HashSet<Value>,
    loops: LoopInfo,
    preds: Preds,
    /// Every value some instruction uses.
    used: HashSet<Value>,
}

impl Lockstep {
    /// The first qualifying loop whose header is not in `skip`.
    fn find(f: &Function, skip: &HashSet<Block>) -> Option<Lockstep> {
        let threads: Vec<Value> = f
            .live_insts()
            .filter(|d| matches!(d.kind, InstKind::GpuIndex(GpuIndex::ThreadIdx, _)))
            .filter_map(|d| d.result)
            .collect();
        let dom = nacre_ir::analysis::DominatorTree::compute(f);
        let sized = sized_values(f, dom.reverse_postorder());
        if threads.is_empty() || sized.is_empty() {
            return None;
        }
        let mut used = HashSet::new();
        for d in f.live_insts() {
            d.kind.for_each_operand(|v| {
                used.insert(v);
            });
        }
        let facts = Facts {
            div: divergence(f, &f.layout, &threads)?,
            sized,
            loops: compute_loops(f),
            preds: f.predecessors(),
            used,
        };
        let headers = facts.loops.headers.iter().copied();
        headers
            .filter(|h| !skip.contains(h))
            .find_map(|h| Lockstep::check(f, &facts, h))
    }

    /// The loop headed by `header`, if it qualifies.
    fn check(f: &Function, facts: &Facts, header: Block) -> Option<Lockstep> {
        let (blocks, latch) = loop_blocks(f, &facts.loops, &facts.preds, header)?;
        let ExitTest { param, limit } = exit_test(f, &blocks)?;
        let index = f.blocks[header].params[param];
        let InstKind::Jump(ref back) = f.insts[f.terminator(latch)?].kind else {
            return None;
        };
        let InstKind::Binary(BinaryOp::Add, a, b) = *f.defining_inst(back.args[param])? else {
            return None;
        };
        let stride = match (a == index, b == index) {
            (true, false) => b,
            (false, true) => a,
            _ => return None,
        };
        let [pre] = facts.preds[header]
            .iter()
            .copied()
            .filter(|b| !blocks.contains(b))
            .collect::<Vec<_>>()[..]
        else {
            return None;
        };
        let InstKind::Jump(ref enter) = f.insts[f.terminator(pre)?].kind else {
            return None;
        };
        let fits = f.value_type(index) == Type::U32
            && facts.sized.contains(&stride)
            && !facts.div.blocks.contains(&pre)
            && blocks.iter().all(|&b| waits_on_nobody(f, b, &facts.used))
            && !uses_outside(f, &blocks, &internal(f, &blocks));
        if !fits {
            return None;
        }
        let base = thread_offset(f, enter.args[param], &facts.div)?;
        let keep_index = uses_outside(f, &blocks, &HashSet::from([index]));
        let carried: Vec<usize> = (0..f.blocks[header].params.len())
            .filter(|&k| k != param || keep_index)
            .collect();
        let stride = Invariant::of(f, stride, &blocks, &facts.div)?;
        let size: usize = blocks.iter().map(|&b| f.blocks[b].insts.len()).sum();
        let limit = Invariant::of(f, limit, &blocks, &facts.div)?;
        Some(Lockstep {
            header,
            blocks,
            latch,
            pre,
            index: param,
            limit,
            stride,
            base,
            copies: (MAX_COPIED / size.max(1)).clamp(1, UNROLL),
            carried,
        })
    }

    /// Rewrites the loop (module docs); returns the uniform loop's header.
    fn rewrite(self, f: &mut Function) -> Block {
        let header_params = f.blocks[self.header].params.clone();
        let carried = self.pick(&header_params);
        let copies: Vec<HashMap<Block, Block>> = (0..self.copies)
            .map(|_| copy_blocks(f, &self.blocks, &HashMap::new(), true).blocks)
            .collect();
        let (start, uniform, thread, next) =
            (new_block(f), new_block(f), new_block(f), new_block(f));
        let j = f.add_block_param(uniform, Type::U32);
        let carry_u = self.params_like(f, uniform, &carried);
        let carry_next = self.params_like(f, next, &carried);

        self.check_wrap(f, start);
        self.fill_start(f, start, uniform, &carried);
        self.fill_uniform(f, uniform, thread, j, &carry_u);
        let inner = copies[0][&self.header];
        let mut args = carry_u.clone();
        let recompute = !self.carried.contains(&self.index);
        append(f, thread, |em| {
            if recompute {
                let tid = em.gpu_index(GpuIndex::ThreadIdx, Dim::X);
                let i = em.binary(BinaryOp::Add, j, tid);
                args.insert(self.index, i);
            }
            em.jump(inner, args);
        });
        self.chain(f, &copies, next);
        append(f, next, |em| {
            em.barrier();
        });
        let step = self.stride.emit(f, next);
        let copies_len = self.copies as u32;
        append(f, next, |em| {
            let times = em.const_u32(copies_len);
            let step = em.binary(BinaryOp::Mul, step, times);
            let j2 = em.binary(BinaryOp::Add, j, step);
            let mut back = vec![j2];
            back.extend(&carry_next);
            em.jump(uniform, back);
        });
        let at = f
            .layout
            .iter()
            .rposition(|b| self.blocks.contains(b))
            .map_or(f.layout.len(), |i| i + 1);
        let mut added = vec![start, uniform, thread];
        for copy in &copies {
            added.extend(self.blocks.iter().map(|b| copy[b]));
        }
        added.push(next);
        f.layout.splice(at..at, added);
        // The carried values used after the loop come from either loop now.
        let vars: Vec<Variable> = carried
            .iter()
            .zip(&carry_u)
            .map(|(&value, &redef)| Variable {
                value,
                redefs: HashMap::from([(uniform, redef)]),
            })
            .collect();
        repair_everywhere(f, &vars);
        uniform
    }

    /// The carried ones of `all`, values in the order of the header's parameters.
    fn pick(&self, all: &[Value]) -> Vec<Value> {
        self.carried.iter().map(|&k| all[k]).collect()
    }

    /// New parameters of `block`, one per value of `like`, of the same types.
    fn params_like(&self, f: &mut Function, block: Block, like: &[Value]) -> Vec<Value> {
        like.iter()
            .map(|&v| {
                let ty = f.value_type(v);
                f.add_block_param(block, ty)
            })
            .collect()
    }

    /// Ends the preheader in `br max(n, u) + copies s + blockDim.x <= u32::MAX, start, <the
    /// loop>` (in `u64`).
    fn check_wrap(&self, f: &mut Function, start: Block) {
        let step = self.stride.emit(f, self.pre);
        let limit = self.limit.emit(f, self.pre);
        let term = f
            .terminator(self.pre)
            .expect("the preheader ends in a jump");
        let InstKind::Jump(enter) = f.insts[term].kind.clone() else {
            unreachable!("checked: the preheader ends in a jump");
        };
        f.blocks[self.pre].insts.pop();
        let (copies, base) = (self.copies, self.base);
        append(f, self.pre, |em| {
            let wide = |em: &mut FunctionBuilder<'_>, v| em.cast(v, Type::U64);
            let (mut n, s) = (wide(em, limit), wide(em, step));
            if let Some(u) = base {
                // `u + threadIdx.x` must not wrap either, even where no iteration runs.
                let u = wide(em, u);
                let above = em.cmp(CmpOp::Gt, u, n);
                n = em.select(above, u, n);
            }
            let times = em.const_u64(copies as u64);
            let s = em.binary(BinaryOp::Mul, s, times);
            let dim = em.gpu_index(GpuIndex::BlockDim, Dim::X);
            let dim = wide(em, dim);
            let sum = em.binary(BinaryOp::Add, n, s);
            let sum = em.binary(BinaryOp::Add, sum, dim);
            let max = em.const_u64(u64::from(u32::MAX));
            let fits = em.cmp(CmpOp::Le, sum, max);
            em.branch(fits, start, Vec::new(), enter.block, enter.args);
        });
    }

    /// `start`: a barrier (the code before the loop is a thread loop of its own), then
    /// `jump uniform(u, <the carried values' starts>)`.
    fn fill_start(&self, f: &mut Function, start: Block, uniform: Block, carried: &[Value]) {
        let enter = match &f.insts[f.terminator(self.pre).expect("rewritten")].kind {
            InstKind::Branch { else_dest, .. } => else_dest.args.clone(),
            _ => unreachable!("check_wrap ends the preheader in a branch"),
        };
        let inits = self.pick(&enter);
        debug_assert_eq!(inits.len(), carried.len());
        let base = self.base;
        append(f, start, |em| {
            em.barrier();
            let u = base.unwrap_or_else(|| em.const_u32(0));
            let mut args = vec![u];
            args.extend(inits);
            em.jump(uniform, args);
        });
    }

    /// `uniform(j, c..)`: `br j < n, thread(), <the loop's exit>(c..)`.
    fn fill_uniform(
        &self,
        f: &mut Function,
        uniform: Block,
        thread: Block,
        j: Value,
        carry_u: &[Value],
    ) {
        let header_params = f.blocks[self.header].params.clone();
        let term = f
            .terminator(self.header)
            .expect("the header ends in a branch");
        let InstKind::Branch { else_dest, .. } = f.insts[term].kind.clone() else {
            unreachable!("checked: the header ends in a branch");
        };
        let to_carried = |v: Value| {
            let k = header_params.iter().position(|&p| p == v);
            match k.and_then(|k| self.carried.iter().position(|&c| c == k)) {
                Some(c) => carry_u[c],
                None => v,
            }
        };
        let exit = BlockCall {
            block: else_dest.block,
            args: else_dest.args.iter().map(|&v| to_carried(v)).collect(),
        };
        let limit = self.limit.emit(f, uniform);
        append(f, uniform, |em| {
            let go = em.cmp(CmpOp::Lt, j, limit);
            em.branch(go, thread, Vec::new(), exit.block, exit.args);
        });
    }

    /// Chains the copies: each one's back edge goes on to the next one's header, the last
    /// one's to `next`, and every exit to `next`, with the carried values.
    fn chain(&self, f: &mut Function, copies: &[HashMap<Block, Block>], next: Block) {
        for (k, copy) in copies.iter().enumerate() {
            let inner = copy[&self.header];
            let own: Vec<Value> = f.blocks[inner].params.clone();
            let term = f.terminator(inner).expect("a copy of the header");
            if let InstKind::Branch { else_dest, .. } = &mut f.insts[term].kind {
                *else_dest = BlockCall {
                    block: next,
                    args: self.pick(&own),
                };
            }
            let term = f
                .terminator(copy[&self.latch])
                .expect("a copy of the latch");
            if let InstKind::Jump(back) = &mut f.insts[term].kind {
                *back = match copies.get(k + 1) {
                    Some(later) => BlockCall {
                        block: later[&self.header],
                        args: back.args.clone(),
                    },
                    None => BlockCall {
                        block: next,
                        args: self.pick(&back.args),
                    },
                };
            }
        }
    }
}

fn new_block(f: &mut Function) -> Block {
    f.blocks.push(BlockData::default())
}

/// Appends what `build` emits to `block`.
fn append(f: &mut Function, block: Block, build: impl FnOnce(&mut FunctionBuilder<'_>)) {
    let mut em = FunctionBuilder::detached(f);
    build(&mut em);
    let insts = em.into_insts();
    f.blocks[block].insts.extend(insts);
}

/// Whether `v` is defined in one of `blocks` (a parameter or an instruction's result).
fn defined_in(f: &Function, v: Value, blocks: &[Block]) -> bool {
    match f.values[v].def {
        ValueDef::Param(b, _) => blocks.contains(&b),
        ValueDef::Result(i) => blocks.iter().any(|&b| f.blocks[b].insts.contains(&i)),
    }
}

/// Whether block `b` only computes and accesses memory (module docs): nothing in it waits on
/// another thread; `used` holds every used value.
fn waits_on_nobody(f: &Function, b: Block, used: &HashSet<Value>) -> bool {
    f.blocks[b].insts.iter().all(|&i| {
        let d = &f.insts[i];
        arithmetic(&d.kind)
            || match d.kind {
                InstKind::Load(_)
                | InstKind::Store(..)
                | InstKind::BoundsCheck { .. }
                | InstKind::GpuIndex(..)
                | InstKind::LaneId
                | InstKind::Jump(_)
                | InstKind::Branch { .. } => true,
                InstKind::AtomicRmw { .. } => d.result.is_none_or(|r| !used.contains(&r)),
                _ => false,
            }
    })
}

/// The values the loop of `blocks` defines other than its header's parameters.
fn internal(f: &Function, blocks: &[Block]) -> HashSet<Value> {
    let mut inside = HashSet::new();
    for (k, &b) in blocks.iter().enumerate() {
        if k > 0 {
            inside.extend(&f.blocks[b].params);
        }
        inside.extend(f.blocks[b].insts.iter().filter_map(|&i| f.insts[i].result));
    }
    inside
}

/// Whether some value of `values` is used outside the loop of `blocks` (the header's exit
/// edge included).
fn uses_outside(f: &Function, blocks: &[Block], values: &HashSet<Value>) -> bool {
    let mut used = false;
    for &b in f.layout.iter().filter(|b| !blocks.contains(b)) {
        for &i in &f.blocks[b].insts {
            f.insts[i]
                .kind
                .for_each_operand(|v| used |= values.contains(&v));
        }
    }
    let term = f
        .terminator(blocks[0])
        .expect("checked: the header ends in a branch");
    if let InstKind::Branch { else_dest, .. } = &f.insts[term].kind {
        used |= else_dest.args.iter().any(|v| values.contains(v));
    }
    used
}

/// `Some(None)` if `start` is `threadIdx.x`, `Some(Some(u))` if it is `u + threadIdx.x` (or
/// `threadIdx.x + u`) with `u` uniform.
fn thread_offset(f: &Function, start: Value, div: &Divergence) -> Option<Option<Value>> {
    let is_tid = |v: Value| {
        matches!(
            f.defining_inst(v),
            Some(InstKind::GpuIndex(GpuIndex::ThreadIdx, Dim::X))
        )
    };
    if is_tid(start) {
        return Some(None);
    }
    let InstKind::Binary(BinaryOp::Add, a, b) = *f.defining_inst(start)? else {
        return None;
    };
    match (is_tid(a), is_tid(b)) {
        (false, true) if div.uniform(a) => Some(Some(a)),
        (true, false) if div.uniform(b) => Some(Some(b)),
        _ => None,
    }
}

/// A value the same on every iteration of a loop and for every thread, and the loop's
/// instructions that compute it (operands first), to compute it again elsewhere.
struct Invariant {
    value: Value,
    insts: Vec<Inst>,
}

impl Invariant {
    /// `v` as an invariant of the loop of `blocks`, if it is one: a uniform value defined before
    /// the loop, or arithmetic in the loop on such values, constants and the block's indices
    /// and sizes.
    fn of(f: &Function, v: Value, blocks: &[Block], div: &Divergence) -> Option<Invariant> {
        let mut insts = Vec::new();
        collect(f, v, blocks, div, &mut insts)?;
        Some(Invariant { value: v, insts })
    }

    /// Computes the value again at the end of `block` (before its terminator, if any);
    /// returns it there.
    fn emit(&self, f: &mut Function, block: Block) -> Value {
        let mut map: HashMap<Value, Value> = HashMap::new();
        let mut em = FunctionBuilder::detached(f);
        for &i in &self.insts {
            let mut kind = em.func().insts[i].kind.clone();
            kind.map_operands(|v| *map.get(&v).unwrap_or(&v));
            let r = em.func().insts[i]
                .result
                .expect("collected for their results");
            let ty = em.func().value_type(r);
            let nr = em.value(kind, ty);
            map.insert(r, nr);
        }
        let insts = em.into_insts();
        let len = f.blocks[block].insts.len();
        let at = f.terminator(block).map_or(len, |_| len - 1);
        f.blocks[block].insts.splice(at..at, insts);
        *map.get(&self.value).unwrap_or(&self.value)
    }
}

/// Collects the instructions of [`Invariant::of`] into `insts`; `None` if `v` is not one.
fn collect(
    f: &Function,
    v: Value,
    blocks: &[Block],
    div: &Divergence,
    insts: &mut Vec<Inst>,
) -> Option<()> {
    if !defined_in(f, v, blocks) {
        return div.uniform(v).then_some(());
    }
    // Inside the loop (divergent control flow to the analysis), the value must be arithmetic
    // on such values, down to constants and the block's indices and sizes.
    let ValueDef::Result(i) = f.values[v].def else {
        return None;
    };
    if insts.contains(&i) {
        return Some(());
    }
    if !arithmetic(&f.insts[i].kind) {
        return None;
    }
    let mut operands = Vec::new();
    f.insts[i].kind.for_each_operand(|o| operands.push(o));
    for o in operands {
        collect(f, o, blocks, div, insts)?;
    }
    insts.push(i);
    Some(())
}

#[cfg(test)]
mod tests;
