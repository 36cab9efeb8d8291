//! Warp collectives and voting barriers in CUDA C: the `*_sync` intrinsics with the mask of the
//! warp's existing lanes (a partial warp names only those), through the prelude below, and
//! `__syncthreads_count/and/or`. Shuffles and reductions follow the shared spelling of
//! [`nacre_c::collective`]; 32-bit integer reductions use `__reduce_*_sync` on sm_80 and later
//! (the same result, since integer addition, minimum and maximum do not depend on the order).

use nacre_c::collective::{
    reduce_definition, warp_spelling, Collective, CollectiveAccess, CollectiveSpelling,
};
use nacre_c::helpers::Helper;
use nacre_c::{Dialect, DialectError};
use nacre_ir::{BlockVote, Scalar, WarpOp};

/// The prelude of collectives ([`Helper::Collectives`]): the linear thread index, the lane, the
/// number of existing lanes of the warp and its mask, and the shuffles.
pub(super) const PRELUDE: &str = "\
static __device__ __forceinline__ uint32_t nacre_linear_tid() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
static __device__ __forceinline__ uint32_t nacre_lane() { return nacre_linear_tid() & 31u; }
static __device__ __forceinline__ uint32_t nacre_lanes() {
    uint32_t k = blockDim.x * blockDim.y * blockDim.z - (nacre_linear_tid() & ~31u);
    return k < 32u ? k : 32u;
}
static __device__ __forceinline__ uint32_t nacre_lane_mask(uint32_t lanes) {
    return lanes >= 32u ? 0xffffffffu : (1u << lanes) - 1u;
}
template <class T>
static __device__ __forceinline__ T nacre_shfl(T v, uint32_t src, uint32_t lanes) {
    return (T)__shfl_sync(nacre_lane_mask(lanes), v, (int)(src & 31u));
}
template <class T>
static __device__ __forceinline__ T nacre_shuffle_from(T v, uint32_t src, uint32_t lanes) {
    T r = nacre_shfl(v, src, lanes);
    return src < lanes ? r : v;
}
";

/// The expression of a collective.
pub(super) fn spell(
    d: &impl Dialect,
    a: &CollectiveAccess<'_>,
) -> Result<CollectiveSpelling, DialectError> {
    let p = || a.operands.first().cloned().unwrap_or_default();
    let plain = |expr: String| CollectiveSpelling {
        expr,
        helpers: Vec::new(),
    };
    Ok(match a.op {
        Collective::LaneId => CollectiveSpelling::with_prelude("nacre_lane()".into()),
        Collective::BlockVote(BlockVote::Count) => {
            plain(format!("(uint32_t)__syncthreads_count({})", p()))
        }
        Collective::BlockVote(BlockVote::And) => {
            plain(format!("(uint8_t)(__syncthreads_and({}) != 0)", p()))
        }
        Collective::BlockVote(BlockVote::Or) => {
            plain(format!("(uint8_t)(__syncthreads_or({}) != 0)", p()))
        }
        _ => {
            let vote = |op, v: &str| {
                let mask = "nacre_lane_mask(nacre_lanes())";
                match op {
                    WarpOp::Ballot => format!("(uint32_t)__ballot_sync({mask}, {v})"),
                    WarpOp::Any => format!("(uint8_t)(__any_sync({mask}, {v}) != 0)"),
                    _ => format!("(uint8_t)(__all_sync({mask}, {v}) != 0)"),
                }
            };
            let _ = d;
            warp_spelling(a, "nacre_lane()", "nacre_lanes()", vote)
                .ok_or(DialectError::Collectives)?
        }
    })
}

/// The definition of a warp reduction: the shared butterfly, or for 32-bit integers on sm_80
/// and later `__reduce_add/min/max_sync` over the existing lanes.
pub(super) fn reduce_helper(d: &impl Dialect, qualifier: &str, op: WarpOp, s: Scalar) -> String {
    let generic = reduce_definition(d, qualifier, op, s);
    let (redux, arg) = match (op, s) {
        (WarpOp::Sum, Scalar::I32 | Scalar::U32) => ("__reduce_add_sync", "uint32_t"),
        (WarpOp::Min, Scalar::I32) => ("__reduce_min_sync", "int32_t"),
        (WarpOp::Max, Scalar::I32) => ("__reduce_max_sync", "int32_t"),
        (WarpOp::Min, Scalar::U32) => ("__reduce_min_sync", "uint32_t"),
        (WarpOp::Max, Scalar::U32) => ("__reduce_max_sync", "uint32_t"),
        _ => return generic,
    };
    let Some(open) = generic.find("{\n") else {
        return generic;
    };
    let t = d.scalar_type(s);
    let (head, body) = generic.split_at(open + 2);
    let body = body.trim_end().trim_end_matches('}');
    format!(
        "{head}#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n    (void)lane;\n    return ({t}){redux}(nacre_lane_mask(lanes), ({arg})v);\n#else\n{body}#endif\n}}\n"
    )
}

/// Whether `helper` is one this module defines.
pub(super) fn definition(d: &impl Dialect, qualifier: &str, helper: Helper) -> Option<String> {
    match helper {
        Helper::Collectives => Some(PRELUDE.to_string()),
        Helper::WarpReduce { op, s } => Some(reduce_helper(d, qualifier, op, s)),
        _ => None,
    }
}
