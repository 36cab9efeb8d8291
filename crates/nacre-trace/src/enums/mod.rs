//! Traced enums: a fieldless `#[repr(int)]` enum with `#[derive(nacre::TracedEnum)]` becomes a
//! traced value, [`EnumVal<E>`], held as its discriminant (a `Val` of the `repr` type).
//!
//! An `EnumVal` is made from a variant ([`EnumVal::new`], `From`), compared with `==` and `!=`
//! (against another `EnumVal` or a variant), matched in `#[jit]` with `E::A | E::B`, `_`,
//! bindings and guards ([`crate::cf::Scrutinee`]), carried through traced control flow, taken
//! as a parameter and returned (the host passes and gets the enum itself). Only values of the
//! enum's variants can be made: [`EnumVal::from_repr_or`] maps any other integer to a fallback,
//! so the host never receives a discriminant the enum does not have.

use crate::carry::{Carry, Slot};
use crate::cf::Equality;
use crate::identity::Handle;
use crate::signature::{HostValue, Param, Ret};
use crate::val::{select, Int, Val};
use nacre_ir::Type;
use std::fmt;

/// A fieldless enum with an integer `repr`, traced as its discriminant. Implement it with
/// `#[derive(nacre::TracedEnum)]`, which also implements [`HostValue`] and the comparisons
/// with variants.
pub trait TracedEnum: HostValue {
    /// The `repr` type.
    type Repr: Int + PartialEq + fmt::Debug;
    /// Every variant, in declaration order (at least one).
    const VARIANTS: &'static [Self];
    /// The enum's name, for messages.
    const NAME: &'static str;
    /// The discriminant (`self as Repr`).
    fn to_repr(self) -> Self::Repr;
    /// The variant with discriminant `r`, if there is one.
    fn from_repr(r: Self::Repr) -> Option<Self> {
        Self::VARIANTS.iter().copied().find(|v| v.to_repr() == r)
    }
}

/// A traced value of the enum `E` (see the [module docs](self)).
pub struct EnumVal<E: TracedEnum> {
    repr: Val<E::Repr>,
}

impl<E: TracedEnum> Clone for EnumVal<E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E: TracedEnum> Copy for EnumVal<E> {}

impl<E: TracedEnum> fmt::Debug for EnumVal<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EnumVal<{}>({:?})", E::NAME, self.repr)
    }
}

impl<E: TracedEnum> EnumVal<E> {
    /// The variant `v` as a constant.
    pub fn new(v: E) -> EnumVal<E> {
        EnumVal {
            repr: Val::new(v.to_repr()),
        }
    }

    /// The discriminant (what `as` gives in Rust).
    pub fn repr(self) -> Val<E::Repr> {
        self.repr
    }

    /// The variant whose discriminant is `r`, or `fallback` when no variant has it.
    pub fn from_repr_or(r: Val<E::Repr>, fallback: E) -> EnumVal<E> {
        let known = E::VARIANTS
            .iter()
            .map(|v| r.eq(Val::new(v.to_repr())))
            .reduce(|a, b| a | b)
            .unwrap_or_else(|| Val::new(false));
        EnumVal {
            repr: select(known, r, fallback.to_repr()),
        }
    }

    /// `if cond { a } else { b }` without control flow.
    pub fn select(cond: Val<bool>, a: EnumVal<E>, b: EnumVal<E>) -> EnumVal<E> {
        EnumVal {
            repr: select(cond, a.repr, b.repr),
        }
    }

    /// True when the value is one of the variants for which `pick` is true (false when `pick`
    /// accepts none, true when it accepts all).
    pub fn is_any(self, pick: impl Fn(&E) -> bool) -> Val<bool> {
        let picked: Vec<E> = E::VARIANTS.iter().copied().filter(|v| pick(v)).collect();
        if picked.len() == E::VARIANTS.len() {
            return Val::new(true);
        }
        picked
            .iter()
            .map(|v| self.repr.eq(Val::new(v.to_repr())))
            .reduce(|a, b| a | b)
            .unwrap_or_else(|| Val::new(false))
    }

