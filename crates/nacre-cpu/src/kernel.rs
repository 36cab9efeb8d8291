//! [`CpuKernel`]: a kernel compiled for the CPU, ready to launch.

use crate::c_tier::{TierState, Upgrade};
use nacre_backend::{Executable, LaunchDims};
use nacre_ir::{Module, Trap};
use nacre_kernel::step::StepInfo;
use nacre_kernel::{CpuMode, PrivateSums};
use std::fmt;
use std::sync::Arc;

/// The native signature of every step function: `(args, ctx, status) -> more rounds`, the
/// native calling convention of `nacre-backend` applied to `(ptr<u64>, ptr<u64>) -> u32`.
pub(crate) type StepFn =
    unsafe extern "C" fn(args: *const u64, ctx: *mut u64, status: *mut u32) -> u32;

/// A kernel compiled for the CPU: its step function (see [`nacre_kernel::step::lower`]) compiled by a
/// backend, and what the executor needs to run it.
///
/// Its address (see [`CpuKernel::handle`]) is the handle that compiled host code passes to
/// [`crate::cpu_launch`]; it must stay alive as long as that code can run.
pub struct CpuKernel {
    name: String,
    /// The step function, with its C tier (see `crate::c_tier`) for kernels that are not
    /// collapsed.
    main: StepFunction,
    info: StepInfo,
    mode: CpuMode,
    step_module: Module,
    collapsed: Option<CollapsedStep>,
    /// The sum parameters launches in grid mode may privatise (see `crate::private`).
    private: PrivateSums,
    /// The step function with the sums' atomic additions plain
    /// ([`nacre_kernel::make_sums_plain`]), for launches whose sums are all private or that run
    /// on one worker; `None` for kernels without sums.
    plain_sums: Option<StepFunction>,
}

/// A compiled step function and its C tier (see `crate::c_tier`) when it has one.
pub(crate) struct StepFunction {
    exec: Arc<dyn Executable>,
    entry: Option<StepFn>,
    upgrade: Option<Arc<Upgrade>>,
}

impl StepFunction {
    /// Wraps a compiled step function; its C tier, if requested, arrives in `upgrade`.
    pub(crate) fn new(exec: Arc<dyn Executable>, upgrade: Option<Arc<Upgrade>>) -> StepFunction {
        StepFunction {
            entry: native_step(exec.as_ref()),
            exec,
            upgrade,
        }
    }

    /// The code launches run now: the C tier once it is ready, else the backend's.
    pub(crate) fn current(&self) -> StepCode<'_> {
        let entry = match self.upgrade.as_deref().and_then(Upgrade::ready) {
            Some(t) => Some(t.entry()),
            None => self.entry,
        };
        StepCode {
            entry,
            exec: self.exec.as_ref(),
        }
    }
}

/// The collapsed step function of a grid-stride kernel (see `nacre_kernel::step::collapse`).
pub(crate) struct CollapsedStep {
    step: StepFunction,
    /// The largest value of the loop index's type.
    pub(crate) max: u64,
    /// The parameter that is the loop's bound, when it is one.
    pub(crate) bound_param: Option<usize>,
}

impl CollapsedStep {
    /// Wraps a compiled collapsed step function whose loop index has maximum `max` and whose
    /// bound is parameter `bound_param` (when it is one).
    pub(crate) fn new(step: StepFunction, max: u64, bound_param: Option<usize>) -> CollapsedStep {
        CollapsedStep {
            step,
            max,
            bound_param,
        }
    }

    /// The code launches run now: the C tier once it is ready, else the backend's.
    pub(crate) fn current(&self) -> StepCode<'_> {
        self.step.current()
    }
}

/// The code of a step function chosen for one launch.
#[derive(Copy, Clone)]
pub(crate) struct StepCode<'a> {
    entry: Option<StepFn>,
    exec: &'a dyn Executable,
}

impl StepCode<'_> {
    /// One call of the step function: `Ok(result)`, `Err(code)` if the kernel trapped.
    ///
    /// # Safety
    /// As [`CpuKernel::step`] (for a collapsed step function, with the chunk words of the
    /// context set).
    #[inline]
    pub(crate) unsafe fn step(&self, args: *const u64, ctx: *mut u64) -> Result<u32, u32> {
        // SAFETY: forwarded contract.
        unsafe { call_step(self.entry, self.exec, args, ctx) }
    }
}

