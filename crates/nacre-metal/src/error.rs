//! [`MetalError`]: what can go wrong in generating, compiling and preparing Metal kernels.
//!
//! Failures *during* a launch (an invalid grid, a freed buffer, a trap inside a kernel, a GPU
//! error) are [`nacre_ir::Trap`]s reported through the launch's status word, like every runtime
//! error of compiled code.

use nacre_backend::BackendError;
use nacre_kernel::AddressSpaceError;
use thiserror::Error;

/// An error of the Metal backend.
#[derive(Debug, Error)]
pub enum MetalError {
    /// A pointer of a kernel would need two address spaces, or a kernel calls something that
    /// cannot be specialised for the GPU.
    #[error("Metal address spaces: {0}")]
    AddressSpace(Box<AddressSpaceError>),

    /// The MSL printer cannot express the kernel (an `f64`, an external call, a launch in
    /// device code, irreducible control flow, ...).
    #[error("{0}")]
    Codegen(#[from] BackendError),

    /// A kernel has more parameters than Metal has buffer slots.
    #[error(
        "kernel @{kernel} has {params} parameters, but Metal binds at most {max} (one slot \
         is the status word); pass fewer arrays and scalars"
    )]
    TooManyArguments {
        /// The kernel.
        kernel: String,
        /// Its parameter count.
        params: usize,
        /// The most it may have.
        max: usize,
    },

    /// A kernel's shared arrays do not fit in threadgroup memory.
    #[error(
        "kernel @{kernel} allocates {bytes} bytes of shared arrays, more than the {max} bytes \
         of threadgroup memory Metal guarantees; use smaller shared arrays"
    )]
    SharedMemory {
        /// The kernel.
        kernel: String,
        /// The bytes its shared arrays need.
        bytes: u64,
        /// The limit.
        max: u64,
    },

    /// Metal runs only on macOS.
    #[error(
        "the Metal backend needs macOS with a Metal GPU, and this is {os}; run kernels with \
         the CPU backend (or CUDA on an NVIDIA machine)"
    )]
    NotMacOs {
        /// The operating system this was built for.
        os: &'static str,
    },

    /// No Metal device could be opened.
    #[error("no Metal device is available ({reason}); run kernels with the CPU backend")]
    NoDevice {
        /// What failed.
        reason: String,
    },

    /// The Metal compiler rejected a kernel's MSL.
    #[error("the Metal compiler rejected kernel @{kernel}: {log}")]
    Compile {
        /// The kernel.
        kernel: String,
        /// The compiler's log.
        log: String,
    },

    /// A kernel with warp collectives on a GPU whose SIMD-groups are not 32 wide.
    #[error(
        "kernel @{kernel} uses warp operations, which Nacre defines over 32 lanes, but this \
         GPU's SIMD-groups are {width} wide: run it on the CPU or CUDA backend"
    )]
    SimdWidth {
        /// The kernel.
        kernel: String,
        /// The pipeline's execution width.
        width: u32,
    },

    /// A compiled kernel could not be turned into a pipeline.
    #[error("creating the Metal pipeline of kernel @{kernel} failed: {message}")]
    Pipeline {
        /// The kernel.
        kernel: String,
        /// What Metal reported.
        message: String,
    },

    /// The device module built for Metal is not valid IR (an internal error).
    #[error("internal error: the Metal device module of kernel @{kernel} is invalid: {message}")]
    Internal {
        /// The kernel (or the first kernel of the module).
        kernel: String,
        /// The verifier's message.
        message: String,
    },
}

impl From<AddressSpaceError> for MetalError {
    fn from(e: AddressSpaceError) -> MetalError {
        MetalError::AddressSpace(Box::new(e))
    }
}
