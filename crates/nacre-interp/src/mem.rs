//! Raw host-memory access for `load` and `store`.
//!
//! IR pointers are host addresses carried as `u64`. The interpreter performs exactly the access
//! the IR asks for, unaligned-tolerant, with the element's width; validity of the address is
//! the contract of whoever calls the compiled function (see the crate docs).

/// Reads a `T` at `addr` without any alignment requirement.
///
/// # Safety
/// `addr` must point to `size_of::<T>()` readable bytes that hold a valid `T` (any bit pattern
/// is valid for the integer types used here).
#[inline(always)]
pub(crate) unsafe fn load<T: Copy>(addr: u64) -> T {
    // SAFETY: forwarded to the caller: `addr` is readable for `size_of::<T>()` bytes.
    unsafe { (addr as usize as *const T).read_unaligned() }
}

/// Writes a `T` at `addr` without any alignment requirement.
///
/// # Safety
/// `addr` must point to `size_of::<T>()` writable bytes that no live Rust reference aliases.
#[inline(always)]
pub(crate) unsafe fn store<T: Copy>(addr: u64, value: T) {
    // SAFETY: forwarded to the caller: `addr` is writable for `size_of::<T>()` bytes.
    unsafe { (addr as usize as *mut T).write_unaligned(value) }
}
