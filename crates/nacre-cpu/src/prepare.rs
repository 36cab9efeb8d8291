//! [`prepare_cpu`]: compiles every kernel of a module for the CPU ([`CpuKernels`]), whose
//! launch binding lets the module's host functions be compiled with their launches.

use crate::c_tier::{self, Upgrade};
use crate::exec::cpu_launch;
use crate::kernel::{CollapsedStep, CpuKernel, StepFunction};
use nacre_backend::{Backend, Executable, LaunchBinding, Linkage};
use nacre_c::COptions;
use nacre_ir::passes::{optimize, PassOptions};
use nacre_ir::{verify, FuncId, FuncKind, Module, VerifiedModule};
use nacre_kernel::step::{lower_collapsed, lower_kernel, step_module, LoweredKernel};
use nacre_kernel::{CpuMode, KernelError};
use nacre_runtime::{PreparedKernels, RuntimeError};
use std::sync::Arc;

/// The compiled kernels of a module. Compiled host code holds raw handles to them: keep this
/// alive as long as that code can run.
#[derive(Debug, Default)]
pub struct CpuKernels {
    kernels: Vec<(FuncId, Arc<CpuKernel>)>,
}

impl CpuKernels {
    /// The kernel compiled for function `id` of the module.
    pub fn get(&self, id: FuncId) -> Option<&Arc<CpuKernel>> {
        self.kernels.iter().find(|(k, _)| *k == id).map(|(_, c)| c)
    }

