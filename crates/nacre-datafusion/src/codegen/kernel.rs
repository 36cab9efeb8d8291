//! Traced GPU code of a pipeline: a kernel over all rows of a partition already in device
//! memory, the same row code as the CPU's (filter, projections, aggregate arguments; see the
//! parent module) run by every thread over a grid-stride share of the rows.
//!
//! Groups are indexed directly: the host encodes the combinations of key values that occur
//! as dense codes when it loads the table (see [`crate::device`]), so a row's group is its
//! code, below the number of combinations. Two strategies fold rows into groups
//! ([`Strategy`]):
//!
//! - [`Strategy::Registers`] (at most [`REGISTER_GROUPS`] groups, and the one group of an
//!   aggregation without keys): each thread carries every group's accumulators in registers,
//!   the filter and the group both masks; at the end each warp combines its lanes' values
//!   with warp reductions (a 128-bit sum as three 64-bit sums, exact modulo 2¹²⁸), the first
//!   lane of each warp adds the warp's to the block's accumulators in shared memory with
//!   block-scoped atomics, and one thread per group adds the block's to the global
//!   accumulators with device-scoped atomics. (Every lane adding its own in shared memory
//!   serialised 256 atomics a block on each address: it cost Q1 more than its rows.)
//! - [`Strategy::Atomics`] (more groups): a row that passes the filter adds to its group's
//!   global accumulators with device-scoped atomics.
//!
//! Global accumulators are group-major (accumulator `k` of bank `b` of group `g` at
//! `g · banks[b] + k`); 128-bit sums are two `u64` words, low then high, added with a carry
//! (exact modulo 2¹²⁸, as the CPU's wrapping sums). Minimum and maximum of 128-bit values
//! have no atomic form: such pipelines run on the CPU ([`supports`]).
//!
//! A pipeline with a join probes the build side's lookup table as the CPU's does (the
//! module [`super::join`]): the host copies the table and the build columns to the device
//! and stores their addresses in the frame ([`KernelLayout::join`], the build columns after
//! the scanned ones).

use super::{
    contribution, fold, identity_bits, ptr_at, Banks, Contribution, Flags, JoinWords, Row, Sources,
};
use crate::pipeline::{Acc, AccKind, Program, MAX_ACCS};
use crate::types::Repr;
use nacre::atomic::{Atomic, Ordering};
use nacre::gpu::{
    block_dim_x, global_id_x, global_size_x, lane_id, shared_array, sync_threads, thread_idx_x,
    warp_max, warp_min, warp_sum,
};
use nacre::{Ptr, Val};

/// Threads per block of a pipeline kernel. The registers strategy's accumulators take most
/// of a thread's registers, so that the registers, not the block size, limit the warps a
/// multiprocessor holds: Q1's kernel took 199 registers in blocks of 256 (one block, 8
/// warps, a multiprocessor) and takes 128 in blocks of 128 (four blocks, 16 warps;
/// Nsight Compute on an H100, `bench/results/ncu_q1_h100.txt`).
pub const BLOCK: u32 = 128;
/// The most groups whose accumulators a thread carries in registers.
pub const REGISTER_GROUPS: usize = 8;

/// How a kernel folds rows into groups (see the module docs).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Strategy {
    /// Every group's accumulators in registers: this many groups.
    Registers(usize),
    /// Device-scoped atomics per row.
    Atomics,
}

impl Strategy {
    /// The strategy for `groups` key combinations.
    pub fn for_groups(groups: usize) -> Strategy {
        if groups <= REGISTER_GROUPS {
            Strategy::Registers(groups.max(1))
        } else {
            Strategy::Atomics
        }
    }
}

/// Whether a program's aggregates have atomic forms on the device (not the minimum or
/// maximum of 128-bit values).
pub fn supports(p: &Program) -> bool {
    p.accs()
        .all(|a| !(a.repr == Repr::I128 && matches!(a.kind, AccKind::Min | AccKind::Max)))
}

/// Where things are in the frame of a kernel with `columns` scanned columns and `keys`
/// group keys (their combinations encoded as one code per row). The frame lives in device
/// memory; the kernel reads it.
#[derive(Copy, Clone, Debug)]
pub struct KernelLayout {
    /// Scanned columns (their addresses come first).
    pub columns: usize,
    /// Group keys.
    pub keys: usize,
}

