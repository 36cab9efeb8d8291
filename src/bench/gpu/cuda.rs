//! `nacre bench gpu --backend cuda`: the seed's GPU suite on an NVIDIA GPU, with the same
//! kernels on the CPU beside it and, with `--peers`, PyTorch, CuPy and Triton timed on the
//! same machine ([`super::peers`]).
//!
//! Every benchmark runs the corpus's host functions (`crates/nacre-corpus/src/kernels.rs`)
//! compiled by an engine with `DeviceKind::Cuda`, on arrays allocated on `engine.device()`
//! (managed memory), and measures, in median nanoseconds:
//!
//! - `gpu_cuda_saxpy_N`, `gpu_cuda_vecadd_N` (N = 1M, 4M, 16M floats), `gpu_cuda_blocksum_N`
//!   (16M), `gpu_cuda_logistic_N_I` (262,144 × 256 and 1024 steps, 16M × 1024): one call of
//!   the host function, timed with CUDA events ([`cuda::time_on_device`]): one recorded on the
//!   thread's stream before the call, the other by the runtime just before the call waits for
//!   its kernels, so behind the last one. The figure covers the launch and the kernel on the
//!   GPU's clock, not the host's wait, as the peers' event-timed figures do. Each call is
//!   timed on its own, the median of at least 50 ([`CallConfig`]). The same calls are also
//!   timed on the host clock, from the call to its return (which comes after the kernel has
//!   completed: the call synchronises and reads the kernel's status word): the
//!   `host_results` of the JSON and the report's `host clock` column;
//! - `gpu_cuda_softmax_4096x4096`, `gpu_cuda_gelu_16777216` and `gpu_cuda_stencil2d_4096`:
//!   the kernel-language kernels ([`super::language`]), event-timed as above, beside
//!   `peer_torch_*` and `peer_cudac_stencil2d_4096` with `--peers`;
//! - `gpu_cuda_launch_latency`: a host function that launches a one-thread kernel adding one
//!   to a counter ([`run_tiny`]), timed on the host clock from the call to its return (the
//!   floor of a call, as the host sees it); `gpu_cuda_launch100_latency` the same for a host
//!   function that launches it [`LAUNCH_CHAIN`] times in a loop ([`run_tiny_chain`]); both
//!   replay a CUDA graph once warm, and `gpu_cuda_launch_latency_direct` and
//!   `gpu_cuda_launch100_latency_direct` are the same calls with `CudaOptions::direct_launches`
//!   (every launch queued as it comes), beside `peer_*_launch100_latency` and PyTorch's
//!   captured graph of the same 100 launches, `peer_torch_graph_launch100_latency`;
//! - `gpu_cuda_X_unchecked` for each `gpu_cuda_X` above: the same host function compiled
//!   with `Engine::compile_unchecked` on an engine with `CudaOptions::unchecked_kernels`, so
//!   that neither the host code nor the kernels check their accesses, called with raw pointers
//!   to the same arrays and timed the same way. `gpu_cuda_X` is the safe `Compiled::call`
//!   (borrowed arrays, every access bounds-checked, in the kernels too); the pair shows what
//!   the checks cost;
//! - `gpu_cuda_compile_K` (K = saxpy, vecadd, blocksum, logistic): `Engine::compile` of K's
//!   host function from nothing to a loaded module (trace, passes, CUDA C, NVRTC,
//!   `cuModuleLoadData`, the host code's compile), with the process's kernel cache cleared and
//!   a fresh engine (both untimed) for every sample, and no on-disk cache.
//!
//! The grid-stride launches (saxpy, vecadd, logistic) get [`cuda_launch_blocks`] blocks of
//! 256 (four elements per thread; `--blocks` overrides). Before a benchmark is timed its first
//! call's output is compared with plain Rust, exactly (the CUDA C is compiled without FMA
//! contraction, and the block sum adds in the kernel's tree order on both sides); an
//! `_unchecked` row's first call, on the same inputs, is compared the same way. While it is
//! timed, the runtime's counters must show no compile: a relaunch never recompiles.
//!
//! Unless `--no-cpu`, the same benchmarks then run on an engine with kernels on the CPU (the
//! mode of `--mode`, grid by default), after all the CUDA ones, whose timings the CPU's
//! all-core runs would otherwise disturb: `gpu_cpu_*`, beside the CUDA figures in the report
//! ([`super::cuda_report`]).

