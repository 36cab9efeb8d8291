//! Loop fission at divergent loops: a loop whose trip count differs between the threads of a
//! block (its exit branch is divergent) and that has no barrier gets thread loops of its own,
//! so that the code around it runs in thread loops that the C tier vectorises.
//!
//! A thread loop is vectorised across threads only when its body is straight-line code or
//! branches the C compiler turns into selects; an inner loop whose trip count differs between
//! threads keeps the whole thread loop scalar. The row softmax (`while j < cols` over the
//! columns past those held in registers, zero trips at 4096 columns) lost the vectorisation of
//! its sixteen `exp` per thread that way. Cutting the region before and after the loop, by a
//! barrier at the end of its preheader and one at the start of its exit, leaves the code
//! before and after in thread loops of their own; the loop runs in a third, thread after
//! thread as before. Both barriers sit in uniform control flow (the preheader and the exit are
//! not divergent), so every thread reaches them; PoCL's implicit loop barriers do the same for
//! its work-group vectoriser.
//!
//! A barrier does more than pick an interleaving: no thread passes it before every other has
//! left the loop. A loop that waits on other threads (a spin lock on an atomic, released after
//! the loop) would then wait forever, so only loops of arithmetic, plain loads and stores and
//! bounds checks are cut; a loop with an atomic, a fence, a call or a collective is not.
//!
//! A cut costs a save and a reload per thread of each value live across it, so a loop is cut
//! only when the thread code of its region around it weighs at least [`MIN_WORK`] (math
//! functions [`MATH_WEIGHT`] each, constants and jumps nothing, other instructions one).

use super::uniformity::{arithmetic, Divergence};
use nacre_ir::analysis::{compute_loops, LoopInfo};
use nacre_ir::{Block, Function, Inst, InstData, InstKind, Value};
use std::collections::{HashMap, HashSet};

/// The least weight of thread code around a divergent loop at which it is cut.
const MIN_WORK: usize = 64;
/// The weight of a math function (`exp`, `sqrt`, ...) in [`MIN_WORK`].
const MATH_WEIGHT: usize = 16;

/// Cuts the regions of `g` around its divergent loops that qualify (see the module docs) by
/// inserting barriers; returns how many loops were cut.
pub(super) fn split_divergent_loops(g: &mut Function, body: &[Block], div: &Divergence) -> usize {
    let loops = compute_loops(g);
    let in_body: HashSet<Block> = body.iter().copied().collect();
    let preds = predecessors(g, body);
    let mut cuts: Vec<(Block, Block)> = Vec::new();
    for &h in &loops.headers {
        if !in_body.contains(&h) || !div.blocks.contains(&h) {
            continue;
        }
        let members = loop_blocks(&loops, body, h);
        if !members.iter().all(|&b| independent(g, b)) {
            continue;
        }
        let Some((pre, exit)) = boundary(g, &preds, &members, h) else {
            continue;
        };
        if !in_body.contains(&pre) || !in_body.contains(&exit) {
            continue;
        }
        if div.blocks.contains(&pre) || div.blocks.contains(&exit) {
            continue;
        }
        if work_around(g, &preds, &members, pre, exit) >= MIN_WORK {
            cuts.push((pre, exit));
        }
    }
    let mut at_end: HashSet<Block> = HashSet::new();
    let mut at_start: HashSet<Block> = HashSet::new();
    for &(pre, exit) in &cuts {
        if at_end.insert(pre) {
            let at = g.blocks[pre].insts.len() - 1;
            let barrier = new_barrier(g);
            g.blocks[pre].insts.insert(at, barrier);
        }
        if at_start.insert(exit) {
            let barrier = new_barrier(g);
            g.blocks[exit].insts.insert(0, barrier);
        }
    }
    cuts.len()
}

/// The least weight (as [`MIN_WORK`] counts) of each of two guarded sections that
/// [`split_guarded_sections`] gives thread loops of their own.
const MIN_SECTION: usize = 8;

