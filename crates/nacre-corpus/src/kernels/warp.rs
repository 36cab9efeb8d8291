//! Kernels of the corpus that use warp operations and voting barriers, with their references:
//! every shuffle, reduction and vote over blocks whose size is not a multiple of 32 (so the
//! last warp is partial) and whose threads are laid out in two dimensions (so warps follow the
//! linear thread index); collectives in uniform control flow, inside loops, and in divergent
//! control flow (one warp alone); and the voting barriers in rotation.
//!
//! The references run each warp with [`nacre::ir::collective`]'s definitions.

use super::{compare, err, pseudo_random_u32, random_f32};
use nacre::gpu::{
    block_idx_x, global_id_x, global_size_x, lane_id, launch, shared_array, sync_threads,
    sync_threads_and, sync_threads_count, sync_threads_or, thread_idx, warp_all, warp_any,
    warp_ballot, warp_max, warp_min, warp_shuffle, warp_shuffle_down, warp_shuffle_up,
    warp_shuffle_xor, warp_sum, Array, Block, Grid,
};
use nacre::ir::collective::reduce_lanes;
use nacre::ir::{Scalar, Shuffle, WarpOp, WARP_SIZE};
use nacre::prelude::*;
use nacre::{kernel, Engine};

/// Threads per block of the exchange kernels: a 24 × 2 block, one full warp and one of 16.
const BX: u32 = 24;
const BY: u32 = 2;
const BLOCK: usize = (BX * BY) as usize;
/// Integer and float results per thread of [`warp_exchange`].
const INTS: usize = 16;
const FLOATS: usize = 4;

/// Every warp operation on the thread's element (0 past `n`; every thread takes part).
#[kernel]
pub fn warp_exchange(x: Ptr<i32>, f: Ptr<f32>, ints: Ptr<i32>, floats: Ptr<f32>, n: Val<u32>) {
    let t = thread_idx();
    let i = block_idx_x() * 48u32 + t.y * 24u32 + t.x;
    let mut v = Val::new(0i32);
    let mut fv = Val::new(0.0f32);
    if i < n {
        v = x[i];
        fv = f[i];
    }
    let lane = lane_id();
    let r = [
        lane.cast::<i32>(),
        warp_shuffle(v, lane * 7u32 + 3u32),
        warp_shuffle_up(v, 3u32),
        warp_shuffle_down(v, 5u32),
        warp_shuffle_xor(v, 9u32),
        warp_shuffle_xor(v, 40u32),
        warp_sum(v),
        warp_min(v),
        warp_max(v.cast::<u32>()).cast::<i32>(),
        warp_ballot((v & 1i32).ne(0i32)).cast::<i32>(),
        warp_any(v.gt(1i32 << 30)).cast::<i32>(),
        warp_all(v.ne(0i32)).cast::<i32>(),
        warp_shuffle_down(v.lt(0i32), 1u32).cast::<i32>(),
        (warp_sum(v.cast::<i64>()) >> 8i64).cast::<i32>(),
        warp_sum(v.cast::<u8>()).cast::<i32>(),
        (warp_shuffle(v.cast::<i64>() * 3i64, 31u32 - lane) >> 1i64).cast::<i32>(),
    ];
    let fr = [
        warp_sum(fv),
        warp_min(fv),
        warp_max(fv),
        warp_shuffle_xor(fv, 1u32),
    ];
    if i < n {
        for (k, r) in r.into_iter().enumerate() {
            ints[i * INTS as u32 + k as u32] = r;
        }
        for (k, r) in fr.into_iter().enumerate() {
            floats[i * FLOATS as u32 + k as u32] = r;
        }
    }
}

/// Launches [`warp_exchange`] over `n` elements in 24 × 2 blocks.
#[jit]
pub fn run_warp_exchange(x: Ptr<i32>, f: Ptr<f32>, ints: Ptr<i32>, floats: Ptr<f32>, n: Val<u32>) {
    launch(
        warp_exchange,
        Grid::new((n + 47u32) / 48u32),
        Block::new3(24u32, 2u32, 1u32),
        (x, f, ints, floats, n),
    );
}

/// The lanes of the warps of a block of `block` threads: (first linear index, lanes).
fn warps(block: usize) -> impl Iterator<Item = (usize, usize)> {
    let w = WARP_SIZE as usize;
    (0..block.div_ceil(w)).map(move |k| (k * w, (block - k * w).min(w)))
}