use super::super::measure::{
    measure_calls, measure_device_calls, measure_fallible, CallConfig, CallTimes, Config, Stats,
};
use super::super::report::{format_ns, Results, Row};
use super::peers::{self, kernel_source, PeerResults, Request, Runner};
use super::{
    atomics, check_close, language, launch_blocks, measure_compiles, random_in, rayon_logistic,
    tree_sum, warps, GpuArgs, Mode, BLOCK, UNCHECKED,
};
use anyhow::{bail, Context, Result};
use nacre::gpu::cuda::{self as cuda, CudaOptions, CudaStats, DeviceInfo};
use nacre::gpu::{launch, Array, Block, Device, DeviceKind, Grid};
use nacre::gpu::{CpuOptions, RuntimeOptions};
use nacre::kernel;
use nacre::prelude::*;
use nacre_corpus::kernels::single_pass::{
    compact_reference, run_block_sum_warp, run_compact, CompactArrays,
};
use nacre_corpus::kernels::{
    run_block_sum, run_histogram256, run_logistic, run_saxpy_f16, run_saxpy_grid_stride,
    run_vec_add_grid_stride,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The sizes of the saxpy and vecadd benchmarks, in floats.
pub const VECTOR_SIZES: [usize; 3] = [1 << 20, 1 << 22, 1 << 24];
/// The sizes of the block-sum benchmark, in floats.
pub const BLOCKSUM_SIZES: [usize; 1] = [1 << 24];
/// The (floats, steps) of the logistic benchmarks.
pub const LOGISTIC: [(usize, u32); 3] = [(1 << 18, 256), (1 << 18, 1024), (1 << 24, 1024)];
/// The kernels whose cold compile is measured.
pub const COMPILED_KERNELS: [&str; 4] = ["saxpy", "vecadd", "blocksum", "logistic"];
/// Elements each thread of a grid-stride launch handles on the GPU by default.
const CUDA_ELEMENTS_PER_THREAD: usize = 4;
/// `alpha` of saxpy.
const ALPHA: f32 = 0.5;
/// Arrays larger than this have the logistic map checked on a sample of elements.
const LOGISTIC_FULL_CHECK: usize = 1 << 20;
/// Elements of a sampled logistic check.
const LOGISTIC_SAMPLE: usize = 4096;

/// The blocks of 256 a grid-stride launch over `n` elements gets on the GPU unless
/// `--blocks` says otherwise: four elements per thread (`n / 1024`). Measured on an H200 with
/// the same grid-stride kernels written by hand (`gpu_peers.py --grid-sweep`), this grid is
/// within 8% of the best of 132 to 65,536 blocks at every size of the suite (1M: 11.3 µs,
/// best 10.6; 16M: 63.0 µs, best 62.9; logistic 16M × 1024: 1.698 ms, best 1.691), where
/// one element per thread loses up to 4× at 1M (the launch of 4,096 blocks) and one block per
/// multiprocessor up to 4× at 16M (too few loads in flight).
pub fn cuda_launch_blocks(n: usize) -> u32 {
    let per_block = BLOCK * CUDA_ELEMENTS_PER_THREAD;
    n.div_ceil(per_block).clamp(1, i32::MAX as usize) as u32
}

/// One thread adds one to `counter[0]`: the smallest launch.
#[kernel]
pub fn tiny(counter: Ptr<u32>) {
    counter[0u32] = counter[0u32] + 1u32;
}

/// Launches [`tiny`] on one block of one thread.
#[jit]
pub fn run_tiny(counter: Ptr<u32>) {
    launch(tiny, Grid::new(1u32), Block::new(1u32), (counter,));
}

/// Launches of [`run_tiny_chain`].
pub const LAUNCH_CHAIN: u32 = 100;

/// Launches [`tiny`] [`LAUNCH_CHAIN`] times, each after the one before (a traced loop).
#[jit]
pub fn run_tiny_chain(counter: Ptr<u32>) {
    for _k in 0u32..LAUNCH_CHAIN {
        launch(tiny, Grid::new(1u32), Block::new(1u32), (counter,));
    }
}

/// The indices of the logistic map that are checked: all of a small array, else
/// [`LOGISTIC_SAMPLE`] spread evenly, the last one included.
fn logistic_checked(n: usize) -> Vec<usize> {
    if n <= LOGISTIC_FULL_CHECK {
        return (0..n).collect();
    }
    let step = (n - 1) as f64 / (LOGISTIC_SAMPLE - 1) as f64;
    (0..LOGISTIC_SAMPLE)
        .map(|k| ((k as f64 * step).round() as usize).min(n - 1))
        .collect()
}

/// On the CPU, waits for the C tier that the executor compiles in the background for the
/// kernels just compiled (as `--backend cpu` does), so that the timing measures the code
/// every later launch runs and no compiler runs beside it.
fn settle(is_cuda: bool) {
    if !is_cuda {
        super::settle_c_tier();
    }
}

/// Where the suite runs kernels: the CUDA engine or the CPU engine beside it.
struct Place {
    /// `gpu_cuda` or `gpu_cpu`.
    prefix: &'static str,
    options: Options,
    engine: Engine,
    /// The engine of the `_unchecked` rows, when not `engine`: on CUDA, one whose kernels are
    /// compiled without bounds checks too (`CudaOptions::unchecked_kernels`).
    raw: Option<Engine>,
    /// On CUDA, the engine of the `_direct` rows: launches queued as they come, without
    /// graphs (`CudaOptions::direct_launches`).
    direct: Option<Engine>,
    /// `--blocks`, else the place's own grid for grid-stride launches.
    blocks: Option<u32>,
}

impl Place {
    fn is_cuda(&self) -> bool {
        self.options.runtime.device() == DeviceKind::Cuda
    }

    fn device(&self) -> Arc<dyn Device> {
        self.engine.device()
    }

    /// The engine that compiles the `_unchecked` rows' functions (with
    /// `Engine::compile_unchecked`): on CUDA one with unchecked kernels, on the CPU the
    /// place's own engine. Both run on the device of [`Place::device`].
    fn raw_engine(&self) -> &Engine {
        self.raw.as_ref().unwrap_or(&self.engine)
    }

    fn grid(&self, n: usize) -> u32 {
        match (self.blocks, self.is_cuda()) {
            (Some(b), _) => b,
            (None, true) => cuda_launch_blocks(n),
            (None, false) => launch_blocks(n),
        }
    }

    fn name(&self, suffix: &str) -> String {
        format!("{}_{suffix}", self.prefix)
    }
}

/// What the runtime did while one CUDA benchmark was timed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Steady {
    /// Calls made (warm-up and timed).
    pub calls: u64,
    /// The runtime's counters over those calls.
    pub stats: CudaStats,
}

/// How a CUDA benchmark is timed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Clock {
    /// CUDA events around each call (the row), with the host clock beside it (`host`).
    Events,
    /// The host clock around each call only.
    Host,
}

/// Runs the benchmarks and collects what they measured.
struct Suite {
    call_cfg: CallConfig,
    cpu_cfg: Config,
    results: Results,
    cuda: Place,
    cpu: Option<Place>,
    /// Whether the current pass is CUDA's: every benchmark runs on CUDA first, then on the
    /// CPU, so that the CPU runs, which load every core, do not disturb the GPU's timings.
    on_cuda: bool,
    mode: Mode,
    notes: Vec<String>,
    /// Result checks that failed (those benchmarks are not timed).
    failures: Vec<String>,
    /// The runtime's counters over each timed CUDA benchmark.
    steady: BTreeMap<String, Steady>,
    /// The host-clock median of each event-timed CUDA benchmark, in nanoseconds.
    host: BTreeMap<String, f64>,
    /// The grid of each grid-stride launch, by benchmark name.
    grids: Vec<(String, u32)>,
}

impl Suite {
    /// The name of benchmark `P_<what>` on the current pass's place, or `None` when the filter
    /// leaves it out.
    fn job(&self, what: &str) -> Option<String> {
        let name = self.place(self.on_cuda).name(what);
        self.results.wants(&name).then_some(name)
    }

    fn record(&mut self, name: &str, stats: Stats) {
        let host = self
            .host
            .get(name)
            .map(|h| format!(", host clock {}", format_ns(*h)))
            .unwrap_or_default();
        self.results.record(name, stats, &host);
    }

