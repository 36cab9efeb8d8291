//! Bulk memory between `Ptr`s: [`copy`], [`copy_overlapping`] (`memmove`) and [`fill`]
//! (`memset`), as Nautilus's `memcpy`/`memmove`/`memset` intrinsics.
//!
//! Each is traced code: called from a `#[jit]` function or kernel, it records a counted loop of
//! loads and stores in the caller's trace, so it runs on every backend and kernel runtime and
//! is bounds-checked like any loop (one check of the first and last element, before the loop).
//! Outside a trace (direct mode) it runs on the memory directly. The C and CUDA compilers turn
//! the loops into their own `memcpy`/`memset`; Cranelift runs them as loops.

use crate::prelude::*;
use crate::Scalar;

/// Copies `n` elements from `src` to `dst`. The ranges must not overlap (else the result is
/// unspecified but memory-safe: see [`copy_overlapping`]).
#[jit]
pub fn copy<T: Scalar>(dst: Ptr<T>, src: Ptr<T>, n: Val<u64>) {
    for i in 0..n {
        dst[i] = src[i];
    }
}

/// Copies `n` elements from `src` to `dst`, which may overlap (`memmove`): forwards when `dst`
/// is below `src`, backwards otherwise, so every element is read before it is overwritten.
#[jit]
pub fn copy_overlapping<T: Scalar>(dst: Ptr<T>, src: Ptr<T>, n: Val<u64>) {
    if dst < src {
        for i in 0..n {
            dst[i] = src[i];
        }
    } else {
        let mut i = n;
        while i > 0u64 {
            i -= 1u64;
            dst[i] = src[i];
        }
    }
}

/// Sets `n` elements of `dst` to `value`.
#[jit]
pub fn fill<T: Scalar>(dst: Ptr<T>, value: Val<T>, n: Val<u64>) {
    for i in 0..n {
        dst[i] = value;
    }
}