/// The native entry of a compiled step function, if the backend produced native code.
pub(crate) fn native_step(exec: &dyn Executable) -> Option<StepFn> {
    exec.native_entry().map(|p| {
        // SAFETY: the executable's entry is a step function, whose IR signature is
        // `(ptr<u64>, ptr<u64>) -> u32`; under the native calling convention of
        // `nacre-backend` that is exactly `StepFn` (pointers as addresses, a trailing
        // status pointer, the `u32` result).
        unsafe { std::mem::transmute::<*const u8, StepFn>(p) }
    })
}

/// Calls a step function natively or through [`Executable::call`].
///
/// # Safety
/// As [`CpuKernel::step`].
#[inline]
unsafe fn call_step(
    entry: Option<StepFn>,
    exec: &dyn Executable,
    args: *const u64,
    ctx: *mut u64,
) -> Result<u32, u32> {
    match entry {
        Some(step) => {
            let mut status = 0u32;
            // SAFETY: `step` has the `StepFn` signature (see `native_step`); the arguments
            // are valid per this function's contract.
            let more = unsafe { step(args, ctx, &mut status) };
            if status == 0 {
                Ok(more)
            } else {
                Err(status)
            }
        }
        None => exec
            .call(&[args as u64, ctx as u64])
            .map(|more| more as u32)
            .map_err(Trap::code),
    }
}

impl CpuKernel {
    /// Wraps a compiled step function `main`, with the collapsed step function of a
    /// collapsible kernel, the sums launches may privatise, and the step function with the
    /// sums' additions plain (for a kernel with sums).
    pub(crate) fn new(
        name: String,
        main: StepFunction,
        info: StepInfo,
        mode: CpuMode,
        step_module: Module,
        (collapsed, private, plain_sums): (
            Option<CollapsedStep>,
            PrivateSums,
            Option<StepFunction>,
        ),
    ) -> CpuKernel {
        CpuKernel {
            private,
            plain_sums,
            name,
            main,
            info,
            mode,
            step_module,
            collapsed,
        }
    }

    /// The collapsed step function, for kernels of the collapsible grid-stride shape in
    /// [`CpuMode::Grid`].
    pub(crate) fn collapsed(&self) -> Option<&CollapsedStep> {
        self.collapsed.as_ref()
    }

    /// The sum parameters launches may privatise.
    pub(crate) fn private_sums(&self) -> &PrivateSums {
        &self.private
    }

    /// The positions of the parameters a launch in grid mode gives each worker privately when
    /// their memory is small and no other argument reaches it (see
    /// [`nacre_kernel::private_sums()`]): those the kernel only adds to, atomically and relaxed,
    /// without reading the old value.
    pub fn private_params(&self) -> Vec<usize> {
        self.private.sums.iter().map(|s| s.param).collect()
    }

    /// True if the kernel has a step function whose additions to its sums are plain (see
    /// [`nacre_kernel::make_sums_plain`]), run by launches on one worker or with every sum
    /// private to each worker.
    pub fn has_plain_sums(&self) -> bool {
        self.plain_sums.is_some()
    }

