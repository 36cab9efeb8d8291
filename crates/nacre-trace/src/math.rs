//! Float math on traced values: Rust's `f32`/`f64` methods (`exp`, `ln`, `sin`, `powf`,
//! `round`, `signum`, `clamp`, `is_nan`, ...) with their names and meaning, so float code
//! ports without renaming.
//!
//! The transcendental functions are IR math instructions ([`nacre_ir::MathFn`]); their
//! reference results are the `libm` crate's ([`nacre_ir::semantics::math`]), and each backend
//! computes them within the ulps of the README's accuracy table. Roundings, `copysign` and the
//! classification methods are exact on every backend. The rest are built from those:
//! `fract` is `x - x.trunc()`, `recip` is `1 / x`, `powi` is `powf` of the converted
//! exponent, `log(b)` is `ln(x) / ln(b)`.

use crate::context::with_tracer;
use crate::identity::Handle;
use crate::val::{select, Float, IntoVal, Val};
use nacre_ir::semantics;
use nacre_ir::{BinaryOp, CmpOp, MathFn, MathFn2, UnaryOp};

impl<T: Float> Val<T> {
    fn math(self, f: MathFn) -> Val<T> {
        let h = with_tracer(|t| {
            let a = t.value(self.handle(), f.name(), Self::ir_type);
            t.build(|b| b.math(f, a))
        });
        Val::from_handle(
            h.unwrap_or_else(|| Handle::direct(semantics::math(f, T::SCALAR, self.bits(f.name())))),
        )
    }

    fn math2(self, f: MathFn2, rhs: Val<T>) -> Val<T> {
        let h = with_tracer(|t| {
            let a = t.value(self.handle(), f.name(), Self::ir_type);
            let b = t.value(rhs.handle(), f.name(), Self::ir_type);
            t.build(|bld| bld.math2(f, a, b))
        });
        Val::from_handle(h.unwrap_or_else(|| {
            let (a, b) = (self.bits(f.name()), rhs.bits(f.name()));
            Handle::direct(semantics::math2(f, T::SCALAR, a, b))
        }))
    }

    /// `e^self`.
    pub fn exp(self) -> Val<T> {
        self.math(MathFn::Exp)
    }

    /// `2^self`.
    pub fn exp2(self) -> Val<T> {
        self.math(MathFn::Exp2)
    }

    /// `e^self - 1`, accurate even when `self` is near zero.
    pub fn exp_m1(self) -> Val<T> {
        self.math(MathFn::ExpM1)
    }

    /// The natural logarithm.
    pub fn ln(self) -> Val<T> {
        self.math(MathFn::Ln)
    }

    /// The base-2 logarithm.
    pub fn log2(self) -> Val<T> {
        self.math(MathFn::Log2)
    }

    /// The base-10 logarithm.
    pub fn log10(self) -> Val<T> {
        self.math(MathFn::Log10)
    }

    /// The logarithm to base `base` (`ln(self) / ln(base)`, as Rust computes it).
    pub fn log(self, base: impl IntoVal<T>) -> Val<T> {
        self.ln() / base.into_val().ln()
    }

    /// `ln(1 + self)`, accurate even when `self` is near zero.
    pub fn ln_1p(self) -> Val<T> {
        self.math(MathFn::Ln1p)
    }

    /// `self` to the power `n`.
    pub fn powf(self, n: impl IntoVal<T>) -> Val<T> {
        self.math2(MathFn2::Pow, n.into_val())
    }

    /// `self` to the integer power `n` (computed as `powf` of `n` converted, so exact for
    /// exact results and otherwise within `powf`'s ulps; Rust leaves `powi`'s precision
    /// unspecified).
    pub fn powi(self, n: impl IntoVal<i32>) -> Val<T> {
        self.powf(n.into_val().cast::<T>())
    }

    /// Sine (radians).
    pub fn sin(self) -> Val<T> {
        self.math(MathFn::Sin)
    }

    /// Cosine (radians).
    pub fn cos(self) -> Val<T> {
        self.math(MathFn::Cos)
    }

    /// Sine and cosine (radians).
    pub fn sin_cos(self) -> (Val<T>, Val<T>) {
        (self.sin(), self.cos())
    }

    /// Tangent (radians).
    pub fn tan(self) -> Val<T> {
        self.math(MathFn::Tan)
    }

    /// Arcsine, in `[-pi/2, pi/2]` (NaN outside `[-1, 1]`).
    pub fn asin(self) -> Val<T> {
        self.math(MathFn::Asin)
    }

    /// Arccosine, in `[0, pi]` (NaN outside `[-1, 1]`).
    pub fn acos(self) -> Val<T> {
        self.math(MathFn::Acos)
    }

    /// Arctangent, in `[-pi/2, pi/2]`.
    pub fn atan(self) -> Val<T> {
        self.math(MathFn::Atan)
    }

    /// The four-quadrant arctangent of `self / other` (`self` is `y`), in `[-pi, pi]`.
    pub fn atan2(self, other: impl IntoVal<T>) -> Val<T> {
        self.math2(MathFn2::Atan2, other.into_val())
    }

    /// Hyperbolic sine.
    pub fn sinh(self) -> Val<T> {
        self.math(MathFn::Sinh)
    }

