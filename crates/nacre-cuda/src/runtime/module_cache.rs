//! The process's kernel cache: each kernel is compiled once per device and process.
//!
//! A kernel is identified by its device and its generated CUDA C (symbol and source text,
//! which encodes every specialisation). The first request compiles it with NVRTC for the
//! device's architecture (or loads the cubin from the on-disk cache), loads it with
//! `cuModuleLoadData` and keeps the module and function handle; later requests, from any
//! engine or thread, get the loaded kernel. Concurrent first requests for the same kernel
//! compile it once: the others wait for it.
//!
//! Loaded kernels are shared ([`Arc`]) by the cache and the compiled functions that launch
//! them; [`clear_kernel_cache`] empties the cache (benchmarks use it to measure cold
//! compiles), and a module is unloaded when the last compiled function using it is dropped.

use crate::codegen::KernelSource;
use crate::nvrtc::{self, Arch};
use crate::runtime::context::Context;
use crate::runtime::disk_cache::{self, DiskCache};
use crate::runtime::driver;
use crate::runtime::error::{driver_error, CudaError};
use crate::runtime::last_error::set_last_error;
use crate::runtime::stats::{self, Counter};
use cudarc::driver::sys;
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};
use std::time::Instant;

/// A kernel loaded on a device.
pub(crate) struct LoadedKernel {
    /// The kernel's symbol.
    pub name: String,
    /// The module, unloaded on drop.
    module: sys::CUmodule,
    /// The kernel's entry.
    pub function: sys::CUfunction,
    /// Bytes of the kernel's static shared arrays.
    pub static_shared: u32,
    /// The dynamic shared memory the function accepts now
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`): 48 KiB less the static arrays until
    /// a launch asks for more ([`LoadedKernel::allow_dynamic_shared`]).
    dynamic_allowed: AtomicU32,
    /// Held while raising `dynamic_allowed`.
    raising: Mutex<()>,
    /// The device's context.
    ctx: &'static Context,
}

// SAFETY: module and function handles are driver objects usable from any thread that has
// their context current (every user binds it first); they are only read after creation.
unsafe impl Send for LoadedKernel {}
// SAFETY: as above.
unsafe impl Sync for LoadedKernel {}

/// An attribute of a loaded function, as a `u32`.
fn function_attribute(
    ctx: &'static Context,
    function: sys::CUfunction,
    attribute: sys::CUfunction_attribute,
) -> Result<u32, CudaError> {
    let mut value = 0i32;
    // SAFETY: `function` is loaded in `ctx`, which is current; writes one int.
    ctx.check("cuFuncGetAttribute", unsafe {
        sys::cuFuncGetAttribute(&mut value, attribute, function)
    })?;
    Ok(value.max(0) as u32)
}

impl LoadedKernel {
    /// Lets launches of the kernel use `bytes` of dynamic shared memory: above what it accepts
    /// (48 KiB in all by default), raises the function's
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` (the opt-in; the caller checked
    /// `bytes` against the device's maximum). The context must be current.
    pub(crate) fn allow_dynamic_shared(&self, bytes: u32) -> Result<(), CudaError> {
        if bytes <= self.dynamic_allowed.load(Ordering::Acquire) {
            return Ok(());
        }
        let _raising = self.raising.lock().unwrap_or_else(|e| e.into_inner());
        if bytes <= self.dynamic_allowed.load(Ordering::Acquire) {
            return Ok(());
        }
        let attribute = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        // SAFETY: `function` is loaded in the current context; the value is a byte count the
        // device allows (checked by the caller against its opt-in maximum).
        self.ctx.check("cuFuncSetAttribute", unsafe {
            sys::cuFuncSetAttribute(self.function, attribute, bytes as i32)
        })?;
        self.dynamic_allowed.store(bytes, Ordering::Release);
        Ok(())
    }
}

impl std::fmt::Debug for LoadedKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedKernel")
            .field("name", &self.name)
            .field("device", &self.ctx.info.ordinal)
            .finish()
    }
}

impl Drop for LoadedKernel {
    fn drop(&mut self) {
        // A lost context cannot unload; the module goes with the process.
        let _ = driver::guard("cuModuleUnload", || {
            self.ctx.bind()?;
            // SAFETY: the module was loaded by `load` and is unloaded once, here; no launch
            // can use it any more (every user held this `Arc`).
            self.ctx.check("cuModuleUnload", unsafe {
                sys::cuModuleUnload(self.module)
            })
        });
    }
}

/// A cache entry: filled once, by the first request.
type Slot = Arc<Mutex<Option<Arc<LoadedKernel>>>>;

/// The cache key: the device's ordinal, the kernel's symbol and its source.
type Key = (u32, String, String);

