//! Check-free kernel bodies, run where the launch proves the accesses in bounds.
//!
//! The other passes remove the bounds checks of a kernel that hold for every launch (shared
//! arrays against the launch shape) or move them to the host (grid-stride loops, guarded
//! one-element-per-thread accesses). What remains are accesses like the clamped loads of a
//! stencil, `input[min(y, h - 1) * w + min(x, w - 1)]`, or stores under `if x < w && y < h`:
//! in bounds for every launch whose arrays hold `w * h` elements, which the kernel cannot know.
//!
//! [`add_check_free_versions`] gives such a kernel a second body. For every check left
//! outside its entry block whose address is `p[i]` (`p`, its base and size parameters of the
//! kernel, `i` an unsigned integer of at most 32 bits) it derives a symbolic range of `i` over
//! values the launch decides (`symbolic`). Whether every such `i` stays within its array is
//! the same for every thread of a launch, so the host code computes it once, right before each
//! launch, on the launch's arguments and sizes, and passes it as the kernel's last parameter:
//!
//! ```text
//! host:   ok = base <= p && (p - base) + (hi_i + 1) * size_of(T) <= bytes && ...conditions
//!         launch k(..., ok)
//! entry:  br ok, body, checked_body
//! body:          the kernel without the proven checks
//! checked_body:  the kernel as it was (a copy), every check in place
//! ```
//!
//! A launch that could go out of bounds (or whose bounds the expressions cannot show, because
//! a node would wrap around) runs the checked body and traps exactly as before; every other
//! launch runs without the checks. Every thread of a launch takes the same body, so barriers
//! stay matched. On an H200, the stencil kernel alone took 94.3 µs unchecked, 94.9 µs with
//! both bodies and the choice passed in, and 122.4 µs when every thread computed the choice
//! itself (its 64-bit arithmetic costs as much as the stencil);
//! `bench/results/stencil_variants.txt`.
//!
//! With [`CheckFreeOptions::wide_indices`] (the CPU), proven indices are then computed in
//! `u64` (`widen`), and clamped loads under a select, `select(j < n, p[a + min(j, n - 1)], d)`,
//! become loads under a branch with the address `a + j` (`crate::guarded_loads`), which C
//! compilers vectorise as masked loads.

mod symbolic;
mod widen;

pub(crate) use widen::widen_thread_sums;

use crate::launch_checks::{kernels, pass_at_launches};
use nacre_ir::analysis::DominatorTree;
use nacre_ir::transform::copy_blocks;
use nacre_ir::{
    BinaryOp, Block, BlockData, CmpOp, FuncKind, Function, FunctionBuilder, Inst, InstKind, Module,
    Type, Value, ValueDef,
};
use std::collections::HashSet;
use symbolic::{Node, NodeId, Prover};

/// How [`add_check_free_versions`] writes the check-free bodies.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct CheckFreeOptions {
    /// Compute the proven indices of the check-free body in `u64` (`widen`): the proof
    /// shows that none of their operations wraps, so the values are the same, and C compilers
    /// then see indices that advance by one with `threadIdx.x`, which they vectorise. For
    /// kernels run on the CPU; GPU targets pay for 64-bit index arithmetic.
    pub wide_indices: bool,
}

/// Gives every kernel of a bounds-checked `module` with provable checks a check-free body
/// (module docs); returns how many kernels got one.
///
/// An unchecked module has no checks to prove; with [`CheckFreeOptions::wide_indices`] its
/// kernels still get a body with wide indices, run where they cannot wrap.
pub fn add_check_free_versions(module: &mut Module, options: CheckFreeOptions) -> usize {
    if !module.bounds_checked && !options.wide_indices {
        return 0;
    }
    let mut versioned = 0;
    for id in kernels(module) {
        let Some(choice) = version(&mut module.functions[id], options) else {
            continue;
        };
        let kernel = module.functions[id].clone();
        for f in module.functions.values_mut() {
            if f.kind == FuncKind::Host {
                pass_at_launches(f, id, &kernel, choice.ok);
            }
        }
        take_choice_as_parameter(&mut module.functions[id], &choice);
        versioned += 1;
    }
    versioned
}

/// Makes the entry of a versioned kernel branch on a new last parameter (the launch's choice,
/// computed by the host) instead of computing the choice itself.
fn take_choice_as_parameter(f: &mut Function, choice: &Choice) {
    let entry = f.entry().expect("a versioned kernel has an entry");
    let param = f.add_block_param(entry, Type::BOOL);
    f.signature.params.push(Type::BOOL);
    let t = f.terminator(entry).expect("the entry ends in the choice");
    if let InstKind::Branch { cond, .. } = &mut f.insts[t].kind {
        *cond = param;
    }
    f.blocks[entry].insts.retain(|i| !choice.insts.contains(i));
}