/// One warp's `vals` (its existing lanes) through shuffle `op` with `operand(lane)`.
fn shuffled<T: Copy>(vals: &[T], op: Shuffle, operand: impl Fn(u32) -> u32) -> Vec<T> {
    (0..vals.len() as u32)
        .map(|l| match op.source(l, operand(l)) {
            Some(s) if (s as usize) < vals.len() => vals[s as usize],
            _ => vals[l as usize],
        })
        .collect()
}

/// Reduction `op` of one warp's values (as bits of `s`), in butterfly order.
fn reduced(op: WarpOp, s: Scalar, bits: &[u64]) -> u64 {
    reduce_lanes(op, s, bits).unwrap_or(0)
}

/// The integer results of one warp of [`warp_exchange`] (`v`: its lanes' values).
fn warp_ints(v: &[i32]) -> Vec<[i32; INTS]> {
    let bits = |f: &dyn Fn(i32) -> u64| v.iter().map(|&x| f(x)).collect::<Vec<u64>>();
    let sum = reduced(WarpOp::Sum, Scalar::I32, &bits(&|x| x as u32 as u64)) as i32;
    let min = reduced(WarpOp::Min, Scalar::I32, &bits(&|x| x as u32 as u64)) as i32;
    let max = reduced(WarpOp::Max, Scalar::U32, &bits(&|x| x as u32 as u64)) as i32;
    let sum64 = reduced(WarpOp::Sum, Scalar::I64, &bits(&|x| x as i64 as u64)) as i64;
    let sum8 = reduced(WarpOp::Sum, Scalar::U8, &bits(&|x| x as u8 as u64)) as u8;
    let ballot = v
        .iter()
        .enumerate()
        .fold(0u32, |b, (l, &x)| b | (u32::from(x & 1 != 0) << l));
    let any = v.iter().any(|&x| x > 1 << 30);
    let all = v.iter().all(|&x| x != 0);
    let idx = shuffled(v, Shuffle::Index, |l| l * 7 + 3);
    let up = shuffled(v, Shuffle::Up, |_| 3);
    let down = shuffled(v, Shuffle::Down, |_| 5);
    let xor9 = shuffled(v, Shuffle::Xor, |_| 9);
    let xor40 = shuffled(v, Shuffle::Xor, |_| 40);
    let neg: Vec<bool> = v.iter().map(|&x| x < 0).collect();
    let neg_down = shuffled(&neg, Shuffle::Down, |_| 1);
    let wide: Vec<i64> = v.iter().map(|&x| i64::from(x) * 3).collect();
    let rev = shuffled(&wide, Shuffle::Index, |l| 31 - l);
    (0..v.len())
        .map(|l| {
            [
                l as i32,
                idx[l],
                up[l],
                down[l],
                xor9[l],
                xor40[l],
                sum,
                min,
                max,
                ballot as i32,
                i32::from(any),
                i32::from(all),
                i32::from(neg_down[l]),
                (sum64 >> 8) as i32,
                i32::from(sum8),
                (rev[l] >> 1) as i32,
            ]
        })
        .collect()
}

/// The float results of one warp of [`warp_exchange`].
fn warp_floats(f: &[f32]) -> Vec<[f32; FLOATS]> {
    let fb: Vec<u64> = f.iter().map(|x| u64::from(x.to_bits())).collect();
    let r = |op| f32::from_bits(reduced(op, Scalar::F32, &fb) as u32);
    let (sum, min, max) = (r(WarpOp::Sum), r(WarpOp::Min), r(WarpOp::Max));
    let xor1 = shuffled(f, Shuffle::Xor, |_| 1);
    (0..f.len()).map(|l| [sum, min, max, xor1[l]]).collect()
}

pub(super) fn check_warp_exchange(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1);
    let xv: Vec<i32> = pseudo_random_u32(n, 41)
        .iter()
        .enumerate()
        .map(|(k, &r)| if k % 11 == 0 { 0 } else { r as i32 })
        .collect();
    check_warp_exchange_on(engine, &xv, &random_f32(n, 43))
}

