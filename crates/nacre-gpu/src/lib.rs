//! Nacre's GPU runtime: unified-memory arrays, the device seam, and kernels executed on the
//! CPU.
//!
//! - [`Array`] ([`mod@array`]): the one way data reaches kernels: allocated on a [`Device`]
//!   ([`device`]; [`CpuDevice`] on the host, CUDA and Metal plug in later), copied, or
//!   wrapped; registered in the process-wide size table ([`memory`]) while it lives, so that
//!   launches reject pointers into freed memory.
//! - [`cpu`]: kernels on the CPU: the lowering of a kernel to a step function that every CPU
//!   backend compiles, the executor (serial or full grid semantics with barriers and shared
//!   memory), [`prepare_cpu`] which compiles a module's kernels and binds its launches, and
//!   the launcher [`cpu_launch`].
//! - [`GpuError`] ([`error`]): failures outside compiled code (memory, preparation); failures
//!   during a launch are [`nacre_ir::Trap`]s.

pub mod array;
pub mod cpu;
pub mod device;
pub mod error;
pub mod memory;

pub use array::Array;
pub use cpu::{cpu_launch, prepare_cpu, CpuKernel, CpuKernels, CpuMode};
pub use device::{CpuDevice, Device};
pub use error::GpuError;
pub use memory::{buffer_bytes, find_buffer};
