//! The `nacre` command: runs the demo (default), benchmarks and stage dumps.

mod bench;
mod demo;
mod dump;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// Nacre, a tracing JIT compiler for Rust.
#[derive(Parser)]
#[command(name = "nacre", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Trace, compile and run the demo functions and check their results (the default).
    Demo {
        /// Backend: interp, cranelift (default) or c.
        #[arg(long, default_value = "cranelift")]
        backend: String,
    },
    /// Run a benchmark suite: `nacre bench cpu [--quick] [--json FILE]`,
    /// `nacre bench gpu --backend cpu [--mode serial|grid] [--quick] [--json FILE]` or
    /// `nacre bench gpu --backend cuda [--peers] [--no-cpu] [--quick] [--json FILE]`.
    Bench {
        /// The suite to run.
        #[command(subcommand)]
        suite: bench::Suite,
    },
    /// Compile a corpus function or kernel with stage dumps on: `nacre dump gcd`,
    /// `nacre dump block_sum --stages ir,backend --backend c --dir dumps/`. Programs get the
    /// same dumps from the `NACRE_DUMP` environment variable (e.g. `NACRE_DUMP=ir:/tmp/d`).
    Dump {
        /// The corpus function or kernel (an unknown name lists them all).
        name: String,
        /// Stages: trace, passes, ir, backend, or all (comma-separated).
        #[arg(long, default_value = "all")]
        stages: String,
        /// Backend: interp, cranelift (default) or c.
        #[arg(long, default_value = "cranelift")]
        backend: String,
        /// Write one file per function and stage into this folder instead of standard error.
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
    },
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Demo {
        backend: "cranelift".into(),
    }) {
        Command::Demo { backend } => demo::run(&backend),
        Command::Bench { suite } => bench::run(&suite),
        Command::Dump {
            name,
            stages,
            backend,
            dir,
        } => dump::run(&name, &backend, &stages, dir),
    }
}
