//! Reference semantics of every operator, on values encoded as bits.
//!
//! A value of scalar type is carried as a `u128` holding its bits zero-extended: `i8` `-1` is
//! `0xff`, `f32` values are `f32::to_bits`, `bool` is 0 or 1, pointers are 64-bit addresses.
//! (The 128-bit carrier exists for `i128`/`u128`; every other type uses its low 64 bits, and
//! backends that keep 64-bit registers convert at this boundary.) Integer
//! arithmetic follows Rust's wrapping semantics (`wrapping_add`, `wrapping_shl`, ...), integer
//! division and remainder by zero trap, `MIN / -1` wraps. Casts follow Rust's `as`. This module
//! is the single definition used by constant folding, the interpreter and direct execution;
//! native backends are tested against it.
//!
//! The half-precision floats `f16` and `bf16` compute in `f32`, as GPUs do: every operator
//! widens its operands to `f32` (exactly), applies the `f32` operator and rounds the result to
//! the nearest half value, ties to even ([`f32_to_half`]). For `+ - * /`, `sqrt` and the
//! comparisons that is the correctly rounded half result (`f32` has more than twice the
//! precision); `mul_add` is rounded twice (once in `f32`); a math function is the `f32`
//! reference rounded once more. Casts to a half type convert to `f32` first (Rust's `as`) and
//! round; casts from one widen to `f32` and convert from there.

use crate::atomic::AtomicOp;
use crate::instructions::{BinaryOp, CmpOp, MathFn, MathFn2, UnaryOp};
use crate::trap::Trap;
use crate::types::{Scalar, Type};

/// A Rust type that corresponds to an IR scalar type, with its bit encoding. Implemented for
/// `bool`, the integer types of 8 to 128 bits, `f32`/`f64` and the `half` crate's `f16`/`bf16`
/// only (sealed): each is plain bits without padding, so arrays of them can be copied as bytes.
pub trait ScalarValue: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The IR type.
    const SCALAR: Scalar;
    /// Encode as bits.
    fn to_bits(self) -> u128;
    /// Decode from bits (upper bits beyond the width are ignored).
    fn from_bits(bits: u128) -> Self;
}

mod sealed {
    /// Only this crate's scalar types implement [`super::ScalarValue`].
    pub trait Sealed {}
    macro_rules! sealed {
        ($($t:ty),*) => {$(impl Sealed for $t {})*};
    }
    sealed!(
        bool,
        i8,
        i16,
        i32,
        i64,
        u8,
        u16,
        u32,
        u64,
        i128,
        u128,
        f32,
        f64,
        half::f16,
        half::bf16
    );
}

// Generated C and CUDA read `i128`/`u128` memory as `__int128`, which must be 16-byte aligned:
// host slices of them must be too (Rust 1.77 made them so on x86-64; older compilers gave 8).
const _: () = assert!(std::mem::align_of::<i128>() == 16 && std::mem::align_of::<u128>() == 16);

macro_rules! int_scalar {
    ($($t:ty => $s:ident, $u:ty);* $(;)?) => {$(
        impl ScalarValue for $t {
            const SCALAR: Scalar = Scalar::$s;
            #[inline]
            fn to_bits(self) -> u128 { self as $u as u128 }
            #[inline]
            fn from_bits(bits: u128) -> Self { bits as $u as $t }
        }
    )*};
}
int_scalar!(
    i8 => I8, u8; i16 => I16, u16; i32 => I32, u32; i64 => I64, u64; i128 => I128, u128;
    u8 => U8, u8; u16 => U16, u16; u32 => U32, u32; u64 => U64, u64; u128 => U128, u128;
);

impl ScalarValue for bool {
    const SCALAR: Scalar = Scalar::Bool;
    #[inline]
    fn to_bits(self) -> u128 {
        self as u128
    }
    #[inline]
    fn from_bits(bits: u128) -> Self {
        bits & 1 != 0
    }
}

impl ScalarValue for f32 {
    const SCALAR: Scalar = Scalar::F32;
    #[inline]
    fn to_bits(self) -> u128 {
        f32::to_bits(self) as u128
    }
    #[inline]
    fn from_bits(bits: u128) -> Self {
        f32::from_bits(bits as u32)
    }
}

