//! Steps 1 to 3 of the verifier: the layout, the contents of every laid-out block (with the
//! definitions of block parameters and instruction results) and the control flow (jump targets,
//! the entry block against the signature, kernels returning nothing).

use super::{FuncVerifier, Res, VerifierErrorKind};
use crate::entities::{Block, Inst};
use crate::function::{FuncKind, InstData, ValueDef};
use crate::types::Type;
use cranelift_entity::EntityRef;

impl FuncVerifier<'_> {
    /// Step 1: the layout.
    pub(super) fn check_layout(&mut self) -> Res {
        use VerifierErrorKind::Layout;
        if self.func.layout.is_empty() {
            return Err(self.err(Layout, "function has no blocks".to_string()));
        }
        for &b in &self.func.layout {
            match self.laid_out.get(b.index()) {
                None => {
                    return Err(self.err(Layout, format!("layout lists {b}, which does not exist")))
                }
                Some(true) => {
                    return Err(self.err(Layout, format!("{b} appears twice in the layout")))
                }
                Some(false) => self.laid_out[b.index()] = true,
            }
        }
        Ok(())
    }

    /// Step 2: block contents, parameter and result definitions.
    pub(super) fn check_blocks(&mut self) -> Res {
        let func = self.func;
        for &b in &func.layout {
            let data = &func.blocks[b];
            self.check_block_params(b)?;
            if data.insts.is_empty() {
                return Err(self.err(VerifierErrorKind::Block, format!("{b} is empty")));
            }
            let last = data.insts.len() - 1;
            for (pos, &inst) in data.insts.iter().enumerate() {
                self.check_block_inst(b, pos, last, inst)?;
            }
        }
        Ok(())
    }

    /// Step 2, the parameters of laid-out block `b`: values that record this definition.
    fn check_block_params(&self, b: Block) -> Res {
        use VerifierErrorKind::Definition;
        let func = self.func;
        for (n, &p) in func.blocks[b].params.iter().enumerate() {
            match func.values.get(p) {
                None => {
                    return Err(self.err(
                        Definition,
                        format!("{b} parameter {n} is {p}, which does not exist"),
                    ))
                }
                Some(vd) if vd.def != ValueDef::Param(b, n as u32) => {
                    return Err(self.err(
                        Definition,
                        format!(
                            "{b} parameter {n} is {p}, but {p} is recorded as {}",
                            def_name(vd.def)
                        ),
                    ))
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Step 2, the instruction at position `pos` of laid-out block `b` (whose last position is
    /// `last`): it exists, is listed only here, is a terminator exactly at the end, and its
    /// result records this definition.
    fn check_block_inst(&mut self, b: Block, pos: usize, last: usize, inst: Inst) -> Res {
        use VerifierErrorKind::{Block as BlockKind, Definition};
        let func = self.func;
        let Some(idata) = func.insts.get(inst) else {
            return Err(self.err(
                Definition,
                format!("{b} lists {inst}, which does not exist"),
            ));
        };
        if let Some((other, _)) = self.inst_site[inst.index()] {
            return Err(self.err(
                Definition,
                format!("{inst} is listed more than once (in {other} and in {b})"),
            ));
        }
        self.inst_site[inst.index()] = Some((b, pos));
        let is_term = idata.kind.is_terminator();
        if pos < last && is_term {
            return Err(self.err(
                BlockKind,
                format!(
                    "{b} has terminator {inst} before its end (position {pos} of {})",
                    last + 1
                ),
            ));
        }
        if pos == last && !is_term {
            return Err(self.err(
                BlockKind,
                format!("{b} does not end in a terminator (last is {inst})"),
            ));
        }
        self.check_result_def(b, inst, idata)
    }

    /// Step 2, the result of `inst` in `b`: a value that records this definition.
    fn check_result_def(&self, b: Block, inst: Inst, idata: &InstData) -> Res {
        let Some(r) = idata.result else {
            return Ok(());
        };
        match self.func.values.get(r) {
            None => Err(self.err(
                VerifierErrorKind::Definition,
                format!("{inst} in {b} has result {r}, which does not exist"),
            )),
            Some(vd) if vd.def != ValueDef::Result(inst) => Err(self.err(
                VerifierErrorKind::Definition,
                format!(
                    "{inst} in {b} has result {r}, but {r} is recorded as {}",
                    def_name(vd.def)
                ),
            )),
            Some(_) => Ok(()),
        }
    }

    /// Step 3: jump targets, entry parameters, kernel signature.
    pub(super) fn check_control_flow(&self) -> Res {
        let func = self.func;
        for &b in &func.layout {
            let Some(&inst) = func.blocks[b].insts.last() else {
                continue;
            };
            for call in func.insts[inst].kind.successors() {
                if !self
                    .laid_out
                    .get(call.block.index())
                    .copied()
                    .unwrap_or(false)
                {
                    return Err(self.err(
                        VerifierErrorKind::Layout,
                        format!(
                            "{inst} in {b} jumps to {}, which is not a laid-out block",
                            call.block
                        ),
                    ));
                }
            }
        }
        let entry = func.layout[0];
        let params = &func.blocks[entry].params;
        let types: Vec<Type> = params.iter().map(|&p| func.values[p].ty).collect();
        if types != func.signature.params {
            return Err(self.err(
                VerifierErrorKind::Signature,
                format!(
                    "entry {entry} has parameters ({}) but the signature has ({})",
                    type_list(&types),
                    type_list(&func.signature.params)
                ),
            ));
        }
        if func.kind == FuncKind::Kernel {
            if let Some(ret) = func.signature.ret {
                return Err(self.err(
                    VerifierErrorKind::Signature,
                    format!("kernel returns {ret}; kernels return nothing"),
                ));
            }
        }
        Ok(())
    }
}

/// A value definition, for messages.
fn def_name(def: ValueDef) -> String {
    match def {
        ValueDef::Result(i) => format!("the result of {i}"),
        ValueDef::Param(b, n) => format!("parameter {n} of {b}"),
    }
}

/// A comma-separated type list, for messages.
fn type_list(types: &[Type]) -> String {
    types
        .iter()
        .map(Type::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
