//! The probe of a join in traced code: a scanned row's key looked up among the build side's
//! keys, by linear probing of an open-addressing table ([`Lookup::Hash`]) or by indexing a
//! table of the key range ([`Lookup::Direct`]). The host builds both (`crate::build`); a
//! slot holds the build row plus one, 0 where there is none.

use super::{load, ptr_at, traced_hash};
use crate::pipeline::Lookup;
use nacre::{select, Ptr, Val};

/// The hash of a build key, as traced code computes it (the host places keys with it).
pub fn hash_key(key: i64) -> u64 {
    super::hash_words(&[key as u64])
}

/// Where a frame holds a join's lookup table: the words of the hash table's keys' address,
/// the build rows' address, the size and the least key (see [`super::FrameLayout::join`]).
#[derive(Copy, Clone, Debug)]
pub struct JoinWords {
    /// The address of the hash table's slot keys (`i64` each; unread by direct tables).
    pub keys: usize,
    /// The address of the build rows (a `u32` each: row + 1, 0 for none), per hash table
    /// slot or per key value.
    pub rows: usize,
    /// The hash table's capacity minus one, or the direct table's length.
    pub size: usize,
    /// The least build key (the direct table's first).
    pub base: usize,
}

/// A join's lookup table as traced code sees it.
#[derive(Clone)]
pub(crate) struct Table {
    lookup: Lookup,
    /// The keys of the hash table's slots.
    keys: Ptr<i64>,
    /// Each slot's build row plus one (0: empty).
    rows: Ptr<u32>,
    /// The hash table's capacity minus one, or the direct table's length.
    size: Val<u64>,
    /// The direct table's least key.
    base: Val<i64>,
}

impl Table {
    /// The table whose words the host stored in `frame` at `at`.
    pub(crate) fn load(frame: Ptr<u64>, at: JoinWords, lookup: Lookup) -> Table {
        Table {
            lookup,
            keys: ptr_at(frame, at.keys),
            rows: ptr_at(frame, at.rows),
            size: load(frame, at.size),
            base: load(frame, at.base).cast::<i64>(),
        }
    }

    /// The build row of the key plus one, 0 where no build row has it; looked up only where
    /// `look` holds (0 elsewhere), the key computed (`key`) only there too, so that rows the
    /// filter rejects cost no memory access.
    pub(crate) fn find(&self, look: Val<bool>, key: impl FnOnce() -> Val<i64>) -> Val<u64> {
        match self.lookup {
            Lookup::Hash => probe(self, look, key),
            Lookup::Direct => index(self, look, key),
        }
    }
}

/// Linear probing from the key's hash to its slot or an empty one (the table is at most
/// two thirds full: the probe ends).
#[nacre::jit]
fn probe(t: &Table, look: Val<bool>, key: impl FnOnce() -> Val<i64>) -> Val<u64> {
    let mut row = Val::new(0u64);
    if look {
        let key = key();
        let mut slot = traced_hash(&[key.cast::<u64>()]) & t.size;
        while t.rows.load(slot).ne(0u32) & t.keys.load(slot).ne(key) {
            slot = (slot + 1u64) & t.size;
        }
        row = t.rows.load(slot).cast::<u64>();
    }
    row
}

/// The slot at `key - base` where that is within the table.
#[nacre::jit]
fn index(t: &Table, look: Val<bool>, key: impl FnOnce() -> Val<i64>) -> Val<u64> {
    let mut row = Val::new(0u64);
    if look {
        let at = key().wrapping_sub(t.base).cast::<u64>();
        let inside = at.lt(t.size);
        let clamped = select(inside, at, 0u64);
        row = select(inside, t.rows.load(clamped).cast::<u64>(), 0u64);
    }
    row
}

/// The build row a probe found (`row` from [`Table::find`]), 0 where none: a row every
/// build column has.
pub(crate) fn build_row(found: Val<u64>) -> Val<u64> {
    select(found.ne(0u64), found - 1u64, 0u64)
}