    /// Records a failed result check: printed now, reported at the end; the benchmark is
    /// not timed.
    fn fail(&mut self, name: &str, e: anyhow::Error) {
        let msg = format!("{name}: result check failed, not timed: {e:#}");
        eprintln!("     {msg}");
        self.failures.push(msg);
    }

    /// Times `call` at `place`: one call at a time on CUDA (with the runtime's counters
    /// around it), by `clock`; batched samples on the host clock on the CPU.
    fn time(
        &mut self,
        is_cuda: bool,
        clock: Clock,
        name: &str,
        mut call: impl FnMut() -> Result<(), nacre::Error>,
    ) -> Result<()> {
        if is_cuda {
            let before = cuda::thread_stats();
            let mut calls = 0u64;
            let stats = match clock {
                Clock::Host => measure_calls(&self.call_cfg, || {
                    calls += 1;
                    call().map_err(anyhow::Error::from)
                }),
                Clock::Events => {
                    let ordinal = match &self.cuda.options.runtime {
                        RuntimeOptions::Cuda(o) => o.device,
                        _ => 0,
                    };
                    measure_device_calls(&self.call_cfg, || {
                        calls += 1;
                        let mut host = Duration::ZERO;
                        let (result, device) = cuda::time_on_device(ordinal, || {
                            let start = Instant::now();
                            let result = call();
                            host = start.elapsed();
                            result
                        })?;
                        result?;
                        Ok::<_, anyhow::Error>(CallTimes { device, host })
                    })
                    .map(|both| {
                        self.host.insert(name.to_string(), both.host.median_ns);
                        both.device
                    })
                }
            }
            .with_context(|| format!("benchmark {name}"))?;
            let counters = cuda::thread_stats().since(&before);
            self.steady.insert(
                name.to_string(),
                Steady {
                    calls,
                    stats: counters,
                },
            );
            self.record(name, stats);
        } else {
            let stats = measure_fallible(&self.cpu_cfg, call)
                .with_context(|| format!("benchmark {name}"))?;
            self.record(name, stats);
        }
        Ok(())
    }

    /// Checks a benchmark's first result (`check`), then times `call` by `clock`; a failed
    /// check is recorded and the benchmark not timed.
    fn check_and_time(
        &mut self,
        is_cuda: bool,
        clock: Clock,
        name: &str,
        check: Result<()>,
        call: impl FnMut() -> Result<(), nacre::Error>,
    ) -> Result<()> {
        match check {
            Err(e) => {
                self.fail(name, e);
                Ok(())
            }
            Ok(()) => self.time(is_cuda, clock, name, call),
        }
    }

    /// The names of benchmark `<what>` (the safe, checked call) and `<what>_unchecked` on the
    /// current pass's place, each `None` when the filter leaves it out.
    fn jobs(&self, what: &str) -> (Option<String>, Option<String>) {
        (self.job(what), self.job(&format!("{what}{UNCHECKED}")))
    }

    /// Notes the grid of a grid-stride benchmark (under the first of its names that runs).
    fn note_grid(&mut self, names: &(Option<String>, Option<String>), blocks: u32) {
        if let Some(name) = names.0.as_ref().or(names.1.as_ref()) {
            self.grids.push((name.clone(), blocks));
        }
    }

    /// `P_saxpy_N` and `P_saxpy_N_unchecked` on the current pass's place.
    fn saxpy(&mut self, n: usize) -> Result<()> {
        let names = self.jobs(&format!("saxpy_{n}"));
        if names == (None, None) {
            return Ok(());
        }
        let is_cuda = self.on_cuda;
        let x = random_in(n, 1, -1.0, 1.0);
        let y0 = random_in(n, 2, -1.0, 1.0);
        let want: Vec<f32> = x.iter().zip(&y0).map(|(x, y)| ALPHA * x + y).collect();
        let place = self.place(is_cuda);
        let blocks = place.grid(n);
        let f = place.engine.compile(run_saxpy_grid_stride)?;
        let u = match names.1 {
            Some(_) => Some(
                place
                    .raw_engine()
                    .compile_unchecked(run_saxpy_grid_stride)?,
            ),
            None => None,
        };
        settle(is_cuda);
        let xa = Array::copy_on(place.device(), &x)?;
        let mut ya = Array::copy_on(place.device(), &y0)?;
        self.note_grid(&names, blocks);
        let len = n as u32;
        if let Some(name) = &names.0 {
            f.call(ALPHA, &xa, &mut ya, len, blocks)?;
            let check = check_close(name, ya.as_slice(), &want, 0.0);
            self.check_and_time(is_cuda, Clock::Events, name, check, || {
                f.call(ALPHA, &xa, &mut ya, black_box(len), blocks)
            })?;
        }
        if let (Some(name), Some(u)) = (&names.1, &u) {
            ya.as_mut_slice().copy_from_slice(&y0);
            let (xp, yp) = (xa.ptr(), ya.ptr());
            // SAFETY: the grid-stride kernel touches x[i] and y[i] for i < n only; both arrays
            // hold n floats of the place's device (the unchecked engine's: the same device),
            // live and accessed by nothing else until the call returns (it waits for its
            // kernels).
            unsafe { u.call(ALPHA, xp, yp, len, blocks)? };
            let check = check_close(name, ya.as_slice(), &want, 0.0);
            self.check_and_time(is_cuda, Clock::Events, name, check, || {
                // SAFETY: as for the checked call above: same kernel, arrays and length.
                unsafe { u.call(ALPHA, xp, yp, black_box(len), blocks) }
            })?;
        }
        Ok(())
    }

