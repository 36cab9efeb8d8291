//! The process-wide size table of live buffers.
//!
//! Every live [`crate::Array`] (allocated or wrapped) is registered here under its base
//! address with its size in bytes, the name of the device that owns it and whether the array
//! owns the memory. Launches use the table to reject pointer arguments into memory that is not
//! a live array ([`find_buffer`]), GPU runtimes use it to learn a buffer's length from its
//! pointer ([`buffer_bytes`], the seed's `nacre_gpu_buffer_bytes`).
//!
//! The table is a `BTreeMap` behind a `RwLock`: lookups (one per pointer argument per launch)
//! take the read lock; allocation and release take the write lock. Registered ranges never
//! overlap, so the live buffer containing an address is the one with the greatest base not
//! above it.

use crate::error::MemoryError;
use std::collections::BTreeMap;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// What the table records about one live buffer.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Entry {
    /// Size in bytes, as asked for (not rounded up to pages; 0 for an empty array).
    pub bytes: usize,
    /// The name of the device that holds the memory ([`crate::Device::name`]).
    pub device: String,
    /// Whether the array owns (and will free) the memory; `false` for wrapped memory.
    pub owned: bool,
}

static TABLE: RwLock<BTreeMap<usize, Entry>> = RwLock::new(BTreeMap::new());

fn read() -> RwLockReadGuard<'static, BTreeMap<usize, Entry>> {
    // A panic while the lock was held cannot leave the map half-updated (every update is a
    // single insert or remove), so a poisoned lock is still consistent.
    TABLE.read().unwrap_or_else(|e| e.into_inner())
}

fn write() -> RwLockWriteGuard<'static, BTreeMap<usize, Entry>> {
    TABLE.write().unwrap_or_else(|e| e.into_inner())
}

/// The bytes a buffer occupies in the table: at least one, so that empty arrays still have
/// a distinct, non-overlapping address.
fn extent(bytes: usize) -> usize {
    bytes.max(1)
}

/// The size in bytes of the live buffer whose base address is exactly `ptr`, or `None` if no
/// live buffer starts there.
pub fn buffer_bytes(ptr: usize) -> Option<usize> {
    read().get(&ptr).map(|e| e.bytes)
}

/// The live buffer containing `addr`, as `(base, bytes)`. An address is contained when
/// `base <= addr <= base + bytes`: the one-past-the-end address counts (it is a valid pointer
/// value, and the only address of an empty array); where it is also the base of the next
/// buffer, that buffer is returned.
pub fn find_buffer(addr: usize) -> Option<(usize, usize)> {
    let table = read();
    let (&base, entry) = table.range(..=addr).next_back()?;
    (addr - base <= entry.bytes).then_some((base, entry.bytes))
}

/// The table's record of the buffer whose base is `base`.
pub fn entry(base: usize) -> Option<Entry> {
    read().get(&base).cloned()
}

/// The number of live buffers.
pub fn live_buffers() -> usize {
    read().len()
}

/// Records a live buffer. [`crate::Array`] does this for every array; a device runtime
/// that hands out memory by other means may register it too, so that launches accept it.
///
/// Fails with [`MemoryError::Overlap`] if the memory overlaps a live buffer.
pub fn register(base: usize, entry: Entry) -> Result<(), MemoryError> {
    let end = base
        .checked_add(extent(entry.bytes))
        .ok_or(MemoryError::TooLarge {
            len: entry.bytes,
            elem_bytes: 1,
        })?;
    let mut table = write();
    // The nearest buffer at or below `base`, and the nearest one above it, are the only
    // candidates for an overlap, because registered ranges never overlap each other.
    let below = table.range(..=base).next_back();
    let above = table.range(base..).next();
    for (&other, other_entry) in below.into_iter().chain(above) {
        let other_end = other + extent(other_entry.bytes);
        if other < end && base < other_end {
            return Err(MemoryError::Overlap {
                addr: base,
                bytes: entry.bytes,
                existing: other,
                existing_bytes: other_entry.bytes,
            });
        }
    }
    table.insert(base, entry);
    Ok(())
}

/// Removes the buffer whose base is `base` and returns its record.
///
/// Fails with [`MemoryError::NotRegistered`] if no live buffer starts there (it was released
/// already, or never registered).
pub fn unregister(base: usize) -> Result<Entry, MemoryError> {
    write()
        .remove(&base)
        .ok_or(MemoryError::NotRegistered { addr: base })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(bytes: usize) -> Entry {
        Entry {
            bytes,
            device: "test".to_string(),
            owned: false,
        }
    }

    // Non-canonical addresses, which the allocator never hands out; distinct per test (tests
    // run in parallel and share the table).
    const BASE: usize = 0xdead_0000_0000_0000;

    #[test]
    fn register_lookup_unregister() {
        let base = BASE;
        register(base, entry(100)).unwrap();
        assert_eq!(buffer_bytes(base), Some(100));
        assert_eq!(buffer_bytes(base + 4), None);
        assert_eq!(find_buffer(base), Some((base, 100)));
        assert_eq!(find_buffer(base + 99), Some((base, 100)));
        assert_eq!(find_buffer(base + 100), Some((base, 100)));
        assert_eq!(find_buffer(base + 101), None);
        assert_eq!(find_buffer(base - 1), None);
        assert_eq!(unregister(base).unwrap(), entry(100));
        assert_eq!(buffer_bytes(base), None);
        assert_eq!(find_buffer(base + 4), None);
    }

    #[test]
    fn unregistering_twice_is_an_error() {
        let base = BASE + 0x1_0000;
        register(base, entry(8)).unwrap();
        unregister(base).unwrap();
        let err = unregister(base).unwrap_err();
        assert!(matches!(err, MemoryError::NotRegistered { addr } if addr == base));
        assert!(err.to_string().contains("double free"), "{err}");
    }

    #[test]
    fn overlapping_ranges_are_rejected() {
        let base = BASE + 0x2_0000;
        register(base, entry(64)).unwrap();
        for (addr, bytes) in [(base, 1), (base + 63, 8), (base - 8, 9), (base - 8, 100)] {
            let err = register(addr, entry(bytes)).unwrap_err();
            assert!(matches!(err, MemoryError::Overlap { existing, .. } if existing == base));
        }
        // Adjacent buffers are fine, and the shared boundary address belongs to the later one.
        register(base + 64, entry(16)).unwrap();
        register(base - 8, entry(8)).unwrap();
        assert_eq!(find_buffer(base + 64), Some((base + 64, 16)));
        for b in [base, base + 64, base - 8] {
            unregister(b).unwrap();
        }
    }

    #[test]
    fn empty_buffers_occupy_their_address() {
        let base = BASE + 0x3_0000;
        register(base, entry(0)).unwrap();
        assert_eq!(buffer_bytes(base), Some(0));
        assert_eq!(find_buffer(base), Some((base, 0)));
        assert_eq!(find_buffer(base + 1), None);
        assert!(register(base, entry(0)).is_err());
        register(base + 1, entry(0)).unwrap();
        unregister(base).unwrap();
        unregister(base + 1).unwrap();
    }
}
