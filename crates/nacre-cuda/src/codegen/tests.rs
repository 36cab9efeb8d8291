//! Tests of the CUDA C printer on hand-built IR: the dialect's spellings, every operator on
//! every type, casts between all types, shared arrays, barriers, 3D indices, device calls and
//! traps. Every module is verified first (so the snapshots are of valid IR), and when NVRTC
//! is installed every source is also compiled to PTX (so they are of valid CUDA C).

use super::*;
use crate::nvrtc::{self, Arch, NvrtcError};
use nacre_ir::{
    BinaryOp, CmpOp, Const, ExternFunc, Function, FunctionBuilder, Module, Signature, Type,
    UnaryOp, Value,
};

/// A function of `kind`; `body` gets the builder in the entry block and the parameters.
fn func(
    name: &str,
    kind: FuncKind,
    params: &[Type],
    ret: Option<Type>,
    body: impl FnOnce(&mut FunctionBuilder<'_>, &[Value]),
) -> Function {
    FunctionBuilder::build(name, kind, params, ret, body)
}

fn kernel(
    name: &str,
    params: &[Type],
    body: impl FnOnce(&mut FunctionBuilder<'_>, &[Value]),
) -> Function {
    func(name, FuncKind::Kernel, params, None, body)
}

fn konst(b: &mut FunctionBuilder<'_>, ty: Type, bits: u64) -> Value {
    b.constant(Const {
        ty,
        bits: u128::from(bits),
    })
}

/// A verified module holding `functions`; returns it with the id of its last function.
fn module(functions: Vec<Function>) -> (VerifiedModule, FuncId) {
    let mut m = Module::new();
    let mut last = None;
    for f in functions {
        last = Some(m.add_function(f));
    }
    let last = last.expect("at least one function");
    m.entry = Some(last);
    let verified = nacre_ir::verify(m).unwrap_or_else(|e| panic!("test IR is invalid: {e}"));
    (nacre_ir::transform::widen_half(verified), last)
}

/// The CUDA C of the module's last function, compiled to PTX when NVRTC is installed.
fn cuda(functions: Vec<Function>) -> String {
    let (m, k) = module(functions);
    let src = emit_kernel(&m, k).unwrap_or_else(|e| panic!("{e}"));
    check_with_nvrtc(&src);
    assert!(!src.source.contains("#include"), "{}", src.source);
    src.source
}

/// Compiles `src` to PTX for compute_90 when NVRTC is installed (and says so when not).
fn check_with_nvrtc(src: &KernelSource) {
    match nvrtc::compile_ptx(src, Arch::new(9, 0)) {
        Ok(ptx) => assert!(ptx.contains(&src.name), "the PTX defines {}", src.name),
        Err(NvrtcError::LibraryMissing { detail }) => {
            eprintln!("NVRTC check of {} skipped: {detail}", src.name)
        }
        Err(e) => panic!("{e}"),
    }
}

/// Stores `v` (cast to the element type if needed) at `out[slot]`.
fn store_at(b: &mut FunctionBuilder<'_>, out: Value, slot: u32, v: Value) {
    let elem = b.value_type(out).pointee().expect("a pointer");
    let v = if b.value_type(v) == Type::Scalar(elem) {
        v
    } else {
        b.cast(v, Type::Scalar(elem))
    };
    let i = konst(b, Type::U32, u64::from(slot));
    let p = b.elem_ptr(out, i);
    b.store(p, v);
}

/// `ops_<s>(out, a, b, c)`: every operator the verifier allows on `s`, each result stored to
/// its own slot of `out`.
fn ops_kernel(s: Scalar) -> Function {
    let t = Type::Scalar(s);
    kernel(&format!("ops_{s}"), &[Type::ptr(s), t, t, t], |b, p| {
        let (out, x, y, z) = (p[0], p[1], p[2], p[3]);
        let mut slot = 0;
        let mut put = |b: &mut FunctionBuilder<'_>, v: Value| {
            store_at(b, out, slot, v);
            slot += 1;
        };
        for op in UnaryOp::ALL {
            if op.accepts(s) {
                let v = b.unary(op, x);
                put(b, v);
            }
        }
        for op in BinaryOp::ALL {
            if op.accepts(s) {
                let v = b.binary(op, x, y);
                put(b, v);
            }
        }
        if s.is_float() {
            let v = b.fma(x, y, z);
            put(b, v);
        }
        for op in CmpOp::ALL {
            let v = b.cmp(op, x, y);
            put(b, v);
        }
        let c = b.cmp(CmpOp::Lt, x, y);
        let v = b.select(c, y, z);
        put(b, v);
        b.ret(None);
    })
}

/// `casts_<from>(x, out_bool, out_i8, ..., out_f64)`: `x` cast to every scalar type.
fn casts_kernel(from: Scalar) -> Function {
    let mut params = vec![Type::Scalar(from)];
    params.extend(Scalar::ALL.iter().map(|&s| Type::ptr(s)));
    kernel(&format!("casts_{from}"), &params, |b, p| {
        for (i, &to) in Scalar::ALL.iter().enumerate() {
            let v = b.cast(p[0], Type::Scalar(to));
            b.store(p[i + 1], v);
        }
        b.ret(None);
    })
}

#[test]
fn dialect_spellings() {
    let d = CudaDialect::default();
    let indices: Vec<String> = GpuIndex::ALL
        .iter()
        .flat_map(|&i| Dim::ALL.iter().map(move |&dim| (i, dim)))
        .map(|(i, dim)| d.gpu_index(i, dim).unwrap())
        .collect();
    assert_eq!(
        indices,
        [
            "threadIdx.x",
            "threadIdx.y",
            "threadIdx.z",
            "blockIdx.x",
            "blockIdx.y",
            "blockIdx.z",
            "blockDim.x",
            "blockDim.y",
            "blockDim.z",
            "gridDim.x",
            "gridDim.y",
            "gridDim.z"
        ]
    );
    assert_eq!(d.barrier().unwrap(), "__syncthreads();");
    assert_eq!(
        d.shared_array(Scalar::F32, 256, "s0").unwrap(),
        "__shared__ float s0[256];"
    );
    assert_eq!(
        d.shared_array(Scalar::Bool, 3, "s1").unwrap(),
        "__shared__ uint8_t s1[3];"
    );
    assert_eq!(d.device_function_qualifier().unwrap(), "static __device__ ");
    assert_eq!(d.status_type().unwrap(), "uint32_t *");
    for space in [
        AddressSpace::Generic,
        AddressSpace::Device,
        AddressSpace::Shared,
    ] {
        assert_eq!(d.pointer_type(Scalar::I16, space).unwrap(), "int16_t *");
    }
    assert_eq!(d.math_function(MathFn::Sqrt, Scalar::F32), "sqrtf");
    assert_eq!(d.math_function(MathFn::Fma, Scalar::F32), "fmaf");
    assert_eq!(d.math_function(MathFn::Rem, Scalar::F32), "fmodf");
    assert_eq!(d.math_function(MathFn::Floor, Scalar::F64), "floor");
    assert!(d.function_qualifier(FuncKind::Host).is_err());
    assert!(!d.preamble().contains("#include"));
}

#[test]
fn parameters_of_every_type() {
    let mut params: Vec<Type> = Scalar::HOST.iter().map(|&s| Type::Scalar(s)).collect();
    params.extend(Scalar::HOST.iter().map(|&s| Type::ptr(s)));
    let src = cuda(vec![kernel("params", &params, |b, _| {
        b.ret(None);
    })]);
    // The half types are their 16-bit storage.
    let expected = "extern \"C\" __global__ void f_params(uint8_t v0, int8_t v1, int16_t v2, \
         int32_t v3, int64_t v4, uint8_t v5, uint16_t v6, uint32_t v7, uint64_t v8, float v9, \
         double v10, uint16_t v11, uint16_t v12, uint8_t *v13, int8_t *v14, int16_t *v15, \
         int32_t *v16, int64_t *v17, uint8_t *v18, uint16_t *v19, uint32_t *v20, uint64_t *v21, \
         float *v22, double *v23, uint16_t *v24, uint16_t *v25, uint32_t *status) {";
    assert!(src.contains(expected), "{src}");
    assert!(!src.contains("__restrict__"), "{src}");
}

#[test]
fn operators_on_every_type() {
    for s in Scalar::HOST {
        let src = cuda(vec![ops_kernel(s)]);
        if matches!(
            s,
            Scalar::Bool | Scalar::I8 | Scalar::I32 | Scalar::U64 | Scalar::F32 | Scalar::F64
        ) {
            insta::assert_snapshot!(format!("ops_{s}"), src);
        }
    }
}

#[test]
fn integer_semantics_are_spelled_out() {
    let src = cuda(vec![ops_kernel(Scalar::I8)]);
    // Wrapping through a 32-bit unsigned type, masked shifts.
    assert!(
        src.contains("(int8_t)((uint32_t)v1 + (uint32_t)v2)"),
        "{src}"
    );
    assert!(src.contains("(int8_t)((uint32_t)v1 << (v2 & 7))"), "{src}");
    assert!(src.contains("(int8_t)(v1 >> (v2 & 7))"), "{src}");
    // Division by zero traps through the status word; MIN / -1 wraps.
    assert!(
        src.contains("if (v2 == 0) { *status = 1; return; }"),
        "{src}"
    );
    assert!(
        src.contains("if (v2 == 0) { *status = 2; return; }"),
        "{src}"
    );
    assert!(
        src.contains("v2 == -1 ? (int8_t)-(uint32_t)v1 : v1 / v2"),
        "{src}"
    );
    assert!(src.contains("v2 == -1 ? 0 : v1 % v2"), "{src}");
    let src = cuda(vec![ops_kernel(Scalar::U64)]);
    assert!(src.contains("v1 << (v2 & 63)"), "{src}");
}

#[test]
fn float_semantics_are_spelled_out() {
    let src = cuda(vec![ops_kernel(Scalar::F32)]);
    for call in [
        "fabsf(v1)",
        "sqrtf(v1)",
        "floorf(v1)",
        "ceilf(v1)",
        "fmodf(v1, v2)",
        "fmaf(v1, v2, v3)",
        "nacre_min_f32(v1, v2)",
        "nacre_max_f32(v1, v2)",
    ] {
        assert!(src.contains(call), "{call} in\n{src}");
    }
    assert!(
        src.contains("static __device__ __forceinline__ float nacre_min_f32(float a, float b)"),
        "{src}"
    );
    let src = cuda(vec![ops_kernel(Scalar::F64)]);
    assert!(
        src.contains("fma(v1, v2, v3)") && src.contains("fmod(v1, v2)"),
        "{src}"
    );
}

#[test]
fn casts_between_every_type() {
    // From every type a kernel parameter can have, to every type (the 128-bit ones too).
    for from in Scalar::HOST {
        let src = cuda(vec![casts_kernel(from)]);
        if matches!(from, Scalar::Bool | Scalar::I64 | Scalar::F32 | Scalar::F64) {
            insta::assert_snapshot!(format!("casts_{from}"), src);
        }
    }
    let src = cuda(vec![casts_kernel(Scalar::F64)]);
    // Saturating float-to-int casts through helpers with exact bounds; NaN gives 0.
    assert!(src.contains(" = nacre_f64_to_i32(v0);"), "{src}");
    assert!(src.contains(" = nacre_f64_to_u128(v0);"), "{src}");
    assert!(
        src.contains("if (x >= 18446744073709551616.0) return UINT64_MAX;"),
        "{src}"
    );
    assert!(src.contains("if (x != x) return 0;"), "{src}");
    assert!(src.contains("v16 = v0 != 0;"), "{src}");
    // To a half type: convert to f32 (the widening pass), then round with `cvt`.
    assert!(src.contains("v27 = nacre_f32_to_f16(v31);"), "{src}");
}

#[test]
fn constants_of_every_type() {
    let values: Vec<(Scalar, u64)> = vec![
        (Scalar::Bool, 1),
        (Scalar::I8, 0x80),
        (Scalar::I16, 0x8000),
        (Scalar::I32, i32::MIN as u32 as u64),
        (Scalar::I64, i64::MIN as u64),
        (Scalar::I64, i64::MAX as u64),
        (Scalar::U8, 255),
        (Scalar::U16, 65535),
        (Scalar::U32, u64::from(u32::MAX)),
        (Scalar::U64, u64::MAX),
        (Scalar::F32, u64::from(f32::NEG_INFINITY.to_bits())),
        (Scalar::F32, u64::from(f32::NAN.to_bits())),
        (Scalar::F32, u64::from(0.1f32.to_bits())),
        (Scalar::F64, f64::INFINITY.to_bits()),
        (Scalar::F64, f64::NAN.to_bits()),
        (Scalar::F64, 0xfff0_0000_0000_0001),
        (Scalar::F64, (-0.0f64).to_bits()),
    ];
    let params: Vec<Type> = values.iter().map(|&(s, _)| Type::ptr(s)).collect();
    let src = cuda(vec![kernel("constants", &params, |b, p| {
        for (&(s, bits), &out) in values.iter().zip(p) {
            let v = konst(b, Type::Scalar(s), bits);
            b.store(out, v);
        }
        b.ret(None);
    })]);
    insta::assert_snapshot!("constants", src);
}

#[test]
fn shared_arrays_barriers_and_3d_indices() {
    let src = cuda(vec![kernel(
        "tiles",
        &[Type::ptr(Scalar::F64), Type::ptr(Scalar::I16)],
        |b, p| {
            let mut idx = Vec::new();
            for index in GpuIndex::ALL {
                for dim in Dim::ALL {
                    idx.push(b.gpu_index(index, dim));
                }
            }
            let tile = b.shared_alloc(Scalar::F64, 256);
            let small = b.shared_alloc(Scalar::I16, 17);
            let (tx, tz) = (idx[0], idx[2]);
            let slot = b.elem_ptr(tile, tx);
            let x = b.load(p[0]);
            b.store(slot, x);
            b.barrier();
            let mut linear = idx[0];
            for &i in &idx[1..] {
                linear = b.binary(BinaryOp::Add, linear, i);
            }
            let other = b.elem_ptr(tile, linear);
            let y = b.load(other);
            let out = b.elem_ptr(p[0], linear);
            b.store(out, y);
            let s = b.elem_ptr(small, tz);
            let h = b.load(p[1]);
            b.store(s, h);
            b.barrier();
            let back = b.load(s);
            b.store(p[1], back);
            b.ret(None);
        },
    )]);
    assert!(src.contains("    __shared__ double s0[256];\n"), "{src}");
    assert!(src.contains("    __shared__ int16_t s1[17];\n"), "{src}");
    assert_eq!(src.matches("__syncthreads();").count(), 2, "{src}");
    insta::assert_snapshot!("shared_barriers_indices", src);
}

/// A kernel whose element-wise work goes through two levels of device functions, one of
/// which divides (and so can trap), with a loop and a branch.
fn calls_module() -> Vec<Function> {
    let unused = func(
        "unused",
        FuncKind::Host,
        &[Type::I32],
        Some(Type::I32),
        |b, p| {
            b.ret(Some(p[0]));
        },
    );
    // id 1: quotient(a, b) = a / b (traps on zero).
    let quotient = func(
        "quotient",
        FuncKind::Host,
        &[Type::I32, Type::I32],
        Some(Type::I32),
        |b, p| {
            let q = b.binary(BinaryOp::Div, p[0], p[1]);
            b.ret(Some(q));
        },
    );
    // id 2: sum_quotients(a, n) = sum over i in 1..=n of a / i.
    let sum = func(
        "sum_quotients",
        FuncKind::Host,
        &[Type::I32, Type::I32],
        Some(Type::I32),
        |b, p| {
            let header = b.create_block();
            let i = b.append_block_param(header, Type::I32);
            let acc = b.append_block_param(header, Type::I32);
            let body = b.create_block();
            let exit = b.create_block();
            let one = konst(b, Type::I32, 1);
            let zero = konst(b, Type::I32, 0);
            b.jump(header, vec![one, zero]);
            b.switch_to_block(header);
            let c = b.cmp(CmpOp::Le, i, p[1]);
            b.branch(c, body, vec![], exit, vec![]);
            b.switch_to_block(body);
            let q = b
                .call(FuncId::from_u32(1), vec![p[0], i], Some(Type::I32))
                .expect("a result");
            let acc2 = b.binary(BinaryOp::Add, acc, q);
            let one = konst(b, Type::I32, 1);
            let i2 = b.binary(BinaryOp::Add, i, one);
            b.jump(header, vec![i2, acc2]);
            b.switch_to_block(exit);
            b.ret(Some(acc));
        },
    );
    let k = kernel(
        "sums",
        &[Type::ptr(Scalar::I32), Type::I32, Type::U32],
        |b, p| {
            let t = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
            let in_range = b.cmp(CmpOp::Lt, t, p[2]);
            let work = b.create_block();
            let done = b.create_block();
            b.branch(in_range, work, vec![], done, vec![]);
            b.switch_to_block(work);
            let slot = b.elem_ptr(p[0], t);
            let a = b.load(slot);
            let r = b
                .call(FuncId::from_u32(2), vec![a, p[1]], Some(Type::I32))
                .expect("a result");
            b.store(slot, r);
            b.jump(done, vec![]);
            b.switch_to_block(done);
            b.ret(None);
        },
    );
    vec![unused, quotient, sum, k]
}

#[test]
fn kernels_call_device_functions() {
    let src = cuda(calls_module());
    assert!(!src.contains("f_unused"), "{src}");
    assert!(
        src.contains("static __device__ int32_t f_quotient(int32_t, int32_t, uint32_t *);"),
        "{src}"
    );
    assert!(
        src.contains(
            "static __device__ int32_t f_sum_quotients(int32_t v0, int32_t v1, uint32_t *status) {"
        ),
        "{src}"
    );
    // Traps in device functions propagate to the kernel, which returns.
    assert!(
        src.contains("if (v1 == 0) { *status = 1; return 0; }"),
        "{src}"
    );
    assert!(
        src.contains("    v7 = f_sum_quotients(v6, v1, status);\n    if (*status) return;\n"),
        "{src}"
    );
    insta::assert_snapshot!("device_calls", src);
}

#[test]
fn all_kernels_of_a_module() {
    let (m, _) = module(vec![
        ops_kernel(Scalar::I32),
        func("host", FuncKind::Host, &[], None, |b, _| {
            b.ret(None);
        }),
        casts_kernel(Scalar::U8),
    ]);
    let all = emit_kernels(&m).unwrap();
    let names: Vec<&str> = all.iter().map(|(_, k)| k.name.as_str()).collect();
    assert_eq!(names, ["f_ops_i32", "f_casts_u8"]);
    assert_eq!(all[0].0, FuncId::from_u32(0));
    assert_eq!(all[1].0, FuncId::from_u32(2));
}

#[test]
fn output_is_deterministic() {
    let a = cuda(calls_module());
    let b = cuda(calls_module());
    assert_eq!(a, b);
}

#[test]
fn errors_are_typed() {
    let (m, _) = module(calls_module());
    match emit_kernel(&m, FuncId::from_u32(1)) {
        Err(BackendError::Codegen {
            backend: "cuda",
            message,
        }) => assert!(message.contains("not a kernel"), "{message}"),
        other => panic!("expected a codegen error, got {other:?}"),
    }
    assert!(matches!(
        emit_kernel(&m, FuncId::from_u32(40)),
        Err(BackendError::Codegen { .. })
    ));

    // The IR names the extern by symbol only; the printer refuses it whatever it is linked to.
    let mut m = Module::new();
    let ext = m.declare_extern(ExternFunc {
        name: "one".into(),
        signature: Signature {
            params: vec![],
            ret: Some(Type::I32),
        },
    });
    let k = m.add_function(kernel("k", &[Type::ptr(Scalar::I32)], |b, p| {
        let r = b
            .call_extern(ext, vec![], Some(Type::I32))
            .expect("a result");
        b.store(p[0], r);
        b.ret(None);
    }));
    m.entry = Some(k);
    let m = nacre_ir::verify(m).unwrap_or_else(|e| panic!("test IR is invalid: {e}"));
    match emit_kernel(&m, k) {
        Err(BackendError::Unsupported {
            backend: "cuda",
            what,
        }) => assert!(what.contains("external"), "{what}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

/// A grid-stride kernel over `params` (the last one the `u32` bound): the entry computes the
/// canonical start and stride, the header tests `i < n`, and `body` fills the loop body given
/// the parameters and `i`.
fn grid_stride(
    name: &str,
    params: &[Type],
    body: impl FnOnce(&mut FunctionBuilder<'_>, &[Value], Value),
) -> Function {
    kernel(name, params, |b, p| {
        let grid = b.gpu_index(GpuIndex::GridDim, Dim::X);
        let block = b.gpu_index(GpuIndex::BlockDim, Dim::X);
        let stride = b.binary(BinaryOp::Mul, grid, block);
        let bid = b.gpu_index(GpuIndex::BlockIdx, Dim::X);
        let bdim = b.gpu_index(GpuIndex::BlockDim, Dim::X);
        let base = b.binary(BinaryOp::Mul, bid, bdim);
        let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
        let start = b.binary(BinaryOp::Add, base, tid);
        let header = b.create_block();
        let i = b.append_block_param(header, Type::U32);
        let body_block = b.create_block();
        let exit = b.create_block();
        b.jump(header, vec![start]);
        b.switch_to_block(header);
        let n = *p.last().expect("a bound");
        let more = b.cmp(CmpOp::Lt, i, n);
        b.branch(more, body_block, vec![], exit, vec![]);
        b.switch_to_block(body_block);
        body(b, p, i);
        let next = b.binary(BinaryOp::Add, i, stride);
        b.jump(header, vec![next]);
        b.switch_to_block(exit);
        b.ret(None);
    })
}

#[test]
fn lane_groups_for_every_element_size() {
    // out[i] = in[i] as i64 + i, over u8 in and i64 out: groups of 4 and 32 bytes.
    let k = grid_stride(
        "widen",
        &[Type::ptr(Scalar::U8), Type::ptr(Scalar::I64), Type::U32],
        |b, p, i| {
            let src = b.elem_ptr(p[0], i);
            let x = b.load(src);
            let x = b.cast(x, Type::I64);
            let wide_i = b.cast(i, Type::I64);
            let y = b.binary(BinaryOp::Add, x, wide_i);
            let dst = b.elem_ptr(p[1], i);
            b.store(dst, y);
        },
    );
    let src = cuda(vec![k]);
    assert!(
        src.contains("struct __align__(4) nacre_u8x4 { uint8_t v[4]; };"),
        "{src}"
    );
    assert!(
        src.contains("struct __align__(32) nacre_i64x4 { int64_t v[4]; };"),
        "{src}"
    );
    assert!(
        src.contains("((uintptr_t)v0 & 3) == 0 && ((uintptr_t)v1 & 31) == 0"),
        "{src}"
    );
    // The body reads `i`, so every lane declares it; the output group is only stored.
    assert!(src.contains("uint32_t v11 = nacre_j * 4 + 3;"), "{src}");
    assert!(src.contains("nacre_i64x4 nacre_a1;\n"), "{src}");
    assert_eq!(src.matches("nacre_a1.v[").count(), 4, "{src}");
}

#[test]
fn half_lane_groups_are_eight_wide() {
    // y[i] = x[i] as f32 over f16 in and f16 out: groups of 8 (16 bytes), the arithmetic in f32.
    let k = grid_stride(
        "halves",
        &[Type::ptr(Scalar::F16), Type::ptr(Scalar::F16), Type::U32],
        |b, p, i| {
            let src = b.elem_ptr(p[0], i);
            let x = b.load(src);
            let y = b.binary(BinaryOp::Mul, x, x);
            let dst = b.elem_ptr(p[1], i);
            b.store(dst, y);
        },
    );
    let src = cuda(vec![k]);
    assert!(
        src.contains("struct __align__(16) nacre_f16x8 { uint16_t v[8]; };"),
        "{src}"
    );
    assert_eq!(src.matches("nacre_a1.v[").count(), 8, "{src}");
    assert!(src.contains("asm(\"cvt.rn.f16.f32 %0, %1;\""), "{src}");
    assert!(src.contains("#ifdef __CUDA_ARCH__"), "{src}");
}

#[test]
fn loops_that_are_not_lane_parallel_stay_scalar() {
    let ptrs = [Type::ptr(Scalar::I32), Type::ptr(Scalar::I32), Type::U32];
    // An integer division may trap: lanes would change which elements were stored first.
    let div = grid_stride("div", &ptrs, |b, p, i| {
        let a = b.elem_ptr(p[0], i);
        let x = b.load(a);
        let q = b.binary(BinaryOp::Div, x, x);
        b.store(a, q);
    });
    // A load after a store: the group would be read before the lane's store.
    let load_after_store = grid_stride("reload", &ptrs, |b, p, i| {
        let a = b.elem_ptr(p[0], i);
        let x = b.load(a);
        let out = b.elem_ptr(p[1], i);
        b.store(out, x);
        let again = b.load(a);
        b.store(a, again);
    });
    // A neighbour's element: not at `i`.
    let neighbour = grid_stride("neighbour", &ptrs, |b, p, i| {
        let one = konst(b, Type::U32, 1);
        let j = b.binary(BinaryOp::Add, i, one);
        let a = b.elem_ptr(p[0], j);
        let x = b.load(a);
        let out = b.elem_ptr(p[1], i);
        b.store(out, x);
    });
    for k in [div, load_after_store, neighbour] {
        let name = k.name.clone();
        let src = cuda(vec![k]);
        assert!(!src.contains("nacre_groups"), "{name}: {src}");
    }
}

/// A kernel storing `blockDim.x` at `p[threadIdx.x]` and a host function launching it once
/// per block size given (`None`: the host's second parameter); the CUDA C of the kernel.
fn launched_with(blocks: &[Option<u32>]) -> String {
    let pu = Type::ptr(Scalar::U32);
    let k = kernel("k", &[pu], |b, p| {
        let dim = b.gpu_index(GpuIndex::BlockDim, Dim::X);
        let t = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
        let at = b.elem_ptr(p[0], t);
        b.store(at, dim);
        b.ret(None);
    });
    let host = func("host", FuncKind::Host, &[pu, Type::U32], None, |b, p| {
        for &block in blocks {
            let one = konst(b, Type::U32, 1);
            let bx = match block {
                Some(n) => konst(b, Type::U32, u64::from(n)),
                None => p[1],
            };
            b.launch(
                FuncId::from_u32(0),
                [one, one, one],
                [bx, one, one],
                vec![p[0]],
            );
        }
        b.ret(None);
    });
    let (m, _) = module(vec![k, host]);
    let src = emit_kernel(&m, FuncId::from_u32(0)).unwrap_or_else(|e| panic!("{e}"));
    check_with_nvrtc(&src);
    src.source
}

#[test]
fn a_block_size_every_launch_agrees_on_is_compiled_in() {
    let src = launched_with(&[Some(128), Some(128)]);
    assert!(
        src.contains("__global__ void __launch_bounds__(128) f_k("),
        "{src}"
    );
    assert!(!src.contains("blockDim"), "{src}");

    for blocks in [&[Some(128), Some(64)][..], &[None], &[]] {
        let src = launched_with(blocks);
        assert!(!src.contains("__launch_bounds__"), "{blocks:?}: {src}");
        assert!(src.contains("blockDim.x"), "{blocks:?}: {src}");
    }
    // More threads than any GPU runs: the launch will fail, the compile must not.
    let src = launched_with(&[Some(2048)]);
    assert!(!src.contains("__launch_bounds__"), "{src}");
}
