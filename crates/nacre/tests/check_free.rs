//! Kernels with a check-free body (`nacre_kernel::check_free`) run it only when the launch
//! proves every access in bounds, and otherwise behave exactly as checked kernels: the same
//! results, the same traps, on every CPU backend in grid mode.
//!
//! The kernel reads `input[min(y, h - 1) * w + min(x, w - 1)]` (a clamped 2D read) and, when
//! `x < w && y < h`, writes `out[y * w + x]`: both accesses are proven in bounds when `input`
//! and `out` hold `w * h` elements, and not otherwise.

use nacre::gpu::RuntimeOptions;
use nacre::gpu::{
    block_dim, block_idx, launch, thread_idx, Array, Block, CpuMode, CpuOptions, Grid,
};
use nacre::prelude::*;
use nacre::{kernel, Error, Trap};

/// Copies the clamped element of `input` at each thread's `(x, y)` to `out`.
#[kernel]
fn clamped_copy(input: Ptr<u32>, out: Ptr<u32>, w: Val<u32>, h: Val<u32>) {
    let x = block_idx().x * block_dim().x + thread_idx().x;
    let y = block_idx().y * block_dim().y + thread_idx().y;
    let v = input[y.min(h - 1u32) * w + x.min(w - 1u32)];
    if x < w && y < h {
        out[y * w + x] = v;
    }
}

/// Launches [`clamped_copy`] on `gx × gy` blocks of 8 × 8 threads.
#[jit]
fn run_clamped_copy(
    input: Ptr<u32>,
    out: Ptr<u32>,
    w: Val<u32>,
    h: Val<u32>,
    gx: Val<u32>,
    gy: Val<u32>,
) {
    launch(
        clamped_copy,
        Grid::new3(gx, gy, 1u32),
        Block::new3(8u32, 8u32, 1u32),
        (input, out, w, h),
    );
}

fn engines() -> Vec<(&'static str, Engine)> {
    BackendKind::ALL
        .into_iter()
        .map(|backend| {
            let options = Options {
                backend,
                runtime: RuntimeOptions::Cpu(CpuOptions {
                    mode: CpuMode::Grid,
                }),
                ..Options::default()
            };
            (backend.name(), Engine::new(options).expect("a CPU engine"))
        })
        .collect()
}

/// What the kernel writes for a `w × h` image over `gx × gy` blocks, into `out_len` elements
/// (untouched ones stay `u32::MAX`).
fn expected(w: u32, h: u32, gx: u32, gy: u32, out_len: usize) -> Vec<u32> {
    let input = |i: u32| i * 3 + 1;
    let mut out = vec![u32::MAX; out_len];
    for y in 0..(gy * 8).min(h) {
        for x in 0..(gx * 8).min(w) {
            out[(y * w + x) as usize] = input(y * w + x);
        }
    }
    out
}

type Outcome = Result<Vec<u32>, Error>;

fn run(engine: &Engine, w: u32, h: u32, (gx, gy): (u32, u32), lens: (usize, usize)) -> Outcome {
    let f = engine.compile(run_clamped_copy).expect("compiles");
    let input: Vec<u32> = (0..lens.0 as u32).map(|i| i * 3 + 1).collect();
    let input = Array::copy_on(engine.device(), &input).expect("input");
    let mut out = Array::copy_on(engine.device(), &vec![u32::MAX; lens.1]).expect("output");
    f.call(&input, &mut out, w, h, gx, gy)?;
    Ok(out.as_slice().to_vec())
}

#[test]
fn arrays_that_hold_the_image_run_and_give_the_checked_result() {
    for (name, e) in engines() {
        // 20 × 13 over 3 × 2 blocks of 8 × 8: edges clamp, threads past them write nothing.
        let got = run(&e, 20, 13, (3, 2), (260, 260)).unwrap();
        assert_eq!(got, expected(20, 13, 3, 2, 260), "{name}");
    }
}

#[test]
fn an_output_one_short_still_traps() {
    for (name, e) in engines() {
        let r = run(&e, 20, 13, (3, 2), (260, 259));
        assert!(
            matches!(r, Err(Error::Trap(Trap::OutOfBounds { .. }))),
            "{name}: {r:?}"
        );
        let r = run(&e, 20, 13, (3, 2), (259, 260));
        assert!(
            matches!(r, Err(Error::Trap(Trap::OutOfBounds { .. }))),
            "{name}: {r:?}"
        );
    }
}

#[test]
fn a_launch_over_part_of_a_larger_image_runs_checked_without_a_trap() {
    // The image claims 40 × 40, but the one block covers only its first 8 rows, whose
    // accesses stay below 8 * 40 elements: the proof (40 * 40) fails, the checked body
    // runs, and nothing traps.
    for (name, e) in engines() {
        let got = run(&e, 40, 40, (1, 1), (320, 320)).unwrap();
        assert_eq!(got, expected(40, 40, 1, 1, 320), "{name}");
    }
}

#[test]
fn bounds_that_would_wrap_run_checked() {
    // w * h = 2^34 does not fit u32: the ranges cannot be proven, the checked body runs the
    // one block, whose accesses stay below 8 * 2^17 + 8.
    for (name, e) in engines() {
        let (w, h) = (1 << 17, 1 << 17);
        let len = 8 * (1 << 17);
        let got = run(&e, w, h, (1, 1), (len, len)).unwrap();
        assert_eq!(got, expected(w, h, 1, 1, len), "{name}");
    }
}

/// Whether some thread of the launch reads or writes outside the arrays.
fn goes_out_of_bounds(w: u32, h: u32, (gx, gy): (u32, u32), (inn, out): (usize, usize)) -> bool {
    (0..gy * 8).any(|y| {
        (0..gx * 8).any(|x| {
            let read = (y.min(h - 1) as u64) * w as u64 + x.min(w - 1) as u64;
            let wrote = x < w && y < h && (y * w + x) as usize >= out;
            read >= inn as u64 || wrote
        })
    })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// On random images, grids and array lengths, every backend traps exactly when some
    /// access would go out of bounds and otherwise writes what the kernel means.
    #[test]
    fn any_launch_traps_exactly_when_an_access_is_out_of_bounds(
        w in 1u32..40,
        h in 1u32..40,
        gx in 1u32..6,
        gy in 1u32..6,
        short_in in 0usize..3,
        short_out in 0usize..3,
        extra in 0usize..2,
    ) {
        let (inn, out) = (
            ((w * h) as usize + extra).saturating_sub(short_in),
            ((w * h) as usize + extra).saturating_sub(short_out),
        );
        let oob = goes_out_of_bounds(w, h, (gx, gy), (inn, out));
        for (name, e) in engines() {
            match run(&e, w, h, (gx, gy), (inn, out)) {
                Ok(got) => {
                    proptest::prop_assert!(!oob, "{name}: no trap");
                    proptest::prop_assert_eq!(got, expected(w, h, gx, gy, out), "{}", name);
                }
                Err(Error::Trap(Trap::OutOfBounds { .. })) => {
                    proptest::prop_assert!(oob, "{name}: a trap in bounds");
                }
                Err(other) => proptest::prop_assert!(false, "{name}: {other}"),
            }
        }
    }
}
