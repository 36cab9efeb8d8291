//! Float math with Rust's names: the math-library functions (`exp`, `ln_1p`, `sin`, `atanh`,
//! `powf`, `hypot`, `erf`, ...) one by one on `f32` and `f64`, and the exact methods built
//! from roundings, `copysign` and comparisons (`round`, `trunc`, `fract`, `signum`, `clamp`,
//! `to_degrees`, `is_nan`, ...).
//!
//! The library functions are checked against `nacre_ir::semantics::math` (the `libm` crate)
//! within [`LIBRARY_ULPS`]: the interpreter and Cranelift compute exactly that, the C backend
//! calls the C library, whose results differ by an ulp or so. The exact methods must match
//! Rust's own methods bit for bit.

use crate::registry::{scalar_case, Case};
use nacre::ir::semantics::{math2_f32, math2_f64, math_f32, math_f64};
use nacre::ir::{MathFn, MathFn2};
use nacre::prelude::*;

/// How far a library function may be from the reference on a CPU backend, in ulps.
pub const LIBRARY_ULPS: u64 = 4;

/// How far a composite of several library calls may be from the same composite of reference
/// calls, in ulps.
pub const COMPOSITE_ULPS: u64 = 16;

/// One traced function per math function and type, and its case.
macro_rules! unary_cases {
    ($($f:ident => $variant:ident),* $(,)?) => {
        /// One case per one-argument math function and float type.
        fn unary_cases() -> Vec<Case> {
            vec![$(
                scalar_case(
                    concat!("math_", stringify!($f), "_f32"),
                    |x: Val<f32>| x.$f(),
                    |x: f32| Ok(math_f32(MathFn::$variant, x)),
                )
                .within_ulps(LIBRARY_ULPS),
                scalar_case(
                    concat!("math_", stringify!($f), "_f64"),
                    |x: Val<f64>| x.$f(),
                    |x: f64| Ok(math_f64(MathFn::$variant, x)),
                )
                .within_ulps(LIBRARY_ULPS),
            )*]
        }
    };
}
unary_cases!(
    exp => Exp, exp2 => Exp2, exp_m1 => ExpM1, ln => Ln, log2 => Log2, log10 => Log10,
    ln_1p => Ln1p, sin => Sin, cos => Cos, tan => Tan, asin => Asin, acos => Acos,
    atan => Atan, sinh => Sinh, cosh => Cosh, tanh => Tanh, asinh => Asinh, acosh => Acosh,
    atanh => Atanh, cbrt => Cbrt, erf => Erf,
);

macro_rules! binary_cases {
    ($($f:ident => $variant:ident),* $(,)?) => {
        /// One case per two-argument math function and float type. Signaling NaN operands
        /// are quieted first (`x + 0.0`): C libraries disagree on `hypot(inf, sNaN)` and
        /// `pow(1, sNaN)`, which C99 defines only for quiet NaNs.
        fn binary_cases() -> Vec<Case> {
            vec![$(
                scalar_case(
                    concat!("math_", stringify!($f), "_f32"),
                    |x: Val<f32>, y: Val<f32>| (x + 0.0f32).$f(y + 0.0f32),
                    |x: f32, y: f32| Ok(math2_f32(MathFn2::$variant, x + 0.0, y + 0.0)),
                )
                .within_ulps(LIBRARY_ULPS),
                scalar_case(
                    concat!("math_", stringify!($f), "_f64"),
                    |x: Val<f64>, y: Val<f64>| (x + 0.0f64).$f(y + 0.0f64),
                    |x: f64, y: f64| Ok(math2_f64(MathFn2::$variant, x + 0.0, y + 0.0)),
                )
                .within_ulps(LIBRARY_ULPS),
            )*]
        }
    };
}
binary_cases!(powf => Pow, atan2 => Atan2, hypot => Hypot);

/// Roundings and the fractional part, folded exactly (each term is exact, and the weights
/// are powers of two).
#[jit]
pub fn roundings_f32(x: Val<f32>) -> Val<f32> {
    x.round() * 0.25f32 + x.trunc() * 0.5f32 + x.fract() + x.floor() * 0.125f32
}

/// Sign operations, clamping and the exact conversions on `f64`.
#[jit]
pub fn sign_ops_f64(x: Val<f64>, y: Val<f64>) -> Val<f64> {
    let a = x.copysign(y) + x.signum() * 4.0f64;
    let b = x.clamp(-2.5f64, 3.0f64) + y.recip();
    let c = x.to_degrees() - y.to_radians() + x.mul_add(y, 1.0f64);
    a * 0.5f64 + b * 0.25f64 + c
}

