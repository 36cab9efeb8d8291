//! Translation of one IR function into a Cranelift function.
//!
//! IR blocks become Cranelift blocks with the same parameters, IR values map one to one to
//! Cranelift values, and every operator is expanded into Cranelift instructions that compute
//! exactly what [`nacre_ir::semantics`] defines. Blocks are translated in reverse postorder
//! (so every definition is translated before its uses) and unreachable blocks are skipped.
//!
//! Traps: an integer division or remainder checks its divisor and branches to a cold block
//! that stores the trap code into the function's `status` pointer and returns; after every
//! call of an IR function the status is loaded and a nonzero value branches to a cold block
//! that returns (propagating the callee's trap).
//!
//! Kernel launches: the six sizes and the arguments' bits are stored into one stack slot of
//! the function (sized for its largest launch), and the module's launcher (see
//! [`nacre_backend::LaunchBinding`]) is called through its address with the kernel's handle and the
//! function's own `status` pointer, which is then checked as after an IR call.

use crate::abi;
use crate::runtime;
use crate::target::{codegen_error, BACKEND};
use crate::trampoline::encode;
use cranelift_codegen::entity::packed_option::PackedOption;
use cranelift_codegen::entity::packed_option::ReservedValue;
use cranelift_codegen::entity::{EntityRef, SecondaryMap};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::immediates::{Ieee32, Ieee64};
use cranelift_codegen::ir::{
    self as clif, types, AbiParam, BlockArg, ExtFuncData, ExternalName, InstBuilder, MemFlagsData,
    StackSlotData, StackSlotKind, UserExternalName,
};
use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use nacre_backend::{BackendError, Linkage};
use nacre_ir::analysis::SimdLoop;
use nacre_ir::{
    BinaryOp, Block, BlockCall, CmpOp, ExternId, FuncId, FuncKind, Function, Inst, InstKind,
    Launch, Module, Scalar, Trap, Type, UnaryOp, Value,
};

mod atomic;
mod simd;
mod stack_check;
mod wide;

/// Bytes of the launch's [`nacre_backend::LaunchDims`] (seven `u32`s) at the start of the
/// launch slot, rounded up to 8; the arguments (one `u64` each) follow.
const LAUNCH_DIMS_BYTES: u32 = (nacre_backend::LaunchDims::WORDS as u32 * 4).next_multiple_of(8);

/// What the translation of a function needs to know about the module it belongs to.
pub(crate) struct ModuleEnv<'a> {
    /// The IR module.
    pub module: &'a Module,
    /// Its extern addresses and launcher.
    pub linkage: &'a Linkage,
    /// The JIT module's id of each IR function, indexed by [`FuncId`]; `None` for functions the
    /// backend does not compile (GPU kernels).
    pub func_ids: &'a [Option<cranelift_module::FuncId>],
    /// The native signature of each IR function, indexed by [`FuncId`].
    pub signatures: &'a [clif::Signature],
    /// The target's pointer type.
    pub pointer: clif::Type,
    /// The target's C calling convention.
    pub call_conv: CallConv,
    /// The target description the function builder needs.
    pub frontend: TargetFrontendConfig,
}

/// Buffers reused from one translated function to the next.
#[derive(Default)]
pub(crate) struct LowerScratch {
    values: SecondaryMap<Value, PackedOption<clif::Value>>,
    blocks: SecondaryMap<Block, PackedOption<clif::Block>>,
    visited: SecondaryMap<Block, bool>,
    stack: Vec<(Block, usize)>,
    order: Vec<Block>,
    then_args: Vec<BlockArg>,
    else_args: Vec<BlockArg>,
    call_args: Vec<clif::Value>,
    func_refs: SecondaryMap<FuncId, PackedOption<clif::FuncRef>>,
    extern_sigs: SecondaryMap<ExternId, PackedOption<clif::SigRef>>,
    traps: Vec<(Trap, clif::Block)>,
}

impl LowerScratch {
    fn reset(&mut self) {
        self.values.clear();
        self.blocks.clear();
        self.visited.clear();
        self.stack.clear();
        self.order.clear();
        self.func_refs.clear();
        self.extern_sigs.clear();
        self.traps.clear();
    }
}

/// Translates `func` into `out`, whose signature must already be set to the function's native
/// signature; with `check_stack` (for recursive functions) the function checks the remaining
/// stack on entry (see the `stack_check` submodule). On error `fctx` is reset, so it can be
/// reused.
pub(crate) fn lower_function(
    env: &ModuleEnv<'_>,
    func: &Function,
    check_stack: bool,
    out: &mut clif::Function,
    fctx: &mut FunctionBuilderContext,
    scratch: &mut LowerScratch,
) -> Result<(), BackendError> {
    scratch.reset();
    let entry = func
        .entry()
        .ok_or_else(|| malformed(func, "the function has no blocks"))?;
    let entry_is_target = reverse_postorder(func, entry, scratch);
    let mut lowerer = Lowerer {
        env,
        func,
        b: FunctionBuilder::new(out, fctx),
        s: scratch,
        status: clif::Value::reserved_value(),
        ret: func.signature.ret.map(|ty| abi::clif_type(ty, env.pointer)),
        propagate: None,
        float_fn_sigs: [[None; 2]; 2],
        half_sigs: [None; 2],
        launch_slot: None,
        launch_sig: None,
        simd: SimdLoop::find_all(func),
        current: None,
    };
    match lowerer.run(entry, entry_is_target, check_stack) {
        Ok(()) => {
            lowerer.b.seal_all_blocks();
            lowerer.b.finalize(env.frontend);
            Ok(())
        }
        Err(e) => {
            // The builder stopped halfway: start the next function from a clean context.
            *fctx = FunctionBuilderContext::new();
            Err(e)
        }
    }
}

/// Stores the reverse postorder of the blocks reachable from `entry` in `s.order`; returns
/// whether some block branches to the entry block.
fn reverse_postorder(func: &Function, entry: Block, s: &mut LowerScratch) -> bool {
    let mut entry_is_target = false;
    s.visited[entry] = true;
    s.stack.push((entry, 0));
    while let Some(top) = s.stack.len().checked_sub(1) {
        let (block, next) = s.stack[top];
        let successor = func
            .blocks
            .get(block)
            .and_then(|data| data.insts.last())
            .and_then(|&inst| func.insts.get(inst))
            .and_then(|data| data.kind.successors().nth(next))
            .map(|call| call.block);
        match successor {
            Some(target) => {
                s.stack[top].1 += 1;
                entry_is_target |= target == entry;
                if !s.visited[target] {
                    s.visited[target] = true;
                    s.stack.push((target, 0));
                }
            }
            None => {
                s.order.push(block);
                s.stack.pop();
            }
        }
    }
    s.order.reverse();
    entry_is_target
}

