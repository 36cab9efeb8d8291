//! [`Ptr<T>`]: a traced pointer to elements of `T`.
//!
//! Pointers reach traced code only as parameters of the traced function (the caller passes
//! them through the `unsafe` [`RawPtr::new`], vouching for every access), or derived from one
//! by pointer arithmetic. Loads and stores in direct mode access that memory directly.
//!
//! # Trace identity
//!
//! Like a [`Val`], a `Ptr` knows the trace it belongs to (a [`Handle`], see
//! [`crate::identity`]): a pointer of another trace, of an enclosing traced function (captured
//! by a function traced through [`cf::call`](crate::cf::call) or
//! [`gpu::launch`](crate::gpu::launch)) or one made outside any trace, used in a trace, fails
//! it with [`TraceError::ForeignValue`](crate::TraceError::ForeignValue) naming the operation
//! (`load`, `store`, `offset`, ...) instead of reaching the verifier as a stray value index;
//! pass the pointer in as a parameter or an argument. A pointer made while tracing and used in
//! direct mode panics with a message that says so (its handle is an IR index, not an address).

use crate::context::with_tracer;
use crate::identity::Handle;
use crate::val::{compare_name, Index, IntoVal, Val};
use nacre_ir::semantics::{self, ScalarValue};
use nacre_ir::{BinaryOp, CmpOp, Const, Scalar, Type};
use std::fmt;
use std::marker::PhantomData;

/// What a [`Ptr<T>`] points to: a scalar, or a `#[repr(C)]` struct of scalars
/// (`#[derive(Record)]`, see [`Record`]).
///
/// # Safety
/// Compiled code reads and writes the memory of `T`s only as the scalars of `POINTEE`-typed
/// pointers `STRIDE` elements apart and, for a record, as its fields at their offsets with
/// their types ([`Record`]): every value it can store there must be a valid `T`, `T` must have
/// no interior mutability, and no padding (arrays of it are copied and zeroed as bytes).
/// `#[derive(Record)]` checks this for a struct.
pub unsafe trait Element: Copy + Send + Sync + 'static {
    /// The IR element type of a pointer to a `T` (a record's pointers are byte pointers).
    const POINTEE: Scalar;
    /// How many IR elements one `T` spans (1 for a scalar, a record's size in bytes).
    const STRIDE: u32;
}

// SAFETY: a scalar is read and written as itself; every bit pattern compiled code stores is a
// valid value of it (a `bool` is only stored as 0 or 1).
unsafe impl<T: ScalarValue> Element for T {
    const POINTEE: Scalar = T::SCALAR;
    const STRIDE: u32 = 1;
}

/// A `#[repr(C)]` struct of scalars in memory: `Ptr<S>` points to one, [`Ptr::fields`] gives
/// a pointer to each field (read, written and offset like any `Ptr`). Implement it with
/// `#[derive(Record)]`, which also generates the `Fields` struct (`{Name}Fields`, one `Ptr`
/// per field, named like the fields).
///
/// # Safety
/// `fields` must give each field's pointer at its offset (`core::mem::offset_of!`) with its
/// type, and the fields must all be scalars.
pub unsafe trait Record: Element {
    /// One pointer per field.
    type Fields: Copy;
    /// The field pointers of the record `p` points to.
    fn fields(p: Ptr<Self>) -> Self::Fields;
}

/// A traced pointer to elements of type `T`, tied to the trace that made it (see the
/// [module docs](self)).
pub struct Ptr<T: Element> {
    h: Handle,
    _t: PhantomData<fn() -> T>,
}

impl<T: Element> Clone for Ptr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Element> Copy for Ptr<T> {}

