//! The lowering of kernels to CPU *step functions*.
//!
//! [`lower_kernel`] turns a kernel into a host function `(args: ptr<u64>, ctx: ptr<u64>) ->
//! u32` without GPU operations, which runs one round of one block (every thread up to its next
//! barrier) and which every CPU backend compiles like any host function; the CPU runtime
//! (`nacre-cpu`) calls it over the grid. [`ctx`] defines the context block the runtime passes
//! to step functions.
//!
//! - [`lower`]: the lowering itself, the thread loop and the resumable state machine for
//!   barriers in divergent control flow ([`StepShape::StateMachine`]);
//! - `regions`: barriers in uniform control flow as one loop over the threads per region
//!   between barriers ([`StepShape::Regions`]);
//! - `state`: the per-thread state words that carry values across barriers, shared by both
//!   lowerings with barriers;
//! - `stride_lockstep`: grid-stride loops in uniform control flow counted once per block,
//!   with a barrier per iteration, so that every thread runs the same iteration in turn
//!   without a state machine; `stride_loops`: yields at the back edge of the other grid-stride
//!   loops, so that threads interleave in [`CpuMode::Grid`]; `stride_unroll`: small ones
//!   unrolled first, so that they yield once per several iterations;
//! - [`collapse`]: a kernel whose only use of the GPU indices is a canonical grid-stride loop
//!   also gets a *collapsed* step function that runs a chunk of the index range as one plain
//!   loop;
//! - [`step_module`]: the step function with copies of the host functions it calls, the unit
//!   a CPU backend compiles.

pub mod collapse;
pub mod ctx;
pub mod lower;
mod module;
mod regions;
mod state;
mod stride_lockstep;
mod stride_loops;
mod stride_unroll;

pub use collapse::{lower_collapsed, Collapsed};
pub use lower::{
    lower_kernel, step_signature, LoweredKernel, StepInfo, StepShape, MAX_SHARED_BYTES,
};
pub use module::step_module;
pub use state::{LANE_STRIDE, LANE_THREADS};

/// How launches run on the CPU (the lowering depends on it).
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
