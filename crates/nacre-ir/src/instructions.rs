//! The instruction set.
//!
//! Operators are type-generic: `add` on `i32` and on `f64` is the same [`BinaryOp::Add`], and
//! signedness comes from the operand type. The exact semantics of every operator on every type
//! are defined once, in [`crate::semantics`].

use crate::atomic::{AtomicOp, MemOrder, Scope};
use crate::collective::{BlockVote, Shuffle, WarpOp};
use crate::entities::{Block, ExternId, FuncId, Value};
use crate::trap::Trap;
use crate::types::{Scalar, Type};
use std::fmt;

/// The alignment in bytes of an [`InstKind::LocalArray`] (a cache line).
pub const LOCAL_ARRAY_ALIGN: u32 = 64;
/// The most bytes an [`InstKind::LocalArray`] holds (backends put it on the call's stack).
pub const MAX_LOCAL_ARRAY_BYTES: u64 = 1 << 20;

/// A constant: a type and its bits (see [`crate::semantics`] for the encoding).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Const {
    /// The constant's type (a scalar, or a pointer for the null pointer and raw addresses).
    pub ty: Type,
    /// The value's bits, zero-extended to 128 bits.
    pub bits: u128,
}

/// Unary operators.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum UnaryOp {
    /// Arithmetic negation (wrapping for integers).
    Neg,
    /// Bitwise not for integers, logical not for `bool`.
    Not,
    /// Absolute value (wrapping for `MIN` of signed integers; identity for unsigned).
    Abs,
    /// Square root (floats).
    Sqrt,
    /// Round towards negative infinity (floats).
    Floor,
    /// Round towards positive infinity (floats).
    Ceil,
    /// Round towards zero (floats).
    Trunc,
    /// Round to the nearest integer, halfway cases away from zero (floats; Rust's `round`).
    Round,
    /// The number of one bits (integers; the count, in the operand's type).
    CountOnes,
    /// The number of zero bits above the highest one bit (integers; the width for zero).
    LeadingZeros,
    /// The number of zero bits below the lowest one bit (integers; the width for zero).
    TrailingZeros,
    /// The bytes in reverse order (integers).
    SwapBytes,
    /// The bits in reverse order (integers).
    ReverseBits,
}

/// Binary operators. Both operands have the result's type, except the shift amount of
/// [`BinaryOp::Shl`]/[`BinaryOp::Shr`], which has the same type too (it is masked to the width).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum BinaryOp {
    /// Addition (wrapping for integers).
    Add,
    /// Subtraction (wrapping for integers).
    Sub,
    /// Multiplication (wrapping for integers).
    Mul,
    /// Division: integer division traps on zero ([`crate::Trap::DivisionByZero`]), `MIN / -1`
    /// wraps to `MIN`; float division is IEEE.
    Div,
    /// Remainder: traps on zero ([`crate::Trap::RemainderByZero`]), `MIN % -1` is 0; float
    /// remainder is Rust's `%` (fmod).
    Rem,
    /// Bitwise and (logical for `bool`).
    And,
    /// Bitwise or (logical for `bool`).
    Or,
    /// Bitwise xor (logical for `bool`).
    Xor,
    /// Left shift, amount masked to the bit width (Rust's `wrapping_shl`).
    Shl,
    /// Right shift (arithmetic for signed, logical for unsigned), amount masked.
    Shr,
    /// Minimum (floats: a NaN operand is ignored and -0.0 < +0.0, see [`crate::semantics::float_min`]).
    Min,
    /// Maximum (floats: a NaN operand is ignored and -0.0 < +0.0, see [`crate::semantics::float_max`]).
    Max,
    /// The magnitude of the first operand with the sign of the second (floats only).
    Copysign,
}

