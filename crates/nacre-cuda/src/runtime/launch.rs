//! The launchers compiled host code calls, and the per-thread launch sequence they queue
//! into.
//!
//! A launch ([`cuda_launch_async`], [`cuda_launch_sync`], both [`nacre_backend::LaunchFn`]s):
//!
//! 1. validates the grid and block against the device's limits ([`Trap::InvalidLaunch`]) and
//!    the shared memory against its opt-in maximum ([`Trap::SharedMemoryLimit`]), raising the
//!    kernel's dynamic shared memory limit above 48 KiB when a launch needs it;
//! 2. checks every pointer argument against the size table: not in a live array is
//!    [`Trap::UnknownBuffer`], in an array of another device (a CPU `Array`) is
//!    [`CudaError::ForeignMemory`];
//! 3. prefetches the arrays not on the device yet;
//! 4. queues the kernel on the thread's stream with the arguments and the sequence's status
//!    word (`cuLaunchKernel`).
//!
//! A failure of the driver, or an argument on the wrong device, is reported to the host code
//! as [`Trap::DeviceError`], with the full [`CudaError`] kept as the thread's last error
//! ([`crate::runtime::take_last_error`]).
//!
//! **Launch sequences and the status word.** Each thread has, per device, one status word in
//! pinned host memory mapped into the device's address space: kernels write a trap code
//! there (the generated CUDA C's last parameter). The first launch of a sequence resets the
//! word to 0; [`finish_launches`] waits for the thread's stream and reads the word, ending the
//! sequence. The asynchronous launcher only queues, so a loop of launches runs back to back
//! on the GPU and the host waits once, when the compiled function returns; the synchronous
//! launcher finishes the sequence after every launch, for host code that reads memory between
//! launches. A kernel fault (an illegal address) is reported by the wait, as
//! [`CudaError::KernelFault`], never as a hang.
//!
//! **Waiting.** Where the device has concurrent managed access, the wait queues a write of a ticket number into the status word's second half behind the
//! kernels (`cuStreamWriteValue32`, which fences their writes first) and watches for it with
//! plain reads for up to 100 µs, then falls back to `cuStreamSynchronize`, which also reports
//! a kernel fault (a faulted stream never writes the ticket), and which is the whole wait where
//! the driver refuses the write. On the H200 this returns
//! 0.4–0.8 µs sooner than `cuStreamSynchronize` alone (bench/results/launch_floor.txt).

use crate::runtime::context::{per_thread_stream, Context};
use crate::runtime::driver::{self, panic_message};
use crate::runtime::error::CudaError;
use crate::runtime::events;
use crate::runtime::graphs::{launch_directly, GraphCache, Recorded, MAX_RECORDED};
use crate::runtime::last_error::set_last_error;
use crate::runtime::memory::PrepareFailure;
use crate::runtime::prepare::CudaKernel;
use crate::runtime::shape::validate;
use crate::runtime::stats::{self, Counter};
use cudarc::driver::sys;
use nacre_backend::LaunchDims;
use nacre_ir::Trap;
use nacre_runtime::find_buffer;
use std::cell::RefCell;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Bytes of pinned memory per status word (one cache line).
const STATUS_BYTES: usize = 64;

/// Where the stream writes its ticket, in bytes from the start of the status word (the trap
/// code is at 0).
const TICKET_OFFSET: usize = 32;

/// How long a wait watches for its ticket before it lets the driver block.
const SPIN: Duration = Duration::from_micros(100);

/// Reads of the ticket between two reads of the clock while waiting.
const SPIN_READS: usize = 1024;

/// A status word: its host address and the device address of the same memory.
#[derive(Copy, Clone, Debug)]
struct StatusWord {
    ordinal: u32,
    host: usize,
    dev: sys::CUdeviceptr,
}

/// Status words of threads that ended, reused by new threads (so a program that starts
/// many threads does not pin a page per thread, and thread exit makes no driver call).
static SPARE_WORDS: Mutex<Vec<StatusWord>> = Mutex::new(Vec::new());

