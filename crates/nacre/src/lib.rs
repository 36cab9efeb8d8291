//! Nacre: a tracing JIT compiler for Rust.
//!
//! Write ordinary-looking Rust over traced values ([`Val<T>`], [`Ptr<T>`]) and mark it
//! `#[jit]`; an [`Engine`] runs it once to capture what it does, builds an SSA IR, optimises it
//! and compiles it with a backend (interpreter, Cranelift, C). The result is a typed
//! [`Compiled`] callable.
//!
//! ```
//! use nacre::prelude::*;
//!
//! #[jit]
//! fn conditional_sum(n: Val<i32>) -> Val<i32> {
//!     let mut sum = Val::new(0);
//!     for i in 0..n {
//!         if i % 3 == 0 {
//!             sum += i;
//!         }
//!     }
//!     sum
//! }
//!
//! let engine = Engine::new(Options::default()).unwrap();
//! let f = engine.compile(conditional_sum).unwrap();
//! assert_eq!(f.call(10).unwrap(), 0 + 3 + 6 + 9);
//! ```

extern crate self as nacre;

pub mod args;
mod compiled;
mod engine;
mod error;
pub mod mem;
mod options;
pub mod runtimes;

pub use args::Arg;
pub use compiled::{Compiled, TierStats, Timings, Unchecked};
pub use engine::{bounds_checked, make_backend, optimize, trace_module, Engine};
pub use error::Error;
pub use nacre_kernel::CheckFreeOptions;
pub use options::{
    BackendKind, COptions, DumpOptions, DumpTarget, FirstTier, OptLevel, Options, SecondTier,
    Stage, Tiering, DUMP_VAR,
};
pub use runtimes::{DeviceKind, RuntimeOptions};

pub use nacre_macros::{jit, kernel, Carry, Record, TracedEnum};
pub use nacre_trace::{
    cf, select, trace, Callee, Carry, Element, EnumVal, Flat, FnPointer, FnVal, Handle, Ptr,
    RawPtr, Record, Slot, TraceError, TraceFn, Traced, TracedEnum, Val,
};
/// The bounds generic traced code uses: `fn f<T: Num>(a: Val<T>, b: Val<T>)` needs nothing
/// else for arithmetic, comparisons, `select` and control flow ([`Int`] adds bitwise operators
/// and shifts, [`Float`] Rust's float methods (`sqrt`, `exp`, `sin`, `round`, ...), [`Signed`] negation).
pub use nacre_trace::{Arith, Bits, Float, HostValue, Int, Integer, IntoVal, Num, Scalar, Signed};

pub use nacre_backend::{Backend, BackendError, Linkage};
/// Whether a C compiler command ([`COptions::compiler`]) is installed.
pub use nacre_c::compiler_available as c_compiler_available;

/// The C backend's folder of compiled libraries kept between processes
/// ([`COptions::cache_dir`]) and its counters.
pub mod c_cache {
    pub use nacre_c::code_cache::{stats, CodeCacheStats, CACHE_DIR_ENV};
}
/// The GPU programming model: kernels, launches, indices, barriers, shared arrays and
/// unified-memory arrays.
pub mod gpu {
    pub use crate::kernel;
    pub use crate::runtimes::{DeviceKind, RuntimeOptions};
    pub use nacre_cpu::{wait_for_c_tier, CpuMode, CpuOptions, CpuRuntime};
    pub use nacre_runtime::{
        buffer_bytes, Array, CpuDevice, Device, KernelRuntime, LaunchLimits, MemoryError,
        PreparedKernels, RuntimeError,
    };
    pub use nacre_trace::gpu::*;

    /// Kernels on NVIDIA GPUs: device information, the kernel cache and the runtime's
    /// counters. Select CUDA with `Options::runtime = RuntimeOptions::Cuda(..)` (or
    /// [`DeviceKind::best_available`]) and allocate arrays on [`crate::Engine::device`].
    pub mod cuda {
        pub use nacre_cuda::runtime::{
            cached_kernels, clear_kernel_cache, device_count, device_info, probe, stats,
            thread_stats, time_on_device, CudaDevice, CudaError, CudaOptions, CudaRuntime,
            CudaStats, DeviceInfo, LaunchLimits, LaunchSync, CACHE_DIR_ENV,
        };
    }