/// The error for a launch the linkage's binding cannot serve.
fn unbound_launch(why: String) -> BackendError {
    BackendError::unbound_launch(BACKEND, &why)
}

fn malformed(func: &Function, what: &str) -> BackendError {
    codegen_error(format!("malformed IR in function @{}: {what}", func.name))
}

/// The translation state of one function.
struct Lowerer<'e, 'f> {
    env: &'e ModuleEnv<'e>,
    func: &'e Function,
    b: FunctionBuilder<'f>,
    s: &'e mut LowerScratch,
    /// The hidden `status: *mut u32` parameter.
    status: clif::Value,
    /// The Cranelift return type, if the function returns a value.
    ret: Option<clif::Type>,
    /// The cold block that returns after a callee trapped, once needed.
    propagate: Option<clif::Block>,
    /// Signatures of the `f32`/`f64` remainder helpers, once imported.
    /// Signatures of the float helpers called through [`Lowerer::float_fn`], by arity (1 or
    /// 2, at 0 and 1) and type (`f32`, `f64`).
    float_fn_sigs: [[Option<clif::SigRef>; 2]; 2],
    /// Signatures of the half-precision conversion helpers (narrowing at 0, widening at 1),
    /// once imported.
    half_sigs: [Option<clif::SigRef>; 2],
    /// The stack slot holding the sizes and arguments of a launch, once needed, and how many
    /// arguments it has room for.
    launch_slot: Option<(clif::StackSlot, usize)>,
    /// The launcher's signature, once imported.
    launch_sig: Option<clif::SigRef>,
    /// The loops to run as SIMD lanes before their scalar iterations ([`simd`]).
    simd: Vec<SimdLoop>,
    /// The IR block being lowered.
    current: Option<Block>,
}

impl Lowerer<'_, '_> {
    fn run(
        &mut self,
        entry: Block,
        entry_is_target: bool,
        check_stack: bool,
    ) -> Result<(), BackendError> {
        let func = self.func;
        let n = func.signature.params.len();
        if func.blocks.get(entry).map(|b| b.params.len()) != Some(n) {
            return Err(malformed(
                func,
                "entry block parameters do not match the signature",
            ));
        }
        let start = self.b.create_block();
        self.b.append_block_params_for_function_params(start);
        let params = self.b.block_params(start);
        self.status = *params
            .last()
            .ok_or_else(|| malformed(func, "missing status parameter"))?;
        if entry_is_target || check_stack {
            // Cranelift's entry block cannot be a branch target: enter through a block of
            // its own that jumps to the IR entry block (after the stack check, if any).
            self.s.then_args.clear();
            self.s
                .then_args
                .extend(params[..n].iter().map(|&v| BlockArg::Value(v)));
            self.b.switch_to_block(start);
            if check_stack {
                self.check_stack();
            }
            let target = self.block(entry)?;
            self.b.ins().jump(target, &self.s.then_args);
        } else {
            self.s.blocks[entry] = start.into();
        }
        for i in 0..self.s.order.len() {
            let block = self.s.order[i];
            self.lower_block(block)?;
        }
        self.emit_exits();
        Ok(())
    }

    /// The Cranelift block of an IR block, created (with its parameters) on first use.
    fn block(&mut self, block: Block) -> Result<clif::Block, BackendError> {
        if let Some(cb) = self.s.blocks[block].expand() {
            return Ok(cb);
        }
        let func = self.func;
        let data = func
            .blocks
            .get(block)
            .ok_or_else(|| malformed(func, "unknown block"))?;
        let cb = self.b.create_block();
        for &p in &data.params {
            let ty = abi::clif_type(self.ty(p)?, self.env.pointer);
            self.b.append_block_param(cb, ty);
        }
        self.s.blocks[block] = cb.into();
        Ok(cb)
    }

    fn lower_block(&mut self, block: Block) -> Result<(), BackendError> {
        let func = self.func;
        let cb = self.block(block)?;
        self.b.switch_to_block(cb);
        self.current = Some(block);
        let data = &func.blocks[block];
        for (i, &p) in data.params.iter().enumerate() {
            let v = *self
                .b
                .block_params(cb)
                .get(i)
                .ok_or_else(|| malformed(func, "block parameter count mismatch"))?;
            self.s.values[p] = v.into();
        }
        let mut terminated = false;
        for &inst in &data.insts {
            if terminated {
                return Err(malformed(func, "instruction after a terminator"));
            }
            terminated = self.lower_inst(inst)?;
        }
        if !terminated {
            return Err(malformed(func, &format!("{block} has no terminator")));
        }
        Ok(())
    }

    /// The IR type of a value.
    fn ty(&self, v: Value) -> Result<Type, BackendError> {
        self.func
            .values
            .get(v)
            .map(|d| d.ty)
            .ok_or_else(|| malformed(self.func, "unknown value"))
    }

    /// The Cranelift value of an IR value.
    fn value(&self, v: Value) -> Result<clif::Value, BackendError> {
        self.s.values[v]
            .expand()
            .ok_or_else(|| malformed(self.func, &format!("{v} is used before its definition")))
    }

    /// The Cranelift value and IR type of an operand.
    fn operand(&self, v: Value) -> Result<(clif::Value, Type), BackendError> {
        Ok((self.value(v)?, self.ty(v)?))
    }

