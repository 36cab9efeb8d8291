//! [`Val<T>`]: a traced scalar value, and its operators.
//!
//! While tracing, a `Val` names an IR value and operators append instructions; otherwise it
//! holds the value itself and operators compute it with the IR's reference semantics
//! ([`nacre_ir::semantics`]), so both modes agree by construction. Integer arithmetic wraps
//! (as Rust's `wrapping_*`), shifts mask the amount, integer division or remainder by zero is a
//! runtime error, casts follow Rust's `as`.
//!
//! # Trace identity
//!
//! A `Val` knows the trace it belongs to (a [`Handle`]: the raw handle and the id of the traced
//! function that made it, 0 for a value made outside any trace; see [`crate::identity`]). It
//! stays `Copy` and 16 bytes. Using a `Val` in a trace it does not belong to (one made in
//! another trace and kept in a `thread_local` or returned out of a closure, one made outside
//! any trace and captured by the traced closure, one of an enclosing function captured by a
//! function traced through [`cf::call`](crate::cf::call)) fails the trace with
//! [`TraceError::ForeignValue`](crate::TraceError::ForeignValue), naming the operation: pass
//! the value in as a parameter, or create it inside the traced function with [`Val::new`].
//! Using a `Val` made while tracing outside any trace (direct mode, after its trace ended)
//! panics with a message that says so: direct mode reports only traps, and the handle is an
//! IR index, not a value.

use crate::context::with_tracer;
use crate::identity::Handle;
use crate::signature::HostValue;
use nacre_ir::half::{bf16, f16};
use nacre_ir::semantics::{self, ScalarValue};
use nacre_ir::{BinaryOp, CmpOp, Const, Trap, Type, UnaryOp};
use std::fmt;
use std::marker::PhantomData;
use std::ops;

/// A traced scalar of Rust type `T` (`bool`, `i8`..`i128`, `u8`..`u128`, `f32`, `f64`, `f16`, `bf16`), tied to
/// the trace that made it (see the [module docs](self)).
pub struct Val<T: ScalarValue> {
    h: Handle,
    _t: PhantomData<fn() -> T>,
}

impl<T: ScalarValue> Clone for Val<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: ScalarValue> Copy for Val<T> {}

impl<T: ScalarValue> fmt::Debug for Val<T>
where
    T: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.h.trace() == 0 {
            write!(f, "Val({:?})", T::from_bits(self.h.bits("debug")))
        } else {
            write!(f, "Val<{}>({:?})", T::SCALAR, self.h)
        }
    }
}

/// Reports a trap raised while running in direct mode.
pub(crate) fn direct_trap(trap: Trap) -> ! {
    if crate::signature::in_direct_runner() {
        std::panic::resume_unwind(Box::new(crate::signature::DirectTrap(trap)))
    }
    panic!("{trap}")
}

/// The name of a comparison, for error messages.
pub(crate) const fn compare_name(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "compare (==)",
        CmpOp::Ne => "compare (!=)",
        CmpOp::Lt => "compare (<)",
        CmpOp::Le => "compare (<=)",
        CmpOp::Gt => "compare (>)",
        CmpOp::Ge => "compare (>=)",
    }
}

impl<T: ScalarValue> Val<T> {
    /// A constant.
    pub fn new(x: T) -> Val<T> {
        let bits = x.to_bits();
        let h = with_tracer(|t| {
            t.build(|b| {
                b.constant(Const {
                    ty: Type::Scalar(T::SCALAR),
                    bits,
                })
            })
        });
        Val::from_handle(h.unwrap_or(Handle::direct(bits)))
    }

    /// Wraps a handle (an IR value of one trace, or a direct value's bits).
    #[inline]
    pub(crate) fn from_handle(h: Handle) -> Val<T> {
        Val { h, _t: PhantomData }
    }

    /// The handle (see [`Val::from_handle`]).
    #[inline]
    pub(crate) fn handle(self) -> Handle {
        self.h
    }

    /// The bits of this value in direct mode, read by `operation` (a panic if the value was
    /// made while tracing, see the [module docs](self)).
    #[inline]
    pub(crate) fn bits(self, operation: &'static str) -> u128 {
        self.h.bits(operation)
    }

