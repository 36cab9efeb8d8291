//! The `nacre` command: runs the demo (default), benchmarks and stage dumps.

mod bench;
mod demo;

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
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Demo {
        backend: "cranelift".into(),
    }) {
        Command::Demo { backend } => demo::run(&backend),
        Command::Bench { suite } => bench::run(&suite),
    }
}