/// Cuts the regions of `g` between guarded sections that follow one another (a short loop
/// unrolled in sequence: `if t < 324 { A } if t < 68 { B }`, see `crate::unroll`): a
/// barrier at the start of a block that every thread reaches (not divergent, outside loops),
/// that merges a divergent branch before it and ends in a divergent branch itself, where
/// both sections weigh at least [`MIN_SECTION`] and nothing in the kernel but barriers and
/// returns can wait on another thread (see [`independent`]). In one thread loop the second section's masked loads keep the C
/// compiler from vectorising the first; apart, each runs in a thread loop of its own that
/// `narrow` can restrict to the threads its test keeps, with no mask at all. Returns how many
/// cuts it made.
pub(super) fn split_guarded_sections(
    g: &mut Function,
    body: &[Block],
    div: &Divergence,
    threads: &[Value],
) -> usize {
    let loops = compute_loops(g);
    let preds = predecessors(g, body);
    let in_loop = |b: Block| loops.headers.iter().any(|&h| loops.contains(h, b));
    let waits = |b: &Block| {
        g.blocks[*b].insts.iter().any(|&i| {
            !independent_inst(&g.insts[i].kind)
                && !matches!(g.insts[i].kind, InstKind::Barrier | InstKind::Return(_))
        })
    };
    if body.iter().any(waits) {
        return 0;
    }
    let cuts: Vec<Block> = body
        .iter()
        .copied()
        .filter(|&m| {
            let from = preds.get(&m).map_or(&[][..], Vec::as_slice);
            !div.blocks.contains(&m)
                && !in_loop(m)
                && from.len() >= 2
                && from.iter().any(|p| div.blocks.contains(p))
                && divergent_branch(g, div, m)
                && section_weight(g, &preds, div, m, false) >= MIN_SECTION
                && section_weight(g, &preds, div, m, true) >= MIN_SECTION
                && carries_only_recomputed(g, body, (div, threads), m)
        })
        .collect();
    for &m in &cuts {
        let barrier = new_barrier(g);
        g.blocks[m].insts.insert(0, barrier);
    }
    cuts.len()
}

/// Whether every per-thread value that code from `m` on uses and code before it defines is
/// arithmetic on thread indices and uniform values, which the region lowering recomputes
/// after a barrier (`remat`) rather than saving and reloading it per thread. A cut before a
/// section that uses loaded values (the row softmax's sixteen guarded loads, used by its
/// reductions after them) would save each of them at every cut.
fn carries_only_recomputed(
    g: &Function,
    body: &[Block],
    (div, threads): (&Divergence, &[Value]),
    m: Block,
) -> bool {
    let in_body: HashSet<Block> = body.iter().copied().collect();
    let mut after: HashSet<Block> = HashSet::new();
    let mut todo = vec![m];
    while let Some(b) = todo.pop() {
        if in_body.contains(&b) && after.insert(b) {
            todo.extend(g.successors(b));
        }
    }
    let defined_after: HashSet<Value> = after
        .iter()
        .flat_map(|&b| {
            let d = &g.blocks[b];
            let results = d.insts.iter().filter_map(|&i| g.insts[i].result);
            d.params.iter().copied().chain(results)
        })
        .collect();
    let mut ok = true;
    for &b in &after {
        for &i in &g.blocks[b].insts {
            g.insts[i].kind.for_each_operand(|v| {
                let fresh = defined_after.contains(&v) || div.uniform(v);
                if !fresh && !recomputable(g, (div, threads), v, 0) {
                    ok = false;
                }
            });
        }
    }
    ok
}

/// Whether `v` is arithmetic on thread indices (`threads`: the lowering's values of
/// `threadIdx` and the linear index), uniform values and constants.
fn recomputable(
    g: &Function,
    (div, threads): (&Divergence, &[Value]),
    v: Value,
    depth: u32,
) -> bool {
    if div.uniform(v) || threads.contains(&v) {
        return true;
    }
    if depth > 16 {
        return false;
    }
    let Some(kind) = g.defining_inst(v) else {
        return false;
    };
    let mut ok = matches!(kind, InstKind::GpuIndex(..) | InstKind::Const(_)) || arithmetic(kind);
    if ok && !matches!(kind, InstKind::GpuIndex(..)) {
        kind.for_each_operand(|w| ok &= recomputable(g, (div, threads), w, depth + 1));
    }
    ok
}

/// Whether block `b` ends in a branch on a value that differs between threads.
fn divergent_branch(g: &Function, div: &Divergence, b: Block) -> bool {
    g.terminator(b).is_some_and(|t| match g.insts[t].kind {
        InstKind::Branch { cond, .. } => !div.uniform(cond),
        _ => false,
    })
}

/// The weight of the divergent blocks of the section that ends at `m` (`after`: that `m`'s
/// branch starts), walking from `m` through divergent blocks only.
fn section_weight(
    g: &Function,
    preds: &HashMap<Block, Vec<Block>>,
    div: &Divergence,
    m: Block,
    after: bool,
) -> usize {
    let mut seen: HashSet<Block> = HashSet::from([m]);
    let next = |b: Block| -> Vec<Block> {
        if after {
            g.successors(b)
        } else {
            preds.get(&b).cloned().unwrap_or_default()
        }
    };
    let mut todo: Vec<Block> = next(m)
        .into_iter()
        .filter(|b| div.blocks.contains(b))
        .collect();
    let mut work = 0;
    while let Some(b) = todo.pop() {
        if !seen.insert(b) {
            continue;
        }
        work += weight(g, &g.blocks[b].insts);
        todo.extend(next(b).into_iter().filter(|b| div.blocks.contains(b)));
    }
    work
}

