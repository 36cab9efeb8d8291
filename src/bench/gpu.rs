//! `nacre bench gpu`: the seed's GPU benchmark, run on a backend of the GPU runtime.
//!
//! `--backend cpu` (this module) runs kernels lowered to step functions by `nacre-cpu`'s
//! executor (see `nacre::gpu::CpuMode`); `--backend cuda` runs the suite on an NVIDIA GPU with
//! the CPU beside it and, with `--peers`, PyTorch, CuPy and Triton ([`cuda`], [`cuda_report`],
//! [`peers`]); `--backend metal` fails with an error saying it is not in this build. On the
//! CPU the suite runs in one mode per invocation
//! (`--mode grid`, the default, or `--mode serial`) and measures, as median nanoseconds per
//! call with the sampler of [`super::measure`]:
//!
//! - `gpu_cpu_saxpy_N`, `gpu_cpu_vecadd_N` (N = 1M, 4M, 16M floats): one call of the corpus's
//!   `run_saxpy_grid_stride` / `run_vec_add_grid_stride`, i.e. one launch of the grid-stride
//!   kernel over N elements (see [`launch_blocks`] for the grid);
//! - `gpu_cpu_blocksum_16777216`: one call of `run_block_sum` (one block of 256 per 256
//!   elements, a shared-memory tree reduction with barriers, one sum per block out). Grid mode
//!   only: serial mode runs one thread of one block, which sums nothing meaningful;
//! - `gpu_cpu_logistic_262144_I` (I = 256, 1024): one call of `run_logistic`, I steps of the
//!   logistic map on each of 262,144 floats, in place;
//! - `gpu_cpu_softmax_4096x4096`, `gpu_cpu_gelu_16777216` and `gpu_cpu_stencil2d_4096` (grid
//!   mode for the softmax and the stencil), with `rust_rayon_*` of the same suffixes: the
//!   kernels of the kernel-language issue, described in [`language`];
//! - `gpu_cpu_blur3_2000x1500`, `gpu_cpu_matmul_1024` and `gpu_cpu_saxpy1_16777216` (grid
//!   mode), with `rust_rayon_*` of the same suffixes: tiled and one-element-per-thread kernels,
//!   described in [`tiled`];
//! - `gpu_cpu_histogram256_16777216`, `gpu_cpu_blocksum_warp_16777216` and
//!   `gpu_cpu_compact_16777216` (grid mode), with `rust_rayon_*` of the same suffixes: the
//!   atomics and warp kernels, described in [`atomics`] and [`warps`];
//! - `gpu_cpu_X_unchecked` for each `gpu_cpu_X` above (not the compiles): the same host
//!   function compiled with `Engine::compile_unchecked` and called with raw pointers, so
//!   neither host code nor kernels check their accesses, on the same arrays. `gpu_cpu_X` is the
//!   safe `Compiled::call` (borrowed arrays, every access bounds-checked), and the pair shows
//!   what the checks cost;
//! - `gpu_cpu_compile_K` (K = saxpy, vecadd, blocksum, logistic): `Engine::compile` of the
//!   kernel's host function on an engine made just before (not timed) for every sample, so
//!   nothing is cached: trace, passes, kernel lowering, and the backend's compiles of the step
//!   function and of the host function;
//! - `rust_rayon_X` for each `gpu_cpu_X` above (not the compiles; one for both `gpu_cpu_X`
//!   and `gpu_cpu_X_unchecked`): the same computation written by hand with rayon on the same
//!   data, on rayon's global pool (the one the executor uses).
//!   The block-sum baseline computes the same per-256-chunk sums as the kernel (not one total),
//!   each chunk summed plainly (`chunk.iter().sum()`); `rust_rayon_blocksum_tree_16777216`
//!   sums each chunk in the kernel's tree order instead, which gives the kernel's results to
//!   the last bit and vectorises (a second, faster baseline, reported but not a target).
//!
//! Before a pair is timed, the kernel (checked, then unchecked) and the baseline run once on
//! the same inputs and their outputs are compared (exactly; the plain block sums within
//! 1e-4 × (1 + |sum|), the tree ones exactly). The arrays of a size are allocated once, outside the timing; the timed calls
//! then keep updating them in place (saxpy's `y`, logistic's `v`), which changes the values,
//! not the work.
//!
//! With `--peers`, the same kernels written in OpenCL C run on PoCL ([`pocl`]): rows
//! `peer_pocl_X`.
//!
//! The report prints each `gpu_cpu_X` (and `gpu_cpu_X_unchecked`) beside `rust_rayon_X` with
//! their ratio, each checked/unchecked ratio, each beside `peer_pocl_X`, and the targets (on
//! the checked rows) with PASS/MISS (grid mode: every kernel within 2× of rayon and at most
//! PoCL's time). A MISS is reported, not an error.

mod atomics;
mod cuda;
mod cuda_report;
mod language;
mod peers;
mod pocl;
mod tiled;
mod warps;

use super::measure::{measure, measure_batched, measure_fallible, Config, Stats};
use super::report::{self, format_ns, Results, Row};
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use nacre::gpu::{Array, CpuMode, CpuOptions, DeviceKind, RuntimeOptions};
use nacre::{Engine, Options};
use nacre_corpus::bench::Batch;
use nacre_corpus::kernels::single_pass::{
    compact_reference, run_block_sum_warp, run_compact, CompactArrays,
};
use nacre_corpus::kernels::{
    run_block_sum, run_histogram256, run_logistic, run_saxpy_f16, run_saxpy_grid_stride,
    run_vec_add_grid_stride,
};
use rayon::prelude::*;
use serde_json::json;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

/// The GPU runtime backends `--backend` names.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum GpuBackend {
    /// Kernels on the CPU (lowered to step functions, run by the CPU executor).
    Cpu,
    /// NVIDIA GPUs through CUDA.
    Cuda,
    /// Apple GPUs through Metal (macOS only).
    Metal,
}

/// How kernels run on the CPU (`nacre::gpu::CpuMode`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// One block of one thread, whatever the launch asks for (grid-stride kernels only).
    Serial,
    /// Every block and thread, blocks spread over all cores (the default).
    Grid,
}

impl Mode {
    fn cpu_mode(self) -> CpuMode {
        match self {
            Mode::Serial => CpuMode::Serial,
            Mode::Grid => CpuMode::Grid,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Serial => "serial",
            Mode::Grid => "grid",
        }
    }
}

