//! [`CpuRuntime`]: kernels on the CPU behind the engine's [`KernelRuntime`] interface.

use crate::prepare::prepare_cpu;
use nacre_backend::{Backend, Linkage};
use nacre_c::COptions;
use nacre_ir::VerifiedModule;
use nacre_kernel::CpuMode;
use nacre_runtime::{CpuDevice, Device, KernelRuntime, PreparedKernels, RuntimeError};
use std::sync::Arc;

/// The CPU runtime's options.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct CpuOptions {
    /// How launches run: the full grid (the default) or one thread ([`CpuMode`]).
    pub mode: CpuMode,
}

/// Kernels lowered to step functions, compiled by the host backend and run on the CPU's cores
/// over arrays in host memory ([`CpuDevice`]).
#[derive(Clone, Debug, Default)]
pub struct CpuRuntime {
    options: CpuOptions,
    c_tier: COptions,
}

impl CpuRuntime {
    /// The CPU runtime with these options; `c_tier` is the C compiler and flags of the
    /// background C tier of grid-stride kernels (the engine passes its C backend's settings).
    pub fn new(options: CpuOptions, c_tier: COptions) -> CpuRuntime {
        CpuRuntime { options, c_tier }
    }

    /// Its options.
    pub fn options(&self) -> &CpuOptions {
        &self.options
    }
}

impl KernelRuntime for CpuRuntime {
    fn name(&self) -> &'static str {
        "cpu"
    }

    /// Kernels run as thread loops the C tier vectorises when their indices are 64-bit.
    fn wide_indices(&self) -> bool {
        true
    }

    fn device(&self) -> Arc<dyn Device> {
        CpuDevice::shared()
    }

    fn prepare(
        &self,
        module: &VerifiedModule,
        linkage: &Linkage,
        host: &dyn Backend,
    ) -> Result<Arc<dyn PreparedKernels>, RuntimeError> {
        let mode = self.options.mode;
        let kernels = prepare_cpu(module.module(), linkage, host, mode, &self.c_tier)?;
        Ok(Arc::new(kernels))
    }
}
