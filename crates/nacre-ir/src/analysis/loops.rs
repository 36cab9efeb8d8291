//! Loop detection: natural loops, their nesting, and the loop depth of every block.
//!
//! A back edge is an edge `latch -> header` whose target dominates its source; the natural loop
//! of a header is the header plus every block that reaches one of its latches without passing
//! through the header. Loops with the same header are one loop. Headers are processed innermost
//! first (decreasing reverse-postorder number: a header's dominators come earlier), and the
//! backward walk of an outer loop jumps over already-found inner loops through their outermost
//! known header (a union-find with path compression), so the analysis is near-linear.
//!
//! Retreating edges whose target does not dominate the source (irreducible control flow) do not
//! form natural loops and are ignored. This is an analysis: it never changes code.

use crate::analysis::dominators::DominatorTree;
use crate::entities::Block;
use crate::function::Function;
use crate::passes::support::PredLists;
use cranelift_entity::{EntityRef, SecondaryMap};

/// Loop structure of a function, computed by [`compute_loops`].
#[derive(Clone, PartialEq, Debug, Default)]
pub struct LoopInfo {
    /// Loop headers, outermost first in layout order.
    pub headers: Vec<Block>,
    /// For each loop header, the header of the enclosing loop (if any).
    pub parent: SecondaryMap<Block, Option<Block>>,
    /// Loop nesting depth of each block (0 = not in a loop).
    pub depth: SecondaryMap<Block, u32>,
    /// The innermost loop header containing each block (if any).
    pub innermost: SecondaryMap<Block, Option<Block>>,
}

impl LoopInfo {
    /// Whether `block` is in the loop headed by `header` (nested loops included).
    pub fn contains(&self, header: Block, block: Block) -> bool {
        let mut h = self.innermost[block];
        while let Some(x) = h {
            if x == header {
                return true;
            }
            h = self.parent[x];
        }
        false
    }
}

/// Computes the loop structure of `func`.
pub fn compute_loops(func: &Function) -> LoopInfo {
    let dom = DominatorTree::compute(func);
    let nblocks = func.blocks.len();
    let rpo = dom.reverse_postorder();

    let preds = PredLists::new(func);
    // Headers are the targets of back edges; innermost first: a header dominated by another
    // comes later in reverse postorder.
    let mut headers_rpo: Vec<Block> = rpo
        .iter()
        .copied()
        .filter(|&h| preds.edges(h).any(|e| dom.dominates(h, e.pred)))
        .collect();
    headers_rpo.reverse();

    let mut innermost: SecondaryMap<Block, Option<Block>> = SecondaryMap::with_capacity(nblocks);
    let mut parent: SecondaryMap<Block, Option<Block>> = SecondaryMap::with_capacity(nblocks);
    // Union-find over headers: the outermost header found so far for a header's loop.
    let mut top: Vec<Option<Block>> = vec![None; nblocks];
    // The header whose walk last visited each block.
    let mut visited: Vec<Option<Block>> = vec![None; nblocks];
    let mut work: Vec<Block> = Vec::new();

    for &h in &headers_rpo {
        innermost[h] = Some(h);
        visited[h.index()] = Some(h);
        work.extend(
            preds
                .edges(h)
                .map(|e| e.pred)
                .filter(|&p| dom.dominates(h, p)),
        );
        while let Some(b) = work.pop() {
            // The outermost loop already containing `b`, represented by its header.
            let x = match innermost[b] {
                Some(inner) if inner != h => find_top(&mut top, inner),
                _ => b,
            };
            if visited[x.index()] == Some(h) {
                continue;
            }
            visited[x.index()] = Some(h);
            if innermost[x].is_none() {
                innermost[x] = Some(h);
            } else {
                // `x` heads a loop nested in this one.
                parent[x] = Some(h);
                top[x.index()] = Some(h);
            }
            work.extend(
                preds
                    .edges(x)
                    .map(|e| e.pred)
                    .filter(|&p| dom.is_reachable(p)),
            );
        }
    }

    // Depths: parents come before children in reverse postorder.
    let mut depth: SecondaryMap<Block, u32> = SecondaryMap::with_capacity(nblocks);
    for &h in headers_rpo.iter().rev() {
        depth[h] = parent[h].map_or(0, |p| depth[p]) + 1;
    }
    for &b in rpo {
        if let Some(h) = innermost[b] {
            if h != b {
                depth[b] = depth[h];
            }
        }
    }

    let mut headers = headers_rpo;
    let mut layout_pos = vec![u32::MAX; nblocks];
    for (i, b) in func.layout.iter().enumerate() {
        if let Some(slot) = layout_pos.get_mut(b.index()) {
            *slot = i as u32;
        }
    }
    headers.sort_by_key(|h| layout_pos[h.index()]);
    LoopInfo {
        headers,
        parent,
        depth,
        innermost,
    }
}

