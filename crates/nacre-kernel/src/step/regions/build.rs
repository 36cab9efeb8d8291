//! The construction of the step function from the analyses (see the shape in the docs of
//! `regions`): the skeleton rewired to the thread loops, each thread loop (its entry block,
//! head, copy of its body, stops and the advance to the next thread), and the SSA repair
//! that reconnects every use to its reaching definition.

use super::carry::{self, Carried};
use super::narrow::{narrowing, Narrowing};
use super::parts::{Parts, Regions};
use super::uniformity::Divergence;
use super::{Input, Output};
use crate::step::state::{repair_uses, Lane};
use nacre_ir::transform::{copy_blocks, Copied, Variable};
use nacre_ir::FunctionBuilder;
use nacre_ir::{
    BinaryOp, Block, BlockCall, BlockData, CmpOp, Function, Inst, InstKind, Type, Value,
};
use std::collections::{BTreeMap, HashMap};

/// Builds the step function: `g` is the kernel split into `parts`.
pub(super) fn build(
    g: Function,
    input: &Input<'_>,
    parts: &Parts,
    div: &Divergence,
    regions: Regions,
    carried: &Carried,
) -> Output {
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
    let loops: Vec<Loop> = regions
        .entries
        .iter()
        .zip(regions.bodies)
        .map(|(&e, body)| b.new_loop(e, body, parts, carried, div))
        .collect();
    let targets = Targets::new(parts, &loops, ret_zero);

    b.wire_skeleton(&regions.skeleton, parts, &targets);
    for l in &loops {
        b.build_loop(l, parts, carried, &targets);
    }
    b.layout.push(ret_zero);
    b.finish(carried, &loops)
}

/// One thread loop being built.
struct Loop {
    /// Its entry part.
    e: Block,
    /// The parts its body copies, `e` first.
    body: Vec<Block>,
    enter: Block,
    /// The head of a row of threads: parameters `y`, `z` (`u32`).
    row: Block,
    row_y: Value,
    row_z: Value,
    head: Block,
    /// Head parameters: `threadIdx` x, y, z, the linear thread index, and the row's linear
    /// index less `lo` as `u64` (so that the thread's `u64` index is that plus `x`, an
    /// expression a vectorising compiler sees advance by one with `x`).
    x: Value,
    y: Value,
    z: Value,
    t: Value,
    row_base: Value,
    /// Uniform values live into `e`, and the entry block's parameters that receive them.
    uniform_in: Vec<Value>,
    uniform_params: Vec<Value>,
    /// Parameters of `enter` that receive the arguments for `e`'s own parameters.
    e_params: Vec<Value>,
    narrowing: Option<Narrowing>,
}

/// Where the block goes on: into a part from the skeleton or after a barrier, or to the end.
struct Targets<'a> {
    parts: &'a Parts,
    loops: &'a [Loop],
    /// Entry part → its loop.
    enter_of: HashMap<Block, usize>,
    /// The block that returns 0.
    ret_zero: Block,
}