/// Runs [`run_warp_exchange`] on `engine` over `xv` and `fv` (the same length, at least 1;
/// floats without NaNs, whose payloads the IR leaves open) and checks every result bit for bit
/// against the reference.
pub fn check_warp_exchange_on(engine: &Engine, xv: &[i32], fv: &[f32]) -> Result<(), String> {
    let n = xv.len();
    if n == 0 || fv.len() != n {
        return Err(format!("warp exchange: {n} ints and {} floats", fv.len()));
    }
    let blocks = n.div_ceil(BLOCK);
    let padded = |k: usize, b: usize| k * BLOCK + b;
    let mut want_i = vec![0i32; n * INTS];
    let mut want_f = vec![0f32; n * FLOATS];
    for blk in 0..blocks {
        for (first, lanes) in warps(BLOCK) {
            let at = |l: usize| padded(blk, first + l);
            let v: Vec<i32> = (0..lanes)
                .map(|l| xv.get(at(l)).copied().unwrap_or(0))
                .collect();
            let f: Vec<f32> = (0..lanes)
                .map(|l| fv.get(at(l)).copied().unwrap_or(0.0))
                .collect();
            let ints = warp_ints(&v);
            let floats = warp_floats(&f);
            for l in (0..lanes).filter(|&l| at(l) < n) {
                let i = at(l);
                want_i[i * INTS..(i + 1) * INTS].copy_from_slice(&ints[l]);
                want_f[i * FLOATS..(i + 1) * FLOATS].copy_from_slice(&floats[l]);
            }
        }
    }
    let dev = engine.device();
    let x = Array::copy_on(dev.clone(), xv).map_err(err)?;
    let f = Array::copy_on(dev.clone(), fv).map_err(err)?;
    let mut ints = Array::<i32>::alloc_on(dev.clone(), n * INTS).map_err(err)?;
    let mut floats = Array::<f32>::alloc_on(dev.clone(), n * FLOATS).map_err(err)?;
    let run = engine.compile(run_warp_exchange).map_err(err)?;
    run.call(&x, &f, &mut ints, &mut floats, n as u32)
        .map_err(err)?;
    compare("warp ints", ints.as_slice(), &want_i)?;
    let bits32 = |s: &[f32]| s.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    compare("warp floats", &bits32(floats.as_slice()), &bits32(&want_f))
}

/// Warp collectives in a loop (an inclusive scan by `warp_shuffle_up`) and in divergent
/// control flow (only the block's first warp takes the maximum), around a block barrier, in
/// blocks of 40 threads.
#[kernel]
pub fn warp_scan(x: Ptr<u32>, out: Ptr<u32>, n: Val<u32>) {
    let t = thread_idx().x;
    let i = block_idx_x() * 40u32 + t;
    let mut v = Val::new(0u32);
    if i < n {
        v = x[i];
    }
    let lane = lane_id();
    let mut s = v;
    let mut d = Val::new(1u32);
    while d < 32u32 {
        let y = warp_shuffle_up(s, d);
        if lane >= d {
            s += y;
        }
        d *= 2u32;
    }
    let mut m = Val::new(0u32);
    if t < 32u32 {
        m = warp_max(v);
    }
    sync_threads();
    if i < n {
        out[i * 2u32] = s;
        out[i * 2u32 + 1u32] = m;
    }
}

/// Launches [`warp_scan`] over `n` elements in blocks of 40.
#[jit]
pub fn run_warp_scan(x: Ptr<u32>, out: Ptr<u32>, n: Val<u32>) {
    launch(
        warp_scan,
        Grid::new((n + 39u32) / 40u32),
        Block::new(40u32),
        (x, out, n),
    );
}

pub(super) fn check_warp_scan(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1);
    let xv: Vec<u32> = pseudo_random_u32(n, 47).iter().map(|x| x >> 4).collect();
    let mut want = vec![0u32; 2 * n];
    for blk in 0..n.div_ceil(40) {
        for (first, lanes) in warps(40) {
            let at = |l: usize| blk * 40 + first + l;
            let v: Vec<u32> = (0..lanes)
                .map(|l| xv.get(at(l)).copied().unwrap_or(0))
                .collect();
            let max = v.iter().copied().max().unwrap_or(0);
            let mut s = 0u32;
            for (l, &x) in v.iter().enumerate() {
                s = s.wrapping_add(x);
                if at(l) < n {
                    want[2 * at(l)] = s;
                    want[2 * at(l) + 1] = if first == 0 { max } else { 0 };
                }
            }
        }
    }
    let x = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut out = Array::<u32>::alloc_on(engine.device(), 2 * n).map_err(err)?;
    let run = engine.compile(run_warp_scan).map_err(err)?;
    run.call(&x, &mut out, n as u32).map_err(err)?;
    compare("warp scan", out.as_slice(), &want)
}

