//! Step 5 of the verifier: the type rules of each operator (see [`crate::instructions`]), jump
//! arguments against the target's parameters, return values against the signature, calls and
//! launches against the callee's signature, and constants normalized for their type
//! ([`crate::semantics::normalize`]).
//!
//! `check_types` dispatches on the operator to one check per instruction, grouped by family:
//! values (constants, arithmetic, comparisons, casts, selects), memory, calls and launches, GPU
//! operations and terminators. Each runs on a `TypeCheck`: the instruction, its result type and
//! the common ways to reject it.

use super::{FuncVerifier, Res, VerifierError, VerifierErrorKind};
use crate::atomic::{AtomicOp, MemOrder};
use crate::collective::{BlockVote, WarpOp};
use crate::entities::{Block, ExternId, FuncId, Inst, Value};
use crate::function::{FuncKind, Signature};
use crate::instructions::{BinaryOp, BlockCall, Const, InstKind, Launch, UnaryOp};
use crate::semantics::normalize;
use crate::types::{Scalar, Type};

impl FuncVerifier<'_> {
    /// Step 5: types of one instruction (operands are known to exist).
    pub(super) fn check_types(&self, block: Block, inst: Inst) -> Res {
        let c = TypeCheck::new(self, block, inst);
        match &self.func.insts[inst].kind {
            InstKind::Const(k) => c.constant(k),
            InstKind::Unary(op, a) => c.unary(*op, *a),
            InstKind::Binary(op, a, b) => c.binary(*op, *a, *b),
            InstKind::Fma(a, b, d) => c.fma(*a, *b, *d),
            InstKind::Math(_, a) => c.math(&[*a]),
            InstKind::Math2(_, a, b) => c.math(&[*a, *b]),
            InstKind::Cmp(_, a, b) => c.compare(*a, *b),
            InstKind::Cast(a) => c.cast(*a),
            InstKind::Select(cond, a, b) => c.select(*cond, *a, *b),
            InstKind::ElemPtr(p, i) => c.elem_ptr(*p, *i),
            InstKind::Load(p) => c.load(*p),
            InstKind::Store(p, v) => c.store(*p, *v),
            InstKind::AtomicRmw { op, ptr, value, .. } => c.atomic_rmw(*op, *ptr, *value),
            InstKind::AtomicCas {
                ptr, expected, new, ..
            } => c.atomic_cas(*ptr, *expected, *new),
            InstKind::Fence { order, .. } => c.fence(*order),
            InstKind::BoundsCheck {
                addr, base, bytes, ..
            } => c.bounds_check(*addr, *base, *bytes),
            InstKind::Call(callee, args) => c.call(*callee, args),
            InstKind::CallExtern(ext, args) => c.call_extern(*ext, args),
            InstKind::Launch(l) => c.launch(l),
            InstKind::GpuIndex(..) => c.gpu_index(),
            InstKind::Barrier => c.barrier(),
            InstKind::SharedAlloc { elem, len } => c.shared_alloc(*elem, *len),
            InstKind::LocalArray { elem, len } => c.local_array(*elem, *len),
            InstKind::DynamicShared { elem } => c.dynamic_shared(*elem),
            InstKind::DynamicSharedBytes | InstKind::LaneId => c.gpu_index(),
            InstKind::Shuffle(_, v, lane) => c.shuffle(*v, *lane),
            InstKind::Warp(op, v) => c.warp(*op, *v),
            InstKind::BlockVote(op, v) => c.block_vote(*op, *v),
            InstKind::Jump(dest) => c.jump(dest),
            InstKind::Branch {
                cond,
                then_dest,
                else_dest,
            } => c.branch(*cond, then_dest, else_dest),
            InstKind::Return(v) => c.ret(*v),
        }
    }

    /// Arguments of a jump or branch edge against the target's parameters.
    fn check_block_call(&self, inst: Inst, block: Block, call: &BlockCall) -> Res {
        let func = self.func;
        let params = &func.blocks[call.block].params;
        if params.len() != call.args.len() {
            return Err(self.err(
                VerifierErrorKind::BlockArgs,
                format!(
                    "{inst} in {block} passes {} arguments to {}, which has {} parameters",
                    call.args.len(),
                    call.block,
                    params.len()
                ),
            ));
        }
        for (i, (&a, &p)) in call.args.iter().zip(params).enumerate() {
            let (at, pt) = (func.values[a].ty, func.values[p].ty);
            if at != pt {
                return Err(self.err(
                    VerifierErrorKind::BlockArgs,
                    format!(
                        "{inst} in {block} passes {a}: {at} as argument {i} of {}, \
                         whose parameter {p} is {pt}",
                        call.block
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Arguments and result of a call against the callee's signature.
    fn check_call(
        &self,
        inst: Inst,
        block: Block,
        callee: &str,
        sig: &Signature,
        args: &[Value],
        result: Option<Type>,
    ) -> Res {
        let func = self.func;
        let call_err = |what: String| {
            self.err(
                VerifierErrorKind::Call,
                format!("{inst} in {block} calls {callee}: {what}"),
            )
        };
        if args.len() != sig.params.len() {
            return Err(call_err(format!(
                "{} arguments, but it takes {}",
                args.len(),
                sig.params.len()
            )));
        }
        for (i, (&a, &pt)) in args.iter().zip(&sig.params).enumerate() {
            let at = func.values[a].ty;
            if at != pt {
                return Err(call_err(format!(
                    "argument {i} ({a}) is {at}, but the parameter is {pt}"
                )));
            }
        }
        if result != sig.ret {
            return Err(call_err(format!(
                "the call's result is {}, but the callee returns {}",
                type_or_nothing(result),
                type_or_nothing(sig.ret)
            )));
        }
        Ok(())
    }
}

/// One instruction under step 5: where it is, its result and the common ways to reject it.
struct TypeCheck<'a> {
    v: &'a FuncVerifier<'a>,
    block: Block,
    inst: Inst,
    /// The instruction's result.
    result: Option<Value>,
    /// The type of its result.
    rty: Option<Type>,
    /// The printer's name of its operator, for messages.
    op_name: &'static str,
}

/// The common checks.
impl<'a> TypeCheck<'a> {
    fn new(v: &'a FuncVerifier<'a>, block: Block, inst: Inst) -> Self {
        let data = &v.func.insts[inst];
        TypeCheck {
            v,
            block,
            inst,
            result: data.result,
            rty: data.result.map(|r| v.func.values[r].ty),
            op_name: op_name(&data.kind),
        }
    }

    /// The type of an operand.
    fn ty(&self, v: Value) -> Type {
        self.v.func.values[v].ty
    }

    /// A [`VerifierErrorKind::Type`] error naming the instruction and its operator.
    fn type_err(&self, what: String) -> VerifierError {
        let (inst, op_name, block) = (self.inst, self.op_name, self.block);
        self.v.err(
            VerifierErrorKind::Type,
            format!("{inst} ({op_name}) in {block}: {what}"),
        )
    }

    /// The result type, which this instruction must have.
    fn need_result(&self) -> Res<Type> {
        self.rty
            .ok_or_else(|| self.type_err("has no result".to_string()))
    }

    /// This instruction must have no result.
    fn no_result(&self) -> Res {
        match self.result {
            Some(r) => Err(self.type_err(format!("has a result ({r}) but produces none"))),
            None => Ok(()),
        }
    }

    /// Two types that must be equal.
    fn same(&self, what: &str, a: Type, b: Type) -> Res {
        if a == b {
            Ok(())
        } else {
            Err(self.type_err(format!("{what}: {a} vs {b}")))
        }
    }

    /// A type that must be `expected`.
    fn expect(&self, what: String, actual: Type, expected: Type) -> Res {
        if actual == expected {
            Ok(())
        } else {
            Err(self.type_err(format!("{what} is {actual}, expected {expected}")))
        }
    }

    /// The scalar type of an operand, which must be a scalar.
    fn scalar(&self, v: Value) -> Res<Scalar> {
        match self.ty(v) {
            Type::Scalar(s) => Ok(s),
            t => Err(self.type_err(format!("operand {v} has type {t}, expected a scalar"))),
        }
    }
}

/// Values: constants, arithmetic, comparisons, casts and selects.
impl TypeCheck<'_> {
    fn constant(&self, c: &Const) -> Res {
        self.expect("the result".into(), self.need_result()?, c.ty)?;
        let norm = normalize(c.ty, c.bits);
        if norm != c.bits {
            let (inst, block) = (self.inst, self.block);
            return Err(self.v.err(
                VerifierErrorKind::Const,
                format!(
                    "{inst} in {block}: constant bits {:#x} are not normalized \
                     for {} (expected {norm:#x})",
                    c.bits, c.ty
                ),
            ));
        }
        Ok(())
    }

    fn unary(&self, op: UnaryOp, a: Value) -> Res {
        let s = self.scalar(a)?;
        self.same(
            "result type differs from the operand type",
            self.need_result()?,
            self.ty(a),
        )?;
        if !op.accepts(s) {
            return Err(self.type_err(format!("not defined on {s}")));
        }
        Ok(())
    }

    fn binary(&self, op: BinaryOp, a: Value, b: Value) -> Res {
        let s = self.scalar(a)?;
        self.same("operand types differ", self.ty(a), self.ty(b))?;
        self.same(
            "result type differs from the operand type",
            self.need_result()?,
            self.ty(a),
        )?;
        if op.is_bitwise() && s.is_float() {
            return Err(self.type_err(format!("bitwise operator on {s}")));
        }
        if !op.accepts(s) {
            return Err(self.type_err(format!("not defined on {s}")));
        }
        Ok(())
    }

    /// A math function: float operands of one type, a result of that type.
    fn math(&self, args: &[Value]) -> Res {
        let s = self.scalar(args[0])?;
        if !s.is_float() {
            return Err(self.type_err(format!("not defined on {s}")));
        }
        for &a in &args[1..] {
            self.same("operand types differ", self.ty(args[0]), self.ty(a))?;
        }
        self.same(
            "result type differs from the operand type",
            self.need_result()?,
            self.ty(args[0]),
        )
    }

    fn fma(&self, a: Value, b: Value, c: Value) -> Res {
        let s = self.scalar(a)?;
        if !s.is_float() {
            return Err(self.type_err(format!("not defined on {s}")));
        }
        self.same("operand types differ", self.ty(a), self.ty(b))?;
        self.same("operand types differ", self.ty(a), self.ty(c))?;
        self.same(
            "result type differs from the operand type",
            self.need_result()?,
            self.ty(a),
        )
    }

    fn compare(&self, a: Value, b: Value) -> Res {
        self.same("operand types differ", self.ty(a), self.ty(b))?;
        self.expect("the result".into(), self.need_result()?, Type::BOOL)
    }

    fn cast(&self, a: Value) -> Res {
        let to = self.need_result()?;
        let from = self.ty(a);
        let ok = match (from, to) {
            (Type::Scalar(_), Type::Scalar(_)) => true,
            (Type::Ptr(..), Type::Scalar(s)) | (Type::Scalar(s), Type::Ptr(..)) => {
                matches!(s, Scalar::I64 | Scalar::U64)
            }
            // A pointer reinterpreted as another element type (a record's field).
            (Type::Ptr(..), Type::Ptr(..)) => true,
        };
        if !ok {
            return Err(self.type_err(format!(
                "cannot cast {from} to {to} (scalars convert to scalars, \
                 pointers to pointers and to and from 64-bit integers)"
            )));
        }
        Ok(())
    }

    fn select(&self, c: Value, a: Value, b: Value) -> Res {
        self.expect(format!("condition {c}"), self.ty(c), Type::BOOL)?;
        self.same("arm types differ", self.ty(a), self.ty(b))?;
        self.same(
            "result type differs from the arms' type",
            self.need_result()?,
            self.ty(a),
        )
    }
}

/// Memory: element addresses, loads and stores.
impl TypeCheck<'_> {
    fn elem_ptr(&self, p: Value, i: Value) -> Res {
        if !self.ty(p).is_ptr() {
            return Err(self.type_err(format!(
                "base {p} has type {}, expected a pointer",
                self.ty(p)
            )));
        }
        if !self.ty(i).is_int() || self.ty(i).scalar().is_some_and(Scalar::is_wide) {
            return Err(self.type_err(format!(
                "index {i} has type {}, expected an integer of at most 64 bits",
                self.ty(i)
            )));
        }
        self.expect("the result".into(), self.need_result()?, self.ty(p))
    }

    /// The element type of an address, which must be a pointer.
    fn pointee(&self, p: Value) -> Res<Scalar> {
        let Type::Ptr(elem, _) = self.ty(p) else {
            return Err(self.type_err(format!(
                "address {p} has type {}, expected a pointer",
                self.ty(p)
            )));
        };
        Ok(elem)
    }

    fn load(&self, p: Value) -> Res {
        let elem = self.pointee(p)?;
        self.expect(
            "the result (the pointee type)".into(),
            self.need_result()?,
            Type::Scalar(elem),
        )
    }

    fn store(&self, p: Value, v: Value) -> Res {
        self.no_result()?;
        let elem = self.pointee(p)?;
        self.expect(format!("stored value {v}"), self.ty(v), Type::Scalar(elem))
    }

    fn atomic_rmw(&self, op: AtomicOp, p: Value, v: Value) -> Res {
        let elem = self.pointee(p)?;
        if !op.supports(elem) {
            return Err(self.type_err(format!(
                "atomic {} is not defined on {elem} (see AtomicOp::supports)",
                op.name()
            )));
        }
        self.expect(format!("operand {v}"), self.ty(v), Type::Scalar(elem))?;
        self.expect(
            "the result (the old value)".into(),
            self.need_result()?,
            Type::Scalar(elem),
        )
    }

    fn atomic_cas(&self, p: Value, expected: Value, new: Value) -> Res {
        let elem = self.pointee(p)?;
        if !crate::atomic::cas_supports(elem) {
            return Err(self.type_err(format!(
                "atomic compare-exchange is not defined on {elem} (32- and 64-bit integers only)"
            )));
        }
        self.expect(
            format!("expected value {expected}"),
            self.ty(expected),
            Type::Scalar(elem),
        )?;
        self.expect(format!("new value {new}"), self.ty(new), Type::Scalar(elem))?;
        self.expect(
            "the result (the old value)".into(),
            self.need_result()?,
            Type::Scalar(elem),
        )
    }

    fn fence(&self, order: MemOrder) -> Res {
        self.no_result()?;
        if order == MemOrder::Relaxed {
            return Err(self.type_err("a fence cannot be relaxed".into()));
        }
        Ok(())
    }

    fn bounds_check(&self, addr: Value, base: Value, bytes: Value) -> Res {
        self.no_result()?;
        let elem = self.pointee(addr)?;
        if self.pointee(base)? != elem {
            // Address spaces may differ (inference runs per value); element types may not.
            self.expect(format!("base {base}"), self.ty(base), self.ty(addr))?;
        }
        self.expect(format!("byte count {bytes}"), self.ty(bytes), Type::U64)
    }
}

/// Calls and launches, against the callee's signature.
impl TypeCheck<'_> {
    fn call(&self, callee: FuncId, args: &[Value]) -> Res {
        let (inst, block) = (self.inst, self.block);
        let Some(target) = self.v.module.functions.get(callee) else {
            return Err(self.v.err(
                VerifierErrorKind::Call,
                format!("{inst} in {block} calls {callee}, which does not exist"),
            ));
        };
        let name = format!("@{}", target.name);
        self.v
            .check_call(inst, block, &name, &target.signature, args, self.rty)
    }

    fn call_extern(&self, ext: ExternId, args: &[Value]) -> Res {
        let (inst, block) = (self.inst, self.block);
        let Some(target) = self.v.module.externs.get(ext) else {
            return Err(self.v.err(
                VerifierErrorKind::Call,
                format!("{inst} in {block} calls {ext}, which does not exist"),
            ));
        };
        let name = format!("extern @{}", target.name);
        self.v
            .check_call(inst, block, &name, &target.signature, args, self.rty)
    }

    fn launch(&self, l: &Launch) -> Res {
        use VerifierErrorKind::Call;
        self.no_result()?;
        if self.v.func.kind == FuncKind::Kernel {
            return Err(self.type_err("kernels cannot launch kernels".to_string()));
        }
        let (inst, block) = (self.inst, self.block);
        let Some(target) = self.v.module.functions.get(l.kernel) else {
            return Err(self.v.err(
                Call,
                format!(
                    "{inst} in {block} launches {}, which does not exist",
                    l.kernel
                ),
            ));
        };
        if target.kind != FuncKind::Kernel {
            return Err(self.v.err(
                Call,
                format!(
                    "{inst} in {block} launches @{}, which is not a kernel",
                    target.name
                ),
            ));
        }
        for v in l.grid.iter().chain(&l.block) {
            self.expect(format!("grid/block size {v}"), self.ty(*v), Type::U32)?;
        }
        if let Some(v) = l.shared_bytes {
            self.expect(format!("shared memory size {v}"), self.ty(v), Type::U32)?;
        }
        let name = format!("kernel @{}", target.name);
        self.v
            .check_call(inst, block, &name, &target.signature, &l.args, None)
    }
}

/// GPU operations, which only kernels contain.
impl TypeCheck<'_> {
    /// The function must be a kernel.
    fn kernel_only(&self) -> Res {
        if self.v.func.kind != FuncKind::Kernel {
            return Err(self.type_err("GPU intrinsics are only allowed in kernels".to_string()));
        }
        Ok(())
    }

    fn gpu_index(&self) -> Res {
        self.kernel_only()?;
        self.expect("the result".into(), self.need_result()?, Type::U32)
    }

    fn shuffle(&self, v: Value, lane: Value) -> Res {
        self.kernel_only()?;
        let ty = self.ty(v);
        if ty.is_ptr() || ty.scalar().is_some_and(Scalar::is_wide) {
            return Err(self.type_err(format!(
                "a shuffle moves scalars of at most 64 bits, not {ty}"
            )));
        }
        self.expect(format!("lane operand {lane}"), self.ty(lane), Type::U32)?;
        self.expect("the result".into(), self.need_result()?, ty)
    }

    fn warp(&self, op: WarpOp, v: Value) -> Res {
        self.kernel_only()?;
        let ty = self.ty(v);
        let Some(s) = ty.scalar().filter(|&s| op.supports(s)) else {
            return Err(self.type_err(format!(
                "{} is not defined on {ty} (see WarpOp::supports)",
                op.name()
            )));
        };
        self.expect(
            "the result".into(),
            self.need_result()?,
            op.result(s).into(),
        )
    }

    fn block_vote(&self, op: BlockVote, v: Value) -> Res {
        self.kernel_only()?;
        self.expect(format!("operand {v}"), self.ty(v), Type::BOOL)?;
        self.expect("the result".into(), self.need_result()?, op.result().into())
    }

    fn barrier(&self) -> Res {
        self.kernel_only()?;
        self.no_result()
    }

    fn dynamic_shared(&self, elem: Scalar) -> Res {
        self.kernel_only()?;
        match self.need_result()? {
            Type::Ptr(e, _) if e == elem => Ok(()),
            t => Err(self.type_err(format!("the result is {t}, expected a pointer to {elem}"))),
        }
    }

    fn local_array(&self, elem: Scalar, len: u32) -> Res {
        if self.v.func.kind == FuncKind::Kernel {
            return Err(self.type_err(
                "a local array is for host functions (kernels use shared_alloc)".into(),
            ));
        }
        let bytes = u64::from(len) * u64::from(elem.bytes());
        if len == 0 || bytes > crate::MAX_LOCAL_ARRAY_BYTES {
            return Err(self.type_err(format!(
                "a local array holds 1 to {} bytes, not {bytes}",
                crate::MAX_LOCAL_ARRAY_BYTES
            )));
        }
        match self.need_result()? {
            Type::Ptr(e, _) if e == elem => Ok(()),
            t => Err(self.type_err(format!("the result is {t}, expected a pointer to {elem}"))),
        }
    }

    fn shared_alloc(&self, elem: Scalar, len: u32) -> Res {
        self.kernel_only()?;
        if len == 0 {
            return Err(self.type_err("a shared array needs at least one element".into()));
        }
        match self.need_result()? {
            Type::Ptr(e, _) if e == elem => Ok(()),
            t => Err(self.type_err(format!("the result is {t}, expected a pointer to {elem}"))),
        }
    }
}

