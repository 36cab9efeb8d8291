//! The optional on-disk cache of compiled shared libraries, so that a second process gets
//! C-tier code without running the C compiler.
//!
//! When a cache folder is configured ([`COptions::cache_dir`], or the environment variable
//! `NACRE_C_CACHE_DIR`), every shared library the compiler builds is stored there
//! ([`nacre_backend::disk_cache`] says how), and so is the result of probing the compiler's
//! tuning flags ([`crate::tuning_flags`]). An entry's key text holds:
//!
//! - the *compiler's identity*: the command, the file it resolves to in `PATH` (symbolic
//!   links followed), that file's size and modification time — a compiler upgraded in place
//!   is another compiler;
//! - the *machine's identity*: the architecture and operating system, and on Linux the first
//!   processor's model and feature flags from `/proc/cpuinfo` — the tuning flags include
//!   `-march=native`, so a folder shared between machines must not hand one CPU's code to
//!   another;
//! - every flag of the compilation and the full generated source.
//!
//! A damaged file, a file of another key, or a library that fails to load is a miss: the
//! library is rebuilt and the entry overwritten. Failing to read or write the folder never
//! fails a compilation; [`stats`] counts it.
//!
//! Whoever can write to the cache folder can put code into every process that uses it, as
//! with any folder of shared libraries: give a folder only trusted users can write.

use crate::compile::COptions;
use libloading::Library;
use nacre_backend::disk_cache::{CacheFormat, CacheKey, DiskCache};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable naming the cache folder.
pub const CACHE_DIR_ENV: &str = "NACRE_C_CACHE_DIR";

/// The files holding shared libraries.
const LIBRARIES: CacheFormat = CacheFormat {
    magic: b"NACRE-C-SO 1\n",
    extension: "so",
};

/// The files holding a compiler's tuning flags.
const TUNING: CacheFormat = CacheFormat {
    magic: b"NACRE-C-TUNING 1\n",
    extension: "tuning",
};

/// What the C backend's compilations did in this process, from [`stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodeCacheStats {
    /// Times the C compiler ran (compilations and tuning probes).
    pub compiler_runs: u64,
    /// Shared libraries loaded from the cache folder instead of compiled.
    pub hits: u64,
    /// Shared libraries written to the cache folder.
    pub stores: u64,
    /// Cache entries that could not be read, written or loaded (the library was compiled
    /// instead).
    pub errors: u64,
}

static COMPILER_RUNS: AtomicU64 = AtomicU64::new(0);
static HITS: AtomicU64 = AtomicU64::new(0);
static STORES: AtomicU64 = AtomicU64::new(0);
static ERRORS: AtomicU64 = AtomicU64::new(0);

/// The counts of this process so far.
pub fn stats() -> CodeCacheStats {
    let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
    CodeCacheStats {
        compiler_runs: get(&COMPILER_RUNS),
        hits: get(&HITS),
        stores: get(&STORES),
        errors: get(&ERRORS),
    }
}

/// Counts one run of the C compiler.
pub(crate) fn count_compiler_run() {
    COMPILER_RUNS.fetch_add(1, Ordering::Relaxed);
}

fn count(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// The cache folder of one compiler on this machine.
pub(crate) struct CodeCache {
    libraries: DiskCache,
    tuning: DiskCache,
    /// The compiler's and the machine's identity, the start of every key.
    identity: String,
}

impl CodeCache {
    /// The cache `options` asks for, or none (also when the compiler cannot be found: the
    /// compilation then reports that).
    pub fn configured(options: &COptions) -> Option<CodeCache> {
        let dir = options.cache_dir.as_deref();
        let libraries = DiskCache::configured(dir, CACHE_DIR_ENV, LIBRARIES)?;
        let tuning = DiskCache::configured(dir, CACHE_DIR_ENV, TUNING)?;
        let identity = format!(
            "{}\n{}",
            compiler_identity(&options.compiler)?,
            machine_identity()
        );
        Some(CodeCache {
            libraries,
            tuning,
            identity,
        })
    }

    /// The key of `source` compiled with `flags` (all of them, in order).
    pub fn key(&self, flags: &[String], source: &str) -> CacheKey {
        CacheKey::new(format!(
            "nacre-c shared library 1\n{}\nflags {}\n{source}",
            self.identity,
            flags.join(" ")
        ))
    }

    /// The compiler's tuning flags: from the folder, else `probe()` (stored there).
    pub fn tuning_flags(&self, probe: impl FnOnce() -> Vec<String>) -> Vec<String> {
        let key = CacheKey::new(format!("nacre-c tuning 1\n{}", self.identity));
        match self.tuning.load(&key) {
            Ok(Some(text)) => {
                if let Ok(text) = String::from_utf8(text) {
                    return text.lines().map(str::to_string).collect();
                }
            }
            Ok(None) => {}
            Err(_) => count(&ERRORS),
        }
        let flags = probe();
        if self
            .tuning
            .store(&key, flags.join("\n").as_bytes())
            .is_err()
        {
            count(&ERRORS);
        }
        flags
    }

    /// The library stored under `key`, loaded through a copy in `scratch` (a fresh folder),
    /// or `None` (a miss, or an entry that failed to load).
    pub fn load(&self, key: &CacheKey, scratch: &Path) -> Option<Library> {
        let bytes = match self.libraries.load(key) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return None,
            Err(_) => {
                count(&ERRORS);
                return None;
            }
        };
        let path = scratch.join("lib.so");
        let loaded = std::fs::write(&path, bytes)
            .ok()
            // SAFETY: the bytes are the library the C compiler built from this key's source
            // with this key's compiler and flags: the file holds the key text in full and the
            // library's hash matches. Such a library has no initialisers or destructors of its
            // own, so loading it runs no foreign code. (The folder is trusted as the docs say.)
            .and_then(|()| unsafe { Library::new(&path) }.ok());
        match &loaded {
            Some(_) => count(&HITS),
            None => count(&ERRORS),
        }
        loaded
    }

    /// Stores the library just built at `library` under `key`.
    pub fn store(&self, key: &CacheKey, library: &Path) {
        match std::fs::read(library).map(|bytes| self.libraries.store(key, &bytes)) {
            Ok(Ok(())) => count(&STORES),
            _ => count(&ERRORS),
        }
    }
}

