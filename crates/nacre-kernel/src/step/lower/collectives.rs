//! Collective operations on the CPU: warp shuffles, reductions and votes, and voting
//! barriers (see [`nacre_ir::collective`]) rewritten into plain memory accesses around stops,
//! before the thread loops are built.
//!
//! The threads of a block run one after another between stops, so a collective becomes an
//! exchange through the block's *exchange area* ([`ctx::EXCHANGE_BASE`], laid out by
//! [`ctx::exchange_bytes`]): every thread writes its operand into its own slot, stops, and
//! after the stop reads the slots of the lanes it needs. A warp collective stops at a *warp
//! stop*: a barrier when the region lowering takes the kernel (the collective then sits in
//! uniform control flow, where a block-wide stop is the same as a warp-wide one), and otherwise
//! a stop of the state machine that resumes once no thread of the block is left at a
//! grid-stride yield (every lane of the warp has then written its operand, even when the lanes
//! left a grid-stride loop after different numbers of rounds), without waiting for the other
//! warps, which need not reach it. A voting barrier is a real barrier, with a block counter
//! instead of slots.
//!
//! Each thread keeps two slots and alternates between them (its warp sequence number's parity),
//! so that a thread that runs ahead into the next collective, after the stop, never overwrites
//! a value another lane of the same warp has yet to read; block counters rotate among three for
//! the same reason (the next one is cleared when a vote starts). Every thread of a warp runs the
//! same collectives in the same order (CUDA's rule for the `*_sync` forms), so their sequence
//! numbers agree. Reductions fold lane 0's butterfly over all 32 slots, missing lanes counting
//! as the identity ([`nacre_ir::collective::reduce_lanes`]), so every target gets the same
//! float sums.
//!
//! A reduction or vote gives every lane the same result, so the first lane to read it folds
//! the slots and keeps the result in its warp's memo ([`ctx::WARP_MEMO_BYTES`]), tagged with
//! the sequence number; the other lanes find the tag and read the result: one fold of 32
//! slots per warp instead of one per lane. The memo has an entry per parity, like the slots,
//! and for the same reason.

use super::Lowering;
use crate::step::ctx;
use nacre_ir::FunctionBuilder;
use nacre_ir::{
    BinaryOp, Block, BlockData, BlockVote, CmpOp, Inst, InstKind, Scalar, Shuffle, Type, Value,
    WarpOp, WARP_SIZE,
};
use std::collections::{HashMap, HashSet};

/// What the rewrite needs in every collective: the thread's index, the block's thread count
/// and the exchange area.
#[derive(Copy, Clone)]
struct Exchange {
    t: Value,
    threads: Value,
    base: Value,
}

/// The offsets in a thread's exchange slot (see [`ctx::exchange_bytes`]).
const WARP_SEQ: u64 = 0;
const BLOCK_SEQ: u64 = 4;
const VALUES: u64 = 8;

impl Lowering {
    /// Rewrites the kernel's collective operations (see the module docs); returns the warp
    /// stops it added, and the number of voting barriers (real barriers). Does nothing to a
    /// kernel without collectives.
    pub(super) fn lower_collectives(&mut self) -> (HashSet<Inst>, u32) {
        let mut warp_stops = HashSet::new();
        let mut votes = 0;
        let mut aliases: HashMap<Value, Value> = HashMap::new();
        if !self.has_collectives() {
            return (warp_stops, votes);
        }
        let ex = Exchange {
            t: self.t,
            threads: self.ctx_word_u32(ctx::BLOCK_THREADS),
            base: self.ctx_word(ctx::EXCHANGE_BASE),
        };
        // The body grows while it is walked: a reduction splits its block, and the rest of the
        // block (which may hold more collectives) comes next.
        let mut next = 0;
        while next < self.body.len() {
            let b = self.body[next];
            next += 1;
            let insts = std::mem::take(&mut self.f.blocks[b].insts);
            let mut out = Vec::with_capacity(insts.len());
            let mut rest = insts.into_iter();
            let mut split = false;
            while let Some(inst) = rest.next() {
                let data = &self.f.insts[inst];
                let Some(r) = data.result.filter(|_| data.kind.is_collective()) else {
                    out.push(inst);
                    continue;
                };
                let kind = data.kind.clone();
                if let InstKind::Warp(op, v) = kind {
                    let ty = self.f.values[r].ty;
                    let before = std::mem::take(&mut out);
                    let (join, stop) = self.memo_reduction(ex, b, before, (op, v, ty));
                    warp_stops.insert(stop);
                    aliases.insert(r, self.f.blocks[join].params[0]);
                    self.f.blocks[join].insts = rest.collect();
                    split = true;
                    break;
                }
                let mut em = FunctionBuilder::detached(&mut self.f);
                let (v, stop) = match kind {
                    InstKind::LaneId => (lane(&mut em, ex.t), None),
                    InstKind::Shuffle(op, v, x) => warp_exchange(&mut em, ex, v, |em, ex, at| {
                        shuffle_read(em, ex, op, v, x, at)
                    }),
                    InstKind::BlockVote(op, v) => {
                        votes += 1;
                        (block_vote(&mut em, ex, op, v), None)
                    }
                    _ => unreachable!("InstKind::is_collective"),
                };
                warp_stops.extend(stop);
                out.extend(em.into_insts());
                aliases.insert(r, v);
            }
            if !split {
                self.f.blocks[b].insts = out;
            }
        }
        self.rename(&aliases);
        (warp_stops, votes)
    }

