//! The clang check of generated MSL on hand-built kernels that the corpus does not cover
//! (device functions specialised per address space, every scalar type and helper, a break
//! out of two loops), and the errors it must catch when they are planted in generated code.
//!
//! Without clang the tests say they are skipped, unless `NACRE_REQUIRE_CLANG=1`.

use nacre_ir::{
    verify, BinaryOp, CmpOp, Const, Dim, FuncId, FuncKind, Function, FunctionBuilder, GpuIndex,
    Module, Scalar, Type, Value, VerifiedModule,
};
use nacre_metal::clang_check::{check_msl, clang_version, ClangCheckError};
use nacre_metal::{emit_msl, MetalError};

fn clang_ready(test: &str) -> bool {
    match clang_version() {
        Ok(_) => true,
        Err(e) => {
            if std::env::var("NACRE_REQUIRE_CLANG").is_ok_and(|v| v == "1") {
                panic!("{test}: NACRE_REQUIRE_CLANG=1 but {e}");
            }
            eprintln!("{test}: skipped: {e}");
            false
        }
    }
}

fn func(
    name: &str,
    kind: FuncKind,
    params: &[Type],
    ret: Option<Type>,
    body: impl FnOnce(&mut FunctionBuilder<'_>, &[Value]),
) -> Function {
    FunctionBuilder::build(name, kind, params, ret, body)
}

fn k(b: &mut FunctionBuilder<'_>, ty: Type, bits: u64) -> Value {
    b.constant(Const {
        ty,
        bits: u128::from(bits),
    })
}

/// A verified module whose entry (a host function) is the first function.
fn module(functions: Vec<Function>) -> VerifiedModule {
    let mut m = Module::new();
    for f in functions {
        m.add_function(f);
    }
    m.entry = m.functions.keys().next();
    verify(m).unwrap_or_else(|e| panic!("{e}"))
}

fn f32p() -> Type {
    Type::ptr(Scalar::F32)
}

/// `@twice(p, i) -> p + i` after doubling `p[i]`, called by a kernel with a device and a
/// shared pointer.
fn specialised() -> VerifiedModule {
    let host = func("host", FuncKind::Host, &[], None, |b, _| {
        b.ret(None);
    });
    let twice = func(
        "twice",
        FuncKind::Host,
        &[f32p(), Type::U32],
        Some(f32p()),
        |b, p| {
            let q = b.elem_ptr(p[0], p[1]);
            let x = b.load(q);
            let y = b.binary(BinaryOp::Add, x, x);
            b.store(q, y);
            b.ret(Some(q));
        },
    );
    let kernel = func("k", FuncKind::Kernel, &[f32p()], None, |b, p| {
        let t = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
        let tile = b.shared_alloc(Scalar::F32, 64);
        let src = b.elem_ptr(p[0], t);
        let x = b.load(src);
        let dst = b.elem_ptr(tile, t);
        b.store(dst, x);
        b.barrier();
        let twice = FuncId::from_u32(1);
        let s = b.call(twice, vec![tile, t], Some(f32p())).unwrap();
        let d = b.call(twice, vec![p[0], t], Some(f32p())).unwrap();
        let v = b.load(s);
        b.store(d, v);
        b.ret(None);
    });
    module(vec![host, twice, kernel])
}

#[test]
fn device_functions_are_specialised_per_address_space() {
    let msl = emit_msl(&specialised()).unwrap();
    assert_eq!(msl.len(), 1);
    let src = &msl[0].source;
    assert!(
        src.contains(
            "threadgroup float *f_twice__s(threadgroup float *v0, uint v1, device uint *status)"
        ),
        "{src}"
    );
    assert!(
        src.contains("device float *f_twice__d(device float *v0, uint v1, device uint *status)"),
        "{src}"
    );
    insta::assert_snapshot!("specialised_device_functions", src);
    if clang_ready("device_functions_are_specialised_per_address_space") {
        check_msl(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    }
}

/// A kernel over every integer width, bools, float casts (saturating helpers), float
/// min/max (NaN-ignoring helpers), a NaN with a payload (bit-cast helper), a break out of two
/// loops (the `nacre_exit` relay) and a scalar argument assigned in a branch.
fn everything() -> VerifiedModule {
    let host = func("host", FuncKind::Host, &[], None, |b, _| {
        b.ret(None);
    });
    let params = [
        Type::ptr(Scalar::I32),
        Type::I8,
        Type::U16,
        Type::I64,
        Type::U64,
        Type::BOOL,
        Type::F32,
    ];
    let kernel = func("everything", FuncKind::Kernel, &params, None, |b, p| {
        let out = p[0];
        let t = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
        let bi = b.gpu_index(GpuIndex::BlockIdx, Dim::Y);
        let bd = b.gpu_index(GpuIndex::BlockDim, Dim::Z);
        let gd = b.gpu_index(GpuIndex::GridDim, Dim::X);
        let sum = b.binary(BinaryOp::Add, t, bi);
        let sum = b.binary(BinaryOp::Add, sum, bd);
        let sum = b.binary(BinaryOp::Add, sum, gd);
        let i8v = b.cast(p[1], Type::I32);
        let u16v = b.cast(p[2], Type::I32);
        let i64v = b.cast(p[3], Type::I32);
        let u64v = b.cast(p[4], Type::I32);
        let boolv = b.cast(p[5], Type::I32);
        let f2i = b.cast(p[6], Type::I32);
        let f2u = b.cast(p[6], Type::U64);
        let f2u = b.cast(f2u, Type::I32);
        let nan = k(b, Type::F32, 0x7fc0_0001);
        let mn = b.binary(BinaryOp::Min, p[6], nan);
        let mx = b.binary(BinaryOp::Max, mn, p[6]);
        let mxi = b.cast(mx, Type::I32);
        let sumi = b.cast(sum, Type::I32);
        let mut acc = sumi;
        for v in [i8v, u16v, i64v, u64v, boolv, f2i, f2u, mxi] {
            acc = b.binary(BinaryOp::Xor, acc, v);
        }
        // Two nested loops; the inner one leaves both when `i * j > acc`.
        let zero = k(b, Type::I32, 0);
        let one = k(b, Type::I32, 1);
        let n = k(b, Type::I32, 8);
        let (oh, ob, ih, ib, inext, onext, exit) = (
            b.create_block(),
            b.create_block(),
            b.create_block(),
            b.create_block(),
            b.create_block(),
            b.create_block(),
            b.create_block(),
        );
        let i = b.append_block_param(oh, Type::I32);
        let j = b.append_block_param(ih, Type::I32);
        let r = b.append_block_param(exit, Type::I32);
        b.jump(oh, vec![zero]);
        b.switch_to_block(oh);
        let c = b.cmp(CmpOp::Lt, i, n);
        b.branch(c, ob, vec![], exit, vec![acc]);
        b.switch_to_block(ob);
        b.jump(ih, vec![zero]);
        b.switch_to_block(ih);
        let c = b.cmp(CmpOp::Lt, j, n);
        b.branch(c, ib, vec![], onext, vec![]);
        b.switch_to_block(ib);
        let prod = b.binary(BinaryOp::Mul, i, j);
        let big = b.cmp(CmpOp::Gt, prod, acc);
        b.branch(big, exit, vec![prod], inext, vec![]);
        b.switch_to_block(inext);
        let j2 = b.binary(BinaryOp::Add, j, one);
        b.jump(ih, vec![j2]);
        b.switch_to_block(onext);
        let i2 = b.binary(BinaryOp::Add, i, one);
        b.jump(oh, vec![i2]);
        b.switch_to_block(exit);
        let q = b.binary(BinaryOp::Div, r, i8v);
        let dst = b.elem_ptr(out, t);
        b.store(dst, q);
        b.ret(None);
    });
    module(vec![host, kernel])
}

#[test]
fn every_type_helper_and_the_exit_relay_compile() {
    let msl = emit_msl(&everything()).unwrap();
    let src = &msl[0].source;
    for needle in [
        "nacre_exit",
        "inline int nacre_f32_to_i32(float x)",
        "inline float nacre_min_f32(float a, float b)",
        "as_type<float>(b)",
        "constant char &nacre_arg1 [[buffer(1)]]",
        "constant uchar &nacre_arg5 [[buffer(5)]]",
        "[[threadgroups_per_grid]]",
        "if (v",
    ] {
        assert!(src.contains(needle), "{needle} missing:\n{src}");
    }
    assert!(!src.contains("goto"), "{src}");
    insta::assert_snapshot!("every_type_helper_and_exit_relay", src);
    if clang_ready("every_type_helper_and_the_exit_relay_compile") {
        check_msl(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    }
}

/// Plants `from` -> `to` once in the generated source of [`specialised`] and expects clang to
/// reject it with a message containing every string of `expect`.
fn rejected(test: &str, from: &str, to: &str, expect: &[&str]) {
    if !clang_ready(test) {
        return;
    }
    let src = emit_msl(&specialised()).unwrap().remove(0).source;
    assert!(src.contains(from), "{test}: `{from}` not in:\n{src}");
    let planted = src.replacen(from, to, 1);
    match check_msl(&planted) {
        Err(ClangCheckError::Rejected { diagnostics }) => {
            for e in expect {
                assert!(
                    diagnostics.contains(e),
                    "{test}: `{e}` not in the diagnostics:\n{diagnostics}"
                );
            }
        }
        other => panic!("{test}: the planted error was not caught: {other:?}\n{planted}"),
    }
}

#[test]
fn a_shared_pointer_passed_as_device_is_rejected() {
    // The kernel calls the device copy with its shared array.
    rejected(
        "a_shared_pointer_passed_as_device_is_rejected",
        "f_twice__s(v2, v1, status)",
        "f_twice__d(v2, v1, status)",
        &["__local", "__global"],
    );
}

#[test]
fn an_unqualified_pointer_parameter_is_rejected() {
    // Metal takes an unqualified pointer as thread memory; a device pointer does not convert.
    rejected(
        "an_unqualified_pointer_parameter_is_rejected",
        "device float *f_twice__d(device float *v0,",
        "device float *f_twice__d(float *v0,",
        &["__private"],
    );
}

#[test]
fn goto_double_and_unknown_attributes_are_rejected() {
    rejected(
        "goto_double_and_unknown_attributes_are_rejected",
        "    return;\n}",
        "    goto done;\ndone:\n    return;\n}",
        &["nacre_metal_has_no_goto"],
    );
    rejected(
        "goto_double_and_unknown_attributes_are_rejected",
        "    float v",
        "    double v",
        &["double"],
    );
    rejected(
        "goto_double_and_unknown_attributes_are_rejected",
        "[[buffer(0)]]",
        "[[bufer(0)]]",
        &["unknown attribute"],
    );
}

#[test]
fn a_shared_array_outside_a_kernel_is_rejected() {
    rejected(
        "a_shared_array_outside_a_kernel_is_rejected",
        "device uint *status) {\n",
        "device uint *status) {\n    threadgroup float misplaced[4];\n",
        &["kernel"],
    );
}

#[test]
fn kernels_with_two_spaces_for_one_pointer_are_refused_before_printing() {
    let host = func("host", FuncKind::Host, &[], None, |b, _| {
        b.ret(None);
    });
    let kernel = func(
        "mix",
        FuncKind::Kernel,
        &[f32p(), Type::BOOL],
        None,
        |b, p| {
            let tile = b.shared_alloc(Scalar::F32, 4);
            let q = b.select(p[1], tile, p[0]);
            let x = b.load(q);
            b.store(p[0], x);
            b.ret(None);
        },
    );
    match emit_msl(&module(vec![host, kernel])) {
        Err(MetalError::AddressSpace(e)) => {
            let msg = e.to_string();
            assert!(msg.contains("select"), "{msg}");
        }
        other => panic!("expected an address-space error, got {other:?}"),
    }
}
