//! The uniformity analysis: which values may differ between the threads that run a function
//! together (the threads of a GPU block), and which blocks are in divergent control flow.
//!
//! Seeds are the values known to differ (the thread index); from them, a value is divergent
//! if an operand is, if it is not plain arithmetic ([`arithmetic`]: a load or a call may differ
//! even on uniform operands), or if it is defined in divergent control flow; a block parameter
//! is divergent if an argument passed to it is or an edge into it comes from divergent
//! control flow. A branch on a divergent condition makes divergent every block on its paths up
//! to its immediate post-dominator ([`crate::analysis::PostDominators`]), where the threads
//! join again. The iteration runs to a fixpoint; it never changes code.

use crate::analysis::PostDominators;
use crate::{Block, Function, GpuIndex, Inst, InstKind, Value};
use std::collections::{HashMap, HashSet};

/// True for instructions whose result is uniform when their operands are (arithmetic, not
/// memory or calls), and for the block's own index and sizes (`blockIdx`, `blockDim`,
/// `gridDim`: the same for every thread of a block, unlike `threadIdx`). Integer division is
/// included: it may trap, but then it traps for every thread alike.
pub fn arithmetic(kind: &InstKind) -> bool {
    matches!(
        kind,
        InstKind::Const(_)
            | InstKind::GpuIndex(
                GpuIndex::BlockIdx | GpuIndex::BlockDim | GpuIndex::GridDim,
                _
            )
            | InstKind::Unary(..)
            | InstKind::Binary(..)
            | InstKind::Fma(..)
            | InstKind::Math(..)
            | InstKind::Math2(..)
            | InstKind::Cmp(..)
            | InstKind::Cast(_)
            | InstKind::Select(..)
            | InstKind::ElemPtr(..)
    )
}

/// The result of the uniformity analysis.
pub struct Divergence {
    /// Values that may differ between the threads of a block.
    pub values: HashSet<Value>,
    /// Blocks in divergent control flow.
    pub blocks: HashSet<Block>,
}

impl Divergence {
    /// Whether `v` is the same for every thread of a block.
    pub fn uniform(&self, v: Value) -> bool {
        !self.values.contains(&v)
    }
}

/// The uniformity analysis of the blocks `body` of `f`, with `seeds` the values known to
/// differ between threads (see the module docs); `None` if some block cannot reach a return.
pub fn divergence(f: &Function, body: &[Block], seeds: &[Value]) -> Option<Divergence> {
    let mut analysis = Analysis::new(f, body, seeds)?;
    let mut changed = true;
    while changed {
        changed = false;
        for &b in body {
            changed |= analysis.visit(b);
        }
    }
    Some(analysis.div)
}

/// The state of the fixed-point iteration.
struct Analysis<'a> {
    f: &'a Function,
    in_body: HashSet<Block>,
    preds: HashMap<Block, Vec<Block>>,
    ipdom: PostDominators,
    div: Divergence,
}