/// A thread's launch sequence on one device.
struct Sequence {
    ctx: &'static Context,
    word: StatusWord,
    /// True between the first launch of a sequence and [`finish_launches`].
    open: bool,
    /// The ticket of the last wait (see [`wait_for_stream`]).
    ticket: u32,
    /// Launches recorded by [`cuda_launch_recorded`], run when the sequence finishes.
    recorded: Vec<Recorded>,
    /// True once this sequence recorded [`MAX_RECORDED`] launches: it queues the rest.
    overflowed: bool,
    /// The thread's graphs on this device.
    graphs: GraphCache,
}

impl Drop for Sequence {
    fn drop(&mut self) {
        SPARE_WORDS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(self.word);
    }
}

thread_local! {
    static SEQUENCES: RefCell<Vec<Sequence>> = const { RefCell::new(Vec::new()) };
}

impl StatusWord {
    /// A status word for device `ctx` (the context must be current).
    fn take(ctx: &'static Context) -> Result<StatusWord, CudaError> {
        let ordinal = ctx.info.ordinal;
        {
            let mut spare = SPARE_WORDS.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = spare.iter().position(|w| w.ordinal == ordinal) {
                return Ok(spare.swap_remove(i));
            }
        }
        let mut host: *mut c_void = std::ptr::null_mut();
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        // SAFETY: writes one pointer to `STATUS_BYTES` bytes of pinned, mapped host memory;
        // the context is current. The memory is never freed (it is recycled through
        // `SPARE_WORDS`).
        ctx.check("cuMemHostAlloc", unsafe {
            sys::cuMemHostAlloc(&mut host, STATUS_BYTES, flags)
        })?;
        let mut dev: sys::CUdeviceptr = 0;
        // SAFETY: `host` is mapped pinned memory just allocated; writes one device pointer.
        ctx.check("cuMemHostGetDevicePointer", unsafe {
            sys::cuMemHostGetDevicePointer_v2(&mut dev, host, 0)
        })?;
        // SAFETY: `host` points to `STATUS_BYTES` bytes of host memory that nothing else uses
        // yet; the trap code and the ticket start at 0.
        unsafe { std::ptr::write_bytes(host as *mut u8, 0, STATUS_BYTES) };
        Ok(StatusWord {
            ordinal,
            host: host as usize,
            dev,
        })
    }

    fn read(&self) -> u32 {
        // SAFETY: the word is live pinned memory owned by this thread's sequence; the
        // device's writes are visible once the stream that ran the kernels is synchronised.
        unsafe { std::ptr::read_volatile(self.host as *const u32) }
    }

    /// The last ticket the stream wrote.
    fn ticket(&self) -> u32 {
        // SAFETY: as in `read`; the stream writes this half only by `cuStreamWriteValue32`.
        unsafe { std::ptr::read_volatile((self.host + TICKET_OFFSET) as *const u32) }
    }

    fn reset(&self) {
        // SAFETY: as in `read`; no kernel of this thread's sequence is running (the
        // sequence is not open, so the last one was finished).
        unsafe { std::ptr::write_volatile(self.host as *mut u32, 0) }
    }
}

/// Opens (or continues) the calling thread's launch sequence on `ctx`'s device and returns
/// the device address of its status word. The context must be current.
fn open_sequence(ctx: &'static Context) -> Result<sys::CUdeviceptr, CudaError> {
    SEQUENCES.with(|seqs| {
        let mut seqs = seqs.borrow_mut();
        let i = match seqs
            .iter()
            .position(|s| s.ctx.info.ordinal == ctx.info.ordinal)
        {
            Some(i) => i,
            None => {
                let word = StatusWord::take(ctx)?;
                seqs.push(Sequence {
                    ctx,
                    word,
                    open: false,
                    // A recycled word holds the last ticket of its previous thread, whose
                    // waits all ended; the next ticket must differ from it.
                    ticket: word.ticket(),
                    recorded: Vec::new(),
                    overflowed: false,
                    graphs: GraphCache::default(),
                });
                seqs.len() - 1
            }
        };
        let seq = &mut seqs[i];
        if !seq.open {
            seq.word.reset();
            seq.open = true;
        }
        Ok(seq.word.dev)
    })
}