impl ScalarValue for f64 {
    const SCALAR: Scalar = Scalar::F64;
    #[inline]
    fn to_bits(self) -> u128 {
        u128::from(f64::to_bits(self))
    }
    #[inline]
    fn from_bits(bits: u128) -> Self {
        f64::from_bits(bits as u64)
    }
}

macro_rules! half_scalar {
    ($($t:ty => $s:ident),*) => {$(
        impl ScalarValue for $t {
            const SCALAR: Scalar = Scalar::$s;
            #[inline]
            fn to_bits(self) -> u128 {
                <$t>::to_bits(self) as u128
            }
            #[inline]
            fn from_bits(bits: u128) -> Self {
                <$t>::from_bits(bits as u16)
            }
        }
    )*};
}
half_scalar!(half::f16 => F16, half::bf16 => BF16);

/// Widens a value of a half type `s` (its bits) to `f32`; exact. Non-half types read as `f32`
/// bits.
pub fn half_to_f32(s: Scalar, bits: u128) -> f32 {
    match s {
        Scalar::F16 => half::f16::from_bits(bits as u16).to_f32(),
        Scalar::BF16 => half::bf16::from_bits(bits as u16).to_f32(),
        _ => f32::from_bits(bits as u32),
    }
}

/// Rounds an `f32` to the half type `s`, to nearest with ties to even; NaN stays NaN,
/// overflow becomes infinity. Returns the half's bits (`f32` bits for a non-half `s`).
pub fn f32_to_half(s: Scalar, x: f32) -> u128 {
    match s {
        Scalar::F16 => half::f16::from_f32(x).to_bits() as u128,
        Scalar::BF16 => half::bf16::from_f32(x).to_bits() as u128,
        _ => x.to_bits() as u128,
    }
}

/// A half value's bits as the bits of the same `f32`.
fn widen(s: Scalar, bits: u128) -> u128 {
    enc(half_to_f32(s, bits))
}

/// `f32` bits rounded to the half type `s`.
fn narrow(s: Scalar, bits: u128) -> u128 {
    f32_to_half(s, dec::<f32>(bits))
}

#[inline(always)]
fn enc<T: ScalarValue>(x: T) -> u128 {
    x.to_bits()
}

#[inline(always)]
fn dec<T: ScalarValue>(bits: u128) -> T {
    T::from_bits(bits)
}

/// Whether an access of `size` bytes at address `addr` lies wholly in the `bytes` bytes that
/// start at `base`: `addr - base` (wrapping) is at most `bytes - size`. The meaning of
/// [`crate::InstKind::BoundsCheck`].
pub const fn in_bounds(addr: u64, base: u64, bytes: u64, size: u64) -> bool {
    bytes >= size && addr.wrapping_sub(base) <= bytes - size
}

/// Truncates bits to the width of `ty` (zero-extending), the canonical encoding.
pub fn normalize(ty: Type, bits: u128) -> u128 {
    match ty {
        Type::Scalar(Scalar::Bool) => bits & 1,
        Type::Scalar(s) if s.bits() < 128 => bits & ((1u128 << s.bits()) - 1),
        Type::Scalar(_) => bits,
        Type::Ptr(..) => bits & u128::from(u64::MAX),
    }
}

/// The `match` behind [`with_scalar!`] and the crate's numeric dispatch macros: one arm per
/// listed variant binding `$t` to its Rust type, then the given extra arms.
#[doc(hidden)]
#[macro_export]
macro_rules! __match_scalar {
    ($s:expr, $t:ident => $body:expr, [$($v:ident = $ty:ty),*] $($rest:tt)*) => {
        match $s {
            $($crate::Scalar::$v => {
                type $t = $ty;
                $body
            })*
            $($rest)*
        }
    };
}

/// Evaluates `$body` with the type alias `$t` bound to the Rust type of the
/// [`Scalar`](crate::Scalar) `$s` (`bool`, `i8`, ..., `f64`): `with_scalar!(s, T => size_of::<T>())`.
#[macro_export]
macro_rules! with_scalar {
    ($s:expr, $t:ident => $body:expr) => {
        $crate::__match_scalar!($s, $t => $body, [
            Bool = bool, I8 = i8, I16 = i16, I32 = i32, I64 = i64,
            U8 = u8, U16 = u16, U32 = u32, U64 = u64, F32 = f32, F64 = f64,
            F16 = $crate::half::f16, BF16 = $crate::half::bf16, I128 = i128, U128 = u128
        ])
    };
}

