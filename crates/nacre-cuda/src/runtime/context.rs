//! The process-wide CUDA state of one device: driver initialisation, the device's primary
//! context, its properties ([`DeviceInfo`]), and the stream work is queued on.
//!
//! A `Context` is created on first use of a device ordinal and lives for the rest of the
//! process (compiled kernels and arrays hold references to it). Every thread that calls into
//! the runtime makes the primary context current first (`Context::bind`).
//!
//! Work is queued on the *per-thread default stream* (`CU_STREAM_PER_THREAD`): each host
//! thread has its own stream, so compiled functions called from several threads at once
//! queue and synchronise independently.
//!
//! A fault inside a kernel leaves a CUDA context unusable; the first such error is recorded
//! (`Context::check`) and every later operation fails at once with
//! [`CudaError::ContextLost`] instead of calling the driver again.

use crate::runtime::driver::{self, MIN_DRIVER_VERSION};
use crate::runtime::error::{check, CudaError};
use cudarc::driver::sys;
use std::ffi::{c_int, CStr};
use std::sync::{Mutex, OnceLock};

pub use nacre_runtime::LaunchLimits;

/// What the runtime knows about a CUDA device.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct DeviceInfo {
    /// The device's ordinal.
    pub ordinal: u32,
    /// The product name (`NVIDIA H200`).
    pub name: String,
    /// Compute capability (major, minor): (9, 0) for Hopper.
    pub compute_capability: (u32, u32),
    /// Global memory in bytes.
    pub total_memory: usize,
    /// Number of multiprocessors.
    pub multiprocessors: u32,
    /// Whether the device supports managed memory (required).
    pub managed_memory: bool,
    /// Whether host and device can access managed memory concurrently; prefetching is used
    /// only then (without it the driver migrates all managed memory at each launch).
    pub concurrent_managed_access: bool,
    /// The largest launch the device accepts.
    pub limits: LaunchLimits,
    /// The driver's CUDA version (13000 for 13.0).
    pub driver_version: i32,
}

impl DeviceInfo {
    /// The name arrays on this device are recorded under (`cuda:N`).
    pub fn device_name(&self) -> String {
        device_name(self.ordinal)
    }
}

/// The name of CUDA device `ordinal` in the size table and in errors.
pub fn device_name(ordinal: u32) -> String {
    format!("cuda:{ordinal}")
}

/// The per-thread default stream (`CU_STREAM_PER_THREAD` in `cuda.h`).
pub(crate) fn per_thread_stream() -> sys::CUstream {
    0x2 as sys::CUstream
}

/// The CUDA state of one device.
pub(crate) struct Context {
    /// The device's properties.
    pub info: DeviceInfo,
    /// The device's primary context, retained for the life of the process.
    ctx: sys::CUcontext,
    /// The first sticky error, once one happened.
    lost: OnceLock<String>,
}

// SAFETY: a `CUcontext` is a driver handle that the driver lets any thread make current and
// use; the other fields are plain data or thread-safe.
unsafe impl Send for Context {}
// SAFETY: as above; the context is never mutated through `&Context` except via `OnceLock`.
unsafe impl Sync for Context {}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("info", &self.info)
            .field("lost", &self.lost.get())
            .finish()
    }
}

/// Initialises the driver (once per process; a failure is retried on the next call, so the
/// error stays typed and a later call can succeed).
fn init_driver() -> Result<(), CudaError> {
    driver::load()?;
    static DONE: OnceLock<()> = OnceLock::new();
    if DONE.get().is_some() {
        return Ok(());
    }
    driver::guard("cuInit", || {
        // SAFETY: `cuInit` takes no pointers; flags must be 0.
        check("cuInit", unsafe { sys::cuInit(0) })?;
        let mut version: c_int = 0;
        // SAFETY: writes one int.
        check("cuDriverGetVersion", unsafe {
            sys::cuDriverGetVersion(&mut version)
        })?;
        if version < MIN_DRIVER_VERSION {
            return Err(CudaError::DriverTooOld {
                found: version,
                needed: MIN_DRIVER_VERSION,
            });
        }
        Ok(())
    })?;
    let _ = DONE.set(());
    Ok(())
}

/// The number of CUDA devices.
pub fn device_count() -> Result<u32, CudaError> {
    init_driver()?;
    driver::guard("cuDeviceGetCount", || {
        let mut count: c_int = 0;
        // SAFETY: writes one int.
        check("cuDeviceGetCount", unsafe {
            sys::cuDeviceGetCount(&mut count)
        })?;
        Ok(count.max(0) as u32)
    })
}

