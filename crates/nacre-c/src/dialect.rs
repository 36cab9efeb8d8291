//! The per-dialect parts of C-family printing.
//!
//! The function printer ([`crate::function`]) is shared by every C-like target; what differs
//! between plain C, CUDA C and Metal is collected behind the [`Dialect`] trait: type names,
//! address-space qualifiers, function qualifiers, math-function names and the helper prelude.
//!
//! GPU kernels need more: the spelling of the index queries, the barrier, block-shared array
//! storage, the kernel's head (with the parameters and prologue a target needs) and the
//! qualifier of device functions. Those hooks have default implementations that refuse, so a
//! host-only dialect implements none of them. This crate implements only [`CDialect`].
//!
//! A hook that refuses returns a [`DialectError`], which the printer reports as
//! [`nacre_backend::BackendError::Unsupported`].
//!
//! Identifiers a dialect introduces itself (kernel built-in parameters, prologue locals) must
//! start with `nacre_`, a prefix the printer never gives to values, blocks or functions.

pub use crate::atomic::{AtomicAccess, AtomicKind, AtomicSpelling};
pub use crate::collective::{Collective, CollectiveAccess, CollectiveSpelling};
pub use crate::error::DialectError;
use crate::helpers::{self, Helper};
use nacre_ir::{AddressSpace, Dim, FuncKind, GpuIndex, MemOrder, Scalar, Scope, Type};

/// The fewest iterations a thread runs together in a lane-parallel grid-stride loop, and so
/// the fewest elements of a group of [`Dialect::lane_group`]. A loop over narrower elements
/// runs more lanes ([`lanes_for`]).
pub const LANES: u32 = 4;

/// The size in bytes a group of a lane-parallel loop's narrowest element type aims at: one
/// 128-bit memory access.
pub const LANE_GROUP_BYTES: u32 = 16;

/// The largest group a wider element type may get from a narrow one's lanes: two 128-bit
/// accesses.
pub const MAX_LANE_GROUP_BYTES: u32 = 32;

/// The lanes of a lane-parallel loop whose elements are `min_bytes` to `max_bytes` wide:
/// enough for a [`LANE_GROUP_BYTES`] group of the narrowest (8 for `f16` alone), unless that
/// makes the widest group larger than [`MAX_LANE_GROUP_BYTES`]; never fewer than [`LANES`].
pub const fn lanes_for(min_bytes: u32, max_bytes: u32) -> u32 {
    let narrow = LANE_GROUP_BYTES / min_bytes;
    let wide = MAX_LANE_GROUP_BYTES / max_bytes;
    let n = if narrow < wide { narrow } else { wide };
    if n > LANES {
        n
    } else {
        LANES
    }
}

/// A dialect's type for a group of lane elements (see [`Dialect::lane_group`]).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LaneGroup {
    /// The type's name, for example `float4` or `nacre_f32x4`.
    pub name: String,
    /// Its definition, printed once in a kernel before the first use, for example
    /// `struct __align__(16) nacre_f32x4 { float v[4]; };` (`None` for a built-in type).
    pub definition: Option<String>,
    /// What reaches the elements of a group variable before the subscript `[k]`: `.v` for a
    /// struct with an array member `v`, empty for a vector type with subscripts.
    pub elements: &'static str,
}

/// A math-library function the printer calls on floats.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum MathFn {
    /// Absolute value (`fabs`).
    Abs,
    /// Square root (`sqrt`).
    Sqrt,
    /// Round towards negative infinity (`floor`).
    Floor,
    /// Round towards positive infinity (`ceil`).
    Ceil,
    /// Fused multiply-add (`fma`).
    Fma,
    /// Floating-point remainder with the sign of the dividend (`fmod`).
    Rem,
    /// Round towards zero (`trunc`).
    Trunc,
    /// Round to nearest, halfway cases away from zero (`round`).
    Round,
    /// Magnitude of the first operand, sign of the second (`copysign`).
    Copysign,
    /// A math-library function of one argument (`exp`, `log1p`, ...).
    Lib(nacre_ir::MathFn),
    /// A math-library function of two arguments (`pow`, `atan2`, `hypot`).
    Lib2(nacre_ir::MathFn2),
}

