//! The IR verifier: structural, SSA-dominance and type checks.
//!
//! [`verify`] turns a [`Module`] into a [`VerifiedModule`], the only form backends accept.
//! [`check_module`] and [`check_function`] run the same checks on borrowed IR (the pass manager
//! uses them after every pass in debug builds).
//!
//! Checks, per function, in this order (the first failure is reported):
//!
//! 1. layout: at least one block, every laid-out block exists and appears once;
//! 2. blocks: every laid-out block is non-empty, ends in exactly one terminator and has none
//!    before; its instructions exist and are listed in only one place; parameters and results
//!    are values that record this definition;
//! 3. control flow: every jump or branch target is a laid-out block; the entry block's
//!    parameters match the signature; kernels return nothing;
//! 4. operands: every operand exists and is defined in a laid-out block; in blocks reachable
//!    from the entry, its definition dominates the use (a block's parameters dominate the whole
//!    block, a result the instructions after it);
//! 5. types: per operator (see [`crate::instructions`]), jump arguments against the target's
//!    parameters, return values against the signature, calls against the callee's signature,
//!    and constants are normalized for their type ([`crate::semantics::normalize`]).
//!
//! Before the steps, the module's host boundary is checked: no 128-bit integer in the entry
//! function's, a kernel's or an extern's signature.
//!
//! Every failure is an `Err`; malformed ids never panic.
//!
//! The checks are split by step: `structure` holds steps 1 to 3, `operands` step 4 and `types`
//! step 5; this module holds the public API and drives them.

mod operands;
mod structure;
#[cfg(test)]
mod tests;
mod types;

use crate::analysis::dominators::DominatorTree;
use crate::entities::Block;
use crate::function::{FuncKind, Function, Signature};
use crate::module::Module;
use crate::types::Scalar;
use std::collections::HashMap;
use thiserror::Error;

/// A verified module: the only form backends accept.
#[derive(Clone, Debug)]
pub struct VerifiedModule(Module);

impl VerifiedModule {
    /// The module.
    pub fn module(&self) -> &Module {
        &self.0
    }

    /// Wraps a module that is valid by construction: the result of a pass pipeline run on a
    /// verified module (passes preserve validity; debug builds check it after every pass).
    pub(crate) fn trusted(module: Module) -> VerifiedModule {
        VerifiedModule(module)
    }

    /// Gives the module back (for further transformation, after which it must be verified again).
    pub fn into_inner(self) -> Module {
        self.0
    }
}

/// The category of a verifier failure.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum VerifierErrorKind {
    /// Module-level problem: no entry function, an entry id that does not exist, or two
    /// functions with the same name.
    Module,
    /// The function has no blocks, or its layout lists a block that does not exist, lists a
    /// block twice, or a terminator targets a block that is not laid out.
    Layout,
    /// A laid-out block is empty, does not end in a terminator, or has one before its end.
    Block,
    /// An id that does not exist, or a definition that is inconsistent: an instruction listed
    /// twice, a value whose recorded definition disagrees with its block or instruction, or an
    /// operand defined outside the laid-out blocks.
    Definition,
    /// An operand whose definition does not dominate its use.
    Dominance,
    /// The entry block's parameters, a return value or a kernel's return type disagree with the
    /// function's signature.
    Signature,
    /// A jump or branch passes the wrong number or types of arguments to its target.
    BlockArgs,
    /// An instruction's operands or result have the wrong types, or a result is missing or
    /// unexpected.
    Type,
    /// A call names a function or external function that does not exist, or its arguments or
    /// result disagree with the callee's signature.
    Call,
    /// A constant whose bits are not normalized for its type.
    Const,
}

/// Why a module is not well-formed.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("invalid IR {}: {message}", location(.function))]
pub struct VerifierError {
    /// The function's name (empty for module-level errors).
    pub function: String,
    /// The category of the problem.
    pub kind: VerifierErrorKind,
    /// What is wrong, naming the block, instruction or value.
    pub message: String,
}

/// Where an error is, for its message.
fn location(function: &str) -> String {
    if function.is_empty() {
        "in module".to_string()
    } else {
        format!("in function @{function}")
    }
}

