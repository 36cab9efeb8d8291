//! The kernel corpus and the CUDA runtime's behaviour on a CUDA GPU: every corpus kernel at
//! two sizes against its plain-Rust reference, the kernel cache, launch sequences,
//! residency (steady-state launches migrate nothing), and the errors of bad launches.
//!
//! Without a usable CUDA device (no driver, no GPU, no NVRTC) every test prints
//! `skipped: <why>` and passes. The test executable runs on its own, without cargo: copy
//! `target/<profile>/deps/corpus-<hash>` to the GPU machine and run it (filter `cuda_kernels::`) (NVRTC's
//! folder, e.g. `/usr/local/cuda/lib64`, must be on `LD_LIBRARY_PATH`).

use nacre::gpu::cuda::{self, CudaError};
use nacre::gpu::{
    block_dim_x, dynamic_shared, dynamic_shared_len, global_id_x, launch, launch_with_shared,
    sync_threads, thread_idx_x, Array, Block, DeviceKind, Grid, MemoryError, RuntimeOptions,
};
use nacre::prelude::*;
use nacre::{kernel, Error, Trap};
use nacre_corpus::kernels::check_all;
use std::io::Write;
use std::sync::Once;
use std::time::{Duration, Instant};

/// A CUDA engine, or `None` (after saying why) when this machine cannot run CUDA kernels.
fn cuda_engine() -> Option<Engine> {
    if let Err(e) = cuda::probe(0) {
        // Written past the test harness's capture, so that a skip is always visible; once.
        static SAID: Once = Once::new();
        SAID.call_once(|| {
            let _ = writeln!(
                std::io::stderr(),
                "skipped: no usable CUDA device: {e} (every test of corpus::cuda_kernels passes \
                 without running)"
            );
        });
        return None;
    }
    let options = Options {
        runtime: RuntimeOptions::for_device(DeviceKind::Cuda),
        ..Options::default()
    };
    Some(Engine::new(options).expect("a CUDA engine on a machine where probe succeeded"))
}