    /// The IR type of this value.
    pub fn ir_type() -> Type {
        Type::Scalar(T::SCALAR)
    }

    pub(crate) fn unary(self, op: UnaryOp) -> Val<T> {
        let h = with_tracer(|t| {
            let a = t.value(self.h, op.name(), Self::ir_type);
            t.build(|b| b.unary(op, a))
        });
        Val::from_handle(h.unwrap_or_else(|| {
            Handle::direct(semantics::unary(op, T::SCALAR, self.bits(op.name())))
        }))
    }

    pub(crate) fn binary(self, op: BinaryOp, rhs: Val<T>) -> Val<T> {
        let h = with_tracer(|t| {
            let a = t.value(self.h, op.name(), Self::ir_type);
            let b = t.value(rhs.h, op.name(), Self::ir_type);
            t.build(|bld| bld.binary(op, a, b))
        });
        Val::from_handle(h.unwrap_or_else(|| {
            let (a, b) = (self.bits(op.name()), rhs.bits(op.name()));
            Handle::direct(
                semantics::binary(op, T::SCALAR, a, b).unwrap_or_else(|t| direct_trap(t)),
            )
        }))
    }

    pub(crate) fn compare(self, op: CmpOp, rhs: Val<T>) -> Val<bool> {
        let name = compare_name(op);
        let h = with_tracer(|t| {
            let a = t.value(self.h, name, Self::ir_type);
            let b = t.value(rhs.h, name, Self::ir_type);
            t.build(|bld| bld.cmp(op, a, b))
        });
        Val::from_handle(h.unwrap_or_else(|| {
            let (a, b) = (self.bits(name), rhs.bits(name));
            Handle::direct(u128::from(semantics::compare(
                op,
                Type::Scalar(T::SCALAR),
                a,
                b,
            )))
        }))
    }

    /// `self < rhs`.
    pub fn lt(self, rhs: impl IntoVal<T>) -> Val<bool> {
        self.compare(CmpOp::Lt, rhs.into_val())
    }
    /// `self <= rhs`.
    pub fn le(self, rhs: impl IntoVal<T>) -> Val<bool> {
        self.compare(CmpOp::Le, rhs.into_val())
    }
    /// `self > rhs`.
    pub fn gt(self, rhs: impl IntoVal<T>) -> Val<bool> {
        self.compare(CmpOp::Gt, rhs.into_val())
    }
    /// `self >= rhs`.
    pub fn ge(self, rhs: impl IntoVal<T>) -> Val<bool> {
        self.compare(CmpOp::Ge, rhs.into_val())
    }
    /// `self == rhs`.
    pub fn eq(self, rhs: impl IntoVal<T>) -> Val<bool> {
        self.compare(CmpOp::Eq, rhs.into_val())
    }
    /// `self != rhs`.
    pub fn ne(self, rhs: impl IntoVal<T>) -> Val<bool> {
        self.compare(CmpOp::Ne, rhs.into_val())
    }

    /// Converts with Rust `as` semantics (float to int saturates, NaN becomes 0; to `bool`
    /// means `!= 0`).
    pub fn cast<U: ScalarValue>(self) -> Val<U> {
        let (from, to) = (Type::Scalar(T::SCALAR), Type::Scalar(U::SCALAR));
        if from == to {
            return Val::from_handle(self.h);
        }
        let h = with_tracer(|t| {
            let a = t.value(self.h, "cast", Self::ir_type);
            t.build(|b| b.cast(a, to))
        });
        Val::from_handle(
            h.unwrap_or_else(|| Handle::direct(semantics::cast(from, to, self.bits("cast")))),
        )
    }

    /// The smaller of two values (for floats, a NaN operand is ignored, as `f64::min`).
    pub fn min(self, rhs: impl IntoVal<T>) -> Val<T>
    where
        T: Arith,
    {
        self.binary(BinaryOp::Min, rhs.into_val())
    }

    /// The larger of two values (for floats, a NaN operand is ignored, as `f64::max`).
    pub fn max(self, rhs: impl IntoVal<T>) -> Val<T>
    where
        T: Arith,
    {
        self.binary(BinaryOp::Max, rhs.into_val())
    }

