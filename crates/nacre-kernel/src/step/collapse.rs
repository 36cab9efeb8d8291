//! Grid-stride loop collapse: a canonical grid-stride kernel as one plain loop over its index.
//!
//! A kernel with a canonical grid-stride loop ([`crate::grid_stride`]: thread `g`
//! runs the body for `i = g, g + T, ...` below `X`) covers every `i` of `[0, X)` exactly once,
//! and its iterations are independent apart from memory, so running the body for the `i` of
//! `[0, X)` in contiguous chunks, chunks in parallel, is equivalent.
//!
//! [`lower_collapsed`] builds that variant of the step function: one thread
//! (`blockDim = gridDim = 1`), `i` starting at the context word [`ctx::CHUNK_LO`], advancing by
//! one, and leaving the loop at [`ctx::CHUNK_HI`]. It returns [`ENDED`] when the header's
//! condition ended the loop, [`CHUNK_DONE`] when the chunk ran out, and [`NOT_COLLAPSIBLE`]
//! (before running anything) when `X > ` [`ctx::CHUNK_LIMIT`] (the executor passes
//! `max - T`): then the launch runs the ordinary step function.

use crate::error::KernelError;
use crate::grid_stride::{grid_stride_loop, GridStrideLoop};
use crate::launch_shape::LaunchShape;
use crate::step::ctx;
use crate::step::lower::{lower_kernel, LoweredKernel};
use crate::step::CpuMode;
use nacre_ir::FunctionBuilder;
use nacre_ir::{
    BinaryOp, BlockCall, BlockData, CmpOp, FuncId, Function, InstKind, Module, Type, Value,
    ValueDef,
};

/// Result of a collapsed step function: the loop's condition ended it.
pub const ENDED: u32 = 0;
/// Result of a collapsed step function: the chunk is done, the loop goes on.
pub const CHUNK_DONE: u32 = 1;
/// Result of a collapsed step function: the launch cannot be collapsed (`i` could wrap).
pub const NOT_COLLAPSIBLE: u32 = 2;

/// A collapsed step function and the largest value of its index type.
pub struct Collapsed {
    /// The step function (see the module docs).
    pub lowered: LoweredKernel,
    /// The largest value of the loop index's type.
    pub max: u64,
    /// The kernel parameter that is the loop bound `X`, when it is one: the executor sizes
    /// its chunks by it (an argument slot holds `X`'s bits).
    pub bound_param: Option<usize>,
}

