//! [`step_module`]: the module a step function is compiled in.

use crate::error::KernelError;
use crate::step::LoweredKernel;
use nacre_ir::{FuncId, FuncKind, InstKind, Module};
use std::collections::HashMap;

/// The module a step function is compiled in: the step function (its entry) followed by
/// copies of the host functions of `module` it calls, directly or not, with their ids
/// remapped; the external functions are those of `module` (same ids).
///
/// Fails if a called function is a kernel or launches kernels.
pub fn step_module(module: &Module, lowered: LoweredKernel) -> Result<Module, KernelError> {
    let kernel = lowered.func.name.clone();
    let unsupported = |what: String| KernelError::Unsupported {
        kernel: kernel.clone(),
        what,
    };
    let mut step = Module::new();
    step.externs = module.externs.clone();
    step.bounds_checked = module.bounds_checked;
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
            let new_id = step.add_function(target.clone());
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
