//! Proven indices of a check-free body recomputed in `u64`.
//!
//! The proof of an access `p[i]` ([`super::symbolic`]) bounds every operation it derives `i`
//! through and requires each bound to fit the operation's type: where the check-free body
//! runs, none of them wraps. The same operations on the zero-extended operands in `u64` then
//! give the same value, and an index like `y * w + bx + x` becomes one a C compiler can
//! follow as `threadIdx.x` advances (a `u32` sum may wrap, which keeps it from vectorising).
//!
//! [`index`] clones the derivation of `i` in `u64`, each operation right after its original,
//! and makes the access use the clone; operands whose range was not derived (one side of a
//! `min`) and the leaves (parameters, thread indices, loads) enter zero-extended.

use nacre_ir::{
    BinaryOp, Block, Function, FunctionBuilder, GpuIndex, Inst, InstKind, Type, Value, ValueDef,
};
use std::collections::{HashMap, HashSet};

/// Rewrites the `elem_ptr` instruction `access` of the check-free body to index with the
/// `u64` clone of its index (`derived`: the values whose ranges its proof derived). Records
/// each clone it makes in `clones` (clone → original: equal where the body runs).
pub(super) fn index(
    f: &mut Function,
    access: Inst,
    derived: &HashSet<Value>,
    clones: &mut HashMap<Value, Value>,
) {
    let InstKind::ElemPtr(ptr, index) = f.insts[access].kind else {
        return;
    };
    if !matches!(f.value_type(index), Type::U8 | Type::U16 | Type::U32) {
        return;
    }
    if gathers(f, index, 0) != Some(false) {
        return;
    }
    // An index of the thread's indices alone, by sums and constant multiples, cannot wrap
    // whatever its proof derived (the shared tile's `ty * 16 + tx` under `if p < 324`).
    let mut within = HashSet::new();
    let derived = match thread_sum(f, index, 0, &mut within) {
        Some(max) if max <= u64::from(u32::MAX) => &derived.union(&within).copied().collect(),
        _ => derived,
    };
    let mut w = Widen {
        derived,
        done: HashMap::new(),
    };
    // An index that is not computed by an operation (a parameter, a thread index) is left as
    // it is: zero-extending it changes nothing for the compiler.
    if let Some(wide) = w.derivation(f, index, 0) {
        f.insts[access].kind = InstKind::ElemPtr(ptr, wide);
        clones.insert(wide, index);
    }
    clones.extend(w.done.into_iter().map(|(original, wide)| (wide, original)));
}

/// Whether index `v` is a gather's: whether a division or remainder (which scatter an
/// index; a minimum, maximum or select clamps it, which `guarded_loads` handles) takes a
/// value that differs between threads (a thread index, a loaded value, a block parameter);
/// `Some(true)` for a gather, `Some(false)` for an index that moves with the threads, `None`
/// past [`MAX_DEPTH`]. A gather's index stays
/// in 32 bits: GCC 12 vectorises gathers (as scalar loads into a vector) only with offsets
/// of 32 bits, and loads whose addresses do not advance by a constant step gain nothing
/// from the wide form. The tile loads of `stencil2d` (`input[min(max(..), h - 1) * w +
/// min(max(..), w - 1)]`) vectorise that way.
fn gathers(f: &Function, v: Value, depth: u32) -> Option<bool> {
    Some(varies(f, v, depth)?.1)
}

