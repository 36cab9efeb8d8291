//! Nacre's intermediate representation.
//!
//! A [`Module`] holds IR [`Function`]s (host functions and GPU kernels) and the
//! [`ExternFunc`]s (Rust `extern "C"` functions, by symbol) they call. The IR is plain data:
//! it holds no host addresses and no cached analyses, and prints everything it holds. A function is an SSA control-flow
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
//! - [`builder`]: [`FunctionBuilder`], which hides the bookkeeping of building a function, at
//!   the end of a block or detached (instructions placed by the caller).
//! - [`atomic`], [`collective`]: the vocabulary of atomics and of warp and block collectives.
//! - [`semantics`]: the reference semantics of every operator on constant bits, shared by
//!   constant folding, the interpreter and direct (untraced) execution.
//! - [`printer`]: the stable text form (`Display` for [`Function`] and [`Module`]).
//! - [`verifier`]: structural and type checks; [`verify`] turns a module into a
//!   [`VerifiedModule`], which is what backends accept.
//! - [`analysis`]: dominators, post-dominators, loops, liveness (computed when asked for).
//! - [`transform`]: block copies and SSA repair, for passes and lowerings.
//! - [`passes`]: the target-independent optimisation passes and their pass manager.
//!
//! Passes that exist for kernels (address spaces, launch shapes, grid-stride loops, lowering
//! to CPU step functions) live in `nacre-kernel`, above this crate.

pub mod analysis;
pub mod atomic;
pub mod builder;
pub mod collective;
pub mod entities;
pub mod function;
pub mod instructions;
pub mod module;
pub mod passes;
pub mod printer;
pub mod semantics;
#[cfg(any(test, feature = "test-util"))]
pub mod test_util;
pub mod transform;
pub mod trap;
pub mod types;
pub mod verifier;

/// The `half` crate, whose `f16` and `bf16` are the host types of [`Scalar::F16`] and
/// [`Scalar::BF16`].
pub use half;

pub use analysis::LoopInfo;
pub use atomic::{AtomicOp, MemOrder, Scope};
pub use builder::FunctionBuilder;
pub use collective::{BlockVote, Shuffle, WarpOp, WARP_SIZE};
pub use entities::{Block, ExternId, FuncId, Inst, Value};
pub use function::{BlockData, FuncKind, Function, InstData, Signature, ValueData, ValueDef};
pub use instructions::{
    BinaryOp, BlockCall, CmpOp, Const, Dim, GpuIndex, InstKind, Launch, MathFn, MathFn2, UnaryOp,
    LOCAL_ARRAY_ALIGN, MAX_LOCAL_ARRAY_BYTES,
};
pub use module::{ExternFunc, Module};
pub use passes::{PassOptions, PassStats};
pub use trap::Trap;
pub use types::{AddressSpace, Scalar, Type};
pub use verifier::{verify, VerifiedModule, VerifierError};
