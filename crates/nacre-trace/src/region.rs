//! The memory a direct-mode call may access: the [`Region`]s its pointer arguments lend.
//!
//! Direct mode runs the user's Rust code on concrete values, so a `Ptr`'s load or store reads
//! memory itself. [`crate::direct_call`] records the regions the caller lent for the call on
//! its thread; every direct-mode access is checked against them (`check`) and an access
//! outside every region (or a write to a region lent shared) is a
//! [`nacre_ir::Trap::OutOfBounds`] instead of a read or write of memory the call does not own.

use nacre_ir::Trap;
use std::cell::RefCell;

/// Memory lent to a direct-mode call.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Region {
    /// The first byte's address.
    pub addr: usize,
    /// The size in bytes.
    pub bytes: usize,
    /// Whether the call may write it.
    pub writable: bool,
}

impl Region {
    fn holds(&self, addr: usize, size: usize) -> bool {
        addr.wrapping_sub(self.addr) <= self.bytes.wrapping_sub(size) && self.bytes >= size
    }
}

/// The memory of one direct call: the lent regions, and the shared arrays its kernels made.
#[derive(Default)]
struct Frame {
    regions: Vec<Region>,
    /// Shared arrays by call site; a site's array is reused while big enough.
    shared: Vec<Box<[u64]>>,
    /// Arrays replaced by bigger ones, kept until the call ends (pointers to them stay valid).
    retired: Vec<Box<[u64]>>,
}

thread_local! {
    static FRAMES: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with `regions` as the memory direct-mode accesses may touch (nested calls stack).
pub(crate) fn with_regions<R>(regions: &[Region], f: impl FnOnce() -> R) -> R {
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            FRAMES.with(|r| r.borrow_mut().pop());
        }
    }
    FRAMES.with(|r| {
        r.borrow_mut().push(Frame {
            regions: regions.to_vec(),
            ..Frame::default()
        })
    });
    let _pop = Pop;
    f()
}

/// The zeroed shared array of `bytes` bytes for call site `site` of a direct-mode kernel, as
/// an address, registered as a writable region of the current direct call; `None` outside
/// any direct call.
pub(crate) fn shared_array(site: usize, bytes: usize) -> Option<usize> {
    FRAMES.with(|frames| {
        let mut frames = frames.borrow_mut();
        let frame = frames.last_mut()?;
        let words = bytes.div_ceil(8).max(1);
        if frame.shared.len() <= site {
            frame.shared.resize_with(site + 1, Default::default);
        }
        if frame.shared[site].len() < words {
            let new = vec![0u64; words].into_boxed_slice();
            let old = std::mem::replace(&mut frame.shared[site], new);
            frame.retired.push(old);
            let addr = frame.shared[site].as_ptr() as usize;
            frame.regions.push(Region {
                addr,
                bytes: words * 8,
                writable: true,
            });
        } else {
            frame.shared[site].fill(0);
        }
        Some(frame.shared[site].as_ptr() as usize)
    })
}

/// Checks a direct-mode access of `size` bytes at `addr`: it must lie in a region of the
/// innermost direct call, writable if `write`.
pub(crate) fn check(addr: usize, size: usize, write: bool) -> Result<(), Trap> {
    let ok = FRAMES.with(|r| {
        r.borrow().last().is_some_and(|frame| {
            frame
                .regions
                .iter()
                .any(|g| g.holds(addr, size) && (g.writable || !write))
        })
    });
    if ok {
        Ok(())
    } else {
        Err(Trap::out_of_bounds(None, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accesses_must_lie_in_a_lent_region() {
        let regions = [
            Region {
                addr: 1000,
                bytes: 16,
                writable: false,
            },
            Region {
                addr: 2000,
                bytes: 8,
                writable: true,
            },
        ];
        with_regions(&regions, || {
            assert!(check(1000, 4, false).is_ok());
            assert!(check(1012, 4, false).is_ok());
            assert!(check(1013, 4, false).is_err());
            assert!(check(1000, 4, true).is_err());
            assert!(check(2004, 4, true).is_ok());
            assert!(check(999, 1, false).is_err());
        });
        assert!(check(1000, 4, false).is_err());
    }
}
