//! Lowering of an IR module into the interpreter's pre-decoded form ([`Program`]).
//!
//! Per function: every value gets a frame slot (see [`crate::program`] for the layout),
//! constants are pre-loaded into their slots when a frame is entered and emit no code, each
//! operator is specialised by its operand type into one [`Op`], block parameters are passed as
//! sequentialised parallel moves ([`crate::moves`]), a comparison used only by the branch that
//! follows it is fused into the branch, and jumps to the next block in layout fall through.
//!
//! Lowering never panics: malformed IR (which the verifier rejects) becomes a
//! [`BackendError::Codegen`].

use crate::moves::sequentialize;
use crate::ops::{
    AddrOp, AtomicCasOp, AtomicRmwOp, CallOp, CheckOp, CmpJmp, CondJmp, FenceOp, GenBin, GenCast,
    GenCmp, GenFma, GenMath, GenMath2, GenUn, Jmp, LaunchOp, LocalOp, Nothing, Op, Reg, RetVal,
    StoreOp, Target, R2, R3, R4,
};
use crate::program::{ExternEntry, LaunchEntry, LoweredFunc, Program};
use nacre_backend::{BackendError, Linkage};
use nacre_ir::semantics::normalize;
use nacre_ir::{
    BinaryOp, Block, BlockCall, CmpOp, ExternId, FuncId, FuncKind, Function, Inst, InstData,
    InstKind, Launch, Module, Scalar, Type, UnaryOp, Value,
};
use std::collections::{HashMap, HashSet};

/// The backend name used in errors.
const BACKEND: &str = "interp";

/// The mask that normalises bits of type `ty` (see [`nacre_ir::semantics::normalize`]).
pub(crate) fn type_mask(ty: Type) -> u64 {
    // Values crossing the host boundary are at most 64 bits wide (the verifier checks it).
    normalize(ty, u128::from(u64::MAX)) as u64
}

/// Lowers every host function of `module`; the module's entry (a host function) becomes the
/// program's entry. Kernels are skipped: a GPU runtime compiles them, and host code reaches
/// them only through launches, which go through the linkage's [`nacre_backend::LaunchBinding`].
pub(crate) fn lower_module(module: &Module, linkage: &Linkage) -> Result<Program, BackendError> {
    let entry = module.entry.ok_or_else(|| BackendError::Unsupported {
        backend: BACKEND,
        what: "modules without an entry function".to_string(),
    })?;
    if let Some(f) = module.functions.get(entry) {
        if f.kind == FuncKind::Kernel {
            return Err(BackendError::Unsupported {
                backend: BACKEND,
                what: format!("GPU kernel @{} as an entry function", f.name),
            });
        }
    }
    let func_index: HashMap<FuncId, u32> = module
        .functions
        .iter()
        .filter(|(_, f)| f.kind == FuncKind::Host)
        .map(|(id, _)| id)
        .zip(0u32..)
        .collect();
    let extern_index: HashMap<ExternId, u32> = module.externs.keys().zip(0u32..).collect();
    let externs = module
        .externs
        .iter()
        .map(|(id, e)| {
            let at = linkage
                .extern_addr(id)
                .ok_or_else(|| unlinked_extern(&e.name))?;
            Ok(ExternEntry {
                addr: at.addr,
                dyn_call: at.dyn_call,
                ret_mask: e.signature.ret.map_or(0, type_mask),
            })
        })
        .collect::<Result<Vec<_>, BackendError>>()?;
    let extern_names = module.externs.values().map(|e| e.name.clone()).collect();
    // Every kernel the binding has a handle for, in module order; a launch of any other
    // kernel is rejected when it is lowered.
    let mut launch_index: HashMap<FuncId, u32> = HashMap::new();
    let mut launches = Vec::new();
    if let Some(binding) = &linkage.launch {
        for (id, f) in module.functions.iter() {
            if let (FuncKind::Kernel, Some(&handle)) = (f.kind, binding.handles.get(&id)) {
                let index = u32::try_from(launches.len()).map_err(|_| BackendError::Codegen {
                    backend: BACKEND,
                    message: "too many kernels".to_string(),
                })?;
                launch_index.insert(id, index);
                launches.push(LaunchEntry {
                    name: f.name.clone(),
                    launcher: binding.launcher,
                    handle,
                });
            }
        }
    }
    let index = Indices {
        funcs: &func_index,
        externs: &extern_index,
        launches: &launch_index,
        bound: linkage.launch.is_some(),
    };
    let funcs = module
        .functions
        .values()
        .filter(|f| f.kind == FuncKind::Host)
        .map(|func| FnLowerer::new(module, func, &index).and_then(|l| l.lower()))
        .collect::<Result<Vec<_>, _>>()?;
    let entry = func_index
        .get(&entry)
        .copied()
        .ok_or_else(|| BackendError::Codegen {
            backend: BACKEND,
            message: format!("the module's entry {entry} is not one of its functions"),
        })?;
    Ok(Program {
        funcs,
        externs,
        extern_names,
        launches,
        entry: entry as usize,
    })
}

/// The program-wide numbering of functions, externs and launched kernels.
struct Indices<'a> {
    /// Host functions, numbered in module order.
    funcs: &'a HashMap<FuncId, u32>,
    /// External functions.
    externs: &'a HashMap<ExternId, u32>,
    /// Kernels that have a launch handle.
    launches: &'a HashMap<FuncId, u32>,
    /// Whether the linkage has a launch binding at all.
    bound: bool,
}

/// The error for a launch the linkage's binding cannot serve.
fn unbound_launch(why: String) -> BackendError {
    BackendError::unbound_launch(BACKEND, &why)
}

/// The error for an extern the linkage has no address for.
fn unlinked_extern(name: &str) -> BackendError {
    BackendError::unlinked_extern(BACKEND, name)
}

