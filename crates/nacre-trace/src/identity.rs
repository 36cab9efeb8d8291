//! Trace identity: every traced value knows the recording it belongs to.
//!
//! Each IR function a trace records (the traced entry, and every callee or kernel traced by
//! [`cf::call`](crate::cf::call) or [`gpu::launch`](crate::gpu::launch)) gets a fresh
//! *trace id* from a global counter when it starts; ids are never 0 and never reused (a
//! `u64` counter does not wrap). A [`Handle`], the inside of every [`Val`](crate::Val) and
//! [`Ptr`](crate::Ptr), pairs the raw handle with the id of the function that made it:
//!
//! - id `n != 0`: the raw handle is the index of an IR value of the function with id `n`;
//! - id `0` (*direct*): the value was made outside any trace and the raw handle is its bits.
//!
//! A handle is three words (24 bytes): the raw handle in full (direct bits are up to 128-bit,
//! for `i128`/`u128`, so the id cannot be packed into them) and the id, stored as a non-zero
//! tag (`u64::MAX` for direct) so that `Option<Handle>`, what every traced operation computes
//! before falling back to direct mode, is 24 bytes too. Checking a value costs one compare.
//!
//! Wherever a handle becomes an IR operand (`Tracer::value`) its id is compared with the id
//! of the function being recorded: a mismatch (a value made in another trace, kept in a
//! `thread_local` or returned out of a closure; one made outside any trace and captured; one
//! of an enclosing function captured by a callee) records a
//! [`TraceError::ForeignValue`](crate::TraceError::ForeignValue) and continues on a dummy
//! constant, so the trace fails at its end and the index never reaches the verifier.
//! Wherever a handle is read as bits in direct mode (`Handle::bits`) a traced id is a
//! panic that names the problem: direct mode has no error channel besides traps, and an IR
//! index is no value to compute on.

use nacre_ir::Value;
use std::fmt;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};

/// The next trace id to hand out (0 is reserved for direct values).
static NEXT_TRACE: AtomicU64 = AtomicU64::new(1);

/// A fresh trace id for a function that starts being recorded: unique in the process, never 0
/// (and never `u64::MAX`, the tag of direct handles: a `u64` counter does not get there).
pub(crate) fn fresh_trace_id() -> u64 {
    NEXT_TRACE.fetch_add(1, Ordering::Relaxed)
}

/// The tag of a direct handle. Tags are non-zero so that `Option<Handle>` (what every traced
/// operation computes) is as small as a `Handle`.
const DIRECT: NonZeroU64 = NonZeroU64::MAX;

/// The raw inside of a [`Val`](crate::Val) or [`Ptr`](crate::Ptr): an IR value index of one
/// recorded function (while tracing) or a value's bits (direct mode), with the id of the
/// trace that made it (see the [module docs](self)). Only the tracing API creates and reads
/// handles; the traits that carry them ([`Param`](crate::Param), [`Ret`](crate::Ret),
/// [`Index`](crate::Index), ...) are implemented by this crate.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct Handle {
    /// The low 64 bits of the raw handle (all of it but for a direct 128-bit integer).
    raw: u64,
    /// The high 64 bits of a direct value's bits (zero otherwise). Two words rather than a
    /// `u128` keep the handle 8-byte aligned: 24 bytes, not 32.
    high: u64,
    /// The trace id, or [`DIRECT`] for a direct value.
    tag: NonZeroU64,
}

impl Handle {
    /// A direct handle (made outside any trace) holding `bits`.
    #[inline]
    pub(crate) const fn direct(bits: u128) -> Handle {
        Handle {
            raw: bits as u64,
            high: (bits >> 64) as u64,
            tag: DIRECT,
        }
    }

    /// A direct handle holding a word: an address, or the bits of a value of at most 64 bits.
    #[inline]
    pub(crate) const fn direct_word(word: u64) -> Handle {
        Handle::direct(word as u128)
    }

    /// A handle for IR value `v` of the function whose trace id is `trace`.
    #[inline]
    pub(crate) fn traced(v: Value, trace: u64) -> Handle {
        Handle {
            raw: u64::from(v.as_u32()),
            high: 0,
            tag: NonZeroU64::new(trace).unwrap_or(DIRECT),
        }
    }

    /// The id of the trace that made the value (0 for a direct value).
    #[inline]
    pub(crate) fn trace(self) -> u64 {
        if self.tag == DIRECT {
            0
        } else {
            self.tag.get()
        }
    }

    /// Whether the value belongs to the function whose trace id is `trace` (never true of a
    /// direct value).
    #[inline]
    pub(crate) fn belongs_to(self, trace: u64) -> bool {
        self.tag.get() == trace
    }

    /// The IR value, for a handle already known to belong to the function being recorded.
    #[inline]
    pub(crate) fn ir_value(self) -> Value {
        Value::from_u32(self.raw as u32)
    }

    /// The bits of a direct value, read in direct mode by `operation`. A traced handle here is
    /// a value that outlived its trace (its raw handle is an IR index, not a value): that is a
    /// panic naming the problem, never a silent reinterpretation.
    #[inline]
    pub(crate) fn bits(self, operation: &'static str) -> u128 {
        if self.tag != DIRECT {
            traced_in_direct_mode(self, operation)
        }
        u128::from(self.high) << 64 | u128::from(self.raw)
    }

    /// The low word of a direct value's bits (an address, or a value of at most 64 bits),
    /// read as [`Handle::bits`] reads them.
    #[inline]
    pub(crate) fn word(self, operation: &'static str) -> u64 {
        self.bits(operation) as u64
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.tag == DIRECT {
            write!(
                f,
                "direct({:#x})",
                u128::from(self.high) << 64 | u128::from(self.raw)
            )
        } else {
            write!(f, "{} of trace {}", self.ir_value(), self.tag)
        }
    }
}

/// The panic of a traced value used in direct mode (outside any trace).
#[cold]
#[inline(never)]
fn traced_in_direct_mode(h: Handle, operation: &'static str) -> ! {
    panic!(
        "a `Val` or `Ptr` made while tracing ({} of trace {}) was used outside any trace \
         (by `{operation}`, in direct mode): it names an IR value of the trace that made it, \
         not a value; keep traced values inside the traced function that made them, and \
         create values for direct mode with `Val::new`",
        h.ir_value(),
        h.tag
    )
}

#[cfg(test)]
mod tests;
