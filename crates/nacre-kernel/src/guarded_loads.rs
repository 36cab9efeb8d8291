//! Clamped loads under a select made guarded loads, for the CPU runtime.
//!
//! A kernel that reads past the end of a row only when a condition allows writes, as GPU code
//! does, `select(j < n, p[a + min(j, n - 1)], d)`: every thread loads (an unconditional load
//! from a clamped address, which GPUs issue without waiting on the condition) and keeps the
//! value where `j < n`. On a CPU whose thread loops a C compiler vectorises across threads,
//! the clamped address is not affine in the thread index: the compiler gathers (or gives up,
//! when it cannot separate the gather from the loop's other memory). Where `j < n`,
//! `min(j, n - 1)` is `j` itself, so the same value is `if j < n { p[a + j] } else { d }`: a
//! branch around a load whose address advances with `j`, which the compiler turns into a
//! masked vector load.
//!
//! [`guard_clamped_loads`] rewrites each such select into that branch, in kernels whose
//! check-free body computes indices in `u64` ([`crate::check_free`], for the CPU), right after
//! the widening, so that the new load's index is the `u64` clone of `a + j`, which advances
//! with the thread index. In the check-free body the launch has proven the clamped address in
//! bounds, and where the new load runs its address is that one; in the checked body the clamped
//! load's bounds check stays where it was and covers the new load the same way. The clamped
//! load, now unused, is removed by dead-code elimination.
//!
//! Patterns: the select's condition `j < n` (or `n > j`) on unsigned integers; the load's
//! index `min(j', m)` (either order), alone or added to another value, where `j'` is `j` and
//! `m` is `max(n, 1) - 1` or `n - 1`, each possibly zero-extended or the widening's `u64`
//! clone of the value (the clones the widening recorded: equal to their originals where the
//! check-free body runs).

use nacre_ir::{
    BinaryOp, BlockData, CmpOp, Function, FunctionBuilder, Inst, InstKind, Scalar, Type, Value,
};
use std::collections::HashMap;

/// Rewrites the clamped loads under a select of kernel `f` (see the module docs); `clones`
/// maps each `u64` clone of the widening to its original. Returns how many it rewrote.
pub(crate) fn guard_clamped_loads(f: &mut Function, clones: &HashMap<Value, Value>) -> usize {
    let found = find(f, clones);
    let replaced: HashMap<Value, Value> = found.iter().map(|&found| rewrite(f, found)).collect();
    if !replaced.is_empty() {
        for data in f.insts.values_mut() {
            data.kind
                .map_operands(|v| replaced.get(&v).copied().unwrap_or(v));
        }
    }
    replaced.len()
}

/// A select to rewrite: `sel = select(cond, load(elem_ptr(base, index)), other)`, and the
/// index with `j` in place of the clamp.
#[derive(Copy, Clone)]
struct Found {
    sel: Inst,
    cond: Value,
    other: Value,
    base: Value,
    /// `Some(a)` for an index `a + min(..)`, `None` for `min(..)` alone.
    offset: Option<Value>,
    /// The clamp's unclamped operand.
    j: Value,
}

/// Every select of `f` to rewrite.
fn find(f: &Function, clones: &HashMap<Value, Value>) -> Vec<Found> {
    let uses = use_counts(f);
    let m = Match { f, clones };
    f.layout
        .iter()
        .flat_map(|&b| &f.blocks[b].insts)
        .filter_map(|&i| m.select(i, &uses))
        .collect()
}

/// How many operands of laid-out instructions name each value.
fn use_counts(f: &Function) -> HashMap<Value, usize> {
    let mut uses = HashMap::new();
    for &b in &f.layout {
        for &i in &f.blocks[b].insts {
            f.insts[i]
                .kind
                .for_each_operand(|v| *uses.entry(v).or_default() += 1);
        }
    }
    uses
}

/// The pattern matcher over a function and the widening's clones.
struct Match<'a> {
    f: &'a Function,
    clones: &'a HashMap<Value, Value>,
}