/// The choice of body a versioned kernel's entry computes: its value and the instructions
/// that compute it (at the end of the entry, used by nothing else).
struct Choice {
    ok: Value,
    insts: HashSet<Inst>,
}

/// True for the instructions that stay in the entry block, shared by both bodies: the
/// shared arrays (one allocation each, whichever body runs).
fn stays_in_entry(kind: &InstKind) -> bool {
    matches!(
        kind,
        InstKind::SharedAlloc { .. }
            | InstKind::DynamicShared { .. }
            | InstKind::DynamicSharedBytes
    )
}

/// Versions one kernel, its entry computing the choice of body; returns the choice, or `None`
/// if none of its checks could be proven (or it allocates shared memory outside its entry
/// block, which a copy would allocate twice).
fn version(f: &mut Function, options: CheckFreeOptions) -> Option<Choice> {
    let entry = f.entry()?;
    let mut checks = Vec::new();
    let mut accesses = Vec::new();
    let mut addresses = HashSet::new();
    for &b in &f.layout {
        for &i in &f.blocks[b].insts {
            match f.insts[i].kind {
                InstKind::BoundsCheck { .. } => checks.push((b, i)),
                InstKind::ElemPtr(..) => accesses.push((b, i)),
                InstKind::Load(p) | InstKind::Store(p, _) => {
                    addresses.insert(p);
                }
                ref k if stays_in_entry(k) && b != entry => return None,
                _ => {}
            }
        }
    }
    // Only the addresses of loads and stores (not those of hoisted range checks).
    accesses.retain(|&(_, i)| f.insts[i].result.is_some_and(|r| addresses.contains(&r)));
    if checks.is_empty() && !options.wide_indices {
        return None;
    }
    let dom = DominatorTree::compute(f);
    let mut prover = Prover::new(f, entry, &dom);
    let mut proven = HashSet::new();
    let mut indices = Vec::new();
    for &(block, inst) in &checks {
        let kept = prover.conditions.len();
        prover.enter(block);
        match prove(&mut prover, f, entry, inst) {
            Some(access) => {
                proven.insert(inst);
                indices.push((access, prover.derived()));
            }
            None => prover.conditions.truncate(kept),
        }
    }
    // With wide indices, every other access whose index never wraps where the body runs.
    if options.wide_indices {
        let widened: HashSet<Inst> = indices.iter().map(|(a, _)| *a).collect();
        for &(block, access) in &accesses {
            let InstKind::ElemPtr(_, index) = f.insts[access].kind else {
                continue;
            };
            if widened.contains(&access) {
                continue;
            }
            let kept = prover.conditions.len();
            prover.enter(block);
            // Only indices computed by operations change (a parameter, a thread index or a
            // loop counter is the same value zero-extended).
            let computed = matches!(
                f.defining_inst(index),
                Some(InstKind::Binary(..) | InstKind::Select(..) | InstKind::Cast(_))
            );
            let derived = prover.range(index).map(|_| prover.derived());
            match derived {
                Some(d) if computed && d.contains(&index) => indices.push((access, d)),
                _ => prover.conditions.truncate(kept),
            }
        }
    }
    if proven.is_empty() && indices.is_empty() {
        return None;
    }
    let nodes = prover.nodes().to_vec();
    let conditions = prover.conditions.clone();
    drop(prover);
    let start = f.blocks.push(BlockData::default());
    let insts = std::mem::take(&mut f.blocks[entry].insts);
    let (kept, moved): (Vec<Inst>, Vec<Inst>) = insts
        .into_iter()
        .partition(|&i| stays_in_entry(&f.insts[i].kind));
    f.blocks[entry].insts = kept;
    f.blocks[start].insts = moved;
    let (ok, insts) = materialise(f, entry, &nodes, &conditions);
    split_bodies(f, entry, start, ok, &proven);
    if options.wide_indices {
        let mut clones = std::collections::HashMap::new();
        for (access, derived) in indices {
            widen::index(f, access, &derived, &mut clones);
        }
        crate::guarded_loads::guard_clamped_loads(f, &clones);
    }
    Some(Choice {
        ok,
        insts: insts.into_iter().collect(),
    })
}

