//! Where pointers come from: for every pointer value of a function, the pointer parameters it
//! may be derived from ([`PointerRoots`]); and for a module, the parameters each function may
//! write through, itself or in anything it calls or launches ([`written_params`]).
//!
//! Sets of parameters are [`ParamSet`]s: bit `i` stands for the function's parameter `i`
//! (its position in the signature); parameters from 63 on share bit 63, so a set is exact for
//! the first 63 parameters and conservative after them. A pointer with no parameter root (a
//! null constant, a shared array, an extern's result) has the empty set.

use crate::entities::{FuncId, Value};
use crate::function::{Function, ValueDef};
use crate::instructions::InstKind;
use crate::module::Module;
use cranelift_entity::SecondaryMap;

/// A set of parameter positions (bit `i` for parameter `i`, bit 63 for every position from 63).
pub type ParamSet = u64;

/// The set holding parameter `i`.
pub const fn param_bit(i: usize) -> ParamSet {
    1 << if i < 63 { i } else { 63 }
}

/// The parameters each pointer value of a function may be derived from.
#[derive(Clone, Debug)]
pub struct PointerRoots {
    roots: SecondaryMap<Value, ParamSet>,
}

impl PointerRoots {
    /// The roots of every pointer value of `func`, to a fixpoint over block parameters.
    pub fn compute(func: &Function) -> PointerRoots {
        let mut roots: SecondaryMap<Value, ParamSet> = SecondaryMap::new();
        if let Some(entry) = func.entry() {
            for (i, &p) in func.blocks[entry].params.iter().enumerate() {
                if func.values[p].ty.is_ptr() {
                    roots[p] = param_bit(i);
                }
            }
        }
        let mut changed = true;
        while changed {
            changed = false;
            for &block in &func.layout {
                for &inst in &func.blocks[block].insts {
                    let data = &func.insts[inst];
                    if let Some(r) = data.result.filter(|&r| func.values[r].ty.is_ptr()) {
                        let set = result_roots(func, &roots, &data.kind);
                        changed |= merge(&mut roots, r, set);
                    }
                    for call in data.kind.successors() {
                        let params = &func.blocks[call.block].params;
                        for (&param, &arg) in params.iter().zip(&call.args) {
                            if func.values[param].ty.is_ptr() {
                                let set = roots[arg];
                                changed |= merge(&mut roots, param, set);
                            }
                        }
                    }
                }
            }
        }
        PointerRoots { roots }
    }

    /// The parameters `v` may be derived from (empty for non-pointers).
    pub fn of(&self, v: Value) -> ParamSet {
        self.roots[v]
    }

    /// The one parameter `v` is derived from, if there is exactly one (and it is below 63).
    pub fn unique(&self, v: Value) -> Option<usize> {
        let set = self.roots[v];
        (set.count_ones() == 1 && set != param_bit(63)).then(|| set.trailing_zeros() as usize)
    }
}

/// Adds `set` to the roots of `v`; true if that changed them.
fn merge(roots: &mut SecondaryMap<Value, ParamSet>, v: Value, set: ParamSet) -> bool {
    let old = roots[v];
    roots[v] = old | set;
    roots[v] != old
}

/// The roots of the pointer result of an instruction.
fn result_roots(func: &Function, roots: &SecondaryMap<Value, ParamSet>, kind: &InstKind) -> u64 {
    let ptr_args = |args: &[Value]| {
        args.iter()
            .filter(|&&a| func.values[a].ty.is_ptr())
            .fold(0, |set, &a| set | roots[a])
    };
    match kind {
        InstKind::ElemPtr(p, _) => roots[*p],
        InstKind::Cast(a) if func.values[*a].ty.is_ptr() => roots[*a],
        InstKind::Select(_, a, b) => roots[*a] | roots[*b],
        // A callee's pointer result can only derive from the pointers it was given.
        InstKind::Call(_, args) => ptr_args(args),
        _ => 0,
    }
}

