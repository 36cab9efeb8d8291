//! The vocabulary of collective operations, which the threads of a warp or of a block perform
//! together: warp shuffles ([`Shuffle`]), warp reductions and votes ([`WarpOp`]) and the
//! barriers that also vote ([`BlockVote`], CUDA's `__syncthreads_count/and/or`).
//!
//! The instructions are [`crate::InstKind::LaneId`], [`crate::InstKind::Shuffle`],
//! [`crate::InstKind::Warp`] and [`crate::InstKind::BlockVote`] (kernels only). Their meaning is
//! that of CUDA's `*_sync` forms over the warp's lanes, defined here on lane numbers and bits so
//! that every target computes the same results:
//!
//! - A warp is [`WARP_SIZE`] consecutive threads of a block, in the order of the linear thread
//!   index `x + y * blockDim.x + z * blockDim.x * blockDim.y`; a thread's lane is that index
//!   modulo [`WARP_SIZE`].
//! - Every thread of a warp must reach the same collective operation (as CUDA requires of the
//!   full-mask `*_sync` forms); a program that lets them diverge gets unspecified results, never
//!   undefined behaviour.
//! - When the block's size is not a multiple of [`WARP_SIZE`], its last warp is *partial*: the
//!   lanes past the block's end do not exist. A shuffle whose source lane does not exist gives
//!   the caller's own value ([`Shuffle::source`]); a reduction folds the existing lanes only
//!   (the others count as [`WarpOp::identity`]); a ballot has 0 bits for them; `all` and `any`
//!   look at the existing lanes.
//! - Reductions combine in the order of a butterfly (`v = op(v, shuffle_xor(v, m))` for
//!   `m = 16, 8, 4, 2, 1`), so float sums are the same on every target ([`reduce_lanes`]).

use crate::instructions::BinaryOp;
use crate::types::Scalar;

/// Threads per warp, on every target: CUDA's warp, Metal's SIMD-group (the runtime refuses a
/// pipeline whose SIMD-group has another width), the CPU's lockstep groups.
pub const WARP_SIZE: u32 = 32;

/// Which lane a [`crate::InstKind::Shuffle`] reads (`__shfl_sync`, `__shfl_up_sync`,
/// `__shfl_down_sync`, `__shfl_xor_sync` over a full warp).
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Shuffle {
    /// Lane `operand % 32`.
    Index,
    /// Lane `lane - operand`, if that is a lane.
    Up,
    /// Lane `lane + operand`, if that is a lane.
    Down,
    /// Lane `lane ^ operand`, if that is a lane.
    Xor,
}

impl Shuffle {
    /// Every shuffle.
    pub const ALL: [Shuffle; 4] = [Shuffle::Index, Shuffle::Up, Shuffle::Down, Shuffle::Xor];

    /// The shuffle's name in the IR text.
    pub fn name(self) -> &'static str {
        match self {
            Shuffle::Index => "shuffle",
            Shuffle::Up => "shuffle_up",
            Shuffle::Down => "shuffle_down",
            Shuffle::Xor => "shuffle_xor",
        }
    }

    /// The lane that lane `lane` reads with `operand`, or `None` when it reads its own value
    /// (the source is outside the warp). The caller also gives the own value when the source
    /// lane does not exist (a partial warp).
    pub fn source(self, lane: u32, operand: u32) -> Option<u32> {
        let src = match self {
            Shuffle::Index => Some(operand % WARP_SIZE),
            Shuffle::Up => lane.checked_sub(operand),
            Shuffle::Down => lane.checked_add(operand),
            Shuffle::Xor => Some(lane ^ operand),
        }?;
        (src < WARP_SIZE).then_some(src)
    }
}

/// A warp reduction or vote ([`crate::InstKind::Warp`]): every lane gets the result.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum WarpOp {
    /// The sum of the lanes' values (wrapping for integers; floats in butterfly order).
    Sum,
    /// The smallest value (as [`BinaryOp::Min`]: floats ignore NaNs, -0.0 < +0.0).
    Min,
    /// The largest value (as [`BinaryOp::Max`]).
    Max,
    /// A `u32` whose bit `i` is lane `i`'s `bool` (`__ballot_sync`).
    Ballot,
    /// Whether some lane's `bool` is true (`__any_sync`).
    Any,
    /// Whether every lane's `bool` is true (`__all_sync`).
    All,
}