/// The classification methods of a float, as bits of a `u32`.
#[jit]
pub fn classify_f32(x: Val<f32>) -> Val<u32> {
    x.is_nan().cast::<u32>()
        + (x.is_finite().cast::<u32>() << 1u32)
        + (x.is_infinite().cast::<u32>() << 2u32)
        + (x.is_sign_negative().cast::<u32>() << 3u32)
        + (x.is_sign_positive().cast::<u32>() << 4u32)
        + (x.signum().is_sign_negative().cast::<u32>() << 5u32)
}

/// `to_degrees`, `to_radians` and `powi` on `f32`.
#[jit]
pub fn conversions_f32(x: Val<f32>, n: Val<i32>) -> Val<f32> {
    x.to_degrees() + x.to_radians() * 2.0f32 + x.powi(n % 5i32)
}

/// The tanh form of GELU, as the GELU benchmark computes it.
#[jit]
pub fn gelu_tanh_f32(x: Val<f32>) -> Val<f32> {
    let inner = (x + x * x * x * 0.044715f32) * 0.797_884_6f32;
    x * 0.5f32 * (inner.tanh() + 1.0f32)
}

/// A numerically stable softplus, `ln(1 + e^x)`, and a logistic, on `f64`.
#[jit]
pub fn softplus_f64(x: Val<f64>) -> Val<f64> {
    let soft = x.max(0.0f64) + (-x.abs()).exp().ln_1p();
    let logistic = (1.0f64 + (-x).exp()).recip();
    soft + logistic
}

/// The cases of this module.
pub fn cases() -> Vec<Case> {
    let mut v = unary_cases();
    v.extend(binary_cases());
    v.extend([
        scalar_case("roundings_f32", roundings_f32, |x: f32| {
            Ok(x.round() * 0.25 + x.trunc() * 0.5 + x.fract() + x.floor() * 0.125)
        }),
        scalar_case("sign_ops_f64", sign_ops_f64, |x: f64, y: f64| {
            let a = x.copysign(y) + x.signum() * 4.0;
            let b = x.clamp_nan(-2.5, 3.0) + y.recip();
            let c = x.to_degrees() - y.to_radians() + x.mul_add(y, 1.0);
            Ok(a * 0.5 + b * 0.25 + c)
        }),
        scalar_case("classify_f32", classify_f32, |x: f32| {
            Ok(u32::from(x.is_nan())
                + (u32::from(x.is_finite()) << 1)
                + (u32::from(x.is_infinite()) << 2)
                + (u32::from(x.is_sign_negative()) << 3)
                + (u32::from(x.is_sign_positive()) << 4)
                + (u32::from(x.signum().is_sign_negative()) << 5))
        }),
        scalar_case("conversions_f32", conversions_f32, |x: f32, n: i32| {
            let p = math2_f32(MathFn2::Pow, x, n.wrapping_rem(5) as f32);
            Ok(x.to_degrees() + x.to_radians() * 2.0 + p)
        })
        .within_ulps(COMPOSITE_ULPS),
        scalar_case("gelu_tanh_f32", gelu_tanh_f32, |x: f32| {
            let inner = (x + x * x * x * 0.044715) * 0.797_884_6;
            Ok(x * 0.5 * (math_f32(MathFn::Tanh, inner) + 1.0))
        })
        .within_ulps(COMPOSITE_ULPS),
        scalar_case("softplus_f64", softplus_f64, |x: f64| {
            let e = math_f64(MathFn::Exp, -x.abs());
            let soft = x.max(0.0) + math_f64(MathFn::Ln1p, e);
            Ok(soft + (1.0 + math_f64(MathFn::Exp, -x)).recip())
        })
        .within_ulps(COMPOSITE_ULPS),
    ]);
    v
}

/// Rust's `clamp` without its panics: the traced `clamp` (NaN stays NaN).
trait ClampNan {
    fn clamp_nan(self, lo: Self, hi: Self) -> Self;
}

impl ClampNan for f64 {
    fn clamp_nan(self, lo: f64, hi: f64) -> f64 {
        if self < lo {
            lo
        } else if self > hi {
            hi
        } else {
            self
        }
    }
}