    /// `P_vecadd_N` and `P_vecadd_N_unchecked` on the current pass's place.
    fn vecadd(&mut self, n: usize) -> Result<()> {
        let names = self.jobs(&format!("vecadd_{n}"));
        if names == (None, None) {
            return Ok(());
        }
        let is_cuda = self.on_cuda;
        let a = random_in(n, 3, -1.0, 1.0);
        let b = random_in(n, 4, -1.0, 1.0);
        let want: Vec<f32> = a.iter().zip(&b).map(|(a, b)| a + b).collect();
        let place = self.place(is_cuda);
        let blocks = place.grid(n);
        let f = place.engine.compile(run_vec_add_grid_stride)?;
        let u = match names.1 {
            Some(_) => Some(
                place
                    .raw_engine()
                    .compile_unchecked(run_vec_add_grid_stride)?,
            ),
            None => None,
        };
        settle(is_cuda);
        let aa = Array::copy_on(place.device(), &a)?;
        let ba = Array::copy_on(place.device(), &b)?;
        let mut ca = Array::<f32>::alloc_on(place.device(), n)?;
        self.note_grid(&names, blocks);
        let len = n as u32;
        if let Some(name) = &names.0 {
            f.call(&aa, &ba, &mut ca, len, blocks)?;
            let check = check_close(name, ca.as_slice(), &want, 0.0);
            self.check_and_time(is_cuda, Clock::Events, name, check, || {
                f.call(&aa, &ba, &mut ca, black_box(len), blocks)
            })?;
        }
        if let (Some(name), Some(u)) = (&names.1, &u) {
            ca.as_mut_slice().fill(f32::NAN);
            let (ap, bp, cp) = (aa.ptr(), ba.ptr(), ca.ptr());
            // SAFETY: the grid-stride kernel touches a[i], b[i] and c[i] for i < n only; the
            // three arrays hold n floats of the place's device (the unchecked engine's: the
            // same device), live and accessed by nothing else until the call returns (it
            // waits for its kernels).
            unsafe { u.call(ap, bp, cp, len, blocks)? };
            let check = check_close(name, ca.as_slice(), &want, 0.0);
            self.check_and_time(is_cuda, Clock::Events, name, check, || {
                // SAFETY: as for the checked call above: same kernel, arrays and length.
                unsafe { u.call(ap, bp, cp, black_box(len), blocks) }
            })?;
        }
        Ok(())
    }

    /// `P_blocksum_N` and `P_blocksum_N_unchecked` on the current pass's place (grid mode
    /// only on the CPU).
    fn blocksum(&mut self, n: usize) -> Result<()> {
        let names = self.jobs(&format!("blocksum_{n}"));
        if names == (None, None) {
            return Ok(());
        }
        let is_cuda = self.on_cuda;
        if !is_cuda && self.mode == Mode::Serial {
            for name in [&names.0, &names.1].into_iter().flatten() {
                self.notes.push(format!(
                    "{name}: skipped in serial mode (one thread of one block cannot run a \
                     block-wide reduction)"
                ));
            }
            return Ok(());
        }
        let input = random_in(n, 5, -1.0, 1.0);
        let want: Vec<f32> = input.chunks(BLOCK).map(tree_sum).collect();
        let place = self.place(is_cuda);
        let f = place.engine.compile(run_block_sum)?;
        let u = match names.1 {
            Some(_) => Some(place.raw_engine().compile_unchecked(run_block_sum)?),
            None => None,
        };
        settle(is_cuda);
        let ia = Array::copy_on(place.device(), &input)?;
        let mut oa = Array::<f32>::alloc_on(place.device(), want.len())?;
        let len = n as u32;
        if let Some(name) = &names.0 {
            f.call(&ia, &mut oa, len)?;
            let check = check_close(name, oa.as_slice(), &want, 0.0);
            self.check_and_time(is_cuda, Clock::Events, name, check, || {
                f.call(&ia, &mut oa, black_box(len))
            })?;
        }
        if let (Some(name), Some(u)) = (&names.1, &u) {
            oa.as_mut_slice().fill(f32::NAN);
            let (ip, op) = (ia.ptr(), oa.ptr());
            // SAFETY: the launch has ceil(n / 256) blocks of 256 threads; a thread reads
            // input[i] only for i < n (input holds n floats) and thread 0 of block b writes
            // out[b], b < ceil(n / 256) = out's length; both arrays are of the place's device
            // (the unchecked engine's: the same device), live and accessed by nothing else
            // until the call returns (it waits for its kernels).
            unsafe { u.call(ip, op, len)? };
            let check = check_close(name, oa.as_slice(), &want, 0.0);
            self.check_and_time(is_cuda, Clock::Events, name, check, || {
                // SAFETY: as for the checked call above: same kernel, arrays and length.
                unsafe { u.call(ip, op, black_box(len)) }
            })?;
        }
        Ok(())
    }

    /// `P_<suffix>` of one kernel of [`super::language`] on the current pass's place (on
    /// the CPU in grid mode only when the kernel needs its whole block).
    fn language(&mut self, k: &language::Kernel) -> Result<()> {
        let Some(name) = self.job(&k.suffix) else {
            return Ok(());
        };
        let is_cuda = self.on_cuda;
        if !is_cuda && k.needs_grid_mode && self.mode == Mode::Serial {
            self.notes.push(format!(
                "{name}: skipped in serial mode (the kernel shares memory across its block)"
            ));
            return Ok(());
        }
        let (xv, want) = (k.case)();
        let place = self.place(is_cuda);
        let blocks = place.grid(xv.len());
        let mut call = (k.compile)(&place.engine, blocks)?;
        settle(is_cuda);
        let x = Array::copy_on(place.device(), &xv)?;
        let mut out = Array::<f32>::alloc_on(place.device(), xv.len())?;
        if k.grid_stride {
            self.grids.push((name.clone(), blocks));
        }
        call(&x, &mut out)?;
        let check = (k.check)(&name, out.as_slice(), &want);
        self.check_and_time(is_cuda, Clock::Events, &name, check, || {
            call(&x, black_box(&mut out))
        })
    }

    /// `P_saxpy_f16_16777216` on the current pass's place: [`language::saxpy_f16_case`],
    /// checked bit for bit, then event-timed (each call updates `y` in place).
    fn saxpy_f16(&mut self) -> Result<()> {
        let Some(name) = self.job(&language::saxpy_f16_name()) else {
            return Ok(());
        };
        let is_cuda = self.on_cuda;
        let (xv, yv, want) = language::saxpy_f16_case();
        let alpha = language::saxpy_f16_alpha();
        let place = self.place(is_cuda);
        // The f32 kernels' grid gives each thread one 16-byte group of 4 floats; a thread of
        // this one moves 8 halves per group, so it gets half the blocks: the same threads per
        // byte.
        let blocks = place.grid(xv.len() / 2);
        let f = place.engine.compile(run_saxpy_f16)?;
        settle(is_cuda);
        let x = Array::copy_on(place.device(), &xv)?;
        let mut y = Array::copy_on(place.device(), &yv)?;
        self.grids.push((name.clone(), blocks));
        let len = xv.len() as u32;
        f.call(alpha, &x, &mut y, len, blocks)?;
        let check = language::check_f16(&name, y.as_slice(), &want);
        self.check_and_time(is_cuda, Clock::Events, &name, check, || {
            f.call(alpha, &x, &mut y, black_box(len), blocks)
        })
    }