/// A float math-library function of one argument ([`InstKind::Math`]).
///
/// Unlike the operators, these are not exact: the reference result is [`crate::semantics::math`]
/// (the `libm` crate, a port of musl's libm), and a backend may compute one within the bound
/// in ulps that the README's accuracy table gives for it.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum MathFn {
    /// `e^x`.
    Exp,
    /// `2^x`.
    Exp2,
    /// `e^x - 1`, accurate near zero.
    ExpM1,
    /// The natural logarithm.
    Ln,
    /// The base-2 logarithm.
    Log2,
    /// The base-10 logarithm.
    Log10,
    /// `ln(1 + x)`, accurate near zero.
    Ln1p,
    /// Sine (radians).
    Sin,
    /// Cosine (radians).
    Cos,
    /// Tangent (radians).
    Tan,
    /// Arcsine, in `[-pi/2, pi/2]`.
    Asin,
    /// Arccosine, in `[0, pi]`.
    Acos,
    /// Arctangent, in `[-pi/2, pi/2]`.
    Atan,
    /// Hyperbolic sine.
    Sinh,
    /// Hyperbolic cosine.
    Cosh,
    /// Hyperbolic tangent.
    Tanh,
    /// Inverse hyperbolic sine.
    Asinh,
    /// Inverse hyperbolic cosine.
    Acosh,
    /// Inverse hyperbolic tangent.
    Atanh,
    /// Cube root.
    Cbrt,
    /// The error function.
    Erf,
}

/// A float math-library function of two arguments ([`InstKind::Math2`]); accuracy as for
/// [`MathFn`].
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum MathFn2 {
    /// `x^y` (C's `pow`, Rust's `powf`).
    Pow,
    /// The four-quadrant arctangent of `y / x` (the first operand is `y`).
    Atan2,
    /// `sqrt(x^2 + y^2)` without undue overflow.
    Hypot,
}

/// Comparison operators; the result is `bool`. Float comparisons are IEEE (false on NaN except
/// `Ne`). Pointers compare by address.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum CmpOp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// A GPU index intrinsic: which index or dimension.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum GpuIndex {
    /// The thread's index within its block (`threadIdx`).
    ThreadIdx,
    /// The block's index within the grid (`blockIdx`).
    BlockIdx,
    /// Threads per block (`blockDim`).
    BlockDim,
    /// Blocks per grid (`gridDim`).
    GridDim,
}

impl GpuIndex {
    /// All index kinds.
    pub const ALL: [GpuIndex; 4] = [
        GpuIndex::ThreadIdx,
        GpuIndex::BlockIdx,
        GpuIndex::BlockDim,
        GpuIndex::GridDim,
    ];

    /// The printer's name (`thread_idx`, `block_idx`, `block_dim`, `grid_dim`).
    pub const fn name(self) -> &'static str {
        match self {
            GpuIndex::ThreadIdx => "thread_idx",
            GpuIndex::BlockIdx => "block_idx",
            GpuIndex::BlockDim => "block_dim",
            GpuIndex::GridDim => "grid_dim",
        }
    }
}

/// A grid dimension.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Dim {
    /// x
    X,
    /// y
    Y,
    /// z
    Z,
}

impl Dim {
    /// All dimensions.
    pub const ALL: [Dim; 3] = [Dim::X, Dim::Y, Dim::Z];

    /// `x`, `y` or `z`.
    pub const fn name(self) -> &'static str {
        match self {
            Dim::X => "x",
            Dim::Y => "y",
            Dim::Z => "z",
        }
    }

    /// 0, 1 or 2.
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// A kernel launch: the kernel, the grid and block sizes (three `u32` values each) and the
/// kernel's arguments.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Launch {
    /// The kernel (a function of kind [`crate::FuncKind::Kernel`]).
    pub kernel: FuncId,
    /// Blocks per grid in x, y, z.
    pub grid: [Value; 3],
    /// Threads per block in x, y, z.
    pub block: [Value; 3],
    /// The kernel's arguments.
    pub args: Vec<Value>,
    /// Bytes of dynamic shared memory per block (a `u32`; `None`: none), what the kernel's
    /// [`InstKind::DynamicShared`] points to.
    pub shared_bytes: Option<Value>,
}

/// A jump target with the arguments for the target block's parameters.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct BlockCall {
    /// The target block.
    pub block: Block,
    /// One argument per block parameter.
    pub args: Vec<Value>,
}

