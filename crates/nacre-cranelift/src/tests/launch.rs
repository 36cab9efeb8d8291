//! Kernel launches from host code: the shared conformance suite of `nacre-backend` (sizes and
//! argument bits, traps, missing bindings, skipped kernels) at every optimisation level, plus
//! the Cranelift listing of a launch.

use super::{backend, OPT_LEVELS};
use crate::OptLevel;
use nacre_backend::launch_conformance::{check_all, with_entry};
use nacre_backend::{Backend, BackendError, Executable};
use nacre_ir::{verify, Module};
use std::sync::Arc;

/// Verifies and compiles a module at `opt_level`.
fn try_compile(m: Module, opt_level: OptLevel) -> Result<Arc<dyn Executable>, BackendError> {
    backend(opt_level).compile(&verify(m).expect("valid IR"))
}

#[test]
fn launch_conformance() {
    for &opt in OPT_LEVELS.iter() {
        check_all(&|m| try_compile(m, opt), "cranelift");
    }
}

#[test]
fn host_code_with_launches_is_native() {
    let exe = try_compile(with_entry(|ids| ids.host), OptLevel::None).expect("compiles");
    assert!(exe.native_entry().is_some());
}

#[test]
fn listing_shows_the_launch_call() {
    let be = crate::CraneliftBackend::new(crate::CraneliftOptions {
        keep_listing: true,
        ..crate::CraneliftOptions::default()
    })
    .expect("the host is supported");
    let exe = be
        .compile(&verify(with_entry(|ids| ids.looped)).expect("valid"))
        .expect("compiles");
    let listing = exe.listing().expect("listing kept");
    assert!(listing.contains("call_indirect"), "{listing}");
    assert!(listing.contains("stack_addr"), "{listing}");
    assert!(
        !listing.contains("@k:"),
        "kernels are not compiled:\n{listing}"
    );
}