    /// Translates one instruction; returns whether it was a terminator.
    fn lower_inst(&mut self, inst: Inst) -> Result<bool, BackendError> {
        let func = self.func;
        let data = func
            .insts
            .get(inst)
            .ok_or_else(|| malformed(func, "unknown instruction"))?;
        let result_ty = data.result.map(|r| self.ty(r)).transpose()?;
        if let Some(s) = nacre_ir::transform::widen_half::unwidened_half(func, &data.kind) {
            return Err(BackendError::Unsupported {
                backend: BACKEND,
                what: format!(
                    "{s} arithmetic in @{} (widen it to f32 first: nacre_ir::transform::widen_half)",
                    func.name
                ),
            });
        }
        let value = match &data.kind {
            InstKind::Const(c) => Some(self.constant(c.ty, c.bits)),
            InstKind::Unary(op, a) => {
                let (x, ty) = self.operand(*a)?;
                Some(self.unary(*op, ty, x))
            }
            InstKind::Binary(op, a, b) => {
                let (x, ty) = self.operand(*a)?;
                let y = self.value(*b)?;
                Some(self.binary(*op, ty, x, y))
            }
            InstKind::Fma(a, b, c) => {
                let (x, ty) = self.operand(*a)?;
                let (y, z) = (self.value(*b)?, self.value(*c)?);
                Some(self.fma(ty, x, y, z))
            }
            InstKind::Math(f, a) => {
                let (x, ty) = self.operand(*a)?;
                let addr = runtime::math_fn(*f, ty == Type::F64);
                Some(self.float_fn(ty, addr, &[x]))
            }
            InstKind::Math2(f, a, b) => {
                let (x, ty) = self.operand(*a)?;
                let y = self.value(*b)?;
                let addr = runtime::math_fn2(*f, ty == Type::F64);
                Some(self.float_fn(ty, addr, &[x, y]))
            }
            InstKind::Cmp(op, a, b) => {
                let (x, ty) = self.operand(*a)?;
                let y = self.value(*b)?;
                Some(self.compare(*op, ty, x, y))
            }
            InstKind::Cast(a) => {
                let (x, from) = self.operand(*a)?;
                let to = result_ty.ok_or_else(|| malformed(func, "cast without a result"))?;
                Some(self.cast(x, from, to))
            }
            InstKind::Select(c, a, b) => {
                let (c, x, y) = (self.value(*c)?, self.value(*a)?, self.value(*b)?);
                let wide = result_ty.and_then(Type::scalar).is_some_and(Scalar::is_wide);
                Some(if wide {
                    self.wide_select(c, x, y)
                } else {
                    self.b.ins().select(c, x, y)
                })
            }
            InstKind::ElemPtr(p, i) => {
                let (ptr, ptr_ty) = self.operand(*p)?;
                let (index, index_ty) = self.operand(*i)?;
                Some(self.elem_ptr(ptr, ptr_ty, index, index_ty))
            }
            InstKind::Load(p) => {
                let ptr = self.value(*p)?;
                let ty = result_ty.ok_or_else(|| malformed(func, "load without a result"))?;
                let ty = abi::clif_type(ty, self.env.pointer);
                Some(self.b.ins().load(ty, MemFlagsData::new(), ptr, 0))
            }
            InstKind::Store(p, v) => {
                let (ptr, x) = (self.value(*p)?, self.value(*v)?);
                self.b.ins().store(MemFlagsData::new(), x, ptr, 0);
                None
            }
            InstKind::AtomicRmw { op, ptr, value, .. } => {
                let s = self.ty(*value)?.scalar().ok_or_else(|| malformed(func, "a pointer atomic"))?;
                let (p, x) = (self.value(*ptr)?, self.value(*value)?);
                Some(self.atomic_rmw(*op, s, p, x))
            }
            InstKind::AtomicCas {
                ptr, expected, new, ..
            } => {
                let (p, e, n) = (self.value(*ptr)?, self.value(*expected)?, self.value(*new)?);
                Some(self.atomic_cas(p, e, n))
            }
            InstKind::Fence { .. } => {
                self.b.ins().fence();
                None
            }
            InstKind::BoundsCheck {
                addr,
                base,
                bytes,
                trap,
            } => {
                let size = func.values[*addr]
                    .ty
                    .pointee()
                    .ok_or_else(|| malformed(func, "bounds check of a non-pointer"))?
                    .bytes();
                let (addr, base, bytes) =
                    (self.value(*addr)?, self.value(*base)?, self.value(*bytes)?);
                self.bounds_check(addr, base, bytes, size, *trap);
                None
            }
            InstKind::Call(callee, args) => self.call(*callee, args)?,
            InstKind::CallExtern(ext, args) => self.call_extern(*ext, args)?,
            InstKind::Launch(l) => {
                self.launch(l)?;
                None
            }
            InstKind::LocalArray { elem, len } => Some(self.local_array(*elem, *len)?),
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
            InstKind::Jump(dest) => {
                let target = self.block_call(dest, true)?;
                let entered = self
                    .simd
                    .iter()
                    .position(|l| Some(l.preheader) == self.current && l.header == dest.block);
                if let Some(k) = entered {
                    let plan = self.simd.swap_remove(k);
                    self.simd_loop(&plan)?;
                }
                self.b.ins().jump(target, &self.s.then_args);
                return Ok(true);
            }
            InstKind::Branch {
                cond,
                then_dest,
                else_dest,
            } => {
                let c = self.value(*cond)?;
                let then_block = self.block_call(then_dest, true)?;
                let else_block = self.block_call(else_dest, false)?;
                self.b.ins().brif(
                    c,
                    then_block,
                    &self.s.then_args,
                    else_block,
                    &self.s.else_args,
                );
                return Ok(true);
            }
            InstKind::Return(v) => {
                match v {
                    Some(v) => {
                        let x = self.value(*v)?;
                        self.b.ins().return_(&[x]);
                    }
                    None => {
                        self.b.ins().return_(&[]);
                    }
                }
                return Ok(true);
            }
        };
        if let Some(r) = data.result {
            let v = value.ok_or_else(|| malformed(func, "instruction result without a value"))?;
            self.s.values[r] = v.into();
        }
        Ok(false)
    }

    /// Resolves a branch target and collects its arguments into `then_args` or `else_args`.
    fn block_call(&mut self, dest: &BlockCall, then: bool) -> Result<clif::Block, BackendError> {
        let func = self.func;
        let target = self.block(dest.block)?;
        if func.blocks[dest.block].params.len() != dest.args.len() {
            return Err(malformed(
                func,
                &format!("wrong number of arguments for {}", dest.block),
            ));
        }
        let mut args = std::mem::take(if then {
            &mut self.s.then_args
        } else {
            &mut self.s.else_args
        });
        args.clear();
        for &a in &dest.args {
            args.push(BlockArg::Value(self.value(a)?));
        }
        *(if then {
            &mut self.s.then_args
        } else {
            &mut self.s.else_args
        }) = args;
        Ok(target)
    }