#[test]
fn corpus_kernels_match_their_references_on_cuda() {
    let Some(engine) = cuda_engine() else { return };
    let before = cuda::thread_stats();
    let (ran, failures) = check_all(&engine, |case| {
        if case.name == "large_batch" {
            vec![300]
        } else {
            vec![300, 5000]
        }
    });
    assert!(
        failures.is_empty(),
        "{} failures on CUDA:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(ran >= 20, "only {ran} kernel runs");
    let d = cuda::thread_stats().since(&before);
    let _ = writeln!(
        std::io::stderr(),
        "corpus on CUDA: {ran} runs, {} kernels compiled (mean NVRTC time {:.1} ms), {} cache \
         hits, {} launches, {} prefetches ({} MiB to the device, {} MiB to the host)",
        d.compiles,
        d.compile_nanos as f64 / d.compiles.max(1) as f64 / 1e6,
        d.cache_hits,
        d.launches,
        d.prefetches(),
        d.bytes_to_device >> 20,
        d.bytes_to_host >> 20
    );
}

/// `v[i] += 1` for `i < n`.
#[kernel]
pub fn add_one(v: Ptr<f32>, n: Val<u32>) {
    let i = global_id_x();
    if i < n {
        v[i] = v[i] + 1.0;
    }
}

/// Launches [`add_one`] `times` times.
#[jit]
pub fn add_many(v: Ptr<f32>, n: Val<u32>, times: Val<u32>) {
    for _k in 0u32..times {
        launch(add_one, Grid::new(n / 256 + 1), Block::new(256u32), (v, n));
    }
}

/// `v[i] *= s` for `i < n`.
#[kernel]
pub fn scale(v: Ptr<f32>, s: Val<f32>, n: Val<u32>) {
    let i = global_id_x();
    if i < n {
        v[i] = v[i] * s;
    }
}

/// Adds one, reads the first element on the host, then scales by it: host code that reads
/// memory between launches (each launch must then complete before the host goes on).
#[jit]
pub fn add_then_scale_by_first(v: Ptr<f32>, n: Val<u32>) {
    launch(add_one, Grid::new(n / 256 + 1), Block::new(256u32), (v, n));
    let s = v[0u32];
    launch(scale, Grid::new(n / 256 + 1), Block::new(256u32), (v, s, n));
}

/// `out[i] = out[i] / d`: traps on `d == 0`.
#[kernel]
pub fn divide(out: Ptr<i32>, d: Val<i32>) {
    let i = global_id_x();
    out[i] = out[i] / d;
}

/// Launches [`divide`] on 64 threads.
#[jit]
pub fn run_divide(out: Ptr<i32>, d: Val<i32>) {
    launch(divide, Grid::new(2u32), Block::new(32u32), (out, d));
}

/// Launches [`add_one`] `times` times, then [`divide`] by `d`: a trap behind a long queue.
#[jit]
pub fn add_many_then_divide(v: Ptr<f32>, n: Val<u32>, times: Val<u32>, out: Ptr<i32>, d: Val<i32>) {
    for _k in 0u32..times {
        launch(add_one, Grid::new(n / 256 + 1), Block::new(256u32), (v, n));
    }
    launch(divide, Grid::new(2u32), Block::new(32u32), (out, d));
}

/// Launches [`add_one`] with 2048 threads per block (more than any GPU allows).
#[jit]
pub fn oversized_block(v: Ptr<f32>, n: Val<u32>) {
    launch(add_one, Grid::new(1u32), Block::new(2048u32), (v, n));
}

#[test]
fn a_second_engine_finds_the_kernel_in_the_cache() {
    let Some(first) = cuda_engine() else { return };
    let Some(second) = cuda_engine() else { return };
    let mut v = Array::copy_on(first.device(), &[1.0f32; 10]).unwrap();
    first
        .compile(add_many)
        .unwrap()
        .call(&mut v, 10, 1)
        .unwrap();
    let before = cuda::thread_stats();
    let f = second.compile(add_many).unwrap();
    let d = cuda::thread_stats().since(&before);
    assert_eq!((d.compiles, d.cache_hits), (0, 1), "{d:?}");
    f.call(&mut v, 10, 1).unwrap();
    assert_eq!(v.as_slice(), &[3.0f32; 10]);
}

#[test]
fn a_loop_of_launches_compiles_once_waits_once_and_migrates_nothing() {
    let Some(engine) = cuda_engine() else { return };
    let n = 100_000usize;
    let data: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let before = cuda::thread_stats();
    // The copy is written on the device, where the launches find it.
    let mut v = Array::copy_on(engine.device(), &data).unwrap();
    let f = engine.compile(add_many).unwrap();
    f.call(&mut v, n as u32, 1).unwrap();
    let d = cuda::thread_stats().since(&before);
    assert_eq!(
        d.prefetches(),
        0,
        "a copied array starts on the device: {d:?}"
    );
    let before = cuda::thread_stats();
    f.call(&mut v, n as u32, 50).unwrap();
    f.call(&mut v, n as u32, 50).unwrap();
    let d = cuda::thread_stats().since(&before);
    assert_eq!(d.launches, 100, "{d:?}");
    assert_eq!(d.compiles + d.cache_hits, 0, "{d:?}");
    assert_eq!(d.syncs, 2, "one wait per call: {d:?}");
    assert_eq!(d.prefetches(), 0, "steady state moves no pages: {d:?}");

    // Reading brings the array back once; the next launch sends it again once.
    let expect = |added: f32| data.iter().map(move |&x| x + added);
    let before = cuda::thread_stats();
    assert!(v.as_slice().iter().copied().eq(expect(101.0)));
    assert!(v.as_slice().iter().copied().eq(expect(101.0)));
    f.call(&mut v, n as u32, 3).unwrap();
    let d = cuda::thread_stats().since(&before);
    assert_eq!(
        (d.prefetches_to_host, d.bytes_to_host),
        (1, 4 * n as u64),
        "{d:?}"
    );
    assert_eq!(
        (d.prefetches_to_device, d.bytes_to_device),
        (1, 4 * n as u64),
        "{d:?}"
    );
    assert!(v.as_slice().iter().copied().eq(expect(104.0)));
}

#[test]
fn host_code_between_launches_sees_their_results() {
    let Some(engine) = cuda_engine() else { return };
    let mut v = Array::copy_on(engine.device(), &[1.0f32; 1000]).unwrap();
    let f = engine.compile(add_then_scale_by_first).unwrap();
    let before = cuda::thread_stats();
    f.call(&mut v, 1000).unwrap();
    let d = cuda::thread_stats().since(&before);
    assert_eq!(d.syncs, 2, "one wait per launch: {d:?}");
    // (1 + 1) * 2: the host read the first element after the first kernel finished.
    assert!(
        v.as_slice().iter().all(|&x| x == 4.0),
        "{:?}",
        &v.as_slice()[..4]
    );
}

/// A CUDA engine whose launches are queued as they come, without graphs.
fn direct_engine() -> Option<Engine> {
    cuda_engine()?;
    let options = Options {
        runtime: RuntimeOptions::Cuda(cuda::CudaOptions {
            direct_launches: true,
            ..cuda::CudaOptions::default()
        }),
        ..Options::default()
    };
    Some(Engine::new(options).expect("a CUDA engine on a machine where probe succeeded"))
}

#[test]
fn repeated_calls_replay_one_graph_per_launch_shape() {
    let Some(engine) = cuda_engine() else { return };
    let n = 5000usize;
    let mut a = Array::copy_on(engine.device(), &vec![1.0f32; n]).unwrap();
    let mut b = Array::copy_on(engine.device(), &vec![10.0f32; n]).unwrap();
    let f = engine.compile(add_many).unwrap();
    let call = |v: &mut Array<f32>, times: u32| {
        let before = cuda::thread_stats();
        f.call(v, n as u32, times).unwrap();
        let d = cuda::thread_stats().since(&before);
        (d.launches, d.graph_builds, d.graph_launches, d.syncs)
    };
    // First seen: queued directly; seen again: built and launched; then replayed, with the
    // other array's pointer set in place.
    assert_eq!(call(&mut a, 5), (5, 0, 0, 1));
    assert_eq!(call(&mut a, 5), (5, 1, 1, 1));
    assert_eq!(call(&mut b, 5), (5, 0, 1, 1));
    assert_eq!(call(&mut a, 5), (5, 0, 1, 1));
    // Another shape (seven launches) gets a graph of its own; the first one is kept.
    assert_eq!(call(&mut b, 7), (7, 0, 0, 1));
    assert_eq!(call(&mut b, 7), (7, 1, 1, 1));
    assert_eq!(call(&mut a, 5), (5, 0, 1, 1));
    // A call without launches has nothing to replay.
    assert_eq!(call(&mut a, 0), (0, 0, 0, 0));
    assert!(
        a.as_slice().iter().all(|&x| x == 21.0),
        "{:?}",
        &a.as_slice()[..4]
    );
    assert!(
        b.as_slice().iter().all(|&x| x == 29.0),
        "{:?}",
        &b.as_slice()[..4]
    );
}

#[test]
fn a_graph_reports_its_kernels_traps_and_runs_again() {
    let Some(engine) = cuda_engine() else { return };
    let mut v = Array::copy_on(engine.device(), &[0.0f32; 300]).unwrap();
    let mut out = Array::copy_on(engine.device(), &[84i32; 64]).unwrap();
    let f = engine.compile(add_many_then_divide).unwrap();
    for _ in 0..3 {
        f.call(&mut v, 300, 4, &mut out, 1).unwrap();
    }
    let before = cuda::thread_stats();
    let err = f.call(&mut v, 300, 4, &mut out, 0).unwrap_err();
    assert!(matches!(err, Error::Trap(Trap::DivisionByZero)), "{err}");
    f.call(&mut v, 300, 4, &mut out, 2).unwrap();
    let d = cuda::thread_stats().since(&before);
    assert_eq!((d.graph_builds, d.graph_launches), (0, 2), "{d:?}");
    assert!(
        v.as_slice().iter().all(|&x| x == 20.0),
        "{:?}",
        &v.as_slice()[..4]
    );
    assert!(
        out.as_slice().iter().all(|&x| x == 42),
        "{:?}",
        out.as_slice()
    );
}

#[test]
fn direct_launches_build_no_graph_and_compute_the_same() {
    let Some(engine) = direct_engine() else {
        return;
    };
    let mut v = Array::copy_on(engine.device(), &[1.0f32; 1000]).unwrap();
    let f = engine.compile(add_many).unwrap();
    let before = cuda::thread_stats();
    for _ in 0..3 {
        f.call(&mut v, 1000, 4).unwrap();
    }
    let d = cuda::thread_stats().since(&before);
    assert_eq!(
        (d.launches, d.graph_builds, d.graph_launches),
        (12, 0, 0),
        "{d:?}"
    );
    assert!(v.as_slice().iter().all(|&x| x == 13.0));
}

#[test]
fn a_trap_in_a_kernel_is_reported_and_the_next_call_runs() {
    let Some(engine) = cuda_engine() else { return };
    let mut out = Array::copy_on(engine.device(), &[84i32; 64]).unwrap();
    let f = engine.compile(run_divide).unwrap();
    let err = f.call(&mut out, 0).unwrap_err();
    assert!(matches!(err, Error::Trap(Trap::DivisionByZero)), "{err}");
    f.call(&mut out, 2).unwrap();
    assert!(
        out.as_slice().iter().all(|&x| x == 42),
        "{:?}",
        out.as_slice()
    );
}

/// The launcher's own check of unchecked calls: a pointer into no live array is refused
/// before the kernel runs. A safe call cannot get there (the borrow checker does not let an
/// array be freed while it is borrowed for a call), so this needs `compile_unchecked`.
#[test]
fn a_freed_array_is_an_unknown_buffer() {
    let Some(engine) = cuda_engine() else { return };
    let f = engine.compile_unchecked(add_many).unwrap();
    // Tests run in parallel and the driver may hand the freed address to another test's
    // array at once; try again until the address stays free up to the call.
    for _ in 0..10 {
        let v = Array::<f32>::alloc_on(engine.device(), 256).unwrap();
        let (p, addr) = (v.ptr(), v.as_ptr() as usize);
        drop(v);
        if nacre::gpu::buffer_bytes(addr).is_some() {
            continue;
        }
        // SAFETY: `p` points into freed memory, against the contract of `Unchecked::call`,
        // on purpose: the launcher looks every pointer argument up in the size table before
        // it queues a kernel, finds none here (checked just above) and fails the call with
        // `Trap::UnknownBuffer`, so the kernel never runs and never touches the address. (A
        // race with another test reusing the address between the check and the call would
        // let the kernel add 1 to 256 floats of that test's live array: the reason for this
        // test's retry, and a risk it accepts.)
        let err = unsafe { f.call(p, 256, 1) }.unwrap_err();
        assert!(matches!(err, Error::Trap(Trap::UnknownBuffer)), "{err}");
        return;
    }
    panic!("the freed address was reused by another array every time");
}

#[test]
fn a_cpu_array_is_a_typed_error() {
    let Some(engine) = cuda_engine() else { return };
    let mut v = Array::copy(&[1.0f32; 16]).unwrap();
    let f = engine.compile(add_many).unwrap();
    let err = f.call(&mut v, 16, 1).unwrap_err();
    assert!(
        matches!(
            err.runtime_error::<CudaError>(),
            Some(CudaError::ForeignMemory { device, arg: 0, .. }) if device == "cpu"
        ),
        "{err}"
    );
    assert!(err.to_string().contains("Engine::device"), "{err}");
    assert_eq!(v.as_slice(), &[1.0f32; 16]);
}

#[test]
fn an_oversized_block_is_an_invalid_launch() {
    let Some(engine) = cuda_engine() else { return };
    let mut v = Array::<f32>::alloc_on(engine.device(), 16).unwrap();
    let f = engine.compile(oversized_block).unwrap();
    let err = f.call(&mut v, 16).unwrap_err();
    assert!(matches!(err, Error::Trap(Trap::InvalidLaunch)), "{err}");
}

/// Fills the whole dynamic shared memory (one `u32` per 4 bytes, every thread a stride of
/// it), then each thread sums its stride backwards: every word was written by another thread.
#[kernel]
fn fill_dynamic(out: Ptr<u32>) {
    let words = dynamic_shared::<u32>();
    let len = dynamic_shared_len::<u32>();
    let t = thread_idx_x();
    let b = block_dim_x();
    let mut i = t;
    while i < len {
        words[i] = i * 3u32;
        i += b;
    }
    sync_threads();
    let mut sum = Val::new(0u32);
    let mut j = t;
    while j < len {
        sum = sum.wrapping_add(words[len - 1u32 - j]);
        j += b;
    }
    out[t] = sum;
}

#[jit]
fn run_fill_dynamic(out: Ptr<u32>, bytes: Val<u32>) {
    launch_with_shared(
        fill_dynamic,
        Grid::new(1u32),
        Block::new(256u32),
        bytes,
        (out,),
    );
}

#[test]
fn dynamic_shared_memory_above_48_kib_opts_in_up_to_the_device_limit() {
    let Some(engine) = cuda_engine() else { return };
    let f = engine.compile(run_fill_dynamic).unwrap();
    let limit = cuda::device_info(0).unwrap().limits.max_shared_bytes;
    let mut out = Array::<u32>::alloc_on(engine.device(), 256).unwrap();
    for bytes in [1024u32, 48 * 1024, 64 * 1024, limit] {
        f.call(&mut out, bytes)
            .unwrap_or_else(|e| panic!("{bytes} bytes: {e}"));
        let len = bytes / 4;
        for t in 0..256u32 {
            let want = (t..len)
                .step_by(256)
                .fold(0u32, |s, j| s.wrapping_add((len - 1 - j) * 3));
            assert_eq!(
                out.as_slice()[t as usize],
                want,
                "{bytes} bytes, thread {t}"
            );
        }
    }
    let err = f.call(&mut out, limit + 4).unwrap_err();
    assert!(matches!(err, Error::Trap(Trap::SharedMemoryLimit)), "{err}");
}

#[test]
fn every_atomic_type_and_ordering_runs_on_the_gpu() {
    let Some(engine) = cuda_engine() else { return };
    nacre_corpus::kernels::check_wide_atomics(&engine).unwrap();
}

#[test]
fn f64_warp_operations_run_on_the_gpu() {
    let Some(engine) = cuda_engine() else { return };
    nacre_corpus::kernels::warp::check_warp_f64(&engine).unwrap();
}

#[test]
fn empty_arrays_work() {
    let Some(engine) = cuda_engine() else { return };
    let mut v = Array::<f32>::alloc_on(engine.device(), 0).unwrap();
    let w = Array::<f32>::alloc_on(engine.device(), 0).unwrap();
    assert_ne!(v.as_ptr(), w.as_ptr());
    let f = engine.compile(add_many).unwrap();
    f.call(&mut v, 0, 2).unwrap();
    assert!(v.as_slice().is_empty());
}

#[test]
fn new_arrays_are_zeroed_and_aligned() {
    let Some(engine) = cuda_engine() else { return };
    for n in [1usize, 1000, 1 << 20] {
        let v = Array::<u32>::alloc_on(engine.device(), n).unwrap();
        assert_eq!(v.as_ptr() as usize % 4096, 0);
        assert!(v.as_slice().iter().all(|&x| x == 0));
        assert_eq!(v.device().name(), "cuda:0");
    }
}

#[test]
fn more_than_the_device_holds_is_refused() {
    let Some(engine) = cuda_engine() else { return };
    let info = cuda::device_info(0).unwrap();
    let err = Array::<u8>::alloc_on(engine.device(), info.total_memory * 2).unwrap_err();
    assert!(
        matches!(err, MemoryError::ExceedsFreeMemory { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("smaller batches"), "{err}");
}

#[test]
fn the_device_is_described() {
    let Some(engine) = cuda_engine() else { return };
    let info = cuda::device_info(0).unwrap();
    assert!(!info.name.is_empty());
    assert!(info.compute_capability.0 >= 3);
    assert!(info.managed_memory);
    assert_eq!(engine.device().name(), "cuda:0");
    assert_eq!(DeviceKind::best_available(), DeviceKind::Cuda);
    let _ = writeln!(
        std::io::stderr(),
        "CUDA device 0: {} (sm_{}{}, {} MiB, {} SMs, concurrent managed access: {}, driver {})",
        info.name,
        info.compute_capability.0,
        info.compute_capability.1,
        info.total_memory >> 20,
        info.multiprocessors,
        info.concurrent_managed_access,
        info.driver_version
    );
}

#[test]
fn queued_launches_and_waited_calls_compute_the_same() {
    let Some(engine) = cuda_engine() else { return };
    let n = 1usize << 20;
    let mut v = Array::<f32>::alloc_on(engine.device(), n).unwrap();
    let f = engine.compile(add_many).unwrap();
    f.call(&mut v, n as u32, 10).unwrap();

    let launches = 2000u32;
    let start = Instant::now();
    f.call(&mut v, n as u32, launches).unwrap();
    let queued = start.elapsed() / launches;

    let calls = 500u32;
    let start = Instant::now();
    for _ in 0..calls {
        f.call(&mut v, n as u32, 1).unwrap();
    }
    let waited = start.elapsed() / calls;
    let _ = writeln!(
        std::io::stderr(),
        "add_one over {n} floats: {queued:?} per launch in a loop of {launches} (one wait), \
         {waited:?} per call of one launch (launch + wait)"
    );
    // Only a sanity bound: how queued launches compare with waited calls is measured by
    // `nacre bench gpu` (gpu_cuda_launch100_latency and its _direct row), not asserted here.
    assert!(
        queued < Duration::from_millis(1),
        "{queued:?} per queued launch"
    );
    let expected = (10 + launches + calls) as f32;
    assert!(v.as_slice().iter().all(|&x| x == expected));
}

#[test]
fn threads_launch_and_wait_independently() {
    let Some(engine) = cuda_engine() else { return };
    let f = engine.compile(add_many).unwrap();
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let (f, engine) = (f.clone(), &engine);
            s.spawn(move || {
                let n = 10_000 + t as usize;
                let mut v = Array::<f32>::alloc_on(engine.device(), n).unwrap();
                for _ in 0..20 {
                    f.call(&mut v, n as u32, 5 + t).unwrap();
                }
                let expected = (20 * (5 + t)) as f32;
                assert!(v.as_slice().iter().all(|&x| x == expected), "thread {t}");
                let d = cuda::thread_stats();
                assert_eq!(d.launches, u64::from(20 * (5 + t)), "thread {t}: {d:?}");
                assert_eq!(d.syncs, 20, "thread {t}: {d:?}");
            });
        }
    });
}

#[test]
fn a_thread_reusing_a_status_word_still_waits_for_its_kernels() {
    let Some(engine) = cuda_engine() else { return };
    let n = 1 << 20;
    let mut v = Array::<f32>::alloc_on(engine.device(), n).unwrap();
    let mut out = Array::copy_on(engine.device(), &[84i32; 64]).unwrap();
    let f = engine.compile(add_many_then_divide).unwrap();
    // The first thread waits once (its ticket is then 1) and ends, leaving its status word
    // to the next thread, whose first wait must not take that ticket for its own.
    for round in 0..4 {
        std::thread::scope(|s| {
            s.spawn(|| f.call(&mut v, n as u32, 1, &mut out, 1).unwrap());
        });
        std::thread::scope(|s| {
            s.spawn(|| {
                let err = f.call(&mut v, n as u32, 200, &mut out, 0).unwrap_err();
                assert!(
                    matches!(err, Error::Trap(Trap::DivisionByZero)),
                    "round {round}: {err}"
                );
            });
        });
    }
    assert!(v.as_slice().iter().all(|&x| x == 4.0 * 201.0));
}
