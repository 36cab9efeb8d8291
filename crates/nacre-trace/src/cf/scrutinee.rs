//! `match` on enum variants: `#[jit]` turns a `match` whose arms name variants (`E::A | E::B`,
//! `_`, guards) into a chain of `if`s whose conditions ask the scrutinee whether it is one of
//! an arm's variants ([`Scrutinee`]). A traced enum ([`EnumVal`]) answers with a `Val<bool>`
//! (a traced branch); any other value answers natively with `matches!`, so a `match` on a host
//! enum still runs at trace time. Rust checks the arms' exhaustiveness on the enum type itself
//! ([`Scrutinee::exhaustive`]), for traced and host values alike.
//!
//! The two answers are two traits picked by method resolution on `&Scrutinee(&x)`: the traced
//! one applies to `Scrutinee<EnumVal<E>>` and is found first; the native one applies to
//! `&Scrutinee<T>` for every `T`, reached by auto-referencing only when the first does not apply.

use crate::enums::{EnumVal, TracedEnum};
use crate::val::Val;

/// A `match`'s scrutinee, borrowed: `#[jit]` asks it whether it matches each arm
/// ([`TracedScrutinee`] for a traced enum, [`NativeScrutinee`] for any other value).
pub struct Scrutinee<'a, T>(pub &'a T);

/// The traced answer: an [`EnumVal`] is one of the variants `pick` accepts.
pub trait TracedScrutinee {
    /// The enum.
    type Enum: TracedEnum;
    /// Whether the scrutinee is a variant `pick` accepts, as a traced condition.
    fn is(&self, pick: impl Fn(&Self::Enum) -> bool) -> Val<bool>;
    /// Type-checks `arms`, a `match` over the enum with the unguarded arms' patterns: Rust
    /// reports variants they miss. Never called.
    fn exhaustive(&self, arms: impl Fn(&Self::Enum)) {
        let _ = arms;
    }
    /// The scrutinee, for an arm that binds it (`other => ..`, `x @ E::A`).
    fn bound(&self) -> EnumVal<Self::Enum>;
}

impl<E: TracedEnum> TracedScrutinee for Scrutinee<'_, EnumVal<E>> {
    type Enum = E;
    fn is(&self, pick: impl Fn(&E) -> bool) -> Val<bool> {
        self.0.is_any(pick)
    }
    fn bound(&self) -> EnumVal<E> {
        *self.0
    }
}

/// The native answer, for a scrutinee of any other type.
pub trait NativeScrutinee {
    /// The scrutinee's type.
    type Enum;
    /// `pick(scrutinee)`.
    fn is(&self, pick: impl Fn(&Self::Enum) -> bool) -> bool;
    /// As [`TracedScrutinee::exhaustive`].
    fn exhaustive(&self, arms: impl Fn(&Self::Enum)) {
        let _ = arms;
    }
    /// The scrutinee, for an arm that binds it (a copy, as a binding of a `Copy` value is).
    fn bound(&self) -> Self::Enum
    where
        Self::Enum: Copy;
}

impl<T> NativeScrutinee for &Scrutinee<'_, T> {
    type Enum = T;
    fn is(&self, pick: impl Fn(&T) -> bool) -> bool {
        pick(self.0)
    }
    fn bound(&self) -> T
    where
        T: Copy,
    {
        *self.0
    }
}