/// Comparison kinds after canonicalisation (`Gt`/`Ge` become `Lt`/`Le` with swapped operands).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum CmpKind {
    /// Bits equal.
    Eq,
    /// Bits differ.
    Ne,
    /// Unsigned less-than on normalised bits.
    ULt,
    /// Unsigned less-or-equal.
    ULe,
    /// Signed less-than at a width.
    SLt(u32),
    /// Signed less-or-equal at a width.
    SLe(u32),
    /// Float comparisons at a width.
    F(CmpOp, u32),
    /// Comparisons of a half type or a 128-bit integer, through the reference semantics.
    Generic(CmpOp, Scalar),
}

impl CmpKind {
    /// The kind and whether the operands must be swapped, for `op` on operands of type `ty`.
    fn new(op: CmpOp, ty: Type) -> (CmpKind, bool) {
        let (op, swap) = match op {
            CmpOp::Gt => (CmpOp::Lt, true),
            CmpOp::Ge => (CmpOp::Le, true),
            other => (other, false),
        };
        let kind = match ty {
            Type::Scalar(s) if s.is_half() || s.is_wide() => CmpKind::Generic(op, s),
            Type::Scalar(s) if s.is_float() => CmpKind::F(op, s.bits()),
            Type::Scalar(s) if s.is_signed_int() && matches!(op, CmpOp::Lt | CmpOp::Le) => {
                if op == CmpOp::Lt {
                    CmpKind::SLt(s.bits())
                } else {
                    CmpKind::SLe(s.bits())
                }
            }
            _ => match op {
                CmpOp::Eq => CmpKind::Eq,
                CmpOp::Ne => CmpKind::Ne,
                CmpOp::Lt => CmpKind::ULt,
                _ => CmpKind::ULe,
            },
        };
        (kind, swap)
    }

    /// The instruction computing the comparison into a register.
    fn value_op(self, r: R3) -> Op {
        match self {
            CmpKind::Eq => Op::IEq(r),
            CmpKind::Ne => Op::INe(r),
            CmpKind::ULt => Op::ULt(r),
            CmpKind::ULe => Op::ULe(r),
            CmpKind::SLt(w) => pick(w, [Op::SLt8, Op::SLt16, Op::SLt32, Op::SLt64], r),
            CmpKind::SLe(w) => pick(w, [Op::SLe8, Op::SLe16, Op::SLe32, Op::SLe64], r),
            CmpKind::F(op, w) => {
                let ops = match op {
                    CmpOp::Eq => [Op::FEq32, Op::FEq64],
                    CmpOp::Ne => [Op::FNe32, Op::FNe64],
                    CmpOp::Lt | CmpOp::Gt => [Op::FLt32, Op::FLt64],
                    CmpOp::Le | CmpOp::Ge => [Op::FLe32, Op::FLe64],
                };
                ops[usize::from(w == 64)](r)
            }
            CmpKind::Generic(op, s) => Op::CmpGeneric(GenCmp { op, s, r }),
        }
    }

    /// The fused "jump unless the comparison holds" instruction, for the kinds that have one.
    fn jump_unless(self, j: CmpJmp) -> Option<Op> {
        Some(match self {
            CmpKind::Eq => Op::JumpUnlessEq(j),
            CmpKind::Ne => Op::JumpUnlessNe(j),
            CmpKind::ULt => Op::JumpUnlessULt(j),
            CmpKind::ULe => Op::JumpUnlessULe(j),
            CmpKind::SLt(32) => Op::JumpUnlessSLt32(j),
            CmpKind::SLe(32) => Op::JumpUnlessSLe32(j),
            CmpKind::SLt(64) => Op::JumpUnlessSLt64(j),
            CmpKind::SLe(64) => Op::JumpUnlessSLe64(j),
            _ => return None,
        })
    }

    /// The negated comparison and whether its operands are swapped (integer orders are total,
    /// so `!(a < b)` is `b <= a`). `None` for floats, where NaN breaks that.
    fn negated(self) -> Option<(CmpKind, bool)> {
        Some(match self {
            CmpKind::Eq => (CmpKind::Ne, false),
            CmpKind::Ne => (CmpKind::Eq, false),
            CmpKind::ULt => (CmpKind::ULe, true),
            CmpKind::ULe => (CmpKind::ULt, true),
            CmpKind::SLt(w) => (CmpKind::SLe(w), true),
            CmpKind::SLe(w) => (CmpKind::SLt(w), true),
            CmpKind::F(..) | CmpKind::Generic(..) => return None,
        })
    }

    /// True if both this comparison and its negation have fused jumps.
    fn fusable(self) -> bool {
        let probe = CmpJmp {
            a: 0,
            b: 0,
            target: 0,
        };
        self.jump_unless(probe).is_some()
            && self
                .negated()
                .is_some_and(|(n, _)| n.jump_unless(probe).is_some())
    }
}

/// Picks the variant for an integer width (8, 16, 32, 64).
fn pick<T>(width: u32, ops: [fn(T) -> Op; 4], operands: T) -> Op {
    let i = match width {
        8 => 0,
        16 => 1,
        32 => 2,
        _ => 3,
    };
    ops[i](operands)
}

/// Integer-like view of a type for conversions: width and signedness (pointers are `u64`).
fn int_like(ty: Type) -> Option<(u32, bool)> {
    match ty {
        Type::Ptr(..) => Some((64, false)),
        Type::Scalar(s) if s.is_int() => Some((s.bits(), s.is_signed_int())),
        Type::Scalar(_) => None,
    }
}

