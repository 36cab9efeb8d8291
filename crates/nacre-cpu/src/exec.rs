//! The CPU executor: checks a launch, then runs a kernel's step function over its grid.
//!
//! - [`CpuMode::Serial`]: one block of one thread (`gridDim = blockDim = 1`), on the calling
//!   thread, whatever the launch asked for: the seed's fallback, correct for grid-stride
//!   kernels.
//! - [`CpuMode::Grid`]: every block of the grid with every thread. Blocks are split into
//!   contiguous chunks (a few per worker) run by rayon's workers; a block runs entirely on one
//!   worker, round after round (see [`nacre_kernel::step::lower`]), so barriers need no
//!   synchronisation between OS threads.
//!
//! - In grid mode, a kernel of the collapsible grid-stride shape launched on a
//!   one-dimensional grid runs instead as chunks of its loop index handed out to rayon's
//!   workers, one call of its collapsed step function per chunk (see
//!   [`nacre_kernel::step::collapse`]), the C tier's code once it is compiled (read once per launch);
//!   it falls back to the grid when the collapsed function refuses.
//!
//! Each worker keeps its buffers (the block's shared memory and the per-thread state) in a
//! thread-local scratch area that grows to the largest launch and is reused, so steady-state
//! launches allocate nothing. The context block lives on the worker's stack; the block index
//! is advanced in place. The only atomic in a launch is the trap flag, read once per block.
//!
//! A block runs as rounds: the executor calls the step function until it returns 0, opening
//! the barriers ([`ctx::BARRIERS_OPEN`]) for a round only when the previous one left no thread
//! at a yield or a warp stop, and the warp stops only when it left none at a yield (see
//! [`nacre_kernel::step::ctx`]).
//!
//! Shared memory is not cleared between blocks: like on a GPU, a shared array starts with
//! unspecified contents (on the CPU, whatever the worker's previous block left there).

use crate::kernel::{CpuKernel, StepCode};
use crate::private::Plan;
use nacre_backend::LaunchDims;
use nacre_ir::Trap;
use nacre_kernel::step::{collapse, ctx};
use nacre_kernel::CpuMode;
use nacre_runtime::{find_buffer, LaunchLimits};
use rayon::prelude::*;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// The most threads a block may have (CUDA's limit, [`LaunchLimits::TYPICAL`]).
pub const MAX_BLOCK_THREADS: u64 = LaunchLimits::TYPICAL.max_threads_per_block as u64;

// The thread loops' state layout has room for this many threads per word.
const _: () = assert!(MAX_BLOCK_THREADS <= nacre_kernel::step::LANE_THREADS);

/// Chunks of blocks per rayon worker in grid mode (some slack for load balancing).
const CHUNKS_PER_WORKER: u64 = 4;

/// The most loop indices per chunk of a collapsed launch (chunks are handed out one at a
/// time).
const COLLAPSE_CHUNK: u64 = 1 << 15;

/// The fewest loop indices per chunk of a collapsed launch whose bound is known.
const MIN_COLLAPSE_CHUNK: u64 = 1 << 10;

/// Chunks per worker a collapsed launch aims for when its bound is known.
const COLLAPSE_CHUNKS_PER_WORKER: u64 = 8;

/// Loop indices per chunk of a collapsed launch over `bound` indices (unknown: `None`) on
/// `workers` workers: about [`COLLAPSE_CHUNKS_PER_WORKER`] chunks each, within
/// [`MIN_COLLAPSE_CHUNK`] and [`COLLAPSE_CHUNK`]. A loop of 262,144 expensive iterations on
/// 16 workers made only 8 chunks of the largest size, leaving half the workers idle.
fn collapse_chunk(bound: Option<u64>, workers: u64) -> u64 {
    match bound {
        Some(x) => x
            .div_ceil(workers.max(1) * COLLAPSE_CHUNKS_PER_WORKER)
            .clamp(MIN_COLLAPSE_CHUNK, COLLAPSE_CHUNK),
        None => COLLAPSE_CHUNK,
    }
}

