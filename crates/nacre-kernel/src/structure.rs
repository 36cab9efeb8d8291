//! Structured control flow: a function's control-flow graph as nested `if`s, loops and
//! labelled regions, for targets without `goto` (MSL forbids it; WGSL and SPIR-V's structured
//! form have none either).
//!
//! [`structure`] follows Ramsey's "Beyond Relooper" translation (ICFP 2022), which handles
//! every reducible graph without duplicating code:
//!
//! - a *follow* is a block with two or more forward in-edges (back edges excluded), or a
//!   block outside a loop whose immediate dominator is that loop's header (a loop exit); it
//!   becomes the code after a [`Stmt::Labeled`] region, placed in its immediate dominator,
//!   and edges to it are [`Stmt::Break`]s of that region;
//! - a *loop header* (the target of a back edge) wraps its dominator subtree in a
//!   [`Stmt::Loop`], and back edges are [`Stmt::Continue`]s; the regions of its exits wrap
//!   the loop, so the code after a loop comes after it;
//! - any other successor has one forward in-edge, from the branching block, and its subtree
//!   is printed in place.
//!
//! Every path through a region or loop body ends in an explicit transfer ([`Stmt::Break`],
//! [`Stmt::Continue`], [`Stmt::Return`]); a loop is left only by a `Break` of an enclosing
//! region or a `Return`. [`simplify`] then removes the transfers that a C-like target
//! expresses by falling through: `Break`s in tail position of their own region (and then
//! the region itself) and `Continue`s in tail position of their own loop body; and a region
//! that only a loop at its end breaks out of becomes that loop's exit
//! ([`Stmt::Loop::exit`]), which C's `break` reaches directly.
//!
//! A block's parameters are assigned on the edge that enters it ([`Stmt::Edge`], only for
//! targets that have parameters). Blocks unreachable from the entry are left out.
//! Irreducible control flow (a cycle with two entries, which traced code never has) is an
//! error, and so is nesting deeper than [`MAX_DEPTH`].

use cranelift_entity::EntityRef;
use nacre_ir::analysis::compute_loops;
use nacre_ir::analysis::dominators::{successors, DominatorTree};
use nacre_ir::Block;
use nacre_ir::Function;
use nacre_ir::InstKind;
use nacre_ir::LoopInfo;
use thiserror::Error;

/// The deepest nesting of regions, loops and branch arms [`structure`] produces (C compilers
/// limit nesting too: clang's default bracket depth is 256).
pub const MAX_DEPTH: usize = 200;

/// A statement of structured control flow.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Stmt {
    /// The instructions of a block, without its terminator.
    Code(Block),
    /// The parameter assignments of the edge from `from` through successor `slot` of its
    /// terminator (0: the jump's or the branch's `then` target, 1: the `else` target).
    Edge {
        /// The block whose terminator the edge leaves.
        from: Block,
        /// The successor slot.
        slot: u8,
    },
    /// The two-way branch ending block `from`, on its condition.
    If {
        /// The block that ends in the branch.
        from: Block,
        /// Statements when the condition is true.
        then: Vec<Stmt>,
        /// Statements when it is false.
        els: Vec<Stmt>,
    },
    /// The loop headed by `header`; its body starts over at its end and on
    /// [`Stmt::Continue`] of `header`.
    Loop {
        /// The loop header (the label of the loop).
        header: Block,
        /// The block whose code follows the loop, when [`Stmt::Break`] of it leaves the loop
        /// (set by [`simplify`]; `None` when the loop is left only through outer regions or
        /// returns).
        exit: Option<Block>,
        /// The body.
        body: Vec<Stmt>,
    },
    /// A region left by [`Stmt::Break`] of `follow`; the statements after it are the code
    /// of `follow`.
    Labeled {
        /// The block whose code follows the region (the label of the region).
        follow: Block,
        /// The body.
        body: Vec<Stmt>,
    },
    /// Leaves the region labelled `follow`, or the loop whose exit is `follow`.
    Break(Block),
    /// Starts the next iteration of the loop headed by the block.
    Continue(Block),
    /// The return that ends the block.
    Return(Block),
}

