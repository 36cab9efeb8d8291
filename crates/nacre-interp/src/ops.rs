//! The interpreter's instruction set: [`Op`], pre-decoded and specialised by type.
//!
//! Every IR value lives in a register slot of the current frame (a `u128` holding the value's
//! bits in the normalised encoding of [`nacre_ir::semantics`]: zero-extended to the type's
//! width). The specialised operators of types up to 64 bits work on the low word; the 128-bit
//! integers go through the generic variants, which see the whole register. Operands are slot numbers ([`Reg`]) relative to the frame base. Operators are
//! specialised by type at lowering time (`IAdd32`, `SLt64`, `FMul64`, ...), so the dispatch
//! loop never looks at a type; rare operator/type combinations use the generic variants
//! ([`Op::BinGeneric`], [`Op::UnGeneric`], [`Op::CastGeneric`], [`Op::FmaGeneric`]), which call
//! the reference semantics.
//!
//! Integer operators that do not depend on signedness are named by width only (`IAdd8` serves
//! `i8` and `u8`); signed and unsigned variants are prefixed `S`/`U`. Bitwise and/or/xor and
//! equality work on the normalised bits of any width. `Gt`/`Ge` comparisons do not exist: they
//! are lowered to `Lt`/`Le` with swapped operands.

use nacre_ir::{AtomicOp, BinaryOp, CmpOp, MathFn, MathFn2, MemOrder, Scalar, Type, UnaryOp};
use std::fmt;

/// A register slot, relative to the current frame's base.
pub(crate) type Reg = u32;

/// A code offset within the current function.
pub(crate) type Target = u32;

/// Destination and one operand.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct R2 {
    /// Destination slot.
    pub d: Reg,
    /// Operand slot.
    pub a: Reg,
}

/// Destination and two operands.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct R3 {
    /// Destination slot.
    pub d: Reg,
    /// First operand slot.
    pub a: Reg,
    /// Second operand slot.
    pub b: Reg,
}

/// Destination and three operands (`select cond, a, b`; `fma a, b, c`).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct R4 {
    /// Destination slot.
    pub d: Reg,
    /// First operand slot.
    pub a: Reg,
    /// Second operand slot.
    pub b: Reg,
    /// Third operand slot.
    pub c: Reg,
}

/// An unconditional jump.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct Jmp {
    /// Where to continue.
    pub target: Target,
}

/// A jump on a `bool` register.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct CondJmp {
    /// The condition slot (0 or 1).
    pub c: Reg,
    /// Where to continue when the jump is taken.
    pub target: Target,
}

/// A jump fused with an integer comparison of two registers.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct CmpJmp {
    /// Left operand slot.
    pub a: Reg,
    /// Right operand slot.
    pub b: Reg,
    /// Where to continue when the comparison is false.
    pub target: Target,
}

/// A return with a value.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct RetVal {
    /// The returned slot.
    pub s: Reg,
}

/// No operands.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct Nothing;

/// A call; the arguments are `nargs` slots in the function's argument pool from `args`.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct CallOp {
    /// Index of the callee (a lowered function, or an extern).
    pub callee: u32,
    /// Start of the argument slots in the caller's argument pool.
    pub args: u32,
    /// Number of arguments.
    pub nargs: u32,
    /// Destination slot (the scratch slot for calls without a result).
    pub d: Reg,
}

/// A local array of `words` zeroed 16-byte words ([`nacre_ir::InstKind::LocalArray`]), its
/// address into `d`.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct LocalOp {
    /// 16-byte words.
    pub words: u32,
    /// Destination slot.
    pub d: Reg,
}

impl Operands for LocalOp {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{} = {m} {} words", self.d, self.words)
    }
}

/// A kernel launch. The caller's argument pool holds, from `args`, the six grid and block
/// size slots (grid x, y, z, then block x, y, z) followed by `nargs` kernel argument slots.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct LaunchOp {
    /// Index of the launched kernel in [`crate::program::Program::launches`].
    pub kernel: u32,
    /// Start of the size and argument slots in the caller's argument pool.
    pub args: u32,
    /// Number of kernel arguments (after the sizes).
    pub nargs: u32,
    /// Whether a seventh size slot, the bytes of dynamic shared memory, follows the grid and
    /// block sizes (0 bytes without).
    pub shared: bool,
}

impl LaunchOp {
    /// Number of size slots before the arguments.
    pub(crate) fn sizes(&self) -> usize {
        6 + usize::from(self.shared)
    }
}

