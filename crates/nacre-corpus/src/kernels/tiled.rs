//! Tiled kernels of the corpus: a 3 × 3 box blur through a 2D shared tile with halo, and a
//! matrix product through 16 × 16 shared tiles, with their references (the kernels'
//! operation order, so the checks are exact).

use super::{compare, err, random_f32};
use nacre::gpu::{
    block_idx, launch, shared_array_2d, sync_threads, thread_idx, Array, Block, Grid,
};
use nacre::prelude::*;
use nacre::{kernel, Engine};

/// Side of the blocks and output tiles of [`blur3`] and [`matmul_tiled`].
pub const TILE: u32 = 16;

/// A 3 × 3 box blur of a row-major `w × h` image, edges clamped: each 16 × 16 block loads the
/// 18 × 18 tile of its outputs and their halo (324 loads by 256 threads), waits, and sums each
/// output's neighbourhood row by row, left to right, times 1/9.
#[kernel]
pub fn blur3(input: Ptr<f32>, out: Ptr<f32>, w: Val<u32>, h: Val<u32>) {
    let tile = shared_array_2d::<f32, 18, 18>();
    let (tx, ty) = (thread_idx().x, thread_idx().y);
    let (bx, by) = (block_idx().x * TILE, block_idx().y * TILE);
    let mut p = ty * TILE + tx;
    while p < 324u32 {
        let (ly, lx) = (p / 18u32, p % 18u32);
        let gx = ((bx + lx).max(1u32) - 1u32).min(w - 1u32);
        let gy = ((by + ly).max(1u32) - 1u32).min(h - 1u32);
        tile[(ly, lx)] = input[gy * w + gx];
        p += 256u32;
    }
    sync_threads();
    let (x, y) = (bx + tx, by + ty);
    if x < w && y < h {
        let mut sum = Val::new(0.0f32);
        for dy in 0u32..3 {
            for dx in 0u32..3 {
                sum += tile[(ty + dy, tx + dx)];
            }
        }
        out[y * w + x] = sum * (1.0f32 / 9.0);
    }
}

/// Launches [`blur3`] with one 16 × 16 block per output tile (nothing for an empty image).
#[jit]
pub fn run_blur3(input: Ptr<f32>, out: Ptr<f32>, w: Val<u32>, h: Val<u32>) {
    if w > 0u32 && h > 0u32 {
        launch(
            blur3,
            Grid::new3((w + 15u32) / 16u32, (h + 15u32) / 16u32, 1u32),
            Block::new3(TILE, TILE, 1u32),
            (input, out, w, h),
        );
    }
}

/// [`blur3`] in plain Rust, in its operation order.
pub fn blur3_reference(input: &[f32], w: usize, h: usize) -> Vec<f32> {
    let at = |x: isize, y: isize| {
        let x = x.clamp(0, w as isize - 1) as usize;
        let y = y.clamp(0, h as isize - 1) as usize;
        input[y * w + x]
    };
    let mut out = Vec::with_capacity(w * h);
    for y in 0..h as isize {
        for x in 0..w as isize {
            let mut sum = 0.0f32;
            for dy in -1..=1 {
                for dx in -1..=1 {
                    sum += at(x + dx, y + dy);
                }
            }
            out.push(sum * (1.0f32 / 9.0));
        }
    }
    out
}

pub(super) fn check_blur3(engine: &Engine, n: usize) -> Result<(), String> {
    // A width and height that are not multiples of the tile.
    let (w, h) = (29, n.div_ceil(29).clamp(1, 45));
    let xv = random_f32(w * h, 51);
    let input = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut out = Array::<f32>::alloc_on(engine.device(), w * h).map_err(err)?;
    let f = engine.compile(run_blur3).map_err(err)?;
    f.call(&input, &mut out, w as u32, h as u32).map_err(err)?;
    compare("blur3", out.as_slice(), &blur3_reference(&xv, w, h))
}

/// `c = a × b` for row-major `n × n` matrices through 16 × 16 shared tiles: each block
/// computes a 16 × 16 tile of `c`, loading one tile of `a` and one of `b` per step (zeros past
/// the edges), and each thread adds its products in the order of `k`.
#[kernel]
pub fn matmul_tiled(a: Ptr<f32>, b: Ptr<f32>, c: Ptr<f32>, n: Val<u32>) {
    let ta = shared_array_2d::<f32, 16, 16>();
    let tb = shared_array_2d::<f32, 16, 16>();
    let (tx, ty) = (thread_idx().x, thread_idx().y);
    let row = block_idx().y * TILE + ty;
    let col = block_idx().x * TILE + tx;
    let mut acc = Val::new(0.0f32);
    let mut k0 = Val::new(0u32);
    while k0 < n {
        let (ka, kb) = (k0 + tx, k0 + ty);
        let mut va = Val::new(0.0f32);
        if row < n && ka < n {
            va = a[row * n + ka];
        }
        let mut vb = Val::new(0.0f32);
        if kb < n && col < n {
            vb = b[kb * n + col];
        }
        ta[(ty, tx)] = va;
        tb[(ty, tx)] = vb;
        sync_threads();
        for k in 0u32..16 {
            acc += ta[(ty, k)] * tb[(k, tx)];
        }
        sync_threads();
        k0 += TILE;
    }
    if row < n && col < n {
        c[row * n + col] = acc;
    }
}

/// Launches [`matmul_tiled`] with one 16 × 16 block per tile of `c`.
#[jit]
pub fn run_matmul_tiled(a: Ptr<f32>, b: Ptr<f32>, c: Ptr<f32>, n: Val<u32>) {
    if n > 0u32 {
        let tiles = (n + 15u32) / 16u32;
        launch(
            matmul_tiled,
            Grid::new3(tiles, tiles, 1u32),
            Block::new3(TILE, TILE, 1u32),
            (a, b, c, n),
        );
    }
}

/// [`matmul_tiled`] in plain Rust, in its operation order (the padding adds `+ 0.0 * 0.0`,
/// which changes no finite sum but `-0.0`: the reference adds the same zeros).
pub fn matmul_reference(a: &[f32], b: &[f32], n: usize) -> Vec<f32> {
    let padded = n.div_ceil(16) * 16;
    let mut c = vec![0.0f32; n * n];
    for row in 0..n {
        for col in 0..n {
            let mut acc = 0.0f32;
            for k in 0..padded {
                let (x, y) = if k < n {
                    (a[row * n + k], b[k * n + col])
                } else {
                    (0.0, 0.0)
                };
                acc += x * y;
            }
            c[row * n + col] = acc;
        }
    }
    c
}

pub(super) fn check_matmul_tiled(engine: &Engine, size: usize) -> Result<(), String> {
    // A side that is not a multiple of the tile.
    let n = (size / 60).clamp(1, 37);
    let (av, bv) = (random_f32(n * n, 61), random_f32(n * n, 62));
    let a = Array::copy_on(engine.device(), &av).map_err(err)?;
    let b = Array::copy_on(engine.device(), &bv).map_err(err)?;
    let mut c = Array::<f32>::alloc_on(engine.device(), n * n).map_err(err)?;
    let f = engine.compile(run_matmul_tiled).map_err(err)?;
    f.call(&a, &b, &mut c, n as u32).map_err(err)?;
    compare("matmul_tiled", c.as_slice(), &matmul_reference(&av, &bv, n))
}