/// The launcher the CPU runtime binds into host modules (a [`nacre_backend::LaunchFn`]).
///
/// `handle` is a [`CpuKernel::handle`], `dims` six `u32`s (grid x, y, z, block x, y, z),
/// `args` one `u64` per kernel parameter. On failure writes the trap's code to `*status`
/// (see [`CpuKernel::launch`] for the failures).
///
/// # Safety
/// `handle` must be the handle of a live `CpuKernel`, `dims` must point to six `u32`s, `args`
/// to one `u64` per kernel parameter, `status` to a writable `u32` (or be null); the
/// kernel's accesses through its pointer arguments must stay inside their arrays.
pub unsafe extern "C" fn cpu_launch(
    handle: usize,
    dims: *const u32,
    args: *const u64,
    status: *mut u32,
) {
    // SAFETY: the caller passes the handle of a live kernel and a readable `LaunchDims`.
    let (kernel, dims) = unsafe { (&*(handle as *const CpuKernel), LaunchDims::read(dims)) };
    // SAFETY: `args` holds one slot per parameter; the rest is the caller's contract.
    if let Err(code) = unsafe { kernel.launch_raw(dims, args) } {
        if !status.is_null() {
            // SAFETY: a non-null `status` is writable (the caller's contract).
            unsafe { *status = code };
        }
    }
}

/// A launch's shape, validated.
#[derive(Copy, Clone)]
struct Shape {
    grid: [u64; 3],
    block: [u64; 3],
    blocks: u64,
    threads: u64,
    /// Bytes of dynamic shared memory per block.
    dynamic_shared: u64,
}

impl Shape {
    /// Validates a launch of a kernel with `static_shared` bytes of shared arrays.
    fn new(dims: &LaunchDims, static_shared: u64) -> Result<Shape, u32> {
        LaunchLimits::TYPICAL
            .check(dims, static_shared)
            .map_err(Trap::code)?;
        let grid = dims.grid.map(u64::from);
        let block = dims.block.map(u64::from);
        // Within the limits neither product overflows a u64.
        let threads = block.iter().product();
        let blocks = grid.iter().product();
        Ok(Shape {
            grid,
            block,
            blocks,
            threads,
            dynamic_shared: u64::from(dims.shared_bytes),
        })
    }

    /// The serial mode's shape: one block of one thread, with the launch's dynamic shared
    /// memory.
    fn serial(&self) -> Shape {
        Shape {
            grid: [1; 3],
            block: [1; 3],
            blocks: 1,
            threads: 1,
            dynamic_shared: self.dynamic_shared,
        }
    }

    /// A context block for this shape, with the buffers' addresses.
    fn ctx(&self, shared: u64, state: u64) -> [u64; ctx::CTX_WORDS] {
        let mut c = [0u64; ctx::CTX_WORDS];
        c[ctx::BLOCK_DIM..ctx::BLOCK_DIM + 3].copy_from_slice(&self.block);
        c[ctx::GRID_DIM..ctx::GRID_DIM + 3].copy_from_slice(&self.grid);
        c[ctx::BLOCK_THREADS] = self.threads;
        c[ctx::SHARED_BASE] = shared;
        c[ctx::STATE_BASE] = state;
        c[ctx::DYNAMIC_SHARED_BYTES] = self.dynamic_shared;
        c
    }

    /// Bytes of shared memory per block for a kernel with `static_bytes` of shared arrays:
    /// those, then the dynamic shared memory (see [`ctx::dynamic_shared_offset`]).
    fn shared_bytes(&self, static_bytes: usize) -> usize {
        match self.dynamic_shared {
            0 => static_bytes,
            // Within the limits (48 KiB in all) this neither overflows nor truncates.
            d => (ctx::dynamic_shared_offset(static_bytes as u64) + d) as usize,
        }
    }
}

