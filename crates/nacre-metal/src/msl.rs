//! MSL generation: [`MslDialect`] (the Metal spelling of the shared C-family printer) and
//! [`emit_msl`], which turns the kernels of a module into one MSL source each.
//!
//! [`emit_msl`] first runs [`infer_address_spaces`], so every pointer is `device` (kernel
//! buffers) or `threadgroup` (shared arrays) and the functions kernels call become device
//! copies per combination of pointer spaces. Each kernel is then printed by
//! [`nacre_c::emit_kernel_source`] with this dialect:
//!
//! - the signature binds pointer parameters as `device T *vN [[buffer(i)]]`, scalar
//!   parameters as `constant T &nacre_argI [[buffer(i)]]` copied into mutable locals `vN`
//!   (SSA block parameters may assign them), the status word as the last buffer, and the
//!   built-ins the kernel reads as `uint3` parameters with `[[thread_position_in_threadgroup]]`,
//!   `[[threadgroup_position_in_grid]]`, `[[threads_per_threadgroup]]` and
//!   `[[threadgroups_per_grid]]`;
//! - shared arrays are `threadgroup T sN[len]` at kernel scope, barriers
//!   `threadgroup_barrier(mem_flags::mem_threadgroup)`;
//! - control flow has no `goto` (MSL forbids it): nested `if`s, `for (;;)` loops and
//!   `do { } while (0)` regions, and every loop carries a 64-bit iteration guard (two 32-bit
//!   halves, as naga does) so that the Metal compiler, which may treat a loop it cannot prove
//!   finite as undefined behaviour, sees a bounded loop;
//! - warp collectives are SIMD-group functions and voting barriers meet in threadgroup slots
//!   (see [`crate::simd`]);
//! - math goes through `metal::` functions; `bool` is stored as `uchar`, as in the C backend;
//!   `f64` is refused (Metal has no `double`).
//!
//! Before that, kernels are specialised for their launch shapes
//! ([`nacre_kernel::specialised_for_launches`]: the runtime dispatches exactly the host
//! code's grids and threadgroups), and a kernel whose threadgroup size every launch fixes
//! declares it with `[[max_total_threads_per_threadgroup(N)]]`.
//!
//! The output depends only on the module's structure, so it is snapshot-tested.

use crate::error::MetalError;
use crate::layout::KernelLayout;
use nacre_c::dialect::{
    AtomicAccess, AtomicKind, AtomicSpelling, CollectiveAccess, CollectiveSpelling, DialectError,
    LaneGroup, MathFn, LANES,
};
use nacre_c::helpers::{self, Helper};
use nacre_c::{emit_kernel_source, Dialect, KernelHead, KernelPrototype, LoopGuard};
use nacre_ir::{
    verify, AddressSpace, AtomicOp, FuncId, FuncKind, GpuIndex, InstKind, MemOrder, Module, Scalar,
    Scope, VerifiedModule,
};
use nacre_kernel::{infer_address_spaces, specialised_for_launches};

/// The Metal Shading Language as a dialect of the shared C-family printer.
#[derive(Copy, Clone, Debug, Default)]
pub struct MslDialect;

/// The source lines before every kernel: the Metal standard library and the `<stdint.h>`
/// limit macros the shared printer's literals and helpers use (MSL does not define them).
const PREAMBLE: &str = "#include <metal_stdlib>
using namespace metal;

#ifndef INT64_C
#define INT64_C(c) c##L
#endif
#ifndef UINT64_C
#define UINT64_C(c) c##UL
#endif
#ifndef INT8_MIN
#define INT8_MIN (-128)
#endif
#ifndef INT8_MAX
#define INT8_MAX 127
#endif
#ifndef INT16_MIN
#define INT16_MIN (-32768)
#endif
#ifndef INT16_MAX
#define INT16_MAX 32767
#endif
#ifndef INT32_MIN
#define INT32_MIN (-2147483647 - 1)
#endif
#ifndef INT32_MAX
#define INT32_MAX 2147483647
#endif
#ifndef INT64_MIN
#define INT64_MIN (-9223372036854775807L - 1L)
#endif
#ifndef INT64_MAX
#define INT64_MAX 9223372036854775807L
#endif
#ifndef UINT8_MAX
#define UINT8_MAX 255
#endif
#ifndef UINT16_MAX
#define UINT16_MAX 65535
#endif
#ifndef UINT32_MAX
#define UINT32_MAX 4294967295u
#endif
#ifndef UINT64_MAX
#define UINT64_MAX 18446744073709551615UL
#endif
";