    /// An integer constant of Cranelift type `ty` from zero-extended bits.
    fn iconst(&mut self, ty: clif::Type, bits: u64) -> clif::Value {
        if ty == types::I128 {
            return self.wide_const(u128::from(bits));
        }
        let bits = if ty.bits() < 64 {
            bits & ((1u64 << ty.bits()) - 1)
        } else {
            bits
        };
        self.b.ins().iconst(ty, bits as i64)
    }

    fn constant(&mut self, ty: Type, bits: u128) -> clif::Value {
        let bits = nacre_ir::semantics::normalize(ty, bits);
        match ty {
            Type::Scalar(Scalar::F32) => self.b.ins().f32const(Ieee32::with_bits(bits as u32)),
            Type::Scalar(Scalar::F64) => self.b.ins().f64const(Ieee64::with_bits(bits as u64)),
            Type::Scalar(s) if s.is_wide() => self.wide_const(bits),
            Type::Scalar(s) => self.iconst(abi::scalar_type(s), bits as u64),
            Type::Ptr(..) => self.iconst(self.env.pointer, bits as u64),
        }
    }

    fn float_zero(&mut self, s: Scalar) -> clif::Value {
        if s == Scalar::F32 {
            self.b.ins().f32const(0.0)
        } else {
            self.b.ins().f64const(0.0)
        }
    }

    fn unary(&mut self, op: UnaryOp, ty: Type, x: clif::Value) -> clif::Value {
        let Type::Scalar(s) = ty else { return x };
        let ins = self.b.ins();
        if s == Scalar::Bool {
            return match op {
                UnaryOp::Not => ins.bxor_imm_u(x, 1),
                _ => x,
            };
        }
        if s.is_int() && op.is_bit_op() {
            return self.bit_op(op, s, x);
        }
        if s == Scalar::I128 && op == UnaryOp::Abs {
            return self.wide_abs(x);
        }
        let ins = self.b.ins();
        if s.is_int() {
            return match op {
                UnaryOp::Neg => ins.ineg(x),
                UnaryOp::Not => ins.bnot(x),
                UnaryOp::Abs if s.is_signed_int() => ins.iabs(x),
                _ => x,
            };
        }
        match op {
            UnaryOp::Neg => ins.fneg(x),
            UnaryOp::Abs => ins.fabs(x),
            UnaryOp::Sqrt => ins.sqrt(x),
            UnaryOp::Floor => ins.floor(x),
            UnaryOp::Ceil => ins.ceil(x),
            UnaryOp::Trunc => ins.trunc(x),
            UnaryOp::Round => {
                let addr = runtime::round_fn(s == Scalar::F64);
                self.float_fn(ty, addr, &[x])
            }
            _ => x,
        }
    }

    /// An integer bit operation: on 32 and 64 bits Cranelift's own instruction; narrower types
    /// work on the value zero-extended to 32 bits and adjust the result.
    fn bit_op(&mut self, op: UnaryOp, s: Scalar, x: clif::Value) -> clif::Value {
        let w = s.bits();
        if w >= 32 {
            let ins = self.b.ins();
            return match op {
                UnaryOp::CountOnes => ins.popcnt(x),
                UnaryOp::LeadingZeros => ins.clz(x),
                UnaryOp::TrailingZeros => ins.ctz(x),
                UnaryOp::SwapBytes => ins.bswap(x),
                _ => ins.bitrev(x),
            };
        }
        let narrow = abi::scalar_type(s);
        let wide = self.b.ins().uextend(types::I32, x);
        let r = match op {
            UnaryOp::CountOnes => self.b.ins().popcnt(wide),
            UnaryOp::LeadingZeros => {
                let n = self.b.ins().clz(wide);
                self.b.ins().iadd_imm_s(n, -(32 - i64::from(w)))
            }
            UnaryOp::TrailingZeros => {
                // A one just above the type's bits makes zero count as the width.
                let guarded = self.b.ins().bor_imm_u(wide, 1i64 << w);
                self.b.ins().ctz(guarded)
            }
            UnaryOp::SwapBytes if w == 8 => wide,
            UnaryOp::SwapBytes => {
                let r = self.b.ins().bswap(wide);
                self.b.ins().ushr_imm_u(r, 16)
            }
            _ => {
                let r = self.b.ins().bitrev(wide);
                self.b.ins().ushr_imm_u(r, 32 - i64::from(w))
            }
        };
        self.b.ins().ireduce(narrow, r)
    }

    fn binary(&mut self, op: BinaryOp, ty: Type, x: clif::Value, y: clif::Value) -> clif::Value {
        let Type::Scalar(s) = ty else { return x };
        if s == Scalar::Bool {
            let ins = self.b.ins();
            return match op {
                BinaryOp::And | BinaryOp::Mul | BinaryOp::Min => ins.band(x, y),
                BinaryOp::Or | BinaryOp::Max => ins.bor(x, y),
                BinaryOp::Xor | BinaryOp::Add | BinaryOp::Sub => ins.bxor(x, y),
                BinaryOp::Div
                | BinaryOp::Rem
                | BinaryOp::Shl
                | BinaryOp::Shr
                | BinaryOp::Copysign => x,
            };
        }
        if s.is_int() {
            let signed = s.is_signed_int();
            if matches!(op, BinaryOp::Div | BinaryOp::Rem) {
                return self.int_div(op, s, x, y);
            }
            if s.is_wide() && matches!(op, BinaryOp::Min | BinaryOp::Max) {
                return self.wide_min_max(op == BinaryOp::Max, s, x, y);
            }
            let ins = self.b.ins();
            return match op {
                BinaryOp::Add => ins.iadd(x, y),
                BinaryOp::Sub => ins.isub(x, y),
                BinaryOp::Mul => ins.imul(x, y),
                BinaryOp::And => ins.band(x, y),
                BinaryOp::Or => ins.bor(x, y),
                BinaryOp::Xor => ins.bxor(x, y),
                // Cranelift masks shift amounts to the type's width, as Rust's wrapping shifts.
                BinaryOp::Shl => ins.ishl(x, y),
                BinaryOp::Shr if signed => ins.sshr(x, y),
                BinaryOp::Shr => ins.ushr(x, y),
                BinaryOp::Min if signed => ins.smin(x, y),
                BinaryOp::Min => ins.umin(x, y),
                BinaryOp::Max if signed => ins.smax(x, y),
                BinaryOp::Max => ins.umax(x, y),
                BinaryOp::Div | BinaryOp::Rem | BinaryOp::Copysign => x,
            };
        }
        match op {
            BinaryOp::Add => self.b.ins().fadd(x, y),
            BinaryOp::Sub => self.b.ins().fsub(x, y),
            BinaryOp::Mul => self.b.ins().fmul(x, y),
            BinaryOp::Div => self.b.ins().fdiv(x, y),
            BinaryOp::Rem => {
                let addr = runtime::fmod_fn(s == Scalar::F64);
                self.float_fn(ty, addr, &[x, y])
            }
            BinaryOp::Copysign => self.b.ins().fcopysign(x, y),
            BinaryOp::Min => self.float_min_max(false, x, y),
            BinaryOp::Max => self.float_min_max(true, x, y),
            BinaryOp::And | BinaryOp::Or | BinaryOp::Xor | BinaryOp::Shl | BinaryOp::Shr => x,
        }
    }

