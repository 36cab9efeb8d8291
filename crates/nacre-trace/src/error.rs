//! Errors raised while tracing.

use thiserror::Error;

/// Why a function could not be traced.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum TraceError {
    /// A host (untraced) value was assigned different values on two paths that merge in traced
    /// control flow, or changes inside a traced loop; the merge cannot pick one.
    #[error(
        "a host (untraced) variable takes different values on paths of traced control flow \
         (it is assigned inside a traced `if` or loop); make it a `Val` so it is traced"
    )]
    HostValueDiverges,
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
    /// tracing API, e.g. a `Val` created by one trace used in another).
    #[error("traced value used outside of its trace: {0}")]
    OutsideTrace(String),
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
    /// A function called through `call` is being traced re-entrantly with a different signature.
    #[error("function `{name}` was traced with two different signatures")]
    SignatureMismatch {
        /// The function's name.
        name: String,
    },
}