/// Collects the conditions under which check `inst` cannot fail; returns the `elem_ptr`
/// instruction of its address, or `None` if it cannot say.
fn prove(prover: &mut Prover<'_>, f: &Function, entry: Block, inst: Inst) -> Option<Inst> {
    let InstKind::BoundsCheck {
        addr, base, bytes, ..
    } = f.insts[inst].kind
    else {
        return None;
    };
    let ValueDef::Result(access) = f.values[addr].def else {
        return None;
    };
    let InstKind::ElemPtr(ptr, index) = f.insts[access].kind else {
        return None;
    };
    let is_param = |v: Value| matches!(f.values[v].def, ValueDef::Param(b, _) if b == entry);
    let elem = f.value_type(ptr).pointee()?;
    if !(is_param(ptr) && is_param(base) && is_param(bytes)) {
        return None;
    }
    let (_, hi) = prover.range(index)?;
    // base <= p and (p - base) + (hi + 1) * size <= bytes.
    let p = prover.node(Node::Value(ptr));
    let b = prover.node(Node::Value(base));
    let size = prover.node(Node::Value(bytes));
    prover.require(b, p);
    let offset = prover.op(BinaryOp::Sub, p, b);
    let one = prover.konst(1);
    let count = prover.op(BinaryOp::Add, hi, one);
    let width = prover.konst(u64::from(elem.bytes()));
    let span = prover.op(BinaryOp::Mul, count, width);
    let end = prover.op(BinaryOp::Add, offset, span);
    prover.require(end, size);
    Some(access)
}

/// Emits the nodes and the conjunction of the conditions as `u64` code at the end of the
/// entry; returns the `bool` result and the instructions made.
fn materialise(
    f: &mut Function,
    entry: Block,
    nodes: &[Node],
    conditions: &[(NodeId, NodeId)],
) -> (Value, Vec<Inst>) {
    // Only the nodes the conditions use (failed proofs left others behind).
    let mut used = vec![false; nodes.len()];
    for &(x, y) in conditions {
        used[x.0 as usize] = true;
        used[y.0 as usize] = true;
    }
    for i in (0..nodes.len()).rev() {
        if let (true, Node::Op(_, x, y)) = (used[i], nodes[i]) {
            used[x.0 as usize] = true;
            used[y.0 as usize] = true;
        }
    }
    let mut b = FunctionBuilder::detached(f);
    let mut values: Vec<Option<Value>> = Vec::with_capacity(nodes.len());
    let at = |values: &[Option<Value>], n: NodeId| values[n.0 as usize].expect("a used child");
    for (&n, &needed) in nodes.iter().zip(&used) {
        if !needed {
            values.push(None);
            continue;
        }
        let v = match n {
            Node::Const(c) => b.const_u64(c),
            Node::Value(v) if b.value_type(v) == Type::U64 => v,
            Node::Value(v) => b.cast(v, Type::U64),
            Node::Dim(index, dim) => {
                let d = b.gpu_index(index, dim);
                b.cast(d, Type::U64)
            }
            Node::Op(op, x, y) => b.binary(op, at(&values, x), at(&values, y)),
        };
        values.push(Some(v));
    }
    let mut ok = b.constant(nacre_ir::Const {
        ty: Type::BOOL,
        bits: 1,
    });
    for &(x, y) in conditions {
        let holds = b.cmp(CmpOp::Le, at(&values, x), at(&values, y));
        ok = b.binary(BinaryOp::And, ok, holds);
    }
    let made = b.into_insts();
    f.blocks[entry].insts.extend(made.iter().copied());
    (ok, made)
}

/// Copies `start` (the entry's code, moved there) and every block but the entry (the
/// checked body), removes the proven checks from the originals (the check-free body) and ends
/// the entry with `br ok, start, copy of start`.
fn split_bodies(f: &mut Function, entry: Block, start: Block, ok: Value, proven: &HashSet<Inst>) {
    let body: Vec<Block> = std::iter::once(start)
        .chain(f.layout.iter().copied().filter(|&b| b != entry))
        .collect();
    let copied = copy_blocks(f, &body, &Default::default(), true);
    for &b in &body {
        f.blocks[b].insts.retain(|i| !proven.contains(i));
    }
    let checked_start = copied.blocks[&start];
    let mut b = FunctionBuilder::detached(f);
    b.branch(ok, start, Vec::new(), checked_start, Vec::new());
    let made = b.into_insts();
    f.blocks[entry].insts.extend(made);
    let mut layout = vec![entry, start];
    layout.extend(body.iter().skip(1).copied());
    layout.extend(body.iter().map(|b| copied.blocks[b]));
    f.layout = layout;
}

#[cfg(test)]
mod tests;