/// The parameter name and attribute of each built-in index.
fn builtin(index: GpuIndex) -> (&'static str, &'static str) {
    match index {
        GpuIndex::ThreadIdx => ("nacre_thread_idx", "thread_position_in_threadgroup"),
        GpuIndex::BlockIdx => ("nacre_block_idx", "threadgroup_position_in_grid"),
        GpuIndex::BlockDim => ("nacre_block_dim", "threads_per_threadgroup"),
        GpuIndex::GridDim => ("nacre_grid_dim", "threadgroups_per_grid"),
    }
}

/// A typed refusal of an atomic Metal lacks.
fn refused_atomic(what: String, instead: &'static str) -> DialectError {
    DialectError::Atomic {
        what,
        target: "Metal",
        instead,
    }
}

/// Metal's atomics: the `atomic_*_explicit` functions on `atomic_int`, `atomic_uint` and (add
/// and exchange) `atomic_float`, which are relaxed only; other orderings, 64-bit atomics and
/// float min and max are refused with a typed error.
fn msl_atomic(d: &MslDialect, a: &AtomicAccess<'_>) -> Result<AtomicSpelling, DialectError> {
    if a.order != MemOrder::Relaxed {
        return Err(refused_atomic(
            format!("{} ordering", a.order.name()),
            "Metal's atomics are relaxed: use Ordering::Relaxed, with sync_threads to order a block",
        ));
    }
    let atomic_type = match a.elem {
        Scalar::I32 => "atomic_int",
        Scalar::U32 => "atomic_uint",
        Scalar::F32 => "atomic_float",
        s => {
            return Err(refused_atomic(
                format!("atomics on {s}"),
                "use 32-bit atomics on Metal",
            ))
        }
    };
    let space = d.address_space_qualifier(a.space)?;
    let p = format!("({space}{atomic_type} *){}", a.ptr);
    let relaxed = "memory_order_relaxed";
    Ok(match a.kind {
        AtomicKind::Cas { expected, new } => {
            if a.elem == Scalar::F32 {
                return Err(refused_atomic(
                    "compare_exchange on f32".into(),
                    "compare the bits as u32",
                ));
            }
            // A weak exchange may fail spuriously: retry while the value found is the expected one.
            AtomicSpelling {
                statements: format!(
                    "{r} = {expected}; while (!atomic_compare_exchange_weak_explicit({p}, &{r}, {new}, {relaxed}, {relaxed}) && {r} == {expected}) {{}}",
                    r = a.result
                ),
                helper: None,
            }
        }
        AtomicKind::Rmw { op, value } => {
            let f = match op {
                AtomicOp::Add => "fetch_add",
                AtomicOp::Sub if a.elem != Scalar::F32 => "fetch_sub",
                AtomicOp::Min if a.elem != Scalar::F32 => "fetch_min",
                AtomicOp::Max if a.elem != Scalar::F32 => "fetch_max",
                AtomicOp::And => "fetch_and",
                AtomicOp::Or => "fetch_or",
                AtomicOp::Xor => "fetch_xor",
                AtomicOp::Swap => "exchange",
                _ => {
                    return Err(refused_atomic(
                        format!("fetch_{} on f32", op.name()),
                        "Metal's float atomics add and exchange only",
                    ))
                }
            };
            AtomicSpelling::assign(
                a,
                format_args!("atomic_{f}_explicit({p}, {value}, {relaxed})"),
            )
        }
    })
}

/// The kernel parameter of the dynamic shared memory (threadgroup memory 0).
const DYNAMIC_SHARED: &str = "nacre_dynamic_smem";

/// The kernel parameter of its size in bytes.
const DYNAMIC_SHARED_BYTES: &str = "nacre_dynamic_smem_bytes";

