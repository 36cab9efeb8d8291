//! Kernels on the CPU.
//!
//! A kernel runs on the CPU in three steps:
//!
//! 1. [`lower`]: the kernel becomes a host *step function* `(args: ptr<u64>, ctx: ptr<u64>)
//!    -> u32` without GPU operations, which runs one round of one block (every thread up to
//!    its next barrier) and which every CPU backend compiles like any host function;
//! 2. [`prepare_cpu`]: every kernel of a module is lowered, optimised and compiled into a
//!    [`CpuKernel`], and the module's launches are bound to [`cpu_launch`];
//! 3. the executor (`exec`): a launch checks its grid and its pointer arguments, then runs
//!    the blocks as [`CpuMode`] says, calling the step function through one native
//!    signature (or through [`nacre_backend::Executable::call`] on the interpreter).
//!
//! A kernel with barriers runs as one loop over the threads per region between barriers when
//! its barriers sit in uniform control flow (`regions`, [`StepShape::Regions`]), else
//! as a resumable state machine ([`StepShape::StateMachine`], see [`lower`]).
//!
//! In [`CpuMode::Grid`], a kernel whose only use of the GPU indices is a canonical grid-stride
//! loop also gets a *collapsed* step function ([`collapse`]): launched on a one-dimensional
//! grid, it runs as one plain loop over the index, in chunks spread over the workers, with no
//! per-thread state machine. When the backend is Cranelift, the system C compiler also
//! compiles the collapsed step function in the background (`loop_tier`), vectorised, and
//! launches switch to that code once it is ready ([`CpuKernel::c_tier`]).
//!
//! [`ctx`] defines the context block the executor passes to step functions.

pub mod collapse;
mod copy;
pub mod ctx;
mod emit;
mod exec;
mod kernel;
mod liveness;
mod loop_tier;
pub mod lower;
mod prepare;
mod regions;
mod ssa_repair;
mod stride_loops;

pub use exec::{cpu_launch, MAX_BLOCK_THREADS};
pub use kernel::CpuKernel;
pub use loop_tier::{wait_for_c_tier, TierState};
pub use lower::{
    lower_kernel, step_signature, LoweredKernel, StepInfo, StepShape, MAX_SHARED_BYTES,
};
pub use prepare::{prepare_cpu, step_module, CpuKernels};

/// How launches run on the CPU.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub enum CpuMode {
    /// One block of one thread (`gridDim = blockDim = 1`) on the calling thread, whatever
    /// the launch asks for: the seed's fallback. Correct only for grid-stride kernels (every
    /// thread loops over the whole index range with stride `gridDim * blockDim`); shared
    /// arrays come from a per-thread arena and barriers just continue.
    Serial,
    /// Full grid semantics: every block and every thread runs, blocks spread over all cores,
    /// barriers honoured, one set of shared arrays per block.
    #[default]
    Grid,
}
