//! Deep recursion: the stack check on entry to recursive functions turns it into
//! [`Trap::StackOverflow`] (the deep-recursion conformance suite of `nacre-backend`, run in a
//! child process so that a regression fails the test instead of aborting the runner), and
//! only recursive functions carry the check.

use super::{backend, compile, OPT_LEVELS};
use crate::{CraneliftBackend, CraneliftOptions};
use nacre_backend::stack_conformance::{
    check_deep_recursion, check_limit_follows_the_thread, depth_module, isolated, mutual_module,
};
use nacre_backend::{Backend, BackendError, Executable, Linkage};
use nacre_ir::{verify, Module};
use std::sync::Arc;

fn compile_with(
    backend: &CraneliftBackend,
    m: Module,
    linkage: Linkage,
) -> Result<Arc<dyn Executable>, BackendError> {
    let verified = verify(m).expect("valid IR");
    backend.compile(&verified, &linkage)
}

#[test]
fn deep_recursion_traps() {
    isolated("tests::stack::deep_recursion_traps", || {
        for opt in OPT_LEVELS {
            let b = backend(opt);
            check_deep_recursion(&|m, l| compile_with(&b, m, l));
        }
    });
}

#[test]
fn the_limit_follows_the_thread() {
    isolated("tests::stack::the_limit_follows_the_thread", || {
        let b = backend(OPT_LEVELS[1]);
        check_limit_follows_the_thread(&|m, l| compile_with(&b, m, l), 256 * 1024, 1000);
    });
}

/// The Cranelift IR of function `name` of a compiled module.
fn clif_of(m: Module, name: &str) -> String {
    let b = CraneliftBackend::new(CraneliftOptions {
        keep_listing: true,
        ..CraneliftOptions::default()
    })
    .expect("the host is supported");
    let exe = compile(&b, m);
    let listing = exe.listing().expect("kept");
    let start = listing
        .find(&format!("; @{name}: Cranelift IR"))
        .unwrap_or_else(|| panic!("no @{name} in\n{listing}"));
    let end = listing
        .find(&format!("; @{name}: machine code"))
        .unwrap_or(listing.len());
    listing[start..end].to_string()
}

#[test]
fn only_recursive_functions_check_the_stack() {
    // The stack check is the one indirect call of signature `() -> i8`.
    let calls_helper = |clif: &str| clif.contains("() -> i8") && clif.contains("call_indirect");
    let d = clif_of(depth_module(), "depth");
    assert!(calls_helper(&d), "{d}");
    let m = mutual_module();
    assert!(calls_helper(&clif_of(m.clone(), "even")));
    assert!(calls_helper(&clif_of(m.clone(), "odd")));
    assert!(!calls_helper(&clif_of(m, "main")), "main is not recursive");
}

#[test]
#[should_panic(
    expected = "the isolated test tests::stack::a_crash_in_an_isolated_test_fails_it failed"
)]
fn a_crash_in_an_isolated_test_fails_it() {
    // What a real stack overflow does to the process, without the wait.
    isolated("tests::stack::a_crash_in_an_isolated_test_fails_it", || {
        std::process::abort()
    });
}