    /// Integer division or remainder: traps on a zero divisor; `MIN / -1` wraps to `MIN` and
    /// `MIN % -1` is 0 instead of faulting (the divisor -1 is replaced by 1 and the quotient
    /// negated).
    fn int_div(&mut self, op: BinaryOp, s: Scalar, x: clif::Value, y: clif::Value) -> clif::Value {
        let trap = if op == BinaryOp::Div {
            Trap::DivisionByZero
        } else {
            Trap::RemainderByZero
        };
        let trap_block = self.trap_block(trap);
        let cont = self.b.create_block();
        let nonzero = if s.is_wide() {
            let zero = self.wide_const(0);
            self.b.ins().icmp(IntCC::NotEqual, y, zero)
        } else {
            y
        };
        self.b.ins().brif(nonzero, cont, &[], trap_block, &[]);
        self.b.switch_to_block(cont);
        if s.is_wide() {
            return self.wide_div(op, s, x, y);
        }
        if !s.is_signed_int() {
            return match op {
                BinaryOp::Div => self.b.ins().udiv(x, y),
                _ => self.b.ins().urem(x, y),
            };
        }
        let ty = abi::scalar_type(s);
        let minus_one = self.b.ins().icmp_imm_s(IntCC::Equal, y, -1);
        let one = self.iconst(ty, 1);
        let divisor = self.b.ins().select(minus_one, one, y);
        match op {
            BinaryOp::Div => {
                let quotient = self.b.ins().sdiv(x, divisor);
                let negated = self.b.ins().ineg(x);
                self.b.ins().select(minus_one, negated, quotient)
            }
            _ => self.b.ins().srem(x, divisor),
        }
    }

    /// Rust's `f32::min`/`f64::min` (or `max`): a NaN operand is ignored.
    fn float_min_max(&mut self, max: bool, x: clif::Value, y: clif::Value) -> clif::Value {
        let r = if max {
            self.b.ins().fmax(x, y)
        } else {
            self.b.ins().fmin(x, y)
        };
        let x_nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
        let r = self.b.ins().select(x_nan, y, r);
        let y_nan = self.b.ins().fcmp(FloatCC::Unordered, y, y);
        self.b.ins().select(y_nan, x, r)
    }

    /// Widens half type `s` (in its `i16` storage) to `f32`, or with `!widen` rounds an `f32`
    /// to it, through the runtime's helper.
    fn half_conversion(&mut self, s: Scalar, widen: bool, x: clif::Value) -> clif::Value {
        let sig = match self.half_sigs[usize::from(widen)] {
            Some(sig) => sig,
            None => {
                let half = AbiParam::new(types::I16).uext();
                let single = AbiParam::new(types::F32);
                let mut sig = clif::Signature::new(self.env.call_conv);
                let (param, ret) = if widen {
                    (half, single)
                } else {
                    (single, half)
                };
                sig.params.push(param);
                sig.returns.push(ret);
                let sig = self.b.import_signature(sig);
                self.half_sigs[usize::from(widen)] = Some(sig);
                sig
            }
        };
        let callee = self.iconst(self.env.pointer, runtime::half_conversion(s, widen) as u64);
        let call = self.b.ins().call_indirect(sig, callee, &[x]);
        self.b.inst_results(call)[0]
    }

    /// A call of a Rust float helper at `addr` (`extern "C" fn(T, ..) -> T` over the operands'
    /// type `ty`, `f32` or `f64`) with one or two arguments.
    fn float_fn(&mut self, ty: Type, addr: usize, args: &[clif::Value]) -> clif::Value {
        let f64 = ty == Type::F64;
        let clif_ty = if f64 { types::F64 } else { types::F32 };
        let slot = &mut self.float_fn_sigs[args.len() - 1][usize::from(f64)];
        let sig = match *slot {
            Some(sig) => sig,
            None => {
                let mut sig = clif::Signature::new(self.env.call_conv);
                sig.params
                    .extend(args.iter().map(|_| AbiParam::new(clif_ty)));
                sig.returns.push(AbiParam::new(clif_ty));
                let sig = self.b.import_signature(sig);
                self.float_fn_sigs[args.len() - 1][usize::from(f64)] = Some(sig);
                sig
            }
        };
        let callee = self.iconst(self.env.pointer, addr as u64);
        let call = self.b.ins().call_indirect(sig, callee, args);
        self.b.inst_results(call)[0]
    }

    fn fma(&mut self, ty: Type, x: clif::Value, y: clif::Value, z: clif::Value) -> clif::Value {
        match ty {
            Type::Scalar(s) if s.is_float() => self.b.ins().fma(x, y, z),
            Type::Scalar(Scalar::Bool) => {
                let p = self.b.ins().band(x, y);
                self.b.ins().bxor(p, z)
            }
            _ => {
                let p = self.b.ins().imul(x, y);
                self.b.ins().iadd(p, z)
            }
        }
    }

