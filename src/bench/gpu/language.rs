//! The kernel-language benchmarks (math functions in kernels): the row softmax of a
//! 4096 × 4096 matrix (`softmax_4096x4096`, the corpus's `run_softmax_rows`: one block of 256
//! per row, maximum and sum by shared-memory trees, `exp` from the math library) and GELU in
//! its tanh form over 16M floats (`gelu_16777216`, the corpus's `run_gelu`, a grid-stride
//! loop calling `tanh`), and a 5-point stencil over a 4096 × 4096 image through a 2D shared
//! tile with halo (`stencil2d_4096`, the corpus's `run_stencil2d`: 16 × 16 blocks, an 18 × 18
//! tile), and saxpy over 16M `f16` in `f16` storage (`saxpy_f16_16777216`, the corpus's
//! `run_saxpy_f16`: a grid-stride loop that widens to `f32`, computes and rounds once).
//!
//! Both suites use what is here: `--backend cpu` times each beside its hand-written rayon
//! baseline (`rust_rayon_softmax_4096x4096`: one row per task, `f32::exp`;
//! `rust_rayon_gelu_16777216`: `f32::tanh` per element), `--backend cuda` on the GPU and the
//! CPU beside `torch.softmax(x, dim=1)` and `torch.nn.functional.gelu(x, approximate="tanh")`
//! (`peer_torch_*`, from the peer script) and, for the stencil, the same algorithm written by
//! hand in CUDA C under CuPy (`peer_cudac_stencil2d_4096`; its rayon baseline computes each
//! row of outputs in a task from the clamped neighbours, no tile). Every first result is checked before timing:
//! softmax within 1e-5 of a float64 reference, relative to the row's largest probability;
//! GELU within 1e-5 × (1 + |y|) of the formula with the reference `tanh`; the `f16` saxpy bit
//! for bit against the same loop with the `half` crate's conversions
//! (`rust_rayon_saxpy_f16_16777216` is that loop under rayon; the peer is `y.add_(x, alpha=a)` on PyTorch's half tensors).

use super::{check_close, random_in};
use anyhow::{bail, Result};
use nacre::gpu::Array;
use nacre::{f16, Engine};
use nacre_corpus::kernels::{
    check_softmax, gelu_reference, run_gelu, run_softmax_rows, run_stencil2d, saxpy_f16_reference,
    softmax_reference, stencil_reference,
};
use rayon::prelude::*;

/// One compiled benchmark call: the kernel's host function on an input and an output array.
pub type Call = Box<dyn FnMut(&Array<f32>, &mut Array<f32>) -> Result<(), nacre::Error>>;

/// A benchmark of this module, as both suites run it: the suffix of its names, whether it
/// needs grid mode on the CPU (a block-wide reduction or tile), its input and reference, its
/// check, its rayon baseline, and how to compile its call (given the blocks of a grid-stride
/// launch, when `grid_stride`).
pub struct Kernel {
    /// `softmax_4096x4096`, `gelu_16777216`, `stencil2d_4096`.
    pub suffix: String,
    /// The kernel shares memory across its block, so it cannot run in serial mode.
    pub needs_grid_mode: bool,
    /// The kernel is a grid-stride loop: its launch takes the suite's grid.
    pub grid_stride: bool,
    /// The input and the reference output.
    pub case: fn() -> (Vec<f32>, Vec<f32>),
    /// Checks an output (named in the error) against the reference.
    pub check: fn(&str, &[f32], &[f32]) -> Result<()>,
    /// The hand-written rayon baseline.
    pub rayon: fn(&[f32], &mut [f32]),
    /// Compiles the call on an engine, for a grid-stride launch on the given blocks.
    pub compile: fn(&Engine, u32) -> Result<Call, nacre::Error>,
}

/// The benchmarks of this module, in the suites' order.
pub fn kernels() -> [Kernel; 3] {
    [
        Kernel {
            suffix: softmax_name(),
            needs_grid_mode: true,
            grid_stride: false,
            case: softmax_case,
            check: check_softmax_result,
            rayon: rayon_softmax,
            compile: |engine, _| {
                let f = engine.compile(run_softmax_rows)?;
                let (rows, cols) = (SOFTMAX_ROWS as u32, SOFTMAX_COLS as u32);
                Ok(Box::new(move |x, out| f.call(x, out, rows, cols)))
            },
        },
        Kernel {
            suffix: gelu_name(),
            needs_grid_mode: false,
            grid_stride: true,
            case: gelu_case,
            check: check_gelu_result,
            rayon: rayon_gelu,
            compile: |engine, blocks| {
                let f = engine.compile(run_gelu)?;
                Ok(Box::new(move |x, out| {
                    f.call(x, out, GELU_SIZE as u32, blocks)
                }))
            },
        },
        Kernel {
            suffix: stencil_name(),
            needs_grid_mode: true,
            grid_stride: false,
            case: stencil_case,
            check: |what, got, want| check_close(what, got, want, 0.0),
            rayon: rayon_stencil,
            compile: |engine, _| {
                let f = engine.compile(run_stencil2d)?;
                let side = STENCIL_SIZE as u32;
                Ok(Box::new(move |x, out| f.call(x, out, side, side)))
            },
        },
    ]
}

