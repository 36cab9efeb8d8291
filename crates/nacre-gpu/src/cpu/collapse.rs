//! Grid-stride loop collapse: a canonical grid-stride kernel as one plain loop over its index.
//!
//! A kernel of the shape
//!
//! ```text
//! entry:   pure code; jump header(blockIdx.x * blockDim.x + threadIdx.x)   [optionally cast]
//! header(i): c = i < X; br c, body, exit        X defined in the entry (thread-independent)
//! body...: any blocks, ending in the latch
//! latch:   jump header(i + gridDim.x * blockDim.x)                          [optionally cast]
//! exit:    return
//! ```
//!
//! where the index computations are the only uses of the GPU indices, the loop carries nothing
//! but `i`, nothing but the header leaves the loop and nothing returns inside it, has no
//! barriers and no shared memory. Launched on a one-dimensional grid of `T` threads (`T`
//! representable in `i`'s type, and `X <= max - T` so that `i + T` never wraps), thread `g`
//! runs the body for `i = g, g + T, ...` below `X`: every `i` of `[0, X)` exactly once, and
//! the body depends on nothing else of the thread. Any interleaving of the threads is a valid
//! execution, and the iterations of one thread are independent apart from memory (which
//! another thread could race on just as well), so running the body for the `i` of `[0, X)`
//! in contiguous chunks, chunks in parallel, is equivalent.
//!
//! [`lower_collapsed`] builds that variant of the step function: one thread
//! (`blockDim = gridDim = 1`), `i` starting at the context word [`ctx::CHUNK_LO`], advancing by
//! one, and leaving the loop at [`ctx::CHUNK_HI`]. It returns [`ENDED`] when the header's
//! condition ended the loop, [`CHUNK_DONE`] when the chunk ran out, and [`NOT_COLLAPSIBLE`]
//! (before running anything) when `X > ` [`ctx::CHUNK_LIMIT`] (the executor passes
//! `max - T`): then the launch runs the ordinary step function.

use crate::cpu::ctx;
use crate::cpu::emit::Emit;
use crate::cpu::lower::{lower_kernel, LoweredKernel};
use crate::cpu::CpuMode;
use crate::error::GpuError;
use nacre_ir::{
    BinaryOp, Block, BlockCall, BlockData, CmpOp, Dim, FuncId, Function, GpuIndex, Inst, InstKind,
    Module, Scalar, Type, Value, ValueDef,
};
use std::collections::HashSet;

/// Result of a collapsed step function: the loop's condition ended it.
pub const ENDED: u32 = 0;
/// Result of a collapsed step function: the chunk is done, the loop goes on.
pub const CHUNK_DONE: u32 = 1;
/// Result of a collapsed step function: the launch cannot be collapsed (`i` could wrap).
pub const NOT_COLLAPSIBLE: u32 = 2;

/// Where the grid-stride loop of a collapsible kernel is.
struct Plan {
    /// The kernel's entry block (the loop's preheader) and its jump to the header.
    entry: Block,
    entry_jump: Inst,
    header: Block,
    /// The header's parameter `i` and its type.
    index: Value,
    ty: Type,
    /// The header's comparison `i < X` (or `X > i`).
    cmp: Inst,
    /// The latch's `i + stride`.
    advance: Inst,
}

/// A collapsed step function and the largest value of its index type.
pub struct Collapsed {
    /// The step function (see the module docs).
    pub lowered: LoweredKernel,
    /// The largest value of the loop index's type.
    pub max: u64,
}

/// The defining instruction of `v`, if it is the result of one.
fn def(f: &Function, v: Value) -> Option<Inst> {
    match f.values[v].def {
        ValueDef::Result(i) => Some(i),
        _ => None,
    }
}

/// `v` itself, or the operand of `v` if it is a cast.
fn uncast(f: &Function, v: Value, chain: &mut Vec<Inst>) -> Value {
    if let Some(i) = def(f, v) {
        if let InstKind::Cast(a) = f.insts[i].kind {
            if f.values[a].ty == Type::U32 {
                chain.push(i);
                return a;
            }
        }
    }
    v
}

