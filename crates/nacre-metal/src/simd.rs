//! Warp collectives and voting barriers in MSL: a warp is a SIMD-group of 32 threads, formed
//! from consecutive linear thread indices (Apple GPUs run 32-wide SIMD-groups; the runtime
//! refuses a pipeline whose execution width differs, see [`SIMD_WIDTH`]).
//!
//! - Shuffles and reductions follow the shared spelling of [`nacre_c::collective`] over the
//!   prelude's `nacre_shfl` (`simd_shuffle`; 64-bit values as two 32-bit halves, 8- and
//!   16-bit ones widened to 32 bits), so partial SIMD-groups and float sums mean what the IR
//!   defines.
//! - Ballots and votes are `simd_ballot`, `simd_any` and `simd_all`, which count only the
//!   threads that exist, as the IR's votes do.
//! - A voting barrier counts each SIMD-group's predicates with a ballot, has its lane 0 write
//!   the count into the kernel's threadgroup slots ([`VOTE_STORAGE`]), meets the threadgroup
//!   at a barrier and adds the slots up. Each thread alternates between two rows of slots (by
//!   its count of votes so far), so a thread that runs ahead into the next vote never
//!   overwrites a count another thread has yet to read: to reach it, every thread must have
//!   passed this vote's barrier, and the one after it overwrites the other row.

use crate::MslDialect;
use nacre_c::collective::{
    reduce_definition, warp_spelling, Collective, CollectiveAccess, CollectiveSpelling,
};
use nacre_c::helpers::Helper;
use nacre_c::DialectError;
use nacre_ir::{BlockVote, WarpOp};

/// The SIMD-group width the generated code assumes.
pub const SIMD_WIDTH: u32 = 32;

/// The bytes of threadgroup memory of [`VOTE_STORAGE`].
pub const VOTE_BYTES: u64 = 64 * 4;

/// The kernel-scope storage of voting barriers: two rows of one count per SIMD-group (1024
/// threads at most), and the thread's count of votes so far. (`s_votes` is named like the
/// shared arrays, which the MSL emulation recognises by their `s` prefix.)
pub const VOTE_STORAGE: [&str; 2] = [
    "threadgroup uint s_votes[64];",
    "uint nacre_votes_seen = 0u;",
];

/// The prelude of collectives ([`Helper::Collectives`]): the linear thread index, the lane and
/// the number of existing lanes of the SIMD-group, the shuffles, and the voting barrier's
/// count.
const PRELUDE: &str = "\
inline uint nacre_linear_tid(uint3 t, uint3 d) { return t.x + d.x * (t.y + d.y * t.z); }
inline uint nacre_threads(uint3 d) { return d.x * d.y * d.z; }
inline uint nacre_lane(uint3 t, uint3 d) { return nacre_linear_tid(t, d) & 31u; }
inline uint nacre_lanes(uint3 t, uint3 d) {
    uint k = nacre_threads(d) - (nacre_linear_tid(t, d) & ~31u);
    return k < 32u ? k : 32u;
}
inline uint nacre_shfl(uint v, uint src, uint lanes) {
    (void)lanes;
    return simd_shuffle(v, (ushort)(src & 31u));
}
inline int nacre_shfl(int v, uint src, uint lanes) { return as_type<int>(nacre_shfl(as_type<uint>(v), src, lanes)); }
inline float nacre_shfl(float v, uint src, uint lanes) { return as_type<float>(nacre_shfl(as_type<uint>(v), src, lanes)); }
inline uchar nacre_shfl(uchar v, uint src, uint lanes) { return (uchar)nacre_shfl((uint)v, src, lanes); }
inline char nacre_shfl(char v, uint src, uint lanes) { return (char)nacre_shfl((int)v, src, lanes); }
inline ushort nacre_shfl(ushort v, uint src, uint lanes) { return (ushort)nacre_shfl((uint)v, src, lanes); }
inline short nacre_shfl(short v, uint src, uint lanes) { return (short)nacre_shfl((int)v, src, lanes); }
inline ulong nacre_shfl(ulong v, uint src, uint lanes) {
    uint lo = nacre_shfl((uint)v, src, lanes);
    uint hi = nacre_shfl((uint)(v >> 32), src, lanes);
    return ((ulong)hi << 32) | (ulong)lo;
}
inline long nacre_shfl(long v, uint src, uint lanes) { return as_type<long>(nacre_shfl(as_type<ulong>(v), src, lanes)); }
template <class T>
inline T nacre_shuffle_from(T v, uint src, uint lanes) {
    T r = nacre_shfl(v, src, lanes);
    return src < lanes ? r : v;
}
inline uint nacre_ballot(bool p) { return (uint)(ulong)(simd_vote::vote_t)simd_ballot(p); }
inline uint nacre_block_count(bool p, threadgroup uint *votes, thread uint &seen, uint3 t, uint3 d) {
    uint c = popcount(nacre_ballot(p));
    threadgroup uint *row = votes + 32u * (seen & 1u);
    seen += 1u;
    uint tid = nacre_linear_tid(t, d);
    if ((tid & 31u) == 0u) {
        row[tid >> 5] = c;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    uint total = 0u;
    uint groups = (nacre_threads(d) + 31u) >> 5;
    for (uint g = 0u; g < groups; ++g) {
        total += row[g];
    }
    return total;
}
";

/// The built-in arguments the prelude's functions take.
const INDICES: &str = "nacre_thread_idx, nacre_block_dim";

/// The expression of a collective.
pub(crate) fn spell(a: &CollectiveAccess<'_>) -> Result<CollectiveSpelling, DialectError> {
    let p = || a.operands.first().cloned().unwrap_or_default();
    let lane = format!("nacre_lane({INDICES})");
    Ok(match a.op {
        Collective::LaneId => CollectiveSpelling::with_prelude(lane),
        Collective::BlockVote(op) => {
            let count = format!(
                "nacre_block_count({} != 0, s_votes, nacre_votes_seen, {INDICES})",
                p()
            );
            CollectiveSpelling::with_prelude(match op {
                BlockVote::Count => count,
                BlockVote::And => {
                    format!("(uchar)({count} == nacre_threads(nacre_block_dim))")
                }
                BlockVote::Or => format!("(uchar)({count} != 0u)"),
            })
        }
        _ => {
            let vote = |op, v: &str| match op {
                WarpOp::Ballot => format!("nacre_ballot({v} != 0)"),
                WarpOp::Any => format!("(uchar)simd_any({v} != 0)"),
                _ => format!("(uchar)simd_all({v} != 0)"),
            };
            let lanes = format!("nacre_lanes({INDICES})");
            warp_spelling(a, &lane, &lanes, vote).ok_or(DialectError::Collectives)?
        }
    })
}

/// The definition of `helper` if it is one of the collectives'.
pub(crate) fn definition(d: &MslDialect, helper: Helper) -> Option<String> {
    match helper {
        Helper::Collectives => Some(PRELUDE.to_string()),
        Helper::WarpReduce { op, s } => Some(reduce_definition(d, "inline ", op, s)),
        _ => None,
    }
}
