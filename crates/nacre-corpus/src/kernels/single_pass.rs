//! Single-launch kernels that combine warp operations with atomics, with their references:
//!
//! - [`block_sum_warp`]: a sum with one atomic per block. Each thread sums its grid-stride
//!   share, the warps reduce by shuffles, and each block adds its total to the result with one
//!   device-scoped float atomic.
//! - [`compact`]: an order-preserving stream compaction (`keep x > threshold`). Each block
//!   takes a tile of [`COMPACT_TILE`] elements by an atomic ticket and counts its kept
//!   elements with ballots. It learns the number kept before it by a decoupled look-back over
//!   its predecessors' published counts (one 32-bit atomic word per tile: a 2-bit flag and a
//!   30-bit count, so `n` must stay below [`COMPACT_MAX`]), then scatters. What one block
//!   tells another lives entirely in that word, so relaxed atomics suffice (Metal has no
//!   others). Blocks take tickets in the order they start, so every block waits only on
//!   blocks that have started: it makes progress wherever a started block keeps running, as
//!   on CUDA GPUs and the CPU's worker threads. Metal does not document that guarantee; there
//!   the kernel is checked by compiling and in the emulation only.

use super::{compare, compare_f32, err, random_f32};
use nacre::atomic::Ordering;
use nacre::gpu::{
    block_dim_x, global_id_x, global_size_x, lane_id, launch, shared_array, sync_threads,
    thread_idx_x, warp_ballot, warp_shuffle, warp_shuffle_up, warp_sum, Array, Block, Grid,
};
use nacre::gpu::{Device, MemoryError};
use nacre::prelude::*;
use nacre::{kernel, select, Engine};
use std::sync::Arc;

/// Independent loads in flight per thread in [`block_sum_warp`]'s main loop.
pub const UNROLL: u32 = 8;

/// The grid-stride sum of `x[..n]` added to `out[0]`: [`UNROLL`] independent loads per step
/// into as many accumulators (`n` plus the grid's threads times `UNROLL` must stay below 2³²), a
/// guarded pass over the rest, a warp sum, the warps' sums gathered in shared memory and
/// summed by every warp (uniform control flow), and one atomic per block.
#[kernel]
pub fn block_sum_warp(x: Ptr<f32>, out: Ptr<f32>, n: Val<u32>) {
    let partial = shared_array::<f32, 32>();
    let stride = global_size_x();
    let mut i = global_id_x();
    let mut acc = [Val::new(0.0f32); UNROLL as usize];
    if n >= stride * (UNROLL - 1) {
        let last = n - stride * (UNROLL - 1);
        while i < last {
            acc = add_strided(acc, x, i, stride);
            i += stride * UNROLL;
        }
    }
    // Fewer than UNROLL elements are left per thread: one pass of guarded loads, which
    // stay independent (a loop here would issue them one at a time).
    let left = select(i < n, n - i, 0u32);
    let mut rest = Val::new(0.0f32);
    for k in 0..UNROLL {
        if stride * k < left {
            rest += x[i + stride * k];
        }
    }
    let s = warp_sum(acc.iter().fold(rest, |a, &b| a + b));
    let (t, lane) = (thread_idx_x(), lane_id());
    if lane == 0u32 {
        partial[t / 32u32] = s;
    }
    sync_threads();
    let warps = (block_dim_x() + 31u32) / 32u32;
    let total = warp_sum(select(lane < warps, partial[lane], 0.0f32));
    if t == 0u32 {
        out.atomic(0u32).fetch_add(total, Ordering::Relaxed);
    }
}

/// `acc[k] + x[i + k * stride]` for every accumulator `k`.
fn add_strided<const K: usize>(
    acc: [Val<f32>; K],
    x: Ptr<f32>,
    i: Val<u32>,
    stride: Val<u32>,
) -> [Val<f32>; K] {
    let mut next = acc;
    for (k, a) in next.iter_mut().enumerate() {
        *a += x.load(i + stride * k as u32);
    }
    next
}

/// Launches [`block_sum_warp`] with `blocks` blocks of 256 threads.
#[jit]
pub fn run_block_sum_warp(x: Ptr<f32>, out: Ptr<f32>, n: Val<u32>, blocks: Val<u32>) {
    launch(
        block_sum_warp,
        Grid::new(blocks),
        Block::new(256u32),
        (x, out, n),
    );
}

pub(super) fn check_block_sum_warp(engine: &Engine, n: usize) -> Result<(), String> {
    let xv = random_f32(n, 61);
    let want = xv.iter().map(|&v| f64::from(v)).sum::<f64>() as f32;
    let x = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let f = engine.compile(run_block_sum_warp).map_err(err)?;
    for blocks in [1u32, 3] {
        let mut out = Array::<f32>::alloc_on(engine.device(), 1).map_err(err)?;
        f.call(&x, &mut out, n as u32, blocks).map_err(err)?;
        let tol = 1e-5 * (n as f32).sqrt();
        compare_f32("warp block sum", out.as_slice(), &[want], tol)?;
    }
    Ok(())
}

