//! The kernel corpus on the CPU: every kernel on every CPU backend in grid mode (full GPU
//! semantics), and the grid-stride kernels also in serial mode (grid = block = 1).

use nacre::gpu::{CpuMode, CpuOptions, RuntimeOptions};
use nacre::{BackendKind, Engine, Options};
use nacre_corpus::kernels::{all, check_all};

fn run(kind: BackendKind, mode: CpuMode) {
    let options = Options {
        runtime: RuntimeOptions::Cpu(CpuOptions { mode }),
        ..Options::with_backend(kind)
    };
    let engine = Engine::new(options).expect("engine");
    let (ran, failures) = check_all(&engine, |case| {
        if mode == CpuMode::Serial && !case.grid_stride {
            vec![]
        } else if case.name == "large_batch" {
            if kind == BackendKind::Interp {
                vec![]
            } else {
                vec![1]
            }
        } else {
            vec![1, 300, 5000]
        }
    });
    assert!(
        failures.is_empty(),
        "{} failures on {} / {mode:?}:\n{}",
        failures.len(),
        kind.name(),
        failures.join("\n")
    );
    assert!(ran >= 9, "only {ran} kernel runs");
}

#[test]
fn kernels_on_cranelift_grid() {
    run(BackendKind::Cranelift, CpuMode::Grid);
}

#[test]
fn kernels_on_cranelift_serial() {
    run(BackendKind::Cranelift, CpuMode::Serial);
}

#[test]
fn kernels_on_interpreter_grid() {
    run(BackendKind::Interp, CpuMode::Grid);
}

#[test]
fn kernels_on_interpreter_serial() {
    run(BackendKind::Interp, CpuMode::Serial);
}

#[test]
fn kernels_on_c_grid() {
    run(BackendKind::C, CpuMode::Grid);
}

#[test]
fn kernels_on_c_serial() {
    run(BackendKind::C, CpuMode::Serial);
}

#[test]
fn kernel_corpus_has_the_seed_kernels() {
    let names: Vec<_> = all().iter().map(|c| c.name).collect();
    for k in [
        "vec_add",
        "saxpy",
        "block_sum",
        "logistic",
        "transpose",
        "large_batch",
        "prefix_sum",
    ] {
        assert!(names.contains(&k), "{k} missing");
    }
}

#[test]
fn every_atomic_type_and_ordering_runs_on_every_cpu_backend() {
    for kind in BackendKind::ALL {
        let engine = Engine::new(Options {
            backend: kind,
            ..Options::default()
        })
        .unwrap();
        nacre_corpus::kernels::check_wide_atomics(&engine)
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    }
}

#[test]
fn f64_warp_operations_run_on_every_cpu_backend() {
    for kind in BackendKind::ALL {
        let engine = Engine::new(Options::with_backend(kind)).unwrap();
        nacre_corpus::kernels::warp::check_warp_f64(&engine)
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    }
}