/// A worker's reusable buffers.
#[derive(Default)]
struct Scratch {
    /// The block's shared memory, 16-byte aligned (for the dynamic shared memory).
    shared: Vec<u128>,
    /// The threads' state words, 16-byte aligned (for 128-bit values, see
    /// `nacre_kernel`'s state slots).
    state: Vec<u128>,
    /// The block's exchange area for collective operations ([`ctx::exchange_bytes`]).
    exchange: Vec<u64>,
}

impl Scratch {
    /// Grows the buffers to `shared_bytes` bytes and `state_words` words; returns their
    /// addresses.
    fn prepare(&mut self, shared_bytes: usize, state_words: usize) -> (u64, u64) {
        let shared_words = shared_bytes.div_ceil(16);
        if self.shared.len() < shared_words {
            self.shared.resize(shared_words, 0);
        }
        if self.state.len() < state_words.div_ceil(2) {
            self.state.resize(state_words.div_ceil(2), 0);
        }
        (
            self.shared.as_mut_ptr() as u64,
            self.state.as_mut_ptr() as u64,
        )
    }
}

thread_local! {
    static SCRATCH: Cell<Option<Scratch>> = const { Cell::new(None) };
}

/// Runs `f` with this thread's scratch buffers. A nested launch on the same thread (a kernel
/// calling host code that launches) gets fresh buffers instead of sharing them.
fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    let mut scratch = SCRATCH
        .try_with(Cell::take)
        .ok()
        .flatten()
        .unwrap_or_default();
    let r = f(&mut scratch);
    let _ = SCRATCH.try_with(|c| c.set(Some(scratch)));
    r
}

impl CpuKernel {
    /// Validates and runs a launch; `Err` holds a trap code.
    ///
    /// # Safety
    /// As [`cpu_launch`].
    pub(crate) unsafe fn launch_raw(&self, dims: LaunchDims, args: *const u64) -> Result<(), u32> {
        let shape = Shape::new(&dims, self.info().shared_bytes as u64)?;
        let params = &self.info().params;
        // A bounds-checked kernel checks every access against the memory each pointer came
        // with (borrowed by the safe call, possibly a plain slice); an unchecked one may only
        // be given pointers into live arrays.
        let validate = !self.step_module().bounds_checked;
        for (i, ty) in params.iter().enumerate() {
            if validate && ty.is_ptr() {
                // SAFETY: `args` holds one slot per parameter.
                let addr = unsafe { args.add(i).read() } as usize;
                if find_buffer(addr).is_none() {
                    return Err(Trap::UnknownBuffer.code());
                }
            }
        }
        match self.mode() {
            // SAFETY: one block of one thread; buffers sized by `run_blocks`.
            CpuMode::Serial => unsafe {
                self.run_blocks(self.one_worker(), &shape.serial(), args, (0, 1), None)
            },
            CpuMode::Grid => {
                // SAFETY: forwarded contract.
                if unsafe { self.run_collapsed(&shape, args) }? {
                    return Ok(());
                }
                // SAFETY: as above, for the whole grid.
                unsafe { self.run_grid(&shape, args) }
            }
        }
    }