/// Rows and columns of the softmax benchmark.
pub const SOFTMAX_ROWS: usize = 4096;
/// Columns of the softmax benchmark.
pub const SOFTMAX_COLS: usize = 4096;
/// Elements of the GELU benchmark.
pub const GELU_SIZE: usize = 1 << 24;
/// GELU's check tolerance, relative to `1 + |y|`.
pub const GELU_TOLERANCE: f32 = 1e-5;

/// Side of the stencil benchmark's square image.
pub const STENCIL_SIZE: usize = 4096;

/// The suffix of the stencil benchmark's names.
pub fn stencil_name() -> String {
    format!("stencil2d_{STENCIL_SIZE}")
}

/// The stencil's input (`[-1, 1)`) and its reference (the kernel's operation order, so the
/// check is exact).
pub fn stencil_case() -> (Vec<f32>, Vec<f32>) {
    let x = random_in(STENCIL_SIZE * STENCIL_SIZE, 43, -1.0, 1.0);
    let want = stencil_reference(&x, STENCIL_SIZE, STENCIL_SIZE);
    (x, want)
}

/// The 5-point stencil by hand with rayon: one row of outputs per task, edges clamped.
pub fn rayon_stencil(x: &[f32], out: &mut [f32]) {
    let n = STENCIL_SIZE;
    out.par_chunks_mut(n).enumerate().for_each(|(y, row)| {
        let line = |y: usize| &x[y * n..(y + 1) * n];
        let (up, mid, down) = (line(y.saturating_sub(1)), line(y), line((y + 1).min(n - 1)));
        for (i, o) in row.iter_mut().enumerate() {
            let (l, r) = (mid[i.saturating_sub(1)], mid[(i + 1).min(n - 1)]);
            *o = mid[i] * 0.5 + (up[i] + down[i] + l + r) * 0.125;
        }
    });
}

/// The suffix of the softmax benchmark's names.
pub fn softmax_name() -> String {
    format!("softmax_{SOFTMAX_ROWS}x{SOFTMAX_COLS}")
}

/// The suffix of the GELU benchmark's names.
pub fn gelu_name() -> String {
    format!("gelu_{GELU_SIZE}")
}

/// The softmax input (`3 × [-1, 1)`, so that rows have a clear maximum) and its reference.
pub fn softmax_case() -> (Vec<f32>, Vec<f32>) {
    let x = random_in(SOFTMAX_ROWS * SOFTMAX_COLS, 31, -3.0, 3.0);
    let want = softmax_reference(&x, SOFTMAX_COLS);
    (x, want)
}

/// Checks a softmax result against the reference.
pub fn check_softmax_result(what: &str, got: &[f32], want: &[f32]) -> Result<()> {
    check_softmax(got, want, SOFTMAX_COLS).map_err(|e| anyhow::anyhow!("{what}: {e}"))
}

/// The GELU input (`6 × [-1, 1)`, the range where `tanh` is not yet saturated) and its
/// reference.
pub fn gelu_case() -> (Vec<f32>, Vec<f32>) {
    let x = random_in(GELU_SIZE, 37, -6.0, 6.0);
    let want = x.iter().map(|&v| gelu_reference(v)).collect();
    (x, want)
}

/// Checks a GELU result against the reference.
pub fn check_gelu_result(what: &str, got: &[f32], want: &[f32]) -> Result<()> {
    if got.len() != want.len() {
        bail!("{what}: {} results, expected {}", got.len(), want.len());
    }
    let tol = |w: f32| GELU_TOLERANCE * (1.0 + w.abs());
    match got
        .iter()
        .zip(want)
        .position(|(g, w)| (g - w).abs() > tol(*w) || g.is_nan())
    {
        Some(i) => bail!("{what}: [{i}] is {:e}, expected {:e}", got[i], want[i]),
        None => Ok(()),
    }
}