    fn compare(&mut self, op: CmpOp, ty: Type, x: clif::Value, y: clif::Value) -> clif::Value {
        match ty {
            Type::Scalar(s) if s.is_float() => {
                let cc = match op {
                    CmpOp::Eq => FloatCC::Equal,
                    CmpOp::Ne => FloatCC::NotEqual,
                    CmpOp::Lt => FloatCC::LessThan,
                    CmpOp::Le => FloatCC::LessThanOrEqual,
                    CmpOp::Gt => FloatCC::GreaterThan,
                    CmpOp::Ge => FloatCC::GreaterThanOrEqual,
                };
                self.b.ins().fcmp(cc, x, y)
            }
            _ => {
                let signed = matches!(ty, Type::Scalar(s) if s.is_signed_int());
                let cc = match (op, signed) {
                    (CmpOp::Eq, _) => IntCC::Equal,
                    (CmpOp::Ne, _) => IntCC::NotEqual,
                    (CmpOp::Lt, true) => IntCC::SignedLessThan,
                    (CmpOp::Le, true) => IntCC::SignedLessThanOrEqual,
                    (CmpOp::Gt, true) => IntCC::SignedGreaterThan,
                    (CmpOp::Ge, true) => IntCC::SignedGreaterThanOrEqual,
                    (CmpOp::Lt, false) => IntCC::UnsignedLessThan,
                    (CmpOp::Le, false) => IntCC::UnsignedLessThanOrEqual,
                    (CmpOp::Gt, false) => IntCC::UnsignedGreaterThan,
                    (CmpOp::Ge, false) => IntCC::UnsignedGreaterThanOrEqual,
                };
                self.b.ins().icmp(cc, x, y)
            }
        }
    }

    /// A conversion with Rust `as` semantics. Pointers convert as pointer-sized unsigned
    /// integers; `bool` converts like a `u8` holding 0 or 1, and to `bool` means `!= 0`.
    fn cast(&mut self, x: clif::Value, from: Type, to: Type) -> clif::Value {
        if from.is_ptr() && to.is_ptr() {
            return x;
        }
        let pointer = abi::pointer_scalar(self.env.pointer);
        let fs = from.scalar().unwrap_or(pointer);
        let ts = to.scalar().unwrap_or(pointer);
        if fs == ts {
            return x;
        }
        if fs.is_half() {
            let wide = self.half_conversion(fs, true, x);
            return self.cast(wide, Type::F32, to);
        }
        if ts.is_half() {
            let wide = self.cast(x, from, Type::F32);
            return self.half_conversion(ts, false, wide);
        }
        if ts == Scalar::Bool {
            return if fs.is_float() {
                let zero = self.float_zero(fs);
                self.b.ins().fcmp(FloatCC::NotEqual, x, zero)
            } else if fs.is_wide() {
                let zero = self.wide_const(0);
                self.b.ins().icmp(IntCC::NotEqual, x, zero)
            } else {
                self.b.ins().icmp_imm_u(IntCC::NotEqual, x, 0)
            };
        }
        let fs = if fs == Scalar::Bool { Scalar::U8 } else { fs };
        let tty = abi::scalar_type(ts);
        match (fs.is_float(), ts.is_float()) {
            (false, false) => self.resize_int(x, fs, ts),
            (false, true) if fs.is_wide() => self.wide_to_float(x, fs, tty),
            (true, false) if ts.is_wide() => {
                let from = abi::scalar_type(fs);
                self.float_to_wide(x, from, ts)
            }
            (false, true) => {
                // Convert from at least 32 bits: not every target converts narrower registers.
                let (x, fs) = match fs {
                    Scalar::I8 | Scalar::I16 => (self.b.ins().sextend(types::I32, x), Scalar::I32),
                    Scalar::U8 | Scalar::U16 => (self.b.ins().uextend(types::I32, x), Scalar::U32),
                    _ => (x, fs),
                };
                if fs.is_signed_int() {
                    self.b.ins().fcvt_from_sint(tty, x)
                } else {
                    self.b.ins().fcvt_from_uint(tty, x)
                }
            }
            (true, true) if fs.bits() < ts.bits() => self.b.ins().fpromote(tty, x),
            (true, true) => self.b.ins().fdemote(tty, x),
            (true, false) => self.float_to_int(x, ts),
        }
    }

    /// Integer to integer: truncate, or extend by the source's signedness.
    fn resize_int(&mut self, x: clif::Value, fs: Scalar, ts: Scalar) -> clif::Value {
        let tty = abi::scalar_type(ts);
        match fs.bits().cmp(&ts.bits()) {
            std::cmp::Ordering::Equal => x,
            std::cmp::Ordering::Greater => self.b.ins().ireduce(tty, x),
            std::cmp::Ordering::Less if fs.is_signed_int() => self.b.ins().sextend(tty, x),
            std::cmp::Ordering::Less => self.b.ins().uextend(tty, x),
        }
    }

    /// Float to integer, saturating, NaN to 0. Targets narrower than 32 bits convert to 32 bits
    /// and clamp to their range (Cranelift converts to 32 or 64 bits only).
    fn float_to_int(&mut self, x: clif::Value, ts: Scalar) -> clif::Value {
        let tty = abi::scalar_type(ts);
        let signed = ts.is_signed_int();
        if ts.bits() >= 32 {
            return if signed {
                self.b.ins().fcvt_to_sint_sat(tty, x)
            } else {
                self.b.ins().fcvt_to_uint_sat(tty, x)
            };
        }
        let bits = ts.bits();
        let wide = if signed {
            let w = self.b.ins().fcvt_to_sint_sat(types::I32, x);
            let min = self.iconst(types::I32, (-(1i64 << (bits - 1))) as u64);
            let max = self.iconst(types::I32, (1u64 << (bits - 1)) - 1);
            let w = self.b.ins().smax(w, min);
            self.b.ins().smin(w, max)
        } else {
            let w = self.b.ins().fcvt_to_uint_sat(types::I32, x);
            let max = self.iconst(types::I32, (1u64 << bits) - 1);
            self.b.ins().umin(w, max)
        };
        self.b.ins().ireduce(tty, wide)
    }