impl KernelLayout {
    /// The layout of `p`'s kernel.
    pub fn of(p: &Program) -> KernelLayout {
        KernelLayout {
            columns: p.columns.len(),
            keys: p.keys.len(),
        }
    }
    /// The word holding the address of the rows' group codes (a `u32` per row; unread
    /// without keys).
    pub fn codes(self) -> usize {
        self.columns
    }
    /// The word holding the address of global accumulator bank `b` (`i64`, 128-bit values
    /// as pairs of `u64`, `f64`).
    pub fn bank(self, b: usize) -> usize {
        self.columns + 1 + b
    }
    /// The word holding the address of the status word.
    pub fn status(self) -> usize {
        self.columns + 4
    }
    /// The words holding a join's lookup table (unread without a join).
    pub fn join(self) -> JoinWords {
        let at = self.columns + 5;
        JoinWords {
            keys: at,
            rows: at + 1,
            size: at + 2,
            base: at + 3,
        }
    }
    /// Words in all.
    pub fn words(self) -> usize {
        self.columns + 9
    }
}

/// Accumulators in memory, group-major: the global ones or a block's in shared memory.
#[derive(Copy, Clone)]
struct Accumulators {
    ints: Ptr<i64>,
    wide: Ptr<u64>,
    floats: Ptr<f64>,
    /// Block-scoped atomics (shared memory).
    block: bool,
    /// Accumulators per group in each bank.
    per_group: [u64; 3],
}

impl Accumulators {
    fn global(p: &Program, frame: Ptr<u64>, l: KernelLayout) -> Accumulators {
        Accumulators {
            ints: ptr_at(frame, l.bank(0)),
            wide: ptr_at(frame, l.bank(1)),
            floats: ptr_at(frame, l.bank(2)),
            block: false,
            per_group: p.banks.map(|b| b as u64),
        }
    }

    /// A block's accumulators of [`REGISTER_GROUPS`] groups, laid out as the global ones.
    fn shared(p: &Program) -> Accumulators {
        const N: usize = REGISTER_GROUPS * MAX_ACCS;
        Accumulators {
            ints: shared_array::<i64, N>(),
            wide: shared_array::<u64, { 2 * N }>(),
            floats: shared_array::<f64, N>(),
            block: true,
            per_group: p.banks.map(|b| b as u64),
        }
    }

    fn scoped<T: nacre::atomic::AtomicElement>(&self, a: Atomic<T>) -> Atomic<T> {
        if self.block {
            a.block()
        } else {
            a
        }
    }

    fn at(&self, acc: Acc, group: Val<u64>) -> Val<u64> {
        group * self.per_group[crate::pipeline::bank(acc.repr)] + acc.slot as u64
    }

    /// Stores `acc`'s identity for `group` (not atomically: before anyone adds).
    fn reset(&self, acc: Acc, group: Val<u64>) {
        let at = self.at(acc, group);
        let bits = identity_bits(acc);
        match acc.repr {
            Repr::I128 => {
                self.wide.store(at * 2u64, bits as u64);
                self.wide.store(at * 2u64 + 1u64, (bits >> 64) as u64);
            }
            Repr::F64 => self.floats.store(at, f64::from_bits(bits as u64)),
            _ => self.ints.store(at, bits as u64 as i64),
        }
    }

    /// Combines `v` into `acc` of `group`, atomically.
    fn combine(&self, acc: Acc, group: Val<u64>, v: Value) {
        let at = self.at(acc, group);
        let relaxed = Ordering::Relaxed;
        match v {
            Value::Int(v) => {
                let a = self.scoped(self.ints.atomic(at));
                match acc.kind {
                    AccKind::Min => a.fetch_min(v, relaxed),
                    AccKind::Max => a.fetch_max(v, relaxed),
                    _ => a.fetch_add(v, relaxed),
                };
            }
            Value::Float(v) => {
                // Float minimum and maximum are declined (`pipeline`): sums only.
                self.scoped(self.floats.atomic(at)).fetch_add(v, relaxed);
            }
            Value::Wide(v) => {
                let lo = v.cast::<u64>();
                let hi = (v >> 64i128).cast::<u64>();
                let old = self
                    .scoped(self.wide.atomic(at * 2u64))
                    .fetch_add(lo, relaxed);
                let carry = old.wrapping_add(lo).lt(old).cast::<u64>();
                self.scoped(self.wide.atomic(at * 2u64 + 1u64))
                    .fetch_add(hi.wrapping_add(carry), relaxed);
            }
        }
    }