/// Why a function has no structured form.
#[derive(Clone, PartialEq, Eq, Debug, Error)]
pub enum StructureError {
    /// A cycle is entered at more than one block.
    #[error(
        "the control flow of @{function} is irreducible (the edge {from} -> {to} enters a \
         cycle that {to} does not dominate); it cannot be printed without goto"
    )]
    Irreducible {
        /// The function.
        function: String,
        /// The source of the offending edge.
        from: Block,
        /// Its target.
        to: Block,
    },
    /// The structured form would nest deeper than [`MAX_DEPTH`].
    #[error(
        "the control flow of @{function} nests deeper than {MAX_DEPTH} levels of branches \
         and loops; split the function"
    )]
    TooDeep {
        /// The function.
        function: String,
    },
    /// The function has no blocks, or a reachable block does not end in a terminator.
    #[error("@{function} is malformed: {what}; verify the module first")]
    Malformed {
        /// The function.
        function: String,
        /// What is wrong.
        what: String,
    },
}

/// The structured form of `func` (unsimplified; see [`simplify`]).
pub fn structure(func: &Function) -> Result<Vec<Stmt>, StructureError> {
    let entry = func.entry().ok_or_else(|| StructureError::Malformed {
        function: func.name.clone(),
        what: "it has no blocks".to_string(),
    })?;
    let s = Structurer::new(func)?;
    let mut out = Vec::new();
    s.tree_into(entry, &mut out, 0)?;
    Ok(out)
}

/// [`structure`] followed by [`simplify`].
pub fn structure_simplified(func: &Function) -> Result<Vec<Stmt>, StructureError> {
    Ok(simplify(structure(func)?))
}

/// The analysis results the translation needs.
struct Structurer<'f> {
    func: &'f Function,
    dom: DominatorTree,
    /// Per block index: the target of a back edge.
    header: Vec<bool>,
    /// Per block index: a follow (two or more forward in-edges, or a loop exit whose
    /// immediate dominator is the loop's header).
    follow: Vec<bool>,
    /// Per block index: the children in the dominator tree, in reverse postorder.
    children: Vec<Vec<Block>>,
    /// The loop nesting (for "is this block inside that loop").
    loops: LoopInfo,
}

