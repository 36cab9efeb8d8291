//! [`CudaError`]: everything that can go wrong in the CUDA runtime, and the mapping of CUDA
//! driver result codes onto it.
//!
//! Driver calls are checked by `check`: a failing call becomes a [`CudaError`] that names the
//! call and carries CUDA's own name and description of the result. Results that leave the
//! context unusable (a kernel that faulted) become [`CudaError::KernelFault`]; an allocation
//! failure becomes [`CudaError::OutOfMemory`].

use crate::nvrtc::NvrtcError;
use nacre_backend::BackendError;
use std::path::PathBuf;
use thiserror::Error;

/// An error of the CUDA runtime.
#[derive(Debug, Error)]
pub enum CudaError {
    /// A CUDA library could not be loaded.
    #[error(
        "the {what} library ({library}) was not found: {hint}; or run kernels on the CPU \
         (DeviceKind::Cpu, or DeviceKind::best_available())"
    )]
    LibraryMissing {
        /// What the library is ("CUDA driver", "NVRTC").
        what: &'static str,
        /// The file looked for.
        library: &'static str,
        /// How to make it available.
        hint: &'static str,
    },

    /// The installed driver is older than the runtime needs.
    #[error(
        "the CUDA driver supports CUDA {}.{} but Nacre needs CUDA {}.{} or newer; update the \
         NVIDIA driver",
        found / 1000, (found % 1000) / 10, needed / 1000, (needed % 1000) / 10
    )]
    DriverTooOld {
        /// The driver's CUDA version (`cuDriverGetVersion`, e.g. 13000 for 13.0).
        found: i32,
        /// The oldest version that works.
        needed: i32,
    },

    /// There is no CUDA device with the requested ordinal.
    #[error(
        "there is no CUDA device {ordinal}: the driver reports {count} device(s){}",
        if *count == 0 { "; check `nvidia-smi`, or run kernels on the CPU" } else { "" }
    )]
    NoDevice {
        /// The ordinal asked for.
        ordinal: u32,
        /// How many devices the driver reports.
        count: u32,
    },

    /// The device lacks a capability the runtime needs.
    #[error("CUDA device {device} cannot be used: {what}")]
    Unsupported {
        /// The device's name (`cuda:N`).
        device: String,
        /// What is missing, and what to do.
        what: String,
    },

    /// A driver call failed.
    #[error("{call} failed: {name} ({description})")]
    Driver {
        /// The driver function (`cuMemAllocManaged`, ...).
        call: &'static str,
        /// The raw result code.
        code: u32,
        /// CUDA's name for the result (`CUDA_ERROR_INVALID_VALUE`).
        name: String,
        /// CUDA's description of the result.
        description: String,
    },

    /// A kernel faulted (illegal address, illegal instruction, ...). CUDA errors of this kind
    /// are sticky: the context cannot be used again in this process.
    #[error(
        "a kernel faulted on the GPU ({call} reported {name}: {description}); the CUDA \
         context is now unusable and every later GPU operation of this process will fail, so \
         restart the process. A fault usually means a kernel indexed an array out of bounds \
         (kernels index unchecked); run the program under `compute-sanitizer` to find the access"
    )]
    KernelFault {
        /// The driver call that reported the fault.
        call: &'static str,
        /// The raw result code.
        code: u32,
        /// CUDA's name for the result (`CUDA_ERROR_ILLEGAL_ADDRESS`).
        name: String,
        /// CUDA's description of the result.
        description: String,
    },

    /// The context was lost to an earlier fault; the operation was not attempted.
    #[error(
        "the CUDA context of device cuda:{ordinal} is unusable after an earlier fault \
         ({cause}); restart the process"
    )]
    ContextLost {
        /// The device's ordinal.
        ordinal: u32,
        /// The earlier fault.
        cause: String,
    },

    /// The device has not enough memory for an allocation.
    #[error(
        "out of GPU memory: {bytes} bytes asked for on {device}, which has {available} bytes \
         available; free arrays that are no longer needed or process the data in smaller \
         batches"
    )]
    OutOfMemory {
        /// The device's name (`cuda:N`).
        device: String,
        /// The size asked for.
        bytes: usize,
        /// What the device could still hold (free memory less managed memory already promised).
        available: usize,
    },

    /// Printing a kernel as CUDA C failed.
    #[error("kernel @{kernel} cannot be compiled for CUDA: {source}")]
    Codegen {
        /// The kernel's name.
        kernel: String,
        /// The printer's error.
        #[source]
        source: BackendError,
    },

    /// NVRTC could not compile a kernel.
    #[error("compiling kernel @{kernel} with NVRTC failed: {source}")]
    Compile {
        /// The kernel's name.
        kernel: String,
        /// NVRTC's error.
        #[source]
        source: NvrtcError,
    },

    /// NVRTC is not usable (checked before the first compile).
    #[error("NVRTC, the CUDA run-time compiler, is not usable: {0}")]
    NvrtcUnavailable(#[source] NvrtcError),

    /// The driver rejected a compiled kernel.
    #[error(
        "loading the compiled kernel @{kernel} on {device} failed: {call} reported {name} \
         ({description}); the NVRTC in use may be newer than the driver supports: update the \
         driver or use an NVRTC that matches it"
    )]
    ModuleLoad {
        /// The kernel's name.
        kernel: String,
        /// The device's name (`cuda:N`).
        device: String,
        /// The driver call (`cuModuleLoadData`, `cuModuleGetFunction`).
        call: &'static str,
        /// CUDA's name for the result.
        name: String,
        /// CUDA's description of the result.
        description: String,
    },

    /// A kernel argument points into memory that is not on this CUDA device.
    #[error(
        "argument {arg} of kernel @{kernel} points into an array on device `{device}`, not on \
         {expected}; allocate the arrays that kernels use with Array::alloc_on or \
         Array::copy_on and the engine's device (Engine::device)"
    )]
    ForeignMemory {
        /// The kernel's name.
        kernel: String,
        /// The argument's position.
        arg: usize,
        /// The device that owns the memory (`cpu`, `cuda:1`, ...).
        device: String,
        /// The device the kernel runs on (`cuda:N`).
        expected: String,
    },

    /// The on-disk kernel cache could not be used (compilation goes on without it).
    #[error("the CUDA kernel cache at {} cannot be used: {source}", path.display())]
    DiskCache {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },

    /// The CUDA bindings panicked (a symbol missing from an old driver library).
    #[error(
        "the CUDA library misbehaved during {during}: {message}; the driver library may be \
         too old or damaged, update the NVIDIA driver"
    )]
    Library {
        /// What was being done.
        during: &'static str,
        /// The panic's message.
        message: String,
    },
}

