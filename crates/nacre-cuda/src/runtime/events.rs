//! Timing work on the GPU with CUDA events: [`time_on_device`].
//!
//! Each thread keeps, per device, a pair of events (created on first use with default flags,
//! so they record timestamps). [`time_on_device`] records the first on the thread's per-thread
//! default stream and runs the caller's closure, typically one call of a compiled function,
//! which queues its launches on that stream and then waits for them
//! ([`crate::runtime::finish_launches`]). While a timing is open, that wait records the second
//! event on the stream just before it blocks (`record_end_before_wait`), so the event is
//! queued right behind the call's last kernel; [`time_on_device`] then waits for it and returns
//! the interval between the two as the GPU measured it.
//!
//! What that interval covers: from the moment the GPU reaches the start event (at once, on an
//! idle stream) to the end of the call's last kernel: the host-side work before and between
//! the launches (argument checks, prefetches, the `cuLaunchKernel` calls) and the kernels, but
//! not the host's wait nor its return path. That is what PyTorch's or CuPy's events around a
//! launch measure. A closure that never waits through the launch sequence (it queues nothing,
//! or waits some other way) gets its end event recorded after it returns, so its interval
//! covers the whole closure.
//!
//! Event pairs of threads that ended are kept for new threads, so no driver call runs at
//! thread exit.

use crate::runtime::context::{per_thread_stream, Context};
use crate::runtime::driver;
use crate::runtime::error::CudaError;
use cudarc::driver::sys;
use std::cell::{Cell, RefCell};
use std::sync::Mutex;
use std::time::Duration;

/// A start and an end event of one device.
#[derive(Copy, Clone, Debug)]
struct EventPair {
    ordinal: u32,
    start: sys::CUevent,
    end: sys::CUevent,
}

// SAFETY: a `CUevent` is a driver handle usable from any thread on which its context is
// current; a pair is owned by one thread at a time (its thread's list, or the spare list).
unsafe impl Send for EventPair {}

/// Event pairs of threads that ended, reused by new threads.
static SPARE_PAIRS: Mutex<Vec<EventPair>> = Mutex::new(Vec::new());

/// A thread's event pair, returned to [`SPARE_PAIRS`] when the thread ends.
struct OwnedPair {
    pair: EventPair,
    /// True while a [`time_on_device`] of this thread uses the pair (a nested timing takes
    /// another pair).
    in_use: bool,
}

impl Drop for OwnedPair {
    fn drop(&mut self) {
        SPARE_PAIRS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(self.pair);
    }
}

/// The innermost timing open on a thread: where [`record_end_before_wait`] records its end.
#[derive(Copy, Clone, Debug)]
struct OpenTiming {
    pair: EventPair,
    /// Whether the end event was recorded by a wait of the launch sequence.
    end_recorded: bool,
}

thread_local! {
    static PAIRS: RefCell<Vec<OwnedPair>> = const { RefCell::new(Vec::new()) };
    static OPEN: Cell<Option<OpenTiming>> = const { Cell::new(None) };
}

/// Called by the launch sequence's wait, with `ctx` current, just before it blocks on the
/// thread's stream: while a [`time_on_device`] on `ctx`'s device is open on this thread,
/// records its end event on the stream, behind the kernels queued so far (a later wait of
/// the same timing records it again, further on). A failure leaves the end to be recorded
/// after the closure returns; the wait itself is not affected.
pub(crate) fn record_end_before_wait(ctx: &Context) {
    let Ok(Some(mut open)) = OPEN.try_with(Cell::get) else {
        return;
    };
    if open.pair.ordinal != ctx.info.ordinal {
        return;
    }
    // SAFETY: `open.pair.end` is a live event of this context, which the caller made current;
    // the stream is this thread's per-thread default stream.
    let recorded = unsafe { sys::cuEventRecord(open.pair.end, per_thread_stream()) };
    open.end_recorded = recorded == sys::CUresult::CUDA_SUCCESS;
    let _ = OPEN.try_with(|o| o.set(Some(open)));
}