impl<'f> Structurer<'f> {
    fn new(func: &'f Function) -> Result<Structurer<'f>, StructureError> {
        let dom = DominatorTree::compute(func);
        let n = func.blocks.len();
        let mut header = vec![false; n];
        let mut forward = vec![0u32; n];
        let mut children = vec![Vec::new(); n];
        for &b in dom.reverse_postorder() {
            let rb = dom.rpo_number(b).unwrap_or(0);
            if func.terminator(b).is_none() {
                return Err(StructureError::Malformed {
                    function: func.name.clone(),
                    what: format!("{b} does not end in a terminator"),
                });
            }
            for s in successors(func, b).into_iter().flatten() {
                let Some(rs) = dom.rpo_number(s) else {
                    continue;
                };
                if rs > rb {
                    forward[s.index()] += 1;
                } else if dom.dominates(s, b) {
                    header[s.index()] = true;
                } else {
                    return Err(StructureError::Irreducible {
                        function: func.name.clone(),
                        from: b,
                        to: s,
                    });
                }
            }
            if let Some(parent) = dom.idom(b) {
                children[parent.index()].push(b);
            }
        }
        let loops = compute_loops(func);
        let mut follow: Vec<bool> = forward.iter().map(|&c| c >= 2).collect();
        for &b in dom.reverse_postorder() {
            if let Some(h) = dom.idom(b).filter(|h| header[h.index()]) {
                if !in_loop(&loops, h, b) {
                    follow[b.index()] = true;
                }
            }
        }
        Ok(Structurer {
            func,
            dom,
            header,
            follow,
            children,
            loops,
        })
    }

    fn too_deep(&self, depth: usize) -> Result<(), StructureError> {
        if depth > MAX_DEPTH {
            Err(StructureError::TooDeep {
                function: self.func.name.clone(),
            })
        } else {
            Ok(())
        }
    }

    /// The dominator-tree children of `x` that are follows, in reverse postorder.
    fn follow_children(&self, x: Block) -> Vec<Block> {
        self.children[x.index()]
            .iter()
            .copied()
            .filter(|c| self.follow[c.index()])
            .collect()
    }

    /// Appends the code of the dominator subtree of `x` to `out`. The chain of follows (each
    /// region's last follow) is walked in a loop, so sequential code does not nest.
    fn tree_into(
        &self,
        mut x: Block,
        out: &mut Vec<Stmt>,
        depth: usize,
    ) -> Result<(), StructureError> {
        loop {
            self.too_deep(depth)?;
            let mut ys = self.follow_children(x);
            let core = if self.header[x.index()] {
                // Follows inside the loop are regions in its body; its exits wrap it.
                let (inside, outside): (Vec<Block>, Vec<Block>) =
                    ys.iter().partition(|&&y| in_loop(&self.loops, x, y));
                ys = outside;
                let body = self.node_within(x, &inside, depth + 1 + ys.len())?;
                Some(vec![Stmt::Loop {
                    header: x,
                    exit: None,
                    body,
                }])
            } else {
                None
            };
            match ys.split_last() {
                None => {
                    match core {
                        Some(core) => out.extend(core),
                        None => out.extend(self.block_code(x, depth)?),
                    }
                    return Ok(());
                }
                Some((&last, rest)) => {
                    let body = match core {
                        Some(core) => self.wrap(core, rest, depth + 1)?,
                        None => self.node_within(x, rest, depth + 1)?,
                    };
                    out.push(Stmt::Labeled { follow: last, body });
                    x = last;
                }
            }
        }
    }

    /// The code of `x` wrapped in one region per follow in `ys` (see [`Self::wrap`]).
    fn node_within(
        &self,
        x: Block,
        ys: &[Block],
        depth: usize,
    ) -> Result<Vec<Stmt>, StructureError> {
        let core = self.block_code(x, depth + ys.len())?;
        self.wrap(core, ys, depth)
    }

    /// `core` wrapped in one region per follow in `ys` (in reverse postorder: the last one
    /// outermost), each region followed by its follow's subtree.
    fn wrap(
        &self,
        core: Vec<Stmt>,
        ys: &[Block],
        depth: usize,
    ) -> Result<Vec<Stmt>, StructureError> {
        self.too_deep(depth)?;
        match ys.split_last() {
            None => Ok(core),
            Some((&last, rest)) => {
                let body = self.wrap(core, rest, depth + 1)?;
                let mut out = vec![Stmt::Labeled { follow: last, body }];
                self.tree_into(last, &mut out, depth)?;
                Ok(out)
            }
        }
    }

    /// The instructions of `x` and its terminator.
    fn block_code(&self, x: Block, depth: usize) -> Result<Vec<Stmt>, StructureError> {
        let mut out = vec![Stmt::Code(x)];
        let kind = self
            .func
            .terminator(x)
            .map(|t| &self.func.insts[t].kind)
            .ok_or_else(|| StructureError::Malformed {
                function: self.func.name.clone(),
                what: format!("{x} does not end in a terminator"),
            })?;
        match kind {
            InstKind::Jump(dest) => self.branch(x, 0, dest.block, &mut out, depth)?,
            InstKind::Branch {
                then_dest,
                else_dest,
                ..
            } => {
                let mut then = Vec::new();
                self.branch(x, 0, then_dest.block, &mut then, depth + 1)?;
                let mut els = Vec::new();
                self.branch(x, 1, else_dest.block, &mut els, depth + 1)?;
                out.push(Stmt::If { from: x, then, els });
            }
            _ => out.push(Stmt::Return(x)),
        }
        Ok(out)
    }

    /// The transfer along the edge `from` -> `to` (successor `slot`).
    fn branch(
        &self,
        from: Block,
        slot: u8,
        to: Block,
        out: &mut Vec<Stmt>,
        depth: usize,
    ) -> Result<(), StructureError> {
        if self
            .func
            .blocks
            .get(to)
            .is_some_and(|d| !d.params.is_empty())
        {
            out.push(Stmt::Edge { from, slot });
        }
        let (rf, rt) = (self.dom.rpo_number(from), self.dom.rpo_number(to));
        if rt <= rf {
            out.push(Stmt::Continue(to));
        } else if self.follow[to.index()] {
            out.push(Stmt::Break(to));
        } else {
            self.tree_into(to, out, depth)?;
        }
        Ok(())
    }
}

/// True if block `b` is in the natural loop headed by `h`.
fn in_loop(loops: &LoopInfo, h: Block, b: Block) -> bool {
    let mut cur = loops.innermost.get(b).copied().flatten();
    while let Some(c) = cur {
        if c == h {
            return true;
        }
        cur = loops.parent.get(c).copied().flatten();
    }
    false
}

/// Removes the transfers a C-like target expresses by falling through: in every region, the
/// `Break`s of that region in tail position (and the region itself when no other `Break`
/// of it remains), and in every loop body the `Continue`s of that loop in tail position.
/// An `If` whose arms are both empty disappears.
pub fn simplify(seq: Vec<Stmt>) -> Vec<Stmt> {
    let mut out = Vec::with_capacity(seq.len());
    for stmt in seq {
        match stmt {
            Stmt::Labeled { follow, body } => {
                let mut body = simplify(body);
                let total = count_breaks(&body, follow);
                let removed = remove_tail(&mut body, &Stmt::Break(follow));
                let in_last_loop = match body.last() {
                    Some(Stmt::Loop {
                        exit: None, body, ..
                    }) => count_breaks(body, follow),
                    _ => 0,
                };
                if removed == total {
                    out.extend(body);
                } else if in_last_loop == total - removed && removed == 0 {
                    // Only the loop at the end leaves the region: the region's follow is
                    // the loop's exit.
                    if let Some(Stmt::Loop { exit, .. }) = body.last_mut() {
                        *exit = Some(follow);
                    }
                    out.extend(body);
                } else {
                    out.push(Stmt::Labeled { follow, body });
                }
            }
            Stmt::Loop { header, exit, body } => {
                let mut body = simplify(body);
                remove_tail(&mut body, &Stmt::Continue(header));
                out.push(Stmt::Loop { header, exit, body });
            }
            Stmt::If { from, then, els } => {
                let (then, els) = (simplify(then), simplify(els));
                if !(then.is_empty() && els.is_empty()) {
                    out.push(Stmt::If { from, then, els });
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// The number of `Break(label)` anywhere in `seq`.
fn count_breaks(seq: &[Stmt], label: Block) -> usize {
    seq.iter()
        .map(|s| match s {
            Stmt::Break(l) => usize::from(*l == label),
            Stmt::If { then, els, .. } => count_breaks(then, label) + count_breaks(els, label),
            Stmt::Loop { body, .. } | Stmt::Labeled { body, .. } => count_breaks(body, label),
            _ => 0,
        })
        .sum()
}

/// Removes `target` where it is the last statement of `seq`, or (recursively) of an arm of
/// an `If` that is the last statement; returns how many were removed. `If`s left with two
/// empty arms are removed too.
fn remove_tail(seq: &mut Vec<Stmt>, target: &Stmt) -> usize {
    match seq.last_mut() {
        Some(last) if last == target => {
            seq.pop();
            1
        }
        Some(Stmt::If { then, els, .. }) => {
            let n = remove_tail(then, target) + remove_tail(els, target);
            if then.is_empty() && els.is_empty() {
                seq.pop();
            }
            n
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nacre_ir::test_util::{k, new_func};
    use nacre_ir::FunctionBuilder;
    use nacre_ir::Type;
    use nacre_ir::{BinaryOp, CmpOp};
    use std::fmt::Write;

    /// A compact text form of a statement list, one statement per line.
    fn render(seq: &[Stmt], indent: usize, out: &mut String) {
        let pad = "  ".repeat(indent);
        for s in seq {
            match s {
                Stmt::Code(b) => writeln!(out, "{pad}code {b}").unwrap(),
                Stmt::Edge { from, slot } => writeln!(out, "{pad}edge {from}.{slot}").unwrap(),
                Stmt::If { from, then, els } => {
                    writeln!(out, "{pad}if {from} {{").unwrap();
                    render(then, indent + 1, out);
                    writeln!(out, "{pad}}} else {{").unwrap();
                    render(els, indent + 1, out);
                    writeln!(out, "{pad}}}").unwrap();
                }
                Stmt::Loop { header, exit, body } => {
                    match exit {
                        Some(e) => writeln!(out, "{pad}loop {header} exit {e} {{").unwrap(),
                        None => writeln!(out, "{pad}loop {header} {{").unwrap(),
                    }
                    render(body, indent + 1, out);
                    writeln!(out, "{pad}}}").unwrap();
                }
                Stmt::Labeled { follow, body } => {
                    writeln!(out, "{pad}region {follow} {{").unwrap();
                    render(body, indent + 1, out);
                    writeln!(out, "{pad}}}").unwrap();
                }
                Stmt::Break(b) => writeln!(out, "{pad}break {b}").unwrap(),
                Stmt::Continue(b) => writeln!(out, "{pad}continue {b}").unwrap(),
                Stmt::Return(b) => writeln!(out, "{pad}return {b}").unwrap(),
            }
        }
    }

    fn text(seq: &[Stmt]) -> String {
        let mut s = String::new();
        render(seq, 0, &mut s);
        s
    }

    /// Every reachable block appears exactly once as `Code`.
    fn assert_each_block_once(f: &Function, seq: &[Stmt]) {
        fn collect(seq: &[Stmt], out: &mut Vec<Block>) {
            for s in seq {
                match s {
                    Stmt::Code(b) => out.push(*b),
                    Stmt::If { then, els, .. } => {
                        collect(then, out);
                        collect(els, out);
                    }
                    Stmt::Loop { body, .. } | Stmt::Labeled { body, .. } => collect(body, out),
                    _ => {}
                }
            }
        }
        let mut seen = Vec::new();
        collect(seq, &mut seen);
        let mut want: Vec<Block> = DominatorTree::compute(f).reverse_postorder().to_vec();
        seen.sort();
        want.sort();
        assert_eq!(seen, want);
    }

    /// `if x < 0 { a } else { b }; return phi`
    fn diamond() -> Function {
        let mut f = new_func(&[Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let x = b.create_entry_block()[0];
        let zero = k(&mut b, Type::I32, 0);
        let c = b.cmp(CmpOp::Lt, x, zero);
        let (t, e, j) = (b.create_block(), b.create_block(), b.create_block());
        let p = b.append_block_param(j, Type::I32);
        b.branch(c, t, vec![], e, vec![]);
        b.switch_to_block(t);
        let n = b.unary(nacre_ir::UnaryOp::Neg, x);
        b.jump(j, vec![n]);
        b.switch_to_block(e);
        b.jump(j, vec![x]);
        b.switch_to_block(j);
        b.ret(Some(p));
        f
    }

    #[test]
    fn a_diamond_becomes_an_if_without_a_region() {
        let f = diamond();
        let raw = structure(&f).unwrap();
        assert_each_block_once(&f, &raw);
        assert_eq!(
            text(&raw),
            "region block3 {\n  code block0\n  if block0 {\n    code block1\n    edge block1.0\n    break block3\n  } else {\n    code block2\n    edge block2.0\n    break block3\n  }\n}\ncode block3\nreturn block3\n"
        );
        assert_eq!(
            text(&simplify(raw)),
            "code block0\nif block0 {\n  code block1\n  edge block1.0\n} else {\n  code block2\n  edge block2.0\n}\ncode block3\nreturn block3\n"
        );
    }

    /// `i = 0; while i < n { if i == 7 { break } i += 1 }; return i`
    fn loop_with_break() -> Function {
        let mut f = new_func(&[Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let n = b.create_entry_block()[0];
        let zero = k(&mut b, Type::I32, 0);
        let (head, body, next, exit) = (
            b.create_block(),
            b.create_block(),
            b.create_block(),
            b.create_block(),
        );
        let i = b.append_block_param(head, Type::I32);
        let r = b.append_block_param(exit, Type::I32);
        b.jump(head, vec![zero]);
        b.switch_to_block(head);
        let c = b.cmp(CmpOp::Lt, i, n);
        b.branch(c, body, vec![], exit, vec![i]);
        b.switch_to_block(body);
        let seven = k(&mut b, Type::I32, 7);
        let is7 = b.cmp(CmpOp::Eq, i, seven);
        b.branch(is7, exit, vec![i], next, vec![]);
        b.switch_to_block(next);
        let one = k(&mut b, Type::I32, 1);
        let i2 = b.binary(BinaryOp::Add, i, one);
        b.jump(head, vec![i2]);
        b.switch_to_block(exit);
        b.ret(Some(r));
        f
    }

    #[test]
    fn a_loop_exit_follows_the_loop() {
        let f = loop_with_break();
        let s = structure_simplified(&f).unwrap();
        assert_each_block_once(&f, &s);
        assert_eq!(
            text(&s),
            "code block0\nedge block0.0\nloop block1 exit block4 {\n  code block1\n  if block1 {\n    code block2\n    if block2 {\n      edge block2.0\n      break block4\n    } else {\n      code block3\n      edge block3.0\n    }\n  } else {\n    edge block1.1\n    break block4\n  }\n}\ncode block4\nreturn block4\n"
        );
    }

    /// Two nested counted loops; the inner one leaves both when `i * j > limit` (a labelled
    /// break), and the outer loop's exit is shared by both: `(i, j)` packed as `i * 1000 + j`.
    fn nested_break() -> Function {
        let mut f = new_func(&[Type::I32, Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let p = b.create_entry_block();
        let (n, limit) = (p[0], p[1]);
        let zero = k(&mut b, Type::I32, 0);
        let one = k(&mut b, Type::I32, 1);
        let (oh, ob, ih, ib, inext, onext, exit) = (
            b.create_block(),
            b.create_block(),
            b.create_block(),
            b.create_block(),
            b.create_block(),
            b.create_block(),
            b.create_block(),
        );
        let i = b.append_block_param(oh, Type::I32);
        let j = b.append_block_param(ih, Type::I32);
        let r = b.append_block_param(exit, Type::I32);
        b.jump(oh, vec![zero]);
        b.switch_to_block(oh);
        let c = b.cmp(CmpOp::Lt, i, n);
        let minus = k(&mut b, Type::I32, -1);
        b.branch(c, ob, vec![], exit, vec![minus]);
        b.switch_to_block(ob);
        b.jump(ih, vec![zero]);
        b.switch_to_block(ih);
        let c = b.cmp(CmpOp::Lt, j, n);
        b.branch(c, ib, vec![], onext, vec![]);
        b.switch_to_block(ib);
        let prod = b.binary(BinaryOp::Mul, i, j);
        let big = b.cmp(CmpOp::Gt, prod, limit);
        let thousand = k(&mut b, Type::I32, 1000);
        let packed = b.binary(BinaryOp::Mul, i, thousand);
        let packed = b.binary(BinaryOp::Add, packed, j);
        b.branch(big, exit, vec![packed], inext, vec![]);
        b.switch_to_block(inext);
        let j2 = b.binary(BinaryOp::Add, j, one);
        b.jump(ih, vec![j2]);
        b.switch_to_block(onext);
        let i2 = b.binary(BinaryOp::Add, i, one);
        b.jump(oh, vec![i2]);
        b.switch_to_block(exit);
        b.ret(Some(r));
        f
    }

    #[test]
    fn a_break_out_of_two_loops_leaves_the_outer_loop() {
        let f = nested_break();
        let s = structure_simplified(&f).unwrap();
        assert_each_block_once(&f, &s);
        let t = text(&s);
        // Both loops get their exits; the break out of both loops is a break of the outer
        // loop from inside the inner one.
        assert!(
            t.starts_with("code block0\nedge block0.0\nloop block1 exit block7 {"),
            "{t}"
        );
        assert!(t.contains("loop block3 exit block6 {"), "{t}");
        assert_eq!(count_breaks(&s, Block::new(7)), 2, "{t}");
    }

    /// What running a statement list does next.
    #[derive(Debug, PartialEq)]
    enum Flow {
        Normal,
        Break(Block),
        Continue(Block),
        Return(Option<u64>),
    }

    /// Runs structured code over the instructions of `f` (the operators the tests use).
    fn run(f: &Function, seq: &[Stmt], env: &mut Vec<u64>, fuel: &mut u32) -> Flow {
        use nacre_ir::semantics;
        for s in seq {
            let flow = match s {
                Stmt::Code(b) => {
                    for &inst in &f.blocks[*b].insts {
                        let data = &f.insts[inst];
                        let ty = |v: nacre_ir::Value| f.values[v].ty.scalar().unwrap();
                        let value = match &data.kind {
                            InstKind::Const(c) => c.bits as u64,
                            InstKind::Binary(op, a, b) => {
                                let (x, y) = (env[a.index()].into(), env[b.index()].into());
                                semantics::binary(*op, ty(*a), x, y).unwrap() as u64
                            }
                            InstKind::Cmp(op, a, b) => u64::from(semantics::compare(
                                *op,
                                f.values[*a].ty,
                                env[a.index()].into(),
                                env[b.index()].into(),
                            )),
                            InstKind::Unary(op, a) => {
                                semantics::unary(*op, ty(*a), env[a.index()].into()) as u64
                            }
                            _ => continue,
                        };
                        env[data.result.unwrap().index()] = value;
                    }
                    Flow::Normal
                }
                Stmt::Edge { from, slot } => {
                    let t = f.terminator(*from).unwrap();
                    let dest = f.insts[t].kind.successors().nth(*slot as usize).unwrap();
                    let vals: Vec<u64> = dest.args.iter().map(|a| env[a.index()]).collect();
                    for (p, v) in f.blocks[dest.block].params.iter().zip(vals) {
                        env[p.index()] = v;
                    }
                    Flow::Normal
                }
                Stmt::If { from, then, els } => {
                    let t = f.terminator(*from).unwrap();
                    let InstKind::Branch { cond, .. } = &f.insts[t].kind else {
                        panic!("if without a branch");
                    };
                    if env[cond.index()] & 1 != 0 {
                        run(f, then, env, fuel)
                    } else {
                        run(f, els, env, fuel)
                    }
                }
                Stmt::Loop { header, exit, body } => loop {
                    *fuel -= 1;
                    match run(f, body, env, fuel) {
                        Flow::Normal => {}
                        Flow::Continue(h) if h == *header => {}
                        Flow::Break(e) if Some(e) == *exit => break Flow::Normal,
                        other => break other,
                    }
                },
                Stmt::Labeled { follow, body } => match run(f, body, env, fuel) {
                    Flow::Break(l) if l == *follow => Flow::Normal,
                    other => other,
                },
                Stmt::Break(l) => Flow::Break(*l),
                Stmt::Continue(h) => Flow::Continue(*h),
                Stmt::Return(b) => {
                    let t = f.terminator(*b).unwrap();
                    let InstKind::Return(v) = &f.insts[t].kind else {
                        panic!("return without a return");
                    };
                    Flow::Return(v.map(|v| env[v.index()]))
                }
            };
            if flow != Flow::Normal {
                return flow;
            }
        }
        Flow::Normal
    }

    #[test]
    fn structured_code_computes_what_the_graph_computes() {
        use nacre_ir::test_util::eval;
        let cases: Vec<(Function, Vec<Vec<u64>>)> = vec![
            (
                diamond(),
                vec![vec![5], vec![(-3i32) as u32 as u64], vec![0]],
            ),
            (loop_with_break(), vec![vec![0], vec![3], vec![7], vec![20]]),
            (
                nested_break(),
                [(0, 0), (3, 100), (5, 6), (10, 20), (4, 0)]
                    .iter()
                    .map(|&(a, b): &(u64, u64)| vec![a, b])
                    .collect(),
            ),
        ];
        for (f, inputs) in cases {
            for raw in [false, true] {
                let s = if raw {
                    structure(&f).unwrap()
                } else {
                    structure_simplified(&f).unwrap()
                };
                for args in &inputs {
                    let want = eval(&f, args).unwrap();
                    let mut env = vec![0u64; f.values.len()];
                    let entry = f.layout[0];
                    for (p, a) in f.blocks[entry].params.iter().zip(args) {
                        env[p.index()] = *a;
                    }
                    let mut fuel = 1_000_000;
                    let got = run(&f, &s, &mut env, &mut fuel);
                    assert_eq!(got, Flow::Return(want), "{args:?}\n{}", text(&s));
                }
            }
        }
    }

    #[test]
    fn irreducible_control_flow_is_an_error() {
        // entry branches into the middle of a two-block cycle.
        let mut f = new_func(&[Type::BOOL], None);
        let mut b = FunctionBuilder::new(&mut f);
        let c = b.create_entry_block()[0];
        let (x, y) = (b.create_block(), b.create_block());
        b.branch(c, x, vec![], y, vec![]);
        b.switch_to_block(x);
        b.jump(y, vec![]);
        b.switch_to_block(y);
        b.jump(x, vec![]);
        let err = structure(&f).unwrap_err();
        assert!(matches!(err, StructureError::Irreducible { .. }), "{err}");
        assert!(err.to_string().contains("irreducible"), "{err}");
    }

    #[test]
    fn long_chains_do_not_nest_but_deep_nesting_is_refused() {
        // 1000 sequential diamonds: flat after simplification.
        let mut f = new_func(&[Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let mut acc = b.create_entry_block()[0];
        for _ in 0..1000 {
            let zero = k(&mut b, Type::I32, 0);
            let c = b.cmp(CmpOp::Lt, acc, zero);
            let (t, j) = (b.create_block(), b.create_block());
            let p = b.append_block_param(j, Type::I32);
            b.branch(c, t, vec![], j, vec![acc]);
            b.switch_to_block(t);
            let n = b.unary(nacre_ir::UnaryOp::Neg, acc);
            b.jump(j, vec![n]);
            b.switch_to_block(j);
            acc = p;
        }
        b.ret(Some(acc));
        let s = structure_simplified(&f).unwrap();
        assert_each_block_once(&f, &s);
        assert!(s.iter().all(|st| !matches!(st, Stmt::Labeled { .. })));

        // 300 nested ifs: too deep.
        let mut f = new_func(&[Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let x = b.create_entry_block()[0];
        for _ in 0..300 {
            let zero = k(&mut b, Type::I32, 0);
            let c = b.cmp(CmpOp::Lt, x, zero);
            let (t, e) = (b.create_block(), b.create_block());
            b.branch(c, t, vec![], e, vec![]);
            b.switch_to_block(e);
            b.ret(Some(zero));
            b.switch_to_block(t);
        }
        b.ret(Some(x));
        let err = structure(&f).unwrap_err();
        assert!(matches!(err, StructureError::TooDeep { .. }), "{err}");
    }

    #[test]
    fn functions_without_blocks_are_malformed() {
        let f = new_func(&[], None);
        assert!(matches!(
            structure(&f),
            Err(StructureError::Malformed { .. })
        ));
    }
}
