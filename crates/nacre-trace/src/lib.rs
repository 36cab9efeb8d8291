//! Tracing: run user code over traced values once and capture what it does as IR.
//!
//! - [`Val<T>`] and [`Ptr<T>`] are `Copy` handles. While a trace is being recorded they name IR
//!   values and every operator on them appends an instruction; outside a trace they hold
//!   concrete values and operators compute directly (*direct mode*: the same code runs as
//!   plain Rust, which is handy in a debugger).
//! - [`cf`] is the structured control-flow API that `#[jit]` rewrites `if`, `while`, `loop`,
//!   `for`, `break`, `continue`, `return`, comparisons, `&&`/`||` and indexing into. A plain
//!   `bool` condition or a Rust iterator runs natively while tracing (unrolling and
//!   specialisation); a `Val<bool>` condition or a range of `Val`s records a branch or a loop.
//! - Every `Val` and `Ptr` knows the trace it belongs to ([`identity`]): one used in a trace
//!   it does not belong to (made in another trace, or outside any trace) fails the trace with
//!   [`TraceError::ForeignValue`].
//! - [`Carry`] describes values that flow through traced control flow (they become block
//!   parameters).
//! - [`trace`] captures a whole function into an IR [`nacre_ir::Module`]; [`cf::call`] makes a
//!   traced callee a separate IR function, [`cf::invoke`] calls a Rust `extern "C"` function at
//!   run time.

pub mod atomic;
pub mod carry;
pub mod cf;
mod context;
pub mod enums;
pub mod error;
pub mod extern_fn;
pub mod fn_val;
pub mod gpu;
pub mod identity;
pub mod math;
pub mod ptr;
pub mod region;
pub mod shared;
pub mod signature;
pub mod val;
pub mod warp;

pub use atomic::{fence, fence_block, Atomic, AtomicElement, AtomicInt, AtomicMinMax};
pub use carry::{Carry, Slot};
pub use enums::{EnumVal, TracedEnum};
pub use error::{TraceError, ValueOrigin};
pub use extern_fn::ExternFn;
pub use fn_val::{Callee, FnPointer, FnVal};
pub use identity::Handle;
pub use ptr::{Element, Ptr, RawPtr, Record};
pub use region::Region;
pub use signature::{direct_call, trace, Flat, HostValue, Param, Ret, TraceFn, Traced};
pub use val::{select, Arith, Bits, Float, Index, Int, Integer, IntoVal, Num, Signed, Val};

/// Whether a trace is being recorded on this thread (otherwise values are concrete).
pub fn is_tracing() -> bool {
    context::is_tracing()
}

pub use nacre_ir::semantics::ScalarValue as Scalar;