/// An instruction. The result type (if any) is stored with the result value, see
/// [`crate::InstData`].
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum InstKind {
    /// A constant.
    Const(Const),
    /// A unary operation; the result has the operand's type.
    Unary(UnaryOp, Value),
    /// A binary operation; the result has the operands' type.
    Binary(BinaryOp, Value, Value),
    /// Fused multiply-add `a * b + c` on floats, rounded once.
    Fma(Value, Value, Value),
    /// A math-library function of one float; the result has the operand's type.
    Math(MathFn, Value),
    /// A math-library function of two floats of one type; the result has their type.
    Math2(MathFn2, Value, Value),
    /// A comparison; the result is `bool`.
    Cmp(CmpOp, Value, Value),
    /// A numeric conversion with Rust `as` semantics to the result type (float to int
    /// saturates, NaN gives 0; int to int truncates or extends by the source signedness;
    /// `bool` converts to 0/1, and to `bool` means `!= 0`). Also pointer to `u64`/`i64` and back,
    /// and pointer to pointer of another element type (the same address: a record's field).
    Cast(Value),
    /// `if cond { a } else { b }` without branching.
    Select(Value, Value, Value),
    /// Pointer plus an element index (any integer type; signed indices are sign-extended),
    /// scaled by the element size. The result has the pointer's type.
    ElemPtr(Value, Value),
    /// Load one element through a pointer; the result has the element type.
    Load(Value),
    /// Store a value (second operand) through a pointer (first operand).
    Store(Value, Value),
    /// Traps with `trap` (a [`Trap::OutOfBounds`]) unless one element of the pointer type of
    /// `addr` lies wholly in the `bytes` bytes (a `u64`) that start at `base` (a pointer of the
    /// same type): see [`crate::semantics::in_bounds`]. Inserted before loads and stores by
    /// the bounds-checking transform.
    BoundsCheck {
        /// The address about to be accessed.
        addr: Value,
        /// The start of the memory the address was derived from.
        base: Value,
        /// The size of that memory in bytes (`u64`).
        bytes: Value,
        /// The trap to raise, naming the access where known.
        trap: Trap,
    },
    /// Atomically replaces the element at `ptr` (naturally aligned, as every pointer is) by
    /// `op(old, value)` and gives `old` (see [`crate::semantics::atomic_rmw`]); `value` and the
    /// result have the element type, which [`AtomicOp::supports`].
    AtomicRmw {
        /// The operation.
        op: AtomicOp,
        /// The element.
        ptr: Value,
        /// The operand.
        value: Value,
        /// The ordering.
        order: MemOrder,
        /// The threads it orders against.
        scope: Scope,
    },
    /// Atomically compares the element at `ptr` with `expected` and, if equal, replaces it by
    /// `new`; gives the element's previous value either way (it succeeded iff that equals
    /// `expected`). A failure orders as [`MemOrder::failure`] of `order`.
    AtomicCas {
        /// The element.
        ptr: Value,
        /// The value it must hold.
        expected: Value,
        /// Its replacement.
        new: Value,
        /// The ordering on success.
        order: MemOrder,
        /// The threads it orders against.
        scope: Scope,
    },
    /// A memory fence (`std::sync::atomic::fence`, CUDA's `__threadfence`): orders the calling
    /// thread's accesses before and after it as `order` says, among the threads of `scope`.
    Fence {
        /// The ordering (not relaxed).
        order: MemOrder,
        /// The threads it orders against.
        scope: Scope,
    },
    /// Call an IR function of the same module. Traps raised by the callee propagate.
    Call(FuncId, Vec<Value>),
    /// Call an external Rust function.
    CallExtern(ExternId, Vec<Value>),
    /// A GPU index or dimension (kernels only); the result is `u32`.
    GpuIndex(GpuIndex, Dim),
    /// Block-wide barrier: every thread of the block reaches it before any continues, and
    /// shared-memory writes before it are visible after it (kernels only).
    Barrier,
    /// A statically sized block-shared array of `len` elements (kernels only); the result is a
    /// pointer to its first element. Each execution of a kernel sees one array per block.
    SharedAlloc {
        /// Element type.
        elem: Scalar,
        /// Number of elements.
        len: u32,
    },
    /// A zeroed array of `len` elements private to one call of the function, alive until
    /// the call returns and aligned to [`LOCAL_ARRAY_ALIGN`] bytes (host functions only; at
    /// most [`MAX_LOCAL_ARRAY_BYTES`]); the result is a pointer to its first element. The
    /// CPU's step functions that run a whole block per call hold the block's shared arrays
    /// in one, so that a C compiler sees memory no other pointer reaches.
    LocalArray {
        /// Element type.
        elem: Scalar,
        /// Number of elements.
        len: u32,
    },
    /// The block's dynamic shared memory (kernels only), sized by the launch
    /// ([`Launch::shared_bytes`]), as a pointer to `elem`: every instance in a kernel points to
    /// the same memory (CUDA `extern __shared__`, Metal `[[threadgroup(0)]]`), aligned to 16
    /// bytes, after the kernel's static shared arrays.
    DynamicShared {
        /// Element type.
        elem: Scalar,
    },
    /// The size in bytes of the block's dynamic shared memory (a `u32`; kernels only): the
    /// launch's [`Launch::shared_bytes`], 0 when it gave none.
    DynamicSharedBytes,
    /// The calling thread's lane in its warp, a `u32` below [`crate::WARP_SIZE`] (kernels only;
    /// see [`crate::collective`]).
    LaneId,
    /// The value of operand 0 (any scalar) in the lane that the shuffle and operand 1 (a
    /// `u32`) name, or the caller's own value when that lane does not exist (see
    /// [`Shuffle::source`]); every lane of the warp takes part (kernels only).
    Shuffle(Shuffle, Value, Value),
    /// A reduction or vote over the operand of every lane of the warp, whose result every lane
    /// gets (see [`WarpOp`]; kernels only).
    Warp(WarpOp, Value),
    /// A barrier ([`InstKind::Barrier`]) that also gives every thread the vote of the block's
    /// `bool`s (see [`BlockVote`]; kernels only).
    BlockVote(BlockVote, Value),
    /// Launches a kernel over a grid (host functions only); waits for it to complete.
    /// Can fail at run time (see [`crate::Trap`]).
    Launch(Box<Launch>),
    /// Terminator: jump to a block.
    Jump(BlockCall),
    /// Terminator: two-way branch on a `bool`.
    Branch {
        /// The condition.
        cond: Value,
        /// Target when `cond` is true.
        then_dest: BlockCall,
        /// Target when `cond` is false.
        else_dest: BlockCall,
    },
    /// Terminator: return from the function, with a value unless the function returns nothing.
    Return(Option<Value>),
}

