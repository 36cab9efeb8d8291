//! Control-flow-graph simplification.
//!
//! Four linear steps, in this order:
//!
//! 1. blocks unreachable from the entry are dropped from the layout;
//! 2. jump threading: a non-entry block that contains only `jump target(args)`, whose
//!    parameters are used nowhere else, is bypassed: every edge into it is redirected to
//!    `target`, with the block's parameters in `args` replaced by the edge's own arguments
//!    (other arguments are defined outside the block and dominate every predecessor). Blocks
//!    are visited in postorder, so chains of such blocks collapse edge by edge without
//!    rescanning;
//! 3. a branch whose two edges became identical becomes a jump;
//! 4. a non-entry block whose only incoming edge is an unconditional jump from another block
//!    is appended to that block, its parameters replaced by the jump's arguments.
//!
//! The layout keeps its relative order, so the output is deterministic.

use crate::analysis::dominators::{postorder, successors};
use crate::function::{Function, ValueDef};
use crate::instructions::{BlockCall, InstKind};
use crate::passes::support::{edge_call_mut, Aliases, PredLists};
use crate::passes::PassStats;
use cranelift_entity::EntityRef;

/// Simplifies the control-flow graph. See the module docs.
///
/// Reports dropped, bypassed and merged blocks in [`PassStats::removed_blocks`], the
/// instructions that went with them (jumps, and the contents of unreachable blocks) in
/// [`PassStats::removed_insts`], and redirected edges and branches turned into jumps in
/// [`PassStats::simplified_branches`].
pub fn simplify_cfg(func: &mut Function) -> PassStats {
    let mut stats = PassStats::default();
    let Some(entry) = func.entry() else {
        return stats;
    };
    let nblocks = func.blocks.len();

    // 1. Unreachable blocks.
    let po = postorder(func);
    if po.len() < func.layout.len() {
        let mut reachable = vec![false; nblocks];
        for b in &po {
            reachable[b.index()] = true;
        }
        for &b in &func.layout {
            if !reachable[b.index()] {
                stats.removed_blocks += 1;
                stats.removed_insts += func.blocks[b].insts.len();
            }
        }
        func.layout.retain(|b| reachable[b.index()]);
    }

    // 2. Jump threading.
    let mut preds = PredLists::new(func);
    let used_outside = params_used_outside(func);
    let mut bypassed = vec![false; nblocks];
    let mut any_bypassed = false;
    for &b in &po {
        if b == entry || func.blocks[b].insts.len() != 1 {
            continue;
        }
        let inst = func.blocks[b].insts[0];
        let InstKind::Jump(dest) = &func.insts[inst].kind else {
            continue;
        };
        if dest.block == b
            || func.blocks[b]
                .params
                .iter()
                .any(|p| used_outside[p.index()])
        {
            continue;
        }
        let target = dest.block;
        // For each argument of the jump: the index of the parameter of `b` it is, if any.
        let subst: Vec<(crate::Value, Option<usize>)> = dest
            .args
            .iter()
            .map(|&a| match func.values[a].def {
                ValueDef::Param(pb, k) if pb == b => (a, Some(k as usize)),
                _ => (a, None),
            })
            .collect();
        let mut cursor = preds.take(b);
        while let Some((e, next)) = preds.next_taken(cursor) {
            let here = cursor;
            cursor = next;
            if bypassed[e.pred.index()] {
                continue;
            }
            let Some(call) = edge_call_mut(func, e) else {
                continue;
            };
            if call.block != b {
                continue;
            }
            let args = subst
                .iter()
                .map(|&(a, k)| k.and_then(|k| call.args.get(k).copied()).unwrap_or(a))
                .collect();
            *call = BlockCall {
                block: target,
                args,
            };
            preds.relink(here, target);
            stats.simplified_branches += 1;
        }
        bypassed[b.index()] = true;
        any_bypassed = true;
        stats.removed_blocks += 1;
        stats.removed_insts += 1;
    }
    if any_bypassed {
        func.layout.retain(|b| !bypassed[b.index()]);
    }

    // 3. Branches with two identical edges.
    for &b in &func.layout {
        let Some(&inst) = func.blocks[b].insts.last() else {
            continue;
        };
        let kind = &mut func.insts[inst].kind;
        if let InstKind::Branch {
            then_dest,
            else_dest,
            ..
        } = kind
        {
            if then_dest == else_dest {
                let dest = std::mem::replace(
                    then_dest,
                    BlockCall {
                        block: b,
                        args: Vec::new(),
                    },
                );
                *kind = InstKind::Jump(dest);
                stats.simplified_branches += 1;
            }
        }
    }

    // 4. Merge blocks into their single predecessor.
    let mut incoming = vec![0u32; nblocks];
    for &b in &func.layout {
        for s in successors(func, b).into_iter().flatten() {
            incoming[s.index()] += 1;
        }
    }
    let mut aliases = Aliases::new(func);
    let mut merged = vec![false; nblocks];
    let mut any_merged = false;
    for i in 0..func.layout.len() {
        let p = func.layout[i];
        if merged[p.index()] {
            continue;
        }
        while let Some(&last) = func.blocks[p].insts.last() {
            let InstKind::Jump(call) = &func.insts[last].kind else {
                break;
            };
            let b = call.block;
            if b == p || b == entry || incoming[b.index()] != 1 || merged[b.index()] {
                break;
            }
            for (&param, &arg) in func.blocks[b].params.iter().zip(&call.args) {
                aliases.set(param, arg);
            }
            func.blocks[p].insts.pop();
            let moved = std::mem::take(&mut func.blocks[b].insts);
            func.blocks[p].insts.extend(moved);
            merged[b.index()] = true;
            any_merged = true;
            stats.removed_blocks += 1;
            stats.removed_insts += 1;
        }
    }
    if any_merged {
        func.layout.retain(|b| !merged[b.index()]);
    }
    aliases.apply(func);

    stats
}

