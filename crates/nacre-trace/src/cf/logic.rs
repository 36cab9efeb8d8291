//! Short-circuit logic: `&&` and `||` ([`and`], [`or`]) over `bool` and `Val<bool>`; a traced
//! left-hand side records a branch, so the right-hand side is evaluated only when it decides.

use super::branch::if_else_for;
use super::Flow;
use crate::carry::Carry;
use crate::val::{IntoVal, Val};

/// Short-circuit logic (`&&`, `||`) over `bool` and `Val<bool>`.
pub trait Logic<B> {
    /// `bool` if both sides are plain, `Val<bool>` otherwise.
    type Output;
    /// `self && rhs()`.
    fn and(self, rhs: impl FnOnce() -> B) -> Self::Output;
    /// `self || rhs()`.
    fn or(self, rhs: impl FnOnce() -> B) -> Self::Output;
}

impl Logic<bool> for bool {
    type Output = bool;
    fn and(self, rhs: impl FnOnce() -> bool) -> bool {
        self && rhs()
    }
    fn or(self, rhs: impl FnOnce() -> bool) -> bool {
        self || rhs()
    }
}

impl Logic<Val<bool>> for bool {
    type Output = Val<bool>;
    fn and(self, rhs: impl FnOnce() -> Val<bool>) -> Val<bool> {
        if self {
            rhs()
        } else {
            Val::new(false)
        }
    }
    fn or(self, rhs: impl FnOnce() -> Val<bool>) -> Val<bool> {
        if self {
            Val::new(true)
        } else {
            rhs()
        }
    }
}

fn short_circuit(
    a: Val<bool>,
    on_true: impl FnOnce() -> Val<bool>,
    on_false: impl FnOnce() -> Val<bool>,
) -> Val<bool> {
    match if_else_for(
        a,
        "`&&`/`||` operand",
        (),
        |()| Flow::Next(on_true()),
        |()| Flow::Next(on_false()),
    ) {
        Flow::Next(v) => v,
        Flow::Exit => Val::unreachable_value(),
    }
}

impl<B: IntoVal<bool>> Logic<B> for Val<bool> {
    type Output = Val<bool>;
    fn and(self, rhs: impl FnOnce() -> B) -> Val<bool> {
        short_circuit(self, || rhs().into_val(), || Val::new(false))
    }
    fn or(self, rhs: impl FnOnce() -> B) -> Val<bool> {
        short_circuit(self, || Val::new(true), || rhs().into_val())
    }
}

/// `a && b`, short-circuiting.
pub fn and<A: Logic<B>, B>(a: A, b: impl FnOnce() -> B) -> A::Output {
    a.and(b)
}

/// `a || b`, short-circuiting.
pub fn or<A: Logic<B>, B>(a: A, b: impl FnOnce() -> B) -> A::Output {
    a.or(b)
}
