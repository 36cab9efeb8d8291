//! Per-thread state words, shared by both lowerings with barriers: storing a value into a
//! thread's state word and loading it back (the layout of the state area is in
//! [`super::ctx`]), and the SSA repair that reconnects the uses of values carried across
//! barriers to their reloads.
//!
//! The state machine keeps each thread's words together ([`store_slot`], [`load_slot`]); the
//! thread loops of the region lowering keep each word's threads together ([`Lane`]): word `k`
//! of every thread is an array of values of the value's own type at `base + k *`
//! [`LANE_STRIDE`], so that consecutive threads read and write consecutive elements, which a
//! vectorising compiler turns into vector loads and stores. The arrays are a constant distance
//! apart, not `8 * threads` bytes: a C compiler then sees that a thread loop's loads and stores
//! of different words never overlap, and vectorises it without run-time overlap checks (GCC
//! gives up on a loop that would need more than ten, as the softmax's thread loops did). The
//! state machine's layout takes `8 * words * threads` bytes, the word-major one
//! `words *` [`LANE_STRIDE`] (see [`super::StepInfo::block_state_words`]).

use crate::step::ctx::addr;
use nacre_ir::transform::{repair, Variable};
use nacre_ir::FunctionBuilder;
use nacre_ir::{BinaryOp, Block, Function, Inst, Scalar, Type, Value};

/// Hands out state words to values: one per value, two for a 128-bit integer, which starts
/// at an even word so that it is 16-byte aligned (a thread's state area is, when the count of
/// words per thread is even, which [`SlotAlloc::words`] then makes it).
#[derive(Debug)]
pub(crate) struct SlotAlloc {
    next: usize,
    wide: bool,
}

impl SlotAlloc {
    /// An allocator whose first word is `first`.
    pub(crate) fn new(first: usize) -> SlotAlloc {
        SlotAlloc {
            next: first,
            wide: false,
        }
    }

    /// The first word of a new value of type `ty`.
    pub(crate) fn take(&mut self, ty: Type) -> usize {
        if ty.bytes() <= 8 {
            self.next += 1;
            return self.next - 1;
        }
        self.wide = true;
        let slot = self.next.next_multiple_of(2);
        self.next = slot + 2;
        slot
    }

    /// The words per thread.
    pub(crate) fn words(&self) -> usize {
        if self.wide {
            self.next.next_multiple_of(2)
        } else {
            self.next
        }
    }
}

/// Stores `v` (of type `ty`) into state word `slot` of the thread whose state starts at the
/// address `state` (`u64`).
pub(crate) fn store_slot(
    em: &mut FunctionBuilder<'_>,
    state: Value,
    slot: usize,
    v: Value,
    ty: Type,
) {
    let offset = slot as u64 * 8;
    match ty {
        Type::Ptr(..) => {
            let bits = em.cast(v, Type::U64);
            let p = addr(em, state, offset, Type::ptr(Scalar::U64));
            em.store(p, bits);
        }
        Type::Scalar(s) => {
            let p = addr(em, state, offset, Type::ptr(s));
            em.store(p, v);
        }
    }
}

/// Loads a value of type `ty` from state word `slot`.
pub(crate) fn load_slot(
    em: &mut FunctionBuilder<'_>,
    state: Value,
    slot: usize,
    ty: Type,
) -> Value {
    let offset = slot as u64 * 8;
    match ty {
        Type::Ptr(..) => {
            let p = addr(em, state, offset, Type::ptr(Scalar::U64));
            let bits = em.load(p);
            em.cast(bits, ty)
        }
        Type::Scalar(s) => {
            let p = addr(em, state, offset, Type::ptr(s));
            em.load(p)
        }
    }
}

/// The most threads a block of a step function lowered to thread loops may have: those of
/// every GPU runtime's blocks (the CPU runtime refuses larger blocks).
pub const LANE_THREADS: u64 = 1024;

/// Bytes from one word's array of the word-major layout to the next: [`LANE_THREADS`]
/// elements of 8 bytes, and 64 bytes more, so that the arrays do not start a multiple of
/// 4 KiB apart (where a thread loop's accesses to different words would compete for the same
/// cache sets).
pub const LANE_STRIDE: u64 = 8 * LANE_THREADS + 64;

/// A thread's place in the word-major state layout (module docs): the state area's address
/// and the thread's linear index, both `u64`.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Lane {
    pub(crate) base: Value,
    pub(crate) t: Value,
}

impl Lane {
    /// The address of this thread's element of word `slot`, as a pointer to `elem`.
    fn element(self, em: &mut FunctionBuilder<'_>, slot: usize, elem: Scalar) -> Value {
        let start = em.const_u64(slot as u64 * LANE_STRIDE);
        let array = em.binary(BinaryOp::Add, self.base, start);
        let size = em.const_u64(u64::from(elem.bytes()));
        let off = em.binary(BinaryOp::Mul, self.t, size);
        let a = em.binary(BinaryOp::Add, array, off);
        em.cast(a, Type::ptr(elem))
    }

    /// Stores `v` (of type `ty`) into this thread's element of word `slot`.
    pub(crate) fn store(self, em: &mut FunctionBuilder<'_>, slot: usize, v: Value, ty: Type) {
        match ty {
            Type::Ptr(..) => {
                let bits = em.cast(v, Type::U64);
                let p = self.element(em, slot, Scalar::U64);
                em.store(p, bits);
            }
            Type::Scalar(s) => {
                let p = self.element(em, slot, s);
                em.store(p, v);
            }
        }
    }

    /// Loads a value of type `ty` from this thread's element of word `slot`.
    pub(crate) fn load(self, em: &mut FunctionBuilder<'_>, slot: usize, ty: Type) -> Value {
        match ty {
            Type::Ptr(..) => {
                let p = self.element(em, slot, Scalar::U64);
                let bits = em.load(p);
                em.cast(bits, ty)
            }
            Type::Scalar(s) => {
                let p = self.element(em, slot, s);
                em.load(p)
            }
        }
    }
}

/// Reconnects the uses of `vars` in the blocks of `region` to their reaching definitions
/// (see [`repair`]). Returns the instructions of the zeros that the repair needs where a
/// variable has no definition on some path; they belong in the entry block, which dominates
/// everything.
pub(crate) fn repair_uses(f: &mut Function, region: &[Block], vars: &[Variable]) -> Vec<Inst> {
    let mut zeros: Vec<Inst> = Vec::new();
    repair(f, region, vars, &mut |f, ty| {
        let mut em = FunctionBuilder::detached(f);
        let v = em.const_bits(ty, 0);
        zeros.extend(em.into_insts());
        v
    });
    zeros
}
