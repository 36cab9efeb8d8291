//! The optional on-disk cache of compiled kernels.
//!
//! When a cache folder is configured ([`crate::runtime::CudaOptions::cache_dir`], or the
//! environment variable `NACRE_CUDA_CACHE_DIR`), every cubin NVRTC produces is stored there
//! ([`nacre_backend::disk_cache`] says how) and later processes load it instead of compiling
//! again. An entry's key text holds the target architecture, the NVRTC version, whether fast
//! math was asked for (it changes NVRTC's options even where the source is the same), the
//! kernel's symbol and its full CUDA C source (which encodes every specialisation).

use crate::codegen::KernelSource;
use crate::nvrtc::Arch;
use crate::runtime::error::CudaError;
use nacre_backend::disk_cache::{self, CacheFormat, DiskCacheError};
use std::path::Path;

pub use nacre_backend::disk_cache::CacheKey;

/// The environment variable naming the cache folder.
pub const CACHE_DIR_ENV: &str = "NACRE_CUDA_CACHE_DIR";

/// The files of the kernel cache.
const FORMAT: CacheFormat = CacheFormat {
    magic: b"NACRE-CUBIN 2\n",
    extension: "cubin",
};

/// A folder of cubins.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct DiskCache(disk_cache::DiskCache);

/// The key of `src` compiled for `arch` by NVRTC `nvrtc` (major, minor).
pub(crate) fn key(src: &KernelSource, arch: Arch, nvrtc: (u32, u32)) -> CacheKey {
    CacheKey::new(format!(
        "nacre-cuda cubin 2\narch sm_{}{}\nnvrtc {}.{}\nfast_math {}\nsymbol {}\n{}",
        arch.major, arch.minor, nvrtc.0, nvrtc.1, src.fast_math, src.name, src.source
    ))
}

fn cuda_error(e: DiskCacheError) -> CudaError {
    CudaError::DiskCache {
        path: e.path,
        source: e.source,
    }
}

impl DiskCache {
    /// The cache in `option` if given, else in the folder named by `NACRE_CUDA_CACHE_DIR`
    /// if set and not empty, else none.
    pub fn configured(option: Option<&Path>) -> Option<DiskCache> {
        disk_cache::DiskCache::configured(option, CACHE_DIR_ENV, FORMAT).map(DiskCache)
    }

    /// The cubin stored under `key`, or `None` if there is none (or the file holds another
    /// key, or is damaged).
    pub fn load(&self, key: &CacheKey) -> Result<Option<Vec<u8>>, CudaError> {
        self.0.load(key).map_err(cuda_error)
    }

    /// Stores `cubin` under `key`.
    pub fn store(&self, key: &CacheKey, cubin: &[u8]) -> Result<(), CudaError> {
        self.0.store(key, cubin).map_err(cuda_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(name: &str, body: &str, fast_math: bool) -> KernelSource {
        KernelSource {
            name: name.into(),
            source: body.into(),
            fast_math,
        }
    }

    const SM90: Arch = Arch { major: 9, minor: 0 };

    #[test]
    fn keys_distinguish_source_symbol_arch_nvrtc_and_fast_math() {
        let body = "extern \"C\" __global__ void k() {}";
        let a = src("k", body, false);
        let stems = [
            key(&a, SM90, (13, 0)).stem(),
            key(
                &src("k", "extern \"C\" __global__ void k() { }", false),
                SM90,
                (13, 0),
            )
            .stem(),
            key(&src("j", body, false), SM90, (13, 0)).stem(),
            key(&a, Arch { major: 8, minor: 0 }, (13, 0)).stem(),
            key(&a, SM90, (12, 8)).stem(),
            key(&src("k", body, true), SM90, (13, 0)).stem(),
        ];
        for (i, x) in stems.iter().enumerate() {
            for y in &stems[i + 1..] {
                assert_ne!(x, y);
            }
        }
        assert_eq!(key(&a, SM90, (13, 0)).stem(), stems[0], "stable");
    }

    #[test]
    fn store_then_load_round_trips_and_errors_are_typed() {
        let dir = std::env::temp_dir().join(format!("nacre-cuda-cache-{}", std::process::id()));
        let cache = DiskCache::configured(Some(&dir)).unwrap();
        let k = key(&src("k", "body", false), SM90, (13, 0));
        cache.store(&k, b"\x7fELF cubin").unwrap();
        assert_eq!(cache.load(&k).unwrap().unwrap(), b"\x7fELF cubin");
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::write(&dir, b"a file, not a folder").unwrap();
        let err = cache.store(&k, b"cubin").unwrap_err();
        assert!(matches!(err, CudaError::DiskCache { .. }), "{err}");
        std::fs::remove_file(&dir).unwrap();
    }
}