impl MathFn {
    /// The C99 `<math.h>` name of the `double` version.
    pub const fn c_name(self) -> &'static str {
        match self {
            MathFn::Abs => "fabs",
            MathFn::Sqrt => "sqrt",
            MathFn::Floor => "floor",
            MathFn::Ceil => "ceil",
            MathFn::Fma => "fma",
            MathFn::Rem => "fmod",
            MathFn::Trunc => "trunc",
            MathFn::Round => "round",
            MathFn::Copysign => "copysign",
            MathFn::Lib(f) => f.c_name(),
            MathFn::Lib2(f) => f.c_name(),
        }
    }
}

/// One parameter of a kernel, as the printer hands it to [`Dialect::kernel_prototype`].
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct KernelParam {
    /// The identifier through which the kernel body reads the parameter (`v0`, `v1`, ...).
    pub name: String,
    /// The parameter's IR type.
    pub ty: Type,
    /// The dialect's spelling of that type (`float *`, `uint32_t`).
    pub c_type: String,
}

/// What the printer knows about a kernel when it asks the dialect for its head.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct KernelHead<'h> {
    /// The kernel's symbol (the name the runtime looks up).
    pub name: &'h str,
    /// The IR parameters, in order.
    pub params: &'h [KernelParam],
    /// The identifier of the status-word pointer that traps write to and that device calls
    /// receive; every kernel takes it as its hidden last parameter.
    pub status: &'h str,
    /// The index kinds the kernel reads through [`Dialect::gpu_index`], without repetition,
    /// in the order of [`GpuIndex::ALL`] (so a dialect can declare only the built-ins it uses).
    pub indices: &'h [GpuIndex],
    /// Whether the kernel reads its dynamic shared memory or its size (through
    /// [`Dialect::dynamic_shared`] and [`Dialect::dynamic_shared_bytes`]), for a dialect that
    /// declares them in the kernel's head.
    pub dynamic_shared: bool,
    /// The threads per block of every launch, when the kernel was specialised for its launch
    /// shape ([`nacre_kernel::specialise_launch_shapes`]), for a dialect that can tell its
    /// compiler (CUDA's `__launch_bounds__`).
    pub threads_per_block: Option<u32>,
}

/// A kernel's head as a dialect spells it.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct KernelPrototype {
    /// Everything before the body's opening brace, for example
    /// `extern "C" __global__ void f_k(float *v0, uint32_t *status)`.
    pub signature: String,
    /// Statements that open the body, before anything else (for example copies of
    /// by-reference scalar arguments into the parameters' identifiers); each one a full
    /// statement without indentation.
    pub prologue: Vec<String>,
}

/// A counter that bounds a loop of structured output (see [`Dialect::loop_guard`]): the
/// printer declares it before the loop and, at the top of every iteration, leaves the function
/// when it is exhausted and steps it otherwise.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LoopGuard {
    /// The declaration with its initial value, a full statement.
    pub declaration: String,
    /// The condition that the counter is exhausted.
    pub exhausted: String,
    /// The statement that steps it.
    pub step: String,
}

/// The target-specific spelling of a C-family language.
///
/// Methods that can refuse return a [`DialectError`] naming the unsupported construct, which
/// the printer turns into [`nacre_backend::BackendError::Unsupported`]
/// ([`DialectError::unsupported`]).
pub trait Dialect {
    /// The backend's name, used in error messages (`c`, `cuda`, `metal`).
    fn backend_name(&self) -> &'static str;

    /// The lines at the top of every source file (includes, pragmas).
    fn preamble(&self) -> &'static str;

    /// The name of a scalar type (`bool` is stored as an unsigned byte).
    fn scalar_type(&self, s: Scalar) -> &'static str;

    /// The unsigned integer type that holds an address (for pointer comparisons and
    /// pointer-integer conversions).
    fn address_type(&self) -> &'static str;

    /// The qualifier written before a pointer's element type for an address space (empty or
    /// ending in a space).
    fn address_space_qualifier(&self, space: AddressSpace) -> Result<&'static str, DialectError>;

    /// The qualifiers written before the return type of an internal (not exported) function of
    /// the given kind (empty or ending in a space).
    fn function_qualifier(&self, kind: FuncKind) -> Result<&'static str, DialectError>;

    /// The name of a math function for a float type.
    fn math_function(&self, f: MathFn, s: Scalar) -> String;

