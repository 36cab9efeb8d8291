//! [`Array<T>`]: a buffer of unified memory, the one way data reaches kernels.
//!
//! An array is either *owned* (allocated on a [`Device`] by [`Array::alloc_unified`],
//! [`Array::alloc_on`] or [`Array::copy`], freed on drop or by [`Array::free`]) or *wrapped*
//! (existing memory made visible to launches by the `unsafe` [`Array::wrap`], never freed by
//! Nacre). Either way it is registered in the size table ([`crate::memory`]) for exactly as
//! long as it lives, and a launch accepts a pointer argument only if it lies in a registered
//! array: an array freed before a launch that uses it makes the launch fail with
//! [`nacre_ir::Trap::UnknownBuffer`] instead of touching freed memory.
//!
//! Kernels receive an array as the pointer [`Array::ptr`] and index it **unchecked**, like
//! CUDA and Metal kernels do: the launch checks that the pointer lies in a live array, not
//! that the kernel's indices stay inside it.

use crate::device::{CpuDevice, Device};
use crate::error::MemoryError;
use crate::memory::{self, Entry};
use nacre_trace::{Element, RawPtr};
use std::fmt;
use std::mem::{align_of, size_of, ManuallyDrop};
use std::ptr::NonNull;
use std::sync::Arc;

/// A buffer of `len` elements of `T` in unified memory, registered in the size table while
/// it lives.
pub struct Array<T: Element> {
    ptr: NonNull<T>,
    len: usize,
    device: Arc<dyn Device>,
    owned: bool,
}

// SAFETY: an array owns (or, when wrapped, was vouched by `wrap`'s caller to exclusively
// represent) its memory; moving it to another thread moves that access with it. `T` is
// `Send + Sync` (an `Element` bound), the device is `Send + Sync`.
unsafe impl<T: Element + Send> Send for Array<T> {}
// SAFETY: shared access only reads through `as_slice`; writes need `&mut self`.
unsafe impl<T: Element + Sync> Sync for Array<T> {}

/// The size in bytes of `len` elements of `T`, or an error if it overflows.
fn byte_len<T>(len: usize) -> Result<usize, MemoryError> {
    len.checked_mul(size_of::<T>())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or(MemoryError::TooLarge {
            len,
            elem_bytes: size_of::<T>(),
        })
}

impl<T: Element> Array<T> {
    /// Allocates `len` zeroed elements on the default device (the host).
    pub fn alloc_unified(len: usize) -> Result<Array<T>, MemoryError> {
        Array::alloc_on(CpuDevice::shared(), len)
    }

    /// Allocates `len` zeroed elements on `device`.
    pub fn alloc_on(device: Arc<dyn Device>, len: usize) -> Result<Array<T>, MemoryError> {
        let bytes = byte_len::<T>(len)?;
        let raw = device.alloc_unified(bytes)?;
        Array::adopt(device, raw, len, bytes)
    }

    /// Registers `len` elements (`bytes` bytes) just allocated at `raw` by `device` as an
    /// owned array, freeing them if that fails.
    fn adopt(
        device: Arc<dyn Device>,
        raw: NonNull<u8>,
        len: usize,
        bytes: usize,
    ) -> Result<Array<T>, MemoryError> {
        let entry = Entry {
            bytes,
            device: device.name().to_string(),
            owned: true,
        };
        if let Err(e) = memory::register(raw.as_ptr() as usize, entry) {
            // SAFETY: just allocated with this size, never handed out.
            unsafe { device.free(raw, bytes) };
            return Err(e);
        }
        Ok(Array {
            ptr: raw.cast(),
            len,
            device,
            owned: true,
        })
    }

    /// Allocates an array on the default device holding a copy of `data`.
    pub fn copy(data: &[T]) -> Result<Array<T>, MemoryError> {
        Array::copy_on(CpuDevice::shared(), data)
    }

