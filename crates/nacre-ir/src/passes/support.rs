//! Machinery shared by the passes: predecessor edges, value substitution and block-parameter
//! removal. All of it assumes a function that passes the verifier.

use crate::entities::{Block, Value};
use crate::function::{Function, ValueDef};
use crate::instructions::{BlockCall, Const, InstKind};
use cranelift_entity::EntityRef;

/// A control-flow edge, named by its source block and the successor slot of the source's
/// terminator (0: the jump target or the branch's `then` target; 1: the branch's `else` target).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct Edge {
    /// The block the edge leaves.
    pub pred: Block,
    /// The successor slot in `pred`'s terminator.
    pub slot: u8,
}

/// The call an edge stands for (`None` if the edge no longer exists).
pub(crate) fn edge_call(func: &Function, e: Edge) -> Option<&BlockCall> {
    let inst = *func.blocks[e.pred].insts.last()?;
    match &func.insts[inst].kind {
        InstKind::Jump(dest) if e.slot == 0 => Some(dest),
        InstKind::Branch { then_dest, .. } if e.slot == 0 => Some(then_dest),
        InstKind::Branch { else_dest, .. } if e.slot == 1 => Some(else_dest),
        _ => None,
    }
}

/// The call an edge stands for, mutably (`None` if the edge no longer exists).
pub(crate) fn edge_call_mut(func: &mut Function, e: Edge) -> Option<&mut BlockCall> {
    let inst = *func.blocks[e.pred].insts.last()?;
    match &mut func.insts[inst].kind {
        InstKind::Jump(dest) if e.slot == 0 => Some(dest),
        InstKind::Branch { then_dest, .. } if e.slot == 0 => Some(then_dest),
        InstKind::Branch { else_dest, .. } if e.slot == 1 => Some(else_dest),
        _ => None,
    }
}

/// Marks the end of a [`PredLists`] list.
const END: u32 = u32::MAX;

/// The incoming edges of every block, from the terminators of all laid-out blocks (a block
/// whose branch targets `b` twice contributes two edges). One linked list per block in a shared
/// arena, so building costs two allocations and edges can move between lists for free.
pub(crate) struct PredLists {
    /// First node of each block's list, by block index.
    head: Vec<u32>,
    /// The arena: an edge and the next node of its list.
    nodes: Vec<(Edge, u32)>,
}

impl PredLists {
    /// The incoming edges of every block of `func`, each list in layout order of the sources.
    pub fn new(func: &Function) -> PredLists {
        let mut lists = PredLists {
            head: vec![END; func.blocks.len()],
            nodes: Vec::with_capacity(func.layout.len() * 2),
        };
        for &b in func.layout.iter().rev() {
            let Some(&inst) = func.blocks[b].insts.last() else {
                continue;
            };
            let kind = &func.insts[inst].kind;
            let succs: [Option<&BlockCall>; 2] = match kind {
                InstKind::Jump(dest) => [Some(dest), None],
                InstKind::Branch {
                    then_dest,
                    else_dest,
                    ..
                } => [Some(then_dest), Some(else_dest)],
                _ => [None, None],
            };
            for (slot, call) in succs.iter().enumerate().rev() {
                if let Some(call) = call {
                    lists.push(
                        call.block,
                        Edge {
                            pred: b,
                            slot: slot as u8,
                        },
                    );
                }
            }
        }
        lists
    }

    /// Prepends an edge to `block`'s list.
    pub fn push(&mut self, block: Block, edge: Edge) {
        let i = self.nodes.len() as u32;
        self.nodes.push((edge, self.head[block.index()]));
        self.head[block.index()] = i;
    }

    /// The edges into `block`.
    pub fn edges(&self, block: Block) -> PredIter<'_> {
        PredIter {
            lists: self,
            node: self.head[block.index()],
        }
    }

    /// Empties `block`'s list and returns a cursor over its former nodes; see [`Self::next_taken`].
    pub fn take(&mut self, block: Block) -> u32 {
        std::mem::replace(&mut self.head[block.index()], END)
    }

    /// The edge at a cursor returned by [`Self::take`] and the cursor after it, or `None` at
    /// the end.
    pub fn next_taken(&self, cursor: u32) -> Option<(Edge, u32)> {
        self.nodes.get(cursor as usize).copied()
    }

    /// Moves the taken node at `cursor` to the front of `block`'s list.
    pub fn relink(&mut self, cursor: u32, block: Block) {
        self.nodes[cursor as usize].1 = self.head[block.index()];
        self.head[block.index()] = cursor;
    }
}