/// Checks a module and wraps it as a [`VerifiedModule`].
pub fn verify(module: Module) -> Result<VerifiedModule, VerifierError> {
    check_module(&module)?;
    Ok(VerifiedModule(module))
}

/// Runs all checks on a borrowed module: an entry function exists, function names are unique
/// and every function passes [`check_function`].
pub fn check_module(module: &Module) -> Result<(), VerifierError> {
    let module_err = |message: String| VerifierError {
        function: String::new(),
        kind: VerifierErrorKind::Module,
        message,
    };
    match module.entry {
        None => return Err(module_err("module has no entry function".to_string())),
        Some(id) if module.functions.get(id).is_none() => {
            return Err(module_err(format!("entry function {id} does not exist")));
        }
        Some(_) => {}
    }
    let mut names: HashMap<&str, _> = HashMap::with_capacity(module.functions.len());
    for (id, func) in &module.functions {
        if let Some(first) = names.insert(func.name.as_str(), id) {
            return Err(VerifierError {
                function: func.name.clone(),
                kind: VerifierErrorKind::Module,
                message: format!(
                    "function name @{} is used by both {first} and {id}",
                    func.name
                ),
            });
        }
    }
    check_host_boundary(module)?;
    for (_, func) in &module.functions {
        check_function(module, func)?;
    }
    Ok(())
}

/// The signatures values cross the host boundary through (the entry function's, every
/// kernel's and every extern's) carry no 128-bit integer: hosts pass arguments as 64-bit
/// words. Pointers to one are fine, so 128-bit values travel through memory.
fn check_host_boundary(module: &Module) -> Result<(), VerifierError> {
    let wide = |sig: &Signature| {
        sig.params
            .iter()
            .chain(sig.ret.iter())
            .find(|ty| ty.scalar().is_some_and(Scalar::is_wide))
            .copied()
    };
    let crossing = module
        .functions
        .iter()
        .filter(|(id, f)| module.entry == Some(*id) || f.kind == FuncKind::Kernel)
        .map(|(_, f)| (f.name.as_str(), &f.signature))
        .chain(
            module
                .externs
                .values()
                .map(|e| (e.name.as_str(), &e.signature)),
        );
    for (name, sig) in crossing {
        if let Some(ty) = wide(sig) {
            return Err(VerifierError {
                function: name.to_string(),
                kind: VerifierErrorKind::Signature,
                message: format!(
                    "{ty} cannot cross the host boundary (entry, kernel or extern signature); \
                     pass it through memory, as a pointer to {ty}"
                ),
            });
        }
    }
    Ok(())
}

/// Checks one function of `module` (the module provides the callees' signatures).
pub fn check_function(module: &Module, func: &Function) -> Result<(), VerifierError> {
    FuncVerifier::new(module, func).run()
}

/// The checks of one function, and what the earlier steps found for the later ones.
struct FuncVerifier<'a> {
    module: &'a Module,
    func: &'a Function,
    /// Whether each block id is laid out.
    laid_out: Vec<bool>,
    /// The block and position of each laid-out instruction.
    inst_site: Vec<Option<(Block, usize)>>,
}

/// The result of a check.
type Res<T = ()> = Result<T, VerifierError>;

impl<'a> FuncVerifier<'a> {
    /// A verifier for `func`, before any step ran.
    fn new(module: &'a Module, func: &'a Function) -> Self {
        FuncVerifier {
            module,
            func,
            laid_out: vec![false; func.blocks.len()],
            inst_site: vec![None; func.insts.len()],
        }
    }

    /// An error of this function.
    fn err(&self, kind: VerifierErrorKind, message: String) -> VerifierError {
        VerifierError {
            function: self.func.name.clone(),
            kind,
            message,
        }
    }

    /// Runs the five steps in order.
    fn run(mut self) -> Res {
        self.check_layout()?;
        self.check_blocks()?;
        self.check_control_flow()?;
        let dom = DominatorTree::compute(self.func);
        for &block in &self.func.layout {
            let insts = &self.func.blocks[block].insts;
            let reachable = dom.is_reachable(block);
            for (pos, &inst) in insts.iter().enumerate() {
                self.check_operands(&dom, reachable, block, pos, inst)?;
                self.check_types(block, inst)?;
            }
        }
        Ok(())
    }
}
