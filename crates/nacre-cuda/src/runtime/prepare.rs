//! [`prepare_cuda`]: compiles every kernel of a module for a CUDA device and binds the
//! launcher, so that the module's host functions can be compiled by a CPU backend with their
//! launches.
//!
//! The module's kernels are specialised for their launches once
//! ([`specialised_for_launches`]); per kernel: print it as CUDA C (as
//! [`crate::codegen::emit_kernel`] does), then get it from the
//! process's kernel cache, which compiles it with NVRTC on first use
//! ([`crate::runtime::module_cache`]).
//!
//! The module's host code also decides how launches synchronise ([`LaunchSync`]): if no host
//! function of the module reads or writes memory or calls Rust, launches are queued
//! asynchronously and the whole call waits once at its end; otherwise every launch waits for
//! its kernel, so host code between launches sees their results.

use crate::codegen::{print_kernel, CudaDialect};
use crate::runtime::context::Context;
use crate::runtime::disk_cache::DiskCache;
use crate::runtime::error::CudaError;
use crate::runtime::launch::{
    cuda_launch_async, cuda_launch_recorded, cuda_launch_sync, finish_launches,
};
use crate::runtime::memory::CudaDevice;
use crate::runtime::module_cache::{get_or_load, LoadedKernel};
use nacre_backend::{Backend, LaunchBinding, Linkage};
use nacre_ir::{FuncId, FuncKind, Function, InstKind, Module, VerifiedModule};
use nacre_kernel::specialised_for_launches;
use nacre_runtime::{Device, KernelRuntime, PreparedKernels, RuntimeError};
use std::path::PathBuf;
use std::sync::Arc;

/// Settings of the CUDA runtime.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct CudaOptions {
    /// The device's ordinal (0 for the first GPU).
    pub device: u32,
    /// A folder for the on-disk kernel cache; when `None`, the folder named by the
    /// environment variable `NACRE_CUDA_CACHE_DIR`, if set; else no on-disk cache.
    pub cache_dir: Option<PathBuf>,
    /// Compile kernels of safe calls without bounds checks (they still get each pointer's
    /// base and size, unused). Off by default: an unchecked kernel that indexes outside its
    /// arrays writes other arrays' memory or faults the GPU, so turning this on makes the
    /// caller responsible for every kernel index, as with `Engine::compile_unchecked`.
    pub unchecked_kernels: bool,
    /// Compile kernels with fast math ([`crate::codegen::CudaDialect::fast_math`]): the
    /// hardware approximations of `exp`, `ln`, `sin`, ... on `f32`, subnormals flushed to zero,
    /// approximate division and square root. Off by default; the README's accuracy table
    /// gives the errors of both modes.
    pub fast_math: bool,
    /// Queue every launch on the stream as it comes, instead of recording a call's launches
    /// and running them at its end, replayed as a CUDA graph once their shape repeats
    /// ([`crate::runtime::graphs`]; only for modules whose host code touches no memory,
    /// [`LaunchSync::PerCall`]). Off by default: graphs cost a call of N launches one launch
    /// and one wait. Direct launches let the GPU start while the host code still runs.
    pub direct_launches: bool,
}

/// How launches of a module synchronise with the host.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum LaunchSync {
    /// Launches are queued; the call waits for them (and reads their status) once, when it
    /// returns ([`finish_launches`]). Chosen when host code touches no memory.
    PerCall,
    /// Every launch waits for its kernel and reads its status. Chosen when host code loads,
    /// stores or calls Rust functions, which could observe a kernel still running.
    PerLaunch,
}

impl LaunchSync {
    /// The mode the host code of `module` needs.
    pub fn for_module(module: &Module) -> LaunchSync {
        let touches_memory = module
            .functions
            .values()
            .filter(|f| f.kind == FuncKind::Host)
            .flat_map(Function::live_insts)
            .any(|inst| {
                matches!(
                    inst.kind,
                    InstKind::Load(_) | InstKind::Store(..) | InstKind::CallExtern(..)
                )
            });
        if touches_memory {
            LaunchSync::PerLaunch
        } else {
            LaunchSync::PerCall
        }
    }
}

/// A kernel compiled and loaded for a CUDA device, launched through its
/// [`CudaKernel::handle`].
#[derive(Debug)]
pub struct CudaKernel {
    /// The IR function's name.
    pub(crate) name: String,
    /// The loaded module and entry.
    pub(crate) loaded: Arc<LoadedKernel>,
    /// The device.
    pub(crate) device: Arc<CudaDevice>,
    /// Number of IR parameters.
    pub(crate) params: usize,
    /// Positions of the pointer parameters.
    pub(crate) pointer_params: Vec<usize>,
}

impl CudaKernel {
    /// The kernel's (IR function's) name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The `extern "C"` symbol of the generated CUDA C.
    pub fn symbol(&self) -> &str {
        &self.loaded.name
    }

    /// The handle compiled host code passes to the launcher.
    pub fn handle(&self) -> usize {
        self as *const CudaKernel as usize
    }

    pub(crate) fn context(&self) -> &'static Context {
        self.device.context()
    }
}

