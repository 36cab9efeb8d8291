//! 2D and 3D block-shared arrays indexed `a[(y, x)]` and `a[(z, y, x)]`, each index checked
//! against its own dimension. `nacre` is the only dependency.

use nacre::gpu::{launch, shared_array_3d, sync_threads, thread_idx, Array, Block, Grid};
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
