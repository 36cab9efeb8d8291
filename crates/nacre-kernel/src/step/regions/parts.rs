//! The regions between barriers (see "Regions, skeleton and thread loops" in the docs of
//! `regions`): the kernel's blocks split at barriers into parts, the parts that form the
//! skeleton, and the entries and bodies of the thread loops, within the copy budget.

use super::uniformity::{arithmetic, Divergence};
use super::Input;
use nacre_ir::{Block, BlockData, Function, InstKind, Value};
use std::collections::{HashMap, HashSet, VecDeque};

/// The most instructions the copies of all thread loops may have, as a multiple of the
/// kernel's (plus [`COPY_SLACK`]): beyond it the state machine is smaller.
const COPY_FACTOR: usize = 16;
/// See [`COPY_FACTOR`].
const COPY_SLACK: usize = 512;

/// The parts of the kernel and what the lowering knows about them.
pub(super) struct Parts {
    /// In layout order.
    pub(super) list: Vec<Block>,
    /// Part → the barrier (from 1) it ends at.
    pub(super) waits: HashMap<Block, usize>,
    /// Barrier k → the part after it (`resumes[k - 1]`).
    pub(super) resumes: Vec<Block>,
    /// Part → the kernel block it comes from.
    origin: HashMap<Block, Block>,
}

impl Parts {
    /// Successors of a part within its region (none after a barrier).
    pub(super) fn succs(&self, f: &Function, p: Block) -> Vec<Block> {
        if self.waits.contains_key(&p) {
            Vec::new()
        } else {
            f.successors(p)
        }
    }

    /// The parts reachable from `from` without crossing a barrier, `from` first.
    fn reach(&self, f: &Function, from: &[Block]) -> Vec<Block> {
        let mut seen: HashSet<Block> = from.iter().copied().collect();
        let mut order: Vec<Block> = from.to_vec();
        let mut queue: VecDeque<Block> = from.iter().copied().collect();
        while let Some(b) = queue.pop_front() {
            for s in self.succs(f, b) {
                if seen.insert(s) {
                    order.push(s);
                    queue.push_back(s);
                }
            }
        }
        order
    }
}

/// Splits the kernel's blocks at their barriers (the barriers are dropped).
pub(super) fn split(f: &mut Function, body: &[Block]) -> Parts {
    let mut parts = Parts {
        list: Vec::new(),
        waits: HashMap::new(),
        resumes: Vec::new(),
        origin: HashMap::new(),
    };
    for &b in body {
        let insts = std::mem::take(&mut f.blocks[b].insts);
        let mut cur = b;
        let mut cur_insts = Vec::new();
        for inst in insts {
            if let InstKind::Barrier = f.insts[inst].kind {
                f.blocks[cur].insts = std::mem::take(&mut cur_insts);
                parts.list.push(cur);
                parts.origin.insert(cur, b);
                let resume = f.blocks.push(BlockData::default());
                parts.resumes.push(resume);
                parts.waits.insert(cur, parts.resumes.len());
                cur = resume;
            } else {
                cur_insts.push(inst);
            }
        }
        f.blocks[cur].insts = cur_insts;
        parts.list.push(cur);
        parts.origin.insert(cur, b);
    }
    parts
}

/// How the parts divide into the skeleton and the thread loops.
pub(super) struct Regions {
    /// The skeleton's parts, in layout order.
    pub(super) skeleton: Vec<Block>,
    /// The thread loops' entry parts, in layout order.
    pub(super) entries: Vec<Block>,
    /// Per entry: the parts its loop's body copies, the entry first.
    pub(super) bodies: Vec<Vec<Block>>,
}

impl Regions {
    /// The skeleton and the thread loops of the kernel split into `parts`, or `None` if the
    /// copies of the loop bodies would exceed the budget.
    pub(super) fn find(
        g: &Function,
        parts: &Parts,
        div: &Divergence,
        input: &Input<'_>,
    ) -> Option<Regions> {
        let skeleton = skeleton(g, parts, div);
        let order: HashMap<Block, usize> = parts
            .list
            .iter()
            .enumerate()
            .map(|(i, &b)| (b, i))
            .collect();
        let entries = loop_entries(g, parts, &skeleton, &order, input.start);
        let bodies = loop_bodies(g, parts, &entries, input)?;
        let mut skeleton_parts: Vec<Block> = parts
            .list
            .iter()
            .copied()
            .filter(|p| skeleton.contains(p))
            .collect();
        skeleton_parts.sort_by_key(|b| order[b]);
        Some(Regions {
            skeleton: skeleton_parts,
            entries,
            bodies,
        })
    }
}

/// Skeleton parts: uniform arithmetic, a uniform terminator, not reachable from thread code
/// without a barrier.
fn skeleton(g: &Function, parts: &Parts, div: &Divergence) -> HashSet<Block> {
    let uniform = |v: Value| div.uniform(v);
    let skeleton_kind = |p: Block| {
        !div.blocks.contains(&parts.origin[&p])
            && g.blocks[p].insts.iter().all(|&i| {
                let d = &g.insts[i];
                match &d.kind {
                    InstKind::Jump(c) => c.args.iter().all(|&a| uniform(a)),
                    InstKind::Branch {
                        cond,
                        then_dest,
                        else_dest,
                    } => {
                        uniform(*cond)
                            && then_dest.args.iter().all(|&a| uniform(a))
                            && else_dest.args.iter().all(|&a| uniform(a))
                    }
                    InstKind::Return(None) => true,
                    k => arithmetic(k) && d.result.is_some_and(uniform),
                }
            })
    };
    let thread_parts: Vec<Block> = parts
        .list
        .iter()
        .copied()
        .filter(|&p| !skeleton_kind(p))
        .collect();
    let threaded: HashSet<Block> = parts.reach(g, &thread_parts).into_iter().collect();
    parts
        .list
        .iter()
        .copied()
        .filter(|p| !threaded.contains(p))
        .collect()
}

/// Thread-loop entries: the first non-skeleton parts of every region, in layout order.
fn loop_entries(
    g: &Function,
    parts: &Parts,
    skeleton: &HashSet<Block>,
    order: &HashMap<Block, usize>,
    start: Block,
) -> Vec<Block> {
    let mut starts = vec![start];
    starts.extend(&parts.resumes);
    let mut entries: Vec<Block> = Vec::new();
    let mut seen: HashSet<Block> = HashSet::new();
    let mut work: Vec<Block> = starts;
    while let Some(p) = work.pop() {
        if !seen.insert(p) {
            continue;
        }
        if skeleton.contains(&p) {
            work.extend(parts.succs(g, p));
        } else {
            entries.push(p);
        }
    }
    entries.sort_by_key(|b| order.get(b).copied().unwrap_or(usize::MAX));
    entries
}

/// The parts each loop's body copies, or `None` if the copies exceed the budget.
fn loop_bodies(
    g: &Function,
    parts: &Parts,
    entries: &[Block],
    input: &Input<'_>,
) -> Option<Vec<Vec<Block>>> {
    let kernel_insts: usize = input
        .body
        .iter()
        .map(|&b| input.f.blocks[b].insts.len())
        .sum();
    let mut copied = 0;
    let bodies: Vec<Vec<Block>> = entries
        .iter()
        .map(|&e| {
            let body = parts.reach(g, &[e]);
            copied += body.iter().map(|&p| g.blocks[p].insts.len()).sum::<usize>();
            body
        })
        .collect();
    if copied > COPY_FACTOR * kernel_insts + COPY_SLACK {
        return None;
    }
    Some(bodies)
}
