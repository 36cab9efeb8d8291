//! A kernel on the 128-bit integers, which CUDA and the CPU backends have and Metal lacks
//! (listed by [`super::without_metal`], not [`super::all`]): full products of `i64` pairs,
//! a decimal rescale (division and remainder), a block reduction in shared `i128` memory, and
//! a product carried across the block's barriers.

use super::{compare, err, pseudo_random_u32, KernelCase};
use nacre::gpu::{block_idx_x, global_id_x, launch, shared_array, sync_threads, thread_idx_x};
use nacre::gpu::{Array, Block, Grid};
use nacre::prelude::*;
use nacre::{kernel, Engine};

/// Threads per block of [`wide_products`].
const BLOCK: u32 = 128;

/// The bound [`wide_products`] clamps products to.
const LIMIT: i128 = 1 << 100;

/// Per element `i < n`: `p = x[i] × y[i]` in `i128`, stored as `p / 1_000_000_007 + p % 97`
/// plus its bit operations and `min(p, 2^100)` as a `select` (all wrapping);
/// per block: the sum of the products (a tree reduction in shared memory), plus the block's
/// own product of thread 0 (kept in a register across every barrier).
#[kernel]
pub fn wide_products(x: Ptr<i64>, y: Ptr<i64>, scaled: Ptr<i128>, sums: Ptr<i128>, n: Val<u32>) {
    let tile = shared_array::<i128, { BLOCK as usize }>();
    let t = thread_idx_x();
    let i = global_id_x();
    let mut p = Val::new(0i128);
    if i < n {
        p = x[i].cast::<i128>() * y[i].cast::<i128>();
        let counts = p.count_ones() + (p.leading_zeros() << 8u32) + (p.trailing_zeros() << 16u32);
        let clamped = select(p.lt(LIMIT), p, LIMIT);
        scaled[i] = p / 1_000_000_007i128
            + p % 97i128
            + (p.swap_bytes() ^ p.reverse_bits())
            + counts.cast::<i128>()
            + clamped;
    }
    tile[t] = p;
    sync_threads();
    let mut stride = Val::new(BLOCK / 2);
    while stride > 0u32 {
        if t < stride {
            tile[t] = tile[t] + tile[t + stride];
        }
        sync_threads();
        stride >>= 1u32;
    }
    if t == 0u32 {
        sums[block_idx_x()] = tile[0u32] + p;
    }
}

/// Launches [`wide_products`] over `n` elements.
#[jit]
pub fn run_wide_products(
    x: Ptr<i64>,
    y: Ptr<i64>,
    scaled: Ptr<i128>,
    sums: Ptr<i128>,
    n: Val<u32>,
) {
    launch(
        wide_products,
        Grid::new((n + (BLOCK - 1)) / BLOCK),
        Block::new(BLOCK),
        (x, y, scaled, sums, n),
    );
}

/// `n` pseudo-random `i64`s of up to 63 bits, of both signs.
fn random_i64(n: usize, seed: u32) -> Vec<i64> {
    let (hi, lo) = (pseudo_random_u32(n, seed), pseudo_random_u32(n, seed + 1));
    hi.iter()
        .zip(&lo)
        .map(|(&h, &l)| ((u64::from(h) << 32 | u64::from(l)) as i64) >> (h % 40))
        .collect()
}

fn check_wide_products(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1);
    let blocks = n.div_ceil(BLOCK as usize);
    let (xv, yv) = (random_i64(n, 21), random_i64(n, 22));
    let dev = engine.device();
    let x = Array::copy_on(dev.clone(), &xv).map_err(err)?;
    let y = Array::copy_on(dev.clone(), &yv).map_err(err)?;
    let mut scaled = Array::<i128>::alloc_on(dev.clone(), n).map_err(err)?;
    let mut sums = Array::<i128>::alloc_on(dev, blocks).map_err(err)?;
    let f = engine.compile(run_wide_products).map_err(err)?;
    f.call(&x, &y, &mut scaled, &mut sums, n as u32)
        .map_err(err)?;
    let products: Vec<i128> = xv
        .iter()
        .zip(&yv)
        .map(|(&a, &b)| i128::from(a) * i128::from(b))
        .collect();
    let want: Vec<i128> = products
        .iter()
        .map(|&p| {
            let counts = p.count_ones() + (p.leading_zeros() << 8) + (p.trailing_zeros() << 16);
            (p / 1_000_000_007 + p % 97)
                .wrapping_add(p.swap_bytes() ^ p.reverse_bits())
                .wrapping_add(i128::from(counts))
                .wrapping_add(if p < LIMIT { p } else { LIMIT })
        })
        .collect();
    compare("scaled products", scaled.as_slice(), &want)?;
    let want_sums: Vec<i128> = products
        .chunks(BLOCK as usize)
        .map(|c| c.iter().fold(c[0], |s, &p| s.wrapping_add(p)))
        .collect();
    compare("block sums", sums.as_slice(), &want_sums)
}

/// The kernel cases of this module.
pub fn cases() -> Vec<KernelCase> {
    vec![KernelCase {
        name: "wide_products",
        grid_stride: false,
        check: check_wide_products,
        trace: || nacre::trace_module(&run_wide_products),
    }]
}