    /// Absolute value (wrapping: `abs(MIN) == MIN` for signed integers).
    pub fn abs(self) -> Val<T>
    where
        T: Arith,
    {
        self.unary(UnaryOp::Abs)
    }

    /// Square root.
    pub fn sqrt(self) -> Val<T>
    where
        T: Float,
    {
        self.unary(UnaryOp::Sqrt)
    }

    /// Largest integer not greater than `self`.
    pub fn floor(self) -> Val<T>
    where
        T: Float,
    {
        self.unary(UnaryOp::Floor)
    }

    /// Smallest integer not less than `self`.
    pub fn ceil(self) -> Val<T>
    where
        T: Float,
    {
        self.unary(UnaryOp::Ceil)
    }

    /// Fused multiply-add: `self * b + c` with one rounding.
    pub fn fma(self, b: impl IntoVal<T>, c: impl IntoVal<T>) -> Val<T>
    where
        T: Float,
    {
        let (b, c) = (b.into_val(), c.into_val());
        let h = with_tracer(|t| {
            let x = t.value(self.h, "fma", Self::ir_type);
            let y = t.value(b.h, "fma", Self::ir_type);
            let z = t.value(c.h, "fma", Self::ir_type);
            t.build(|bld| bld.fma(x, y, z))
        });
        Val::from_handle(h.unwrap_or_else(|| {
            let (x, y, z) = (self.bits("fma"), b.bits("fma"), c.bits("fma"));
            Handle::direct(semantics::fma(T::SCALAR, x, y, z))
        }))
    }
}

/// `if cond { a } else { b }` without control flow (both sides are evaluated).
pub fn select<T: ScalarValue>(
    cond: impl IntoVal<bool>,
    a: impl IntoVal<T>,
    b: impl IntoVal<T>,
) -> Val<T> {
    let (c, a, b) = (cond.into_val(), a.into_val(), b.into_val());
    let h = with_tracer(|t| {
        let c = t.value(c.h, "select", Val::<bool>::ir_type);
        let x = t.value(a.h, "select", Val::<T>::ir_type);
        let y = t.value(b.h, "select", Val::<T>::ir_type);
        t.build(|bld| bld.select(c, x, y))
    });
    Val::from_handle(h.unwrap_or_else(|| {
        let (x, y) = (a.bits("select"), b.bits("select"));
        Handle::direct(if c.bits("select") & 1 != 0 { x } else { y })
    }))
}

/// Integer bit operations and explicit wrapping and saturating arithmetic, with the names and
/// meaning of Rust's integer methods (`count_ones` and the other counts give `Val<u32>`, as in
/// Rust; shift and rotate amounts are taken modulo the width).
impl<T: Integer> Val<T> {
    /// The width of `T` in bits.
    fn width() -> u32 {
        T::SCALAR.bits()
    }

    /// The number of one bits.
    pub fn count_ones(self) -> Val<u32> {
        self.unary(UnaryOp::CountOnes).cast::<u32>()
    }

    /// The number of zero bits.
    pub fn count_zeros(self) -> Val<u32> {
        (!self).count_ones()
    }

    /// The number of zero bits above the highest one bit (the width for zero).
    pub fn leading_zeros(self) -> Val<u32> {
        self.unary(UnaryOp::LeadingZeros).cast::<u32>()
    }

    /// The number of zero bits below the lowest one bit (the width for zero).
    pub fn trailing_zeros(self) -> Val<u32> {
        self.unary(UnaryOp::TrailingZeros).cast::<u32>()
    }

    /// The number of one bits above the highest zero bit.
    pub fn leading_ones(self) -> Val<u32> {
        (!self).leading_zeros()
    }

    /// The number of one bits below the lowest zero bit.
    pub fn trailing_ones(self) -> Val<u32> {
        (!self).trailing_zeros()
    }

    /// The bytes in reverse order.
    pub fn swap_bytes(self) -> Val<T> {
        self.unary(UnaryOp::SwapBytes)
    }

    /// The bits in reverse order.
    pub fn reverse_bits(self) -> Val<T> {
        self.unary(UnaryOp::ReverseBits)
    }

