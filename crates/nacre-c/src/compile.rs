//! Running the system C compiler on generated source and loading the shared library.
//!
//! Each compilation works in a fresh directory under [`std::env::temp_dir`]: the source is
//! written to `source.c`, compiled with `<compiler> <tuning> <flags> -std=gnu99
//! -fno-strict-aliasing -fno-strict-overflow -ffp-contract=off -fno-optimize-sibling-calls -shared -fPIC -o lib.so source.c
//! -lm` and loaded with [`libloading`]. The directory is removed once the library is loaded (a loaded library stays
//! mapped after its file is deleted). When the compiler fails, the directory is kept so that
//! the source can be inspected, and its path is reported in [`BackendError::CCompiler`].
//!
//! The tuning flags ([`tuning_flags`]) come first: `-O2` and the machine-specific flags that
//! let the compiler vectorise for this CPU, as far as this compiler accepts them (GCC and
//! Clang spell them differently), so the configurable flags after them can override them.
//! The fixed flags keep the IR's semantics and come after the configurable ones, so they win:
//! IR memory is untyped (a pointer cast through `u64` may reinterpret any memory), pointer
//! arithmetic wraps, and GNU C dialects would otherwise let the compiler fuse a multiplication
//! and an addition into one `fma`, which rounds differently from the IR. Flags that change
//! floating-point semantics (`-ffast-math`) break the exactness of the generated code.
//!
//! With a cache folder ([`COptions::cache_dir`]), a library built before for the same source,
//! compiler, machine and flags is loaded from there instead ([`crate::code_cache`]).

use crate::code_cache::CodeCache;
use libloading::Library;
use nacre_backend::BackendError;
use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// How the C backend invokes the C compiler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct COptions {
    /// The compiler command (`cc` by default), looked up in `PATH`.
    pub compiler: String,
    /// Flags passed after the [`tuning_flags`] and before the fixed ones (none by default),
    /// so they can override the tuning (`-O3`, `-march=x86-64-v2`). They must not change the
    /// semantics of floating-point arithmetic (no `-ffast-math`).
    pub flags: Vec<String>,
    /// A directory in which to keep a copy of every generated source file (created if
    /// missing). With `None`, sources are kept only when compilation fails.
    pub keep_source_dir: Option<PathBuf>,
    /// A folder in which to keep every shared library the compiler builds, so that later
    /// processes load it instead of compiling (created if missing; see [`crate::code_cache`]).
    /// With `None`, the folder named by the environment variable `NACRE_C_CACHE_DIR` if it
    /// is set and not empty, else no cache. Only trusted users may write to the folder.
    pub cache_dir: Option<PathBuf>,
}

impl Default for COptions {
    fn default() -> Self {
        COptions {
            compiler: "cc".to_string(),
            flags: Vec::new(),
            keep_source_dir: None,
            cache_dir: None,
        }
    }
}

/// The machine-specific flags [`tuning_flags`] tries, in order: GCC's vectoriser with the
/// dynamic cost model (which allows run-time overlap checks) and up to 32 of those checks
/// per loop instead of 10 (a kernel's thread loop that keeps 16 values across a barrier
/// checks its loads against 16 state arrays: the row softmax's first loop vectorised only
/// then, 84-90 ms to 46-52 ms), then what Clang accepts on x86 and on Arm.
const TUNING_CANDIDATES: &[&[&str]] = &[
    &[
        "-march=native",
        "-fvect-cost-model=dynamic",
        "--param=vect-max-version-for-alias-checks=32",
    ],
    &["-march=native"],
    &["-mcpu=native"],
];

/// A small loop for [`tuning_flags`] to compile.
const TUNING_PROBE: &str =
    "void nacre_probe(float *a, const float *b, int n) { for (int i = 0; i < n; i++) a[i] += 2.0f * b[i]; }\n";

/// Whether `compiler` names a file in `PATH` (or is a path to one): a compiler
/// [`COptions::compiler`] can name.
pub fn compiler_available(compiler: &str) -> bool {
    crate::code_cache::resolve(compiler).is_some()
}

/// The flags every compilation with `compiler` starts with: `-O2`, then the first of
/// `-march=native -fvect-cost-model=dynamic --param=vect-max-version-for-alias-checks=32`
/// (GCC), `-march=native` (Clang on x86) and `-mcpu=native` (Clang on Arm) with which
/// `compiler` compiles a small loop (none if it accepts none, or does not run). Probed once
/// per compiler and process.
pub fn tuning_flags(compiler: &str) -> Vec<String> {
    tuning_flags_or(compiler, || probe_tuning(compiler))
}

