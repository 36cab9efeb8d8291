//! [`prepare_cpu`]: compiles every kernel of a module for the CPU and binds the launcher, so
//! that the module's host functions can be compiled with their launches.

use crate::cpu::collapse::lower_collapsed;
use crate::cpu::exec::cpu_launch;
use crate::cpu::kernel::{CollapsedStep, CpuKernel};
use crate::cpu::loop_tier::{self, Upgrade};
use crate::cpu::lower::{lower_kernel, LoweredKernel};
use crate::cpu::CpuMode;
use crate::error::GpuError;
use nacre_backend::{Backend, Executable};
use nacre_c::COptions;
use nacre_ir::passes::{run_passes, PassOptions};
use nacre_ir::{verify, FuncId, FuncKind, InstKind, LaunchBinding, Module, VerifiedModule};
use std::collections::HashMap;
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

    /// The binding through which compiled host code launches these kernels ([`cpu_launch`]
    /// with each kernel's handle).
    pub fn launch_binding(&self) -> LaunchBinding {
        LaunchBinding {
            launcher: cpu_launch,
            handles: self
                .kernels
                .iter()
                .map(|(id, k)| (*id, k.handle()))
                .collect(),
        }
    }

    /// True if the module had no kernel.
    pub fn is_empty(&self) -> bool {
        self.kernels.is_empty()
    }
}

/// Compiles every kernel of `module` for the CPU with `backend`; bind
/// [`CpuKernels::launch_binding`] to the module before compiling its host functions.
///
/// Per kernel: [`lower_kernel`] to a step function, [`step_module`] (the step function and
/// copies of the host functions it calls), [`run_passes`], [`verify`], compile. In
/// [`CpuMode::Grid`], a kernel of the collapsible grid-stride shape also gets a collapsed step
/// function (see `collapse`), compiled the same way and, when `backend` is a native backend
/// other than C, queued for the C tier (see `loop_tier`: compiled by the system C compiler in
/// the background with `c_tier`'s compiler and flags; this function does not wait for it). The host
/// functions of `module` can then be compiled by any CPU backend; the returned kernels must
/// outlive the compiled code.
pub fn prepare_cpu(
    module: &Module,
    backend: &dyn Backend,
    mode: CpuMode,
    c_tier: &COptions,
) -> Result<CpuKernels, GpuError> {
    let ids: Vec<FuncId> = module
        .functions
        .iter()
        .filter(|(_, f)| f.kind == FuncKind::Kernel)
        .map(|(id, _)| id)
        .collect();
    let mut kernels = Vec::with_capacity(ids.len());
    for id in ids {
        let lowered = lower_kernel(module, id, mode)?;
        let name = lowered.func.name.clone();
        let info = lowered.info.clone();
        let (exec, step) = compile_step(module, lowered, backend)?;
        let step = step.into_inner();
        let collapsed = match mode {
            CpuMode::Grid => match lower_collapsed(module, id)? {
                Some(c) => {
                    let (exec, verified) = compile_step(module, c.lowered, backend)?;
                    let upgrade = wants_c_tier(backend).then(|| {
                        let slot = Arc::new(Upgrade::default());
                        loop_tier::request(verified, slot.clone(), c_tier);
                        slot
                    });
                    Some(CollapsedStep::new(exec, c.max, upgrade))
                }
                None => None,
            },
            CpuMode::Serial => None,
        };
        let kernel = CpuKernel::new(name, exec, info, mode, step, collapsed);
        kernels.push((id, Arc::new(kernel)));
    }
    Ok(CpuKernels { kernels })
}

/// True if collapsed step functions compiled by `backend` also get a C tier (see
/// `loop_tier`): native backends other than C itself, which compiles them with the user's C
/// options already (the engine's default flags enable the vectoriser); the interpreter is the
/// reference and stays as it is.
fn wants_c_tier(backend: &dyn Backend) -> bool {
    !matches!(backend.name(), "c" | "interp")
}

/// Builds the step module of `lowered`, optimises, verifies and compiles it.
fn compile_step(
    module: &Module,
    lowered: LoweredKernel,
    backend: &dyn Backend,
) -> Result<(Arc<dyn Executable>, VerifiedModule), GpuError> {
    let name = lowered.func.name.clone();
    let mut step = step_module(module, lowered)?;
    run_passes(&mut step, &PassOptions::default());
    let verified = verify(step).map_err(|source| GpuError::Verify {
        kernel: name.clone(),
        source,
    })?;
    let exec = backend
        .compile(&verified)
        .map_err(|source| GpuError::Backend {
            kernel: name.clone(),
            source,
        })?;
    Ok((exec, verified))
}

/// The module a step function is compiled in: the step function (its entry) followed by
/// copies of the host functions of `module` it calls, directly or not, with their ids
/// remapped; the external functions are those of `module` (same ids).
///
/// Fails if a called function is a kernel or launches kernels.
pub fn step_module(module: &Module, lowered: LoweredKernel) -> Result<Module, GpuError> {
    let kernel = lowered.func.name.clone();
    let unsupported = |what: String| GpuError::Unsupported {
        kernel: kernel.clone(),
        what,
    };
    let mut step = Module::new();
    step.externs = module.externs.clone();
    let entry = step.add_function(lowered.func);
    step.entry = Some(entry);

    // Callees, discovered breadth-first; `remap` sends a module id to a step-module id.
    let mut remap: HashMap<FuncId, FuncId> = HashMap::new();
    let mut queue: Vec<FuncId> = vec![entry];
    let mut next = 0;
    while next < queue.len() {
        let id = queue[next];
        next += 1;
        let mut callees = Vec::new();
        let func = &step.functions[id];
        for &b in &func.layout {
            for &inst in &func.blocks[b].insts {
                match &func.insts[inst].kind {
                    InstKind::Call(callee, _) => callees.push(*callee),
                    InstKind::Launch(_) => {
                        return Err(unsupported(format!(
                            "it calls @{}, which launches kernels; kernels cannot launch kernels",
                            func.name
                        )))
                    }
                    _ => {}
                }
            }
        }
        for callee in callees {
            if remap.contains_key(&callee) {
                continue;
            }
            let Some(target) = module.functions.get(callee) else {
                return Err(unsupported(format!(
                    "it calls {callee}, which does not exist"
                )));
            };
            if target.kind == FuncKind::Kernel {
                return Err(unsupported(format!(
                    "it calls kernel @{}; kernels can call host functions only",
                    target.name
                )));
            }
            let mut copy = target.clone();
            copy.loops = None;
            let new_id = step.add_function(copy);
            remap.insert(callee, new_id);
            queue.push(new_id);
        }
    }
    // Calls in the step function and in the copies still name module ids.
    let ids: Vec<FuncId> = step.functions.keys().collect();
    for id in ids {
        let func = &mut step.functions[id];
        let blocks: Vec<_> = func.layout.clone();
        for b in blocks {
            for k in 0..func.blocks[b].insts.len() {
                let inst = func.blocks[b].insts[k];
                if let InstKind::Call(callee, _) = &mut func.insts[inst].kind {
                    if let Some(&new) = remap.get(callee) {
                        *callee = new;
                    }
                }
            }
        }
    }
    Ok(step)
}
