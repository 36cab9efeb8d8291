//! The C tier of step functions: a collapsed step function (see `collapse`), or the step
//! function of a kernel that does not collapse, compiled again, in the background, by the
//! system C compiler, whose optimiser and vectoriser Cranelift lacks.
//!
//! A collapsed grid-stride loop over arrays (saxpy, vector addition) is one load/compute/store
//! per element. Compiled by Cranelift it runs one scalar element per iteration, about a
//! third of the speed of the same loop vectorised by LLVM; the C compiler (GCC or Clang with
//! the C backend's tuning flags, `-O2 -march=native` and, for GCC, the vectoriser's dynamic
//! cost model) vectorises it, with a run-time check that the arrays do not overlap. Compiling C takes tens of milliseconds, a hundred times the
//! Cranelift compile, so it happens off the caller's thread: `request` queues the compiled
//! step module for one background worker and returns at once; launches keep running the
//! backend's code until the C code is ready in the kernel's `Upgrade` slot, then switch to
//! it (see `exec`).
//!
//! The compiler and flags are the engine's C options (those of the C backend). Results are
//! cached for the process by those options and the text of the step module: compiling the
//! same kernel again (another engine, the same function traced again) reuses the C code or
//! joins the compilation in flight, so a kernel is compiled by the C compiler at most once per
//! process and setting. A failure (no C compiler on the machine, a compiler error) is remembered as well
//! and leaves the kernel on the backend's code; `Upgrade::state` says which happened.

use crate::kernel::{native_step, StepFn};
use nacre_backend::{Backend, Executable, Linkage};
use nacre_c::{CBackend, COptions};
use nacre_ir::VerifiedModule;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

/// The most step modules the cache keeps; beyond that the oldest finished entries are
/// forgotten (the kernels that use them keep their code).
const CACHE_LIMIT: usize = 256;

/// Where the C tier of one collapsed step function arrives.
#[derive(Default)]
pub(crate) struct Upgrade {
    ready: OnceLock<Tiered>,
    failed: OnceLock<String>,
}

/// A step function compiled by the C compiler.
#[derive(Clone)]
pub(crate) struct Tiered {
    exec: Arc<dyn Executable>,
    entry: StepFn,
}

impl Tiered {
    /// The native entry.
    pub(crate) fn entry(&self) -> StepFn {
        self.entry
    }

    /// The generated C source.
    pub(crate) fn listing(&self) -> Option<&str> {
        self.exec.listing()
    }
}

/// What became of a kernel's C tier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TierState {
    /// The kernel has no C tier (not collapsible, not grid mode, or compiled by the C
    /// backend or the interpreter already).
    None,
    /// Queued or compiling; launches run the backend's code meanwhile.
    Pending,
    /// Launches run the C compiler's code.
    Ready,
    /// The C compiler could not compile it (the message says why); launches keep running the
    /// backend's code.
    Failed(String),
}

impl Upgrade {
    /// The C code, once compiled.
    pub(crate) fn ready(&self) -> Option<&Tiered> {
        self.ready.get()
    }

    /// The state of the tier.
    pub(crate) fn state(&self) -> TierState {
        if self.ready.get().is_some() {
            TierState::Ready
        } else if let Some(why) = self.failed.get() {
            TierState::Failed(why.clone())
        } else {
            TierState::Pending
        }
    }

