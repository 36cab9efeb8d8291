//! The optional on-disk cache of compiled kernels.
//!
//! When a cache folder is configured ([`crate::runtime::CudaOptions::cache_dir`], or the
//! environment variable `NACRE_CUDA_CACHE_DIR`), every cubin NVRTC produces is stored there
//! and later processes load it instead of compiling again.
//!
//! An entry is identified by its *key text*: the format version, the target architecture,
//! the NVRTC version, the kernel's symbol and its full CUDA C source (which encodes every
//! specialisation). The file name is a 128-bit hash of the key text
//! (`<32 hex digits>.cubin`), and the file starts with the key text itself, which a load
//! compares in full: a hash collision or a file from another NVRTC version is a miss, never
//! a wrong kernel.
//!
//! File layout: the magic line `NACRE-CUBIN 1\n`, the key text's length as a little-endian
//! `u64`, the key text, then the cubin. Files are written to a temporary name and renamed,
//! so concurrent processes never read half a file.

use crate::codegen::KernelSource;
use crate::nvrtc::Arch;
use crate::runtime::error::CudaError;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// The environment variable naming the cache folder.
pub const CACHE_DIR_ENV: &str = "NACRE_CUDA_CACHE_DIR";

const MAGIC: &[u8] = b"NACRE-CUBIN 1\n";

/// A cache folder.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct DiskCache {
    dir: PathBuf,
}

/// What identifies one cached cubin.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct CacheKey {
    text: String,
}

impl CacheKey {
    /// The key of `src` compiled for `arch` by NVRTC `nvrtc` (major, minor).
    pub fn new(src: &KernelSource, arch: Arch, nvrtc: (u32, u32)) -> CacheKey {
        CacheKey {
            text: format!(
                "nacre-cuda cubin 1\narch sm_{}{}\nnvrtc {}.{}\nsymbol {}\n{}",
                arch.major, arch.minor, nvrtc.0, nvrtc.1, src.name, src.source
            ),
        }
    }

    /// The file name: the key text's hash in hex.
    pub fn file_name(&self) -> String {
        format!("{:032x}.cubin", hash128(self.text.as_bytes()))
    }
}

/// A 128-bit FNV-1a hash: stable across Rust versions and platforms (unlike `std`'s
/// hasher), which a file name kept between processes needs. Not cryptographic; the key text
/// stored in the file guards against collisions.
fn hash128(bytes: &[u8]) -> u128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    bytes
        .iter()
        .fold(OFFSET, |h, &b| (h ^ b as u128).wrapping_mul(PRIME))
}

impl DiskCache {
    /// The cache in `option` if given, else in the folder named by `NACRE_CUDA_CACHE_DIR`
    /// if set and not empty, else none.
    pub fn configured(option: Option<&Path>) -> Option<DiskCache> {
        let env = std::env::var_os(CACHE_DIR_ENV).filter(|v| !v.is_empty());
        Self::choose(option, env.as_deref().map(Path::new))
    }

    fn choose(option: Option<&Path>, env: Option<&Path>) -> Option<DiskCache> {
        option
            .filter(|p| !p.as_os_str().is_empty())
            .or(env)
            .map(|dir| DiskCache {
                dir: dir.to_path_buf(),
            })
    }

    /// The file of `key`.
    pub fn path(&self, key: &CacheKey) -> PathBuf {
        self.dir.join(key.file_name())
    }

    /// The cubin stored under `key`, or `None` if there is none (or the file holds another
    /// key, or is not a cache file).
    pub fn load(&self, key: &CacheKey) -> Result<Option<Vec<u8>>, CudaError> {
        let path = self.path(key);
        let data = match std::fs::read(&path) {
            Ok(d) => d,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(CudaError::DiskCache { path, source }),
        };
        Ok(decode(&data, key).map(<[u8]>::to_vec))
    }

    /// Stores `cubin` under `key`.
    pub fn store(&self, key: &CacheKey, cubin: &[u8]) -> Result<(), CudaError> {
        let path = self.path(key);
        let fail = |path: PathBuf| move |source| CudaError::DiskCache { path, source };
        std::fs::create_dir_all(&self.dir).map_err(fail(self.dir.clone()))?;
        let tmp = self
            .dir
            .join(format!(".{}.{}.tmp", key.file_name(), std::process::id()));
        std::fs::write(&tmp, encode(key, cubin)).map_err(fail(tmp.clone()))?;
        std::fs::rename(&tmp, &path).map_err(|source| {
            let _ = std::fs::remove_file(&tmp);
            CudaError::DiskCache { path, source }
        })
    }
}

/// A cache file's bytes.
fn encode(key: &CacheKey, cubin: &[u8]) -> Vec<u8> {
    let text = key.text.as_bytes();
    let mut out = Vec::with_capacity(MAGIC.len() + 8 + text.len() + cubin.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(text.len() as u64).to_le_bytes());
    out.extend_from_slice(text);
    out.extend_from_slice(cubin);
    out
}