    /// All compiled kernels with their function ids, in module order.
    pub fn iter(&self) -> impl Iterator<Item = (FuncId, &Arc<CpuKernel>)> {
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

impl PreparedKernels for CpuKernels {
    /// [`cpu_launch`] with each kernel's handle. Launches complete before the launcher
    /// returns, so a call has nothing to wait for.
    fn launch_binding(&self) -> LaunchBinding {
        LaunchBinding {
            launcher: cpu_launch,
            handles: self
                .kernels
                .iter()
                .map(|(id, k)| (*id, k.handle()))
                .collect(),
        }
    }
}

/// Compiles every kernel of `module` (whose externs `linkage` binds) for the CPU with
/// `backend`; give [`CpuKernels::launch_binding`] to the backend with the linkage when it
/// compiles the module's host functions.
///
/// Per kernel: [`lower_kernel`] to a step function, [`step_module`] (the step function and
/// copies of the host functions it calls), [`verify`], [`optimize`], compile. In
/// [`CpuMode::Grid`], a kernel of the collapsible grid-stride shape also gets a collapsed step
/// function (see `collapse`), compiled the same way and, when `backend` is a native backend
/// other than C, queued for the C tier (see `c_tier`: compiled by the system C compiler in
/// the background with `c_tier`'s compiler and flags; this function does not wait for it);
/// the step function of a kernel that does not collapse is queued for it instead. A kernel
/// that does not collapse and has sums ([`nacre_kernel::private_sums()`]) also gets the step
/// function with the sums' additions plain ([`nacre_kernel::make_sums_plain`]), compiled and
/// queued the same way, for launches that run on one worker or privatise every sum. The host
/// functions of `module` can then be compiled by any CPU backend; the returned kernels must
/// outlive the compiled code.
pub fn prepare_cpu(
    module: &Module,
    linkage: &Linkage,
    backend: &dyn Backend,
    mode: CpuMode,
    c_tier: &COptions,
) -> Result<CpuKernels, RuntimeError> {
    let ids: Vec<FuncId> = module
        .functions
        .iter()
        .filter(|(_, f)| f.kind == FuncKind::Kernel)
        .map(|(id, _)| id)
        .collect();
    // A block's threads run on one worker here: atomics on its shared memory are plain
    // accesses (see `nacre_kernel::shared_atomics`). In grid mode, short constant-bounded
    // loops are unrolled first, so that thread loops around them vectorise (see
    // `nacre_kernel::unroll`).
    let mut lowering = module.clone();
    nacre_kernel::demote_shared_atomics(&mut lowering);
    if mode == CpuMode::Grid {
        nacre_kernel::unroll_short_loops(&mut lowering);
    }
    let lowering = &lowering;
    let mut kernels = Vec::with_capacity(ids.len());
    for id in ids {
        let lowered = lower_kernel(lowering, id, mode)?;
        let name = lowered.func.name.clone();
        let info = lowered.info.clone();
        let (exec, verified) = compile_step(module, linkage, lowered, backend)?;
        let step = verified.module().clone();
        let collapsed = match mode {
            CpuMode::Grid => match lower_collapsed(module, id)? {
                Some(c) => {
                    let compiled = compile_step(module, linkage, c.lowered, backend)?;
                    Some(CollapsedStep::new(
                        with_c_tier(compiled, linkage, backend, c_tier),
                        c.max,
                        c.bound_param,
                    ))
                }
                None => None,
            },
            CpuMode::Serial => None,
        };
        // A kernel that does not collapse runs its step function: it gets the C tier.
        let main = match mode == CpuMode::Grid && collapsed.is_none() {
            true => with_c_tier((exec, verified), linkage, backend, c_tier),
            false => StepFunction::new(exec, None),
        };
        let private = match mode {
            CpuMode::Grid => {
                nacre_kernel::private_sums(&lowering.functions[id], module.bounds_checked)
            }
            CpuMode::Serial => Default::default(),
        };
        let plain_sums = match collapsed.is_none() && !private.sums.is_empty() {
            true => {
                let mut plain = lowering.clone();
                nacre_kernel::make_sums_plain(&mut plain.functions[id], &private);
                let lowered = lower_kernel(&plain, id, mode)?;
                // The executor runs either step function with the same buffers.
                match lowered.info == info {
                    true => {
                        let compiled = compile_step(module, linkage, lowered, backend)?;
                        Some(with_c_tier(compiled, linkage, backend, c_tier))
                    }
                    false => None,
                }
            }
            false => None,
        };
        let kernel = CpuKernel::new(
            name,
            main,
            info,
            mode,
            step,
            (collapsed, private, plain_sums),
        );
        kernels.push((id, Arc::new(kernel)));
    }
    Ok(CpuKernels { kernels })
}

/// A compiled step function, queued for the C tier when `backend` wants one.
fn with_c_tier(
    (exec, verified): (Arc<dyn Executable>, VerifiedModule),
    linkage: &Linkage,
    backend: &dyn Backend,
    c_tier: &COptions,
) -> StepFunction {
    let upgrade = wants_c_tier(backend).then(|| {
        let slot = Arc::new(Upgrade::default());
        c_tier::request(verified, linkage, slot.clone(), c_tier);
        slot
    });
    StepFunction::new(exec, upgrade)
}

/// True if collapsed step functions compiled by `backend` also get a C tier (see
/// `c_tier`): native backends other than C itself, which compiles them with the user's C
/// options already (the engine's default flags enable the vectoriser); the interpreter is the
/// reference and stays as it is.
fn wants_c_tier(backend: &dyn Backend) -> bool {
    !matches!(backend.name(), "c" | "interp")
}

/// Builds the step module of `lowered`, verifies, optimises and compiles it (its externs are
/// those of `module`, with the same ids, so `linkage` binds them).
fn compile_step(
    module: &Module,
    linkage: &Linkage,
    lowered: LoweredKernel,
    backend: &dyn Backend,
) -> Result<(Arc<dyn Executable>, VerifiedModule), RuntimeError> {
    let name = lowered.func.name.clone();
    let step = step_module(module, lowered)?;
    let verified = verify(step).map_err(|source| KernelError::Verify {
        kernel: name.clone(),
        source,
    })?;
    let (verified, _) = optimize(verified, &PassOptions::default());
    let exec = backend
        .compile(&verified, linkage)
        .map_err(|source| RuntimeError::Backend {
            runtime: "cpu",
            kernel: name.clone(),
            source,
        })?;
    Ok((exec, verified))
}
