//! [`CudaDevice`]: managed memory on a CUDA device, as a [`nacre_runtime::Device`].
//!
//! Arrays allocated on it live in managed memory (`cuMemAllocManaged`, attached globally):
//! one address, valid on the host and in kernels. The device
//!
//! - refuses an allocation larger than the memory the device can still hold (its free memory,
//!   less the managed memory already allocated that is not on the device yet): managed
//!   memory can be over-subscribed, but a GPU that must evict pages to run a kernel slows
//!   down by orders of magnitude, and drivers can hang;
//! - zeroes new memory on the device (so it starts out resident there);
//! - tracks where each allocation lives (`residency`) and prefetches it to
//!   the device before launches and back to the host before host access, only when it is
//!   not there already. Prefetching needs `concurrentManagedAccess`; without it the driver
//!   moves all managed memory at each launch and the device only synchronises.

use crate::runtime::context::{per_thread_stream, Context, DeviceInfo};
use crate::runtime::driver;
use crate::runtime::error::CudaError;
use crate::runtime::last_error::set_last_error;
use crate::runtime::residency::{Access, Allocation, Place, Residency};
use crate::runtime::stats::{self, Counter};
use cudarc::driver::sys;
use nacre_runtime::{Device, MemoryError};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard};

/// The alignment of every allocation (as [`nacre_runtime::Device::alloc_unified`] promises).
const ALIGN: usize = 4096;

/// Why arrays could not be prepared for a launch.
#[derive(Debug)]
pub(crate) enum PrepareFailure {
    /// The base at this position is not an allocation of the device.
    Foreign {
        /// Its position in the list.
        index: usize,
    },
    /// A prefetch failed.
    Cuda(CudaError),
}

/// A CUDA device as a provider of managed memory. One per device ordinal per process
/// ([`CudaDevice::open`]).
pub struct CudaDevice {
    ctx: &'static Context,
    name: String,
    residency: Mutex<Residency>,
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice")
            .field("name", &self.name)
            .field("info", &self.ctx.info)
            .finish_non_exhaustive()
    }
}

/// The direction of a prefetch.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Direction {
    ToDevice,
    ToHost,
}

impl CudaDevice {
    /// The device with ordinal `ordinal`, initialising the driver and the device on first
    /// use. Every call for the same ordinal returns the same device.
    pub fn open(ordinal: u32) -> Result<Arc<CudaDevice>, CudaError> {
        static DEVICES: Mutex<Vec<Arc<CudaDevice>>> = Mutex::new(Vec::new());
        let mut devices = DEVICES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = devices.iter().find(|d| d.ctx.info.ordinal == ordinal) {
            return Ok(d.clone());
        }
        let ctx = Context::get(ordinal)?;
        let device = Arc::new(CudaDevice {
            ctx,
            name: ctx.name(),
            residency: Mutex::new(Residency::default()),
        });
        devices.push(device.clone());
        Ok(device)
    }

    /// The device's properties.
    pub fn info(&self) -> &DeviceInfo {
        &self.ctx.info
    }

    /// The device's ordinal.
    pub fn ordinal(&self) -> u32 {
        self.ctx.info.ordinal
    }

