//! Reference semantics of every operator, on values encoded as bits.
//!
//! A value of scalar type is carried as a `u64` holding its bits zero-extended: `i8` `-1` is
//! `0xff`, `f32` values are `f32::to_bits`, `bool` is 0 or 1, pointers are addresses. Integer
//! arithmetic follows Rust's wrapping semantics (`wrapping_add`, `wrapping_shl`, ...), integer
//! division and remainder by zero trap, `MIN / -1` wraps. Casts follow Rust's `as`. This module
//! is the single definition used by constant folding, the interpreter and direct execution;
//! native backends are tested against it.

use crate::instructions::{BinaryOp, CmpOp, UnaryOp};
use crate::trap::Trap;
use crate::types::{Scalar, Type};

/// A Rust type that corresponds to an IR scalar type, with its bit encoding. Implemented for
/// `bool`, the integer types of 8 to 64 bits and `f32`/`f64` only (sealed): each is plain bits
/// without padding, so arrays of them can be copied as bytes.
pub trait ScalarValue: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The IR type.
    const SCALAR: Scalar;
    /// Encode as bits.
    fn to_bits(self) -> u64;
    /// Decode from bits (upper bits beyond the width are ignored).
    fn from_bits(bits: u64) -> Self;
}

mod sealed {
    /// Only this crate's scalar types implement [`super::ScalarValue`].
    pub trait Sealed {}
    macro_rules! sealed {
        ($($t:ty),*) => {$(impl Sealed for $t {})*};
    }
    sealed!(bool, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);
}

macro_rules! int_scalar {
    ($($t:ty => $s:ident, $u:ty);* $(;)?) => {$(
        impl ScalarValue for $t {
            const SCALAR: Scalar = Scalar::$s;
            #[inline]
            fn to_bits(self) -> u64 { self as $u as u64 }
            #[inline]
            fn from_bits(bits: u64) -> Self { bits as $u as $t }
        }
    )*};
}
int_scalar!(
    i8 => I8, u8; i16 => I16, u16; i32 => I32, u32; i64 => I64, u64;
    u8 => U8, u8; u16 => U16, u16; u32 => U32, u32; u64 => U64, u64;
);

impl ScalarValue for bool {
    const SCALAR: Scalar = Scalar::Bool;
    #[inline]
    fn to_bits(self) -> u64 {
        self as u64
    }
    #[inline]
    fn from_bits(bits: u64) -> Self {
        bits & 1 != 0
    }
}

impl ScalarValue for f32 {
    const SCALAR: Scalar = Scalar::F32;
    #[inline]
    fn to_bits(self) -> u64 {
        f32::to_bits(self) as u64
    }
    #[inline]
    fn from_bits(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
}

impl ScalarValue for f64 {
    const SCALAR: Scalar = Scalar::F64;
    #[inline]
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
    #[inline]
    fn from_bits(bits: u64) -> Self {
        f64::from_bits(bits)
    }
}

#[inline(always)]
fn enc<T: ScalarValue>(x: T) -> u64 {
    x.to_bits()
}

#[inline(always)]
fn dec<T: ScalarValue>(bits: u64) -> T {
    T::from_bits(bits)
}

/// Whether an access of `size` bytes at address `addr` lies wholly in the `bytes` bytes that
/// start at `base`: `addr - base` (wrapping) is at most `bytes - size`. The meaning of
/// [`crate::InstKind::BoundsCheck`].
pub const fn in_bounds(addr: u64, base: u64, bytes: u64, size: u64) -> bool {
    bytes >= size && addr.wrapping_sub(base) <= bytes - size
}

/// Truncates bits to the width of `ty` (zero-extending), the canonical encoding.
pub fn normalize(ty: Type, bits: u64) -> u64 {
    match ty {
        Type::Scalar(Scalar::Bool) => bits & 1,
        Type::Scalar(s) if s.bits() < 64 => bits & ((1u64 << s.bits()) - 1),
        _ => bits,
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
            U8 = u8, U16 = u16, U32 = u32, U64 = u64, F32 = f32, F64 = f64
        ])
    };
}

/// As [`with_scalar!`] for the numeric types; `$other` for `bool`.
macro_rules! with_num {
    ($s:expr, $t:ident => $body:expr, else $other:expr) => {
        $crate::__match_scalar!($s, $t => $body, [
            I8 = i8, I16 = i16, I32 = i32, I64 = i64,
            U8 = u8, U16 = u16, U32 = u32, U64 = u64, F32 = f32, F64 = f64
        ] Scalar::Bool => $other,)
    };
}

/// As [`with_scalar!`] for the integer types; `$other` for the rest.
macro_rules! with_int {
    ($s:expr, $t:ident => $body:expr, else $other:expr) => {
        $crate::__match_scalar!($s, $t => $body, [
            I8 = i8, I16 = i16, I32 = i32, I64 = i64,
            U8 = u8, U16 = u16, U32 = u32, U64 = u64
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
pub fn unary(op: UnaryOp, s: Scalar, a: u64) -> u64 {
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
            UnaryOp::Sqrt | UnaryOp::Floor | UnaryOp::Ceil => x,
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
pub fn binary(op: BinaryOp, s: Scalar, a: u64, b: u64) -> Result<u64, Trap> {
    if s == Scalar::Bool {
        let (x, y) = (a & 1, b & 1);
        return Ok(match op {
            BinaryOp::And | BinaryOp::Mul | BinaryOp::Min => x & y,
            BinaryOp::Or | BinaryOp::Max => x | y,
            BinaryOp::Xor | BinaryOp::Add | BinaryOp::Sub => x ^ y,
            BinaryOp::Div | BinaryOp::Rem | BinaryOp::Shl | BinaryOp::Shr => x,
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
            BinaryOp::And | BinaryOp::Or | BinaryOp::Xor | BinaryOp::Shl | BinaryOp::Shr => x,
        };
        Ok(enc(r))
    }, else Ok(a)))
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

/// Fused multiply-add on floats (`a * b + c`, one rounding).
pub fn fma(s: Scalar, a: u64, b: u64, c: u64) -> u64 {
    with_float!(s, T => enc(dec::<T>(a).mul_add(dec::<T>(b), dec::<T>(c))),
        else binary(BinaryOp::Add, s, binary(BinaryOp::Mul, s, a, b).unwrap_or(0), c).unwrap_or(0))
}

/// Evaluates a comparison. Pointers compare as unsigned addresses.
pub fn compare(op: CmpOp, ty: Type, a: u64, b: u64) -> bool {
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
        Type::Scalar(s) => with_scalar!(s, T => cmp(op, dec::<T>(a), dec::<T>(b))),
    }
}

/// Converts with Rust `as` semantics from `from` to `to`. `bool` targets mean `!= 0`;
/// pointers convert to and from 64-bit integers as addresses.
pub fn cast(from: Type, to: Type, a: u64) -> u64 {
    let (fs, ts) = match (from, to) {
        (Type::Scalar(f), Type::Scalar(t)) => (f, t),
        (Type::Ptr(..), Type::Scalar(t)) => (Scalar::U64, t),
        (Type::Scalar(f), Type::Ptr(..)) => (f, Scalar::U64),
        (Type::Ptr(..), Type::Ptr(..)) => return a,
    };
    if ts == Scalar::Bool {
        return with_scalar!(fs, F => (dec::<F>(a) != dec::<F>(0)) as u64);
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
        assert_eq!(f64::from_bits(r), f64::INFINITY);
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
}