/// Iterator over one block's incoming edges.
pub(crate) struct PredIter<'a> {
    lists: &'a PredLists,
    node: u32,
}

impl Iterator for PredIter<'_> {
    type Item = Edge;

    fn next(&mut self) -> Option<Edge> {
        let &(edge, next) = self.lists.nodes.get(self.node as usize)?;
        self.node = next;
        Some(edge)
    }
}

/// The constant a value is defined by, if its defining instruction is a `const`.
pub(crate) fn const_of(func: &Function, v: Value) -> Option<Const> {
    match func.values[v].def {
        ValueDef::Result(inst) => match func.insts[inst].kind {
            InstKind::Const(c) => Some(c),
            _ => None,
        },
        ValueDef::Param(..) => None,
    }
}

/// A substitution of values by other values, applied to the whole function at once.
///
/// Chains (`a -> b -> c`) are followed and compressed, so applying many substitutions costs one
/// sweep over the function's instructions.
pub(crate) struct Aliases {
    /// The replacement of each value, by value index (allocated on the first substitution).
    map: Vec<Option<Value>>,
    /// The number of values of the function.
    nvalues: usize,
    /// True once a substitution was recorded.
    any: bool,
}

impl Aliases {
    /// An empty substitution sized for `func`'s values.
    pub fn new(func: &Function) -> Aliases {
        Aliases {
            map: Vec::new(),
            nvalues: func.values.len(),
            any: false,
        }
    }

    /// Records that every use of `from` must become a use of `to`.
    pub fn set(&mut self, from: Value, to: Value) {
        debug_assert_ne!(from, to, "a value cannot be replaced by itself");
        if from.index() >= self.map.len() {
            self.map.resize(self.nvalues.max(from.index() + 1), None);
        }
        self.map[from.index()] = Some(to);
        self.any = true;
    }

    /// The value `v` stands for after all substitutions.
    pub fn resolve(&mut self, v: Value) -> Value {
        let mut root = v;
        while let Some(Some(next)) = self.map.get(root.index()) {
            root = *next;
        }
        // Path compression: point every value on the chain straight at the root.
        let mut cur = v;
        while cur != root {
            let next = self.map[cur.index()].unwrap_or(root);
            self.map[cur.index()] = Some(root);
            cur = next;
        }
        root
    }

    /// Rewrites the operands of every instruction of every laid-out block.
    pub fn apply(&mut self, func: &mut Function) {
        if !self.any {
            return;
        }
        for &b in &func.layout {
            for &inst in &func.blocks[b].insts {
                func.insts[inst].kind.map_operands(|v| self.resolve(v));
            }
        }
    }
}

/// Removes the parameters of `block` whose `keep` flag is false, renumbering the definitions of
/// the remaining ones. The caller removes the matching jump arguments (see [`filter_args`]).
/// Returns the number of parameters removed.
pub(crate) fn remove_params(func: &mut Function, block: Block, keep: &[bool]) -> usize {
    let params = std::mem::take(&mut func.blocks[block].params);
    let mut kept = Vec::with_capacity(params.len());
    for (i, &p) in params.iter().enumerate() {
        if keep.get(i).copied().unwrap_or(true) {
            if let ValueDef::Param(..) = func.values[p].def {
                func.values[p].def = ValueDef::Param(block, kept.len() as u32);
            }
            kept.push(p);
        }
    }
    let removed = params.len() - kept.len();
    func.blocks[block].params = kept;
    removed
}

/// Removes from every edge of every laid-out block the arguments of parameters that were
/// removed: `masks[b]`, when present, holds the keep flags of block `b`'s former parameters.
pub(crate) fn filter_args(func: &mut Function, masks: &[Option<Vec<bool>>]) {
    for &b in &func.layout {
        let Some(&inst) = func.blocks[b].insts.last() else {
            continue;
        };
        for call in func.insts[inst].kind.successors_mut() {
            if let Some(Some(mask)) = masks.get(call.block.index()) {
                let mut i = 0;
                call.args.retain(|_| {
                    let keep = mask.get(i).copied().unwrap_or(true);
                    i += 1;
                    keep
                });
            }
        }
    }
}
