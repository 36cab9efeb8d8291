//! Kernel launches from host code: the shared conformance suite of `nacre-backend` (sizes and
//! argument bits, traps, missing bindings, skipped kernels), plus what is particular to C:
//! kernels are never printed and the source stays free of addresses.

use crate::{emit_c, CBackend, COptions};
use nacre_backend::launch_conformance::{
    check_all, function, k_params, kernel, launch_module, record_launch, set_launch_status,
    take_records, with_entry, Record, K0_HANDLE, K_HANDLE,
};
use nacre_backend::{Backend, BackendError, Executable, LaunchBinding, Linkage};
use nacre_ir::{verify, Const, Module, Scalar, Type};
use std::collections::HashMap;
use std::sync::Arc;

/// Verifies and compiles a module with its linkage.
fn try_compile(m: Module, linkage: Linkage) -> Result<Arc<dyn Executable>, BackendError> {
    CBackend::new(COptions::default()).compile(&verify(m).expect("valid IR"), &linkage)
}

fn konst(b: &mut nacre_ir::FunctionBuilder<'_>, ty: Type, bits: u64) -> nacre_ir::Value {
    b.constant(Const {
        ty,
        bits: u128::from(bits),
    })
}

#[test]
fn launch_conformance() {
    check_all(&try_compile, "c");
}

#[test]
fn local_arrays() {
    nacre_backend::local_conformance::check_local_arrays(&try_compile, "c");
}

#[test]
fn kernels_are_not_printed() {
    // The kernels' bodies use GPU intrinsics, which plain C does not support: the module
    // compiles only because they are skipped.
    let (m, _) = with_entry(|ids| ids.host);
    let src = emit_c(&verify(m).expect("valid IR")).expect("emits");
    assert!(
        !src.contains("f_k("),
        "kernels are neither declared nor defined:\n{src}"
    );
    assert!(!src.contains("f_k2("), "{src}");
    assert!(!src.contains("f_k_wide("), "{src}");
    // Host functions are named before kernels, so a kernel never takes a host name.
    let (mut m, linkage, _) = launch_module();
    m.add_function(kernel("a.b", vec![]));
    let ab = m.add_function(function("a_b", vec![], Some(Type::I32), |b, _| {
        let one = konst(b, Type::I32, 1);
        b.ret(Some(one));
    }));
    m.entry = Some(ab);
    let src = emit_c(&verify(m.clone()).expect("valid IR")).expect("emits");
    assert!(
        src.contains("static int32_t f_a_b(uint32_t *status)"),
        "{src}"
    );
    assert_eq!(
        try_compile(m, linkage).map(|e| e.call(&[])).ok(),
        Some(Ok(1))
    );
}

/// A small module for the snapshot: `two(x: i32, p: ptr<f32>)` launches `k0` (no arguments)
/// and then `k` with constants, `x` and `p`; with its linkage.
fn snapshot_module() -> (Module, Linkage) {
    let mut m = Module::new();
    let k0 = m.add_function(kernel("k0", vec![]));
    let k = m.add_function(kernel("k", k_params()));
    let two = m.add_function(function(
        "two",
        vec![Type::I32, Type::ptr(Scalar::F32)],
        None,
        |b, p| {
            let one = konst(b, Type::U32, 1);
            let n = konst(b, Type::U32, 64);
            b.launch(k0, [one, one, one], [n, one, one], vec![]);
            let args = vec![
                konst(b, Type::I8, 0xfe),
                p[0],
                konst(b, Type::U64, u64::MAX),
                konst(b, Type::F32, u64::from((-0.0f32).to_bits())),
                konst(b, Type::F64, f64::INFINITY.to_bits()),
                konst(b, Type::BOOL, 1),
                p[1],
            ];
            b.launch(k, [n, n, one], [one, one, one], args);
            b.ret(None);
        },
    ));
    m.entry = Some(two);
    let linkage = Linkage::default().with_launch(LaunchBinding {
        launcher: record_launch,
        handles: HashMap::from([(k0, K0_HANDLE), (k, K_HANDLE)]),
    });
    (m, linkage)
}

#[test]
fn launch_source_is_address_free_and_deterministic() {
    let (m, linkage) = snapshot_module();
    let verified = verify(m.clone()).expect("valid IR");
    let src = emit_c(&verified).expect("emits");
    assert_eq!(emit_c(&verified).expect("emits"), src);
    let launcher = format!("{:x}", record_launch as *const () as usize);
    assert!(
        !src.contains(&launcher),
        "the source must not contain addresses"
    );
    insta::assert_snapshot!("launch", src);

    // It runs: a launch without arguments, then one with every kind of argument.
    take_records();
    set_launch_status(0);
    let exe = try_compile(m, linkage).unwrap_or_else(|e| panic!("{e}"));
    // The source compiled with a binding is the one printed without it: the loader fills in
    // the launch globals.
    assert_eq!(exe.listing(), Some(src.as_str()));
    let mut out = [0f32; 1];
    assert_eq!(
        exe.call(&[u64::from((-3i32) as u32), out.as_mut_ptr() as u64]),
        Ok(0)
    );
    assert_eq!(
        take_records(),
        [
            Record {
                handle: K0_HANDLE,
                dims: [1, 1, 1, 64, 1, 1, 0],
                args: vec![],
            },
            Record {
                handle: K_HANDLE,
                dims: [64, 64, 1, 1, 1, 1, 0],
                args: vec![
                    0xfe,
                    u64::from((-3i32) as u32),
                    u64::MAX,
                    u64::from((-0.0f32).to_bits()),
                    f64::INFINITY.to_bits(),
                    1,
                    out.as_mut_ptr() as u64,
                ],
            },
        ]
    );
}