/// Whether block `b` only computes and accesses memory plainly: nothing in it can wait on
/// another thread or make one wait (see the module docs).
fn independent(g: &Function, b: Block) -> bool {
    g.blocks[b]
        .insts
        .iter()
        .all(|&i| independent_inst(&g.insts[i].kind))
}

/// Whether an instruction only computes, accesses memory plainly or branches.
fn independent_inst(kind: &InstKind) -> bool {
    arithmetic(kind)
        || matches!(
            kind,
            InstKind::Load(_)
                | InstKind::Store(..)
                | InstKind::BoundsCheck { .. }
                | InstKind::Jump(_)
                | InstKind::Branch { .. }
        )
}

fn new_barrier(g: &mut Function) -> Inst {
    g.insts.push(InstData {
        kind: InstKind::Barrier,
        result: None,
    })
}

/// The predecessors of each block of `body` among `body`.
fn predecessors(g: &Function, body: &[Block]) -> HashMap<Block, Vec<Block>> {
    let mut preds: HashMap<Block, Vec<Block>> = HashMap::new();
    for &b in body {
        for s in g.successors(b) {
            preds.entry(s).or_default().push(b);
        }
    }
    preds
}

/// The blocks of `body` in the loop headed by `h` (nested loops included).
fn loop_blocks(loops: &LoopInfo, body: &[Block], h: Block) -> HashSet<Block> {
    body.iter()
        .copied()
        .filter(|&b| loops.contains(h, b))
        .collect()
}

/// The loop's one preheader (its header's only predecessor outside it, ending in a jump) and
/// its one exit (the only block outside it that it branches to), or `None`.
fn boundary(
    g: &Function,
    preds: &HashMap<Block, Vec<Block>>,
    members: &HashSet<Block>,
    h: Block,
) -> Option<(Block, Block)> {
    let outside: Vec<Block> = preds
        .get(&h)?
        .iter()
        .copied()
        .filter(|p| !members.contains(p))
        .collect();
    let [pre] = outside[..] else { return None };
    let term = g.terminator(pre)?;
    if !matches!(g.insts[term].kind, InstKind::Jump(_)) {
        return None;
    }
    let mut exits: Vec<Block> = members
        .iter()
        .flat_map(|&b| g.successors(b))
        .filter(|s| !members.contains(s))
        .collect();
    exits.sort();
    exits.dedup();
    let [exit] = exits[..] else { return None };
    Some((pre, exit))
}

/// The weight of the thread code of the loop's region outside it: backwards from the
/// preheader and forwards from the exit, up to barriers (see the module docs).
fn work_around(
    g: &Function,
    preds: &HashMap<Block, Vec<Block>>,
    members: &HashSet<Block>,
    pre: Block,
    exit: Block,
) -> usize {
    let mut seen: HashSet<Block> = members.clone();
    let mut work = 0;
    let mut back = vec![pre];
    while let Some(b) = back.pop() {
        if !seen.insert(b) {
            continue;
        }
        let insts = &g.blocks[b].insts;
        let after_barrier = insts.iter().rposition(|&i| is_barrier(g, i));
        let from = after_barrier.map_or(0, |k| k + 1);
        work += weight(g, &insts[from..]);
        if after_barrier.is_none() {
            back.extend(preds.get(&b).into_iter().flatten().copied());
        }
    }
    let mut forward = vec![exit];
    while let Some(b) = forward.pop() {
        if !seen.insert(b) {
            continue;
        }
        let insts = &g.blocks[b].insts;
        let barrier = insts.iter().position(|&i| is_barrier(g, i));
        work += weight(g, &insts[..barrier.unwrap_or(insts.len())]);
        if barrier.is_none() {
            forward.extend(g.successors(b));
        }
    }
    work
}

fn is_barrier(g: &Function, i: Inst) -> bool {
    matches!(g.insts[i].kind, InstKind::Barrier)
}

/// The weight of `insts` in [`MIN_WORK`].
fn weight(g: &Function, insts: &[Inst]) -> usize {
    insts
        .iter()
        .map(|&i| match g.insts[i].kind {
            InstKind::Math(..) | InstKind::Math2(..) => MATH_WEIGHT,
            InstKind::Const(_) | InstKind::Jump(_) | InstKind::Branch { .. } => 0,
            _ => 1,
        })
        .sum()
}
