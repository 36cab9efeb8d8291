//! `nacre bench`: the benchmark suites of the `nacre` command.
//!
//! Each suite is a subcommand: `nacre bench cpu` ([`cpu`]) measures the tracing, optimising,
//! compiling and execution times of the CPU backends; `nacre bench gpu` ([`gpu`]) the seed's
//! GPU benchmark (kernel launches and kernel compiles) on a backend of the GPU runtime,
//! against hand-written rayon on the CPU, or on CUDA against PyTorch, CuPy and Triton. The
//! sampling ([`measure`]) and the JSON report ([`report`], with the seed's Nautilus figures of
//! [`seed_figures`] for the CPU suite) are shared.

pub mod cpu;
pub mod gpu;
pub mod measure;
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
    /// The seed's GPU benchmark (saxpy, vecadd, block sum, logistic map launches and kernel
    /// compiles) on a GPU runtime backend: cpu (against hand-written rayon) or cuda (with the
    /// CPU beside it and, with --peers, PyTorch, CuPy and Triton); metal is not in this build.
    Gpu(gpu::GpuArgs),
}

/// Runs a benchmark suite.
pub fn run(suite: &Suite) -> Result<()> {
    let json = match suite {
        Suite::Cpu(args) => &args.json,
        Suite::Gpu(args) => &args.json,
    };
    if let Some(path) = json {
        report::check_writable(path)?;
    }
    match suite {
        Suite::Cpu(args) => cpu::run(args),
        Suite::Gpu(args) => gpu::run(args),
    }
}
