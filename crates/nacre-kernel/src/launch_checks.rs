//! Kernel bounds checks that depend only on the launch, made once per launch on the host.
//!
//! - [`hoist_guarded_global_checks`]: in the common one-thread-per-element kernel
//!   (`let i = global_id_x(); if i < n { .. p[i] .. }` with `n` a parameter or a constant),
//!   the threads that pass the guard are exactly those with `i < min(n, gridDim.x *
//!   blockDim.x)`, and together they access `p[0] ..= p[k - 1]` for that `k`. The check of
//!   each such access becomes a check of that range in the kernel's entry.
//! - [`move_uniform_checks_to_launches`]: a check in a kernel's entry block that every thread
//!   makes on the same values (computed from parameters, constants and the grid and block
//!   sizes only), as the hoisted checks of grid-stride loops and of the guard above are, is
//!   made instead by the host code right before each launch of the kernel, on the launch's
//!   arguments and sizes, and leaves the kernel.
//!
//! The grid and block sizes are those the launch asks for, also where a runtime runs fewer
//! threads (the CPU's serial mode runs thread 0 alone): a launch is checked for every access
//! its kernel would make on a GPU.
//!
//! Both move traps earlier, as [`nacre_ir::transform::bounds::elide`] does: a launch that would
//! go out of bounds fails with the same [`nacre_ir::Trap::OutOfBounds`] before its kernel runs,
//! instead of part-way through it.

use nacre_ir::transform::bounds::elide::{check_range, Hoisted};
use nacre_ir::{
    BinaryOp, Block, CmpOp, Dim, FuncId, FuncKind, Function, FunctionBuilder, GpuIndex, Inst,
    InstKind, Module, Type, Value, ValueDef,
};
use std::collections::HashMap;

/// Rewrites the checks of `p[i]` under `i < n` in every kernel (module docs); returns how many
/// checks moved to kernel entries.
pub fn hoist_guarded_global_checks(module: &mut Module) -> usize {
    if !module.bounds_checked {
        return 0;
    }
    module
        .functions
        .values_mut()
        .filter(|f| f.kind == FuncKind::Kernel)
        .map(hoist_guarded_in)
        .sum()
}

fn hoist_guarded_in(f: &mut Function) -> usize {
    let Some(entry) = f.entry() else {
        return 0;
    };
    let Some((body, i, n)) = guard(f, entry) else {
        return 0;
    };
    let checks: Vec<(Inst, Hoisted)> = f.blocks[body]
        .insts
        .iter()
        .filter_map(|&inst| global_check(f, inst, i).map(|h| (inst, h)))
        .collect();
    if checks.is_empty() {
        return 0;
    }
    let (zero, bound) = launch_range(f, n);
    for &(inst, h) in &checks {
        check_range(f, entry, zero, bound, h);
        f.blocks[body].insts.retain(|&x| x != inst);
    }
    checks.len()
}

/// The block entered from the entry's branch on `i < n`, with `i` the global x index and `n`
/// a parameter or a constant: `(block, i, n)`.
fn guard(f: &Function, entry: Block) -> Option<(Block, Value, Value)> {
    let t = f.terminator(entry)?;
    let InstKind::Branch {
        cond,
        ref then_dest,
        ref else_dest,
    } = f.insts[t].kind
    else {
        return None;
    };
    let InstKind::Cmp(op, a, b) = *f.defining_inst(cond)? else {
        return None;
    };
    // `i < n` holds on entry to `body`.
    let (body, i, n) = match op {
        CmpOp::Lt => (then_dest.block, a, b),
        CmpOp::Gt => (then_dest.block, b, a),
        CmpOp::Ge => (else_dest.block, a, b),
        CmpOp::Le => (else_dest.block, b, a),
        _ => return None,
    };
    let single_entry = f.predecessors()[body] == [entry];
    let uniform_n = f.value_type(n) == Type::U32 && (is_param(f, n, entry) || is_const(f, n));
    (single_entry && uniform_n && is_global_id_x(f, i)).then_some((body, i, n))
}

/// The check of `inst` if it checks `p[i]` (or `p[i as u64/i64]`) with `p` and its companions
/// parameters of the kernel.
fn global_check(f: &Function, inst: Inst, i: Value) -> Option<Hoisted> {
    let InstKind::BoundsCheck {
        addr,
        base,
        bytes,
        trap,
    } = f.insts[inst].kind
    else {
        return None;
    };
    let InstKind::ElemPtr(ptr, index) = *f.defining_inst(addr)? else {
        return None;
    };
    let widened = |v: Value| {
        matches!(f.defining_inst(v), Some(&InstKind::Cast(x)) if x == i)
            && matches!(f.value_type(v), Type::U64 | Type::I64)
    };
    let entry = f.entry()?;
    let params = [ptr, base, bytes].iter().all(|&v| is_param(f, v, entry));
    (params && (index == i || widened(index))).then_some(Hoisted {
        ptr,
        base,
        bytes,
        trap,
    })
}