    /// The full definition of a helper function (see [`Helper`]).
    fn helper_definition(&self, helper: Helper) -> String;

    /// The spelling of a pointer type to `elem` in `space`, ending in `*`.
    fn pointer_type(&self, elem: Scalar, space: AddressSpace) -> Result<String, DialectError> {
        let qualifier = self.address_space_qualifier(space)?;
        Ok(format!("{qualifier}{} *", self.scalar_type(elem)))
    }

    /// Whether the printer computes `f` ([`MathFn::Lib`] or [`MathFn::Lib2`]) on `s` with
    /// Nacre's own definition [`Helper::Math`] instead of calling the target's math library:
    /// where the library lacks `f`, or where Nacre's definition is one the target's compiler
    /// vectorises and the library's is an opaque call. A function that has neither is
    /// refused. The default calls the library for every function.
    fn math_by_helper(&self, _f: MathFn, _s: Scalar) -> Result<bool, DialectError> {
        Ok(false)
    }

    /// Refuses scalar types the target lacks (for example `f64` on a GPU without doubles).
    /// Every type the printer spells goes through this check. The default accepts all.
    fn check_scalar(&self, _s: Scalar) -> Result<(), DialectError> {
        Ok(())
    }

    /// The type of the hidden status parameter, a pointer to a `u32` status word, ending in
    /// `*`. The default is a generic-space pointer.
    fn status_type(&self) -> Result<String, DialectError> {
        self.pointer_type(Scalar::U32, AddressSpace::Generic)
    }

    /// The expression (of the dialect's `u32` type) that reads a GPU index or dimension in a
    /// kernel body, for example `threadIdx.x`. A dialect that reads them from kernel
    /// parameters names those here and declares them in [`Dialect::kernel_prototype`].
    fn gpu_index(&self, _index: GpuIndex, _dim: Dim) -> Result<String, DialectError> {
        Err(DialectError::GpuIndex)
    }

    /// The statement of a block-wide barrier, for example `__syncthreads();`.
    fn barrier(&self) -> Result<String, DialectError> {
        Err(DialectError::Barrier)
    }

    /// The declaration, at the top of a kernel body, of the storage of a block-shared array of
    /// `len` elements of `elem` named `name`, for example `__shared__ float s0[256];`. The
    /// printer assigns `name` (which decays to a pointer to the first element) to the value of
    /// the allocating instruction.
    fn shared_array(&self, _elem: Scalar, _len: u32, _name: &str) -> Result<String, DialectError> {
        Err(DialectError::SharedArray)
    }

    /// The expression of the block's dynamic shared memory (16-byte aligned) as a pointer of
    /// type `ptr_type` (the dialect's spelling of a shared-memory pointer, ending in `*`), for
    /// example `(float *)nacre_dynamic_smem`; what it names is declared by
    /// [`Dialect::kernel_prototype`] when [`KernelHead::dynamic_shared`] is set.
    fn dynamic_shared(&self, _ptr_type: &str) -> Result<String, DialectError> {
        Err(DialectError::DynamicShared)
    }

    /// The expression (of the dialect's `u32` type) of the size in bytes of the block's
    /// dynamic shared memory, declared like [`Dialect::dynamic_shared`].
    fn dynamic_shared_bytes(&self) -> Result<String, DialectError> {
        Err(DialectError::DynamicShared)
    }

    /// The statements of an atomic instruction (see [`AtomicAccess`]); the default refuses.
    fn atomic(&self, _a: &AtomicAccess<'_>) -> Result<AtomicSpelling, DialectError> {
        Err(DialectError::Atomics)
    }

    /// The expression of a collective operation (see [`CollectiveAccess`]); the default
    /// refuses.
    fn collective(&self, _c: &CollectiveAccess<'_>) -> Result<CollectiveSpelling, DialectError> {
        Err(DialectError::Collectives)
    }

