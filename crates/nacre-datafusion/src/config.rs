//! The session options of compiled pipelines (`nacre.*`, a DataFusion config extension) and
//! where a pipeline runs ([`Placement`]).
//!
//! ```sql
//! SET nacre.device = 'cuda';
//! ```

use crate::device;
use crate::pipeline::Program;
use datafusion::common::config::{ConfigExtension, ConfigOptions};
use datafusion::common::extensions_options;
use datafusion::error::{DataFusionError, Result};
use nacre::DeviceKind;
use std::fmt;
use std::sync::OnceLock;

extensions_options! {
    /// Nacre's session options, under the prefix `nacre`.
    pub struct NacreConfig {
        /// Where compiled pipelines run: `cpu` (a fused loop per partition on the CPU cores;
        /// the default), `cuda` (one kernel launch over every partition on the GPU, the
        /// table loaded into its memory once; on the CPU, with a warning, where CUDA is not usable), `auto`
        /// (CUDA where usable, else the CPU) or `cpu-kernels` (the GPU's kernels on Nacre's
        /// CPU kernel runtime: how they are tested without a GPU).
        pub device: String, default = "cpu".to_string()
    }
}

impl ConfigExtension for NacreConfig {
    const PREFIX: &'static str = "nacre";
}

/// Where one pipeline runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Placement {
    /// A fused loop per partition on the CPU; with why not on the device asked for.
    Cpu(Option<String>),
    /// One kernel launch over every partition on a device.
    Kernels(DeviceKind),
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Placement::Cpu(None) => write!(f, "cpu"),
            Placement::Cpu(Some(why)) => write!(f, "cpu ({why})"),
            Placement::Kernels(DeviceKind::Cpu) => write!(f, "cpu-kernels"),
            Placement::Kernels(k) => write!(f, "{}", k.name()),
        }
    }
}

/// Whether CUDA can run kernels here (asked once per process): the reason if not.
fn cuda_unusable() -> Option<String> {
    static PROBE: OnceLock<Option<String>> = OnceLock::new();
    PROBE
        .get_or_init(|| nacre::gpu::cuda::probe(0).err().map(|e| e.to_string()))
        .clone()
}

impl Placement {
    /// Where `program` runs under the session's `config`: an unknown `nacre.device` is a
    /// configuration error; a device that cannot run kernels, or a program that does not
    /// suit one ([`device::device_plan`]), places it on the CPU with the reason (logged as a
    /// warning when the device was asked for by name).
    pub fn choose(config: &ConfigOptions, program: &Program) -> Result<Placement> {
        let asked = config
            .extensions
            .get::<NacreConfig>()
            .map_or("cpu", |c| c.device.as_str());
        let kind = match asked {
            "cpu" => return Ok(Placement::Cpu(None)),
            "cpu-kernels" => DeviceKind::Cpu,
            "cuda" | "auto" => match cuda_unusable() {
                None => DeviceKind::Cuda,
                Some(why) if asked == "auto" => {
                    return Ok(Placement::Cpu(Some(format!("CUDA is not usable: {why}"))))
                }
                Some(why) => {
                    log::warn!("nacre.device = 'cuda', but CUDA is not usable ({why}): compiled pipelines run on the CPU");
                    return Ok(Placement::Cpu(Some(format!("CUDA is not usable: {why}"))));
                }
            },
            other => {
                return Err(DataFusionError::Configuration(format!(
                    "unknown nacre.device '{other}'; expected one of: cpu, cuda, auto, cpu-kernels"
                )))
            }
        };
        Ok(match device::device_plan(program) {
            Ok(()) => Placement::Kernels(kind),
            Err(why) => Placement::Cpu(Some(format!("not on the device: {why}"))),
        })
    }
}
