//! Nacre's intermediate representation.
//!
//! A [`Module`] holds IR [`Function`]s (host functions and, later, GPU kernels) and the
//! [`ExternFunc`]s (Rust `extern "C"` functions) they call. A function is an SSA control-flow
//! graph in the Cranelift style: basic [`Block`]s with typed parameters instead of phi nodes,
//! each ending in exactly one terminator ([`InstKind::Jump`], [`InstKind::Branch`],
//! [`InstKind::Return`]).
//!
//! The crate is organised one concept per module:
//!
//! - [`types`]: value types ([`Type`], [`Scalar`], [`AddressSpace`]).
//! - [`entities`]: typed ids ([`Value`], [`Block`], [`Inst`], [`FuncId`], [`ExternId`]).
//! - [`instructions`]: the instruction set ([`InstKind`] and its operators).
//! - [`function`], [`module`]: the containers.
//! - [`builder`]: [`FunctionBuilder`], which hides the bookkeeping of building a function.
//! - [`semantics`]: the reference semantics of every operator on constant bits, shared by
//!   constant folding, the interpreter and direct (untraced) execution.
//! - [`printer`]: the stable text form (`Display` for [`Function`] and [`Module`]).
//! - [`verifier`]: structural and type checks; [`verify`] turns a module into a
//!   [`VerifiedModule`], which is what backends accept.
//! - [`passes`]: optimisation passes and the loop analysis.

pub mod builder;
pub mod entities;
pub mod function;
pub mod instructions;
pub mod module;
pub mod passes;
pub mod printer;
pub mod semantics;
pub mod trap;
pub mod types;
pub mod verifier;

pub use builder::FunctionBuilder;
pub use entities::{Block, ExternId, FuncId, Inst, Value};
pub use function::{
    BlockData, FuncKind, Function, InstData, LoopInfo, Signature, ValueData, ValueDef,
};
pub use instructions::{
    BinaryOp, BlockCall, CmpOp, Const, Dim, GpuIndex, InstKind, Launch, UnaryOp,
};
pub use module::{DynCall, ExternFunc, LaunchBinding, LaunchFn, Module};
pub use passes::{PassOptions, PassStats};
pub use trap::Trap;
pub use types::{AddressSpace, Scalar, Type};
pub use verifier::{verify, VerifiedModule, VerifierError};