    /// The kernel-scope declarations a kernel with voting barriers needs, printed with its
    /// shared arrays (Metal: the threadgroup slots the votes meet in); the default needs none.
    fn block_vote_storage(&self) -> &'static [&'static str] {
        &[]
    }

    /// The statement of a memory fence; the default refuses.
    fn fence(&self, _order: MemOrder, _scope: Scope) -> Result<String, DialectError> {
        Err(DialectError::Atomics)
    }

    /// The head of a kernel: its signature (with the IR parameters, the status pointer last,
    /// and whatever built-in parameters the dialect needs) and the statements that open its
    /// body.
    fn kernel_prototype(&self, _head: &KernelHead<'_>) -> Result<KernelPrototype, DialectError> {
        Err(DialectError::Kernel)
    }

    /// The qualifiers written before the return type of a non-kernel function compiled for
    /// the device because a kernel calls it (empty or ending in a space), for example
    /// `static __device__ `.
    fn device_function_qualifier(&self) -> Result<&'static str, DialectError> {
        Err(DialectError::DeviceFunction)
    }

    /// The type of an aligned group of `lanes` elements of `elem` (aligned to its whole
    /// size; `lanes` is [`lanes_for`] the loop's element sizes). A dialect that has one
    /// gets wide memory accesses in lane-parallel grid-stride loops (see the printer's `lanes`
    /// module): `lanes` iterations per thread, each array read and written as one group. The
    /// default, `None`, prints such loops as they are.
    fn lane_group(&self, _elem: Scalar, _lanes: u32) -> Option<LaneGroup> {
        None
    }

    /// True if the target has no `goto`: the printer then prints control flow as nested
    /// `if`s, `for (;;)` loops and `do { } while (0)` regions (see
    /// [`nacre_kernel::structure()`]). The default is `false`: labels and `goto`.
    fn structured_control_flow(&self) -> bool {
        false
    }

    /// True if a kernel's failed bounds check should not leave the kernel at once but record
    /// the trap (a later failure of the same thread may overwrite it), redirect the access to [`crate::helpers::Helper::TrapSink`] and leave at the
    /// next loop header (or the end). Returning from the middle of straight-line code keeps a
    /// GPU compiler from scheduling the loads after a check before the check's branch, and a
    /// possible exit before a barrier or a warp collective costs reconvergence code; the
    /// deferred form has neither. The trap is reported the same; what the thread computes
    /// between the trap and the next loop header is lost with the call's other results
    /// (stores of a trapped call are unspecified on every backend). The default is `false`.
    fn defers_bounds_traps(&self) -> bool {
        false
    }

    /// The guard of every loop of structured output, for targets whose compiler may assume
    /// that loops terminate (Metal's does; a loop it cannot prove finite is undefined
    /// behaviour there). `name` is the counter's identifier. The default is no guard.
    fn loop_guard(&self, _name: &str) -> Option<LoopGuard> {
        None
    }
}

/// Plain C99 (GNU dialect) for the host: `<stdint.h>` types, `<math.h>` functions and
/// `static inline` helpers.
#[derive(Copy, Clone, Debug, Default)]
pub struct CDialect;

impl Dialect for CDialect {
    fn backend_name(&self) -> &'static str {
        "c"
    }

    fn preamble(&self) -> &'static str {
        "#include <stdint.h>\n#include <string.h>\n#include <math.h>\n"
    }

    fn scalar_type(&self, s: Scalar) -> &'static str {
        match s {
            Scalar::Bool | Scalar::U8 => "uint8_t",
            Scalar::I8 => "int8_t",
            Scalar::I16 => "int16_t",
            Scalar::I32 => "int32_t",
            Scalar::I64 => "int64_t",
            // The half types are their 16-bit storage; they compute through `float`.
            Scalar::U16 | Scalar::F16 | Scalar::BF16 => "uint16_t",
            Scalar::U32 => "uint32_t",
            Scalar::U64 => "uint64_t",
            Scalar::F32 => "float",
            Scalar::F64 => "double",
            // GCC's and Clang's (and NVRTC's) 128-bit integers.
            Scalar::I128 => "__int128",
            Scalar::U128 => "unsigned __int128",
        }
    }

    fn address_type(&self) -> &'static str {
        "uintptr_t"
    }

    fn address_space_qualifier(&self, _space: AddressSpace) -> Result<&'static str, DialectError> {
        // On the host every address space is ordinary memory.
        Ok("")
    }

    fn function_qualifier(&self, kind: FuncKind) -> Result<&'static str, DialectError> {
        match kind {
            FuncKind::Host => Ok("static "),
            FuncKind::Kernel => Err(DialectError::Kernel),
        }
    }

    fn math_function(&self, f: MathFn, s: Scalar) -> String {
        match s {
            Scalar::F32 => format!("{}f", f.c_name()),
            _ => f.c_name().to_string(),
        }
    }

    fn math_by_helper(&self, f: MathFn, s: Scalar) -> Result<bool, DialectError> {
        // The C library's `expf` and `tanhf` are calls the C compiler cannot vectorise
        // around; Nacre's are branch-free arithmetic (see `vector_math`).
        Ok(crate::vector_math::defines(f, s))
    }

    fn helper_definition(&self, helper: Helper) -> String {
        helpers::host_c_definition(self, "static inline ", helper)
    }

    fn atomic(&self, a: &AtomicAccess<'_>) -> Result<AtomicSpelling, DialectError> {
        crate::atomic::c_atomic(a)
    }

    fn fence(&self, order: MemOrder, _scope: Scope) -> Result<String, DialectError> {
        Ok(crate::atomic::c_fence(order))
    }
}

