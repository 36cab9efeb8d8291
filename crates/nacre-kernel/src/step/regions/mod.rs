//! Region lowering of kernels whose barriers sit in uniform control flow: one loop over the
//! block's threads per stretch of code between barriers (MCUDA's thread loops).
//!
//! The general lowering (`lower`) turns a kernel with barriers into a state machine: every
//! round visits every thread, dispatches on its saved phase, reloads and saves its live
//! values. When every thread of a block reaches the same barriers in the same order, which is
//! what CUDA requires of correct code and what this module checks, the block can run instead
//! as a sequence of plain loops over its threads, one per *region* (the code from the kernel's
//! start or from a barrier to the next barriers), with control between regions decided once
//! per block:
//!
//! ```text
//! entry:        jump <region of the kernel's start>
//! skeleton:     the kernel's uniform blocks, run once per block: they compute only values that
//!               are the same for every thread, and branch on them
//! enter_e(...): one per thread loop; [narrowed range lo..hi of threadIdx.x, see below]
//!               jump row_e(0, 0)
//! row_e(y, z):  t = (z * bdy + y) * bdx + lo; jump head_e(lo, y, z, t, t - lo as u64)
//! head_e(x, y, z, t, base):   the thread's values live into the loop: recomputed from its
//!               indices, or loaded from its state words
//!               ... a copy of the kernel's blocks from e up to the barriers (stops) ...
//! stop k:       save the thread's values live across barrier k; jump next_e(k)
//! next_e(k):    x + 1 < hi ? head_e(x + 1, y, z, t + 1, base) : rows_e(k)
//! rows_e(k):    y + 1 < bdy ? row_e(y + 1, z) : planes_e(k)   (then z: out_e(k))
//! out_e(k):     jump <region after barrier k>   (k = 0, after a `return`: return 0)
//! ```
//!
//! The loop over `x` is innermost, with one back edge and an index that advances by one, and
//! each state word keeps its threads side by side (`step::state::Lane`: word `k` of thread `t`
//! at `base + k LANE_STRIDE + t size`, a constant distance between words), so the C tier's
//! compiler vectorises thread loops across threads (`x`), as PoCL's work-group vectoriser
//! does.
//!
//! A step function lowered this way runs a whole block in one call and returns 0.
//!
//! # Uniformity
//!
//! A value is *uniform* when it is the same for every thread of a block: the kernel's
//! parameters, block indices and dimensions, and what is computed from uniform values by
//! arithmetic (not loads or calls) outside divergent control flow. `threadIdx` is not. A
//! branch on a non-uniform value is *divergent*; the blocks on its paths up to its immediate
//! post-dominator (where the threads meet again) are in divergent control flow, their values
//! are not uniform (some threads did not compute them), and neither are the parameters of the
//! post-dominator. The analysis iterates to a fixed point. The lowering applies when no
//! barrier sits in divergent control flow (and no barrier is a yield of a grid-stride loop);
//! otherwise the state machine remains.
//!
//! # Regions, skeleton and thread loops
//!
//! The kernel's blocks are split at barriers into *parts*. A part is a skeleton part when it
//! holds only uniform arithmetic, ends in a uniform jump or branch (or a barrier, or a
//! `return`), and is not reachable without crossing a barrier from a part that is not: the
//! skeleton runs once per block. Every other part reached from the skeleton (or starting a
//! region) is the *entry* `e` of a thread loop whose body is a copy of every part reachable
//! from `e` without crossing a barrier. Every thread of a loop stops at the same barrier (the
//! analysis proves it), so the last thread's stop decides where the block goes on; uniform
//! values computed inside the loop are the same for every thread, so the last thread's are
//! the block's.
//!
//! Values live across a barrier that are not uniform get one state word per thread: saved at
//! the stop, reloaded at the head of each thread loop they are live into; those that are a
//! short computation of the thread's indices and uniform values (an index like
//! `row * n + col`) are recomputed there instead (`remat`). Uniform values flow in SSA form. Each value live into a loop's entry is redefined at its head (a reload,
//! or the value on entry to the loop for uniform ones), so a thread never sees a value that
//! the previous thread computed in the same loop; `ssa_repair` then reconnects every use to
//! its reaching definition.
//!
//! # Narrowed thread loops
//!
//! When a loop's entry part computes nothing with effects and branches on `threadIdx.x OP u`
//! (`<`, `<=`, `>`, `>=` or `==`, `u` uniform and known before the loop) to a side that goes
//! straight to the loop's stop (an empty part ending at a barrier with nothing per-thread to
//! save, recomputed values aside, or a `return`), the threads on that side do nothing: the loop runs `x` over the
//! range where the condition keeps threads (for example `0..min(u, blockDim.x)` for `x < u`),
//! in every row of a 2- or 3-dimensional block, and an empty range goes straight on. A tree
//! reduction (`if t < s { sdata[t] += sdata[t + s]; } sync_threads();` for `s = 128, 64, ..,
//! 1`) then visits 255 threads in all instead of 256 per level. A test on `threadIdx.x + r`,
//! `r` a sum of `threadIdx.y` and `threadIdx.z` times constants and a constant that cannot
//! wrap (a 2D tile load's `ty * 16 + tx < 324`), narrows each row to its own range, computed
//! at the row's start (a row left empty is skipped), where the loop has one stop. The kept
//! threads then run with no test at all, which is what lets the C compiler vectorise a
//! tile load's gathers (GCC 12 takes none under a mask).
//!
//! # Code layout
//!
//! [`lower_regions`] runs the steps in order: `uniformity` (which values and blocks are
//! uniform, and whether every barrier is), `fission` (barriers added around loops whose trip
//! count differs between threads, so that the code around them vectorises, and between
//! guarded sections one after the other, so that each gets a thread loop narrowed to the
//! threads its test keeps), `parts` (the
//! kernel split at barriers into parts,
//! the skeleton, the thread loops' entries and bodies), `carry` (the values carried across
//! barriers: liveness, state words, their saves and reloads, with `remat` for those
//! recomputed), `narrow` (narrowed ranges of `threadIdx.x`) and `build` (the construction of
//! the step function from all of these). A kernel without barriers or loops is lowered here
//! too, as one region.