impl Dialect for MslDialect {
    fn backend_name(&self) -> &'static str {
        "metal"
    }

    fn preamble(&self) -> &'static str {
        PREAMBLE
    }

    fn scalar_type(&self, s: Scalar) -> &'static str {
        match s {
            Scalar::Bool | Scalar::U8 => "uchar",
            Scalar::I8 => "char",
            Scalar::I16 => "short",
            Scalar::I32 => "int",
            Scalar::I64 => "long",
            // The half types are their 16-bit storage; they compute through `float` with the
            // portable conversions (`nacre_c::helpers`), the same bits on every target.
            Scalar::U16 | Scalar::F16 | Scalar::BF16 => "ushort",
            Scalar::U32 => "uint",
            Scalar::U64 => "ulong",
            Scalar::F32 => "float",
            Scalar::F64 => "double",
            // Metal has no 128-bit integers; `check_scalar` refuses them before this is used.
            Scalar::I128 | Scalar::U128 => "ulong",
        }
    }

    fn address_type(&self) -> &'static str {
        "ulong"
    }

    fn address_space_qualifier(&self, space: AddressSpace) -> Result<&'static str, DialectError> {
        match space {
            AddressSpace::Device => Ok("device "),
            AddressSpace::Shared => Ok("threadgroup "),
            AddressSpace::Generic => Err(DialectError::AddressSpace {
                space,
                target: "Metal",
            }),
        }
    }

    fn function_qualifier(&self, kind: FuncKind) -> Result<&'static str, DialectError> {
        Err(match kind {
            FuncKind::Host => DialectError::HostFunction { target: "Metal" },
            FuncKind::Kernel => DialectError::KernelOutsideDeviceCode,
        })
    }

    fn math_function(&self, f: MathFn, _s: Scalar) -> String {
        // Metal's library has C's names for `float` (no `f` suffix); `abs` is `fabs`. The
        // library is compiled without fast math, so these are the precise versions.
        match f {
            MathFn::Abs => "metal::abs".to_string(),
            f => format!("metal::{}", f.c_name()),
        }
    }

    fn math_by_helper(&self, f: MathFn, _s: Scalar) -> Result<bool, DialectError> {
        use nacre_ir::{MathFn as F, MathFn2 as F2};
        match f {
            MathFn::Lib(F::ExpM1 | F::Ln1p | F::Cbrt) | MathFn::Lib2(F2::Hypot) => Ok(true),
            MathFn::Lib(F::Erf) => Err(DialectError::MathFunction {
                name: "erf",
                target: "Metal",
            }),
            _ => Ok(false),
        }
    }

    fn helper_definition(&self, helper: Helper) -> String {
        let name = helper.name();
        match helper {
            Helper::FromBits(s) => {
                let (f, u) = (self.scalar_type(s), self.scalar_type(bits_type(s)));
                format!("inline {f} {name}({u} b) {{\n    return as_type<{f}>(b);\n}}\n")
            }
            Helper::ToBits(s) => {
                let (f, u) = (self.scalar_type(s), self.scalar_type(bits_type(s)));
                format!("inline {u} {name}({f} x) {{\n    return as_type<{u}>(x);\n}}\n")
            }
            Helper::FloatToInt { .. }
            | Helper::Min(_)
            | Helper::Max(_)
            | Helper::Bits(..)
            | Helper::Math(..)
            | Helper::HalfToF32(_)
            | Helper::F32ToHalf(_) => helpers::c_definition(self, "inline ", helper),
            // `msl_atomic` refuses what Metal lacks instead of looping; should a loop ever be
            // asked for, Metal's compiler stops here rather than at a wrong definition.
            Helper::AtomicLoop { .. } => {
                format!("#error \"{name}: Metal has no compare-exchange loop helpers\"\n")
            }
            // Metal kernels return at a failed check (no `defers_bounds_traps`): MSL has no
            // writable program-scope storage to redirect to.
            Helper::TrapSink => format!("#error \"{name}: Metal kernels do not defer traps\"\n"),
            Helper::Collectives | Helper::WarpReduce { .. } => {
                crate::simd::definition(self, helper).unwrap_or_default()
            }
        }
    }

    fn check_scalar(&self, s: Scalar) -> Result<(), DialectError> {
        if s == Scalar::F64 || s.is_wide() {
            Err(DialectError::Scalar {
                scalar: s,
                target: "Metal",
            })
        } else {
            Ok(())
        }
    }

    fn status_type(&self) -> Result<String, DialectError> {
        self.pointer_type(Scalar::U32, AddressSpace::Device)
    }

    fn gpu_index(&self, index: GpuIndex, dim: nacre_ir::Dim) -> Result<String, DialectError> {
        Ok(format!("{}.{}", builtin(index).0, dim.name()))
    }

    fn barrier(&self) -> Result<String, DialectError> {
        Ok("threadgroup_barrier(mem_flags::mem_threadgroup);".to_string())
    }

    fn shared_array(&self, elem: Scalar, len: u32, name: &str) -> Result<String, DialectError> {
        self.check_scalar(elem)?;
        Ok(format!(
            "threadgroup {} {name}[{len}];",
            self.scalar_type(elem)
        ))
    }

    fn kernel_prototype(&self, head: &KernelHead<'_>) -> Result<KernelPrototype, DialectError> {
        let mut params = Vec::with_capacity(head.params.len() + 1 + head.indices.len());
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
        if head.dynamic_shared {
            // Threadgroup memory 0 and its size after the status word (see `layout`).
            params.push(format!(
                "threadgroup uchar *{DYNAMIC_SHARED} [[threadgroup(0)]]"
            ));
            params.push(format!(
                "constant uint &{DYNAMIC_SHARED_BYTES} [[buffer({})]]",
                head.params.len() + 1
            ));
        }
        // Metal's limit is 1024 threads per threadgroup; a larger launch is refused when made.
        let bounds = head
            .threads_per_block
            .filter(|&n| n <= 1024)
            .map_or(String::new(), |n| {
                format!("[[max_total_threads_per_threadgroup({n})]] ")
            });
        Ok(KernelPrototype {
            signature: format!("{bounds}kernel void {}({})", head.name, params.join(", ")),
            prologue,
        })
    }

    fn atomic(&self, a: &AtomicAccess<'_>) -> Result<AtomicSpelling, DialectError> {
        msl_atomic(self, a)
    }

    fn collective(&self, c: &CollectiveAccess<'_>) -> Result<CollectiveSpelling, DialectError> {
        crate::simd::spell(c)
    }

    fn block_vote_storage(&self) -> &'static [&'static str] {
        &crate::simd::VOTE_STORAGE
    }

    fn fence(&self, _order: MemOrder, _scope: Scope) -> Result<String, DialectError> {
        Err(refused_atomic(
            "memory fences".into(),
            "order through atomics and threadgroup_barrier (sync_threads) instead",
        ))
    }

    fn dynamic_shared(&self, ptr_type: &str) -> Result<String, DialectError> {
        Ok(format!("({ptr_type}){DYNAMIC_SHARED}"))
    }

    fn dynamic_shared_bytes(&self) -> Result<String, DialectError> {
        Ok(DYNAMIC_SHARED_BYTES.to_string())
    }

    fn device_function_qualifier(&self) -> Result<&'static str, DialectError> {
        Ok("")
    }

    fn structured_control_flow(&self) -> bool {
        true
    }

    fn loop_guard(&self, name: &str) -> Option<LoopGuard> {
        Some(LoopGuard {
            declaration: format!("uint2 {name} = uint2(4294967295u);"),
            exhausted: format!("metal::all({name} == uint2(0u))"),
            step: format!("{name} -= uint2({name}.y == 0u, 1u);"),
        })
    }

    fn lane_group(&self, elem: Scalar, lanes: u32) -> Option<LaneGroup> {
        // Metal's vector types, aligned to their size; Metal has no double vectors and no
        // vectors of more than four elements.
        if elem == Scalar::F64 || lanes != LANES {
            return None;
        }
        Some(LaneGroup {
            name: format!("{}4", self.scalar_type(elem)),
            definition: None,
            elements: "",
        })
    }
}