/// `(0, min(n, gridDim.x * blockDim.x))` as `u64` values at the end of the entry.
fn launch_range(f: &mut Function, n: Value) -> (Value, Value) {
    let entry = f.entry().expect("a kernel with a guard has an entry");
    let mut b = FunctionBuilder::detached(f);
    let grid = b.gpu_index(GpuIndex::GridDim, Dim::X);
    let block = b.gpu_index(GpuIndex::BlockDim, Dim::X);
    let grid = b.cast(grid, Type::U64);
    let block = b.cast(block, Type::U64);
    let threads = b.binary(BinaryOp::Mul, grid, block);
    let n = b.cast(n, Type::U64);
    let bound = b.binary(BinaryOp::Min, n, threads);
    let zero = b.const_u64(0);
    let made = b.into_insts();
    let insts = &mut f.blocks[entry].insts;
    let at = insts.len() - 1;
    insts.splice(at..at, made);
    (zero, bound)
}

/// True if `v` is `blockIdx.x * blockDim.x + threadIdx.x` (operands in any order).
fn is_global_id_x(f: &Function, v: Value) -> bool {
    let index = |v: Value, want: GpuIndex| matches!(f.defining_inst(v), Some(&InstKind::GpuIndex(g, Dim::X)) if g == want);
    let scaled = |v: Value| match f.defining_inst(v) {
        Some(&InstKind::Binary(BinaryOp::Mul, a, b)) => {
            (index(a, GpuIndex::BlockIdx) && index(b, GpuIndex::BlockDim))
                || (index(b, GpuIndex::BlockIdx) && index(a, GpuIndex::BlockDim))
        }
        _ => false,
    };
    match f.defining_inst(v) {
        Some(&InstKind::Binary(BinaryOp::Add, a, b)) => {
            (scaled(a) && index(b, GpuIndex::ThreadIdx))
                || (scaled(b) && index(a, GpuIndex::ThreadIdx))
        }
        _ => false,
    }
}

/// Moves every kernel's launch-uniform entry checks to its launch sites (module docs); returns
/// how many checks left kernels.
pub fn move_uniform_checks_to_launches(module: &mut Module) -> usize {
    if !module.bounds_checked {
        return 0;
    }
    let mut moved = 0;
    for id in kernels(module) {
        let kernel = &module.functions[id];
        let checks = uniform_checks(kernel);
        if checks.is_empty() {
            continue;
        }
        let kernel = kernel.clone();
        for f in module.functions.values_mut() {
            if f.kind == FuncKind::Host {
                check_at_launches(f, id, &kernel, &checks);
            }
        }
        let entry = kernel.entry().expect("a kernel with checks has an entry");
        let k = &mut module.functions[id];
        k.blocks[entry].insts.retain(|i| !checks.contains(i));
        moved += checks.len();
    }
    moved
}

/// The checks of `f`'s entry block whose operands are launch-uniform.
fn uniform_checks(f: &Function) -> Vec<Inst> {
    let Some(entry) = f.entry() else {
        return Vec::new();
    };
    f.blocks[entry]
        .insts
        .iter()
        .copied()
        .filter(|&inst| {
            let kind = &f.insts[inst].kind;
            let mut all = matches!(kind, InstKind::BoundsCheck { .. });
            kind.for_each_operand(|v| all &= is_uniform(f, entry, v, 0));
            all
        })
        .collect()
}

/// How deep [`is_uniform`] follows operands.
const MAX_DEPTH: u32 = 24;

/// True if `v` is a parameter, or computed in the entry without traps from parameters,
/// constants and the grid and block sizes.
fn is_uniform(f: &Function, entry: Block, v: Value, depth: u32) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let inst = match f.values[v].def {
        ValueDef::Param(b, _) => return b == entry,
        ValueDef::Result(inst) => inst,
    };
    if !f.blocks[entry].insts.contains(&inst) {
        return false;
    }
    let kind = &f.insts[inst].kind;
    let pure = match kind {
        InstKind::Const(_) | InstKind::Cast(_) | InstKind::Cmp(..) | InstKind::Select(..) => true,
        InstKind::Unary(..) | InstKind::ElemPtr(..) => true,
        InstKind::Binary(op, a, _) => {
            !(matches!(op, BinaryOp::Div | BinaryOp::Rem) && f.value_type(*a).is_int())
        }
        InstKind::GpuIndex(g, _) => matches!(g, GpuIndex::GridDim | GpuIndex::BlockDim),
        _ => false,
    };
    let mut all = pure;
    kind.for_each_operand(|o| all &= is_uniform(f, entry, o, depth + 1));
    all
}