    /// `ptr + index * size_of(elem)`; signed indices are sign-extended.
    fn elem_ptr(
        &mut self,
        ptr: clif::Value,
        ptr_ty: Type,
        index: clif::Value,
        index_ty: Type,
    ) -> clif::Value {
        let pointer = self.env.pointer;
        let size = ptr_ty.pointee().map_or(1, |s| s.bytes());
        let index_bits = abi::clif_type(index_ty, pointer).bits();
        let signed = matches!(index_ty, Type::Scalar(s) if s.is_signed_int());
        let index = match index_bits.cmp(&pointer.bits()) {
            std::cmp::Ordering::Equal => index,
            std::cmp::Ordering::Greater => self.b.ins().ireduce(pointer, index),
            std::cmp::Ordering::Less if signed => self.b.ins().sextend(pointer, index),
            std::cmp::Ordering::Less => self.b.ins().uextend(pointer, index),
        };
        let offset = match size {
            1 => index,
            _ => self
                .b
                .ins()
                .ishl_imm_u(index, i64::from(size.trailing_zeros())),
        };
        self.b.ins().iadd(ptr, offset)
    }

    /// A call of an IR function: the status pointer is passed on and checked afterwards.
    fn call(
        &mut self,
        callee: FuncId,
        args: &[Value],
    ) -> Result<Option<clif::Value>, BackendError> {
        let func_ref = self.func_ref(callee)?;
        let mut call_args = std::mem::take(&mut self.s.call_args);
        call_args.clear();
        for &a in args {
            call_args.push(self.value(a)?);
        }
        call_args.push(self.status);
        let call = self.b.ins().call(func_ref, &call_args);
        self.s.call_args = call_args;
        let result = self.b.inst_results(call).first().copied();
        self.check_status();
        Ok(result)
    }

    /// After a call that may have trapped: loads the status and returns (propagating the
    /// trap) when it is nonzero; continues in a new block otherwise.
    fn check_status(&mut self) {
        let status = self
            .b
            .ins()
            .load(types::I32, MemFlagsData::trusted(), self.status, 0);
        let propagate = match self.propagate {
            Some(block) => block,
            None => {
                let block = self.b.create_block();
                self.propagate = Some(block);
                block
            }
        };
        let cont = self.b.create_block();
        self.b.ins().brif(status, propagate, &[], cont, &[]);
        self.b.switch_to_block(cont);
    }

    /// A kernel launch: stores the sizes and the arguments' bits into the launch slot, calls
    /// the module's launcher with the kernel's handle and this function's status pointer, and
    /// propagates a failed launch like a trap of a callee.
    fn launch(&mut self, l: &Launch) -> Result<(), BackendError> {
        let func = self.func;
        let module = self.env.module;
        let binding = self
            .env
            .linkage
            .launch
            .as_ref()
            .ok_or_else(|| unbound_launch("the linkage has none".to_string()))?;
        let kernel = module
            .functions
            .get(l.kernel)
            .filter(|k| k.kind == FuncKind::Kernel)
            .ok_or_else(|| malformed(func, &format!("{} is not a kernel", l.kernel)))?;
        let handle = *binding.handles.get(&l.kernel).ok_or_else(|| {
            unbound_launch(format!("it has no handle for kernel @{}", kernel.name))
        })?;
        if kernel.signature.params.len() != l.args.len() {
            return Err(malformed(
                func,
                &format!(
                    "launch of @{} with the wrong number of arguments",
                    kernel.name
                ),
            ));
        }
        let pointer = self.env.pointer;
        let (slot, capacity) = self.launch_slot()?;
        if l.args.len() > capacity {
            return Err(malformed(func, "a launch outside the layout"));
        }
        let base = self.b.ins().stack_addr(pointer, slot, 0);
        let mut offset = 0i32;
        for &v in l.grid.iter().chain(&l.block) {
            let (x, ty) = self.operand(v)?;
            if ty != Type::U32 {
                return Err(malformed(func, &format!("launch size {v} is not a u32")));
            }
            self.b.ins().store(MemFlagsData::trusted(), x, base, offset);
            offset += 4;
        }
        let shared = match l.shared_bytes {
            Some(v) => match self.operand(v)? {
                (x, Type::U32) => x,
                _ => return Err(malformed(func, &format!("launch size {v} is not a u32"))),
            },
            None => self.iconst(clif::types::I32, 0),
        };
        self.b
            .ins()
            .store(MemFlagsData::trusted(), shared, base, offset);
        offset = LAUNCH_DIMS_BYTES as i32;
        for &v in &l.args {
            let (x, ty) = self.operand(v)?;
            let bits = encode(&mut self.b, x, ty, pointer);
            self.b
                .ins()
                .store(MemFlagsData::trusted(), bits, base, offset);
            // Cannot overflow: the slot's size, which bounds the offsets, fits in an i32.
            offset += 8;
        }
        let args = self
            .b
            .ins()
            .stack_addr(pointer, slot, LAUNCH_DIMS_BYTES as i32);
        let sig = match self.launch_sig {
            Some(sig) => sig,
            None => {
                let mut sig = clif::Signature::new(self.env.call_conv);
                sig.params.extend([AbiParam::new(pointer); 4]);
                let sig = self.b.import_signature(sig);
                self.launch_sig = Some(sig);
                sig
            }
        };
        let handle = self.iconst(pointer, handle as u64);
        let launcher = self.iconst(pointer, binding.launcher as usize as u64);
        self.b
            .ins()
            .call_indirect(sig, launcher, &[handle, base, args, self.status]);
        self.check_status();
        Ok(())
    }

