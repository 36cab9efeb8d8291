//! The corpus test suite as one executable: every corpus function and kernel on the CPU
//! backends, and the generated C, CUDA C and MSL, snapshot-tested, compiled and run where the
//! machine allows (on a GPU, or on the host against an emulation of the GPU's execution model,
//! see `emulation.rs`). `cuda_disk_cache.rs` and `cuda_fault.rs` are executables of their own,
//! because they change state of the whole process.

mod backends;
mod cuda_compile;
mod cuda_kernels;
mod cuda_run;
mod cuda_source;
mod emulation;
mod ir_snapshots;
mod kernels;
mod msl_compile;
mod msl_run;
mod msl_source;
mod structured_c;