/// Threads per block of [`compact`].
pub const COMPACT_BLOCK: u32 = 256;
/// Elements per thread of [`compact`].
const ITEMS: u32 = 16;
/// Warps per block of [`compact`].
const WARPS: u32 = COMPACT_BLOCK / 32;
/// Elements per tile (block) of [`compact`].
pub const COMPACT_TILE: u32 = COMPACT_BLOCK * ITEMS;
/// Where [`compact`]'s shared words hold the tile's ticket and the count before it.
const TICKET: u32 = ITEMS * WARPS;
const BEFORE: u32 = TICKET + 1;
/// The flags of a tile's status word (above its 30-bit count): its own count is published,
/// or the count of it and every tile before it.
const AGGREGATE: u32 = 1 << 30;
const INCLUSIVE: u32 = 2 << 30;
/// The count bits of a status word.
const COUNT: u32 = AGGREGATE - 1;
/// The elements [`compact`] takes at most (exclusive): counts must fit 30 bits.
pub const COMPACT_MAX: u32 = 1 << 30;

/// The elements of `x[..n]` above `threshold`, in order, to `out[..count[0]]` (`n` below
/// [`COMPACT_MAX`]). `status` holds
/// one word per tile and `ticket` one word, all zero at the start ([`clear_compact`]).
#[kernel]
pub fn compact(
    x: Ptr<f32>,
    out: Ptr<f32>,
    count: Ptr<u32>,
    status: Ptr<u32>,
    ticket: Ptr<u32>,
    threshold: Val<f32>,
    n: Val<u32>,
) {
    let sh = shared_array::<u32, { (BEFORE + 1) as usize }>();
    let (t, lane) = (thread_idx_x(), lane_id());
    let warp = t / 32u32;
    if t == 0u32 {
        sh[TICKET] = ticket.atomic(0u32).fetch_add(1u32, Ordering::Relaxed);
    }
    sync_threads();
    let tile = sh[TICKET];
    // Item k of warp w covers 32 consecutive elements, at chunk k * WARPS + w of the tile.
    let at = |k: u32| tile * COMPACT_TILE + (k * WARPS + warp) * 32u32 + lane;
    let mut vals = Vec::new();
    let mut votes = Vec::new();
    for k in 0..ITEMS {
        let i = at(k);
        let mut v = Val::new(0.0f32);
        if i < n {
            v = x[i];
        }
        let ballot = warp_ballot(i.lt(n) & v.gt(threshold));
        if lane == 0u32 {
            sh[k * WARPS + warp] = ballot.count_ones();
        }
        vals.push(v);
        votes.push(ballot);
    }
    sync_threads();
    let (before_chunk, total) = chunk_offsets(sh, lane, warp);
    if t == 0u32 {
        let before = look_back(status, tile, total);
        sh[BEFORE] = before;
        if n - tile * COMPACT_TILE <= COMPACT_TILE {
            count[0u32] = before + total;
        }
    }
    sync_threads();
    let before = sh[BEFORE];
    let below = (Val::new(1u32) << lane) - 1u32;
    for k in 0..ITEMS as usize {
        // Every lane takes part in the shuffle; the kept ones store.
        let chunk = before + before_chunk(k as u32);
        let ballot = votes[k];
        if ((ballot >> lane) & 1u32).eq(1u32) {
            out[chunk + (ballot & below).count_ones()] = vals[k];
        }
    }
}

/// The exclusive scan of the tile's per-chunk counts (`sh[..TICKET]`, chunk `k * WARPS + w`),
/// computed by every warp alike: lane `l` scans chunks `4l..4l + 3`, the warp scans the lanes'
/// totals by shuffles. Returns the kept elements before chunk `(k, warp)` of the tile, as a
/// function of `k` (a shuffle from the lane holding it), and the tile's total.
fn chunk_offsets(
    sh: Ptr<u32>,
    lane: Val<u32>,
    warp: Val<u32>,
) -> (impl Fn(u32) -> Val<u32>, Val<u32>) {
    let c: Vec<Val<u32>> = (0..4u32).map(|j| sh.load(lane * 4u32 + j)).collect();
    let own = (c[0] + c[1]) + (c[2] + c[3]);
    let mut s = own;
    let mut d = 1u32;
    while d < 32 {
        let y = warp_shuffle_up(s, d);
        s = select(lane.ge(d), s + y, s);
        d *= 2;
    }
    let total = warp_shuffle(s, 31u32);
    let mut e = s - own;
    // This warp's chunk of item k is entry `warp % 4` of lane `2k + warp / 4`.
    let pick = warp % 4u32;
    let mut mine = e;
    for (j, cj) in c.iter().enumerate().take(3) {
        e += *cj;
        mine = select(pick.eq(j as u32 + 1), e, mine);
    }
    let from = move |k: u32| warp_shuffle(mine, warp / 4u32 + 2 * k);
    (from, total)
}