/// Arguments of `nacre bench gpu`.
#[derive(Args, Debug)]
pub struct GpuArgs {
    /// The GPU runtime backend: cpu, cuda or metal (not in this build).
    #[arg(long, value_enum, default_value = "cpu")]
    pub backend: GpuBackend,
    /// How kernels run on the CPU backend: grid (full grid semantics over all cores) or serial.
    #[arg(long, value_enum, default_value = "grid")]
    pub mode: Mode,
    /// Write the results as JSON (`{"unit": "ns", "results": {name: median}}`) to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw each benchmark's ratio to its peers (hand-written Rust, rayon, PyTorch, ...) as an
    /// SVG bar chart in this file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Sample briefly (about 30 ms per benchmark instead of 0.5 s): a rough run in seconds.
    #[arg(long)]
    pub quick: bool,
    /// Run only the benchmarks whose name contains one of these (comma-separated) strings; one
    /// ending in `$` selects the names that end with it.
    #[arg(long, value_delimiter = ',', value_name = "SUBSTRINGS")]
    pub filter: Vec<String>,
    /// Launch the grid-stride kernels (saxpy, vecadd, logistic) on this many blocks of 256
    /// instead of n / 4096 (16 iterations per thread), to explore the grid's effect.
    #[arg(long, value_name = "BLOCKS")]
    pub blocks: Option<u32>,
    /// Also time the kernels with their peers and compare: on the CPU, the same algorithms in
    /// OpenCL C on PoCL (`bench/peers/cpu_peers.py`); on CUDA, PyTorch eager, CuPy (Nacre's
    /// generated CUDA and hand-written CUDA) and Triton (`bench/peers/gpu_peers.py`).
    #[arg(long)]
    pub peers: bool,
    /// The Python interpreter of `--peers` (default: $NACRE_PYTHON, else python3).
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// CUDA: run this copy of gpu_peers.py for `--peers` instead of the one built in.
    #[arg(long, value_name = "PATH")]
    pub peers_script: Option<PathBuf>,
    /// CUDA: do not run the suite on the CPU beside the GPU.
    #[arg(long)]
    pub no_cpu: bool,
    /// CUDA: the device ordinal.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub cuda_device: u32,
}

#[cfg(test)]
impl GpuArgs {
    /// The defaults of the command line (CPU backend, grid mode, full run).
    fn for_tests() -> GpuArgs {
        GpuArgs {
            backend: GpuBackend::Cpu,
            mode: Mode::Grid,
            json: None,
            plot: None,
            quick: false,
            filter: Vec::new(),
            blocks: None,
            peers: false,
            python: None,
            peers_script: None,
            no_cpu: false,
            cuda_device: 0,
        }
    }
}

/// The sizes of the saxpy and vecadd benchmarks, in floats.
const VECTOR_SIZES: [usize; 3] = [1 << 20, 1 << 22, 1 << 24];
/// The size of the block-sum benchmark, in floats.
const BLOCKSUM_SIZE: usize = 1 << 24;
/// The number of floats of the logistic benchmarks.
const LOGISTIC_SIZE: usize = 1 << 18;
/// The step counts of the logistic benchmarks.
const LOGISTIC_ITERS: [u32; 2] = [256, 1024];
/// The suffix of a row timing the kernel compiled with `Engine::compile_unchecked` (no
/// bounds checks, raw pointers) beside the row of the same name without it (the safe,
/// checked `call`), measured on the same data in the same run.
pub(crate) const UNCHECKED: &str = "_unchecked";
/// Threads per block of the corpus's launches.
const BLOCK: usize = 256;
/// `alpha` of saxpy.
const ALPHA: f32 = 0.5;
/// The tolerance of the block-sum check, relative to `1 + |expected|`.
const BLOCKSUM_TOLERANCE: f32 = 1e-4;
/// The grid-stride iterations each thread runs under the default grid (see [`launch_blocks`]).
const ITERATIONS_PER_THREAD: usize = 16;

/// The number of blocks of 256 the benchmark launches a grid-stride kernel with over `n`
/// elements, unless `--blocks` says otherwise: `n / (256 × 16)`, so that every thread runs
/// [`ITERATIONS_PER_THREAD`] iterations of its grid-stride loop (1M floats: 256 blocks; 16M:
/// 4,096; the logistic map's 262,144: 64).
///
/// Grid mode: the executor splits the blocks of a launch into up to 4 contiguous chunks per
/// rayon worker (8 on 2 cores) and runs the grid-stride loop of a block with its 256 threads
/// interleaved (a yield at the loop's back edge: round `k` runs iteration `k` of every thread,
/// so consecutive threads touch consecutive elements). With this grid there are 8 to 512 times
/// more blocks than chunks, so every core stays busy to the end, and each thread does several
/// iterations. Measured on the project's 2-core machine (`--blocks`), 4 to 256 iterations per
/// thread are within the noise of each other; 1 or 2 are 20–30% slower, because every thread
/// spends one more round (its last) only finding `i >= n`, a large share of 1 or 2 useful
/// rounds.
///
/// Serial mode runs grid = block = 1 whatever the launch asks, so the value passed only
/// matters for the host function's arithmetic; the same grid as in grid mode is passed.
pub fn launch_blocks(n: usize) -> u32 {
    let per_block = BLOCK * ITERATIONS_PER_THREAD;
    n.div_ceil(per_block).clamp(1, u32::MAX as usize) as u32
}

/// Deterministic pseudo-random floats in [lo, hi) (xorshift).
pub(crate) fn random_in(n: usize, seed: u32, lo: f32, hi: f32) -> Vec<f32> {
    nacre_corpus::kernels::pseudo_random_u32(n, seed)
        .into_iter()
        .map(|x| lo + (hi - lo) * ((x >> 8) as f32 / (1u32 << 24) as f32))
        .collect()
}

/// The starting values of the logistic map: 0.1 to 0.9, evenly spread.
fn logistic_input(n: usize) -> Vec<f32> {
    (0..n).map(|i| 0.1 + 0.8 * (i as f32 / n as f32)).collect()
}

/// Fails unless `got` equals `want` element by element within `tol × (1 + |want|)` (0: exactly).
fn check_close(what: &str, got: &[f32], want: &[f32], tol: f32) -> Result<()> {
    if got.len() != want.len() {
        bail!("{what}: {} results, expected {}", got.len(), want.len());
    }
    let bad = got
        .iter()
        .zip(want)
        .position(|(g, w)| !((g - w).abs() <= tol * (1.0 + w.abs()) || g == w));
    if let Some(i) = bad {
        bail!("{what}: results differ at [{i}]: {} vs {}", got[i], want[i]);
    }
    Ok(())
}

// ---- the rayon baselines --------------------------------------------------------------

/// `y = alpha * x + y` with rayon.
fn rayon_saxpy(alpha: f32, x: &[f32], y: &mut [f32]) {
    y.par_iter_mut()
        .zip(x.par_iter())
        .for_each(|(y, &x)| *y += alpha * x);
}

/// `c = a + b` with rayon.
fn rayon_vec_add(a: &[f32], b: &[f32], c: &mut [f32]) {
    c.par_iter_mut()
        .zip(a.par_iter().zip(b.par_iter()))
        .for_each(|(c, (&a, &b))| *c = a + b);
}

/// One sum per chunk of 256 of `input` into `out`, with rayon, each chunk summed the plain
/// way (`iter().sum()`, left to right): the code one writes by hand. Its rounding differs
/// from the kernel's tree order, hence the tolerance of the check.
fn rayon_block_sum(input: &[f32], out: &mut [f32]) {
    input
        .par_chunks(BLOCK)
        .zip(out.par_iter_mut())
        .for_each(|(chunk, o)| *o = chunk.iter().sum());
}