    /// The value of `acc` of `group`.
    fn get(&self, acc: Acc, group: Val<u64>) -> Value {
        let at = self.at(acc, group);
        match acc.repr {
            Repr::I128 => {
                let lo = self.wide.load(at * 2u64).cast::<u128>();
                let hi = self.wide.load(at * 2u64 + 1u64).cast::<u128>();
                Value::Wide((lo | (hi << 64u128)).cast::<i128>())
            }
            Repr::F64 => Value::Float(self.floats.load(at)),
            _ => Value::Int(self.ints.load(at)),
        }
    }
}

/// An accumulator's value.
#[derive(Copy, Clone)]
enum Value {
    Int(Val<i64>),
    Wide(Val<i128>),
    Float(Val<f64>),
}

impl Value {
    fn of(banks: &Banks, acc: Acc) -> Value {
        match acc.repr {
            Repr::I128 => Value::Wide(banks.1[acc.slot]),
            Repr::F64 => Value::Float(banks.2[acc.slot]),
            _ => Value::Int(banks.0[acc.slot]),
        }
    }

    /// The combination of every lane's value of `acc` in the warp (sums added, minima and
    /// maxima taken), in every lane. A 128-bit sum is exact modulo 2¹²⁸ from three 64-bit
    /// sums: the low word's two halves (32 lanes of 32 bits cannot wrap 64) and the high word.
    fn over_warp(self, acc: Acc) -> Value {
        match self {
            Value::Int(v) => Value::Int(match acc.kind {
                AccKind::Min => warp_min(v),
                AccKind::Max => warp_max(v),
                _ => warp_sum(v),
            }),
            // Float minimum and maximum are declined (`pipeline`): sums only.
            Value::Float(v) => Value::Float(warp_sum(v)),
            Value::Wide(v) => {
                let lo = v.cast::<u64>();
                let hi = (v >> 64i128).cast::<u64>();
                let low = warp_sum(lo & 0xffff_ffffu64).cast::<i128>();
                let mid = warp_sum(lo >> 32u64).cast::<i128>();
                let high = warp_sum(hi).cast::<i128>();
                Value::Wide(low.wrapping_add(mid << 32i128).wrapping_add(high << 64i128))
            }
        }
    }

    /// Whether this is the identity of `acc` (nothing to add).
    fn is_identity(self, acc: Acc) -> Val<bool> {
        let bits = identity_bits(acc);
        match self {
            Value::Int(v) => v.eq(bits as u64 as i64),
            Value::Wide(v) => v.eq(bits as i128),
            // Float sums start at +0.0; adding a -0.0 to one leaves it as it is.
            Value::Float(v) => v.eq(f64::from_bits(bits as u64)),
        }
    }
}

/// Banks at every accumulator's identity.
fn identity_banks(p: &Program) -> Banks {
    let mut banks: Banks = (
        [Val::new(0i64); MAX_ACCS],
        [Val::new(0i128); MAX_ACCS],
        [Val::new(0f64); MAX_ACCS],
    );
    for acc in p.accs() {
        let bits = identity_bits(acc);
        match acc.repr {
            Repr::I128 => banks.1[acc.slot] = Val::new(bits as i128),
            Repr::F64 => banks.2[acc.slot] = Val::new(f64::from_bits(bits as u64)),
            _ => banks.0[acc.slot] = Val::new(bits as u64 as i64),
        }
    }
    banks
}

/// Row `i`'s group: its code (0 without keys).
fn group_of(frame: Ptr<u64>, l: KernelLayout, i: Val<u64>) -> Val<u64> {
    if l.keys == 0 {
        return Val::new(0u64);
    }
    ptr_at::<u32>(frame, l.codes()).load(i).cast::<u64>()
}

/// Row `i`'s contribution, with the flags carried so far.
fn row_contribution(
    p: &Program,
    src: &Sources,
    i: Val<u64>,
    flags: Flags,
) -> (Contribution, Flags) {
    let mut row = Row::new(p, src, i, flags);
    let c = contribution(p, &mut row);
    (c, row.flags())
}

/// Folds a row into the register banks of every group, masked by its filter and group.
fn fold_groups(
    p: &Program,
    mut banks: [Banks; REGISTER_GROUPS],
    groups: usize,
    c: &Contribution,
    group: Val<u64>,
) -> [Banks; REGISTER_GROUPS] {
    for (g, b) in banks.iter_mut().enumerate().take(groups) {
        let mine = Contribution {
            pass: c.pass & group.eq(g as u64),
            args: c.args.clone(),
            valid: c.valid.clone(),
        };
        *b = fold(p, *b, &mine);
    }
    banks
}

/// Adds a value to an accumulator unless it is the identity (a thread that saw no row of
/// the group adds nothing).
#[nacre::jit]
fn combine_unless_identity(to: &Accumulators, acc: Acc, group: Val<u64>, v: Value) {
    if !v.is_identity(acc) {
        to.combine(acc, group, v);
    }
}