    /// `==` against another value.
    pub fn eq(self, other: impl Into<EnumVal<E>>) -> Val<bool> {
        self.repr.eq(other.into().repr)
    }

    /// `!=` against another value.
    pub fn ne(self, other: impl Into<EnumVal<E>>) -> Val<bool> {
        self.repr.ne(other.into().repr)
    }

    /// The handle of the discriminant.
    fn handle(self) -> Handle {
        self.repr.handle()
    }
}

impl<E: TracedEnum> From<E> for EnumVal<E> {
    fn from(v: E) -> EnumVal<E> {
        EnumVal::new(v)
    }
}

impl<E: TracedEnum> Equality<EnumVal<E>> for EnumVal<E> {
    type Output = Val<bool>;
    fn eq(self, rhs: EnumVal<E>) -> Val<bool> {
        EnumVal::eq(self, rhs)
    }
    fn ne(self, rhs: EnumVal<E>) -> Val<bool> {
        EnumVal::ne(self, rhs)
    }
}

impl<E: TracedEnum> Equality<&EnumVal<E>> for &EnumVal<E> {
    type Output = Val<bool>;
    fn eq(self, rhs: &EnumVal<E>) -> Val<bool> {
        EnumVal::eq(*self, *rhs)
    }
    fn ne(self, rhs: &EnumVal<E>) -> Val<bool> {
        EnumVal::ne(*self, *rhs)
    }
}

impl<E: TracedEnum> Carry for EnumVal<E> {
    const SLOTS: usize = 1;
    fn flatten(&self, out: &mut Vec<Slot>) {
        self.repr.flatten(out);
    }
    fn flatten_as(&self, out: &mut Vec<Slot>, operation: &'static str) {
        self.repr.flatten_as(out, operation);
    }
    fn rebuild(slots: &mut std::slice::Iter<'_, Slot>) -> Self {
        EnumVal {
            repr: Val::rebuild(slots),
        }
    }
    fn unreachable_value() -> Self {
        match E::VARIANTS.first() {
            Some(v) => EnumVal::new(*v),
            None => EnumVal {
                repr: Val::unreachable_value(),
            },
        }
    }
}

impl<E: TracedEnum> Param for EnumVal<E> {
    type Host = E;
    fn ir_type() -> Type {
        Val::<E::Repr>::ir_type()
    }
    fn from_raw_param(raw: Handle) -> Self {
        EnumVal {
            repr: Val::from_handle(raw),
        }
    }
    fn raw_param(self) -> Handle {
        self.handle()
    }
}

impl<E: TracedEnum> Ret for EnumVal<E> {
    type Host = E;
    fn ir_type() -> Option<Type> {
        Some(Val::<E::Repr>::ir_type())
    }
    fn raw_ret(self) -> Option<Handle> {
        Some(self.handle())
    }
    fn from_raw_ret(raw: Handle) -> Self {
        EnumVal {
            repr: Val::from_handle(raw),
        }
    }
}

/// The variant with discriminant bits `bits`, for the derive's [`HostValue::from_bits`]:
/// compiled code only makes values of `E`'s variants, so an unknown discriminant cannot come
/// back from it; should one ever arrive, it becomes the first variant rather than an invalid
/// enum (checked in debug builds).
pub fn variant_from_bits<E: TracedEnum>(bits: u64) -> E {
    let r = <E::Repr as HostValue>::from_bits(bits);
    let v = E::from_repr(r);
    debug_assert!(
        v.is_some(),
        "no variant of {} has discriminant {bits}",
        E::NAME
    );
    v.or_else(|| E::VARIANTS.first().copied())
        .unwrap_or_else(|| unreachable_enum::<E>())
}

/// An enum without variants has no values: nothing can produce one.
fn unreachable_enum<E: TracedEnum>() -> E {
    unreachable!("{} has no variants, so no value of it exists", E::NAME)
}

#[cfg(test)]
mod tests;