fn cache() -> MutexGuard<'static, HashMap<Key, Slot>> {
    static CACHE: LazyLock<Mutex<HashMap<Key, Slot>>> = LazyLock::new(Mutex::default);
    // Every update is a single map operation: a poisoned lock is still consistent.
    CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Empties the kernel cache: the next request for any kernel compiles it again (or loads it
/// from the on-disk cache). Compiled functions keep the kernels they hold.
pub fn clear_kernel_cache() {
    cache().clear();
}

/// Number of kernels in the cache.
pub fn cached_kernels() -> usize {
    cache().len()
}

/// The architecture NVRTC targets for a device.
pub(crate) fn arch_of(ctx: &Context) -> Arch {
    let (major, minor) = ctx.info.compute_capability;
    Arch { major, minor }
}

/// The kernel `src` loaded on `ctx`'s device: from the cache, or compiled (or read from
/// `disk`) and loaded now.
pub(crate) fn get_or_load(
    ctx: &'static Context,
    src: KernelSource,
    kernel: &str,
    disk: Option<&DiskCache>,
) -> Result<Arc<LoadedKernel>, CudaError> {
    let key: Key = (ctx.info.ordinal, src.name.clone(), src.source.clone());
    let slot = cache().entry(key).or_default().clone();
    let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(k) = slot.as_ref() {
        stats::add(Counter::CacheHits, 1);
        return Ok(k.clone());
    }
    let cubin = cubin_for(ctx, &src, kernel, disk)?;
    let loaded = Arc::new(load(ctx, &src.name, kernel, &cubin)?);
    *slot = Some(loaded.clone());
    Ok(loaded)
}

/// The cubin of `src`: from the on-disk cache if it has it, else compiled by NVRTC (and
/// stored there). Cache failures are counted and recorded as the thread's last error; the
/// compile goes on without the cache.
fn cubin_for(
    ctx: &Context,
    src: &KernelSource,
    kernel: &str,
    disk: Option<&DiskCache>,
) -> Result<Vec<u8>, CudaError> {
    let arch = arch_of(ctx);
    nvrtc::available().map_err(CudaError::NvrtcUnavailable)?;
    let disk_key = match disk {
        Some(cache) => nvrtc::version()
            .ok()
            .map(|v| (cache, disk_cache::key(src, arch, v))),
        None => None,
    };
    let cache_failed = |e: CudaError| {
        stats::add(Counter::DiskCacheErrors, 1);
        set_last_error(e);
    };
    if let Some((cache, key)) = &disk_key {
        match cache.load(key) {
            Ok(Some(cubin)) => {
                stats::add(Counter::DiskCacheHits, 1);
                return Ok(cubin);
            }
            Ok(None) => {}
            Err(e) => cache_failed(e),
        }
    }
    let start = Instant::now();
    let cubin = nvrtc::compile_cubin(src, arch).map_err(|source| CudaError::Compile {
        kernel: kernel.to_string(),
        source,
    })?;
    stats::add(Counter::Compiles, 1);
    stats::add(
        Counter::CompileNanos,
        u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX),
    );
    if let Some((cache, key)) = &disk_key {
        if let Err(e) = cache.store(key, &cubin) {
            cache_failed(e);
        }
    }
    Ok(cubin)
}

/// Loads `cubin` on `ctx`'s device and finds its entry `symbol`.
fn load(
    ctx: &'static Context,
    symbol: &str,
    kernel: &str,
    cubin: &[u8],
) -> Result<LoadedKernel, CudaError> {
    let load_error = |e: CudaError| match e {
        CudaError::Driver {
            call,
            name,
            description,
            ..
        } => CudaError::ModuleLoad {
            kernel: kernel.to_string(),
            device: ctx.name(),
            call,
            name,
            description,
        },
        e => e,
    };
    let c_symbol = CString::new(symbol).map_err(|_| {
        load_error(driver_error(
            "cuModuleGetFunction",
            1,
            "CUDA_ERROR_INVALID_VALUE".into(),
            format!("the kernel symbol {symbol:?} contains a NUL byte"),
        ))
    })?;
    driver::guard("loading a kernel", || {
        ctx.bind()?;
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: `cubin` is a complete cubin image produced by NVRTC (or read back from the
        // cache, where the stored key guarantees the same bytes); the driver copies it.
        ctx.check("cuModuleLoadData", unsafe {
            sys::cuModuleLoadData(&mut module, cubin.as_ptr().cast())
        })
        .map_err(load_error)?;
        let mut function: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: `module` was just loaded; the name is NUL-terminated.
        let found = ctx
            .check("cuModuleGetFunction", unsafe {
                sys::cuModuleGetFunction(&mut function, module, c_symbol.as_ptr())
            })
            .map_err(load_error);
        let attributes = found.and_then(|()| {
            use sys::CUfunction_attribute as F;
            let attr = |a: F| function_attribute(ctx, function, a).map_err(load_error);
            Ok((
                attr(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
                attr(F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?,
            ))
        });
        let (static_shared, dynamic_allowed) = match attributes {
            Ok(a) => a,
            Err(e) => {
                // SAFETY: loaded above, not shared with anyone.
                let _ = unsafe { sys::cuModuleUnload(module) };
                return Err(e);
            }
        };
        Ok(LoadedKernel {
            name: symbol.to_string(),
            module,
            function,
            static_shared,
            dynamic_allowed: AtomicU32::new(dynamic_allowed),
            raising: Mutex::new(()),
            ctx,
        })
    })
}
