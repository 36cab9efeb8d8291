//! Region lowering of kernels whose barriers sit in uniform control flow: one loop over the
//! block's threads per stretch of code between barriers (MCUDA's thread loops).
//!
//! The general lowering (`lower`) turns a kernel with barriers into a state machine: every
//! round visits every thread, dispatches on its saved phase, reloads and saves its live
//! values. When every thread of a block reaches the same barriers in the same order, which is
//! what CUDA requires of correct code and what this module checks, the block can run instead
//! as a sequence of plain loops over its threads, one per *region* (the code from the kernel's
//! start or from a barrier to the next barriers), with control between regions decided once
//! per block:
//!
//! ```text
//! entry:        jump <region of the kernel's start>
//! skeleton:     the kernel's uniform blocks, run once per block: they compute only values that
//!               are the same for every thread, and branch on them
//! enter_e(...): one per thread loop; [narrowed range lo..hi of threadIdx.x, see below]
//!               jump head_e(lo, 0, 0, lo)
//! head_e(x, y, z, t):   reload the thread's values live into the loop from its state words
//!               ... a copy of the kernel's blocks from e up to the barriers (stops) ...
//! stop k:       save the thread's values live across barrier k; jump next_e_k
//! next_e_k:     x + 1 < hi ? head_e(x + 1, y, z, t + 1) : row_e_k   (then y, then z)
//! out_e_k:      jump <region after barrier k>   (after a `return`: return 0)
//! ```
//!
//! A step function lowered this way runs a whole block in one call and returns 0.
//!
//! # Uniformity
//!
//! A value is *uniform* when it is the same for every thread of a block: the kernel's
//! parameters, block indices and dimensions, and what is computed from uniform values by
//! arithmetic (not loads or calls) outside divergent control flow. `threadIdx` is not. A
//! branch on a non-uniform value is *divergent*; the blocks on its paths up to its immediate
//! post-dominator (where the threads meet again) are in divergent control flow, their values
//! are not uniform (some threads did not compute them), and neither are the parameters of the
//! post-dominator. The analysis iterates to a fixed point. The lowering applies when no
//! barrier sits in divergent control flow (and no barrier is a yield of a grid-stride loop);
//! otherwise the state machine remains.
//!
//! # Regions, skeleton and thread loops
//!
//! The kernel's blocks are split at barriers into *parts*. A part is a skeleton part when it
//! holds only uniform arithmetic, ends in a uniform jump or branch (or a barrier, or a
//! `return`), and is not reachable without crossing a barrier from a part that is not: the
//! skeleton runs once per block. Every other part reached from the skeleton (or starting a
//! region) is the *entry* `e` of a thread loop whose body is a copy of every part reachable
//! from `e` without crossing a barrier. Every thread of a loop stops at the same barrier (the
//! analysis proves it), so the last thread's stop decides where the block goes on; uniform
//! values computed inside the loop are the same for every thread, so the last thread's are
//! the block's.
//!
//! Values live across a barrier that are not uniform get one state word per thread: saved at
//! the stop, reloaded at the head of each thread loop they are live into. Uniform values
//! flow in SSA form. Each value live into a loop's entry is redefined at its head (a reload,
//! or the value on entry to the loop for uniform ones), so a thread never sees a value that
//! the previous thread computed in the same loop; `ssa_repair` then reconnects every use to
//! its reaching definition.
//!
//! # Narrowed thread loops
//!
//! When a loop's entry part computes nothing with effects and branches on `threadIdx.x OP u`
//! (`<`, `<=`, `>`, `>=` or `==`, `u` uniform and known before the loop) to a side that goes
//! straight to the loop's stop (an empty part ending at a barrier with nothing per-thread to
//! save, or a `return`), the threads on that side do nothing: the loop runs `x` over the
//! range where the condition keeps threads (for example `0..min(u, blockDim.x)` for `x < u`),
//! in every row of a 2- or 3-dimensional block, and an empty range goes straight on. A tree
//! reduction (`if t < s { sdata[t] += sdata[t + s]; } sync_threads();` for `s = 128, 64, ..,
//! 1`) then visits 255 threads in all instead of 256 per level.

use crate::step::lower::{load_slot, store_slot};
use nacre_ir::analysis::{live_in, PostDominators};
use nacre_ir::transform::{copy_blocks, repair, Variable};
use nacre_ir::FunctionBuilder;
use nacre_ir::{
    BinaryOp, Block, BlockCall, BlockData, CmpOp, Function, Inst, InstKind, Type, Value,
};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