/// The row softmax by hand with rayon: one row per task, `f32::exp`.
pub fn rayon_softmax(x: &[f32], out: &mut [f32]) {
    out.par_chunks_mut(SOFTMAX_COLS)
        .zip(x.par_chunks(SOFTMAX_COLS))
        .for_each(|(o, row)| {
            let m = row.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
            let mut sum = 0.0f32;
            for (o, &v) in o.iter_mut().zip(row) {
                *o = (v - m).exp();
                sum += *o;
            }
            let inv = sum.recip();
            o.iter_mut().for_each(|o| *o *= inv);
        });
}

/// GELU's tanh form by hand with rayon.
pub fn rayon_gelu(x: &[f32], out: &mut [f32]) {
    use nacre_corpus::kernels::{GELU_CUBIC, GELU_SCALE};
    out.par_iter_mut().zip(x.par_iter()).for_each(|(o, &v)| {
        let inner = (v + v * v * v * GELU_CUBIC) * GELU_SCALE;
        *o = v * 0.5 * (inner.tanh() + 1.0);
    });
}

/// Elements of the half-precision saxpy benchmark.
pub const SAXPY_F16_SIZE: usize = 1 << 24;

/// `alpha` of the half-precision saxpy.
pub fn saxpy_f16_alpha() -> f32 {
    -1.25
}

/// The suffix of the half-precision saxpy benchmark's names.
pub fn saxpy_f16_name() -> String {
    format!("saxpy_f16_{SAXPY_F16_SIZE}")
}

/// The half-precision saxpy's `x` and `y` (`[-8, 8)`, rounded to `f16`) and the `y` one call
/// makes of them.
pub fn saxpy_f16_case() -> (Vec<f16>, Vec<f16>, Vec<f16>) {
    let half = |seed| -> Vec<f16> {
        let v = random_in(SAXPY_F16_SIZE, seed, -8.0, 8.0);
        v.into_iter().map(f16::from_f32).collect()
    };
    let (x, y) = (half(47), half(53));
    let want = saxpy_f16_reference(saxpy_f16_alpha(), &x, &y);
    (x, y, want)
}

/// The half-precision saxpy by hand with rayon: the `half` crate's conversions around `f32`
/// arithmetic per element.
pub fn rayon_saxpy_f16(alpha: f32, x: &[f16], y: &mut [f16]) {
    y.par_iter_mut()
        .zip(x.par_iter())
        .for_each(|(y, &x)| *y = f16::from_f32(alpha * x.to_f32() + y.to_f32()));
}

/// Checks `f16` results bit for bit (NaNs equal).
pub fn check_f16(what: &str, got: &[f16], want: &[f16]) -> Result<()> {
    if got.len() != want.len() {
        bail!("{what}: {} results, expected {}", got.len(), want.len());
    }
    let same = |g: &f16, w: &f16| g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
    match got.iter().zip(want).position(|(g, w)| !same(g, w)) {
        Some(i) => bail!("{what}: [{i}] is {}, expected {}", got[i], want[i]),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rayon_baselines_pass_the_checks() {
        let x = random_in(3 * SOFTMAX_COLS, 5, -3.0, 3.0);
        let mut out = vec![0.0; x.len()];
        rayon_softmax(&x, &mut out);
        check_softmax_result("softmax", &out, &softmax_reference(&x, SOFTMAX_COLS)).unwrap();
        let x = random_in(5000, 7, -6.0, 6.0);
        let want: Vec<f32> = x.iter().map(|&v| gelu_reference(v)).collect();
        let mut out = vec![0.0; x.len()];
        rayon_gelu(&x, &mut out);
        check_gelu_result("gelu", &out, &want).unwrap();
        out[17] += 0.01;
        assert!(check_gelu_result("gelu", &out, &want).is_err());
        let x = random_in(STENCIL_SIZE * STENCIL_SIZE, 3, -1.0, 1.0);
        let mut out = vec![0.0; x.len()];
        rayon_stencil(&x, &mut out);
        assert!(out == stencil_reference(&x, STENCIL_SIZE, STENCIL_SIZE));
        let (x, mut y, want) = saxpy_f16_case();
        rayon_saxpy_f16(saxpy_f16_alpha(), &x, &mut y);
        check_f16("saxpy f16", &y, &want).unwrap();
        y[3] = -y[3] + f16::ONE;
        assert!(check_f16("saxpy f16", &y, &want).is_err());
    }
}
