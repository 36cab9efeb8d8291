//! The engine's error type.

use nacre_backend::BackendError;
use nacre_ir::{Trap, VerifierError};
use nacre_trace::TraceError;
use std::path::PathBuf;
use thiserror::Error;

/// Everything that can go wrong when compiling or calling a traced function.
#[derive(Debug, Error)]
pub enum Error {
    /// Tracing the function failed.
    #[error("tracing failed: {0}")]
    Trace(#[from] TraceError),
    /// The traced IR is malformed (an internal error of the tracer or a pass).
    #[error("internal error, the IR does not verify: {0}")]
    Verify(#[from] VerifierError),
    /// The backend could not compile the IR.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// Allocating, wrapping or freeing an array failed.
    #[error(transparent)]
    Memory(#[from] nacre_runtime::MemoryError),
    /// A kernel runtime could not open its device or prepare the kernels: no usable device
    /// or library, a kernel that cannot be compiled for it, a driver call that failed, a
    /// kernel fault. The error says which, and what to do; [`Error::runtime_error`] gives the
    /// runtime's own error (such as `nacre::gpu::cuda::CudaError`).
    #[error(transparent)]
    Runtime(#[from] nacre_runtime::RuntimeError),
    /// The compiled function raised a runtime error.
    #[error("runtime error: {0}")]
    Trap(#[from] Trap),
    /// Native code reported a status code that no trap has (an internal backend error).
    #[error("internal error: compiled code reported unknown status {0}")]
    UnknownTrap(u32),
    /// A shared borrow (`&Array`, `&[T]`) was passed for a pointer parameter the function may
    /// write through.
    #[error(
        "argument {param} of `{function}` is borrowed shared (`&`), but the function may write \
         through it; pass `&mut` (an `&mut Array` or `&mut [T]`)"
    )]
    ReadOnlyArgument {
        /// The function.
        function: String,
        /// The parameter's position.
        param: usize,
    },
    /// An option has a value that cannot work.
    #[error("invalid option: {0}")]
    InvalidOption(String),
    /// Writing a dump failed.
    #[error("cannot write the dump file {}: {source}", path.display())]
    Dump {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// The kernel runtime's own error behind this one, if it is of type `E` (for example
    /// `nacre::gpu::cuda::CudaError`).
    pub fn runtime_error<E: std::error::Error + 'static>(&self) -> Option<&E> {
        match self {
            Error::Runtime(e) => e.downcast_ref(),
            _ => None,
        }
    }
}