/// Pointer plus scaled index.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct AddrOp {
    /// Destination slot.
    pub d: Reg,
    /// Pointer slot.
    pub p: Reg,
    /// Index slot.
    pub i: Reg,
    /// log2 of the element size.
    pub shift: u8,
}

/// A store of a register through a pointer register.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct StoreOp {
    /// Pointer slot.
    pub p: Reg,
    /// Value slot.
    pub v: Reg,
}

/// An atomic read-modify-write: `d = *p; *p = op(*p, v)` as one atomic step.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct AtomicRmwOp {
    /// Destination slot (the old value).
    pub d: Reg,
    /// Pointer slot.
    pub p: Reg,
    /// Operand slot.
    pub v: Reg,
    /// The operation.
    pub op: AtomicOp,
    /// The element type.
    pub s: Scalar,
    /// The ordering.
    pub order: MemOrder,
}

/// An atomic compare-exchange: `d = *p; if d == e { *p = n }` as one atomic step.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct AtomicCasOp {
    /// Destination slot (the old value).
    pub d: Reg,
    /// Pointer slot.
    pub p: Reg,
    /// Start of the expected and new value slots in the function's argument pool (which keeps
    /// [`Op`] small).
    pub en: u32,
    /// The element type (32 or 64 bits).
    pub s: Scalar,
    /// The ordering on success.
    pub order: MemOrder,
}

/// A memory fence.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct FenceOp {
    /// The ordering.
    pub order: MemOrder,
}

/// A bounds check: traps with `trap` unless `size` bytes at `addr` lie in `bytes` bytes from
/// `base` ([`nacre_ir::semantics::in_bounds`]).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct CheckOp {
    /// Address slot.
    pub addr: Reg,
    /// Base slot.
    pub base: Reg,
    /// Size-in-bytes slot.
    pub bytes: Reg,
    /// The out-of-bounds trap's status code with its low byte (the trap kind, always
    /// out-of-bounds) replaced by the access size in bytes, to keep [`Op`] compact.
    pub trap_and_size: u32,
}

impl CheckOp {
    /// The access size in bytes.
    pub fn size(self) -> u64 {
        u64::from(self.trap_and_size & 0xff)
    }

    /// The status code of the trap.
    pub fn trap_code(self) -> u32 {
        (self.trap_and_size & !0xff) | (nacre_ir::Trap::out_of_bounds(None, None).code() & 0xff)
    }
}

/// A binary operator evaluated through [`nacre_ir::semantics::binary`].
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct GenBin {
    /// The operator.
    pub op: BinaryOp,
    /// The operand type.
    pub s: Scalar,
    /// Registers.
    pub r: R3,
}

/// A unary operator evaluated through [`nacre_ir::semantics::unary`].
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct GenUn {
    /// The operator.
    pub op: UnaryOp,
    /// The operand type.
    pub s: Scalar,
    /// Registers.
    pub r: R2,
}

/// A math function evaluated through [`nacre_ir::semantics::math`].
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct GenMath {
    /// The function.
    pub f: MathFn,
    /// The operand type.
    pub s: Scalar,
    /// Registers.
    pub r: R2,
}

/// A two-argument math function evaluated through [`nacre_ir::semantics::math2`].
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct GenMath2 {
    /// The function.
    pub f: MathFn2,
    /// The operand type.
    pub s: Scalar,
    /// Registers.
    pub r: R3,
}

/// A conversion evaluated through [`nacre_ir::semantics::cast`].
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct GenCast {
    /// Source type.
    pub from: Type,
    /// Destination type.
    pub to: Type,
    /// Registers.
    pub r: R2,
}

/// A comparison evaluated through [`nacre_ir::semantics::compare`] (the half types).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct GenCmp {
    /// The comparison.
    pub op: CmpOp,
    /// The operand type.
    pub s: Scalar,
    /// Registers.
    pub r: R3,
}

/// A fused multiply-add evaluated through [`nacre_ir::semantics::fma`].
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct GenFma {
    /// The operand type.
    pub s: Scalar,
    /// Registers.
    pub r: R4,
}

/// Formats an operand shape after its mnemonic.
trait Operands {
    fn fmt_op(&self, mnemonic: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

impl Operands for R2 {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{} = {m} r{}", self.d, self.a)
    }
}

impl Operands for R3 {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{} = {m} r{}, r{}", self.d, self.a, self.b)
    }
}