    /// Blocks until the tier is ready or failed, or `timeout` passed; returns the state.
    pub(crate) fn wait(&self, timeout: std::time::Duration) -> TierState {
        let start = std::time::Instant::now();
        loop {
            let state = self.state();
            if state != TierState::Pending || start.elapsed() >= timeout {
                return state;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    fn finish(&self, result: &Result<Tiered, String>) {
        match result {
            Ok(t) => {
                let _ = self.ready.set(t.clone());
            }
            Err(why) => {
                let _ = self.failed.set(why.clone());
            }
        }
    }
}

/// A queued compilation: its cache key, the step module with its linkage, and the compiler
/// settings.
type Job = (String, VerifiedModule, Linkage, COptions);

/// A cache entry: compiled, failed, or in flight with the slots that wait for it.
enum Entry {
    Done(Result<Tiered, String>),
    Pending(Vec<Arc<Upgrade>>),
}

/// The worker's shared state.
#[derive(Default)]
struct State {
    cache: HashMap<String, Entry>,
    /// Keys in the order they were first requested (for forgetting the oldest).
    order: VecDeque<String>,
    queue: VecDeque<Job>,
    /// A job taken off the queue is compiling.
    busy: bool,
    worker_started: bool,
}

struct Worker {
    state: Mutex<State>,
    wake: Condvar,
}

fn worker() -> &'static Worker {
    static WORKER: OnceLock<Worker> = OnceLock::new();
    WORKER.get_or_init(|| Worker {
        state: Mutex::new(State::default()),
        wake: Condvar::new(),
    })
}

/// Queues `module` (a verified step module) for the C compiler of `options` (with
/// its tuning flags, `nacre_c::tuning_flags`, and the options' flags after them); its code
/// arrives in `slot`. Returns at once; a module compiled (or failed) before with the same
/// options fills `slot` immediately.
pub(crate) fn request(
    module: VerifiedModule,
    linkage: &Linkage,
    slot: Arc<Upgrade>,
    options: &COptions,
) {
    // The compiled code calls the linkage's externs: the same module text with other
    // addresses is another entry.
    let mut externs: Vec<_> = linkage
        .externs
        .iter()
        .map(|(id, e)| (*id, e.addr))
        .collect();
    externs.sort();
    let key = format!("{options:?}\n{externs:?}\n{}", module.module());
    let w = worker();
    let Ok(mut state) = w.state.lock() else {
        let _ = slot.failed.set("the C tier's worker panicked".to_string());
        return;
    };
    match state.cache.get_mut(&key) {
        Some(Entry::Done(result)) => slot.finish(result),
        Some(Entry::Pending(waiting)) => waiting.push(slot),
        None => {
            forget_oldest(&mut state);
            state.cache.insert(key.clone(), Entry::Pending(vec![slot]));
            state.order.push_back(key.clone());
            state
                .queue
                .push_back((key, module, linkage.clone(), options.clone()));
            if !state.worker_started {
                let spawned = std::thread::Builder::new()
                    .name("nacre-c-tier".to_string())
                    .spawn(run_worker);
                match spawned {
                    Ok(_) => state.worker_started = true,
                    Err(e) => {
                        let why = format!("could not start the C tier's worker thread: {e}");
                        fail_all(&mut state, &why);
                        return;
                    }
                }
            }
            w.wake.notify_one();
        }
    }
}

/// Forgets finished entries, oldest first, while the cache is full.
fn forget_oldest(state: &mut State) {
    let mut scanned = 0;
    while state.cache.len() >= CACHE_LIMIT && scanned < state.order.len() {
        let Some(key) = state.order.pop_front() else {
            break;
        };
        if matches!(state.cache.get(&key), Some(Entry::Pending(_))) {
            state.order.push_back(key);
            scanned += 1;
        } else {
            state.cache.remove(&key);
        }
    }
}

/// Fails every queued job (the worker could not start).
fn fail_all(state: &mut State, why: &str) {
    let result: Result<Tiered, String> = Err(why.to_string());
    for (key, ..) in std::mem::take(&mut state.queue) {
        if let Some(Entry::Pending(waiting)) = state.cache.remove(&key) {
            for slot in waiting {
                slot.finish(&result);
            }
        }
    }
}

/// Whether the C compiler of `options` runs at all (`<compiler> --version`); the reason if
/// not.
fn probe(options: &COptions) -> Result<(), String> {
    let out = std::process::Command::new(&options.compiler)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    match out {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!(
            "the C compiler `{}` does not run ({status}); collapsed loops stay on the \
             backend's code",
            options.compiler
        )),
        Err(e) => Err(format!(
            "no C compiler `{}` ({e}); install one (e.g. gcc) for vectorised collapsed loops",
            options.compiler
        )),
    }
}

/// The worker: compiles queued modules one at a time, forever.
fn run_worker() {
    let w = worker();
    // Whether each compiler runs, asked once.
    let mut available: HashMap<String, Result<(), String>> = HashMap::new();
    loop {
        let job = {
            let Ok(mut state) = w.state.lock() else {
                return;
            };
            loop {
                if let Some(job) = state.queue.pop_front() {
                    state.busy = true;
                    break job;
                }
                state = match w.wake.wait(state) {
                    Ok(s) => s,
                    Err(_) => return,
                };
            }
        };
        let (key, module, linkage, options) = job;
        let runs = available
            .entry(options.compiler.clone())
            .or_insert_with(|| probe(&options));
        let result = match runs {
            Ok(()) => compile(&CBackend::new(options), &module, &linkage),
            Err(why) => Err(why.clone()),
        };
        let Ok(mut state) = w.state.lock() else {
            return;
        };
        if let Some(Entry::Pending(waiting)) = state.cache.remove(&key) {
            for slot in waiting {
                slot.finish(&result);
            }
        }
        state.cache.insert(key, Entry::Done(result));
        state.busy = false;
    }
}

/// Waits until every C tier requested so far is compiled (or failed), at most `timeout`;
/// returns whether the worker is idle. Launches never wait: this is for measurements that
/// must time the final code, with no compiler running beside them.
pub fn wait_for_c_tier(timeout: std::time::Duration) -> bool {
    let start = std::time::Instant::now();
    loop {
        let idle = match worker().state.lock() {
            Ok(state) => state.queue.is_empty() && !state.busy,
            Err(_) => return false,
        };
        if idle {
            return true;
        }
        if start.elapsed() >= timeout {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Compiles one step module with the C backend.
fn compile(
    backend: &CBackend,
    module: &VerifiedModule,
    linkage: &Linkage,
) -> Result<Tiered, String> {
    let exec = backend
        .compile(module, linkage)
        .map_err(|e| e.to_string())?;
    let entry = native_step(exec.as_ref())
        .ok_or_else(|| "the C backend returned no native entry".to_string())?;
    Ok(Tiered { exec, entry })
}