    /// The bits rotated left by `n` (modulo the width).
    pub fn rotate_left(self, n: impl IntoVal<u32>) -> Val<T> {
        let w = Self::width();
        let s = (n.into_val() & (w - 1)).cast::<T>();
        let back = (Val::new(w).cast::<T>() - s) & <T as ScalarValue>::from_bits(u128::from(w - 1));
        // The bits shifted back in, masked: a signed `>>` copies the sign bit.
        let low = (Val::new(T::ONE) << s) - T::ONE;
        (self << s) | ((self >> back) & low)
    }

    /// The bits rotated right by `n` (modulo the width).
    pub fn rotate_right(self, n: impl IntoVal<u32>) -> Val<T> {
        let w = Self::width();
        let s = n.into_val() & (w - 1);
        self.rotate_left((Val::new(w) - s) & (w - 1))
    }

    /// `|self - other|`, as the unsigned type of the same width (exact for every pair).
    pub fn abs_diff(self, other: impl IntoVal<T>) -> Val<T::Unsigned> {
        let other = other.into_val();
        let d = select(self.gt(other), self - other, other - self);
        // The wrapped difference, read as unsigned, is the exact distance.
        d.cast::<T::Unsigned>()
    }

    /// `self + rhs`, wrapping (as `+` on `Val` does).
    pub fn wrapping_add(self, rhs: impl IntoVal<T>) -> Val<T> {
        self + rhs.into_val()
    }

    /// `self - rhs`, wrapping (as `-` on `Val` does).
    pub fn wrapping_sub(self, rhs: impl IntoVal<T>) -> Val<T> {
        self - rhs.into_val()
    }

    /// `self * rhs`, wrapping (as `*` on `Val` does).
    pub fn wrapping_mul(self, rhs: impl IntoVal<T>) -> Val<T> {
        self * rhs.into_val()
    }

    /// `self` to the power `exp` (a plain exponent: unrolled by squaring), wrapping.
    pub fn wrapping_pow(self, exp: u32) -> Val<T> {
        let (mut acc, mut base, mut e) = (Val::new(T::ONE), self, exp);
        while e > 0 {
            if e & 1 == 1 {
                acc *= base;
            }
            e >>= 1;
            if e > 0 {
                base *= base;
            }
        }
        acc
    }

    /// `self` to the power `exp`, wrapping on overflow (Rust's `pow` in a release build).
    pub fn pow(self, exp: u32) -> Val<T> {
        self.wrapping_pow(exp)
    }

    /// `self + rhs`, clamped to the type's range.
    pub fn saturating_add(self, rhs: impl IntoVal<T>) -> Val<T> {
        let rhs = rhs.into_val();
        let sum = self + rhs;
        if T::SCALAR.is_signed_int() {
            // Overflow iff both operands have the sign the sum lacks.
            let zero = Val::new(T::ZERO);
            let overflow = ((self ^ sum) & (rhs ^ sum)).lt(zero);
            let limit = select(self.lt(zero), Self::min_value(), Self::max_value());
            select(overflow, limit, sum)
        } else {
            select(sum.lt(self), Self::max_value(), sum)
        }
    }

    /// `self - rhs`, clamped to the type's range.
    pub fn saturating_sub(self, rhs: impl IntoVal<T>) -> Val<T> {
        let rhs = rhs.into_val();
        let diff = self - rhs;
        if T::SCALAR.is_signed_int() {
            // Overflow iff the operands' signs differ and the result's differs from `self`'s.
            let zero = Val::new(T::ZERO);
            let overflow = ((self ^ rhs) & (self ^ diff)).lt(zero);
            let limit = select(self.lt(zero), Self::min_value(), Self::max_value());
            select(overflow, limit, diff)
        } else {
            select(rhs.gt(self), Val::new(T::ZERO), diff)
        }
    }

