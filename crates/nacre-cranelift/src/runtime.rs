//! Rust helpers that generated code calls: float remainder (Rust's `%` on floats, which has
//! no machine instruction), Rust's `round`, the math-library functions ([`math_fn`], the
//! reference of `nacre_ir::semantics::math`, so Cranelift's results are the interpreter's)
//! and the float library calls Cranelift emits when the host lacks an
//! instruction (`floor`/`ceil`/`trunc`/`nearest` without SSE4.1, `fma` without FMA).
//!
//! The 128-bit integer helpers ([`wide_fn`]) divide and convert to and from floats, which
//! Cranelift's `i128` lacks.
//!
//! The library calls are registered as symbols of every JIT module under the names
//! [`libcall_names`] gives them, so they never depend on what the C library exports.

use cranelift_codegen::ir::LibCall;
use cranelift_jit::JITBuilder;
use nacre_ir::semantics;
use nacre_ir::{MathFn, MathFn2, Scalar};

/// Zeroes `n` bytes at `p`: a local array's storage, which generated code passes (its own
/// stack slot of `n` bytes).
extern "C" fn zero_bytes(p: *mut u8, n: u64) {
    // SAFETY: generated code calls this only with the address and size of a stack slot of
    // the calling function (`lower`'s local arrays), valid for writing `n` bytes.
    unsafe { std::ptr::write_bytes(p, 0, n as usize) }
}

/// The address of [`zero_bytes`].
pub(crate) fn zero_fn() -> usize {
    zero_bytes as *const () as usize
}

/// `a % b` on `f32` (C's `fmodf`).
extern "C" fn fmod_f32(a: f32, b: f32) -> f32 {
    a % b
}

/// `a % b` on `f64` (C's `fmod`).
extern "C" fn fmod_f64(a: f64, b: f64) -> f64 {
    a % b
}

/// The address of the float remainder helper for `f64` or `f32`.
pub(crate) fn fmod_fn(f64: bool) -> usize {
    if f64 {
        fmod_f64 as *const () as usize
    } else {
        fmod_f32 as *const () as usize
    }
}

extern "C" fn round_f32(a: f32) -> f32 {
    a.round()
}

extern "C" fn round_f64(a: f64) -> f64 {
    a.round()
}

/// The address of the helper for Rust's `round` (halfway cases away from zero, which no
/// Cranelift instruction rounds) on `f64` or `f32`.
pub(crate) fn round_fn(f64: bool) -> usize {
    if f64 {
        round_f64 as *const () as usize
    } else {
        round_f32 as *const () as usize
    }
}

/// `semantics::math_f32` for the function at index `K` of [`MathFn::ALL`].
extern "C" fn math_f32<const K: usize>(x: f32) -> f32 {
    semantics::math_f32(MathFn::ALL[K], x)
}

/// `semantics::math_f64` for the function at index `K` of [`MathFn::ALL`].
extern "C" fn math_f64<const K: usize>(x: f64) -> f64 {
    semantics::math_f64(MathFn::ALL[K], x)
}

/// `semantics::math2_f32` for the function at index `K` of [`MathFn2::ALL`].
extern "C" fn math2_f32<const K: usize>(x: f32, y: f32) -> f32 {
    semantics::math2_f32(MathFn2::ALL[K], x, y)
}

/// `semantics::math2_f64` for the function at index `K` of [`MathFn2::ALL`].
extern "C" fn math2_f64<const K: usize>(x: f64, y: f64) -> f64 {
    semantics::math2_f64(MathFn2::ALL[K], x, y)
}

/// The addresses of `$helper::<K>` for the listed indices.
macro_rules! addresses {
    ($helper:ident, [$($k:literal),*]) => {
        [$($helper::<$k> as *const () as usize),*]
    };
}

/// The address of the helper computing `f` on `f64` or `f32`.
pub(crate) fn math_fn(f: MathFn, f64: bool) -> usize {
    let table: [usize; MathFn::ALL.len()] = if f64 {
        addresses!(
            math_f64,
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]
        )
    } else {
        addresses!(
            math_f32,
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]
        )
    };
    // `MathFn::ALL` lists the functions in declaration order (tested in `nacre-ir`).
    table[f as usize]
}

