//! CUDA C for kernel functions.
//!
//! [`emit_kernel`] prints one kernel of a module, with the functions it calls as `__device__`
//! functions, through the C-family printer of `nacre-c` ([`nacre_c::emit_kernel_source`]) in
//! the [`CudaDialect`]. The source is deterministic and includes no header, so NVRTC compiles
//! it without a file system and quickly: the preamble declares the fixed-width integer types,
//! their limits and the literal macros the printer uses. Semantics are those of the C backend
//! (and of [`nacre_ir::semantics`]): wrapping arithmetic through unsigned types, masked shifts,
//! NaN-ignoring float min/max, saturating float-to-int casts, and integer division by zero
//! stores the trap code into the status word and returns.
//!
//! A kernel whose canonical grid-stride loop has a lane-parallel body (saxpy, vecadd: see
//! [`nacre_kernel::lane_access`]) also gets a variant of the loop that runs four
//! consecutive iterations per thread and moves each array as one aligned group
//! ([`CudaDialect`]'s `lane_group`, a struct of four elements aligned to its size, which NVVM
//! loads and stores with one vector instruction); it runs when every array is aligned and the
//! bound cannot wrap, and the plain loop finishes the remainder.
//!
//! Every launch of a kernel runs exactly the grid and block its host code asks for, so sizes
//! that all the module's launches of a kernel pass as the same constant are printed as that
//! constant ([`nacre_kernel::specialise_launch_shapes`]), and a kernel whose block size is
//! known declares it with `__launch_bounds__`: NVRTC then unrolls loops over `blockDim`, such as
//! a shared-memory tree reduction. Each specialisation is a different source, hence a different
//! entry of the kernel cache.
//!
//! # Kernel calling convention
//!
//! A kernel `k(p0, .., pn)` becomes
//! `extern "C" __global__ void <name>(T0 v0, .., Tn vn, uint32_t *status)` where each `Ti` is
//! the natural CUDA type of the IR parameter (`bool` as `uint8_t`, integers and floats as
//! themselves, pointers as `T *` into generic memory, never `__restrict__`, since two
//! arguments may alias) and `status` points to a device-visible `u32` that the runtime zeroes
//! before the launch and reads after it: nonzero is a [`nacre_ir::Trap::code`]. The symbol
//! is [`KernelSource::name`].

use nacre_backend::BackendError;
use nacre_c::dialect::{
    AtomicAccess, AtomicSpelling, CollectiveAccess, CollectiveSpelling, DialectError, KernelHead,
    KernelPrototype, LaneGroup, MathFn,
};
use nacre_c::helpers::{self, Helper};
use nacre_c::{CDialect, Dialect};
use nacre_ir::{
    AddressSpace, Dim, FuncId, FuncKind, GpuIndex, MemOrder, Scalar, Scope, UnaryOp, VerifiedModule,
};
use nacre_kernel::{specialised_for_launches, Specialised};

/// The CUDA C of one kernel.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct KernelSource {
    /// The kernel's `extern "C"` symbol, to look up in the compiled module.
    pub name: String,
    /// The complete translation unit, ready for NVRTC.
    pub source: String,
    /// Whether the source was printed for fast math ([`CudaDialect::fast_math`]): NVRTC then
    /// compiles it with `--use_fast_math`. The source says so in its first line, so that the
    /// kernel caches keep the two apart.
    pub fast_math: bool,
}

/// The preamble of every kernel source: what `<stdint.h>` and `<math.h>` would provide to the
/// printed code, declared directly so that no header is needed.
const PREAMBLE: &str = "\
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef unsigned long long uintptr_t;
#define INT8_MIN (-128)
#define INT8_MAX 127
#define INT16_MIN (-32768)
#define INT16_MAX 32767
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define INT64_MIN (-9223372036854775807LL - 1)
#define INT64_MAX 9223372036854775807LL
#define UINT8_MAX 255
#define UINT16_MAX 65535
#define UINT32_MAX 4294967295u
#define UINT64_MAX 18446744073709551615ull
#define INT64_C(c) c##LL
#define UINT64_C(c) c##ULL
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fc00000)
";

