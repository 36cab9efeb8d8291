//! Control-flow traversal, dominator trees and post-dominators.
//!
//! [`DominatorTree`] is computed with the Lengauer–Tarjan algorithm (path compression, no
//! recursion) over the blocks reachable from the entry, and then numbered in dominator-tree
//! preorder so that [`DominatorTree::dominates`] is a constant-time query. [`PostDominators`]
//! run the same algorithm on the reversed graph of a set of blocks, from a virtual exit.
//!
//! Everything here tolerates malformed functions (ids out of range, blocks missing from the
//! layout, blocks without terminator): such edges are ignored, never followed, so the verifier
//! can use the same code on unchecked input.

use crate::entities::{Block, Inst};
use crate::function::Function;
use crate::instructions::InstKind;
use cranelift_entity::EntityRef;

/// Marks an unnumbered (unreachable) block.
const NONE: u32 = u32::MAX;

/// The terminator instruction of `block` and its kind, if the block exists, is non-empty and
/// ends in a jump, branch or return.
pub(crate) fn terminator_kind(func: &Function, block: Block) -> Option<(Inst, &InstKind)> {
    let inst = *func.blocks.get(block)?.insts.last()?;
    let kind = &func.insts.get(inst)?.kind;
    kind.is_terminator().then_some((inst, kind))
}

/// The successor blocks of `block` (at most two, in terminator order; duplicates kept).
pub fn successors(func: &Function, block: Block) -> [Option<Block>; 2] {
    match terminator_kind(func, block) {
        Some((_, InstKind::Jump(dest))) => [Some(dest.block), None],
        Some((
            _,
            InstKind::Branch {
                then_dest,
                else_dest,
                ..
            },
        )) => [Some(then_dest.block), Some(else_dest.block)],
        _ => [None, None],
    }
}

/// For every block id of the function, whether the block is in the layout.
pub(crate) fn layout_mask(func: &Function) -> Vec<bool> {
    let mut mask = vec![false; func.blocks.len()];
    for &b in &func.layout {
        if let Some(m) = mask.get_mut(b.index()) {
            *m = true;
        }
    }
    mask
}

/// The blocks reachable from the entry block in postorder (successors before predecessors,
/// ignoring back edges), following only edges into laid-out blocks. Empty for a function
/// without blocks.
pub fn postorder(func: &Function) -> Vec<Block> {
    let Some(entry) = func.entry() else {
        return Vec::new();
    };
    let in_layout = layout_mask(func);
    if !in_layout.get(entry.index()).copied().unwrap_or(false) {
        return Vec::new();
    }
    let mut visited = vec![false; func.blocks.len()];
    let mut order = Vec::with_capacity(func.layout.len());
    // Each stack entry is a block and the index of the next successor to visit.
    let mut stack: Vec<(Block, usize)> = vec![(entry, 0)];
    visited[entry.index()] = true;
    while let Some(top) = stack.last_mut() {
        let (block, next) = *top;
        let succs = successors(func, block);
        if next < succs.len() {
            top.1 += 1;
            if let Some(s) = succs[next] {
                let i = s.index();
                if in_layout.get(i).copied().unwrap_or(false) && !visited[i] {
                    visited[i] = true;
                    stack.push((s, 0));
                }
            }
        } else {
            order.push(block);
            stack.pop();
        }
    }
    order
}

/// The dominator tree of a function's reachable blocks.
#[derive(Clone, Debug, Default)]
pub struct DominatorTree {
    /// Reachable blocks in reverse postorder (the entry first).
    rpo: Vec<Block>,
    /// Reverse-postorder number of each block, by block index (`NONE` when unreachable).
    rpo_number: Vec<u32>,
    /// Immediate dominator of each block, by block index (`None` for the entry and unreachable
    /// blocks).
    idom: Vec<Option<Block>>,
    /// Dominator-tree preorder number of each block, by block index.
    pre: Vec<u32>,
    /// Largest preorder number in each block's dominator subtree, by block index.
    pre_last: Vec<u32>,
}