/// The address of the helper computing `f` on `f64` or `f32`.
pub(crate) fn math_fn2(f: MathFn2, f64: bool) -> usize {
    let table: [usize; MathFn2::ALL.len()] = if f64 {
        addresses!(math2_f64, [0, 1, 2])
    } else {
        addresses!(math2_f32, [0, 1, 2])
    };
    table[f as usize]
}

extern "C" fn f16_to_f32(h: u16) -> f32 {
    semantics::half_to_f32(Scalar::F16, u128::from(h))
}

extern "C" fn bf16_to_f32(h: u16) -> f32 {
    semantics::half_to_f32(Scalar::BF16, u128::from(h))
}

/// A 128-bit integer operation Cranelift has no instruction for.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum WideFn {
    /// `i128` division, wrapping (`MIN / -1` is `MIN`); the divisor is not zero.
    SignedDiv,
    /// `u128` division; the divisor is not zero.
    UnsignedDiv,
    /// `i128` remainder, wrapping (`MIN % -1` is 0); the divisor is not zero.
    SignedRem,
    /// `u128` remainder; the divisor is not zero.
    UnsignedRem,
    /// `i128` (or with `!signed`, `u128`) to `f64` (or `f32`), Rust's `as`.
    ToFloat {
        /// Whether the integer is signed.
        signed: bool,
        /// Whether the float is `f64`.
        f64: bool,
    },
    /// `f64` (or `f32`) to `i128` (or `u128`), Rust's `as`: saturating, NaN to 0.
    FromFloat {
        /// Whether the integer is signed.
        signed: bool,
        /// Whether the float is `f64`.
        f64: bool,
    },
}

// Rust passes and returns `i128`/`u128` in `extern "C"` functions as C's `__int128`, which is
// how Cranelift's `i128` travels in the C calling conventions of the supported targets.
extern "C" fn i128_div(a: i128, b: i128) -> i128 {
    a.wrapping_div(b)
}
extern "C" fn u128_div(a: u128, b: u128) -> u128 {
    a / b
}
extern "C" fn i128_rem(a: i128, b: i128) -> i128 {
    a.wrapping_rem(b)
}
extern "C" fn u128_rem(a: u128, b: u128) -> u128 {
    a % b
}
extern "C" fn i128_to_f32(a: i128) -> f32 {
    a as f32
}
extern "C" fn i128_to_f64(a: i128) -> f64 {
    a as f64
}
extern "C" fn u128_to_f32(a: u128) -> f32 {
    a as f32
}
extern "C" fn u128_to_f64(a: u128) -> f64 {
    a as f64
}
extern "C" fn f32_to_i128(x: f32) -> i128 {
    x as i128
}
extern "C" fn f64_to_i128(x: f64) -> i128 {
    x as i128
}
extern "C" fn f32_to_u128(x: f32) -> u128 {
    x as u128
}
extern "C" fn f64_to_u128(x: f64) -> u128 {
    x as u128
}

/// The address of the helper computing `f`.
pub(crate) fn wide_fn(f: WideFn) -> usize {
    let p: *const () = match f {
        WideFn::SignedDiv => i128_div as *const (),
        WideFn::UnsignedDiv => u128_div as *const (),
        WideFn::SignedRem => i128_rem as *const (),
        WideFn::UnsignedRem => u128_rem as *const (),
        WideFn::ToFloat {
            signed: true,
            f64: false,
        } => i128_to_f32 as *const (),
        WideFn::ToFloat {
            signed: true,
            f64: true,
        } => i128_to_f64 as *const (),
        WideFn::ToFloat {
            signed: false,
            f64: false,
        } => u128_to_f32 as *const (),
        WideFn::ToFloat {
            signed: false,
            f64: true,
        } => u128_to_f64 as *const (),
        WideFn::FromFloat {
            signed: true,
            f64: false,
        } => f32_to_i128 as *const (),
        WideFn::FromFloat {
            signed: true,
            f64: true,
        } => f64_to_i128 as *const (),
        WideFn::FromFloat {
            signed: false,
            f64: false,
        } => f32_to_u128 as *const (),
        WideFn::FromFloat {
            signed: false,
            f64: true,
        } => f64_to_u128 as *const (),
    };
    p as usize
}

