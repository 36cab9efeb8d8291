//! Comparisons: `<`, `<=`, `>`, `>=` ([`Compare`]) and `==`, `!=` ([`Equality`]) over plain
//! values (giving `bool`) and traced ones (giving `Val<bool>`), and the functions `#[jit]`
//! rewrites the operators to ([`lt`], [`le`], [`gt`], [`ge`], [`eq`], [`ne`]).

use crate::ptr::Ptr;
use crate::val::{IntoVal, Val};
use nacre_ir::half::{bf16, f16};
use nacre_ir::semantics::ScalarValue;

/// Ordering operators over plain and traced values: `bool` for plain operands, `Val<bool>`
/// when either side is traced. Implemented for the values and for references to them:
/// `#[jit]` rewrites `a < b` to `cf::lt(&a, &b)`, which (like the operator) does not move its
/// operands.
#[diagnostic::on_unimplemented(
    message = "cannot compare `{Self}` with `{Rhs}` in traced code",
    note = "both sides must have the same type, or be a `Val<T>` and a `T` (convert with `.cast::<U>()` or `Val::new`)"
)]
pub trait Compare<Rhs> {
    /// The result type.
    type Output;
    /// `<`
    fn lt(self, rhs: Rhs) -> Self::Output;
    /// `<=`
    fn le(self, rhs: Rhs) -> Self::Output;
    /// `>`
    fn gt(self, rhs: Rhs) -> Self::Output;
    /// `>=`
    fn ge(self, rhs: Rhs) -> Self::Output;
}

/// Equality operators over plain and traced values, like [`Compare`] (plain values only need
/// `PartialEq`, so `String == &str` or an enum without an order work as in Rust).
#[diagnostic::on_unimplemented(
    message = "cannot compare `{Self}` with `{Rhs}` in traced code",
    note = "both sides must have the same type, or be a `Val<T>` and a `T` (convert with `.cast::<U>()` or `Val::new`)"
)]
pub trait Equality<Rhs> {
    /// The result type.
    type Output;
    /// `==`
    fn eq(self, rhs: Rhs) -> Self::Output;
    /// `!=`
    fn ne(self, rhs: Rhs) -> Self::Output;
}

impl<T: PartialOrd> Compare<T> for T {
    type Output = bool;
    fn lt(self, rhs: T) -> bool {
        self < rhs
    }
    fn le(self, rhs: T) -> bool {
        self <= rhs
    }
    fn gt(self, rhs: T) -> bool {
        self > rhs
    }
    fn ge(self, rhs: T) -> bool {
        self >= rhs
    }
}

impl<A: PartialEq<B>, B> Equality<B> for A {
    type Output = bool;
    fn eq(self, rhs: B) -> bool {
        self == rhs
    }
    fn ne(self, rhs: B) -> bool {
        self != rhs
    }
}

/// `Compare` (and with `eq`, `Equality`) for one pair of operand types, at least one traced,
/// generic over the scalar `T`, so that generic code compares `Val<T>`s with no bound beyond
/// `T: Scalar`; `$d` is `*` for reference operands.
macro_rules! traced_compare {
    ($lhs:ty, $rhs:ty; $($d:tt)?) => {
        impl<T: ScalarValue> Compare<$rhs> for $lhs {
            type Output = Val<bool>;
            fn lt(self, rhs: $rhs) -> Val<bool> { IntoVal::<T>::into_val($($d)? self).lt($($d)? rhs) }
            fn le(self, rhs: $rhs) -> Val<bool> { IntoVal::<T>::into_val($($d)? self).le($($d)? rhs) }
            fn gt(self, rhs: $rhs) -> Val<bool> { IntoVal::<T>::into_val($($d)? self).gt($($d)? rhs) }
            fn ge(self, rhs: $rhs) -> Val<bool> { IntoVal::<T>::into_val($($d)? self).ge($($d)? rhs) }
        }
    };
    (eq $lhs:ty, $rhs:ty; $($d:tt)?) => {
        traced_compare!($lhs, $rhs; $($d)?);
        traced_equality!(T: ScalarValue; T; $lhs, $rhs; $($d)?);
    };
}

/// `Equality` for one pair of operand types of scalar `$t` (generic where `$g` declares it).
macro_rules! traced_equality {
    ($($g:ident: $b:path)?; $t:ty; $lhs:ty, $rhs:ty; $($d:tt)?) => {
        impl<$($g: $b)?> Equality<$rhs> for $lhs {
            type Output = Val<bool>;
            fn eq(self, rhs: $rhs) -> Val<bool> { IntoVal::<$t>::into_val($($d)? self).eq($($d)? rhs) }
            fn ne(self, rhs: $rhs) -> Val<bool> { IntoVal::<$t>::into_val($($d)? self).ne($($d)? rhs) }
        }
    };
}
traced_compare!(Val<T>, T;);
traced_compare!(eq Val<T>, Val<T>;);
traced_compare!(&Val<T>, &T; *);
traced_compare!(eq &Val<T>, &Val<T>; *);