/// For every value: true if it is a block parameter used by an instruction of another block.
fn params_used_outside(func: &Function) -> Vec<bool> {
    let mut used = vec![false; func.values.len()];
    for &b in &func.layout {
        for &inst in &func.blocks[b].insts {
            func.insts[inst].kind.for_each_operand(|v| {
                if let ValueDef::Param(pb, _) = func.values[v].def {
                    if pb != b {
                        used[v.index()] = true;
                    }
                }
            });
        }
    }
    used
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::FunctionBuilder;
    use crate::instructions::{BinaryOp, CmpOp};
    use crate::test_util::{eval, k, new_func, run};
    use crate::types::Type;
    use insta::assert_snapshot;

    #[test]
    fn drops_unreachable_blocks() {
        let mut f = new_func(&[], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        b.create_entry_block();
        let one = k(&mut b, Type::I32, 1);
        b.ret(Some(one));
        // Traced dead code lands in fresh unreachable blocks.
        let two = k(&mut b, Type::I32, 2);
        b.ret(Some(two));
        let dead = b.create_block();
        b.switch_to_block(dead);
        b.jump(dead, vec![]);
        let stats = run(&mut f, simplify_cfg);
        assert_eq!((stats.removed_blocks, stats.removed_insts), (2, 3));
        assert_snapshot!(f.to_string());
    }

    #[test]
    fn merges_chains_into_their_predecessor() {
        let mut f = new_func(&[Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let x = b.create_entry_block()[0];
        let (b1, b2, b3) = (b.create_block(), b.create_block(), b.create_block());
        let one = k(&mut b, Type::I32, 1);
        let y = b.binary(BinaryOp::Add, x, one);
        b.jump(b1, vec![y, x]);
        let p = [
            b.append_block_param(b1, Type::I32),
            b.append_block_param(b1, Type::I32),
        ];
        b.switch_to_block(b1);
        let z = b.binary(BinaryOp::Mul, p[0], p[1]);
        b.jump(b2, vec![z]);
        let q = b.append_block_param(b2, Type::I32);
        b.switch_to_block(b2);
        b.jump(b3, vec![]);
        b.switch_to_block(b3);
        let r = b.binary(BinaryOp::Sub, q, p[0]);
        b.ret(Some(r));
        let before: Vec<_> = [0u64, 3, 100].iter().map(|&a| eval(&f, &[a])).collect();
        let stats = run(&mut f, simplify_cfg);
        assert_eq!(stats.removed_blocks, 3);
        assert_snapshot!(f.to_string());
        let after: Vec<_> = [0u64, 3, 100].iter().map(|&a| eval(&f, &[a])).collect();
        assert_eq!(before, after);
    }

    #[test]
    fn threads_jumps_through_forwarding_blocks() {
        // An if/else whose arms only forward values: both edges go straight to the join.
        let mut f = new_func(&[Type::BOOL, Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let p = b.create_entry_block();
        let (c, x) = (p[0], p[1]);
        let (t, e, fwd, join) = (
            b.create_block(),
            b.create_block(),
            b.create_block(),
            b.create_block(),
        );
        let seven = k(&mut b, Type::I32, 7);
        b.branch(c, t, vec![x], e, vec![]);
        let tp = b.append_block_param(t, Type::I32);
        b.switch_to_block(t);
        b.jump(fwd, vec![tp, seven]);
        b.switch_to_block(e);
        b.jump(fwd, vec![seven, x]);
        let fp = [
            b.append_block_param(fwd, Type::I32),
            b.append_block_param(fwd, Type::I32),
        ];
        b.switch_to_block(fwd);
        b.jump(join, vec![fp[1], x, fp[0]]);
        let jp = [Type::I32; 3].map(|ty| b.append_block_param(join, ty));
        b.switch_to_block(join);
        let s = b.binary(BinaryOp::Sub, jp[0], jp[2]);
        let s = b.binary(BinaryOp::Add, s, jp[1]);
        b.ret(Some(s));
        let before: Vec<_> = [(0u64, 5u64), (1, 5), (1, 9)]
            .iter()
            .map(|&(c, x)| eval(&f, &[c, x]))
            .collect();
        let stats = run(&mut f, simplify_cfg);
        assert_eq!(stats.removed_blocks, 3);
        assert_snapshot!(f.to_string());
        let after: Vec<_> = [(0u64, 5u64), (1, 5), (1, 9)]
            .iter()
            .map(|&(c, x)| eval(&f, &[c, x]))
            .collect();
        assert_eq!(before, after);
    }

    #[test]
    fn empty_diamond_collapses() {
        let mut f = new_func(&[Type::BOOL], Some(Type::BOOL));
        let mut b = FunctionBuilder::new(&mut f);
        let c = b.create_entry_block()[0];
        let (t, e, join) = (b.create_block(), b.create_block(), b.create_block());
        b.branch(c, t, vec![], e, vec![]);
        b.switch_to_block(t);
        b.jump(join, vec![]);
        b.switch_to_block(e);
        b.jump(join, vec![]);
        b.switch_to_block(join);
        b.ret(Some(c));
        run(&mut f, simplify_cfg);
        assert_snapshot!(f.to_string());
    }

    #[test]
    fn keeps_forwarders_whose_parameters_are_used_elsewhere() {
        // block1(v) only jumps, but block2 (dominated by block1) uses v directly.
        let mut f = new_func(&[Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let x = b.create_entry_block()[0];
        let (b1, b2, b3) = (b.create_block(), b.create_block(), b.create_block());
        let c = b.cmp(CmpOp::Eq, x, x);
        b.branch(c, b1, vec![x], b3, vec![]);
        let v = b.append_block_param(b1, Type::I32);
        b.switch_to_block(b1);
        b.jump(b2, vec![]);
        b.switch_to_block(b2);
        b.ret(Some(v));
        b.switch_to_block(b3);
        b.ret(Some(x));
        run(&mut f, simplify_cfg);
        assert_snapshot!(f.to_string());
    }

    #[test]
    fn cycles_of_forwarders_terminate() {
        let mut f = new_func(&[], None);
        let mut b = FunctionBuilder::new(&mut f);
        b.create_entry_block();
        let (b1, b2) = (b.create_block(), b.create_block());
        b.jump(b1, vec![]);
        b.switch_to_block(b1);
        b.jump(b2, vec![]);
        b.switch_to_block(b2);
        b.jump(b1, vec![]);
        run(&mut f, simplify_cfg);
        let again = run(&mut f, simplify_cfg);
        assert!(!again.changed());
        assert_snapshot!(f.to_string());
    }

    #[test]
    fn loop_back_edges_are_threaded_and_merged() {
        // entry -> head <-> latch (forwarder) ; head -> exit
        let mut f = new_func(&[Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let n = b.create_entry_block()[0];
        let (head, latch, exit) = (b.create_block(), b.create_block(), b.create_block());
        let zero = k(&mut b, Type::I32, 0);
        b.jump(head, vec![zero]);
        let i = b.append_block_param(head, Type::I32);
        b.switch_to_block(head);
        let one = k(&mut b, Type::I32, 1);
        let i2 = b.binary(BinaryOp::Add, i, one);
        let c = b.cmp(CmpOp::Lt, i2, n);
        b.branch(c, latch, vec![i2], exit, vec![]);
        let l = b.append_block_param(latch, Type::I32);
        b.switch_to_block(latch);
        b.jump(head, vec![l]);
        b.switch_to_block(exit);
        b.ret(Some(i2));
        run(&mut f, simplify_cfg);
        assert_snapshot!(f.to_string());
        assert_eq!(eval(&f, &[5]), Ok(Some(5)));
    }
}