/// Ends one sequence: runs its recorded launches (see [`crate::runtime::graphs`]), waits for
/// the thread's stream and reads the status word.
fn finish_sequence(seq: &mut Sequence) -> u32 {
    seq.open = false;
    seq.overflowed = false;
    let mut recorded = std::mem::take(&mut seq.recorded);
    let waited = driver::guard("cuStreamSynchronize", || {
        seq.ctx.bind()?;
        let ran = seq.graphs.run(seq.ctx, &mut recorded);
        recorded.clear();
        seq.recorded = recorded;
        ran?;
        events::record_end_before_wait(seq.ctx);
        wait_for_stream(seq)
    });
    stats::add(Counter::Syncs, 1);
    match waited {
        Ok(()) => seq.word.read(),
        Err(e) => {
            set_last_error(e);
            Trap::DeviceError.code()
        }
    }
}

/// Waits until this thread's stream has run everything queued on it: by its ticket where the
/// device allows (module docs), else, or after [`SPIN`], by `cuStreamSynchronize`.
fn wait_for_stream(seq: &mut Sequence) -> Result<(), CudaError> {
    // Without concurrent managed access the driver must see the kernels finish before the
    // host touches managed memory, so it has to be the one that waits.
    if seq.ctx.info.concurrent_managed_access {
        seq.ticket = seq.ticket.wrapping_add(1);
        let ticket = seq.ticket;
        // SAFETY: the address is inside this sequence's live status word, mapped into the
        // context (current) that owns the stream; default flags fence the kernels' writes
        // before this one.
        let queued = unsafe {
            sys::cuStreamWriteValue32_v2(
                per_thread_stream(),
                seq.word.dev + TICKET_OFFSET as sys::CUdeviceptr,
                ticket,
                sys::CUstreamWriteValue_flags::CU_STREAM_WRITE_VALUE_DEFAULT as u32,
            )
        };
        if queued == sys::CUresult::CUDA_SUCCESS {
            // Plain reads between clock reads (a few µs apart): a read of the clock or a
            // pause instruction per read would delay seeing the ticket by as much.
            let mut start = None;
            loop {
                for _ in 0..SPIN_READS {
                    if seq.word.ticket() == ticket {
                        return Ok(());
                    }
                }
                let now = Instant::now();
                match start {
                    None => start = Some(now),
                    Some(s) if now.duration_since(s) > SPIN => break,
                    Some(_) => std::hint::spin_loop(),
                }
            }
        }
    }
    // SAFETY: synchronises this thread's stream.
    seq.ctx.check("cuStreamSynchronize", unsafe {
        sys::cuStreamSynchronize(per_thread_stream())
    })
}

/// Waits for every launch the calling thread queued since the last call and returns the
/// first trap code they reported (0 if none). A kernel fault or a failed wait is
/// [`Trap::DeviceError`], with the cause as the thread's last error. Cheap when the thread
/// queued nothing.
///
/// Whoever calls compiled host code bound to [`cuda_launch_async`] must call this when the
/// call returns, before reporting its result or touching the arrays it used.
pub fn finish_launches() -> u32 {
    SEQUENCES
        .try_with(|seqs| {
            let Ok(mut seqs) = seqs.try_borrow_mut() else {
                return 0;
            };
            let mut first = 0;
            for seq in seqs.iter_mut().filter(|s| s.open) {
                let code = finish_sequence(seq);
                if first == 0 {
                    first = code;
                }
            }
            first
        })
        .unwrap_or(0)
}

/// Ends the calling thread's sequence on `ctx`'s device, if open.
fn finish_on(ctx: &'static Context) -> u32 {
    SEQUENCES.with(|seqs| {
        let mut seqs = seqs.borrow_mut();
        match seqs
            .iter_mut()
            .find(|s| s.open && s.ctx.info.ordinal == ctx.info.ordinal)
        {
            Some(seq) => finish_sequence(seq),
            None => 0,
        }
    })
}

/// What a launcher does with a checked launch.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Mode {
    /// Queue it on the thread's stream.
    Queue,
    /// Record it for the sequence's end (see [`crate::runtime::graphs`]).
    Record,
    /// Queue it and wait for it.
    Wait,
}

