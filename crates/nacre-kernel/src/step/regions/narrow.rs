//! Narrowed thread loops (see "Narrowed thread loops" in the docs of `regions`): the test
//! whether a loop's entry only sends the threads on one side of `threadIdx.x OP u` on, and
//! the range of `threadIdx.x` the loop then runs over.
//!
//! The test may also be on `x + r` for `r = threadIdx.y * cy + threadIdx.z * cz + k` with
//! constants that keep it from wrapping in `u32` whatever the block (at most 1024 threads a
//! side): the tile load's `ty * 16 + tx < 324`. Each row of threads (one `y` and `z`) then
//! has its own range, `x OP u - r`, computed where the row starts; a row whose range is
//! empty is skipped. Such a loop must stop at one barrier only (the skipped threads' and the
//! kept ones'), since a row skipped whole reaches no stop.

use super::carry::Carried;
use super::parts::Parts;
use super::uniformity::Divergence;
use super::Input;
use nacre_ir::transform::Copied;
use nacre_ir::FunctionBuilder;
use nacre_ir::{BinaryOp, Block, BlockCall, CmpOp, Function, InstKind, Type, Value, ValueDef};
use std::collections::HashMap;

/// How a thread loop's range of `threadIdx.x` is narrowed: keep the threads with `x + r OP
/// u` (`r` 0, or per row: [`RowOffset`]).
pub(super) struct Narrowing {
    op: CmpOp,
    /// `r`, where the test is per row.
    row: Option<RowOffset>,
    /// The bound, as a value available in the loop's entry block (or a constant to emit
    /// there).
    bound: Bound,
    /// The branch's side the kept threads take.
    keep: BlockCall,
    /// The stop the other threads go straight to (0: `return`).
    pub(super) stop: usize,
}

/// `r = y * y_coef + z * z_coef + k` (see the module docs).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct RowOffset {
    y: u64,
    z: u64,
    k: u64,
}

/// The most threads along a side of a block (the runtimes' limit).
const MAX_SIDE: u64 = 1024;

#[derive(Copy, Clone)]
enum Bound {
    /// A value defined outside the loop: uniform, live into the loop (or of the entry).
    Value(Value),
    /// A `u32` constant.
    Const(u64),
}

/// `a OP b` as `b OP' a`.
fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        other => other,
    }
}

/// `!(a OP b)` as `a OP' b` (integers).
fn negate(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Ge,
        CmpOp::Le => CmpOp::Gt,
        CmpOp::Gt => CmpOp::Le,
        CmpOp::Ge => CmpOp::Lt,
        CmpOp::Eq => CmpOp::Ne,
        CmpOp::Ne => CmpOp::Eq,
    }
}

/// The narrowing of the loop entered at `e` with `body` (see the module docs), if it
/// applies.
pub(super) fn narrowing(
    f: &Function,
    parts: &Parts,
    carried: &Carried,
    div: &Divergence,
    body: &[Block],
    e: Block,
    input: &Input<'_>,
) -> Option<Narrowing> {
    let c = Candidate {
        f,
        parts,
        carried,
        div,
        body,
        e,
    };
    let (op, row, other, then_dest, else_dest) = c.compare_x(input)?;
    let bound = c.bound(input, other)?;
    // The side that goes straight to a stop.
    let (op, keep, stop) = if let Some(k) = c.stop_of(else_dest) {
        (op, then_dest.clone(), k)
    } else if let Some(k) = c.stop_of(then_dest) {
        (negate(op), else_dest.clone(), k)
    } else {
        return None;
    };
    if op == CmpOp::Ne {
        return None;
    }
    Some(Narrowing {
        op,
        row,
        bound,
        keep,
        stop,
    })
}

/// A thread loop examined for narrowing: the one entered at `e` with `body`.
struct Candidate<'a> {
    f: &'a Function,
    parts: &'a Parts,
    carried: &'a Carried,
    div: &'a Divergence,
    body: &'a [Block],
    e: Block,
}

impl<'a> Candidate<'a> {
    /// The entry's branch on `x + r OP other`, as `(OP, r, other, then, else)` (`r`: `None`
    /// for 0): the entry must end in a branch on such a comparison and compute nothing with
    /// effects.
    #[allow(clippy::type_complexity)]
    fn compare_x(
        &self,
        input: &Input<'_>,
    ) -> Option<(
        CmpOp,
        Option<RowOffset>,
        Value,
        &'a BlockCall,
        &'a BlockCall,
    )> {
        let f = self.f;
        let insts = &f.blocks[self.e].insts;
        let (&term, rest) = insts.split_last()?;
        let InstKind::Branch {
            cond,
            then_dest,
            else_dest,
        } = &f.insts[term].kind
        else {
            return None;
        };
        // Nothing with effects before the branch: skipped threads lose nothing.
        if rest
            .iter()
            .any(|&i| !f.insts[i].kind.is_pure(|v| f.values[v].ty))
        {
            return None;
        }
        let cmp = rest
            .iter()
            .copied()
            .find(|&i| f.insts[i].result == Some(*cond))?;
        let InstKind::Cmp(op, a, bb) = f.insts[cmp].kind else {
            return None;
        };
        let (op, r, other) = if let Some(r) = row_linear(f, input, a) {
            (op, r, bb)
        } else if let Some(r) = row_linear(f, input, bb) {
            (flip(op), r, a)
        } else {
            return None;
        };
        let r = (r != RowOffset { y: 0, z: 0, k: 0 }).then_some(r);
        Some((op, r, other, then_dest, else_dest))
    }

