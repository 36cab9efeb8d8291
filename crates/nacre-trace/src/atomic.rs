//! Atomic operations in traced code, with the names and meaning of Rust's `AtomicU32`,
//! `AtomicI64`, ...: `ptr.atomic(i)` names element `i` of a pointer's memory as an [`Atomic`],
//! whose `fetch_add`, `fetch_sub`, `fetch_min`, `fetch_max`, `fetch_and`, `fetch_or`,
//! `fetch_xor`, `swap` and `compare_exchange` take a `std::sync::atomic::Ordering`;
//! [`fence`] and [`fence_block`] are fences. In kernels and host code alike.
//!
//! Which element types have which operations is checked by the compiler: every operation on
//! `i32`, `u32`, `i64` and `u64` ([`AtomicInt`]); `fetch_add`, `fetch_min`, `fetch_max` and
//! `swap` on `f32`; `fetch_add` and `swap` on `f64` ([`AtomicElement`], [`AtomicMinMax`]).
//! The default scope is the device (every thread, and the host); [`Atomic::block`] narrows it
//! to the calling thread's block, which is cheaper on a GPU and enough for shared memory.
//! What each target gives for orderings and scopes is in the README's kernel section.
//!
//! Accesses are bounds-checked like loads and stores, and a function that uses an atomic on
//! a pointer parameter writes through it (a call needs a mutable borrow).

use crate::context::with_tracer;
use crate::identity::Handle;
use crate::ptr::Ptr;
use crate::val::{Index, IntoVal, Val};
use nacre_ir::semantics::{self, ScalarValue};
use nacre_ir::{AtomicOp, MemOrder, Scope};
use std::sync::atomic::Ordering;

/// An element type with atomic `fetch_add` and `swap`: the 32- and 64-bit integers and floats.
pub trait AtomicElement: ScalarValue {}
/// An element type with atomic `fetch_min` and `fetch_max`: the integers and `f32`.
pub trait AtomicMinMax: AtomicElement {}
/// An element type with every atomic operation: `i32`, `u32`, `i64` and `u64`.
pub trait AtomicInt: AtomicMinMax {}

macro_rules! atomic_types {
    (int: $($i:ty),*; float_min_max: $($m:ty),*; float: $($f:ty),*) => {
        $(impl AtomicElement for $i {} impl AtomicMinMax for $i {} impl AtomicInt for $i {})*
        $(impl AtomicElement for $m {} impl AtomicMinMax for $m {})*
        $(impl AtomicElement for $f {})*
    };
}
atomic_types!(int: i32, u32, i64, u64; float_min_max: f32; float: f64);

/// One element of a pointer's memory, accessed atomically (see the module docs).
#[derive(Debug)]
pub struct Atomic<T: ScalarValue> {
    ptr: Ptr<T>,
    scope: Scope,
}

impl<T: ScalarValue> Clone for Atomic<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ScalarValue> Copy for Atomic<T> {}

impl<T: ScalarValue> Ptr<T> {
    /// Element `index`, for atomic operations.
    pub fn atomic(self, index: impl Index) -> Atomic<T> {
        Atomic {
            ptr: self.offset_for(index, "atomic"),
            scope: Scope::Device,
        }
    }
}

/// The IR ordering of Rust's (every variant Rust has; a future one orders as `SeqCst`).
fn order_of(o: Ordering) -> MemOrder {
    MemOrder::from_std(o).unwrap_or(MemOrder::SeqCst)
}

impl<T: AtomicElement> Atomic<T> {
    /// The same element with block scope: ordered only against the threads of the calling
    /// thread's block.
    pub fn block(self) -> Atomic<T> {
        Atomic {
            scope: Scope::Block,
            ..self
        }
    }

    fn rmw(self, op: AtomicOp, value: Val<T>, order: MemOrder) -> Val<T> {
        let scope = self.scope;
        let h = with_tracer(|t| {
            let p = t.value(self.ptr.handle(), op.name(), Ptr::<T>::ir_type);
            let v = t.value(value.handle(), op.name(), Val::<T>::ir_type);
            t.build(|b| b.atomic_rmw(op, p, v, order, scope))
        });
        Val::from_handle(h.unwrap_or_else(|| {
            let v = value.handle().bits(op.name());
            let s = T::SCALAR;
            // SAFETY: `direct_element` checked that the element lies in writable memory lent
            // to this direct call.
            let old = unsafe {
                nacre_backend::atomic::rmw(direct_element(self.ptr, op.name()), s, order, |old| {
                    Some(semantics::atomic_rmw(op, s, u128::from(old), v) as u64)
                })
            };
            Handle::direct_word(old)
        }))
    }

    /// Adds `value` (wrapping for integers) and returns the previous value.
    pub fn fetch_add(self, value: impl IntoVal<T>, order: Ordering) -> Val<T> {
        self.rmw(AtomicOp::Add, value.into_val(), order_of(order))
    }

    /// Stores `value` and returns the previous value.
    pub fn swap(self, value: impl IntoVal<T>, order: Ordering) -> Val<T> {
        self.rmw(AtomicOp::Swap, value.into_val(), order_of(order))
    }
}