impl InstKind {
    /// True for jumps, branches and returns.
    pub fn is_terminator(&self) -> bool {
        matches!(
            self,
            InstKind::Jump(_) | InstKind::Branch { .. } | InstKind::Return(_)
        )
    }

    /// True for the collective operations (see [`crate::collective`]): the lane index,
    /// shuffles, warp reductions and votes, and voting barriers.
    pub fn is_collective(&self) -> bool {
        matches!(
            self,
            InstKind::LaneId | InstKind::Shuffle(..) | InstKind::Warp(..) | InstKind::BlockVote(..)
        )
    }

    /// True if removing an unused instance of this instruction does not change behaviour.
    /// Integer division and remainder can trap, calls can have effects, stores write memory.
    pub fn is_pure(&self, operand_ty: impl Fn(Value) -> Type) -> bool {
        match self {
            InstKind::Const(_)
            | InstKind::Unary(..)
            | InstKind::Fma(..)
            | InstKind::Math(..)
            | InstKind::Math2(..)
            | InstKind::Cmp(..)
            | InstKind::Cast(_)
            | InstKind::Select(..)
            | InstKind::ElemPtr(..)
            | InstKind::Load(_)
            | InstKind::GpuIndex(..)
            | InstKind::SharedAlloc { .. }
            | InstKind::LocalArray { .. }
            | InstKind::DynamicShared { .. }
            | InstKind::DynamicSharedBytes
            | InstKind::LaneId => true,
            InstKind::Binary(op, a, _) => {
                !(matches!(op, BinaryOp::Div | BinaryOp::Rem) && operand_ty(*a).is_int())
            }
            InstKind::Store(..)
            | InstKind::AtomicRmw { .. }
            | InstKind::AtomicCas { .. }
            | InstKind::Fence { .. }
            | InstKind::BoundsCheck { .. }
            | InstKind::Call(..)
            | InstKind::CallExtern(..)
            | InstKind::Barrier
            | InstKind::Shuffle(..)
            | InstKind::Warp(..)
            | InstKind::BlockVote(..)
            | InstKind::Launch(_)
            | InstKind::Jump(_)
            | InstKind::Branch { .. }
            | InstKind::Return(_) => false,
        }
    }