/// True if `v` is `a * b` with `a` the index `x` and `b` the index `y` (in either order).
fn is_mul_of(f: &Function, v: Value, x: GpuIndex, y: GpuIndex, chain: &mut Vec<Inst>) -> bool {
    let Some(i) = def(f, v) else { return false };
    let InstKind::Binary(BinaryOp::Mul, a, b) = f.insts[i].kind else {
        return false;
    };
    let (Some(ia), Some(ib)) = (def(f, a), def(f, b)) else {
        return false;
    };
    let (ka, kb) = (&f.insts[ia].kind, &f.insts[ib].kind);
    let is = |k: &InstKind, g: GpuIndex| matches!(k, InstKind::GpuIndex(h, Dim::X) if *h == g);
    if (is(ka, x) && is(kb, y)) || (is(ka, y) && is(kb, x)) {
        chain.extend([i, ia, ib]);
        true
    } else {
        false
    }
}

/// The largest value of an integer index type we collapse for.
fn type_max(ty: Type) -> Option<u64> {
    match ty {
        Type::Scalar(Scalar::U32) => Some(u32::MAX as u64),
        Type::Scalar(Scalar::I32) => Some(i32::MAX as u64),
        Type::Scalar(Scalar::U64) => Some(u64::MAX),
        Type::Scalar(Scalar::I64) => Some(i64::MAX as u64),
        _ => None,
    }
}