impl WarpOp {
    /// Every warp operation.
    pub const ALL: [WarpOp; 6] = [
        WarpOp::Sum,
        WarpOp::Min,
        WarpOp::Max,
        WarpOp::Ballot,
        WarpOp::Any,
        WarpOp::All,
    ];

    /// The operation's name in the IR text.
    pub fn name(self) -> &'static str {
        match self {
            WarpOp::Sum => "warp_sum",
            WarpOp::Min => "warp_min",
            WarpOp::Max => "warp_max",
            WarpOp::Ballot => "ballot",
            WarpOp::Any => "warp_any",
            WarpOp::All => "warp_all",
        }
    }

    /// The binary operator a reduction combines lanes with (`None` for votes).
    pub fn combine(self) -> Option<BinaryOp> {
        match self {
            WarpOp::Sum => Some(BinaryOp::Add),
            WarpOp::Min => Some(BinaryOp::Min),
            WarpOp::Max => Some(BinaryOp::Max),
            WarpOp::Ballot | WarpOp::Any | WarpOp::All => None,
        }
    }

    /// Whether the operation takes operands of type `s`: reductions take the integers up to
    /// 64 bits and `f32`/`f64`; votes take `bool`.
    pub fn supports(self, s: Scalar) -> bool {
        match self {
            WarpOp::Sum | WarpOp::Min | WarpOp::Max => {
                (s.is_int() && !s.is_wide()) || matches!(s, Scalar::F32 | Scalar::F64)
            }
            WarpOp::Ballot | WarpOp::Any | WarpOp::All => s == Scalar::Bool,
        }
    }

    /// The result's type for an operand of type `s`.
    pub fn result(self, s: Scalar) -> Scalar {
        match self {
            WarpOp::Ballot => Scalar::U32,
            WarpOp::Any | WarpOp::All => Scalar::Bool,
            WarpOp::Sum | WarpOp::Min | WarpOp::Max => s,
        }
    }

    /// The bits a lane that does not exist contributes to a reduction over `s`: 0 (`-0.0`
    /// for floats, which adds exactly) for sums, the type's largest value (`+inf`) for
    /// minima, its smallest (`-inf`) for maxima. `None` for votes.
    pub fn identity(self, s: Scalar) -> Option<u64> {
        let bits = match (self, s) {
            (WarpOp::Sum, Scalar::F32) => u64::from((-0.0f32).to_bits()),
            (WarpOp::Sum, Scalar::F64) => (-0.0f64).to_bits(),
            (WarpOp::Sum, _) => 0,
            (WarpOp::Min, Scalar::F32) => u64::from(f32::INFINITY.to_bits()),
            (WarpOp::Min, Scalar::F64) => f64::INFINITY.to_bits(),
            (WarpOp::Max, Scalar::F32) => u64::from(f32::NEG_INFINITY.to_bits()),
            (WarpOp::Max, Scalar::F64) => f64::NEG_INFINITY.to_bits(),
            (WarpOp::Min, s) => int_extreme(s, true),
            (WarpOp::Max, s) => int_extreme(s, false),
            (WarpOp::Ballot | WarpOp::Any | WarpOp::All, _) => return None,
        };
        Some(bits)
    }
}

/// The bits of integer type `s`'s largest (`max`) or smallest value, normalized.
fn int_extreme(s: Scalar, max: bool) -> u64 {
    let all = crate::semantics::normalize(s.into(), u128::from(u64::MAX)) as u64;
    match (s.is_signed_int(), max) {
        (true, true) => all >> 1,
        (true, false) => all ^ (all >> 1),
        (false, true) => all,
        (false, false) => 0,
    }
}

/// A barrier that also votes ([`crate::InstKind::BlockVote`], CUDA's `__syncthreads_*`): every
/// thread of the block arrives, then each gets the vote of all of them.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum BlockVote {
    /// How many threads passed `true` (a `u32`).
    Count,
    /// Whether every thread passed `true`.
    And,
    /// Whether some thread passed `true`.
    Or,
}

impl BlockVote {
    /// Every block vote.
    pub const ALL: [BlockVote; 3] = [BlockVote::Count, BlockVote::And, BlockVote::Or];