    /// Calls `f` on every value operand, in order (including jump arguments).
    pub fn for_each_operand(&self, mut f: impl FnMut(Value)) {
        match self {
            InstKind::Const(_)
            | InstKind::GpuIndex(..)
            | InstKind::Barrier
            | InstKind::SharedAlloc { .. }
            | InstKind::LocalArray { .. }
            | InstKind::DynamicShared { .. }
            | InstKind::DynamicSharedBytes
            | InstKind::LaneId
            | InstKind::Fence { .. } => {}
            InstKind::Launch(l) => l
                .grid
                .iter()
                .chain(&l.block)
                .chain(&l.args)
                .chain(&l.shared_bytes)
                .copied()
                .for_each(f),
            InstKind::Unary(_, a)
            | InstKind::Math(_, a)
            | InstKind::Cast(a)
            | InstKind::Warp(_, a)
            | InstKind::BlockVote(_, a)
            | InstKind::Load(a) => f(*a),
            InstKind::Binary(_, a, b)
            | InstKind::Math2(_, a, b)
            | InstKind::Cmp(_, a, b)
            | InstKind::ElemPtr(a, b)
            | InstKind::Store(a, b)
            | InstKind::Shuffle(_, a, b)
            | InstKind::AtomicRmw {
                ptr: a, value: b, ..
            } => {
                f(*a);
                f(*b)
            }
            InstKind::Fma(a, b, c)
            | InstKind::Select(a, b, c)
            | InstKind::AtomicCas {
                ptr: a,
                expected: b,
                new: c,
                ..
            }
            | InstKind::BoundsCheck {
                addr: a,
                base: b,
                bytes: c,
                ..
            } => {
                f(*a);
                f(*b);
                f(*c)
            }
            InstKind::Call(_, args) | InstKind::CallExtern(_, args) => {
                args.iter().copied().for_each(f)
            }
            InstKind::Jump(dest) => dest.args.iter().copied().for_each(f),
            InstKind::Branch {
                cond,
                then_dest,
                else_dest,
            } => {
                f(*cond);
                then_dest.args.iter().copied().for_each(&mut f);
                else_dest.args.iter().copied().for_each(f)
            }
            InstKind::Return(v) => {
                if let Some(v) = v {
                    f(*v)
                }
            }
        }
    }

