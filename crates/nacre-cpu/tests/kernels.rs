//! Kernels executed on the CPU through `prepare_cpu` and `cpu_launch`, on each of the three
//! backends, in both modes where meaningful, against plain Rust.

mod common;

use common::*;
use nacre_cpu::CpuMode;
use nacre_ir::Trap;
use nacre_runtime::Array;

#[test]
fn vec_add_with_bounds_check() {
    let n = 1000usize;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| (n - i) as f32).collect();
    let (m, id) = vec_add();
    for backend in backends() {
        let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
        let (xa, xb) = (Array::copy(&a).unwrap(), Array::copy(&b).unwrap());
        let mut c = Array::<f32>::alloc_unified(n).unwrap();
        c.as_mut_slice().fill(-1.0);
        let args = [
            ptr_arg(xa.as_ptr()),
            ptr_arg(xb.as_ptr()),
            ptr_arg(c.as_ptr()),
            n as u64,
        ];
        // 8 blocks of 128 threads: the last block is partly out of range.
        launch(&kernel, [8, 1, 1], [128, 1, 1], &args).unwrap();
        let expect: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
        assert_eq!(c.as_slice(), &expect[..], "{}", backend.name());
    }
}

#[test]
fn saxpy_grid_stride_in_both_modes() {
    let n = 10_000usize;
    let alpha = 1.5f32;
    let x: Vec<f32> = (0..n).map(|i| (i % 97) as f32).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 13) as f32 - 6.0).collect();
    let expect: Vec<f32> = x.iter().zip(&y0).map(|(x, y)| alpha * x + y).collect();
    let (m, id) = saxpy();
    for backend in backends() {
        for (mode, grid, block) in [
            (CpuMode::Grid, 7, 64),
            (CpuMode::Grid, 1, 1),
            (CpuMode::Serial, 7, 64),
        ] {
            let kernel = prepare(&m, id, &*backend, mode);
            let xa = Array::copy(&x).unwrap();
            let ya = Array::copy(&y0).unwrap();
            let args = [
                f32_bits(alpha),
                ptr_arg(xa.as_ptr()),
                ptr_arg(ya.as_ptr()),
                n as u64,
            ];
            launch(&kernel, [grid, 1, 1], [block, 1, 1], &args).unwrap();
            assert_eq!(
                ya.as_slice(),
                &expect[..],
                "{} {mode:?} {grid}x{block}",
                backend.name()
            );
        }
    }
}

/// Per-block sums in the kernel's tree order (exact: small integers in f32).
fn block_sums(input: &[f32], block: usize) -> Vec<f32> {
    input
        .chunks(block)
        .map(|c| {
            let mut s = c.to_vec();
            s.resize(block, 0.0);
            let mut w = block / 2;
            while w > 0 {
                for t in 0..w {
                    s[t] += s[t + w];
                }
                w /= 2;
            }
            s[0]
        })
        .collect()
}

#[test]
fn block_sum_with_shared_memory_and_barriers() {
    let n = 10_000usize;
    let input: Vec<f32> = (0..n).map(|i| (i % 17) as f32).collect();
    let (m, id) = block_sum();
    for backend in backends() {
        let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
        for block in [256usize, 64, 1] {
            let blocks = n.div_ceil(block);
            let inp = Array::copy(&input).unwrap();
            let out = Array::<f32>::alloc_unified(blocks).unwrap();
            let args = [ptr_arg(inp.as_ptr()), ptr_arg(out.as_ptr()), n as u64];
            launch(&kernel, [blocks as u32, 1, 1], [block as u32, 1, 1], &args).unwrap();
            assert_eq!(
                out.as_slice(),
                &block_sums(&input, block)[..],
                "{} block {block}",
                backend.name()
            );
            let total: f32 = out.as_slice().iter().sum();
            assert_eq!(total, input.iter().sum::<f32>());
        }
        // Serial mode: one block of one thread, so the "sum" is the first element.
        let kernel = prepare(&m, id, &*backend, CpuMode::Serial);
        let inp = Array::copy(&input).unwrap();
        let out = Array::<f32>::alloc_unified(4).unwrap();
        let args = [ptr_arg(inp.as_ptr()), ptr_arg(out.as_ptr()), n as u64];
        launch(&kernel, [40, 1, 1], [256, 1, 1], &args).unwrap();
        assert_eq!(
            out.as_slice(),
            &[input[0], 0.0, 0.0, 0.0],
            "{}",
            backend.name()
        );
    }
}

