//! [`KernelError`]: why a kernel cannot be compiled for a target by the passes of this crate.

use nacre_ir::VerifierError;
use thiserror::Error;

/// A kernel that a kernel pass cannot handle.
#[derive(Debug, Error)]
pub enum KernelError {
    /// A kernel uses something the target cannot run.
    #[error("kernel @{kernel} cannot run on the CPU: {what}")]
    Unsupported {
        /// The kernel's name.
        kernel: String,
        /// What is not supported, and how to avoid it.
        what: String,
    },

    /// A kernel, or the step function lowered from it, is not valid IR.
    #[error("kernel @{kernel}: {source}")]
    Verify {
        /// The kernel's name.
        kernel: String,
        /// The verifier's finding.
        #[source]
        source: VerifierError,
    },
}