extern "C" fn f32_to_f16(x: f32) -> u16 {
    semantics::f32_to_half(Scalar::F16, x) as u16
}

extern "C" fn f32_to_bf16(x: f32) -> u16 {
    semantics::f32_to_half(Scalar::BF16, x) as u16
}

/// The address of the helper that widens half type `s` to `f32` (`extern "C" fn(u16) -> f32`)
/// or, when `!widen`, rounds an `f32` to it (`extern "C" fn(f32) -> u16`), as
/// [`semantics::half_to_f32`] and [`semantics::f32_to_half`] define.
pub(crate) fn half_conversion(s: Scalar, widen: bool) -> usize {
    let f: *const () = match (s == Scalar::BF16, widen) {
        (false, true) => f16_to_f32 as *const (),
        (true, true) => bf16_to_f32 as *const (),
        (false, false) => f32_to_f16 as *const (),
        (true, false) => f32_to_bf16 as *const (),
    };
    f as usize
}

extern "C" fn floor_f32(a: f32) -> f32 {
    a.floor()
}

extern "C" fn floor_f64(a: f64) -> f64 {
    a.floor()
}

extern "C" fn ceil_f32(a: f32) -> f32 {
    a.ceil()
}

extern "C" fn ceil_f64(a: f64) -> f64 {
    a.ceil()
}

extern "C" fn trunc_f32(a: f32) -> f32 {
    a.trunc()
}

extern "C" fn trunc_f64(a: f64) -> f64 {
    a.trunc()
}

extern "C" fn nearest_f32(a: f32) -> f32 {
    a.round_ties_even()
}

extern "C" fn nearest_f64(a: f64) -> f64 {
    a.round_ties_even()
}

extern "C" fn fma_f32(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}

extern "C" fn fma_f64(a: f64, b: f64, c: f64) -> f64 {
    a.mul_add(b, c)
}

/// The float library calls this crate implements: (libcall, symbol name, address).
fn float_libcalls() -> [(LibCall, &'static str, *const u8); 10] {
    [
        (LibCall::FloorF32, "nacre_floor_f32", floor_f32 as *const u8),
        (LibCall::FloorF64, "nacre_floor_f64", floor_f64 as *const u8),
        (LibCall::CeilF32, "nacre_ceil_f32", ceil_f32 as *const u8),
        (LibCall::CeilF64, "nacre_ceil_f64", ceil_f64 as *const u8),
        (LibCall::TruncF32, "nacre_trunc_f32", trunc_f32 as *const u8),
        (LibCall::TruncF64, "nacre_trunc_f64", trunc_f64 as *const u8),
        (
            LibCall::NearestF32,
            "nacre_nearest_f32",
            nearest_f32 as *const u8,
        ),
        (
            LibCall::NearestF64,
            "nacre_nearest_f64",
            nearest_f64 as *const u8,
        ),
        (LibCall::FmaF32, "nacre_fma_f32", fma_f32 as *const u8),
        (LibCall::FmaF64, "nacre_fma_f64", fma_f64 as *const u8),
    ]
}

/// Symbol names of Cranelift's library calls: this crate's helpers for the float ones,
/// Cranelift's defaults (resolved in the process) for the rest.
pub(crate) fn libcall_names() -> Box<dyn Fn(LibCall) -> String + Send + Sync> {
    Box::new(
        |libcall| match float_libcalls().iter().find(|(l, _, _)| *l == libcall) {
            Some((_, name, _)) => (*name).to_owned(),
            None => cranelift_module::default_libcall_names()(libcall),
        },
    )
}

/// Registers the float library call helpers as symbols of a JIT module.
pub(crate) fn register_symbols(builder: &mut JITBuilder) {
    builder.symbols(
        float_libcalls()
            .into_iter()
            .map(|(_, name, addr)| (name, addr)),
    );
}