/// CUDA C as NVRTC compiles it: `__global__` kernels with `extern "C"` symbols, `static
/// __device__` functions and helpers, CUDA's built-in indices, `__syncthreads()` and
/// `__shared__` arrays, and the device math library (`sqrtf`, `floorf`, `fmaf`, `fmodf`, ...).
///
/// By default the math library is CUDA's accurate one (`expf`, `sinf`, ... within the ulps
/// the CUDA Programming Guide lists) and floats keep IEEE semantics (no flush to zero, exact
/// division and square root, no contraction into `fma`). With [`CudaDialect::fast_math`],
/// `f32` calls of `exp`, `ln`, `log2`, `log10`, `sin`, `cos`, `tan` and `pow` use the
/// hardware approximations (`__expf`, `__sinf`, ...), and NVRTC compiles with
/// `--use_fast_math` (subnormals flushed to zero, approximate division and square root).
#[derive(Copy, Clone, Debug, Default)]
pub struct CudaDialect {
    /// Use the fast, approximate math functions and `--use_fast_math`.
    pub fast_math: bool,
}

/// The `f32` hardware approximation of a math function, where CUDA has one.
fn fast_intrinsic(f: MathFn) -> Option<&'static str> {
    use nacre_ir::{MathFn as F, MathFn2 as F2};
    Some(match f {
        MathFn::Lib(F::Exp) => "__expf",
        MathFn::Lib(F::Ln) => "__logf",
        MathFn::Lib(F::Log2) => "__log2f",
        MathFn::Lib(F::Log10) => "__log10f",
        MathFn::Lib(F::Sin) => "__sinf",
        MathFn::Lib(F::Cos) => "__cosf",
        MathFn::Lib(F::Tan) => "__tanf",
        MathFn::Lib2(F2::Pow) => "__powf",
        _ => return None,
    })
}

/// The name of the block's dynamic shared memory in a kernel body (an `extern __shared__`
/// byte array on the GPU, the emulation header's per-block buffer on the host).
const DYNAMIC_SHARED: &str = "nacre_dynamic_smem";

/// The name of its size in bytes (PTX's `%dynamic_smem_size` on the GPU).
const DYNAMIC_SHARED_BYTES: &str = "nacre_dynamic_smem_bytes";

/// The statements opening a kernel that reads its dynamic shared memory: on the GPU the
/// `extern __shared__` array (16-byte aligned) and its size from `%dynamic_smem_size`; the host
/// emulation defines both names itself.
fn dynamic_shared_prologue() -> Vec<String> {
    vec![
        "#ifdef __CUDA_ARCH__".into(),
        format!("extern __shared__ __align__(16) unsigned char {DYNAMIC_SHARED}[];"),
        format!("uint32_t {DYNAMIC_SHARED_BYTES};"),
        format!("asm(\"mov.u32 %0, %%dynamic_smem_size;\" : \"=r\"({DYNAMIC_SHARED_BYTES}));"),
        "#endif".into(),
    ]
}