    /// True if launches on a one-dimensional grid may run as one collapsed loop (see
    /// `nacre_kernel::step::collapse`).
    pub fn is_collapsible(&self) -> bool {
        self.collapsed.is_some()
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The step function's layout: parameters, shared bytes, state words, barriers.
    pub fn info(&self) -> &StepInfo {
        &self.info
    }

    /// How launches run.
    pub fn mode(&self) -> CpuMode {
        self.mode
    }

    /// The step module that was compiled (after passes), for inspection and dumps.
    pub fn step_module(&self) -> &Module {
        &self.step_module
    }

    /// The backend's listing of the compiled step module, if it keeps one.
    pub fn listing(&self) -> Option<&str> {
        self.main.exec.listing()
    }

    /// The backend's listing of the compiled collapsed step module, if the kernel has one and
    /// the backend keeps listings.
    pub fn collapsed_listing(&self) -> Option<&str> {
        self.collapsed.as_ref().and_then(|c| c.step.exec.listing())
    }

    /// The C source of the collapsed step function's C tier, once compiled.
    pub fn collapsed_c_source(&self) -> Option<&str> {
        let upgrade = self.collapsed.as_ref()?.step.upgrade.as_deref()?;
        upgrade.ready()?.listing()
    }

    /// The C source of the step function's C tier (kernels that do not collapse), once
    /// compiled.
    pub fn c_source(&self) -> Option<&str> {
        self.main.upgrade.as_deref()?.ready()?.listing()
    }

    /// The C tier of the kernel: the collapsed step function's, or the step function's for
    /// a kernel that does not collapse (see `crate::c_tier`).
    fn tier(&self) -> Option<&Upgrade> {
        match &self.collapsed {
            Some(c) => c.step.upgrade.as_deref(),
            None => self.main.upgrade.as_deref(),
        }
    }

    /// What became of the kernel's C tier: the collapsed step function's, or the step
    /// function's for a kernel that does not collapse (see `crate::c_tier`).
    pub fn c_tier(&self) -> TierState {
        self.tier().map_or(TierState::None, Upgrade::state)
    }

    /// Waits up to `timeout` for the C tier to be compiled (or to fail); returns its state.
    /// Launches never wait for it: this is for tests and measurements that want the final
    /// code.
    pub fn wait_for_c_tier(&self, timeout: std::time::Duration) -> TierState {
        self.tier().map_or(TierState::None, |u| u.wait(timeout))
    }

    /// True if the step function runs as native code (otherwise through
    /// [`Executable::call`], e.g. on the interpreter).
    pub fn is_native(&self) -> bool {
        self.main.entry.is_some()
    }

    /// The handle of this kernel for [`crate::cpu_launch`]: its address.
    pub fn handle(self: &Arc<Self>) -> usize {
        Arc::as_ptr(self) as usize
    }

    /// Launches the kernel over `grid` blocks of `block` threads with `args` (one `u64` per
    /// parameter, bits-encoded; pointers as addresses) and waits for it to finish.
    ///
    /// Fails with [`Trap::InvalidLaunch`] for a grid or block outside CUDA's limits
    /// ([`nacre_runtime::LaunchLimits::TYPICAL`]: empty, over 1024 threads per block, or a
    /// dimension over its maximum) or the wrong number of arguments, with
    /// [`Trap::UnknownBuffer`] if a pointer argument is not in a live [`nacre_runtime::Array`], and
    /// with the kernel's own trap if one of its threads traps (the launch stops then).
    ///
    /// # Safety
    /// Kernels index their pointer arguments unchecked: every access the kernel makes for
    /// these arguments and this grid must be inside the arrays, and no other code may access
    /// the arrays while the launch runs.
    pub unsafe fn launch(&self, grid: [u32; 3], block: [u32; 3], args: &[u64]) -> Result<(), Trap> {
        let dims = LaunchDims {
            grid,
            block,
            shared_bytes: 0,
        };
        // SAFETY: the caller's contract.
        unsafe { self.launch_dims(dims, args) }
    }

    /// Launches the kernel like [`CpuKernel::launch`], with the launch's dynamic shared
    /// memory; more shared memory than [`nacre_runtime::LaunchLimits::TYPICAL`] allows (48 KiB,
    /// with the kernel's static arrays) is [`Trap::SharedMemoryLimit`].
    ///
    /// # Safety
    /// As [`CpuKernel::launch`].
    pub unsafe fn launch_dims(&self, dims: LaunchDims, args: &[u64]) -> Result<(), Trap> {
        if args.len() != self.info.params.len() {
            return Err(Trap::InvalidLaunch);
        }
        // SAFETY: `args` has one slot per parameter; the rest is the caller's contract.
        unsafe { self.launch_raw(dims, args.as_ptr()) }
            .map_err(|code| Trap::from_code(code).unwrap_or(Trap::DeviceError))
    }

    /// The code of the step function that launches run now: the C tier once it is ready,
    /// else the backend's.
    pub(crate) fn current(&self) -> StepCode<'_> {
        self.main.current()
    }

    /// The step function with the sums' additions plain, for kernels with sums: only for
    /// launches where no two workers add to the same memory at once (one worker, or every
    /// sum private to each worker).
    pub(crate) fn plain_sums(&self) -> Option<StepCode<'_>> {
        self.plain_sums.as_ref().map(StepFunction::current)
    }
}

impl fmt::Debug for CpuKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CpuKernel")
            .field("name", &self.name)
            .field("info", &self.info)
            .field("mode", &self.mode)
            .field("native", &self.is_native())
            .field("collapsible", &self.is_collapsible())
            .finish_non_exhaustive()
    }
}
