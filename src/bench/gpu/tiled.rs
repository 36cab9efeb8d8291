//! The CPU suite's tiled and one-element-per-thread kernels (the execution-speed issue): a 3 × 3
//! box blur through an 18 × 18 shared tile over a 2000 × 1500 image (`blur3_2000x1500`, the
//! corpus's `run_blur3`), the 16 × 16-tiled product of a 1024 × 1024 matrix with itself
//! (`matmul_1024`, `run_matmul_tiled`), and saxpy with one element per thread over 16M floats
//! (`saxpy1_16777216`, `run_saxpy`: 65,536 blocks of 256, `if i < n`), each beside its
//! hand-written rayon baseline (`rust_rayon_*`): the blur and the product one output row per
//! task (the product `i-k-j`, so that LLVM vectorises the inner loop over `j`), saxpy
//! element-wise. The blur and the product are checked exactly (the baselines compute in the
//! kernels' operation order), saxpy within 1e-6.
//!
//! They run in grid mode only (serial mode runs one thread of one block).

use super::language::Kernel;
use super::{check_close, random_in};
use nacre_corpus::kernels::run_saxpy;
use nacre_corpus::kernels::tiled::{blur3_reference, run_blur3, run_matmul_tiled};
use rayon::prelude::*;

/// Width and height of the blur's image.
pub const BLUR: (usize, usize) = (2000, 1500);
/// Side of the product's matrices.
pub const MATMUL: usize = 1024;
/// Elements of the one-element-per-thread saxpy.
pub const SAXPY1: usize = 1 << 24;
/// `alpha` of the saxpy.
const ALPHA: f32 = 1.5;

/// The kernels of this module, in the suite's order.
pub fn kernels() -> [Kernel; 3] {
    [
        Kernel {
            suffix: format!("blur3_{}x{}", BLUR.0, BLUR.1),
            needs_grid_mode: true,
            grid_stride: false,
            case: blur_case,
            check: |what, got, want| check_close(what, got, want, 0.0),
            rayon: rayon_blur,
            compile: |engine, _| {
                let f = engine.compile(run_blur3)?;
                let (w, h) = (BLUR.0 as u32, BLUR.1 as u32);
                Ok(Box::new(move |x, out| f.call(x, out, w, h)))
            },
        },
        Kernel {
            suffix: format!("matmul_{MATMUL}"),
            needs_grid_mode: true,
            grid_stride: false,
            case: matmul_case,
            check: |what, got, want| check_close(what, got, want, 0.0),
            rayon: rayon_matmul,
            compile: |engine, _| {
                let f = engine.compile(run_matmul_tiled)?;
                Ok(Box::new(move |x, out| f.call(x, x, out, MATMUL as u32)))
            },
        },
        Kernel {
            suffix: format!("saxpy1_{SAXPY1}"),
            needs_grid_mode: true,
            grid_stride: false,
            case: saxpy_case,
            check: |what, got, want| check_close(what, got, want, 1e-6),
            rayon: rayon_saxpy,
            compile: |engine, _| {
                let f = engine.compile(run_saxpy)?;
                Ok(Box::new(move |x, out| f.call(ALPHA, x, out, SAXPY1 as u32)))
            },
        },
    ]
}

fn blur_case() -> (Vec<f32>, Vec<f32>) {
    let x = random_in(BLUR.0 * BLUR.1, 71, -1.0, 1.0);
    let want = blur3_reference(&x, BLUR.0, BLUR.1);
    (x, want)
}

/// The blur by hand: one output row per task, edges clamped, the kernel's order of additions.
fn rayon_blur(x: &[f32], out: &mut [f32]) {
    let (w, h) = BLUR;
    out.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        let line = |y: usize| &x[y * w..(y + 1) * w];
        let lines = [line(y.saturating_sub(1)), line(y), line((y + 1).min(h - 1))];
        for (i, o) in row.iter_mut().enumerate() {
            let (l, r) = (i.saturating_sub(1), (i + 1).min(w - 1));
            let mut sum = 0.0f32;
            for line in lines {
                sum += line[l];
                sum += line[i];
                sum += line[r];
            }
            *o = sum * (1.0f32 / 9.0);
        }
    });
}

/// The product's input (`[-1, 1)`) and `x × x` in the kernel's order (each sum over `k`
/// ascending, from 0).
fn matmul_case() -> (Vec<f32>, Vec<f32>) {
    let x = random_in(MATMUL * MATMUL, 73, -1.0, 1.0);
    let mut want = vec![0.0f32; MATMUL * MATMUL];
    rayon_matmul(&x, &mut want);
    (x, want)
}

/// `out = x × x` by hand: one output row per task, `i-k-j` order (each output's sum still
/// runs over `k` ascending, so the result is the kernel's bit for bit).
fn rayon_matmul(x: &[f32], out: &mut [f32]) {
    let n = MATMUL;
    out.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
        row.fill(0.0);
        for k in 0..n {
            let a = x[i * n + k];
            let b = &x[k * n..(k + 1) * n];
            for (o, &b) in row.iter_mut().zip(b) {
                *o += a * b;
            }
        }
    });
}

fn saxpy_case() -> (Vec<f32>, Vec<f32>) {
    let x = random_in(SAXPY1, 79, -1.0, 1.0);
    // The output starts zeroed: `alpha * x + 0`.
    let want = x.iter().map(|&v| ALPHA * v + 0.0).collect();
    (x, want)
}

/// `out = alpha * x + out` by hand.
fn rayon_saxpy(x: &[f32], out: &mut [f32]) {
    out.par_iter_mut()
        .zip(x.par_iter())
        .for_each(|(o, &v)| *o += ALPHA * v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_baselines_compute_what_the_kernels_mean() {
        // Each output of the product is its sum over k ascending (the kernel's order).
        let x = random_in(MATMUL * MATMUL, 5, -1.0, 1.0);
        let mut out = vec![0.0f32; MATMUL * MATMUL];
        rayon_matmul(&x, &mut out);
        let n = MATMUL;
        for i in [0, 511, n - 1] {
            for j in [0, 3, n - 1] {
                let mut acc = 0.0f32;
                for k in 0..n {
                    acc += x[i * n + k] * x[k * n + j];
                }
                assert_eq!(out[i * n + j], acc, "({i}, {j})");
            }
        }
        let (x, want) = blur_case();
        let mut got = vec![0.0f32; x.len()];
        rayon_blur(&x, &mut got);
        assert_eq!(got, want);
    }
}