    /// `P_histogram256_16777216` on the current pass's place: [`atomics::histogram_case`],
    /// checked exactly, then event-timed (each call adds into the same bins).
    fn histogram(&mut self) -> Result<()> {
        let Some(name) = self.job(&atomics::histogram_name()) else {
            return Ok(());
        };
        let is_cuda = self.on_cuda;
        let (xv, want) = atomics::histogram_case();
        // On the GPU as many blocks as stay resident (8 of 128 threads per multiprocessor):
        // each block merges its 256 bins into the global histogram once, so a grid-stride
        // grid sized for the streaming kernels would spend its time on those merges.
        let blocks = self.resident_blocks(is_cuda, xv.len())?;
        let place = self.place(is_cuda);
        let f = place.engine.compile(run_histogram256)?;
        settle(is_cuda);
        let x = Array::copy_on(place.device(), &xv)?;
        let mut bins = Array::<u32>::alloc_on(place.device(), atomics::BINS)?;
        self.grids.push((name.clone(), blocks));
        let len = xv.len() as u32;
        f.call(&x, &mut bins, len, blocks)?;
        let check = atomics::check_counts(&name, bins.as_slice(), &want);
        self.check_and_time(is_cuda, Clock::Events, &name, check, || {
            f.call(&x, &mut bins, black_box(len), blocks)
        })
    }

    /// 8 blocks per multiprocessor on the GPU (as many as stay resident at 128 or 256
    /// threads), for kernels whose blocks each end in atomics; the grid-stride grid on the CPU.
    fn resident_blocks(&self, is_cuda: bool, n: usize) -> Result<u32> {
        let place = self.place(is_cuda);
        Ok(match (place.blocks, &place.options.runtime) {
            (None, RuntimeOptions::Cuda(o)) => cuda::device_info(o.device)?.multiprocessors * 8,
            _ => place.grid(n),
        })
    }

    /// `P_blocksum_warp_16777216` on the current pass's place: [`warps`]'s sum, checked
    /// against the exact sum, then event-timed (each call adds into the same cell).
    fn blocksum_warp(&mut self) -> Result<()> {
        let Some(name) = self.job(&warps::blocksum_name()) else {
            return Ok(());
        };
        let is_cuda = self.on_cuda;
        let xv = warps::input();
        let want = warps::exact_sum(&xv);
        let blocks = self.resident_blocks(is_cuda, xv.len())?;
        let place = self.place(is_cuda);
        let f = place.engine.compile(run_block_sum_warp)?;
        settle(is_cuda);
        let x = Array::copy_on(place.device(), &xv)?;
        let mut out = Array::<f32>::alloc_on(place.device(), 1)?;
        self.grids.push((name.clone(), blocks));
        let len = xv.len() as u32;
        f.call(&x, &mut out, len, blocks)?;
        let check = warps::check_sum(&name, out.as_slice()[0], want, &xv);
        self.check_and_time(is_cuda, Clock::Events, &name, check, || {
            f.call(&x, &mut out, black_box(len), blocks)
        })
    }

    /// `P_compact_16777216` on the current pass's place: [`warps`]'s compaction (a clearing
    /// launch and the compaction), checked exactly, then event-timed.
    fn compact(&mut self) -> Result<()> {
        let Some(name) = self.job(&warps::compact_name()) else {
            return Ok(());
        };
        let is_cuda = self.on_cuda;
        let xv = warps::input();
        let want = compact_reference(&xv, warps::THRESHOLD);
        let place = self.place(is_cuda);
        let f = place.engine.compile(run_compact)?;
        settle(is_cuda);
        let x = Array::copy_on(place.device(), &xv)?;
        let mut a = CompactArrays::alloc_on(place.device(), xv.len())?;
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
        let check = warps::check_compact(&name, a.kept(), &want);
        self.check_and_time(is_cuda, Clock::Events, &name, check, || {
            call(&mut a, black_box(len))
        })
    }

    /// `P_logistic_N_I` and `P_logistic_N_I_unchecked` on the current pass's place.
    fn logistic(&mut self, n: usize, iters: u32) -> Result<()> {
        let names = self.jobs(&format!("logistic_{n}_{iters}"));
        if names == (None, None) {
            return Ok(());
        }
        let is_cuda = self.on_cuda;
        let start = random_in(n, 6, 0.05, 0.95);
        let checked = logistic_checked(n);
        let mut want: Vec<f32> = checked.iter().map(|&i| start[i]).collect();
        rayon_logistic(&mut want, iters);
        let place = self.place(is_cuda);
        let blocks = place.grid(n);
        let f = place.engine.compile(run_logistic)?;
        let u = match names.1 {
            Some(_) => Some(place.raw_engine().compile_unchecked(run_logistic)?),
            None => None,
        };
        settle(is_cuda);
        let mut v = Array::copy_on(place.device(), &start)?;
        self.note_grid(&names, blocks);
        let len = n as u32;
        let check_v = |name: &str, v: &Array<f32>| {
            let s = v.as_slice();
            let got: Vec<f32> = checked.iter().map(|&i| s[i]).collect();
            check_close(name, &got, &want, 0.0)
        };
        if let Some(name) = &names.0 {
            f.call(&mut v, len, iters, blocks)?;
            let check = check_v(name, &v);
            self.check_and_time(is_cuda, Clock::Events, name, check, || {
                f.call(&mut v, len, black_box(iters), blocks)
            })?;
        }
        if let (Some(name), Some(u)) = (&names.1, &u) {
            v.as_mut_slice().copy_from_slice(&start);
            let vp = v.ptr();
            // SAFETY: the grid-stride kernel touches v[i] for i < n only; v holds n floats of
            // the place's device (the unchecked engine's: the same device), live and accessed
            // by nothing else until the call returns (it waits for its kernels).
            unsafe { u.call(vp, len, iters, blocks)? };
            let check = check_v(name, &v);
            self.check_and_time(is_cuda, Clock::Events, name, check, || {
                // SAFETY: as for the checked call above: same kernel, array and length.
                unsafe { u.call(vp, len, black_box(iters), blocks) }
            })?;
        }
        Ok(())
    }

