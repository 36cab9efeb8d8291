//! [`prepare_metal`]: compiles every kernel of a module for Metal and binds the launcher, so
//! that the module's host functions (compiled by a CPU backend) launch them.
//!
//! Per kernel: MSL from [`emit_msl`], then a pipeline from the process-wide [`KernelCache`]
//! (each distinct source is compiled once per process). Compiled host code calls
//! [`metal_launch`] with the kernel's handle; the launcher plans the launch
//! ([`plan_launch`]: grid, bindings, wrapped arrays) and hands it to the runtime.

use crate::cache::KernelCache;
use crate::error::MetalError;
use crate::layout::{plan_launch, KernelLayout};
use crate::msl::{emit_msl, MslKernel};
use crate::runtime::{self, Pipeline};
use nacre_backend::{Backend, LaunchBinding, LaunchDims, Linkage};
use nacre_ir::{FuncId, VerifiedModule};
use nacre_runtime::{Device, KernelRuntime, PreparedKernels, RuntimeError};
use std::sync::{Arc, OnceLock};

/// The process-wide cache of compiled kernels.
fn cache() -> &'static KernelCache<Pipeline> {
    static CACHE: OnceLock<KernelCache<Pipeline>> = OnceLock::new();
    CACHE.get_or_init(KernelCache::new)
}

/// A kernel compiled for Metal.
#[derive(Debug)]
pub struct MetalKernel {
    msl: MslKernel,
    pipeline: Arc<Pipeline>,
}

impl MetalKernel {
    /// The kernel's MSL, symbol and binding layout.
    pub fn msl(&self) -> &MslKernel {
        &self.msl
    }

    /// The binding layout.
    pub fn layout(&self) -> &KernelLayout {
        &self.msl.layout
    }

    /// The handle compiled host code passes to [`metal_launch`].
    pub fn handle(&self) -> usize {
        self as *const MetalKernel as usize
    }
}

/// The compiled kernels of a module. Compiled host code holds raw handles to them: keep this
/// alive as long as that code can run.
#[derive(Debug, Default)]
pub struct MetalKernels {
    kernels: Vec<(FuncId, Arc<MetalKernel>)>,
}

impl MetalKernels {
    /// The kernel compiled for function `id` of the module.
    pub fn get(&self, id: FuncId) -> Option<&Arc<MetalKernel>> {
        self.kernels.iter().find(|(k, _)| *k == id).map(|(_, c)| c)
    }

    /// All compiled kernels with their function ids, in module order.
    pub fn iter(&self) -> impl Iterator<Item = (FuncId, &Arc<MetalKernel>)> {
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
}

impl PreparedKernels for MetalKernels {
    /// The binding through which compiled host code launches these kernels
    /// ([`metal_launch`] with each kernel's handle). Launches wait for their kernel, so a
    /// call has nothing left to wait for.
    fn launch_binding(&self) -> LaunchBinding {
        LaunchBinding {
            launcher: metal_launch,
            handles: self
                .kernels
                .iter()
                .map(|(id, k)| (*id, k.handle()))
                .collect(),
        }
    }
}

/// Generates MSL for every kernel of `module` and compiles it (once per process per distinct
/// source); give [`MetalKernels::launch_binding`] to the backend that compiles its host
/// functions.
///
/// The MSL is generated on every platform, so code generation errors are reported
/// everywhere; compiling needs macOS ([`MetalError::NotMacOs`] elsewhere) and a Metal device
/// ([`MetalError::NoDevice`]); the Metal compiler's own errors are [`MetalError::Compile`].
pub fn prepare_metal(module: &VerifiedModule) -> Result<MetalKernels, MetalError> {
    let mut kernels = Vec::new();
    for msl in emit_msl(module)? {
        let pipeline = cache().get_or_compile(&msl.source, |_| runtime::compile(&msl))?;
        kernels.push((msl.id, Arc::new(MetalKernel { msl, pipeline })));
    }
    Ok(MetalKernels { kernels })
}

/// Kernels on the Apple GPU, behind the engine's [`KernelRuntime`] interface (macOS only;
/// [`MetalRuntime::open`] fails elsewhere).
#[derive(Copy, Clone, Debug)]
pub struct MetalRuntime {
    _opened: (),
}

impl MetalRuntime {
    /// Checks that Metal can run kernels here ([`crate::probe`]).
    pub fn open() -> Result<MetalRuntime, MetalError> {
        crate::probe()?;
        Ok(MetalRuntime { _opened: () })
    }
}

impl KernelRuntime for MetalRuntime {
    fn name(&self) -> &'static str {
        "metal"
    }