impl DominatorTree {
    /// Computes the dominator tree of `func` (tolerates malformed functions, see the module
    /// docs).
    ///
    /// Uses the Lengauer–Tarjan algorithm with path compression (`O(e log n)`), which, unlike
    /// the simpler iterative algorithms, stays fast on blocks with many predecessors deep in
    /// the tree (the join of a long chain of nested `if`s after jump threading).
    pub fn compute(func: &Function) -> DominatorTree {
        let nblocks = func.blocks.len();
        let in_layout = layout_mask(func);
        let mut tree = DominatorTree {
            rpo: Vec::new(),
            rpo_number: vec![NONE; nblocks],
            idom: vec![None; nblocks],
            pre: vec![0; nblocks],
            pre_last: vec![0; nblocks],
        };
        let Some(entry) = func
            .entry()
            .filter(|e| in_layout.get(e.index()).copied().unwrap_or(false))
        else {
            return tree;
        };
        let graph = Graph::new(nblocks, |b, out| {
            out.extend(
                successors(func, Block::new(b))
                    .into_iter()
                    .flatten()
                    .map(|s| s.index())
                    .filter(|&s| in_layout.get(s).copied().unwrap_or(false)),
            )
        });
        let dt = graph.dominators(entry.index());
        let block = |i: u32| Block::new(dt.vertex[i as usize] as usize);
        for (w, &d) in dt.idom.iter().enumerate().skip(1) {
            tree.idom[block(w as u32).index()] = Some(block(d));
        }
        for (w, (&pre, &last)) in dt.pre.iter().zip(&dt.pre_last).enumerate() {
            tree.pre[block(w as u32).index()] = pre;
            tree.pre_last[block(w as u32).index()] = last;
        }
        tree.rpo = dt
            .postorder
            .iter()
            .rev()
            .map(|&v| Block::new(v as usize))
            .collect();
        for (i, b) in tree.rpo.iter().enumerate() {
            tree.rpo_number[b.index()] = i as u32;
        }
        tree
    }

    /// The reachable blocks in reverse postorder (the entry first).
    pub fn reverse_postorder(&self) -> &[Block] {
        &self.rpo
    }

    /// The block's position in reverse postorder, or `None` when it is unreachable.
    pub fn rpo_number(&self, block: Block) -> Option<u32> {
        self.rpo_number
            .get(block.index())
            .copied()
            .filter(|&n| n != NONE)
    }

    /// True if the block is reachable from the entry.
    pub fn is_reachable(&self, block: Block) -> bool {
        self.rpo_number(block).is_some()
    }

    /// The immediate dominator of a block (`None` for the entry and unreachable blocks).
    pub fn idom(&self, block: Block) -> Option<Block> {
        self.idom.get(block.index()).copied().flatten()
    }

    /// True if every path from the entry to `b` passes through `a` (a block dominates itself).
    /// False when either block is unreachable.
    pub fn dominates(&self, a: Block, b: Block) -> bool {
        if !self.is_reachable(a) || !self.is_reachable(b) {
            return false;
        }
        let (pa, pb) = (self.pre[a.index()], self.pre[b.index()]);
        pa <= pb && pb <= self.pre_last[a.index()]
    }
}

/// A directed graph on dense node numbers `0..n`, in compressed rows.
struct Graph {
    start: Vec<u32>,
    edges: Vec<u32>,
}

/// The dominator tree of a [`Graph`] from a root, in DFS preorder numbers.
struct DenseDominators {
    /// Node of each preorder number.
    vertex: Vec<u32>,
    /// Immediate dominator of each preorder number (entry 0, the root, is unused).
    idom: Vec<u32>,
    /// Dominator-tree preorder number of each preorder number.
    pre: Vec<u32>,
    /// Largest dominator-tree preorder number in each subtree.
    pre_last: Vec<u32>,
    /// Reached nodes in DFS postorder.
    postorder: Vec<u32>,
}

impl Graph {
    /// The graph whose node `i` has the edges `succs(i, out)` pushes.
    fn new(n: usize, mut succs: impl FnMut(usize, &mut Vec<usize>)) -> Graph {
        let mut start = Vec::with_capacity(n + 1);
        let mut edges = Vec::new();
        let mut out = Vec::new();
        start.push(0);
        for i in 0..n {
            out.clear();
            succs(i, &mut out);
            edges.extend(out.iter().map(|&s| s as u32));
            start.push(edges.len() as u32);
        }
        Graph { start, edges }
    }

    fn succs(&self, v: u32) -> &[u32] {
        &self.edges[self.start[v as usize] as usize..self.start[v as usize + 1] as usize]
    }

