//! Loop versioning on an inner loop's first test: a two-level loop nest whose inner loop's
//! first test is invariant in the outer loop gets a copy of the outer loop, entered when that
//! test holds.
//!
//! ```text
//! for i in lo..hi {                 if 0 < iters {
//!     let mut x = v[i];                 for i in lo..hi { ... }   // the copy
//!     for _ in 0..iters {       =>  } else {
//!         x = 3.9 * x * (1 - x);        for i in lo..hi { ... }   // the original
//!     }                             }
//!     v[i] = x;
//! }
//! ```
//!
//! Both loops are the same code, so nothing changes but the code's size. What it buys is the
//! C compiler's outer-loop vectoriser: GCC vectorises the outer loop of such a nest (each lane
//! one `i`, the inner loop run in lock step) only when the inner loop runs at least once on
//! every entry. With the test in front of the copy, the compiler folds the inner loop's
//! zero-trip guard there (the same comparison of the same values dominates it); without it,
//! the guard is control flow in the outer loop's body and the nest stays scalar. A grid-stride
//! kernel whose element loops a parameter's number of times (the logistic map) becomes one
//! vector per 16 elements instead of one element at a time.
//!
//! The transform applies to an outer loop that has one entry edge, exactly one inner loop and
//! no deeper one (the nests GCC's outer-loop vectoriser takes), at most [`MAX_LOOP_INSTS`]
//! instructions; the inner loop's header
//! must end in a branch on a comparison that leaves the inner loop on one side, and whose
//! operands, on the edge that enters the inner loop, are values from before the outer loop or
//! constants. At most [`MAX_VERSIONED`] nests per function are copied.

use crate::analysis::{compute_loops, LoopInfo};
use crate::builder::FunctionBuilder;
use crate::entities::{Block, Value};
use crate::function::{Function, ValueDef};
use crate::instructions::{CmpOp, Const, InstKind};
use crate::transform::bounds::elide::{def_block, edge_arg};
use crate::transform::copy_blocks;
use crate::transform::ssa_repair::{repair_everywhere, Variable};
use crate::verifier::{check_function, VerifiedModule};
use std::collections::{HashMap, HashSet};

/// At most this many nests are versioned per function (each one copies its outer loop).
pub const MAX_VERSIONED: usize = 4;

/// Outer loops with more instructions than this are not copied.
pub const MAX_LOOP_INSTS: usize = 2000;

/// Versions the eligible loop nests of every function (see the module docs). The result is
/// verified when the input is (debug builds check it, and panic on an internal error).
pub fn version_loops(module: VerifiedModule) -> VerifiedModule {
    let mut module = module.into_inner();
    let ids: Vec<_> = module.functions.keys().collect();
    for id in ids {
        if version_function(&mut module.functions[id]) > 0 && cfg!(debug_assertions) {
            if let Err(e) = check_function(&module, &module.functions[id]) {
                panic!("internal error: loop versioning produced invalid IR: {e}");
            }
        }
    }
    VerifiedModule::trusted(module)
}

/// [`version_loops`] on one function; returns how many nests it versioned.
pub fn version_function(f: &mut Function) -> usize {
    let mut done = HashSet::new();
    let mut count = 0;
    while count < MAX_VERSIONED {
        let Some(nest) = find_nest(f, &done) else {
            break;
        };
        let copy = apply(f, &nest);
        done.extend([nest.outer, copy]);
        count += 1;
    }
    count
}

/// An operand of the inner loop's first test.
#[derive(Copy, Clone)]
enum Operand {
    /// A value defined before the outer loop.
    Value(Value),
    /// A constant (re-made in front of the outer loop).
    Const(Const),
}

/// A nest to version.
struct Nest {
    /// The outer loop's header.
    outer: Block,
    /// The outer loop's blocks, in layout order.
    blocks: Vec<Block>,
    /// The block whose terminator enters the outer loop.
    entry: Block,
    /// The inner loop's first test.
    test: (CmpOp, Operand, Operand),
}