/// The most instructions the copies of all thread loops may have, as a multiple of the
/// kernel's (plus [`COPY_SLACK`]): beyond it the state machine is smaller.
const COPY_FACTOR: usize = 16;
/// See [`COPY_FACTOR`].
const COPY_SLACK: usize = 512;

/// What the region lowering needs from the general one.
pub(crate) struct Input<'a> {
    /// The step function so far: the kernel's blocks with GPU operations replaced by values
    /// of the entry and thread blocks, uniform code hoisted to the entry.
    pub f: &'a Function,
    /// The kernel's blocks, in layout order.
    pub body: &'a [Block],
    /// The block the kernel starts at (without parameters).
    pub start: Block,
    /// The step function's entry block (its instructions are placed by the caller).
    pub entry: Block,
    /// Values of the entry block: uniform.
    pub uniform: &'a HashSet<Value>,
    /// `threadIdx` x, y, z and the linear thread index of the general lowering's thread
    /// block, which the copies replace by their loop's own.
    pub xyz: [Value; 3],
    /// The general lowering's linear thread index.
    pub t: Value,
    /// `blockDim` x, y, z as `u32`, defined in the entry.
    pub dims: [Value; 3],
    /// The address of the per-thread state area (`u64`), defined in the entry.
    pub state_base: Value,
}

/// The lowered step function.
pub(crate) struct Output {
    /// The function: its entry block ends in the jump to the first region; `entry_insts`
    /// go before that jump.
    pub f: Function,
    pub entry_insts: Vec<Inst>,
    /// State words per thread (one per non-uniform value live across a barrier).
    pub state_words: usize,
    /// Thread loops.
    pub loops: usize,
    /// Thread loops that run over a narrowed range of `threadIdx.x`.
    pub narrowed: usize,
}

/// True for instructions whose result is uniform when their operands are (arithmetic, not
/// memory or calls). Integer division is included: it may trap, but then it traps for every
/// thread alike.
fn arithmetic(kind: &InstKind) -> bool {
    matches!(
        kind,
        InstKind::Const(_)
            | InstKind::Unary(..)
            | InstKind::Binary(..)
            | InstKind::Fma(..)
            | InstKind::Cmp(..)
            | InstKind::Cast(_)
            | InstKind::Select(..)
            | InstKind::ElemPtr(..)
    )
}

/// The result of the uniformity analysis.
struct Divergence {
    /// Values that may differ between the threads of a block.
    values: HashSet<Value>,
    /// Blocks in divergent control flow.
    blocks: HashSet<Block>,
}

/// The uniformity analysis (see the module docs); `None` if some block cannot reach a
/// return.
fn divergence(f: &Function, body: &[Block], seeds: &[Value]) -> Option<Divergence> {
    let ipdom = PostDominators::compute(f, body)?;
    let in_body: HashSet<Block> = body.iter().copied().collect();
    let mut preds: HashMap<Block, Vec<Block>> = HashMap::new();
    for &b in body {
        for s in f.successors(b) {
            preds.entry(s).or_default().push(b);
        }
    }
    let mut values: HashSet<Value> = seeds.iter().copied().collect();
    let mut blocks: HashSet<Block> = HashSet::new();
    let mut changed = true;
    while changed {
        changed = false;
        for &b in body {
            let in_div = blocks.contains(&b);
            let from_div = preds
                .get(&b)
                .is_some_and(|ps| ps.iter().any(|p| blocks.contains(p)));
            for (n, &p) in f.blocks[b].params.iter().enumerate() {
                if values.contains(&p) {
                    continue;
                }
                let divergent_arg = preds.get(&b).is_some_and(|ps| {
                    ps.iter().any(|&pb| {
                        f.terminator(pb).is_some_and(|t| {
                            f.insts[t]
                                .kind
                                .successors()
                                .filter(|c| c.block == b)
                                .any(|c| c.args.get(n).is_some_and(|a| values.contains(a)))
                        })
                    })
                });
                if in_div || from_div || divergent_arg {
                    values.insert(p);
                    changed = true;
                }
            }
            for &inst in &f.blocks[b].insts {
                let data = &f.insts[inst];
                if let Some(r) = data.result {
                    if values.contains(&r) {
                        continue;
                    }
                    let mut operand = false;
                    data.kind
                        .for_each_operand(|v| operand |= values.contains(&v));
                    if in_div || operand || !arithmetic(&data.kind) {
                        values.insert(r);
                        changed = true;
                    }
                }
                if let InstKind::Branch { cond, .. } = &data.kind {
                    if values.contains(cond) {
                        // The paths of a divergent branch up to its post-dominator.
                        let stop = ipdom.ipdom(b);
                        let mut work: Vec<Block> = f.successors(b);
                        while let Some(s) = work.pop() {
                            if Some(s) == stop || !in_body.contains(&s) {
                                continue;
                            }
                            if blocks.insert(s) {
                                changed = true;
                                work.extend(f.successors(s));
                            }
                        }
                    }
                }
            }
        }
    }
    Some(Divergence { values, blocks })
}