/// Lowers kernel `id` of `module` to a collapsed step function (see the module docs), or
/// `None` if the kernel does not have the collapsible shape.
///
/// The loop of the result has one exit: the entry computes `end = min(X, hi)` (`X` the loop
/// bound, `hi` the chunk's end) and the header tests `i < end`, so each iteration runs one
/// test (the test of the chunk's end and the loop's own test are one). That halves the time
/// per element of a saxpy body on Cranelift, and it is the loop shape C compilers vectorise
/// (they do not vectorise loops with two exits).
pub fn lower_collapsed(module: &Module, id: FuncId) -> Result<Option<Collapsed>, KernelError> {
    let Some(plan) = module
        .functions
        .get(id)
        .and_then(|f| grid_stride_loop(f, &LaunchShape::default()))
    else {
        return Ok(None);
    };
    let max = plan.max;
    let kernel = &module.functions[id];
    let bound_param = match kernel.values[plan.bound].def {
        ValueDef::Param(block, k) if Some(block) == kernel.entry() => Some(k as usize),
        _ => None,
    };
    // One thread per call: no yields.
    let mut lowered = lower_kernel(module, id, CpuMode::Serial)?;
    let f = &mut lowered.func;
    // The lowering keeps instructions but may replace the kernel's parameters: the bound is
    // read off the lowered comparison.
    let InstKind::Cmp(op, a, b) = f.insts[plan.cmp].kind else {
        return Ok(None);
    };
    let bound = if a == plan.index { b } else { a };
    let Some(&br) = f.blocks[plan.header].insts.last() else {
        return Ok(None);
    };
    let InstKind::Branch { then_dest, .. } = f.insts[br].kind.clone() else {
        return Ok(None);
    };

    let done = f.blocks.push(BlockData::default());
    let refuse = f.blocks.push(BlockData::default());
    let mut em = FunctionBuilder::detached(f);
    let two = em.const_u32(NOT_COLLAPSIBLE);
    em.ret(Some(two));
    let insts = em.into_insts();
    f.blocks[refuse].insts = insts;

    let chunk = chunk_entry(f, &plan, bound);

    // The header tests `i < end` and leaves to `done`.
    f.insts[plan.cmp].kind = match op {
        CmpOp::Lt => InstKind::Cmp(CmpOp::Lt, plan.index, chunk.end),
        _ => InstKind::Cmp(CmpOp::Gt, chunk.end, plan.index),
    };
    f.insts[br].kind = InstKind::Branch {
        cond: f.insts[plan.cmp].result.expect("a comparison has a result"),
        then_dest,
        else_dest: BlockCall {
            block: done,
            args: Vec::new(),
        },
    };
    let mut em = FunctionBuilder::detached(f);
    let ended = em.const_u32(ENDED);
    let more = em.const_u32(CHUNK_DONE);
    let r = em.select(chunk.ends_here, ended, more);
    em.ret(Some(r));
    let insts = em.into_insts();
    f.blocks[done].insts = insts;

    // The advance by one.
    f.insts[plan.advance].kind = InstKind::Binary(BinaryOp::Add, plan.index, chunk.one);

    // The loop is entered from a block of its own, where the bounds checks of its accesses
    // are hoisted to (see `nacre_ir::transform::bounds::elide`).
    let pre = f.blocks.push(BlockData::default());
    let mut em = FunctionBuilder::detached(f);
    em.jump(plan.header, vec![chunk.lo]);
    let insts = em.into_insts();
    f.blocks[pre].insts = insts;
    let mut em = FunctionBuilder::detached(f);
    em.branch(chunk.wraps, refuse, Vec::new(), pre, Vec::new());
    let insts = em.into_insts();
    f.blocks[plan.entry].insts.extend(insts);
    let at = f
        .layout
        .iter()
        .position(|&b| b == plan.entry)
        .map_or(0, |i| i + 1);
    f.layout.insert(at, pre);
    f.layout.extend([done, refuse]);
    if module.bounds_checked {
        nacre_ir::transform::bounds::elide::hoist_loop_checks(f);
    }
    Ok(Some(Collapsed {
        lowered,
        max,
        bound_param,
    }))
}

/// What the collapsed entry computes (in the loop index's type unless noted).
struct Chunk {
    /// The chunk's first index.
    lo: Value,
    /// Whether the loop bound exceeds [`ctx::CHUNK_LIMIT`] (`bool`): the launch is refused.
    wraps: Value,
    /// Whether the loop ends within this chunk (`bool`), and where the chunk's loop ends.
    ends_here: Value,
    end: Value,
    /// The constant 1, the new stride.
    one: Value,
}

/// The entry: the chunk's bounds, the wrap check, `end`, replacing the entry's jump to the
/// loop (the caller adds the branch to the loop from `lo`). `bound` is the loop bound `X`.
fn chunk_entry(f: &mut Function, plan: &GridStrideLoop, bound: Value) -> Chunk {
    let ctx_ptr = f.blocks[f.layout[0]].params[1];
    let ty = plan.ty;
    let popped = f.blocks[plan.entry].insts.pop();
    debug_assert_eq!(popped, Some(plan.entry_jump));
    let mut em = FunctionBuilder::detached(f);
    let word = |em: &mut FunctionBuilder<'_>, k: usize| {
        let i = em.const_u32(k as u32);
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
    let one = em.const_bits(ty, 1);
    let pre = em.into_insts();
    f.blocks[plan.entry].insts.extend(pre);
    Chunk {
        lo,
        wraps,
        ends_here,
        end,
        one,
    }
}
