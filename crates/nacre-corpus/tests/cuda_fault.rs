//! A kernel that faults on the GPU (an access far outside its array) is reported as an error,
//! not a hang, and every later GPU operation of the process fails fast. A test executable of
//! its own, because a fault leaves the process's CUDA context unusable.
//!
//! A safe call cannot fault this way: its kernels check every access, so the same kernel
//! traps with `Trap::OutOfBounds` instead (checked first, while the context is still usable).
//! The fault itself needs the kernel compiled with `Engine::compile_unchecked`, called in an
//! `unsafe` block that breaks its contract on purpose.
//!
//! Without a usable CUDA device the test prints `skipped: <why>` and passes.

use nacre::gpu::cuda::{self, CudaError};
use nacre::gpu::{global_id_x, launch, Array, Block, DeviceKind, Grid, RuntimeOptions};
use nacre::kernel;
use nacre::prelude::*;
use std::io::Write;
use std::time::{Duration, Instant};

/// Writes 15 GiB past the start of `out`, where nothing is mapped.
#[kernel]
pub fn write_far_away(out: Ptr<f32>) {
    let i = global_id_x();
    out[i + 0xF000_0000u32] = 1.0;
}

/// Launches [`write_far_away`].
#[jit]
pub fn run_write_far_away(out: Ptr<f32>) {
    launch(write_far_away, Grid::new(1u32), Block::new(32u32), (out,));
}

#[test]
fn a_kernel_fault_is_an_error_and_the_context_is_lost() {
    if let Err(e) = cuda::probe(0) {
        let _ = writeln!(std::io::stderr(), "skipped: no usable CUDA device: {e}");
        return;
    }
    let engine = Engine::new(Options {
        runtime: RuntimeOptions::for_device(DeviceKind::Cuda),
        ..Options::default()
    })
    .unwrap();
    let mut out = Array::<f32>::alloc_on(engine.device(), 32).unwrap();

    // The safe call's kernel checks the store: a trap, no fault, and the context stays usable.
    let checked = engine.compile(run_write_far_away).unwrap();
    let err = checked.call(&mut out).unwrap_err();
    assert!(
        matches!(err, nacre::Error::Trap(nacre::Trap::OutOfBounds { .. })),
        "{err}"
    );
    checked.call(&mut out).unwrap_err();
    assert_eq!(
        out.as_slice(),
        &[0.0; 32],
        "the checked kernel wrote nothing"
    );

    let f = engine.compile_unchecked(run_write_far_away).unwrap();
    let start = Instant::now();
    // SAFETY: none: this call breaks the contract of `Unchecked::call` on purpose (the kernel
    // stores 15 GiB past `out`), which is what the test is about. The address is far beyond
    // every allocation of this process (no other array is live), so the store hits unmapped
    // device memory and faults rather than corrupting memory; the test checks that the
    // runtime reports the fault and refuses all later work.
    let err = unsafe { f.call(out.ptr()) }.unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(60));
    match err.runtime_error::<CudaError>() {
        Some(e @ CudaError::KernelFault { .. }) => assert!(e.is_sticky()),
        _ => panic!("expected a kernel fault, got: {err}"),
    }
    assert!(err.to_string().contains("restart the process"), "{err}");

    // Everything after the fault fails at once, with the original cause, the safe call too.
    // SAFETY: as above; the context is lost, so nothing runs on the GPU any more.
    let err = unsafe { f.call(out.ptr()) }.unwrap_err();
    assert!(
        matches!(
            err.runtime_error::<CudaError>(),
            Some(CudaError::ContextLost { .. })
        ),
        "{err}"
    );
    let err = checked.call(&mut out).unwrap_err();
    assert!(
        matches!(
            err.runtime_error::<CudaError>(),
            Some(CudaError::ContextLost { .. })
        ),
        "{err}"
    );
    let err = Array::<f32>::alloc_on(engine.device(), 16).unwrap_err();
    assert!(err.to_string().contains("unusable"), "{err}");
}
