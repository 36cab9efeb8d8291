//! Interleaving of grid-stride loops: a yield on their back edge.
//!
//! A grid-stride loop (`for (i = global_id; i < n; i += gridDim.x * blockDim.x)`) is how GPU
//! kernels cover data larger than the grid. On a GPU the threads of a warp run it in lockstep,
//! so at every iteration consecutive threads touch consecutive elements. Run thread after
//! thread on a CPU, each thread's accesses are a whole grid apart: with the usual
//! power-of-two grid sizes they all map to the same cache sets and every access misses
//! (measured 10–20× slower than the same loop with stride 1).
//!
//! Between two barriers, any interleaving of the threads of a block is a valid execution, so
//! the lowering is free to pick one. [`insert_yields`] puts a *yield* before the terminator of
//! every block with a back edge to a grid- or block-stride loop header. A yield is lowered like
//! a barrier (the thread saves its live values and stops for the round) except that it waits
//! for nobody: a round resumes the threads at yields, and threads waiting at a real barrier
//! resume only in a round after no thread is left at a yield (see [`super::ctx`]). Round `k`
//! then runs iteration `k` of every thread of a block: consecutive threads access
//! consecutive elements again, as on a GPU.
//!
//! A loop is recognised as strided when a parameter `p` of its header receives `p + s` on a
//! back edge, where `s` is computed from `gridDim` or `blockDim` (through `mul`, `add`, `shl`
//! and casts). Other loops (a thread walking its own contiguous range, a compute loop) keep
//! running straight through.

use nacre_ir::analysis::DominatorTree;
use nacre_ir::{BinaryOp, Block, Function, GpuIndex, Inst, InstData, InstKind, Value, ValueDef};
use std::collections::HashSet;

/// Inserts a barrier before the terminator of each latch of a strided loop of `f` not headed
/// by a block of `skip` (`stride_lockstep`'s loops), and of `unrolled` (the latches of loops
/// `stride_unroll` unrolled); returns the inserted instructions (the yields).
pub(crate) fn insert_yields(
    f: &mut Function,
    unrolled: &[Block],
    skip: &HashSet<Block>,
) -> Vec<Inst> {
    let dom = DominatorTree::compute(f);
    let rpo: Vec<Block> = dom.reverse_postorder().to_vec();
    let sized = sized_values(f, &rpo);

    // Latches of strided loops.
    let mut latches: Vec<Block> = unrolled.to_vec();
    for &b in &rpo {
        let Some(term) = f.terminator(b) else {
            continue;
        };
        let strided = f.insts[term].kind.successors().any(|call| {
            dom.dominates(call.block, b)
                && !skip.contains(&call.block)
                && call
                    .args
                    .iter()
                    .zip(&f.blocks[call.block].params)
                    .any(|(&arg, &p)| advances_by_size(f, &sized, arg, p))
        });
        if strided && !latches.contains(&b) {
            latches.push(b);
        }
    }
    let mut yields = Vec::with_capacity(latches.len());
    for &b in &latches {
        let inst = f.insts.push(InstData {
            kind: InstKind::Barrier,
            result: None,
        });
        let at = f.blocks[b].insts.len() - 1;
        f.blocks[b].insts.insert(at, inst);
        yields.push(inst);
    }
    yields
}

/// The values of `f` computed from the grid or block size (`rpo`: its blocks in reverse
/// postorder).
pub(super) fn sized_values(f: &Function, rpo: &[Block]) -> HashSet<Value> {
    let mut sized: HashSet<Value> = HashSet::new();
    let mut changed = true;
    while changed {
        changed = false;
        for &b in rpo {
            for &inst in &f.blocks[b].insts {
                let InstData { kind, result } = &f.insts[inst];
                let Some(r) = *result else { continue };
                if sized.contains(&r) {
                    continue;
                }
                let is_sized = match kind {
                    InstKind::GpuIndex(GpuIndex::GridDim | GpuIndex::BlockDim, _) => true,
                    InstKind::Binary(BinaryOp::Mul | BinaryOp::Add | BinaryOp::Shl, a, c) => {
                        sized.contains(a) || sized.contains(c)
                    }
                    InstKind::Cast(a) => sized.contains(a),
                    _ => false,
                };
                if is_sized {
                    sized.insert(r);
                    changed = true;
                }
            }
        }
    }
    sized
}

/// True if `arg` is `p + s` or `s + p` with `s` computed from the grid or block size.
pub(super) fn advances_by_size(f: &Function, sized: &HashSet<Value>, arg: Value, p: Value) -> bool {
    let ValueDef::Result(inst) = f.values[arg].def else {
        return false;
    };
    match f.insts[inst].kind {
        InstKind::Binary(BinaryOp::Add, a, c) => {
            (a == p && sized.contains(&c)) || (c == p && sized.contains(&a))
        }
        _ => false,
    }
}