/// As [`with_scalar!`] for the numeric types with Rust's `as`; `$other` for `bool` and the
/// half types.
macro_rules! with_num {
    ($s:expr, $t:ident => $body:expr, else $other:expr) => {
        $crate::__match_scalar!($s, $t => $body, [
            I8 = i8, I16 = i16, I32 = i32, I64 = i64,
            U8 = u8, U16 = u16, U32 = u32, U64 = u64, F32 = f32, F64 = f64,
            I128 = i128, U128 = u128
        ] _ => $other,)
    };
}

/// As [`with_scalar!`] for the integer types; `$other` for the rest.
macro_rules! with_int {
    ($s:expr, $t:ident => $body:expr, else $other:expr) => {
        $crate::__match_scalar!($s, $t => $body, [
            I8 = i8, I16 = i16, I32 = i32, I64 = i64,
            U8 = u8, U16 = u16, U32 = u32, U64 = u64, I128 = i128, U128 = u128
        ] _ => $other,)
    };
}

/// As [`with_scalar!`] for the float types; `$other` for the rest.
macro_rules! with_float {
    ($s:expr, $t:ident => $body:expr, else $other:expr) => {
        $crate::__match_scalar!($s, $t => $body, [F32 = f32, F64 = f64] _ => $other,)
    };
}

/// Evaluates a unary operator on a scalar. Operators that do not apply to the type (the
/// verifier rejects them) return the operand unchanged.
pub fn unary(op: UnaryOp, s: Scalar, a: u128) -> u128 {
    if s.is_half() {
        return narrow(s, unary(op, Scalar::F32, widen(s, a)));
    }
    if s == Scalar::Bool {
        return match op {
            UnaryOp::Not => (a & 1) ^ 1,
            _ => a,
        };
    }
    with_int!(s, T => {
        let x = dec::<T>(a);
        #[allow(unused_comparisons)]
        let r: T = match op {
            UnaryOp::Neg => x.wrapping_neg(),
            UnaryOp::Not => !x,
            UnaryOp::Abs => if x < 0 as T { x.wrapping_neg() } else { x },
            UnaryOp::Sqrt | UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Trunc | UnaryOp::Round => x,
            UnaryOp::CountOnes => x.count_ones() as T,
            UnaryOp::LeadingZeros => x.leading_zeros() as T,
            UnaryOp::TrailingZeros => x.trailing_zeros() as T,
            UnaryOp::SwapBytes => x.swap_bytes(),
            UnaryOp::ReverseBits => x.reverse_bits(),
        };
        enc(r)
    }, else with_float!(s, T => {
        let x = dec::<T>(a);
        let r: T = match op {
            UnaryOp::Neg => -x,
            UnaryOp::Not => x,
            UnaryOp::Abs => x.abs(),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Floor => x.floor(),
            UnaryOp::Ceil => x.ceil(),
            UnaryOp::Trunc => x.trunc(),
            UnaryOp::Round => x.round(),
            // Integer bit operations are not defined on floats (the verifier refuses them).
            UnaryOp::CountOnes
            | UnaryOp::LeadingZeros
            | UnaryOp::TrailingZeros
            | UnaryOp::SwapBytes
            | UnaryOp::ReverseBits => x,
        };
        enc(r)
    }, else a))
}

