//! Values carried across barriers that are recomputed instead of stored.
//!
//! A value live across a barrier that is a short computation (arithmetic, comparisons, casts,
//! selects, addresses; no loads, no division that could trap) of the thread's indices, values
//! of the step function's entry block (uniform: parameters, block indices and sizes) and
//! constants is recomputed at the head of each thread loop that needs it, from that loop's own
//! thread indices, instead of getting a state word. Indices like `row * n + col` then cost a
//! few instructions per thread instead of a store and a load, and a thread loop touches fewer
//! state arrays, which keeps the C compiler's overlap checks few enough to vectorise it.

use super::Input;
use nacre_ir::{BinaryOp, Function, FunctionBuilder, InstKind, Value, ValueDef};
use std::collections::HashMap;

/// The most instructions a recomputed value may take.
const MAX_COST: usize = 24;

/// True if `v` can be recomputed from the thread's indices (see the module docs).
pub(super) fn recomputable(input: &Input<'_>, v: Value) -> bool {
    let mut seen = HashMap::new();
    cost(input.f, input, v, &mut seen).is_some_and(|c| c <= MAX_COST)
}

/// The instructions recomputing `v` takes, or `None` if it cannot be.
fn cost(
    g: &Function,
    input: &Input<'_>,
    v: Value,
    seen: &mut HashMap<Value, usize>,
) -> Option<usize> {
    if let Some(&c) = seen.get(&v) {
        return Some(c);
    }
    if is_leaf(g, input, v) {
        return Some(0);
    }
    let ValueDef::Result(inst) = g.values[v].def else {
        return None;
    };
    let kind = &g.insts[inst].kind;
    if !cheap(g, kind) {
        return None;
    }
    let mut total = 1;
    let mut ok = true;
    kind.for_each_operand(|o| {
        if ok {
            match cost(g, input, o, seen) {
                Some(c) => total += c,
                None => ok = false,
            }
        }
    });
    if !ok || total > MAX_COST {
        return None;
    }
    seen.insert(v, total);
    Some(total)
}

/// The thread's indices and the entry block's values: available at every thread loop's head.
fn is_leaf(g: &Function, input: &Input<'_>, v: Value) -> bool {
    if input.xyz.contains(&v) || v == input.t {
        return true;
    }
    input.uniform.contains(&v)
        || matches!(g.values[v].def, ValueDef::Param(b, _) if b == input.entry)
}

/// Instructions worth recomputing: no memory, no trap, no call.
fn cheap(g: &Function, kind: &InstKind) -> bool {
    match kind {
        InstKind::Const(_)
        | InstKind::Cast(_)
        | InstKind::Cmp(..)
        | InstKind::Select(..)
        | InstKind::ElemPtr(..)
        | InstKind::Unary(..) => true,
        InstKind::Binary(op, a, _) => {
            !(matches!(op, BinaryOp::Div | BinaryOp::Rem) && g.value_type(*a).is_int())
        }
        _ => false,
    }
}

/// Emits the recomputation of `v` (see [`recomputable`]); `map` takes the thread's indices
/// to the loop's own and collects the copies made.
pub(super) fn emit(
    em: &mut FunctionBuilder<'_>,
    input: &Input<'_>,
    v: Value,
    map: &mut HashMap<Value, Value>,
) -> Value {
    let g = input.f;
    if let Some(&c) = map.get(&v) {
        return c;
    }
    if is_leaf(g, input, v) {
        return v;
    }
    let ValueDef::Result(inst) = g.values[v].def else {
        return v;
    };
    let mut kind = g.insts[inst].kind.clone();
    kind.map_operands(|o| emit(em, input, o, map));
    let c = em.value(kind, g.value_type(v));
    map.insert(v, c);
    c
}