/// The tuning flags this process found for `compiler`, else those `find` gives (then
/// remembered).
fn tuning_flags_or(compiler: &str, find: impl FnOnce() -> Vec<String>) -> Vec<String> {
    static FOUND: OnceLock<Mutex<HashMap<String, Vec<String>>>> = OnceLock::new();
    let found = FOUND.get_or_init(Default::default);
    if let Some(flags) = found
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(compiler)
    {
        return flags.clone();
    }
    let flags = find();
    found
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(compiler.to_string(), flags.clone());
    flags
}

/// Runs `compiler` on a small loop with each candidate of [`TUNING_CANDIDATES`].
fn probe_tuning(compiler: &str) -> Vec<String> {
    let accepts = |extra: &[&str]| {
        crate::code_cache::count_compiler_run();
        let child = Command::new(compiler)
            .arg("-O2")
            .args(extra)
            .args(["-x", "c", "-c", "-o", "/dev/null", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(mut child) = child else { return false };
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(TUNING_PROBE.as_bytes());
        }
        child.wait().is_ok_and(|status| status.success())
    };
    let mut flags = vec!["-O2".to_string()];
    if let Some(extra) = TUNING_CANDIDATES.iter().find(|extra| accepts(extra)) {
        flags.extend(extra.iter().map(|f| f.to_string()));
    }
    flags
}

/// Flags every compilation uses, after the configurable ones.
const FIXED_FLAGS: &[&str] = &[
    "-std=gnu99",
    "-fno-strict-aliasing",
    "-fno-strict-overflow",
    "-ffp-contract=off",
    // A recursive call in tail position must stay a call: the stack check on entry to
    // recursive functions bounds recursion only while each call takes stack.
    "-fno-optimize-sibling-calls",
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

/// Compiles `source` into a shared library and loads it, or loads the library a cache
/// folder holds for it.
pub fn compile_and_load(options: &COptions, source: &str) -> Result<Library, BackendError> {
    let cache = CodeCache::configured(options);
    let flags = all_flags(options, cache.as_ref());
    let key = cache.as_ref().map(|c| c.key(&flags, source));
    if let (Some(cache), Some(key)) = (&cache, &key) {
        let dir = fresh_dir()?;
        let cached = cache.load(key, &dir);
        remove_dir(&dir);
        if let Some(library) = cached {
            return Ok(library);
        }
    }
    let kept = options
        .keep_source_dir
        .as_deref()
        .map(|dir| keep_copy(source, dir))
        .transpose()?;
    let dir = fresh_dir()?;
    let result = build(options, &flags, source, &dir, kept.as_deref()).and_then(|library| {
        if let (Some(cache), Some(key)) = (&cache, &key) {
            cache.store(key, &library);
        }
        load(&library)
    });
    match &result {
        // Keep the scratch directory only when it holds the one copy of a failed source.
        Err(BackendError::CCompiler { .. }) if kept.is_none() => {}
        _ => remove_dir(&dir),
    }
    result
}

/// Every flag of a compilation with `options`, in order: the tuning flags (found once per
/// process: probed, or read from the cache), the options' flags, the fixed ones.
fn all_flags(options: &COptions, cache: Option<&CodeCache>) -> Vec<String> {
    let compiler = options.compiler.as_str();
    let mut flags = tuning_flags_or(compiler, || {
        let probe = || probe_tuning(compiler);
        cache.map_or_else(probe, |c| c.tuning_flags(probe))
    });
    flags.extend(options.flags.iter().cloned());
    flags.extend(FIXED_FLAGS.iter().map(|f| f.to_string()));
    flags
}

/// Writes `source` in `dir` and compiles it with `flags`; returns the library's path.
fn build(
    options: &COptions,
    flags: &[String],
    source: &str,
    dir: &Path,
    kept: Option<&Path>,
) -> Result<PathBuf, BackendError> {
    let source_path = dir.join("source.c");
    let library_path = dir.join("lib.so");
    fs::write(&source_path, source)
        .map_err(io_error(format!("writing {}", source_path.display())))?;

    crate::code_cache::count_compiler_run();
    let output = Command::new(&options.compiler)
        .args(flags)
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
    Ok(library_path)
}

/// Loads the library the compiler just built at `library_path`.
fn load(library_path: &Path) -> Result<Library, BackendError> {
    // SAFETY: the library was just built from source this crate generated; it has no
    // initialisers or destructors of its own, so loading it runs no foreign code.
    unsafe { Library::new(library_path) }
        .map_err(|e| BackendError::Load(format!("{}: {e}", library_path.display())))
}