    /// A zeroed stack slot of `len` elements of `elem` (an [`InstKind::LocalArray`]): its
    /// address.
    fn local_array(&mut self, elem: Scalar, len: u32) -> Result<clif::Value, BackendError> {
        let bytes = u32::try_from(u64::from(len) * u64::from(elem.bytes()))
            .map_err(|_| malformed(self.func, "a local array over 4 GiB"))?;
        let align_shift = nacre_ir::LOCAL_ARRAY_ALIGN.trailing_zeros() as u8;
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            bytes,
            align_shift,
        ));
        let addr = self.b.ins().stack_addr(self.env.pointer, slot, 0);
        let mut sig = clif::Signature::new(self.env.call_conv);
        sig.params.push(AbiParam::new(self.env.pointer));
        sig.params.push(AbiParam::new(types::I64));
        let sig = self.b.import_signature(sig);
        let callee = self.iconst(self.env.pointer, runtime::zero_fn() as u64);
        let n = self.iconst(types::I64, u64::from(bytes));
        self.b.ins().call_indirect(sig, callee, &[addr, n]);
        Ok(addr)
    }

    /// The function's launch slot and its capacity in arguments, created on first use with
    /// room for the sizes and the arguments of the largest launch in the layout.
    fn launch_slot(&mut self) -> Result<(clif::StackSlot, usize), BackendError> {
        if let Some(slot) = self.launch_slot {
            return Ok(slot);
        }
        let func = self.func;
        let max_args = func
            .live_insts()
            .filter_map(|d| match &d.kind {
                InstKind::Launch(l) => Some(l.args.len()),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let size = u32::try_from(max_args)
            .ok()
            .and_then(|n| n.checked_mul(8))
            .and_then(|n| n.checked_add(LAUNCH_DIMS_BYTES))
            .filter(|&n| i32::try_from(n).is_ok())
            .ok_or_else(|| malformed(func, "too many kernel arguments"))?;
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            size,
            3,
        ));
        self.launch_slot = Some((slot, max_args));
        Ok((slot, max_args))
    }

    /// The function reference for calling IR function `callee`, imported on first use.
    fn func_ref(&mut self, callee: FuncId) -> Result<clif::FuncRef, BackendError> {
        if let Some(r) = self.s.func_refs[callee].expand() {
            return Ok(r);
        }
        let Some(&Some(id)) = self.env.func_ids.get(callee.index()) else {
            let name = self
                .env
                .module
                .functions
                .get(callee)
                .map_or_else(|| callee.to_string(), |f| format!("@{}", f.name));
            return Err(BackendError::Unsupported {
                backend: BACKEND,
                what: format!(
                    "calls to {name}, which is not a host function (kernels are launched)"
                ),
            });
        };
        let sig = self
            .b
            .import_signature(self.env.signatures[callee.index()].clone());
        let name = self
            .b
            .func
            .declare_imported_user_function(UserExternalName {
                namespace: 0,
                index: id.as_u32(),
            });
        let r = self.b.import_function(ExtFuncData {
            name: ExternalName::user(name),
            signature: sig,
            // All functions of a generation live in one arena, within direct-call range.
            colocated: true,
            patchable: false,
        });
        self.s.func_refs[callee] = r.into();
        Ok(r)
    }

    /// A call of an external Rust function through its address (no status parameter).
    fn call_extern(
        &mut self,
        ext: ExternId,
        args: &[Value],
    ) -> Result<Option<clif::Value>, BackendError> {
        let func = self.func;
        let decl = self
            .env
            .module
            .externs
            .get(ext)
            .ok_or_else(|| malformed(func, &format!("unknown external function {ext}")))?;
        let sig = match self.s.extern_sigs[ext].expand() {
            Some(sig) => sig,
            None => {
                let env = self.env;
                let native =
                    abi::native_signature(&decl.signature, env.pointer, env.call_conv, false);
                let sig = self.b.import_signature(native);
                self.s.extern_sigs[ext] = sig.into();
                sig
            }
        };
        let mut call_args = std::mem::take(&mut self.s.call_args);
        call_args.clear();
        for &a in args {
            call_args.push(self.value(a)?);
        }
        let at = self
            .env
            .linkage
            .extern_addr(ext)
            .ok_or_else(|| BackendError::unlinked_extern(BACKEND, &decl.name))?;
        let callee = self.iconst(self.env.pointer, at.addr as u64);
        let call = self.b.ins().call_indirect(sig, callee, &call_args);
        self.s.call_args = call_args;
        Ok(self.b.inst_results(call).first().copied())
    }

    /// The cold block that raises `trap`, created on first use.
    /// Traps unless `size` bytes at `addr` lie in `bytes` bytes from `base`: the offset must be
    /// below `bytes - size + 1` (0 when `bytes < size`), a limit that does not depend on the
    /// address, so Cranelift hoists it out of loops.
    fn bounds_check(
        &mut self,
        addr: clif::Value,
        base: clif::Value,
        bytes: clif::Value,
        size: u32,
        trap: Trap,
    ) {
        let off = self.b.ins().isub(addr, base);
        let limit = if size == 1 {
            bytes
        } else {
            let fits =
                self.b
                    .ins()
                    .icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, bytes, i64::from(size));
            let rest = self.b.ins().iadd_imm_s(bytes, 1 - i64::from(size));
            let zero = self.iconst(types::I64, 0);
            self.b.ins().select(fits, rest, zero)
        };
        let ok = self.b.ins().icmp(IntCC::UnsignedLessThan, off, limit);
        let trap_block = self.trap_block(trap);
        let cont = self.b.create_block();
        self.b.ins().brif(ok, cont, &[], trap_block, &[]);
        self.b.switch_to_block(cont);
    }

    fn trap_block(&mut self, trap: Trap) -> clif::Block {
        if let Some(&(_, block)) = self.s.traps.iter().find(|(t, _)| *t == trap) {
            return block;
        }
        let block = self.b.create_block();
        self.s.traps.push((trap, block));
        block
    }

    /// Fills the cold exit blocks: trap blocks store their code into `*status` and return,
    /// the propagation block just returns.
    fn emit_exits(&mut self) {
        for i in 0..self.s.traps.len() {
            let (trap, block) = self.s.traps[i];
            self.b.switch_to_block(block);
            self.b.set_cold_block(block);
            let code = self.iconst(types::I32, u64::from(trap.code()));
            self.b
                .ins()
                .store(MemFlagsData::trusted(), code, self.status, 0);
            self.return_unspecified();
        }
        if let Some(block) = self.propagate {
            self.b.switch_to_block(block);
            self.b.set_cold_block(block);
            self.return_unspecified();
        }
    }

    /// Returns from a trapping function (the value is unspecified by the convention: zero).
    fn return_unspecified(&mut self) {
        match self.ret {
            None => {
                self.b.ins().return_(&[]);
            }
            Some(ty) => {
                let zero = match ty {
                    types::F32 => self.b.ins().f32const(0.0),
                    types::F64 => self.b.ins().f64const(0.0),
                    _ => self.b.ins().iconst(ty, 0),
                };
                self.b.ins().return_(&[zero]);
            }
        }
    }
}