/// The unsigned integer type with the width of a float type.
fn bits_type(s: Scalar) -> Scalar {
    if s == Scalar::F32 {
        Scalar::U32
    } else {
        Scalar::U64
    }
}

/// One kernel as MSL.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MslKernel {
    /// The kernel's id in the input module.
    pub id: FuncId,
    /// The kernel's IR name.
    pub name: String,
    /// The kernel function's name in [`MslKernel::source`] (what `newFunctionWithName:`
    /// looks up).
    pub symbol: String,
    /// The complete MSL source: the kernel and the device functions it calls.
    pub source: String,
    /// How the runtime binds the kernel's arguments.
    pub layout: KernelLayout,
    /// The bytes of threadgroup memory its shared arrays (and voting barriers) take.
    pub shared_bytes: u64,
    /// Whether it uses SIMD-group functions, which assume [`crate::simd::SIMD_WIDTH`].
    pub simd_groups: bool,
}

/// The threadgroup memory every Metal GPU provides (Apple's feature tables: 32 KiB).
pub const MAX_THREADGROUP_MEMORY: u64 = 32 * 1024;

/// Prints every kernel of `module` as MSL, in module order.
///
/// Fails with [`MetalError::AddressSpace`] when a pointer would need two address spaces or a
/// kernel's callee recurses, [`MetalError::Codegen`] for what MSL cannot express,
/// [`MetalError::TooManyArguments`] and [`MetalError::SharedMemory`] for kernels beyond
/// Metal's limits.
pub fn emit_msl(module: &VerifiedModule) -> Result<Vec<MslKernel>, MetalError> {
    let specialised = specialised_for_launches(module);
    let module = specialised.module.module();
    let device = infer_address_spaces(module)?;
    let first = device
        .kernels
        .first()
        .map(|&(id, _)| module.functions[id].name.clone());
    let Some(first) = first else {
        return Ok(Vec::new());
    };
    let checked = verify(device.module).map_err(|e| MetalError::Internal {
        kernel: first,
        message: e.to_string(),
    })?;
    let dm = checked.module();
    let mut out = Vec::with_capacity(device.kernels.len());
    for &(id, dk) in &device.kernels {
        let func = &dm.functions[dk];
        let layout = KernelLayout::of(func)?;
        let shared_bytes = shared_bytes(dm, dk);
        if shared_bytes > MAX_THREADGROUP_MEMORY {
            return Err(MetalError::SharedMemory {
                kernel: func.name.clone(),
                bytes: shared_bytes,
                max: MAX_THREADGROUP_MEMORY,
            });
        }
        let code = emit_kernel_source(&MslDialect, &checked, dk, specialised.shape(id))?;
        out.push(MslKernel {
            id,
            name: func.name.clone(),
            symbol: code.symbol,
            source: code.source,
            layout,
            shared_bytes,
            simd_groups: func.live_insts().any(|d| d.kind.is_collective()),
        });
    }
    Ok(out)
}

