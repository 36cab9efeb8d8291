//! Engine options: backend choice, passes, dumps, direct mode. The options of each kernel
//! runtime live with that runtime (see [`crate::runtimes`]), and the C and Cranelift settings
//! are those backends' own types.

use crate::runtimes::RuntimeOptions;
pub use nacre_c::COptions;
pub use nacre_cranelift::OptLevel;
use nacre_ir::PassOptions;
use std::path::PathBuf;
use std::str::FromStr;

/// Which backend compiles traced functions.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub enum BackendKind {
    /// The IR interpreter: compiles fastest, runs slowest; the reference semantics.
    Interp,
    /// Native code through Cranelift (the default).
    #[default]
    Cranelift,
    /// C source compiled by the system C compiler and loaded as a shared object.
    C,
}

impl BackendKind {
    /// All CPU backends.
    pub const ALL: [BackendKind; 3] = [BackendKind::Interp, BackendKind::Cranelift, BackendKind::C];

    /// The backend's name (`interp`, `cranelift`, `c`).
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Interp => "interp",
            BackendKind::Cranelift => "cranelift",
            BackendKind::C => "c",
        }
    }
}

impl FromStr for BackendKind {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "interp" | "interpreter" => Ok(BackendKind::Interp),
            "cranelift" => Ok(BackendKind::Cranelift),
            "c" => Ok(BackendKind::C),
            other => Err(crate::Error::InvalidOption(format!(
                "unknown backend `{other}`; expected one of: interp, cranelift, c"
            ))),
        }
    }
}

/// The first tier of tiered compilation: compiles fast, serves the first calls.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub enum FirstTier {
    /// The interpreter (no machine code at all).
    Interp,
    /// Cranelift without optimisation.
    #[default]
    CraneliftFast,
}

/// The second tier: compiled on a background thread, takes over when ready.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub enum SecondTier {
    /// Cranelift with optimisation.
    #[default]
    CraneliftSpeed,
    /// The C backend.
    C,
}

/// Tiered compilation: the first calls run on a fast tier while the second compiles in the
/// background; callers never wait for the second tier.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Tiering {
    /// The tier compiled synchronously.
    pub first: FirstTier,
    /// The tier compiled in the background.
    pub second: SecondTier,
}

/// A stage of the pipeline whose text form can be dumped.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Stage {
    /// The capture: the IR exactly as tracing recorded it, before any pass.
    Trace,
    /// The IR after each individual pass (one dump per pass that ran).
    Passes,
    /// The optimised IR handed to the backend.
    Ir,
    /// The backend's output (C source, code listing), where the backend provides one.
    Backend,
}

impl Stage {
    /// All stages in pipeline order.
    pub const ALL: [Stage; 4] = [Stage::Trace, Stage::Passes, Stage::Ir, Stage::Backend];

    /// The stage's name, used in file names.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Trace => "trace",
            Stage::Passes => "passes",
            Stage::Ir => "ir",
            Stage::Backend => "backend",
        }
    }
}

/// Where dumps go.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub enum DumpTarget {
    /// Standard error.
    #[default]
    Console,
    /// One file per function and stage in this folder (`<function>.<stage>.txt`).
    Dir(PathBuf),
}

/// Which stages to dump, and where.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct DumpOptions {
    /// The stages to dump (none by default).
    pub stages: Vec<Stage>,
    /// Where to write them.
    pub target: DumpTarget,
}

/// The environment variable that turns dumps on without changing code (see
/// [`DumpOptions::parse`]); [`crate::Engine::new`] reads it.
pub const DUMP_VAR: &str = "NACRE_DUMP";