impl Operands for R4 {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{} = {m} r{}, r{}, r{}", self.d, self.a, self.b, self.c)
    }
}

impl Operands for Jmp {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{m} @{}", self.target)
    }
}

impl Operands for CondJmp {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{m} r{}, @{}", self.c, self.target)
    }
}

impl Operands for CmpJmp {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{m} r{}, r{}, @{}", self.a, self.b, self.target)
    }
}

impl Operands for RetVal {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{m} r{}", self.s)
    }
}

impl Operands for Nothing {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(m)
    }
}

impl Operands for CallOp {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "r{} = {m} #{} args[{}..{}]",
            self.d,
            self.callee,
            self.args,
            self.args + self.nargs
        )
    }
}

impl Operands for LaunchOp {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (start, n) = (u64::from(self.args), u64::from(self.nargs));
        write!(
            f,
            "{m} #{} dims[{start}..{}] args[{}..{}]",
            self.kernel,
            start + 6,
            start + 6,
            start + 6 + n
        )
    }
}

impl Operands for AddrOp {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "r{} = {m} r{}, r{} << {}",
            self.d, self.p, self.i, self.shift
        )
    }
}

impl Operands for StoreOp {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{m} [r{}], r{}", self.p, self.v)
    }
}

impl Operands for AtomicRmwOp {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "r{} = {m}.{}.{}.{} [r{}], r{}",
            self.d,
            self.op.name(),
            self.s,
            self.order.name(),
            self.p,
            self.v
        )
    }
}

impl Operands for AtomicCasOp {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "r{} = {m}.{}.{} [r{}], args[{}..{}]",
            self.d,
            self.s,
            self.order.name(),
            self.p,
            self.en,
            self.en + 2
        )
    }
}

impl Operands for FenceOp {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{m}.{}", self.order.name())
    }
}

impl Operands for CheckOp {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{m} r{} in [r{}, +r{}) size {} trap {:#x}",
            self.addr,
            self.base,
            self.bytes,
            self.size(),
            self.trap_code()
        )
    }
}

impl Operands for GenBin {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.r
            .fmt_op(&format!("{m}.{}.{}", self.op.name(), self.s), f)
    }
}

impl Operands for GenUn {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.r
            .fmt_op(&format!("{m}.{}.{}", self.op.name(), self.s), f)
    }
}

impl Operands for GenMath {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.r
            .fmt_op(&format!("{m}.{}.{}", self.f.name(), self.s), f)
    }
}

impl Operands for GenMath2 {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.r
            .fmt_op(&format!("{m}.{}.{}", self.f.name(), self.s), f)
    }
}

impl Operands for GenCast {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.r.fmt_op(&format!("{m}.{}.{}", self.from, self.to), f)
    }
}

impl Operands for GenCmp {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.r
            .fmt_op(&format!("{m}.{}.{}", self.op.name(), self.s), f)
    }
}

impl Operands for GenFma {
    fn fmt_op(&self, m: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.r.fmt_op(&format!("{m}.{}", self.s), f)
    }
}