impl EventPair {
    /// Creates an event pair on `ctx`'s device (the context must be current).
    fn create(ctx: &'static Context) -> Result<EventPair, CudaError> {
        let mut start: sys::CUevent = std::ptr::null_mut();
        // SAFETY: writes one event handle; the context is current; flags 0 is
        // `CU_EVENT_DEFAULT` (timing enabled). The event is never destroyed: it is recycled
        // through `SPARE_PAIRS`.
        ctx.check("cuEventCreate", unsafe {
            sys::cuEventCreate(&mut start, 0)
        })?;
        let mut end: sys::CUevent = std::ptr::null_mut();
        // SAFETY: as above.
        let created = ctx.check("cuEventCreate", unsafe { sys::cuEventCreate(&mut end, 0) });
        if let Err(e) = created {
            // SAFETY: `start` was created above and is referenced nowhere else.
            let _ = unsafe { sys::cuEventDestroy_v2(start) };
            return Err(e);
        }
        Ok(EventPair {
            ordinal: ctx.info.ordinal,
            start,
            end,
        })
    }

    /// Takes one of the calling thread's pairs for `ctx`'s device that no open timing uses:
    /// its own, a spare one, or a new one. [`EventPair::release`] gives it back.
    fn take(ctx: &'static Context) -> Result<EventPair, CudaError> {
        let ordinal = ctx.info.ordinal;
        PAIRS.with(|pairs| {
            let mut pairs = pairs.borrow_mut();
            if let Some(p) = pairs
                .iter_mut()
                .find(|p| p.pair.ordinal == ordinal && !p.in_use)
            {
                p.in_use = true;
                return Ok(p.pair);
            }
            let spare = {
                let mut spare = SPARE_PAIRS.lock().unwrap_or_else(|e| e.into_inner());
                spare
                    .iter()
                    .position(|p| p.ordinal == ordinal)
                    .map(|i| spare.swap_remove(i))
            };
            let pair = match spare {
                Some(p) => p,
                None => EventPair::create(ctx)?,
            };
            pairs.push(OwnedPair { pair, in_use: true });
            Ok(pair)
        })
    }

    /// Gives back a pair taken by [`EventPair::take`].
    fn release(self) {
        let _ = PAIRS.try_with(|pairs| {
            if let Some(p) = pairs
                .borrow_mut()
                .iter_mut()
                .find(|p| p.pair.start == self.start)
            {
                p.in_use = false;
            }
        });
    }
}

/// Closes the timing opened by [`time_on_device`] when dropped (also when the closure
/// panics): restores the enclosing timing and gives the pair back.
struct TimingGuard {
    pair: EventPair,
    enclosing: Option<OpenTiming>,
}

impl TimingGuard {
    /// Whether a wait of the launch sequence recorded this timing's end event.
    fn end_recorded(&self) -> bool {
        OPEN.with(|o| o.get())
            .is_some_and(|t| t.pair.start == self.pair.start && t.end_recorded)
    }
}

impl Drop for TimingGuard {
    fn drop(&mut self) {
        let _ = OPEN.try_with(|o| o.set(self.enclosing));
        self.pair.release();
    }
}

/// Converts an event interval in milliseconds to a [`Duration`] (a negative or non-finite
/// value, which the driver never reports for two events recorded in order, is zero).
fn millis_to_duration(ms: f32) -> Duration {
    if ms.is_finite() && ms > 0.0 {
        Duration::from_secs_f64(f64::from(ms) / 1000.0)
    } else {
        Duration::ZERO
    }
}

