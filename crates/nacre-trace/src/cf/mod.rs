//! The structured control-flow API that `#[jit]` expands to (and that can be used by hand).
//!
//! Every construct takes the *state*: the variables assigned inside it, as a
//! [`Carry`](crate::Carry) tuple, passed into closures by value and returned from them in a
//! [`Flow`]. What happens depends on the condition's type:
//!
//! - a plain `bool`, a Rust iterator or a range of plain integers runs natively while tracing:
//!   the untaken branch is never traced, loops unroll (trace-time specialisation);
//! - a `Val<bool>` or a range with a `Val` bound records a branch or a loop in the IR; the state
//!   becomes block parameters.
//!
//! Outside a trace (direct mode) everything runs natively on concrete values.
//!
//! Non-local exits ([`brk`], [`cont`], [`ret`]) return [`Flow::Exit`]; the enclosing
//! constructs pass it outwards until the target handles it. Inside traced control flow they are
//! recorded as IR jumps instead.
//!
//! The constructs are grouped by topic: `if` ([`if_else`], [`branch`]), loops ([`while_loop`],
//! [`loop_`], [`for_loop`]), ranges ([`range`], [`range_inclusive`]), non-local exits and function
//! bodies ([`brk`], [`cont`], [`ret`], [`function_body`]), short-circuit logic ([`and`], [`or`]),
//! comparisons ([`lt`], [`eq`], ...), indexing ([`PtrIndexRead`] and its siblings) and calls
//! ([`call`], [`invoke`]).

mod branch;
mod compare;
mod exit;
mod frames;
mod function;
mod index;
mod logic;
mod loops;
mod names;
mod range;
mod scrutinee;

pub use crate::carry::slot_count;
pub use branch::{branch, if_else, Cond, CondType};
pub use compare::{eq, ge, gt, le, lt, ne, Compare, Equality};
pub use exit::{brk, cont, ret};
pub use function::{function_body, returns, Return};
pub use index::{HostIndexRead, HostIndexWrite, PtrIndexRead, PtrIndexWrite};
pub use logic::{and, or, Logic};
pub use loops::{for_loop, loop_, while_loop, IntoLoop};
pub(crate) use names::innermost;
pub use names::{carrying, Carrying, CarryingGuard};
pub use range::{range, range_inclusive, HostInt, HostOne, HostRange, MakeRange, TracedRange};
pub use scrutinee::{NativeScrutinee, Scrutinee, TracedScrutinee};

/// How control leaves a block of user code.
#[derive(Debug, Clone, Copy)]
#[must_use]
pub enum Flow<S> {
    /// Falls through to what follows, with the state.
    Next(S),
    /// Left by `break`, `continue` or `return` (already recorded or pending).
    Exit,
}

pub use crate::extern_fn::{
    call, extern_fn0, extern_fn1, extern_fn2, extern_fn3, extern_fn4, extern_fn5, extern_fn6,
    invoke,
};
