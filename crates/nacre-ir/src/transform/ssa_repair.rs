//! SSA repair: reconnects the uses of values that gained extra definitions.
//!
//! After the lowering splits a kernel at its barriers, a value that is live across a barrier
//! has two kinds of definitions: the original one, and a reload from the thread's state at the
//! start of the block that resumes after the barrier. Its uses are no longer dominated by
//! either alone. The region lowering (`regions`) adds a third kind: copies of the original
//! definition in the copies of its block, one per thread loop that runs it (the original
//! block is then dropped). For each such variable this module:
//!
//! 1. finds the blocks it is live into (backwards from its uses, stopping at blocks that
//!    define it);
//! 2. gives every such block with several incoming edges a new block parameter (a phi), and
//!    every such block with one incoming edge the value at the end of its predecessor;
//! 3. rewrites each use to the definition that reaches it, and passes the reaching value along
//!    every edge into a new parameter.
//!
//! Phis are placed at every join the variable is live into, not only where definitions meet;
//! the redundant ones receive one value on every edge, and constant folding removes them. A
//! variable that would be live into a block outside the repaired region (or into a block with
//! no predecessor, i.e. unreachable code) is given a zero constant there: for a verified
//! kernel this happens only in unreachable code.

use crate::{Block, Function, FunctionBuilder, Type, Value};
use std::collections::{HashMap, HashSet};

/// A variable to repair: its original value and the blocks that redefine it.
pub struct Variable {
    /// The original SSA value (its definition stays where it is, if its block is still laid
    /// out).
    pub value: Value,
    /// Blocks that redefine it, with the new definition: at their very start (a reload), or
    /// where a copy of the original definition stands; either way every use of the variable
    /// in such a block comes after the definition.
    pub redefs: HashMap<Block, Value>,
}

/// Reconnects the uses of `vars` anywhere in `f` (SSA repair over its whole layout) after
/// their definitions were copied; the zeros a path without a definition needs go at the
/// start of the entry block, which dominates everything.
pub fn repair_everywhere(f: &mut Function, vars: &[Variable]) {
    let region = f.layout.clone();
    let entry = f.entry();
    repair(f, &region, vars, &mut |f, ty| {
        let mut b = FunctionBuilder::detached(f);
        let zero = b.const_bits(ty, 0);
        let made = b.into_insts();
        if let Some(e) = entry {
            f.blocks[e].insts.splice(0..0, made);
        }
        zero
    });
}

/// Repairs the uses of `vars` in the blocks of `region` (which must list every block that can
/// use them). `undef` creates a zero of a type in a block that dominates everything.
pub fn repair(
    f: &mut Function,
    region: &[Block],
    vars: &[Variable],
    undef: &mut dyn FnMut(&mut Function, Type) -> Value,
) {
    let in_region: HashSet<Block> = region.iter().copied().collect();
    let preds = f.predecessors();
    let def_block = def_blocks(f, region);
    for var in vars {
        let v = var.value;
        let ty = f.values[v].ty;
        let home = def_block.get(&v).copied();
        let local = |b: Block| -> Option<Value> {
            if Some(b) == home {
                Some(v)
            } else {
                var.redefs.get(&b).copied()
            }
        };

        // 1. Blocks the variable is live into.
        let mut use_blocks = Vec::new();
        for &b in region {
            let uses = f.blocks[b].insts.iter().any(|&i| {
                let mut found = false;
                f.insts[i].kind.for_each_operand(|o| found |= o == v);
                found
            });
            if uses {
                use_blocks.push(b);
            }
        }
        let mut live_into: HashSet<Block> = HashSet::new();
        let mut work: Vec<Block> = use_blocks
            .iter()
            .copied()
            .filter(|&b| local(b).is_none())
            .collect();
        live_into.extend(work.iter().copied());
        while let Some(b) = work.pop() {
            if !in_region.contains(&b) {
                continue;
            }
            for &p in &preds[b] {
                if local(p).is_none() && live_into.insert(p) {
                    work.push(p);
                }
            }
        }

        // 2. The value on entry to each of those blocks: a phi, a zero, or (one incoming
        // edge) the value at the end of the predecessor.
        let mut entry: HashMap<Block, Value> = HashMap::new();
        let mut phis: Vec<Block> = Vec::new();
        let mut ordered: Vec<Block> = live_into.iter().copied().collect();
        ordered.sort();
        for &b in &ordered {
            let n = preds[b].len();
            if !in_region.contains(&b) || n == 0 {
                let z = undef(f, ty);
                entry.insert(b, z);
            } else if n > 1 {
                let p = f.add_block_param(b, ty);
                entry.insert(b, p);
                phis.push(b);
            }
        }
        for &b in &ordered {
            if entry.contains_key(&b) {
                continue;
            }
            // Walk up the chain of single-predecessor blocks to a definition or a block whose
            // entry value is known.
            let mut chain = vec![b];
            let mut cur = preds[b][0];
            let value = loop {
                if let Some(d) = local(cur) {
                    break d;
                }
                if let Some(&d) = entry.get(&cur) {
                    break d;
                }
                if chain.contains(&cur) || preds[cur].len() != 1 {
                    // A cycle of single-predecessor blocks is unreachable code.
                    break undef(f, ty);
                }
                chain.push(cur);
                cur = preds[cur][0];
            };
            for c in chain {
                entry.insert(c, value);
            }
        }

        // 3. Uses, then the arguments of the new parameters.
        for &b in &use_blocks {
            let Some(to) = local(b).or_else(|| entry.get(&b).copied()) else {
                continue;
            };
            if to == v {
                continue;
            }
            for i in 0..f.blocks[b].insts.len() {
                let inst = f.blocks[b].insts[i];
                f.insts[inst]
                    .kind
                    .map_operands(|o| if o == v { to } else { o });
            }
        }
        for &b in &phis {
            let mut sources: Vec<Block> = preds[b].clone();
            sources.sort();
            sources.dedup();
            for p in sources {
                let arg = match local(p).or_else(|| entry.get(&p).copied()) {
                    Some(a) => a,
                    None => undef(f, ty),
                };
                let Some(&term) = f.blocks[p].insts.last() else {
                    continue;
                };
                for call in f.insts[term].kind.successors_mut() {
                    if call.block == b {
                        call.args.push(arg);
                    }
                }
            }
        }
    }
}

/// The block defining each value defined in `region`.
fn def_blocks(f: &Function, region: &[Block]) -> HashMap<Value, Block> {
    let mut map = HashMap::new();
    for &b in region {
        for &p in &f.blocks[b].params {
            map.insert(p, b);
        }
        for &inst in &f.blocks[b].insts {
            if let Some(r) = f.insts[inst].result {
                map.insert(r, b);
            }
        }
    }
    map
}