impl CudaError {
    /// True if the error leaves the CUDA context unusable for the rest of the process.
    pub fn is_sticky(&self) -> bool {
        matches!(
            self,
            CudaError::KernelFault { .. } | CudaError::ContextLost { .. }
        )
    }
}

/// How a driver result code is reported.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum ResultClass {
    /// Success.
    Success,
    /// The context is unusable from now on.
    Sticky,
    /// The device ran out of memory.
    OutOfMemory,
    /// Any other failure.
    Other,
}

/// `CUDA_ERROR_OUT_OF_MEMORY`.
const OUT_OF_MEMORY: u32 = 2;

/// Result codes after which the context cannot be used again (CUDA documents them as leaving
/// the process in an inconsistent state): ECC uncorrectable (214), NVLink uncorrectable
/// (220), contained error (226), illegal address (700), launch timeout (702), device-side
/// assert (710), hardware stack error (714), illegal instruction (715), misaligned address
/// (716), invalid address space (717), invalid program counter (718), launch failed (719),
/// tensor memory leak (721), external device (911).
const STICKY: [u32; 14] = [
    214, 220, 226, 700, 702, 710, 714, 715, 716, 717, 718, 719, 721, 911,
];

/// Classifies a raw `CUresult` code.
pub(crate) fn classify(code: u32) -> ResultClass {
    match code {
        0 => ResultClass::Success,
        OUT_OF_MEMORY => ResultClass::OutOfMemory,
        c if STICKY.contains(&c) => ResultClass::Sticky,
        _ => ResultClass::Other,
    }
}