/// How a thread loop's range of `threadIdx.x` is narrowed: keep the threads with `x OP u`.
struct Narrowing {
    op: CmpOp,
    /// The bound, as a value available in the loop's entry block (or a constant to emit
    /// there).
    bound: Bound,
    /// The branch's side the kept threads take.
    keep: BlockCall,
    /// The stop the other threads go straight to (0: `return`).
    stop: usize,
}

#[derive(Copy, Clone)]
enum Bound {
    /// A value defined outside the loop: uniform, live into the loop (or of the entry).
    Value(Value),
    /// A `u32` constant.
    Const(u64),
}

/// `a OP b` as `b OP' a`.
fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        other => other,
    }
}

/// `!(a OP b)` as `a OP' b` (integers).
fn negate(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Ge,
        CmpOp::Le => CmpOp::Gt,
        CmpOp::Gt => CmpOp::Le,
        CmpOp::Ge => CmpOp::Lt,
        CmpOp::Eq => CmpOp::Ne,
        CmpOp::Ne => CmpOp::Eq,
    }
}

/// The parts of the kernel and what the lowering knows about them.
struct Parts {
    /// In layout order.
    list: Vec<Block>,
    /// Part → the barrier (from 1) it ends at.
    waits: HashMap<Block, usize>,
    /// Barrier k → the part after it (`resumes[k - 1]`).
    resumes: Vec<Block>,
    /// Part → the kernel block it comes from.
    origin: HashMap<Block, Block>,
}

