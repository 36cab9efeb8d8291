//! The resumable state machine ([`StepShape::StateMachine`](super::StepShape::StateMachine)):
//! the lowering of barriers in divergent control flow and of the yields of grid-stride loops
//! (see "Barriers" in the docs of `lower`).
//!
//! The kernel's blocks are split at their *stops* (barriers, yields and warp stops, see
//! [`StopKind`]). Each round the
//! thread block dispatches on the thread's saved phase to the reload block of the stop it
//! waits at; a stop saves the thread's live values and its phase and goes on to the next
//! thread; SSA repair reconnects the uses of the saved values to the reloads.

use super::{advance, Lowering};
use crate::step::ctx;
use crate::step::state::{load_slot, repair_uses, store_slot, SlotAlloc};
use nacre_ir::analysis::live_in;
use nacre_ir::transform::Variable;
use nacre_ir::FunctionBuilder;
use nacre_ir::{BinaryOp, Block, BlockData, CmpOp, Function, Inst, InstKind, Scalar, Type, Value};
use std::collections::{BTreeMap, HashMap};

/// The kernel's blocks split at its stops (barriers, yields and warp stops, numbered from 1 in layout
/// order; a stop's number is the phase of a thread waiting there).
struct Stops {
    /// The parts of the kernel's blocks, in layout order.
    parts: Vec<Block>,
    /// Part → the stop it ends at.
    waits: HashMap<Block, usize>,
    /// Stop k → the part after it (`resumes[k - 1]`).
    resumes: Vec<Block>,
    /// The kind of each stop (by phase - 1).
    kinds: Vec<StopKind>,
}

/// What a stop waits for.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(super) enum StopKind {
    /// Every thread of the block (a barrier).
    Barrier,
    /// Nobody (the yield of a grid-stride loop): resumes next round.
    Yield,
    /// Every lane of the thread's warp (a warp collective): resumes once no thread is left at
    /// a yield, since a lane still in a grid-stride loop may not have written its operand.
    Warp,
}

/// The result bit of a thread that stays at phase `saved` (0: finished) because its stop is
/// not open: [`ctx::AT_WARP`] at a warp stop, so that barriers stay shut until the warp has
/// moved on, and [`ctx::AT_BARRIER`] at a barrier (yields are never shut).
fn waiting_reason(em: &mut FunctionBuilder<'_>, saved: Value, kinds: &[StopKind]) -> Value {
    let zero = em.const_u64(0);
    let waiting = em.cmp(CmpOp::Ne, saved, zero);
    // `AT_BARRIER` is 1: the `bool` itself.
    let mut w = em.cast(waiting, Type::U32);
    if !kinds.contains(&StopKind::Warp) {
        return w;
    }
    let warp = em.const_u32(ctx::AT_WARP);
    for (i, _) in kinds
        .iter()
        .enumerate()
        .filter(|(_, &k)| k == StopKind::Warp)
    {
        let k = em.const_u64(i as u64 + 1);
        let here = em.cmp(CmpOp::Eq, saved, k);
        w = em.select(here, warp, w);
    }
    w
}

/// The conditions (`bool`s of the entry block) under which threads waiting at warp stops
/// and at barriers resume this round; `None`: always.
#[derive(Copy, Clone, Default)]
struct Gates {
    warps: Option<Value>,
    barriers: Option<Value>,
}

impl StopKind {
    /// The bit a thread stopping here adds to the step function's result.
    fn reason(self) -> u32 {
        match self {
            StopKind::Barrier => ctx::AT_BARRIER,
            StopKind::Yield => ctx::AT_YIELD,
            StopKind::Warp => ctx::AT_WARP,
        }
    }
}

/// The values live across each stop, and their state words.
struct Slots {
    /// Stop k → the values live across it (`across[k - 1]`).
    across: Vec<Vec<Value>>,
    /// Value → its state word (from 1; word 0 is the phase).
    slots: BTreeMap<Value, usize>,
    /// State words per thread: the phase, then the values.
    words: usize,
}