/// Terminators: jumps, branches and returns.
impl TypeCheck<'_> {
    fn jump(&self, dest: &BlockCall) -> Res {
        self.no_result()?;
        self.v.check_block_call(self.inst, self.block, dest)
    }

    fn branch(&self, cond: Value, then_dest: &BlockCall, else_dest: &BlockCall) -> Res {
        self.no_result()?;
        self.expect(format!("condition {cond}"), self.ty(cond), Type::BOOL)?;
        self.v.check_block_call(self.inst, self.block, then_dest)?;
        self.v.check_block_call(self.inst, self.block, else_dest)
    }

    fn ret(&self, v: Option<Value>) -> Res {
        self.no_result()?;
        let got = v.map(|v| self.ty(v));
        let want = self.v.func.signature.ret;
        if got != want {
            let (inst, block) = (self.inst, self.block);
            return Err(self.v.err(
                VerifierErrorKind::Signature,
                format!(
                    "{inst} in {block} returns {} but the signature returns {}",
                    type_or_nothing(got),
                    type_or_nothing(want)
                ),
            ));
        }
        Ok(())
    }
}

/// A type, or `nothing`, for messages.
fn type_or_nothing(t: Option<Type>) -> String {
    t.map_or("nothing".to_string(), |t| t.to_string())
}