/// The specialised instruction for a unary operator on a scalar type.
fn lower_unary(op: UnaryOp, s: Scalar, r: R2) -> Op {
    let generic = Op::UnGeneric(GenUn { op, s, r });
    if s.is_wide() {
        return generic;
    }
    if s == Scalar::Bool {
        return if op == UnaryOp::Not {
            Op::BNot(r)
        } else {
            Op::Mov(r)
        };
    }
    if s.is_int() {
        let w = s.bits();
        return match op {
            UnaryOp::Neg => pick(w, [Op::INeg8, Op::INeg16, Op::INeg32, Op::INeg64], r),
            UnaryOp::Not => pick(w, [Op::INot8, Op::INot16, Op::INot32, Op::INot64], r),
            UnaryOp::Abs if s.is_signed_int() => generic,
            UnaryOp::Abs
            | UnaryOp::Sqrt
            | UnaryOp::Floor
            | UnaryOp::Ceil
            | UnaryOp::Trunc
            | UnaryOp::Round => Op::Mov(r),
            // Bit operations run through the reference semantics.
            UnaryOp::CountOnes
            | UnaryOp::LeadingZeros
            | UnaryOp::TrailingZeros
            | UnaryOp::SwapBytes
            | UnaryOp::ReverseBits => generic,
        };
    }
    if s.is_half() {
        return generic;
    }
    let f64 = s == Scalar::F64;
    match op {
        UnaryOp::Neg => {
            if f64 {
                Op::FNeg64(r)
            } else {
                Op::FNeg32(r)
            }
        }
        UnaryOp::Abs => {
            if f64 {
                Op::FAbs64(r)
            } else {
                Op::FAbs32(r)
            }
        }
        UnaryOp::Sqrt => {
            if f64 {
                Op::FSqrt64(r)
            } else {
                Op::FSqrt32(r)
            }
        }
        UnaryOp::Not => Op::Mov(r),
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Trunc | UnaryOp::Round => generic,
        // Integer bit operations are not defined on floats (the verifier refuses them).
        UnaryOp::CountOnes
        | UnaryOp::LeadingZeros
        | UnaryOp::TrailingZeros
        | UnaryOp::SwapBytes
        | UnaryOp::ReverseBits => Op::Mov(r),
    }
}

/// The specialised instruction for a binary operator on a scalar type.
fn lower_binary(op: BinaryOp, s: Scalar, r: R3) -> Op {
    let generic = Op::BinGeneric(GenBin { op, s, r });
    if s.is_wide() {
        return generic;
    }
    if s == Scalar::Bool {
        return match op {
            BinaryOp::And | BinaryOp::Mul | BinaryOp::Min => Op::And(r),
            BinaryOp::Or | BinaryOp::Max => Op::Or(r),
            BinaryOp::Xor | BinaryOp::Add | BinaryOp::Sub => Op::Xor(r),
            BinaryOp::Div | BinaryOp::Rem | BinaryOp::Shl | BinaryOp::Shr | BinaryOp::Copysign => {
                Op::Mov(R2 { d: r.d, a: r.a })
            }
        };
    }
    if s.is_int() {
        let (w, signed) = (s.bits(), s.is_signed_int());
        return match op {
            BinaryOp::Add => pick(w, [Op::IAdd8, Op::IAdd16, Op::IAdd32, Op::IAdd64], r),
            BinaryOp::Sub => pick(w, [Op::ISub8, Op::ISub16, Op::ISub32, Op::ISub64], r),
            BinaryOp::Mul => pick(w, [Op::IMul8, Op::IMul16, Op::IMul32, Op::IMul64], r),
            BinaryOp::And => Op::And(r),
            BinaryOp::Or => Op::Or(r),
            BinaryOp::Xor => Op::Xor(r),
            BinaryOp::Shl => pick(w, [Op::Shl8, Op::Shl16, Op::Shl32, Op::Shl64], r),
            BinaryOp::Shr if signed => pick(w, [Op::SShr8, Op::SShr16, Op::SShr32, Op::SShr64], r),
            BinaryOp::Shr => pick(w, [Op::UShr8, Op::UShr16, Op::UShr32, Op::UShr64], r),
            BinaryOp::Div => match (signed, w) {
                (true, 32) => Op::SDiv32(r),
                (true, 64) => Op::SDiv64(r),
                (false, 32) => Op::UDiv32(r),
                (false, 64) => Op::UDiv64(r),
                _ => generic,
            },
            BinaryOp::Rem => match (signed, w) {
                (true, 32) => Op::SRem32(r),
                (true, 64) => Op::SRem64(r),
                (false, 32) => Op::URem32(r),
                (false, 64) => Op::URem64(r),
                _ => generic,
            },
            BinaryOp::Min | BinaryOp::Max | BinaryOp::Copysign => generic,
        };
    }
    if s.is_half() {
        return generic;
    }
    let f64 = s == Scalar::F64;
    match op {
        BinaryOp::Add => {
            if f64 {
                Op::FAdd64(r)
            } else {
                Op::FAdd32(r)
            }
        }
        BinaryOp::Sub => {
            if f64 {
                Op::FSub64(r)
            } else {
                Op::FSub32(r)
            }
        }
        BinaryOp::Mul => {
            if f64 {
                Op::FMul64(r)
            } else {
                Op::FMul32(r)
            }
        }
        BinaryOp::Div => {
            if f64 {
                Op::FDiv64(r)
            } else {
                Op::FDiv32(r)
            }
        }
        _ => generic,
    }
}