/// The sum of one chunk of 256 in the kernel's order: a tree that adds element `t + s` to
/// element `t` for `s` = 128, 64, ..., 1 (a shorter last chunk is padded with zeros, as the
/// kernel's threads past `n` contribute 0). The additions of a level are independent, so the
/// compiler vectorises them.
fn tree_sum(chunk: &[f32]) -> f32 {
    let mut s = [0.0f32; BLOCK];
    s[..chunk.len()].copy_from_slice(chunk);
    let mut half = BLOCK / 2;
    while half > 0 {
        let (lo, hi) = s.split_at_mut(half);
        for (a, b) in lo.iter_mut().zip(&hi[..half]) {
            *a += *b;
        }
        half /= 2;
    }
    s[0]
}

/// [`rayon_block_sum`] with each chunk summed in the kernel's tree order ([`tree_sum`]):
/// the kernel's results to the last bit, and a faster (vectorised) baseline.
fn rayon_block_sum_tree(input: &[f32], out: &mut [f32]) {
    input
        .par_chunks(BLOCK)
        .zip(out.par_iter_mut())
        .for_each(|(chunk, o)| *o = tree_sum(chunk));
}

/// `iters` steps of `v = 3.9 v (1 - v)` on every element, with rayon.
fn rayon_logistic(v: &mut [f32], iters: u32) {
    v.par_iter_mut().for_each(|x| {
        let mut y = *x;
        for _ in 0..iters {
            y = 3.9 * y * (1.0 - y);
        }
        *x = y;
    });
}

/// Waits (at most 60 s) until the C compiler has compiled, in the background, the collapsed
/// step functions of the kernels just compiled (see `nacre::gpu::wait_for_c_tier`), so that
/// the timing measures the code every later launch runs, with no compiler beside it.
fn settle_c_tier() {
    let _ = nacre::gpu::wait_for_c_tier(std::time::Duration::from_secs(60));
}

// ---- the harness ----------------------------------------------------------------------

/// Samples benchmarks and collects the results.
struct Harness {
    config: Config,
    results: Results,
    /// Lines printed under the table (skipped benchmarks, the launch grids).
    notes: Vec<String>,
}

impl Harness {
    fn wants(&self, name: &str) -> bool {
        self.results.wants(name)
    }

    fn record(&mut self, name: &str, stats: Stats) {
        self.results.record(name, stats, "");
    }

    /// Measures `routine`, which cannot fail.
    fn time_infallible(&mut self, name: &str, mut routine: impl FnMut()) {
        let stats = measure(&self.config, &mut routine);
        self.record(name, stats);
    }

    /// Measures `routine`, which fails with an error of its own; the first error ends the
    /// benchmark (after the sampling) with that error.
    fn time<E>(&mut self, name: &str, routine: impl FnMut() -> Result<(), E>) -> Result<()>
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        let stats =
            measure_fallible(&self.config, routine).with_context(|| format!("benchmark {name}"))?;
        self.record(name, stats);
        Ok(())
    }
}

/// Everything one run of the suite needs.
struct Suite {
    h: Harness,
    /// `gpu_cpu`, or `gpu_metal` for the suite on Metal.
    prefix: &'static str,
    mode: Mode,
    engine: Engine,
    options: Options,
    blocks: Option<u32>,
    /// The grid (blocks of 256) each grid-stride benchmark launched, in run order, for the
    /// report and the JSON file.
    grids: Vec<(String, u32)>,
}

impl Suite {
    fn blocks(&mut self, name: &str, n: usize) -> u32 {
        let blocks = self.blocks.unwrap_or_else(|| launch_blocks(n));
        self.grids.push((name.to_string(), blocks));
        blocks
    }

    /// `gpu_cpu_saxpy_N`, `gpu_cpu_saxpy_N_unchecked` and `rust_rayon_saxpy_N`.
    fn saxpy(&mut self, n: usize) -> Result<()> {
        let (gpu, raw, rust) = (
            format!("{}_saxpy_{n}", self.prefix),
            format!("{}_saxpy_{n}{UNCHECKED}", self.prefix),
            format!("rust_rayon_saxpy_{n}"),
        );
        let run_raw = self.h.wants(&raw);
        if !self.h.wants(&gpu) && !run_raw && !self.h.wants(&rust) {
            return Ok(());
        }
        let f = self.engine.compile(run_saxpy_grid_stride)?;
        let u = if run_raw {
            Some(self.engine.compile_unchecked(run_saxpy_grid_stride)?)
        } else {
            None
        };
        settle_c_tier();
        let blocks = self.blocks(&gpu, n);
        let (xv, yv) = (random_in(n, 1, -1.0, 1.0), random_in(n, 2, -1.0, 1.0));
        let dev = self.engine.device();
        let (x, mut y) = (Array::copy_on(dev.clone(), &xv)?, Array::copy_on(dev, &yv)?);
        let mut y_rust = yv.clone();
        let len = n as u32;
        rayon_saxpy(ALPHA, x.as_slice(), &mut y_rust);
        f.call(ALPHA, &x, &mut y, len, blocks)?;
        check_close(&format!("{gpu} vs {rust}"), y.as_slice(), &y_rust, 0.0)?;
        if let Some(u) = &u {
            y.as_mut_slice().copy_from_slice(&yv);
            // SAFETY: the grid-stride kernel touches x[i] and y[i] for i < n only, and both
            // arrays hold n floats of the engine's device, live and accessed by nothing else
            // until the call returns (it waits for the kernel).
            unsafe { u.call(ALPHA, x.ptr(), y.ptr(), len, blocks)? };
            check_close(&format!("{raw} vs {rust}"), y.as_slice(), &y_rust, 0.0)?;
        }
        if self.h.wants(&gpu) {
            self.h
                .time(&gpu, || f.call(black_box(ALPHA), &x, &mut y, len, blocks))?;
        }
        if let Some(u) = &u {
            let (xp, yp) = (x.ptr(), y.ptr());
            self.h.time(&raw, || {
                // SAFETY: as for the check above: same kernel, arrays and length.
                unsafe { u.call(black_box(ALPHA), xp, yp, len, blocks) }
            })?;
        }
        if self.h.wants(&rust) {
            self.h.time_infallible(&rust, || {
                rayon_saxpy(black_box(ALPHA), x.as_slice(), &mut y_rust);
            });
        }
        Ok(())
    }