    /// Lengauer–Tarjan with path compression (`O(e log n)`) over the nodes reachable from
    /// `root`, then a preorder numbering of the tree for constant-time dominance queries.
    fn dominators(&self, root: usize) -> DenseDominators {
        let nnodes = self.start.len() - 1;
        // Depth-first search: preorder numbers (`dfn`), DFS-tree parents and postorder.
        let mut dfn = vec![NONE; nnodes];
        let mut vertex: Vec<u32> = Vec::new();
        let mut parent: Vec<u32> = Vec::new();
        let mut postorder: Vec<u32> = Vec::new();
        let mut stack: Vec<(u32, usize)> = vec![(root as u32, 0)];
        dfn[root] = 0;
        vertex.push(root as u32);
        parent.push(NONE);
        while let Some(top) = stack.last_mut() {
            let (node, next) = *top;
            let succs = self.succs(node);
            if next < succs.len() {
                top.1 += 1;
                let s = succs[next];
                if dfn[s as usize] == NONE {
                    dfn[s as usize] = vertex.len() as u32;
                    parent.push(dfn[node as usize]);
                    vertex.push(s);
                    stack.push((s, 0));
                }
            } else {
                postorder.push(node);
                stack.pop();
            }
        }
        let n = vertex.len();

        // Predecessors by preorder number, in compressed rows (reachable sources only).
        let mut pred_start = vec![0u32; n + 1];
        for &b in &vertex {
            for &s in self.succs(b) {
                if dfn[s as usize] != NONE {
                    pred_start[dfn[s as usize] as usize + 1] += 1;
                }
            }
        }
        for i in 0..n {
            pred_start[i + 1] += pred_start[i];
        }
        let mut fill = pred_start.clone();
        let mut preds = vec![0u32; pred_start[n] as usize];
        for (bn, &b) in vertex.iter().enumerate() {
            for &s in self.succs(b) {
                let sn = dfn[s as usize];
                if sn != NONE {
                    preds[fill[sn as usize] as usize] = bn as u32;
                    fill[sn as usize] += 1;
                }
            }
        }

        // Lengauer–Tarjan, "simple" version, all in preorder numbers.
        let mut semi: Vec<u32> = (0..n as u32).collect();
        let mut idom = vec![NONE; n];
        let mut ancestor = vec![NONE; n];
        let mut label: Vec<u32> = (0..n as u32).collect();
        let mut bucket_head = vec![NONE; n];
        let mut bucket_next = vec![NONE; n];
        let mut path: Vec<u32> = Vec::new();
        for w in (1..n).rev() {
            for &v in &preds[pred_start[w] as usize..pred_start[w + 1] as usize] {
                let u = eval(v, &mut ancestor, &mut label, &semi, &mut path);
                if semi[u as usize] < semi[w] {
                    semi[w] = semi[u as usize];
                }
            }
            let s = semi[w] as usize;
            bucket_next[w] = bucket_head[s];
            bucket_head[s] = w as u32;
            let p = parent[w];
            ancestor[w] = p;
            let mut v = std::mem::replace(&mut bucket_head[p as usize], NONE);
            while v != NONE {
                let u = eval(v, &mut ancestor, &mut label, &semi, &mut path);
                idom[v as usize] = if semi[u as usize] < semi[v as usize] {
                    u
                } else {
                    p
                };
                v = bucket_next[v as usize];
            }
        }
        for w in 1..n {
            if idom[w] != semi[w] {
                idom[w] = idom[idom[w] as usize];
            }
        }
        let (pre, pre_last) = tree_preorder(&idom);
        DenseDominators {
            vertex,
            idom,
            pre,
            pre_last,
            postorder,
        }
    }
}

/// Preorder numbers of a tree given by parent links (`idom[0]` is the root's, unused), and the
/// largest number in each subtree.
fn tree_preorder(idom: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let n = idom.len();
    let mut pre = vec![0u32; n];
    let mut pre_last = vec![0u32; n];
    if n == 0 {
        return (pre, pre_last);
    }
    let mut child_start = vec![0u32; n + 1];
    for &d in idom.iter().skip(1) {
        child_start[d as usize + 1] += 1;
    }
    for i in 0..n {
        child_start[i + 1] += child_start[i];
    }
    let mut fill = child_start.clone();
    let mut children = vec![0u32; n - 1];
    for (b, &d) in idom.iter().enumerate().skip(1) {
        children[fill[d as usize] as usize] = b as u32;
        fill[d as usize] += 1;
    }
    let mut counter = 0u32;
    let mut stack: Vec<(u32, u32)> = vec![(0, child_start[0])];
    while let Some(top) = stack.last_mut() {
        let (node, next) = *top;
        if next < child_start[node as usize + 1] {
            top.1 += 1;
            let child = children[next as usize];
            counter += 1;
            pre[child as usize] = counter;
            stack.push((child, child_start[child as usize]));
        } else {
            pre_last[node as usize] = counter;
            stack.pop();
        }
    }
    (pre, pre_last)
}

