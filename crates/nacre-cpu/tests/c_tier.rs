//! The C tier of collapsed grid-stride loops: compiled in the background for kernels
//! compiled by Cranelift, same results before and after it takes over; none for the C
//! backend (which compiles the collapsed loop itself), the interpreter, or serial mode.

mod common;

use common::*;
use nacre_cpu::CpuMode;
use nacre_cpu::{CpuKernel, TierState};
use nacre_runtime::Array;
use std::sync::Arc;
use std::time::Duration;

/// One saxpy launch over `n` elements on 7 blocks of 64 threads; returns `y`.
fn run(kernel: &Arc<CpuKernel>, x: &[f32], y0: &[f32]) -> Vec<f32> {
    let xa = Array::copy(x).unwrap();
    let ya = Array::copy(y0).unwrap();
    let args = [
        f32_bits(0.75),
        ptr_arg(xa.as_ptr()),
        ptr_arg(ya.as_ptr()),
        x.len() as u64,
    ];
    launch(kernel, [7, 1, 1], [64, 1, 1], &args).unwrap();
    ya.as_slice().to_vec()
}

#[test]
fn collapsed_loops_get_a_c_tier_with_the_same_results() {
    // Several chunks of the collapsed loop, and a last one cut short.
    let n = 100_003usize;
    let x: Vec<f32> = (0..n).map(|i| (i % 101) as f32 * 0.5).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
    let want: Vec<f32> = x.iter().zip(&y0).map(|(x, y)| 0.75 * x + y).collect();
    let (m, id) = saxpy();
    for backend in backends() {
        let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
        assert!(kernel.is_collapsible());
        if backend.name() != "cranelift" {
            assert_eq!(kernel.c_tier(), TierState::None, "{}", backend.name());
            assert_eq!(run(&kernel, &x, &y0), want, "{}", backend.name());
            continue;
        }
        assert_eq!(run(&kernel, &x, &y0), want, "before the C tier");
        let state = kernel.wait_for_c_tier(Duration::from_secs(120));
        assert_eq!(
            state,
            TierState::Ready,
            "the tests need a C compiler (`cc`)"
        );
        assert_eq!(kernel.c_tier(), TierState::Ready);
        let source = kernel.collapsed_c_source().expect("the C source is kept");
        assert!(source.contains("nacre_entry"), "{source}");
        assert_eq!(run(&kernel, &x, &y0), want, "with the C tier");

        // The same kernel compiled again reuses the C code at once.
        let again = prepare(&m, id, &*backend, CpuMode::Grid);
        assert_eq!(again.c_tier(), TierState::Ready);
        assert!(nacre_cpu::wait_for_c_tier(Duration::from_secs(120)));
    }
    // Serial mode runs the step function itself: no collapse, no tier.
    let backend = &*backends().remove(1);
    let kernel = prepare(&m, id, backend, CpuMode::Serial);
    assert!(!kernel.is_collapsible());
    assert_eq!(kernel.c_tier(), TierState::None);
}

#[test]
fn the_c_tier_uses_the_given_compiler() {
    let n = 10_001usize;
    let x: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 5) as f32).collect();
    let want: Vec<f32> = x.iter().zip(&y0).map(|(x, y)| 0.75 * x + y).collect();
    let (m, id) = saxpy();
    let cranelift = backends()
        .into_iter()
        .find(|b| b.name() == "cranelift")
        .expect("a Cranelift backend");
    let options = nacre_c::COptions {
        compiler: "nacre-no-such-compiler".into(),
        ..nacre_c::COptions::default()
    };
    let kernels = nacre_cpu::prepare_cpu(
        &m,
        &nacre_backend::Linkage::default(),
        &*cranelift,
        CpuMode::Grid,
        &options,
    )
    .unwrap();
    let kernel = kernels.get(id).expect("the kernel").clone();
    match kernel.wait_for_c_tier(Duration::from_secs(120)) {
        TierState::Failed(why) => assert!(why.contains("nacre-no-such-compiler"), "{why}"),
        other => panic!("expected the C tier to fail without its compiler, got {other:?}"),
    }
    // The kernel keeps running Cranelift's code.
    assert_eq!(run(&kernel, &x, &y0), want);
}
