//! The `Array` API and its size-table registration.
//!
//! The tests of this binary take one lock: they check that released addresses leave the size
//! table, which an allocation in a concurrently running test could reuse.

use nacre_runtime::memory::{self, Entry};
use nacre_runtime::{buffer_bytes, find_buffer, Array, CpuDevice, Device, MemoryError};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

static LOCK: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn copy_reads_back_and_registers_exact_bytes() {
    let _g = serial();
    let data: Vec<i64> = (0..1000).map(|i| i * i - 7).collect();
    let a = Array::copy(&data).unwrap();
    assert_eq!(a.as_slice(), &data[..]);
    assert_eq!(
        (a.len(), a.bytes(), a.is_empty(), a.is_owned()),
        (1000, 8000, false, true)
    );
    assert_eq!(a.as_ptr() as usize % 4096, 0, "page-aligned");
    assert_eq!(buffer_bytes(a.as_ptr() as usize), Some(8000));
    let e = memory::entry(a.as_ptr() as usize).unwrap();
    assert_eq!(
        e,
        Entry {
            bytes: 8000,
            device: "cpu".to_string(),
            owned: true
        }
    );
    assert_eq!(a.ptr().as_ptr(), a.as_ptr());
}

#[test]
fn writes_through_mut_slice() {
    let _g = serial();
    let mut a = Array::<u16>::alloc_unified(10).unwrap();
    assert!(a.as_slice().iter().all(|&x| x == 0));
    for (i, x) in a.as_mut_slice().iter_mut().enumerate() {
        *x = i as u16 * 3;
    }
    assert_eq!(a.as_slice()[9], 27);
}

#[test]
fn drop_and_free_unregister() {
    let _g = serial();
    let live = memory::live_buffers();
    let a = Array::<f32>::alloc_unified(64).unwrap();
    let base = a.as_ptr() as usize;
    assert_eq!(memory::live_buffers(), live + 1);
    assert_eq!(find_buffer(base + 100), Some((base, 256)));
    drop(a);
    assert_eq!(buffer_bytes(base), None);
    assert_eq!(find_buffer(base + 100), None);

    let b = Array::<f32>::alloc_unified(64).unwrap();
    let base = b.as_ptr() as usize;
    b.free().unwrap();
    assert_eq!(buffer_bytes(base), None);
    assert_eq!(memory::live_buffers(), live);
}

#[test]
fn double_free_is_reported() {
    let _g = serial();
    let a = Array::<u8>::alloc_unified(3).unwrap();
    let base = a.as_ptr() as usize;
    // Releasing the registration behind the array's back (as a device runtime could) makes
    // its own free a reported double free, and the memory is not freed twice.
    memory::unregister(base).unwrap();
    let err = a.free().unwrap_err();
    assert!(
        matches!(err, MemoryError::NotRegistered { addr } if addr == base),
        "{err}"
    );
    assert!(err.to_string().contains("double free"));
    assert!(matches!(
        memory::unregister(base),
        Err(MemoryError::NotRegistered { .. })
    ));
}

#[test]
fn zero_length_arrays() {
    let _g = serial();
    let a = Array::<f64>::alloc_unified(0).unwrap();
    let b = Array::<f64>::copy(&[]).unwrap();
    assert!(a.is_empty() && b.is_empty());
    assert_eq!((a.len(), a.bytes()), (0, 0));
    assert_eq!(a.as_slice(), &[] as &[f64]);
    assert_ne!(a.as_ptr(), b.as_ptr(), "distinct addresses");
    assert_eq!(buffer_bytes(a.as_ptr() as usize), Some(0));
    assert_eq!(
        find_buffer(a.as_ptr() as usize),
        Some((a.as_ptr() as usize, 0))
    );
    let base = a.as_ptr() as usize;
    a.free().unwrap();
    assert_eq!(buffer_bytes(base), None);
}

