//! A folder of compiled code kept between processes: the CUDA runtime's cubins and the C
//! tier's shared libraries.
//!
//! An entry is identified by its *key text*, which the caller builds from everything the
//! compiled bytes depend on (a format version, the compiler and its version, every flag, the
//! full generated source). The file name is a 128-bit hash of the key text
//! (`<32 hex digits>.<extension>`), and the file starts with the key text itself, which a
//! load compares in full: a hash collision or a file from another compiler is a miss, never
//! wrong code.
//!
//! File layout: the cache's magic line (say `NACRE-CUBIN 2\n`), the key text's length as a
//! little-endian `u64`, the key text, the payload's length as a little-endian `u64`, the
//! payload's 128-bit hash (little-endian), then the payload. A truncated or corrupt file
//! fails these checks and reads as a miss, so the caller rebuilds and overwrites it. Files
//! are written to a temporary name and renamed, so concurrent processes never read half a
//! file.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// A file operation of the cache failed.
#[derive(Debug, thiserror::Error)]
#[error("the code cache file {} could not be used: {source}", path.display())]
pub struct DiskCacheError {
    /// The file or folder.
    pub path: PathBuf,
    /// The underlying error.
    #[source]
    pub source: std::io::Error,
}

/// What one kind of cache calls its files.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CacheFormat {
    /// The first line of every file, with its newline (`b"NACRE-CUBIN 2\n"`); a new layout
    /// or meaning of the payload takes a new line.
    pub magic: &'static [u8],
    /// The file name's extension, without the dot (`"cubin"`).
    pub extension: &'static str,
}

/// A cache folder.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct DiskCache {
    dir: PathBuf,
    format: CacheFormat,
}

/// What identifies one cached payload: the text it was compiled from, with everything that
/// changes the result.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct CacheKey {
    text: String,
}

impl CacheKey {
    /// The key whose full text is `text`.
    pub fn new(text: String) -> CacheKey {
        CacheKey { text }
    }

    /// The key text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The key text's hash, as the file name's stem (32 hex digits).
    pub fn stem(&self) -> String {
        format!("{:032x}", hash128(self.text.as_bytes()))
    }
}

/// A 128-bit FNV-1a hash: stable across Rust versions and platforms (unlike `std`'s
/// hasher), which a file name kept between processes needs. Not cryptographic: the key text
/// stored in the file guards against collisions, and the payload's hash against corruption.
pub fn hash128(bytes: &[u8]) -> u128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    bytes
        .iter()
        .fold(OFFSET, |h, &b| (h ^ b as u128).wrapping_mul(PRIME))
}

impl DiskCache {
    /// The cache in `option` if given and not empty, else in the folder named by the
    /// environment variable `env` if set and not empty, else none.
    pub fn configured(option: Option<&Path>, env: &str, format: CacheFormat) -> Option<Self> {
        let from_env = std::env::var_os(env).filter(|v| !v.is_empty());
        Self::choose(option, from_env.as_deref().map(Path::new), format)
    }

    fn choose(option: Option<&Path>, env: Option<&Path>, format: CacheFormat) -> Option<Self> {
        option
            .filter(|p| !p.as_os_str().is_empty())
            .or(env)
            .map(|dir| DiskCache {
                dir: dir.to_path_buf(),
                format,
            })
    }

    /// The cache's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of `key`.
    pub fn path(&self, key: &CacheKey) -> PathBuf {
        self.dir
            .join(format!("{}.{}", key.stem(), self.format.extension))
    }

    /// The payload stored under `key`, or `None` if there is none, or the file holds another
    /// key, is truncated or corrupt, or is not a cache file.
    pub fn load(&self, key: &CacheKey) -> Result<Option<Vec<u8>>, DiskCacheError> {
        let path = self.path(key);
        let data = match std::fs::read(&path) {
            Ok(d) => d,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(DiskCacheError { path, source }),
        };
        Ok(self.decode(&data, key).map(<[u8]>::to_vec))
    }

    /// Stores `payload` under `key`, replacing what was there.
    pub fn store(&self, key: &CacheKey, payload: &[u8]) -> Result<(), DiskCacheError> {
        let path = self.path(key);
        let fail = |path: PathBuf| move |source| DiskCacheError { path, source };
        std::fs::create_dir_all(&self.dir).map_err(fail(self.dir.clone()))?;
        let tmp = self.dir.join(format!(
            ".{}.{}.{}.tmp",
            key.stem(),
            std::process::id(),
            unique()
        ));
        std::fs::write(&tmp, self.encode(key, payload)).map_err(fail(tmp.clone()))?;
        std::fs::rename(&tmp, &path).map_err(|source| {
            let _ = std::fs::remove_file(&tmp);
            DiskCacheError { path, source }
        })
    }

    /// A cache file's bytes.
    fn encode(&self, key: &CacheKey, payload: &[u8]) -> Vec<u8> {
        let text = key.text.as_bytes();
        let magic = self.format.magic;
        let mut out = Vec::with_capacity(magic.len() + 32 + text.len() + payload.len());
        out.extend_from_slice(magic);
        out.extend_from_slice(&(text.len() as u64).to_le_bytes());
        out.extend_from_slice(text);
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&hash128(payload).to_le_bytes());
        out.extend_from_slice(payload);
        out
    }

    /// The payload in a cache file's bytes, if the file is whole and holds `key`.
    fn decode<'a>(&self, data: &'a [u8], key: &CacheKey) -> Option<&'a [u8]> {
        let rest = data.strip_prefix(self.format.magic)?;
        let (text, rest) = split_counted(rest)?;
        let (len, rest) = rest.split_first_chunk::<8>()?;
        let (hash, payload) = rest.split_first_chunk::<16>()?;
        let whole = usize::try_from(u64::from_le_bytes(*len)).ok() == Some(payload.len())
            && u128::from_le_bytes(*hash) == hash128(payload);
        (text == key.text.as_bytes() && whole && !payload.is_empty()).then_some(payload)
    }
}

