//! Warp-level operations and voting barriers in kernels: the lane index, shuffles, ballots
//! and votes, warp reductions, and `sync_threads_count/and/or`, with the meaning of CUDA's
//! `*_sync` forms over full warps (defined in [`nacre_ir::collective`]).
//!
//! A warp is [`WARP_SIZE`] consecutive threads of a block in linear order (x fastest), on every
//! target: CUDA's warp, Metal's SIMD-group, the CPU's lockstep groups. Every thread of a warp
//! must reach the same warp operations in the same order, as CUDA requires; the lanes past the
//! end of a block whose size is not a multiple of 32 do not exist (a shuffle from one gives
//! the caller's own value, reductions and votes skip them). Warp sums of floats add in a fixed
//! butterfly order, so they are the same on every target.
//!
//! Outside a trace (direct mode) a kernel runs as one block of one thread: a warp of one lane.

use crate::context::with_tracer;
use crate::identity::Handle;
use crate::val::{IntoVal, Val};
use nacre_ir::collective::reduce_lanes;
use nacre_ir::semantics::ScalarValue;
use nacre_ir::{BlockVote, Shuffle, WarpOp};

pub use nacre_ir::WARP_SIZE;

/// An element type with warp reductions ([`warp_sum`], [`warp_min`], [`warp_max`]): the
/// integers, `f32` and `f64`.
pub trait WarpNum: ScalarValue {}

macro_rules! warp_num {
    ($($t:ty),*) => { $(impl WarpNum for $t {})* };
}
warp_num!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

/// The calling thread's lane in its warp: its linear index in the block modulo 32.
pub fn lane_id() -> Val<u32> {
    let h = with_tracer(|t| t.build(|b| b.lane_id()));
    Val::from_handle(h.unwrap_or(Handle::direct(0)))
}

/// Threads per warp: 32 on every target (a constant).
pub fn warp_size() -> Val<u32> {
    Val::new(WARP_SIZE)
}

fn shuffle<T: ScalarValue>(op: Shuffle, v: Val<T>, lane: Val<u32>) -> Val<T> {
    let h = with_tracer(|t| {
        let a = t.value(v.handle(), op.name(), Val::<T>::ir_type);
        let l = t.value(lane.handle(), op.name(), Val::<u32>::ir_type);
        t.build(|b| b.shuffle(op, a, l))
    });
    // One lane: every shuffle reads the caller's own value.
    Val::from_handle(h.unwrap_or(v.handle()))
}

/// `v` of lane `src % 32` of the warp (`__shfl_sync`); the caller's own `v` if that lane does
/// not exist.
pub fn warp_shuffle<T: ScalarValue>(v: impl IntoVal<T>, src: impl IntoVal<u32>) -> Val<T> {
    shuffle(Shuffle::Index, v.into_val(), src.into_val())
}

/// `v` of lane `lane_id() - delta` (`__shfl_up_sync`); the caller's own `v` below lane `delta`.
pub fn warp_shuffle_up<T: ScalarValue>(v: impl IntoVal<T>, delta: impl IntoVal<u32>) -> Val<T> {
    shuffle(Shuffle::Up, v.into_val(), delta.into_val())
}

/// `v` of lane `lane_id() + delta` (`__shfl_down_sync`); the caller's own `v` when that is past
/// the warp's last lane.
pub fn warp_shuffle_down<T: ScalarValue>(v: impl IntoVal<T>, delta: impl IntoVal<u32>) -> Val<T> {
    shuffle(Shuffle::Down, v.into_val(), delta.into_val())
}

/// `v` of lane `lane_id() ^ mask` (`__shfl_xor_sync`, the butterfly); the caller's own `v`
/// when that is not a lane.
pub fn warp_shuffle_xor<T: ScalarValue>(v: impl IntoVal<T>, mask: impl IntoVal<u32>) -> Val<T> {
    shuffle(Shuffle::Xor, v.into_val(), mask.into_val())
}

fn warp<T: ScalarValue, R: ScalarValue>(op: WarpOp, v: Val<T>) -> Val<R> {
    let h = with_tracer(|t| {
        let a = t.value(v.handle(), op.name(), Val::<T>::ir_type);
        t.build(|b| b.warp(op, a))
    });
    Val::from_handle(h.unwrap_or_else(|| {
        let bits = v.handle().bits(op.name());
        let one_lane = match op {
            WarpOp::Ballot | WarpOp::Any | WarpOp::All => Some(bits & 1),
            _ => reduce_lanes(op, T::SCALAR, &[bits as u64]).map(u128::from),
        };
        Handle::direct(one_lane.unwrap_or(bits))
    }))
}

/// The sum of `v` over the warp (wrapping for integers; floats in butterfly order), in every
/// lane.
pub fn warp_sum<T: WarpNum>(v: impl IntoVal<T>) -> Val<T> {
    warp(WarpOp::Sum, v.into_val())
}

/// The minimum of `v` over the warp (floats as `f32::min`: NaNs ignored), in every lane.
pub fn warp_min<T: WarpNum>(v: impl IntoVal<T>) -> Val<T> {
    warp(WarpOp::Min, v.into_val())
}

/// The maximum of `v` over the warp, in every lane.
pub fn warp_max<T: WarpNum>(v: impl IntoVal<T>) -> Val<T> {
    warp(WarpOp::Max, v.into_val())
}

/// A mask whose bit `i` is lane `i`'s `pred` (`__ballot_sync`); 0 for lanes that do not exist.
pub fn warp_ballot(pred: impl IntoVal<bool>) -> Val<u32> {
    warp(WarpOp::Ballot, pred.into_val())
}

/// Whether `pred` holds in some lane of the warp (`__any_sync`).
pub fn warp_any(pred: impl IntoVal<bool>) -> Val<bool> {
    warp(WarpOp::Any, pred.into_val())
}

/// Whether `pred` holds in every lane of the warp (`__all_sync`).
pub fn warp_all(pred: impl IntoVal<bool>) -> Val<bool> {
    warp(WarpOp::All, pred.into_val())
}

fn block_vote<R: ScalarValue>(op: BlockVote, pred: Val<bool>) -> Val<R> {
    let h = with_tracer(|t| {
        let a = t.value(pred.handle(), op.name(), Val::<bool>::ir_type);
        t.build(|b| b.block_vote(op, a))
    });
    Val::from_handle(h.unwrap_or_else(|| Handle::direct(pred.handle().bits(op.name()) & 1)))
}

/// A barrier ([`crate::gpu::sync_threads`]) that returns how many threads of the block passed
/// `true` (`__syncthreads_count`).
pub fn sync_threads_count(pred: impl IntoVal<bool>) -> Val<u32> {
    block_vote(BlockVote::Count, pred.into_val())
}

/// A barrier that returns whether every thread of the block passed `true`
/// (`__syncthreads_and`).
pub fn sync_threads_and(pred: impl IntoVal<bool>) -> Val<bool> {
    block_vote(BlockVote::And, pred.into_val())
}

/// A barrier that returns whether some thread of the block passed `true`
/// (`__syncthreads_or`).
pub fn sync_threads_or(pred: impl IntoVal<bool>) -> Val<bool> {
    block_vote(BlockVote::Or, pred.into_val())
}