    /// `self * rhs`, clamped to the type's range.
    pub fn saturating_mul(self, rhs: impl IntoVal<T>) -> Val<T> {
        let rhs = rhs.into_val();
        let (product, overflow) = self.overflowing_mul(rhs);
        let zero = Val::new(T::ZERO);
        // The exact product is negative iff exactly one operand is.
        let negative = self.lt(zero) ^ rhs.lt(zero);
        let limit = select(negative, Self::min_value(), Self::max_value());
        select(overflow, limit, product)
    }

    /// `self + rhs` wrapped, and whether it overflowed (Rust's `overflowing_add`).
    pub fn overflowing_add(self, rhs: impl IntoVal<T>) -> (Val<T>, Val<bool>) {
        let rhs = rhs.into_val();
        let sum = self + rhs;
        let overflow = if T::SCALAR.is_signed_int() {
            ((self ^ sum) & (rhs ^ sum)).lt(Val::new(T::ZERO))
        } else {
            sum.lt(self)
        };
        (sum, overflow)
    }

    /// `self - rhs` wrapped, and whether it overflowed (Rust's `overflowing_sub`).
    pub fn overflowing_sub(self, rhs: impl IntoVal<T>) -> (Val<T>, Val<bool>) {
        let rhs = rhs.into_val();
        let diff = self - rhs;
        let overflow = if T::SCALAR.is_signed_int() {
            ((self ^ rhs) & (self ^ diff)).lt(Val::new(T::ZERO))
        } else {
            rhs.gt(self)
        };
        (diff, overflow)
    }

    /// `self * rhs` wrapped, and whether it overflowed (Rust's `overflowing_mul`): the
    /// product divided back by a non-zero `self` must give `rhs`, and for signed types
    /// `MIN * -1` (which that test misses) overflows.
    pub fn overflowing_mul(self, rhs: impl IntoVal<T>) -> (Val<T>, Val<bool>) {
        let rhs = rhs.into_val();
        let product = self * rhs;
        let zero = Val::new(T::ZERO);
        let divisor = select(self.eq(zero), Val::new(T::ONE), self);
        let mut overflow = self.ne(zero) & (product / divisor).ne(rhs);
        if T::SCALAR.is_signed_int() {
            let minus_one = zero - T::ONE;
            let (a_min, b_min) = (self.eq(Self::min_value()), rhs.eq(Self::min_value()));
            overflow = overflow | (a_min & rhs.eq(minus_one)) | (b_min & self.eq(minus_one));
        }
        (product, overflow)
    }

    /// `self + rhs` and whether it is exact (no overflow): Rust's `checked_add` as a value and
    /// a traced flag (the value wraps when the flag is false).
    pub fn checked_add(self, rhs: impl IntoVal<T>) -> (Val<T>, Val<bool>) {
        let (v, overflow) = self.overflowing_add(rhs);
        (v, !overflow)
    }

    /// `self - rhs` and whether it is exact (see [`Val::checked_add`]).
    pub fn checked_sub(self, rhs: impl IntoVal<T>) -> (Val<T>, Val<bool>) {
        let (v, overflow) = self.overflowing_sub(rhs);
        (v, !overflow)
    }

    /// `self * rhs` and whether it is exact (see [`Val::checked_add`]).
    pub fn checked_mul(self, rhs: impl IntoVal<T>) -> (Val<T>, Val<bool>) {
        let (v, overflow) = self.overflowing_mul(rhs);
        (v, !overflow)
    }

    /// The type's largest value.
    fn max_value() -> Val<T> {
        let w = Self::width();
        let bits = if T::SCALAR.is_signed_int() {
            (1u128 << (w - 1)) - 1
        } else {
            u128::MAX >> (128 - w)
        };
        Val::new(<T as ScalarValue>::from_bits(bits))
    }

    /// The type's smallest value.
    fn min_value() -> Val<T> {
        let w = Self::width();
        let bits = if T::SCALAR.is_signed_int() {
            1u128 << (w - 1)
        } else {
            0
        };
        Val::new(<T as ScalarValue>::from_bits(bits))
    }
}

