//! [`Device`]: the seam through which a GPU runtime provides memory, and [`CpuDevice`], the
//! host implementation.
//!
//! Every [`crate::Array`] is allocated on a device. Memory is *unified*: the host reads and
//! writes it through ordinary pointers, and kernels receive the same pointers. A device can
//! move pages between host and device around accesses through the two hooks: CUDA (managed
//! memory) prefetches to the GPU before a launch and back before host access; Metal wraps
//! page-aligned host memory without copying; on the CPU both hooks do nothing.

use crate::error::MemoryError;
use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

/// A provider of unified memory.
pub trait Device: Send + Sync {
    /// The device's name (`cpu`, `cuda:0`, ...), as recorded in the size table and shown in
    /// errors.
    fn name(&self) -> &str;

    /// Allocates `bytes` bytes of zeroed memory, usable from the host and from kernels,
    /// aligned to at least 4096 bytes. `bytes` may be 0: the result is then a distinct
    /// address that must still be freed.
    fn alloc_unified(&self, bytes: usize) -> Result<NonNull<u8>, MemoryError>;

    /// Allocates `data.len()` bytes holding a copy of `data`, like [`Device::alloc_unified`]
    /// followed by a host write of `data`, which is what it does by default. A device whose
    /// kernels want the memory elsewhere can copy it there directly instead.
    fn alloc_unified_copy(&self, data: &[u8]) -> Result<NonNull<u8>, MemoryError> {
        let ptr = self.alloc_unified(data.len())?;
        self.prepare_host_access(ptr.as_ptr(), data.len());
        // SAFETY: `ptr` holds `data.len()` bytes just allocated, which nothing else uses yet.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), ptr.as_ptr(), data.len()) };
        Ok(ptr)
    }

    /// Frees memory allocated by [`Device::alloc_unified`] or [`Device::alloc_unified_copy`].
    ///
    /// # Safety
    /// `ptr` must come from an allocation of this device with the same `bytes`, must not
    /// have been freed already, and must not be used afterwards.
    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize);

    /// Called before the host accesses `bytes` bytes at `ptr` (a device can migrate pages
    /// back to the host here). Does nothing by default.
    fn prepare_host_access(&self, ptr: *const u8, bytes: usize) {
        let _ = (ptr, bytes);
    }

    /// Called before a kernel accesses `bytes` bytes at `ptr` (a device can prefetch the pages
    /// here). Does nothing by default.
    fn prepare_device_access(&self, ptr: *const u8, bytes: usize) {
        let _ = (ptr, bytes);
    }
}

/// The host as a device: page-aligned, zeroed memory from the global allocator.
#[derive(Copy, Clone, Debug, Default)]
pub struct CpuDevice;

/// The alignment of every [`CpuDevice`] allocation (one page).
pub const PAGE_BYTES: usize = 4096;

impl CpuDevice {
    /// The shared default device that [`crate::Array::alloc_unified`] allocates on.
    pub fn shared() -> Arc<dyn Device> {
        static DEVICE: OnceLock<Arc<dyn Device>> = OnceLock::new();
        DEVICE.get_or_init(|| Arc::new(CpuDevice)).clone()
    }

    /// The layout of an allocation of `bytes` bytes (at least one byte, so that empty arrays
    /// get a real, distinct address).
    fn layout(bytes: usize) -> Result<Layout, MemoryError> {
        Layout::from_size_align(bytes.max(1), PAGE_BYTES).map_err(|_| MemoryError::TooLarge {
            len: bytes,
            elem_bytes: 1,
        })
    }
}

impl Device for CpuDevice {
    fn name(&self) -> &str {
        "cpu"
    }

    fn alloc_unified(&self, bytes: usize) -> Result<NonNull<u8>, MemoryError> {
        let layout = CpuDevice::layout(bytes)?;
        // SAFETY: the layout has a nonzero size.
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        NonNull::new(ptr).ok_or_else(|| MemoryError::OutOfMemory {
            bytes,
            device: self.name().to_string(),
        })
    }

    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize) {
        // `alloc_unified` succeeded with this size, so the layout is valid.
        if let Ok(layout) = CpuDevice::layout(bytes) {
            // SAFETY: the caller guarantees `ptr` was allocated by `alloc_unified` with
            // `bytes`, i.e. with this layout, and is not freed twice.
            unsafe { alloc::dealloc(ptr.as_ptr(), layout) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_zeroed_and_page_aligned() {
        let dev = CpuDevice;
        for bytes in [0, 1, 100, 4096, 10_000] {
            let p = dev.alloc_unified(bytes).unwrap();
            assert_eq!(p.as_ptr() as usize % PAGE_BYTES, 0);
            // SAFETY: `p` holds `bytes` initialised (zeroed) bytes.
            let s = unsafe { std::slice::from_raw_parts(p.as_ptr(), bytes) };
            assert!(s.iter().all(|&b| b == 0));
            // SAFETY: allocated above with the same size, freed once.
            unsafe { dev.free(p, bytes) };
        }
    }

    #[test]
    fn impossible_sizes_are_errors() {
        let err = CpuDevice.alloc_unified(usize::MAX - 10).unwrap_err();
        assert!(matches!(err, MemoryError::TooLarge { .. }), "{err}");
        // Representable but far beyond any machine's memory.
        let err = CpuDevice.alloc_unified(1 << 60).unwrap_err();
        assert!(matches!(err, MemoryError::OutOfMemory { .. }), "{err}");
        assert!(err.to_string().contains("smaller batches"));
    }
}