impl<T: Element> fmt::Debug for Ptr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.h.trace() == 0 {
            write!(f, "Ptr({:#x})", self.h.bits("debug"))
        } else {
            write!(f, "Ptr<{}>({:?})", std::any::type_name::<T>(), self.h)
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

impl<T: Element> Ptr<T> {
    /// Wraps a handle (an IR value of one trace, or a direct address).
    #[inline]
    pub(crate) fn from_handle(h: Handle) -> Ptr<T> {
        Ptr { h, _t: PhantomData }
    }

    /// The handle (see [`Ptr::from_handle`]).
    #[inline]
    pub(crate) fn handle(self) -> Handle {
        self.h
    }

    /// The address in direct mode, read by `operation` (a panic if the pointer was made while
    /// tracing, see the [module docs](self)).
    #[inline]
    fn bits(self, operation: &'static str) -> u64 {
        self.h.word(operation)
    }

    /// The IR type of this pointer.
    pub fn ir_type() -> Type {
        Type::ptr(T::POINTEE)
    }

    /// The pointer `index` elements further.
    pub fn offset(self, index: impl Index) -> Ptr<T> {
        self.offset_for(index, "offset")
    }

    /// [`Ptr::offset`] on behalf of `operation` (the name a foreign pointer is reported under).
    pub(crate) fn offset_for(self, index: impl Index, operation: &'static str) -> Ptr<T> {
        let index_h = index.index_raw();
        let h = with_tracer(|t| {
            let p = t.value(self.h, operation, Self::ir_type);
            let i = t.value(index_h, "pointer index", || index.index_type());
            t.build(|b| {
                let i = match T::STRIDE {
                    1 => i,
                    // A record's pointer is a byte pointer: scale the index by its size.
                    stride => {
                        let wide = b.cast(i, Type::I64);
                        let size = b.constant(Const {
                            ty: Type::I64,
                            bits: u128::from(stride),
                        });
                        b.binary(BinaryOp::Mul, wide, size)
                    }
                };
                b.elem_ptr(p, i)
            })
        });
        Ptr::from_handle(h.unwrap_or_else(|| {
            let size = u64::from(T::STRIDE) * T::POINTEE.bytes() as u64;
            let bytes = (index.index_direct() as u64).wrapping_mul(size);
            Handle::direct_word(self.bits(operation).wrapping_add(bytes))
        }))
    }
}

impl<T: Element> Ptr<T> {
    /// The pointer to address `addr` (a `u64` the traced code loaded or computed: a table of
    /// addresses that a host program fills, such as a query's columns).
    ///
    /// # Safety
    /// The pointer carries no bounds: a checked module cannot check its accesses, so use it in
    /// functions compiled with `Engine::compile_unchecked`, whose caller guarantees that every
    /// access through it is in bounds of live memory of `T`s. In direct mode a call may touch
    /// only its arguments' memory, so accesses through such a pointer are refused there
    /// (`Trap::OutOfBounds`).
    pub unsafe fn from_addr(addr: Val<u64>) -> Ptr<T> {
        let raw = addr.handle();
        let h = with_tracer(|t| {
            let a = t.value(raw, "from_addr", || Type::Scalar(Scalar::U64));
            t.build(|b| b.cast(a, Self::ir_type()))
        });
        Ptr::from_handle(h.unwrap_or_else(|| Handle::direct_word(raw.word("from_addr"))))
    }
}

impl<S: Record> Ptr<S> {
    /// A pointer to each field of the record this points to.
    pub fn fields(self) -> S::Fields {
        S::fields(self)
    }

    /// The pointer to the field of type `F` at byte `offset` of the record this points to
    /// (what `#[derive(Record)]`'s `fields` is made of).
    ///
    /// # Safety
    /// `S` must have a field of type `F` at byte `offset`.
    pub unsafe fn field<F: ScalarValue>(self, offset: u32) -> Ptr<F> {
        let h = with_tracer(|t| {
            let p = t.value(self.h, "field", Self::ir_type);
            t.build(|b| {
                let off = b.const_u64(u64::from(offset));
                let at = b.elem_ptr(p, off);
                b.cast(at, Ptr::<F>::ir_type())
            })
        });
        Ptr::from_handle(h.unwrap_or_else(|| {
            Handle::direct_word(self.bits("field").wrapping_add(u64::from(offset)))
        }))
    }
}

impl<T: ScalarValue> Ptr<T> {
    /// Loads the element at `index`.
    pub fn load(self, index: impl Index) -> Val<T> {
        let p = self.offset_for(index, "load");
        let h = with_tracer(|t| {
            let a = t.value(p.h, "load", Self::ir_type);
            t.build(|b| b.load(a))
        });
        Val::from_handle(h.unwrap_or_else(|| {
            let addr = p.bits("load");
            let size = T::SCALAR.bytes() as usize;
            if let Err(trap) = crate::region::check(addr as usize, size, false) {
                crate::val::direct_trap(trap)
            }
            // SAFETY: the access lies in memory the caller lent to this direct call (checked
            // just above), live and not written elsewhere for the call's duration.
            let x = unsafe { std::ptr::read_unaligned(addr as usize as *const T) };
            Handle::direct(x.to_bits())
        }))
    }

    /// Stores `value` at `index`.
    pub fn store(self, index: impl Index, value: impl IntoVal<T>) {
        let p = self.offset_for(index, "store");
        let v = value.into_val();
        let traced = with_tracer(|t| {
            let a = t.value(p.h, "store", Self::ir_type);
            let x = t.value(v.handle(), "store", Val::<T>::ir_type);
            let fs = t.func();
            let mut b = fs.builder();
            b.store(a, x);
            fs.current = b.current_block();
        });
        if traced.is_none() {
            let (addr, bits) = (p.bits("store"), v.bits("store"));
            let size = T::SCALAR.bytes() as usize;
            if let Err(trap) = crate::region::check(addr as usize, size, true) {
                crate::val::direct_trap(trap)
            }
            // SAFETY: as in `load`; the region was lent writable (checked just above).
            unsafe { std::ptr::write_unaligned(addr as usize as *mut T, T::from_bits(bits)) }
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
        let name = compare_name(op);
        let h = with_tracer(|t| {
            let a = t.value(self.h, name, Self::ir_type);
            let b = t.value(rhs.h, name, Self::ir_type);
            t.build(|bld| bld.cmp(op, a, b))
        });
        Val::from_handle(h.unwrap_or_else(|| {
            let (a, b) = (self.bits(name), rhs.bits(name));
            Handle::direct(u128::from(semantics::compare(
                op,
                Self::ir_type(),
                a.into(),
                b.into(),
            )))
        }))
    }

    /// True if the pointer is null.
    pub fn is_null(self) -> Val<bool> {
        self.compare(
            CmpOp::Eq,
            Ptr::from_handle(crate::val::constant_raw(Self::ir_type(), 0)),
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
