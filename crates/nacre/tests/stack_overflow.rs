//! Deep recursion through `call` is `Err(Error::Trap(Trap::StackOverflow))` on every backend,
//! on the process's main thread and on a spawned thread with a small stack (the limit follows
//! the thread), and recursion within the limit returns the right answer.
//!
//! This test has its own `main` (`harness = false` in Cargo.toml) because the main thread's
//! stack is set up differently from a spawned thread's (its size comes from the resource
//! limit, and it grows on demand), and the standard harness runs every test on a spawned
//! thread. Each case runs in a child process (this binary with [`CASE_ENV`] set), so a
//! regression, which overflows the machine stack and aborts the process, shows as a failed
//! case. Arguments: a substring filter (or a name with `--exact`), and `--list`, as the
//! standard harness takes them; other flags are ignored.

use nacre::prelude::*;
use nacre::{Error, Trap};
use std::process::{Command, ExitCode};
use std::time::Instant;

/// Set in a child process to the name of the case it runs.
const CASE_ENV: &str = "NACRE_STACK_OVERFLOW_CASE";

/// Deeper than any thread's stack holds in native frames.
const DEEP: u64 = 10_000_000;

/// The stack of the small thread (256 KiB).
const SMALL_STACK: usize = 256 * 1024;

/// The recursion depth, one frame per unit of `n`.
#[jit]
fn depth(n: Val<u64>) -> Val<u64> {
    if n == 0 {
        return Val::new(0u64);
    }
    call(depth, (n - 1,)) + 1
}

/// Where a case calls the compiled function.
#[derive(Copy, Clone)]
enum Place {
    MainThread,
    SmallThread,
}

impl Place {
    fn name(self) -> &'static str {
        match self {
            Place::MainThread => "main_thread",
            Place::SmallThread => "small_thread",
        }
    }
}

/// Every case: a backend and a place.
fn cases() -> Vec<(String, BackendKind, Place)> {
    let mut cases = Vec::new();
    for kind in BackendKind::ALL {
        for place in [Place::MainThread, Place::SmallThread] {
            let name = format!("deep_recursion_traps_on_{}_{}", place.name(), kind.name());
            cases.push((name, kind, place));
        }
    }
    cases
}

/// `f(n)` as the caller sees it.
fn outcome(f: &Compiled<(Val<u64>,), Val<u64>>, n: u64) -> Result<u64, String> {
    match f.call(n) {
        Ok(r) => Ok(r),
        Err(Error::Trap(Trap::StackOverflow)) => Err("stack overflow".into()),
        Err(e) => Err(format!("another error: {e}")),
    }
}

/// The checks of one case, in this process: small depths return `n`, [`DEEP`] traps, and the
/// function still works after the trap.
fn run_case(kind: BackendKind, place: Place) -> Result<(), String> {
    let engine = Engine::new(Options::with_backend(kind)).map_err(|e| e.to_string())?;
    let f = engine.compile(depth).map_err(|e| e.to_string())?;
    let checks = move || -> Result<(), String> {
        for n in [0, 1, 1000] {
            if outcome(&f, n) != Ok(n) {
                return Err(format!("depth({n}) = {:?}", outcome(&f, n)));
            }
        }
        match outcome(&f, DEEP) {
            Err(e) if e == "stack overflow" => {}
            other => return Err(format!("depth({DEEP}) = {other:?}, not a stack overflow")),
        }
        match outcome(&f, 10) {
            Ok(10) => Ok(()),
            other => Err(format!("depth(10) after the trap = {other:?}")),
        }
    };
    match place {
        Place::MainThread => {
            if std::thread::current().name() != Some("main") {
                return Err("not on the main thread".into());
            }
            checks()
        }
        Place::SmallThread => std::thread::Builder::new()
            .stack_size(SMALL_STACK)
            .spawn(checks)
            .map_err(|e| e.to_string())?
            .join()
            .map_err(|_| "the small thread panicked".to_string())?,
    }
}

fn main() -> ExitCode {
    if let Ok(name) = std::env::var(CASE_ENV) {
        let Some((_, kind, place)) = cases().into_iter().find(|(n, _, _)| *n == name) else {
            eprintln!("no case {name}");
            return ExitCode::FAILURE;
        };
        return match run_case(kind, place) {
            Ok(()) => {
                println!("case ok");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        };
    }

    let args: Vec<String> = std::env::args().skip(1).collect();
    let exact = args.iter().any(|a| a == "--exact");
    let filter = args.iter().find(|a| !a.starts_with('-'));
    let all = cases();
    let selected: Vec<_> = all
        .iter()
        .filter(|(name, _, _)| match filter {
            None => true,
            Some(f) if exact => name == f,
            Some(f) => name.contains(f.as_str()),
        })
        .collect();
    if args.iter().any(|a| a == "--list") {
        for (name, _, _) in &selected {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }

    let start = Instant::now();
    let exe = std::env::current_exe().expect("the test binary's path");
    println!("\nrunning {} tests", selected.len());
    let mut failures = Vec::new();
    for (name, _, _) in &selected {
        let out = Command::new(&exe).env(CASE_ENV, name).output();
        let failure = match out {
            Err(e) => Some(format!("could not run the child: {e}")),
            Ok(out) if out.status.success() && out.stdout.starts_with(b"case ok") => None,
            Ok(out) => Some(format!(
                "the child exited with {}:\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )),
        };
        println!(
            "test {name} ... {}",
            if failure.is_some() { "FAILED" } else { "ok" }
        );
        if let Some(f) = failure {
            failures.push((name, f));
        }
    }
    if !failures.is_empty() {
        println!("\nfailures:\n");
        for (name, f) in &failures {
            println!("---- {name} ----\n{f}\n");
        }
    }
    println!(
        "\ntest result: {}. {} passed; {} failed; 0 ignored; 0 measured; {} filtered out; finished in {:.2}s\n",
        if failures.is_empty() { "ok" } else { "FAILED" },
        selected.len() - failures.len(),
        failures.len(),
        all.len() - selected.len(),
        start.elapsed().as_secs_f64()
    );
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