/// The first nest of `f` that [`version_function`] can version, skipping the outer loops in
/// `done` (versioned already, or copies).
fn find_nest(f: &Function, done: &HashSet<Block>) -> Option<Nest> {
    let loops = compute_loops(f);
    let preds = f.predecessors();
    for &outer in loops.headers.iter().filter(|h| !done.contains(h)) {
        let [inner] = children(&loops, outer)[..] else {
            continue;
        };
        if !children(&loops, inner).is_empty() {
            continue;
        }
        let blocks: Vec<Block> = f
            .layout
            .iter()
            .copied()
            .filter(|&b| loops.contains(outer, b))
            .collect();
        let [entry] = outside_preds(&preds[outer], &loops, outer)[..] else {
            continue;
        };
        let size: usize = blocks.iter().map(|&b| f.blocks[b].insts.len()).sum();
        if size > MAX_LOOP_INSTS || f.terminator(entry).is_none() {
            continue;
        }
        let inside: HashSet<Block> = blocks.iter().copied().collect();
        let test = first_test(f, &loops, &preds[inner], inner, &inside);
        if let Some(test) = test.filter(|&t| !guarded(f, entry, t)) {
            return Some(Nest {
                outer,
                blocks,
                entry,
                test,
            });
        }
    }
    None
}

/// Whether `entry` already branches on `test` (a nest versioned before).
fn guarded(f: &Function, entry: Block, (op, x, y): (CmpOp, Operand, Operand)) -> bool {
    let Some(term) = f.terminator(entry) else {
        return false;
    };
    let InstKind::Branch { cond, .. } = f.insts[term].kind else {
        return false;
    };
    let same = |v: Value, o: Operand| match (o, f.defining_inst(v)) {
        (Operand::Const(c), Some(InstKind::Const(d))) => c == *d,
        (Operand::Value(w), _) => v == w,
        _ => false,
    };
    matches!(f.defining_inst(cond), Some(&InstKind::Cmp(o, a, b)) if o == op && same(a, x) && same(b, y))
}

/// The headers of the loops directly inside loop `header`.
fn children(loops: &LoopInfo, header: Block) -> Vec<Block> {
    let inside = |&c: &Block| loops.parent[c] == Some(header);
    loops.headers.iter().copied().filter(inside).collect()
}

/// The predecessors of loop `header` that are outside the loop, without repeats.
fn outside_preds(preds: &[Block], loops: &LoopInfo, header: Block) -> Vec<Block> {
    let mut out: Vec<Block> = preds
        .iter()
        .copied()
        .filter(|&p| !loops.contains(header, p))
        .collect();
    out.dedup();
    out
}

/// The values defined in `blocks` that an instruction outside them uses, with the block that
/// defines each.
fn used_after(f: &Function, blocks: &[Block]) -> Vec<(Value, Block)> {
    let inside: HashSet<Block> = blocks.iter().copied().collect();
    let mut defined = HashMap::new();
    for &b in blocks {
        let data = &f.blocks[b];
        let results = data.insts.iter().filter_map(|&i| f.insts[i].result);
        defined.extend(data.params.iter().copied().chain(results).map(|v| (v, b)));
    }
    let mut used = Vec::new();
    for &b in f.layout.iter().filter(|b| !inside.contains(b)) {
        for &i in &f.blocks[b].insts {
            f.insts[i].kind.for_each_operand(|v| {
                if let Some(&home) = defined.get(&v) {
                    used.push((v, home));
                }
            });
        }
    }
    used.sort();
    used.dedup();
    used
}

