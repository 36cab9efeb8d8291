//! Launch checks: unknown and freed buffers, invalid shapes. One test in its own binary: the
//! freed-buffer check must not race with allocations of other tests, which could reuse the
//! freed address.

mod common;

use common::*;
use nacre_cpu::CpuMode;
use nacre_ir::Trap;
use nacre_runtime::Array;

#[test]
fn launch_checks() {
    launches_reject_unknown_and_freed_buffers();
    invalid_launch_shapes();
}

fn launches_reject_unknown_and_freed_buffers() {
    let (m, id) = vec_add();
    for backend in backends() {
        for mode in [CpuMode::Grid, CpuMode::Serial] {
            let kernel = prepare(&m, id, &*backend, mode);
            let a = Array::<f32>::alloc_unified(16).unwrap();
            let b = Array::<f32>::alloc_unified(16).unwrap();
            let c = Array::<f32>::alloc_unified(16).unwrap();
            let freed = Array::<f32>::alloc_unified(16).unwrap();
            let freed_ptr = freed.as_ptr();
            freed.free().unwrap();
            let mut stack = [0f32; 16];
            let good = [
                ptr_arg(a.as_ptr()),
                ptr_arg(b.as_ptr()),
                ptr_arg(c.as_ptr()),
                16,
            ];
            launch(&kernel, [1, 1, 1], [16, 1, 1], &good).unwrap();
            for bad in [ptr_arg(freed_ptr), ptr_arg(stack.as_mut_ptr()), 0] {
                let mut args = good;
                args[1] = bad;
                assert_eq!(
                    launch(&kernel, [1, 1, 1], [16, 1, 1], &args),
                    Err(Trap::UnknownBuffer),
                    "{} {mode:?}",
                    backend.name()
                );
            }
            // A pointer inside a live array (pointer arithmetic) is accepted.
            let mut args = good;
            // SAFETY: in bounds of `b`.
            args[1] = ptr_arg(unsafe { b.as_ptr().add(8) });
            args[3] = 8;
            launch(&kernel, [1, 1, 1], [8, 1, 1], &args).unwrap();
        }
    }
}

fn invalid_launch_shapes() {
    let (m, id) = vec_add();
    let backend = nacre_interp::Interpreter::new();
    for mode in [CpuMode::Grid, CpuMode::Serial] {
        let kernel = prepare(&m, id, &backend, mode);
        let a = Array::<f32>::alloc_unified(4).unwrap();
        let p = ptr_arg(a.as_ptr());
        let args = [p, p, p, 4];
        for (grid, block) in [
            ([0, 1, 1], [4, 1, 1]),
            ([1, 0, 1], [4, 1, 1]),
            ([1, 1, 1], [0, 1, 1]),
            ([1, 1, 1], [1025, 1, 1]),
            ([1, 1, 1], [32, 32, 2]),
            ([1, 1, 1], [1, 1, 65]),
            // A grid beyond CUDA's limits would run for ever on the CPU.
            ([u32::MAX, u32::MAX, 1], [4, 1, 1]),
            ([1, 65536, 1], [4, 1, 1]),
            ([1, 1, 65536], [4, 1, 1]),
        ] {
            assert_eq!(
                launch(&kernel, grid, block, &args),
                Err(Trap::InvalidLaunch),
                "{grid:?} {block:?}"
            );
        }
        launch(&kernel, [1, 1, 1], [32, 32, 1], &args).unwrap();
        // The typed entry point checks the argument count too.
        // SAFETY: the launch is rejected before running.
        assert_eq!(
            unsafe { kernel.launch([1, 1, 1], [4, 1, 1], &args[..3]) },
            Err(Trap::InvalidLaunch)
        );
    }
}
