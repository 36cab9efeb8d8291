//! Where each managed allocation of a device currently lives, and when to migrate it.
//!
//! Managed memory is reachable from both sides, but pages live in one place at a time and
//! move on demand (a page fault per page) unless prefetched in bulk. The runtime keeps, per
//! allocation, the side it last prefetched it to ([`Place`]):
//!
//! - before a kernel uses an allocation: if it is on the host, prefetch it to the device;
//! - before the host accesses it: if it is on the device, prefetch it back.
//!
//! So a loop of launches over arrays already on the device migrates nothing, and every host
//! access reads current data. The table only decides; the caller issues the prefetches (with
//! the table's lock released). The place is a hint: memory touched behind the runtime's back
//! (host code dereferencing a raw pointer) is still correct, since the driver then migrates
//! pages on demand.
//!
//! The table also knows how much managed memory the device may still have to hold
//! ([`Residency::promised_bytes`]: allocations now on the host), which the allocator
//! subtracts from the device's free memory before accepting a new allocation.

use std::collections::HashMap;

/// The side an allocation was last moved to.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Place {
    /// The host (also: never touched since allocation).
    Host,
    /// The device.
    Device,
}

/// One managed allocation.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct Allocation {
    /// The address the driver returned (what is freed), at or below the array's base.
    pub raw: usize,
    /// Bytes allocated from `raw`.
    pub raw_bytes: usize,
    /// Bytes the array uses from its base (what is migrated).
    pub bytes: usize,
    /// Where the allocation is.
    pub place: Place,
}

/// What to do before an access.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Access {
    /// The address is not the base of an allocation of this device.
    NotHere,
    /// The allocation is already where the access needs it.
    Resident,
    /// Migrate `bytes` bytes from the base (0 for an empty array: nothing to move).
    Migrate {
        /// Bytes to move.
        bytes: usize,
    },
}

/// The allocations of one device, keyed by the array's base address.
#[derive(Debug, Default)]
pub(crate) struct Residency {
    allocations: HashMap<usize, Allocation>,
    /// Sum of `raw_bytes` over allocations on the host.
    on_host: usize,
}

impl Residency {
    /// Records a new allocation at `base`.
    pub fn insert(&mut self, base: usize, a: Allocation) {
        if let Some(old) = self.allocations.insert(base, a) {
            self.forget(&old);
        }
        if a.place == Place::Host {
            self.on_host += a.raw_bytes;
        }
    }

    /// Removes the allocation at `base`.
    pub fn remove(&mut self, base: usize) -> Option<Allocation> {
        let a = self.allocations.remove(&base)?;
        self.forget(&a);
        Some(a)
    }

    fn forget(&mut self, a: &Allocation) {
        if a.place == Place::Host {
            self.on_host -= a.raw_bytes;
        }
    }

    /// True if `base` is the base of an allocation of this device.
    pub fn contains(&self, base: usize) -> bool {
        self.allocations.contains_key(&base)
    }

    /// Number of live allocations.
    pub fn len(&self) -> usize {
        self.allocations.len()
    }

    /// Managed bytes the device may still have to hold: allocations now on the host.
    pub fn promised_bytes(&self) -> usize {
        self.on_host
    }

    /// Moves the allocation at `base` to `to`, saying what to migrate.
    fn access(&mut self, base: usize, to: Place) -> Access {
        let Some(a) = self.allocations.get_mut(&base) else {
            return Access::NotHere;
        };
        if a.place == to {
            return Access::Resident;
        }
        match to {
            Place::Device => self.on_host -= a.raw_bytes,
            Place::Host => self.on_host += a.raw_bytes,
        }
        a.place = to;
        Access::Migrate { bytes: a.bytes }
    }

    /// Before a kernel accesses the allocation at `base`.
    pub fn before_device_access(&mut self, base: usize) -> Access {
        self.access(base, Place::Device)
    }

    /// Before the host accesses the allocation at `base`.
    pub fn before_host_access(&mut self, base: usize) -> Access {
        self.access(base, Place::Host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alloc(bytes: usize, place: Place) -> Allocation {
        Allocation {
            raw: 0,
            raw_bytes: bytes.max(1).next_multiple_of(4096),
            bytes,
            place,
        }
    }

    /// A fake device: applies the table's decisions and records the migrations.
    #[derive(Default)]
    struct Fake {
        table: Residency,
        moves: Vec<(&'static str, usize, usize)>,
    }

    impl Fake {
        fn launch(&mut self, bases: &[usize]) {
            for &b in bases {
                if let Access::Migrate { bytes } = self.table.before_device_access(b) {
                    self.moves.push(("device", b, bytes));
                }
            }
        }
        fn host(&mut self, base: usize) {
            if let Access::Migrate { bytes } = self.table.before_host_access(base) {
                self.moves.push(("host", base, bytes));
            }
        }
    }

    #[test]
    fn steady_state_launches_migrate_nothing() {
        let mut f = Fake::default();
        f.table.insert(0x1000, alloc(400, Place::Host));
        f.table.insert(0x9000, alloc(800, Place::Host));
        f.launch(&[0x1000, 0x9000]);
        assert_eq!(f.moves, [("device", 0x1000, 400), ("device", 0x9000, 800)]);
        for _ in 0..100 {
            f.launch(&[0x1000, 0x9000]);
        }
        assert_eq!(f.moves.len(), 2);
        // Reading one array brings back that one only; the next launch sends it again.
        f.host(0x9000);
        f.host(0x9000);
        f.launch(&[0x1000, 0x9000]);
        assert_eq!(
            f.moves[2..],
            [("host", 0x9000, 800), ("device", 0x9000, 800)]
        );
    }

    #[test]
    fn memory_allocated_on_the_device_is_not_migrated_before_launches() {
        let mut f = Fake::default();
        f.table.insert(0x1000, alloc(64, Place::Device));
        f.launch(&[0x1000]);
        assert!(f.moves.is_empty());
        f.host(0x1000);
        assert_eq!(f.moves, [("host", 0x1000, 64)]);
    }

    #[test]
    fn unknown_addresses_are_not_here() {
        let mut t = Residency::default();
        assert_eq!(t.before_device_access(0x1000), Access::NotHere);
        assert_eq!(t.before_host_access(0x1000), Access::NotHere);
        t.insert(0x1000, alloc(8, Place::Host));
        assert!(t.contains(0x1000));
        assert_eq!(t.before_device_access(0x1008), Access::NotHere);
        assert_eq!(t.remove(0x1000).map(|a| a.bytes), Some(8));
        assert_eq!(t.before_device_access(0x1000), Access::NotHere);
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn empty_arrays_move_zero_bytes() {
        let mut t = Residency::default();
        t.insert(0x1000, alloc(0, Place::Host));
        assert_eq!(t.before_device_access(0x1000), Access::Migrate { bytes: 0 });
        assert_eq!(t.before_device_access(0x1000), Access::Resident);
    }

    #[test]
    fn promised_bytes_follow_the_places() {
        let mut t = Residency::default();
        t.insert(0x1000, alloc(100, Place::Host));
        t.insert(0x10_0000, alloc(5000, Place::Device));
        assert_eq!(t.promised_bytes(), 4096);
        t.before_host_access(0x10_0000);
        assert_eq!(t.promised_bytes(), 4096 + 8192);
        t.before_device_access(0x1000);
        assert_eq!(t.promised_bytes(), 8192);
        t.remove(0x10_0000);
        assert_eq!(t.promised_bytes(), 0);
        t.remove(0x1000);
        assert_eq!(t.promised_bytes(), 0);
    }
}
