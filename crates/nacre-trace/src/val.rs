//! [`Val<T>`]: a traced scalar value, and its operators.
//!
//! While tracing, a `Val` names an IR value and operators append instructions; otherwise it
//! holds the value itself and operators compute it with the IR's reference semantics
//! ([`nacre_ir::semantics`]), so both modes agree by construction. Integer arithmetic wraps
//! (as Rust's `wrapping_*`), shifts mask the amount, integer division or remainder by zero is a
//! runtime error, casts follow Rust's `as`.

use crate::context::{emit, with_tracer};
use nacre_ir::semantics::{self, ScalarValue};
use nacre_ir::{BinaryOp, CmpOp, Const, Trap, Type, UnaryOp, Value};
use std::fmt;
use std::marker::PhantomData;
use std::ops;

/// A traced scalar of Rust type `T` (`bool`, `i8`..`i64`, `u8`..`u64`, `f32`, `f64`).
pub struct Val<T: ScalarValue> {
    raw: u64,
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
        if crate::is_tracing() {
            write!(
                f,
                "Val<{}>({})",
                T::SCALAR,
                Value::from_u32(self.raw as u32)
            )
        } else {
            write!(f, "Val({:?})", T::from_bits(self.raw))
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

#[inline]
pub(crate) fn value_of(raw: u64) -> Value {
    Value::from_u32(raw as u32)
}

#[inline]
pub(crate) fn raw_of(v: Value) -> u64 {
    v.as_u32() as u64
}

impl<T: ScalarValue> Val<T> {
    /// A constant.
    pub fn new(x: T) -> Val<T> {
        let bits = x.to_bits();
        let raw = with_tracer(|t| {
            let fs = t.func();
            let mut b = fs.builder();
            let v = b.constant(Const {
                ty: Type::Scalar(T::SCALAR),
                bits,
            });
            fs.current = b.current_block();
            raw_of(v)
        });
        Val::from_raw(raw.unwrap_or(bits))
    }

    /// Wraps a raw handle (an IR value index while tracing, the value's bits otherwise).
    pub(crate) fn from_raw(raw: u64) -> Val<T> {
        Val {
            raw,
            _t: PhantomData,
        }
    }

    /// The raw handle (see [`Val::from_raw`]).
    pub(crate) fn raw(self) -> u64 {
        self.raw
    }

    /// The IR type of this value.
    pub fn ir_type() -> Type {
        Type::Scalar(T::SCALAR)
    }

    fn unary(self, op: UnaryOp) -> Val<T> {
        let raw = with_tracer(|t| {
            let fs = t.func();
            let mut b = fs.builder();
            let v = b.unary(op, value_of(self.raw));
            fs.current = b.current_block();
            raw_of(v)
        });
        Val::from_raw(raw.unwrap_or_else(|| semantics::unary(op, T::SCALAR, self.raw)))
    }

    pub(crate) fn binary(self, op: BinaryOp, rhs: Val<T>) -> Val<T> {
        let raw = with_tracer(|t| {
            let fs = t.func();
            let mut b = fs.builder();
            let v = b.binary(op, value_of(self.raw), value_of(rhs.raw));
            fs.current = b.current_block();
            raw_of(v)
        });
        Val::from_raw(raw.unwrap_or_else(|| {
            semantics::binary(op, T::SCALAR, self.raw, rhs.raw).unwrap_or_else(|t| direct_trap(t))
        }))
    }

    fn compare(self, op: CmpOp, rhs: Val<T>) -> Val<bool> {
        let raw = with_tracer(|t| {
            let fs = t.func();
            let mut b = fs.builder();
            let v = b.cmp(op, value_of(self.raw), value_of(rhs.raw));
            fs.current = b.current_block();
            raw_of(v)
        });
        Val::from_raw(raw.unwrap_or_else(|| {
            semantics::compare(op, Type::Scalar(T::SCALAR), self.raw, rhs.raw) as u64
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
            return Val::from_raw(self.raw);
        }
        let raw = with_tracer(|t| {
            let fs = t.func();
            let mut b = fs.builder();
            let v = b.cast(value_of(self.raw), to);
            fs.current = b.current_block();
            raw_of(v)
        });
        Val::from_raw(raw.unwrap_or_else(|| semantics::cast(from, to, self.raw)))
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
        let raw = with_tracer(|t| {
            let fs = t.func();
            let mut bld = fs.builder();
            let v = bld.fma(value_of(self.raw), value_of(b.raw), value_of(c.raw));
            fs.current = bld.current_block();
            raw_of(v)
        });
        Val::from_raw(raw.unwrap_or_else(|| semantics::fma(T::SCALAR, self.raw, b.raw, c.raw)))
    }
}

/// `if cond { a } else { b }` without control flow (both sides are evaluated).
pub fn select<T: ScalarValue>(
    cond: impl IntoVal<bool>,
    a: impl IntoVal<T>,
    b: impl IntoVal<T>,
) -> Val<T> {
    let (c, a, b) = (cond.into_val(), a.into_val(), b.into_val());
    let raw = with_tracer(|t| {
        let fs = t.func();
        let mut bld = fs.builder();
        let v = bld.select(value_of(c.raw), value_of(a.raw), value_of(b.raw));
        fs.current = bld.current_block();
        raw_of(v)
    });
    Val::from_raw(raw.unwrap_or(if c.raw & 1 != 0 { a.raw } else { b.raw }))
}

/// Values that convert to a `Val<T>`: the `Val` itself or a plain `T` (which becomes a constant).
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

/// Types with arithmetic (`+ - * / %`, min, max, abs): integers and floats.
pub trait Arith: ScalarValue {}
/// Types with bitwise operators: integers and `bool`.
pub trait Bits: ScalarValue {}
/// Integer types (shifts).
pub trait Int: ScalarValue {}
/// Float types (sqrt, floor, ceil, fma).
pub trait Float: ScalarValue {}
/// Types with negation: signed integers and floats.
pub trait Signed: ScalarValue {}

macro_rules! markers {
    ($tr:ident: $($t:ty),*) => { $(impl $tr for $t {})* };
}
markers!(Arith: i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);
markers!(Bits: bool, i8, i16, i32, i64, u8, u16, u32, u64);
markers!(Int: i8, i16, i32, i64, u8, u16, u32, u64);
markers!(Float: f32, f64);
markers!(Signed: i8, i16, i32, i64, f32, f64);

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
binop!(Shl, shl, ShlAssign, shl_assign, Shl, Int);
binop!(Shr, shr, ShrAssign, shr_assign, Shr, Int);

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
lhs_scalar_ops!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

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
lhs_bit_ops!(bool, i8, i16, i32, i64, u8, u16, u32, u64);

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
    /// The index as a traced value (an IR value while tracing, the value as `i64` bits otherwise).
    fn index_raw(self) -> u64;
    /// The index as an `i64` in direct mode.
    fn index_direct(self) -> i64;
}

macro_rules! index_impls {
    ($($t:ty),*) => {$(
        impl Index for Val<$t> {
            fn index_raw(self) -> u64 { self.raw }
            fn index_direct(self) -> i64 { <$t as ScalarValue>::from_bits(self.raw) as i64 }
        }
        impl Index for $t {
            fn index_raw(self) -> u64 {
                if crate::is_tracing() { Val::<i64>::new(self as i64).raw } else { (self as i64) as u64 }
            }
            fn index_direct(self) -> i64 { self as i64 }
        }
    )*};
}
index_impls!(i8, i16, i32, i64, u8, u16, u32, u64);
impl Index for usize {
    fn index_raw(self) -> u64 {
        (self as u64).index_raw()
    }
    fn index_direct(self) -> i64 {
        self as i64
    }
}
impl Index for isize {
    fn index_raw(self) -> u64 {
        (self as i64).index_raw()
    }
    fn index_direct(self) -> i64 {
        self as i64
    }
}

/// Emits a constant of IR type `ty` with `bits` (while tracing) or returns the bits.
pub(crate) fn constant_raw(ty: Type, bits: u64) -> u64 {
    with_tracer(|_| ())
        .map(|_| raw_of(emit(|b| b.constant(Const { ty, bits }))))
        .unwrap_or(bits)
}