    /// `P_launch_latency` and `P_launch100_latency`, each also `_unchecked` and (on CUDA)
    /// `_direct`: calls of [`run_tiny`] and [`run_tiny_chain`], each series on a counter of
    /// its own, which must count every launch.
    fn latency(&mut self) -> Result<()> {
        self.latency_of("launch_latency", 1, run_tiny)?;
        self.latency_of("launch100_latency", LAUNCH_CHAIN, run_tiny_chain)
    }

    /// The rows `P_{what}` (and `_unchecked`, `_direct`) of host function `f`, which
    /// launches [`tiny`] `per_call` times.
    fn latency_of<F>(&mut self, what: &str, per_call: u32, f: F) -> Result<()>
    where
        F: nacre::TraceFn<(Ptr<u32>,), Ret = ()> + Copy,
    {
        let (checked, unchecked) = self.jobs(what);
        let direct = self
            .on_cuda
            .then(|| self.job(&format!("{what}_direct")))
            .flatten();
        let is_cuda = self.on_cuda;
        let place = self.place(is_cuda);
        let device = place.device();
        let compiled = match &checked {
            Some(_) => Some(place.engine.compile(f)?),
            None => None,
        };
        let raw = match &unchecked {
            Some(_) => Some(place.raw_engine().compile_unchecked(f)?),
            None => None,
        };
        let direct_compiled = match (&direct, &place.direct) {
            (Some(_), Some(e)) => Some(e.compile(f)?),
            _ => None,
        };
        settle(is_cuda);
        for (name, g) in [(&checked, &compiled), (&direct, &direct_compiled)] {
            let (Some(name), Some(g)) = (name, g) else {
                continue;
            };
            let mut counter = Array::<u32>::alloc_on(device.clone(), 1)?;
            let mut calls = 0u64;
            self.time(is_cuda, Clock::Host, name, || {
                calls += 1;
                g.call(&mut counter)
            })?;
            self.check_count(name, counter.as_slice()[0], calls * u64::from(per_call));
        }
        if let (Some(name), Some(u)) = (&unchecked, &raw) {
            let counter = Array::<u32>::alloc_on(device, 1)?;
            let cp = counter.ptr();
            let mut calls = 0u64;
            self.time(is_cuda, Clock::Host, name, || {
                calls += 1;
                // SAFETY: the kernel's one thread touches counter[0] only; the counter holds
                // one u32 of the place's device (the unchecked engine's: the same device),
                // live and accessed by nothing else until the call returns.
                unsafe { u.call(cp) }
            })?;
            self.check_count(name, counter.as_slice()[0], calls * u64::from(per_call));
        }
        Ok(())
    }

    /// Fails benchmark `name` (and drops its row) unless the counter of [`tiny`] is
    /// `launches` (mod 2³²).
    fn check_count(&mut self, name: &str, counter: u32, launches: u64) {
        let got = u64::from(counter);
        if got != launches % (1 << 32) {
            self.fail(
                name,
                anyhow::anyhow!("the counter is {got} after {launches} launches"),
            );
            self.results.rows.retain(|r| r.name != name);
        }
    }

    /// `P_compile_K`: `compile(engine)` on a fresh engine per sample, the kernel cache cleared
    /// before it (neither timed).
    fn compile<O>(
        &mut self,
        kernel: &str,
        mut compile: impl FnMut(&Engine) -> Result<O, nacre::Error>,
    ) -> Result<()> {
        let Some(name) = self.job(&format!("compile_{kernel}")) else {
            return Ok(());
        };
        let is_cuda = self.on_cuda;
        let options = self.place(is_cuda).options.clone();
        let setup = || {
            if is_cuda {
                cuda::clear_kernel_cache();
            }
            Engine::new(options.clone())
        };
        let before = is_cuda.then(cuda::thread_stats);
        let measured = measure_compiles(&self.cpu_cfg, setup, &mut compile);
        settle(is_cuda);
        let (stats, samples) = measured.with_context(|| format!("benchmark {name}"))?;
        if let Some(before) = before {
            let d = cuda::thread_stats().since(&before);
            if d.compiles != samples || d.disk_cache_hits != 0 || d.cache_hits != 0 {
                self.fail(
                    &name,
                    anyhow::anyhow!(
                        "{samples} samples should each compile the kernel once with \
                         NVRTC; the runtime counted {} compiles, {} kernel-cache hits and \
                         {} on-disk cache hits",
                        d.compiles,
                        d.cache_hits,
                        d.disk_cache_hits
                    ),
                );
                return Ok(());
            }
        }
        self.record(&name, stats);
        Ok(())
    }

    fn place(&self, is_cuda: bool) -> &Place {
        match (&self.cpu, is_cuda) {
            (Some(cpu), false) => cpu,
            _ => &self.cuda,
        }
    }
}

/// The CUDA device's facts for the report and the JSON file.
fn device_json(info: &DeviceInfo) -> Value {
    json!({
        "ordinal": info.ordinal,
        "name": info.name,
        "compute_capability": format!("{}.{}", info.compute_capability.0, info.compute_capability.1),
        "multiprocessors": info.multiprocessors,
        "total_memory_bytes": info.total_memory,
        "concurrent_managed_access": info.concurrent_managed_access,
        "driver_cuda_version": info.driver_version,
    })
}

/// The options of a CUDA engine: kernels on device `ordinal`, no on-disk kernel cache
/// unless `NACRE_CUDA_CACHE_DIR` names one (the compile benchmarks then check that it
/// answered nothing), kernels bounds-checked unless `unchecked_kernels` (the engine of the
/// `_unchecked` rows).
fn cuda_options(ordinal: u32, unchecked_kernels: bool) -> Options {
    Options {
        runtime: RuntimeOptions::Cuda(CudaOptions {
            device: ordinal,
            cache_dir: None,
            unchecked_kernels,
            fast_math: false,
            direct_launches: false,
        }),
        ..Options::default()
    }
}

