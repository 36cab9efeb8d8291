//! Block-shared arrays of two and three dimensions: [`Shared2`] (`H` rows of `W`) and
//! [`Shared3`] (`D` planes of `H` rows of `W`), row-major, indexed `a[(y, x)]` and
//! `a[(z, y, x)]` in `#[kernel]` code (as `__shared__ T a[H][W]`).
//!
//! Every index is checked against its own dimension, as Rust checks `[[T; W]; H]`: an index
//! past its dimension (an `x` of `W` or more, even with the flat position still inside the
//! array) becomes a position past the end, which the shared array's bounds check traps
//! (`Trap::OutOfBounds`), so a wrong row is never read silently.

use crate::cf::{PtrIndexRead, PtrIndexWrite};
use crate::gpu::shared_alloc;
use crate::ptr::Ptr;
use crate::val::{select, IntoVal, Val};
use nacre_ir::semantics::ScalarValue;

/// A block-shared array of `H` rows of `W` elements of `T` (see the [module docs](self)).
pub struct Shared2<T: ScalarValue, const H: usize, const W: usize> {
    base: Ptr<T>,
}

/// A block-shared array of `D` planes of `H` rows of `W` elements of `T` (see the
/// [module docs](self)).
pub struct Shared3<T: ScalarValue, const D: usize, const H: usize, const W: usize> {
    base: Ptr<T>,
}

impl<T: ScalarValue, const H: usize, const W: usize> Clone for Shared2<T, H, W> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: ScalarValue, const H: usize, const W: usize> Copy for Shared2<T, H, W> {}
impl<T: ScalarValue, const D: usize, const H: usize, const W: usize> Clone for Shared3<T, D, H, W> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: ScalarValue, const D: usize, const H: usize, const W: usize> Copy for Shared3<T, D, H, W> {}

/// A block-shared array of `H` rows of `W` elements (`__shared__ T a[H][W]`); each call site
/// is its own array.
pub fn shared_array_2d<T: ScalarValue, const H: usize, const W: usize>() -> Shared2<T, H, W> {
    Shared2 {
        base: shared_alloc::<T>(H * W),
    }
}

/// A block-shared array of `D` planes of `H` rows of `W` elements (`__shared__ T a[D][H][W]`).
pub fn shared_array_3d<T: ScalarValue, const D: usize, const H: usize, const W: usize>(
) -> Shared3<T, D, H, W> {
    Shared3 {
        base: shared_alloc::<T>(D * H * W),
    }
}

/// `index` when it is below `len`, else the array's end (`total`): a position the bounds
/// check refuses.
fn within(index: Val<u32>, len: usize, total: usize, flat: Val<u32>) -> Val<u32> {
    select(index.lt(len as u32), flat, total as u32)
}

impl<T: ScalarValue, const H: usize, const W: usize> Shared2<T, H, W> {
    /// The flat position of `(y, x)`, or the end when either is out of its dimension.
    fn position(self, y: Val<u32>, x: Val<u32>) -> Val<u32> {
        let flat = y * W as u32 + x;
        let flat = within(x, W, H * W, flat);
        within(y, H, H * W, flat)
    }

    /// The first element, as a flat pointer of `H * W` elements.
    pub fn as_ptr(self) -> Ptr<T> {
        self.base
    }
}

impl<T: ScalarValue, const D: usize, const H: usize, const W: usize> Shared3<T, D, H, W> {
    /// The flat position of `(z, y, x)`, or the end when one is out of its dimension.
    fn position(self, z: Val<u32>, y: Val<u32>, x: Val<u32>) -> Val<u32> {
        let total = D * H * W;
        let flat = (z * H as u32 + y) * W as u32 + x;
        let flat = within(x, W, total, flat);
        let flat = within(y, H, total, flat);
        within(z, D, total, flat)
    }

    /// The first element, as a flat pointer of `D * H * W` elements.
    pub fn as_ptr(self) -> Ptr<T> {
        self.base
    }
}

impl<T: ScalarValue, const H: usize, const W: usize, Y: IntoVal<u32>, X: IntoVal<u32>>
    PtrIndexRead<(Y, X)> for Shared2<T, H, W>
{
    type Output = Val<T>;
    fn nacre_index(&self, (y, x): (Y, X)) -> Val<T> {
        self.base.load(self.position(y.into_val(), x.into_val()))
    }
}

impl<T: ScalarValue, const H: usize, const W: usize, Y: IntoVal<u32>, X: IntoVal<u32>, V>
    PtrIndexWrite<(Y, X), V> for Shared2<T, H, W>
where
    V: IntoVal<T>,
{
    fn nacre_index_set(&self, (y, x): (Y, X), value: V) {
        self.base
            .store(self.position(y.into_val(), x.into_val()), value)
    }
}

impl<T, const D: usize, const H: usize, const W: usize, Z, Y, X> PtrIndexRead<(Z, Y, X)>
    for Shared3<T, D, H, W>
where
    T: ScalarValue,
    Z: IntoVal<u32>,
    Y: IntoVal<u32>,
    X: IntoVal<u32>,
{
    type Output = Val<T>;
    fn nacre_index(&self, (z, y, x): (Z, Y, X)) -> Val<T> {
        let at = self.position(z.into_val(), y.into_val(), x.into_val());
        self.base.load(at)
    }
}

impl<T, const D: usize, const H: usize, const W: usize, Z, Y, X, V> PtrIndexWrite<(Z, Y, X), V>
    for Shared3<T, D, H, W>
where
    T: ScalarValue,
    Z: IntoVal<u32>,
    Y: IntoVal<u32>,
    X: IntoVal<u32>,
    V: IntoVal<T>,
{
    fn nacre_index_set(&self, (z, y, x): (Z, Y, X), value: V) {
        let at = self.position(z.into_val(), y.into_val(), x.into_val());
        self.base.store(at, value)
    }
}
