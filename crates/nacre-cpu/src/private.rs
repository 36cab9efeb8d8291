//! Private copies of a launch's sum parameters: each worker adds into zeroed memory of its
//! own, and the copies are added into the real memory when its blocks are done (see
//! [`nacre_kernel::private_sums`](mod@nacre_kernel::private_sums) for which parameters
//! qualify and why the result is the same).
//!
//! A launch privatises a sum when its memory is known and small ([`MAX_PRIVATE_BYTES`]) and no
//! other pointer argument reaches it:
//!
//! - in a bounds-checked kernel a pointer's memory is its companions' range, which every access
//!   through it is checked against;
//! - in an unchecked one it is the live array the pointer lies in (the launch has checked that
//!   there is one, and the caller promises that accesses stay inside it).
//!
//! When a launch privatises every sum of the kernel, no two workers add to the same memory, and
//! the workers run the kernel's variant whose additions to the sums are plain loads and stores
//! ([`nacre_kernel::make_sums_plain`]), as a launch on one worker does: a histogram's flush
//! of its block's bins was a locked addition per bin.
//!
//! A copy mirrors the sum's memory at the same alignment modulo 16 bytes; the sum's pointer
//! (and, when checked, its base) are moved into the copy by one offset, so every check has the
//! outcome it would have had.

use nacre_ir::Type;
use nacre_kernel::{PrivateSum, PrivateSums};
use nacre_runtime::find_buffer;
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};

/// The largest memory a launch privatises (each worker zeroes and adds up this much).
pub const MAX_PRIVATE_BYTES: usize = 64 * 1024;

/// A sum's memory in one launch.
#[derive(Copy, Clone, Debug)]
struct Target {
    sum: PrivateSum,
    start: usize,
    len: usize,
}

/// How one launch privatises its sums.
#[derive(Debug)]
pub(crate) struct Plan {
    targets: Vec<Target>,
    args: Vec<u64>,
}

/// One worker's copies, and the arguments that point into them.
pub(crate) struct Copies {
    args: Vec<u64>,
    /// Per target, the copy (16-byte words) and the offset from the sum's memory to it.
    mem: Vec<(Vec<u128>, usize)>,
}

impl Plan {
    /// The plan for a launch of a kernel with `sums` and parameters `params` with `args`, or
    /// `None` if it privatises nothing.
    ///
    /// # Safety
    /// `args` holds one slot per parameter.
    pub(crate) unsafe fn new(
        sums: &PrivateSums,
        params: &[Type],
        args: *const u64,
    ) -> Option<Plan> {
        if sums.sums.is_empty() {
            return None;
        }
        // SAFETY: one slot per parameter (the caller's contract).
        let args: Vec<u64> = (0..params.len())
            .map(|i| unsafe { args.add(i).read() })
            .collect();
        let memory = |param: usize, companions: Option<(usize, usize)>| match companions {
            Some((base, bytes)) => Some((args[base] as usize, args[bytes] as usize)),
            None => find_buffer(args[param] as usize),
        };
        let targets: Vec<Target> = sums
            .sums
            .iter()
            .filter_map(|&sum| {
                let (start, len) = memory(sum.param, sum.companions)?;
                let end = start.checked_add(len)?;
                let fits = len > 0 && len <= MAX_PRIVATE_BYTES;
                let alone = sums.pointers.iter().all(|&(q, c)| {
                    q == sum.param
                        || memory(q, c)
                            .is_some_and(|(s, l)| s.saturating_add(l) <= start || s >= end)
                });
                (fits && alone).then_some(Target { sum, start, len })
            })
            .collect();
        (!targets.is_empty()).then_some(Plan { targets, args })
    }

    /// True if the plan privatises every sum of `sums` (the kernel's): then no two workers
    /// add to the same memory.
    pub(crate) fn covers(&self, sums: &PrivateSums) -> bool {
        self.targets.len() == sums.sums.len()
    }

    /// A worker's zeroed copies.
    pub(crate) fn copies(&self) -> Copies {
        let mut args = self.args.clone();
        let mem = self
            .targets
            .iter()
            .map(|t| {
                let words = vec![0u128; t.len.div_ceil(16) + 1];
                let at = words.as_ptr() as usize + t.start % 16;
                let offset = at.wrapping_sub(t.start);
                let moved = |a: u64| (a as usize).wrapping_add(offset) as u64;
                args[t.sum.param] = moved(args[t.sum.param]);
                if let Some((base, _)) = t.sum.companions {
                    args[base] = moved(args[base]);
                }
                (words, offset)
            })
            .collect();
        Copies { args, mem }
    }