/// Immediate post-dominators of a set of blocks (a region of a function, or all of it), with
/// every `return` flowing to a virtual exit and edges leaving the set ignored.
#[derive(Clone, Debug)]
pub struct PostDominators {
    ipdom: std::collections::HashMap<Block, Option<Block>>,
}

impl PostDominators {
    /// The post-dominators of `body` (blocks of `func`), or `None` if some block of `body`
    /// cannot reach a return within it (an endless loop: nothing post-dominates it).
    pub fn compute(func: &Function, body: &[Block]) -> Option<PostDominators> {
        let n = body.len();
        let exit = n;
        let index: std::collections::HashMap<Block, usize> =
            body.iter().enumerate().map(|(i, &b)| (b, i)).collect();
        // The reversed graph: the exit's successors are the returning blocks, a block's are
        // its predecessors within `body`.
        let mut reversed: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
        for (i, &b) in body.iter().enumerate() {
            for s in successors(func, b).into_iter().flatten() {
                if let Some(&j) = index.get(&s) {
                    reversed[j].push(i);
                }
            }
            if matches!(terminator_kind(func, b), Some((_, InstKind::Return(_)))) {
                reversed[exit].push(i);
            }
        }
        let graph = Graph::new(n + 1, |i, out| out.extend_from_slice(&reversed[i]));
        let dt = graph.dominators(exit);
        if dt.vertex.len() != n + 1 {
            return None;
        }
        let ipdom = dt
            .vertex
            .iter()
            .zip(&dt.idom)
            .skip(1)
            .map(|(&v, &d)| {
                let d = dt.vertex[d as usize] as usize;
                (body[v as usize], (d != exit).then(|| body[d]))
            })
            .collect();
        Some(PostDominators { ipdom })
    }

    /// The immediate post-dominator of `block` (`None`: only the exit post-dominates it, or
    /// the block is not in the set).
    pub fn ipdom(&self, block: Block) -> Option<Block> {
        self.ipdom.get(&block).copied().flatten()
    }
}

