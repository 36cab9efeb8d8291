//! [`Compiled`]: a typed handle to a compiled function, and the tiers behind it.

use crate::args::{Arg, ArgPlan, Lent};
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

/// A dynamically typed direct-mode runner (arguments and result as bits, and the memory each
/// pointer argument lends, in parameter order).
pub(crate) type DirectFn =
    dyn Fn(&[u64], &[nacre_trace::Region]) -> Result<u64, Trap> + Send + Sync;

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
            Tier::Direct(f) => f(args, &[]),
        }
    }

    /// Calls with `bits` (one per declared parameter) and the memory `lent` by each pointer
    /// argument: a checked backend tier takes each pointer's base and size after the declared
    /// arguments; direct mode checks accesses against the lent memory itself.
    fn call_lent(&self, bits: &[u64], lent: &[Option<Lent>]) -> Result<u64, Trap> {
        match self {
            Tier::Backend { exec, .. } => {
                let mut args = [0u64; 3 * MAX_PARAMS];
                let n = bits.len();
                args[..n].copy_from_slice(bits);
                let mut k = n;
                for l in lent.iter().flatten() {
                    args[k] = l.addr as u64;
                    args[k + 1] = l.bytes as u64;
                    k += 2;
                }
                exec.call(&args[..k])
            }
            Tier::Direct(f) => {
                let regions: Vec<nacre_trace::Region> = lent
                    .iter()
                    .flatten()
                    .map(|l| nacre_trace::Region {
                        addr: l.addr,
                        bytes: l.bytes,
                        writable: l.writable,
                    })
                    .collect();
                f(bits, &regions)
            }
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

/// The most parameters a typed call takes.
const MAX_PARAMS: usize = 8;

pub(crate) struct Inner {
    /// How the entry takes its arguments (pointer positions, what it writes through).
    pub plan: ArgPlan,
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
    /// See [`Compiled::wait_for_second_tier`].
    fn wait_for_second_tier(&self, timeout: Duration) -> bool {
        let Some(slot) = &self.second else {
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

    /// The optimised IR as text, printed on first use (absent in direct mode).
    fn ir_text(&self) -> Option<&str> {
        let module = self.module.as_ref()?;
        Some(
            self.ir
                .get_or_init(|| nacre_ir::printer::module_with_loops(module).to_string()),
        )
    }

    /// A call with arguments and result as bits, exactly as the tier takes them.
    fn call_bits(&self, args: &[u64]) -> Result<u64, Error> {
        let r = self.select().1.call_bits(args);
        self.finish(r.as_ref().err().map_or(0, |t| t.code()))?;
        r.map_err(Error::Trap)
    }

    /// A call with pointer arguments: refuses shared borrows for parameters the function
    /// writes through, then calls the tier with the lent memory.
    fn call_lent(&self, bits: &[u64], lent: &[Option<Lent>]) -> Result<u64, Error> {
        for (i, l) in lent.iter().enumerate() {
            if matches!(l, Some(l) if !l.writable) && self.plan.writes(i) {
                return Err(Error::ReadOnlyArgument {
                    function: self.name.clone(),
                    param: i,
                });
            }
        }
        let r = self.select().1.call_lent(bits, lent);
        self.finish(r.as_ref().err().map_or(0, |t| t.code()))?;
        r.map_err(Error::Trap)
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
        self.inner.ir_text()
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
        self.inner.wait_for_second_tier(timeout)
    }

    /// Calls the function with arguments and result encoded as bits (see
    /// [`nacre_ir::semantics`]); the typed `call` methods are the usual way in.
    ///
    /// The arguments are those of the compiled entry: for a bounds-checked function (every
    /// [`Compiled`]), the declared parameters followed by the base address and the size in
    /// bytes of each pointer parameter's memory
    /// ([`nacre_ir::transform::companion_positions`]).
    ///
    /// # Safety
    /// Each base and size must describe live memory that the function may access (write, for
    /// parameters it writes through) for the whole call, with no other access racing with
    /// it; for an [`Unchecked`] function, pointer arguments must satisfy the contract of
    /// [`nacre_trace::RawPtr::new`]. There must be exactly one argument per parameter.
    pub unsafe fn call_bits(&self, args: &[u64]) -> Result<u64, Error> {
        self.inner.call_bits(args)
    }
}

/// A compiled function that does **not** check its memory accesses, for measured peak speed
/// ([`crate::Engine::compile_unchecked`]). Its `call` is `unsafe` and takes raw pointers
/// ([`nacre_trace::RawPtr`]); everything else is as for [`Compiled`].
pub struct Unchecked<Args, R> {
    pub(crate) inner: Arc<Inner>,
    pub(crate) _sig: PhantomData<fn(Args) -> R>,
}

impl<Args, R> Clone for Unchecked<Args, R> {
    fn clone(&self) -> Self {
        Unchecked {
            inner: self.inner.clone(),
            _sig: PhantomData,
        }
    }
}

impl<Args, R> fmt::Debug for Unchecked<Args, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unchecked")
            .field("name", &self.inner.name)
            .finish()
    }
}

impl<Args, R> Unchecked<Args, R> {
    /// Per-stage compile timings.
    pub fn timings(&self) -> Timings {
        self.inner.timings
    }

    /// Waits until the second tier is ready or failed, as [`Compiled::wait_for_second_tier`].
    pub fn wait_for_second_tier(&self, timeout: Duration) -> bool {
        self.inner.wait_for_second_tier(timeout)
    }

    /// The optimised IR, in its text form.
    pub fn ir(&self) -> Option<&str> {
        self.inner.ir_text()
    }

    /// The traced function's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Calls with arguments and result as bits (one per declared parameter).
    ///
    /// # Safety
    /// As for [`Unchecked::call`].
    pub unsafe fn call_bits(&self, args: &[u64]) -> Result<u64, Error> {
        self.inner.call_bits(args)
    }
}

macro_rules! typed_call {
    ($($a:ident : $p:ident),*) => {
        impl<R: Ret, $($p: Param),*> Compiled<($($p,)*), R> {
            /// Calls the compiled function: scalars by value, memory borrowed (see
            /// [`crate::args`]). Every access through a pointer is checked against the memory
            /// it came from; an access outside it is `Err(Error::Trap(Trap::OutOfBounds { .. }))`.
            #[allow(clippy::too_many_arguments)]
            #[inline]
            pub fn call(&self $(, $a: impl Arg<$p>)*) -> Result<R::Host, Error> {
                if !self.inner.plan.ptrs.is_empty() {
                    let bits = self.inner.call_lent(&[$($a.bits()),*], &[$($a.lent()),*])?;
                    return Ok(R::Host::from_bits(bits));
                }
                let (native, tier) = self.inner.select();
                if let Some(addr) = native {
                    type Abi<H> = <H as HostValue>::Abi;
                    type Entry<$($p,)* R> = extern "C" fn($(Abi<<$p as Param>::Host>,)* *mut u32) -> Abi<<R as Ret>::Host>;
                    // SAFETY: `addr` is the entry of native code compiled from this function's
                    // IR, whose signature the type parameters describe; the native calling
                    // convention (nacre-backend docs) passes each parameter as its `Abi` type
                    // followed by the status pointer. The function has no pointer parameter
                    // (those go through `call_lent`), so every argument is a plain value.
                    let f = unsafe { std::mem::transmute::<usize, Entry<$($p,)* R>>(addr) };
                    let mut status = 0u32;
                    let r = f($($a.abi(),)* &mut status);
                    self.inner.finish(status)?;
                    return Ok(R::Host::from_abi(r));
                }
                let r = tier.call_bits(&[$($a.bits()),*]);
                self.inner.finish(r.as_ref().err().map_or(0, |t| t.code()))?;
                let bits = r.map_err(Error::Trap)?;
                Ok(R::Host::from_bits(bits))
            }
        }

        impl<R: Ret, $($p: Param),*> Unchecked<($($p,)*), R> {
            /// Calls the compiled function, which does not check its memory accesses.
            ///
            /// # Safety
            /// Every load and store the function performs (at whatever index it computes, in
            /// host code and in the kernels it launches) must be in bounds of live memory that
            /// the pointer argument it derives from may access for the whole call, writes
            /// must not race with other accesses, and kernels on a GPU must receive memory of
            /// that GPU (see [`nacre_trace::RawPtr::new`]).
            #[allow(clippy::too_many_arguments)]
            #[inline]
            pub unsafe fn call(&self $(, $a: $p::Host)*) -> Result<R::Host, Error> {
                let (native, tier) = self.inner.select();
                if let Some(addr) = native {
                    type Abi<H> = <H as HostValue>::Abi;
                    type Entry<$($p,)* R> = extern "C" fn($(Abi<<$p as Param>::Host>,)* *mut u32) -> Abi<<R as Ret>::Host>;
                    // SAFETY: as in `Compiled::call`; pointer arguments are covered by this
                    // function's contract.
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
