//! Narrowed thread loops (see "Narrowed thread loops" in the docs of `regions`): the test
//! whether a loop's entry only sends the threads on one side of `threadIdx.x OP u` on, and
//! the range of `threadIdx.x` the loop then runs over.

use super::carry::Carried;
use super::parts::Parts;
use super::uniformity::Divergence;
use super::Input;
use nacre_ir::transform::Copied;
use nacre_ir::FunctionBuilder;
use nacre_ir::{BinaryOp, Block, BlockCall, CmpOp, Function, InstKind, Value, ValueDef};
use std::collections::HashMap;

/// How a thread loop's range of `threadIdx.x` is narrowed: keep the threads with `x OP u`.
pub(super) struct Narrowing {
    op: CmpOp,
    /// The bound, as a value available in the loop's entry block (or a constant to emit
    /// there).
    bound: Bound,
    /// The branch's side the kept threads take.
    keep: BlockCall,
    /// The stop the other threads go straight to (0: `return`).
    pub(super) stop: usize,
}

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
    let (op, other, then_dest, else_dest) = c.compare_x(input.xyz[0])?;
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
    /// The entry's branch on `x OP other`, as `(OP, other, then, else)`: the entry must end
    /// in a branch on a comparison with `x` and compute nothing with effects.
    fn compare_x(&self, x: Value) -> Option<(CmpOp, Value, &'a BlockCall, &'a BlockCall)> {
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
        let (op, other) = if a == x {
            (op, bb)
        } else if bb == x {
            (flip(op), a)
        } else {
            return None;
        };
        Some((op, other, then_dest, else_dest))
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

impl Narrowing {
    /// Emits the range `lo..hi` of `threadIdx.x` the loop runs over, given `blockDim.x`
    /// (`bdx`), the constants 0 and 1, and the entry block's parameters for the uniform
    /// values live into the loop (original → parameter).
    pub(super) fn range(
        &self,
        em: &mut FunctionBuilder<'_>,
        uniform_in: &HashMap<Value, Value>,
        bdx: Value,
        [zero, one]: [Value; 2],
    ) -> (Value, Value) {
        let u = match self.bound {
            Bound::Value(v) => uniform_in.get(&v).copied().unwrap_or(v),
            Bound::Const(bits) => em.const_u32(bits as u32),
        };
        // min(u, bdx) and min(u + 1, bdx), without wrapping.
        let below = em.cmp(CmpOp::Lt, u, bdx);
        let u_min = em.select(below, u, bdx);
        let u1 = em.binary(BinaryOp::Add, u, one);
        let u1_min = em.select(below, u1, bdx);
        match self.op {
            CmpOp::Lt => (zero, u_min),
            CmpOp::Le => (zero, u1_min),
            CmpOp::Gt => (u1_min, bdx),
            CmpOp::Ge => (u_min, bdx),
            _ => (u_min, u1_min),
        }
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