    /// A reduction or vote of `v` over the warp, at the end of `b` (whose instructions so far
    /// are `before`): the exchange's write and stop, then the result from the warp's memo
    /// when a lane computed it already, else computed over the lanes' slots and kept in the
    /// memo. Every lane gets the same result, so the warp folds its 32 slots once instead of
    /// once per lane. Returns the block that receives the result (its one parameter) and
    /// continues `b`, and the stop. `ty` is the result's type.
    fn memo_reduction(
        &mut self,
        ex: Exchange,
        b: Block,
        before: Vec<Inst>,
        (op, v, ty): (WarpOp, Value, Type),
    ) -> (Block, Inst) {
        let [hit, miss, join] = [(); 3].map(|_| self.f.blocks.push(BlockData::default()));
        self.f.add_block_param(join, ty);
        let mut em = FunctionBuilder::detached(&mut self.f);
        let (seq, at) = warp_write(&mut em, ex, v);
        let stop = em.barrier();
        let (tag_at, value_at) = memo_entry(&mut em, ex, seq);
        let tag = em.load(tag_at);
        let one = em.const_u32(1);
        let want = em.binary(BinaryOp::Add, seq, one);
        let found = em.cmp(CmpOp::Eq, tag, want);
        let value_at = em.cast(value_at, ptr_to(ty));
        em.branch(found, hit, Vec::new(), miss, Vec::new());
        let head = em.into_insts();
        self.f.blocks[b].insts = before.into_iter().chain(head).collect();
        self.append(hit, |em| {
            let kept = em.load(value_at);
            em.jump(join, vec![kept]);
        });
        self.append(miss, |em| {
            let r = warp_read(em, ex, op, v, at);
            em.store(value_at, r);
            em.store(tag_at, want);
            em.jump(join, vec![r]);
        });
        for list in [&mut self.body, &mut self.f.layout] {
            if let Some(k) = list.iter().position(|&x| x == b) {
                list.splice(k + 1..k + 1, [hit, miss, join]);
            }
        }
        (join, stop)
    }

    pub(super) fn has_collectives(&self) -> bool {
        self.body
            .iter()
            .flat_map(|&b| &self.f.blocks[b].insts)
            .any(|&i| self.f.insts[i].kind.is_collective())
    }
}

/// `t % 32`.
fn lane(em: &mut FunctionBuilder<'_>, t: Value) -> Value {
    let mask = em.const_u32(WARP_SIZE - 1);
    em.binary(BinaryOp::And, t, mask)
}

/// The address (`u64`) of byte `offset` (a `u64` value) of thread `t`'s slot.
fn slot_addr(em: &mut FunctionBuilder<'_>, ex: Exchange, t: Value, offset: Value) -> Value {
    let t64 = em.cast(t, Type::U64);
    let stride = em.const_u64(ctx::EXCHANGE_SLOT_BYTES);
    let at = em.binary(BinaryOp::Mul, t64, stride);
    let at = em.binary(BinaryOp::Add, ex.base, at);
    em.binary(BinaryOp::Add, at, offset)
}

/// Loads and increments the sequence number at `offset` of the thread's slot; gives the old one.
fn next_sequence(em: &mut FunctionBuilder<'_>, ex: Exchange, offset: u64) -> Value {
    let off = em.const_u64(offset);
    let a = slot_addr(em, ex, ex.t, off);
    let p = em.cast(a, Type::ptr(Scalar::U32));
    let seq = em.load(p);
    let one = em.const_u32(1);
    let next = em.binary(BinaryOp::Add, seq, one);
    em.store(p, next);
    seq
}

