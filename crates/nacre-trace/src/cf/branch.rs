//! `if`: conditions ([`Cond`], decided now or traced) and the branch constructs
//! ([`if_else`], [`branch`]).

use super::frames::{adjust_depth, enter_join, jump_join, set_current};
use super::Flow;
use crate::carry::{self, Carry};
use crate::context::{emit, with_tracer, Join};
use crate::val::Val;
use nacre_ir::Value;

/// A branch or loop condition: `bool` (decided at trace time) or `Val<bool>` (traced).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a condition",
    label = "expected `bool` or `Val<bool>`",
    note = "conditions of `if` and `while` in traced code are `bool` (decided while tracing) or `Val<bool>` (traced)"
)]
pub trait Cond: Copy {
    /// The condition of `operation` ("branch condition", "loop condition"): `Ok(b)` when
    /// known now, `Err(v)` for a traced value (checked to belong to the function being traced,
    /// see [`crate::identity`]).
    fn resolve(self, operation: &'static str) -> Result<bool, Value>;
}

impl Cond for bool {
    fn resolve(self, _: &'static str) -> Result<bool, Value> {
        Ok(self)
    }
}

impl Cond for Val<bool> {
    fn resolve(self, operation: &'static str) -> Result<bool, Value> {
        match with_tracer(|t| t.value(self.handle(), operation, Val::<bool>::ir_type)) {
            Some(v) => Err(v),
            None => Ok(self.bits(operation) & 1 != 0),
        }
    }
}

/// How a value that leaves a traced `if` is reported if it belongs to another trace.
const CARRIED_OUT_OF_IF: &str = "carried out of a traced `if`";

/// `if cond { then_(state) } else { else_(state) }`. The output carries the variables assigned
/// in either branch and the value of the `if` expression.
pub fn if_else<C: Cond, I: Copy, O: Carry>(
    cond: C,
    state: I,
    then_: impl FnOnce(I) -> Flow<O>,
    else_: impl FnOnce(I) -> Flow<O>,
) -> Flow<O> {
    if_else_for(cond, "branch condition", state, then_, else_)
}

/// [`if_else`] whose condition is the operand of `operation` (the name under which a
/// condition of another trace is reported).
pub(super) fn if_else_for<C: Cond, I: Copy, O: Carry>(
    cond: C,
    operation: &'static str,
    state: I,
    then_: impl FnOnce(I) -> Flow<O>,
    else_: impl FnOnce(I) -> Flow<O>,
) -> Flow<O> {
    let c = match cond.resolve(operation) {
        Ok(true) => return then_(state),
        Ok(false) => return else_(state),
        Err(c) => c,
    };
    let (then_b, else_b) = emit(|b| {
        let t = b.create_block();
        let e = b.create_block();
        b.branch(c, t, vec![], e, vec![]);
        (t, e)
    });
    adjust_depth(1);
    let mut join = Join::default();
    set_current(then_b);
    if let Flow::Next(o) = then_(state) {
        jump_join(&mut join, &carry::flatten_for(&o, CARRIED_OUT_OF_IF));
    }
    set_current(else_b);
    if let Flow::Next(o) = else_(state) {
        jump_join(&mut join, &carry::flatten_for(&o, CARRIED_OUT_OF_IF));
    }
    adjust_depth(-1);
    match enter_join(&join) {
        Some(slots) => Flow::Next(carry::rebuild(&slots)),
        None => Flow::Exit,
    }
}

/// [`if_else`] as `#[jit]` emits it: both branches take the state (the variables assigned in
/// either branch) and return it with the value of the `if`. Tying the output's state type to
/// the input's keeps the call well-typed when both branches always exit (and so produce no
/// value to infer it from).
pub fn branch<C: Cond, S: Carry, V: Carry>(
    cond: C,
    state: S,
    then_: impl FnOnce(S) -> Flow<(S, V)>,
    else_: impl FnOnce(S) -> Flow<(S, V)>,
) -> Flow<(S, V)> {
    if_else(cond, state, then_, else_)
}

/// Whether a condition of type `C` will be traced (a `Val<bool>` while tracing).
pub trait CondType {
    /// True if values of this type are traced right now.
    fn traced_now() -> bool;
}
impl CondType for bool {
    fn traced_now() -> bool {
        false
    }
}
impl CondType for Val<bool> {
    fn traced_now() -> bool {
        crate::is_tracing()
    }
}
