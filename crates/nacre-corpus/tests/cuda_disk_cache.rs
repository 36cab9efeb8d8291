//! The on-disk CUDA kernel cache: a kernel compiled once is loaded from the cache folder by
//! later engines after the in-process cache is emptied. A test executable of its own,
//! because it empties the process's kernel cache.
//!
//! Without a usable CUDA device the test prints `skipped: <why>` and passes.

use nacre::gpu::cuda;
use nacre::gpu::{global_id_x, launch, Array, Block, Grid, RuntimeOptions};
use nacre::kernel;
use nacre::prelude::*;
use std::io::Write;
use std::path::Path;

/// `v[i] = v[i] * 3 + 7` (a kernel no other test compiles).
#[kernel]
pub fn triple_plus_seven(v: Ptr<u32>, n: Val<u32>) {
    let i = global_id_x();
    if i < n {
        v[i] = v[i] * 3 + 7;
    }
}

/// Launches [`triple_plus_seven`].
#[jit]
pub fn run_triple_plus_seven(v: Ptr<u32>, n: Val<u32>) {
    launch(
        triple_plus_seven,
        Grid::new(n / 128 + 1),
        Block::new(128u32),
        (v, n),
    );
}

fn engine(cache: &Path) -> Engine {
    Engine::new(Options {
        runtime: RuntimeOptions::Cuda(cuda::CudaOptions {
            cache_dir: Some(cache.to_path_buf()),
            ..Default::default()
        }),
        ..Options::default()
    })
    .expect("a CUDA engine")
}

#[test]
fn kernels_are_loaded_from_the_disk_cache() {
    if let Err(e) = cuda::probe(0) {
        let _ = writeln!(std::io::stderr(), "skipped: no usable CUDA device: {e}");
        return;
    }
    let dir = std::env::temp_dir().join(format!("nacre-cuda-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);

    cuda::clear_kernel_cache();
    let before = cuda::thread_stats();
    let first = engine(&dir);
    let f = first.compile(run_triple_plus_seven).unwrap();
    let d = cuda::thread_stats().since(&before);
    assert_eq!(
        (d.compiles, d.disk_cache_hits, d.disk_cache_errors),
        (1, 0, 0),
        "{d:?}"
    );
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].ends_with(".cubin"), "{files:?}");
    let mut v = Array::copy_on(first.device(), &[1u32, 2, 3]).unwrap();
    f.call(&mut v, 3).unwrap();
    assert_eq!(v.as_slice(), &[10, 13, 16]);

    // A fresh process would find only the disk cache: empty the in-process one.
    cuda::clear_kernel_cache();
    assert_eq!(cuda::cached_kernels(), 0);
    let before = cuda::thread_stats();
    let second = engine(&dir);
    let g = second.compile(run_triple_plus_seven).unwrap();
    let d = cuda::thread_stats().since(&before);
    assert_eq!((d.compiles, d.disk_cache_hits), (0, 1), "{d:?}");
    g.call(&mut v, 3).unwrap();
    assert_eq!(v.as_slice(), &[37, 46, 55]);
    // The first engine's function still holds its own loaded kernel.
    f.call(&mut v, 1).unwrap();
    assert_eq!(v.as_slice(), &[118, 46, 55]);

    std::fs::remove_dir_all(&dir).unwrap();
}
