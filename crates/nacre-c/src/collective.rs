//! Collective operations (warp shuffles, reductions and votes, voting barriers: see
//! [`nacre_ir::collective`]) as the C family prints them: the printer hands each one to its
//! dialect ([`crate::Dialect::collective`]) as a [`CollectiveAccess`] and writes the
//! [`CollectiveSpelling`] it gets back. A dialect usually spells them as calls of functions of
//! its own prelude ([`crate::helpers::Helper::Collectives`]), which gives partial warps and
//! float reductions the meaning the IR defines on every target.

use crate::dialect::Dialect;
use crate::helpers::{unsigned_of, Helper};
use nacre_ir::{BlockVote, Scalar, Shuffle, WarpOp};

/// Which collective operation.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Collective {
    /// The thread's lane ([`nacre_ir::InstKind::LaneId`]).
    LaneId,
    /// A shuffle ([`nacre_ir::InstKind::Shuffle`]): operands value and lane.
    Shuffle(Shuffle),
    /// A warp reduction or vote ([`nacre_ir::InstKind::Warp`]): one operand.
    Warp(WarpOp),
    /// A voting barrier ([`nacre_ir::InstKind::BlockVote`]): one operand.
    BlockVote(BlockVote),
}

/// A collective operation to spell.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct CollectiveAccess<'a> {
    /// The operation.
    pub op: Collective,
    /// The type of its first operand (`u32` for [`Collective::LaneId`]).
    pub elem: Scalar,
    /// The operands, as C expressions.
    pub operands: &'a [String],
}

/// How a dialect spells a collective operation.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct CollectiveSpelling {
    /// The expression of the result.
    pub expr: String,
    /// The helpers it calls, which the printer defines.
    pub helpers: Vec<Helper>,
}

impl CollectiveSpelling {
    /// `expr`, calling the dialect's prelude of collectives.
    pub fn with_prelude(expr: String) -> CollectiveSpelling {
        CollectiveSpelling {
            expr,
            helpers: vec![Helper::Collectives],
        }
    }
}

/// The helpers a [`Helper::WarpReduce`] calls: the prelude's shuffle, and Rust's float `min`
/// or `max`.
pub fn reduce_uses(op: WarpOp, s: Scalar) -> &'static [Helper] {
    use Helper::{Collectives as C, Max, Min};
    match (op, s) {
        (WarpOp::Min, Scalar::F32) => &[C, Min(Scalar::F32)],
        (WarpOp::Min, Scalar::F64) => &[C, Min(Scalar::F64)],
        (WarpOp::Max, Scalar::F32) => &[C, Max(Scalar::F32)],
        (WarpOp::Max, Scalar::F64) => &[C, Max(Scalar::F64)],
        _ => &[C],
    }
}

/// The C expression of the identity of reduction `op` on `s` (see [`WarpOp::identity`]).
fn identity(d: &(impl Dialect + ?Sized), op: WarpOp, s: Scalar) -> String {
    let t = d.scalar_type(s);
    let limit = |m: &str| {
        let u = if s.is_signed_int() { "" } else { "U" };
        format!("({t}){u}INT{}_{m}", s.bits())
    };
    match (op, s) {
        (WarpOp::Sum, Scalar::F32) => "-0.0f".into(),
        (WarpOp::Sum, Scalar::F64) => "-0.0".into(),
        (WarpOp::Min, Scalar::F32 | Scalar::F64) => format!("({t})INFINITY"),
        (WarpOp::Max, Scalar::F32 | Scalar::F64) => format!("-({t})INFINITY"),
        (WarpOp::Min, _) => limit("MAX"),
        (WarpOp::Max, _) if s.is_signed_int() => limit("MIN"),
        _ => format!("({t})0"),
    }
}