/// Evaluates a binary operator on a scalar. Integer division and remainder by zero trap.
pub fn binary(op: BinaryOp, s: Scalar, a: u128, b: u128) -> Result<u128, Trap> {
    if s.is_half() {
        let r = binary(op, Scalar::F32, widen(s, a), widen(s, b))?;
        return Ok(narrow(s, r));
    }
    if s == Scalar::Bool {
        let (x, y) = (a & 1, b & 1);
        return Ok(match op {
            BinaryOp::And | BinaryOp::Mul | BinaryOp::Min => x & y,
            BinaryOp::Or | BinaryOp::Max => x | y,
            BinaryOp::Xor | BinaryOp::Add | BinaryOp::Sub => x ^ y,
            BinaryOp::Div | BinaryOp::Rem | BinaryOp::Shl | BinaryOp::Shr | BinaryOp::Copysign => x,
        });
    }
    with_int!(s, T => {
        let (x, y) = (dec::<T>(a), dec::<T>(b));
        #[allow(clippy::unnecessary_cast)]
        let r: T = match op {
            BinaryOp::Add => x.wrapping_add(y),
            BinaryOp::Sub => x.wrapping_sub(y),
            BinaryOp::Mul => x.wrapping_mul(y),
            BinaryOp::Div => {
                if y == 0 { return Err(Trap::DivisionByZero) }
                x.wrapping_div(y)
            }
            BinaryOp::Rem => {
                if y == 0 { return Err(Trap::RemainderByZero) }
                x.wrapping_rem(y)
            }
            BinaryOp::And => x & y,
            BinaryOp::Or => x | y,
            BinaryOp::Xor => x ^ y,
            BinaryOp::Shl => x.wrapping_shl(y as u32),
            BinaryOp::Shr => x.wrapping_shr(y as u32),
            BinaryOp::Min => x.min(y),
            BinaryOp::Max => x.max(y),
            BinaryOp::Copysign => x,
        };
        Ok(enc(r))
    }, else with_float!(s, T => {
        let (x, y) = (dec::<T>(a), dec::<T>(b));
        let r: T = match op {
            BinaryOp::Add => x + y,
            BinaryOp::Sub => x - y,
            BinaryOp::Mul => x * y,
            BinaryOp::Div => x / y,
            BinaryOp::Rem => x % y,
            BinaryOp::Min => float_min(x, y),
            BinaryOp::Max => float_max(x, y),
            BinaryOp::Copysign => x.copysign(y),
            BinaryOp::And | BinaryOp::Or | BinaryOp::Xor | BinaryOp::Shl | BinaryOp::Shr => x,
        };
        Ok(enc(r))
    }, else Ok(a)))
}

/// The value an atomic read-modify-write leaves in memory: `op(old, value)` on elements of
/// type `s` (one that [`AtomicOp::supports`]). Integer add and sub wrap; float min and max are
/// [`float_min`] and [`float_max`], as the `min` and `max` operators.
pub fn atomic_rmw(op: AtomicOp, s: Scalar, old: u128, value: u128) -> u128 {
    let Some(binary_op) = op.binary() else {
        return normalize(Type::Scalar(s), value);
    };
    // None of these operators traps.
    binary(binary_op, s, old, value).unwrap_or(old)
}

/// Float minimum: a NaN operand is ignored (as `f64::min`), and `-0.0` counts as smaller than
/// `+0.0` (IEEE 754-2019 `minimumNumber`), so the result is fully specified.
pub fn float_min<T: Float>(x: T, y: T) -> T {
    if x.is_nan() {
        y
    } else if y.is_nan() {
        x
    } else if x == y {
        if x.is_sign_negative() {
            x
        } else {
            y
        }
    } else if x < y {
        x
    } else {
        y
    }
}

/// Float maximum: a NaN operand is ignored, and `+0.0` counts as larger than `-0.0`.
pub fn float_max<T: Float>(x: T, y: T) -> T {
    if x.is_nan() {
        y
    } else if y.is_nan() {
        x
    } else if x == y {
        if x.is_sign_negative() {
            y
        } else {
            x
        }
    } else if x > y {
        x
    } else {
        y
    }
}

/// The float operations [`float_min`] and [`float_max`] need.
pub trait Float: Copy + PartialOrd {
    /// True for NaN.
    fn is_nan(self) -> bool;
    /// True if the sign bit is set.
    fn is_sign_negative(self) -> bool;
}

impl Float for f32 {
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    fn is_sign_negative(self) -> bool {
        f32::is_sign_negative(self)
    }
}

impl Float for f64 {
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    fn is_sign_negative(self) -> bool {
        f64::is_sign_negative(self)
    }
}

/// Fused multiply-add on floats (`a * b + c`, one rounding; for a half type, one rounding
/// in `f32` and one to the half type).
pub fn fma(s: Scalar, a: u128, b: u128, c: u128) -> u128 {
    if s.is_half() {
        let r = fma(Scalar::F32, widen(s, a), widen(s, b), widen(s, c));
        return narrow(s, r);
    }
    with_float!(s, T => enc(dec::<T>(a).mul_add(dec::<T>(b), dec::<T>(c))),
        else binary(BinaryOp::Add, s, binary(BinaryOp::Mul, s, a, b).unwrap_or(0), c).unwrap_or(0))
}