    /// `gpu_cpu_vecadd_N`, `gpu_cpu_vecadd_N_unchecked` and `rust_rayon_vecadd_N`.
    fn vec_add(&mut self, n: usize) -> Result<()> {
        let (gpu, raw, rust) = (
            format!("{}_vecadd_{n}", self.prefix),
            format!("{}_vecadd_{n}{UNCHECKED}", self.prefix),
            format!("rust_rayon_vecadd_{n}"),
        );
        let run_raw = self.h.wants(&raw);
        if !self.h.wants(&gpu) && !run_raw && !self.h.wants(&rust) {
            return Ok(());
        }
        let f = self.engine.compile(run_vec_add_grid_stride)?;
        let u = if run_raw {
            Some(self.engine.compile_unchecked(run_vec_add_grid_stride)?)
        } else {
            None
        };
        settle_c_tier();
        let blocks = self.blocks(&gpu, n);
        let (a, b) = (
            Array::copy_on(self.engine.device(), &random_in(n, 3, -1.0, 1.0))?,
            Array::copy_on(self.engine.device(), &random_in(n, 4, -1.0, 1.0))?,
        );
        let mut c = Array::<f32>::alloc_on(self.engine.device(), n)?;
        let mut c_rust = vec![0.0f32; n];
        let len = n as u32;
        f.call(&a, &b, &mut c, len, blocks)?;
        rayon_vec_add(a.as_slice(), b.as_slice(), &mut c_rust);
        check_close(&format!("{gpu} vs {rust}"), c.as_slice(), &c_rust, 0.0)?;
        if let Some(u) = &u {
            c.as_mut_slice().fill(f32::NAN);
            // SAFETY: the grid-stride kernel touches a[i], b[i] and c[i] for i < n only, and
            // the three arrays hold n floats of the engine's device, live and accessed by
            // nothing else until the call returns (it waits for the kernel).
            unsafe { u.call(a.ptr(), b.ptr(), c.ptr(), len, blocks)? };
            check_close(&format!("{raw} vs {rust}"), c.as_slice(), &c_rust, 0.0)?;
        }
        if self.h.wants(&gpu) {
            self.h
                .time(&gpu, || f.call(&a, &b, &mut c, black_box(len), blocks))?;
        }
        if let Some(u) = &u {
            let (ap, bp, cp) = (a.ptr(), b.ptr(), c.ptr());
            self.h.time(&raw, || {
                // SAFETY: as for the check above: same kernel, arrays and length.
                unsafe { u.call(ap, bp, cp, black_box(len), blocks) }
            })?;
        }
        if self.h.wants(&rust) {
            self.h.time_infallible(&rust, || {
                rayon_vec_add(a.as_slice(), b.as_slice(), black_box(&mut c_rust));
            });
        }
        Ok(())
    }

    /// `gpu_cpu_blocksum_16777216` and `gpu_cpu_blocksum_16777216_unchecked` (grid mode),
    /// `rust_rayon_blocksum_16777216` and `rust_rayon_blocksum_tree_16777216`.
    fn block_sum(&mut self) -> Result<()> {
        let n = BLOCKSUM_SIZE;
        let gpu = format!("{}_blocksum_{n}", self.prefix);
        let raw = format!("{gpu}{UNCHECKED}");
        let rust = format!("rust_rayon_blocksum_{n}");
        let tree = format!("rust_rayon_blocksum_tree_{n}");
        let run_gpu = self.h.wants(&gpu) && self.mode == Mode::Grid;
        let run_raw = self.h.wants(&raw) && self.mode == Mode::Grid;
        for name in [&gpu, &raw] {
            if self.h.wants(name) && self.mode != Mode::Grid {
                self.h.notes.push(format!(
                    "{name}: skipped in serial mode (one thread of one block cannot run a \
                     block-wide shared-memory reduction); run it with --mode grid"
                ));
            }
        }
        if !run_gpu && !run_raw && !self.h.wants(&rust) && !self.h.wants(&tree) {
            return Ok(());
        }
        let input = Array::copy_on(self.engine.device(), &random_in(n, 5, -1.0, 1.0))?;
        let sums = n.div_ceil(BLOCK);
        let mut out = Array::<f32>::alloc_on(self.engine.device(), sums)?;
        let (mut out_rust, mut out_tree) = (vec![0.0f32; sums], vec![0.0f32; sums]);
        rayon_block_sum(input.as_slice(), &mut out_rust);
        rayon_block_sum_tree(input.as_slice(), &mut out_tree);
        check_close(
            &format!("{rust} vs {tree}"),
            &out_rust,
            &out_tree,
            BLOCKSUM_TOLERANCE,
        )?;
        let len = n as u32;
        if run_gpu {
            let f = self.engine.compile(run_block_sum)?;
            f.call(&input, &mut out, len)?;
            check_close(&format!("{gpu} vs {tree}"), out.as_slice(), &out_tree, 0.0)?;
            check_close(
                &format!("{gpu} vs {rust}"),
                out.as_slice(),
                &out_rust,
                BLOCKSUM_TOLERANCE,
            )?;
            self.h
                .time(&gpu, || f.call(&input, &mut out, black_box(len)))?;
        }
        if run_raw {
            let u = self.engine.compile_unchecked(run_block_sum)?;
            out.as_mut_slice().fill(f32::NAN);
            let (ip, op) = (input.ptr(), out.ptr());
            // SAFETY: the launch has ceil(n / 256) blocks of 256 threads; a thread reads
            // input[i] only for i < n (input holds n floats) and thread 0 of block b writes
            // out[b], b < ceil(n / 256) = out's length; both arrays are of the engine's
            // device, live and accessed by nothing else until the call returns.
            unsafe { u.call(ip, op, len)? };
            check_close(&format!("{raw} vs {tree}"), out.as_slice(), &out_tree, 0.0)?;
            check_close(
                &format!("{raw} vs {rust}"),
                out.as_slice(),
                &out_rust,
                BLOCKSUM_TOLERANCE,
            )?;
            self.h.time(&raw, || {
                // SAFETY: as for the check above: same kernel, arrays and length.
                unsafe { u.call(ip, op, black_box(len)) }
            })?;
        }
        if self.h.wants(&rust) {
            self.h.time_infallible(&rust, || {
                rayon_block_sum(input.as_slice(), black_box(&mut out_rust));
            });
        }
        if self.h.wants(&tree) {
            self.h.time_infallible(&tree, || {
                rayon_block_sum_tree(input.as_slice(), black_box(&mut out_tree));
            });
        }
        Ok(())
    }

    /// `gpu_cpu_<suffix>` and `rust_rayon_<suffix>` of one kernel of [`language`]
    /// (`gpu_cpu_` in grid mode only when the kernel needs its whole block).
    fn language(&mut self, k: &language::Kernel) -> Result<()> {
        let gpu = format!("{}_{}", self.prefix, k.suffix);
        let rust = format!("rust_rayon_{}", k.suffix);
        let serial = k.needs_grid_mode && self.mode != Mode::Grid;
        if self.h.wants(&gpu) && serial {
            self.h.notes.push(format!(
                "{gpu}: skipped in serial mode (the kernel shares memory across its block)"
            ));
        }
        let run_gpu = self.h.wants(&gpu) && !serial;
        if !run_gpu && !self.h.wants(&rust) {
            return Ok(());
        }
        let (xv, want) = (k.case)();
        let mut out_rust = vec![0.0f32; xv.len()];
        (k.rayon)(&xv, &mut out_rust);
        (k.check)(&rust, &out_rust, &want)?;
        let x = Array::copy_on(self.engine.device(), &xv)?;
        if run_gpu {
            let blocks = if k.grid_stride {
                self.blocks(&gpu, xv.len())
            } else {
                1
            };
            let mut out = Array::<f32>::alloc_on(self.engine.device(), xv.len())?;
            let mut call = (k.compile)(&self.engine, blocks)?;
            settle_c_tier();
            call(&x, &mut out)?;
            (k.check)(&gpu, out.as_slice(), &want)?;
            self.h.time(&gpu, || call(&x, black_box(&mut out)))?;
        }
        if self.h.wants(&rust) {
            self.h.time_infallible(&rust, || {
                (k.rayon)(x.as_slice(), black_box(&mut out_rust));
            });
        }
        Ok(())
    }