/// Publishes `tile`'s count, adds up the counts before it (walking back over published
/// aggregates until an inclusive count), publishes its inclusive count and returns the kept
/// elements before the tile. Tile 0 publishes its inclusive count at once, so the walk ends.
#[jit]
fn look_back(status: Ptr<u32>, tile: Val<u32>, total: Val<u32>) -> Val<u32> {
    let mut before = Val::new(0u32);
    if tile > 0u32 {
        status
            .atomic(tile)
            .swap(total | AGGREGATE, Ordering::Relaxed);
        let mut j = tile - 1u32;
        let mut done = Val::new(false);
        while !done {
            let word = status.atomic(j).fetch_or(0u32, Ordering::Relaxed);
            let flag = word & !COUNT;
            if flag.ne(0u32) {
                before += word & COUNT;
                done = flag.eq(INCLUSIVE);
                if !done {
                    j -= 1u32;
                }
            }
        }
    }
    status
        .atomic(tile)
        .swap((before + total) | INCLUSIVE, Ordering::Relaxed);
    before
}

/// Zeroes `status[..tiles]` and `ticket[0]` (grid-stride).
#[kernel]
pub fn clear_compact(status: Ptr<u32>, ticket: Ptr<u32>, tiles: Val<u32>) {
    let mut i = global_id_x();
    if i == 0u32 {
        ticket[0u32] = 0u32;
    }
    while i < tiles {
        status[i] = 0u32;
        i += global_size_x();
    }
}

/// Compacts `x[..n]` ([`compact`]) after clearing its tile words: `status` needs one word per
/// [`COMPACT_TILE`] elements.
#[jit]
pub fn run_compact(
    x: Ptr<f32>,
    out: Ptr<f32>,
    count: Ptr<u32>,
    status: Ptr<u32>,
    ticket: Ptr<u32>,
    threshold: Val<f32>,
    n: Val<u32>,
) {
    let tiles = (n + (COMPACT_TILE - 1)) / COMPACT_TILE;
    launch(
        clear_compact,
        Grid::new((tiles + 255u32) / 256u32),
        Block::new(256u32),
        (status, ticket, tiles),
    );
    launch(
        compact,
        Grid::new(tiles),
        Block::new(COMPACT_BLOCK),
        (x, out, count, status, ticket, threshold, n),
    );
}

/// The tiles of `n` elements: the length of [`run_compact`]'s `status`.
pub fn compact_tiles(n: usize) -> usize {
    n.div_ceil(COMPACT_TILE as usize)
}

/// The elements of `x` above `threshold`, in order: what [`run_compact`] keeps.
pub fn compact_reference(x: &[f32], threshold: f32) -> Vec<f32> {
    x.iter().copied().filter(|&v| v > threshold).collect()
}

/// The arrays [`run_compact`] writes for `n` elements, passed to it in this order after `x`.
pub struct CompactArrays {
    /// The kept elements, in `out[..count[0]]`.
    pub out: Array<f32>,
    /// How many were kept.
    pub count: Array<u32>,
    /// One status word per tile ([`compact_tiles`]).
    pub status: Array<u32>,
    /// The tiles' ticket counter.
    pub ticket: Array<u32>,
}

impl CompactArrays {
    /// Arrays for `n` elements on `device`.
    pub fn alloc_on(device: Arc<dyn Device>, n: usize) -> Result<CompactArrays, MemoryError> {
        Ok(CompactArrays {
            out: Array::alloc_on(device.clone(), n)?,
            count: Array::alloc_on(device.clone(), 1)?,
            status: Array::alloc_on(device.clone(), compact_tiles(n))?,
            ticket: Array::alloc_on(device, 1)?,
        })
    }

    /// The kept elements (at most `out`'s length, whatever `count` holds).
    pub fn kept(&self) -> &[f32] {
        let out = self.out.as_slice();
        &out[..(self.count.as_slice()[0] as usize).min(out.len())]
    }
}

pub(super) fn check_compact(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1);
    let xv = random_f32(n, 67);
    let dev = engine.device();
    let x = Array::copy_on(dev.clone(), &xv).map_err(err)?;
    let f = engine.compile(run_compact).map_err(err)?;
    for threshold in [0.25f32, -2.0, 2.0] {
        let want = compact_reference(&xv, threshold);
        let mut a = CompactArrays::alloc_on(dev.clone(), n).map_err(err)?;
        let c = &mut a;
        f.call(
            &x,
            &mut c.out,
            &mut c.count,
            &mut c.status,
            &mut c.ticket,
            threshold,
            n as u32,
        )
        .map_err(err)?;
        let kept = a.count.as_slice()[0] as usize;
        compare("compaction count", &[kept], &[want.len()])?;
        compare("compaction", a.kept(), &want)?;
    }
    Ok(())
}
