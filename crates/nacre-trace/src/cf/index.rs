//! Indexing: `a[i]` reads and `a[i] = v` writes, through a [`Ptr`] (recorded as loads and
//! stores) or on Rust containers (plain `Index`/`IndexMut`).

use crate::identity::Handle;
use crate::ptr::Ptr;
use crate::val::{Index, IntoVal, Val};
use nacre_ir::semantics::ScalarValue;
use nacre_ir::Type;

/// Reading `ptr[index]` through a [`Ptr`]. `#[jit]` rewrites `a[i]` in value position to
/// `a.nacre_index(i)`, which resolves to this trait or to [`HostIndexRead`].
pub trait PtrIndexRead<I> {
    /// The element.
    type Output;
    /// Reads the element.
    fn nacre_index(&self, index: I) -> Self::Output;
}

/// An index already resolved to its traced handle and its direct-mode value. A plain integer
/// index creates an IR constant in `index_raw`, which must not happen while `Ptr::offset`
/// holds the tracer, so the index traits resolve it first.
#[derive(Copy, Clone)]
struct ResolvedIndex {
    raw: Handle,
    direct: i64,
    ty: Type,
}

impl ResolvedIndex {
    fn new(index: impl Index) -> ResolvedIndex {
        let raw = index.index_raw();
        ResolvedIndex {
            raw,
            // Only read in direct mode (reading a traced index's bits there is an error).
            direct: if raw.trace() == 0 {
                index.index_direct()
            } else {
                0
            },
            ty: index.index_type(),
        }
    }
}

impl Index for ResolvedIndex {
    fn index_raw(self) -> Handle {
        self.raw
    }
    fn index_direct(self) -> i64 {
        if self.raw.trace() != 0 {
            // A traced index used in direct mode: report it as such.
            self.raw.bits("pointer index");
        }
        self.direct
    }
    fn index_type(self) -> Type {
        self.ty
    }
}

impl<T: ScalarValue, I: Index> PtrIndexRead<I> for Ptr<T> {
    type Output = Val<T>;
    fn nacre_index(&self, index: I) -> Val<T> {
        self.load(ResolvedIndex::new(index))
    }
}

/// Reading `container[index]` (a `Copy` element) for Rust containers.
pub trait HostIndexRead<I> {
    /// The element.
    type Output;
    /// Reads the element.
    fn nacre_index(&self, index: I) -> Self::Output;
}

impl<C: ?Sized + std::ops::Index<I>, I> HostIndexRead<I> for C
where
    C::Output: Copy + Sized,
{
    type Output = C::Output;
    fn nacre_index(&self, index: I) -> C::Output {
        self[index]
    }
}

/// Writing `ptr[index] = value` through a [`Ptr`] (which need not be `mut`).
pub trait PtrIndexWrite<I, V> {
    /// Stores the element.
    fn nacre_index_set(&self, index: I, value: V);
}

impl<T: ScalarValue, I: Index, V: IntoVal<T>> PtrIndexWrite<I, V> for Ptr<T> {
    fn nacre_index_set(&self, index: I, value: V) {
        self.store(ResolvedIndex::new(index), value)
    }
}

/// Writing `container[index] = value` for Rust containers.
pub trait HostIndexWrite<I, V> {
    /// Stores the element.
    fn nacre_index_set(&mut self, index: I, value: V);
}

impl<C: ?Sized + std::ops::IndexMut<I>, I> HostIndexWrite<I, C::Output> for C
where
    C::Output: Sized,
{
    fn nacre_index_set(&mut self, index: I, value: C::Output) {
        self[index] = value;
    }
}
