//! IR functions: blocks, instructions and values of one function.

use crate::entities::{Block, Inst, Value};
use crate::instructions::InstKind;
use crate::types::Type;
use cranelift_entity::{PrimaryMap, SecondaryMap};

/// Parameter and return types of a function.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Signature {
    /// Parameter types, in order.
    pub params: Vec<Type>,
    /// The return type, or `None` for functions that return nothing.
    pub ret: Option<Type>,
}

/// What kind of function this is.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub enum FuncKind {
    /// A function that runs on the host (CPU).
    #[default]
    Host,
    /// A GPU kernel (launched over a grid; returns nothing).
    Kernel,
}

/// Where a value comes from.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum ValueDef {
    /// The result of an instruction.
    Result(Inst),
    /// The `n`th parameter of a block.
    Param(Block, u32),
}

/// Per-value data.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct ValueData {
    /// The value's type.
    pub ty: Type,
    /// Its definition.
    pub def: ValueDef,
}

/// Per-instruction data.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct InstData {
    /// The operation and its operands.
    pub kind: InstKind,
    /// The result value, if the instruction produces one.
    pub result: Option<Value>,
}

/// Per-block data.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct BlockData {
    /// Block parameters (the SSA replacement for phi nodes).
    pub params: Vec<Value>,
    /// Instructions in execution order; the last one is the terminator.
    pub insts: Vec<Inst>,
}

/// One IR function.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Function {
    /// The function's name (unique within its module).
    pub name: String,
    /// Host function or kernel.
    pub kind: FuncKind,
    /// Parameter and return types; the entry block's parameters match `signature.params`.
    pub signature: Signature,
    /// All blocks ever created; only those in `layout` are part of the function.
    pub blocks: PrimaryMap<Block, BlockData>,
    /// All instructions ever created; only those listed in a laid-out block are live.
    pub insts: PrimaryMap<Inst, InstData>,
    /// All values ever created.
    pub values: PrimaryMap<Value, ValueData>,
    /// Block order; the first block is the entry.
    pub layout: Vec<Block>,
}

impl Function {
    /// An empty function with a name, kind and signature (no blocks yet).
    pub fn new(name: impl Into<String>, kind: FuncKind, signature: Signature) -> Function {
        Function {
            name: name.into(),
            kind,
            signature,
            ..Function::default()
        }
    }

    /// The entry block, if the function has any block.
    pub fn entry(&self) -> Option<Block> {
        self.layout.first().copied()
    }

    /// The type of a value.
    pub fn value_type(&self, v: Value) -> Type {
        self.values[v].ty
    }

    /// The instruction that defines `v`, if an instruction does (not a block parameter).
    pub fn defining_inst(&self, v: Value) -> Option<&InstKind> {
        match self.values[v].def {
            ValueDef::Result(inst) => Some(&self.insts[inst].kind),
            ValueDef::Param(..) => None,
        }
    }

    /// The terminator of a block, if it has instructions and the last one is a terminator.
    pub fn terminator(&self, block: Block) -> Option<Inst> {
        let last = *self.blocks[block].insts.last()?;
        self.insts[last].kind.is_terminator().then_some(last)
    }

    /// The blocks a block can jump to, in terminator order (duplicates possible).
    pub fn successors(&self, block: Block) -> Vec<Block> {
        match self.terminator(block) {
            Some(t) => self.insts[t].kind.successors().map(|c| c.block).collect(),
            None => Vec::new(),
        }
    }

    /// The live instructions (those of laid-out blocks), in layout order. Blocks and
    /// instructions that do not exist are skipped, so that printers of unverified IR can use
    /// it too.
    pub fn live_insts(&self) -> impl Iterator<Item = &InstData> + '_ {
        self.layout
            .iter()
            .filter_map(|&b| self.blocks.get(b))
            .flat_map(|b| &b.insts)
            .filter_map(|&i| self.insts.get(i))
    }

    /// Number of live instructions (those in laid-out blocks).
    pub fn live_inst_count(&self) -> usize {
        self.layout
            .iter()
            .map(|b| self.blocks[*b].insts.len())
            .sum()
    }

    /// Adds a parameter of type `ty` to `block` and returns it.
    pub fn add_block_param(&mut self, block: Block, ty: Type) -> Value {
        let n = self.blocks[block].params.len() as u32;
        let v = self.values.push(ValueData {
            ty,
            def: ValueDef::Param(block, n),
        });
        self.blocks[block].params.push(v);
        v
    }

    /// Predecessor lists of all laid-out blocks (a predecessor appears once per edge).
    pub fn predecessors(&self) -> SecondaryMap<Block, Vec<Block>> {
        let mut preds: SecondaryMap<Block, Vec<Block>> = SecondaryMap::new();
        for &b in &self.layout {
            for s in self.successors(b) {
                preds[s].push(b);
            }
        }
        preds
    }
}
