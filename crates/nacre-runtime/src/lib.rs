//! Nacre's memory model and the seam between the engine and kernel runtimes.
//!
//! - [`Array`] ([`mod@array`]): the one way data reaches kernels: allocated on a [`Device`]
//!   ([`device`]; [`CpuDevice`] on the host, the CUDA and Metal runtimes provide theirs),
//!   copied, or wrapped; registered in the process-wide size table ([`memory`]) while it
//!   lives, so that launches reject pointers into freed memory.
//! - [`KernelRuntime`] and [`PreparedKernels`] ([`runtime`]): what every kernel runtime
//!   implements, and all the engine knows of one.
//! - [`LaunchLimits`] ([`launch`]): the grid and block sizes every runtime checks.
//! - [`MemoryError`] and [`RuntimeError`] ([`error`]).
//!
//! Every kernel runtime (`nacre-cpu`, `nacre-cuda`, `nacre-metal`) depends on this crate and
//! on none of the others.

pub mod array;
pub mod device;
pub mod error;
pub mod launch;
pub mod memory;
pub mod runtime;

pub use array::Array;
pub use device::{CpuDevice, Device};
pub use error::{MemoryError, RuntimeError};
pub use launch::LaunchLimits;
pub use memory::{buffer_bytes, find_buffer};
pub use runtime::{KernelRuntime, PreparedKernels};