/// The printer's name of an instruction's operator, for messages.
fn op_name(kind: &InstKind) -> &'static str {
    match kind {
        InstKind::Const(_) => "const",
        InstKind::Unary(op, _) => op.name(),
        InstKind::Binary(op, ..) => op.name(),
        InstKind::Fma(..) => "fma",
        InstKind::Math(f, _) => f.name(),
        InstKind::Math2(f, ..) => f.name(),
        InstKind::Cmp(op, ..) => op.name(),
        InstKind::Cast(_) => "cast",
        InstKind::Select(..) => "select",
        InstKind::ElemPtr(..) => "elem_ptr",
        InstKind::Load(_) => "load",
        InstKind::Store(..) => "store",
        InstKind::BoundsCheck { .. } => "bounds_check",
        InstKind::Call(..) => "call",
        InstKind::CallExtern(..) => "call_extern",
        InstKind::GpuIndex(..) => "gpu_index",
        InstKind::Barrier => "barrier",
        InstKind::AtomicRmw { .. } => "atomic_rmw",
        InstKind::AtomicCas { .. } => "atomic_cas",
        InstKind::Fence { .. } => "fence",
        InstKind::SharedAlloc { .. } => "shared_alloc",
        InstKind::LocalArray { .. } => "local_array",
        InstKind::DynamicShared { .. } => "dynamic_shared",
        InstKind::DynamicSharedBytes => "dynamic_shared_bytes",
        InstKind::LaneId => "lane_id",
        InstKind::Shuffle(op, ..) => op.name(),
        InstKind::Warp(op, _) => op.name(),
        InstKind::BlockVote(op, _) => op.name(),
        InstKind::Launch(_) => "launch",
        InstKind::Jump(_) => "jump",
        InstKind::Branch { .. } => "br",
        InstKind::Return(_) => "return",
    }
}