/// Adds `launch` to the calling thread's open sequence on `ctx`'s device (current); past
/// [`MAX_RECORDED`] launches, queues what was recorded and every later launch of the
/// sequence directly.
fn record(ctx: &'static Context, mut launch: Recorded) -> Result<(), CudaError> {
    SEQUENCES.with(|seqs| {
        let mut seqs = seqs.borrow_mut();
        let Some(seq) = seqs
            .iter_mut()
            .find(|s| s.open && s.ctx.info.ordinal == ctx.info.ordinal)
        else {
            return launch_directly(ctx, std::slice::from_mut(&mut launch));
        };
        if seq.overflowed {
            return launch_directly(ctx, std::slice::from_mut(&mut launch));
        }
        seq.recorded.push(launch);
        if seq.recorded.len() >= MAX_RECORDED {
            seq.overflowed = true;
            let ran = launch_directly(ctx, &mut seq.recorded);
            seq.recorded.clear();
            return ran;
        }
        Ok(())
    })
}

/// The launcher of modules whose host code touches no memory: queues the kernel and
/// returns (a [`nacre_backend::LaunchFn`]).
///
/// # Safety
/// `handle` must be the handle of a live [`CudaKernel`], `dims` must point to a
/// [`LaunchDims`],
/// `args` to one `u64` per kernel parameter, `status` to a writable `u32` (or be null).
pub unsafe extern "C" fn cuda_launch_async(
    handle: usize,
    dims: *const u32,
    args: *const u64,
    status: *mut u32,
) {
    // SAFETY: forwarded contract.
    unsafe { launch_entry(handle, dims, args, status, Mode::Queue) }
}

/// The launcher of modules whose host code touches no memory, with graphs: checks the
/// launch and records it; the sequence's end runs the call's launches, replayed as a CUDA
/// graph once their shape repeats ([`crate::runtime::graphs`]). A [`nacre_backend::LaunchFn`].
///
/// # Safety
/// As [`cuda_launch_async`]; besides, the pointer arguments' arrays must stay alive until
/// [`finish_launches`] (a safe call's borrows cover its whole call).
pub unsafe extern "C" fn cuda_launch_recorded(
    handle: usize,
    dims: *const u32,
    args: *const u64,
    status: *mut u32,
) {
    // SAFETY: forwarded contract.
    unsafe { launch_entry(handle, dims, args, status, Mode::Record) }
}

/// The launcher of modules whose host code touches memory: queues the kernel and waits for
/// it (a [`nacre_backend::LaunchFn`]).
///
/// # Safety
/// As [`cuda_launch_async`].
pub unsafe extern "C" fn cuda_launch_sync(
    handle: usize,
    dims: *const u32,
    args: *const u64,
    status: *mut u32,
) {
    // SAFETY: forwarded contract.
    unsafe { launch_entry(handle, dims, args, status, Mode::Wait) }
}

/// Runs one launch for a launcher, writing a failure's trap code to `status`.
///
/// # Safety
/// As [`cuda_launch_async`].
unsafe fn launch_entry(
    handle: usize,
    dims: *const u32,
    args: *const u64,
    status: *mut u32,
    mode: Mode,
) {
    // SAFETY: the caller passes the handle of a live kernel and a readable `LaunchDims`.
    let (kernel, dims) = unsafe { (&*(handle as *const CudaKernel), LaunchDims::read(dims)) };
    // No panic may unwind out of an `extern "C"` function.
    // SAFETY: `args` per the caller's contract.
    let result = catch_unwind(AssertUnwindSafe(|| unsafe {
        kernel.launch(dims, args, mode)
    }))
    .unwrap_or_else(|payload| {
        set_last_error(CudaError::Library {
            during: "a kernel launch",
            message: panic_message(payload.as_ref()),
        });
        Err(Trap::DeviceError.code())
    });
    if let Err(code) = result {
        if !status.is_null() {
            // SAFETY: a non-null `status` is writable (the caller's contract).
            unsafe { *status = code };
        }
    }
}

/// Records `e` and returns the device-error trap code.
fn device_error(e: CudaError) -> u32 {
    set_last_error(e);
    Trap::DeviceError.code()
}

