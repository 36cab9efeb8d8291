//! Symbolic ranges of a kernel's unsigned integer values, as expressions over values the
//! launch decides (the kernel's parameters, `blockDim`, `gridDim` and constants), and the
//! conditions on those values under which the ranges hold.
//!
//! [`Prover::range`] gives a value `v` at a block a pair `(lo, hi)` of [`Node`]s with
//! `lo ≤ v ≤ hi` whenever the block runs, provided every condition the prover collected holds
//! (each is `a ≤ b` between two nodes):
//!
//! | value | `lo` | `hi` | conditions |
//! | --- | --- | --- | --- |
//! | constant `c` | `c` | `c` | |
//! | parameter, `blockDim.d`, `gridDim.d` | itself | itself | |
//! | `threadIdx.d` | 0 | `blockDim.d - 1` | |
//! | `blockIdx.d` | 0 | `gridDim.d - 1` | |
//! | `a + b`, `a * b`, `a << c` | `lo ∘ lo` | `hi ∘ hi` | `hi ∘ hi` fits the type: no wrap |
//! | `a - b` | `lo_a - hi_b` | `hi_a - lo_b` | `hi_b ≤ lo_a`: no wrap |
//! | `a / b` | `lo_a / max(hi_b, 1)` | `hi_a / max(lo_b, 1)` | (`b = 0` traps anyway) |
//! | `a % b` | 0 | `min(hi_a, hi_b - 1)` | `1 ≤ lo_b` |
//! | `a >> c`, `a & b` | `lo >> hi_c`, 0 | `hi >> lo_c`, `min(hi_a, hi_b)` | |
//! | `min(a, b)`, `max(a, b)` | `min`/`max` of the `lo`s | `min`/`max` of the `hi`s | |
//! | `select(c, a, b)`, a join of values | `min` of the `lo`s | `max` of the `hi`s | |
//! | zero-extension | the operand's | the operand's | |
//!
//! One side of a `min` may be unknown (its `hi` is the other side's, its `lo` 0), and a
//! comparison that decides whether the block runs (`if v < n` on every path to it, also
//! through `&&`) bounds `v` by `hi_n - 1`. Nodes are evaluated as `u64` (operands below
//! 2³² by the conditions, so no node of a proof wraps when its conditions hold).

use cranelift_entity::SecondaryMap;
use nacre_ir::analysis::DominatorTree;
use nacre_ir::{
    BinaryOp, Block, CmpOp, Dim, Function, GpuIndex, InstKind, Scalar, Type, UnaryOp, Value,
    ValueDef,
};
use std::collections::{HashMap, HashSet};

/// The most facts (comparisons known to hold) gathered for one block.
const MAX_FACTS: usize = 64;
/// The deepest expression a range is derived through.
const MAX_DEPTH: u32 = 48;

/// Index of a [`Node`] in a [`Prover`]'s list: children always have smaller indices.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub(super) struct NodeId(pub(super) u32);

/// One `u64` expression of a range or condition.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub(super) enum Node {
    /// A constant.
    Const(u64),
    /// A value of the kernel's entry block, zero-extended (a parameter; a pointer as its
    /// address).
    Value(Value),
    /// `blockDim.d` or `gridDim.d`.
    Dim(GpuIndex, Dim),
    /// An operation on two nodes.
    Op(BinaryOp, NodeId, NodeId),
}

/// A comparison known to hold where a block runs: `small < big` (`strict`) or `small ≤ big`.
#[derive(Copy, Clone, Debug)]
struct Fact {
    small: Value,
    big: Value,
    strict: bool,
}

/// The ranges of one kernel's values, the nodes they are made of and the conditions they
/// rest on.
pub(super) struct Prover<'a> {
    f: &'a Function,
    entry: Block,
    dom: &'a DominatorTree,
    /// Each block's predecessors, each once.
    preds: SecondaryMap<Block, Vec<Block>>,
    nodes: Vec<Node>,
    interned: HashMap<Node, NodeId>,
    /// `(a, b)`: `a ≤ b` must hold.
    pub(super) conditions: Vec<(NodeId, NodeId)>,
    /// Ranges at the block being proven (cleared per block); `None` while one is derived.
    memo: HashMap<Value, Option<(NodeId, NodeId)>>,
    /// Values whose range came from their own operation (cleared per block).
    through_op: HashSet<Value>,
    facts: Vec<Fact>,
}