impl Match<'_> {
    fn select(&self, sel: Inst, uses: &HashMap<Value, usize>) -> Option<Found> {
        let f = self.f;
        let InstKind::Select(cond, loaded, other) = f.insts[sel].kind else {
            return None;
        };
        let (j, n) = match f.defining_inst(cond)? {
            InstKind::Cmp(CmpOp::Lt, j, n) => (*j, *n),
            InstKind::Cmp(CmpOp::Gt, n, j) => (*j, *n),
            _ => return None,
        };
        if !is_unsigned(f.value_type(j)) || uses.get(&loaded) != Some(&1) {
            return None;
        }
        let InstKind::Load(ptr) = f.defining_inst(loaded)? else {
            return None;
        };
        let InstKind::ElemPtr(base, index) = f.defining_inst(*ptr)? else {
            return None;
        };
        let is_min = |v: Value| {
            matches!(
                f.defining_inst(v),
                Some(InstKind::Binary(BinaryOp::Min, ..))
            )
        };
        let (offset, clamp) = match f.defining_inst(*index)? {
            InstKind::Binary(BinaryOp::Min, ..) => (None, *index),
            InstKind::Binary(BinaryOp::Add, a, b) if is_min(*b) => (Some(*a), *b),
            InstKind::Binary(BinaryOp::Add, a, b) if is_min(*a) => (Some(*b), *a),
            _ => return None,
        };
        let InstKind::Binary(BinaryOp::Min, x, y) = f.defining_inst(clamp)? else {
            return None;
        };
        let j_side = [(*x, *y), (*y, *x)]
            .into_iter()
            .find(|&(jj, m)| self.same(jj, j) && self.is_last(m, n))
            .map(|(jj, _)| jj)?;
        Some(Found {
            sel,
            cond,
            other,
            base: *base,
            offset,
            j: j_side,
        })
    }

    /// `v` with zero extensions of unsigned integers and the widening's clones undone.
    fn original(&self, v: Value) -> Value {
        let f = self.f;
        if let Some(&o) = self.clones.get(&v) {
            return self.original(o);
        }
        match f.defining_inst(v) {
            Some(InstKind::Cast(x))
                if is_unsigned(f.value_type(*x))
                    && is_unsigned(f.value_type(v))
                    && f.value_type(*x).bytes() <= f.value_type(v).bytes() =>
            {
                self.original(*x)
            }
            _ => v,
        }
    }

    /// Whether `a` and `b` are equal where the body runs (up to zero extension and clones).
    fn same(&self, a: Value, b: Value) -> bool {
        self.original(a) == self.original(b)
    }

    /// Whether `m` is `max(n, 1) - 1` or `n - 1`: at least `j` wherever `j < n`.
    fn is_last(&self, m: Value, n: Value) -> bool {
        let f = self.f;
        let Some(InstKind::Binary(BinaryOp::Sub, top, one)) = f.defining_inst(self.original(m))
        else {
            return false;
        };
        if !self.is_one(*one) {
            return false;
        }
        if self.same(*top, n) {
            return true;
        }
        match f.defining_inst(self.original(*top)) {
            Some(InstKind::Binary(BinaryOp::Max, a, b)) => {
                (self.same(*a, n) && self.is_one(*b)) || (self.same(*b, n) && self.is_one(*a))
            }
            _ => false,
        }
    }

    fn is_one(&self, v: Value) -> bool {
        matches!(self.f.defining_inst(self.original(v)), Some(InstKind::Const(c)) if c.bits == 1)
    }
}

fn is_unsigned(ty: Type) -> bool {
    ty.scalar().is_some_and(Scalar::is_unsigned_int)
}

