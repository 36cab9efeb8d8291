//! [`Ptr<T>`]: a traced pointer to elements of `T`.
//!
//! Pointers reach traced code only as parameters of the traced function (the caller passes
//! them through the `unsafe` [`RawPtr::new`], vouching for every access), or derived from one
//! by pointer arithmetic. Loads and stores in direct mode access that memory directly.

use crate::context::with_tracer;
use crate::val::{raw_of, value_of, Index, IntoVal, Val};
use nacre_ir::semantics::{self, ScalarValue};
use nacre_ir::{CmpOp, Type};
use std::fmt;
use std::marker::PhantomData;

/// A traced pointer to elements of type `T`.
pub struct Ptr<T: ScalarValue> {
    raw: u64,
    _t: PhantomData<fn() -> T>,
}

impl<T: ScalarValue> Clone for Ptr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: ScalarValue> Copy for Ptr<T> {}

impl<T: ScalarValue> fmt::Debug for Ptr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if crate::is_tracing() {
            write!(f, "Ptr<{}>({})", T::SCALAR, value_of(self.raw))
        } else {
            write!(f, "Ptr({:#x})", self.raw)
        }
    }
}

/// A pointer argument for a compiled function (the host-side value of a [`Ptr<T>`] parameter).
#[derive(Debug)]
pub struct RawPtr<T> {
    ptr: *mut T,
}

impl<T> Clone for RawPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for RawPtr<T> {}

// SAFETY: a RawPtr is an address; whoever created it vouched (in `RawPtr::new`) that the
// compiled code may access the memory, from whichever thread calls it.
unsafe impl<T> Send for RawPtr<T> {}
// SAFETY: see `Send`; the pointer is never dereferenced through a shared `RawPtr`.
unsafe impl<T> Sync for RawPtr<T> {}

impl<T> RawPtr<T> {
    /// Wraps a pointer for a call of a compiled function.
    ///
    /// # Safety
    /// Every load and store the traced function performs through this pointer (at whatever
    /// index it computes) must be in bounds of a live allocation of `T`s for the duration of
    /// the call, and must not race with other accesses.
    pub unsafe fn new(ptr: *mut T) -> RawPtr<T> {
        RawPtr { ptr }
    }

    /// The pointer.
    pub fn as_ptr(self) -> *mut T {
        self.ptr
    }
}

impl<T: ScalarValue> Ptr<T> {
    pub(crate) fn from_raw(raw: u64) -> Ptr<T> {
        Ptr {
            raw,
            _t: PhantomData,
        }
    }

    pub(crate) fn raw(self) -> u64 {
        self.raw
    }

    /// The IR type of this pointer.
    pub fn ir_type() -> Type {
        Type::ptr(T::SCALAR)
    }

    /// The pointer `index` elements further.
    pub fn offset(self, index: impl Index) -> Ptr<T> {
        let index_raw = index.index_raw();
        let raw = with_tracer(|t| {
            let fs = t.func();
            let mut b = fs.builder();
            let v = b.elem_ptr(value_of(self.raw), value_of(index_raw));
            fs.current = b.current_block();
            raw_of(v)
        });
        Ptr::from_raw(raw.unwrap_or_else(|| {
            self.raw
                .wrapping_add((index.index_direct() as u64).wrapping_mul(T::SCALAR.bytes() as u64))
        }))
    }

    /// Loads the element at `index`.
    pub fn load(self, index: impl Index) -> Val<T> {
        let p = self.offset(index);
        let raw = with_tracer(|t| {
            let fs = t.func();
            let mut b = fs.builder();
            let v = b.load(value_of(p.raw));
            fs.current = b.current_block();
            raw_of(v)
        });
        Val::from_raw(raw.unwrap_or_else(|| {
            // SAFETY: direct mode runs the traced function on the pointers its caller passed
            // through `RawPtr::new`, whose contract covers every access the function makes.
            let x = unsafe { std::ptr::read_unaligned(p.raw as usize as *const T) };
            x.to_bits()
        }))
    }

    /// Stores `value` at `index`.
    pub fn store(self, index: impl Index, value: impl IntoVal<T>) {
        let p = self.offset(index);
        let v = value.into_val();
        let traced = with_tracer(|t| {
            let fs = t.func();
            let mut b = fs.builder();
            b.store(value_of(p.raw), value_of(v.raw()));
            fs.current = b.current_block();
        });
        if traced.is_none() {
            // SAFETY: as in `load`: covered by the caller's `RawPtr::new` contract.
            unsafe { std::ptr::write_unaligned(p.raw as usize as *mut T, T::from_bits(v.raw())) }
        }
    }

    /// Loads the element the pointer points at.
    pub fn read(self) -> Val<T> {
        self.load(0i64)
    }

    /// Stores at the element the pointer points at.
    pub fn write(self, value: impl IntoVal<T>) {
        self.store(0i64, value)
    }

    fn compare(self, op: CmpOp, rhs: Ptr<T>) -> Val<bool> {
        let raw = with_tracer(|t| {
            let fs = t.func();
            let mut b = fs.builder();
            let v = b.cmp(op, value_of(self.raw), value_of(rhs.raw));
            fs.current = b.current_block();
            raw_of(v)
        });
        Val::from_raw(
            raw.unwrap_or_else(|| {
                semantics::compare(op, Self::ir_type(), self.raw, rhs.raw) as u64
            }),
        )
    }

    /// True if the pointer is null.
    pub fn is_null(self) -> Val<bool> {
        self.compare(
            CmpOp::Eq,
            Ptr::from_raw(crate::val::constant_raw(Self::ir_type(), 0)),
        )
    }

    /// Address equality.
    pub fn eq(self, rhs: Ptr<T>) -> Val<bool> {
        self.compare(CmpOp::Eq, rhs)
    }
    /// Address inequality.
    pub fn ne(self, rhs: Ptr<T>) -> Val<bool> {
        self.compare(CmpOp::Ne, rhs)
    }
    /// Address order `<`.
    pub fn lt(self, rhs: Ptr<T>) -> Val<bool> {
        self.compare(CmpOp::Lt, rhs)
    }
    /// Address order `<=`.
    pub fn le(self, rhs: Ptr<T>) -> Val<bool> {
        self.compare(CmpOp::Le, rhs)
    }
    /// Address order `>`.
    pub fn gt(self, rhs: Ptr<T>) -> Val<bool> {
        self.compare(CmpOp::Gt, rhs)
    }
    /// Address order `>=`.
    pub fn ge(self, rhs: Ptr<T>) -> Val<bool> {
        self.compare(CmpOp::Ge, rhs)
    }
}