/// `Val<T> == T` per scalar type: a generic impl could overlap the plain `PartialEq` one (a
/// downstream crate may implement `PartialEq<Local> for Val<Local>`, as far as coherence knows).
macro_rules! mixed_equality {
    ($($t:ty),*) => {$(
        traced_equality!(; $t; Val<$t>, $t;);
        traced_equality!(; $t; &Val<$t>, &$t; *);
    )*};
}
mixed_equality!(bool, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, f16, bf16);

/// `T op Val<T>` (a plain scalar on the left) for each scalar type: a generic `impl<T> ..
/// for T` would cover every type, so these stay one per type.
macro_rules! scalar_lhs_compare {
    ($($t:ty),*) => {$(
        impl Compare<Val<$t>> for $t {
            type Output = Val<bool>;
            fn lt(self, rhs: Val<$t>) -> Val<bool> { Val::new(self).lt(rhs) }
            fn le(self, rhs: Val<$t>) -> Val<bool> { Val::new(self).le(rhs) }
            fn gt(self, rhs: Val<$t>) -> Val<bool> { Val::new(self).gt(rhs) }
            fn ge(self, rhs: Val<$t>) -> Val<bool> { Val::new(self).ge(rhs) }
        }
        impl Equality<Val<$t>> for $t {
            type Output = Val<bool>;
            fn eq(self, rhs: Val<$t>) -> Val<bool> { Val::new(self).eq(rhs) }
            fn ne(self, rhs: Val<$t>) -> Val<bool> { Val::new(self).ne(rhs) }
        }
        impl Compare<&Val<$t>> for &$t {
            type Output = Val<bool>;
            fn lt(self, rhs: &Val<$t>) -> Val<bool> { Val::new(*self).lt(*rhs) }
            fn le(self, rhs: &Val<$t>) -> Val<bool> { Val::new(*self).le(*rhs) }
            fn gt(self, rhs: &Val<$t>) -> Val<bool> { Val::new(*self).gt(*rhs) }
            fn ge(self, rhs: &Val<$t>) -> Val<bool> { Val::new(*self).ge(*rhs) }
        }
        impl Equality<&Val<$t>> for &$t {
            type Output = Val<bool>;
            fn eq(self, rhs: &Val<$t>) -> Val<bool> { Val::new(*self).eq(*rhs) }
            fn ne(self, rhs: &Val<$t>) -> Val<bool> { Val::new(*self).ne(*rhs) }
        }
    )*};
}
scalar_lhs_compare!(bool, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, f16, bf16);

/// `Compare` and `Equality` for pointers (by address), by value or by reference.
macro_rules! compare_ptr {
    ($lhs:ty, $rhs:ty; $($d:tt)?) => {
        impl<T: ScalarValue> Compare<$rhs> for $lhs {
            type Output = Val<bool>;
            fn lt(self, rhs: $rhs) -> Val<bool> { Ptr::lt($($d)? self, $($d)? rhs) }
            fn le(self, rhs: $rhs) -> Val<bool> { Ptr::le($($d)? self, $($d)? rhs) }
            fn gt(self, rhs: $rhs) -> Val<bool> { Ptr::gt($($d)? self, $($d)? rhs) }
            fn ge(self, rhs: $rhs) -> Val<bool> { Ptr::ge($($d)? self, $($d)? rhs) }
        }
        impl<T: ScalarValue> Equality<$rhs> for $lhs {
            type Output = Val<bool>;
            fn eq(self, rhs: $rhs) -> Val<bool> { Ptr::eq($($d)? self, $($d)? rhs) }
            fn ne(self, rhs: $rhs) -> Val<bool> { Ptr::ne($($d)? self, $($d)? rhs) }
        }
    };
}
compare_ptr!(Ptr<T>, Ptr<T>;);
compare_ptr!(&Ptr<T>, &Ptr<T>; *);

/// `a < b`.
pub fn lt<A: Compare<B>, B>(a: A, b: B) -> A::Output {
    a.lt(b)
}
/// `a <= b`.
pub fn le<A: Compare<B>, B>(a: A, b: B) -> A::Output {
    a.le(b)
}
/// `a > b`.
pub fn gt<A: Compare<B>, B>(a: A, b: B) -> A::Output {
    a.gt(b)
}
/// `a >= b`.
pub fn ge<A: Compare<B>, B>(a: A, b: B) -> A::Output {
    a.ge(b)
}
/// `a == b`.
pub fn eq<A: Equality<B>, B>(a: A, b: B) -> A::Output {
    a.eq(b)
}
/// `a != b`.
pub fn ne<A: Equality<B>, B>(a: A, b: B) -> A::Output {
    a.ne(b)
}