/// Defines [`Op`] (one tuple variant per operation, holding its operand shape) and its
/// `Display` (the mnemonic followed by the operands).
macro_rules! define_ops {
    ($( $(#[$doc:meta])* $name:ident($shape:ident) = $mnemonic:literal; )*) => {
        /// One pre-decoded interpreter instruction.
        #[derive(Copy, Clone, PartialEq, Debug)]
        pub(crate) enum Op {
            $( $(#[$doc])* $name($shape), )*
        }

        impl fmt::Display for Op {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $( Op::$name(x) => x.fmt_op($mnemonic, f), )*
                }
            }
        }
    };
}

define_ops! {
    /// Copy a slot.
    Mov(R2) = "mov";

    /// Unconditional jump.
    Jump(Jmp) = "jump";
    /// Jump when the condition is true.
    JumpIf(CondJmp) = "jump_if";
    /// Jump when the condition is false.
    JumpUnless(CondJmp) = "jump_unless";
    /// Jump unless `a == b` (bits).
    JumpUnlessEq(CmpJmp) = "jump_unless_eq";
    /// Jump unless `a != b` (bits).
    JumpUnlessNe(CmpJmp) = "jump_unless_ne";
    /// Jump unless `a < b` (unsigned bits).
    JumpUnlessULt(CmpJmp) = "jump_unless_ult";
    /// Jump unless `a <= b` (unsigned bits).
    JumpUnlessULe(CmpJmp) = "jump_unless_ule";
    /// Jump unless `a < b` (`i32`).
    JumpUnlessSLt32(CmpJmp) = "jump_unless_slt32";
    /// Jump unless `a <= b` (`i32`).
    JumpUnlessSLe32(CmpJmp) = "jump_unless_sle32";
    /// Jump unless `a < b` (`i64`).
    JumpUnlessSLt64(CmpJmp) = "jump_unless_slt64";
    /// Jump unless `a <= b` (`i64`).
    JumpUnlessSLe64(CmpJmp) = "jump_unless_sle64";
    /// Return a slot.
    Ret(RetVal) = "return";
    /// Return nothing (the caller sees 0).
    RetVoid(Nothing) = "return";
    /// Call a lowered function.
    Call(CallOp) = "call";
    /// Call an external function.
    CallExtern(CallOp) = "call_extern";
    /// Launch a kernel through the module's launcher; a failed launch traps.
    Launch(LaunchOp) = "launch";
    /// Allocate a zeroed local array, freed when the function returns.
    LocalArray(LocalOp) = "local_array";

    /// 8-bit wrapping add.
    IAdd8(R3) = "iadd8";
    /// 16-bit wrapping add.
    IAdd16(R3) = "iadd16";
    /// 32-bit wrapping add.
    IAdd32(R3) = "iadd32";
    /// 64-bit wrapping add.
    IAdd64(R3) = "iadd64";
    /// 8-bit wrapping subtract.
    ISub8(R3) = "isub8";
    /// 16-bit wrapping subtract.
    ISub16(R3) = "isub16";
    /// 32-bit wrapping subtract.
    ISub32(R3) = "isub32";
    /// 64-bit wrapping subtract.
    ISub64(R3) = "isub64";
    /// 8-bit wrapping multiply.
    IMul8(R3) = "imul8";
    /// 16-bit wrapping multiply.
    IMul16(R3) = "imul16";
    /// 32-bit wrapping multiply.
    IMul32(R3) = "imul32";
    /// 64-bit wrapping multiply.
    IMul64(R3) = "imul64";
    /// Bitwise and of normalised bits (any integer width, `bool`).
    And(R3) = "and";
    /// Bitwise or of normalised bits.
    Or(R3) = "or";
    /// Bitwise xor of normalised bits.
    Xor(R3) = "xor";
    /// 8-bit shift left, amount masked.
    Shl8(R3) = "shl8";
    /// 16-bit shift left, amount masked.
    Shl16(R3) = "shl16";
    /// 32-bit shift left, amount masked.
    Shl32(R3) = "shl32";
    /// 64-bit shift left, amount masked.
    Shl64(R3) = "shl64";
    /// `i8` arithmetic shift right.
    SShr8(R3) = "sshr8";
    /// `i16` arithmetic shift right.
    SShr16(R3) = "sshr16";
    /// `i32` arithmetic shift right.
    SShr32(R3) = "sshr32";
    /// `i64` arithmetic shift right.
    SShr64(R3) = "sshr64";
    /// `u8` logical shift right.
    UShr8(R3) = "ushr8";
    /// `u16` logical shift right.
    UShr16(R3) = "ushr16";
    /// `u32` logical shift right.
    UShr32(R3) = "ushr32";
    /// `u64` logical shift right.
    UShr64(R3) = "ushr64";
    /// `i32` division (traps on zero, `MIN / -1` wraps).
    SDiv32(R3) = "sdiv32";
    /// `i64` division.
    SDiv64(R3) = "sdiv64";
    /// `u32` division.
    UDiv32(R3) = "udiv32";
    /// `u64` division.
    UDiv64(R3) = "udiv64";
    /// `i32` remainder (traps on zero, `MIN % -1` is 0).
    SRem32(R3) = "srem32";
    /// `i64` remainder.
    SRem64(R3) = "srem64";
    /// `u32` remainder.
    URem32(R3) = "urem32";
    /// `u64` remainder.
    URem64(R3) = "urem64";

    /// `f32` add.
    FAdd32(R3) = "fadd32";
    /// `f32` subtract.
    FSub32(R3) = "fsub32";
    /// `f32` multiply.
    FMul32(R3) = "fmul32";
    /// `f32` divide.
    FDiv32(R3) = "fdiv32";
    /// `f64` add.
    FAdd64(R3) = "fadd64";
    /// `f64` subtract.
    FSub64(R3) = "fsub64";
    /// `f64` multiply.
    FMul64(R3) = "fmul64";
    /// `f64` divide.
    FDiv64(R3) = "fdiv64";
    /// Any other binary operator, through the reference semantics.
    BinGeneric(GenBin) = "bin";

    /// 8-bit wrapping negation.
    INeg8(R2) = "ineg8";
    /// 16-bit wrapping negation.
    INeg16(R2) = "ineg16";
    /// 32-bit wrapping negation.
    INeg32(R2) = "ineg32";
    /// 64-bit wrapping negation.
    INeg64(R2) = "ineg64";
    /// 8-bit bitwise not.
    INot8(R2) = "inot8";
    /// 16-bit bitwise not.
    INot16(R2) = "inot16";
    /// 32-bit bitwise not.
    INot32(R2) = "inot32";
    /// 64-bit bitwise not.
    INot64(R2) = "inot64";
    /// Logical not of a `bool`.
    BNot(R2) = "bnot";
    /// `f32` negation.
    FNeg32(R2) = "fneg32";
    /// `f64` negation.
    FNeg64(R2) = "fneg64";
    /// `f32` absolute value.
    FAbs32(R2) = "fabs32";
    /// `f64` absolute value.
    FAbs64(R2) = "fabs64";
    /// `f32` square root.
    FSqrt32(R2) = "fsqrt32";
    /// `f64` square root.
    FSqrt64(R2) = "fsqrt64";
    /// Any other unary operator, through the reference semantics.
    UnGeneric(GenUn) = "un";
    /// A math function, through the reference semantics.
    Math(GenMath) = "math";
    /// A two-argument math function, through the reference semantics.
    Math2(GenMath2) = "math";

    /// Bits equal (integers, `bool`, pointers).
    IEq(R3) = "ieq";
    /// Bits differ.
    INe(R3) = "ine";
    /// Unsigned less-than on normalised bits (unsigned integers, `bool`, pointers).
    ULt(R3) = "ult";
    /// Unsigned less-or-equal.
    ULe(R3) = "ule";
    /// `i8` less-than.
    SLt8(R3) = "slt8";
    /// `i16` less-than.
    SLt16(R3) = "slt16";
    /// `i32` less-than.
    SLt32(R3) = "slt32";
    /// `i64` less-than.
    SLt64(R3) = "slt64";
    /// `i8` less-or-equal.
    SLe8(R3) = "sle8";
    /// `i16` less-or-equal.
    SLe16(R3) = "sle16";
    /// `i32` less-or-equal.
    SLe32(R3) = "sle32";
    /// `i64` less-or-equal.
    SLe64(R3) = "sle64";
    /// `f32` `==`.
    FEq32(R3) = "feq32";
    /// `f32` `!=`.
    FNe32(R3) = "fne32";
    /// `f32` `<`.
    FLt32(R3) = "flt32";
    /// `f32` `<=`.
    FLe32(R3) = "fle32";
    /// `f64` `==`.
    FEq64(R3) = "feq64";
    /// `f64` `!=`.
    FNe64(R3) = "fne64";
    /// `f64` `<`.
    FLt64(R3) = "flt64";
    /// `f64` `<=`.
    FLe64(R3) = "fle64";

    /// Keep the low 8 bits.
    Trunc8(R2) = "trunc8";
    /// Keep the low 16 bits.
    Trunc16(R2) = "trunc16";
    /// Keep the low 32 bits.
    Trunc32(R2) = "trunc32";
    /// Sign-extend 8 to 16 bits.
    Sext8To16(R2) = "sext8to16";
    /// Sign-extend 8 to 32 bits.
    Sext8To32(R2) = "sext8to32";
    /// Sign-extend 8 to 64 bits.
    Sext8To64(R2) = "sext8to64";
    /// Sign-extend 16 to 32 bits.
    Sext16To32(R2) = "sext16to32";
    /// Sign-extend 16 to 64 bits.
    Sext16To64(R2) = "sext16to64";
    /// Sign-extend 32 to 64 bits.
    Sext32To64(R2) = "sext32to64";
    /// Integer, `bool` or pointer to `bool` (`!= 0`).
    ToBool(R2) = "tobool";
    /// `i32` to `f32`.
    S32ToF32(R2) = "s32tof32";
    /// `i32` to `f64`.
    S32ToF64(R2) = "s32tof64";
    /// `i64` to `f64`.
    S64ToF64(R2) = "s64tof64";
    /// `f32` to `i32` (saturating, NaN gives 0).
    F32ToS32(R2) = "f32tos32";
    /// `f64` to `i32` (saturating, NaN gives 0).
    F64ToS32(R2) = "f64tos32";
    /// `f64` to `i64` (saturating, NaN gives 0).
    F64ToS64(R2) = "f64tos64";
    /// `f32` to `f64`.
    F32ToF64(R2) = "f32tof64";
    /// `f64` to `f32`.
    F64ToF32(R2) = "f64tof32";
    /// Any other conversion, through the reference semantics.
    CastGeneric(GenCast) = "cast";
    /// A comparison of half-precision floats or 128-bit integers, through the reference
    /// semantics.
    CmpGeneric(GenCmp) = "cmp";

    /// `cond ? a : b` (`a` = condition, `b` = value if true, `c` = value if false).
    Select(R4) = "select";
    /// `f32` fused multiply-add.
    FFma32(R4) = "ffma32";
    /// `f64` fused multiply-add.
    FFma64(R4) = "ffma64";
    /// Fused multiply-add on other types, through the reference semantics.
    FmaGeneric(GenFma) = "fma";

    /// Pointer plus zero-extended (or 64-bit) index, scaled.
    ElemPtr(AddrOp) = "elem_ptr";
    /// Pointer plus sign-extended `i8` index, scaled.
    ElemPtrS8(AddrOp) = "elem_ptr.s8";
    /// Pointer plus sign-extended `i16` index, scaled.
    ElemPtrS16(AddrOp) = "elem_ptr.s16";
    /// Pointer plus sign-extended `i32` index, scaled.
    ElemPtrS32(AddrOp) = "elem_ptr.s32";
    /// Load a `bool` byte (normalised to its low bit).
    LoadBool(R2) = "load.bool";
    /// Load 8 bits, zero-extended.
    Load8(R2) = "load8";
    /// Load 16 bits, zero-extended.
    Load16(R2) = "load16";
    /// Load 32 bits, zero-extended.
    Load32(R2) = "load32";
    /// Load 64 bits.
    Load64(R2) = "load64";
    /// Load 128 bits.
    Load128(R2) = "load128";
    /// Store the low 8 bits.
    Store8(StoreOp) = "store8";
    /// Store the low 16 bits.
    Store16(StoreOp) = "store16";
    /// Store the low 32 bits.
    Store32(StoreOp) = "store32";
    /// Store 64 bits.
    Store64(StoreOp) = "store64";
    /// Store 128 bits.
    Store128(StoreOp) = "store128";
    /// Trap unless an access is in bounds.
    BoundsCheck(CheckOp) = "bounds_check";
    /// Atomic read-modify-write.
    AtomicRmw(AtomicRmwOp) = "atomic";
    /// Atomic compare-exchange.
    AtomicCas(AtomicCasOp) = "atomic_cas";
    /// Memory fence.
    Fence(FenceOp) = "fence";
}

impl Op {
    /// The jump target of a jump instruction, mutably (for patching forward references).
    pub(crate) fn target_mut(&mut self) -> Option<&mut Target> {
        match self {
            Op::Jump(j) => Some(&mut j.target),
            Op::JumpIf(j) | Op::JumpUnless(j) => Some(&mut j.target),
            Op::JumpUnlessEq(j)
            | Op::JumpUnlessNe(j)
            | Op::JumpUnlessULt(j)
            | Op::JumpUnlessULe(j)
            | Op::JumpUnlessSLt32(j)
            | Op::JumpUnlessSLe32(j)
            | Op::JumpUnlessSLt64(j)
            | Op::JumpUnlessSLe64(j) => Some(&mut j.target),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_are_compact() {
        assert!(
            std::mem::size_of::<Op>() <= 20,
            "Op is {} bytes",
            std::mem::size_of::<Op>()
        );
    }

    #[test]
    fn display_is_readable() {
        assert_eq!(
            Op::IAdd32(R3 { d: 3, a: 1, b: 2 }).to_string(),
            "r3 = iadd32 r1, r2"
        );
        assert_eq!(
            Op::JumpUnlessSLt32(CmpJmp {
                a: 0,
                b: 1,
                target: 7
            })
            .to_string(),
            "jump_unless_slt32 r0, r1, @7"
        );
        let g = Op::BinGeneric(GenBin {
            op: BinaryOp::Min,
            s: Scalar::F32,
            r: R3 { d: 2, a: 0, b: 1 },
        });
        assert_eq!(g.to_string(), "r2 = bin.min.f32 r0, r1");
        assert_eq!(
            Op::Store32(StoreOp { p: 4, v: 5 }).to_string(),
            "store32 [r4], r5"
        );
    }
}