impl CudaKernel {
    /// Validates and prepares one launch, then queues it, records it or queues it and waits
    /// for it, as `mode` says; `Err` holds a trap code.
    ///
    /// # Safety
    /// `args` must hold one `u64` per kernel parameter.
    unsafe fn launch(&self, dims: LaunchDims, args: *const u64, mode: Mode) -> Result<(), u32> {
        let ctx = self.context();
        let shape =
            validate(&dims, &ctx.info.limits, self.loaded.static_shared).map_err(Trap::code)?;

        // The arrays the pointer arguments point into.
        let pointers = self.pointer_params.len();
        let mut stack = [0usize; 16];
        let mut heap = Vec::new();
        let bases: &mut [usize] = if pointers <= stack.len() {
            &mut stack[..pointers]
        } else {
            heap.resize(pointers, 0);
            &mut heap
        };
        for (k, &i) in self.pointer_params.iter().enumerate() {
            // SAFETY: `args` holds one slot per parameter and `i` is a parameter position.
            let addr = unsafe { args.add(i).read() } as usize;
            bases[k] = find_buffer(addr).ok_or(Trap::UnknownBuffer.code())?.0;
        }

        ctx.bind().map_err(device_error)?;
        self.loaded
            .allow_dynamic_shared(shape.shared_bytes)
            .map_err(device_error)?;
        match self.device.prepare_launch(bases) {
            Ok(()) => {}
            Err(PrepareFailure::Foreign { index }) => {
                let device = nacre_runtime::memory::entry(bases[index])
                    .map_or_else(|| "unknown".to_string(), |e| e.device);
                return Err(device_error(CudaError::ForeignMemory {
                    kernel: self.name.clone(),
                    arg: self.pointer_params[index],
                    device,
                    expected: ctx.name(),
                }));
            }
            Err(PrepareFailure::Cuda(e)) => return Err(device_error(e)),
        }
        let status_dev = open_sequence(ctx).map_err(device_error)?;
        if mode == Mode::Record {
            let n = self.params;
            // SAFETY: `args` holds `n` slots.
            let mut slots: Vec<u64> = (0..n).map(|i| unsafe { args.add(i).read() }).collect();
            slots.push(status_dev);
            let launch = Recorded {
                kernel: self.loaded.clone(),
                grid: shape.grid,
                block: shape.block,
                shared_bytes: shape.shared_bytes,
                args: slots,
            };
            return record(ctx, launch).map_err(device_error);
        }

        // `kernelParams`: the address of each parameter's slot (little-endian, so the low
        // bytes of a slot are the value of a narrower parameter), then the status pointer's.
        let n = self.params;
        let mut stack = [std::ptr::null_mut::<c_void>(); 17];
        let mut heap = Vec::new();
        let params: &mut [*mut c_void] = if n < stack.len() {
            &mut stack[..n + 1]
        } else {
            heap.resize(n + 1, std::ptr::null_mut());
            &mut heap
        };
        for (i, p) in params[..n].iter_mut().enumerate() {
            // SAFETY: `args` holds `n` slots.
            *p = unsafe { args.add(i) } as *mut c_void;
        }
        params[n] = &status_dev as *const sys::CUdeviceptr as *mut c_void;
        let [gx, gy, gz] = shape.grid;
        let [bx, by, bz] = shape.block;
        // SAFETY: the function is loaded in the current context; `params` holds one pointer
        // per kernel parameter (the IR's, then the status word), each to a value of the
        // parameter's size or more, all read by the driver before it returns; pointer
        // arguments lie in live managed arrays of this device (checked above).
        ctx.check("cuLaunchKernel", unsafe {
            sys::cuLaunchKernel(
                self.loaded.function,
                gx,
                gy,
                gz,
                bx,
                by,
                bz,
                shape.shared_bytes,
                per_thread_stream(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
        .map_err(device_error)?;
        stats::add(Counter::Launches, 1);
        if mode == Mode::Queue {
            return Ok(());
        }
        match finish_on(ctx) {
            0 => Ok(()),
            code => Err(code),
        }
    }
}
