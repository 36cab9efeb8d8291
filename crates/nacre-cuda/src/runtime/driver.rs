//! Loading the CUDA driver library, and the guard around code that calls into it.
//!
//! The driver library (`libcuda.so`) is loaded at run time, on first use. The bindings panic
//! when the library or one of its symbols is missing, so every entry point first checks
//! that the library loads ([`load`]) and runs its driver calls inside [`guard`], which turns a
//! panic into [`CudaError::Library`]: no panic reaches the caller, and none unwinds through
//! the `extern "C"` launcher.

use crate::runtime::error::CudaError;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

/// The oldest driver the runtime works with: CUDA 12.2, the first with the location-based
/// `cuMemPrefetchAsync_v2`.
pub(crate) const MIN_DRIVER_VERSION: i32 = 12020;

/// Checks, once per process, that the driver library can be loaded.
pub(crate) fn load() -> Result<(), CudaError> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: `is_culib_present` only tries to open the library by its usual names; loading
    // the NVIDIA driver library runs no code that could break the process's invariants.
    let present = *PRESENT.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() });
    if present {
        Ok(())
    } else {
        Err(CudaError::LibraryMissing {
            what: "CUDA driver",
            library: "libcuda.so",
            hint: "install the NVIDIA driver, or add the folder that holds libcuda.so.1 to \
                   LD_LIBRARY_PATH",
        })
    }
}

/// Runs `f`, which calls into the driver, turning a panic of the bindings into an error.
pub(crate) fn guard<T>(
    during: &'static str,
    f: impl FnOnce() -> Result<T, CudaError>,
) -> Result<T, CudaError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(CudaError::Library {
            during,
            message: panic_message(payload.as_ref()),
        }),
    }
}

/// The message of a panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_become_errors() {
        let r: Result<(), CudaError> = guard("a test", || panic!("symbol cuFoo not found"));
        let e = r.unwrap_err();
        assert!(matches!(
            e,
            CudaError::Library {
                during: "a test",
                ..
            }
        ));
        assert!(e.to_string().contains("symbol cuFoo not found"), "{e}");
        let ok = guard("a test", || Ok(3)).unwrap();
        assert_eq!(ok, 3);
    }

    #[test]
    fn a_missing_library_is_an_error_not_a_panic() {
        // On a machine with the driver this succeeds; without it, it must say what to do.
        if let Err(e) = load() {
            let msg = e.to_string();
            assert!(
                msg.contains("libcuda.so") && msg.contains("LD_LIBRARY_PATH"),
                "{msg}"
            );
        }
    }
}