/// Evaluates a comparison. Pointers compare as unsigned addresses.
pub fn compare(op: CmpOp, ty: Type, a: u128, b: u128) -> bool {
    fn cmp<T: PartialOrd>(op: CmpOp, x: T, y: T) -> bool {
        match op {
            CmpOp::Eq => x == y,
            CmpOp::Ne => x != y,
            CmpOp::Lt => x < y,
            CmpOp::Le => x <= y,
            CmpOp::Gt => x > y,
            CmpOp::Ge => x >= y,
        }
    }
    match ty {
        Type::Ptr(..) => cmp(op, a, b),
        Type::Scalar(s) if s.is_half() => cmp(op, half_to_f32(s, a), half_to_f32(s, b)),
        Type::Scalar(s) => with_scalar!(s, T => cmp(op, dec::<T>(a), dec::<T>(b))),
    }
}

/// Converts with Rust `as` semantics from `from` to `to`. `bool` targets mean `!= 0`;
/// pointers convert to and from 64-bit integers as addresses.
pub fn cast(from: Type, to: Type, a: u128) -> u128 {
    let (fs, ts) = match (from, to) {
        (Type::Scalar(f), Type::Scalar(t)) => (f, t),
        (Type::Ptr(..), Type::Scalar(t)) => (Scalar::U64, t),
        (Type::Scalar(f), Type::Ptr(..)) => (f, Scalar::U64),
        (Type::Ptr(..), Type::Ptr(..)) => return a,
    };
    if fs == ts && fs.is_half() {
        return a & 0xffff;
    }
    if ts.is_half() {
        return narrow(ts, cast(Type::Scalar(fs), Type::F32, a));
    }
    if fs.is_half() {
        return cast(Type::F32, Type::Scalar(ts), widen(fs, a));
    }
    if ts == Scalar::Bool {
        return with_scalar!(fs, F => (dec::<F>(a) != dec::<F>(0)) as u128);
    }
    if fs == Scalar::Bool {
        return with_num!(ts, T => {
            #[allow(clippy::unnecessary_cast)]
            let r = ((a & 1) as u8) as T;
            enc(r)
        }, else a & 1);
    }
    with_num!(fs, F => {
        let x = dec::<F>(a);
        with_num!(ts, T => {
            #[allow(clippy::unnecessary_cast)]
            let r = x as T;
            enc(r)
        }, else a)
    }, else a)
}

/// Evaluates a one-argument math function on a float (the reference for every backend: the
/// `libm` crate, a port of musl's libm, so that the result is the same on every host).
/// Non-float types (the verifier refuses them) return the operand unchanged.
pub fn math(f: MathFn, s: Scalar, a: u128) -> u128 {
    match s {
        Scalar::F32 => enc(math_f32(f, dec::<f32>(a))),
        Scalar::F64 => enc(math_f64(f, dec::<f64>(a))),
        Scalar::F16 | Scalar::BF16 => f32_to_half(s, math_f32(f, half_to_f32(s, a))),
        _ => a,
    }
}

/// Evaluates a two-argument math function on floats (reference as for [`math`]).
pub fn math2(f: MathFn2, s: Scalar, a: u128, b: u128) -> u128 {
    match s {
        Scalar::F32 => enc(math2_f32(f, dec::<f32>(a), dec::<f32>(b))),
        Scalar::F64 => enc(math2_f64(f, dec::<f64>(a), dec::<f64>(b))),
        Scalar::F16 | Scalar::BF16 => {
            f32_to_half(s, math2_f32(f, half_to_f32(s, a), half_to_f32(s, b)))
        }
        _ => a,
    }
}