/// The width of `ty` if it is an unsigned integer of at most 32 bits.
fn narrow_unsigned(ty: Type) -> Option<u32> {
    match ty {
        Type::Scalar(s @ (Scalar::U8 | Scalar::U16 | Scalar::U32)) => Some(s.bits()),
        _ => None,
    }
}

impl<'a> Prover<'a> {
    pub(super) fn new(f: &'a Function, entry: Block, dom: &'a DominatorTree) -> Prover<'a> {
        let mut preds = f.predecessors();
        for &b in &f.layout {
            preds[b].dedup();
        }
        Prover {
            f,
            entry,
            dom,
            preds,
            nodes: Vec::new(),
            interned: HashMap::new(),
            conditions: Vec::new(),
            memo: HashMap::new(),
            through_op: HashSet::new(),
            facts: Vec::new(),
        }
    }

    /// The nodes, children before parents.
    pub(super) fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The values whose range was derived through their own operation since the last
    /// [`Prover::enter`] (with its no-wrap conditions, where it has them).
    pub(super) fn derived(&self) -> HashSet<Value> {
        self.through_op.clone()
    }

    pub(super) fn node(&mut self, n: Node) -> NodeId {
        if let Some(&id) = self.interned.get(&n) {
            return id;
        }
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(n);
        self.interned.insert(n, id);
        id
    }

    pub(super) fn konst(&mut self, c: u64) -> NodeId {
        self.node(Node::Const(c))
    }

    pub(super) fn op(&mut self, op: BinaryOp, a: NodeId, b: NodeId) -> NodeId {
        self.node(Node::Op(op, a, b))
    }

    /// Requires `a ≤ b`.
    pub(super) fn require(&mut self, a: NodeId, b: NodeId) {
        self.conditions.push((a, b));
    }

    /// Requires `n` to fit `bits` bits.
    fn fits(&mut self, n: NodeId, bits: u32) {
        let max = self.konst(u64::MAX >> (64 - bits));
        self.require(n, max);
    }

    /// Starts proving at block `at`: the facts that hold there.
    pub(super) fn enter(&mut self, at: Block) {
        self.memo.clear();
        self.through_op.clear();
        self.facts.clear();
        let mut b = at;
        while let Some(parent) = self.dom.idom(b) {
            self.facts_of_edge(b, 0);
            b = parent;
        }
    }

    /// The facts of the branch that alone enters `b`, if one does (and of the edges above it,
    /// for joins of `&&`).
    fn facts_of_edge(&mut self, b: Block, depth: u32) {
        let [p] = self.preds[b][..] else {
            return;
        };
        let Some(t) = self.f.terminator(p) else {
            return;
        };
        if let InstKind::Branch {
            cond,
            ref then_dest,
            ref else_dest,
        } = self.f.insts[t].kind
        {
            if then_dest.block != else_dest.block {
                self.assume(cond, then_dest.block == b, depth);
            }
        }
    }

    /// Records what `cond` being `truth` says.
    fn assume(&mut self, cond: Value, truth: bool, depth: u32) {
        if depth > 8 || self.facts.len() >= MAX_FACTS {
            return;
        }
        match self.f.values[cond].def {
            ValueDef::Result(i) => match self.f.insts[i].kind {
                InstKind::Cmp(op, a, b) => self.compare(op, a, b, truth),
                InstKind::Binary(BinaryOp::And, a, b) if truth => {
                    self.assume(a, true, depth + 1);
                    self.assume(b, true, depth + 1);
                }
                InstKind::Binary(BinaryOp::Or, a, b) if !truth => {
                    self.assume(a, false, depth + 1);
                    self.assume(b, false, depth + 1);
                }
                InstKind::Unary(UnaryOp::Not, a) => self.assume(a, !truth, depth + 1),
                _ => {}
            },
            // A join (`&&`, `||`): the one incoming edge that can bring `truth`, if only one.
            ValueDef::Param(block, n) => {
                let mut feasible = Vec::new();
                for p in self.preds[block].clone() {
                    let Some(t) = self.f.terminator(p) else {
                        return;
                    };
                    for call in self.f.insts[t].kind.successors() {
                        if call.block != block {
                            continue;
                        }
                        let arg = call.args[n as usize];
                        if self.constant_bool(arg) != Some(!truth) {
                            feasible.push((p, arg));
                        }
                    }
                }
                if let [(p, arg)] = feasible[..] {
                    self.assume(arg, truth, depth + 1);
                    let mut b = p;
                    while let Some(parent) = self.dom.idom(b) {
                        self.facts_of_edge(b, depth + 1);
                        b = parent;
                    }
                }
            }
        }
    }

    fn constant_bool(&self, v: Value) -> Option<bool> {
        match self.f.defining_inst(v) {
            Some(InstKind::Const(c)) if c.ty == Type::BOOL => Some(c.bits != 0),
            _ => None,
        }
    }

    /// Records `a op b` being `truth`, for unsigned operands.
    fn compare(&mut self, op: CmpOp, a: Value, b: Value, truth: bool) {
        if narrow_unsigned(self.f.value_type(a)).is_none() {
            return;
        }
        let fact = |small, big, strict| Fact { small, big, strict };
        let facts: &[Fact] = match (op, truth) {
            (CmpOp::Lt, true) | (CmpOp::Ge, false) => &[fact(a, b, true)],
            (CmpOp::Le, true) | (CmpOp::Gt, false) => &[fact(a, b, false)],
            (CmpOp::Gt, true) | (CmpOp::Le, false) => &[fact(b, a, true)],
            (CmpOp::Ge, true) | (CmpOp::Lt, false) => &[fact(b, a, false)],
            (CmpOp::Eq, true) | (CmpOp::Ne, false) => &[fact(a, b, false), fact(b, a, false)],
            _ => &[],
        };
        self.facts.extend_from_slice(facts);
    }

    /// The range of `v` where the block of the last [`Prover::enter`] runs, if one can be
    /// derived (module docs).
    pub(super) fn range(&mut self, v: Value) -> Option<(NodeId, NodeId)> {
        self.range_at(v, 0)
    }

    fn range_at(&mut self, v: Value, depth: u32) -> Option<(NodeId, NodeId)> {
        if depth > MAX_DEPTH {
            return None;
        }
        if let Some(known) = self.memo.get(&v) {
            return *known;
        }
        // A value met again while its own range is derived (a loop) has none.
        self.memo.insert(v, None);
        let bits = narrow_unsigned(self.f.value_type(v));
        let structural = bits.and_then(|bits| self.structural(v, bits, depth));
        if structural.is_some() {
            self.through_op.insert(v);
        }
        let r = self.with_facts(v, structural, depth);
        self.memo.insert(v, r);
        r
    }

    /// Narrows `r` (the range of `v` from its definition) by the facts on `v`.
    fn with_facts(
        &mut self,
        v: Value,
        r: Option<(NodeId, NodeId)>,
        depth: u32,
    ) -> Option<(NodeId, NodeId)> {
        let bits = narrow_unsigned(self.f.value_type(v))?;
        let facts: Vec<Fact> = self
            .facts
            .iter()
            .copied()
            .filter(|f| f.small == v)
            .collect();
        let mut r = r;
        for fact in facts {
            let Some((_, big_hi)) = self.range_at(fact.big, depth + 1) else {
                continue;
            };
            let hi = if fact.strict {
                let one = self.konst(1);
                // `v < big` holds, so `big ≥ 1`: `hi_big - 1` cannot wrap where the block
                // runs; required anyway, so that no node of a proof wraps.
                self.require(one, big_hi);
                self.op(BinaryOp::Sub, big_hi, one)
            } else {
                big_hi
            };
            self.fits(hi, bits);
            r = Some(match r {
                None => (self.konst(0), hi),
                Some((lo, old)) => (lo, self.op(BinaryOp::Min, old, hi)),
            });
        }
        r
    }

    /// The range of `v` (of an unsigned type of `bits` bits) from its definition.
    fn structural(&mut self, v: Value, bits: u32, depth: u32) -> Option<(NodeId, NodeId)> {
        let d = depth + 1;
        match self.f.values[v].def {
            ValueDef::Param(block, _) if block == self.entry => {
                let n = self.node(Node::Value(v));
                Some((n, n))
            }
            ValueDef::Param(block, n) => self.join(block, n as usize, d),
            ValueDef::Result(i) => match self.f.insts[i].kind {
                InstKind::Const(c) => {
                    let n = self.konst(c.bits as u64);
                    Some((n, n))
                }
                InstKind::GpuIndex(index, dim) => Some(self.gpu_index(index, dim)),
                InstKind::Binary(op, a, b) => self.binary(op, a, b, bits, d),
                InstKind::Select(_, a, b) => {
                    let (la, ha) = self.range_at(a, d)?;
                    let (lb, hb) = self.range_at(b, d)?;
                    Some((
                        self.op(BinaryOp::Min, la, lb),
                        self.op(BinaryOp::Max, ha, hb),
                    ))
                }
                // Zero-extension of a narrower unsigned value.
                InstKind::Cast(x) => {
                    let from = narrow_unsigned(self.f.value_type(x))?;
                    (from <= bits).then_some(())?;
                    self.range_at(x, d)
                }
                _ => None,
            },
        }
    }

    fn gpu_index(&mut self, index: GpuIndex, dim: Dim) -> (NodeId, NodeId) {
        let zero = self.konst(0);
        let one = self.konst(1);
        match index {
            GpuIndex::ThreadIdx => {
                let n = self.node(Node::Dim(GpuIndex::BlockDim, dim));
                (zero, self.op(BinaryOp::Sub, n, one))
            }
            GpuIndex::BlockIdx => {
                let n = self.node(Node::Dim(GpuIndex::GridDim, dim));
                (zero, self.op(BinaryOp::Sub, n, one))
            }
            GpuIndex::BlockDim | GpuIndex::GridDim => {
                let n = self.node(Node::Dim(index, dim));
                (n, n)
            }
        }
    }

    /// The range of a block parameter that is not a loop's: the join of its incoming values.
    fn join(&mut self, block: Block, n: usize, d: u32) -> Option<(NodeId, NodeId)> {
        let mut joined: Option<(NodeId, NodeId)> = None;
        for p in self.preds[block].clone() {
            let t = self.f.terminator(p)?;
            for call in self.f.insts[t].kind.successors() {
                if call.block != block {
                    continue;
                }
                let (lo, hi) = self.range_at(call.args[n], d)?;
                joined = Some(match joined {
                    None => (lo, hi),
                    Some((l, h)) => (self.op(BinaryOp::Min, l, lo), self.op(BinaryOp::Max, h, hi)),
                });
            }
        }
        joined
    }

    fn binary(
        &mut self,
        op: BinaryOp,
        a: Value,
        b: Value,
        bits: u32,
        d: u32,
    ) -> Option<(NodeId, NodeId)> {
        use BinaryOp::*;
        // `min` is bounded by either side; the other may be unknown.
        if op == Min {
            let ra = self.range_at(a, d);
            let rb = self.range_at(b, d);
            return match (ra, rb) {
                (Some((la, ha)), Some((lb, hb))) => {
                    Some((self.op(Min, la, lb), self.op(Min, ha, hb)))
                }
                (Some((_, h)), None) | (None, Some((_, h))) => Some((self.konst(0), h)),
                (None, None) => None,
            };
        }
        let (la, ha) = self.range_at(a, d)?;
        let (lb, hb) = self.range_at(b, d)?;
        let one = self.konst(1);
        let r = match op {
            Add | Mul | Shl => {
                let hi = self.op(op, ha, hb);
                self.fits(hi, bits);
                if op == Shl {
                    // Shifts by the type's width or more are masked by the target: refuse them.
                    let limit = self.konst(u64::from(bits) - 1);
                    self.require(hb, limit);
                }
                (self.op(op, la, lb), hi)
            }
            Sub => {
                self.require(hb, la);
                (self.op(Sub, la, hb), self.op(Sub, ha, lb))
            }
            Div => {
                let lo_b = self.op(Max, lb, one);
                let hi_b = self.op(Max, hb, one);
                (self.op(Div, la, hi_b), self.op(Div, ha, lo_b))
            }
            Rem => {
                self.require(one, lb);
                let below = self.op(Sub, hb, one);
                (self.konst(0), self.op(Min, ha, below))
            }
            Shr => {
                let limit = self.konst(u64::from(bits) - 1);
                self.require(hb, limit);
                (self.op(Shr, la, hb), self.op(Shr, ha, lb))
            }
            And => (self.konst(0), self.op(Min, ha, hb)),
            Max => (self.op(Max, la, lb), self.op(Max, ha, hb)),
            _ => return None,
        };
        Some(r)
    }
}