mod build;
mod carry;
mod fission;
mod narrow;
mod parts;
mod remat;
mod uniformity;

use carry::Carried;
use nacre_ir::{Block, Function, Inst, Value};
use parts::{split, Regions};
use std::collections::HashSet;
use uniformity::uniform_barriers;

/// What the region lowering needs from the general one.
pub(crate) struct Input<'a> {
    /// The step function so far: the kernel's blocks with GPU operations replaced by values
    /// of the entry and thread blocks, uniform code hoisted to the entry.
    pub f: &'a Function,
    /// The kernel's blocks, in layout order.
    pub body: &'a [Block],
    /// The block the kernel starts at (without parameters).
    pub start: Block,
    /// The step function's entry block (its instructions are placed by the caller).
    pub entry: Block,
    /// Values of the entry block: uniform.
    pub uniform: &'a HashSet<Value>,
    /// `threadIdx` x, y, z and the linear thread index of the general lowering's thread
    /// block, which the copies replace by their loop's own.
    pub xyz: [Value; 3],
    /// The general lowering's linear thread index.
    pub t: Value,
    /// `blockDim` x, y, z as `u32`, defined in the entry.
    pub dims: [Value; 3],
    /// The address of the per-thread state area (`u64`), defined in the entry.
    pub state_base: Value,
}

/// The lowered step function.
pub(crate) struct Output {
    /// The function: its entry block ends in the jump to the first region; `entry_insts`
    /// go before that jump.
    pub f: Function,
    pub entry_insts: Vec<Inst>,
    /// State words per thread (one per non-uniform value live across a barrier).
    pub state_words: usize,
    /// Thread loops.
    pub loops: usize,
    /// Thread loops that run over a narrowed range of `threadIdx.x`.
    pub narrowed: usize,
}

/// Lowers the kernel to thread loops (see the module docs), or `None` if it does not qualify:
/// a barrier in divergent control flow, a block that cannot reach a return, or copies larger
/// than the state machine would be.
pub(crate) fn lower_regions(input: &Input<'_>) -> Option<Output> {
    let div = uniform_barriers(input)?;
    let mut g = input.f.clone();
    fission::split_divergent_loops(&mut g, input.body, &div);
    let threads = [input.xyz[0], input.xyz[1], input.xyz[2], input.t];
    fission::split_guarded_sections(&mut g, input.body, &div, &threads);
    let parts = split(&mut g, input.body);
    let regions = Regions::find(&g, &parts, &div, input)?;
    let carried = Carried::find(&g, &parts, &div, (&regions.entries, input))?;
    Some(build::build(g, input, &parts, &div, regions, &carried))
}