/// Whether `v` differs between threads, and whether it is a gather's index (see
/// [`gathers`]).
fn varies(f: &Function, v: Value, depth: u32) -> Option<(bool, bool)> {
    if depth > MAX_DEPTH {
        return None;
    }
    let ValueDef::Result(inst) = f.values[v].def else {
        return Some((true, false));
    };
    let both = |a: Value, b: Value| -> Option<(bool, bool, bool)> {
        let (va, ga) = varies(f, a, depth + 1)?;
        let (vb, gb) = varies(f, b, depth + 1)?;
        Some((va || vb, ga || gb, va || vb))
    };
    Some(match f.insts[inst].kind {
        InstKind::GpuIndex(GpuIndex::ThreadIdx, _) | InstKind::Load(_) => (true, false),
        InstKind::Const(_) | InstKind::GpuIndex(..) => (false, false),
        InstKind::Cast(x) => varies(f, x, depth + 1)?,
        InstKind::Binary(op, a, b) => {
            let (var, gather, operands_vary) = both(a, b)?;
            // Division and remainder scatter an index over the tile (`p / 18`, `p % 18`);
            // clamps (`min`, `max`) keep it consecutive but at their bounds, where
            // `guarded_loads` splits the load.
            let stepped = !matches!(op, BinaryOp::Div | BinaryOp::Rem);
            (var, gather || (!stepped && operands_vary))
        }
        // A select of two indices (a clamp written as one) picks one or the other.
        InstKind::Select(c, a, b) => {
            let (vc, gc) = varies(f, c, depth + 1)?;
            let (var, gather, _) = both(a, b)?;
            (var || vc, gc || gather)
        }
        _ => (true, false),
    })
}

/// Recomputes in `u64` every `u32` index of `f` that is a sum of thread indices and
/// constants ([`thread_sum`]) and cannot wrap, whatever proves its access: an index that
/// advances by one with `threadIdx.x` then looks so to a C compiler (a `u32` sum may wrap,
/// which makes a store through it a scatter). The iterations of a short loop unrolled in
/// sequence index with `first + k S` (`crate::unroll`), computed after the check-free
/// versions. Returns how many indices it widened.
pub(crate) fn widen_thread_sums(f: &mut Function) -> usize {
    let accesses: Vec<Inst> = f
        .layout
        .iter()
        .flat_map(|&b| f.blocks[b].insts.iter().copied())
        .filter(|&i| match f.insts[i].kind {
            InstKind::ElemPtr(_, index) => {
                let computed = matches!(f.defining_inst(index), Some(InstKind::Binary(..)));
                computed && f.value_type(index) == Type::U32
            }
            _ => false,
        })
        .collect();
    let mut clones = HashMap::new();
    let mut widened = 0;
    for access in accesses {
        let InstKind::ElemPtr(_, index) = f.insts[access].kind else {
            continue;
        };
        let mut within = HashSet::new();
        if thread_sum(f, index, 0, &mut within).is_some_and(|m| m <= u64::from(u32::MAX)) {
            self::index(f, access, &within, &mut clones);
            widened += 1;
        }
    }
    widened
}

/// The most threads along a side of a block (the runtimes' limit).
const MAX_SIDE: u64 = 1024;

/// The largest value of `v` where it is a sum of thread indices and constants, each
/// multiplied by a constant (by `*` or `<<`), over blocks of at most [`MAX_SIDE`] threads a
/// side, computed without wrapping (`None` otherwise); the values of its derivation go to
/// `within`.
fn thread_sum(f: &Function, v: Value, depth: u32, within: &mut HashSet<Value>) -> Option<u64> {
    const LIMIT: u64 = 1 << 32;
    if depth > MAX_DEPTH {
        return None;
    }
    let ValueDef::Result(inst) = f.values[v].def else {
        return None;
    };
    let constant = |w: Value| match f.defining_inst(w) {
        Some(InstKind::Const(c)) => u64::try_from(c.bits).ok(),
        _ => None,
    };
    let max = match f.insts[inst].kind {
        InstKind::GpuIndex(GpuIndex::ThreadIdx, _) => MAX_SIDE - 1,
        InstKind::Const(c) => u64::try_from(c.bits).ok()?,
        InstKind::Binary(BinaryOp::Add, a, b) => {
            thread_sum(f, a, depth + 1, within)? + thread_sum(f, b, depth + 1, within)?
        }
        InstKind::Binary(BinaryOp::Mul, a, b) => match (constant(a), constant(b)) {
            (_, Some(c)) => thread_sum(f, a, depth + 1, within)?.checked_mul(c)?,
            (Some(c), _) => thread_sum(f, b, depth + 1, within)?.checked_mul(c)?,
            _ => return None,
        },
        InstKind::Binary(BinaryOp::Shl, a, b) => {
            let s = constant(b).filter(|&s| s < 32)?;
            thread_sum(f, a, depth + 1, within)?.checked_mul(1 << s)?
        }
        _ => return None,
    };
    within.insert(v);
    (max < LIMIT).then_some(max)
}