impl<T: AtomicMinMax> Atomic<T> {
    /// Stores the minimum of the element and `value` (for `f32` as `f32::min`: a NaN is
    /// ignored) and returns the previous value.
    pub fn fetch_min(self, value: impl IntoVal<T>, order: Ordering) -> Val<T> {
        self.rmw(AtomicOp::Min, value.into_val(), order_of(order))
    }

    /// Stores the maximum (as [`Atomic::fetch_min`]) and returns the previous value.
    pub fn fetch_max(self, value: impl IntoVal<T>, order: Ordering) -> Val<T> {
        self.rmw(AtomicOp::Max, value.into_val(), order_of(order))
    }
}

impl<T: AtomicInt> Atomic<T> {
    /// Subtracts `value` (wrapping) and returns the previous value.
    pub fn fetch_sub(self, value: impl IntoVal<T>, order: Ordering) -> Val<T> {
        self.rmw(AtomicOp::Sub, value.into_val(), order_of(order))
    }

    /// Bitwise and; returns the previous value.
    pub fn fetch_and(self, value: impl IntoVal<T>, order: Ordering) -> Val<T> {
        self.rmw(AtomicOp::And, value.into_val(), order_of(order))
    }

    /// Bitwise or; returns the previous value.
    pub fn fetch_or(self, value: impl IntoVal<T>, order: Ordering) -> Val<T> {
        self.rmw(AtomicOp::Or, value.into_val(), order_of(order))
    }

    /// Bitwise xor; returns the previous value.
    pub fn fetch_xor(self, value: impl IntoVal<T>, order: Ordering) -> Val<T> {
        self.rmw(AtomicOp::Xor, value.into_val(), order_of(order))
    }

    /// Stores `new` if the element is `current`. Returns the previous value and whether it
    /// was `current` (Rust's `Ok(previous)` / `Err(previous)`). The operation orders as
    /// `success` when it stores and as `failure` when not; the IR orders both as the stronger
    /// of the two (a `Release` or `AcqRel` failure, which Rust refuses, orders as its load
    /// part, `Relaxed` or `Acquire`).
    pub fn compare_exchange(
        self,
        current: impl IntoVal<T>,
        new: impl IntoVal<T>,
        success: Ordering,
        failure: Ordering,
    ) -> (Val<T>, Val<bool>) {
        let (current, new) = (current.into_val(), new.into_val());
        let order = join(order_of(success), order_of(failure));
        let scope = self.scope;
        let h = with_tracer(|t| {
            let p = t.value(self.ptr.handle(), "compare_exchange", Ptr::<T>::ir_type);
            let e = t.value(current.handle(), "compare_exchange", Val::<T>::ir_type);
            let n = t.value(new.handle(), "compare_exchange", Val::<T>::ir_type);
            t.build(|b| b.atomic_cas(p, e, n, order, scope))
        });
        let old = Val::<T>::from_handle(h.unwrap_or_else(|| {
            let (e, n) = (
                current.handle().bits("compare_exchange"),
                new.handle().bits("compare_exchange"),
            );
            let addr = direct_element(self.ptr, "compare_exchange");
            // SAFETY: as in `rmw`.
            let old = unsafe {
                nacre_backend::atomic::rmw(addr, T::SCALAR, order, |old| {
                    (u128::from(old) == e).then_some(n as u64)
                })
            };
            Handle::direct_word(old)
        }));
        let ok = old.eq(current);
        (old, ok)
    }
}

/// The weakest ordering that is at least `success` on a store and at least `failure` on the
/// load of a failed exchange.
fn join(success: MemOrder, failure: MemOrder) -> MemOrder {
    use MemOrder::*;
    match (success, failure) {
        (SeqCst, _) | (_, SeqCst) => SeqCst,
        (s, Relaxed | Release) => s,
        (Relaxed | Acquire, Acquire | AcqRel) => Acquire,
        (Release | AcqRel, Acquire | AcqRel) => AcqRel,
    }
}

/// The address of an atomic's element in direct mode, checked to lie in writable memory lent
/// to the current direct call (a trap otherwise, as for a store).
fn direct_element<T: ScalarValue>(p: Ptr<T>, operation: &'static str) -> u64 {
    let addr = p.handle().word(operation);
    if let Err(trap) = crate::region::check(addr as usize, T::SCALAR.bytes() as usize, true) {
        crate::val::direct_trap(trap)
    }
    addr
}

fn fence_with(order: Ordering, scope: Scope) {
    // A relaxed fence orders nothing (Rust refuses it): no instruction.
    let order = match order_of(order) {
        MemOrder::Relaxed => return,
        o => o,
    };
    let traced = with_tracer(|t| {
        let fs = t.func();
        let mut b = fs.builder();
        b.fence(order, scope);
        fs.current = b.current_block();
    });
    if traced.is_none() {
        std::sync::atomic::fence(order.to_std());
    }
}

/// A memory fence among all threads of the device and the host (`std::sync::atomic::fence`,
/// CUDA's `__threadfence`). `Relaxed` orders nothing.
pub fn fence(order: Ordering) {
    fence_with(order, Scope::Device)
}

/// A memory fence among the threads of the calling thread's block (`__threadfence_block`).
pub fn fence_block(order: Ordering) {
    fence_with(order, Scope::Block)
}