/// [`cuda_options`] (checked kernels) with launches queued as they come, without graphs.
fn direct_options(ordinal: u32) -> Options {
    let mut options = cuda_options(ordinal, false);
    if let RuntimeOptions::Cuda(c) = &mut options.runtime {
        c.direct_launches = true;
    }
    options
}

/// The CUDA C of each kernel of the suite, as the CUDA engine generates it.
fn generated_sources(
    options: &Options,
) -> Result<Vec<(&'static str, nacre_cuda::codegen::KernelSource)>> {
    let p = &options.passes;
    Ok(vec![
        (
            "saxpy",
            kernel_source(
                "saxpy",
                nacre::trace_module(&run_saxpy_grid_stride)?.module,
                p,
            )?,
        ),
        (
            "vecadd",
            kernel_source(
                "vecadd",
                nacre::trace_module(&run_vec_add_grid_stride)?.module,
                p,
            )?,
        ),
        (
            "blocksum",
            kernel_source("blocksum", nacre::trace_module(&run_block_sum)?.module, p)?,
        ),
        (
            "logistic",
            kernel_source("logistic", nacre::trace_module(&run_logistic)?.module, p)?,
        ),
        (
            "tiny",
            kernel_source("tiny", nacre::trace_module(&run_tiny)?.module, p)?,
        ),
    ])
}

/// What a CUDA run produced, for the report.
pub struct Outcome {
    /// Nacre's rows (`gpu_cuda_*`, `gpu_cpu_*`).
    pub rows: Vec<Row>,
    /// The peers' figures, when `--peers` ran them.
    pub peers: Option<PeerResults>,
    /// Notes printed under the tables.
    pub notes: Vec<String>,
    /// Failed result checks (of Nacre's benchmarks).
    pub failures: Vec<String>,
    /// The runtime's counters over each timed CUDA benchmark.
    pub steady: BTreeMap<String, Steady>,
    /// The host-clock median of each event-timed `gpu_cuda_*` benchmark (its row holds the
    /// CUDA-event median), in nanoseconds.
    pub host: BTreeMap<String, f64>,
    /// The grid of each grid-stride launch.
    pub grids: Vec<(String, u32)>,
    /// The device's facts.
    pub device: Value,
    /// Whether the run was `--quick`.
    pub quick: bool,
}