    /// Adds `copies` into the sums' memory.
    ///
    /// # Safety
    /// The sums' memory is live and accessed only atomically until the launch ends.
    pub(crate) unsafe fn merge(&self, copies: Copies) {
        for (t, (_, offset)) in self.targets.iter().zip(&copies.mem) {
            let size = t.sum.elem.bytes() as usize;
            let end = t.start + t.len;
            let mut at = t.start.next_multiple_of(size);
            while at + size <= end {
                let from = at.wrapping_add(*offset);
                // SAFETY: `at` is an element of the sum's memory (live, accessed atomically:
                // the caller's contract), aligned to its size; `from` is the same element of
                // the copy, which `copies.mem` keeps alive, at the same alignment.
                unsafe { add_into(at, from, size) };
                at += size;
            }
        }
    }
}

impl Copies {
    /// The launch's arguments, the sums moved into these copies.
    pub(crate) fn args(&self) -> *const u64 {
        self.args.as_ptr()
    }
}

/// Adds the `size`-byte integer at `from` (when not zero) to the one at `to`, atomically.
///
/// # Safety
/// Both addresses are live and aligned to `size` (1, 2, 4 or 8); `to` is accessed only
/// atomically meanwhile.
unsafe fn add_into(to: usize, from: usize, size: usize) {
    macro_rules! add {
        ($int:ty, $atomic:ty) => {{
            // SAFETY: the caller's contract.
            let v = unsafe { (from as *const $int).read() };
            if v != 0 {
                // SAFETY: the caller's contract: aligned, live, accessed only atomically.
                unsafe { <$atomic>::from_ptr(to as *mut $int) }.fetch_add(v, Ordering::Relaxed);
            }
        }};
    }
    match size {
        1 => add!(u8, AtomicU8),
        2 => add!(u16, AtomicU16),
        4 => add!(u32, AtomicU32),
        _ => add!(u64, AtomicU64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nacre_ir::Scalar;

    fn sums(companions: Option<(usize, usize)>) -> PrivateSums {
        PrivateSums {
            sums: vec![PrivateSum {
                param: 0,
                elem: Scalar::U32,
                companions,
            }],
            pointers: vec![(0, companions), (1, companions.map(|_| (4, 5)))],
        }
    }

    #[test]
    fn copies_add_up_into_the_memory() {
        let mut bins = [5u32, 6, 7, 8];
        let other = [0u32; 4];
        let base = bins.as_mut_ptr() as u64;
        let args = [
            base + 4,
            other.as_ptr() as u64,
            base,
            16,
            other.as_ptr() as u64,
            16,
        ];
        let params = [Type::ptr(Scalar::U32); 6];
        // SAFETY: one slot per parameter.
        let plan = unsafe { Plan::new(&sums(Some((2, 3))), &params, args.as_ptr()) }.unwrap();
        let mut workers = vec![plan.copies(), plan.copies()];
        for (w, c) in workers.iter_mut().enumerate() {
            let p = c.args[0] as *mut u32;
            // SAFETY: the pointer and its base moved together into the copy.
            unsafe {
                assert_eq!(c.args[2] + 4, c.args[0]);
                *p += 10 + w as u32;
                *p.add(2) = u32::MAX;
            }
        }
        for c in workers {
            // SAFETY: `bins` is live and nothing else accesses it.
            unsafe { plan.merge(c) };
        }
        assert_eq!(
            bins,
            [
                5,
                6 + 10 + 11,
                7,
                8u32.wrapping_add(u32::MAX).wrapping_add(u32::MAX)
            ]
        );
    }

    #[test]
    fn memory_another_argument_reaches_or_too_large_is_not_privatised() {
        let bins = [0u32; 8];
        let base = bins.as_ptr() as u64;
        let params = [Type::ptr(Scalar::U32); 6];
        let overlapping = [base, base + 16, base, 32, base + 16, 16];
        // SAFETY: one slot per parameter.
        let plan = unsafe { Plan::new(&sums(Some((2, 3))), &params, overlapping.as_ptr()) };
        assert!(plan.is_none());
        let large = [base, 0, base, MAX_PRIVATE_BYTES as u64 + 4, 64, 4];
        // SAFETY: as above.
        let plan = unsafe { Plan::new(&sums(Some((2, 3))), &params, large.as_ptr()) };
        assert!(plan.is_none());
        let apart = [base, 0, base, 32, 64, 4];
        // SAFETY: as above.
        assert!(unsafe { Plan::new(&sums(Some((2, 3))), &params, apart.as_ptr()) }.is_some());
    }
}