    /// The code a launch runs when no other worker runs blocks of it at the same time: the
    /// step function with the sums' additions plain, for a kernel with sums.
    fn one_worker(&self) -> StepCode<'_> {
        self.plain_sums().unwrap_or_else(|| self.current())
    }

    /// Runs a launch of a collapsible kernel (see [`nacre_kernel::step::collapse`]) as chunks of its
    /// loop index handed out to rayon's workers. `Ok(false)` (nothing ran) if the kernel has
    /// no collapsed step function, the launch is not one-dimensional, its thread count does
    /// not fit the loop index, or the loop bound is so large that the index could wrap: the
    /// caller then runs the grid.
    ///
    /// # Safety
    /// As [`cpu_launch`].
    unsafe fn run_collapsed(&self, shape: &Shape, args: *const u64) -> Result<bool, u32> {
        let Some(collapsed) = self.collapsed() else {
            return Ok(false);
        };
        let step = collapsed.current();
        let threads = shape.grid[0] * shape.block[0];
        let one_dim = shape.grid[1..] == [1, 1] && shape.block[1..] == [1, 1];
        let max = collapsed.max;
        if !one_dim || threads > max.min(u32::MAX as u64) {
            return Ok(false);
        }
        let mut ctx = shape.serial().ctx(0, 0);
        ctx[ctx::CHUNK_LIMIT] = max - threads;
        let workers = rayon::current_num_threads();
        // SAFETY: `args` holds one slot per parameter, and the bound is one of them.
        let bound = collapsed.bound_param.map(|k| unsafe { args.add(k).read() });
        let chunk = collapse_chunk(bound, workers as u64);
        let next = AtomicU64::new(0);
        let ended = AtomicBool::new(false);
        let refused = AtomicBool::new(false);
        let trap = AtomicU32::new(0);
        let args_addr = args as usize;
        let work = |mut ctx: [u64; ctx::CTX_WORDS]| loop {
            if ended.load(Ordering::Relaxed) || trap.load(Ordering::Relaxed) != 0 {
                return;
            }
            let lo = next.fetch_add(chunk, Ordering::Relaxed);
            if lo >= max {
                // Unreachable when the wrap check passed (the bound is below `max`).
                ended.store(true, Ordering::Relaxed);
                return;
            }
            ctx[ctx::CHUNK_LO] = lo;
            ctx[ctx::CHUNK_HI] = lo.saturating_add(chunk).min(max);
            // SAFETY: the context describes one block of one thread with no shared memory
            // or state, which is all a collapsed step function uses; `args` per the caller.
            match unsafe { step.step(args_addr as *const u64, ctx.as_mut_ptr()) } {
                Ok(collapse::CHUNK_DONE) => {}
                Ok(collapse::NOT_COLLAPSIBLE) => {
                    // Every call refuses alike, before running anything.
                    refused.store(true, Ordering::Relaxed);
                    ended.store(true, Ordering::Relaxed);
                    return;
                }
                Ok(result) => {
                    debug_assert_eq!(result, collapse::ENDED);
                    ended.store(true, Ordering::Relaxed);
                    return;
                }
                Err(code) => {
                    let _ = trap.compare_exchange(0, code, Ordering::Relaxed, Ordering::Relaxed);
                    return;
                }
            }
        };
        if workers <= 1 {
            work(ctx);
        } else {
            (0..workers).into_par_iter().for_each(|_| work(ctx));
        }
        match trap.load(Ordering::Relaxed) {
            0 => Ok(!refused.load(Ordering::Relaxed)),
            code => Err(code),
        }
    }

    /// Runs every block of the grid, in chunks over rayon's workers.
    ///
    /// # Safety
    /// As [`cpu_launch`].
    unsafe fn run_grid(&self, shape: &Shape, args: *const u64) -> Result<(), u32> {
        let workers = rayon::current_num_threads() as u64;
        if shape.blocks == 1 || workers <= 1 {
            // SAFETY: forwarded contract.
            return unsafe {
                self.run_blocks(self.one_worker(), shape, args, (0, shape.blocks), None)
            };
        }
        let chunks = shape.blocks.min(workers * CHUNKS_PER_WORKER);
        let trap = AtomicU32::new(0);
        let args_addr = args as usize;
        let run_chunk = |code: StepCode<'_>, c: u64, args: *const u64| {
            let lo = (shape.blocks as u128 * c as u128 / chunks as u128) as u64;
            let hi = (shape.blocks as u128 * (c + 1) as u128 / chunks as u128) as u64;
            // SAFETY: forwarded contract; the chunks are disjoint, and every block has its own
            // shared memory and state (the worker's scratch).
            let r = unsafe { self.run_blocks(code, shape, args, (lo, hi), Some(&trap)) };
            if let Err(code) = r {
                let _ = trap.compare_exchange(0, code, Ordering::Relaxed, Ordering::Relaxed);
            }
        };
        // SAFETY: `args` holds one slot per parameter.
        let plan = unsafe { Plan::new(self.private_sums(), &self.info().params, args) };
        // Each worker adds into copies of its own: with every sum private, plain additions
        // suffice.
        let code = match &plan {
            Some(plan) if plan.covers(self.private_sums()) => self.one_worker(),
            _ => self.current(),
        };
        match plan {
            None => (0..chunks)
                .into_par_iter()
                .for_each(|c| run_chunk(code, c, args_addr as *const u64)),
            Some(plan) => (0..chunks)
                .into_par_iter()
                .fold(
                    || plan.copies(),
                    |copies, c| {
                        run_chunk(code, c, copies.args());
                        copies
                    },
                )
                // SAFETY: the sums' memory is the caller's for the launch, and the kernel
                // reaches it through no other argument (`Plan::new` checked).
                .for_each(|copies| unsafe { plan.merge(copies) }),
        }
        match trap.load(Ordering::Relaxed) {
            0 => Ok(()),
            code => Err(code),
        }
    }

    /// Runs blocks `lo..hi` (linear indices, x fastest) on the calling thread with `code`.
    /// Stops early when `stop` holds a trap (raised by another worker).
    ///
    /// # Safety
    /// As [`cpu_launch`].
    unsafe fn run_blocks(
        &self,
        code: StepCode<'_>,
        shape: &Shape,
        args: *const u64,
        (lo, hi): (u64, u64),
        stop: Option<&AtomicU32>,
    ) -> Result<(), u32> {
        let info = self.info();
        with_scratch(|scratch| {
            let state_words = info.block_state_words(shape.threads);
            let (shared, state) =
                scratch.prepare(shape.shared_bytes(info.shared_bytes), state_words);
            let mut ctx = shape.ctx(shared, state);
            let exchange_words = if info.exchange {
                ctx::exchange_bytes(shape.threads).div_ceil(8) as usize
            } else {
                0
            };
            if scratch.exchange.len() < exchange_words {
                scratch.exchange.resize(exchange_words, 0);
            }
            ctx[ctx::EXCHANGE_BASE] = scratch.exchange.as_mut_ptr() as u64;
            let [gx, gy, _] = shape.grid;
            let mut idx = [lo % gx, (lo / gx) % gy, lo / (gx * gy)];
            for _ in lo..hi {
                if stop.is_some_and(|s| s.load(Ordering::Relaxed) != 0) {
                    return Ok(());
                }
                ctx[ctx::BLOCK_IDX..ctx::BLOCK_IDX + 3].copy_from_slice(&idx);
                ctx[ctx::ROUND] = 0;
                ctx[ctx::BARRIERS_OPEN] = ctx::open_word(0);
                // Collectives start every block with zero sequence numbers and counters.
                // Kernels without them skip the call: an empty `fill` is still a `memset`
                // at the empty `Vec`'s dangling address, where glibc's masked AVX-512 store
                // takes a microcode assist, about 130 ns a call
                // (`bench/results/empty_memset.txt`).
                if exchange_words > 0 {
                    scratch.exchange[..exchange_words].fill(0);
                }
                loop {
                    // SAFETY: `ctx` describes this block and points to buffers of the sizes
                    // the step function needs; `args` per the caller.
                    let stopped = unsafe { code.step(args, ctx.as_mut_ptr()) }?;
                    if stopped == 0 {
                        break;
                    }
                    ctx[ctx::ROUND] += 1;
                    ctx[ctx::BARRIERS_OPEN] = ctx::open_word(stopped);
                }
                idx[0] += 1;
                if idx[0] == gx {
                    idx[0] = 0;
                    idx[1] += 1;
                    if idx[1] == gy {
                        idx[1] = 0;
                        idx[2] += 1;
                    }
                }
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(w: [u32; 6]) -> LaunchDims {
        LaunchDims::from_words([w[0], w[1], w[2], w[3], w[4], w[5], 0])
    }

    #[test]
    fn shapes_are_validated() {
        let invalid = Err(Trap::InvalidLaunch.code());
        assert_eq!(
            Shape::new(&at([0, 1, 1, 1, 1, 1]), 0).map(|s| s.blocks),
            invalid
        );
        assert_eq!(
            Shape::new(&at([1, 1, 1, 1, 0, 1]), 0).map(|s| s.blocks),
            invalid
        );
        assert_eq!(
            Shape::new(&at([1, 1, 1, 1025, 1, 1]), 0).map(|s| s.blocks),
            invalid
        );
        assert_eq!(
            Shape::new(&at([1, 1, 1, 32, 32, 2]), 0).map(|s| s.blocks),
            invalid
        );
        let max = u32::MAX;
        assert_eq!(
            Shape::new(&at([1, 1, 1, max, max, max]), 0).map(|s| s.blocks),
            invalid
        );
        // CUDA's largest grid is the largest the CPU accepts.
        let top = i32::MAX as u32;
        let s = Shape::new(&at([top, 65535, 65535, 32, 32, 1]), 0).unwrap();
        assert_eq!(s.blocks, u64::from(top) * 65535 * 65535);
        assert_eq!(s.threads, 1024);
        for grid in [[top + 1, 1, 1], [1, 65536, 1], [1, 1, 65536], [max, max, 1]] {
            let dims = [grid[0], grid[1], grid[2], 1, 1, 1];
            assert_eq!(
                Shape::new(&at(dims), 0).map(|s| s.blocks),
                invalid,
                "{grid:?}"
            );
        }
    }

    #[test]
    fn dynamic_shared_memory_follows_the_static_arrays_within_the_limit() {
        let dims = LaunchDims {
            shared_bytes: 1000,
            ..at([2, 1, 1, 32, 1, 1])
        };
        let s = Shape::new(&dims, 20).unwrap();
        assert_eq!(s.shared_bytes(20), 32 + 1000);
        assert_eq!(s.serial().shared_bytes(0), 1000);
        assert_eq!(s.ctx(0, 0)[ctx::DYNAMIC_SHARED_BYTES], 1000);
        assert_eq!(
            Shape::new(&at([2, 1, 1, 32, 1, 1]), 20)
                .unwrap()
                .shared_bytes(20),
            20
        );
        let over = LaunchDims {
            shared_bytes: 48 * 1024 - 16,
            ..dims
        };
        assert_eq!(
            Shape::new(&over, 17).map(|s| s.blocks),
            Err(Trap::SharedMemoryLimit.code())
        );
    }

    #[test]
    fn collapsed_chunks_are_sized_by_the_bound() {
        // 262,144 indices on 16 workers: 128 chunks of 2048.
        assert_eq!(collapse_chunk(Some(1 << 18), 16), 2048);
        // Large loops keep the largest chunks, small ones the smallest.
        assert_eq!(collapse_chunk(Some(1 << 24), 2), COLLAPSE_CHUNK);
        assert_eq!(collapse_chunk(Some(100), 2), MIN_COLLAPSE_CHUNK);
        assert_eq!(collapse_chunk(Some(u64::MAX), 0), COLLAPSE_CHUNK);
        assert_eq!(collapse_chunk(None, 16), COLLAPSE_CHUNK);
    }

    #[test]
    fn scratch_is_reused_and_nested_use_gets_its_own() {
        let outer = with_scratch(|s| {
            let (a, _) = s.prepare(64, 8);
            let inner = with_scratch(|s2| s2.prepare(64, 8).0);
            assert_ne!(a, inner);
            a
        });
        let again = with_scratch(|s| s.prepare(32, 4).0);
        assert_eq!(outer, again);
    }
}