    /// Calls `f` on every value operand, allowing it to be replaced.
    pub fn map_operands(&mut self, mut f: impl FnMut(Value) -> Value) {
        match self {
            InstKind::Const(_)
            | InstKind::GpuIndex(..)
            | InstKind::Barrier
            | InstKind::SharedAlloc { .. }
            | InstKind::LocalArray { .. }
            | InstKind::DynamicShared { .. }
            | InstKind::DynamicSharedBytes
            | InstKind::LaneId
            | InstKind::Fence { .. } => {}
            InstKind::Launch(l) => {
                let Launch {
                    grid,
                    block,
                    args,
                    shared_bytes,
                    ..
                } = &mut **l;
                grid.iter_mut()
                    .chain(block.iter_mut())
                    .chain(args.iter_mut())
                    .chain(shared_bytes.iter_mut())
                    .for_each(|a| *a = f(*a))
            }
            InstKind::Unary(_, a)
            | InstKind::Math(_, a)
            | InstKind::Cast(a)
            | InstKind::Warp(_, a)
            | InstKind::BlockVote(_, a)
            | InstKind::Load(a) => *a = f(*a),
            InstKind::Binary(_, a, b)
            | InstKind::Math2(_, a, b)
            | InstKind::Cmp(_, a, b)
            | InstKind::ElemPtr(a, b)
            | InstKind::Store(a, b)
            | InstKind::Shuffle(_, a, b)
            | InstKind::AtomicRmw {
                ptr: a, value: b, ..
            } => {
                *a = f(*a);
                *b = f(*b)
            }
            InstKind::Fma(a, b, c)
            | InstKind::Select(a, b, c)
            | InstKind::AtomicCas {
                ptr: a,
                expected: b,
                new: c,
                ..
            }
            | InstKind::BoundsCheck {
                addr: a,
                base: b,
                bytes: c,
                ..
            } => {
                *a = f(*a);
                *b = f(*b);
                *c = f(*c)
            }
            InstKind::Call(_, args) | InstKind::CallExtern(_, args) => {
                args.iter_mut().for_each(|a| *a = f(*a))
            }
            InstKind::Jump(dest) => dest.args.iter_mut().for_each(|a| *a = f(*a)),
            InstKind::Branch {
                cond,
                then_dest,
                else_dest,
            } => {
                *cond = f(*cond);
                then_dest.args.iter_mut().for_each(|a| *a = f(*a));
                else_dest.args.iter_mut().for_each(|a| *a = f(*a))
            }
            InstKind::Return(v) => {
                if let Some(v) = v {
                    *v = f(*v)
                }
            }
        }
    }

    /// The successor edges of a terminator (none for other instructions and returns).
    pub fn successors(&self) -> impl Iterator<Item = &BlockCall> {
        let (a, b) = match self {
            InstKind::Jump(dest) => (Some(dest), None),
            InstKind::Branch {
                then_dest,
                else_dest,
                ..
            } => (Some(then_dest), Some(else_dest)),
            _ => (None, None),
        };
        a.into_iter().chain(b)
    }

    /// The successor edges of a terminator, mutably.
    pub fn successors_mut(&mut self) -> impl Iterator<Item = &mut BlockCall> {
        let (a, b) = match self {
            InstKind::Jump(dest) => (Some(dest), None),
            InstKind::Branch {
                then_dest,
                else_dest,
                ..
            } => (Some(then_dest), Some(else_dest)),
            _ => (None, None),
        };
        a.into_iter().chain(b)
    }
}

impl UnaryOp {
    /// All unary operators, in declaration order.
    pub const ALL: [UnaryOp; 13] = [
        UnaryOp::Neg,
        UnaryOp::Not,
        UnaryOp::Abs,
        UnaryOp::Sqrt,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Trunc,
        UnaryOp::Round,
        UnaryOp::CountOnes,
        UnaryOp::LeadingZeros,
        UnaryOp::TrailingZeros,
        UnaryOp::SwapBytes,
        UnaryOp::ReverseBits,
    ];

    /// Whether the operator is defined on scalar type `s` (the verifier's rule): `Not` on
    /// integers and `bool`, `Sqrt` and the roundings on floats, the bit operations on integers,
    /// `Neg` and `Abs` on every type.
    pub const fn accepts(self, s: Scalar) -> bool {
        match self {
            UnaryOp::Not => !s.is_float(),
            UnaryOp::Sqrt | UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Trunc | UnaryOp::Round => {
                s.is_float()
            }
            UnaryOp::Neg | UnaryOp::Abs => true,
            UnaryOp::CountOnes
            | UnaryOp::LeadingZeros
            | UnaryOp::TrailingZeros
            | UnaryOp::SwapBytes
            | UnaryOp::ReverseBits => s.is_int(),
        }
    }

