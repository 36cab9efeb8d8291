//! Nacre's interpreter backend.
//!
//! [`Interpreter`] compiles a verified IR module into a compact pre-decoded form: every value
//! gets a `u64` register slot in its function's frame, constants are pre-loaded into their
//! slots, every operator is specialised by type into one instruction of a flat `enum`, block
//! parameters are passed by sequentialised parallel moves, and an integer comparison feeding
//! a branch is fused into it. The resulting [`InterpExecutable`] runs that code with a `match`
//! dispatch loop. Results are bit-for-bit those of [`nacre_ir::semantics`], traps included.
//!
//! Calls between IR functions use a heap-allocated frame stack, so IR recursion never consumes
//! host stack; the register stack is capped at [`MAX_STACK_SLOTS`] slots (see
//! [`ExecError::StackOverflow`]). Calls to external functions go through their
//! [`nacre_backend::DynCall`] trampolines.
//!
//! # Kernels and launches
//! GPU kernels ([`nacre_ir::FuncKind::Kernel`]) are not lowered (a GPU runtime compiles them;
//! the entry must be a host function). A `launch` in host code encodes the grid and block
//! sizes and the arguments' bits in small arrays and calls the module's
//! [`nacre_backend::LaunchBinding`] launcher with the kernel's handle; a nonzero status it writes is
//! the launch's trap. A module with launches but without a binding, or without a handle for a
//! launched kernel, is [`BackendError::Unsupported`].
//!
//! An executable holds no mutable state: it is `Send + Sync` and may be called from many
//! threads at once. Each thread keeps one reusable register buffer, so a call does not
//! allocate once the buffer has grown to fit.
//!
//! # Memory
//! `load` and `store` access host memory at the addresses the IR computes. As with every
//! backend, the caller of a compiled function guarantees that the pointers it passes are
//! valid for the accesses the traced code performs (the engine's contract).
//!
//! Modules (all private): `ops` (the instruction set), `program` (the lowered module and its
//! listing), `lower` (IR to instructions), `moves` (parallel-move sequentialisation), `exec`
//! (the dispatch loop), `mem` (raw memory access).

mod exec;
mod lower;
mod mem;
mod moves;
mod ops;
mod program;
#[cfg(test)]
mod tests;

pub use exec::{ExecError, MAX_STACK_SLOTS};

use exec::Scratch;
use nacre_backend::{Backend, BackendError, Executable, Linkage};
use nacre_ir::{Trap, VerifiedModule};
use program::Program;
use std::cell::Cell;
use std::sync::{Arc, OnceLock};

/// The interpreter backend (name `"interp"`).
#[derive(Copy, Clone, Debug, Default)]
pub struct Interpreter;

impl Interpreter {
    /// The interpreter backend.
    pub fn new() -> Interpreter {
        Interpreter
    }

    /// Compiles a module into the concrete executable type (which, unlike `dyn Executable`,
    /// offers [`InterpExecutable::try_call`]).
    pub fn compile_module(
        &self,
        module: &VerifiedModule,
        linkage: &Linkage,
    ) -> Result<InterpExecutable, BackendError> {
        let program = lower::lower_module(module.module(), linkage)?;
        Ok(InterpExecutable {
            program,
            listing: OnceLock::new(),
        })
    }
}

impl Backend for Interpreter {
    fn name(&self) -> &'static str {
        "interp"
    }

    fn compile(
        &self,
        module: &VerifiedModule,
        linkage: &Linkage,
    ) -> Result<Arc<dyn Executable>, BackendError> {
        Ok(Arc::new(self.compile_module(module, linkage)?))
    }
}

/// A module compiled for the interpreter.
#[derive(Debug)]
pub struct InterpExecutable {
    program: Program,
    listing: OnceLock<String>,
}

thread_local! {
    /// Per-thread register buffers, taken out for the duration of a call (a re-entrant call
    /// from an extern function finds it empty and uses fresh buffers).
    static SCRATCH: Cell<Scratch> = const { Cell::new(Scratch::new()) };
}

impl InterpExecutable {
    /// Runs the entry function with arguments encoded as bits (missing arguments read as 0,
    /// extra ones are ignored) and returns its result bits (0 for functions that return
    /// nothing), the trap it raised, or [`ExecError::StackOverflow`] when IR recursion exhausts
    /// the interpreter's call stack.
    pub fn try_call(&self, args: &[u64]) -> Result<u64, ExecError> {
        let pooled = SCRATCH.try_with(|cell| {
            let mut scratch = cell.take();
            let result = exec::run(&self.program, args, &mut scratch);
            scratch.trim();
            cell.set(scratch);
            result
        });
        match pooled {
            Ok(result) => result,
            // The thread is being torn down: run with buffers of our own.
            Err(_) => exec::run(&self.program, args, &mut Scratch::new()),
        }
    }
}

impl Executable for InterpExecutable {
    /// Runs the entry function (see [`InterpExecutable::try_call`]); exhausting the
    /// interpreter's call stack is [`Trap::StackOverflow`].
    fn call(&self, args: &[u64]) -> Result<u64, Trap> {
        match self.try_call(args) {
            Ok(v) => Ok(v),
            Err(ExecError::Trap(t)) => Err(t),
            Err(ExecError::StackOverflow) => Err(Trap::StackOverflow),
        }
    }

    fn native_entry(&self) -> Option<*const u8> {
        None
    }

    fn listing(&self) -> Option<&str> {
        Some(self.listing.get_or_init(|| self.program.listing()))
    }
}