/// [`math`] on an `f32`.
pub fn math_f32(f: MathFn, x: f32) -> f32 {
    match f {
        MathFn::Exp => libm::expf(x),
        MathFn::Exp2 => libm::exp2f(x),
        MathFn::ExpM1 => libm::expm1f(x),
        MathFn::Ln => libm::logf(x),
        MathFn::Log2 => libm::log2f(x),
        MathFn::Log10 => libm::log10f(x),
        MathFn::Ln1p => libm::log1pf(x),
        MathFn::Sin => libm::sinf(x),
        MathFn::Cos => libm::cosf(x),
        MathFn::Tan => libm::tanf(x),
        MathFn::Asin => libm::asinf(x),
        MathFn::Acos => libm::acosf(x),
        MathFn::Atan => libm::atanf(x),
        MathFn::Sinh => libm::sinhf(x),
        MathFn::Cosh => libm::coshf(x),
        MathFn::Tanh => libm::tanhf(x),
        MathFn::Asinh => libm::asinhf(x),
        // `libm::acoshf` answers a number for x <= -2; the function is NaN below 1.
        MathFn::Acosh if x < 1.0 => f32::NAN,
        MathFn::Acosh => libm::acoshf(x),
        MathFn::Atanh => libm::atanhf(x),
        MathFn::Cbrt => libm::cbrtf(x),
        MathFn::Erf => libm::erff(x),
    }
}

/// [`math`] on an `f64`.
pub fn math_f64(f: MathFn, x: f64) -> f64 {
    match f {
        MathFn::Exp => libm::exp(x),
        MathFn::Exp2 => libm::exp2(x),
        MathFn::ExpM1 => libm::expm1(x),
        MathFn::Ln => libm::log(x),
        MathFn::Log2 => libm::log2(x),
        MathFn::Log10 => libm::log10(x),
        MathFn::Ln1p => libm::log1p(x),
        MathFn::Sin => libm::sin(x),
        MathFn::Cos => libm::cos(x),
        MathFn::Tan => libm::tan(x),
        MathFn::Asin => libm::asin(x),
        MathFn::Acos => libm::acos(x),
        MathFn::Atan => libm::atan(x),
        MathFn::Sinh => libm::sinh(x),
        MathFn::Cosh => libm::cosh(x),
        MathFn::Tanh => libm::tanh(x),
        MathFn::Asinh => libm::asinh(x),
        MathFn::Acosh if x < 1.0 => f64::NAN,
        MathFn::Acosh => libm::acosh(x),
        MathFn::Atanh => libm::atanh(x),
        MathFn::Cbrt => libm::cbrt(x),
        MathFn::Erf => libm::erf(x),
    }
}

/// [`math2`] on `f32`s.
pub fn math2_f32(f: MathFn2, x: f32, y: f32) -> f32 {
    match f {
        MathFn2::Pow => libm::powf(x, y),
        MathFn2::Atan2 => libm::atan2f(x, y),
        MathFn2::Hypot => libm::hypotf(x, y),
    }
}

/// [`math2`] on `f64`s.
pub fn math2_f64(f: MathFn2, x: f64, y: f64) -> f64 {
    match f {
        MathFn2::Pow => libm::pow(x, y),
        MathFn2::Atan2 => libm::atan2(x, y),
        MathFn2::Hypot => libm::hypot(x, y),
    }
}