impl Dialect for CudaDialect {
    fn backend_name(&self) -> &'static str {
        "cuda"
    }

    fn preamble(&self) -> &'static str {
        PREAMBLE
    }

    fn scalar_type(&self, s: Scalar) -> &'static str {
        // The fixed-width names of C, which the preamble declares.
        CDialect.scalar_type(s)
    }

    fn address_type(&self) -> &'static str {
        CDialect.address_type()
    }

    fn address_space_qualifier(&self, _space: AddressSpace) -> Result<&'static str, DialectError> {
        // CUDA pointers are generic: one pointer type reaches global and shared memory alike.
        Ok("")
    }

    fn function_qualifier(&self, kind: FuncKind) -> Result<&'static str, DialectError> {
        // Kernels and their callees have their own heads (`kernel_prototype`,
        // `device_function_qualifier`); nothing else belongs in a CUDA source.
        Err(match kind {
            FuncKind::Host => DialectError::HostFunction { target: "CUDA" },
            FuncKind::Kernel => DialectError::KernelOutsideDeviceCode,
        })
    }

    fn math_function(&self, f: MathFn, s: Scalar) -> String {
        match fast_intrinsic(f) {
            Some(name) if self.fast_math && s == Scalar::F32 => name.to_string(),
            // CUDA's device math library has C's names (`sqrtf`, `fmod`, ...).
            _ => CDialect.math_function(f, s),
        }
    }

    fn helper_definition(&self, helper: Helper) -> String {
        let qualifier = "static __device__ __forceinline__ ";
        match helper {
            Helper::Bits(op, s) => bits_definition(self, qualifier, op, s),
            Helper::HalfToF32(s) | Helper::F32ToHalf(s) => half_definition(self, helper, s),
            Helper::AtomicLoop { op, s } => atomic::loop_helper(self, qualifier, op, s),
            Helper::Collectives | Helper::WarpReduce { .. } => {
                collective::definition(self, qualifier, helper).unwrap_or_default()
            }
            Helper::TrapSink => {
                format!(
                    "alignas(16) static __device__ unsigned char {}[64];\n",
                    helper.name()
                )
            }
            _ => helpers::c_definition(self, qualifier, helper),
        }
    }

    fn gpu_index(&self, index: GpuIndex, dim: Dim) -> Result<String, DialectError> {
        let base = match index {
            GpuIndex::ThreadIdx => "threadIdx",
            GpuIndex::BlockIdx => "blockIdx",
            GpuIndex::BlockDim => "blockDim",
            GpuIndex::GridDim => "gridDim",
        };
        Ok(format!("{base}.{}", dim.name()))
    }

    fn barrier(&self) -> Result<String, DialectError> {
        Ok("__syncthreads();".to_string())
    }

    fn defers_bounds_traps(&self) -> bool {
        true
    }

    fn shared_array(&self, elem: Scalar, len: u32, name: &str) -> Result<String, DialectError> {
        Ok(format!(
            "__shared__ {} {name}[{len}];",
            self.scalar_type(elem)
        ))
    }

    fn kernel_prototype(&self, head: &KernelHead<'_>) -> Result<KernelPrototype, DialectError> {
        let mut params: Vec<String> = head
            .params
            .iter()
            .map(|p| {
                if p.c_type.ends_with('*') {
                    format!("{}{}", p.c_type, p.name)
                } else {
                    format!("{} {}", p.c_type, p.name)
                }
            })
            .collect();
        params.push(format!("{}{}", self.status_type()?, head.status));
        // No GPU runs more than 1024 threads per block: a larger launch fails when it is made
        // (an invalid launch), and must not fail the compile before that.
        let bounds = head
            .threads_per_block
            .filter(|&n| n <= 1024)
            .map_or(String::new(), |n| format!("__launch_bounds__({n}) "));
        Ok(KernelPrototype {
            signature: format!(
                "extern \"C\" __global__ void {bounds}{}({})",
                head.name,
                params.join(", ")
            ),
            prologue: if head.dynamic_shared {
                dynamic_shared_prologue()
            } else {
                Vec::new()
            },
        })
    }

    fn atomic(&self, a: &AtomicAccess<'_>) -> Result<AtomicSpelling, DialectError> {
        Ok(atomic::spell(a))
    }

    fn fence(&self, _order: MemOrder, scope: Scope) -> Result<String, DialectError> {
        Ok(atomic::fence_statement(scope).to_string())
    }

    fn collective(&self, c: &CollectiveAccess<'_>) -> Result<CollectiveSpelling, DialectError> {
        collective::spell(self, c)
    }

    fn dynamic_shared(&self, ptr_type: &str) -> Result<String, DialectError> {
        Ok(format!("({ptr_type}){DYNAMIC_SHARED}"))
    }

    fn dynamic_shared_bytes(&self) -> Result<String, DialectError> {
        Ok(DYNAMIC_SHARED_BYTES.to_string())
    }

    fn device_function_qualifier(&self) -> Result<&'static str, DialectError> {
        Ok("static __device__ ")
    }

    fn lane_group(&self, elem: Scalar, lanes: u32) -> Option<LaneGroup> {
        // CUDA's own vector types (float4, ...) do not cover every element type with the
        // group's alignment (double4, longlong4), so every group is a struct of this source.
        let name = format!("nacre_{}x{lanes}", elem.name());
        let bytes = elem.bytes() * lanes;
        Some(LaneGroup {
            definition: Some(format!(
                "struct __align__({bytes}) {name} {{ {} v[{lanes}]; }};",
                self.scalar_type(elem)
            )),
            name,
            elements: ".v",
        })
    }
}