#[test]
fn wrap_borrows_without_owning() {
    let _g = serial();
    let mut data = vec![1u32, 2, 3, 4];
    let ptr = data.as_mut_ptr();
    // SAFETY: `data` outlives the wrapped arrays and is only accessed through them meanwhile.
    let mut w = unsafe { Array::wrap(ptr, 4) }.unwrap();
    assert!(!w.is_owned());
    assert_eq!(w.as_slice(), &[1, 2, 3, 4]);
    w.as_mut_slice()[0] = 10;
    assert_eq!(buffer_bytes(ptr as usize), Some(16));
    assert!(!memory::entry(ptr as usize).unwrap().owned);

    // Wrapping overlapping memory again is refused.
    // SAFETY: refused before any access.
    let err = unsafe { Array::wrap(ptr.add(1), 2) }.unwrap_err();
    assert!(
        matches!(err, MemoryError::Overlap { existing, .. } if existing == ptr as usize),
        "{err}"
    );

    drop(w);
    assert_eq!(buffer_bytes(ptr as usize), None);
    assert_eq!(
        data[0], 10,
        "wrapped memory is not freed, and writes went through"
    );

    // Free of a wrapped array only unregisters.
    // SAFETY: as above.
    let w = unsafe { Array::wrap(ptr, 4) }.unwrap();
    w.free().unwrap();
    assert_eq!(data, [10, 2, 3, 4]);
}

#[test]
fn wrap_rejects_null_and_misaligned_pointers() {
    let _g = serial();
    // SAFETY: rejected before any access.
    let err = unsafe { Array::<f32>::wrap(std::ptr::null_mut(), 4) }.unwrap_err();
    assert!(matches!(err, MemoryError::BadPointer { .. }), "{err}");
    let mut data = [0u32; 4];
    let odd = (data.as_mut_ptr() as usize + 1) as *mut u32;
    // SAFETY: rejected before any access.
    let err = unsafe { Array::wrap(odd, 2) }.unwrap_err();
    assert!(
        matches!(err, MemoryError::BadPointer { align: 4, .. }),
        "{err}"
    );
}

#[test]
fn allocation_errors_say_what_to_do() {
    let _g = serial();
    let err = Array::<f64>::alloc_unified(usize::MAX / 2).unwrap_err();
    assert!(
        matches!(err, MemoryError::TooLarge { elem_bytes: 8, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("split the data"));
    let err = Array::<u8>::alloc_unified(1 << 60).unwrap_err();
    assert!(matches!(err, MemoryError::OutOfMemory { .. }), "{err}");
    assert!(err.to_string().contains("free arrays"));
}

/// A device that counts its allocations and prepares, to check the hooks are used.
#[derive(Default)]
struct Counting {
    allocs: AtomicUsize,
    frees: AtomicUsize,
    host_accesses: AtomicUsize,
}

impl Device for Counting {
    fn name(&self) -> &str {
        "counting"
    }

    fn alloc_unified(&self, bytes: usize) -> Result<NonNull<u8>, MemoryError> {
        self.allocs.fetch_add(1, Ordering::Relaxed);
        CpuDevice.alloc_unified(bytes)
    }

    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize) {
        self.frees.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded from our caller; allocated by `CpuDevice` above.
        unsafe { CpuDevice.free(ptr, bytes) }
    }

    fn prepare_host_access(&self, _ptr: *const u8, _bytes: usize) {
        self.host_accesses.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn arrays_on_other_devices_use_its_hooks() {
    let _g = serial();
    let dev = Arc::new(Counting::default());
    let a = Array::<f32>::copy_on(dev.clone(), &[1.0, 2.0]).unwrap();
    assert_eq!(
        memory::entry(a.as_ptr() as usize).unwrap().device,
        "counting"
    );
    assert_eq!(a.device().name(), "counting");
    assert_eq!(a.as_slice(), &[1.0, 2.0]);
    drop(a);
    assert_eq!(dev.allocs.load(Ordering::Relaxed), 1);
    assert_eq!(dev.frees.load(Ordering::Relaxed), 1);
    // `copy_on` writes through `as_mut_slice`, then one read.
    assert_eq!(dev.host_accesses.load(Ordering::Relaxed), 2);
}

#[test]
fn arrays_move_between_threads() {
    let _g = serial();
    let a = Array::copy(&[1u64, 2, 3]).unwrap();
    let sum = std::thread::spawn(move || a.as_slice().iter().sum::<u64>())
        .join()
        .unwrap();
    assert_eq!(sum, 6);
    fn shareable<T: Send + Sync>() {}
    shareable::<Array<f32>>();
}