/// Never implemented: the reason Rust's comparison operators on `Val`s do not compile outside
/// `#[jit]` (where `#[jit]` rewrites them to traced comparisons), as the compiler reports it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be compared with `{Rhs}` by Rust's operators outside `#[jit]`",
    label = "a comparison of traced values",
    note = "inside a `#[jit]` function, `a < b` and `a == b` on `Val`s are traced comparisons giving `Val<bool>`; elsewhere call `a.lt(b)`, `a.eq(b)`, ... and choose with `nacre::select` (or put the code in a `#[jit]` function)"
)]
pub trait UseJitForOperators<Rhs: ?Sized> {}

/// Makes `a == b` on a `Val` outside `#[jit]` an error that says what to do (see
/// [`UseJitForOperators`]); it never applies.
impl<T: ScalarValue, R> PartialEq<R> for Val<T>
where
    Val<T>: UseJitForOperators<R>,
{
    fn eq(&self, _: &R) -> bool {
        unreachable!("`UseJitForOperators` has no implementations")
    }
}

/// Makes `a < b` on a `Val` outside `#[jit]` an error that says what to do (see
/// [`UseJitForOperators`]); it never applies.
impl<T: ScalarValue, R> PartialOrd<R> for Val<T>
where
    Val<T>: UseJitForOperators<R>,
{
    fn partial_cmp(&self, _: &R) -> Option<std::cmp::Ordering> {
        unreachable!("`UseJitForOperators` has no implementations")
    }
}

/// Values that convert to a `Val<T>`: the `Val` itself or a plain `T` (which becomes a constant).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `Val<{T}>` or a `{T}`",
    label = "expected a `Val<{T}>` or a `{T}` here",
    note = "convert a traced value with `.cast::<{T}>()` (Rust `as` semantics), a plain one with `as {T}`"
)]
pub trait IntoVal<T: ScalarValue>: Copy {
    /// The traced value.
    fn into_val(self) -> Val<T>;
}

impl<T: ScalarValue> IntoVal<T> for Val<T> {
    #[inline]
    fn into_val(self) -> Val<T> {
        self
    }
}

impl<T: ScalarValue> IntoVal<T> for T {
    #[inline]
    fn into_val(self) -> Val<T> {
        Val::new(self)
    }
}

impl<T: ScalarValue> From<T> for Val<T> {
    fn from(x: T) -> Val<T> {
        Val::new(x)
    }
}

/// Types with arithmetic (`+ - * / %`, min, max, abs): integers (the 128-bit ones too) and
/// floats.
pub trait Arith: ScalarValue {
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
}
/// Types with bitwise operators: integers and `bool`.
pub trait Bits: ScalarValue {}

/// The numbers (integers and floats) that cross the host boundary: the one bound generic
/// traced code needs. A `fn f<T: Num>(a: Val<T>, b: Val<T>) -> Val<T>` can use arithmetic,
/// comparisons (`<`, `==`, ...), `select`, carry values through `if` and loops, take and return
/// them, and `engine.compile(f::<f32>)` compiles it. [`Int`] adds bitwise operators and shifts,
/// [`Float`] `sqrt`, `floor`, `ceil` and `fma`, [`Signed`] negation. The 128-bit integers are
/// [`Arith`] and [`Integer`] but not `Num`: they cannot be arguments or results of compiled
/// code or kernels, only values inside it and elements in memory.
pub trait Num: Arith + HostValue {}
/// All integer types, `i8` to `i128` and `u8` to `u128`: bitwise operators, shifts and Rust's
/// integer methods (`count_ones`, `checked_add`, ...).
pub trait Integer: Arith + Bits {
    /// The unsigned integer type of the same width (what `abs_diff` returns).
    type Unsigned: Integer;
}
/// The integer types that cross the host boundary ([`Num`] and [`Integer`]: all but the
/// 128-bit ones).
pub trait Int: Num + Integer {}
/// Float types: [`Num`] with Rust's float methods (`sqrt`, `exp`, `sin`, `round`, ...; see
/// [`crate::math`]).
pub trait Float: Num + Signed {
    /// Positive infinity.
    const INFINITY: Self;
    /// A quiet NaN.
    const NAN: Self;
    /// The factor of `to_degrees` (`180 / pi`, rounded as Rust's `to_degrees` rounds it).
    const DEGREES_PER_RADIAN: Self;
    /// The factor of `to_radians` (`pi / 180`, rounded as Rust's `to_radians` rounds it).
    const RADIANS_PER_DEGREE: Self;
}
/// Types with negation: signed integers and floats.
pub trait Signed: Arith {}