/// A half-precision conversion: the GPU's `cvt` instruction (`cvt.f32.f16`, `cvt.rn.f16.f32`,
/// `cvt.rn.bf16.f32` on sm_80 and later; `bf16` widens by a shift), which rounds as
/// [`nacre_ir::semantics`] does, and the portable definition where the source is compiled for
/// the host (the emulation), which has no PTX. `cvt` makes every NaN the canonical positive
/// one, where the semantics keep a NaN's sign and payload (quieted): a NaN operand branches to
/// a `__noinline__` function that builds the right bits, so that the common path costs one
/// comparison and an untaken branch (a select would compute the NaN's bits every time).
fn half_definition(d: &CudaDialect, helper: Helper, s: Scalar) -> String {
    let qualifier = "static __device__ __forceinline__ ";
    let cold = "static __device__ __noinline__ ";
    let name = helper.name();
    let widen = matches!(helper, Helper::HalfToF32(_));
    let (nan_head, nan_body, fast) = match (widen, s) {
        (true, Scalar::BF16) => (
            String::new(),
            String::new(),
            vec![
                "if ((h & 0x7fffu) > 0x7f80u) h |= 0x40u;".to_string(),
                "return __uint_as_float((uint32_t)h << 16);".to_string(),
            ],
        ),
        (true, _) => (
            format!("float {name}_nan(uint16_t h)"),
            "return __uint_as_float((uint32_t)(h & 0x8000u) << 16 | 0x7fc00000u | (uint32_t)(h & 0x3ffu) << 13);".to_string(),
            vec![
                "float f;".to_string(),
                r#"asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));"#.to_string(),
                format!("if ((h & 0x7fffu) > 0x7c00u) f = {name}_nan(h);"),
                "return f;".to_string(),
            ],
        ),
        (false, kind) => (
            format!("uint16_t {name}_nan(uint32_t b)"),
            if kind == Scalar::BF16 {
                "return (uint16_t)((b >> 16) | 0x40u);".to_string()
            } else {
                "return (uint16_t)(((b >> 16) & 0x8000u) | 0x7e00u | ((b >> 13) & 0x3ffu));".to_string()
            },
            vec![
                "uint16_t h;".to_string(),
                format!(r#"asm("cvt.rn.{kind}.f32 %0, %1;" : "=h"(h) : "f"(f));"#),
                format!("if (f != f) h = {name}_nan(__float_as_uint(f));"),
                "return h;".to_string(),
            ],
        ),
    };
    let head = if widen {
        format!("float {name}(uint16_t h)")
    } else {
        format!("uint16_t {name}(float f)")
    };
    let mut device = String::new();
    if !nan_head.is_empty() {
        device.push_str(&format!("{cold}{nan_head} {{\n    {nan_body}\n}}\n"));
    }
    device.push_str(&format!("{qualifier}{head} {{\n"));
    for line in fast {
        device.push_str("    ");
        device.push_str(&line);
        device.push('\n');
    }
    device.push_str("}\n");
    let portable = helpers::c_definition(d, qualifier, helper);
    format!("#ifdef __CUDA_ARCH__\n{device}#else\n{portable}#endif\n")
}

/// Prints kernel `kernel` of `module` as CUDA C, with the functions it calls as device
/// functions (see the module docs for the calling convention).
///
/// Fails with [`BackendError::Codegen`] when `kernel` is not a kernel of the module, and with
/// [`BackendError::Unsupported`] when device code calls an external (Rust) function or
/// launches a kernel.
pub fn emit_kernel(module: &VerifiedModule, kernel: FuncId) -> Result<KernelSource, BackendError> {
    emit_kernel_with(module, kernel, CudaDialect::default())
}

/// [`emit_kernel`] in a chosen dialect (for example with [`CudaDialect::fast_math`]).
pub fn emit_kernel_with(
    module: &VerifiedModule,
    kernel: FuncId,
    dialect: CudaDialect,
) -> Result<KernelSource, BackendError> {
    print_kernel(&specialised_for_launches(module), kernel, dialect)
}

/// Prints every kernel of `module`, in module order.
pub fn emit_kernels(module: &VerifiedModule) -> Result<Vec<(FuncId, KernelSource)>, BackendError> {
    let specialised = specialised_for_launches(module);
    specialised
        .module
        .module()
        .functions
        .iter()
        .filter(|(_, f)| f.kind == FuncKind::Kernel)
        .map(|(id, _)| Ok((id, print_kernel(&specialised, id, CudaDialect::default())?)))
        .collect()
}

/// Prints kernel `kernel` of a module already specialised for its launches
/// ([`specialised_for_launches`]).
pub(crate) fn print_kernel(
    specialised: &Specialised,
    kernel: FuncId,
    dialect: CudaDialect,
) -> Result<KernelSource, BackendError> {
    let shape = specialised.shape(kernel);
    let code = nacre_c::emit_kernel_source(&dialect, &specialised.module, kernel, shape)?;
    let source = if dialect.fast_math {
        format!("// nacre: fast math (--use_fast_math)\n{}", code.source)
    } else {
        code.source
    };
    Ok(KernelSource {
        name: code.symbol,
        source,
        fast_math: dialect.fast_math,
    })
}

mod atomic;
mod collective;
#[cfg(test)]
mod tests;

/// A bit operation with CUDA's intrinsics (`__popc`, `__clz`, `__ffs`, `__byte_perm`,
/// `__brev` and their 64-bit forms) on the unsigned value, narrow types widened to 32 bits.
fn bits_definition(d: &CudaDialect, qualifier: &str, op: UnaryOp, s: Scalar) -> String {
    let name = Helper::Bits(op, s).name();
    let t = d.scalar_type(s);
    let w = s.bits();
    if s.is_wide() {
        return wide_bits_definition(d, qualifier, op, s);
    }
    let wide = w == 64;
    let u = d.scalar_type(if wide { Scalar::U64 } else { Scalar::U32 });
    let narrow = if wide {
        String::new()
    } else {
        format!(
            "({})",
            d.scalar_type(match w {
                8 => Scalar::U8,
                16 => Scalar::U16,
                _ => Scalar::U32,
            })
        )
    };
    let body = match (op, wide) {
        (UnaryOp::CountOnes, false) => "return __popc(u);".to_string(),
        (UnaryOp::CountOnes, true) => "return __popcll(u);".to_string(),
        (UnaryOp::LeadingZeros, false) => format!("return __clz((int)u) - {};", 32 - w),
        (UnaryOp::LeadingZeros, true) => "return __clzll((long long)u);".to_string(),
        (UnaryOp::TrailingZeros, false) => format!("return u == 0 ? {w} : __ffs((int)u) - 1;"),
        (UnaryOp::TrailingZeros, true) => "return u == 0 ? 64 : __ffsll((long long)u) - 1;".to_string(),
        (UnaryOp::SwapBytes, false) => match w {
            8 => "return u;".to_string(),
            16 => "return __byte_perm(u, 0, 0x0001);".to_string(),
            _ => "return __byte_perm(u, 0, 0x0123);".to_string(),
        },
        (UnaryOp::SwapBytes, true) => format!(
            "return (({u})__byte_perm((unsigned)u, 0, 0x0123) << 32) | __byte_perm((unsigned)(u >> 32), 0, 0x0123);"
        ),
        (_, false) => format!("return __brev(u) >> {};", 32 - w),
        (_, true) => "return __brevll(u);".to_string(),
    };
    format!("{qualifier}{t} {name}({t} x) {{\n    {u} u = ({u}){narrow}x;\n    {body}\n}}\n")
}

/// [`bits_definition`] on a 128-bit integer: the 64-bit intrinsics on its two halves.
fn wide_bits_definition(d: &CudaDialect, qualifier: &str, op: UnaryOp, s: Scalar) -> String {
    let name = Helper::Bits(op, s).name();
    let t = d.scalar_type(s);
    let u = d.scalar_type(Scalar::U128);
    let body = match op {
        UnaryOp::CountOnes => "return __popcll(lo) + __popcll(hi);".to_string(),
        UnaryOp::LeadingZeros => {
            "return hi != 0 ? __clzll((long long)hi) : 64 + __clzll((long long)lo);".to_string()
        }
        UnaryOp::TrailingZeros => "return lo != 0 ? __ffsll((long long)lo) - 1 \
             : hi != 0 ? 63 + __ffsll((long long)hi) : 128;"
            .to_string(),
        UnaryOp::SwapBytes => format!(
            "unsigned long long a = ((unsigned long long)__byte_perm((unsigned)lo, 0, 0x0123) << 32) \
             | __byte_perm((unsigned)(lo >> 32), 0, 0x0123);\n    \
             unsigned long long b = ((unsigned long long)__byte_perm((unsigned)hi, 0, 0x0123) << 32) \
             | __byte_perm((unsigned)(hi >> 32), 0, 0x0123);\n    \
             return ({t})((({u})a << 64) | b);"
        ),
        _ => format!("return ({t})((({u})__brevll(lo) << 64) | __brevll(hi));"),
    };
    format!(
        "{qualifier}{t} {name}({t} x) {{\n    {u} u = ({u})x;\n    \
         unsigned long long lo = (unsigned long long)u, hi = (unsigned long long)(u >> 64);\n    \
         {body}\n}}\n"
    )
}