impl Context {
    /// The context of device `ordinal`, created on first use.
    pub(crate) fn get(ordinal: u32) -> Result<&'static Context, CudaError> {
        static CONTEXTS: Mutex<Vec<&'static Context>> = Mutex::new(Vec::new());
        let mut contexts = CONTEXTS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = contexts.iter().find(|c| c.info.ordinal == ordinal) {
            return Ok(c);
        }
        let ctx = Context::create(ordinal)?;
        // One per device for the life of the process: compiled kernels and arrays refer to
        // it by `&'static`.
        let ctx: &'static Context = Box::leak(Box::new(ctx));
        contexts.push(ctx);
        Ok(ctx)
    }

    fn create(ordinal: u32) -> Result<Context, CudaError> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(CudaError::NoDevice { ordinal, count });
        }
        driver::guard("opening the CUDA device", || {
            let mut dev: sys::CUdevice = 0;
            // SAFETY: writes one device handle; the ordinal is below the device count.
            check("cuDeviceGet", unsafe {
                sys::cuDeviceGet(&mut dev, ordinal as c_int)
            })?;
            let attr = |a: sys::CUdevice_attribute| -> Result<i32, CudaError> {
                let mut v: c_int = 0;
                // SAFETY: writes one int; `dev` is a valid device.
                check("cuDeviceGetAttribute", unsafe {
                    sys::cuDeviceGetAttribute(&mut v, a, dev)
                })?;
                Ok(v)
            };
            use sys::CUdevice_attribute as A;
            let u = |v: i32| v.max(0) as u32;
            let mut name_buf = [0u8; 256];
            // SAFETY: the buffer holds `len` bytes; the driver writes a NUL-terminated name.
            check("cuDeviceGetName", unsafe {
                sys::cuDeviceGetName(name_buf.as_mut_ptr().cast(), name_buf.len() as c_int, dev)
            })?;
            let name = CStr::from_bytes_until_nul(&name_buf)
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_else(|_| String::from_utf8_lossy(&name_buf).into_owned());
            let mut total: usize = 0;
            // SAFETY: writes one size.
            check("cuDeviceTotalMem", unsafe {
                sys::cuDeviceTotalMem_v2(&mut total, dev)
            })?;
            let mut version: c_int = 0;
            // SAFETY: writes one int.
            check("cuDriverGetVersion", unsafe {
                sys::cuDriverGetVersion(&mut version)
            })?;
            let info = DeviceInfo {
                ordinal,
                name,
                compute_capability: (
                    u(attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?),
                    u(attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?),
                ),
                total_memory: total,
                multiprocessors: u(attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?),
                managed_memory: attr(A::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)? != 0,
                concurrent_managed_access: attr(A::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)?
                    != 0,
                limits: LaunchLimits {
                    max_threads_per_block: u(attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?),
                    max_block: [
                        u(attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?),
                        u(attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?),
                        u(attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?),
                    ],
                    max_grid: [
                        u(attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?),
                        u(attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?),
                        u(attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?),
                    ],
                    max_shared_bytes: u(attr(
                        A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                    )?),
                },
                driver_version: version,
            };
            if !info.managed_memory {
                return Err(CudaError::Unsupported {
                    device: device_name(ordinal),
                    what: format!(
                        "{} does not support managed memory, which Nacre's arrays live in",
                        info.name
                    ),
                });
            }
            let mut ctx: sys::CUcontext = std::ptr::null_mut();
            // SAFETY: writes one context handle; `dev` is a valid device. The primary context
            // is retained for the life of the process and never released.
            check("cuDevicePrimaryCtxRetain", unsafe {
                sys::cuDevicePrimaryCtxRetain(&mut ctx, dev)
            })?;
            Ok(Context {
                info,
                ctx,
                lost: OnceLock::new(),
            })
        })
    }

    /// The device's name (`cuda:N`).
    pub(crate) fn name(&self) -> String {
        self.info.device_name()
    }

    /// Fails if an earlier fault made the context unusable.
    pub(crate) fn usable(&self) -> Result<(), CudaError> {
        match self.lost.get() {
            None => Ok(()),
            Some(cause) => Err(CudaError::ContextLost {
                ordinal: self.info.ordinal,
                cause: cause.clone(),
            }),
        }
    }

    /// Makes the primary context current on the calling thread (a cheap driver call), after
    /// checking that it is still usable.
    pub(crate) fn bind(&self) -> Result<(), CudaError> {
        self.usable()?;
        // SAFETY: `self.ctx` is a retained primary context, valid for the process's life.
        self.check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(self.ctx) })
    }

    /// Checks a driver result like [`check`], and records a sticky error so that later
    /// operations fail fast.
    pub(crate) fn check(&self, call: &'static str, result: sys::CUresult) -> Result<(), CudaError> {
        check(call, result).inspect_err(|e| {
            if e.is_sticky() {
                let _ = self.lost.set(e.to_string());
            }
        })
    }
}

/// The properties of CUDA device `ordinal` (initialising the driver and the device's context
/// on first use).
pub fn device_info(ordinal: u32) -> Result<DeviceInfo, CudaError> {
    Ok(Context::get(ordinal)?.info.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names() {
        assert_eq!(device_name(0), "cuda:0");
        assert_eq!(device_name(3), "cuda:3");
    }

    #[test]
    fn opening_a_device_never_panics() {
        // Without a GPU this is an error that says why; with one, device 0 opens.
        match device_info(0) {
            Ok(info) => {
                assert!(info.managed_memory);
                assert!(info.limits.max_threads_per_block >= 1);
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
        // An ordinal no machine has.
        assert!(device_info(10_000).is_err());
    }
}