    pub(crate) fn context(&self) -> &'static Context {
        self.ctx
    }

    fn table(&self) -> MutexGuard<'_, Residency> {
        // Every update of the table is a single map operation plus a counter: a panic while
        // the lock was held cannot leave it inconsistent.
        self.residency.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of live allocations on this device.
    pub fn live_allocations(&self) -> usize {
        self.table().len()
    }

    /// True if `base` is the base of a live allocation of this device.
    pub fn owns(&self, base: usize) -> bool {
        self.table().contains(base)
    }

    /// The bytes the device can still take: free memory (`cuMemGetInfo`) less the managed
    /// memory already allocated that is not on the device.
    pub fn available_bytes(&self) -> Result<usize, CudaError> {
        let promised = self.table().promised_bytes();
        Ok(self.free_bytes()?.saturating_sub(promised))
    }

    fn free_bytes(&self) -> Result<usize, CudaError> {
        driver::guard("cuMemGetInfo", || {
            self.ctx.bind()?;
            let (mut free, mut total) = (0usize, 0usize);
            // SAFETY: writes two sizes; the context is current.
            self.ctx.check("cuMemGetInfo", unsafe {
                sys::cuMemGetInfo_v2(&mut free, &mut total)
            })?;
            Ok(free)
        })
    }

    /// Allocates `bytes` zeroed bytes of managed memory, aligned to 4096 bytes.
    pub fn alloc(&self, bytes: usize) -> Result<NonNull<u8>, CudaError> {
        driver::guard("a managed allocation", || self.alloc_inner(bytes, None))
    }

    /// Allocates `data.len()` bytes of managed memory, aligned to 4096 bytes, holding a copy
    /// of `data` written by the device (`cuMemcpyHtoD`), so that its pages are on the device
    /// where kernels want them, without a trip to the host and back.
    pub fn alloc_copy(&self, data: &[u8]) -> Result<NonNull<u8>, CudaError> {
        driver::guard("a managed allocation", || {
            self.alloc_inner(data.len(), Some(data))
        })
    }

    /// Allocates `bytes` bytes on the device: a copy of `init` if given (`init.len() ==
    /// bytes`), zeroes elsewhere.
    fn alloc_inner(&self, bytes: usize, init: Option<&[u8]>) -> Result<NonNull<u8>, CudaError> {
        let too_large = || CudaError::OutOfMemory {
            device: self.name.clone(),
            bytes,
            available: 0,
        };
        let size = bytes
            .max(1)
            .checked_next_multiple_of(ALIGN)
            .ok_or_else(too_large)?;
        self.ctx.bind()?;
        // The table's lock is held from the check of the free memory to the recording of the
        // new allocation, so that concurrent allocations cannot together exceed it.
        let mut table = self.table();
        let available = self.free_bytes()?.saturating_sub(table.promised_bytes());
        if size > available {
            return Err(CudaError::OutOfMemory {
                device: self.name.clone(),
                bytes,
                available,
            });
        }
        let (raw, raw_bytes, base) = self.alloc_aligned(size).map_err(|e| match e {
            CudaError::Driver { code: 2, .. } => CudaError::OutOfMemory {
                device: self.name.clone(),
                bytes,
                available,
            },
            e => e,
        })?;
        let stream = per_thread_stream();
        let copied = init.map_or(0, <[u8]>::len);
        let copy = match init {
            Some(data) if !data.is_empty() => {
                // SAFETY: `base..base + data.len()` lies in the allocation just made (`size >=
                // bytes`); `data` is readable host memory that outlives the synchronisation
                // below; the context is current and the stream is this thread's.
                let r = unsafe {
                    sys::cuMemcpyHtoDAsync_v2(
                        base as sys::CUdeviceptr,
                        data.as_ptr().cast(),
                        data.len(),
                        stream,
                    )
                };
                self.ctx.check("cuMemcpyHtoDAsync", r)
            }
            _ => Ok(()),
        };
        let filled = copy
            .and_then(|()| {
                // SAFETY: `base + copied..base + size` lies in the allocation just made; the
                // context is current and the stream is this thread's.
                let r = unsafe {
                    sys::cuMemsetD8Async(
                        (base + copied) as sys::CUdeviceptr,
                        0,
                        size - copied,
                        stream,
                    )
                };
                self.ctx.check("cuMemsetD8Async", r)
            })
            .and_then(|()| {
                // SAFETY: synchronises this thread's stream.
                let synced = unsafe { sys::cuStreamSynchronize(stream) };
                self.ctx.check("cuStreamSynchronize", synced)
            });
        if let Err(e) = filled {
            // SAFETY: allocated just above and never handed out.
            let _ = unsafe { sys::cuMemFree_v2(raw as sys::CUdeviceptr) };
            return Err(e);
        }
        table.insert(
            base,
            Allocation {
                raw,
                raw_bytes,
                bytes,
                place: Place::Device,
            },
        );
        NonNull::new(base as *mut u8).ok_or_else(too_large)
    }

    /// Allocates at least `size` bytes of managed memory with a 4096-byte-aligned base of
    /// `size` usable bytes: `(raw address, raw size, aligned base)`.
    fn alloc_aligned(&self, size: usize) -> Result<(usize, usize, usize), CudaError> {
        let managed = |n: usize| -> Result<usize, CudaError> {
            let mut p: sys::CUdeviceptr = 0;
            // SAFETY: writes one device pointer; the context is current.
            self.ctx.check("cuMemAllocManaged", unsafe {
                sys::cuMemAllocManaged(
                    &mut p,
                    n,
                    sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as u32,
                )
            })?;
            Ok(p as usize)
        };
        let raw = managed(size)?;
        if raw % ALIGN == 0 {
            return Ok((raw, size, raw));
        }
        // The driver aligns managed memory to pages in practice; should it not, allocate a
        // page more and align inside.
        // SAFETY: allocated just above and never handed out.
        let _ = unsafe { sys::cuMemFree_v2(raw as sys::CUdeviceptr) };
        let padded = size + ALIGN;
        let raw = managed(padded)?;
        Ok((raw, padded, raw.next_multiple_of(ALIGN)))
    }

    /// Frees the allocation whose base is `base`; false if this device has none there.
    pub(crate) fn release(&self, base: usize) -> bool {
        let Some(a) = self.table().remove(base) else {
            return false;
        };
        // A lost context cannot free; the memory goes with the process.
        let freed = driver::guard("cuMemFree", || {
            self.ctx.bind()?;
            // SAFETY: `a.raw` came from `cuMemAllocManaged` and was removed from the table
            // just now, so it is freed once. Work queued by this thread that could use it was
            // synchronised when the compiled function that queued it returned.
            self.ctx.check("cuMemFree", unsafe {
                sys::cuMemFree_v2(a.raw as sys::CUdeviceptr)
            })
        });
        if let Err(e) = freed {
            set_last_error(e);
        }
        true
    }

    /// Issues one prefetch on this thread's stream (the context must be current).
    fn prefetch(&self, base: usize, bytes: usize, dir: Direction) -> Result<(), CudaError> {
        if bytes == 0 || !self.ctx.info.concurrent_managed_access {
            return Ok(());
        }
        let location = match dir {
            Direction::ToDevice => sys::CUmemLocation {
                type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id: self.ctx.info.ordinal as i32,
            },
            Direction::ToHost => sys::CUmemLocation {
                type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST,
                id: 0,
            },
        };
        // SAFETY: `base..base + bytes` lies in a live managed allocation of this device; the
        // context is current and the stream is this thread's.
        self.ctx.check("cuMemPrefetchAsync", unsafe {
            sys::cuMemPrefetchAsync_v2(
                base as sys::CUdeviceptr,
                bytes,
                location,
                0,
                per_thread_stream(),
            )
        })?;
        let (count, total) = match dir {
            Direction::ToDevice => (Counter::PrefetchesToDevice, Counter::BytesToDevice),
            Direction::ToHost => (Counter::PrefetchesToHost, Counter::BytesToHost),
        };
        stats::add(count, 1);
        stats::add(total, bytes as u64);
        Ok(())
    }

    /// Prepares the allocations at `bases` for a kernel on this thread's stream: prefetches
    /// those not on the device. Fails with [`PrepareFailure::Foreign`] (before moving
    /// anything) if a base is not an allocation of this device. The context must be current.
    pub(crate) fn prepare_launch(&self, bases: &[usize]) -> Result<(), PrepareFailure> {
        let mut moves = [(0usize, 0usize); 8];
        let mut n = 0;
        let mut more = Vec::new();
        {
            let mut table = self.table();
            if let Some(index) = bases.iter().position(|&b| !table.contains(b)) {
                return Err(PrepareFailure::Foreign { index });
            }
            for &b in bases {
                if let Access::Migrate { bytes } = table.before_device_access(b) {
                    if n < moves.len() {
                        moves[n] = (b, bytes);
                        n += 1;
                    } else {
                        more.push((b, bytes));
                    }
                }
            }
        }
        for &(b, bytes) in moves[..n].iter().chain(&more) {
            self.prefetch(b, bytes, Direction::ToDevice)
                .map_err(PrepareFailure::Cuda)?;
        }
        Ok(())
    }

    /// Waits for this thread's queued work, where host access needs it: the thread's
    /// stream, or the whole device when it cannot share managed memory with a running kernel.
    fn sync_for_host(&self) -> Result<(), CudaError> {
        if self.ctx.info.concurrent_managed_access {
            // SAFETY: synchronises this thread's stream.
            self.ctx.check("cuStreamSynchronize", unsafe {
                sys::cuStreamSynchronize(per_thread_stream())
            })
        } else {
            // SAFETY: synchronises the current context.
            self.ctx
                .check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })
        }
    }

    /// Before host access to the allocation at `base`: synchronise, and prefetch it back if
    /// it is on the device.
    fn host_access(&self, base: usize) -> Result<(), CudaError> {
        let access = self.table().before_host_access(base);
        if access == Access::NotHere {
            return Ok(());
        }
        self.ctx.bind()?;
        self.sync_for_host()?;
        if let Access::Migrate { bytes } = access {
            self.prefetch(base, bytes, Direction::ToHost)?;
            if bytes > 0 && self.ctx.info.concurrent_managed_access {
                // SAFETY: synchronises this thread's stream.
                self.ctx.check("cuStreamSynchronize", unsafe {
                    sys::cuStreamSynchronize(per_thread_stream())
                })?;
            }
        }
        Ok(())
    }
}

