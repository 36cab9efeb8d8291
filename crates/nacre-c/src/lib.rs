//! Nacre's C backend.
//!
//! [`CBackend`] prints a verified module as readable, deterministic C99 ([`emit_c`]), compiles
//! it with the system C compiler into a shared library ([`COptions`] says how) and loads it
//! ([`CExecutable`]). The generated functions follow the native calling convention of
//! [`nacre_backend`]: every IR function takes a hidden last `uint32_t *status` parameter,
//! `bool` is `uint8_t`, a trap stores its code into `*status` and returns, and callers check
//! the status after every call.
//!
//! GPU kernels are skipped (a GPU runtime compiles them; the entry must be a host function). A
//! kernel launch in host code fills local arrays with the sizes and the arguments' bits and
//! calls the linkage's [`nacre_backend::LaunchBinding`] launcher through a loader-filled pointer,
//! with the kernel's handle from a loader-filled table and the function's status pointer; a
//! module with launches but without a binding, or without a handle for a launched kernel, is
//! [`nacre_backend::BackendError::Unsupported`].
//!
//! The crate is organised one concept per module:
//!
//! - [`dialect`]: the target-specific spelling of C-family source ([`Dialect`], [`CDialect`]),
//!   so that CUDA C and Metal printers can share the rest, GPU kernels included.
//! - [`error`]: what a dialect refuses to spell ([`DialectError`]).
//! - [`function`]: the printer of one IR function, shared by all dialects and by host and
//!   device code.
//! - [`atomic`], [`collective`]: what a dialect is asked to spell for atomics and for warp and
//!   block collectives.
//! - [`helpers`], [`literal`], [`moves`], [`names`]: helper functions, constants, parallel
//!   moves at jumps, C identifiers.
//! - [`emit`]: the source of a whole module for the host ([`emit_c`]; [`emit_c_structured`]
//!   prints it without `goto`, as the Metal backend prints kernels).
//! - [`kernel`]: the source of one GPU kernel and the device functions it calls, in any
//!   dialect that implements the GPU hooks ([`emit_kernel_source`]).
//! - [`stack_check`]: the stack check that recursive host functions open with.
//! - [`compile`]: running the C compiler and loading the library.
//! - [`code_cache`]: the folder of compiled libraries kept between processes.
//! - [`executable`]: the loaded library as an [`nacre_backend::Executable`].

#![warn(missing_docs)]

pub mod atomic;
pub mod code_cache;
pub mod collective;
pub mod compile;
pub mod dialect;
pub mod emit;
pub mod error;
pub mod executable;
pub mod function;
pub mod helpers;
pub mod kernel;
pub mod literal;
pub mod moves;
pub mod names;
pub mod stack_check;
pub mod vector_math;

#[cfg(test)]
mod tests;

pub use code_cache::{CodeCacheStats, CACHE_DIR_ENV};
pub use compile::{compiler_available, tuning_flags, COptions};
pub use dialect::{
    CDialect, Dialect, KernelHead, KernelParam, KernelPrototype, LoopGuard, StructuredCDialect,
};
pub use emit::{
    emit_c, emit_c_structured, ARRAY_ENTRY_SYMBOL, ENTRY_SYMBOL, EXTERNS_SYMBOL,
    KERNEL_HANDLES_SYMBOL, LAUNCHER_SYMBOL,
};
pub use error::DialectError;
pub use executable::CExecutable;
pub use function::Side;
pub use kernel::{emit_kernel_source, KernelCode};

use nacre_backend::{Backend, BackendError, Executable, Linkage};
use nacre_ir::transform::version_loops;
use nacre_ir::VerifiedModule;
use std::sync::Arc;

/// The C backend.
#[derive(Clone, Debug, Default)]
pub struct CBackend {
    options: COptions,
    structured: bool,
}

impl CBackend {
    /// A backend that compiles with `options`.
    pub fn new(options: COptions) -> CBackend {
        CBackend {
            options,
            structured: false,
        }
    }

    /// The same backend printing control flow without `goto` ([`emit_c_structured`]), so
    /// that host code exercises the structured printer that the Metal backend relies on.
    pub fn with_structured_control_flow(mut self, on: bool) -> CBackend {
        self.structured = on;
        self
    }

    /// The compiler options.
    pub fn options(&self) -> &COptions {
        &self.options
    }

    /// Compiles a module into a [`CExecutable`] (what [`Backend::compile`] returns, with its
    /// concrete type).
    pub fn compile_module(
        &self,
        verified: &VerifiedModule,
        linkage: &Linkage,
    ) -> Result<CExecutable, BackendError> {
        // Loop nests whose inner loop may not run get a copy that it always does, which the
        // C compiler's outer-loop vectoriser takes (see `version_loops`).
        let verified = &version_loops(verified.clone());
        let module = verified.module();
        // Checked first: a module whose launches cannot be bound is not worth compiling.
        let launch = emit::launch_table(module, linkage)?;
        let externs = module
            .externs
            .iter()
            .map(|(id, e)| {
                linkage
                    .extern_addr(id)
                    .map(|at| at.addr)
                    .ok_or_else(|| BackendError::unlinked_extern("c", &e.name))
            })
            .collect::<Result<Vec<usize>, _>>()?;
        let source = if self.structured {
            emit_c_structured(verified)?
        } else {
            emit_c(verified)?
        };
        let library = compile::compile_and_load(&self.options, &source)?;
        CExecutable::new(library, module, source, &externs, launch)
    }
}

impl Backend for CBackend {
    fn name(&self) -> &'static str {
        "c"
    }

    fn compile(
        &self,
        module: &VerifiedModule,
        linkage: &Linkage,
    ) -> Result<Arc<dyn Executable>, BackendError> {
        Ok(Arc::new(self.compile_module(module, linkage)?))
    }
}