/// The deepest derivation cloned (deeper operands enter zero-extended).
const MAX_DEPTH: u32 = 48;

struct Widen<'a> {
    derived: &'a HashSet<Value>,
    /// Value → its `u64` clone.
    done: HashMap<Value, Value>,
}

impl Widen<'_> {
    /// The `u64` value equal to `v` (unsigned, at most 32 bits) where the body runs.
    fn value(&mut self, f: &mut Function, v: Value, depth: u32) -> Value {
        if let Some(&w) = self.done.get(&v) {
            return w;
        }
        let w = self.derivation(f, v, depth).unwrap_or_else(|| zext(f, v));
        self.done.insert(v, w);
        w
    }

    /// The clone of `v`'s own operation, if its range was derived through it (`derived`).
    fn derivation(&mut self, f: &mut Function, v: Value, depth: u32) -> Option<Value> {
        if depth > MAX_DEPTH || !self.derived.contains(&v) {
            return None;
        }
        let ValueDef::Result(inst) = f.values[v].def else {
            return None;
        };
        let kind = f.insts[inst].kind.clone();
        let made = match kind {
            // Derived through the operation: its no-wrap conditions hold (an underived
            // operand, one side of a `min`, enters zero-extended).
            InstKind::Binary(op, a, b) if widens(op) => {
                let (wa, wb) = (self.value(f, a, depth + 1), self.value(f, b, depth + 1));
                InstKind::Binary(op, wa, wb)
            }
            InstKind::Select(c, a, b) => {
                let (wa, wb) = (self.value(f, a, depth + 1), self.value(f, b, depth + 1));
                InstKind::Select(c, wa, wb)
            }
            InstKind::Cast(x) if matches!(f.value_type(x), Type::U8 | Type::U16 | Type::U32) => {
                return Some(self.value(f, x, depth + 1));
            }
            _ => return None,
        };
        Some(insert_after(f, inst, made))
    }
}

/// Operations whose `u64` result equals the `u32` one when the proof holds.
fn widens(op: BinaryOp) -> bool {
    use BinaryOp::*;
    matches!(
        op,
        Add | Sub | Mul | Shl | Shr | Div | Rem | Min | Max | And
    )
}

/// `kind` (a `u64` result) placed right after `inst`.
fn insert_after(f: &mut Function, inst: Inst, kind: InstKind) -> Value {
    let block = block_of(f, inst);
    let mut b = FunctionBuilder::detached(f);
    let v = b.value(kind, Type::U64);
    let made = b.into_insts();
    let insts = &mut f.blocks[block].insts;
    let at = insts.iter().position(|&i| i == inst).map_or(0, |i| i + 1);
    insts.splice(at..at, made);
    v
}

/// `v` zero-extended to `u64`, right after its definition (at the start of its block for a
/// block parameter).
fn zext(f: &mut Function, v: Value) -> Value {
    let (block, after) = match f.values[v].def {
        ValueDef::Result(inst) => (block_of(f, inst), Some(inst)),
        ValueDef::Param(block, _) => (block, None),
    };
    let mut b = FunctionBuilder::detached(f);
    let w = b.cast(v, Type::U64);
    let made = b.into_insts();
    let insts = &mut f.blocks[block].insts;
    let at = after
        .and_then(|inst| insts.iter().position(|&i| i == inst))
        .map_or(0, |i| i + 1);
    insts.splice(at..at, made);
    w
}

/// The laid-out block that holds `inst`.
fn block_of(f: &Function, inst: Inst) -> Block {
    f.layout
        .iter()
        .copied()
        .find(|&b| f.blocks[b].insts.contains(&inst))
        .expect("the instruction is laid out")
}
