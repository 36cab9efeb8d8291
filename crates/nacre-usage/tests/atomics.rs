//! Atomics through the public API: kernels whose blocks run in parallel on every core count
//! exactly, host code uses the same operations, and a function that updates memory
//! atomically needs a mutable borrow. `nacre` is the only dependency.

use nacre::atomic::{fence, Ordering};
use nacre::gpu::{global_id_x, global_size_x, launch, Array, Block, Grid};
use nacre::prelude::*;

/// Counts `data`'s values modulo 64 with device-scoped atomics, and keeps the largest value
/// and the sum of all (`u64`).
#[kernel]
fn count(data: Ptr<u32>, bins: Ptr<u32>, stats: Ptr<u64>, n: Val<u32>) {
    let mut i = global_id_x();
    while i < n {
        let v = data[i];
        bins.atomic(v % 64u32).fetch_add(1u32, Ordering::Relaxed);
        stats
            .atomic(0u32)
            .fetch_max(v.cast::<u64>(), Ordering::Relaxed);
        stats
            .atomic(1u32)
            .fetch_add(v.cast::<u64>(), Ordering::Relaxed);
        i += global_size_x();
    }
}

#[jit]
fn run_count(data: Ptr<u32>, bins: Ptr<u32>, stats: Ptr<u64>, n: Val<u32>) {
    launch(
        count,
        Grid::new(256u32),
        Block::new(64u32),
        (data, bins, stats, n),
    );
}

#[test]
fn atomics_from_blocks_on_every_core_are_exact() {
    let engine = Engine::new(Options::default()).unwrap();
    let f = engine.compile(run_count).unwrap();
    let n = 1 << 20;
    let values: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761) >> 7)
        .collect();
    let data = Array::copy(&values).unwrap();
    for _ in 0..3 {
        let mut bins = Array::<u32>::alloc_unified(64).unwrap();
        let mut stats = Array::<u64>::alloc_unified(2).unwrap();
        f.call(&data, &mut bins, &mut stats, n as u32).unwrap();
        let mut want = vec![0u32; 64];
        for v in &values {
            want[(v % 64) as usize] += 1;
        }
        assert_eq!(bins.as_slice(), want);
        let max = u64::from(*values.iter().max().unwrap());
        let sum: u64 = values.iter().map(|&v| u64::from(v)).sum();
        assert_eq!(stats.as_slice(), [max, sum]);
    }
}

/// Host code: bumps `counter[0]` once per element with a compare-exchange loop.
#[jit]
fn bump(counter: Ptr<i64>, n: Val<i64>) -> Val<i64> {
    let mut tries = Val::new(0i64);
    for _ in 0..n {
        let mut done = Val::new(false);
        let mut cur = counter[0i64];
        while !done {
            let (old, ok) = counter.atomic(0i64).compare_exchange(
                cur,
                cur + 1i64,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
            done = ok;
            cur = old;
            tries += 1i64;
        }
    }
    fence(Ordering::SeqCst);
    tries
}

#[test]
fn host_code_uses_the_same_atomics() {
    let engine = Engine::new(Options::default()).unwrap();
    let f = engine.compile(bump).unwrap();
    let mut counter = vec![40i64];
    assert_eq!(f.call(&mut counter, 2).unwrap(), 2);
    assert_eq!(counter, [42]);
}

#[test]
fn an_atomic_update_needs_a_mutable_borrow() {
    let engine = Engine::new(Options::default()).unwrap();
    let f = engine.compile(bump).unwrap();
    let counter = vec![0i64];
    let e = f.call(&counter, 1).unwrap_err();
    assert!(matches!(e, nacre::Error::ReadOnlyArgument { .. }), "{e:?}");
}
