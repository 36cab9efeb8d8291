//! 2D and 3D block-shared arrays indexed `a[(y, x)]` and `a[(z, y, x)]`, each index checked
//! against its own dimension. `nacre` is the only dependency.

use nacre::gpu::{
    dynamic_shared, dynamic_shared_len, launch, launch_with_shared, shared_array_3d, sync_threads,
    thread_idx, Array, Block, Grid,
};
use nacre::prelude::*;

/// Each thread of an 8×4×2 block writes its id into a 2×4×8 array, then reads the element
/// mirrored in every dimension.
#[kernel]
fn mirror(out: Ptr<u32>, x_limit: Val<u32>) {
    let cube = shared_array_3d::<u32, 2, 4, 8>();
    let t = thread_idx();
    let id = (t.z * 4u32 + t.y) * 8u32 + t.x;
    cube[(t.z, t.y, t.x)] = id;
    sync_threads();
    // `x_limit` is 8 in the good call: x stays in 0..8.
    let x = (x_limit - 1u32) - t.x;
    out[id] = cube[(1u32 - t.z, 3u32 - t.y, x)];
}

#[jit]
fn run_mirror(out: Ptr<u32>, x_limit: Val<u32>) {
    launch(
        mirror,
        Grid::new(1u32),
        Block::new3(8u32, 4u32, 2u32),
        (out, x_limit),
    );
}

#[test]
fn a_3d_shared_array_is_indexed_by_triples() {
    let engine = Engine::new(Options::default()).unwrap();
    let f = engine.compile(run_mirror).unwrap();
    let mut out = Array::<u32>::alloc_unified(64).unwrap();
    f.call(&mut out, 8).unwrap();
    for (id, &got) in out.as_slice().iter().enumerate() {
        let (x, y, z) = (id % 8, (id / 8) % 4, id / 32);
        let want = ((1 - z) * 4 + (3 - y)) * 8 + (7 - x);
        assert_eq!(got as usize, want, "thread {id}");
    }
}

#[test]
fn an_index_past_its_dimension_traps_even_inside_the_array() {
    let engine = Engine::new(Options::default()).unwrap();
    let f = engine.compile(run_mirror).unwrap();
    let mut out = Array::<u32>::alloc_unified(64).unwrap();
    // x_limit 9: thread x = 0 reads x = 8, past the row (the flat position is still inside).
    let e = f.call(&mut out, 9).unwrap_err();
    assert!(
        matches!(e, nacre::Error::Trap(nacre::Trap::OutOfBounds { .. })),
        "{e:?}"
    );
}

/// Reverses `n` values within one block through dynamic shared memory of `bytes` bytes, viewed
/// as `u32`s; `info` gets the low byte of the first word through a `u8` view of the same
/// memory, and the number of `u32`s the launch gave.
#[kernel]
fn reverse(data: Ptr<u32>, info: Ptr<u32>, n: Val<u32>) {
    let words = dynamic_shared::<u32>();
    let bytes = dynamic_shared::<u8>();
    let t = thread_idx().x;
    words[t] = data[t];
    sync_threads();
    data[t] = words[n - 1u32 - t];
    if t == 0u32 {
        info[0u32] = bytes[0u32].cast::<u32>();
        info[1u32] = dynamic_shared_len::<u32>();
    }
}

#[jit]
fn run_reverse(data: Ptr<u32>, info: Ptr<u32>, n: Val<u32>, bytes: Val<u32>) {
    launch_with_shared(
        reverse,
        Grid::new(1u32),
        Block::new(n),
        bytes,
        (data, info, n),
    );
}

fn words(n: u32) -> Array<u32> {
    Array::copy(&(0..n).map(|i| 0x0102_03a5 + i).collect::<Vec<_>>()).unwrap()
}

#[test]
fn dynamic_shared_memory_is_sized_by_the_launch() {
    let engine = Engine::new(Options::default()).unwrap();
    let f = engine.compile(run_reverse).unwrap();
    for n in [1u32, 7, 64, 1024] {
        let mut data = words(n);
        let mut info = Array::<u32>::alloc_unified(2).unwrap();
        f.call(&mut data, &mut info, n, n * 4 + 3).unwrap();
        let want: Vec<u32> = (0..n).rev().map(|i| 0x0102_03a5 + i).collect();
        assert_eq!(data.as_slice(), want, "n = {n}");
        assert_eq!(info.as_slice(), [0xa5, n], "n = {n}");
    }
}

#[test]
fn an_access_past_the_dynamic_size_traps() {
    let engine = Engine::new(Options::default()).unwrap();
    let f = engine.compile(run_reverse).unwrap();
    let mut data = words(64);
    let mut info = Array::<u32>::alloc_unified(2).unwrap();
    // 63 words and 3 bytes for 64 threads: thread 63 writes past the end.
    for bytes in [63 * 4 + 3, 0] {
        let e = f.call(&mut data, &mut info, 64, bytes).unwrap_err();
        assert!(
            matches!(e, nacre::Error::Trap(nacre::Trap::OutOfBounds { .. })),
            "{bytes}: {e:?}"
        );
    }
}

#[test]
fn more_shared_memory_than_the_device_allows_is_a_typed_error() {
    let engine = Engine::new(Options::default()).unwrap();
    let f = engine.compile(run_reverse).unwrap();
    let mut data = words(64);
    let mut info = Array::<u32>::alloc_unified(2).unwrap();
    f.call(&mut data, &mut info, 64, 48 * 1024).unwrap();
    assert_eq!(info.as_slice(), [0xa5, 12 * 1024]);
    let e = f.call(&mut data, &mut info, 64, 48 * 1024 + 1).unwrap_err();
    assert!(
        matches!(e, nacre::Error::Trap(nacre::Trap::SharedMemoryLimit)),
        "{e:?}"
    );
    assert!(e.to_string().contains("shared memory"), "{e}");
}