/// The inner loop's first test, when its header ends in a branch out of the loop on a
/// comparison whose operands on the entering edge are invariant in the outer loop.
fn first_test(
    f: &Function,
    loops: &LoopInfo,
    inner_preds: &[Block],
    inner: Block,
    outer_blocks: &HashSet<Block>,
) -> Option<(CmpOp, Operand, Operand)> {
    let term = f.terminator(inner)?;
    let InstKind::Branch {
        cond,
        then_dest,
        else_dest,
    } = &f.insts[term].kind
    else {
        return None;
    };
    let exits = [then_dest.block, else_dest.block]
        .iter()
        .any(|&t| !loops.contains(inner, t));
    let ValueDef::Result(cmp) = f.values[*cond].def else {
        return None;
    };
    let InstKind::Cmp(op, a, b) = f.insts[cmp].kind else {
        return None;
    };
    if !exits || !f.blocks[inner].insts.contains(&cmp) {
        return None;
    }
    let [entering] = outside_preds(inner_preds, loops, inner)[..] else {
        return None;
    };
    let operand = |v: Value| invariant(f, entry_value(f, inner, entering, v)?, outer_blocks);
    match (operand(a)?, operand(b)?) {
        (Operand::Const(_), Operand::Const(_)) => None,
        (x, y) => Some((op, x, y)),
    }
}

/// `v` as the inner loop's header sees it on entry from `entering`: that edge's argument for
/// one of its parameters, else `v` itself.
fn entry_value(f: &Function, inner: Block, entering: Block, v: Value) -> Option<Value> {
    match f.values[v].def {
        ValueDef::Param(b, k) if b == inner => edge_arg(f, entering, inner, k as usize),
        _ => Some(v),
    }
}

/// `v` as an operand that does not change in the outer loop: a constant, or a value defined
/// outside the loop's blocks.
fn invariant(f: &Function, v: Value, outer_blocks: &HashSet<Block>) -> Option<Operand> {
    if let Some(&InstKind::Const(c)) = f.defining_inst(v) {
        return Some(Operand::Const(c));
    }
    let home = def_block(f, v)?;
    (!outer_blocks.contains(&home)).then_some(Operand::Value(v))
}

/// Copies the outer loop and enters the copy through a block that tests the inner loop's
/// first test; the values of the loop used after it come from either copy (SSA repair).
/// Returns the copy's header.
fn apply(f: &mut Function, nest: &Nest) -> Block {
    let after = used_after(f, &nest.blocks);
    let copied = copy_blocks(f, &nest.blocks, &HashMap::new(), true);
    let copy_header = copied.blocks[&nest.outer];
    let types: Vec<_> = f.blocks[nest.outer]
        .params
        .iter()
        .map(|&p| f.values[p].ty)
        .collect();
    let mut b = FunctionBuilder::new(f);
    let guard = b.create_block();
    let params: Vec<Value> = types
        .into_iter()
        .map(|ty| b.append_block_param(guard, ty))
        .collect();
    b.switch_to_block(guard);
    let (op, x, y) = nest.test;
    let mut operand = |o: Operand| match o {
        Operand::Value(v) => v,
        Operand::Const(c) => b.constant(c),
    };
    let (x, y) = (operand(x), operand(y));
    let holds = b.cmp(op, x, y);
    b.branch(holds, copy_header, params.clone(), nest.outer, params);
    if let Some(term) = f.terminator(nest.entry) {
        for call in f.insts[term].kind.successors_mut() {
            if call.block == nest.outer {
                call.block = guard;
            }
        }
    }
    let at = f.layout.iter().position(|&b| b == nest.outer).unwrap_or(0);
    f.layout.retain(|&b| b != guard);
    let front = std::iter::once(guard).chain(nest.blocks.iter().map(|b| copied.blocks[b]));
    f.layout.splice(at..at, front);
    let vars: Vec<Variable> = after
        .into_iter()
        .map(|(value, home)| Variable {
            value,
            redefs: HashMap::from([(copied.blocks[&home], copied.values[&value])]),
        })
        .collect();
    repair_everywhere(f, &vars);
    copy_header
}

#[cfg(test)]
mod tests;