/// Runs `f` and returns its result with the time the GPU measured for it on the calling
/// thread's stream of device `ordinal` (resolution about half a microsecond).
///
/// An event is recorded on the thread's per-thread default stream before `f`. `f` is meant to
/// be one call of a compiled function whose kernels run on device `ordinal`: it queues them on
/// that stream and waits for them before returning, and that wait records the end event just
/// before it blocks, behind the last kernel. The interval then runs from the start event to
/// the end of the last kernel: the host-side launch work and the kernels, not the host's wait
/// nor its return path (the module docs say more). If `f` does not wait through the launch
/// sequence, the end event is recorded after `f` returns. Work `f` queues on other devices or
/// streams is not covered.
///
/// Errors: the runtime's usual errors when the driver or the device cannot be opened (no
/// GPU: [`CudaError::LibraryMissing`] or [`CudaError::NoDevice`]), [`CudaError::ContextLost`]
/// after a kernel fault, and [`CudaError::Library`] when the driver lacks
/// `cuEventElapsedTime_v2` (drivers older than CUDA 12.8). `f` is run only once the first
/// event is recorded; if recording the second fails, `f`'s result is dropped.
pub fn time_on_device<R>(ordinal: u32, f: impl FnOnce() -> R) -> Result<(R, Duration), CudaError> {
    let ctx = Context::get(ordinal)?;
    let pair = driver::guard("recording a CUDA event", || {
        ctx.bind()?;
        EventPair::take(ctx)
    })?;
    let guard = TimingGuard {
        pair,
        enclosing: OPEN.with(|o| o.get()),
    };
    driver::guard("recording a CUDA event", || {
        // SAFETY: `pair.start` is a live event of this context, which is current; the stream
        // is this thread's per-thread default stream.
        ctx.check("cuEventRecord", unsafe {
            sys::cuEventRecord(pair.start, per_thread_stream())
        })
    })?;
    OPEN.with(|o| {
        o.set(Some(OpenTiming {
            pair,
            end_recorded: false,
        }))
    });
    let result = f();
    let end_recorded = guard.end_recorded();
    drop(guard);
    let elapsed = driver::guard("timing with CUDA events", || {
        ctx.bind()?;
        if !end_recorded {
            // SAFETY: as above, for the end event.
            ctx.check("cuEventRecord", unsafe {
                sys::cuEventRecord(pair.end, per_thread_stream())
            })?;
        }
        // SAFETY: waits for an event recorded above.
        ctx.check("cuEventSynchronize", unsafe {
            sys::cuEventSynchronize(pair.end)
        })?;
        let mut ms: f32 = 0.0;
        // SAFETY: writes one float; both events were recorded on the same stream and the end
        // event has completed, so the start event has too.
        ctx.check("cuEventElapsedTime_v2", unsafe {
            sys::cuEventElapsedTime_v2(&mut ms, pair.start, pair.end)
        })?;
        Ok(millis_to_duration(ms))
    })?;
    Ok((result, elapsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_become_durations() {
        assert_eq!(millis_to_duration(1.5), Duration::from_micros(1500));
        assert_eq!(millis_to_duration(0.0), Duration::ZERO);
        assert_eq!(millis_to_duration(-2.0), Duration::ZERO);
        assert_eq!(millis_to_duration(f32::NAN), Duration::ZERO);
        assert_eq!(millis_to_duration(f32::INFINITY), Duration::ZERO);
        let d = millis_to_duration(0.0005);
        assert!(
            d > Duration::from_nanos(499) && d < Duration::from_nanos(501),
            "{d:?}"
        );
    }

    #[test]
    fn timing_without_a_device_is_an_error_and_skips_the_closure() {
        // An ordinal no machine has: the runtime's usual error, and `f` never runs.
        let mut ran = false;
        let r = time_on_device(10_000, || ran = true);
        assert!(r.is_err());
        assert!(!ran);
        let msg = r.unwrap_err().to_string();
        assert!(!msg.is_empty());
    }

    #[test]
    fn timing_an_empty_closure_on_device_zero() {
        // With a GPU: a small, non-negative interval and the closure's result; without one:
        // an error that says why.
        match time_on_device(0, || 7) {
            Ok((value, elapsed)) => {
                assert_eq!(value, 7);
                assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
                let (_, again) = time_on_device(0, || ()).unwrap();
                assert!(again < Duration::from_secs(1), "{again:?}");
                // A nested timing takes its own pair; the outer one covers it.
                let (inner, outer) = time_on_device(0, || time_on_device(0, || 3)).unwrap();
                let (value, inner) = inner.unwrap();
                assert_eq!(value, 3);
                assert!(inner <= outer, "{inner:?} > {outer:?}");
                PAIRS.with(|p| assert!(p.borrow().iter().all(|p| !p.in_use)));
                assert!(OPEN.with(Cell::get).is_none());
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}