impl<'a> Targets<'a> {
    fn new(parts: &'a Parts, loops: &'a [Loop], ret_zero: Block) -> Targets<'a> {
        let enter_of = loops.iter().enumerate().map(|(i, l)| (l.e, i)).collect();
        Targets {
            parts,
            loops,
            enter_of,
            ret_zero,
        }
    }

    /// The loop entered at part `p`, if `p` is a loop's entry.
    fn loop_at(&self, p: Block) -> Option<&'a Loop> {
        self.enter_of.get(&p).map(|&i| &self.loops[i])
    }

    /// Going to part `p`: its loop's entry block, or `p` itself (a skeleton part).
    fn enter(&self, p: Block) -> BlockCall {
        match self.loop_at(p) {
            Some(l) => BlockCall {
                block: l.enter,
                args: l.uniform_in.clone(),
            },
            None => BlockCall {
                block: p,
                args: Vec::new(),
            },
        }
    }

    /// Where the block goes after barrier k (0: the end).
    fn after(&self, k: usize) -> BlockCall {
        if k == 0 {
            return BlockCall {
                block: self.ret_zero,
                args: Vec::new(),
            };
        }
        self.enter(self.parts.resumes[k - 1])
    }
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

    /// Creates the entry and head blocks of the loop entered at `e` with `body`.
    fn new_loop(
        &mut self,
        e: Block,
        body: Vec<Block>,
        parts: &Parts,
        carried: &Carried,
        div: &Divergence,
    ) -> Loop {
        let g = &mut self.g;
        let enter = g.blocks.push(BlockData::default());
        let row = g.blocks.push(BlockData::default());
        let head = g.blocks.push(BlockData::default());
        let e_params: Vec<Value> = g.blocks[e]
            .params
            .clone()
            .into_iter()
            .map(|p| {
                let ty = g.values[p].ty;
                g.add_block_param(enter, ty)
            })
            .collect();
        let uniform_in: Vec<Value> = carried
            .live_at(e)
            .iter()
            .copied()
            .filter(|&v| div.uniform(v))
            .collect();
        let uniform_params: Vec<Value> = uniform_in
            .iter()
            .map(|&v| {
                let ty = g.values[v].ty;
                g.add_block_param(enter, ty)
            })
            .collect();
        let [row_y, row_z] = [(); 2].map(|_| g.add_block_param(row, Type::U32));
        let [x, y, z, t] = [(); 4].map(|_| g.add_block_param(head, Type::U32));
        let row_base = g.add_block_param(head, Type::U64);
        let narrowing = narrowing(g, parts, carried, div, &body, e, self.input);
        let mut l = Loop {
            e,
            body,
            enter,
            row,
            row_y,
            row_z,
            head,
            x,
            y,
            z,
            t,
            row_base,
            uniform_in,
            uniform_params,
            e_params,
            narrowing,
        };
        // A row skipped whole reaches no stop: per-row ranges need one stop for all.
        if let Some(n) = &l.narrowing {
            if n.per_row() && self.stops_of(&l, parts) != [n.stop()] {
                l.narrowing = None;
            }
        }
        l
    }

    /// The skeleton: jumps to thread-loop entries go to the loop's entry block; barriers go to
    /// the next region; returns end the block. The entry block jumps to the first region.
    fn wire_skeleton(&mut self, skeleton: &[Block], parts: &Parts, targets: &Targets<'_>) {
        for &p in skeleton {
            if let Some(&k) = parts.waits.get(&p) {
                let call = targets.after(k);
                self.append(p, |em| em.jump(call.block, call.args));
                continue;
            }
            let Some(term) = self.g.terminator(p) else {
                continue;
            };
            if matches!(self.g.insts[term].kind, InstKind::Return(_)) {
                self.g.insts[term].kind = InstKind::Jump(targets.after(0));
                continue;
            }
            for call in self.g.insts[term].kind.successors_mut() {
                if let Some(l) = targets.loop_at(call.block) {
                    call.block = l.enter;
                    call.args.extend(l.uniform_in.iter().copied());
                }
            }
        }
        let start_call = targets.enter(self.input.start);
        let entry = self.input.entry;
        self.append(entry, |em| em.jump(start_call.block, start_call.args));
        self.layout.push(entry);
        self.layout.extend(skeleton);
    }

    /// Builds loop `l`: its entry, rows, head, body copy and the advance to the next thread:
    ///
    /// ```text
    /// enter:             lo..hi (narrowed or 0..blockDim.x); jump row(0, 0)
    /// row(y, z):         t = (z * bdy + y) * bdx + lo; jump head(lo, y, z, t, t - lo)
    /// head(x, y, z, t, base):  reloads; ... the body ...; each stop: saves, jump next(k)
    /// next(k):           x + 1 < hi ? head(x + 1, y, z, t + 1, base) : rows(k)
    /// rows(k):           y + 1 < bdy ? row(y + 1, z) : planes(k)
    /// planes(k):         z + 1 < bdz ? row(0, z + 1) : out(k)
    /// out(k):            on to the region after barrier k (0: the end)
    /// ```
    ///
    /// The loop over `x` has one back edge, so the C compiler sees an innermost loop it can
    /// vectorise.
    fn build_loop(&mut self, l: &Loop, parts: &Parts, carried: &Carried, targets: &Targets<'_>) {
        let range = self.build_enter(l, targets);
        let rows = self.g.blocks.push(BlockData::default());
        let [rows_y, rows_z] = [(); 2].map(|_| self.g.add_block_param(rows, Type::U32));

        // The body, with threadIdx from the head.
        let seed: HashMap<Value, Value> = HashMap::from([
            (self.input.xyz[0], l.x),
            (self.input.xyz[1], l.y),
            (self.input.xyz[2], l.z),
            (self.input.t, l.t),
        ]);
        let copy = self.copy_body(l, &seed);
        let e_copy = copy.blocks[&l.e];

        let hi = self.build_row(l, range, (rows, [rows_y, rows_z]));
        let lane = self.build_head(l, parts, carried, (e_copy, &seed));
        let (next, stop) = self.build_stops(l, parts, carried, &copy, lane);
        // Narrowed: the kept threads skip the test.
        if let Some(n) = &l.narrowing {
            if let Some(term) = self.g.terminator(e_copy) {
                self.g.insts[term].kind = InstKind::Jump(n.kept(&copy, &seed));
            }
        }

        self.layout.extend([l.enter, l.row, l.head]);
        self.layout.extend(l.body.iter().map(|p| copy.blocks[p]));
        let stops = self.stops_of(l, parts);
        self.build_advance(
            l,
            hi,
            (next, stop),
            (rows, [rows_y, rows_z]),
            &stops,
            targets,
        );
    }

    /// The loop's entry block: the range `lo..hi` of x (returned; `None` where it is per
    /// row), then the first row (or, narrowed to an empty range, straight on).
    fn build_enter(&mut self, l: &Loop, targets: &Targets<'_>) -> Option<(Value, Value)> {
        let bdx = self.input.dims[0];
        let uniform_map = self.uniform_map(l);
        let mut em = FunctionBuilder::detached(&mut self.g);
        let zero = em.const_u32(0);
        let range = match &l.narrowing {
            None => Some((zero, bdx)),
            Some(n) if n.per_row() => None,
            Some(n) => Some(n.range(&mut em, &uniform_map, bdx, [zero, zero])),
        };
        let enter_insts = em.into_insts();
        self.g.blocks[l.enter].insts = enter_insts;
        let row_args = vec![zero, zero];
        match (&l.narrowing, range) {
            (Some(n), Some((lo, hi))) => {
                let skip = targets.after(n.stop());
                let row = l.row;
                self.append(l.enter, |em| {
                    let none = em.cmp(CmpOp::Ge, lo, hi);
                    em.branch(none, skip.block, skip.args, row, row_args);
                });
            }
            _ => self.append(l.enter, |em| em.jump(l.row, row_args)),
        }
        range
    }

    /// The uniform values live into the loop → the entry block's parameters that hold them.
    fn uniform_map(&self, l: &Loop) -> HashMap<Value, Value> {
        l.uniform_in
            .iter()
            .copied()
            .zip(l.uniform_params.iter().copied())
            .collect()
    }

    /// The head of a row: its range of x (`range`, or the row's own where narrowed per row,
    /// an empty one going on to the next row at `rows`), the linear index of its first
    /// thread, then the head. Returns the end of the range.
    fn build_row(
        &mut self,
        l: &Loop,
        range: Option<(Value, Value)>,
        (rows, _): (Block, [Value; 2]),
    ) -> Value {
        let [bdx, bdy, _] = self.input.dims;
        let (y, z) = (l.row_y, l.row_z);
        let head = l.head;
        let uniform_map = self.uniform_map(l);
        let mut em = FunctionBuilder::detached(&mut self.g);
        let (lo, hi) = match (range, &l.narrowing) {
            (Some(r), _) => r,
            (None, Some(n)) => n.range(&mut em, &uniform_map, bdx, [y, z]),
            (None, None) => unreachable!("a loop without a range is narrowed per row"),
        };
        let zy = em.binary(BinaryOp::Mul, z, bdy);
        let rows_before = em.binary(BinaryOp::Add, zy, y);
        let first = em.binary(BinaryOp::Mul, rows_before, bdx);
        let t = em.binary(BinaryOp::Add, first, lo);
        let first64 = em.cast(first, Type::U64);
        let args = vec![lo, y, z, t, first64];
        if range.is_some() {
            em.jump(head, args);
        } else {
            let empty = em.cmp(CmpOp::Ge, lo, hi);
            em.branch(empty, rows, vec![y, z], head, args);
        }
        let insts = em.into_insts();
        self.g.blocks[l.row].insts.extend(insts);
        hi
    }

    /// Copies the loop's body, threadIdx replaced per `seed`; the copies of its values are
    /// their definitions in the copied blocks.
    fn copy_body(&mut self, l: &Loop, seed: &HashMap<Value, Value>) -> Copied {
        let copy = copy_blocks(&mut self.g, &l.body, seed, false);
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
        copy
    }

    /// The head: the thread's place in the state, reloads, uniform values as on entry, then
    /// `e` (its copy `e_copy`). Returns the place, if the loop uses the state.
    fn build_head(
        &mut self,
        l: &Loop,
        parts: &Parts,
        carried: &Carried,
        (e_copy, seed): (Block, &HashMap<Value, Value>),
    ) -> Option<Lane> {
        let base = self.input.state_base;
        let touched = carry::touched_in(&self.g, &l.body);
        let mut em = FunctionBuilder::detached(&mut self.g);
        let x64 = em.cast(l.x, Type::U64);
        let t = em.binary(BinaryOp::Add, l.row_base, x64);
        let lane = Lane { base, t };
        let input = self.input;
        let (lane, reloads) = carried.reload(
            &mut em,
            input,
            parts,
            (l.e, &l.body, &touched),
            (lane, seed),
        );
        em.jump(e_copy, l.e_params.clone());
        let insts = em.into_insts();
        self.g.blocks[l.head].insts = insts;
        for (v, r) in reloads {
            self.def(v, l.head, r);
        }
        for (&v, &p) in l.uniform_in.iter().zip(&l.uniform_params) {
            self.def(v, l.head, p);
        }
        lane
    }

    /// Stops: save, then `next(k)` with `k` the barrier (0: the threads that return). Returns
    /// `next` and its parameter.
    fn build_stops(
        &mut self,
        l: &Loop,
        parts: &Parts,
        carried: &Carried,
        copy: &Copied,
        lane: Option<Lane>,
    ) -> (Block, Value) {
        let next = self.g.blocks.push(BlockData::default());
        let stop = self.g.add_block_param(next, Type::U32);
        let defined = carry::defined_in(&self.g, &l.body);
        for &p in &l.body {
            let c = copy.blocks[&p];
            if let Some(&k) = parts.waits.get(&p) {
                let saves = carried.saves(&self.g, parts, (k, &defined));
                self.append(c, |em| {
                    carry::save(em, lane, saves);
                    let k = em.const_u32(k as u32);
                    em.jump(next, vec![k]);
                });
                continue;
            }
            let Some(term) = self.g.terminator(c) else {
                continue;
            };
            if matches!(self.g.insts[term].kind, InstKind::Return(_)) {
                let mut em = FunctionBuilder::detached(&mut self.g);
                let zero = em.const_u32(0);
                let made = em.into_insts();
                let insts = &mut self.g.blocks[c].insts;
                insts.splice(insts.len() - 1..insts.len() - 1, made);
                self.g.insts[term].kind = InstKind::Jump(BlockCall {
                    block: next,
                    args: vec![zero],
                });
            }
        }
        (next, stop)
    }

    /// The advance from `next` over x below `hi`, then y, then z; past the last thread, on to
    /// the region after the barrier the last thread stopped at.
    fn build_advance(
        &mut self,
        l: &Loop,
        hi: Value,
        (next, stop): (Block, Value),
        (rows, [rows_y, rows_z]): (Block, [Value; 2]),
        stops: &[usize],
        targets: &Targets<'_>,
    ) {
        let [_, bdy, bdz] = self.input.dims;
        let (x, y, z, t, base) = (l.x, l.y, l.z, l.t, l.row_base);
        let planes = self.g.blocks.push(BlockData::default());
        let planes_z = self.g.add_block_param(planes, Type::U32);
        let out = self.g.blocks.push(BlockData::default());
        let (head, row) = (l.head, l.row);
        self.append(next, |em| {
            let one = em.const_u32(1);
            let x1 = em.binary(BinaryOp::Add, x, one);
            let t1 = em.binary(BinaryOp::Add, t, one);
            let more = em.cmp(CmpOp::Lt, x1, hi);
            em.branch(more, head, vec![x1, y, z, t1, base], rows, vec![y, z]);
        });
        self.append(rows, |em| {
            let one = em.const_u32(1);
            let y1 = em.binary(BinaryOp::Add, rows_y, one);
            let more = em.cmp(CmpOp::Lt, y1, bdy);
            em.branch(more, row, vec![y1, rows_z], planes, vec![rows_z]);
        });
        self.append(planes, |em| {
            let one = em.const_u32(1);
            let zero = em.const_u32(0);
            let z1 = em.binary(BinaryOp::Add, planes_z, one);
            let more = em.cmp(CmpOp::Lt, z1, bdz);
            em.branch(more, row, vec![zero, z1], out, Vec::new());
        });
        // Where the last thread stopped (every thread of the loop stops at the same barrier,
        // or returns).
        let (&last, stops) = stops.split_last().unwrap_or((&0, &[]));
        let mut at = out;
        for &k in stops {
            let call = targets.after(k);
            let rest = self.g.blocks.push(BlockData::default());
            self.append(at, |em| {
                let kk = em.const_u32(k as u32);
                let here = em.cmp(CmpOp::Eq, stop, kk);
                em.branch(here, call.block, call.args, rest, Vec::new());
            });
            self.layout.push(at);
            at = rest;
        }
        let call = targets.after(last);
        self.append(at, |em| em.jump(call.block, call.args));
        self.layout.extend([next, rows, planes, at]);
    }

    /// The barriers the loop's threads stop at (0 for a return), in increasing order.
    fn stops_of(&self, l: &Loop, parts: &Parts) -> Vec<usize> {
        let mut stops: Vec<usize> = l
            .body
            .iter()
            .filter_map(|p| match parts.waits.get(p) {
                Some(&k) => Some(k),
                None => self
                    .g
                    .terminator(*p)
                    .filter(|&t| matches!(self.g.insts[t].kind, InstKind::Return(_)))
                    .map(|_| 0),
            })
            .collect();
        stops.sort_unstable();
        stops.dedup();
        stops
    }

    /// Reconnects every use to its reaching definition and returns the step function.
    fn finish(mut self, carried: &Carried, loops: &[Loop]) -> Output {
        let vars: Vec<Variable> = std::mem::take(&mut self.defs)
            .into_iter()
            .map(|(value, redefs)| Variable { value, redefs })
            .collect();
        self.g.layout = self.layout.clone();
        let region = self.layout.clone();
        let zeros = repair_uses(&mut self.g, &region, &vars);
        self.entry_insts.extend(zeros);
        Output {
            f: self.g,
            entry_insts: self.entry_insts,
            state_words: carried.words(),
            loops: loops.len(),
            narrowed: loops.iter().filter(|l| l.narrowing.is_some()).count(),
        }
    }
}
