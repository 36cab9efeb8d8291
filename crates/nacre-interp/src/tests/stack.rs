//! Deep recursion: the interpreter's bounded call stack makes it
//! [`nacre_ir::Trap::StackOverflow`], as the stack check does in native code (the
//! deep-recursion conformance suite of `nacre-backend`, in a child process like on the native
//! backends).

use crate::Interpreter;
use nacre_backend::stack_conformance::{check_deep_recursion, isolated};
use nacre_backend::{Backend, BackendError, Executable, Linkage};
use nacre_ir::{verify, Module};
use std::sync::Arc;

fn try_compile(m: Module, linkage: Linkage) -> Result<Arc<dyn Executable>, BackendError> {
    Interpreter::new().compile(&verify(m).expect("valid IR"), &linkage)
}

#[test]
fn deep_recursion_traps() {
    isolated("tests::stack::deep_recursion_traps", || {
        check_deep_recursion(&try_compile);
    });
}
