//! [`Compiled`]: a typed handle to a compiled function, and the tiers behind it.

use crate::error::Error;
use nacre_backend::Executable;
use nacre_ir::Trap;
use nacre_runtime::PreparedKernels;
use nacre_trace::{HostValue, Param, Ret};
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How long each stage of compiling a function took.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct Timings {
    /// Running the traced function to its capture.
    pub trace: Duration,
    /// Optimisation passes and verification.
    pub passes: Duration,
    /// Backend compilation (IR to callable) of the first (or only) tier.
    pub backend: Duration,
    /// All of it, from nothing to a callable.
    pub total: Duration,
}

/// Which tier served how many calls (tiered compilation only).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct TierStats {
    /// Calls served by the first tier.
    pub first_tier_calls: u64,
    /// Calls served by the second tier.
    pub second_tier_calls: u64,
    /// Whether the second tier has taken over.
    pub second_tier_ready: bool,
    /// How long the second tier took to compile, once ready.
    pub second_tier_compile: Option<Duration>,
    /// Why the second tier failed to compile, if it did (the first tier keeps serving).
    pub second_tier_error: Option<String>,
}

/// A dynamically typed direct-mode runner (arguments and result as bits).
pub(crate) type DirectFn = dyn Fn(&[u64]) -> Result<u64, Trap> + Send + Sync;

/// One compiled form of the function.
pub(crate) enum Tier {
    /// Compiled by a backend; `native` is the typed entry's address for native backends.
    Backend {
        exec: Arc<dyn Executable>,
        native: Option<usize>,
    },
    /// Direct mode: the user's Rust code runs on concrete values.
    Direct(Box<DirectFn>),
}

impl Tier {
    pub fn backend(exec: Arc<dyn Executable>) -> Tier {
        let native = exec.native_entry().map(|p| p as usize);
        Tier::Backend { exec, native }
    }

    /// The native entry's address, for native backends.
    pub fn native_addr(&self) -> Option<usize> {
        self.native()
    }

    fn native(&self) -> Option<usize> {
        match self {
            Tier::Backend { native, .. } => *native,
            Tier::Direct(_) => None,
        }
    }

    fn call_bits(&self, args: &[u64]) -> Result<u64, Trap> {
        match self {
            Tier::Backend { exec, .. } => exec.call(args),
            Tier::Direct(f) => f(args),
        }
    }
}

/// The background tier: filled once by the compiling thread, read lock-free by callers.
#[derive(Default)]
pub(crate) struct SecondTierSlot {
    pub tier: OnceLock<Tier>,
    /// The second tier's native entry (0 until ready), the only thing the hot path reads.
    pub native: AtomicUsize,
    pub compile_time: OnceLock<Duration>,
    pub error: OnceLock<String>,
    pub first_calls: AtomicU64,
    pub second_calls: AtomicU64,
}

pub(crate) struct Inner {
    /// Compiled kernels the host code launches; kept alive as long as the function.
    pub kernels: Option<Arc<dyn PreparedKernels>>,
    pub first: Tier,
    pub second: Option<Arc<SecondTierSlot>>,
    pub timings: Timings,
    /// The optimised module (absent in direct mode), printed on demand into `ir`.
    pub module: Option<Arc<nacre_ir::VerifiedModule>>,
    pub ir: OnceLock<String>,
    pub name: String,
}

impl Inner {
    /// Completes a call whose host code returned `status`: waits for the kernels it queued
    /// on a GPU, and reports the first failure (a kernel's trap before the host's, since
    /// host code stops at the first failed launch).
    #[inline]
    fn finish(&self, status: u32) -> Result<(), Error> {
        let device = self.kernels.as_ref().map_or(0, |k| k.finish());
        let status = if device != 0 { device } else { status };
        if status == 0 {
            return Ok(());
        }
        Err(self.status_error(status))
    }

    /// The error for a nonzero status word: a device error with the kernel runtime's account
    /// of it where there is one.
    #[cold]
    fn status_error(&self, status: u32) -> Error {
        if status == Trap::DeviceError.code() {
            if let Some(e) = self.kernels.as_ref().and_then(|k| k.take_error()) {
                return Error::Runtime(e);
            }
        }
        Trap::from_code(status).map_or(Error::UnknownTrap(status), Error::Trap)
    }

    /// The tier to call now: its native entry (if any) and the tier itself.
    #[inline]
    fn select(&self) -> (Option<usize>, &Tier) {
        if let Some(slot) = &self.second {
            let native = slot.native.load(Ordering::Acquire);
            if native != 0 {
                slot.second_calls.fetch_add(1, Ordering::Relaxed);
                let tier = slot.tier.get().unwrap_or(&self.first);
                return (Some(native), tier);
            }
            if let Some(tier) = slot.tier.get() {
                slot.second_calls.fetch_add(1, Ordering::Relaxed);
                return (tier.native(), tier);
            }
            slot.first_calls.fetch_add(1, Ordering::Relaxed);
        }
        (self.first.native(), &self.first)
    }
}

/// A compiled traced function with parameters `Args` (a tuple of `Val`/`Ptr` types) and
/// result `R`. Cheap to clone; callable from many threads at once.
///
/// Call it with plain Rust values: `f.call(1, 2)` for a `fn(Val<i32>, Val<i32>) -> Val<i32>`
/// returns `Ok(3)`, or `Err(Error::Trap(..))` on a runtime error such as division by zero.
/// Pointer parameters take a [`nacre_trace::RawPtr`].
pub struct Compiled<Args, R> {
    pub(crate) inner: Arc<Inner>,
    pub(crate) _sig: PhantomData<fn(Args) -> R>,
}

