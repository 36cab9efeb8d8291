//! The Cranelift backend of Nacre: compiles verified IR modules to native code in memory.
//!
//! [`CraneliftBackend`] implements [`nacre_backend::Backend`]. Every IR function of a module is
//! translated to Cranelift IR with the native calling convention of `nacre-backend` (hidden
//! `status` pointer, traps reported through it), compiled for the host and linked in memory;
//! the entry function is also reachable through an array trampoline that serves
//! [`nacre_backend::Executable::call`].
//!
//! GPU kernels ([`nacre_ir::FuncKind::Kernel`]) are skipped (a GPU runtime compiles them; the
//! entry must be a host function). A kernel launch in host code calls the module's
//! [`nacre_backend::LaunchBinding`] launcher with the kernel's handle, the sizes and arguments in a
//! stack slot and the function's status pointer; a module with launches but without a binding,
//! or without a handle for a launched kernel, is [`BackendError::Unsupported`].
//!
//! Compilation is cheap by design: Cranelift contexts are reused across compilations (one set
//! per worker), and code goes into long-lived JIT modules that are freed in generations once
//! no executable uses them any more.
//!
//! Modules:
//!
//! - [`options`]: [`CraneliftOptions`] and [`OptLevel`].
//! - `target`: the host ISA and its flags.
//! - `abi`: IR types and signatures in Cranelift terms.
//! - `lower`: translation of one IR function.
//! - `trampoline`: array trampolines.
//! - `runtime`: Rust helpers called by generated code.
//! - `generation`: JIT modules and the lifetime of their code memory.
//! - `worker`: the compilation driver and its reusable state.
//! - `executable`: the compiled module handed to the engine.

#![warn(missing_docs)]

mod abi;
mod executable;
mod generation;
mod lower;
pub mod options;
mod runtime;
mod target;
mod trampoline;
mod worker;

#[cfg(test)]
mod tests;

pub use options::{CraneliftOptions, OptLevel};

use nacre_backend::{Backend, BackendError, Executable, Linkage};
use nacre_ir::VerifiedModule;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use worker::{CompileEnv, Worker};

/// The Cranelift backend.
///
/// Thread-safe: concurrent compilations each use their own worker (Cranelift contexts and
/// current JIT module), taken from a pool that grows to the number of threads compiling at
/// once.
pub struct CraneliftBackend {
    env: CompileEnv,
    workers: Mutex<Vec<Worker>>,
}

impl CraneliftBackend {
    /// A backend for the host machine. Fails only if Cranelift does not support the host.
    pub fn new(options: CraneliftOptions) -> Result<CraneliftBackend, BackendError> {
        CraneliftBackend::with_isa_flags(options, &[])
    }

    /// A backend for the host machine with some ISA-specific Cranelift flags overridden, e.g.
    /// `("has_fma", "false")`; tests use this to exercise the code paths of older machines.
    pub(crate) fn with_isa_flags(
        options: CraneliftOptions,
        isa_flags: &[(&str, &str)],
    ) -> Result<CraneliftBackend, BackendError> {
        let isa = target::host_isa(&options, isa_flags)?;
        Ok(CraneliftBackend {
            env: CompileEnv {
                isa,
                options,
                stats: Arc::default(),
            },
            workers: Mutex::new(Vec::new()),
        })
    }

    /// The backend's options.
    pub fn options(&self) -> &CraneliftOptions {
        &self.env.options
    }

    /// How many code generations (JIT modules, each with its own code memory) this backend has
    /// created so far.
    pub fn generations_created(&self) -> usize {
        self.env.stats.created.load(Ordering::Relaxed)
    }

    /// How many generations still hold code memory: those workers compile into, plus retired
    /// ones that some live executable still uses.
    pub fn live_generations(&self) -> usize {
        self.env.stats.live.load(Ordering::Relaxed)
    }

    fn take_worker(&self) -> Worker {
        let mut pool = self
            .workers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        pool.pop().unwrap_or_else(Worker::new)
    }

    fn return_worker(&self, worker: Worker) {
        let mut pool = self
            .workers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        pool.push(worker);
    }
}

impl Backend for CraneliftBackend {
    fn name(&self) -> &'static str {
        target::BACKEND
    }

    fn compile(
        &self,
        module: &VerifiedModule,
        linkage: &Linkage,
    ) -> Result<Arc<dyn Executable>, BackendError> {
        let mut worker = self.take_worker();
        let result = worker.compile(&self.env, module.module(), linkage);
        self.return_worker(worker);
        Ok(Arc::new(result?))
    }
}