impl Slots {
    /// Liveness over the parts (a stop's part flowing into the part after it), one word per
    /// value live across some stop.
    fn find(f: &Function, stops: &Stops) -> Slots {
        let live = live_in(f, &stops.parts, |b| match stops.waits.get(&b) {
            Some(&k) => vec![stops.resumes[k - 1]],
            None => f.successors(b),
        });
        let across: Vec<Vec<Value>> = stops
            .resumes
            .iter()
            .map(|r| live.get(r).cloned().unwrap_or_default())
            .collect();
        let mut slots: BTreeMap<Value, usize> = BTreeMap::new();
        let mut alloc = SlotAlloc::new(1);
        for &v in across.iter().flatten() {
            slots.entry(v).or_insert_with(|| alloc.take(f.values[v].ty));
        }
        let words = alloc.words();
        Slots {
            across,
            slots,
            words,
        }
    }

    /// State words per thread: the phase, then the values.
    fn words(&self) -> usize {
        self.words
    }
}

/// The blocks the state machine adds around the kernel's parts.
struct Machine {
    /// The thread block's parameters added for the machine: the or of the stop reasons so
    /// far, and the address of the thread's state words (`u64`).
    acc: Value,
    state: Value,
    /// The next thread, with the reason this one stopped (`w`: 0, `AT_BARRIER`, `AT_YIELD` or
    /// `AT_WARP`).
    next: Block,
    w: Value,
    /// The end of the round.
    exit: Block,
    /// Per stop: the dispatch test on the saved phase, the block that saves the thread and
    /// the block that reloads it.
    dispatch: Vec<Block>,
    saves: Vec<Block>,
    reloads: Vec<Block>,
    /// Whether the block has one thread (`bool`, in the entry block): nobody to wait for.
    single: Value,
}

impl Lowering {
    /// The loop with barriers: a state machine resumed at the barrier each thread waits at.
    /// Returns the number of state words per thread.
    /// `kinds` names the stops that are not barriers.
    pub(super) fn state_machine(&mut self, start: Block, kinds: &HashMap<Inst, StopKind>) -> usize {
        let acc = self.f.add_block_param(self.thread, Type::U32);
        let state = self.f.add_block_param(self.thread, Type::U64);
        let state_base = self.ctx_word(ctx::STATE_BASE);
        let (first, open) = self.round_flags(kinds);

        let stops = self.split_at_stops(kinds);
        let slots = Slots::find(&self.f, &stops);

        let m = self.machine_blocks(acc, state, stops.resumes.len());
        let phase = self.dispatch(&m, &stops, start, first, open);
        let vars = self.save_and_reload(&m, &stops, &slots, phase);
        self.finish_at_returns(&stops, m.next, phase);
        self.next_thread(&m, slots.words(), state_base);
        let region = self.lay_out(&m, &stops);

        // Reconnect the uses of values live across barriers.
        let zeros = repair_uses(&mut self.f, &region, &vars);
        self.entry_insts.extend(zeros);
        slots.words()
    }

    /// Whether this is the block's first round, and which stops open this round: `bool`s
    /// computed in the entry block. Without yields or warp stops nothing is gated; without
    /// warp stops [`ctx::open_word`] is 0 or both bits, so barriers test the word as a whole.
    fn round_flags(&mut self, kinds: &HashMap<Inst, StopKind>) -> (Value, Gates) {
        let round = self.ctx_word(ctx::ROUND);
        let first = self.at_entry(|em| {
            let zero = em.const_u64(0);
            em.cmp(CmpOp::Eq, round, zero)
        });
        if kinds.is_empty() {
            return (first, Gates::default());
        }
        let word = self.ctx_word(ctx::BARRIERS_OPEN);
        let mut open = |bit: Option<u64>| {
            self.at_entry(|em| {
                let set = match bit {
                    Some(bit) => {
                        let bit = em.const_u64(bit);
                        em.binary(BinaryOp::And, word, bit)
                    }
                    None => word,
                };
                let zero = em.const_u64(0);
                em.cmp(CmpOp::Ne, set, zero)
            })
        };
        let gates = if kinds.values().any(|&k| k == StopKind::Warp) {
            Gates {
                warps: Some(open(Some(ctx::WARPS_OPEN))),
                barriers: Some(open(Some(ctx::BARRIERS_OPEN_BIT))),
            }
        } else {
            Gates {
                warps: None,
                barriers: Some(open(None)),
            }
        };
        (first, gates)
    }

