//! The C backend's folder of compiled libraries across processes: this test runs its own
//! binary again as child processes that compile with the C backend and one cache folder, and
//! reads their counters. A second process must get its code without running the compiler; a
//! damaged entry must be detected, rebuilt and rewritten.

use nacre::prelude::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The variable that makes this test's binary a child, naming the cache folder.
const CHILD: &str = "NACRE_TEST_C_CACHE_CHILD";

#[jit]
fn poly(x: Val<i64>) -> Val<i64> {
    let mut acc = Val::new(0i64);
    for k in 0..7i64 {
        acc = acc * x + k;
    }
    acc
}

fn poly_ref(x: i64) -> i64 {
    (0..7i64).fold(0i64, |acc, k| acc.wrapping_mul(x).wrapping_add(k))
}

/// The child's work: compile `poly` with the C backend and the cache in `dir`, check a call,
/// print the counters.
fn child(dir: &Path) {
    let options = Options {
        backend: BackendKind::C,
        c: nacre::COptions {
            cache_dir: Some(dir.to_path_buf()),
            ..Default::default()
        },
        ..Options::default()
    };
    let engine = Engine::new(options).unwrap();
    let f = engine.compile(poly).unwrap();
    for x in [-3i64, 0, 5, 1 << 20] {
        assert_eq!(f.call(x).unwrap(), poly_ref(x));
    }
    let s = nacre::c_cache::stats();
    println!(
        "C-CACHE-STATS {} {} {} {}",
        s.compiler_runs, s.hits, s.stores, s.errors
    );
}

/// Runs a child on `dir`; returns its (compiler runs, hits, stores, errors).
fn run_child(dir: &Path) -> [u64; 4] {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_second_process_loads_c_code_without_the_compiler",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, dir)
        .env_remove(nacre::c_cache::CACHE_DIR_ENV)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("C-CACHE-STATS ").map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("no counters in {stdout}"));
    let n: Vec<u64> = line
        .split_whitespace()
        .take(4)
        .map(|v| v.parse().unwrap())
        .collect();
    [n[0], n[1], n[2], n[3]]
}

/// The library entries of the cache folder.
fn libraries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "so"))
        .collect()
}

#[test]
fn a_second_process_loads_c_code_without_the_compiler() {
    if let Some(dir) = std::env::var_os(CHILD) {
        child(Path::new(&dir));
        return;
    }
    let dir = std::env::temp_dir().join(format!("nacre-c-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);

    let [runs, hits, stores, errors] = run_child(&dir);
    assert!(runs >= 1 && stores >= 1, "first process: {runs} {stores}");
    assert_eq!((hits, errors), (0, 0));
    let entries = libraries(&dir);
    assert!(!entries.is_empty());

    let [runs, hits, stores, errors] = run_child(&dir);
    assert_eq!(
        (runs, stores, errors),
        (0, 0, 0),
        "a second process runs no compiler"
    );
    assert!(hits >= 1);

    // Damage every entry: one byte of each library flipped. The next process detects it,
    // compiles again and rewrites the entry, which the one after loads.
    for path in &entries {
        let mut bytes = std::fs::read(path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x5a;
        std::fs::write(path, bytes).unwrap();
    }
    let [runs, _, stores, _] = run_child(&dir);
    assert!(
        runs >= 1 && stores >= 1,
        "a damaged entry is rebuilt: {runs} {stores}"
    );
    let [runs, hits, ..] = run_child(&dir);
    assert_eq!(runs, 0);
    assert!(hits >= 1);
    std::fs::remove_dir_all(&dir).unwrap();
}