/// The cubin in a cache file's bytes, if the file is well formed and holds `key`.
fn decode<'a>(data: &'a [u8], key: &CacheKey) -> Option<&'a [u8]> {
    let rest = data.strip_prefix(MAGIC)?;
    let (len, rest) = rest.split_first_chunk::<8>()?;
    let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
    let (text, cubin) = (rest.get(..len)?, rest.get(len..)?);
    (text == key.text.as_bytes() && !cubin.is_empty()).then_some(cubin)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(name: &str, body: &str) -> KernelSource {
        KernelSource {
            name: name.into(),
            source: body.into(),
            fast_math: false,
        }
    }

    const SM90: Arch = Arch { major: 9, minor: 0 };

    #[test]
    fn keys_distinguish_source_arch_and_nvrtc() {
        let a = src("k", "extern \"C\" __global__ void k() {}");
        let base = CacheKey::new(&a, SM90, (13, 0));
        let names = [
            base.file_name(),
            CacheKey::new(
                &src("k", "extern \"C\" __global__ void k() { }"),
                SM90,
                (13, 0),
            )
            .file_name(),
            CacheKey::new(&src("j", &a.source), SM90, (13, 0)).file_name(),
            CacheKey::new(&a, Arch { major: 8, minor: 0 }, (13, 0)).file_name(),
            CacheKey::new(&a, Arch { major: 9, minor: 0 }, (12, 8)).file_name(),
        ];
        for (i, x) in names.iter().enumerate() {
            assert_eq!(x.len(), 32 + ".cubin".len());
            assert!(x.ends_with(".cubin"));
            for y in &names[i + 1..] {
                assert_ne!(x, y);
            }
        }
        // Stable: the same inputs give the same name in every process.
        assert_eq!(CacheKey::new(&a, SM90, (13, 0)).file_name(), names[0]);
    }

    #[test]
    fn hash_is_fnv1a_128() {
        // The reference values of 128-bit FNV-1a.
        assert_eq!(hash128(b""), 0x6c62272e07bb014262b821756295c58d);
        assert_eq!(hash128(b"a"), 0xd228cb696f1a8caf78912b704e4a8964);
    }

    #[test]
    fn the_option_wins_over_the_environment() {
        let opt = Path::new("/opt/cache");
        let env = Path::new("/env/cache");
        assert_eq!(
            DiskCache::choose(Some(opt), Some(env)).map(|c| c.dir),
            Some(opt.to_path_buf())
        );
        assert_eq!(
            DiskCache::choose(None, Some(env)).map(|c| c.dir),
            Some(env.to_path_buf())
        );
        assert_eq!(
            DiskCache::choose(Some(Path::new("")), Some(env)).map(|c| c.dir),
            Some(env.to_path_buf())
        );
        assert_eq!(DiskCache::choose(None, None), None);
    }

    fn temp_dir(tag: &str) -> PathBuf {
        std::env::temp_dir().join(format!("nacre-cuda-test-{tag}-{}", std::process::id()))
    }

    #[test]
    fn store_then_load_round_trips() {
        let dir = temp_dir("roundtrip");
        let cache = DiskCache { dir: dir.clone() };
        let key = CacheKey::new(&src("k", "body"), SM90, (13, 0));
        assert_eq!(cache.load(&key).unwrap(), None);
        cache.store(&key, b"\x7fELF cubin bytes").unwrap();
        assert_eq!(cache.load(&key).unwrap().unwrap(), b"\x7fELF cubin bytes");
        assert_eq!(
            cache.path(&key),
            dir.join(key.file_name()),
            "the file is named by the key's hash"
        );
        // No temporary files are left behind.
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(names.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_with_another_key_is_a_miss() {
        let dir = temp_dir("collision");
        let cache = DiskCache { dir: dir.clone() };
        let key = CacheKey::new(&src("k", "body"), SM90, (13, 0));
        let other = CacheKey::new(&src("k", "other body"), SM90, (13, 0));
        // Put another key's entry under this key's file name, as a collision would.
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(cache.path(&key), encode(&other, b"cubin")).unwrap();
        assert_eq!(cache.load(&key).unwrap(), None);
        // Garbage and truncated files are misses too.
        for bad in [
            &b""[..],
            b"NACRE-CUBIN 1\n",
            b"not a cache file at all",
            &encode(&key, b""),
        ] {
            std::fs::write(cache.path(&key), bad).unwrap();
            assert_eq!(cache.load(&key).unwrap(), None);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unwritable_folder_is_a_typed_error() {
        let file = temp_dir("not-a-dir");
        std::fs::write(&file, b"x").unwrap();
        let cache = DiskCache {
            dir: file.join("sub"),
        };
        let key = CacheKey::new(&src("k", "body"), SM90, (13, 0));
        let err = cache.store(&key, b"cubin").unwrap_err();
        assert!(matches!(err, CudaError::DiskCache { .. }), "{err}");
        assert!(err.to_string().contains("kernel cache"), "{err}");
        std::fs::remove_file(&file).unwrap();
    }
}
