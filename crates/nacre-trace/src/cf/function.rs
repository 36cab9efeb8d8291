//! Function bodies: [`function_body`] merges a traced function's early returns with its tail
//! value, and [`Return`] names the types a `#[jit]` function can return.

use super::frames::{enter_join, fail, jump_join, pop_frame, push_frame};
use super::Flow;
use crate::carry::{self, Carry};
use crate::context::{take_pending, FrameKind, Join, Pending};
use crate::error::TraceError;
use crate::ptr::Ptr;
use crate::val::Val;
use nacre_ir::semantics::ScalarValue;

/// The body of a traced function: runs `body`, and merges its early [`ret`](super::ret)urns with
/// the value of its tail expression.
pub fn function_body<R: Carry>(body: impl FnOnce() -> Flow<R>) -> R {
    let tracing = crate::is_tracing();
    if tracing {
        push_frame(FrameKind::Function, Join::default(), Join::default());
    }
    let value: Option<R> = match body() {
        Flow::Next(v) => Some(v),
        Flow::Exit => match take_pending() {
            Pending::Return { slots } => Some(carry::rebuild(&slots)),
            Pending::None => None,
            Pending::Break { .. } | Pending::Continue { .. } => {
                fail(TraceError::NoEnclosingLoop { what: "break" });
                None
            }
        },
    };
    if tracing {
        if let Some(mut frame) = pop_frame() {
            if frame.exit.block.is_some() {
                if let Some(v) = value {
                    jump_join(&mut frame.exit, &carry::flatten_for(&v, "return value"));
                }
                if let Some(slots) = enter_join(&frame.exit) {
                    return carry::rebuild(&slots);
                }
            }
        }
    }
    value.unwrap_or_else(R::unreachable_value)
}

/// The return types of `#[jit]` functions: traced values (`Val<T>`, `Ptr<T>`, `EnumVal<E>`,
/// `FnVal<F>`), `()`, structs with `#[derive(Carry)]`, and tuples and arrays of these. A
/// function compiled as an entry (or traced by `cf::call`) returns one value (see
/// [`crate::Ret`]); a `#[jit]` helper called from traced code can return several. Unlike
/// `Ret`, this holds for every scalar `T`, so generic helpers need no extra bound. A plain
/// scalar (`i32`) is not a return type: it would be a constant of the trace.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a `#[jit]` function",
    label = "not a traced value, a `#[derive(Carry)]` struct, or a tuple or array of them",
    note = "`#[jit]` functions return `Val<T>`, `Ptr<T>`, `EnumVal<E>`, `FnVal<F>`, `()`, `#[derive(Carry)]` structs, or tuples and arrays of them; plain Rust helpers (without `#[jit]`) can return anything"
)]
pub trait Return: Carry {}
impl<T: ScalarValue> Return for Val<T> {}
impl<T: crate::ptr::Element> Return for Ptr<T> {}
impl<E: crate::TracedEnum> Return for crate::EnumVal<E> {}
impl<F: 'static> Return for crate::FnVal<F> {}
impl Return for () {}
impl<R: Return, const N: usize> Return for [R; N] {}

macro_rules! tuple_return {
    ($($n:ident),+) => {
        impl<$($n: Return),+> Return for ($($n,)+) {}
    };
}
tuple_return!(A);
tuple_return!(A, B);
tuple_return!(A, B, C);
tuple_return!(A, B, C, D);
tuple_return!(A, B, C, D, E);
tuple_return!(A, B, C, D, E, F);
tuple_return!(A, B, C, D, E, F, G);
tuple_return!(A, B, C, D, E, F, G, H);

/// Compile-time check that `R` is a [`Return`] type; `#[jit]` names it on the declared return
/// type of every function it rewrites.
pub fn returns<R: Return>() {}