/// Finds the grid-stride loop of a collapsible kernel (see the module docs).
fn plan(f: &Function) -> Option<Plan> {
    let entry = *f.layout.first()?;
    // No barriers, no shared memory, GPU indices in x only.
    for &b in &f.layout {
        for &i in &f.blocks[b].insts {
            match &f.insts[i].kind {
                InstKind::Barrier | InstKind::SharedAlloc { .. } | InstKind::Launch(_) => {
                    return None
                }
                InstKind::GpuIndex(_, d) if *d != Dim::X => return None,
                _ => {}
            }
        }
    }
    // Predecessor counts (a block reached twice by one branch counts twice).
    let mut preds: std::collections::HashMap<Block, Vec<Block>> = Default::default();
    for &b in &f.layout {
        for s in f.successors(b) {
            preds.entry(s).or_default().push(b);
        }
    }
    if preds.contains_key(&entry) {
        return None;
    }
    // The entry: pure, ending in `jump header(g)`.
    let entry_jump = f.terminator(entry)?;
    let InstKind::Jump(call) = &f.insts[entry_jump].kind else {
        return None;
    };
    let header = call.block;
    let [g] = call.args[..] else { return None };
    for &i in &f.blocks[entry].insts {
        if i != entry_jump && !f.insts[i].kind.is_pure(|v| f.values[v].ty) {
            return None;
        }
    }
    let [index] = f.blocks[header].params[..] else {
        return None;
    };
    let ty = f.values[index].ty;
    type_max(ty)?;
    // The header: `c = i < X; br c, body, exit`, X from the entry.
    let [cmp, br] = f.blocks[header].insts[..] else {
        return None;
    };
    let InstKind::Cmp(op, a, b) = f.insts[cmp].kind else {
        return None;
    };
    let bound = match op {
        CmpOp::Lt if a == index => b,
        CmpOp::Gt if b == index => a,
        _ => return None,
    };
    let bound_in_entry = f.blocks[entry].params.contains(&bound)
        || def(f, bound).is_some_and(|i| f.blocks[entry].insts.contains(&i));
    if !bound_in_entry {
        return None;
    }
    let InstKind::Branch {
        cond,
        then_dest,
        else_dest,
    } = &f.insts[br].kind
    else {
        return None;
    };
    if *cond != f.insts[cmp].result? || !then_dest.args.is_empty() || !else_dest.args.is_empty() {
        return None;
    }
    let (body, exit) = (then_dest.block, else_dest.block);
    // The exit: only `return`, reached from the header only.
    if exit == header || body == exit || preds.get(&exit)?.len() != 1 {
        return None;
    }
    let [ret] = f.blocks[exit].insts[..] else {
        return None;
    };
    if !matches!(f.insts[ret].kind, InstKind::Return(None)) {
        return None;
    }
    // The header's predecessors: the entry and one latch.
    let hp = preds.get(&header)?;
    let latch = match hp[..] {
        [x, y] if x == entry && y != entry => y,
        [x, y] if y == entry && x != entry => x,
        _ => return None,
    };
    let latch_jump = f.terminator(latch)?;
    let InstKind::Jump(back) = &f.insts[latch_jump].kind else {
        return None;
    };
    let [next] = back.args[..] else { return None };
    let advance = def(f, next)?;
    let InstKind::Binary(BinaryOp::Add, x, y) = f.insts[advance].kind else {
        return None;
    };
    let stride = match (x == index, y == index) {
        (true, false) => y,
        (false, true) => x,
        _ => return None,
    };

    // The index computations: stride = gridDim.x * blockDim.x, g = blockIdx.x * blockDim.x
    // + threadIdx.x (each optionally cast from u32).
    let mut chain: Vec<Inst> = Vec::new();
    let s = uncast(f, stride, &mut chain);
    if !is_mul_of(f, s, GpuIndex::GridDim, GpuIndex::BlockDim, &mut chain) {
        return None;
    }
    let g0 = uncast(f, g, &mut chain);
    let gi = def(f, g0)?;
    let InstKind::Binary(BinaryOp::Add, x, y) = f.insts[gi].kind else {
        return None;
    };
    chain.push(gi);
    let is_tid = |v: Value| {
        def(f, v).is_some_and(|i| {
            matches!(
                f.insts[i].kind,
                InstKind::GpuIndex(GpuIndex::ThreadIdx, Dim::X)
            )
        })
    };
    let (m, t) = if is_tid(y) { (x, y) } else { (y, x) };
    if !is_tid(t) || !is_mul_of(f, m, GpuIndex::BlockIdx, GpuIndex::BlockDim, &mut chain) {
        return None;
    }
    chain.push(def(f, t)?);
    // Every GPU index is in the chain, and chain values feed only the chain, the entry jump
    // and the advance.
    let chain: HashSet<Inst> = chain.into_iter().collect();
    let chain_values: HashSet<Value> = chain.iter().filter_map(|&i| f.insts[i].result).collect();
    for &b in &f.layout {
        for &i in &f.blocks[b].insts {
            let kind = &f.insts[i].kind;
            if matches!(kind, InstKind::GpuIndex(..)) && !chain.contains(&i) {
                return None;
            }
            if chain.contains(&i) || i == entry_jump || i == advance {
                continue;
            }
            let mut uses_chain = false;
            kind.for_each_operand(|v| uses_chain |= chain_values.contains(&v));
            if uses_chain {
                return None;
            }
        }
    }
    // The stride and the start feed only their one use each.
    let mut stride_uses = 0;
    let mut g_uses = 0;
    for &b in &f.layout {
        for &i in &f.blocks[b].insts {
            f.insts[i].kind.for_each_operand(|v| {
                stride_uses += usize::from(v == stride);
                g_uses += usize::from(v == g);
            });
        }
    }
    if stride_uses != 1 || g_uses != 1 || stride == index {
        return None;
    }

    // The loop: every other block leads to the latch without returning, and nothing but
    // the header reaches the exit or the header.
    for &b in &f.layout {
        if b == entry || b == exit {
            continue;
        }
        let t = f.terminator(b)?;
        if matches!(f.insts[t].kind, InstKind::Return(_)) {
            return None;
        }
        if b != header && b != latch && f.successors(b).contains(&header) {
            return None;
        }
    }
    Some(Plan {
        entry,
        entry_jump,
        header,
        index,
        ty,
        cmp,
        advance,
    })
}