    /// Whether `v` is defined in the loop's body.
    fn defined_in_body(&self, v: Value) -> bool {
        let f = self.f;
        match f.values[v].def {
            ValueDef::Result(i) => self.body.iter().any(|&p| f.blocks[p].insts.contains(&i)),
            ValueDef::Param(blk, _) => self.body.contains(&blk),
        }
    }

    /// The bound `other`: a value of the entry, or one defined before the loop and uniform,
    /// or a constant.
    fn bound(&self, input: &Input<'_>, other: Value) -> Option<Bound> {
        let available = input.uniform.contains(&other)
            || (!self.defined_in_body(other) && self.div.uniform(other));
        if available {
            return Some(Bound::Value(other));
        }
        let ValueDef::Result(i) = self.f.values[other].def else {
            return None;
        };
        match self.f.insts[i].kind {
            InstKind::Const(c) => u64::try_from(c.bits).ok().map(Bound::Const),
            _ => None,
        }
    }

    /// The stop (0: `return`) that the side `call` goes straight to, with nothing
    /// per-thread to save, if it does.
    fn stop_of(&self, call: &BlockCall) -> Option<usize> {
        let (f, parts) = (self.f, self.parts);
        let p = call.block;
        if p == self.e {
            return None;
        }
        let insts = &f.blocks[p].insts;
        let k = match (insts.as_slice(), parts.waits.get(&p)) {
            ([], Some(&k)) => k,
            ([only], None) if matches!(f.insts[*only].kind, InstKind::Return(_)) => 0,
            _ => return None,
        };
        if k > 0 {
            let after = self.carried.live_at(parts.resumes[k - 1]);
            // Values recomputed from the thread's indices need no saving.
            if after.iter().any(|&v| {
                !self.carried.recomputes(v) && (!self.div.uniform(v) || self.defined_in_body(v))
            }) {
                return None;
            }
        }
        Some(k)
    }
}

/// `v` as `x + r` (see [`RowOffset`]), where it is that with constants that keep it from
/// wrapping: a sum of `threadIdx.x` once, `threadIdx.y` and `threadIdx.z` times constants (by
/// multiplication or shift) and constants, in `u32`.
fn row_linear(f: &Function, input: &Input<'_>, v: Value) -> Option<RowOffset> {
    let [x, y, z] = input.xyz;
    let mut terms = [0u64; 4];
    add_terms(f, [x, y, z], v, 1, &mut terms, 0)?;
    let [cx, cy, cz, k] = terms;
    let max = (MAX_SIDE - 1) * (1 + cy + cz) + k;
    (f.value_type(v) == Type::U32 && cx == 1 && max <= u64::from(u32::MAX)).then_some(RowOffset {
        y: cy,
        z: cz,
        k,
    })
}

/// Adds `scale` times `v`'s terms (x, y, z coefficients and the constant) to `terms`;
/// `None` where `v` is not such a sum (or grows too large to keep from wrapping).
fn add_terms(
    f: &Function,
    xyz: [Value; 3],
    v: Value,
    scale: u64,
    terms: &mut [u64; 4],
    depth: u32,
) -> Option<()> {
    const LIMIT: u64 = 1 << 32;
    if depth > 16 || scale >= LIMIT {
        return None;
    }
    if let Some(d) = xyz.iter().position(|&t| t == v) {
        terms[d] += scale;
        return (terms[d] < LIMIT).then_some(());
    }
    let constant = |w: Value| match f.defining_inst(w) {
        Some(InstKind::Const(c)) => u64::try_from(c.bits).ok(),
        _ => None,
    };
    if let Some(c) = constant(v) {
        terms[3] += c.checked_mul(scale).filter(|&t| t < LIMIT)?;
        return (terms[3] < LIMIT).then_some(());
    }
    match *f.defining_inst(v)? {
        InstKind::Binary(BinaryOp::Add, a, b) => {
            add_terms(f, xyz, a, scale, terms, depth + 1)?;
            add_terms(f, xyz, b, scale, terms, depth + 1)
        }
        InstKind::Binary(BinaryOp::Mul, a, b) => match (constant(a), constant(b)) {
            (_, Some(c)) => add_terms(f, xyz, a, scale.checked_mul(c)?, terms, depth + 1),
            (Some(c), _) => add_terms(f, xyz, b, scale.checked_mul(c)?, terms, depth + 1),
            _ => None,
        },
        InstKind::Binary(BinaryOp::Shl, a, b) => {
            let s = constant(b).filter(|&s| s < 32)?;
            add_terms(f, xyz, a, scale.checked_mul(1 << s)?, terms, depth + 1)
        }
        _ => None,
    }
}

