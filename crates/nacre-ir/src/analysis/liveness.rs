//! Liveness of SSA values over a set of blocks: which values must survive a barrier.
//!
//! Classic backward dataflow, `live_in(b) = uses(b) ∪ (live_out(b) − defs(b))` with
//! `live_out(b) = ∪ live_in(s)` over the successors `s` of `b`, iterated to a fixpoint.
//! In SSA every use in a block of a value defined in the same block follows the definition, so
//! `uses(b)` is simply the operands of `b` that `b` does not define. Block parameters are
//! definitions of their block; jump arguments are uses of the jumping block.
//!
//! The lowering runs it on the kernel's blocks split at barriers, with the block before a
//! barrier given the block after it as its only successor (the thread continues there after
//! the barrier); the live-in set of the block after a barrier is then exactly the set of
//! values a thread must keep while it waits.

use crate::{Block, Function, Value};
use std::collections::HashMap;

/// A fixed-size set of values (by index).
#[derive(Clone, PartialEq, Eq)]
struct ValueSet(Vec<u64>);

impl ValueSet {
    fn new(values: usize) -> ValueSet {
        ValueSet(vec![0; values.div_ceil(64)])
    }

    fn insert(&mut self, v: usize) {
        self.0[v / 64] |= 1 << (v % 64);
    }

    fn contains(&self, v: usize) -> bool {
        self.0[v / 64] & (1 << (v % 64)) != 0
    }

    /// `self = uses ∪ (out − defs)`; returns whether `self` changed.
    fn assign_transfer(&mut self, uses: &ValueSet, out: &ValueSet, defs: &ValueSet) -> bool {
        let mut changed = false;
        for (i, w) in self.0.iter_mut().enumerate() {
            let new = uses.0[i] | (out.0[i] & !defs.0[i]);
            changed |= new != *w;
            *w = new;
        }
        changed
    }

    fn union_with(&mut self, other: &ValueSet) {
        for (w, o) in self.0.iter_mut().zip(&other.0) {
            *w |= o;
        }
    }

    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(i, &w)| {
            (0..64)
                .filter(move |b| w & (1u64 << b) != 0)
                .map(move |b| i * 64 + b)
        })
    }
}

/// The values live on entry to each of `blocks` of `f`, sorted by value index.
///
/// `succs(b)` gives the successors of `b` to use (blocks outside `blocks` are ignored). Only
/// values defined in one of `blocks` (parameters and instruction results) are tracked.
pub fn live_in(
    f: &Function,
    blocks: &[Block],
    succs: impl Fn(Block) -> Vec<Block>,
) -> HashMap<Block, Vec<Value>> {
    let nvalues = f.values.len();
    let index: HashMap<Block, usize> = blocks.iter().enumerate().map(|(i, &b)| (b, i)).collect();
    let mut defined = ValueSet::new(nvalues);
    let mut defs = Vec::with_capacity(blocks.len());
    for &b in blocks {
        let mut d = ValueSet::new(nvalues);
        for &p in &f.blocks[b].params {
            d.insert(p.as_u32() as usize);
        }
        for &inst in &f.blocks[b].insts {
            if let Some(r) = f.insts[inst].result {
                d.insert(r.as_u32() as usize);
            }
        }
        defined.union_with(&d);
        defs.push(d);
    }
    let mut uses = Vec::with_capacity(blocks.len());
    for (i, &b) in blocks.iter().enumerate() {
        let mut u = ValueSet::new(nvalues);
        for &inst in &f.blocks[b].insts {
            f.insts[inst].kind.for_each_operand(|v| {
                let v = v.as_u32() as usize;
                if defined.contains(v) && !defs[i].contains(v) {
                    u.insert(v);
                }
            });
        }
        uses.push(u);
    }
    let succ: Vec<Vec<usize>> = blocks
        .iter()
        .map(|&b| {
            succs(b)
                .into_iter()
                .filter_map(|s| index.get(&s).copied())
                .collect()
        })
        .collect();

    let mut live = vec![ValueSet::new(nvalues); blocks.len()];
    let mut out = ValueSet::new(nvalues);
    let mut changed = true;
    while changed {
        changed = false;
        for i in (0..blocks.len()).rev() {
            out.0.iter_mut().for_each(|w| *w = 0);
            for &s in &succ[i] {
                out.union_with(&live[s]);
            }
            changed |= live[i].assign_transfer(&uses[i], &out, &defs[i]);
        }
    }
    blocks
        .iter()
        .zip(live)
        .map(|(&b, set)| (b, set.iter().map(|v| Value::from_u32(v as u32)).collect()))
        .collect()
}