#[test]
fn grid_stride_sum_with_barriers_in_both_modes() {
    let n = 50_000usize;
    let input: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let total: f32 = input.iter().sum();
    let (m, id) = strided_sum();
    for backend in backends() {
        for (mode, grid, block) in [
            (CpuMode::Grid, 12, 128),
            (CpuMode::Grid, 3, 1),
            (CpuMode::Serial, 12, 128),
        ] {
            let kernel = prepare(&m, id, &*backend, mode);
            let inp = Array::copy(&input).unwrap();
            let out = Array::<f32>::alloc_unified(grid as usize).unwrap();
            let args = [ptr_arg(inp.as_ptr()), ptr_arg(out.as_ptr()), n as u64];
            launch(&kernel, [grid, 1, 1], [block, 1, 1], &args).unwrap();
            let sums = out.as_slice();
            let what = format!("{} {mode:?} {grid}x{block}", backend.name());
            if mode == CpuMode::Serial {
                assert_eq!(sums[0], total, "{what}");
                continue;
            }
            // Each thread's strided partial sum, then the tree of each block.
            let threads = (grid * block) as usize;
            let partial: Vec<f32> = (0..threads)
                .map(|t| input.iter().skip(t).step_by(threads).sum())
                .collect();
            assert_eq!(sums, &block_sums(&partial, block as usize)[..], "{what}");
            assert_eq!(sums.iter().sum::<f32>(), total, "{what}");
        }
    }
}

#[test]
fn barriers_wait_for_threads_still_at_yields() {
    let (blocks, block) = (3usize, 64usize);
    let expect: Vec<u32> = (0..blocks * block)
        .map(|i| ((i % block + 1) % block) as u32)
        .collect();
    let (m, id) = staggered();
    for backend in backends() {
        let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
        assert_eq!(kernel.info().yields, 1);
        let out = Array::<u32>::alloc_unified(blocks * block).unwrap();
        let args = [ptr_arg(out.as_ptr())];
        launch(&kernel, [blocks as u32, 1, 1], [block as u32, 1, 1], &args).unwrap();
        assert_eq!(out.as_slice(), &expect[..], "{}", backend.name());
    }
}

#[test]
fn three_dimensional_indices() {
    let (grid, block) = ([3u32, 2, 2], [4u32, 3, 2]);
    let (w, h, d) = (12usize, 6usize, 4usize);
    let mut expect = vec![0u32; w * h * d];
    for z in 0..d {
        for y in 0..h {
            for x in 0..w {
                expect[(z * h + y) * w + x] = (x + 1000 * y + 1_000_000 * z) as u32;
            }
        }
    }
    let (m, id) = index3d();
    for backend in backends() {
        let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
        let out = Array::<u32>::alloc_unified(w * h * d).unwrap();
        launch(&kernel, grid, block, &[ptr_arg(out.as_ptr())]).unwrap();
        assert_eq!(out.as_slice(), &expect[..], "{}", backend.name());
    }
}

#[test]
fn two_shared_arrays_of_different_types() {
    let blocks = 5usize;
    let n = blocks * 32;
    let input: Vec<f64> = (0..n).map(|i| i as f64 * 1.25).collect();
    let mut expect = vec![0.0f64; n];
    for b in 0..blocks {
        for t in 0..32 {
            let j = (t + 1) % 32;
            expect[b * 32 + t] = input[b * 32 + 31 - t] + (3 * j) as f64;
        }
    }
    let (m, id) = two_shared();
    for backend in backends() {
        let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
        let inp = Array::copy(&input).unwrap();
        let out = Array::<f64>::alloc_unified(n).unwrap();
        let args = [ptr_arg(inp.as_ptr()), ptr_arg(out.as_ptr())];
        launch(&kernel, [blocks as u32, 1, 1], [32, 1, 1], &args).unwrap();
        assert_eq!(out.as_slice(), &expect[..], "{}", backend.name());
    }
}

