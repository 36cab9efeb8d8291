//! Atomic read-modify-writes on host memory, for the interpreter's `atomic_rmw` and
//! `atomic_cas` and for traced code run directly: one compare-exchange loop over the element's
//! bits serves every operation, type and ordering, with the new value computed by the caller
//! (from [`nacre_ir::semantics::atomic_rmw`], so they agree with the reference by
//! construction).

use nacre_ir::{MemOrder, Scalar};
use std::sync::atomic::{AtomicU32, AtomicU64};

/// Atomically replaces the element of type `s` (32 or 64 bits) at `addr` by `f(old)` when that
/// is `Some`, with ordering `order` (a failed exchange orders as [`MemOrder::failure`]), and
/// returns `old`. A misaligned address, which no safe call can pass, is read and written
/// without atomicity.
///
/// # Safety
/// `addr` must be valid for reading and writing one element of `s`, and no Rust reference may
/// alias it (other threads may access it, atomically, at the same time).
pub unsafe fn rmw(addr: u64, s: Scalar, order: MemOrder, f: impl Fn(u64) -> Option<u64>) -> u64 {
    let (success, failure) = (order.to_std(), order.failure().to_std());
    let p = addr as usize;
    match s.bytes() {
        4 if p.is_multiple_of(4) => {
            // SAFETY: aligned, valid for reads and writes and accessed only atomically while
            // shared (the caller's contract).
            let a = unsafe { AtomicU32::from_ptr(p as *mut u32) };
            let mut old = a.load(failure);
            loop {
                let Some(new) = f(u64::from(old)) else {
                    return u64::from(old);
                };
                match a.compare_exchange_weak(old, new as u32, success, failure) {
                    Ok(_) => return u64::from(old),
                    Err(now) => old = now,
                }
            }
        }
        8 if p.is_multiple_of(8) => {
            // SAFETY: as above, for 8 bytes.
            let a = unsafe { AtomicU64::from_ptr(p as *mut u64) };
            let mut old = a.load(failure);
            loop {
                let Some(new) = f(old) else {
                    return old;
                };
                match a.compare_exchange_weak(old, new, success, failure) {
                    Ok(_) => return old,
                    Err(now) => old = now,
                }
            }
        }
        4 => {
            // SAFETY: valid for 4 bytes (the caller's contract); unaligned accesses.
            let old = u64::from(unsafe { (addr as usize as *const u32).read_unaligned() });
            if let Some(new) = f(old) {
                // SAFETY: as above.
                unsafe { (addr as usize as *mut u32).write_unaligned(new as u32) };
            }
            old
        }
        _ => {
            // SAFETY: valid for 8 bytes (the verifier allows 32- and 64-bit elements only).
            let old = unsafe { (addr as usize as *const u64).read_unaligned() };
            if let Some(new) = f(old) {
                // SAFETY: as above.
                unsafe { (addr as usize as *mut u64).write_unaligned(new) };
            }
            old
        }
    }
}