/// The specialised instruction for a conversion (Rust `as` semantics).
fn lower_cast(from: Type, to: Type, r: R2) -> Op {
    let generic = Op::CastGeneric(GenCast { from, to, r });
    if from == to {
        return Op::Mov(r);
    }
    let wide = |t: Type| t.scalar().is_some_and(Scalar::is_wide);
    if wide(from) || wide(to) {
        return generic;
    }
    if to.is_bool() {
        return if from.is_bool() || int_like(from).is_some() {
            Op::ToBool(r)
        } else {
            generic
        };
    }
    if from.is_bool() {
        return if int_like(to).is_some() {
            Op::Mov(r)
        } else {
            generic
        };
    }
    if let (Some((fw, signed)), Some((tw, _))) = (int_like(from), int_like(to)) {
        return match (fw, tw) {
            _ if tw < fw => match tw {
                8 => Op::Trunc8(r),
                16 => Op::Trunc16(r),
                _ => Op::Trunc32(r),
            },
            _ if tw == fw || !signed => Op::Mov(r),
            (8, 16) => Op::Sext8To16(r),
            (8, 32) => Op::Sext8To32(r),
            (8, _) => Op::Sext8To64(r),
            (16, 32) => Op::Sext16To32(r),
            (16, _) => Op::Sext16To64(r),
            _ => Op::Sext32To64(r),
        };
    }
    match (from, to) {
        (Type::F32, Type::F64) => Op::F32ToF64(r),
        (Type::F64, Type::F32) => Op::F64ToF32(r),
        (Type::I32, Type::F32) => Op::S32ToF32(r),
        (Type::I32, Type::F64) => Op::S32ToF64(r),
        (Type::I64, Type::F64) => Op::S64ToF64(r),
        (Type::F32, Type::I32) => Op::F32ToS32(r),
        (Type::F64, Type::I32) => Op::F64ToS32(r),
        (Type::F64, Type::I64) => Op::F64ToS64(r),
        _ => generic,
    }
}

/// log2 of an element size in bytes (1, 2, 4, 8 or 16).
fn elem_shift(elem: Scalar) -> u8 {
    match elem.bytes() {
        1 => 0,
        2 => 1,
        4 => 2,
        8 => 3,
        _ => 4,
    }
}

/// The condition of a branch: a `bool` register, or a comparison fused into the jump.
#[derive(Copy, Clone)]
enum Cond {
    Reg(Reg),
    Cmp(CmpKind, Reg, Reg),
}

/// Lowers one function.
struct FnLowerer<'a> {
    module: &'a Module,
    func: &'a Function,
    index: &'a Indices<'a>,
    /// Slot of every value used or defined in live code.
    slots: HashMap<Value, Reg>,
    /// Number of uses of each value in live code.
    uses: HashMap<Value, u32>,
    /// Blocks in the layout.
    live: HashSet<Block>,
    nparams: usize,
    consts: Vec<u128>,
    nregs: u32,
    /// The scratch slot (move cycles, ignored call results).
    scratch: Reg,
    code: Vec<Op>,
    arg_pool: Vec<Reg>,
    /// Jumps whose targets are resolved once every block's start is known.
    fixups: Vec<(usize, Block)>,
    block_pc: HashMap<Block, Target>,
    /// Values of the current block whose instruction writes straight into a parameter slot of
    /// the jump target (see [`FnLowerer::coalesce_jump_args`]).
    redirect: HashMap<Value, Reg>,
}