impl CudaDevice {
    /// A failed allocation as the device-independent error arrays report.
    fn gpu_error(&self, e: CudaError) -> MemoryError {
        match e {
            CudaError::OutOfMemory {
                device,
                bytes,
                available,
            } => MemoryError::ExceedsFreeMemory {
                device,
                bytes,
                available,
            },
            e => MemoryError::DeviceUnavailable {
                device: self.name.clone(),
                reason: e.to_string(),
            },
        }
    }
}

impl Device for CudaDevice {
    fn name(&self) -> &str {
        &self.name
    }

    fn alloc_unified(&self, bytes: usize) -> Result<NonNull<u8>, MemoryError> {
        self.alloc(bytes).map_err(|e| self.gpu_error(e))
    }

    fn alloc_unified_copy(&self, data: &[u8]) -> Result<NonNull<u8>, MemoryError> {
        self.alloc_copy(data).map_err(|e| self.gpu_error(e))
    }

    unsafe fn free(&self, ptr: NonNull<u8>, _bytes: usize) {
        self.release(ptr.as_ptr() as usize);
    }

    fn prepare_host_access(&self, ptr: *const u8, _bytes: usize) {
        if let Err(e) = driver::guard("preparing host access", || self.host_access(ptr as usize)) {
            set_last_error(e);
        }
    }

    fn prepare_device_access(&self, ptr: *const u8, _bytes: usize) {
        let r = driver::guard("preparing device access", || {
            self.ctx.bind()?;
            match self.prepare_launch(&[ptr as usize]) {
                Err(PrepareFailure::Cuda(e)) => Err(e),
                Ok(()) | Err(PrepareFailure::Foreign { .. }) => Ok(()),
            }
        });
        if let Err(e) = r {
            set_last_error(e);
        }
    }
}