#[test]
fn values_of_every_kind_survive_a_barrier() {
    let (blocks, block) = (6usize, 50usize);
    let n = blocks * block;
    let mut expect_x = vec![0.0f64; n];
    let mut expect_f = vec![0u8; n];
    for b in 0..blocks {
        for t in 0..block {
            let i = b * block + t;
            let nb = b * block + (t + 1) % block;
            expect_x[i] = i as f64 * 0.5 + nb as f64;
            let small = (t as i8).wrapping_sub(100);
            expect_f[i] = if i % 3 == 0 { small as u8 } else { 255 };
        }
    }
    let (m, id) = live_values();
    for backend in backends() {
        let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
        let x = Array::<f64>::alloc_unified(n).unwrap();
        let flags = Array::<u8>::alloc_unified(n).unwrap();
        let args = [ptr_arg(x.as_ptr()), ptr_arg(flags.as_ptr())];
        launch(&kernel, [blocks as u32, 1, 1], [block as u32, 1, 1], &args).unwrap();
        assert_eq!(x.as_slice(), &expect_x[..], "{}", backend.name());
        assert_eq!(flags.as_slice(), &expect_f[..], "{}", backend.name());
    }
}

#[test]
fn kernels_call_host_functions() {
    let n = 256usize;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 5) as f32).collect();
    let expect: Vec<f32> = a
        .iter()
        .zip(&b)
        .map(|(x, y)| {
            let m = 2.0 * x + y;
            2.0 * m + 1.0
        })
        .collect();
    let (m, id) = with_helper();
    for backend in backends() {
        for mode in [CpuMode::Grid, CpuMode::Serial] {
            let kernel = prepare(&m, id, &*backend, mode);
            let (xa, xb) = (Array::copy(&a).unwrap(), Array::copy(&b).unwrap());
            let c = Array::<f32>::alloc_unified(n).unwrap();
            let args = [
                ptr_arg(xa.as_ptr()),
                ptr_arg(xb.as_ptr()),
                ptr_arg(c.as_ptr()),
            ];
            launch(&kernel, [4, 1, 1], [64, 1, 1], &args).unwrap();
            match mode {
                CpuMode::Grid => assert_eq!(c.as_slice(), &expect[..], "{}", backend.name()),
                CpuMode::Serial => {
                    assert_eq!(c.as_slice()[0], expect[0]);
                    assert!(c.as_slice()[1..].iter().all(|&v| v == 0.0));
                }
            }
        }
    }
}

#[test]
fn kernel_entry_that_is_a_loop_header() {
    let threads = 4usize;
    let mut expect = vec![0u32; threads * 8];
    for t in 0..threads {
        for k in 0..8 {
            expect[t * 8 + k] = (k + 1 + t) as u32;
        }
    }
    let (m, id) = entry_loop();
    for backend in backends() {
        let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
        let out = Array::<u32>::alloc_unified(threads * 8).unwrap();
        launch(
            &kernel,
            [1, 1, 1],
            [threads as u32, 1, 1],
            &[ptr_arg(out.as_ptr()), 8],
        )
        .unwrap();
        assert_eq!(out.as_slice(), &expect[..], "{}", backend.name());
    }
}

#[test]
fn divergent_barriers_do_not_deadlock() {
    let expect: Vec<u32> = (0..16u32)
        .map(|t| if t % 2 == 0 { (t + 2) % 16 } else { 7 })
        .collect();
    let (m, id) = divergent();
    for backend in backends() {
        let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
        let out = Array::<u32>::alloc_unified(16).unwrap();
        launch(&kernel, [1, 1, 1], [16, 1, 1], &[ptr_arg(out.as_ptr())]).unwrap();
        assert_eq!(out.as_slice(), &expect[..], "{}", backend.name());
    }
}

#[test]
fn a_trap_in_a_kernel_stops_the_launch() {
    let n = 4096usize;
    let mut input: Vec<i32> = (0..n as i32).map(|i| i % 50 + 1).collect();
    let (m, id) = divide();
    for backend in backends() {
        for mode in [CpuMode::Grid, CpuMode::Serial] {
            let kernel = prepare(&m, id, &*backend, mode);
            // Without a zero, every element is computed.
            input[3000] = 7;
            let inp = Array::copy(&input).unwrap();
            let out = Array::<i32>::alloc_unified(n).unwrap();
            let args = [ptr_arg(inp.as_ptr()), ptr_arg(out.as_ptr()), n as u64];
            launch(&kernel, [32, 1, 1], [128, 1, 1], &args).unwrap();
            if mode == CpuMode::Grid {
                let expect: Vec<i32> = input.iter().map(|x| 100 / x).collect();
                assert_eq!(out.as_slice(), &expect[..]);
            }
            // A zero anywhere the kernel reads traps.
            let at = if mode == CpuMode::Grid { 3000 } else { 0 };
            input[at] = 0;
            let inp = Array::copy(&input).unwrap();
            let args = [ptr_arg(inp.as_ptr()), ptr_arg(out.as_ptr()), n as u64];
            let err = launch(&kernel, [32, 1, 1], [128, 1, 1], &args).unwrap_err();
            assert_eq!(err, Trap::DivisionByZero, "{} {mode:?}", backend.name());
            input[at] = 1;
        }
    }
}