impl<'a> FnLowerer<'a> {
    fn new(
        module: &'a Module,
        func: &'a Function,
        index: &'a Indices<'a>,
    ) -> Result<FnLowerer<'a>, BackendError> {
        let mut l = FnLowerer {
            module,
            func,
            index,
            slots: HashMap::new(),
            uses: HashMap::new(),
            live: func.layout.iter().copied().collect(),
            nparams: 0,
            consts: Vec::new(),
            nregs: 0,
            scratch: 0,
            code: Vec::new(),
            arg_pool: Vec::new(),
            fixups: Vec::new(),
            block_pc: HashMap::new(),
            redirect: HashMap::new(),
        };
        l.assign_slots()?;
        Ok(l)
    }

    fn err(&self, message: impl std::fmt::Display) -> BackendError {
        BackendError::Codegen {
            backend: BACKEND,
            message: format!("@{}: {message}", self.func.name),
        }
    }

    /// The instructions of a laid-out block.
    fn block_insts(&self, block: Block) -> Result<&'a [Inst], BackendError> {
        let func: &'a Function = self.func;
        func.blocks
            .get(block)
            .map(|b| b.insts.as_slice())
            .ok_or_else(|| self.err(format!("unknown {block}")))
    }

    fn block_params(&self, block: Block) -> Result<&'a [Value], BackendError> {
        let func: &'a Function = self.func;
        func.blocks
            .get(block)
            .map(|b| b.params.as_slice())
            .ok_or_else(|| self.err(format!("unknown {block}")))
    }

    fn inst_data(&self, inst: Inst) -> Result<&'a InstData, BackendError> {
        let func: &'a Function = self.func;
        func.insts
            .get(inst)
            .ok_or_else(|| self.err(format!("unknown {inst}")))
    }

    fn ty(&self, v: Value) -> Result<Type, BackendError> {
        self.func
            .values
            .get(v)
            .map(|d| d.ty)
            .ok_or_else(|| self.err(format!("unknown value {v}")))
    }

    fn scalar(&self, v: Value) -> Result<Scalar, BackendError> {
        match self.ty(v)? {
            Type::Scalar(s) => Ok(s),
            t => Err(self.err(format!("operand {v} has pointer type {t}"))),
        }
    }

    fn slot(&self, v: Value) -> Result<Reg, BackendError> {
        if let Some(&r) = self.redirect.get(&v) {
            return Ok(r);
        }
        self.slots
            .get(&v)
            .copied()
            .ok_or_else(|| self.err(format!("value {v} has no slot")))
    }

    /// The slot of an instruction's result.
    fn result(&self, data: &InstData) -> Result<Reg, BackendError> {
        match data.result {
            Some(v) => self.slot(v),
            None => Err(self.err(format!("`{:?}` has no result", data.kind))),
        }
    }

    fn next_slot(&mut self) -> Result<Reg, BackendError> {
        let r = self.nregs;
        self.nregs = r
            .checked_add(1)
            .filter(|n| *n < u32::MAX)
            .ok_or_else(|| self.err("too many values"))?;
        Ok(r)
    }

    /// Numbers the slots: entry parameters, constants (deduplicated), other values, scratch.
    fn assign_slots(&mut self) -> Result<(), BackendError> {
        let func = self.func;
        let entry = *func
            .layout
            .first()
            .ok_or_else(|| self.err("function has no blocks"))?;
        let params = self.block_params(entry)?;
        if params.len() != func.signature.params.len() {
            return Err(self.err("entry block parameters do not match the signature"));
        }
        for &p in params {
            let r = self.next_slot()?;
            self.slots.insert(p, r);
        }
        self.nparams = params.len();

        // Definitions and uses in live code.
        let mut defined: HashSet<Value> = HashSet::new();
        let mut operands: Vec<Value> = Vec::new();
        for &b in &func.layout {
            defined.extend(self.block_params(b)?.iter().copied());
            for &inst in self.block_insts(b)? {
                let data = self.inst_data(inst)?;
                defined.extend(data.result);
                data.kind.for_each_operand(|v| operands.push(v));
            }
        }
        for &v in &operands {
            *self.uses.entry(v).or_insert(0) += 1;
        }

        // Constants, deduplicated by bits; operands defined nowhere (only in malformed IR)
        // read a zero constant.
        let mut const_slot: HashMap<u128, Reg> = HashMap::new();
        let mut const_values: Vec<(Value, u128)> = Vec::new();
        for &b in &func.layout {
            for &inst in self.block_insts(b)? {
                let data = self.inst_data(inst)?;
                if let (InstKind::Const(c), Some(r)) = (&data.kind, data.result) {
                    const_values.push((r, normalize(c.ty, c.bits)));
                }
            }
        }
        for &v in &operands {
            if !defined.contains(&v) {
                const_values.push((v, 0));
            }
        }
        for (v, bits) in const_values {
            if self.slots.contains_key(&v) {
                continue;
            }
            let r = match const_slot.get(&bits) {
                Some(&r) => r,
                None => {
                    let r = self.next_slot()?;
                    const_slot.insert(bits, r);
                    self.consts.push(bits);
                    r
                }
            };
            self.slots.insert(v, r);
        }

        // Every other value defined in live code.
        for &b in &func.layout {
            for &p in self.block_params(b)? {
                if !self.slots.contains_key(&p) {
                    let r = self.next_slot()?;
                    self.slots.insert(p, r);
                }
            }
            for &inst in self.block_insts(b)? {
                if let Some(v) = self.inst_data(inst)?.result {
                    if !self.slots.contains_key(&v) {
                        let r = self.next_slot()?;
                        self.slots.insert(v, r);
                    }
                }
            }
        }
        self.scratch = self.next_slot()?;
        Ok(())
    }

    fn lower(mut self) -> Result<LoweredFunc, BackendError> {
        let func = self.func;
        let mut block_starts = Vec::with_capacity(func.layout.len());
        for (i, &b) in func.layout.iter().enumerate() {
            let pc = self.pc()?;
            self.block_pc.insert(b, pc);
            block_starts.push((b.to_string(), pc));
            self.lower_block(b, func.layout.get(i + 1).copied())?;
        }
        for (at, b) in std::mem::take(&mut self.fixups) {
            let pc = *self
                .block_pc
                .get(&b)
                .ok_or_else(|| self.err(format!("jump to {b}, which is not laid out")))?;
            if let Some(t) = self.code.get_mut(at).and_then(Op::target_mut) {
                *t = pc;
            }
        }
        let entry = func.layout.first().copied();
        let param_masks = match entry {
            Some(e) => self
                .block_params(e)?
                .iter()
                .map(|&p| self.ty(p).map(type_mask))
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        Ok(LoweredFunc {
            name: func.name.clone(),
            code: self.code,
            nregs: self.nregs as usize,
            nparams: self.nparams,
            consts: self.consts,
            param_masks,
            arg_pool: self.arg_pool,
            block_starts,
        })
    }

    /// The offset of the next instruction.
    fn pc(&self) -> Result<Target, BackendError> {
        Target::try_from(self.code.len()).map_err(|_| self.err("function too large"))
    }

    fn lower_block(&mut self, block: Block, next: Option<Block>) -> Result<(), BackendError> {
        let insts = self.block_insts(block)?;
        let (&last, body) = insts
            .split_last()
            .ok_or_else(|| self.err(format!("{block} is empty")))?;
        let term = self.inst_data(last)?;
        self.redirect.clear();
        if let InstKind::Jump(dest) = &term.kind {
            self.coalesce_jump_args(body, dest)?;
        }
        let mut fused: Option<Cond> = None;
        for (k, &inst) in body.iter().enumerate() {
            let data = self.inst_data(inst)?;
            if data.kind.is_terminator() {
                return Err(self.err(format!("{block} has a terminator before its end")));
            }
            if k + 1 == body.len() {
                if let Some(cond) = self.fusable_cmp(data, term)? {
                    fused = Some(cond);
                    continue;
                }
            }
            self.lower_inst(data)?;
        }
        match &term.kind {
            InstKind::Jump(dest) => {
                let moves = self.edge_moves(dest)?;
                self.emit_moves(&moves);
                if Some(dest.block) != next {
                    self.emit_jump_to(dest.block);
                }
            }
            InstKind::Branch {
                cond,
                then_dest,
                else_dest,
            } => {
                let cond = match fused {
                    Some(c) => c,
                    None => Cond::Reg(self.slot(*cond)?),
                };
                self.lower_branch(cond, then_dest, else_dest, next)?;
            }
            InstKind::Return(Some(v)) => {
                let s = self.slot(*v)?;
                self.code.push(Op::Ret(RetVal { s }));
            }
            InstKind::Return(None) => self.code.push(Op::RetVoid(Nothing)),
            _ => return Err(self.err(format!("{block} does not end in a terminator"))),
        }
        Ok(())
    }

    /// Lets instructions of the current block write their results straight into the
    /// parameter slots of the block its final `jump` targets, which removes the copy the jump
    /// would make. An argument `a` for parameter `p` qualifies when `a` is computed in this
    /// block, the jump is its only use, and `p`'s slot is neither read after `a`'s definition
    /// in this block nor the source of another of the jump's copies: then writing `p` early is
    /// unobservable, and the parallel copy of the remaining arguments is unchanged.
    fn coalesce_jump_args(&mut self, body: &[Inst], dest: &BlockCall) -> Result<(), BackendError> {
        if !self.live.contains(&dest.block) {
            return Ok(());
        }
        let params = self.block_params(dest.block)?;
        if params.len() != dest.args.len() {
            return Ok(());
        }
        let mut def_pos: HashMap<Value, usize> = HashMap::new();
        let mut last_read: HashMap<Reg, usize> = HashMap::new();
        for (pos, &inst) in body.iter().enumerate() {
            let data = self.inst_data(inst)?;
            let mut operands = Vec::new();
            data.kind.for_each_operand(|v| operands.push(v));
            for v in operands {
                last_read.insert(self.slot(v)?, pos);
            }
            if let (Some(r), false) = (data.result, matches!(data.kind, InstKind::Const(_))) {
                def_pos.insert(r, pos);
            }
        }
        let arg_slots = dest
            .args
            .iter()
            .map(|&a| self.slot(a))
            .collect::<Result<Vec<_>, _>>()?;
        for (k, (&p, &a)) in params.iter().zip(&dest.args).enumerate() {
            let Some(&pos) = def_pos.get(&a) else {
                continue;
            };
            let p_slot = self.slot(p)?;
            let single_use = self.uses.get(&a).copied() == Some(1);
            let unread_after = last_read.get(&p_slot).is_none_or(|&at| at <= pos);
            let not_a_source = arg_slots
                .iter()
                .enumerate()
                .all(|(j, &s)| j == k || s != p_slot);
            if single_use && unread_after && not_a_source {
                self.redirect.insert(a, p_slot);
            }
        }
        Ok(())
    }

    /// If `data` is an integer comparison whose only use is as the condition of the branch
    /// `term`, the fused condition (and the comparison emits no code of its own).
    fn fusable_cmp(&self, data: &InstData, term: &InstData) -> Result<Option<Cond>, BackendError> {
        let (InstKind::Cmp(op, a, b), Some(r), InstKind::Branch { cond, .. }) =
            (&data.kind, data.result, &term.kind)
        else {
            return Ok(None);
        };
        if *cond != r || self.uses.get(&r).copied() != Some(1) {
            return Ok(None);
        }
        let (kind, swap) = CmpKind::new(*op, self.ty(*a)?);
        if !kind.fusable() {
            return Ok(None);
        }
        let (x, y) = if swap { (*b, *a) } else { (*a, *b) };
        Ok(Some(Cond::Cmp(kind, self.slot(x)?, self.slot(y)?)))
    }

    /// Lowers a two-way branch. One edge (the "far" one) is taken by a conditional jump, the
    /// other follows it; an edge with block arguments gets its moves inline (near) or in an edge block
    /// after the near edge's code (far).
    fn lower_branch(
        &mut self,
        cond: Cond,
        then_dest: &BlockCall,
        else_dest: &BlockCall,
        next: Option<Block>,
    ) -> Result<(), BackendError> {
        let then_moves = self.edge_moves(then_dest)?;
        let else_moves = self.edge_moves(else_dest)?;
        if then_dest == else_dest {
            self.emit_moves(&then_moves);
            if Some(then_dest.block) != next {
                self.emit_jump_to(then_dest.block);
            }
            return Ok(());
        }
        // Jump to `then` when the condition holds, or to `else` unless it holds?
        let far_is_then = (then_moves.is_empty() && !else_moves.is_empty())
            || (then_moves.is_empty()
                && else_moves.is_empty()
                && Some(else_dest.block) == next
                && Some(then_dest.block) != next);
        let (far, far_moves, near, near_moves) = if far_is_then {
            (then_dest, then_moves, else_dest, else_moves)
        } else {
            (else_dest, else_moves, then_dest, then_moves)
        };
        let cond_at = self.code.len();
        let jump = match cond {
            Cond::Reg(c) => {
                let j = CondJmp { c, target: 0 };
                if far_is_then {
                    Op::JumpIf(j)
                } else {
                    Op::JumpUnless(j)
                }
            }
            Cond::Cmp(kind, a, b) => {
                let (kind, a, b) = if far_is_then {
                    match kind.negated() {
                        Some((n, true)) => (n, b, a),
                        Some((n, false)) => (n, a, b),
                        None => return Err(self.err("cannot negate a fused float comparison")),
                    }
                } else {
                    (kind, a, b)
                };
                kind.jump_unless(CmpJmp { a, b, target: 0 })
                    .ok_or_else(|| self.err("comparison is not fusable"))?
            }
        };
        self.code.push(jump);
        let edge_block = !far_moves.is_empty();
        if !edge_block {
            self.fixups.push((cond_at, far.block));
        }
        self.emit_moves(&near_moves);
        if edge_block || Some(near.block) != next {
            self.emit_jump_to(near.block);
        }
        if edge_block {
            let pc = self.pc()?;
            if let Some(t) = self.code.get_mut(cond_at).and_then(Op::target_mut) {
                *t = pc;
            }
            self.emit_moves(&far_moves);
            if Some(far.block) != next {
                self.emit_jump_to(far.block);
            }
        }
        Ok(())
    }

    fn emit_jump_to(&mut self, block: Block) {
        self.fixups.push((self.code.len(), block));
        self.code.push(Op::Jump(Jmp { target: 0 }));
    }

    fn emit_moves(&mut self, moves: &[(Reg, Reg)]) {
        self.code
            .extend(moves.iter().map(|&(d, a)| Op::Mov(R2 { d, a })));
    }

    /// The sequentialised copies that pass an edge's arguments to its block's parameters.
    fn edge_moves(&self, dest: &BlockCall) -> Result<Vec<(Reg, Reg)>, BackendError> {
        if !self.live.contains(&dest.block) {
            return Err(self.err(format!("jump to {}, which is not laid out", dest.block)));
        }
        let params = self.block_params(dest.block)?;
        if params.len() != dest.args.len() {
            return Err(self.err(format!(
                "jump to {} passes the wrong number of arguments",
                dest.block
            )));
        }
        let mut parallel = Vec::with_capacity(params.len());
        for (&p, &a) in params.iter().zip(&dest.args) {
            parallel.push((self.slot(p)?, self.slot(a)?));
        }
        let mut seq = Vec::with_capacity(parallel.len());
        sequentialize(&parallel, self.scratch, &mut seq);
        Ok(seq)
    }

    /// Appends call arguments to the argument pool; returns the start index.
    fn push_args(&mut self, args: &[Value]) -> Result<(u32, u32), BackendError> {
        let start =
            u32::try_from(self.arg_pool.len()).map_err(|_| self.err("too many call arguments"))?;
        for &a in args {
            let r = self.slot(a)?;
            self.arg_pool.push(r);
        }
        let n = u32::try_from(args.len()).map_err(|_| self.err("too many call arguments"))?;
        Ok((start, n))
    }

    fn lower_inst(&mut self, data: &InstData) -> Result<(), BackendError> {
        let op = match &data.kind {
            InstKind::Const(_) => return Ok(()),
            InstKind::Unary(op, a) => {
                let r = R2 {
                    d: self.result(data)?,
                    a: self.slot(*a)?,
                };
                lower_unary(*op, self.scalar(*a)?, r)
            }
            InstKind::Binary(op, a, b) => {
                let r = R3 {
                    d: self.result(data)?,
                    a: self.slot(*a)?,
                    b: self.slot(*b)?,
                };
                lower_binary(*op, self.scalar(*a)?, r)
            }
            InstKind::Fma(a, b, c) => {
                let r = R4 {
                    d: self.result(data)?,
                    a: self.slot(*a)?,
                    b: self.slot(*b)?,
                    c: self.slot(*c)?,
                };
                match self.scalar(*a)? {
                    Scalar::F32 => Op::FFma32(r),
                    Scalar::F64 => Op::FFma64(r),
                    s => Op::FmaGeneric(GenFma { s, r }),
                }
            }
            InstKind::Math(f, a) => Op::Math(GenMath {
                f: *f,
                s: self.scalar(*a)?,
                r: R2 {
                    d: self.result(data)?,
                    a: self.slot(*a)?,
                },
            }),
            InstKind::Math2(f, a, b) => Op::Math2(GenMath2 {
                f: *f,
                s: self.scalar(*a)?,
                r: R3 {
                    d: self.result(data)?,
                    a: self.slot(*a)?,
                    b: self.slot(*b)?,
                },
            }),
            InstKind::Cmp(op, a, b) => {
                let (kind, swap) = CmpKind::new(*op, self.ty(*a)?);
                let (x, y) = if swap { (*b, *a) } else { (*a, *b) };
                kind.value_op(R3 {
                    d: self.result(data)?,
                    a: self.slot(x)?,
                    b: self.slot(y)?,
                })
            }
            InstKind::Cast(a) => {
                let to = match data.result {
                    Some(v) => self.ty(v)?,
                    None => return Err(self.err("cast without result")),
                };
                lower_cast(
                    self.ty(*a)?,
                    to,
                    R2 {
                        d: self.result(data)?,
                        a: self.slot(*a)?,
                    },
                )
            }
            InstKind::Select(c, a, b) => Op::Select(R4 {
                d: self.result(data)?,
                a: self.slot(*c)?,
                b: self.slot(*a)?,
                c: self.slot(*b)?,
            }),
            InstKind::ElemPtr(p, i) => {
                let elem = self.pointee(*p)?;
                let a = AddrOp {
                    d: self.result(data)?,
                    p: self.slot(*p)?,
                    i: self.slot(*i)?,
                    shift: elem_shift(elem),
                };
                match self.ty(*i)? {
                    Type::Scalar(s) if s.is_signed_int() => pick(
                        s.bits(),
                        [Op::ElemPtrS8, Op::ElemPtrS16, Op::ElemPtrS32, Op::ElemPtr],
                        a,
                    ),
                    Type::Scalar(s) if s.is_int() || s == Scalar::Bool => Op::ElemPtr(a),
                    t => return Err(self.err(format!("elem_ptr index of type {t}"))),
                }
            }
            InstKind::Load(p) => {
                let elem = self.pointee(*p)?;
                let r = R2 {
                    d: self.result(data)?,
                    a: self.slot(*p)?,
                };
                if elem == Scalar::Bool {
                    Op::LoadBool(r)
                } else if elem.is_wide() {
                    Op::Load128(r)
                } else {
                    pick(
                        elem.bits(),
                        [Op::Load8, Op::Load16, Op::Load32, Op::Load64],
                        r,
                    )
                }
            }
            InstKind::Store(p, v) => {
                let elem = self.pointee(*p)?;
                let s = StoreOp {
                    p: self.slot(*p)?,
                    v: self.slot(*v)?,
                };
                if elem.is_wide() {
                    Op::Store128(s)
                } else {
                    pick(
                        elem.bits(),
                        [Op::Store8, Op::Store16, Op::Store32, Op::Store64],
                        s,
                    )
                }
            }
            InstKind::AtomicRmw {
                op, ptr, value, order, ..
            } => Op::AtomicRmw(AtomicRmwOp {
                d: self.result(data)?,
                p: self.slot(*ptr)?,
                v: self.slot(*value)?,
                op: *op,
                s: self.pointee(*ptr)?,
                order: *order,
            }),
            InstKind::AtomicCas {
                ptr,
                expected,
                new,
                order,
                ..
            } => Op::AtomicCas(AtomicCasOp {
                d: self.result(data)?,
                p: self.slot(*ptr)?,
                en: self.push_args(&[*expected, *new])?.0,
                s: self.pointee(*ptr)?,
                order: *order,
            }),
            // Blocks of a kernel run on one core each: a block-scoped fence is a device fence.
            InstKind::Fence { order, .. } => Op::Fence(FenceOp { order: *order }),
            InstKind::BoundsCheck {
                addr,
                base,
                bytes,
                trap,
            } => Op::BoundsCheck(CheckOp {
                addr: self.slot(*addr)?,
                base: self.slot(*base)?,
                bytes: self.slot(*bytes)?,
                trap_and_size: (trap.code() & !0xff) | self.pointee(*addr)?.bytes(),
            }),
            InstKind::Call(f, args) => {
                let callee = match (self.index.funcs.get(f), self.module.functions.get(*f)) {
                    (Some(&callee), _) => callee,
                    (None, Some(g)) if g.kind == FuncKind::Kernel => {
                        return Err(BackendError::Unsupported {
                            backend: BACKEND,
                            what: format!("calls to GPU kernel @{} (kernels are launched)", g.name),
                        })
                    }
                    (None, _) => return Err(self.err(format!("call to unknown {f}"))),
                };
                let nparams = self
                    .module
                    .functions
                    .get(*f)
                    .map_or(0, |g| g.signature.params.len());
                if nparams != args.len() {
                    return Err(
                        self.err(format!("call to {f} passes the wrong number of arguments"))
                    );
                }
                let (args, nargs) = self.push_args(args)?;
                let d = match data.result {
                    Some(v) => self.slot(v)?,
                    None => self.scratch,
                };
                Op::Call(CallOp {
                    callee,
                    args,
                    nargs,
                    d,
                })
            }
            InstKind::LocalArray { elem, len } => {
                let bytes = u64::from(*len) * u64::from(elem.bytes());
                let words = u32::try_from(bytes.div_ceil(16))
                    .map_err(|_| self.err("a local array over 64 GiB"))?;
                let d = match data.result {
                    Some(v) => self.slot(v)?,
                    None => self.scratch,
                };
                Op::LocalArray(LocalOp { words, d })
            }
            InstKind::CallExtern(e, args) => {
                let callee = *self
                    .index
                    .externs
                    .get(e)
                    .ok_or_else(|| self.err(format!("call to unknown {e}")))?;
                let nparams = self
                    .module
                    .externs
                    .get(*e)
                    .map_or(0, |x| x.signature.params.len());
                // The trampoline's contract: exactly as many arguments as its signature.
                if nparams != args.len() {
                    return Err(
                        self.err(format!("call to {e} passes the wrong number of arguments"))
                    );
                }
                let (args, nargs) = self.push_args(args)?;
                let d = match data.result {
                    Some(v) => self.slot(v)?,
                    None => self.scratch,
                };
                Op::CallExtern(CallOp {
                    callee,
                    args,
                    nargs,
                    d,
                })
            }
            InstKind::Launch(l) => self.launch(l)?,
            InstKind::GpuIndex(..)
            | InstKind::Barrier
            | InstKind::SharedAlloc { .. }
            | InstKind::DynamicShared { .. }
            | InstKind::DynamicSharedBytes
            | InstKind::LaneId
            | InstKind::Shuffle(..)
            | InstKind::Warp(..)
            | InstKind::BlockVote(..) => {
                return Err(BackendError::Unsupported {
                    backend: BACKEND,
                    what: "GPU operations (kernels run on the CPU after nacre-kernel lowers them to step functions)"
                        .into(),
                })
            }
            InstKind::Jump(_) | InstKind::Branch { .. } | InstKind::Return(_) => {
                return Err(self.err("terminator in the middle of a block"));
            }
        };
        self.code.push(op);
        Ok(())
    }

    /// A kernel launch: the six sizes and the arguments go to the argument pool, the kernel
    /// must have a handle in the module's launch binding.
    fn launch(&mut self, l: &Launch) -> Result<Op, BackendError> {
        if !self.index.bound {
            return Err(unbound_launch("the linkage has none".to_string()));
        }
        let kernel = self
            .module
            .functions
            .get(l.kernel)
            .filter(|k| k.kind == FuncKind::Kernel)
            .ok_or_else(|| self.err(format!("launch of {}, which is not a kernel", l.kernel)))?;
        let Some(&index) = self.index.launches.get(&l.kernel) else {
            return Err(unbound_launch(format!(
                "it has no handle for kernel @{}",
                kernel.name
            )));
        };
        if kernel.signature.params.len() != l.args.len() {
            return Err(self.err(format!(
                "launch of @{} passes the wrong number of arguments",
                kernel.name
            )));
        }
        for &v in l.grid.iter().chain(&l.block).chain(&l.shared_bytes) {
            if self.ty(v)? != Type::U32 {
                return Err(self.err(format!("launch size {v} is not a u32")));
            }
        }
        let (args, _) = self.push_args(&l.grid)?;
        self.push_args(&l.block)?;
        self.push_args(l.shared_bytes.as_slice())?;
        let (_, nargs) = self.push_args(&l.args)?;
        Ok(Op::Launch(LaunchOp {
            kernel: index,
            args,
            nargs,
            shared: l.shared_bytes.is_some(),
        }))
    }

    fn pointee(&self, p: Value) -> Result<Scalar, BackendError> {
        self.ty(p)?
            .pointee()
            .ok_or_else(|| self.err(format!("{p} is not a pointer")))
    }
}
