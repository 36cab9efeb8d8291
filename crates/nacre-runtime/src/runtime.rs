//! [`KernelRuntime`]: the one interface through which the engine uses a kernel runtime (the
//! CPU grid executor, CUDA, Metal), and [`PreparedKernels`], what it makes of a module.
//!
//! A compile with kernels goes: the engine asks the runtime to [`KernelRuntime::prepare`] the
//! verified module (the runtime compiles every kernel its own way: lowered to step functions
//! and compiled by the host backend on the CPU, printed and compiled by NVRTC on CUDA, printed
//! as MSL on Metal); the prepared kernels give the [`LaunchBinding`] that the host backend
//! compiles launches against, through the [`nacre_backend::Linkage`]. A call of the compiled
//! function then ends with [`PreparedKernels::finish`] (wait for the kernels the call queued)
//! and, for a [`nacre_ir::Trap::DeviceError`] status, [`PreparedKernels::take_error`].
//!
//! Adding a runtime is implementing these two traits and registering it with the engine
//! (`nacre`'s `runtimes` module); nothing else in the engine knows which runtime it holds.

use crate::device::Device;
use crate::error::RuntimeError;
use nacre_backend::{Backend, LaunchBinding, Linkage};
use nacre_ir::VerifiedModule;
use std::sync::Arc;

/// A place where kernels run, with its memory.
pub trait KernelRuntime: Send + Sync {
    /// The runtime's name (`cpu`, `cuda`, `metal`), as used in options and messages.
    fn name(&self) -> &'static str;

    /// The device that arrays for this runtime's kernels are allocated on.
    fn device(&self) -> Arc<dyn Device>;

    /// Whether safe calls compile this runtime's kernels with bounds checks
    /// ([`nacre_ir::transform::BoundsOptions::check_kernels`]). Runtimes that run kernels on
    /// the CPU must; a GPU runtime may make it an option (an unchecked GPU kernel can write
    /// outside its arrays, which the GPU reports as a fault at best).
    fn checks_kernels(&self) -> bool {
        true
    }

    /// Whether kernels' proven indices should be computed in 64 bits
    /// ([`nacre_kernel::check_free::CheckFreeOptions::wide_indices`]): what lets a C compiler
    /// vectorise thread loops on the CPU; GPUs pay for 64-bit index arithmetic. `false` by
    /// default.
    fn wide_indices(&self) -> bool {
        false
    }

    /// Compiles every kernel of `module` for this runtime. `linkage` binds the module's
    /// externs, `host` is the backend that compiles its host functions (a runtime that runs
    /// kernels on the CPU compiles them with both too).
    fn prepare(
        &self,
        module: &VerifiedModule,
        linkage: &Linkage,
        host: &dyn Backend,
    ) -> Result<Arc<dyn PreparedKernels>, RuntimeError>;
}

/// The compiled kernels of one module. Compiled host code holds raw handles into them: keep
/// them alive as long as that code can run.
pub trait PreparedKernels: Send + Sync {
    /// The binding through which compiled host code launches these kernels.
    fn launch_binding(&self) -> LaunchBinding;

    /// Completes a call on this thread: waits for the kernels it queued and returns the first
    /// failure's status code (0: none). A runtime whose launches complete before the launcher
    /// returns has nothing to wait for.
    fn finish(&self) -> u32 {
        0
    }

    /// The runtime's account of the [`nacre_ir::Trap::DeviceError`] last reported on this
    /// thread, if it keeps one.
    fn take_error(&self) -> Option<RuntimeError> {
        None
    }
}
