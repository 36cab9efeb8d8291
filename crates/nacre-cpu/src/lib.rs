//! Nacre's CPU kernel runtime: kernels run on the host's cores, with the semantics they have
//! on a GPU.
//!
//! A kernel runs on the CPU in three steps:
//!
//! 1. `nacre_kernel::step` lowers it to a host *step function* `(args: ptr<u64>, ctx:
//!    ptr<u64>) -> u32` without GPU operations, which runs one round of one block (every
//!    thread up to its next barrier) and which every CPU backend compiles like any host
//!    function;
//! 2. [`prepare_cpu`] ([`mod@prepare`]) lowers, optimises and compiles every kernel of a module
//!    into a [`CpuKernel`] ([`kernel`]), and gives the launch binding to [`cpu_launch`];
//! 3. the executor ([`exec`]): a launch checks its grid and its pointer arguments, then runs
//!    the blocks as [`CpuMode`] says, calling the step function through one native signature
//!    (or through [`nacre_backend::Executable::call`] on the interpreter).
//!
//! In [`CpuMode::Grid`], a kernel whose only use of the GPU indices is a canonical grid-stride
//! loop also gets a *collapsed* step function, run as chunks of one plain loop over the index
//! spread over the workers. When the host backend is Cranelift, the system C compiler also
//! compiles the collapsed step function in the background ([`c_tier`]), vectorised, and
//! launches switch to that code once it is ready ([`CpuKernel::c_tier`]).
//!
//! [`CpuRuntime`] ([`runtime`]) puts all of it behind `nacre_runtime::KernelRuntime`.

pub mod c_tier;
pub mod exec;
pub mod kernel;
pub mod prepare;
mod private;
pub mod runtime;

pub use c_tier::{wait_for_c_tier, TierState};
pub use exec::{cpu_launch, MAX_BLOCK_THREADS};
pub use kernel::CpuKernel;
pub use nacre_kernel::CpuMode;
pub use prepare::{prepare_cpu, CpuKernels};
pub use runtime::{CpuOptions, CpuRuntime};