/// Splits a little-endian `u64` length and that many bytes off the front of `bytes`.
fn split_counted(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = bytes.split_first_chunk::<8>()?;
    let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
    Some((rest.get(..len)?, rest.get(len..)?))
}

/// A number no other call in this process returns, for temporary file names.
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORMAT: CacheFormat = CacheFormat {
        magic: b"NACRE-TEST 1\n",
        extension: "bin",
    };

    fn key(text: &str) -> CacheKey {
        CacheKey::new(text.to_string())
    }

    fn temp_dir(tag: &str) -> PathBuf {
        std::env::temp_dir().join(format!("nacre-disk-cache-{tag}-{}", std::process::id()))
    }

    fn cache(tag: &str) -> DiskCache {
        let dir = temp_dir(tag);
        let _ = std::fs::remove_dir_all(&dir);
        DiskCache {
            dir,
            format: FORMAT,
        }
    }

    #[test]
    fn hash_is_fnv1a_128() {
        // The reference values of 128-bit FNV-1a.
        assert_eq!(hash128(b""), 0x6c62272e07bb014262b821756295c58d);
        assert_eq!(hash128(b"a"), 0xd228cb696f1a8caf78912b704e4a8964);
    }

    #[test]
    fn file_names_are_the_key_hash_and_stable() {
        let c = cache("names");
        let (a, b) = (key("source a"), key("source b"));
        assert_ne!(c.path(&a), c.path(&b));
        assert_eq!(c.path(&a), c.path(&key("source a")));
        let name = c
            .path(&a)
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        assert_eq!(name.len(), 32 + ".bin".len());
        assert!(name.ends_with(".bin"));
    }

    #[test]
    fn the_option_wins_over_the_environment() {
        let (opt, env) = (Path::new("/opt/cache"), Path::new("/env/cache"));
        let dir = |c: Option<DiskCache>| c.map(|c| c.dir);
        assert_eq!(
            dir(DiskCache::choose(Some(opt), Some(env), FORMAT)),
            Some(opt.into())
        );
        assert_eq!(
            dir(DiskCache::choose(None, Some(env), FORMAT)),
            Some(env.into())
        );
        assert_eq!(
            dir(DiskCache::choose(Some(Path::new("")), Some(env), FORMAT)),
            Some(env.into())
        );
        assert_eq!(DiskCache::choose(None, None, FORMAT), None);
    }

    #[test]
    fn store_then_load_round_trips_without_leftovers() {
        let c = cache("roundtrip");
        let k = key("body");
        assert_eq!(c.load(&k).unwrap(), None);
        c.store(&k, b"\x7fELF bytes").unwrap();
        assert_eq!(c.load(&k).unwrap().unwrap(), b"\x7fELF bytes");
        c.store(&k, b"newer bytes").unwrap();
        assert_eq!(c.load(&k).unwrap().unwrap(), b"newer bytes");
        let names: Vec<_> = std::fs::read_dir(c.dir()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary files are left behind");
        std::fs::remove_dir_all(c.dir()).unwrap();
    }

    #[test]
    fn other_keys_and_damaged_files_are_misses() {
        let c = cache("damaged");
        let (k, other) = (key("body"), key("other body"));
        std::fs::create_dir_all(c.dir()).unwrap();
        // Another key's entry under this key's file name, as a collision would leave.
        std::fs::write(c.path(&k), c.encode(&other, b"payload")).unwrap();
        assert_eq!(c.load(&k).unwrap(), None);
        let good = c.encode(&k, b"payload bytes");
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let other_magic = DiskCache {
            dir: c.dir.clone(),
            format: CacheFormat {
                magic: b"NACRE-TEST 2\n",
                extension: "bin",
            },
        }
        .encode(&k, b"payload bytes");
        for bad in [
            &b""[..],
            FORMAT.magic,
            b"not a cache file at all",
            &c.encode(&k, b""),
            &good[..good.len() - 1],
            &flipped,
            &other_magic,
        ] {
            std::fs::write(c.path(&k), bad).unwrap();
            assert_eq!(c.load(&k).unwrap(), None, "{bad:?}");
        }
        std::fs::write(c.path(&k), &good).unwrap();
        assert_eq!(c.load(&k).unwrap().unwrap(), b"payload bytes");
        std::fs::remove_dir_all(c.dir()).unwrap();
    }

    #[test]
    fn an_unwritable_folder_is_a_typed_error() {
        let file = temp_dir("not-a-dir");
        std::fs::write(&file, b"x").unwrap();
        let c = DiskCache {
            dir: file.join("sub"),
            format: FORMAT,
        };
        let err = c.store(&key("body"), b"payload").unwrap_err();
        assert!(err.to_string().contains("code cache"), "{err}");
        std::fs::remove_file(&file).unwrap();
    }
}
