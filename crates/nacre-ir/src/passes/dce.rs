//! Dead-code elimination.
//!
//! A mark-and-sweep liveness over values with a worklist, so that dead cycles (a loop
//! parameter that only feeds itself, an unused computation chain) disappear in one run:
//!
//! - roots are the operands of instructions that must stay (stores, calls, integer division and
//!   remainder, which can trap), branch conditions and return values;
//! - a live result makes the operands of its pure instruction live;
//! - a live block parameter makes the matching argument of every edge into its block live.
//!
//! Jump arguments are not roots: they are live only through the parameter they feed. The sweep
//! deletes pure instructions whose result is dead and dead parameters of non-entry blocks (with
//! their jump arguments). Entry parameters are the function's signature and always stay.

use crate::entities::Value;
use crate::function::{Function, ValueDef};
use crate::instructions::InstKind;
use crate::passes::support::{edge_call, filter_args, remove_params, PredLists};
use crate::passes::PassStats;
use cranelift_entity::EntityRef;

/// Removes dead pure instructions and dead parameters of non-entry blocks. See the module docs.
///
/// Reports deleted instructions in [`PassStats::removed_insts`] and deleted block parameters in
/// [`PassStats::removed_params`]. Never changes the control-flow graph.
pub fn dce(func: &mut Function) -> PassStats {
    let mut stats = PassStats::default();
    let Some(entry) = func.entry() else {
        return stats;
    };
    let preds = PredLists::new(func);
    let mut live = vec![false; func.values.len()];
    let mut work: Vec<Value> = Vec::new();

    for &b in &func.layout {
        for &inst in &func.blocks[b].insts {
            let kind = &func.insts[inst].kind;
            match kind {
                InstKind::Jump(_) => {}
                InstKind::Branch { cond, .. } => mark(*cond, &mut live, &mut work),
                InstKind::Return(_) => kind.for_each_operand(|v| mark(v, &mut live, &mut work)),
                _ if !is_pure(func, kind) => {
                    kind.for_each_operand(|v| mark(v, &mut live, &mut work))
                }
                _ => {}
            }
        }
    }

    while let Some(v) = work.pop() {
        match func.values[v].def {
            ValueDef::Result(inst) => {
                let kind = &func.insts[inst].kind;
                if is_pure(func, kind) {
                    kind.for_each_operand(|o| mark(o, &mut live, &mut work));
                }
            }
            ValueDef::Param(block, k) => {
                for e in preds.edges(block) {
                    if let Some(&arg) = edge_call(func, e).and_then(|c| c.args.get(k as usize)) {
                        mark(arg, &mut live, &mut work);
                    }
                }
            }
        }
    }

    for i in 0..func.layout.len() {
        let b = func.layout[i];
        let mut list = std::mem::take(&mut func.blocks[b].insts);
        let before = list.len();
        list.retain(|&inst| {
            let data = &func.insts[inst];
            !is_pure(func, &data.kind) || data.result.is_some_and(|r| live[r.index()])
        });
        stats.removed_insts += before - list.len();
        func.blocks[b].insts = list;
    }

    let mut masks: Vec<Option<Vec<bool>>> = vec![None; func.blocks.len()];
    let mut any_mask = false;
    for i in 0..func.layout.len() {
        let b = func.layout[i];
        if b == entry {
            continue;
        }
        let keep: Vec<bool> = func.blocks[b]
            .params
            .iter()
            .map(|p| live[p.index()])
            .collect();
        if keep.contains(&false) {
            stats.removed_params += remove_params(func, b, &keep);
            masks[b.index()] = Some(keep);
            any_mask = true;
        }
    }
    if any_mask {
        filter_args(func, &masks);
    }
    stats
}

/// Marks `v` live and queues it, if it was not live yet.
fn mark(v: Value, live: &mut [bool], work: &mut Vec<Value>) {
    if !live[v.index()] {
        live[v.index()] = true;
        work.push(v);
    }
}

/// True if an unused instance of the instruction can be deleted (terminators never are).
fn is_pure(func: &Function, kind: &InstKind) -> bool {
    !kind.is_terminator() && kind.is_pure(|v| func.values[v].ty)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::FunctionBuilder;
    use crate::instructions::{BinaryOp, CmpOp};
    use crate::test_util::{eval, k, new_func, run};
    use crate::types::{Scalar, Type};
    use insta::assert_snapshot;

    #[test]
    fn removes_dead_pure_chains_and_keeps_effects() {
        let mut f = new_func(&[Type::I32, Type::ptr(Scalar::I32)], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let p = b.create_entry_block();
        let (x, ptr) = (p[0], p[1]);
        let one = k(&mut b, Type::I32, 1);
        let a = b.binary(BinaryOp::Add, x, one);
        let m = b.binary(BinaryOp::Mul, a, a);
        let _unused_cmp = b.cmp(CmpOp::Lt, m, x);
        let _may_trap = b.binary(BinaryOp::Div, one, x);
        let _unused_load = b.load(ptr);
        b.store(ptr, x);
        b.ret(Some(x));
        let stats = run(&mut f, dce);
        assert_eq!(stats.removed_insts, 4);
        assert_snapshot!(f.to_string());
    }

    #[test]
    fn removes_dead_loop_parameters_and_their_arguments() {
        // acc is carried around the loop but never used after it: a dead cycle.
        let mut f = new_func(&[Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let n = b.create_entry_block()[0];
        let (head, exit) = (b.create_block(), b.create_block());
        let zero = k(&mut b, Type::I32, 0);
        b.jump(head, vec![zero, zero]);
        let i = b.append_block_param(head, Type::I32);
        let acc = b.append_block_param(head, Type::I32);
        b.switch_to_block(head);
        let one = k(&mut b, Type::I32, 1);
        let i2 = b.binary(BinaryOp::Add, i, one);
        let acc2 = b.binary(BinaryOp::Add, acc, i2);
        let c = b.cmp(CmpOp::Lt, i2, n);
        b.branch(c, head, vec![i2, acc2], exit, vec![i2]);
        let r = b.append_block_param(exit, Type::I32);
        b.switch_to_block(exit);
        b.ret(Some(n));
        let _ = r;
        let stats = run(&mut f, dce);
        assert_eq!((stats.removed_insts, stats.removed_params), (1, 2));
        assert_snapshot!(f.to_string());
        assert_eq!(eval(&f, &[4]), Ok(Some(4)));
    }

    #[test]
    fn keeps_entry_parameters_and_live_parameters() {
        let mut f = new_func(&[Type::I32, Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let p = b.create_entry_block();
        let next = b.create_block();
        b.jump(next, vec![p[0], p[0]]);
        let q = [
            b.append_block_param(next, Type::I32),
            b.append_block_param(next, Type::I32),
        ];
        b.switch_to_block(next);
        b.ret(Some(q[1]));
        let stats = run(&mut f, dce);
        assert_eq!(stats.removed_params, 1);
        assert_snapshot!(f.to_string());
        let again = run(&mut f, dce);
        assert!(!again.changed());
    }
}