    fn device(&self) -> std::sync::Arc<dyn Device> {
        crate::MetalDevice::shared()
    }

    /// Kernels run on the GPU: `linkage` and `host` are not needed (device code calls no
    /// externs).
    fn prepare(
        &self,
        module: &VerifiedModule,
        _linkage: &Linkage,
        _host: &dyn Backend,
    ) -> Result<Arc<dyn PreparedKernels>, RuntimeError> {
        let kernels = prepare_metal(module).map_err(|e| RuntimeError::device("metal", e))?;
        Ok(Arc::new(kernels))
    }
}

/// The launcher the Metal runtime binds into host modules (a [`nacre_backend::LaunchFn`]).
///
/// `handle` is a [`MetalKernel::handle`], `dims` a [`LaunchDims`],
/// `args` one `u64` per kernel parameter. Waits for the kernel; on failure writes the trap's
/// code to `*status`: [`nacre_ir::Trap::InvalidLaunch`] and
/// [`nacre_ir::Trap::UnknownBuffer`] from [`plan_launch`], a trap raised in the kernel, or
/// [`nacre_ir::Trap::DeviceError`] (see [`runtime::last_device_error`]).
///
/// # Safety
/// `handle` must be the handle of a live `MetalKernel`, `dims` must point to a [`LaunchDims`],
/// `args` to one `u64` per kernel parameter, `status` to a writable `u32` (or be null); the
/// kernel's accesses through its pointer arguments must stay inside their arrays.
pub unsafe extern "C" fn metal_launch(
    handle: usize,
    dims: *const u32,
    args: *const u64,
    status: *mut u32,
) {
    // SAFETY: the caller passes the handle of a live kernel and a readable `LaunchDims`.
    let (kernel, dims) = unsafe { (&*(handle as *const MetalKernel), LaunchDims::read(dims)) };
    let n = kernel.msl.layout.params.len();
    let args = if n == 0 {
        &[][..]
    } else {
        // SAFETY: `args` holds one slot per parameter (the caller's contract).
        unsafe { std::slice::from_raw_parts(args, n) }
    };
    let result = plan_launch(
        &kernel.msl.layout,
        &dims,
        args,
        runtime::page_size(),
        runtime::limits(&kernel.pipeline),
    )
    .and_then(|plan| runtime::dispatch(&kernel.pipeline, &plan));
    if let Err(trap) = result {
        if !status.is_null() {
            // SAFETY: a non-null `status` is writable (the caller's contract).
            unsafe { *status = trap.code() };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nacre_ir::{verify, FuncKind, Function, FunctionBuilder, Module, Signature};
    #[cfg(not(target_os = "macos"))]
    use nacre_ir::{Scalar, Type};

    #[cfg(not(target_os = "macos"))]
    fn module_with_kernel() -> VerifiedModule {
        let mut f = Function::new(
            "k",
            FuncKind::Kernel,
            Signature {
                params: vec![Type::ptr(Scalar::F32)],
                ret: None,
            },
        );
        let mut b = FunctionBuilder::new(&mut f);
        b.create_entry_block();
        b.ret(None);
        let mut m = Module::new();
        m.entry = Some(m.add_function(f));
        verify(m).unwrap()
    }

    #[cfg(not(target_os = "macos"))]
    #[test]
    fn preparing_outside_macos_is_a_typed_error_after_generating_msl() {
        match prepare_metal(&module_with_kernel()) {
            Err(MetalError::NotMacOs { os }) => assert_eq!(os, std::env::consts::OS),
            other => panic!("expected NotMacOs, got {other:?}"),
        }
        let err = prepare_metal(&module_with_kernel()).unwrap_err();
        assert!(err.to_string().contains("needs macOS"), "{err}");
    }

    #[test]
    fn a_module_without_kernels_needs_no_device() {
        let mut f = Function::new("h", FuncKind::Host, Signature::default());
        let mut b = FunctionBuilder::new(&mut f);
        b.create_entry_block();
        b.ret(None);
        let mut m = Module::new();
        m.entry = Some(m.add_function(f));
        let k = prepare_metal(&verify(m).unwrap()).unwrap();
        assert!(k.is_empty());
        assert!(k.launch_binding().handles.is_empty());
    }
}
