//! `nacre bench`: the benchmark suites of the `nacre` command.
//!
//! Each suite is a subcommand: `nacre bench cpu` ([`cpu`]) measures the tracing, optimising,
//! compiling and execution times of the CPU backends; `nacre bench gpu` ([`gpu`]) the seed's
//! GPU benchmark (kernel launches and kernel compiles) on a backend of the GPU runtime,
//! against hand-written rayon on the CPU, or on CUDA against PyTorch, CuPy and Triton;
//! `nacre bench query` ([`query`]) TPC-H queries in DataFusion with and without compiled
//! pipelines. The
//! sampling ([`measure`]) and the JSON report ([`report`], with the seed's Nautilus figures of
//! [`seed_figures`] for the CPU suite) are shared.

pub mod cpu;
pub mod gpu;
pub mod measure;
pub mod plot;
pub mod query;
pub mod report;
pub mod seed_figures;

use anyhow::Result;
use clap::Subcommand;

/// The benchmark suites.
#[derive(Subcommand, Debug)]
pub enum Suite {
    /// Tracing, IR, compile, end-to-end, execution and tiered-compilation times of the CPU
    /// backends (interp, cranelift, c), against hand-written Rust and Nautilus's figures.
    Cpu(cpu::CpuArgs),
    /// The GPU benchmark (the seed's kernels and compiles, the kernel-language, atomics, warp
    /// and tiled kernels) on a GPU runtime backend: cpu (against hand-written rayon and, with
    /// --peers, PoCL) or cuda (with the CPU beside it and, with --peers, PyTorch, CuPy and
    /// Triton); metal is not in this build.
    Gpu(gpu::GpuArgs),
    /// TPC-H queries (Q1, Q6) generated in memory: DataFusion alone, DataFusion with Nacre's
    /// compiled pipelines, and a hand-fused Rust loop, with compile times.
    Query(query::QueryArgs),
    /// Draws a committed JSON report's ratios to its peers as an SVG bar chart.
    Plot(PlotArgs),
}

/// `nacre bench plot`.
#[derive(clap::Args, Debug)]
pub struct PlotArgs {
    /// The JSON report (of `nacre bench cpu|gpu --json`).
    pub report: std::path::PathBuf,
    /// The SVG file to write.
    pub svg: std::path::PathBuf,
    /// The chart's title (the report's path by default).
    #[arg(long)]
    pub title: Option<String>,
}

/// The plot of a suite that draws none.
const NO_PLOT: &Option<std::path::PathBuf> = &None;

/// Runs a benchmark suite.
pub fn run(suite: &Suite) -> Result<()> {
    let (json, plot) = match suite {
        Suite::Cpu(args) => (&args.json, &args.plot),
        Suite::Gpu(args) => (&args.json, &args.plot),
        Suite::Query(args) => (&args.json, NO_PLOT),
        Suite::Plot(args) => {
            return plot::from_report(&args.report, &args.svg, args.title.as_deref())
        }
    };
    for path in [json, plot].into_iter().flatten() {
        report::check_writable(path)?;
    }
    match suite {
        Suite::Cpu(args) => cpu::run(args),
        Suite::Gpu(args) => gpu::run(args),
        Suite::Query(args) => query::run(args),
        Suite::Plot(_) => Ok(()),
    }
}
