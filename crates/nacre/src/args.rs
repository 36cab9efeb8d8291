//! What a safe call accepts for each parameter ([`Arg`]), and how the call passes it.
//!
//! A `Val<T>` parameter takes a `T`, an `EnumVal<E>` parameter an `E`. A `Ptr<T>` parameter takes borrowed memory: `&Array<T>`,
//! `&mut Array<T>`, `&[T]`, `&mut [T]`, `&Vec<T>` or `&mut Vec<T>`. The borrow lasts for the
//! whole call, and a call returns only when every kernel it launched has finished, so the
//! memory can be neither freed, nor resized, nor touched elsewhere while compiled code uses
//! it: the Rust compiler, not a run-time check, rules that out. A shared borrow is accepted
//! only for a parameter the function never writes through (the call checks this against an
//! analysis of the IR, [`nacre_ir::analysis::written_params`], and fails with
//! [`crate::Error::ReadOnlyArgument`] otherwise).
//!
//! Compiled code checks every access against the memory its pointer came from
//! ([`nacre_ir::transform::bounds`]): with each pointer argument the call passes its base and
//! size in bytes.

use nacre_ir::semantics::ScalarValue;
use nacre_runtime::Array;
use nacre_trace::{Element, EnumVal, HostValue, Param, Ptr, TracedEnum, Val};
use std::mem::size_of;

/// The memory a pointer argument lends to a call.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Lent {
    /// The first element's address.
    pub addr: usize,
    /// The size in bytes.
    pub bytes: usize,
    /// Whether compiled code may write it (the borrow is exclusive).
    pub writable: bool,
}

/// A value a safe call accepts for a parameter of type `P`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a `{P}` parameter",
    note = "a `Val<T>` parameter takes a `T`; a `Ptr<T>` parameter takes `&Array<T>`, \
            `&mut Array<T>`, `&[T]`, `&mut [T]`, `&Vec<T>` or `&mut Vec<T>`"
)]
pub trait Arg<P: Param> {
    /// The argument in the bits encoding ([`nacre_ir::semantics`]).
    fn bits(&self) -> u64;
    /// The argument in the native calling convention.
    fn abi(&self) -> <P::Host as HostValue>::Abi;
    /// The memory lent, for pointer arguments.
    fn lent(&self) -> Option<Lent>;
}

impl<T: ScalarValue + HostValue> Arg<Val<T>> for T {
    #[inline]
    fn bits(&self) -> u64 {
        HostValue::to_bits(*self)
    }
    #[inline]
    fn abi(&self) -> T::Abi {
        self.to_abi()
    }
    #[inline]
    fn lent(&self) -> Option<Lent> {
        None
    }
}

impl<E: TracedEnum> Arg<EnumVal<E>> for E {
    #[inline]
    fn bits(&self) -> u64 {
        HostValue::to_bits(*self)
    }
    #[inline]
    fn abi(&self) -> E::Abi {
        self.to_abi()
    }
    #[inline]
    fn lent(&self) -> Option<Lent> {
        None
    }
}

/// Implements [`Arg`] for a pointer parameter over a borrow that derefs to a slice.
macro_rules! lend {
    ($ty:ty, $writable:expr, |$s:ident| $slice:expr) => {
        impl<T: Element> Arg<Ptr<T>> for $ty {
            #[inline]
            fn bits(&self) -> u64 {
                let $s = self;
                $slice.as_ptr() as usize as u64
            }
            #[inline]
            fn abi(&self) -> usize {
                self.bits() as usize
            }
            #[inline]
            fn lent(&self) -> Option<Lent> {
                let $s = self;
                let slice: &[T] = $slice;
                Some(Lent {
                    addr: slice.as_ptr() as usize,
                    bytes: std::mem::size_of_val(slice),
                    writable: $writable,
                })
            }
        }
    };
}

lend!(&[T], false, |s| *s);
lend!(&mut [T], true, |s| &**s);
lend!(&Vec<T>, false, |s| s.as_slice());
lend!(&mut Vec<T>, true, |s| s.as_slice());

/// Implements [`Arg`] for a borrowed [`Array`], from its address and length (not its slice,
/// which would move the pages of a GPU array back to the host).
macro_rules! lend_array {
    ($ty:ty, $writable:expr) => {
        impl<T: Element> Arg<Ptr<T>> for $ty {
            #[inline]
            fn bits(&self) -> u64 {
                self.as_ptr() as usize as u64
            }
            #[inline]
            fn abi(&self) -> usize {
                self.as_ptr() as usize
            }
            #[inline]
            fn lent(&self) -> Option<Lent> {
                Some(Lent {
                    addr: self.as_ptr() as usize,
                    bytes: self.len() * size_of::<T>(),
                    writable: $writable,
                })
            }
        }
    };
}

lend_array!(&Array<T>, false);
lend_array!(&mut Array<T>, true);

/// How the entry of a bounds-checked module takes its arguments: the declared ones, then base
/// and size for each pointer ([`nacre_ir::transform::companion_positions`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct ArgPlan {
    /// Positions of the pointer parameters.
    pub ptrs: Vec<usize>,
    /// The parameters the function may write through (bit `i` for parameter `i`).
    pub written: nacre_ir::analysis::ParamSet,
}

impl ArgPlan {
    /// The plan for an entry with `params` that writes through `written`.
    pub fn new(params: &[nacre_ir::Type], written: nacre_ir::analysis::ParamSet) -> ArgPlan {
        ArgPlan {
            ptrs: (0..params.len()).filter(|&i| params[i].is_ptr()).collect(),
            written,
        }
    }

    /// Whether parameter `i` may be written through.
    pub fn writes(&self, i: usize) -> bool {
        self.written & nacre_ir::analysis::pointer_roots::param_bit(i) != 0
    }
}