    /// The names `<prefix>_<suffix>` and `rust_rayon_<suffix>` of a kernel and its rayon
    /// baseline, or `None` when the filter wants neither.
    fn pair(&self, suffix: &str) -> Option<(String, String)> {
        let (gpu, rust) = (
            format!("{}_{suffix}", self.prefix),
            format!("rust_rayon_{suffix}"),
        );
        (self.h.wants(&gpu) || self.h.wants(&rust)).then_some((gpu, rust))
    }

    /// `gpu_cpu_saxpy_f16_16777216` and `rust_rayon_saxpy_f16_16777216`: the half-precision
    /// saxpy of [`language`], both checked bit for bit against the `half` crate's operators.
    fn saxpy_f16(&mut self) -> Result<()> {
        let suffix = language::saxpy_f16_name();
        let Some((gpu, rust)) = self.pair(&suffix) else {
            return Ok(());
        };
        let (xv, yv, want) = language::saxpy_f16_case();
        let alpha = language::saxpy_f16_alpha();
        let mut y_rust = yv.clone();
        language::rayon_saxpy_f16(alpha, &xv, &mut y_rust);
        language::check_f16(&rust, &y_rust, &want)?;
        let dev = self.engine.device();
        let (x, mut y) = (Array::copy_on(dev.clone(), &xv)?, Array::copy_on(dev, &yv)?);
        if self.h.wants(&gpu) {
            let blocks = self.blocks(&gpu, xv.len());
            let f = self.engine.compile(run_saxpy_f16)?;
            settle_c_tier();
            let len = xv.len() as u32;
            f.call(alpha, &x, &mut y, len, blocks)?;
            language::check_f16(&gpu, y.as_slice(), &want)?;
            self.h
                .time(&gpu, || f.call(black_box(alpha), &x, &mut y, len, blocks))?;
        }
        if self.h.wants(&rust) {
            self.h.time_infallible(&rust, || {
                language::rayon_saxpy_f16(black_box(alpha), x.as_slice(), &mut y_rust);
            });
        }
        Ok(())
    }

    /// `gpu_cpu_histogram256_16777216` and `rust_rayon_histogram256_16777216`: the histogram
    /// of [`atomics`], both checked exactly.
    fn histogram(&mut self) -> Result<()> {
        let suffix = atomics::histogram_name();
        let Some((gpu, rust)) = self.pair(&suffix) else {
            return Ok(());
        };
        let (xv, want) = atomics::histogram_case();
        let mut bins_rust = vec![0u32; atomics::BINS];
        atomics::rayon_histogram(&xv, &mut bins_rust);
        atomics::check_counts(&rust, &bins_rust, &want)?;
        let dev = self.engine.device();
        let x = Array::copy_on(dev.clone(), &xv)?;
        let mut bins = Array::<u32>::alloc_on(dev, atomics::BINS)?;
        if self.h.wants(&gpu) {
            // A block of 128 threads per grid-stride launch block of the f32 kernels' grid.
            let blocks = self.blocks(&gpu, xv.len());
            let f = self.engine.compile(run_histogram256)?;
            settle_c_tier();
            let len = xv.len() as u32;
            f.call(&x, &mut bins, len, blocks)?;
            atomics::check_counts(&gpu, bins.as_slice(), &want)?;
            self.h
                .time(&gpu, || f.call(&x, &mut bins, black_box(len), blocks))?;
        }
        if self.h.wants(&rust) {
            self.h.time_infallible(&rust, || {
                atomics::rayon_histogram(x.as_slice(), black_box(&mut bins_rust));
            });
        }
        Ok(())
    }

    /// `gpu_cpu_blocksum_warp_16777216` and `rust_rayon_blocksum_warp_16777216`: the
    /// single-launch warp sum of [`warps`], both checked against the exact sum.
    fn blocksum_warp(&mut self) -> Result<()> {
        let suffix = warps::blocksum_name();
        let Some((gpu, rust)) = self.pair(&suffix) else {
            return Ok(());
        };
        let xv = warps::input();
        let want = warps::exact_sum(&xv);
        warps::check_sum(&rust, warps::rayon_sum(&xv), want, &xv)?;
        let dev = self.engine.device();
        let x = Array::copy_on(dev.clone(), &xv)?;
        if self.h.wants(&gpu) {
            let blocks = self.blocks(&gpu, xv.len());
            let f = self.engine.compile(run_block_sum_warp)?;
            settle_c_tier();
            let mut out = Array::<f32>::alloc_on(dev, 1)?;
            let len = xv.len() as u32;
            f.call(&x, &mut out, len, blocks)?;
            warps::check_sum(&gpu, out.as_slice()[0], want, &xv)?;
            self.h
                .time(&gpu, || f.call(&x, &mut out, black_box(len), blocks))?;
        }
        if self.h.wants(&rust) {
            self.h.time_infallible(&rust, || {
                black_box(warps::rayon_sum(black_box(x.as_slice())));
            });
        }
        Ok(())
    }

    /// `gpu_cpu_compact_16777216` and `rust_rayon_compact_16777216`: the order-preserving
    /// compaction of [`warps`], both checked exactly.
    fn compact(&mut self) -> Result<()> {
        let suffix = warps::compact_name();
        let Some((gpu, rust)) = self.pair(&suffix) else {
            return Ok(());
        };
        let xv = warps::input();
        let want = compact_reference(&xv, warps::THRESHOLD);
        let mut out_rust = Vec::new();
        warps::rayon_compact(&xv, &mut out_rust);
        warps::check_compact(&rust, &out_rust, &want)?;
        let dev = self.engine.device();
        let x = Array::copy_on(dev.clone(), &xv)?;
        if self.h.wants(&gpu) {
            let f = self.engine.compile(run_compact)?;
            settle_c_tier();
            let mut a = CompactArrays::alloc_on(dev, xv.len())?;
            let (t, len) = (warps::THRESHOLD, xv.len() as u32);
            let call = |c: &mut CompactArrays, len: u32| {
                f.call(
                    &x,
                    &mut c.out,
                    &mut c.count,
                    &mut c.status,
                    &mut c.ticket,
                    t,
                    len,
                )
            };
            call(&mut a, len)?;
            warps::check_compact(&gpu, a.kept(), &want)?;
            self.h.time(&gpu, || call(&mut a, black_box(len)))?;
        }
        if self.h.wants(&rust) {
            self.h.time_infallible(&rust, || {
                warps::rayon_compact(black_box(x.as_slice()), &mut out_rust);
            });
        }
        Ok(())
    }