/// The compiled kernels of a module. Compiled host code holds raw handles to them: keep this
/// alive as long as that code can run.
#[derive(Debug)]
pub struct CudaKernels {
    kernels: Vec<(FuncId, Arc<CudaKernel>)>,
    sync: LaunchSync,
    /// Whether per-call launches are recorded for graphs ([`CudaOptions::direct_launches`] off).
    graphs: bool,
    device: Arc<CudaDevice>,
}

impl CudaKernels {
    /// The kernel compiled for function `id` of the module.
    pub fn get(&self, id: FuncId) -> Option<&Arc<CudaKernel>> {
        self.kernels.iter().find(|(k, _)| *k == id).map(|(_, c)| c)
    }

    /// All compiled kernels with their function ids, in module order.
    pub fn iter(&self) -> impl Iterator<Item = (FuncId, &Arc<CudaKernel>)> {
        self.kernels.iter().map(|(id, k)| (*id, k))
    }

    /// Number of kernels.
    pub fn len(&self) -> usize {
        self.kernels.len()
    }

    /// True if the module had no kernel.
    pub fn is_empty(&self) -> bool {
        self.kernels.is_empty()
    }

    /// How launches synchronise.
    pub fn sync(&self) -> LaunchSync {
        self.sync
    }

    /// The device the kernels run on.
    pub fn device(&self) -> &Arc<CudaDevice> {
        &self.device
    }
}

impl PreparedKernels for CudaKernels {
    /// The binding through which compiled host code launches these kernels.
    fn launch_binding(&self) -> LaunchBinding {
        let launcher = match self.sync {
            LaunchSync::PerCall if self.graphs => cuda_launch_recorded,
            LaunchSync::PerCall => cuda_launch_async,
            LaunchSync::PerLaunch => cuda_launch_sync,
        };
        LaunchBinding {
            launcher,
            handles: self
                .kernels
                .iter()
                .map(|(id, k)| (*id, k.handle()))
                .collect(),
        }
    }

    /// Waits for the calling thread's launches and returns the first trap code they
    /// reported (0 if none); call it when a compiled function that launches these kernels
    /// returns (see [`finish_launches`]).
    fn finish(&self) -> u32 {
        finish_launches()
    }

    /// The thread's last CUDA error ([`crate::runtime::take_last_error`]).
    fn take_error(&self) -> Option<RuntimeError> {
        crate::runtime::take_last_error().map(|e| RuntimeError::device("cuda", e))
    }
}

/// Kernels on a CUDA device, behind the engine's [`KernelRuntime`] interface.
#[derive(Clone, Debug)]
pub struct CudaRuntime {
    options: CudaOptions,
    device: Arc<CudaDevice>,
}

impl CudaRuntime {
    /// Opens the device `options.device` after checking that kernels can run there
    /// ([`crate::runtime::probe`]: driver, device, managed memory, NVRTC).
    pub fn open(options: CudaOptions) -> Result<CudaRuntime, CudaError> {
        crate::runtime::probe(options.device)?;
        let device = CudaDevice::open(options.device)?;
        Ok(CudaRuntime { options, device })
    }

    /// Its options.
    pub fn options(&self) -> &CudaOptions {
        &self.options
    }
}

impl KernelRuntime for CudaRuntime {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn checks_kernels(&self) -> bool {
        !self.options.unchecked_kernels
    }

    fn device(&self) -> Arc<dyn Device> {
        self.device.clone()
    }

    /// Kernels run on the GPU: `linkage` and `host` are not needed (device code calls no
    /// externs).
    fn prepare(
        &self,
        module: &VerifiedModule,
        _linkage: &Linkage,
        _host: &dyn Backend,
    ) -> Result<Arc<dyn PreparedKernels>, RuntimeError> {
        let kernels =
            prepare_cuda(module, &self.options).map_err(|e| RuntimeError::device("cuda", e))?;
        Ok(Arc::new(kernels))
    }
}

/// Compiles every kernel of `module` for the CUDA device `options.device`; give
/// [`CudaKernels::launch_binding`] to the backend that compiles its host functions, and call
/// [`finish_launches`] when a call of them returns.
pub fn prepare_cuda(
    module: &VerifiedModule,
    options: &CudaOptions,
) -> Result<CudaKernels, CudaError> {
    let device = CudaDevice::open(options.device)?;
    let disk = DiskCache::configured(options.cache_dir.as_deref());
    let mut kernels = Vec::new();
    let specialised = specialised_for_launches(module);
    let module = module.module();
    for (id, func) in module.functions.iter() {
        if func.kind != FuncKind::Kernel {
            continue;
        }
        let dialect = CudaDialect {
            fast_math: options.fast_math,
        };
        let src = print_kernel(&specialised, id, dialect).map_err(|source| CudaError::Codegen {
            kernel: func.name.clone(),
            source,
        })?;
        let loaded = get_or_load(device.context(), src, &func.name, disk.as_ref())?;
        let params = &func.signature.params;
        kernels.push((
            id,
            Arc::new(CudaKernel {
                name: func.name.clone(),
                loaded,
                device: device.clone(),
                params: params.len(),
                pointer_params: (0..params.len()).filter(|&i| params[i].is_ptr()).collect(),
            }),
        ));
    }
    Ok(CudaKernels {
        kernels,
        sync: LaunchSync::for_module(module),
        graphs: !options.direct_launches,
        device,
    })
}
