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

use nacre_ir::{BinaryOp, Block, Function, FunctionBuilder, Inst, InstKind, Type, Value, ValueDef};
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
