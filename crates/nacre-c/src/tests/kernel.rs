//! Printing GPU kernels through the dialect hooks ([`crate::emit_kernel_source`]), with a test
//! dialect shaped like Metal: built-in indices and the status word arrive as kernel
//! parameters, scalars by reference and copied into locals by the prologue, and pointers and
//! shared storage carry address-space qualifiers.

use super::{function, konst};
use crate::dialect::{Dialect, DialectError, KernelHead, KernelPrototype};
use crate::helpers::{self, Helper};
use crate::{emit_kernel_source, CDialect};
use nacre_backend::BackendError;
use nacre_ir::verifier::VerifierErrorKind;
use nacre_ir::{
    verify, AddressSpace, BinaryOp, Dim, ExternFunc, FuncId, FuncKind, Function, FunctionBuilder,
    GpuIndex, Module, Scalar, Signature, Type, UnaryOp, VerifiedModule,
};
use nacre_kernel::LaunchShape;
use std::cell::RefCell;

/// A Metal-shaped dialect; it remembers the index kinds of the last kernel head it printed.
#[derive(Default)]
struct GpuTestDialect {
    indices: RefCell<Vec<GpuIndex>>,
}

fn builtin(index: GpuIndex) -> (&'static str, &'static str) {
    match index {
        GpuIndex::ThreadIdx => ("nacre_thread_idx", "thread_position_in_threadgroup"),
        GpuIndex::BlockIdx => ("nacre_block_idx", "threadgroup_position_in_grid"),
        GpuIndex::BlockDim => ("nacre_block_dim", "threads_per_threadgroup"),
        GpuIndex::GridDim => ("nacre_grid_dim", "threadgroups_per_grid"),
    }
}

impl Dialect for GpuTestDialect {
    fn backend_name(&self) -> &'static str {
        "gpu-test"
    }

    fn preamble(&self) -> &'static str {
        "#include <metal_stdlib>\nusing namespace metal;\n"
    }

    fn scalar_type(&self, s: Scalar) -> &'static str {
        CDialect.scalar_type(s)
    }

    fn address_type(&self) -> &'static str {
        "uint64_t"
    }

    fn address_space_qualifier(&self, space: AddressSpace) -> Result<&'static str, DialectError> {
        match space {
            AddressSpace::Generic => Ok("device "),
            AddressSpace::Device => Ok("device "),
            AddressSpace::Shared => Ok("threadgroup "),
        }
    }

    fn function_qualifier(&self, kind: FuncKind) -> Result<&'static str, DialectError> {
        match kind {
            FuncKind::Host => Err(DialectError::HostFunction {
                target: "the test device",
            }),
            FuncKind::Kernel => Err(DialectError::KernelOutsideDeviceCode),
        }
    }

    fn math_function(&self, f: crate::dialect::MathFn, _s: Scalar) -> String {
        f.c_name().to_string()
    }

    fn helper_definition(&self, helper: Helper) -> String {
        helpers::c_definition(self, "static inline ", helper)
    }

    fn check_scalar(&self, s: Scalar) -> Result<(), DialectError> {
        if s == Scalar::F64 {
            Err(DialectError::Scalar {
                scalar: s,
                target: "the test device",
            })
        } else {
            Ok(())
        }
    }

    fn status_type(&self) -> Result<String, DialectError> {
        self.pointer_type(Scalar::U32, AddressSpace::Device)
    }

    fn gpu_index(&self, index: GpuIndex, dim: Dim) -> Result<String, DialectError> {
        Ok(format!("{}.{}", builtin(index).0, dim.name()))
    }

    fn barrier(&self) -> Result<String, DialectError> {
        Ok("threadgroup_barrier(mem_flags::mem_threadgroup);".to_string())
    }

    fn shared_array(&self, elem: Scalar, len: u32, name: &str) -> Result<String, DialectError> {
        Ok(format!(
            "threadgroup {} {name}[{len}];",
            self.scalar_type(elem)
        ))
    }

    fn kernel_prototype(&self, head: &KernelHead<'_>) -> Result<KernelPrototype, DialectError> {
        *self.indices.borrow_mut() = head.indices.to_vec();
        let mut params = Vec::new();
        let mut prologue = Vec::new();
        for (i, p) in head.params.iter().enumerate() {
            if p.ty.is_ptr() {
                params.push(format!("{}{} [[buffer({i})]]", p.c_type, p.name));
            } else {
                params.push(format!(
                    "constant {} &nacre_arg{i} [[buffer({i})]]",
                    p.c_type
                ));
                prologue.push(format!("{} {} = nacre_arg{i};", p.c_type, p.name));
            }
        }
        params.push(format!(
            "{}{} [[buffer({})]]",
            self.status_type()?,
            head.status,
            head.params.len()
        ));
        for &index in head.indices {
            let (name, attribute) = builtin(index);
            params.push(format!("uint3 {name} [[{attribute}]]"));
        }
        Ok(KernelPrototype {
            signature: format!("kernel void {}({})", head.name, params.join(", ")),
            prologue,
        })
    }

    fn device_function_qualifier(&self) -> Result<&'static str, DialectError> {
        Ok("static ")
    }
}

