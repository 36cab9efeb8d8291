//! Deep recursion: recursive host functions open with the stack check, which turns deep
//! recursion into [`nacre_ir::Trap::StackOverflow`] (the deep-recursion conformance suite of
//! `nacre-backend`, run in a child process so that a regression fails the test instead of
//! aborting the runner); non-recursive functions and modules carry no check.

use super::{function, module, verified};
use crate::emit::emit_c;
use crate::stack_check::STACK_CHECK_SYMBOL;
use crate::{CBackend, COptions};
use nacre_backend::stack_conformance::{
    check_deep_recursion, check_limit_follows_the_thread, depth_module, isolated, mutual_module,
};
use nacre_backend::{Backend, BackendError, Executable, Linkage};
use nacre_ir::{BinaryOp, Module, Type};
use std::sync::Arc;

fn compile_with(m: Module, linkage: Linkage) -> Result<Arc<dyn Executable>, BackendError> {
    CBackend::new(COptions::default()).compile(&verified(m), &linkage)
}

#[test]
fn deep_recursion_traps() {
    isolated("tests::stack::deep_recursion_traps", || {
        check_deep_recursion(&compile_with);
    });
}

#[test]
fn deep_recursion_traps_with_structured_control_flow() {
    isolated(
        "tests::stack::deep_recursion_traps_with_structured_control_flow",
        || {
            let b = CBackend::new(COptions::default()).with_structured_control_flow(true);
            check_deep_recursion(&|m, l| b.compile(&verified(m), &l));
        },
    );
}

#[test]
fn the_limit_follows_the_thread() {
    isolated("tests::stack::the_limit_follows_the_thread", || {
        check_limit_follows_the_thread(&compile_with, 256 * 1024, 1000);
    });
}

/// The printed definition of function `name` (from its head to the closing brace).
fn definition<'s>(source: &'s str, name: &str) -> &'s str {
    let start = source
        .find(&format!(" f_{name}(uint64_t v0"))
        .unwrap_or_else(|| panic!("no definition of {name} in\n{source}"));
    let rest = &source[start..];
    &rest[..rest.find("\n}\n").expect("a closing brace")]
}

#[test]
fn only_recursive_functions_check_the_stack() {
    let check = format!("if (!{STACK_CHECK_SYMBOL}())");
    let source = emit_c(&verified(mutual_module())).expect("prints");
    assert!(source.contains(&format!("(*{STACK_CHECK_SYMBOL})(void);")));
    assert!(definition(&source, "even").contains(&check), "{source}");
    assert!(definition(&source, "odd").contains(&check), "{source}");
    assert!(!definition(&source, "main").contains(&check), "{source}");
    let source = emit_c(&verified(depth_module())).expect("prints");
    assert!(definition(&source, "depth").contains(&check), "{source}");

    // No recursion: no pointer, no check.
    let plain = module(vec![function(
        "plain",
        &[Type::U64],
        Some(Type::U64),
        |b, p| {
            let r = b.binary(BinaryOp::Add, p[0], p[0]);
            b.ret(Some(r));
        },
    )]);
    let source = emit_c(&verified(plain)).expect("prints");
    assert!(!source.contains(STACK_CHECK_SYMBOL), "{source}");
}