/// The voting barriers, four rounds in a loop (so their counters rotate), in blocks of 40:
/// block `b` writes `count`, `and`, `or` of each round to `out[12 * b..]`.
#[kernel]
pub fn block_votes(x: Ptr<u32>, out: Ptr<u32>, n: Val<u32>) {
    let t = thread_idx().x;
    let i = block_idx_x() * 40u32 + t;
    let mut v = Val::new(1u32);
    if i < n {
        v = x[i];
    }
    let mut k = Val::new(0u32);
    while k < 4u32 {
        let bit = (v >> k) & 1u32;
        let c = sync_threads_count(bit.eq(1u32));
        let a = sync_threads_and(bit.eq(1u32) | k.eq(3u32));
        let o = sync_threads_or(bit.eq(1u32) & k.ne(2u32));
        if t == 0u32 {
            let at = block_idx_x() * 12u32 + k * 3u32;
            out[at] = c;
            out[at + 1u32] = a.cast::<u32>();
            out[at + 2u32] = o.cast::<u32>();
        }
        k += 1u32;
    }
}

/// Launches [`block_votes`] over `n` elements in blocks of 40.
#[jit]
pub fn run_block_votes(x: Ptr<u32>, out: Ptr<u32>, n: Val<u32>) {
    launch(
        block_votes,
        Grid::new((n + 39u32) / 40u32),
        Block::new(40u32),
        (x, out, n),
    );
}

pub(super) fn check_block_votes(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1);
    let blocks = n.div_ceil(40);
    // Mostly ones in the low bits, so that `and` is sometimes true.
    let xv: Vec<u32> = pseudo_random_u32(n, 53)
        .iter()
        .map(|x| if x % 5 == 0 { *x } else { x | 0b1011 })
        .collect();
    let mut want = vec![0u32; 12 * blocks];
    for b in 0..blocks {
        let vals: Vec<u32> = (0..40)
            .map(|t| xv.get(b * 40 + t).copied().unwrap_or(1))
            .collect();
        for k in 0..4 {
            let bits: Vec<bool> = vals.iter().map(|v| (v >> k) & 1 == 1).collect();
            let at = b * 12 + k * 3;
            want[at] = bits.iter().filter(|&&b| b).count() as u32;
            want[at + 1] = u32::from(bits.iter().all(|&b| b || k == 3));
            want[at + 2] = u32::from(bits.iter().any(|&b| b && k != 2));
        }
    }
    let x = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut out = Array::<u32>::alloc_on(engine.device(), 12 * blocks).map_err(err)?;
    let run = engine.compile(run_block_votes).map_err(err)?;
    run.call(&x, &mut out, n as u32).map_err(err)?;
    compare("block votes", out.as_slice(), &want)
}

/// Warp operations on `f64` (which Metal lacks, so this is not a corpus case): shuffles, sums,
/// minima and maxima in blocks of 40 (a full warp and a partial one); block `b` writes each
/// thread's four results to `out[4 * i..]`.
#[kernel]
pub fn warp_f64(x: Ptr<f64>, out: Ptr<f64>, n: Val<u32>) {
    let t = thread_idx().x;
    let i = block_idx_x() * 40u32 + t;
    let mut v = Val::new(0.0f64);
    if i < n {
        v = x[i];
    }
    let r = [
        warp_shuffle_xor(v, 5u32),
        warp_sum(v),
        warp_min(v),
        warp_max(v),
    ];
    if i < n {
        for (k, r) in r.iter().enumerate() {
            out[i * 4u32 + k as u32] = *r;
        }
    }
}

/// Launches [`warp_f64`] over `n` elements in blocks of 40.
#[jit]
pub fn run_warp_f64(x: Ptr<f64>, out: Ptr<f64>, n: Val<u32>) {
    launch(
        warp_f64,
        Grid::new((n + 39u32) / 40u32),
        Block::new(40u32),
        (x, out, n),
    );
}