    /// The vote's name in the IR text.
    pub fn name(self) -> &'static str {
        match self {
            BlockVote::Count => "sync_threads_count",
            BlockVote::And => "sync_threads_and",
            BlockVote::Or => "sync_threads_or",
        }
    }

    /// The result's type.
    pub fn result(self) -> Scalar {
        match self {
            BlockVote::Count => Scalar::U32,
            BlockVote::And | BlockVote::Or => Scalar::Bool,
        }
    }
}

/// The result of reduction `op` (a [`WarpOp::combine`]) over the bits of `lanes`, the values
/// of a warp's existing lanes in lane order (at most [`WARP_SIZE`]): the butterfly's order,
/// which leaves every lane with the same value; missing lanes count as the identity. `None`
/// for votes or an unsupported type.
pub fn reduce_lanes(op: WarpOp, s: Scalar, lanes: &[u64]) -> Option<u64> {
    let combine = op.combine()?;
    let identity = op.identity(s)?;
    let mut v: Vec<u64> = (0..WARP_SIZE as usize)
        .map(|i| lanes.get(i).copied().unwrap_or(identity))
        .collect();
    let mut width = WARP_SIZE as usize / 2;
    while width > 0 {
        for j in 0..width {
            let (x, y) = (u128::from(v[j]), u128::from(v[j + width]));
            v[j] = crate::semantics::binary(combine, s, x, y).ok()? as u64;
        }
        width /= 2;
    }
    Some(v[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffles_read_the_lanes_cuda_reads() {
        assert_eq!(Shuffle::Index.source(3, 37), Some(5));
        assert_eq!(Shuffle::Up.source(3, 1), Some(2));
        assert_eq!(Shuffle::Up.source(3, 4), None);
        assert_eq!(Shuffle::Down.source(30, 1), Some(31));
        assert_eq!(Shuffle::Down.source(31, 1), None);
        assert_eq!(Shuffle::Down.source(1, u32::MAX), None);
        assert_eq!(Shuffle::Xor.source(5, 16), Some(21));
        assert_eq!(Shuffle::Xor.source(5, 32), None);
    }

    #[test]
    fn reductions_fold_in_butterfly_order_with_identities_for_missing_lanes() {
        let lanes: Vec<u64> = (1..=32u64).collect();
        assert_eq!(reduce_lanes(WarpOp::Sum, Scalar::U32, &lanes), Some(528));
        assert_eq!(reduce_lanes(WarpOp::Max, Scalar::I32, &lanes[..5]), Some(5));
        let neg = [(-3i32) as u32 as u64, 7];
        assert_eq!(
            reduce_lanes(WarpOp::Min, Scalar::I32, &neg),
            Some((-3i32) as u32 as u64)
        );
        // -0.0 is the sum's identity: a warp of one -0.0 sums to -0.0.
        let z = [u64::from((-0.0f32).to_bits())];
        assert_eq!(
            reduce_lanes(WarpOp::Sum, Scalar::F32, &z),
            z.first().copied()
        );
        // Butterfly order: ((1e8 + 1) + (-1e8)) differs from 1e8 + (1 + -1e8) in f32.
        let f = |x: f32| u64::from(x.to_bits());
        let order = [f(1e8), f(-1e8), f(1.0)];
        let got = reduce_lanes(WarpOp::Sum, Scalar::F32, &order).map(|b| f32::from_bits(b as u32));
        // Lanes 0 and 2 meet at width 2, then lane 1 at width 1: (1e8 + 1) + -1e8 = 0 in f32.
        assert_eq!(got, Some(0.0));
        assert_eq!(reduce_lanes(WarpOp::Ballot, Scalar::Bool, &[1]), None);
    }

    #[test]
    fn types_follow_the_operation() {
        assert!(WarpOp::Sum.supports(Scalar::F64));
        assert!(!WarpOp::Sum.supports(Scalar::F16));
        assert!(!WarpOp::Sum.supports(Scalar::Bool));
        assert!(WarpOp::Ballot.supports(Scalar::Bool));
        assert_eq!(WarpOp::Ballot.result(Scalar::Bool), Scalar::U32);
        assert_eq!(BlockVote::Count.result(), Scalar::U32);
        assert_eq!(WarpOp::Min.identity(Scalar::I8), Some(0x7f));
        assert_eq!(WarpOp::Max.identity(Scalar::I16), Some(0x8000));
        assert_eq!(WarpOp::Min.identity(Scalar::U32), Some(u64::from(u32::MAX)));
        assert_eq!(WarpOp::Max.identity(Scalar::U64), Some(0));
    }
}