/// The bytes of threadgroup memory of the shared arrays a kernel allocates.
fn shared_bytes(module: &Module, kernel: FuncId) -> u64 {
    let func = &module.functions[kernel];
    let arrays: u64 = func
        .live_insts()
        .map(|d| match d.kind {
            InstKind::SharedAlloc { elem, len } => u64::from(elem.bytes()) * u64::from(len),
            _ => 0,
        })
        .sum();
    let votes = func
        .live_insts()
        .any(|d| matches!(d.kind, InstKind::BlockVote(..)));
    arrays + if votes { crate::simd::VOTE_BYTES } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nacre_ir::{BinaryOp, Const, Dim, Function, FunctionBuilder, Signature, Type};

    fn kernel_module(
        params: &[Type],
        body: impl FnOnce(&mut FunctionBuilder<'_>, &[nacre_ir::Value]),
    ) -> VerifiedModule {
        let f = FunctionBuilder::build("k", FuncKind::Kernel, params, None, body);
        let mut m = Module::new();
        let id = m.add_function(f);
        m.entry = Some(id);
        verify(m).unwrap()
    }

    #[test]
    fn spellings() {
        let d = MslDialect;
        assert_eq!(
            d.pointer_type(Scalar::F32, AddressSpace::Shared).unwrap(),
            "threadgroup float *"
        );
        assert_eq!(
            d.pointer_type(Scalar::F32, AddressSpace::Generic),
            Err(DialectError::AddressSpace {
                space: AddressSpace::Generic,
                target: "Metal"
            })
        );
        let refused = d.check_scalar(Scalar::F64).unwrap_err();
        assert_eq!(
            refused,
            DialectError::Scalar {
                scalar: Scalar::F64,
                target: "Metal"
            }
        );
        assert!(refused.to_string().contains("no double"), "{refused}");
        assert_eq!(d.status_type().unwrap(), "device uint *");
        assert!(d.structured_control_flow());
        let g = d.loop_guard("nacre_guard0").unwrap();
        assert_eq!(g.declaration, "uint2 nacre_guard0 = uint2(4294967295u);");
    }

    #[test]
    fn a_scalar_argument_is_copied_into_a_mutable_local() {
        // if i < n { n = n + 1 } : the scalar parameter flows into a block parameter.
        let m = kernel_module(&[Type::ptr(Scalar::U32), Type::U32], |b, p| {
            let i = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
            let c = b.cmp(nacre_ir::CmpOp::Lt, i, p[1]);
            let (t, j) = (b.create_block(), b.create_block());
            let x = b.append_block_param(j, Type::U32);
            b.branch(c, t, vec![], j, vec![p[1]]);
            b.switch_to_block(t);
            let one = b.constant(Const {
                ty: Type::U32,
                bits: 1,
            });
            let n2 = b.binary(BinaryOp::Add, p[1], one);
            b.jump(j, vec![n2]);
            b.switch_to_block(j);
            let dst = b.elem_ptr(p[0], i);
            b.store(dst, x);
            b.ret(None);
        });
        let k = emit_msl(&m).unwrap();
        let src = &k[0].source;
        assert!(
            src.contains("constant uint &nacre_arg1 [[buffer(1)]]"),
            "{src}"
        );
        assert!(src.contains("uint v1 = nacre_arg1;"), "{src}");
        assert!(!src.contains("goto"), "{src}");
        insta::assert_snapshot!("scalar_argument_local", src);
    }

    #[test]
    fn doubles_are_refused() {
        let m = kernel_module(&[Type::ptr(Scalar::F64)], |b, p| {
            let x = b.constant(Const {
                ty: Type::F64,
                bits: u128::from(1.0f64.to_bits()),
            });
            b.store(p[0], x);
            b.ret(None);
        });
        let err = emit_msl(&m).unwrap_err();
        assert!(err.to_string().contains("no double"), "{err}");
    }

    #[test]
    fn erf_is_refused_and_lacking_functions_get_portable_definitions() {
        let module = |f: nacre_ir::MathFn| {
            kernel_module(&[Type::ptr(Scalar::F32)], |b, p| {
                let x = b.load(p[0]);
                let y = b.math(f, x);
                b.store(p[0], y);
                b.ret(None);
            })
        };
        let err = emit_msl(&module(nacre_ir::MathFn::Erf)).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("`erf`") && text.contains("Metal"), "{text}");
        let k = emit_msl(&module(nacre_ir::MathFn::Cbrt)).unwrap();
        assert!(k[0].source.contains("nacre_cbrt_f32("), "{}", k[0].source);
        let k = emit_msl(&module(nacre_ir::MathFn::Tanh)).unwrap();
        assert!(k[0].source.contains("metal::tanh("), "{}", k[0].source);
    }

    #[test]
    fn too_much_shared_memory_is_refused() {
        let m = kernel_module(&[], |b, _| {
            b.shared_alloc(Scalar::F32, 10_000);
            b.ret(None);
        });
        match emit_msl(&m) {
            Err(MetalError::SharedMemory { bytes, .. }) => assert_eq!(bytes, 40_000),
            other => panic!("expected SharedMemory, got {other:?}"),
        }
    }

    #[test]
    fn a_module_without_kernels_gives_nothing() {
        let mut f = Function::new("h", FuncKind::Host, Signature::default());
        let mut b = FunctionBuilder::new(&mut f);
        b.create_entry_block();
        b.ret(None);
        let mut m = Module::new();
        m.entry = Some(m.add_function(f));
        assert!(emit_msl(&verify(m).unwrap()).unwrap().is_empty());
    }

    #[test]
    fn metal_atomics_are_relaxed_and_32_bit() {
        let access = |elem, kind, order| AtomicAccess {
            result: "r",
            ptr: "p",
            space: AddressSpace::Shared,
            elem,
            kind,
            order,
            scope: Scope::Block,
        };
        let add = AtomicKind::Rmw {
            op: AtomicOp::Add,
            value: "v",
        };
        let ok = MslDialect
            .atomic(&access(Scalar::U32, add, MemOrder::Relaxed))
            .unwrap();
        assert_eq!(
            ok.statements,
            "r = atomic_fetch_add_explicit((threadgroup atomic_uint *)p, v, memory_order_relaxed);"
        );
        for (elem, kind, order, what) in [
            (Scalar::U32, add, MemOrder::SeqCst, "seq_cst ordering"),
            (Scalar::I64, add, MemOrder::Relaxed, "atomics on i64"),
            (
                Scalar::F32,
                AtomicKind::Rmw {
                    op: AtomicOp::Min,
                    value: "v",
                },
                MemOrder::Relaxed,
                "fetch_min on f32",
            ),
        ] {
            let e = MslDialect.atomic(&access(elem, kind, order)).unwrap_err();
            assert!(
                matches!(&e, DialectError::Atomic { what: w, target: "Metal", .. } if w == what),
                "{e}"
            );
        }
        assert!(MslDialect.fence(MemOrder::SeqCst, Scope::Device).is_err());
    }
}