/// Splits the select's block at the select: `br cond, load_block, join(other)`;
/// `load_block: v = load(elem_ptr(base, offset + j)); jump join(v)`; the join takes the
/// select's value as a parameter, and the rest of the block. Returns the select's value and
/// the join's parameter, which replaces it (the caller replaces the uses).
fn rewrite(f: &mut Function, found: Found) -> (Value, Value) {
    let block = *f
        .layout
        .iter()
        .find(|&&b| f.blocks[b].insts.contains(&found.sel))
        .expect("the select is laid out");
    let sel_value = f.insts[found.sel].result.expect("a select has a result");
    let ty = f.value_type(sel_value);
    let at = f.blocks[block]
        .insts
        .iter()
        .position(|&i| i == found.sel)
        .expect("the select is in its block");
    let rest = f.blocks[block].insts.split_off(at + 1);
    f.blocks[block].insts.pop();
    let load_block = f.blocks.push(BlockData::default());
    let join = f.blocks.push(BlockData::default());
    let merged = f.add_block_param(join, ty);
    f.blocks[join].insts = rest;

    let mut b = FunctionBuilder::detached(f);
    let index = match found.offset {
        Some(a) => b.binary(BinaryOp::Add, a, found.j),
        None => found.j,
    };
    let ptr = b.elem_ptr(found.base, index);
    let v = b.load(ptr);
    b.jump(join, vec![v]);
    let made = b.into_insts();
    f.blocks[load_block].insts = made;

    let mut b = FunctionBuilder::detached(f);
    b.branch(found.cond, load_block, Vec::new(), join, vec![found.other]);
    let made = b.into_insts();
    f.blocks[block].insts.extend(made);

    let pos = f.layout.iter().position(|&b| b == block).expect("laid out");
    f.layout.splice(pos + 1..pos + 1, [load_block, join]);
    (sel_value, merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nacre_ir::{Dim, FuncKind, GpuIndex, Module, Scalar};

    /// `out[t] = select(t < n, x[r + min(t, max(n, 1) - 1)], -1.0)`, `t` the thread index.
    fn kernel(wide: bool) -> Function {
        let params = [
            Type::ptr(Scalar::F32),
            Type::ptr(Scalar::F32),
            Type::U32,
            Type::U32,
        ];
        FunctionBuilder::build("k", FuncKind::Kernel, &params, None, |b, p| {
            let t = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
            let cond = b.cmp(CmpOp::Lt, t, p[2]);
            let one = b.const_u32(1);
            let top = b.binary(BinaryOp::Max, p[2], one);
            let last = b.binary(BinaryOp::Sub, top, one);
            let (tj, last, r) = match wide {
                true => (
                    b.cast(t, Type::U64),
                    b.cast(last, Type::U64),
                    b.cast(p[3], Type::U64),
                ),
                false => (t, last, p[3]),
            };
            let clamp = b.binary(BinaryOp::Min, tj, last);
            let index = b.binary(BinaryOp::Add, r, clamp);
            let ptr = b.elem_ptr(p[0], index);
            let loaded = b.load(ptr);
            let minus = b.const_bits(Type::F32, u64::from((-1.0f32).to_bits()));
            let v = b.select(cond, loaded, minus);
            let out = b.elem_ptr(p[1], t);
            b.store(out, v);
            b.ret(None);
        })
    }

    fn verified(f: Function) {
        let mut m = Module::new();
        m.entry = Some(m.add_function(f));
        nacre_ir::verify(m).expect("still valid");
    }

    #[test]
    fn a_clamped_load_under_its_select_becomes_a_guarded_load() {
        for wide in [false, true] {
            let mut f = kernel(wide);
            assert_eq!(
                guard_clamped_loads(&mut f, &HashMap::new()),
                1,
                "wide {wide}"
            );
            let selects = f
                .live_insts()
                .filter(|d| matches!(d.kind, InstKind::Select(..)))
                .count();
            assert_eq!(selects, 0);
            assert_eq!(f.layout.len(), 3);
            // The new load indexes with `r + t`, no clamp.
            let guarded = f.blocks[f.layout[1]].insts[0];
            assert!(matches!(
                f.insts[guarded].kind,
                InstKind::Binary(BinaryOp::Add, ..)
            ));
            verified(f);
        }
    }

    #[test]
    fn chained_selects_are_all_rewritten() {
        // `v2 = select(t < n, x[min(t, n - 1)], v1)`, `v1` itself a clamped select: the
        // branch of the second passes the first's new value.
        let params = [Type::ptr(Scalar::F32), Type::U32];
        let mut f = FunctionBuilder::build("k", FuncKind::Kernel, &params, None, |b, p| {
            let t = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
            let cond = b.cmp(CmpOp::Lt, t, p[1]);
            let one = b.const_u32(1);
            let last = b.binary(BinaryOp::Sub, p[1], one);
            let clamp = b.binary(BinaryOp::Min, last, t);
            let minus = b.const_bits(Type::F32, u64::from((-1.0f32).to_bits()));
            let mut v = minus;
            for offset in [None, Some(one)] {
                let index = match offset {
                    Some(o) => b.binary(BinaryOp::Add, clamp, o),
                    None => clamp,
                };
                let ptr = b.elem_ptr(p[0], index);
                let loaded = b.load(ptr);
                v = b.select(cond, loaded, v);
            }
            let out = b.elem_ptr(p[0], t);
            b.store(out, v);
            b.ret(None);
        });
        assert_eq!(guard_clamped_loads(&mut f, &HashMap::new()), 2);
        assert_eq!(f.layout.len(), 5);
        verified(f);
    }

    #[test]
    fn other_selects_are_left_alone() {
        // A clamp to another bound: `min(t, n)` under `t < n` is also `t`, but only the
        // documented shapes are rewritten.
        let params = [Type::ptr(Scalar::F32), Type::U32, Type::U32];
        let mut f = FunctionBuilder::build("k", FuncKind::Kernel, &params, None, |b, p| {
            let t = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
            let cond = b.cmp(CmpOp::Lt, t, p[1]);
            let clamp = b.binary(BinaryOp::Min, t, p[2]);
            let ptr = b.elem_ptr(p[0], clamp);
            let loaded = b.load(ptr);
            let zero = b.const_bits(Type::F32, 0);
            let v = b.select(cond, loaded, zero);
            let out = b.elem_ptr(p[0], t);
            b.store(out, v);
            b.ret(None);
        });
        assert_eq!(guard_clamped_loads(&mut f, &HashMap::new()), 0);
    }
}