/// `compiler`'s command, resolved file, size and modification time, or `None` if it is not
/// a file in `PATH` (or a path to one).
fn compiler_identity(compiler: &str) -> Option<String> {
    let file = resolve(compiler)?.canonicalize().ok()?;
    let meta = std::fs::metadata(&file).ok()?;
    let modified = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some(format!(
        "compiler {compiler} at {} ({} bytes, modified {}.{:09})",
        file.display(),
        meta.len(),
        modified.as_secs(),
        modified.subsec_nanos()
    ))
}

/// The file `command` runs: itself if it names a path, else the first match in `PATH`.
pub(crate) fn resolve(command: &str) -> Option<PathBuf> {
    let path = Path::new(command);
    if path.components().count() > 1 {
        return path.is_file().then(|| path.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(command))
        .find(|candidate| candidate.is_file())
}

/// The architecture, the operating system and, on Linux, the first processor's model and
/// features.
fn machine_identity() -> String {
    static IDENTITY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    IDENTITY.get_or_init(read_machine_identity).clone()
}

fn read_machine_identity() -> String {
    let mut id = format!(
        "machine {}-{}",
        std::env::consts::ARCH,
        std::env::consts::OS
    );
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let first = cpuinfo.split("\n\n").next().unwrap_or_default();
    for line in first.lines() {
        let name = line.split(':').next().unwrap_or_default().trim();
        if matches!(
            name,
            "model name" | "flags" | "Features" | "CPU implementer" | "CPU part"
        ) {
            id.push('\n');
            id.push_str(line.trim());
        }
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compilers_resolve_in_path_and_as_paths() {
        let cc = compiler_identity("cc").expect("cc is in PATH");
        assert!(cc.starts_with("compiler cc at /"), "{cc}");
        assert!(cc.contains(" bytes, modified "), "{cc}");
        let file = resolve("cc").unwrap();
        let by_path = compiler_identity(file.to_str().unwrap()).unwrap();
        assert!(
            by_path.ends_with(cc.split_once(" at ").unwrap().1),
            "{by_path}"
        );
        assert_eq!(compiler_identity("nacre-no-such-compiler"), None);
        assert_eq!(compiler_identity("/nonexistent/cc"), None);
        assert!(crate::compiler_available("cc"));
        assert!(!crate::compiler_available("nacre-no-such-compiler"));
    }

    #[test]
    fn the_machine_is_named() {
        let id = machine_identity();
        assert!(id.starts_with("machine "), "{id}");
        if cfg!(target_os = "linux") && cfg!(target_arch = "x86_64") {
            assert!(id.contains("\nflags"), "{id}");
        }
    }

    #[test]
    fn keys_distinguish_flags_and_source() {
        let dir = std::env::temp_dir().join(format!("nacre-c-keys-{}", std::process::id()));
        let options = COptions {
            cache_dir: Some(dir),
            ..COptions::default()
        };
        let cache = CodeCache::configured(&options).unwrap();
        let flags = vec!["-O2".to_string()];
        let a = cache.key(&flags, "int f(void) { return 1; }");
        assert_eq!(a, cache.key(&flags, "int f(void) { return 1; }"));
        assert_ne!(a, cache.key(&flags, "int f(void) { return 2; }"));
        assert_ne!(
            a,
            cache.key(&["-O3".to_string()], "int f(void) { return 1; }")
        );
        assert!(a.text().contains(&machine_identity()));
    }
}
