//! The stack check of recursive host functions in generated C.
//!
//! A module with a recursive host function (one on a cycle of the call graph,
//! [`CallGraph::is_recursive`]) declares the function pointer [`STACK_CHECK_SYMBOL`]
//! (`uint8_t (*nacre_stack_check)(void)`), which the loader fills in with
//! [`nacre_backend::stack::nacre_stack_ok`] (so the source stays free of addresses, as for
//! external functions). Each recursive function opens with
//!
//! ```c
//! if (!nacre_stack_check()) { *status = 3; return 0; }
//! ```
//!
//! which stores [`Trap::StackOverflow`] and returns when too little stack is left; its callers
//! propagate the trap as after every call. Non-recursive functions get no check, and a module
//! without recursion declares no pointer. Device code (kernels and their device functions)
//! never gets the check.

use crate::dialect::Dialect;
use crate::function::STATUS;
use libloading::Library;
use nacre_backend::BackendError;
use nacre_ir::analysis::CallGraph;
use nacre_ir::{FuncId, FuncKind, Module, Scalar, Trap};

/// The exported function pointer `uint8_t (*nacre_stack_check)(void)` that recursive functions
/// call on entry, filled in by the loader with [`nacre_backend::stack::nacre_stack_ok`];
/// present only when the module has a recursive host function.
pub const STACK_CHECK_SYMBOL: &str = "nacre_stack_check";

/// Which host functions of a module check the stack on entry.
#[derive(Clone, Debug)]
pub struct StackCheck {
    calls: CallGraph,
    any: bool,
}

impl StackCheck {
    /// The stack checks of `module`: one in each recursive host function.
    pub fn new(module: &Module) -> StackCheck {
        let calls = CallGraph::compute(module);
        let any = calls
            .recursive_functions()
            .any(|f| module.functions[f].kind == FuncKind::Host);
        StackCheck { calls, any }
    }

    /// Whether some host function checks the stack, so that the source declares
    /// [`STACK_CHECK_SYMBOL`] and the loader must fill it in.
    pub fn is_needed(&self) -> bool {
        self.any
    }

    /// Whether host function `f` checks the stack on entry.
    pub fn checks(&self, f: FuncId) -> bool {
        self.calls.is_recursive(f)
    }

    /// The declaration of [`STACK_CHECK_SYMBOL`], with its comment, when it is needed.
    pub fn declaration<D: Dialect + ?Sized>(&self, d: &D) -> Option<String> {
        self.any.then(|| {
            format!(
                "/* The stack check of recursive functions, filled in by the loader. */\n{} (*{STACK_CHECK_SYMBOL})(void);\n\n",
                d.scalar_type(Scalar::U8)
            )
        })
    }

    /// The statement that opens a recursive function's body: trap with
    /// [`Trap::StackOverflow`] (leaving with `trap_return`) when too little stack is left.
    pub fn statement(trap_return: &str) -> String {
        format!(
            "if (!{STACK_CHECK_SYMBOL}()) {{ *{STATUS} = {}; {trap_return} }}",
            Trap::StackOverflow.code()
        )
    }
}

/// Fills in the stack-check pointer of a library built from the source of `module`, if the
/// source declares it ([`StackCheck::is_needed`]).
pub(crate) fn fill(library: &Library, module: &Module) -> Result<(), BackendError> {
    if !StackCheck::new(module).is_needed() {
        return Ok(());
    }
    // SAFETY: a module with a recursive host function defines `nacre_stack_check` as a
    // function pointer (pointer-sized, like `usize`); nothing reads it before the executable
    // is built, after this call.
    unsafe {
        let slot = library
            .get::<*mut usize>(STACK_CHECK_SYMBOL)
            .map_err(|e| BackendError::Load(format!("symbol `{STACK_CHECK_SYMBOL}`: {e}")))?;
        let slot: *mut usize = *slot;
        slot.write(nacre_backend::stack::stack_check_address());
    }
    Ok(())
}