macro_rules! arith {
    ($zero:expr, $one:expr; $($t:ty),*) => {$(
        impl Arith for $t {
            const ZERO: $t = $zero;
            const ONE: $t = $one;
        }
    )*};
}
arith!(0, 1; i8, i16, i32, i64, i128, u8, u16, u32, u64, u128);
arith!(0.0, 1.0; f32, f64);
arith!(f16::ZERO, f16::ONE; f16);
arith!(bf16::ZERO, bf16::ONE; bf16);

macro_rules! markers {
    ($tr:ident: $($t:ty),*) => { $(impl $tr for $t {})* };
}
markers!(Num: i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, f16, bf16);
markers!(Int: i8, i16, i32, i64, u8, u16, u32, u64);
markers!(Bits: bool, i8, i16, i32, i64, i128, u8, u16, u32, u64, u128);
macro_rules! ints {
    ($($t:ty => $u:ty),*) => { $(impl Integer for $t { type Unsigned = $u; })* };
}
ints!(
    i8 => u8, i16 => u16, i32 => u32, i64 => u64, i128 => u128,
    u8 => u8, u16 => u16, u32 => u32, u64 => u64, u128 => u128
);
impl Float for f32 {
    const INFINITY: f32 = f32::INFINITY;
    const NAN: f32 = f32::NAN;
    const DEGREES_PER_RADIAN: f32 = 57.295_78_f32;
    const RADIANS_PER_DEGREE: f32 = std::f32::consts::PI / 180.0;
}
impl Float for f64 {
    const INFINITY: f64 = f64::INFINITY;
    const NAN: f64 = f64::NAN;
    const DEGREES_PER_RADIAN: f64 = 180.0 / std::f64::consts::PI;
    const RADIANS_PER_DEGREE: f64 = std::f64::consts::PI / 180.0;
}
macro_rules! half_float {
    ($($t:ident),*) => {$(
        impl Float for $t {
            const INFINITY: $t = $t::INFINITY;
            const NAN: $t = $t::NAN;
            const DEGREES_PER_RADIAN: $t = $t::from_f32_const(57.295_78_f32);
            const RADIANS_PER_DEGREE: $t = $t::from_f32_const(std::f32::consts::PI / 180.0);
        }
    )*};
}
half_float!(f16, bf16);
markers!(Signed: i8, i16, i32, i64, i128, f32, f64, f16, bf16);

macro_rules! binop {
    ($tr:ident, $m:ident, $atr:ident, $am:ident, $op:ident, $bound:ident) => {
        impl<T: $bound, R: IntoVal<T>> ops::$tr<R> for Val<T> {
            type Output = Val<T>;
            #[inline]
            fn $m(self, rhs: R) -> Val<T> {
                self.binary(BinaryOp::$op, rhs.into_val())
            }
        }
        impl<T: $bound, R: IntoVal<T>> ops::$atr<R> for Val<T> {
            #[inline]
            fn $am(&mut self, rhs: R) {
                *self = self.binary(BinaryOp::$op, rhs.into_val());
            }
        }
    };
}
binop!(Add, add, AddAssign, add_assign, Add, Arith);
binop!(Sub, sub, SubAssign, sub_assign, Sub, Arith);
binop!(Mul, mul, MulAssign, mul_assign, Mul, Arith);
binop!(Div, div, DivAssign, div_assign, Div, Arith);
binop!(Rem, rem, RemAssign, rem_assign, Rem, Arith);
binop!(BitAnd, bitand, BitAndAssign, bitand_assign, And, Bits);
binop!(BitOr, bitor, BitOrAssign, bitor_assign, Or, Bits);
binop!(BitXor, bitxor, BitXorAssign, bitxor_assign, Xor, Bits);
binop!(Shl, shl, ShlAssign, shl_assign, Shl, Integer);
binop!(Shr, shr, ShrAssign, shr_assign, Shr, Integer);