    /// `gpu_cpu_logistic_262144_I`, `gpu_cpu_logistic_262144_I_unchecked` and
    /// `rust_rayon_logistic_262144_I`.
    fn logistic(&mut self, iters: u32) -> Result<()> {
        let n = LOGISTIC_SIZE;
        let (gpu, raw, rust) = (
            format!("{}_logistic_{n}_{iters}", self.prefix),
            format!("{}_logistic_{n}_{iters}{UNCHECKED}", self.prefix),
            format!("rust_rayon_logistic_{n}_{iters}"),
        );
        let run_raw = self.h.wants(&raw);
        if !self.h.wants(&gpu) && !run_raw && !self.h.wants(&rust) {
            return Ok(());
        }
        let f = self.engine.compile(run_logistic)?;
        let u = if run_raw {
            Some(self.engine.compile_unchecked(run_logistic)?)
        } else {
            None
        };
        settle_c_tier();
        let blocks = self.blocks(&gpu, n);
        let start = logistic_input(n);
        let mut v = Array::copy_on(self.engine.device(), &start)?;
        let mut v_rust = start.clone();
        let len = n as u32;
        f.call(&mut v, len, iters, blocks)?;
        rayon_logistic(&mut v_rust, iters);
        check_close(&format!("{gpu} vs {rust}"), v.as_slice(), &v_rust, 0.0)?;
        if let Some(u) = &u {
            v.as_mut_slice().copy_from_slice(&start);
            // SAFETY: the grid-stride kernel touches v[i] for i < n only, and v holds n
            // floats of the engine's device, live and accessed by nothing else until the
            // call returns (it waits for the kernel).
            unsafe { u.call(v.ptr(), len, iters, blocks)? };
            check_close(&format!("{raw} vs {rust}"), v.as_slice(), &v_rust, 0.0)?;
        }
        if self.h.wants(&gpu) {
            self.h
                .time(&gpu, || f.call(&mut v, len, black_box(iters), blocks))?;
        }
        if let Some(u) = &u {
            let vp = v.ptr();
            self.h.time(&raw, || {
                // SAFETY: as for the check above: same kernel, array and length.
                unsafe { u.call(vp, len, black_box(iters), blocks) }
            })?;
        }
        if self.h.wants(&rust) {
            self.h.time_infallible(&rust, || {
                rayon_logistic(&mut v_rust, black_box(iters));
            });
        }
        Ok(())
    }

    /// `gpu_cpu_compile_K`: `compile(engine)` (an `Engine::compile` of the kernel's host
    /// function) on a fresh engine per sample, made outside the timing.
    fn compile<O>(
        &mut self,
        kernel: &str,
        mut compile: impl FnMut(&Engine) -> Result<O, nacre::Error>,
    ) -> Result<()> {
        let name = format!("{}_compile_{kernel}", self.prefix);
        if !self.h.wants(&name) {
            return Ok(());
        }
        // Fail early, with the error, if the function does not compile.
        compile(&Engine::new(self.options.clone())?)
            .with_context(|| format!("compiling {kernel}"))?;
        let options = self.options.clone();
        let (stats, _) = measure_compiles(&self.h.config, || Engine::new(options.clone()), compile)
            .with_context(|| format!("benchmark {name}"))?;
        self.h.record(&name, stats);
        Ok(())
    }
}

/// Times `compile` on a fresh engine per sample, each made by `setup` outside the timing;
/// returns the statistics and the number of samples, or the first error of either.
fn measure_compiles<O>(
    cfg: &Config,
    setup: impl FnMut() -> Result<Engine, nacre::Error>,
    mut compile: impl FnMut(&Engine) -> Result<O, nacre::Error>,
) -> Result<(Stats, u64), nacre::Error> {
    let mut failure: Option<nacre::Error> = None;
    let mut samples = 0u64;
    let stats = measure_batched(cfg, Batch::PerIteration, setup, |engine| {
        samples += 1;
        let result = engine.and_then(|engine| Ok((compile(&engine)?, engine)));
        result.map_err(|e| failure.get_or_insert(e)).ok()
    });
    match failure {
        Some(e) => Err(e),
        None => Ok((stats, samples)),
    }
}

/// Runs the suite, prints the report and writes the JSON file if asked.
pub fn run(args: &GpuArgs) -> Result<()> {
    match args.backend {
        GpuBackend::Cpu => {}
        GpuBackend::Cuda => return cuda::run(args),
        GpuBackend::Metal => {}
    }
    let (device, prefix) = match args.backend {
        GpuBackend::Metal => (DeviceKind::Metal, "gpu_metal"),
        _ => (DeviceKind::Cpu, "gpu_cpu"),
    };
    if args.blocks == Some(0) {
        bail!("--blocks must be at least 1");
    }
    let runtime = match device {
        DeviceKind::Cpu => RuntimeOptions::Cpu(CpuOptions {
            mode: args.mode.cpu_mode(),
        }),
        other => RuntimeOptions::for_device(other),
    };
    let options = Options {
        runtime,
        ..Options::default()
    };
    let engine = Engine::new(options.clone()).map_err(|e| {
        anyhow::anyhow!(
            "cannot run `nacre bench gpu --backend {}`: {e}",
            device.name()
        )
    })?;
    let mut s = Suite {
        prefix,
        h: Harness {
            config: if args.quick {
                Config::QUICK
            } else {
                Config::FULL
            },
            results: Results::new(args.filter.clone()),
            notes: Vec::new(),
        },
        mode: args.mode,
        engine,
        options,
        blocks: args.blocks,
        grids: Vec::new(),
    };
    let threads = rayon::current_num_threads();
    let started = Instant::now();
    eprintln!(
        "nacre bench gpu --backend {} --mode {} ({} run, {threads} rayon threads): \
         median of samples per benchmark",
        device.name(),
        args.mode.name(),
        if args.quick { "quick" } else { "full" }
    );

    for n in VECTOR_SIZES {
        s.saxpy(n)
            .with_context(|| format!("saxpy over {n} floats"))?;
    }
    for n in VECTOR_SIZES {
        s.vec_add(n)
            .with_context(|| format!("vecadd over {n} floats"))?;
    }
    s.block_sum().context("block sum")?;
    for iters in LOGISTIC_ITERS {
        s.logistic(iters)
            .with_context(|| format!("logistic map, {iters} steps"))?;
    }
    for k in language::kernels() {
        s.language(&k).with_context(|| k.suffix.clone())?;
    }
    for k in tiled::kernels() {
        s.language(&k).with_context(|| k.suffix.clone())?;
    }
    s.saxpy_f16().context("saxpy over f16")?;
    s.histogram().context("256-bin histogram")?;
    s.blocksum_warp().context("single-launch warp sum")?;
    s.compact().context("stream compaction")?;
    s.compile("saxpy", |e| e.compile(run_saxpy_grid_stride))?;
    s.compile("vecadd", |e| e.compile(run_vec_add_grid_stride))?;
    s.compile("blocksum", |e| e.compile(run_block_sum))?;
    s.compile("logistic", |e| e.compile(run_logistic))?;

    s.h.results.done();
    report::ensure_matched(&args.filter, &s.h.results.rows)?;
    if args.peers && device == DeviceKind::Cpu {
        let python = peers::Runner::new(args.python.as_deref(), None).python;
        let dir = std::env::temp_dir().join(format!("nacre-pocl-{}", std::process::id()));
        let found = pocl::run(&python, &dir, args.quick, &args.filter);
        let _ = std::fs::remove_dir_all(&dir);
        let found = found.context("the PoCL peers")?;
        s.h.notes
            .extend(found.notes.iter().map(|n| format!("PoCL: {n}")));
        for name in &found.failed_checks {
            s.h.notes
                .push(format!("{name}: its result check failed; not timed"));
        }
        s.h.results.rows.extend(found.rows);
    }
    let wall = started.elapsed();
    print_report(&s, threads);
    eprintln!(
        "\n{} benchmarks in {:.1} s",
        s.h.results.rows.len(),
        wall.as_secs_f64()
    );
    if let Some(path) = &args.json {
        let mut doc = report::to_json(&s.h.results.rows);
        doc["config"] = json!({
            "backend": s.options.runtime.device().name(),
            "mode": args.mode.name(),
            "rayon_threads": threads,
            "block_threads": BLOCK,
            "grid_blocks": s
                .grids
                .iter()
                .map(|(name, blocks)| (name.clone(), json!(blocks)))
                .collect::<serde_json::Map<_, _>>(),
            "quick": args.quick,
        });
        report::write_document(path, &doc)
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("results written to {}", path.display());
    }
    if let Some(path) = &args.plot {
        let medians = report::medians(&s.h.results.rows);
        let title = format!(
            "nacre bench gpu --backend {}",
            s.options.runtime.device().name()
        );
        super::plot::draw(&super::plot::bars(&medians), &title, path)?;
        eprintln!("plot written to {}", path.display());
    }
    Ok(())
}