/// The distance in units in the last place between two floats of type `s` given as bits:
/// 0 when they are equal or both NaN, `u64::MAX` when exactly one is NaN; `+0.0` and `-0.0`
/// are one apart. The measure of the accuracy tables.
pub fn ulps(s: Scalar, a: u64, b: u64) -> u64 {
    fn ordered(bits: u64, sign: u64) -> i128 {
        if bits & sign != 0 {
            -((bits & !sign) as i128) - 1
        } else {
            bits as i128
        }
    }
    let (wa, wb) = (u128::from(a), u128::from(b));
    let (sign, nan_a, nan_b) = match s {
        Scalar::F32 => (1 << 31, dec::<f32>(wa).is_nan(), dec::<f32>(wb).is_nan()),
        Scalar::F64 => (1 << 63, dec::<f64>(wa).is_nan(), dec::<f64>(wb).is_nan()),
        Scalar::F16 | Scalar::BF16 => (
            1 << 15,
            half_to_f32(s, wa).is_nan(),
            half_to_f32(s, wb).is_nan(),
        ),
        _ => return u64::from(a != b),
    };
    match (nan_a, nan_b) {
        (true, true) => 0,
        (false, false) => (ordered(a, sign) - ordered(b, sign)).unsigned_abs() as u64,
        _ => u64::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_integer_arithmetic() {
        let max = enc(i32::MAX);
        assert_eq!(
            binary(BinaryOp::Add, Scalar::I32, max, 1).unwrap(),
            enc(i32::MIN)
        );
        let min = enc(i32::MIN);
        let m1 = enc(-1i32);
        assert_eq!(binary(BinaryOp::Div, Scalar::I32, min, m1).unwrap(), min);
        assert_eq!(binary(BinaryOp::Rem, Scalar::I32, min, m1).unwrap(), 0);
        assert_eq!(binary(BinaryOp::Shl, Scalar::U8, 1, 9).unwrap(), 2);
    }

    #[test]
    fn wide_integers_follow_rust() {
        let (i, u) = (Scalar::I128, Scalar::U128);
        let min = enc(i128::MIN);
        let m1 = enc(-1i128);
        assert_eq!(binary(BinaryOp::Div, i, min, m1), Ok(min));
        assert_eq!(binary(BinaryOp::Rem, i, min, m1), Ok(0));
        assert_eq!(binary(BinaryOp::Div, u, 5, 0), Err(Trap::DivisionByZero));
        let big = enc(u128::MAX / 3);
        assert_eq!(
            binary(BinaryOp::Mul, u, big, 4),
            Ok(enc((u128::MAX / 3).wrapping_mul(4)))
        );
        assert_eq!(binary(BinaryOp::Shl, u, 1, 127), Ok(1 << 127));
        assert_eq!(
            binary(BinaryOp::Shl, u, 1, 128),
            Ok(1),
            "the amount is masked"
        );
        assert_eq!(
            binary(BinaryOp::Shr, i, min, 127),
            Ok(m1),
            "arithmetic shift"
        );
        assert!(compare(CmpOp::Lt, Type::I128, min, 0));
        assert!(!compare(CmpOp::Lt, Type::U128, min, 0));
        assert_eq!(cast(Type::I64, Type::I128, enc(-3i64)), enc(-3i128));
        assert_eq!(cast(Type::I128, Type::I32, enc(-3i128)), enc(-3i32));
        assert_eq!(
            cast(Type::U128, Type::F64, u128::MAX),
            enc(u128::MAX as f64)
        );
        assert_eq!(cast(Type::F64, Type::I128, enc(1e300f64)), enc(i128::MAX));
        assert_eq!(cast(Type::F32, Type::U128, enc(f32::NAN)), 0);
        assert_eq!(unary(UnaryOp::LeadingZeros, u, 1), 127);
        assert_eq!(unary(UnaryOp::CountOnes, i, m1), 128);
        assert_eq!(normalize(Type::U64, u128::MAX), u128::from(u64::MAX));
        assert_eq!(normalize(Type::I128, u128::MAX), u128::MAX);
    }

    #[test]
    fn division_by_zero_traps() {
        assert_eq!(
            binary(BinaryOp::Div, Scalar::U64, 5, 0),
            Err(Trap::DivisionByZero)
        );
        assert_eq!(
            binary(BinaryOp::Rem, Scalar::I8, 5, 0),
            Err(Trap::RemainderByZero)
        );
        let r = binary(BinaryOp::Div, Scalar::F64, enc(1f64), enc(0f64)).unwrap();
        assert_eq!(dec::<f64>(r), f64::INFINITY);
    }

    #[test]
    fn casts_follow_rust_as() {
        assert_eq!(cast(Type::F64, Type::I32, enc(f64::NAN)), 0);
        assert_eq!(cast(Type::F64, Type::I32, enc(1e20f64)), enc(i32::MAX));
        assert_eq!(cast(Type::I8, Type::I64, enc(-1i8)), enc(-1i64));
        assert_eq!(cast(Type::U8, Type::I64, 255), 255);
        assert_eq!(cast(Type::I32, Type::BOOL, 2), 1);
        assert_eq!(cast(Type::BOOL, Type::F32, 1), enc(1f32));
        assert_eq!(cast(Type::I64, Type::U16, enc(-1i64)), 0xffff);
    }

    #[test]
    fn float_compare_is_ieee() {
        let nan = enc(f64::NAN);
        assert!(!compare(CmpOp::Eq, Type::F64, nan, nan));
        assert!(compare(CmpOp::Ne, Type::F64, nan, nan));
        assert!(compare(CmpOp::Lt, Type::I32, enc(-1i32), 0));
        assert!(!compare(CmpOp::Lt, Type::U32, enc(-1i32), 0));
    }

    /// Rust's own method for a math function, where std calls the platform's C library
    /// (`erf` is not stable; `asinh`, `acosh` and `atanh` std computes with formulas that
    /// overflow at the ends of the range, so they are checked for NaN agreement only).
    fn std_f64(f: MathFn, x: f64) -> Option<f64> {
        Some(match f {
            MathFn::Exp => x.exp(),
            MathFn::Exp2 => x.exp2(),
            MathFn::ExpM1 => x.exp_m1(),
            MathFn::Ln => x.ln(),
            MathFn::Log2 => x.log2(),
            MathFn::Log10 => x.log10(),
            MathFn::Ln1p => x.ln_1p(),
            MathFn::Sin => x.sin(),
            MathFn::Cos => x.cos(),
            MathFn::Tan => x.tan(),
            MathFn::Asin => x.asin(),
            MathFn::Acos => x.acos(),
            MathFn::Atan => x.atan(),
            MathFn::Sinh => x.sinh(),
            MathFn::Cosh => x.cosh(),
            MathFn::Tanh => x.tanh(),
            MathFn::Asinh | MathFn::Acosh | MathFn::Atanh if x.abs() > 1e10 => return None,
            MathFn::Asinh => x.asinh(),
            MathFn::Acosh => x.acosh(),
            MathFn::Atanh => x.atanh(),
            MathFn::Cbrt => x.cbrt(),
            MathFn::Erf => return None,
        })
    }

    /// Inputs over the whole range: edge values and pseudo-random bit patterns, then
    /// pseudo-random values in [-20, 20].
    fn sample_f64() -> Vec<f64> {
        let mut v = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -0.5,
            2.0,
            1e-310,
            -1e-310,
            1e300,
            -1e300,
            710.0,
            -745.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
            f64::MAX,
            1e22,
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..4000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let x = if i % 2 == 0 {
                f64::from_bits(state)
            } else {
                (state >> 11) as f64 / (1u64 << 53) as f64 * 40.0 - 20.0
            };
            v.push(x);
        }
        v
    }

    #[test]
    fn math_reference_agrees_with_std() {
        for f in MathFn::ALL {
            for x in sample_f64() {
                let Some(want) = std_f64(f, x) else { continue };
                let bound = match f {
                    MathFn::Asinh | MathFn::Acosh | MathFn::Atanh => 16,
                    _ => 2,
                };
                let got = math_f64(f, x);
                let d = ulps(Scalar::F64, got.to_bits(), want.to_bits());
                assert!(
                    d <= bound,
                    "{}({x:e}) = {got:e}, std {want:e}: {d} ulps",
                    f.name()
                );
                let x32 = x as f32;
                let Some(want32) = std_f64(f, f64::from(x32)).map(|w| w as f32) else {
                    continue;
                };
                let got32 = math_f32(f, x32);
                let d = ulps(Scalar::F32, got32.to_bits().into(), want32.to_bits().into());
                assert!(
                    d <= bound,
                    "{}({x32:e}) = {got32:e}, std {want32:e}: {d} ulps",
                    f.name()
                );
            }
        }
    }

    #[test]
    fn two_argument_reference_agrees_with_std() {
        let xs = sample_f64();
        for (i, &x) in xs.iter().enumerate() {
            let y = xs[(i * 7 + 3) % xs.len()];
            for (f, want) in [
                (MathFn2::Pow, x.powf(y)),
                (MathFn2::Atan2, x.atan2(y)),
                (MathFn2::Hypot, x.hypot(y)),
            ] {
                let got = math2_f64(f, x, y);
                let d = ulps(Scalar::F64, got.to_bits(), want.to_bits());
                assert!(d <= 2, "{}({x:e}, {y:e}) = {got:e}, std {want:e}", f.name());
            }
        }
    }

    #[test]
    fn ulps_counts_steps_between_floats() {
        let u = |a: f32, b: f32| ulps(Scalar::F32, a.to_bits().into(), b.to_bits().into());
        assert_eq!(u(1.0, 1.0), 0);
        assert_eq!(u(1.0, f32::from_bits(1.0f32.to_bits() + 3)), 3);
        assert_eq!(u(0.0, -0.0), 1);
        assert_eq!(u(f32::NAN, -f32::NAN), 0);
        assert_eq!(u(f32::NAN, 1.0), u64::MAX);
        assert_eq!(u(-f32::from_bits(1), f32::from_bits(1)), 3);
    }
}
