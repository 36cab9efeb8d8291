//! Bounds checks of grid-stride loops, hoisted to the kernel's entry.
//!
//! The threads of a canonical grid-stride loop ([`crate::grid_stride`]) together run its body
//! for every `i` of `[0, X)`, so an access `p[i]` made on every iteration touches exactly
//! `p[0] ..= p[X - 1]` over the whole launch. [`hoist_grid_stride_checks`] replaces the check
//! of each such access by checks of those two elements in the entry (every thread runs them;
//! none when `X` is 0): the launch traps as it would have, before its loop instead of in it
//! (see [`nacre_ir::transform::bounds::elide`] for what that means for partial results), and
//! the loop keeps the shape printers and the CPU runtime optimise (lane groups, collapse).

use crate::grid_stride::grid_stride_loop;
use crate::launch_shape::LaunchShape;
use nacre_ir::analysis::DominatorTree;
use nacre_ir::transform::bounds::elide::{loop_body, CountedLoop};
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
