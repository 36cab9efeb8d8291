//! Kernel launches from host code: the shared conformance suite of `nacre-backend` (sizes and
//! argument bits, traps, missing bindings, skipped kernels), plus the interpreter's listing of
//! a launch.

use super::compile_linked;
use crate::Interpreter;
use nacre_backend::launch_conformance::{check_all, with_entry};
use nacre_backend::{Backend, BackendError, Executable, Linkage};
use nacre_ir::{verify, Module};
use std::sync::Arc;

fn try_compile(m: Module, linkage: Linkage) -> Result<Arc<dyn Executable>, BackendError> {
    Interpreter::new().compile(&verify(m).expect("valid IR"), &linkage)
}

#[test]
fn launch_conformance() {
    check_all(&try_compile, "interp");
}

#[test]
fn local_arrays() {
    nacre_backend::local_conformance::check_local_arrays(&try_compile, "interp");
}

#[test]
fn kernels_are_not_lowered() {
    let (m, linkage) = with_entry(|ids| ids.host);
    let exe = compile_linked(m, &linkage);
    let listing = exe.listing().expect("listing");
    assert!(!listing.contains("@k:"), "{listing}");
    assert!(!listing.contains("@k2:"), "{listing}");
    assert!(listing.contains("launch @k grid("), "{listing}");
    assert_eq!(exe.program.funcs.len(), 4, "host functions only");
}