/// Makes `checks` of `kernel` (function `id`) before each of `f`'s launches of it.
fn check_at_launches(f: &mut Function, id: FuncId, kernel: &Function, checks: &[Inst]) {
    clone_before_launches(f, id, kernel, checks);
}

/// Computes `value` of `kernel` (function `id`; launch-uniform: made in its entry from
/// parameters, constants and the grid and block sizes) in `f` right before each of `f`'s
/// launches of the kernel, on the launch's arguments and sizes, and passes it as the launch's
/// last argument (the kernel takes it as a new last parameter, see
/// [`crate::check_free`]).
pub(crate) fn pass_at_launches(f: &mut Function, id: FuncId, kernel: &Function, value: Value) {
    let ValueDef::Result(def) = kernel.values[value].def else {
        unreachable!("a launch-uniform value made in the kernel's entry")
    };
    for (launch, results) in clone_before_launches(f, id, kernel, &[def]) {
        let host = results[0].expect("a launch-uniform value has a result");
        if let InstKind::Launch(l) = &mut f.insts[launch].kind {
            l.args.push(host);
        }
    }
}

/// Clones `roots` of `kernel` (function `id`; launch-uniform instructions of its entry, and
/// first what they need) into `f` right before each of its launches of the kernel, on the
/// launch's arguments and sizes; gives each launch with the clones' results.
fn clone_before_launches(
    f: &mut Function,
    id: FuncId,
    kernel: &Function,
    roots: &[Inst],
) -> Vec<(Inst, Vec<Option<Value>>)> {
    let mut out = Vec::new();
    for (block, launch) in launch_sites(f, id) {
        let InstKind::Launch(l) = &f.insts[launch].kind else {
            continue;
        };
        let l = (**l).clone();
        let mut map = launch_args(kernel, &l);
        let mut b = FunctionBuilder::detached(f);
        let results = roots
            .iter()
            .map(|&r| clone_inst(&mut b, kernel, r, &l, &mut map))
            .collect();
        let made = b.into_insts();
        let insts = &mut f.blocks[block].insts;
        let at = insts
            .iter()
            .position(|&i| i == launch)
            .expect("the launch is in its block");
        insts.splice(at..at, made);
        out.push((launch, results));
    }
    out
}

/// The kernels of `module`.
pub(crate) fn kernels(module: &Module) -> Vec<FuncId> {
    module
        .functions
        .iter()
        .filter(|(_, f)| f.kind == FuncKind::Kernel)
        .map(|(id, _)| id)
        .collect()
}

/// `f`'s launches of kernel `id`, with their blocks.
fn launch_sites(f: &Function, id: FuncId) -> Vec<(Block, Inst)> {
    f.layout
        .iter()
        .flat_map(|&b| f.blocks[b].insts.iter().map(move |&i| (b, i)))
        .filter(|&(_, i)| matches!(&f.insts[i].kind, InstKind::Launch(l) if l.kernel == id))
        .collect()
}

/// The kernel's entry parameters mapped to the launch's arguments.
fn launch_args(kernel: &Function, launch: &nacre_ir::Launch) -> HashMap<Value, Value> {
    let entry = kernel.entry().expect("a launched kernel has an entry");
    kernel.blocks[entry]
        .params
        .iter()
        .copied()
        .zip(launch.args.iter().copied())
        .collect()
}

/// Clones `inst` of `kernel` (and, first, what its operands need) into `b`, parameters and
/// grid and block sizes replaced by the launch's.
fn clone_inst(
    b: &mut FunctionBuilder<'_>,
    kernel: &Function,
    inst: Inst,
    launch: &nacre_ir::Launch,
    map: &mut HashMap<Value, Value>,
) -> Option<Value> {
    let data = &kernel.insts[inst];
    if let InstKind::GpuIndex(g, d) = data.kind {
        let sizes = if g == GpuIndex::GridDim {
            &launch.grid
        } else {
            &launch.block
        };
        return Some(sizes[d.index()]);
    }
    let mut kind = data.kind.clone();
    let mut operands = Vec::new();
    kind.for_each_operand(|v| operands.push(v));
    for v in operands {
        if !map.contains_key(&v) {
            let ValueDef::Result(def) = kernel.values[v].def else {
                unreachable!("uniform parameters are mapped to launch arguments")
            };
            let host = clone_inst(b, kernel, def, launch, map)?;
            map.insert(v, host);
        }
    }
    kind.map_operands(|v| map[&v]);
    let ty = data.result.map(|r| kernel.value_type(r));
    let (_, result) = b.append(kind, ty);
    result
}