macro_rules! lhs_scalar_ops {
    ($($t:ty),*) => {$(
        lhs_scalar_ops!(@one $t, Add, add, Add);
        lhs_scalar_ops!(@one $t, Sub, sub, Sub);
        lhs_scalar_ops!(@one $t, Mul, mul, Mul);
        lhs_scalar_ops!(@one $t, Div, div, Div);
        lhs_scalar_ops!(@one $t, Rem, rem, Rem);
    )*};
    (@one $t:ty, $tr:ident, $m:ident, $op:ident) => {
        impl ops::$tr<Val<$t>> for $t {
            type Output = Val<$t>;
            #[inline]
            fn $m(self, rhs: Val<$t>) -> Val<$t> {
                Val::new(self).binary(BinaryOp::$op, rhs)
            }
        }
    };
}
lhs_scalar_ops!(i8, i16, i32, i64, i128, u8, u16, u32, u64, u128, f32, f64, f16, bf16);

macro_rules! lhs_bit_ops {
    ($($t:ty),*) => {$(
        impl ops::BitAnd<Val<$t>> for $t {
            type Output = Val<$t>;
            fn bitand(self, rhs: Val<$t>) -> Val<$t> { Val::new(self).binary(BinaryOp::And, rhs) }
        }
        impl ops::BitOr<Val<$t>> for $t {
            type Output = Val<$t>;
            fn bitor(self, rhs: Val<$t>) -> Val<$t> { Val::new(self).binary(BinaryOp::Or, rhs) }
        }
        impl ops::BitXor<Val<$t>> for $t {
            type Output = Val<$t>;
            fn bitxor(self, rhs: Val<$t>) -> Val<$t> { Val::new(self).binary(BinaryOp::Xor, rhs) }
        }
    )*};
}
lhs_bit_ops!(bool, i8, i16, i32, i64, i128, u8, u16, u32, u64, u128);

impl<T: Signed> ops::Neg for Val<T> {
    type Output = Val<T>;
    fn neg(self) -> Val<T> {
        self.unary(UnaryOp::Neg)
    }
}

impl<T: Bits> ops::Not for Val<T> {
    type Output = Val<T>;
    fn not(self) -> Val<T> {
        self.unary(UnaryOp::Not)
    }
}

/// Index operands of pointer arithmetic: any integer `Val` or plain integer.
pub trait Index: Copy {
    /// The index as a traced value's handle (an IR value while tracing, the value as `i64`
    /// bits otherwise; a plain integer becomes an `i64` constant).
    fn index_raw(self) -> Handle;
    /// The index as an `i64` in direct mode.
    fn index_direct(self) -> i64;
    /// The IR type of [`Index::index_raw`]'s value.
    fn index_type(self) -> Type;
}

macro_rules! index_impls {
    ($($t:ty),*) => {$(
        impl Index for Val<$t> {
            fn index_raw(self) -> Handle { self.h }
            fn index_direct(self) -> i64 {
                <$t as ScalarValue>::from_bits(self.bits("pointer index")) as i64
            }
            fn index_type(self) -> Type { Val::<$t>::ir_type() }
        }
        impl Index for $t {
            fn index_raw(self) -> Handle { Val::<i64>::new(self as i64).h }
            fn index_direct(self) -> i64 { self as i64 }
            fn index_type(self) -> Type { Type::I64 }
        }
    )*};
}
index_impls!(i8, i16, i32, i64, u8, u16, u32, u64);
impl Index for usize {
    fn index_raw(self) -> Handle {
        (self as u64).index_raw()
    }
    fn index_direct(self) -> i64 {
        self as i64
    }
    fn index_type(self) -> Type {
        Type::I64
    }
}
impl Index for isize {
    fn index_raw(self) -> Handle {
        (self as i64).index_raw()
    }
    fn index_direct(self) -> i64 {
        self as i64
    }
    fn index_type(self) -> Type {
        Type::I64
    }
}

/// Emits a constant of IR type `ty` with `bits` (while tracing) or returns the bits.
pub(crate) fn constant_raw(ty: Type, bits: u128) -> Handle {
    with_tracer(|t| t.build(|b| b.constant(Const { ty, bits }))).unwrap_or(Handle::direct(bits))
}