impl Narrowing {
    /// Whether the range is per row (the test is on `x + r`, `r` not 0).
    pub(super) fn per_row(&self) -> bool {
        self.row.is_some()
    }

    /// The stop the skipped threads go to (0: `return`).
    pub(super) fn stop(&self) -> usize {
        self.stop
    }

    /// Emits the range `lo..hi` of `threadIdx.x` the loop runs over, given `blockDim.x`
    /// (`bdx`), the row's `y` and `z` (for a test per row), and the entry block's parameters
    /// for the uniform values live into the loop (original → parameter): `x + r OP u` for `x`
    /// below `bdx`, computed in `u64` so that nothing wraps.
    pub(super) fn range(
        &self,
        em: &mut FunctionBuilder<'_>,
        uniform_in: &HashMap<Value, Value>,
        bdx: Value,
        [y, z]: [Value; 2],
    ) -> (Value, Value) {
        let u = match self.bound {
            Bound::Value(v) => uniform_in.get(&v).copied().unwrap_or(v),
            Bound::Const(bits) => em.const_u32(bits as u32),
        };
        let wide = |em: &mut FunctionBuilder<'_>, v: Value| em.cast(v, Type::U64);
        let u = wide(em, u);
        let r = match self.row {
            None => em.const_u64(0),
            Some(o) => {
                let (cy, cz, k) = (em.const_u64(o.y), em.const_u64(o.z), em.const_u64(o.k));
                let (y, z) = (wide(em, y), wide(em, z));
                let yy = em.binary(BinaryOp::Mul, y, cy);
                let zz = em.binary(BinaryOp::Mul, z, cz);
                let s = em.binary(BinaryOp::Add, yy, zz);
                em.binary(BinaryOp::Add, s, k)
            }
        };
        let bdx64 = wide(em, bdx);
        let (zero, one) = (em.const_u64(0), em.const_u64(1));
        // `x OP d` for d = u - r; below: u < r, every x is above d.
        let below = em.cmp(CmpOp::Lt, u, r);
        let d = em.binary(BinaryOp::Sub, u, r);
        let d = em.select(below, zero, d);
        let d1 = em.binary(BinaryOp::Add, d, one);
        let min = |em: &mut FunctionBuilder<'_>, a: Value| {
            let lt = em.cmp(CmpOp::Lt, a, bdx64);
            em.select(lt, a, bdx64)
        };
        let (d_min, d1_min) = (min(em, d), min(em, d1));
        let (lo, hi) = match self.op {
            CmpOp::Lt => (zero, em.select(below, zero, d_min)),
            CmpOp::Le => (zero, em.select(below, zero, d1_min)),
            CmpOp::Gt => (em.select(below, zero, d1_min), bdx64),
            CmpOp::Ge => (em.select(below, zero, d_min), bdx64),
            _ => (
                em.select(below, bdx64, d_min),
                em.select(below, bdx64, d1_min),
            ),
        };
        (em.cast(lo, Type::U32), em.cast(hi, Type::U32))
    }

    /// The jump that replaces the branch of the entry's copy: the kept side, in the copy
    /// (`copy`, with threadIdx replaced per `seed`). The kept threads skip the test.
    pub(super) fn kept(&self, copy: &Copied, seed: &HashMap<Value, Value>) -> BlockCall {
        let mut keep = self.keep.clone();
        if let Some(&kb) = copy.blocks.get(&keep.block) {
            keep.block = kb;
        }
        keep.args = keep
            .args
            .iter()
            .map(|a| seed.get(a).copied().unwrap_or(*a))
            .collect();
        keep
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_flip_and_negate() {
        for op in CmpOp::ALL {
            for (a, b) in [(1u32, 2u32), (2, 2), (3, 2)] {
                let holds = |op: CmpOp, a: u32, b: u32| match op {
                    CmpOp::Eq => a == b,
                    CmpOp::Ne => a != b,
                    CmpOp::Lt => a < b,
                    CmpOp::Le => a <= b,
                    CmpOp::Gt => a > b,
                    CmpOp::Ge => a >= b,
                };
                assert_eq!(holds(flip(op), b, a), holds(op, a, b), "{op:?}");
                assert_eq!(holds(negate(op), a, b), !holds(op, a, b), "{op:?}");
            }
        }
    }
}