/// The outermost known header of the loop headed by `h`, compressing the path.
fn find_top(top: &mut [Option<Block>], h: Block) -> Block {
    let mut root = h;
    while let Some(next) = top[root.index()] {
        root = next;
    }
    let mut cur = h;
    while let Some(next) = top[cur.index()] {
        top[cur.index()] = Some(root);
        cur = next;
    }
    root
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::FunctionBuilder;
    use crate::test_util::new_func;
    use crate::types::Type;
    use insta::assert_snapshot;

    /// Two nested loops followed by a third, sibling loop; plus a self-loop inside the inner one.
    #[test]
    fn nested_and_sibling_loops() {
        let mut f = new_func(&[Type::BOOL], None);
        let mut b = FunctionBuilder::new(&mut f);
        let c = b.create_entry_block()[0];
        let entry = b.current_block().unwrap();
        let [outer, inner, spin, inner_latch, outer_latch, third, exit] =
            [(); 7].map(|_| b.create_block());
        b.jump(outer, vec![]);
        b.switch_to_block(outer);
        b.jump(inner, vec![]);
        b.switch_to_block(inner);
        b.jump(spin, vec![]);
        b.switch_to_block(spin);
        b.branch(c, spin, vec![], inner_latch, vec![]);
        b.switch_to_block(inner_latch);
        b.branch(c, inner, vec![], outer_latch, vec![]);
        b.switch_to_block(outer_latch);
        b.branch(c, outer, vec![], third, vec![]);
        b.switch_to_block(third);
        b.branch(c, third, vec![], exit, vec![]);
        b.switch_to_block(exit);
        b.ret(None);
        let info = compute_loops(&f);
        assert_eq!(info.headers.len(), 4);
        assert_eq!(info.headers, vec![outer, inner, spin, third]);
        assert_eq!(info.parent[outer], None);
        assert_eq!(info.parent[inner], Some(outer));
        assert_eq!(info.parent[spin], Some(inner));
        assert_eq!(info.parent[third], None);
        let depths: Vec<u32> = f.layout.iter().map(|&b| info.depth[b]).collect();
        assert_eq!(depths, vec![0, 1, 2, 3, 2, 1, 1, 0]);
        assert_eq!(info.innermost[entry], None);
        assert_eq!(info.innermost[inner_latch], Some(inner));
        assert_eq!(info.innermost[outer_latch], Some(outer));
        assert_eq!(info.innermost[exit], None);
        assert_snapshot!(crate::printer::with_loops(&f).to_string());
    }

    #[test]
    fn irreducible_cycles_are_not_natural_loops() {
        // entry branches into the middle of a two-block cycle: neither block dominates the other.
        let mut f = new_func(&[Type::BOOL], None);
        let mut b = FunctionBuilder::new(&mut f);
        let c = b.create_entry_block()[0];
        let [x, y, exit] = [(); 3].map(|_| b.create_block());
        b.branch(c, x, vec![], y, vec![]);
        b.switch_to_block(x);
        b.branch(c, y, vec![], exit, vec![]);
        b.switch_to_block(y);
        b.branch(c, x, vec![], exit, vec![]);
        b.switch_to_block(exit);
        b.ret(None);
        let info = compute_loops(&f);
        assert!(info.headers.is_empty());
        assert!(f.layout.iter().all(|&b| info.depth[b] == 0));
    }

    #[test]
    fn loop_with_several_latches_and_an_unreachable_block() {
        let mut f = new_func(&[Type::BOOL], None);
        let mut b = FunctionBuilder::new(&mut f);
        let c = b.create_entry_block()[0];
        let [head, l1, l2, exit, dead] = [(); 5].map(|_| b.create_block());
        b.jump(head, vec![]);
        b.switch_to_block(head);
        b.branch(c, l1, vec![], l2, vec![]);
        b.switch_to_block(l1);
        b.branch(c, head, vec![], exit, vec![]);
        b.switch_to_block(l2);
        b.jump(head, vec![]);
        b.switch_to_block(exit);
        b.ret(None);
        b.switch_to_block(dead);
        b.jump(head, vec![]);
        let info = compute_loops(&f);
        assert_eq!(info.headers, vec![head]);
        assert_eq!(
            [head, l1, l2, exit, dead].map(|b| info.depth[b]),
            [1, 1, 1, 0, 0]
        );
        assert_eq!(info.innermost[l2], Some(head));
    }
}
