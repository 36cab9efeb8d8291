//! Per-thread state words, shared by both lowerings with barriers: storing a value into a
//! thread's state word and loading it back (the layout of the state area is in
//! [`super::ctx`]), and the SSA repair that reconnects the uses of values carried across
//! barriers to their reloads.

use crate::step::ctx::addr;
use nacre_ir::transform::{repair, Variable};
use nacre_ir::FunctionBuilder;
use nacre_ir::{Block, Function, Inst, Scalar, Type, Value};

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
