//! Bounds checks of grid-stride loops, hoisted to the kernel's entry.
//!
//! The threads of a canonical grid-stride loop ([`crate::grid_stride`]) together run its body
//! for every `i` of `[0, X)`, so an access `p[i]` made on every iteration touches exactly
//! `p[0] ..= p[X - 1]` over the whole launch. [`hoist_grid_stride_checks`] replaces the check
//! of each such access by checks of those two elements in the entry (every thread runs them;
//! none when `X` is 0): the launch traps as it would have, before its loop instead of in it
//! (see [`nacre_ir::transform::bounds::elide`] for what that means for partial results), and
//! the loop keeps the shape printers and the CPU runtime optimise (lane groups, collapse).
//!
//! [`remove_proven_kernel_checks`] removes the checks of kernels that cannot fail, knowing the
//! block size every launch of a kernel passes ([`crate::launch_shapes`]): with 256 threads,
//! `s[threadIdx.x]` of a 256-element shared array is in range on every thread.

use crate::grid_stride::grid_stride_loop;
use crate::launch_shape::{launch_shapes, LaunchShape};
use nacre_ir::analysis::DominatorTree;
use nacre_ir::transform::bounds::elide::{loop_body, CountedLoop};
use nacre_ir::transform::bounds::proven::remove_proven_checks;
use nacre_ir::{FuncKind, Function, FunctionBuilder, Module};

/// Hoists the checks of every kernel's grid-stride loop of a bounds-checked module; returns
/// how many checks left loop bodies.
pub fn hoist_grid_stride_checks(module: &mut Module) -> usize {
    if !module.bounds_checked {
        return 0;
    }
    module
        .functions
        .values_mut()
        .filter(|f| f.kind == FuncKind::Kernel)
        .map(hoist_in_kernel)
        .sum()
}

fn hoist_in_kernel(f: &mut Function) -> usize {
    let Some(lp) = grid_stride_loop(f, &LaunchShape::default()) else {
        return 0;
    };
    let mut b = FunctionBuilder::detached(f);
    let zero = b.const_bits(lp.ty, 0);
    let made = b.into_insts();
    let entry = &mut f.blocks[lp.entry].insts;
    let at = entry.len() - 1;
    entry.splice(at..at, made);
    let counted = CountedLoop {
        header: lp.header,
        body: loop_body(f, lp.header),
        latches: vec![lp.latch],
        preheader: lp.entry,
        index: lp.index,
        init: zero,
        bound: lp.bound,
    };
    let dom = DominatorTree::compute(f);
    counted.hoist(f, &dom)
}

/// Removes the checks of every kernel of a bounds-checked module that cannot fail, its thread
/// indices bounded by the block size all its launches pass (else by the launch limits); returns
/// how many it removed.
///
/// Sound on every runtime: a runtime that runs a kernel with other sizes than its launch asks
/// for (the CPU's serial mode) runs fewer threads per block, never more.
pub fn remove_proven_kernel_checks(module: &mut Module) -> usize {
    if !module.bounds_checked {
        return 0;
    }
    let shapes = launch_shapes(module);
    let mut removed = 0;
    for (id, f) in module.functions.iter_mut() {
        if f.kind != FuncKind::Kernel {
            continue;
        }
        let shape = shapes.get(&id).copied().unwrap_or_default();
        removed += remove_proven_checks(f, shape.bounds());
    }
    removed
}