// ---- the report -----------------------------------------------------------------------

fn lookup<'a>(rows: &'a [Row], name: &str) -> Option<&'a Stats> {
    rows.iter().find(|r| r.name == name).map(|r| &r.stats)
}

/// The rayon baseline of `gpu_cpu_X` and of `gpu_cpu_X_unchecked`: `rust_rayon_X`.
fn rayon_name(gpu: &str) -> Option<String> {
    let rest = gpu
        .strip_prefix("gpu_cpu_")
        .or_else(|| gpu.strip_prefix("gpu_metal_"))?;
    let rest = rest.strip_suffix(UNCHECKED).unwrap_or(rest);
    Some(format!("rust_rayon_{rest}"))
}

/// `gpu_cpu_X / rust_rayon_X` (or `gpu_cpu_X_unchecked / rust_rayon_X`), when both ran.
fn rayon_ratio(rows: &[Row], gpu: &str) -> Option<f64> {
    let g = lookup(rows, gpu)?.median_ns;
    let r = lookup(rows, &rayon_name(gpu)?)?.median_ns;
    Some(g / r)
}

/// `(checked, unchecked)` medians of each benchmark `X` with rows `X` and `X_unchecked`, in
/// row order.
pub(crate) fn checked_pairs(rows: &[Row]) -> Vec<(&str, f64, f64)> {
    rows.iter()
        .filter(|r| !r.name.ends_with(UNCHECKED))
        .filter_map(|r| {
            let raw = lookup(rows, &format!("{}{UNCHECKED}", r.name))?;
            Some((r.name.as_str(), r.stats.median_ns, raw.median_ns))
        })
        .collect()
}

/// What a target compares a benchmark with.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Baseline {
    /// Its hand-written rayon baseline, `rust_rayon_X`.
    Rayon,
    /// The same algorithm in OpenCL C on PoCL, `peer_pocl_X` (`--peers`).
    Pocl,
}

impl Baseline {
    /// The baseline's row for benchmark `gpu_cpu_X` (or `gpu_cpu_X_unchecked`).
    fn name(self, gpu: &str) -> Option<String> {
        match self {
            Baseline::Rayon => rayon_name(gpu),
            Baseline::Pocl => rayon_name(gpu).map(|r| r.replace("rust_rayon_", "peer_pocl_")),
        }
    }

    /// `gpu / baseline`, when both ran.
    fn ratio(self, rows: &[Row], gpu: &str) -> Option<f64> {
        let g = lookup(rows, gpu)?.median_ns;
        let b = lookup(rows, &self.name(gpu)?)?.median_ns;
        Some(g / b)
    }
}

/// A target: the ratio of a benchmark to a baseline at most a limit.
struct Target {
    name: String,
    baseline: Baseline,
    limit: f64,
}

/// The suffixes of the benchmarks with targets: the suite's and the execution-speed issue's.
fn target_suffixes() -> Vec<String> {
    let mut v: Vec<String> = VECTOR_SIZES.iter().map(|n| format!("saxpy_{n}")).collect();
    v.extend(VECTOR_SIZES.iter().map(|n| format!("vecadd_{n}")));
    v.extend(
        LOGISTIC_ITERS
            .iter()
            .map(|i| format!("logistic_{LOGISTIC_SIZE}_{i}")),
    );
    v.push(format!("blocksum_{BLOCKSUM_SIZE}"));
    v.extend(language::kernels().map(|k| k.suffix));
    v.push(language::saxpy_f16_name());
    v.push(atomics::histogram_name());
    v.push(warps::blocksum_name());
    v.extend(tiled::kernels().map(|k| k.suffix));
    v
}

/// The grid-mode targets: every benchmark within 2× of its rayon baseline, and at most the
/// time of the same algorithm on PoCL.
fn targets() -> Vec<Target> {
    target_suffixes()
        .into_iter()
        .flat_map(|suffix| {
            [(Baseline::Rayon, 2.0), (Baseline::Pocl, 1.0)].map(|(baseline, limit)| Target {
                name: format!("gpu_cpu_{suffix}"),
                baseline,
                limit,
            })
        })
        .collect()
}