impl<'a> Analysis<'a> {
    fn new(f: &'a Function, body: &[Block], seeds: &[Value]) -> Option<Analysis<'a>> {
        let ipdom = PostDominators::compute(f, body)?;
        let in_body: HashSet<Block> = body.iter().copied().collect();
        let mut preds: HashMap<Block, Vec<Block>> = HashMap::new();
        for &b in body {
            for s in f.successors(b) {
                preds.entry(s).or_default().push(b);
            }
        }
        let div = Divergence {
            values: seeds.iter().copied().collect(),
            blocks: HashSet::new(),
        };
        Some(Analysis {
            f,
            in_body,
            preds,
            ipdom,
            div,
        })
    }

    /// One visit of block `b`; returns whether anything changed.
    fn visit(&mut self, b: Block) -> bool {
        let f = self.f;
        let in_div = self.div.blocks.contains(&b);
        let from_div = self
            .preds
            .get(&b)
            .is_some_and(|ps| ps.iter().any(|p| self.div.blocks.contains(p)));
        let mut changed = false;
        for (n, &p) in f.blocks[b].params.iter().enumerate() {
            if self.div.values.contains(&p) {
                continue;
            }
            if in_div || from_div || self.divergent_arg(b, n) {
                self.div.values.insert(p);
                changed = true;
            }
        }
        for &inst in &f.blocks[b].insts {
            changed |= self.visit_inst(b, inst, in_div);
        }
        changed
    }

    /// Whether some predecessor passes a non-uniform argument to parameter `n` of `b`.
    fn divergent_arg(&self, b: Block, n: usize) -> bool {
        let f = self.f;
        self.preds.get(&b).is_some_and(|ps| {
            ps.iter().any(|&pb| {
                f.terminator(pb).is_some_and(|t| {
                    f.insts[t]
                        .kind
                        .successors()
                        .filter(|c| c.block == b)
                        .any(|c| c.args.get(n).is_some_and(|a| self.div.values.contains(a)))
                })
            })
        })
    }

    /// One visit of instruction `inst` of block `b`; returns whether anything changed.
    fn visit_inst(&mut self, b: Block, inst: Inst, in_div: bool) -> bool {
        let data = &self.f.insts[inst];
        let mut changed = false;
        if let Some(r) = data.result {
            if !self.div.values.contains(&r) {
                let mut operand = false;
                data.kind
                    .for_each_operand(|v| operand |= self.div.values.contains(&v));
                if in_div || operand || !arithmetic(&data.kind) {
                    self.div.values.insert(r);
                    changed = true;
                }
            }
        }
        if let InstKind::Branch { cond, .. } = &data.kind {
            if self.div.values.contains(cond) {
                changed |= self.spread(b);
            }
        }
        changed
    }

    /// Marks the paths of the divergent branch ending `b` up to its post-dominator as
    /// divergent; returns whether anything changed.
    fn spread(&mut self, b: Block) -> bool {
        let f = self.f;
        let stop = self.ipdom.ipdom(b);
        let mut changed = false;
        let mut work: Vec<Block> = f.successors(b);
        while let Some(s) = work.pop() {
            if Some(s) == stop || !self.in_body.contains(&s) {
                continue;
            }
            if self.div.blocks.insert(s) {
                changed = true;
                work.extend(f.successors(s));
            }
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CmpOp, Const, FuncKind, FunctionBuilder, Signature, Type};

    fn func(params: usize) -> Function {
        Function::new(
            "f",
            FuncKind::Host,
            Signature {
                params: vec![Type::U32; params],
                ret: None,
            },
        )
    }

    fn konst(b: &mut FunctionBuilder<'_>, x: u64) -> Value {
        b.constant(Const {
            ty: Type::U32,
            bits: u128::from(x),
        })
    }

    /// `entry(u, t): br t < 5, a, join(1)  a: jump join(u)  join(p): br u > 0, loop, exit`
    /// `loop: jump join(p)  exit: return` with `t` divergent.
    fn diamond_and_loop() -> (Function, [Block; 5], [Value; 3]) {
        let mut f = func(2);
        let mut b = FunctionBuilder::new(&mut f);
        let p = b.create_entry_block();
        let (u, t) = (p[0], p[1]);
        let entry = b.current_block().unwrap();
        let a = b.create_block();
        let join = b.create_block();
        let jp = b.append_block_param(join, Type::U32);
        let lp = b.create_block();
        let exit = b.create_block();
        let five = konst(&mut b, 5);
        let c = b.cmp(CmpOp::Lt, t, five);
        let one = konst(&mut b, 1);
        b.branch(c, a, vec![], join, vec![one]);
        b.switch_to_block(a);
        b.jump(join, vec![u]);
        b.switch_to_block(join);
        let zero = konst(&mut b, 0);
        let d = b.cmp(CmpOp::Gt, u, zero);
        b.branch(d, lp, vec![], exit, vec![]);
        b.switch_to_block(lp);
        b.jump(join, vec![jp]);
        b.switch_to_block(exit);
        b.ret(None);
        (f, [entry, a, join, lp, exit], [u, t, jp])
    }

    #[test]
    fn immediate_post_dominators() {
        let (f, [entry, a, join, lp, exit], _) = diamond_and_loop();
        let body = [entry, a, join, lp, exit];
        let ipdom = PostDominators::compute(&f, &body).unwrap();
        assert_eq!(ipdom.ipdom(entry), Some(join));
        assert_eq!(ipdom.ipdom(a), Some(join));
        assert_eq!(ipdom.ipdom(lp), Some(join));
        assert_eq!(ipdom.ipdom(join), Some(exit));
        assert_eq!(ipdom.ipdom(exit), None);

        // A loop with no way out has no post-dominators.
        let mut f = func(0);
        let mut b = FunctionBuilder::new(&mut f);
        b.create_entry_block();
        let entry = b.current_block().unwrap();
        let spin = b.create_block();
        b.jump(spin, vec![]);
        b.switch_to_block(spin);
        b.jump(spin, vec![]);
        assert!(PostDominators::compute(&f, &[entry, spin]).is_none());
    }

    #[test]
    fn divergence_follows_branches_to_their_post_dominator() {
        let (f, [entry, a, join, lp, exit], [u, t, jp]) = diamond_and_loop();
        let body = [entry, a, join, lp, exit];
        let div = divergence(&f, &body, &[t]).unwrap();
        // The branch on `t` is divergent up to `join`, whose parameter differs per thread.
        assert!(div.blocks.contains(&a));
        assert!(!div.blocks.contains(&join) && !div.blocks.contains(&entry));
        assert!(div.values.contains(&jp) && !div.values.contains(&u));
        // The loop's branch is on `u`: uniform, its blocks too.
        assert!(!div.blocks.contains(&lp) && !div.blocks.contains(&exit));

        // With `t` uniform, nothing diverges.
        let div = divergence(&f, &body, &[]).unwrap();
        assert!(div.blocks.is_empty() && div.values.is_empty());
    }
}
