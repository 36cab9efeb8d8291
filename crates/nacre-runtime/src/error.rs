//! The errors of the memory model and of kernel runtimes.
//!
//! [`MemoryError`]: what can go wrong allocating, wrapping and freeing arrays on a device.
//! [`RuntimeError`]: what a [`crate::KernelRuntime`] reports when it cannot open its device
//! or prepare a module's kernels. Failures *during* a launch (an invalid grid, a freed
//! buffer, a trap inside a kernel) are [`nacre_ir::Trap`]s reported through the launch's
//! status word, like every runtime error of compiled code.

use nacre_backend::BackendError;
use nacre_kernel::KernelError;
use thiserror::Error;

/// An error of device memory.
#[derive(Debug, Error)]
pub enum MemoryError {
    /// The device could not provide the memory.
    #[error(
        "out of memory: could not allocate {bytes} bytes on device `{device}`; free arrays \
         that are no longer needed or process the data in smaller batches"
    )]
    OutOfMemory {
        /// The size asked for, in bytes.
        bytes: usize,
        /// The device's name.
        device: String,
    },

    /// A GPU device refused an allocation larger than the memory it can still hold (a device
    /// with managed memory could over-subscribe, but kernels would then run from evicted
    /// pages, orders of magnitude slower).
    #[error(
        "out of GPU memory: {bytes} bytes asked for on device `{device}`, which can still \
         hold {available} bytes; free arrays that are no longer needed or process the data \
         in smaller batches"
    )]
    ExceedsFreeMemory {
        /// The device's name.
        device: String,
        /// The size asked for, in bytes.
        bytes: usize,
        /// What the device could still hold, in bytes.
        available: usize,
    },

    /// The size of an array in bytes does not fit the address space.
    #[error(
        "an array of {len} elements of {elem_bytes} bytes each is too large for the address \
         space; split the data into smaller arrays"
    )]
    TooLarge {
        /// The number of elements asked for.
        len: usize,
        /// The size of one element in bytes.
        elem_bytes: usize,
    },

    /// An address that is not the base of a live buffer was released: the buffer was freed
    /// already, or never registered.
    #[error(
        "{addr:#x} is not the base of a live array: it was freed already (double free) or \
         was never allocated or wrapped through Nacre"
    )]
    NotRegistered {
        /// The address.
        addr: usize,
    },

    /// Memory that overlaps a live array was registered again (for example by wrapping the
    /// same memory twice).
    #[error(
        "the memory at {addr:#x} ({bytes} bytes) overlaps the live array at {existing:#x} \
         ({existing_bytes} bytes); use that array instead of registering the memory again"
    )]
    Overlap {
        /// Base of the memory being registered.
        addr: usize,
        /// Its size in bytes.
        bytes: usize,
        /// Base of the live array it overlaps.
        existing: usize,
        /// Size of that array in bytes.
        existing_bytes: usize,
    },

    /// A pointer given to [`crate::Array::wrap`] is null or not aligned for its element
    /// type.
    #[error(
        "cannot wrap {addr:#x} as an array of {len} elements: the pointer must be non-null \
         and aligned to {align} bytes"
    )]
    BadPointer {
        /// The address.
        addr: usize,
        /// The number of elements.
        len: usize,
        /// The alignment the element type needs.
        align: usize,
    },

    /// The device is not present or could not be initialised.
    #[error("GPU device `{device}` is not available: {reason}")]
    DeviceUnavailable {
        /// The device's name.
        device: String,
        /// Why, and what to do about it.
        reason: String,
    },
}

/// Why a kernel runtime could not open its device or prepare a module's kernels.
#[derive(Debug, Error)]
pub enum RuntimeError {
    /// Device memory failed.
    #[error(transparent)]
    Memory(#[from] MemoryError),

    /// A kernel pass cannot handle a kernel.
    #[error(transparent)]
    Kernel(#[from] KernelError),

    /// The host backend could not compile code the runtime generated for a kernel.
    #[error("compiling kernel @{kernel} for the {runtime} runtime failed: {source}")]
    Backend {
        /// The runtime's name.
        runtime: &'static str,
        /// The kernel's name.
        kernel: String,
        /// The backend's error.
        #[source]
        source: BackendError,
    },

    /// The runtime's own failure (a driver, a device compiler), as the runtime's error type:
    /// [`RuntimeError::downcast_ref`] recovers it.
    #[error("{runtime}: {source}")]
    Device {
        /// The runtime's name.
        runtime: &'static str,
        /// The runtime's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl RuntimeError {
    /// Wraps a runtime's own error.
    pub fn device(
        runtime: &'static str,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> RuntimeError {
        RuntimeError::Device {
            runtime,
            source: Box::new(error),
        }
    }

    /// The runtime's own error, if this is one of type `E`.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        match self {
            RuntimeError::Device { source, .. } => source.downcast_ref(),
            _ => None,
        }
    }
}
