//! Step 4 of the verifier: every operand exists, is defined in a laid-out block and, in blocks
//! reachable from the entry, its definition dominates the use.

use super::{FuncVerifier, Res, VerifierErrorKind};
use crate::analysis::dominators::DominatorTree;
use crate::entities::{Block, Inst, Value};
use crate::function::ValueDef;
use cranelift_entity::EntityRef;

/// Where a value is defined.
#[derive(Copy, Clone)]
enum DefSite {
    /// A parameter of a laid-out block.
    Param(Block),
    /// The result of the instruction at this position of a laid-out block.
    Result(Block, usize),
}

impl FuncVerifier<'_> {
    /// Where an existing value is defined, or an error if it is not defined in a laid-out block.
    fn def_site(&self, v: Value, user: Inst, block: Block) -> Res<DefSite> {
        use VerifierErrorKind::Definition;
        let func = self.func;
        let Some(vd) = func.values.get(v) else {
            return Err(self.err(
                Definition,
                format!("{user} in {block} uses {v}, which does not exist"),
            ));
        };
        match vd.def {
            ValueDef::Param(db, n) => {
                let laid_out = self.laid_out.get(db.index()).copied().unwrap_or(false);
                let is_param = laid_out && func.blocks[db].params.get(n as usize) == Some(&v);
                if is_param {
                    Ok(DefSite::Param(db))
                } else {
                    Err(self.err(
                        Definition,
                        format!(
                            "{user} in {block} uses {v}, a parameter of {db} that is not \
                             in the function (removed block or parameter)"
                        ),
                    ))
                }
            }
            ValueDef::Result(di) => match self.inst_site.get(di.index()).copied().flatten() {
                Some((db, pos)) if func.insts[di].result == Some(v) => Ok(DefSite::Result(db, pos)),
                Some(_) => Err(self.err(
                    Definition,
                    format!(
                        "{user} in {block} uses {v}, recorded as the result of {di}, \
                         but {di} does not produce it"
                    ),
                )),
                None => Err(self.err(
                    Definition,
                    format!(
                        "{user} in {block} uses {v}, defined by {di}, \
                         which is not in a laid-out block"
                    ),
                )),
            },
        }
    }

    /// Step 4: operands exist, are defined in the function and dominate their use.
    pub(super) fn check_operands(
        &self,
        dom: &DominatorTree,
        reachable: bool,
        block: Block,
        pos: usize,
        inst: Inst,
    ) -> Res {
        let mut result = Ok(());
        self.func.insts[inst].kind.for_each_operand(|v| {
            if result.is_err() {
                return;
            }
            result = self.def_site(v, inst, block).and_then(|site| {
                if !reachable {
                    return Ok(());
                }
                let ok = match site {
                    DefSite::Param(db) => dom.dominates(db, block),
                    DefSite::Result(db, dpos) if db == block => dpos < pos,
                    DefSite::Result(db, _) => dom.dominates(db, block),
                };
                if ok {
                    Ok(())
                } else {
                    let (db, what) = match site {
                        DefSite::Param(db) => (db, "a parameter of"),
                        DefSite::Result(db, _) => (db, "defined in"),
                    };
                    let msg = if db == block {
                        format!("{inst} in {block} uses {v} before its definition")
                    } else {
                        format!(
                            "{inst} in {block} uses {v} ({what} {db}), \
                             whose definition does not dominate the use"
                        )
                    };
                    Err(self.err(VerifierErrorKind::Dominance, msg))
                }
            });
        });
        result
    }
}
