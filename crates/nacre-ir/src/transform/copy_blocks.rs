//! Copies of a set of blocks of a function, for the lowerings that duplicate code: the
//! unrolled loop of a collapsed step function (`collapse`) and the thread loops of the
//! region lowering (`regions`).

use crate::{Block, BlockData, Function, InstData, Value, ValueData, ValueDef};
use std::collections::HashMap;

/// What [`copy_blocks`] made: the copy of each block and of each value defined in them.
pub struct Copied {
    /// Original block → its copy.
    pub blocks: HashMap<Block, Block>,
    /// Original value (parameter or instruction result) → its copy.
    pub values: HashMap<Value, Value>,
}

/// Copies `blocks` of `f` (not laid out: the caller places the copies): new blocks with new
/// parameters and new instructions.
///
/// In the copies, branch targets among `blocks` go to their copies (other targets stay), and
/// every operand found in `seed` is replaced by its image. With `internal` set, operands
/// defined in `blocks` are also replaced by their copies (for a copy that is used as a whole,
/// like a loop body); without it they keep the original values, for the caller to reconnect
/// (see `ssa_repair`).
pub fn copy_blocks(
    f: &mut Function,
    blocks: &[Block],
    seed: &HashMap<Value, Value>,
    internal: bool,
) -> Copied {
    let mut block_map = HashMap::with_capacity(blocks.len());
    let mut value_map: HashMap<Value, Value> = HashMap::new();
    let mut new_insts = Vec::new();
    for &b in blocks {
        let nb = f.blocks.push(BlockData::default());
        block_map.insert(b, nb);
    }
    for &b in blocks {
        let nb = block_map[&b];
        let params = f.blocks[b].params.clone();
        for (n, p) in params.into_iter().enumerate() {
            let np = f.values.push(ValueData {
                ty: f.values[p].ty,
                def: ValueDef::Param(nb, n as u32),
            });
            f.blocks[nb].params.push(np);
            value_map.insert(p, np);
        }
        let insts = f.blocks[b].insts.clone();
        for inst in insts {
            let data = f.insts[inst].clone();
            let ni = f.insts.push(InstData {
                kind: data.kind,
                result: None,
            });
            if let Some(r) = data.result {
                let nr = f.values.push(ValueData {
                    ty: f.values[r].ty,
                    def: ValueDef::Result(ni),
                });
                f.insts[ni].result = Some(nr);
                value_map.insert(r, nr);
            }
            f.blocks[nb].insts.push(ni);
            new_insts.push(ni);
        }
    }
    for ni in new_insts {
        let kind = &mut f.insts[ni].kind;
        kind.map_operands(|v| {
            if let Some(&s) = seed.get(&v) {
                s
            } else if internal {
                value_map.get(&v).copied().unwrap_or(v)
            } else {
                v
            }
        });
        for call in kind.successors_mut() {
            if let Some(&nb) = block_map.get(&call.block) {
                call.block = nb;
            }
        }
    }
    Copied {
        blocks: block_map,
        values: value_map,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BinaryOp, CmpOp, Const, FuncKind, FunctionBuilder, InstKind, Signature, Type};

    /// `f(a) { b1(x): y = x + a; br y < 10, b1(y), b2 } b2: return }` copied: the copy of b1
    /// loops to itself, uses its own parameter and the seed's image of `a`.
    #[test]
    fn copies_map_targets_params_and_seeded_values() {
        let mut f = Function::new(
            "f",
            FuncKind::Host,
            Signature {
                params: vec![Type::U32],
                ret: None,
            },
        );
        let mut b = FunctionBuilder::new(&mut f);
        let a = b.create_entry_block()[0];
        let entry = b.current_block().unwrap();
        let b1 = b.create_block();
        let x = b.append_block_param(b1, Type::U32);
        let b2 = b.create_block();
        b.jump(b1, vec![a]);
        b.switch_to_block(b1);
        let y = b.binary(BinaryOp::Add, x, a);
        let ten = b.constant(Const {
            ty: Type::U32,
            bits: 10,
        });
        let c = b.cmp(CmpOp::Lt, y, ten);
        b.branch(c, b1, vec![y], b2, vec![]);
        b.switch_to_block(b2);
        b.ret(None);

        let a2 = f.values.push(ValueData {
            ty: Type::U32,
            def: ValueDef::Param(entry, 1),
        });
        let seed = HashMap::from([(a, a2)]);
        let copy = copy_blocks(&mut f, &[b1], &seed, true);
        let nb = copy.blocks[&b1];
        let nx = copy.values[&x];
        assert_eq!(f.blocks[nb].params, vec![nx]);
        let insts = &f.blocks[nb].insts;
        assert_eq!(insts.len(), 4);
        assert_eq!(
            f.insts[insts[0]].kind,
            InstKind::Binary(BinaryOp::Add, nx, a2)
        );
        let succ: Vec<Block> = f.successors(nb);
        assert_eq!(succ, vec![nb, b2]);

        // Without `internal`, operands keep the original values.
        let copy = copy_blocks(&mut f, &[b1], &HashMap::new(), false);
        let nb = copy.blocks[&b1];
        let first = f.blocks[nb].insts[0];
        assert_eq!(f.insts[first].kind, InstKind::Binary(BinaryOp::Add, x, a));
    }
}
