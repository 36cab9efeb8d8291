//! The registry of kernel runtimes: the one place of the engine that names them.
//!
//! [`RuntimeOptions`] says which runtime kernels run on, with that runtime's own options;
//! `open` turns it into the `nacre_runtime::KernelRuntime` the engine holds. Adding a runtime
//! is implementing that trait in its crate, then one variant here and one arm in each match
//! below.

use crate::error::Error;
use crate::options::Options;
use nacre_cpu::{CpuOptions, CpuRuntime};
use nacre_cuda::runtime::{CudaOptions, CudaRuntime};
use nacre_metal::MetalRuntime;
use nacre_runtime::{KernelRuntime, RuntimeError};
use std::str::FromStr;
use std::sync::Arc;

/// Where kernels run.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub enum DeviceKind {
    /// On the CPU (the default: works everywhere).
    #[default]
    Cpu,
    /// On an NVIDIA GPU through CUDA: kernels are compiled at run time by NVRTC and launched
    /// through the driver; arrays live in managed memory.
    Cuda,
    /// On an Apple GPU through Metal.
    Metal,
}

impl DeviceKind {
    /// Every device kind.
    pub const ALL: [DeviceKind; 3] = [DeviceKind::Cpu, DeviceKind::Cuda, DeviceKind::Metal];

    /// The kind's name (`cpu`, `cuda`, `metal`).
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Cuda => "cuda",
            DeviceKind::Metal => "metal",
        }
    }

    /// The fastest device that works here: [`DeviceKind::Cuda`] if CUDA device 0 can run
    /// kernels (driver, device with managed memory, and NVRTC all present), else Metal on
    /// macOS if it can, else [`DeviceKind::Cpu`].
    pub fn best_available() -> DeviceKind {
        if nacre_cuda::runtime::probe(0).is_ok() {
            DeviceKind::Cuda
        } else if cfg!(target_os = "macos") && nacre_metal::probe().is_ok() {
            DeviceKind::Metal
        } else {
            DeviceKind::Cpu
        }
    }
}

impl FromStr for DeviceKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cpu" => Ok(DeviceKind::Cpu),
            "cuda" => Ok(DeviceKind::Cuda),
            "metal" => Ok(DeviceKind::Metal),
            other => Err(Error::InvalidOption(format!(
                "unknown device `{other}`; expected one of: cpu, cuda, metal"
            ))),
        }
    }
}

/// The kernel runtime an engine uses, with its options.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum RuntimeOptions {
    /// Kernels on the CPU: serial (grid = block = 1, for grid-stride kernels) or with full
    /// grid semantics (the default). The C tier uses the engine's [`Options::c`].
    Cpu(CpuOptions),
    /// Kernels on a CUDA device: its ordinal and the on-disk kernel cache.
    Cuda(CudaOptions),
    /// Kernels on the Apple GPU (macOS).
    Metal,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions::Cpu(CpuOptions::default())
    }
}

impl RuntimeOptions {
    /// The default options of the runtime for `kind`.
    pub fn for_device(kind: DeviceKind) -> RuntimeOptions {
        match kind {
            DeviceKind::Cpu => RuntimeOptions::Cpu(CpuOptions::default()),
            DeviceKind::Cuda => RuntimeOptions::Cuda(CudaOptions::default()),
            DeviceKind::Metal => RuntimeOptions::Metal,
        }
    }

    /// The device these options run kernels on.
    pub fn device(&self) -> DeviceKind {
        match self {
            RuntimeOptions::Cpu(_) => DeviceKind::Cpu,
            RuntimeOptions::Cuda(_) => DeviceKind::Cuda,
            RuntimeOptions::Metal => DeviceKind::Metal,
        }
    }
}

/// Opens the runtime `options.runtime` names. A device that cannot run kernels (no driver,
/// no GPU, no NVRTC, not macOS) fails here, with the runtime's error saying what is missing.
pub(crate) fn open(options: &Options) -> Result<Arc<dyn KernelRuntime>, Error> {
    Ok(match &options.runtime {
        RuntimeOptions::Cpu(cpu) => Arc::new(CpuRuntime::new(*cpu, options.c.clone())),
        RuntimeOptions::Cuda(cuda) => {
            Arc::new(CudaRuntime::open(cuda.clone()).map_err(|e| RuntimeError::device("cuda", e))?)
        }
        RuntimeOptions::Metal => {
            Arc::new(MetalRuntime::open().map_err(|e| RuntimeError::device("metal", e))?)
        }
    })
}