fn kernel(
    name: &str,
    params: &[Type],
    body: impl FnOnce(&mut FunctionBuilder<'_>, &[nacre_ir::Value]),
) -> Function {
    FunctionBuilder::build(name, FuncKind::Kernel, params, None, body)
}

/// A verified module with a host function, an unused device function, `inner` called by
/// `outer` called by kernel `k`, and the kernel itself. Returns the module and `k`.
fn module_with_kernel() -> (VerifiedModule, FuncId) {
    let mut m = Module::new();
    let host = m.add_function(function("host", &[], None, |b, _| {
        b.ret(None);
    }));
    m.add_function(function("unused", &[Type::F32], Some(Type::F32), |b, p| {
        b.ret(Some(p[0]));
    }));
    let inner = m.add_function(function("inner", &[Type::F32], Some(Type::F32), |b, p| {
        let r = b.unary(UnaryOp::Neg, p[0]);
        b.ret(Some(r));
    }));
    let outer = m.add_function(function("outer", &[Type::F32], Some(Type::F32), |b, p| {
        let r = b.call(inner, vec![p[0]], Some(Type::F32)).unwrap();
        let m = b.binary(BinaryOp::Max, r, p[0]);
        b.ret(Some(m));
    }));
    let k = m.add_function(kernel("k", &[Type::ptr(Scalar::F32), Type::U32], |b, p| {
        let t = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
        let g = b.gpu_index(GpuIndex::GridDim, Dim::Z);
        let tile = b.shared_alloc(Scalar::F32, 64);
        let counts = b.shared_alloc(Scalar::U32, 8);
        let slot = b.elem_ptr(tile, t);
        let x = b.load(p[0]);
        b.store(slot, x);
        b.barrier();
        let y = b.load(slot);
        let z = b.call(outer, vec![y], Some(Type::F32)).unwrap();
        let q = b.binary(BinaryOp::Div, g, p[1]);
        let c = b.elem_ptr(counts, q);
        b.store(c, t);
        let out = b.elem_ptr(p[0], t);
        b.store(out, z);
        b.ret(None);
    }));
    m.entry = Some(host);
    (verify(m).expect("test IR is valid"), k)
}

/// A verified module of `functions` whose entry is the last (a kernel, in these tests).
fn verified(mut m: Module) -> VerifiedModule {
    m.entry = m.functions.keys().next_back();
    verify(m).expect("test IR is valid")
}

#[test]
fn kernel_source_through_the_hooks() {
    let (m, k) = module_with_kernel();
    let d = GpuTestDialect::default();
    let code =
        emit_kernel_source(&d, &m, k, LaunchShape::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(code.symbol, "f_k");
    assert_eq!(
        *d.indices.borrow(),
        [GpuIndex::ThreadIdx, GpuIndex::GridDim],
        "the head lists the index kinds read, in GpuIndex::ALL order"
    );
    let src = &code.source;
    assert!(!src.contains("f_host"), "host functions stay out:\n{src}");
    assert!(
        !src.contains("f_unused"),
        "uncalled functions stay out:\n{src}"
    );
    assert!(
        src.contains("static float f_inner(float, device uint32_t *);"),
        "{src}"
    );
    assert!(src.contains("threadgroup float s0[64];"), "{src}");
    assert!(src.contains("threadgroup uint32_t s1[8];"), "{src}");
    assert!(
        src.contains("nacre_min_f32") || src.contains("nacre_max_f32"),
        "{src}"
    );
    insta::assert_snapshot!("kernel_hooks", src);
}

#[test]
fn kernel_source_is_deterministic() {
    let (m, k) = module_with_kernel();
    let a = emit_kernel_source(&GpuTestDialect::default(), &m, k, LaunchShape::default()).unwrap();
    let (m2, k2) = module_with_kernel();
    let b =
        emit_kernel_source(&GpuTestDialect::default(), &m2, k2, LaunchShape::default()).unwrap();
    assert_eq!(a, b);
}

#[test]
fn only_kernels_are_emitted_on_their_own() {
    let (m, _) = module_with_kernel();
    let host = m.module().entry.unwrap();
    match emit_kernel_source(&GpuTestDialect::default(), &m, host, LaunchShape::default()) {
        Err(BackendError::Codegen { message, .. }) => {
            assert!(message.contains("not a kernel"), "{message}")
        }
        other => panic!("expected a codegen error, got {other:?}"),
    }
    let missing = FuncId::from_u32(99);
    assert!(matches!(
        emit_kernel_source(
            &GpuTestDialect::default(),
            &m,
            missing,
            LaunchShape::default()
        ),
        Err(BackendError::Codegen { .. })
    ));
}

#[test]
fn host_dialect_refuses_kernels() {
    let (m, k) = module_with_kernel();
    match emit_kernel_source(&CDialect, &m, k, LaunchShape::default()) {
        Err(BackendError::Unsupported { backend: "c", what }) => {
            assert!(what.contains("shared") || what.contains("kernel"), "{what}")
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn device_code_cannot_call_externs_or_use_refused_types() {
    let mut m = Module::new();
    let ext = m.declare_extern(ExternFunc {
        name: "seven".into(),
        signature: Signature {
            params: vec![],
            ret: Some(Type::I32),
        },
    });
    let dev = m.add_function(function("dev", &[], Some(Type::I32), |b, _| {
        let r = b.call_extern(ext, vec![], Some(Type::I32)).unwrap();
        b.ret(Some(r));
    }));
    let k = m.add_function(kernel("k", &[], |b, _| {
        b.call(dev, vec![], Some(Type::I32));
        b.ret(None);
    }));
    let m = verified(m);
    match emit_kernel_source(&GpuTestDialect::default(), &m, k, LaunchShape::default()) {
        Err(BackendError::Unsupported { what, .. }) => {
            assert!(what.contains("external"), "{what}")
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }

    let mut m = Module::new();
    let k = m.add_function(kernel("k", &[Type::ptr(Scalar::F64)], |b, p| {
        let x = konst(b, Type::F64, 1.0f64.to_bits());
        b.store(p[0], x);
        b.ret(None);
    }));
    let m = verified(m);
    match emit_kernel_source(&GpuTestDialect::default(), &m, k, LaunchShape::default()) {
        Err(BackendError::Unsupported { what, .. }) => assert!(what.contains("f64"), "{what}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn gpu_operations_outside_kernels_never_reach_the_printer() {
    // The printer takes verified modules only, and the verifier rejects GPU operations
    // outside kernels, so the printer does not check for them.
    let mut m = Module::new();
    let dev = m.add_function(function("dev", &[], Some(Type::U32), |b, _| {
        let t = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
        b.ret(Some(t));
    }));
    let k = m.add_function(kernel("k", &[], |b, _| {
        b.call(dev, vec![], Some(Type::U32));
        b.ret(None);
    }));
    m.entry = Some(k);
    let e = verify(m).expect_err("GPU operations outside kernels are invalid IR");
    assert_eq!(e.kind, VerifierErrorKind::Type, "{e}");
    assert_eq!(e.function, "dev", "{e}");
    assert!(e.message.contains("only allowed in kernels"), "{e}");
}