fn is_param(f: &Function, v: Value, entry: Block) -> bool {
    matches!(f.values[v].def, ValueDef::Param(b, _) if b == entry)
}

fn is_const(f: &Function, v: Value) -> bool {
    matches!(f.defining_inst(v), Some(InstKind::Const(_)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nacre_ir::transform::{insert_bounds_checks, BoundsOptions};
    use nacre_ir::{Scalar, Trap};

    /// `k(out, n)`: `if global_id < n { out[global_id] = 1 }`, launched by `host(out, n, g)` on
    /// `g` blocks of 64.
    fn guarded_module() -> (Module, FuncId, FuncId) {
        let mut m = Module::new();
        let p = Type::ptr(Scalar::U32);
        let k = m.add_function(FunctionBuilder::build(
            "k",
            FuncKind::Kernel,
            &[p, Type::U32],
            None,
            |b, a| {
                let bid = b.gpu_index(GpuIndex::BlockIdx, Dim::X);
                let bdim = b.gpu_index(GpuIndex::BlockDim, Dim::X);
                let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
                let scaled = b.binary(BinaryOp::Mul, bid, bdim);
                let i = b.binary(BinaryOp::Add, scaled, tid);
                let go = b.cmp(CmpOp::Lt, i, a[1]);
                let body = b.create_block();
                let exit = b.create_block();
                b.branch(go, body, vec![], exit, vec![]);
                b.switch_to_block(body);
                let at = b.elem_ptr(a[0], i);
                let one = b.const_u32(1);
                b.store(at, one);
                b.jump(exit, vec![]);
                b.switch_to_block(exit);
                b.ret(None);
            },
        ));
        let host = m.add_function(FunctionBuilder::build(
            "host",
            FuncKind::Host,
            &[p, Type::U32, Type::U32],
            None,
            |b, a| {
                let threads = b.const_u32(64);
                let one = b.const_u32(1);
                b.launch(k, [a[2], one, one], [threads, one, one], vec![a[0], a[1]]);
                b.ret(None);
            },
        ));
        m.entry = Some(host);
        (m, k, host)
    }

    fn checks(f: &Function) -> Vec<Trap> {
        f.live_insts()
            .filter_map(|d| match d.kind {
                InstKind::BoundsCheck { trap, .. } => Some(trap),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_guarded_access_is_checked_once_per_launch_by_the_host() {
        let (m, k, host) = guarded_module();
        let verified = nacre_ir::verify(m).unwrap();
        let mut m = insert_bounds_checks(verified, BoundsOptions::default()).into_inner();
        assert_eq!(checks(&m.functions[k]).len(), 1);
        assert_eq!(hoist_guarded_global_checks(&mut m), 1);
        // The range's first and last element, in the entry.
        assert_eq!(checks(&m.functions[k]).len(), 2);
        assert_eq!(move_uniform_checks_to_launches(&mut m), 2);
        assert!(checks(&m.functions[k]).is_empty());
        let host_checks = checks(&m.functions[host]);
        assert_eq!(host_checks.len(), 2);
        // They name the kernel's parameter, as its own check did.
        assert!(host_checks
            .iter()
            .all(|t| *t == Trap::out_of_bounds(Some(k.as_u32() as usize), Some(0))));
        nacre_ir::verify(m).expect("the moved checks keep the module valid");
    }

    #[test]
    fn a_check_depending_on_the_thread_stays_in_the_kernel() {
        let (mut m, k, _) = guarded_module();
        // Drop the guard: the store runs unconditionally on `out[i]`.
        let f = &mut m.functions[k];
        let entry = f.entry().unwrap();
        let t = f.terminator(entry).unwrap();
        let InstKind::Branch { ref then_dest, .. } = f.insts[t].kind else {
            panic!("a branch")
        };
        let body = then_dest.block;
        f.insts[t].kind = InstKind::Jump(nacre_ir::BlockCall {
            block: body,
            args: vec![],
        });
        let verified = nacre_ir::verify(m).unwrap();
        let mut m = insert_bounds_checks(verified, BoundsOptions::default()).into_inner();
        assert_eq!(hoist_guarded_global_checks(&mut m), 0);
        assert_eq!(move_uniform_checks_to_launches(&mut m), 0);
        assert_eq!(checks(&m.functions[k]).len(), 1);
    }
}