    /// True for the integer bit operations (`CountOnes` .. `ReverseBits`).
    pub const fn is_bit_op(self) -> bool {
        matches!(
            self,
            UnaryOp::CountOnes
                | UnaryOp::LeadingZeros
                | UnaryOp::TrailingZeros
                | UnaryOp::SwapBytes
                | UnaryOp::ReverseBits
        )
    }

    /// The printer's name of the operator.
    pub const fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Not => "not",
            UnaryOp::Abs => "abs",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Trunc => "trunc",
            UnaryOp::Round => "round",
            UnaryOp::CountOnes => "count_ones",
            UnaryOp::LeadingZeros => "leading_zeros",
            UnaryOp::TrailingZeros => "trailing_zeros",
            UnaryOp::SwapBytes => "swap_bytes",
            UnaryOp::ReverseBits => "reverse_bits",
        }
    }
}

impl BinaryOp {
    /// All binary operators, in declaration order.
    pub const ALL: [BinaryOp; 13] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Rem,
        BinaryOp::And,
        BinaryOp::Or,
        BinaryOp::Xor,
        BinaryOp::Shl,
        BinaryOp::Shr,
        BinaryOp::Min,
        BinaryOp::Max,
        BinaryOp::Copysign,
    ];

    /// True for the operators defined on integers and `bool` only (the bitwise ones and the
    /// shifts).
    pub const fn is_bitwise(self) -> bool {
        matches!(
            self,
            BinaryOp::And | BinaryOp::Or | BinaryOp::Xor | BinaryOp::Shl | BinaryOp::Shr
        )
    }

    /// Whether the operator is defined on scalar type `s` (the verifier's rule): the bitwise
    /// operators not on floats, `Copysign` only on floats, the rest on every type.
    pub const fn accepts(self, s: Scalar) -> bool {
        match self {
            BinaryOp::Copysign => s.is_float(),
            op if op.is_bitwise() => !s.is_float(),
            _ => true,
        }
    }

    /// The printer's name of the operator.
    pub const fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Rem => "rem",
            BinaryOp::And => "and",
            BinaryOp::Or => "or",
            BinaryOp::Xor => "xor",
            BinaryOp::Shl => "shl",
            BinaryOp::Shr => "shr",
            BinaryOp::Min => "min",
            BinaryOp::Max => "max",
            BinaryOp::Copysign => "copysign",
        }
    }
}

impl MathFn {
    /// All one-argument math functions, in declaration order.
    pub const ALL: [MathFn; 21] = [
        MathFn::Exp,
        MathFn::Exp2,
        MathFn::ExpM1,
        MathFn::Ln,
        MathFn::Log2,
        MathFn::Log10,
        MathFn::Ln1p,
        MathFn::Sin,
        MathFn::Cos,
        MathFn::Tan,
        MathFn::Asin,
        MathFn::Acos,
        MathFn::Atan,
        MathFn::Sinh,
        MathFn::Cosh,
        MathFn::Tanh,
        MathFn::Asinh,
        MathFn::Acosh,
        MathFn::Atanh,
        MathFn::Cbrt,
        MathFn::Erf,
    ];

    /// The printer's name: Rust's method name (`exp`, `exp_m1`, `ln`, `ln_1p`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            MathFn::Exp => "exp",
            MathFn::Exp2 => "exp2",
            MathFn::ExpM1 => "exp_m1",
            MathFn::Ln => "ln",
            MathFn::Log2 => "log2",
            MathFn::Log10 => "log10",
            MathFn::Ln1p => "ln_1p",
            MathFn::Sin => "sin",
            MathFn::Cos => "cos",
            MathFn::Tan => "tan",
            MathFn::Asin => "asin",
            MathFn::Acos => "acos",
            MathFn::Atan => "atan",
            MathFn::Sinh => "sinh",
            MathFn::Cosh => "cosh",
            MathFn::Tanh => "tanh",
            MathFn::Asinh => "asinh",
            MathFn::Acosh => "acosh",
            MathFn::Atanh => "atanh",
            MathFn::Cbrt => "cbrt",
            MathFn::Erf => "erf",
        }
    }

    /// The C99 `<math.h>` name of the `double` version (`exp`, `expm1`, `log`, `log1p`, ...).
    pub const fn c_name(self) -> &'static str {
        match self {
            MathFn::ExpM1 => "expm1",
            MathFn::Ln => "log",
            MathFn::Ln1p => "log1p",
            f => f.name(),
        }
    }
}