/// Builds the error for a failed driver call from its raw code and CUDA's name and
/// description of it.
pub(crate) fn driver_error(
    call: &'static str,
    code: u32,
    name: String,
    description: String,
) -> CudaError {
    match classify(code) {
        ResultClass::Sticky => CudaError::KernelFault {
            call,
            code,
            name,
            description,
        },
        _ => CudaError::Driver {
            call,
            code,
            name,
            description,
        },
    }
}

/// Checks the result of the driver call `call`.
pub(crate) fn check(
    call: &'static str,
    result: cudarc::driver::sys::CUresult,
) -> Result<(), CudaError> {
    match result.result() {
        Ok(()) => Ok(()),
        Err(e) => {
            let (name, description) = describe(&e);
            Err(driver_error(call, e.0 as u32, name, description))
        }
    }
}

/// CUDA's name and description of a result (falling back to the number where the driver
/// cannot say).
fn describe(e: &cudarc::driver::result::DriverError) -> (String, String) {
    let code = e.0 as u32;
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("CUDA error {code}"));
    let description = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "no description".to_string());
    (name, description)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_codes_are_classified() {
        assert_eq!(classify(0), ResultClass::Success);
        assert_eq!(classify(2), ResultClass::OutOfMemory);
        assert_eq!(classify(700), ResultClass::Sticky);
        assert_eq!(classify(719), ResultClass::Sticky);
        assert_eq!(classify(1), ResultClass::Other);
        assert_eq!(classify(701), ResultClass::Other);
    }

    #[test]
    fn faults_are_sticky_and_say_so() {
        let e = driver_error(
            "cuStreamSynchronize",
            700,
            "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
            "an illegal memory access was encountered".into(),
        );
        assert!(e.is_sticky());
        let msg = e.to_string();
        assert!(msg.contains("cuStreamSynchronize"), "{msg}");
        assert!(msg.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{msg}");
        assert!(msg.contains("restart the process"), "{msg}");
        assert!(msg.contains("compute-sanitizer"), "{msg}");
    }

    #[test]
    fn failed_calls_name_the_call_and_the_result() {
        let e = driver_error(
            "cuMemAllocManaged",
            1,
            "CUDA_ERROR_INVALID_VALUE".into(),
            "invalid argument".into(),
        );
        assert!(!e.is_sticky());
        assert_eq!(
            e.to_string(),
            "cuMemAllocManaged failed: CUDA_ERROR_INVALID_VALUE (invalid argument)"
        );
    }

    #[test]
    fn messages_say_what_to_do() {
        let old = CudaError::DriverTooOld {
            found: 11080,
            needed: 12020,
        };
        assert_eq!(
            old.to_string(),
            "the CUDA driver supports CUDA 11.8 but Nacre needs CUDA 12.2 or newer; update the \
             NVIDIA driver"
        );
        let none = CudaError::NoDevice {
            ordinal: 0,
            count: 0,
        };
        assert!(none
            .to_string()
            .contains("reports 0 device(s); check `nvidia-smi`"));
        let oom = CudaError::OutOfMemory {
            device: "cuda:0".into(),
            bytes: 10,
            available: 5,
        };
        assert!(oom.to_string().contains("smaller batches"));
        let foreign = CudaError::ForeignMemory {
            kernel: "k".into(),
            arg: 1,
            device: "cpu".into(),
            expected: "cuda:0".into(),
        };
        let msg = foreign.to_string();
        assert!(
            msg.contains("device `cpu`") && msg.contains("Engine::device"),
            "{msg}"
        );
    }
}