/// The C expression combining `a` and `b` with reduction `op` on `s`.
fn combine(d: &(impl Dialect + ?Sized), op: WarpOp, s: Scalar, a: &str, b: &str) -> String {
    let t = d.scalar_type(s);
    match (op, s.is_float()) {
        (WarpOp::Sum, true) => format!("{a} + {b}"),
        (WarpOp::Sum, false) => {
            let u = d.scalar_type(unsigned_of(s));
            format!("({t})(({u}){a} + ({u}){b})")
        }
        (WarpOp::Min, true) => format!("{}({a}, {b})", Helper::Min(s).name()),
        (WarpOp::Max, true) => format!("{}({a}, {b})", Helper::Max(s).name()),
        (WarpOp::Min, false) => format!("{b} < {a} ? {b} : {a}"),
        _ => format!("{b} > {a} ? {b} : {a}"),
    }
}

/// The definition of [`Helper::WarpReduce`]: `t name(t v, u32 lane, u32 lanes)` over the warp
/// of which `lanes` lanes exist, in the butterfly order of [`nacre_ir::collective`] (a partner
/// lane that does not exist counts as the identity); in a partial warp every lane then takes
/// lane 0's result, which is the one the IR defines. It calls the prelude's
/// `nacre_shfl(v, src, lanes)`, which every lane of the warp must reach.
pub fn reduce_definition(
    d: &(impl Dialect + ?Sized),
    qualifier: &str,
    op: WarpOp,
    s: Scalar,
) -> String {
    let name = Helper::WarpReduce { op, s }.name();
    let (t, u32t) = (d.scalar_type(s), d.scalar_type(Scalar::U32));
    let id = identity(d, op, s);
    let mut body = String::new();
    for m in [16, 8, 4, 2, 1] {
        let c = combine(d, op, s, "v", "o");
        body.push_str(&format!(
            "    {{\n        {u32t} p = lane ^ {m}u;\n        {t} o = nacre_shfl(v, p, lanes);\n        o = p < lanes ? o : {id};\n        v = {c};\n    }}\n"
        ));
    }
    format!(
        "{qualifier}{t} {name}({t} v, {u32t} lane, {u32t} lanes) {{\n{body}    if (lanes < 32u) v = nacre_shfl(v, 0u, lanes);\n    return v;\n}}\n"
    )
}

/// The source lane of shuffle `op` with operand `x` in lane `lane` (C expressions of `u32`s):
/// a lane number, or 32 for none (see [`Shuffle::source`]).
pub fn source_lane(op: Shuffle, lane: &str, x: &str) -> String {
    match op {
        Shuffle::Index => format!("({x}) & 31u"),
        Shuffle::Up => format!("({x}) <= {lane} ? {lane} - ({x}) : 32u"),
        Shuffle::Down => format!("({x}) < 32u - {lane} ? {lane} + ({x}) : 32u"),
        Shuffle::Xor => format!("{lane} ^ ({x})"),
    }
}

/// The spelling of a warp collective for a dialect whose prelude defines
/// `nacre_shuffle_from(v, src, lanes)` (the source lane's value, or `v` when `src` is not below
/// `lanes`) and whose lane and existing-lane count read as `lane` and `lanes`; `vote` spells
/// ballots and votes. Block votes and the lane index are the dialect's own.
pub fn warp_spelling(
    a: &CollectiveAccess<'_>,
    lane: &str,
    lanes: &str,
    vote: impl Fn(WarpOp, &str) -> String,
) -> Option<CollectiveSpelling> {
    let v = a.operands.first()?;
    Some(match a.op {
        Collective::Shuffle(op) => {
            let x = a.operands.get(1)?;
            let src = source_lane(op, lane, x);
            CollectiveSpelling::with_prelude(format!("nacre_shuffle_from({v}, {src}, {lanes})"))
        }
        Collective::Warp(op) if op.combine().is_some() => {
            let h = Helper::WarpReduce { op, s: a.elem };
            CollectiveSpelling {
                expr: format!("{}({v}, {lane}, {lanes})", h.name()),
                helpers: vec![Helper::Collectives, h],
            }
        }
        Collective::Warp(op) => CollectiveSpelling::with_prelude(vote(op, v)),
        Collective::LaneId | Collective::BlockVote(_) => return None,
    })
}
