//! The interface between Nacre's engine and its backends.
//!
//! A [`Backend`] compiles a [`VerifiedModule`], with the [`Linkage`] that binds it to this
//! process (extern addresses, the kernel launcher), into an [`Executable`]. An executable can always
//! be called through the uniform, dynamically typed [`Executable::call`]: arguments and result
//! encoded as bits (see [`nacre_ir::semantics`]). Native backends also expose the entry
//! function's machine-code address ([`Executable::native_entry`]), which the engine calls
//! directly with the native calling convention described below.
//!
//! # Native calling convention
//!
//! Every IR function `f(p0, .., pn) -> r` compiles to an `extern "C"` function
//! `f(p0, .., pn, status: *mut u32) -> r` where `bool` is passed as `u8` (0 or 1), integers and
//! floats as themselves and pointers as `usize` addresses; a function that returns nothing
//! returns `void`. On a trap the function stores the nonzero [`Trap::code`] into `*status` and
//! returns an unspecified value; callers (IR calls included) check the status after each call
//! and propagate it. A caller must initialise `*status` to 0.
//!
//! Native code checks the remaining machine stack on entry to every recursive function
//! ([`stack::nacre_stack_ok`]) and traps with [`Trap::StackOverflow`] when too little is left,
//! so deep IR recursion is a trap on every backend, as in the interpreter.

pub mod atomic;
pub mod disk_cache;
#[cfg(feature = "conformance")]
pub mod launch_conformance;
pub mod linkage;
#[cfg(feature = "conformance")]
pub mod local_conformance;
pub mod stack;
#[cfg(feature = "conformance")]
pub mod stack_conformance;

pub use linkage::{DynCall, ExternAddr, LaunchBinding, LaunchDims, LaunchFn, Linkage};
pub use stack::{nacre_stack_ok, StackCheckFn, STACK_MARGIN};

use nacre_ir::{Trap, VerifiedModule};
use std::path::PathBuf;
use std::sync::Arc;
use thiserror::Error;

/// Why a backend could not compile a module.
#[derive(Debug, Error)]
pub enum BackendError {
    /// The module uses something this backend cannot compile.
    #[error("the {backend} backend does not support {what}")]
    Unsupported {
        /// The backend's name.
        backend: &'static str,
        /// What is not supported.
        what: String,
    },
    /// The code generator failed.
    #[error("{backend} code generation failed: {message}")]
    Codegen {
        /// The backend's name.
        backend: &'static str,
        /// The generator's message.
        message: String,
    },
    /// The external C compiler rejected the generated source.
    #[error("C compiler `{compiler}` failed; generated source kept at {}: {message}", source_path.display())]
    CCompiler {
        /// The compiler command.
        compiler: String,
        /// The compiler's diagnostics.
        message: String,
        /// Where the generated source was kept for inspection.
        source_path: PathBuf,
    },
    /// Loading compiled code failed.
    #[error("loading compiled code failed: {0}")]
    Load(String),
    /// A file-system operation failed.
    #[error("I/O error while {during}: {source}")]
    Io {
        /// What was being done.
        during: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl BackendError {
    /// The error for a launch that the linkage's launch binding cannot serve (`why`).
    pub fn unbound_launch(backend: &'static str, why: &str) -> BackendError {
        BackendError::Unsupported {
            backend,
            what: format!(
                "kernel launches without a launch binding ({why}); the kernels must be \
                 prepared by a kernel runtime first (the engine does this)"
            ),
        }
    }

    /// The error for an extern function that the linkage has no address for.
    pub fn unlinked_extern(backend: &'static str, name: &str) -> BackendError {
        BackendError::Unsupported {
            backend,
            what: format!(
                "a call of extern @{name}, which the linkage has no address for; the linkage \
                 comes from the trace that declared it"
            ),
        }
    }
}

/// A compiled module, ready to run its entry function.
pub trait Executable: Send + Sync {
    /// Calls the entry function with arguments encoded as bits; returns the result encoded as
    /// bits (0 when the function returns nothing) or the trap it raised.
    fn call(&self, args: &[u64]) -> Result<u64, Trap>;

    /// The entry function's machine-code address, callable with the native calling convention
    /// (see the crate docs), when this executable is native code.
    fn native_entry(&self) -> Option<*const u8>;

    /// Backend output in text form (generated source or code listing), if the backend keeps it.
    fn listing(&self) -> Option<&str> {
        None
    }
}

/// A backend: turns a verified module into an executable.
pub trait Backend: Send + Sync {
    /// The backend's name, as used in options and benchmark names (`interp`, `cranelift`, `c`).
    fn name(&self) -> &'static str;

    /// Compiles a module, whose externs and launches `linkage` binds. The module's entry
    /// function becomes the executable's entry.
    fn compile(
        &self,
        module: &VerifiedModule,
        linkage: &Linkage,
    ) -> Result<Arc<dyn Executable>, BackendError>;
}
