//! Errors raised while tracing.

use std::fmt;
use thiserror::Error;

/// Why a function could not be traced.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum TraceError {
    /// A host (untraced) value was assigned different values on two paths that merge in traced
    /// control flow, or changes inside a traced loop; the merge cannot pick one.
    #[error(
        "a host (untraced) variable takes different values on paths of traced control flow \
         ({location}); make it a `Val` so it is traced"
    )]
    HostValueDiverges {
        /// Where: the variables the construct carries, the construct and its file and line
        /// (as `#[jit]` names them), or what is known without them.
        location: String,
    },
    /// Two paths reaching the same merge carry different kinds of values.
    #[error("values carried into a merge of traced control flow disagree: {detail}")]
    CarryMismatch {
        /// What differs.
        detail: String,
    },
    /// `break` or `continue` without an enclosing loop in the traced function.
    #[error("`{what}` outside of a loop")]
    NoEnclosingLoop {
        /// `break` or `continue`.
        what: &'static str,
    },
    /// A traced operation was used where no function is being traced (internal misuse of the
    /// tracing API, e.g. a trace started while another one is recorded on the same thread).
    #[error("traced value used outside of its trace: {0}")]
    OutsideTrace(String),
    /// A `Val` or `Ptr` that does not belong to the function being traced was used in it: one
    /// made in another trace (kept in a `thread_local`, returned out of a closure), one made
    /// outside any trace (`Val::new` at top level, captured by the traced closure), or one of
    /// an enclosing traced function captured by a function traced through `call` or `launch`.
    /// Its raw handle means nothing here, so it is never used: the trace continues on a dummy
    /// value and fails with this error.
    #[error(
        "a `{value}` {origin} was used in this trace (by `{operation}`, in traced function \
         `{function}`); a traced value belongs to the trace that made it: pass it to the traced \
         function as a parameter (or as an argument of `call`/`launch`), or create it inside \
         the traced function with `Val::new`"
    )]
    ForeignValue {
        /// The operation that used the value: `add`, `load`, `store`, `compare (<)`,
        /// `branch condition`, `launch argument`, `return value`, `carried into a loop`, ...
        operation: &'static str,
        /// The value's type, as Rust names it (`Val<i32>`, `Ptr<f32>`).
        value: String,
        /// Where the value was made.
        origin: ValueOrigin,
        /// The IR name of the traced function that used it.
        function: String,
    },
    /// The same Rust function is used both as a kernel (launched) and as a host function
    /// (called).
    #[error("function `{name}` is used both as a kernel and as a host function")]
    KindMismatch {
        /// The function's name.
        name: String,
    },
    /// A kernel was given a non-unit return type or otherwise cannot be launched.
    #[error("cannot launch `{name}`: {reason}")]
    BadKernel {
        /// The kernel's name.
        name: String,
        /// Why.
        reason: String,
    },
    /// Two function values of different tables met where one table is needed.
    #[error(
        "function values of different tables cannot be {what}: pick both from one table \
         (`FnVal::pick(&TABLE, i)`)"
    )]
    FunctionTableMismatch {
        /// What was attempted ("selected between").
        what: &'static str,
    },
    /// A function value names no table of its type: it was rebuilt from slots that no
    /// function value produced.
    #[error("a function value names no function table of type `{ty}`")]
    UnknownFunctionTable {
        /// The table's function type.
        ty: &'static str,
    },
    /// A function called through `call` is being traced re-entrantly with a different signature.
    #[error("function `{name}` was traced with two different signatures")]
    SignatureMismatch {
        /// The function's name.
        name: String,
    },
}

/// Where a value used in a trace it does not belong to was made (see
/// [`TraceError::ForeignValue`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueOrigin {
    /// Outside any trace (direct mode), e.g. `Val::new` at top level.
    OutsideTrace,
    /// In an enclosing function of the same trace (a caller of the function traced by `call`
    /// or `launch`), named here.
    EnclosingFunction(String),
    /// In another trace, one that has ended (or a function of this trace whose recording is
    /// over).
    OtherTrace,
}

impl fmt::Display for ValueOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueOrigin::OutsideTrace => f.write_str("made outside any trace"),
            ValueOrigin::EnclosingFunction(name) => write!(
                f,
                "made in the enclosing traced function `{name}` (a callee traced by \
                 `call` or `launch` records a function of its own)"
            ),
            ValueOrigin::OtherTrace => f.write_str(
                "made in another trace (kept after its trace ended, e.g. in a `thread_local` \
                 or returned out of a closure)",
            ),
        }
    }
}