    /// Hyperbolic cosine.
    pub fn cosh(self) -> Val<T> {
        self.math(MathFn::Cosh)
    }

    /// Hyperbolic tangent.
    pub fn tanh(self) -> Val<T> {
        self.math(MathFn::Tanh)
    }

    /// Inverse hyperbolic sine.
    pub fn asinh(self) -> Val<T> {
        self.math(MathFn::Asinh)
    }

    /// Inverse hyperbolic cosine (NaN below 1).
    pub fn acosh(self) -> Val<T> {
        self.math(MathFn::Acosh)
    }

    /// Inverse hyperbolic tangent (NaN outside `[-1, 1]`).
    pub fn atanh(self) -> Val<T> {
        self.math(MathFn::Atanh)
    }

    /// `sqrt(self^2 + other^2)` without undue overflow or underflow.
    pub fn hypot(self, other: impl IntoVal<T>) -> Val<T> {
        self.math2(MathFn2::Hypot, other.into_val())
    }

    /// Cube root.
    pub fn cbrt(self) -> Val<T> {
        self.math(MathFn::Cbrt)
    }

    /// The error function (`libm`'s `erf`; Rust's `f64::erf` is not stable yet).
    pub fn erf(self) -> Val<T> {
        self.math(MathFn::Erf)
    }

    /// `1 / sqrt(self)` (the division and the square root, each correctly rounded).
    pub fn rsqrt(self) -> Val<T> {
        Val::new(T::ONE) / self.sqrt()
    }

    /// The nearest integer, halfway cases away from zero.
    pub fn round(self) -> Val<T> {
        self.unary(UnaryOp::Round)
    }

    /// The integer part (rounds towards zero).
    pub fn trunc(self) -> Val<T> {
        self.unary(UnaryOp::Trunc)
    }

    /// The fractional part, `self - self.trunc()` (with the sign of `self`).
    pub fn fract(self) -> Val<T> {
        self - self.trunc()
    }

    /// `1.0` with the sign of `self` (`-1.0` for `-0.0`), a positive NaN for NaN (as Rust).
    pub fn signum(self) -> Val<T> {
        let one = Val::new(T::ONE).copysign(self);
        select(self.is_nan(), T::NAN, one)
    }

    /// The magnitude of `self` with the sign of `sign`.
    pub fn copysign(self, sign: impl IntoVal<T>) -> Val<T> {
        self.binary(BinaryOp::Copysign, sign.into_val())
    }

    /// `self` restricted to `[min, max]`: `min` if `self < min`, `max` if `self > max`, else
    /// `self` (so NaN stays NaN). Rust's `clamp` panics when `min > max` or a bound is NaN;
    /// a traced bound cannot be checked when tracing, so here the comparisons decide.
    pub fn clamp(self, min: impl IntoVal<T>, max: impl IntoVal<T>) -> Val<T> {
        let (lo, hi) = (min.into_val(), max.into_val());
        let upper = select(self.compare(CmpOp::Gt, hi), hi, self);
        select(self.compare(CmpOp::Lt, lo), lo, upper)
    }

    /// `1 / self`.
    pub fn recip(self) -> Val<T> {
        Val::new(T::ONE) / self
    }

    /// `self * a + b` with one rounding (Rust's `mul_add`, the same as [`Val::fma`]).
    pub fn mul_add(self, a: impl IntoVal<T>, b: impl IntoVal<T>) -> Val<T> {
        self.fma(a, b)
    }

    /// Radians to degrees.
    pub fn to_degrees(self) -> Val<T> {
        self * T::DEGREES_PER_RADIAN
    }

    /// Degrees to radians.
    pub fn to_radians(self) -> Val<T> {
        self * T::RADIANS_PER_DEGREE
    }

    /// True for NaN.
    pub fn is_nan(self) -> Val<bool> {
        self.compare(CmpOp::Ne, self)
    }

    /// True for neither infinite nor NaN.
    pub fn is_finite(self) -> Val<bool> {
        self.abs().compare(CmpOp::Lt, Val::new(T::INFINITY))
    }

    /// True for positive or negative infinity.
    pub fn is_infinite(self) -> Val<bool> {
        self.abs().compare(CmpOp::Eq, Val::new(T::INFINITY))
    }

    /// True if the sign bit is set (for `-0.0` and NaNs with the sign bit too).
    pub fn is_sign_negative(self) -> Val<bool> {
        Val::new(T::ONE)
            .copysign(self)
            .compare(CmpOp::Lt, Val::new(T::ZERO))
    }

    /// True if the sign bit is clear.
    pub fn is_sign_positive(self) -> Val<bool> {
        !self.is_sign_negative()
    }
}

#[cfg(test)]
mod tests {
    use crate::val::Float;

    /// `to_degrees`/`to_radians` multiply by the same constants as Rust's own methods.
    #[test]
    fn degree_factors_are_rusts() {
        for x in [1.0f32, -3.5, 1e-3, 123.25] {
            assert_eq!(x * f32::DEGREES_PER_RADIAN, x.to_degrees());
            assert_eq!(x * f32::RADIANS_PER_DEGREE, x.to_radians());
            let y = f64::from(x);
            assert_eq!(y * f64::DEGREES_PER_RADIAN, y.to_degrees());
            assert_eq!(y * f64::RADIANS_PER_DEGREE, y.to_radians());
        }
    }
}
