//! `nacre dump NAME`: compiles a corpus function or kernel with stage dumps on, so that its
//! capture, passes, optimised IR and backend output can be read without changing code.

use anyhow::{bail, Context, Result};
use nacre::{BackendKind, DumpOptions, DumpTarget, Engine, Options};
use std::path::PathBuf;

/// Compiles corpus entry `name` on `backend` and dumps `stages` (a `NACRE_DUMP` stage list)
/// to standard error, or to files in `dir`.
pub fn run(name: &str, backend: &str, stages: &str, dir: Option<PathBuf>) -> Result<()> {
    let kind: BackendKind = backend.parse()?;
    let mut dump = DumpOptions::parse(stages).context("parsing --stages")?;
    if let Some(dir) = dir {
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating the dump folder {}", dir.display()))?;
        dump.target = DumpTarget::Dir(dir);
    }
    let options = Options {
        dump,
        ..Options::with_backend(kind)
    };
    let engine = Engine::new(options).context("creating the engine")?;
    if let Some(case) = nacre_corpus::find(name) {
        if let nacre_corpus::CaseKind::Scalar { compile, .. } = &case.kind {
            let _compiled = compile(&engine).with_context(|| format!("compiling {name}"))?;
            return Ok(());
        }
    }
    if let Some(case) = nacre_corpus::kernels::all()
        .into_iter()
        .find(|k| k.name == name)
    {
        // Compiling happens inside the check, which also runs the kernel on a small input.
        (case.check)(&engine, 1024).map_err(anyhow::Error::msg)?;
        return Ok(());
    }
    let scalar: Vec<&str> = nacre_corpus::all()
        .iter()
        .filter(|c| matches!(c.kind, nacre_corpus::CaseKind::Scalar { .. }))
        .map(|c| c.name)
        .collect();
    let kernels: Vec<&str> = nacre_corpus::kernels::all()
        .iter()
        .map(|k| k.name)
        .collect();
    bail!(
        "no corpus function or kernel is named `{name}`; functions: {}; kernels: {}",
        scalar.join(", "),
        kernels.join(", ")
    )
}
