//! Running the system C compiler on generated source and loading the shared library.
//!
//! Each compilation works in a fresh directory under [`std::env::temp_dir`]: the source is
//! written to `source.c`, compiled with `<compiler> <flags> -std=gnu99 -fno-strict-aliasing
//! -fno-strict-overflow -ffp-contract=off -shared -fPIC -o lib.so source.c -lm` and loaded with
//! [`libloading`]. The directory is removed once the library is loaded (a loaded library stays
//! mapped after its file is deleted). When the compiler fails, the directory is kept so that
//! the source can be inspected, and its path is reported in [`BackendError::CCompiler`].
//!
//! The fixed flags keep the IR's semantics and come after the configurable ones, so they win:
//! IR memory is untyped (a pointer cast through `u64` may reinterpret any memory), pointer
//! arithmetic wraps, and GNU C dialects would otherwise let the compiler fuse a multiplication
//! and an addition into one `fma`, which rounds differently from the IR. Flags that change
//! floating-point semantics (`-ffast-math`) break the exactness of the generated code.

use libloading::Library;
use nacre_backend::BackendError;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// How the C backend invokes the C compiler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct COptions {
    /// The compiler command (`cc` by default), looked up in `PATH`.
    pub compiler: String,
    /// Flags passed before the fixed ones (`["-O2"]` by default). They must not change the
    /// semantics of floating-point arithmetic (no `-ffast-math`).
    pub flags: Vec<String>,
    /// A directory in which to keep a copy of every generated source file (created if
    /// missing). With `None`, sources are kept only when compilation fails.
    pub keep_source_dir: Option<PathBuf>,
}

impl Default for COptions {
    fn default() -> Self {
        COptions {
            compiler: "cc".to_string(),
            flags: vec!["-O2".to_string()],
            keep_source_dir: None,
        }
    }
}

/// Flags every compilation uses, after the configurable ones.
const FIXED_FLAGS: &[&str] = &[
    "-std=gnu99",
    "-fno-strict-aliasing",
    "-fno-strict-overflow",
    "-ffp-contract=off",
    "-shared",
    "-fPIC",
];

/// Distinguishes directories and kept files created by this process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A name no other compilation (in this or another process) uses: process id, a per-process
/// counter and the time.
fn unique_name(prefix: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{prefix}-{}-{n}-{nanos}", std::process::id())
}

fn io_error(during: impl Into<String>) -> impl FnOnce(io::Error) -> BackendError {
    let during = during.into();
    move |source| BackendError::Io { during, source }
}

/// Creates a fresh directory under the system temporary directory.
fn fresh_dir() -> Result<PathBuf, BackendError> {
    let base = std::env::temp_dir();
    let mut attempts = 0;
    loop {
        let dir = base.join(unique_name("nacre-c"));
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempts < 16 => attempts += 1,
            Err(e) => return Err(io_error(format!("creating {}", dir.display()))(e)),
        }
    }
}

/// Removes a scratch directory. Failing to remove it only leaks a few files, so errors are
/// ignored.
fn remove_dir(dir: &Path) {
    let _ = fs::remove_dir_all(dir);
}

/// Copies the source into the keep directory, returning the copy's path.
fn keep_copy(source: &str, keep_dir: &Path) -> Result<PathBuf, BackendError> {
    fs::create_dir_all(keep_dir).map_err(io_error(format!("creating {}", keep_dir.display())))?;
    let path = keep_dir.join(format!("{}.c", unique_name("nacre")));
    fs::write(&path, source).map_err(io_error(format!("writing {}", path.display())))?;
    Ok(path)
}

/// Compiles `source` into a shared library and loads it.
pub fn compile_and_load(options: &COptions, source: &str) -> Result<Library, BackendError> {
    let kept = options
        .keep_source_dir
        .as_deref()
        .map(|dir| keep_copy(source, dir))
        .transpose()?;
    let dir = fresh_dir()?;
    let result = build(options, source, &dir, kept.as_deref());
    match &result {
        // Keep the scratch directory only when it holds the one copy of a failed source.
        Err(BackendError::CCompiler { .. }) if kept.is_none() => {}
        _ => remove_dir(&dir),
    }
    result
}

/// Writes, compiles and loads in `dir`.
fn build(
    options: &COptions,
    source: &str,
    dir: &Path,
    kept: Option<&Path>,
) -> Result<Library, BackendError> {
    let source_path = dir.join("source.c");
    let library_path = dir.join("lib.so");
    fs::write(&source_path, source)
        .map_err(io_error(format!("writing {}", source_path.display())))?;

    let output = Command::new(&options.compiler)
        .args(&options.flags)
        .args(FIXED_FLAGS)
        .arg("-o")
        .arg(&library_path)
        .arg(&source_path)
        .arg("-lm")
        .current_dir(dir)
        .output()
        .map_err(io_error(format!(
            "running the C compiler `{}`",
            options.compiler
        )))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let text = if stderr.trim().is_empty() {
            stdout.trim()
        } else {
            stderr.trim()
        };
        let message = if text.is_empty() {
            format!("the compiler exited with {}", output.status)
        } else {
            text.to_string()
        };
        return Err(BackendError::CCompiler {
            compiler: options.compiler.clone(),
            message,
            source_path: kept.map_or(source_path, Path::to_path_buf),
        });
    }

    // SAFETY: the library was just built from source this crate generated; it has no
    // initialisers or destructors of its own, so loading it runs no foreign code.
    unsafe { Library::new(&library_path) }
        .map_err(|e| BackendError::Load(format!("{}: {e}", library_path.display())))
}
