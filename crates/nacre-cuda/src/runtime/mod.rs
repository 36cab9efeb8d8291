//! The CUDA driver-API runtime: devices, managed memory, the kernel cache and launches.
//!
//! - [`context`]: the process-wide state of a device (driver initialisation, primary context,
//!   properties in [`DeviceInfo`]); work goes to each thread's own default stream.
//! - [`memory`]: [`CudaDevice`], managed memory as a [`nacre_runtime::Device`], with
//!   residency tracking (`residency`) so that arrays migrate only when the other side needs
//!   them.
//! - [`module_cache`] and [`disk_cache`]: each kernel is compiled once per process (and, with
//!   a cache folder, once per machine).
//! - [`prepare`]: [`prepare_cuda`] compiles a module's kernels and gives the launcher;
//!   [`CudaRuntime`] is all of it behind `nacre_runtime::KernelRuntime`.
//! - [`launch`]: the launchers, launch sequences with their status word, and
//!   [`finish_launches`], which waits for a call's launches.
//! - [`graphs`]: a call's launches recorded and replayed as one CUDA graph once their shape
//!   repeats.
//! - [`events`]: [`time_on_device`], the GPU's own time of a call, by CUDA events.
//! - [`mod@stats`], [`error`], [`last_error`]: counters, [`CudaError`], and the thread's last
//!   error behind a [`nacre_ir::Trap::DeviceError`].
//!
//! Running a module's kernels on CUDA:
//!
//! ```no_run
//! # fn demo(
//! #     module: nacre_ir::VerifiedModule,
//! #     linkage: nacre_backend::Linkage,
//! #     backend: &dyn nacre_backend::Backend,
//! # ) -> Result<(), Box<dyn std::error::Error>> {
//! use nacre_cuda::runtime::{finish_launches, prepare_cuda, CudaOptions};
//! use nacre_runtime::PreparedKernels;
//! let kernels = prepare_cuda(&module, &CudaOptions::default())?;
//! let linkage = linkage.with_launch(kernels.launch_binding());
//! let exec = backend.compile(&module, &linkage)?;
//! // ... call `exec`, then:
//! let status = finish_launches(); // 0, or the first trap code of the call's kernels
//! # let _ = (exec, status);
//! # Ok(()) }
//! ```

pub mod context;
pub mod disk_cache;
mod driver;
pub mod error;
pub mod events;
pub mod graphs;
pub mod last_error;
pub mod launch;
pub mod memory;
pub mod module_cache;
pub mod prepare;
mod residency;
mod shape;
pub mod stats;

pub use context::{device_count, device_info, DeviceInfo, LaunchLimits};
pub use disk_cache::CACHE_DIR_ENV;
pub use error::CudaError;
pub use events::time_on_device;
pub use last_error::take_last_error;
pub use launch::{cuda_launch_async, cuda_launch_recorded, cuda_launch_sync, finish_launches};
pub use memory::CudaDevice;
pub use module_cache::{cached_kernels, clear_kernel_cache};
pub use prepare::{prepare_cuda, CudaKernel, CudaKernels, CudaOptions, CudaRuntime, LaunchSync};
pub use stats::{stats, thread_stats, CudaStats};

/// Checks that kernels can run on CUDA device `ordinal`: the driver loads, the device
/// exists and supports managed memory, and NVRTC is usable. Returns the device's properties.
pub fn probe(ordinal: u32) -> Result<DeviceInfo, CudaError> {
    let info = device_info(ordinal)?;
    crate::nvrtc::available().map_err(CudaError::NvrtcUnavailable)?;
    Ok(info)
}