/// [`CDialect`] with structured control flow ([`Dialect::structured_control_flow`]): the
/// same C, without labels and `goto`.
#[derive(Copy, Clone, Debug, Default)]
pub struct StructuredCDialect;

impl Dialect for StructuredCDialect {
    fn backend_name(&self) -> &'static str {
        CDialect.backend_name()
    }

    fn preamble(&self) -> &'static str {
        CDialect.preamble()
    }

    fn scalar_type(&self, s: Scalar) -> &'static str {
        CDialect.scalar_type(s)
    }

    fn address_type(&self) -> &'static str {
        CDialect.address_type()
    }

    fn address_space_qualifier(&self, space: AddressSpace) -> Result<&'static str, DialectError> {
        CDialect.address_space_qualifier(space)
    }

    fn function_qualifier(&self, kind: FuncKind) -> Result<&'static str, DialectError> {
        CDialect.function_qualifier(kind)
    }

    fn math_function(&self, f: MathFn, s: Scalar) -> String {
        CDialect.math_function(f, s)
    }

    fn math_by_helper(&self, f: MathFn, s: Scalar) -> Result<bool, DialectError> {
        CDialect.math_by_helper(f, s)
    }

    fn helper_definition(&self, helper: Helper) -> String {
        helpers::host_c_definition(self, "static inline ", helper)
    }

    fn atomic(&self, a: &AtomicAccess<'_>) -> Result<AtomicSpelling, DialectError> {
        CDialect.atomic(a)
    }

    fn fence(&self, order: MemOrder, scope: Scope) -> Result<String, DialectError> {
        CDialect.fence(order, scope)
    }

    fn structured_control_flow(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_spellings() {
        let d = CDialect;
        assert_eq!(d.scalar_type(Scalar::Bool), "uint8_t");
        assert_eq!(
            d.pointer_type(Scalar::F64, AddressSpace::Generic).unwrap(),
            "double *"
        );
        assert_eq!(d.math_function(MathFn::Rem, Scalar::F32), "fmodf");
        assert_eq!(d.math_function(MathFn::Sqrt, Scalar::F64), "sqrt");
        assert_eq!(
            d.function_qualifier(FuncKind::Kernel),
            Err(DialectError::Kernel)
        );
        assert_eq!(d.status_type().unwrap(), "uint32_t *");
    }

    #[test]
    fn c_refuses_gpu_hooks() {
        let d = CDialect;
        assert_eq!(
            d.gpu_index(GpuIndex::ThreadIdx, Dim::X),
            Err(DialectError::GpuIndex)
        );
        assert_eq!(d.barrier(), Err(DialectError::Barrier));
        assert_eq!(
            d.shared_array(Scalar::F32, 4, "s0"),
            Err(DialectError::SharedArray)
        );
        assert_eq!(
            d.device_function_qualifier(),
            Err(DialectError::DeviceFunction)
        );
        let head = KernelHead {
            name: "k",
            params: &[],
            status: "status",
            indices: &[],
            dynamic_shared: false,
            threads_per_block: None,
        };
        let refused = d.kernel_prototype(&head).unwrap_err();
        assert_eq!(
            d.dynamic_shared("float *"),
            Err(DialectError::DynamicShared)
        );
        assert_eq!(d.dynamic_shared_bytes(), Err(DialectError::DynamicShared));
        assert_eq!(refused, DialectError::Kernel);
        assert!(refused.to_string().contains("kernel"), "{refused}");
    }
}