/// For every function of `module`, the parameters it may write through: stores, and pointer
/// arguments of calls and launches whose callee writes through that parameter, and every
/// pointer passed to an extern function (which may do anything with it).
pub fn written_params(module: &Module) -> SecondaryMap<FuncId, ParamSet> {
    let roots: SecondaryMap<FuncId, PointerRoots> = {
        let mut m = SecondaryMap::with_default(PointerRoots {
            roots: SecondaryMap::new(),
        });
        for (id, f) in module.functions.iter() {
            m[id] = PointerRoots::compute(f);
        }
        m
    };
    let mut written: SecondaryMap<FuncId, ParamSet> = SecondaryMap::new();
    let mut changed = true;
    while changed {
        changed = false;
        for (id, func) in module.functions.iter() {
            let set = writes_of(func, &roots[id], &written);
            if set | written[id] != written[id] {
                written[id] |= set;
                changed = true;
            }
        }
    }
    written
}

/// The parameters one function writes through, given what its callees write through.
fn writes_of(
    func: &Function,
    roots: &PointerRoots,
    written: &SecondaryMap<FuncId, ParamSet>,
) -> ParamSet {
    let passed = |callee: FuncId, args: &[Value]| {
        args.iter()
            .enumerate()
            .filter(|&(j, _)| written[callee] & param_bit(j) != 0)
            .fold(0, |set, (_, &a)| set | roots.of(a))
    };
    let mut set = 0;
    for data in func.live_insts() {
        set |= match &data.kind {
            InstKind::Store(p, _)
            | InstKind::AtomicRmw { ptr: p, .. }
            | InstKind::AtomicCas { ptr: p, .. } => roots.of(*p),
            InstKind::Call(callee, args) => passed(*callee, args),
            InstKind::Launch(l) => passed(l.kernel, &l.args),
            InstKind::CallExtern(_, args) => args.iter().fold(0, |s, &a| s | roots.of(a)),
            _ => 0,
        };
    }
    set
}

/// True if `v` is a parameter of the function's entry block.
pub fn is_entry_param(func: &Function, v: Value) -> bool {
    matches!(func.values[v].def, ValueDef::Param(b, _) if Some(b) == func.entry())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::FunctionBuilder;
    use crate::function::FuncKind;
    use crate::types::{Scalar, Type};

    fn ptr() -> Type {
        Type::ptr(Scalar::F32)
    }

    #[test]
    fn derived_pointers_keep_their_roots() {
        let f = FunctionBuilder::build(
            "f",
            FuncKind::Host,
            &[ptr(), ptr(), Type::BOOL, Type::I64],
            None,
            |b, p| {
                let a1 = b.elem_ptr(p[0], p[3]);
                let s = b.select(p[2], a1, p[1]);
                let x = b.load(a1);
                b.store(s, x);
                b.ret(None);
            },
        );
        let roots = PointerRoots::compute(&f);
        let entry = f.entry().unwrap();
        let p = &f.blocks[entry].params;
        assert_eq!(roots.unique(p[0]), Some(0));
        assert_eq!(roots.unique(p[1]), Some(1));
        let store = f
            .live_insts()
            .find_map(|d| match d.kind {
                InstKind::Store(s, _) => Some(s),
                _ => None,
            })
            .unwrap();
        assert_eq!(roots.of(store), 0b11);
        assert_eq!(roots.unique(store), None);
    }

    #[test]
    fn writes_propagate_through_calls() {
        let mut m = Module::new();
        let callee = m.add_function(FunctionBuilder::build(
            "callee",
            FuncKind::Host,
            &[ptr(), ptr()],
            None,
            |b, p| {
                let x = b.load(p[0]);
                b.store(p[1], x);
                b.ret(None);
            },
        ));
        let caller = m.add_function(FunctionBuilder::build(
            "caller",
            FuncKind::Host,
            &[ptr(), ptr(), ptr()],
            None,
            |b, p| {
                b.call(callee, vec![p[2], p[0]], None);
                let _ = b.load(p[1]);
                b.ret(None);
            },
        ));
        let w = written_params(&m);
        assert_eq!(w[callee], 0b10);
        assert_eq!(w[caller], 0b001);
    }
}
