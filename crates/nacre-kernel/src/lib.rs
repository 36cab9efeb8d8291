//! Kernel compilation: the passes and analyses that exist for GPU kernels, between the
//! target-independent IR (`nacre-ir`) and the kernel runtimes and printers.
//!
//! - [`address_space`]: every pointer of a kernel (and of the device copies of the functions
//!   it calls) gets the device or shared address space, for targets whose pointer types carry
//!   it (MSL) — [`infer_address_spaces`];
//! - [`bounds`]: the bounds checks of grid-stride loops hoisted to the kernel's entry —
//!   [`hoist_grid_stride_checks`] — and those proven in range for the kernel's launch shape
//!   removed — [`remove_proven_kernel_checks`];
//! - [`check_free`]: a check-free body for kernels whose remaining checks the launch can
//!   prove, run when it does — [`add_check_free_versions`];
//! - [`compares`]: comparisons the launch shape decides become constants —
//!   [`fold_proven_compares`];
//! - [`launch_checks`]: checks of guarded one-thread-per-element accesses hoisted to the
//!   entry — [`hoist_guarded_global_checks`] — and launch-uniform entry checks made by the host
//!   before each launch — [`move_uniform_checks_to_launches`];
//! - [`launch_shape`]: block and grid sizes every launch of a kernel agrees on become
//!   constants of the kernel — [`specialised_for_launches`], for runtimes that launch exactly
//!   what the host code asks for;
//! - [`grid_stride`]: the canonical grid-stride loop of a kernel and the lane analysis of its
//!   body — [`grid_stride_loop`], [`lane_access`];
//! - [`mod@private_sums`]: pointer parameters reached only by relaxed atomic additions, which a
//!   CPU launch may give each worker privately — [`private_sums()`], and the variant of a kernel
//!   whose additions to them are plain — [`make_sums_plain`];
//! - [`mod@structure`]: the control-flow graph as nested branches, loops and labelled regions, for
//!   C-family printers without `goto` — [`structure()`];
//! - [`unroll`]: short loops with constant bounds unrolled whole, for thread loops the C
//!   compiler vectorises — [`unroll_short_loops`];
//! - [`step`]: the lowering of a kernel to a CPU *step function* (one round of one block),
//!   which any CPU backend compiles like a host function, and the collapsed form of
//!   grid-stride kernels.
//!
//! Everything here reads or rewrites IR through `nacre-ir`'s builder, analyses and
//! transforms; nothing here runs code.

pub mod address_space;
pub mod bounds;
pub mod check_free;
pub mod compares;
pub mod error;
pub mod grid_stride;
mod guarded_loads;
pub mod launch_checks;
pub mod launch_shape;
pub mod private_sums;
pub mod shared_atomics;
pub mod step;
pub mod structure;
pub mod unroll;

#[cfg(test)]
mod test_host;

pub use address_space::{infer_address_spaces, AddressSpaceError, DeviceModule};
pub use bounds::{hoist_grid_stride_checks, remove_proven_kernel_checks};
pub use check_free::{add_check_free_versions, CheckFreeOptions};
pub use compares::fold_proven_compares;
pub use error::KernelError;
pub use grid_stride::{grid_stride_loop, lane_access, GridStrideLoop, LaneAccess, LaneArray};
pub use launch_checks::{hoist_guarded_global_checks, move_uniform_checks_to_launches};
pub use launch_shape::{
    launch_shapes, specialise_launch_shapes, specialised_for_launches, LaunchShape, LaunchShapes,
    Specialised,
};
pub use private_sums::{make_sums_plain, private_sums, PrivateSum, PrivateSums};
pub use shared_atomics::demote_shared_atomics;
pub use step::CpuMode;
pub use structure::{structure, structure_simplified, Stmt, StructureError};
pub use unroll::unroll_short_loops;
