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
    /// Preparing the kernels of a module, or GPU memory, failed.
    #[error(transparent)]
    Gpu(#[from] nacre_gpu::GpuError),
    /// The CUDA runtime failed: no usable device or library, a kernel that did not compile,
    /// a driver call that failed, a kernel fault, or a launch with an array of another
    /// device. The error says which, and what to do.
    #[error("CUDA: {0}")]
    Cuda(#[from] nacre_cuda::runtime::CudaError),
    /// The Metal backend failed: not on macOS, no Metal device, a kernel that cannot be
    /// expressed in MSL or did not compile. The error says which, and what to do.
    #[error("Metal: {0}")]
    Metal(#[from] nacre_metal::MetalError),
    /// The compiled function raised a runtime error.
    #[error("runtime error: {0}")]
    Trap(#[from] Trap),
    /// Native code reported a status code that no trap has (an internal backend error).
    #[error("internal error: compiled code reported unknown status {0}")]
    UnknownTrap(u32),
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
