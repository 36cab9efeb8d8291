//! Kernel launches from host code: the shared conformance suite of `nacre-backend` (sizes and
//! argument bits, traps, missing bindings, skipped kernels) at every optimisation level, plus
//! the Cranelift listing of a launch.

use super::{backend, OPT_LEVELS};
use crate::OptLevel;
use nacre_backend::launch_conformance::{check_all, with_entry};
use nacre_backend::{Backend, BackendError, Executable, Linkage};
use nacre_ir::{verify, Module};
use std::sync::Arc;

/// Verifies and compiles a module with its linkage at `opt_level`.
fn try_compile(
    m: Module,
    linkage: Linkage,
    opt_level: OptLevel,
) -> Result<Arc<dyn Executable>, BackendError> {
    backend(opt_level).compile(&verify(m).expect("valid IR"), &linkage)
}

#[test]
fn launch_conformance() {
    for &opt in OPT_LEVELS.iter() {
        check_all(&|m, linkage| try_compile(m, linkage, opt), "cranelift");
    }
}

#[test]
fn local_arrays() {
    for &opt in OPT_LEVELS.iter() {
        let compile = |m, linkage| try_compile(m, linkage, opt);
        nacre_backend::local_conformance::check_local_arrays(&compile, "cranelift");
    }
}

#[test]
fn host_code_with_launches_is_native() {
    let (m, linkage) = with_entry(|ids| ids.host);
    let exe = try_compile(m, linkage, OptLevel::None).expect("compiles");
    assert!(exe.native_entry().is_some());
}

#[test]
fn listing_shows_the_launch_call() {
    let be = crate::CraneliftBackend::new(crate::CraneliftOptions {
        keep_listing: true,
        ..crate::CraneliftOptions::default()
    })
    .expect("the host is supported");
    let (m, linkage) = with_entry(|ids| ids.looped);
    let exe = be
        .compile(&verify(m).expect("valid"), &linkage)
        .expect("compiles");
    let listing = exe.listing().expect("listing kept");
    assert!(listing.contains("call_indirect"), "{listing}");
    assert!(listing.contains("stack_addr"), "{listing}");
    assert!(
        !listing.contains("@k:"),
        "kernels are not compiled:\n{listing}"
    );
}