impl<Args, R> Clone for Compiled<Args, R> {
    fn clone(&self) -> Self {
        Compiled {
            inner: self.inner.clone(),
            _sig: PhantomData,
        }
    }
}

impl<Args, R> fmt::Debug for Compiled<Args, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compiled")
            .field("name", &self.inner.name)
            .field("timings", &self.inner.timings)
            .finish()
    }
}

impl<Args, R> Compiled<Args, R> {
    /// Per-stage compile timings.
    pub fn timings(&self) -> Timings {
        self.inner.timings
    }

    /// The optimised IR, in its text form (not available in direct mode).
    pub fn ir(&self) -> Option<&str> {
        let module = self.inner.module.as_ref()?;
        Some(
            self.inner
                .ir
                .get_or_init(|| nacre_ir::printer::module_with_loops(module).to_string()),
        )
    }

    /// The backend's output (generated source or listing) of the tier serving calls now, if
    /// the backend keeps one.
    pub fn listing(&self) -> Option<&str> {
        match self.inner.select().1 {
            Tier::Backend { exec, .. } => exec.listing(),
            Tier::Direct(_) => None,
        }
    }

    /// True if both handles refer to the same compilation (the engine's cache returned it).
    pub fn is_same(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The traced function's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Tier statistics (`None` without tiered compilation).
    pub fn tier_stats(&self) -> Option<TierStats> {
        let slot = self.inner.second.as_ref()?;
        Some(TierStats {
            first_tier_calls: slot.first_calls.load(Ordering::Relaxed),
            second_tier_calls: slot.second_calls.load(Ordering::Relaxed),
            second_tier_ready: slot.tier.get().is_some(),
            second_tier_compile: slot.compile_time.get().copied(),
            second_tier_error: slot.error.get().cloned(),
        })
    }

    /// Waits until the second tier is ready or failed (for tests and benchmarks; callers never
    /// need to). Returns whether it is ready. Without tiering, returns `true` at once.
    pub fn wait_for_second_tier(&self, timeout: Duration) -> bool {
        let Some(slot) = &self.inner.second else {
            return true;
        };
        let start = std::time::Instant::now();
        while start.elapsed() < timeout {
            if slot.tier.get().is_some() {
                return true;
            }
            if slot.error.get().is_some() {
                return false;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        slot.tier.get().is_some()
    }

    /// Calls the function with arguments and result encoded as bits (see
    /// [`nacre_ir::semantics`]); the typed `call` methods are the usual way in.
    ///
    /// # Safety
    /// Pointer arguments must satisfy the contract of [`nacre_trace::RawPtr::new`]; there must
    /// be exactly one argument per parameter.
    pub unsafe fn call_bits(&self, args: &[u64]) -> Result<u64, Error> {
        self.call_bits_unchecked(args)
    }

    fn call_bits_unchecked(&self, args: &[u64]) -> Result<u64, Error> {
        let r = self.inner.select().1.call_bits(args);
        self.inner
            .finish(r.as_ref().err().map_or(0, |t| t.code()))?;
        r.map_err(Error::Trap)
    }
}

macro_rules! typed_call {
    ($($a:ident : $p:ident),*) => {
        impl<R: Ret, $($p: Param),*> Compiled<($($p,)*), R> {
            /// Calls the compiled function.
            #[allow(clippy::too_many_arguments)]
            #[inline]
            pub fn call(&self $(, $a: $p::Host)*) -> Result<R::Host, Error> {
                let (native, tier) = self.inner.select();
                if let Some(addr) = native {
                    type Abi<H> = <H as HostValue>::Abi;
                    type Entry<$($p,)* R> = extern "C" fn($(Abi<<$p as Param>::Host>,)* *mut u32) -> Abi<<R as Ret>::Host>;
                    // SAFETY: `addr` is the entry of native code compiled from this function's
                    // IR, whose signature the type parameters describe; the native calling
                    // convention (nacre-backend docs) passes each parameter as its `Abi` type
                    // followed by the status pointer. Pointer arguments can only be made
                    // through the unsafe `RawPtr::new`, whose caller vouched for them.
                    let f = unsafe { std::mem::transmute::<usize, Entry<$($p,)* R>>(addr) };
                    let mut status = 0u32;
                    let r = f($($a.to_abi(),)* &mut status);
                    self.inner.finish(status)?;
                    return Ok(R::Host::from_abi(r));
                }
                let r = tier.call_bits(&[$($a.to_bits()),*]);
                self.inner.finish(r.as_ref().err().map_or(0, |t| t.code()))?;
                let bits = r.map_err(Error::Trap)?;
                Ok(R::Host::from_bits(bits))
            }
        }
    };
}
typed_call!();
typed_call!(a: A);
typed_call!(a: A, b: B);
typed_call!(a: A, b: B, c: C);
typed_call!(a: A, b: B, c: C, d: D);
typed_call!(a: A, b: B, c: C, d: D, e: E);
typed_call!(a: A, b: B, c: C, d: D, e: E, f: F);
typed_call!(a: A, b: B, c: C, d: D, e: E, f: F, g: G);
typed_call!(a: A, b: B, c: C, d: D, e: E, f: F, g: G, h: H);