impl DumpOptions {
    /// Parses a [`DUMP_VAR`] setting: comma-separated stage names (`trace`, `passes`, `ir`,
    /// `backend`, or `all`), then optionally `:` and a folder to write them to instead of
    /// standard error. `NACRE_DUMP=ir,backend` or `NACRE_DUMP=all:/tmp/dumps`.
    pub fn parse(setting: &str) -> Result<DumpOptions, crate::Error> {
        let (names, folder) = match setting.split_once(':') {
            Some((names, folder)) => (names, Some(folder)),
            None => (setting, None),
        };
        let mut stages: Vec<Stage> = Vec::new();
        for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let named: Vec<Stage> = match name {
                "all" => Stage::ALL.to_vec(),
                _ => vec![Stage::ALL
                    .into_iter()
                    .find(|s| s.name() == name)
                    .ok_or_else(|| {
                        crate::Error::InvalidOption(format!(
                            "{DUMP_VAR}: unknown stage `{name}`; the stages are trace, passes, \
                             ir, backend (or all), optionally followed by `:FOLDER`"
                        ))
                    })?],
            };
            for stage in named {
                if !stages.contains(&stage) {
                    stages.push(stage);
                }
            }
        }
        let target = match folder {
            Some(f) => DumpTarget::Dir(PathBuf::from(f)),
            None => DumpTarget::Console,
        };
        Ok(DumpOptions { stages, target })
    }
}

/// Options of an [`crate::Engine`].
#[derive(Clone, PartialEq, Debug, Default)]
pub struct Options {
    /// The backend (default: Cranelift).
    pub backend: BackendKind,
    /// Which optimisation passes run.
    pub passes: PassOptions,
    /// Cranelift's optimisation level.
    pub opt_level: OptLevel,
    /// C backend settings.
    pub c: COptions,
    /// Stage dumps (replaced by the [`DUMP_VAR`] environment variable, `NACRE_DUMP`, where it
    /// is set).
    pub dump: DumpOptions,
    /// Where kernels launched by traced host functions run, with that runtime's options
    /// (default: the CPU in grid mode).
    pub runtime: RuntimeOptions,
    /// Tiered compilation; when set, `backend` and `opt_level` are not used.
    pub tiering: Option<Tiering>,
    /// Direct mode: no tracing or compilation; calls run the user's Rust code on concrete
    /// values, so it can be stepped through in a debugger.
    pub direct: bool,
}

impl Options {
    /// Options with the given backend and defaults otherwise.
    pub fn with_backend(backend: BackendKind) -> Options {
        Options {
            backend,
            ..Options::default()
        }
    }

    /// These options with the dumps the [`DUMP_VAR`] environment variable asks for, where it
    /// is set (a bad setting is [`crate::Error::InvalidOption`]).
    pub fn with_env_dumps(mut self) -> Result<Options, crate::Error> {
        if let Ok(setting) = std::env::var(DUMP_VAR) {
            self.dump = DumpOptions::parse(&setting)?;
        }
        Ok(self)
    }

    /// Checks the options for values that cannot work.
    pub fn validate(&self) -> Result<(), crate::Error> {
        if self.c.compiler.trim().is_empty() {
            return Err(crate::Error::InvalidOption(
                "the C compiler command is empty".into(),
            ));
        }
        if let DumpTarget::Dir(d) = &self.dump.target {
            if d.as_os_str().is_empty() {
                return Err(crate::Error::InvalidOption(
                    "the dump folder path is empty".into(),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dump_settings_parse_stages_and_a_folder() {
        let d = DumpOptions::parse("ir,backend").unwrap();
        assert_eq!(d.stages, [Stage::Ir, Stage::Backend]);
        assert_eq!(d.target, DumpTarget::Console);
        let d = DumpOptions::parse("all,ir:/tmp/dumps").unwrap();
        assert_eq!(d.stages, Stage::ALL);
        assert_eq!(d.target, DumpTarget::Dir(PathBuf::from("/tmp/dumps")));
        assert!(DumpOptions::parse("").unwrap().stages.is_empty());
        let err = DumpOptions::parse("trace,asm").unwrap_err().to_string();
        assert!(err.contains("unknown stage `asm`"), "{err}");
    }
}