    /// Allocates an array on `device` holding a copy of `data`.
    pub fn copy_on(device: Arc<dyn Device>, data: &[T]) -> Result<Array<T>, MemoryError> {
        let bytes = byte_len::<T>(data.len())?;
        // SAFETY: `data` is `bytes` initialised bytes: an `Element` has no padding (its
        // contract: a scalar, or a record whose fields fill it).
        let raw_data = unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), bytes) };
        let raw = device.alloc_unified_copy(raw_data)?;
        Array::adopt(device, raw, data.len(), bytes)
    }

    /// Makes `len` elements of existing memory at `ptr` usable by launches, without copying.
    /// The array does not own the memory: dropping or freeing it only unregisters it.
    ///
    /// Fails if `ptr` is null or misaligned, if the size overflows, or if the memory overlaps
    /// a live array (wrap memory once, and keep using that array).
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `len` elements of `T` for as long as the
    /// returned array lives, and while it lives that memory must be accessed only through it
    /// (its slices and the kernels it is passed to).
    pub unsafe fn wrap(ptr: *mut T, len: usize) -> Result<Array<T>, MemoryError> {
        let bytes = byte_len::<T>(len)?;
        let addr = ptr as usize;
        let nn = NonNull::new(ptr)
            .filter(|_| addr.is_multiple_of(align_of::<T>()))
            .ok_or(MemoryError::BadPointer {
                addr,
                len,
                align: align_of::<T>(),
            })?;
        let device = CpuDevice::shared();
        let entry = Entry {
            bytes,
            device: device.name().to_string(),
            owned: false,
        };
        memory::register(addr, entry)?;
        Ok(Array {
            ptr: nn,
            len,
            device,
            owned: false,
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// True if the array owns its memory (allocated, not wrapped).
    pub fn is_owned(&self) -> bool {
        self.owned
    }

    /// The device holding the memory.
    pub fn device(&self) -> &Arc<dyn Device> {
        &self.device
    }

    /// The elements, for reading on the host.
    pub fn as_slice(&self) -> &[T] {
        self.device
            .prepare_host_access(self.ptr.as_ptr().cast(), self.bytes());
        // SAFETY: the memory holds `len` initialised elements (zeroed or copied at
        // allocation, or vouched for by `wrap`'s caller) and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The elements, for reading and writing on the host.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self.device
            .prepare_host_access(self.ptr.as_ptr().cast(), self.bytes());
        // SAFETY: as in `as_slice`; `&mut self` makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The base address as a raw pointer.
    pub fn as_ptr(&self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// The value to pass for a `Ptr<T>` parameter of a compiled function or kernel.
    ///
    /// Kernels index it unchecked: a launch verifies only that the pointer lies in a live
    /// array, so indices outside `0..len` read or write memory that does not belong to the
    /// array, exactly as on a GPU. Keep the array alive, and do not hold slices of it, while
    /// compiled code that received this pointer runs.
    pub fn ptr(&self) -> RawPtr<T> {
        // SAFETY: the pointer addresses `len` live elements for as long as the array lives;
        // the documented contract above (unchecked kernel indexing) is that of every GPU
        // buffer, and launches reject the pointer once the array is gone.
        unsafe { RawPtr::new(self.ptr.as_ptr()) }
    }

    /// Unregisters the array and frees its memory (if owned), reporting failures instead of
    /// ignoring them as a drop does.
    pub fn free(self) -> Result<(), MemoryError> {
        let this = ManuallyDrop::new(self);
        this.release()
    }

    /// Unregisters first, so that no launch can accept the pointer once the memory is gone,
    /// then frees owned memory.
    fn release(&self) -> Result<(), MemoryError> {
        let base = self.ptr.as_ptr() as usize;
        memory::unregister(base)?;
        if self.owned {
            // SAFETY: allocated by `self.device` with `bytes()` bytes (`alloc_on`), and the
            // table entry just removed guarantees this is the only release.
            unsafe { self.device.free(self.ptr.cast(), self.bytes()) };
        }
        Ok(())
    }
}

impl<T: Element> Drop for Array<T> {
    fn drop(&mut self) {
        // An entry that is already gone means the memory was released by other means; not
        // freeing it again is the only safe choice, and a destructor cannot report.
        let _ = self.release();
    }
}

impl<T: Element> fmt::Debug for Array<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Array")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .field("device", &self.device.name())
            .field("owned", &self.owned)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{buffer_bytes, find_buffer};

    #[test]
    fn alloc_is_zeroed_and_registered() {
        let a = Array::<f32>::alloc_unified(1000).unwrap();
        assert_eq!(a.len(), 1000);
        assert_eq!(a.bytes(), 4000);
        assert!(a.as_slice().iter().all(|&x| x == 0.0));
        let base = a.as_ptr() as usize;
        assert_eq!(buffer_bytes(base), Some(4000));
        assert_eq!(find_buffer(base + 400), Some((base, 4000)));
        drop(a);
        assert_eq!(buffer_bytes(base), None);
    }

    #[test]
    fn overflowing_sizes_are_errors() {
        let err = Array::<u64>::alloc_unified(usize::MAX / 4).unwrap_err();
        assert!(
            matches!(err, MemoryError::TooLarge { elem_bytes: 8, .. }),
            "{err}"
        );
    }
}