/// Runs [`run_warp_f64`] on `engine` over 300 elements and checks every result bit for bit
/// against [`reduce_lanes`] and [`Shuffle::source`].
pub fn check_warp_f64(engine: &Engine) -> Result<(), String> {
    let n = 300usize;
    let xv: Vec<f64> = random_f32(n, 83)
        .iter()
        .enumerate()
        .map(|(i, &v)| f64::from(v) * 1e3 + i as f64 * 1e-9)
        .collect();
    let mut want = vec![0.0f64; 4 * n];
    for blk in 0..n.div_ceil(40) {
        for (first, lanes) in warps(40) {
            let at = |l: usize| blk * 40 + first + l;
            let vals: Vec<f64> = (0..lanes)
                .map(|l| xv.get(at(l)).copied().unwrap_or(0.0))
                .collect();
            let bits: Vec<u64> = vals.iter().map(|v| v.to_bits()).collect();
            let shuffled = shuffled(&vals, Shuffle::Xor, |_| 5);
            for l in 0..lanes {
                if at(l) >= n {
                    continue;
                }
                let r = [
                    shuffled[l],
                    f64::from_bits(reduced(WarpOp::Sum, Scalar::F64, &bits)),
                    f64::from_bits(reduced(WarpOp::Min, Scalar::F64, &bits)),
                    f64::from_bits(reduced(WarpOp::Max, Scalar::F64, &bits)),
                ];
                want[4 * at(l)..4 * at(l) + 4].copy_from_slice(&r);
            }
        }
    }
    let x = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut out = Array::<f64>::alloc_on(engine.device(), 4 * n).map_err(err)?;
    let run = engine.compile(run_warp_f64).map_err(err)?;
    run.call(&x, &mut out, n as u32).map_err(err)?;
    let bits = |s: &[f64]| s.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    compare("warp f64", &bits(out.as_slice()), &bits(&want))
}

/// A warp collective that only the second warp of a block reaches, right after a grid-stride
/// loop whose warps leave it in different rounds on the CPU, and before a barrier: block `b`
/// writes its second warp's sum (of each thread's grid-stride share) to `out[b]`, through
/// shared memory, so the barrier must wait for the warp.
#[kernel]
pub fn warp_after_loop(x: Ptr<u32>, out: Ptr<u32>, n: Val<u32>) {
    let sh = shared_array::<u32, 1>();
    let t = thread_idx().x;
    let mut s = Val::new(0u32);
    let mut i = global_id_x();
    while i < n {
        s += x[i];
        i += global_size_x();
    }
    if t >= 32u32 {
        let w = warp_sum(s);
        if lane_id() == 0u32 {
            sh[0u32] = w;
        }
    }
    sync_threads();
    if t == 0u32 {
        out[block_idx_x()] = sh[0u32];
    }
}

/// Launches [`warp_after_loop`] with `blocks` blocks of 64 threads.
#[jit]
pub fn run_warp_after_loop(x: Ptr<u32>, out: Ptr<u32>, n: Val<u32>, blocks: Val<u32>) {
    launch(
        warp_after_loop,
        Grid::new(blocks),
        Block::new(64u32),
        (x, out, n),
    );
}

pub(super) fn check_warp_after_loop(engine: &Engine, n: usize) -> Result<(), String> {
    let blocks = 2usize;
    let stride = 64 * blocks;
    // So that the first warp's threads take one more iteration than the second's.
    let n = n.max(1).next_multiple_of(stride) + 32;
    let xv: Vec<u32> = pseudo_random_u32(n, 89).iter().map(|x| x >> 8).collect();
    let want: Vec<u32> = (0..blocks)
        .map(|b| {
            (32..64)
                .flat_map(|t| (b * 64 + t..n).step_by(stride))
                .fold(0u32, |s, i| s.wrapping_add(xv[i]))
        })
        .collect();
    let x = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut out = Array::<u32>::alloc_on(engine.device(), blocks).map_err(err)?;
    let run = engine.compile(run_warp_after_loop).map_err(err)?;
    run.call(&x, &mut out, n as u32, blocks as u32)
        .map_err(err)?;
    compare("warp after a loop", out.as_slice(), &want)
}
