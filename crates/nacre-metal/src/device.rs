//! [`MetalDevice`]: unified memory for Metal, as whole pages of host memory.
//!
//! On Apple GPUs host and GPU share memory, so an array is ordinary host memory that a launch
//! wraps with `newBufferWithBytesNoCopy` (see [`crate::layout`]). That call needs a
//! page-aligned pointer and a length in whole pages, so every allocation is aligned to, and
//! rounded up to, [`METAL_PAGE_BYTES`]: 16 KiB, the page size of Apple silicon and a multiple
//! of the 4 KiB pages of Intel Macs. Nothing here calls Metal, so the device works (and is
//! tested) on every platform; only launches need macOS.

use nacre_runtime::{Device, MemoryError};
use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

/// The alignment and size granularity of [`MetalDevice`] allocations.
pub const METAL_PAGE_BYTES: usize = 16 * 1024;

/// Page-aligned host memory in whole pages, wrapped by Metal launches without copying.
#[derive(Copy, Clone, Debug, Default)]
pub struct MetalDevice;

impl MetalDevice {
    /// The shared instance.
    pub fn shared() -> Arc<dyn Device> {
        static DEVICE: OnceLock<Arc<dyn Device>> = OnceLock::new();
        DEVICE.get_or_init(|| Arc::new(MetalDevice)).clone()
    }

    /// The layout of an allocation of `bytes` bytes: whole pages, at least one.
    fn layout(bytes: usize) -> Result<Layout, MemoryError> {
        bytes
            .max(1)
            .div_ceil(METAL_PAGE_BYTES)
            .checked_mul(METAL_PAGE_BYTES)
            .and_then(|size| Layout::from_size_align(size, METAL_PAGE_BYTES).ok())
            .ok_or(MemoryError::TooLarge {
                len: bytes,
                elem_bytes: 1,
            })
    }
}

impl Device for MetalDevice {
    fn name(&self) -> &str {
        "metal"
    }

    fn alloc_unified(&self, bytes: usize) -> Result<NonNull<u8>, MemoryError> {
        let layout = MetalDevice::layout(bytes)?;
        // SAFETY: the layout has a nonzero size (at least one page).
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        NonNull::new(ptr).ok_or_else(|| MemoryError::OutOfMemory {
            bytes,
            device: self.name().to_string(),
        })
    }

    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize) {
        // `alloc_unified` succeeded with this size, so the layout is valid.
        if let Ok(layout) = MetalDevice::layout(bytes) {
            // SAFETY: the caller guarantees `ptr` came from `alloc_unified` with `bytes`, i.e.
            // with this layout, and is freed once.
            unsafe { alloc::dealloc(ptr.as_ptr(), layout) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nacre_runtime::Array;

    #[test]
    fn allocations_are_whole_zeroed_pages() {
        let dev = MetalDevice;
        for bytes in [0, 1, 4096, METAL_PAGE_BYTES, METAL_PAGE_BYTES + 1, 100_000] {
            let p = dev.alloc_unified(bytes).unwrap();
            assert_eq!(p.as_ptr() as usize % METAL_PAGE_BYTES, 0);
            let whole = bytes.max(1).div_ceil(METAL_PAGE_BYTES) * METAL_PAGE_BYTES;
            // SAFETY: the allocation holds `whole` zeroed bytes.
            let s = unsafe { std::slice::from_raw_parts(p.as_ptr(), whole) };
            assert!(s.iter().all(|&b| b == 0));
            // SAFETY: allocated above with the same size, freed once.
            unsafe { dev.free(p, bytes) };
        }
    }

    #[test]
    fn arrays_on_the_metal_device_are_registered_under_its_name() {
        let a = Array::<f32>::alloc_on(MetalDevice::shared(), 1000).unwrap();
        let base = a.as_ptr() as usize;
        assert_eq!(base % METAL_PAGE_BYTES, 0);
        let e = nacre_runtime::memory::entry(base).unwrap();
        assert_eq!((e.bytes, e.device.as_str(), e.owned), (4000, "metal", true));
    }

    #[test]
    fn impossible_sizes_are_errors() {
        assert!(matches!(
            MetalDevice.alloc_unified(usize::MAX - 10),
            Err(MemoryError::TooLarge { .. })
        ));
    }
}