/// Lowers kernel `id` of `module` to a collapsed step function (see the module docs), or
/// `None` if the kernel does not have the collapsible shape.
///
/// The loop of the result has one exit: the entry computes `end = min(X, hi)` (`X` the loop
/// bound, `hi` the chunk's end) and the header tests `i < end`, so each iteration runs one
/// test (the test of the chunk's end and the loop's own test are one). That halves the time
/// per element of a saxpy body on Cranelift, and it is the loop shape C compilers vectorise
/// (they do not vectorise loops with two exits).
pub fn lower_collapsed(module: &Module, id: FuncId) -> Result<Option<Collapsed>, GpuError> {
    let Some(plan) = module.functions.get(id).and_then(plan) else {
        return Ok(None);
    };
    let max = type_max(plan.ty).unwrap_or(0);
    // One thread per call: no yields.
    let mut lowered = lower_kernel(module, id, CpuMode::Serial)?;
    let f = &mut lowered.func;
    let ctx_ptr = f.blocks[f.layout[0]].params[1];
    let InstKind::Cmp(op, a, b) = f.insts[plan.cmp].kind else {
        return Ok(None);
    };
    let bound = if a == plan.index { b } else { a };
    let ty = plan.ty;
    let Some(&br) = f.blocks[plan.header].insts.last() else {
        return Ok(None);
    };
    let InstKind::Branch { then_dest, .. } = f.insts[br].kind.clone() else {
        return Ok(None);
    };

    let done = f.blocks.push(BlockData::default());
    let refuse = f.blocks.push(BlockData::default());
    let mut em = Emit::new(f);
    let two = em.u32(NOT_COLLAPSIBLE);
    em.ret(two);
    let insts = em.finish();
    f.blocks[refuse].insts = insts;

    // The entry: the chunk's bounds, the wrap check, `end`, then the loop from `lo`.
    let popped = f.blocks[plan.entry].insts.pop();
    debug_assert_eq!(popped, Some(plan.entry_jump));
    let mut em = Emit::new(f);
    let word = |em: &mut Emit<'_>, k: usize| {
        let i = em.u32(k as u32);
        let p = em.elem_ptr(ctx_ptr, i);
        em.load(p)
    };
    let lo = word(&mut em, ctx::CHUNK_LO);
    let hi = word(&mut em, ctx::CHUNK_HI);
    let limit = word(&mut em, ctx::CHUNK_LIMIT);
    let (lo, hi, wide_bound) = if ty == Type::U64 {
        (lo, hi, bound)
    } else {
        (em.cast(lo, ty), em.cast(hi, ty), em.cast(bound, Type::U64))
    };
    let wraps = em.cmp(CmpOp::Gt, wide_bound, limit);
    // `X < hi` in the index type: the loop ends within this chunk.
    let ends_here = em.cmp(CmpOp::Lt, bound, hi);
    let end = em.select(ends_here, bound, hi);
    let one = em.konst(ty, 1);
    let pre = em.finish();
    f.blocks[plan.entry].insts.extend(pre);

    // The header tests `i < end` and leaves to `done`.
    f.insts[plan.cmp].kind = match op {
        CmpOp::Lt => InstKind::Cmp(CmpOp::Lt, plan.index, end),
        _ => InstKind::Cmp(CmpOp::Gt, end, plan.index),
    };
    f.insts[br].kind = InstKind::Branch {
        cond: f.insts[plan.cmp].result.expect("a comparison has a result"),
        then_dest,
        else_dest: BlockCall {
            block: done,
            args: Vec::new(),
        },
    };
    let mut em = Emit::new(f);
    let ended = em.u32(ENDED);
    let more = em.u32(CHUNK_DONE);
    let r = em.select(ends_here, ended, more);
    em.ret(r);
    let insts = em.finish();
    f.blocks[done].insts = insts;

    // The advance by one.
    f.insts[plan.advance].kind = InstKind::Binary(BinaryOp::Add, plan.index, one);

    let mut em = Emit::new(f);
    em.branch(wraps, (refuse, Vec::new()), (plan.header, vec![lo]));
    let insts = em.finish();
    f.blocks[plan.entry].insts.extend(insts);
    f.layout.extend([done, refuse]);
    Ok(Some(Collapsed { lowered, max }))
}