#[test]
fn many_blocks_spread_over_workers() {
    // More blocks than workers × chunks, with a 2D grid, so chunk boundaries fall mid-row.
    let (m, id) = index3d();
    let backend = nacre_cranelift::CraneliftBackend::new(Default::default()).unwrap();
    let kernel = prepare(&m, id, &backend, CpuMode::Grid);
    let (grid, block) = ([37u32, 29, 3], [8u32, 2, 1]);
    let (w, h, d) = (37 * 8usize, 29 * 2usize, 3usize);
    let out = Array::<u32>::alloc_unified(w * h * d).unwrap();
    launch(&kernel, grid, block, &[ptr_arg(out.as_ptr())]).unwrap();
    for z in 0..d {
        for y in 0..h {
            for x in 0..w {
                assert_eq!(
                    out.as_slice()[(z * h + y) * w + x],
                    (x + 1000 * y + 1_000_000 * z) as u32
                );
            }
        }
    }
}

#[test]
fn grid_stride_loops_collapse_only_when_equivalent() {
    // More elements than one collapsed chunk, so several chunks (and workers) share the loop.
    let n = 50_000usize;
    let alpha = 1.5f32;
    let x: Vec<f32> = (0..n).map(|i| (i % 97) as f32).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 13) as f32 - 6.0).collect();
    let once: Vec<f32> = x.iter().zip(&y0).map(|(x, y)| alpha * x + y).collect();
    let twice: Vec<f32> = x
        .iter()
        .zip(&y0)
        .map(|(x, y)| alpha * x + (alpha * x + y))
        .collect();
    let (m, id) = saxpy();
    for backend in backends() {
        let serial = prepare(&m, id, &*backend, CpuMode::Serial);
        assert!(!serial.is_collapsible());
        let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
        assert!(kernel.is_collapsible(), "{}", backend.name());
        // One-dimensional launches collapse; a block with two rows runs every index twice
        // (both rows compute the same global x index), so it must not collapse.
        for (grid, block, expect) in [
            ([7, 1, 1], [64, 1, 1], &once),
            ([1, 1, 1], [1, 1, 1], &once),
            ([100_000, 1, 1], [256, 1, 1], &once),
            ([3, 1, 1], [64, 2, 1], &twice),
        ] {
            let xa = Array::copy(&x).unwrap();
            let ya = Array::copy(&y0).unwrap();
            let args = [
                f32_bits(alpha),
                ptr_arg(xa.as_ptr()),
                ptr_arg(ya.as_ptr()),
                n as u64,
            ];
            launch(&kernel, grid, block, &args).unwrap();
            assert_eq!(
                ya.as_slice(),
                &expect[..],
                "{} {grid:?}x{block:?}",
                backend.name()
            );
        }
    }
    // Kernels with barriers, or whose body depends on the thread, keep the grid.
    for (m, id) in [strided_sum(), block_sum(), vec_add(), index3d()] {
        let kernel = prepare(&m, id, &*backends()[1], CpuMode::Grid);
        assert!(!kernel.is_collapsible(), "{}", kernel.name());
    }
    let (m, id) = stride_thread_ids();
    for backend in backends() {
        let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
        assert!(!kernel.is_collapsible(), "{}", backend.name());
        let n = 100usize;
        let out = Array::<u32>::alloc_unified(n).unwrap();
        launch(
            &kernel,
            [2, 1, 1],
            [8, 1, 1],
            &[ptr_arg(out.as_ptr()), n as u64],
        )
        .unwrap();
        let expect: Vec<u32> = (0..n as u32).map(|i| i % 8).collect();
        assert_eq!(out.as_slice(), &expect[..], "{}", backend.name());
    }
}