impl Parts {
    /// Successors of a part within its region (none after a barrier).
    fn succs(&self, f: &Function, p: Block) -> Vec<Block> {
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
fn split(f: &mut Function, body: &[Block]) -> Parts {
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

/// One thread loop being built.
struct Loop {
    /// Its entry part.
    e: Block,
    /// The parts its body copies, `e` first.
    body: Vec<Block>,
    enter: Block,
    head: Block,
    /// Head parameters: `threadIdx` x, y, z and the linear thread index.
    x: Value,
    y: Value,
    z: Value,
    t: Value,
    /// Uniform values live into `e`, and the entry block's parameters that receive them.
    uniform_in: Vec<Value>,
    uniform_params: Vec<Value>,
    /// Parameters of `enter` that receive the arguments for `e`'s own parameters.
    e_params: Vec<Value>,
    narrowing: Option<Narrowing>,
}

/// Lowers the kernel to thread loops (see the module docs), or `None` if it does not qualify:
/// a barrier in divergent control flow, a block that cannot reach a return, or copies larger
/// than the state machine would be.
pub(crate) fn lower_regions(input: &Input<'_>) -> Option<Output> {
    let mut seeds = input.xyz.to_vec();
    seeds.push(input.t);
    let div = divergence(input.f, input.body, &seeds)?;
    for &b in input.body {
        let barrier = input.f.blocks[b]
            .insts
            .iter()
            .any(|&i| matches!(input.f.insts[i].kind, InstKind::Barrier));
        if barrier && div.blocks.contains(&b) {
            return None;
        }
    }
    let uniform = |v: Value| !div.values.contains(&v);

    let mut g = input.f.clone();
    let parts = split(&mut g, input.body);

    // Skeleton parts: uniform arithmetic, a uniform terminator, not reachable from thread
    // code without a barrier.
    let skeleton_kind = |g: &Function, p: Block| {
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
        .filter(|&p| !skeleton_kind(&g, p))
        .collect();
    let threaded: HashSet<Block> = parts.reach(&g, &thread_parts).into_iter().collect();
    let skeleton: HashSet<Block> = parts
        .list
        .iter()
        .copied()
        .filter(|p| !threaded.contains(p))
        .collect();

    // Thread-loop entries: the first non-skeleton parts of every region.
    let mut starts = vec![input.start];
    starts.extend(&parts.resumes);
    let mut entries: Vec<Block> = Vec::new();
    let mut seen: HashSet<Block> = HashSet::new();
    let mut work: Vec<Block> = starts.clone();
    while let Some(p) = work.pop() {
        if !seen.insert(p) {
            continue;
        }
        if skeleton.contains(&p) {
            work.extend(parts.succs(&g, p));
        } else {
            entries.push(p);
        }
    }
    let order: HashMap<Block, usize> = parts
        .list
        .iter()
        .enumerate()
        .map(|(i, &b)| (b, i))
        .collect();
    entries.sort_by_key(|b| order.get(b).copied().unwrap_or(usize::MAX));
    let kernel_insts: usize = input
        .body
        .iter()
        .map(|&b| input.f.blocks[b].insts.len())
        .sum();
    let mut copied = 0;
    let bodies: Vec<Vec<Block>> = entries
        .iter()
        .map(|&e| {
            let body = parts.reach(&g, &[e]);
            copied += body.iter().map(|&p| g.blocks[p].insts.len()).sum::<usize>();
            body
        })
        .collect();
    if copied > COPY_FACTOR * kernel_insts + COPY_SLACK {
        return None;
    }

    // Liveness over the parts (a barrier's part flows into the part after it), and one state
    // word per non-uniform value live across a barrier.
    let live = {
        let g = &g;
        live_in(g, &parts.list, |b| match parts.waits.get(&b) {
            Some(&k) => vec![parts.resumes[k - 1]],
            None => g.successors(b),
        })
    };
    let empty = Vec::new();
    let live_at = |p: Block| live.get(&p).unwrap_or(&empty);
    let mut slots: BTreeMap<Value, usize> = BTreeMap::new();
    for &r in &parts.resumes {
        for &v in live_at(r) {
            if !uniform(v) {
                let n = slots.len();
                slots.entry(v).or_insert(n);
            }
        }
    }
    for &e in &entries {
        if live_at(e)
            .iter()
            .any(|v| !uniform(*v) && !slots.contains_key(v))
        {
            return None;
        }
    }
    let state_words = slots.len();

    let mut b = Builder {
        g,
        input,
        entry_insts: Vec::new(),
        layout: Vec::new(),
        defs: BTreeMap::new(),
    };
    let zero = b.at_entry(|em| em.const_u32(0));
    let ret_zero = b.g.blocks.push(BlockData::default());
    b.append(ret_zero, |em| em.ret(Some(zero)));

    // The loops' entry and head blocks, before anything jumps to them.
    let mut loops: Vec<Loop> = Vec::with_capacity(entries.len());
    for (&e, body) in entries.iter().zip(bodies) {
        let enter = b.g.blocks.push(BlockData::default());
        let head = b.g.blocks.push(BlockData::default());
        let e_params: Vec<Value> = b.g.blocks[e]
            .params
            .clone()
            .into_iter()
            .map(|p| {
                let ty = b.g.values[p].ty;
                b.g.add_block_param(enter, ty)
            })
            .collect();
        let uniform_in: Vec<Value> = live_at(e).iter().copied().filter(|&v| uniform(v)).collect();
        let uniform_params: Vec<Value> = uniform_in
            .iter()
            .map(|&v| {
                let ty = b.g.values[v].ty;
                b.g.add_block_param(enter, ty)
            })
            .collect();
        let [x, y, z, t] = [(); 4].map(|_| b.g.add_block_param(head, Type::U32));
        let narrowing = narrowing(&b.g, &parts, &live, &div, &body, e, input);
        loops.push(Loop {
            e,
            body,
            enter,
            head,
            x,
            y,
            z,
            t,
            uniform_in,
            uniform_params,
            e_params,
            narrowing,
        });
    }
    let enter_of: HashMap<Block, usize> = loops.iter().enumerate().map(|(i, l)| (l.e, i)).collect();

    // Where the block goes after barrier k (0: the end).
    let continue_to = |k: usize| -> BlockCall {
        if k == 0 {
            return BlockCall {
                block: ret_zero,
                args: Vec::new(),
            };
        }
        let r = parts.resumes[k - 1];
        match enter_of.get(&r) {
            Some(&i) => BlockCall {
                block: loops[i].enter,
                args: loops[i].uniform_in.clone(),
            },
            None => BlockCall {
                block: r,
                args: Vec::new(),
            },
        }
    };

    // The skeleton: jumps to thread-loop entries go to the loop's entry block; barriers go to
    // the next region; returns end the block.
    let mut skeleton_parts: Vec<Block> = parts
        .list
        .iter()
        .copied()
        .filter(|p| skeleton.contains(p))
        .collect();
    skeleton_parts.sort_by_key(|b| order[b]);
    for &p in &skeleton_parts {
        if let Some(&k) = parts.waits.get(&p) {
            let call = continue_to(k);
            b.append(p, |em| em.jump(call.block, call.args));
            continue;
        }
        let Some(term) = b.g.terminator(p) else {
            continue;
        };
        if matches!(b.g.insts[term].kind, InstKind::Return(_)) {
            b.g.insts[term].kind = InstKind::Jump(BlockCall {
                block: ret_zero,
                args: Vec::new(),
            });
            continue;
        }
        for call in b.g.insts[term].kind.successors_mut() {
            if let Some(&i) = enter_of.get(&call.block) {
                call.block = loops[i].enter;
                call.args.extend(loops[i].uniform_in.iter().copied());
            }
        }
    }
    let start_call = match enter_of.get(&input.start) {
        Some(&i) => BlockCall {
            block: loops[i].enter,
            args: loops[i].uniform_in.clone(),
        },
        None => BlockCall {
            block: input.start,
            args: Vec::new(),
        },
    };
    b.append(input.entry, |em| em.jump(start_call.block, start_call.args));
    b.layout.push(input.entry);
    b.layout.extend(&skeleton_parts);

    for l in &loops {
        b.build_loop(l, &parts, &live, &slots, &continue_to);
    }
    b.layout.push(ret_zero);

    // Reconnect every use to its reaching definition.
    let vars: Vec<Variable> = std::mem::take(&mut b.defs)
        .into_iter()
        .map(|(value, redefs)| Variable { value, redefs })
        .collect();
    b.g.layout = b.layout.clone();
    let region = b.layout.clone();
    let mut zeros: Vec<Inst> = Vec::new();
    repair(&mut b.g, &region, &vars, &mut |f, ty| {
        let mut em = FunctionBuilder::detached(f);
        let v = em.const_bits(ty, 0);
        zeros.extend(em.into_insts());
        v
    });
    b.entry_insts.extend(zeros);
    Some(Output {
        f: b.g,
        entry_insts: b.entry_insts,
        state_words,
        loops: loops.len(),
        narrowed: loops.iter().filter(|l| l.narrowing.is_some()).count(),
    })
}

/// The narrowing of the loop entered at `e` (see the module docs), if it applies.
fn narrowing(
    f: &Function,
    parts: &Parts,
    live: &HashMap<Block, Vec<Value>>,
    div: &Divergence,
    body: &[Block],
    e: Block,
    input: &Input<'_>,
) -> Option<Narrowing> {
    let insts = &f.blocks[e].insts;
    let (&term, rest) = insts.split_last()?;
    let InstKind::Branch {
        cond,
        then_dest,
        else_dest,
    } = &f.insts[term].kind
    else {
        return None;
    };
    // Nothing with effects before the branch: skipped threads lose nothing.
    if rest
        .iter()
        .any(|&i| !f.insts[i].kind.is_pure(|v| f.values[v].ty))
    {
        return None;
    }
    let cmp = rest
        .iter()
        .copied()
        .find(|&i| f.insts[i].result == Some(*cond))?;
    let InstKind::Cmp(op, a, bb) = f.insts[cmp].kind else {
        return None;
    };
    let x = input.xyz[0];
    let (op, other) = if a == x {
        (op, bb)
    } else if bb == x {
        (flip(op), a)
    } else {
        return None;
    };
    let in_body: HashSet<Block> = body.iter().copied().collect();
    let defined_in_body = |v: Value| match f.values[v].def {
        nacre_ir::ValueDef::Result(i) => body.iter().any(|&p| f.blocks[p].insts.contains(&i)),
        nacre_ir::ValueDef::Param(blk, _) => in_body.contains(&blk),
    };
    // A value of the entry, or one defined before the loop and uniform.
    let available =
        input.uniform.contains(&other) || (!defined_in_body(other) && !div.values.contains(&other));
    let bound = if available {
        Bound::Value(other)
    } else {
        let nacre_ir::ValueDef::Result(i) = f.values[other].def else {
            return None;
        };
        match f.insts[i].kind {
            InstKind::Const(c) => Bound::Const(c.bits),
            _ => return None,
        }
    };
    // The side that goes straight to a stop.
    let trivial = |call: &BlockCall| -> Option<usize> {
        let p = call.block;
        if p == e {
            return None;
        }
        let insts = &f.blocks[p].insts;
        let k = match (insts.as_slice(), parts.waits.get(&p)) {
            ([], Some(&k)) => k,
            ([only], None) if matches!(f.insts[*only].kind, InstKind::Return(_)) => 0,
            _ => return None,
        };
        if k > 0 {
            let after = live
                .get(&parts.resumes[k - 1])
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            if after
                .iter()
                .any(|&v| div.values.contains(&v) || defined_in_body(v))
            {
                return None;
            }
        }
        Some(k)
    };
    let (op, keep, stop) = if let Some(k) = trivial(else_dest) {
        (op, then_dest.clone(), k)
    } else if let Some(k) = trivial(then_dest) {
        (negate(op), else_dest.clone(), k)
    } else {
        return None;
    };
    if op == CmpOp::Ne {
        return None;
    }
    Some(Narrowing {
        op,
        bound,
        keep,
        stop,
    })
}

/// The state of the construction.
struct Builder<'a> {
    g: Function,
    input: &'a Input<'a>,
    entry_insts: Vec<Inst>,
    layout: Vec<Block>,
    /// For each value with several definitions: block → the definition there.
    defs: BTreeMap<Value, HashMap<Block, Value>>,
}

impl Builder<'_> {
    fn at_entry<R>(&mut self, build: impl FnOnce(&mut FunctionBuilder<'_>) -> R) -> R {
        let mut em = FunctionBuilder::detached(&mut self.g);
        let r = build(&mut em);
        self.entry_insts.extend(em.into_insts());
        r
    }

    fn append<R>(&mut self, block: Block, build: impl FnOnce(&mut FunctionBuilder<'_>) -> R) {
        let mut em = FunctionBuilder::detached(&mut self.g);
        build(&mut em);
        let insts = em.into_insts();
        self.g.blocks[block].insts.extend(insts);
    }

    fn def(&mut self, v: Value, block: Block, def: Value) {
        self.defs.entry(v).or_default().insert(block, def);
    }

    /// Builds loop `l`: its entry, head, body copy and the advance to the next thread.
    fn build_loop(
        &mut self,
        l: &Loop,
        parts: &Parts,
        live: &HashMap<Block, Vec<Value>>,
        slots: &BTreeMap<Value, usize>,
        continue_to: &dyn Fn(usize) -> BlockCall,
    ) {
        let [bdx, bdy, bdz] = self.input.dims;
        let empty = Vec::new();
        let live_at = |p: Block| live.get(&p).unwrap_or(&empty);

        // The entry: the range of x, then the first thread.
        let uniform_map: HashMap<Value, Value> = l
            .uniform_in
            .iter()
            .copied()
            .zip(l.uniform_params.iter().copied())
            .collect();
        let mut em = FunctionBuilder::detached(&mut self.g);
        let zero = em.const_u32(0);
        let one = em.const_u32(1);
        let (lo, hi) = match &l.narrowing {
            None => (zero, bdx),
            Some(n) => {
                let u = match n.bound {
                    Bound::Value(v) => uniform_map.get(&v).copied().unwrap_or(v),
                    Bound::Const(bits) => em.const_u32(bits as u32),
                };
                // min(u, bdx) and min(u + 1, bdx), without wrapping.
                let below = em.cmp(CmpOp::Lt, u, bdx);
                let u_min = em.select(below, u, bdx);
                let u1 = em.binary(BinaryOp::Add, u, one);
                let u1_min = em.select(below, u1, bdx);
                match n.op {
                    CmpOp::Lt => (zero, u_min),
                    CmpOp::Le => (zero, u1_min),
                    CmpOp::Gt => (u1_min, bdx),
                    CmpOp::Ge => (u_min, bdx),
                    _ => (u_min, u1_min),
                }
            }
        };
        let enter_insts = em.into_insts();
        self.g.blocks[l.enter].insts = enter_insts;
        let head_args = vec![lo, zero, zero, lo];
        match &l.narrowing {
            None => self.append(l.enter, |em| em.jump(l.head, head_args)),
            Some(n) => {
                let skip = continue_to(n.stop);
                let head = l.head;
                self.append(l.enter, |em| {
                    let none = em.cmp(CmpOp::Ge, lo, hi);
                    em.branch(none, skip.block, skip.args, head, head_args);
                });
            }
        }

        // The body, with threadIdx from the head.
        let seed: HashMap<Value, Value> = HashMap::from([
            (self.input.xyz[0], l.x),
            (self.input.xyz[1], l.y),
            (self.input.xyz[2], l.z),
            (self.input.t, l.t),
        ]);
        let copy = copy_blocks(&mut self.g, &l.body, &seed, false);
        for &p in &l.body {
            let c = copy.blocks[&p];
            let params = self.g.blocks[p].params.clone();
            for v in params {
                self.def(v, c, copy.values[&v]);
            }
            let insts = self.g.blocks[p].insts.clone();
            for i in insts {
                if let Some(r) = self.g.insts[i].result {
                    self.def(r, c, copy.values[&r]);
                }
            }
        }
        let e_copy = copy.blocks[&l.e];

        // The head: the thread's state, reloads, uniform values as on entry, then `e`.
        let words = slots.len() as u64;
        let uses_state = words > 0
            && (live_at(l.e).iter().any(|v| slots.contains_key(v))
                || l.body.iter().any(|p| {
                    parts.waits.get(p).is_some_and(|&k| {
                        live_at(parts.resumes[k - 1])
                            .iter()
                            .any(|v| slots.contains_key(v))
                    })
                }));
        let base = self.input.state_base;
        let t = l.t;
        let mut em = FunctionBuilder::detached(&mut self.g);
        let state = uses_state.then(|| {
            let t64 = em.cast(t, Type::U64);
            let stride = em.const_u64(words * 8);
            let off = em.binary(BinaryOp::Mul, t64, stride);
            em.binary(BinaryOp::Add, base, off)
        });
        let mut reloads = Vec::new();
        if let Some(state) = state {
            for &v in live_at(l.e) {
                if let Some(&slot) = slots.get(&v) {
                    let ty = em.value_type(v);
                    reloads.push((v, load_slot(&mut em, state, slot, ty)));
                }
            }
        }
        em.jump(e_copy, l.e_params.clone());
        let insts = em.into_insts();
        self.g.blocks[l.head].insts = insts;
        for (v, r) in reloads {
            self.def(v, l.head, r);
        }
        for (&v, &p) in l.uniform_in.iter().zip(&l.uniform_params) {
            self.def(v, l.head, p);
        }

        // Stops: save, then the next thread. Narrowed: the kept threads skip the test.
        let mut stops: BTreeMap<usize, Block> = BTreeMap::new();
        for &p in &l.body {
            let c = copy.blocks[&p];
            if let Some(&k) = parts.waits.get(&p) {
                let next = *stops
                    .entry(k)
                    .or_insert_with(|| self.g.blocks.push(BlockData::default()));
                let saves: Vec<(Value, usize, Type)> = live_at(parts.resumes[k - 1])
                    .iter()
                    .filter_map(|&v| slots.get(&v).map(|&s| (v, s, self.g.values[v].ty)))
                    .collect();
                self.append(c, |em| {
                    if let Some(state) = state {
                        for (v, slot, ty) in saves {
                            store_slot(em, state, slot, v, ty);
                        }
                    }
                    em.jump(next, Vec::new());
                });
                continue;
            }
            let Some(term) = self.g.terminator(c) else {
                continue;
            };
            if matches!(self.g.insts[term].kind, InstKind::Return(_)) {
                let next = *stops
                    .entry(0)
                    .or_insert_with(|| self.g.blocks.push(BlockData::default()));
                self.g.insts[term].kind = InstKind::Jump(BlockCall {
                    block: next,
                    args: Vec::new(),
                });
            }
        }
        if let Some(n) = &l.narrowing {
            if let Some(term) = self.g.terminator(e_copy) {
                let mut keep = n.keep.clone();
                if let Some(&kb) = copy.blocks.get(&keep.block) {
                    keep.block = kb;
                }
                keep.args = keep
                    .args
                    .iter()
                    .map(|a| seed.get(a).copied().unwrap_or(*a))
                    .collect();
                self.g.insts[term].kind = InstKind::Jump(keep);
            }
        }

        self.layout.extend([l.enter, l.head]);
        self.layout.extend(l.body.iter().map(|p| copy.blocks[p]));
        let (x, y, z) = (l.x, l.y, l.z);
        for (k, next) in stops {
            let row = self.g.blocks.push(BlockData::default());
            let plane = self.g.blocks.push(BlockData::default());
            let out = self.g.blocks.push(BlockData::default());
            let head = l.head;
            self.append(next, |em| {
                let one = em.const_u32(1);
                let x1 = em.binary(BinaryOp::Add, x, one);
                let t1 = em.binary(BinaryOp::Add, t, one);
                let more = em.cmp(CmpOp::Lt, x1, hi);
                em.branch(more, head, vec![x1, y, z, t1], row, Vec::new());
            });
            self.append(row, |em| {
                let one = em.const_u32(1);
                let y1 = em.binary(BinaryOp::Add, y, one);
                let more = em.cmp(CmpOp::Lt, y1, bdy);
                let zy = em.binary(BinaryOp::Mul, z, bdy);
                let rows = em.binary(BinaryOp::Add, zy, y1);
                let first = em.binary(BinaryOp::Mul, rows, bdx);
                let t_row = em.binary(BinaryOp::Add, first, lo);
                em.branch(more, head, vec![lo, y1, z, t_row], plane, Vec::new());
            });
            self.append(plane, |em| {
                let one = em.const_u32(1);
                let zero = em.const_u32(0);
                let z1 = em.binary(BinaryOp::Add, z, one);
                let more = em.cmp(CmpOp::Lt, z1, bdz);
                let zy = em.binary(BinaryOp::Mul, z1, bdy);
                let first = em.binary(BinaryOp::Mul, zy, bdx);
                let t_plane = em.binary(BinaryOp::Add, first, lo);
                em.branch(more, head, vec![lo, zero, z1, t_plane], out, Vec::new());
            });
            let cont = continue_to(k);
            self.append(out, |em| em.jump(cont.block, cont.args));
            self.layout.extend([next, row, plane, out]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nacre_ir::{Const, FuncKind, FunctionBuilder, Signature};

    fn func(params: usize) -> Function {
        Function::new(
            "f",
            FuncKind::Host,
            Signature {
                params: vec![Type::U32; params],
                ret: None,
            },
        )
    }

    fn konst(b: &mut FunctionBuilder<'_>, x: u64) -> Value {
        b.constant(Const {
            ty: Type::U32,
            bits: x,
        })
    }

    /// `entry(u, t): br t < 5, a, join(1)  a: jump join(u)  join(p): br u > 0, loop, exit`
    /// `loop: jump join(p)  exit: return` with `t` divergent.
    fn diamond_and_loop() -> (Function, [Block; 5], [Value; 3]) {
        let mut f = func(2);
        let mut b = FunctionBuilder::new(&mut f);
        let p = b.create_entry_block();
        let (u, t) = (p[0], p[1]);
        let entry = b.current_block().unwrap();
        let a = b.create_block();
        let join = b.create_block();
        let jp = b.append_block_param(join, Type::U32);
        let lp = b.create_block();
        let exit = b.create_block();
        let five = konst(&mut b, 5);
        let c = b.cmp(CmpOp::Lt, t, five);
        let one = konst(&mut b, 1);
        b.branch(c, a, vec![], join, vec![one]);
        b.switch_to_block(a);
        b.jump(join, vec![u]);
        b.switch_to_block(join);
        let zero = konst(&mut b, 0);
        let d = b.cmp(CmpOp::Gt, u, zero);
        b.branch(d, lp, vec![], exit, vec![]);
        b.switch_to_block(lp);
        b.jump(join, vec![jp]);
        b.switch_to_block(exit);
        b.ret(None);
        (f, [entry, a, join, lp, exit], [u, t, jp])
    }

    #[test]
    fn immediate_post_dominators() {
        let (f, [entry, a, join, lp, exit], _) = diamond_and_loop();
        let body = [entry, a, join, lp, exit];
        let ipdom = PostDominators::compute(&f, &body).unwrap();
        assert_eq!(ipdom.ipdom(entry), Some(join));
        assert_eq!(ipdom.ipdom(a), Some(join));
        assert_eq!(ipdom.ipdom(lp), Some(join));
        assert_eq!(ipdom.ipdom(join), Some(exit));
        assert_eq!(ipdom.ipdom(exit), None);

        // A loop with no way out has no post-dominators.
        let mut f = func(0);
        let mut b = FunctionBuilder::new(&mut f);
        b.create_entry_block();
        let entry = b.current_block().unwrap();
        let spin = b.create_block();
        b.jump(spin, vec![]);
        b.switch_to_block(spin);
        b.jump(spin, vec![]);
        assert!(PostDominators::compute(&f, &[entry, spin]).is_none());
    }

    #[test]
    fn divergence_follows_branches_to_their_post_dominator() {
        let (f, [entry, a, join, lp, exit], [u, t, jp]) = diamond_and_loop();
        let body = [entry, a, join, lp, exit];
        let div = divergence(&f, &body, &[t]).unwrap();
        // The branch on `t` is divergent up to `join`, whose parameter differs per thread.
        assert!(div.blocks.contains(&a));
        assert!(!div.blocks.contains(&join) && !div.blocks.contains(&entry));
        assert!(div.values.contains(&jp) && !div.values.contains(&u));
        // The loop's branch is on `u`: uniform, its blocks too.
        assert!(!div.blocks.contains(&lp) && !div.blocks.contains(&exit));

        // With `t` uniform, nothing diverges.
        let div = divergence(&f, &body, &[]).unwrap();
        assert!(div.blocks.is_empty() && div.values.is_empty());
    }

    #[test]
    fn comparisons_flip_and_negate() {
        for op in CmpOp::ALL {
            for (a, b) in [(1u32, 2u32), (2, 2), (3, 2)] {
                let holds = |op: CmpOp, a: u32, b: u32| match op {
                    CmpOp::Eq => a == b,
                    CmpOp::Ne => a != b,
                    CmpOp::Lt => a < b,
                    CmpOp::Le => a <= b,
                    CmpOp::Gt => a > b,
                    CmpOp::Ge => a >= b,
                };
                assert_eq!(holds(flip(op), b, a), holds(op, a, b), "{op:?}");
                assert_eq!(holds(negate(op), a, b), !holds(op, a, b), "{op:?}");
            }
        }
    }
}