/// Adds `v` (the warp's) to an accumulator from the warp's first lane, unless it is the
/// identity.
#[nacre::jit]
fn combine_from_first_lane(to: &Accumulators, acc: Acc, group: Val<u64>, v: Value) {
    if lane_id().eq(0u32) {
        combine_unless_identity(to, acc, group, v);
    }
}

/// Adds the register banks of a warp's threads to the block's shared accumulators (every
/// thread of the block calls it: warp reductions).
fn add_registers(p: &Program, shared: &Accumulators, banks: &[Banks], groups: usize) {
    for (g, b) in banks.iter().enumerate().take(groups) {
        for acc in p.accs() {
            let v = Value::of(b, acc).over_warp(acc);
            combine_from_first_lane(shared, acc, Val::new(g as u64), v);
        }
    }
}

/// Sets the shared accumulators of group `g` to their identities.
fn reset_group(p: &Program, shared: &Accumulators, g: Val<u64>) {
    for acc in p.accs() {
        shared.reset(acc, g);
    }
}

/// Adds the block's shared accumulators of group `g` to the global ones.
fn flush_group(p: &Program, shared: &Accumulators, global: &Accumulators, g: Val<u64>) {
    for acc in p.accs() {
        combine_unless_identity(global, acc, g, shared.get(acc, g));
    }
}

/// Adds a passing row's contribution to its group's global accumulators.
fn add_row(p: &Program, global: &Accumulators, group: Val<u64>, c: &Contribution) {
    for (a, arg) in p.accs.iter().zip(&c.args) {
        let v = match (a.acc.kind, a.acc.repr, arg) {
            (AccKind::Count, _, _) => Value::Int(Val::new(1i64)),
            (_, Repr::I128, Some(v)) => Value::Wide(super::to_i128(*v)),
            (_, _, Some(super::V::F64(x))) => Value::Float(*x),
            (_, _, Some(v)) => Value::Int(super::to_i64(*v)),
            (_, _, None) => unreachable!("an aggregate argument"),
        };
        global.combine(a.acc, group, v);
    }
}

/// Records the flags raised in the status word.
#[nacre::jit]
fn note_status(frame: Ptr<u64>, l: KernelLayout, flags: Flags) {
    let bits = flags.bits();
    if bits.ne(0u64) {
        ptr_at::<u64>(frame, l.status())
            .atomic(0u64)
            .fetch_or(bits, Ordering::Relaxed);
    }
}

/// The kernel of [`Strategy::Registers`] over `groups` groups and rows `0..n`.
#[nacre::kernel]
pub fn registers_kernel(p: &Program, groups: usize, frame: Ptr<u64>, n: Val<u64>) {
    let l = KernelLayout::of(p);
    let shared = Accumulators::shared(p);
    let t = thread_idx_x().cast::<u64>();
    if t < groups as u64 {
        reset_group(p, &shared, t);
    }
    sync_threads();
    let src = Sources::kernel(p, frame, l.join());
    let step = global_size_x().cast::<u64>();
    let mut i = global_id_x().cast::<u64>();
    let mut banks = [identity_banks(p); REGISTER_GROUPS];
    let mut flags = Flags::clear();
    while i < n {
        let (c, f) = row_contribution(p, &src, i, flags);
        flags = f;
        banks = fold_groups(p, banks, groups, &c, group_of(frame, l, i));
        i += step;
    }
    add_registers(p, &shared, &banks, groups);
    sync_threads();
    let mut g = t;
    while g < groups as u64 {
        flush_group(p, &shared, &Accumulators::global(p, frame, l), g);
        g += block_dim_x().cast::<u64>();
    }
    note_status(frame, l, flags);
}

/// The kernel of [`Strategy::Atomics`] over rows `0..n`.
#[nacre::kernel]
pub fn atomics_kernel(p: &Program, frame: Ptr<u64>, n: Val<u64>) {
    let l = KernelLayout::of(p);
    let global = Accumulators::global(p, frame, l);
    let src = Sources::kernel(p, frame, l.join());
    let step = global_size_x().cast::<u64>();
    let mut i = global_id_x().cast::<u64>();
    let mut flags = Flags::clear();
    while i < n {
        let (c, f) = row_contribution(p, &src, i, flags);
        flags = f;
        if c.pass {
            add_row(p, &global, group_of(frame, l, i), &c);
        }
        i += step;
    }
    note_status(frame, l, flags);
}