impl MathFn2 {
    /// All two-argument math functions, in declaration order.
    pub const ALL: [MathFn2; 3] = [MathFn2::Pow, MathFn2::Atan2, MathFn2::Hypot];

    /// The printer's name (`pow`, `atan2`, `hypot`).
    pub const fn name(self) -> &'static str {
        match self {
            MathFn2::Pow => "pow",
            MathFn2::Atan2 => "atan2",
            MathFn2::Hypot => "hypot",
        }
    }

    /// The C99 `<math.h>` name of the `double` version (the printer's name).
    pub const fn c_name(self) -> &'static str {
        self.name()
    }
}

impl CmpOp {
    /// All comparison operators, in declaration order.
    pub const ALL: [CmpOp; 6] = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ];

    /// The printer's name of the operator.
    pub const fn name(self) -> &'static str {
        match self {
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
        }
    }

    /// The comparison with operands swapped (`a < b` is `b > a`).
    pub const fn swapped(self) -> CmpOp {
        match self {
            CmpOp::Eq => CmpOp::Eq,
            CmpOp::Ne => CmpOp::Ne,
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
        }
    }
}

impl fmt::Display for BlockCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.block)?;
        if !self.args.is_empty() {
            f.write_str("(")?;
            for (i, a) in self.args.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{a}")?;
            }
            f.write_str(")")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `all` holds each variant once, at the place `position` gives it, and `position` gives
    /// the places `0..all.len()`. The matches below are exhaustive: a new variant does not
    /// compile until it has a place there, which must then be its place in `ALL`.
    fn lists_each_once<T: Copy + fmt::Debug>(all: &[T], position: impl Fn(T) -> usize) {
        for (i, &v) in all.iter().enumerate() {
            assert_eq!(position(v), i, "{v:?} is listed at {i}");
        }
    }

    #[test]
    fn unary_all_lists_every_operator_once() {
        lists_each_once(&UnaryOp::ALL, |op| match op {
            UnaryOp::Neg => 0,
            UnaryOp::Not => 1,
            UnaryOp::Abs => 2,
            UnaryOp::Sqrt => 3,
            UnaryOp::Floor => 4,
            UnaryOp::Ceil => 5,
            UnaryOp::Trunc => 6,
            UnaryOp::Round => 7,
            UnaryOp::CountOnes => 8,
            UnaryOp::LeadingZeros => 9,
            UnaryOp::TrailingZeros => 10,
            UnaryOp::SwapBytes => 11,
            UnaryOp::ReverseBits => 12,
        });
    }

    #[test]
    fn binary_all_lists_every_operator_once() {
        lists_each_once(&BinaryOp::ALL, |op| match op {
            BinaryOp::Add => 0,
            BinaryOp::Sub => 1,
            BinaryOp::Mul => 2,
            BinaryOp::Div => 3,
            BinaryOp::Rem => 4,
            BinaryOp::And => 5,
            BinaryOp::Or => 6,
            BinaryOp::Xor => 7,
            BinaryOp::Shl => 8,
            BinaryOp::Shr => 9,
            BinaryOp::Min => 10,
            BinaryOp::Max => 11,
            BinaryOp::Copysign => 12,
        });
    }

    #[test]
    fn math_all_lists_every_function_once() {
        lists_each_once(&MathFn::ALL, |f| f as usize);
        lists_each_once(&MathFn2::ALL, |f| f as usize);
    }

    #[test]
    fn cmp_all_lists_every_operator_once() {
        lists_each_once(&CmpOp::ALL, |op| match op {
            CmpOp::Eq => 0,
            CmpOp::Ne => 1,
            CmpOp::Lt => 2,
            CmpOp::Le => 3,
            CmpOp::Gt => 4,
            CmpOp::Ge => 5,
        });
    }
}