    /// Kernels on Apple GPUs (macOS only; elsewhere every entry point reports
    /// [`metal::MetalError::NotMacOs`]): the generated MSL and the runtime's probe. Select Metal
    /// with `Options::runtime = RuntimeOptions::Metal`.
    pub mod metal {
        pub use nacre_metal::{emit_msl, probe, MetalDevice, MetalError, MetalRuntime, MslKernel};
    }
}

/// What the derives and `#[jit]` expand to; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use nacre_trace::enums::variant_from_bits;
}

/// The exhaustiveness witness of a `match` on variants that `#[jit]` lowers to a branch chain:
/// a real `match` over the scrutinee's type with the unguarded arms' patterns, which Rust
/// checks (see `nacre_trace::cf::Scrutinee`). Not part of the API.
#[doc(hidden)]
#[macro_export]
macro_rules! __exhaustive {
    ($x:expr; $($p:pat),* $(,)?) => {
        match $x { $( $p => {} )* }
    };
}

/// The IR, for inspection and dumps.
pub use nacre_ir as ir;
/// The half-precision floats of `Val<f16>`, `Val<bf16>` and `Array<f16>`, `Array<bf16>` (the
/// `half` crate's types; see [`ir::semantics`] for how they compute).
pub use nacre_ir::half::{bf16, f16};
pub use nacre_ir::Trap;

/// The names most programs need: `use nacre::prelude::*;`.
/// Atomic operations on traced pointers and fences (see [`nacre_trace::atomic`]), with
/// Rust's `Ordering`.
pub mod atomic {
    pub use nacre_trace::atomic::{
        fence, fence_block, Atomic, AtomicElement, AtomicInt, AtomicMinMax,
    };
    pub use std::sync::atomic::Ordering;
}

pub mod prelude {
    pub use crate::{
        jit, kernel, select, BackendKind, Compiled, Engine, EnumVal, FnVal, Options, Ptr, RawPtr,
        TracedEnum, Val,
    };
    pub use nacre_trace::cf::call;
}

/// Calls a Rust `extern "C"` function from traced code at run time:
/// `invoke!(my_fn(a, b))` where `a`, `b` are `Val`s (up to six arguments).
#[macro_export]
macro_rules! invoke {
    ($f:ident ( )) => {
        $crate::cf::invoke(::core::stringify!($f), $crate::cf::extern_fn0($f), ())
    };
    ($f:ident ( $a:expr $(,)? )) => {
        $crate::cf::invoke(::core::stringify!($f), $crate::cf::extern_fn1($f), ($a,))
    };
    ($f:ident ( $a:expr, $b:expr $(,)? )) => {
        $crate::cf::invoke(::core::stringify!($f), $crate::cf::extern_fn2($f), ($a, $b))
    };
    ($f:ident ( $a:expr, $b:expr, $c:expr $(,)? )) => {
        $crate::cf::invoke(
            ::core::stringify!($f),
            $crate::cf::extern_fn3($f),
            ($a, $b, $c),
        )
    };
    ($f:ident ( $a:expr, $b:expr, $c:expr, $d:expr $(,)? )) => {
        $crate::cf::invoke(
            ::core::stringify!($f),
            $crate::cf::extern_fn4($f),
            ($a, $b, $c, $d),
        )
    };
    ($f:ident ( $a:expr, $b:expr, $c:expr, $d:expr, $e:expr $(,)? )) => {
        $crate::cf::invoke(
            ::core::stringify!($f),
            $crate::cf::extern_fn5($f),
            ($a, $b, $c, $d, $e),
        )
    };
    ($f:ident ( $a:expr, $b:expr, $c:expr, $d:expr, $e:expr, $g:expr $(,)? )) => {
        $crate::cf::invoke(
            ::core::stringify!($f),
            $crate::cf::extern_fn6($f),
            ($a, $b, $c, $d, $e, $g),
        )
    };
}

/// The README's examples, compiled and run as doctests of the facade.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExamples;