/// Lengauer–Tarjan `EVAL`: the vertex with the smallest semidominator on the forest path from
/// `v` to its root (excluded), compressing the path. Iterative, so deep trees cannot overflow
/// the stack.
fn eval(v: u32, ancestor: &mut [u32], label: &mut [u32], semi: &[u32], path: &mut Vec<u32>) -> u32 {
    if ancestor[v as usize] == NONE {
        return v;
    }
    // Collect the path up to the vertex just below the root of v's tree.
    path.clear();
    let mut x = v;
    while ancestor[ancestor[x as usize] as usize] != NONE {
        path.push(x);
        x = ancestor[x as usize];
    }
    // Compress from the top down: each vertex inherits its ancestor's best label.
    while let Some(y) = path.pop() {
        let a = ancestor[y as usize];
        if semi[label[a as usize] as usize] < semi[label[y as usize] as usize] {
            label[y as usize] = label[a as usize];
        }
        ancestor[y as usize] = ancestor[a as usize];
    }
    label[v as usize]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::FunctionBuilder;
    use crate::function::{FuncKind, Signature};
    use crate::types::Type;

    /// entry -> (a | b) -> join -> loop header <-> body, header -> exit; plus an unreachable
    /// block.
    fn diamond_and_loop() -> (Function, Vec<Block>) {
        let sig = Signature {
            params: vec![Type::BOOL],
            ret: None,
        };
        let mut f = Function::new("f", FuncKind::Host, sig);
        let mut b = FunctionBuilder::new(&mut f);
        let p = b.create_entry_block();
        let entry = b.current_block().unwrap();
        let (a, bb, join, header, body, exit, dead) = (
            b.create_block(),
            b.create_block(),
            b.create_block(),
            b.create_block(),
            b.create_block(),
            b.create_block(),
            b.create_block(),
        );
        b.branch(p[0], a, vec![], bb, vec![]);
        b.switch_to_block(a);
        b.jump(join, vec![]);
        b.switch_to_block(bb);
        b.jump(join, vec![]);
        b.switch_to_block(join);
        b.jump(header, vec![]);
        b.switch_to_block(header);
        b.branch(p[0], body, vec![], exit, vec![]);
        b.switch_to_block(body);
        b.jump(header, vec![]);
        b.switch_to_block(exit);
        b.ret(None);
        b.switch_to_block(dead);
        b.jump(exit, vec![]);
        (f, vec![entry, a, bb, join, header, body, exit, dead])
    }

    #[test]
    fn idoms_and_dominance() {
        let (f, bl) = diamond_and_loop();
        let [entry, a, bb, join, header, body, exit, dead] = bl[..] else {
            unreachable!()
        };
        let dt = DominatorTree::compute(&f);
        assert_eq!(dt.idom(entry), None);
        assert_eq!(dt.idom(a), Some(entry));
        assert_eq!(dt.idom(bb), Some(entry));
        assert_eq!(dt.idom(join), Some(entry));
        assert_eq!(dt.idom(header), Some(join));
        assert_eq!(dt.idom(body), Some(header));
        assert_eq!(dt.idom(exit), Some(header));
        assert!(dt.dominates(entry, exit));
        assert!(dt.dominates(header, header));
        assert!(dt.dominates(join, body));
        assert!(!dt.dominates(a, join));
        assert!(!dt.dominates(body, exit));
        assert!(!dt.is_reachable(dead));
        assert!(!dt.dominates(dead, exit));
        assert!(!dt.dominates(entry, dead));
        assert_eq!(dt.reverse_postorder().first(), Some(&entry));
        assert_eq!(dt.reverse_postorder().len(), 7);
    }

    #[test]
    fn empty_function_has_empty_tree() {
        let f = Function::new("f", FuncKind::Host, Signature::default());
        let dt = DominatorTree::compute(&f);
        assert!(dt.reverse_postorder().is_empty());
        assert!(postorder(&f).is_empty());
    }

    /// Blocks reachable from the entry when `removed` is deleted from the graph.
    fn reachable_without(f: &Function, removed: Option<Block>) -> Vec<bool> {
        let mut seen = vec![false; f.blocks.len()];
        let entry = f.layout[0];
        if Some(entry) == removed {
            return seen;
        }
        let mut work = vec![entry];
        seen[entry.index()] = true;
        while let Some(b) = work.pop() {
            for s in successors(f, b).into_iter().flatten() {
                if Some(s) != removed && !seen[s.index()] {
                    seen[s.index()] = true;
                    work.push(s);
                }
            }
        }
        seen
    }

    #[test]
    fn matches_the_definition_on_random_graphs() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..300 {
            let n = 2 + next(30);
            let sig = Signature {
                params: vec![Type::BOOL],
                ret: None,
            };
            let mut f = Function::new("f", FuncKind::Host, sig);
            let mut b = FunctionBuilder::new(&mut f);
            let c = b.create_entry_block()[0];
            let mut blocks = vec![b.current_block().unwrap()];
            blocks.extend((1..n).map(|_| b.create_block()));
            for &blk in &blocks {
                b.switch_to_block(blk);
                match next(4) {
                    0 => {
                        b.ret(None);
                    }
                    1 => {
                        b.jump(blocks[next(n)], vec![]);
                    }
                    _ => {
                        b.branch(c, blocks[next(n)], vec![], blocks[next(n)], vec![]);
                    }
                }
            }
            let dt = DominatorTree::compute(&f);
            let reach = reachable_without(&f, None);
            for &x in &blocks {
                assert_eq!(dt.is_reachable(x), reach[x.index()]);
            }
            for &d in &blocks {
                let without = reachable_without(&f, Some(d));
                for &x in &blocks {
                    let expect =
                        reach[d.index()] && reach[x.index()] && (d == x || !without[x.index()]);
                    assert_eq!(dt.dominates(d, x), expect, "{d} dom {x}?\n{f}");
                }
            }
            // The immediate dominator is the closest strict dominator.
            for &x in &blocks {
                if let Some(i) = dt.idom(x) {
                    assert!(dt.dominates(i, x) && i != x);
                    for &d in &blocks {
                        if d != x && dt.dominates(d, x) {
                            assert!(dt.dominates(d, i), "{d} dominates {x} but not its idom {i}");
                        }
                    }
                }
            }
        }
    }
}