/// Runs the CUDA suite, prints the report and writes the JSON file if asked.
pub fn run(args: &GpuArgs) -> Result<()> {
    if args.blocks == Some(0) {
        bail!("--blocks must be at least 1");
    }
    let options = cuda_options(args.cuda_device, false);
    let engine = Engine::new(options.clone()).map_err(|e| {
        anyhow::anyhow!(
            "cannot run `nacre bench gpu --backend cuda`: {e}\n(`--backend cpu` runs the suite \
             with kernels on the CPU)"
        )
    })?;
    let raw_engine = Engine::new(cuda_options(args.cuda_device, true))?;
    let info = cuda::device_info(args.cuda_device)?;
    let cpu = if args.no_cpu {
        None
    } else {
        let options = Options {
            runtime: RuntimeOptions::Cpu(CpuOptions {
                mode: args.mode.cpu_mode(),
            }),
            ..Options::default()
        };
        Some(Place {
            prefix: "gpu_cpu",
            engine: Engine::new(options.clone())?,
            raw: None,
            direct: None,
            options,
            blocks: args.blocks,
        })
    };
    let mut s = Suite {
        call_cfg: if args.quick {
            CallConfig::QUICK
        } else {
            CallConfig::FULL
        },
        cpu_cfg: if args.quick {
            Config::QUICK
        } else {
            Config::FULL
        },
        results: Results::new(args.filter.clone()),
        cuda: Place {
            prefix: "gpu_cuda",
            options: options.clone(),
            engine,
            raw: Some(raw_engine),
            direct: Some(Engine::new(direct_options(args.cuda_device))?),
            blocks: args.blocks,
        },
        cpu,
        on_cuda: true,
        mode: args.mode,
        notes: Vec::new(),
        failures: Vec::new(),
        steady: BTreeMap::new(),
        host: BTreeMap::new(),
        grids: Vec::new(),
    };
    if std::env::var_os(cuda::CACHE_DIR_ENV).is_some_and(|v| !v.is_empty()) {
        s.notes.push(format!(
            "{} is set: kernels compiled by this run are stored in that on-disk cache; the \
             compile benchmarks check that it answered none of them",
            cuda::CACHE_DIR_ENV
        ));
    }
    let started = Instant::now();
    eprintln!(
        "nacre bench gpu --backend cuda on {} ({} multiprocessors, compute capability {}.{}){}: \
         median per call",
        info.name,
        info.multiprocessors,
        info.compute_capability.0,
        info.compute_capability.1,
        if s.cpu.is_some() {
            format!(", the CPU ({} mode) beside it", args.mode.name())
        } else {
            String::new()
        }
    );

    for on_cuda in [true, false] {
        if !on_cuda && s.cpu.is_none() {
            continue;
        }
        s.on_cuda = on_cuda;
        for n in VECTOR_SIZES {
            s.saxpy(n)
                .with_context(|| format!("saxpy over {n} floats"))?;
        }
        for n in VECTOR_SIZES {
            s.vecadd(n)
                .with_context(|| format!("vecadd over {n} floats"))?;
        }
        for n in BLOCKSUM_SIZES {
            s.blocksum(n)
                .with_context(|| format!("block sum over {n} floats"))?;
        }
        for (n, iters) in LOGISTIC {
            s.logistic(n, iters)
                .with_context(|| format!("logistic map, {n} floats × {iters} steps"))?;
        }
        for k in language::kernels() {
            s.language(&k).with_context(|| k.suffix.clone())?;
        }
        s.saxpy_f16().context("saxpy over f16")?;
        s.histogram().context("256-bin histogram")?;
        s.blocksum_warp().context("single-launch warp sum")?;
        s.compact().context("stream compaction")?;
        s.latency().context("launch latency")?;
        s.compile("saxpy", |e| e.compile(run_saxpy_grid_stride))?;
        s.compile("vecadd", |e| e.compile(run_vec_add_grid_stride))?;
        s.compile("blocksum", |e| e.compile(run_block_sum))?;
        s.compile("logistic", |e| e.compile(run_logistic))?;
    }

    let peers = if args.peers {
        let request = Request {
            sizes: VECTOR_SIZES.to_vec(),
            blocksum_sizes: BLOCKSUM_SIZES.to_vec(),
            logistic: LOGISTIC.to_vec(),
            blocks: VECTOR_SIZES
                .iter()
                .chain(LOGISTIC.iter().map(|(n, _)| n))
                .map(|&n| (n, s.cuda.grid(n)))
                .collect::<BTreeMap<_, _>>()
                .into_iter()
                .collect(),
            quick: args.quick,
            filter: peers::peer_filter(&args.filter),
        };
        let runner = Runner::new(args.python.as_deref(), args.peers_script.as_deref());
        let sources = generated_sources(&options)?;
        let dir = peers::TempDir::new()?;
        match runner.run(dir.path(), &sources, &request) {
            Ok(results) => Some(results),
            Err(e) => {
                let kept = dir.keep();
                s.failures.push(format!(
                    "the peers did not run: {e:#} (files kept in {})",
                    kept.display()
                ));
                None
            }
        }
    } else {
        None
    };

    let wall = started.elapsed();
    s.results.done();
    let outcome = Outcome {
        rows: std::mem::take(&mut s.results.rows),
        peers,
        notes: s.notes,
        failures: s.failures,
        steady: s.steady,
        host: s.host,
        grids: s.grids,
        device: device_json(&info),
        quick: args.quick,
    };
    super::super::report::ensure_matched(&args.filter, &outcome.rows)?;
    super::cuda_report::print(&outcome);
    eprintln!(
        "\n{} benchmarks in {:.1} s",
        outcome.rows.len(),
        wall.as_secs_f64()
    );
    if let Some(path) = &args.json {
        let doc = super::cuda_report::to_json(&outcome, args);
        super::super::report::write_document(path, &doc)
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("results written to {}", path.display());
    }
    if let Some(path) = &args.plot {
        let doc = super::cuda_report::to_json(&outcome, args);
        let medians = super::super::plot::medians_of(&doc)?;
        let bars = super::super::plot::bars(&medians);
        super::super::plot::draw(&bars, "nacre bench gpu --backend cuda", path)?;
        eprintln!("plot written to {}", path.display());
    }
    if !outcome.failures.is_empty() {
        bail!(
            "{} failure(s):\n  {}",
            outcome.failures.len(),
            outcome.failures.join("\n  ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cuda_grid_gives_four_elements_per_thread() {
        assert_eq!(cuda_launch_blocks(1 << 20), 1024);
        assert_eq!(cuda_launch_blocks(1 << 24), 16384);
        assert_eq!(cuda_launch_blocks(1 << 18), 256);
        assert_eq!(cuda_launch_blocks(1), 1);
    }

    #[test]
    fn random_inputs_stay_in_their_range() {
        let v = random_in(10_000, 6, 0.05, 0.95);
        assert!(v.iter().all(|x| (0.05..0.95).contains(x)));
        assert_ne!(v[0], v[1]);
        assert_ne!(random_in(4, 1, -1.0, 1.0), random_in(4, 2, -1.0, 1.0));
    }

    #[test]
    fn the_logistic_check_samples_large_arrays_to_the_end() {
        assert_eq!(logistic_checked(5), [0, 1, 2, 3, 4]);
        let big = logistic_checked(1 << 24);
        assert_eq!(big.len(), LOGISTIC_SAMPLE);
        assert_eq!((big[0], big[big.len() - 1]), (0, (1 << 24) - 1));
        assert!(big.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn every_kernel_of_the_suite_prints_as_cuda_c() {
        let sources = generated_sources(&Options::default()).unwrap();
        let kernels: Vec<&str> = sources.iter().map(|(k, _)| *k).collect();
        assert_eq!(kernels, ["saxpy", "vecadd", "blocksum", "logistic", "tiny"]);
        for (kernel, src) in &sources {
            // Every launch of the suite has a constant block: 256 threads, one for `tiny`.
            let threads = if *kernel == "tiny" { 1 } else { BLOCK };
            let head = format!(
                "extern \"C\" __global__ void __launch_bounds__({threads}) {}(",
                src.name
            );
            assert!(src.source.contains(&head), "{kernel}: {}", src.source);
        }
    }

    #[test]
    fn the_peer_script_reads_the_generated_sources() {
        let python = std::env::var_os(peers::PYTHON_ENV).unwrap_or_else(|| "python3".into());
        let probe = std::process::Command::new(&python)
            .arg("--version")
            .output();
        if !probe.is_ok_and(|o| o.status.success()) {
            eprintln!(
                "skipped: no Python interpreter ({})",
                python.to_string_lossy()
            );
            return;
        }
        let dir = peers::TempDir::new().unwrap();
        let sources = generated_sources(&Options::default()).unwrap();
        let src = dir.path().join("nacre_cuda");
        peers::write_sources(&src, &sources).unwrap();
        let script = peers::write_script(&dir.path().join("peers")).unwrap();
        let out = dir.path().join("plan.json");
        let run = std::process::Command::new(&python)
            .arg(&script)
            .arg("--dry-run")
            .arg("--source-dir")
            .arg(&src)
            .arg("--json")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let plan: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        for (kernel, src) in &sources {
            assert_eq!(plan["plan"]["cupy_symbols"][kernel], src.name.as_str());
            assert_eq!(plan["plan"]["cupy_status_word"][kernel], true, "{kernel}");
            assert_eq!(plan["plan"]["cudac_symbols"][kernel], *kernel);
        }
        let options = plan["plan"]["cupy_nvrtc_options"].as_array().unwrap();
        assert!(options.iter().any(|o| o == "--fmad=false"), "{options:?}");
    }

    #[test]
    fn without_a_cuda_device_the_suite_fails_with_a_clear_error() {
        if cuda::probe(0).is_ok() {
            eprintln!("skipped: this machine has a usable CUDA device");
            return;
        }
        let args = GpuArgs {
            backend: super::super::GpuBackend::Cuda,
            quick: true,
            ..GpuArgs::for_tests()
        };
        let e = format!("{:#}", run(&args).unwrap_err());
        assert!(
            e.contains("cannot run `nacre bench gpu --backend cuda`"),
            "{e}"
        );
        assert!(e.contains("--backend cpu"), "{e}");
        assert!(e.to_lowercase().contains("cuda"), "{e}");
    }
}