    /// Splits the kernel's blocks at barriers (the barriers are dropped).
    fn split_at_stops(&mut self, kinds: &HashMap<Inst, StopKind>) -> Stops {
        let mut stops = Stops {
            parts: Vec::new(),
            waits: HashMap::new(),
            resumes: Vec::new(),
            kinds: Vec::new(),
        };
        for &b in &self.body {
            let insts = std::mem::take(&mut self.f.blocks[b].insts);
            let mut cur = b;
            let mut cur_insts = Vec::new();
            for inst in insts {
                if let InstKind::Barrier = self.f.insts[inst].kind {
                    self.f.blocks[cur].insts = std::mem::take(&mut cur_insts);
                    stops.parts.push(cur);
                    let resume = self.f.blocks.push(BlockData::default());
                    stops.resumes.push(resume);
                    let kind = kinds.get(&inst).copied().unwrap_or(StopKind::Barrier);
                    stops.kinds.push(kind);
                    stops.waits.insert(cur, stops.resumes.len());
                    cur = resume;
                } else {
                    cur_insts.push(inst);
                }
            }
            self.f.blocks[cur].insts = cur_insts;
            stops.parts.push(cur);
        }
        stops
    }

    /// Creates the machine's blocks for `n` stops, and `single`.
    fn machine_blocks(&mut self, acc: Value, state: Value, n: usize) -> Machine {
        let next = self.f.blocks.push(BlockData::default());
        let w = self.f.add_block_param(next, Type::U32);
        let exit = self.f.blocks.push(BlockData::default());
        let blocks = |f: &mut Function| -> Vec<Block> {
            (0..n)
                .map(|_| f.blocks.push(BlockData::default()))
                .collect()
        };
        let dispatch = blocks(&mut self.f);
        let saves = blocks(&mut self.f);
        let reloads = blocks(&mut self.f);
        let threads = self.ctx_word_u32(ctx::BLOCK_THREADS);
        let single = self.at_entry(|em| {
            let one = em.const_u32(1);
            em.cmp(CmpOp::Eq, threads, one)
        });
        Machine {
            acc,
            state,
            next,
            w,
            exit,
            dispatch,
            saves,
            reloads,
            single,
        }
    }

    /// The thread block: the thread's state, then start (on round 0) or resume at the reload
    /// block of the stop its saved phase names. Returns the thread's phase word (a pointer).
    fn dispatch(
        &mut self,
        m: &Machine,
        stops: &Stops,
        start: Block,
        first: Value,
        open: Gates,
    ) -> Value {
        let (state, next) = (m.state, m.next);
        let mut phase = self.t;
        self.append(self.thread, |em| {
            phase = em.cast(state, Type::ptr(Scalar::U64));
            em.branch(first, start, Vec::new(), m.dispatch[0], Vec::new());
        });
        let mut saved = phase;
        for (i, &d) in m.dispatch.iter().enumerate() {
            let k = i + 1;
            let resume = m.reloads[i];
            let else_block = m.dispatch.get(k).copied();
            let gate = match stops.kinds[i] {
                StopKind::Yield => None,
                StopKind::Warp => open.warps,
                StopKind::Barrier => open.barriers,
            };
            self.append(d, |em| {
                if i == 0 {
                    saved = em.load(phase);
                }
                let kk = em.const_u64(k as u64);
                let mut c = em.cmp(CmpOp::Eq, saved, kk);
                if let Some(open) = gate {
                    // A barrier or warp stop opens only once nobody is left at a stop that
                    // comes before it (see `StopKind`).
                    c = em.binary(BinaryOp::And, c, open);
                }
                match else_block {
                    Some(e) => em.branch(c, resume, Vec::new(), e, Vec::new()),
                    None => {
                        // Phase 0: the thread has finished; otherwise it keeps waiting at a
                        // barrier or warp stop that is not open yet, and says which.
                        let w = waiting_reason(em, saved, &stops.kinds);
                        em.branch(c, resume, Vec::new(), next, vec![w])
                    }
                }
            });
        }
        phase
    }

    /// Barriers save the live values and the phase, reload blocks reload the values; a block
    /// of one thread has nobody to wait for and goes straight on. Returns the variables for
    /// the SSA repair: every saved value, redefined by its reloads.
    fn save_and_reload(
        &mut self,
        m: &Machine,
        stops: &Stops,
        slots: &Slots,
        phase: Value,
    ) -> Vec<Variable> {
        let mut vars: BTreeMap<Value, Variable> = BTreeMap::new();
        for &part in &stops.parts {
            let Some(&k) = stops.waits.get(&part) else {
                continue;
            };
            let reload = m.reloads[k - 1];
            let loaded = self.stop(m, stops, slots, part, k, phase);
            for (v, r) in loaded {
                vars.entry(v)
                    .or_insert_with(|| Variable {
                        value: v,
                        redefs: HashMap::new(),
                    })
                    .redefs
                    .insert(reload, r);
            }
        }
        vars.into_values().collect()
    }

