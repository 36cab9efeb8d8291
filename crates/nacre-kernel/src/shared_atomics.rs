//! Atomics on shared memory made plain, for the CPU runtime: there the threads of a block run
//! one after another on one worker, and only they see the block's shared arrays, so an atomic
//! read-modify-write of shared memory is a load, the operation and a store (no locked
//! instruction). A histogram's shared bins, a block's shared counters and a compaction's
//! shared tickets are updated this way; atomics on global memory stay atomic, since other
//! blocks run on other workers at the same time.
//!
//! A pointer is into shared memory when its definition chain (element pointers, pointer
//! casts, selects of two such pointers) starts at a shared array or the dynamic shared
//! memory; a pointer that reaches the atomic through a block parameter is left alone.

use nacre_ir::{
    CmpOp, FuncKind, Function, Inst, InstData, InstKind, Module, Type, Value, ValueData, ValueDef,
};

/// Replaces every atomic on shared memory in the kernels of `module` by plain accesses (see
/// the module docs). Only for runtimes that run a block's threads on one OS thread.
pub fn demote_shared_atomics(module: &mut Module) {
    for (_, f) in module.functions.iter_mut() {
        if f.kind == FuncKind::Kernel {
            demote(f);
        }
    }
}

/// Whether `v` points into the block's shared memory (by its definition chain, see the module
/// docs).
pub(crate) fn is_shared(f: &Function, v: Value) -> bool {
    match f.defining_inst(v) {
        Some(InstKind::SharedAlloc { .. } | InstKind::DynamicShared { .. }) => true,
        Some(InstKind::ElemPtr(base, _)) => is_shared(f, *base),
        Some(InstKind::Cast(x)) => f.value_type(*x).is_ptr() && is_shared(f, *x),
        Some(InstKind::Select(_, a, b)) => is_shared(f, *a) && is_shared(f, *b),
        _ => false,
    }
}

fn demote(f: &mut Function) {
    demote_where(f, is_shared);
}

/// Replaces every atomic of `f` whose pointer `demoted` accepts by plain accesses (a load,
/// the operation, a store); returns how many it replaced.
pub(crate) fn demote_where(f: &mut Function, demoted: impl Fn(&Function, Value) -> bool) -> usize {
    let mut count = 0;
    for b in f.layout.clone() {
        let mut insts = Vec::with_capacity(f.blocks[b].insts.len());
        for inst in std::mem::take(&mut f.blocks[b].insts) {
            insts.push(inst);
            let ptr = match &f.insts[inst].kind {
                InstKind::AtomicRmw { ptr, .. } | InstKind::AtomicCas { ptr, .. } => *ptr,
                _ => continue,
            };
            if demoted(f, ptr) {
                insts.extend(plain(f, inst));
                count += 1;
            }
        }
        f.blocks[b].insts = insts;
    }
    count
}

/// A new instruction of `f` with a result of type `ty` (not yet in a block).
fn add(f: &mut Function, kind: InstKind, ty: Option<Type>) -> (Inst, Option<Value>) {
    let inst = f.insts.push(InstData { kind, result: None });
    let result = ty.map(|ty| {
        f.values.push(ValueData {
            ty,
            def: ValueDef::Result(inst),
        })
    });
    f.insts[inst].result = result;
    (inst, result)
}

/// Turns atomic `inst` into a load (its result, the old value, keeps its name) and returns
/// the instructions that follow it: the new value, and its store.
fn plain(f: &mut Function, inst: Inst) -> Vec<Inst> {
    let old = f.insts[inst].result.expect("an atomic gives the old value");
    let ty = f.value_type(old);
    let mut after = Vec::new();
    let (ptr, new) = match f.insts[inst].kind.clone() {
        InstKind::AtomicRmw { op, ptr, value, .. } => {
            let new = match op.binary() {
                None => value,
                Some(b) => {
                    let (i, v) = add(f, InstKind::Binary(b, old, value), Some(ty));
                    after.push(i);
                    v.expect("a result")
                }
            };
            (ptr, new)
        }
        InstKind::AtomicCas {
            ptr, expected, new, ..
        } => {
            let (i, same) = add(f, InstKind::Cmp(CmpOp::Eq, old, expected), Some(Type::BOOL));
            after.push(i);
            let same = same.expect("a result");
            let (i, v) = add(f, InstKind::Select(same, new, old), Some(ty));
            after.push(i);
            (ptr, v.expect("a result"))
        }
        _ => unreachable!("an atomic"),
    };
    f.insts[inst].kind = InstKind::Load(ptr);
    let (store, _) = add(f, InstKind::Store(ptr, new), None);
    after.push(store);
    after
}

#[cfg(test)]
mod tests {
    use super::*;
    use nacre_ir::{AtomicOp, FunctionBuilder, MemOrder, Scalar, Scope, Signature};

    /// A kernel adding 1 to `shared[0]` and to `global[0]` atomically, and exchanging
    /// `shared[1]`.
    fn kernel() -> Function {
        let sig = Signature {
            params: vec![Type::ptr(Scalar::U32)],
            ret: None,
        };
        let mut f = Function::new("k", FuncKind::Kernel, sig);
        let mut b = FunctionBuilder::new(&mut f);
        let global = b.create_entry_block()[0];
        let shared = b.shared_alloc(Scalar::U32, 4);
        let one = b.const_u32(1);
        let at = b.const_u32(1);
        let second = b.elem_ptr(shared, at);
        b.atomic_rmw(AtomicOp::Add, shared, one, MemOrder::Relaxed, Scope::Block);
        b.atomic_rmw(AtomicOp::Add, global, one, MemOrder::Relaxed, Scope::Device);
        b.atomic_cas(second, one, at, MemOrder::AcqRel, Scope::Block);
        b.ret(None);
        f
    }

    fn count(f: &Function, pred: impl Fn(&InstKind) -> bool) -> usize {
        f.layout
            .iter()
            .flat_map(|b| &f.blocks[*b].insts)
            .filter(|i| pred(&f.insts[**i].kind))
            .count()
    }

    #[test]
    fn shared_atomics_become_plain_and_global_ones_stay() {
        let mut f = kernel();
        demote(&mut f);
        assert_eq!(count(&f, |k| matches!(k, InstKind::AtomicRmw { .. })), 1);
        assert_eq!(count(&f, |k| matches!(k, InstKind::AtomicCas { .. })), 0);
        assert_eq!(count(&f, |k| matches!(k, InstKind::Store(..))), 2);
        assert_eq!(count(&f, |k| matches!(k, InstKind::Select(..))), 1);
        let mut m = Module::new();
        m.add_function(f);
        m.entry = m.functions.keys().next();
        nacre_ir::verify(m).expect("still valid");
    }
}