fn print_report(s: &Suite, threads: usize) {
    let rows = &s.h.results.rows;
    let backend = s.options.runtime.device().name();
    let pre = format!("{}_", s.prefix);
    println!(
        "\nnacre bench gpu --backend {backend} --mode {}: {threads} rayon threads, blocks of {BLOCK}",
        s.mode.name()
    );
    println!(
        "\n{:<40} {:>11} {:>7}   {:<32} {:>11} {:>7} {:>9}",
        "benchmark", "median", "±MAD", "rayon baseline", "median", "±MAD", "ratio"
    );
    println!("{}", "-".repeat(40 + 12 + 8 + 3 + 32 + 12 + 8 + 10));
    let spread = |st: &Stats| format!("{:.1}%", 100.0 * st.mad_ns / st.median_ns);
    for row in rows.iter().filter(|r| r.name.starts_with(&pre)) {
        let base_name = rayon_name(&row.name).unwrap_or_default();
        let (base, base_median, base_spread) = match lookup(rows, &base_name) {
            Some(b) => (base_name, format_ns(b.median_ns), spread(b)),
            None => (String::new(), String::new(), String::new()),
        };
        let ratio = rayon_ratio(rows, &row.name)
            .map(|r| format!("{r:.2}×"))
            .unwrap_or_default();
        println!(
            "{:<40} {:>11} {:>7}   {:<32} {:>11} {:>7} {:>9}",
            row.name,
            format_ns(row.stats.median_ns),
            spread(&row.stats),
            base,
            base_median,
            base_spread,
            ratio
        );
    }
    for row in rows.iter().filter(|r| r.name.starts_with("rust_rayon_")) {
        let rest = &row.name["rust_rayon_".len()..];
        if lookup(rows, &format!("{pre}{rest}")).is_none() {
            println!(
                "{:<40} {:>11} {:>7}   {:<32} {:>11} {:>7}",
                "",
                "",
                "",
                row.name,
                format_ns(row.stats.median_ns),
                spread(&row.stats)
            );
        }
    }

    let pairs = checked_pairs(rows);
    if !pairs.is_empty() {
        println!(
            "\nbounds checks: the safe `call` (checked) against `compile_unchecked` (raw \
             pointers, no checks), same kernel and data"
        );
        println!(
            "{:<40} {:>11} {:>11} {:>17}",
            "benchmark", "checked", "unchecked", "checked/unchecked"
        );
        for (name, checked, unchecked) in pairs {
            println!(
                "{name:<40} {:>11} {:>11} {:>16.3}×",
                format_ns(checked),
                format_ns(unchecked),
                checked / unchecked
            );
        }
    }

    let pocl: Vec<&Row> = rows
        .iter()
        .filter(|r| r.name.starts_with("peer_pocl_"))
        .collect();
    if !pocl.is_empty() {
        println!(
            "\nPoCL on the same machine: the same algorithms in OpenCL C (bench/peers/opencl)"
        );
        println!(
            "{:<40} {:>11}   {:<36} {:>11} {:>9}",
            "benchmark", "median", "PoCL", "median", "ratio"
        );
        for peer in pocl {
            let gpu = peer.name.replace("peer_pocl_", &pre);
            let ours = lookup(rows, &gpu).map(|st| st.median_ns);
            println!(
                "{:<40} {:>11}   {:<36} {:>11} {:>9}",
                gpu,
                ours.map(format_ns).unwrap_or_default(),
                peer.name,
                format_ns(peer.stats.median_ns),
                ours.map(|o| format!("{:.2}×", o / peer.stats.median_ns))
                    .unwrap_or_default()
            );
        }
    }

    println!("\nnotes");
    if !s.grids.is_empty() {
        let grids: Vec<String> = s
            .grids
            .iter()
            .map(|(k, b)| format!("{} {b}", k.trim_start_matches(pre.as_str())))
            .collect();
        println!(
            "  blocks of {BLOCK} passed to the grid-stride launches{}:",
            if s.mode == Mode::Serial {
                " (serial mode runs grid = block = 1 whatever is passed)"
            } else {
                ""
            }
        );
        for line in grids.chunks(4) {
            println!("    {}", line.join(", "));
        }
    }
    println!(
        "  rust_rayon_blocksum: one sum per 256 floats (as the kernel), each `chunk.iter().sum()`; \
         rust_rayon_blocksum_tree: the same sums in the kernel's tree order (vectorised)"
    );
    for note in &s.h.notes {
        println!("  {note}");
    }

    if s.prefix != "gpu_cpu" {
        println!("\ntargets: they apply to kernels on the CPU (--backend cpu)");
        return;
    }
    match s.mode {
        Mode::Grid => println!("\ntargets (grid mode; a MISS is reported, not an error)"),
        Mode::Serial => println!(
            "\ntargets (they apply to grid mode; serial-mode ratios for reference, no verdict)"
        ),
    }
    for target in targets() {
        let base = target.baseline.name(&target.name).unwrap_or_default();
        let what = format!("{} / {base} ≤ {}", target.name, target.limit);
        let got = target.baseline.ratio(rows, &target.name);
        let measured = got.map(|r| format!("{r:.3}")).unwrap_or_default();
        let verdict = match (s.mode, got) {
            (_, None) => "not run",
            (Mode::Serial, Some(_)) => "n/a",
            (Mode::Grid, Some(r)) if r <= target.limit => "PASS",
            (Mode::Grid, Some(_)) => "MISS",
        };
        println!("  {what:<76} {measured:>9}  {verdict}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_sum_matches_the_kernels_order_and_pads_with_zeros() {
        let x: Vec<f32> = (0..256).map(|i| i as f32).collect();
        assert_eq!(tree_sum(&x), (0..256).sum::<i32>() as f32);
        assert_eq!(tree_sum(&[1.0, 2.0, 3.0]), 6.0);
    }

    #[test]
    fn unchecked_rows_pair_with_their_checked_row_and_baseline() {
        let row = |name: &str, ns: f64| Row {
            name: name.to_string(),
            stats: Stats {
                median_ns: ns,
                mad_ns: 0.0,
                min_ns: ns,
                samples: 10,
                batch: 1,
            },
        };
        let rows = vec![
            row("gpu_cpu_saxpy_1048576", 120.0),
            row("gpu_cpu_saxpy_1048576_unchecked", 100.0),
            row("rust_rayon_saxpy_1048576", 50.0),
            row("gpu_cpu_vecadd_1048576", 80.0),
        ];
        assert_eq!(
            rayon_name("gpu_cpu_saxpy_1048576_unchecked").as_deref(),
            Some("rust_rayon_saxpy_1048576")
        );
        assert_eq!(
            rayon_ratio(&rows, "gpu_cpu_saxpy_1048576_unchecked"),
            Some(2.0)
        );
        assert_eq!(
            checked_pairs(&rows),
            [("gpu_cpu_saxpy_1048576", 120.0, 100.0)]
        );
    }

    #[test]
    fn launch_grid_gives_every_thread_several_iterations() {
        assert_eq!(launch_blocks(1 << 20), 256);
        assert_eq!(launch_blocks(1 << 24), 4096);
        assert_eq!(launch_blocks(1 << 18), 64);
        assert_eq!(launch_blocks(1), 1);
    }

    #[test]
    fn baselines_compute_the_kernels_results() {
        let (x, mut y) = (vec![1.0f32, 2.0], vec![10.0f32, 20.0]);
        rayon_saxpy(0.5, &x, &mut y);
        assert_eq!(y, [10.5, 21.0]);
        let mut c = vec![0.0f32; 2];
        rayon_vec_add(&x, &[3.0, 4.0], &mut c);
        assert_eq!(c, [4.0, 6.0]);
        let mut v = vec![0.5f32];
        rayon_logistic(&mut v, 1);
        assert_eq!(v, [3.9f32 * 0.5 * 0.5]);
        let input: Vec<f32> = (0..600).map(|i| (i % 7) as f32).collect();
        let want: Vec<f32> = input.chunks(256).map(|c| c.iter().sum()).collect();
        let mut out = vec![0.0f32; 3];
        rayon_block_sum(&input, &mut out);
        assert_eq!(out, want);
        rayon_block_sum_tree(&input, &mut out);
        assert_eq!(out, want);
    }

    #[cfg(not(target_os = "macos"))]
    #[test]
    fn the_metal_backend_fails_clearly() {
        let args = GpuArgs {
            backend: GpuBackend::Metal,
            quick: true,
            ..GpuArgs::for_tests()
        };
        let e = run(&args).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("--backend metal") && e.contains("macOS"), "{e}");
    }
}