    /// Ends `part` at stop `k`: the branch on `single`, the save block and the reload block.
    /// Returns the reloaded values (original → reload).
    fn stop(
        &mut self,
        m: &Machine,
        stops: &Stops,
        slots: &Slots,
        part: Block,
        k: usize,
        phase: Value,
    ) -> Vec<(Value, Value)> {
        let (save, reload, resume) = (m.saves[k - 1], m.reloads[k - 1], stops.resumes[k - 1]);
        let (state, next, single) = (m.state, m.next, m.single);
        let values: Vec<(Value, usize, Type)> = slots.across[k - 1]
            .iter()
            .map(|&v| (v, slots.slots[&v], self.f.values[v].ty))
            .collect();
        let why = stops.kinds[k - 1].reason();
        self.append(part, |em| {
            em.branch(single, resume, Vec::new(), save, Vec::new());
        });
        self.append(save, |em| {
            for &(v, slot, ty) in &values {
                store_slot(em, state, slot, v, ty);
            }
            let kk = em.const_u64(k as u64);
            em.store(phase, kk);
            let w = em.const_u32(why);
            em.jump(next, vec![w]);
        });
        let mut em = FunctionBuilder::detached(&mut self.f);
        let loaded: Vec<(Value, Value)> = values
            .iter()
            .map(|&(v, slot, ty)| (v, load_slot(&mut em, state, slot, ty)))
            .collect();
        em.jump(resume, Vec::new());
        let insts = em.into_insts();
        self.f.blocks[reload].insts = insts;
        loaded
    }

    /// Returns finish the thread: phase 0, then the next thread.
    fn finish_at_returns(&mut self, stops: &Stops, next: Block, phase: Value) {
        for &part in &stops.parts {
            let Some(&last) = self.f.blocks[part].insts.last() else {
                continue;
            };
            if let InstKind::Return(_) = self.f.insts[last].kind {
                self.f.blocks[part].insts.pop();
                self.append(part, |em| {
                    let zero = em.const_u64(0);
                    em.store(phase, zero);
                    let done = em.const_u32(0);
                    em.jump(next, vec![done]);
                });
            }
        }
    }

    /// Next thread, and the end of the round; the entry block jumps to the first thread.
    fn next_thread(&mut self, m: &Machine, state_words: usize, state_base: Value) {
        let dims = self.advance_values();
        let (thread, t, xyz) = (self.thread, self.t, self.xyz);
        let (acc, w, state, exit) = (m.acc, m.w, m.state, m.exit);
        let mut total = w;
        self.append(m.next, |em| {
            total = em.binary(BinaryOp::Or, acc, w);
            let (mut args, done) = advance(em, t, xyz, dims);
            let stride = em.const_u64(state_words as u64 * 8);
            let next_state = em.binary(BinaryOp::Add, state, stride);
            args.extend([total, next_state]);
            em.branch(done, exit, Vec::new(), thread, args);
        });
        self.append(exit, |em| em.ret(Some(total)));
        let entry = self.entry;
        self.append(entry, |em| {
            let zero = em.const_u32(0);
            em.jump(thread, vec![zero, zero, zero, zero, zero, state_base]);
        });
    }

    /// Lays the step function out; returns the region of the SSA repair (the parts, each
    /// stop's part followed by its save and reload blocks).
    fn lay_out(&mut self, m: &Machine, stops: &Stops) -> Vec<Block> {
        let mut layout = vec![self.entry, self.thread];
        layout.extend(&m.dispatch);
        let mut region = Vec::with_capacity(stops.parts.len() + 2 * stops.resumes.len());
        for &part in &stops.parts {
            region.push(part);
            if let Some(&k) = stops.waits.get(&part) {
                region.extend([m.saves[k - 1], m.reloads[k - 1]]);
            }
        }
        layout.extend(&region);
        layout.extend([m.next, m.exit]);
        self.f.layout = layout;
        region
    }
}
