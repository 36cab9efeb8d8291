//! `nacre bench cpu`: the CPU benchmark suite.
//!
//! The workloads and their routines are `nacre_corpus::bench` (shared with the criterion
//! bench `benches/cpu.rs`); this module drives them with the sampler of
//! [`super::measure`] and prints the report of [`super::report`]. Values are median
//! nanoseconds per call. How each group is measured:
//!
//! - `trace_F`: `nacre::trace_module(&f)`, the capture dropped outside the timing.
//! - `ir_F`: `nacre::optimize(capture, &PassOptions::default())`; the capture is cloned before
//!   the clock starts.
//! - `comp_B_F`: `backend.compile(&verified, &linkage)` with `backend = nacre::make_backend(..)` made
//!   once per backend (steady state: the backend has compiled before); the callable is dropped
//!   outside the timing.
//! - `comp_cranelift_add_fresh_backend`: the same compile on a backend made just before (not
//!   timed), i.e. a backend's first compile; `backend_new_B`: `nacre::make_backend` alone.
//! - `e2e_B_F`: trace + optimise + `backend.compile`, by hand (no engine, so no cache), the
//!   backend made once beforehand.
//! - `exec_B_F`: `Compiled::call` on a function compiled by `Engine::compile`; `exec_rust_F`:
//!   the hand-written Rust through a black-boxed function pointer. Inputs and outputs go
//!   through `black_box`; fast calls are timed in batches.
//! - `tiered_first_call_F`: `engine.compile(f)` + the first call on a fresh tiered engine per
//!   sample (creating it is not timed; `tiered_engine_new` measures that), one call per
//!   sample, waiting for the background tier between samples.

use super::measure::{measure, measure_batched, Config, Stats};
use super::report::{self, Results};
use anyhow::{Context, Result};
use clap::Args;
use nacre::ir::PassOptions;
use nacre::{BackendKind, Options};
use nacre_backend::Backend;
use nacre_corpus::bench::{self as suite, Batch, Bencher};
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `nacre bench cpu`.
#[derive(Args, Debug)]
pub struct CpuArgs {
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
}

/// The `Bencher` that samples with [`measure`] and collects the results.
struct Harness {
    config: Config,
    results: Results,
}

impl Harness {
    fn record(&mut self, name: &str, stats: Stats) {
        self.results.record(name, stats, "");
    }
}

impl Bencher for Harness {
    fn wants(&self, name: &str) -> bool {
        self.results.wants(name)
    }

    fn iter<O, R: FnMut() -> O>(&mut self, name: &str, routine: R) {
        let stats = measure(&self.config, routine);
        self.record(name, stats);
    }

    fn iter_batched<I, O, S: FnMut() -> I, R: FnMut(I) -> O>(
        &mut self,
        name: &str,
        batch: Batch,
        setup: S,
        routine: R,
    ) {
        let stats = measure_batched(&self.config, batch, setup, routine);
        self.record(name, stats);
    }
}

fn backend(kind: BackendKind) -> Result<std::sync::Arc<dyn Backend>> {
    nacre::make_backend(&Options::with_backend(kind))
        .with_context(|| format!("creating the {} backend", kind.name()))
}

/// Where the time of Cranelift's first compile goes: making the backend
/// (`backend_new_cranelift`), and compiling `add` on a backend that has not compiled before
/// (`comp_cranelift_add_fresh_backend`, the backend made outside the timing).
fn first_compile_rows(h: &mut Harness) -> Result<()> {
    let kind = BackendKind::Cranelift;
    let name = format!("backend_new_{}", kind.name());
    if h.wants(&name) {
        h.iter_batched(&name, Batch::Small, || (), |()| backend(kind));
    }
    let name = format!("comp_{}_add_fresh_backend", kind.name());
    if h.wants(&name) {
        let capture = nacre::trace_module(&suite::add)?;
        let verified = nacre::optimize(capture.module, &PassOptions::default())?;
        let linkage = capture.linkage;
        h.iter_batched(
            &name,
            Batch::Small,
            || backend(kind),
            |b| b.map(|b| (b.compile(&verified, &linkage), b)),
        );
    }
    Ok(())
}

/// Runs the suite, prints the report and writes the JSON file if asked.
pub fn run(args: &CpuArgs) -> Result<()> {
    let mut h = Harness {
        config: if args.quick {
            Config::QUICK
        } else {
            Config::FULL
        },
        results: Results::new(args.filter.clone()),
    };
    let started = Instant::now();
    eprintln!(
        "nacre bench cpu ({} run): median of samples per benchmark",
        if args.quick { "quick" } else { "full" }
    );

    suite::trace_suite(&mut h).context("trace benchmarks")?;
    suite::ir_suite(&mut h).context("ir benchmarks")?;
    for kind in BackendKind::ALL {
        let b = backend(kind)?;
        suite::comp_suite(&mut h, kind.name(), |m, l| Ok(b.compile(m, l)?))
            .with_context(|| format!("comp_{} benchmarks", kind.name()))?;
    }
    first_compile_rows(&mut h).context("first-compile benchmarks")?;
    for kind in BackendKind::ALL {
        let b = backend(kind)?;
        suite::e2e_suite(&mut h, kind.name(), |m, l| Ok(b.compile(m, l)?))
            .with_context(|| format!("e2e_{} benchmarks", kind.name()))?;
    }
    suite::exec_suite(&mut h).context("exec benchmarks")?;
    suite::tiered_suite(&mut h).context("tiered benchmarks")?;

    h.results.done();
    report::ensure_matched(&args.filter, &h.results.rows)?;
    let wall = started.elapsed();
    report::print(&h.results.rows);
    eprintln!(
        "\n{} benchmarks in {:.1} s",
        h.results.rows.len(),
        wall.as_secs_f64()
    );
    if let Some(path) = &args.json {
        report::write_json(path, &h.results.rows)
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("results written to {}", path.display());
    }
    if let Some(path) = &args.plot {
        let medians = report::medians(&h.results.rows);
        super::plot::draw(&super::plot::bars(&medians), "nacre bench cpu", path)?;
        eprintln!("plot written to {}", path.display());
    }
    Ok(())
}