/// A warp collective: the write of `v` to the thread's current slot, the warp stop, then
/// `read` with the slot's offset. Returns the result and the stop.
fn warp_exchange(
    em: &mut FunctionBuilder<'_>,
    ex: Exchange,
    v: Value,
    read: impl FnOnce(&mut FunctionBuilder<'_>, Exchange, Value) -> Value,
) -> (Value, Option<Inst>) {
    let (_, at) = warp_write(em, ex, v);
    let stop = em.barrier();
    (read(em, ex, at), Some(stop))
}

/// The write of `v` to the thread's current slot (by its warp sequence number's parity).
/// Returns the sequence number and the slot's offset.
fn warp_write(em: &mut FunctionBuilder<'_>, ex: Exchange, v: Value) -> (Value, Value) {
    let seq = next_sequence(em, ex, WARP_SEQ);
    let off = parity_times(em, seq, 8);
    let values = em.const_u64(VALUES);
    let at = em.binary(BinaryOp::Add, off, values);
    let ty = em.value_type(v);
    store_at(em, ex, ex.t, at, v, ty);
    (seq, at)
}

/// `(seq & 1) * bytes`, as a `u64`.
fn parity_times(em: &mut FunctionBuilder<'_>, seq: Value, bytes: u64) -> Value {
    let one = em.const_u32(1);
    let parity = em.binary(BinaryOp::And, seq, one);
    let parity = em.cast(parity, Type::U64);
    let bytes = em.const_u64(bytes);
    em.binary(BinaryOp::Mul, parity, bytes)
}

/// The addresses (`u64`) of the tag (a `u32`) and of the value of the calling warp's memo
/// entry for sequence number `seq` (see [`ctx::WARP_MEMO_BYTES`]).
fn memo_entry(em: &mut FunctionBuilder<'_>, ex: Exchange, seq: Value) -> (Value, Value) {
    let zero = em.const_u64(0);
    let counters = slot_addr(em, ex, ex.threads, zero);
    let counter_bytes = em.const_u64(ctx::VOTE_COUNTER_BYTES);
    let memos = em.binary(BinaryOp::Add, counters, counter_bytes);
    let shift = em.const_u32(WARP_SIZE.trailing_zeros());
    let warp = em.binary(BinaryOp::Shr, ex.t, shift);
    let warp = em.cast(warp, Type::U64);
    let size = em.const_u64(ctx::WARP_MEMO_BYTES);
    let at = em.binary(BinaryOp::Mul, warp, size);
    let at = em.binary(BinaryOp::Add, memos, at);
    let entry = parity_times(em, seq, ctx::WARP_MEMO_BYTES / 2);
    let tag = em.binary(BinaryOp::Add, at, entry);
    let eight = em.const_u64(8);
    let value = em.binary(BinaryOp::Add, tag, eight);
    (em.cast(tag, Type::ptr(Scalar::U32)), value)
}

fn store_at(em: &mut FunctionBuilder<'_>, ex: Exchange, t: Value, at: Value, v: Value, ty: Type) {
    let a = slot_addr(em, ex, t, at);
    let p = em.cast(a, ptr_to(ty));
    em.store(p, v);
}

fn load_at(em: &mut FunctionBuilder<'_>, ex: Exchange, t: Value, at: Value, ty: Type) -> Value {
    let a = slot_addr(em, ex, t, at);
    let p = em.cast(a, ptr_to(ty));
    em.load(p)
}

fn ptr_to(ty: Type) -> Type {
    Type::ptr(ty.scalar().unwrap_or(Scalar::U64))
}

/// The first thread of the calling thread's warp.
fn warp_base(em: &mut FunctionBuilder<'_>, t: Value) -> Value {
    let mask = em.const_u32(!(WARP_SIZE - 1));
    em.binary(BinaryOp::And, t, mask)
}

/// Whether the warp's lane `i` (a constant) exists, and the thread to read for it: itself, or
/// the calling thread when it does not exist.
fn lane_thread(em: &mut FunctionBuilder<'_>, ex: Exchange, base: Value, i: u32) -> (Value, Value) {
    let k = em.const_u32(i);
    let ti = em.binary(BinaryOp::Add, base, k);
    let exists = em.cmp(CmpOp::Lt, ti, ex.threads);
    let pick = em.select(exists, ti, ex.t);
    (exists, pick)
}

/// The shuffle's result: the source lane's slot, or the thread's own when there is none.
fn shuffle_read(
    em: &mut FunctionBuilder<'_>,
    ex: Exchange,
    op: Shuffle,
    v: Value,
    x: Value,
    at: Value,
) -> Value {
    let lane = lane(em, ex.t);
    let none = em.const_u32(WARP_SIZE);
    let src = match op {
        Shuffle::Index => {
            let mask = em.const_u32(WARP_SIZE - 1);
            em.binary(BinaryOp::And, x, mask)
        }
        Shuffle::Up => {
            let ok = em.cmp(CmpOp::Le, x, lane);
            let s = em.binary(BinaryOp::Sub, lane, x);
            em.select(ok, s, none)
        }
        Shuffle::Down => {
            let room = em.binary(BinaryOp::Sub, none, lane);
            let ok = em.cmp(CmpOp::Lt, x, room);
            let s = em.binary(BinaryOp::Add, lane, x);
            em.select(ok, s, none)
        }
        Shuffle::Xor => em.binary(BinaryOp::Xor, lane, x),
    };
    let in_warp = em.cmp(CmpOp::Lt, src, none);
    let src = em.select(in_warp, src, lane);
    let base = warp_base(em, ex.t);
    let st = em.binary(BinaryOp::Add, base, src);
    let exists = em.cmp(CmpOp::Lt, st, ex.threads);
    let ok = em.binary(BinaryOp::And, in_warp, exists);
    // Without a source the thread reads its own slot, which holds `v`.
    let pick = em.select(ok, st, ex.t);
    let ty = em.value_type(v);
    load_at(em, ex, pick, at, ty)
}

/// A reduction or vote over the warp's slots.
fn warp_read(em: &mut FunctionBuilder<'_>, ex: Exchange, op: WarpOp, v: Value, at: Value) -> Value {
    let ty = em.value_type(v);
    let base = warp_base(em, ex.t);
    let lanes: Vec<(Value, Value)> = (0..WARP_SIZE)
        .map(|i| {
            let (exists, pick) = lane_thread(em, ex, base, i);
            (exists, load_at(em, ex, pick, at, ty))
        })
        .collect();
    match (op.combine(), ty.scalar()) {
        (Some(combine), Some(s)) => {
            let identity = op.identity(s).unwrap_or(0);
            let id = em.const_bits(ty, identity);
            let mut vals: Vec<Value> = lanes
                .iter()
                .map(|&(exists, x)| em.select(exists, x, id))
                .collect();
            let mut width = vals.len() / 2;
            while width > 0 {
                for j in 0..width {
                    vals[j] = em.binary(combine, vals[j], vals[j + width]);
                }
                width /= 2;
            }
            vals[0]
        }
        _ => vote(em, op, &lanes),
    }
}

/// Ballot, any or all over the lanes' `bool`s.
fn vote(em: &mut FunctionBuilder<'_>, op: WarpOp, lanes: &[(Value, Value)]) -> Value {
    let mask = |em: &mut FunctionBuilder<'_>,
                bits: &dyn Fn(&mut FunctionBuilder<'_>, Value, Value) -> Value| {
        let mut m = em.const_u32(0);
        for (i, &(exists, x)) in lanes.iter().enumerate() {
            let set = bits(em, exists, x);
            let bit = em.cast(set, Type::U32);
            let shift = em.const_u32(i as u32);
            let bit = em.binary(BinaryOp::Shl, bit, shift);
            m = em.binary(BinaryOp::Or, m, bit);
        }
        m
    };
    let ballot = mask(em, &|em, exists, x| em.binary(BinaryOp::And, exists, x));
    match op {
        WarpOp::Any => {
            let zero = em.const_u32(0);
            em.cmp(CmpOp::Ne, ballot, zero)
        }
        WarpOp::All => {
            let present = mask(em, &|_, exists, _| exists);
            em.cmp(CmpOp::Eq, ballot, present)
        }
        _ => ballot,
    }
}

/// A voting barrier: add the `bool` to the vote's block counter, clear the next one, barrier,
/// read the counter.
fn block_vote(em: &mut FunctionBuilder<'_>, ex: Exchange, op: BlockVote, v: Value) -> Value {
    let seq = next_sequence(em, ex, BLOCK_SEQ);
    let three = em.const_u32(ctx::VOTE_COUNTERS);
    let one = em.const_u32(1);
    let k = em.binary(BinaryOp::Rem, seq, three);
    let next = em.binary(BinaryOp::Add, seq, one);
    let k_next = em.binary(BinaryOp::Rem, next, three);
    let counter = |em: &mut FunctionBuilder<'_>, k: Value| {
        let zero = em.const_u64(0);
        let counters = slot_addr(em, ex, ex.threads, zero);
        let k = em.cast(k, Type::U64);
        let four = em.const_u64(4);
        let off = em.binary(BinaryOp::Mul, k, four);
        let a = em.binary(BinaryOp::Add, counters, off);
        em.cast(a, Type::ptr(Scalar::U32))
    };
    let mine = counter(em, k);
    let after = counter(em, k_next);
    let zero = em.const_u32(0);
    em.store(after, zero);
    let count = em.load(mine);
    let add = em.cast(v, Type::U32);
    let count = em.binary(BinaryOp::Add, count, add);
    em.store(mine, count);
    em.barrier();
    let total = em.load(mine);
    match op {
        BlockVote::Count => total,
        BlockVote::And => em.cmp(CmpOp::Eq, total, ex.threads),
        BlockVote::Or => {
            let zero = em.const_u32(0);
            em.cmp(CmpOp::Ne, total, zero)
        }
    }
}
