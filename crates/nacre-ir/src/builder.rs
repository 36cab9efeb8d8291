//! [`FunctionBuilder`]: creates instructions of a function while tracking where they go and
//! computing result types.
//!
//! A builder either appends to the end of a current block (how tracing and tests build
//! functions) or is *detached*: it collects the instructions it creates in a list that the
//! caller then places anywhere (spliced into an existing block at a position, or laid out as
//! a new block), which is how lowerings rewrite existing code.

use crate::atomic::{AtomicOp, MemOrder, Scope};
use crate::collective::{BlockVote, Shuffle, WarpOp};
use crate::entities::{Block, ExternId, FuncId, Inst, Value};
use crate::function::{BlockData, FuncKind, Function, InstData, Signature, ValueData, ValueDef};
use crate::instructions::{
    BinaryOp, BlockCall, CmpOp, Const, Dim, GpuIndex, InstKind, Launch, MathFn, MathFn2, UnaryOp,
};
use crate::trap::Trap;
use crate::types::{Scalar, Type};

/// Builds a function. Instructions are appended to the current block, or collected when the
/// builder is [detached](FunctionBuilder::detached); creating blocks, parameters and values,
/// and choosing result types, is done here.
///
/// The builder does not type-check: the verifier does, after construction.
pub struct FunctionBuilder<'f> {
    func: &'f mut Function,
    current: Option<Block>,
    /// The instructions created so far, when detached.
    detached: Option<Vec<Inst>>,
}

impl FunctionBuilder<'_> {
    /// A function `name` of `kind` taking `params` and returning `ret`, whose body `body`
    /// builds from the entry block, given the entry's parameters.
    pub fn build(
        name: &str,
        kind: FuncKind,
        params: &[Type],
        ret: Option<Type>,
        body: impl FnOnce(&mut FunctionBuilder<'_>, &[Value]),
    ) -> Function {
        let signature = Signature {
            params: params.to_vec(),
            ret,
        };
        let mut f = Function::new(name, kind, signature);
        let mut b = FunctionBuilder::new(&mut f);
        let p = b.create_entry_block();
        body(&mut b, &p);
        f
    }
}

impl<'f> FunctionBuilder<'f> {
    /// A builder over `func`, positioned nowhere.
    pub fn new(func: &'f mut Function) -> FunctionBuilder<'f> {
        FunctionBuilder {
            func,
            current: None,
            detached: None,
        }
    }

    /// A builder over `func` that places nothing: it collects the instructions it creates
    /// (terminators included) for [`FunctionBuilder::into_insts`].
    pub fn detached(func: &'f mut Function) -> FunctionBuilder<'f> {
        FunctionBuilder {
            func,
            current: None,
            detached: Some(Vec::new()),
        }
    }

    /// The instructions a detached builder created, in order (empty for an attached one).
    pub fn into_insts(self) -> Vec<Inst> {
        self.detached.unwrap_or_default()
    }

    /// The function being built.
    pub fn func(&self) -> &Function {
        self.func
    }

    /// Creates the entry block with one parameter per signature parameter, appends it to the
    /// layout, positions the builder in it and returns the parameters.
    pub fn create_entry_block(&mut self) -> Vec<Value> {
        let block = self.create_block();
        let params: Vec<Type> = self.func.signature.params.clone();
        let values = params
            .into_iter()
            .map(|ty| self.append_block_param(block, ty))
            .collect();
        self.switch_to_block(block);
        values
    }

    /// Creates a new block and appends it to the layout.
    pub fn create_block(&mut self) -> Block {
        let b = self.func.blocks.push(BlockData::default());
        self.func.layout.push(b);
        b
    }

    /// Adds a parameter of type `ty` to `block`.
    pub fn append_block_param(&mut self, block: Block, ty: Type) -> Value {
        self.func.add_block_param(block, ty)
    }

    /// The parameters of a block.
    pub fn block_params(&self, block: Block) -> &[Value] {
        &self.func.blocks[block].params
    }

    /// Positions the builder at the end of `block`.
    pub fn switch_to_block(&mut self, block: Block) {
        self.current = Some(block);
    }

    /// The block instructions are appended to, if any.
    pub fn current_block(&self) -> Option<Block> {
        self.current
    }

    /// True if the current block already ends in a terminator (or there is no current block).
    pub fn is_terminated(&self) -> bool {
        match self.current {
            Some(b) => self.func.terminator(b).is_some(),
            None => true,
        }
    }

    /// The type of a value.
    pub fn value_type(&self, v: Value) -> Type {
        self.func.values[v].ty
    }

    /// Appends an instruction with an optional result of type `result`.
    ///
    /// When there is no current block (code after a terminator is dead), a fresh unreachable
    /// block is created to hold it, so that tracing dead code never fails; CFG simplification
    /// removes it.
    pub fn append(&mut self, kind: InstKind, result: Option<Type>) -> (Inst, Option<Value>) {
        if self.detached.is_some() {
            let (inst, result) = self.create(kind, result);
            self.detached.get_or_insert_with(Vec::new).push(inst);
            return (inst, result);
        }
        let block = match self.current {
            Some(b) if self.func.terminator(b).is_none() => b,
            _ => {
                let b = self.create_block();
                self.current = Some(b);
                b
            }
        };
        let terminator = kind.is_terminator();
        let (inst, result) = self.create(kind, result);
        self.func.blocks[block].insts.push(inst);
        if terminator {
            self.current = None;
        }
        (inst, result)
    }

    /// A new instruction (and its result value), placed nowhere.
    fn create(&mut self, kind: InstKind, result: Option<Type>) -> (Inst, Option<Value>) {
        let inst = self.func.insts.push(InstData { kind, result: None });
        let result = result.map(|ty| {
            let v = self.func.values.push(ValueData {
                ty,
                def: ValueDef::Result(inst),
            });
            self.func.insts[inst].result = Some(v);
            v
        });
        (inst, result)
    }

    /// An instruction with a result of type `ty`.
    pub fn value(&mut self, kind: InstKind, ty: Type) -> Value {
        self.append(kind, Some(ty))
            .1
            .expect("append returns a result when given a type")
    }

    /// An instruction without a result.
    pub fn effect(&mut self, kind: InstKind) -> Inst {
        self.append(kind, None).0
    }

    /// A constant.
    pub fn constant(&mut self, c: Const) -> Value {
        self.value(InstKind::Const(c), c.ty)
    }

    /// A constant of type `ty` from its bits (normalized for the type; [`Self::constant`]
    /// takes the 128 bits a wide integer needs).
    pub fn const_bits(&mut self, ty: Type, bits: u64) -> Value {
        self.constant(Const {
            ty,
            bits: u128::from(bits),
        })
    }

    /// A `u32` constant.
    pub fn const_u32(&mut self, x: u32) -> Value {
        self.const_bits(Type::U32, u64::from(x))
    }

    /// A `u64` constant.
    pub fn const_u64(&mut self, x: u64) -> Value {
        self.const_bits(Type::U64, x)
    }

    /// A unary operation.
    pub fn unary(&mut self, op: UnaryOp, a: Value) -> Value {
        let ty = self.value_type(a);
        self.value(InstKind::Unary(op, a), ty)
    }

    /// A binary operation.
    pub fn binary(&mut self, op: BinaryOp, a: Value, b: Value) -> Value {
        let ty = self.value_type(a);
        self.value(InstKind::Binary(op, a, b), ty)
    }

    /// A fused multiply-add.
    pub fn fma(&mut self, a: Value, b: Value, c: Value) -> Value {
        let ty = self.value_type(a);
        self.value(InstKind::Fma(a, b, c), ty)
    }

    /// A math-library function of one float.
    pub fn math(&mut self, f: MathFn, a: Value) -> Value {
        let ty = self.value_type(a);
        self.value(InstKind::Math(f, a), ty)
    }

    /// A math-library function of two floats.
    pub fn math2(&mut self, f: MathFn2, a: Value, b: Value) -> Value {
        let ty = self.value_type(a);
        self.value(InstKind::Math2(f, a, b), ty)
    }

    /// A comparison.
    pub fn cmp(&mut self, op: CmpOp, a: Value, b: Value) -> Value {
        self.value(InstKind::Cmp(op, a, b), Type::BOOL)
    }

    /// A conversion to `to`.
    pub fn cast(&mut self, a: Value, to: Type) -> Value {
        self.value(InstKind::Cast(a), to)
    }

    /// A select.
    pub fn select(&mut self, cond: Value, a: Value, b: Value) -> Value {
        let ty = self.value_type(a);
        self.value(InstKind::Select(cond, a, b), ty)
    }

    /// Pointer plus element index.
    pub fn elem_ptr(&mut self, ptr: Value, index: Value) -> Value {
        let ty = self.value_type(ptr);
        self.value(InstKind::ElemPtr(ptr, index), ty)
    }

    /// A load through a pointer.
    pub fn load(&mut self, ptr: Value) -> Value {
        let ty = match self.value_type(ptr) {
            Type::Ptr(elem, _) => Type::Scalar(elem),
            other => other,
        };
        self.value(InstKind::Load(ptr), ty)
    }

    /// A store through a pointer.
    pub fn store(&mut self, ptr: Value, value: Value) -> Inst {
        self.append(InstKind::Store(ptr, value), None).0
    }

    /// An atomic read-modify-write of the element at `ptr`; returns its old value.
    pub fn atomic_rmw(
        &mut self,
        op: AtomicOp,
        ptr: Value,
        value: Value,
        order: MemOrder,
        scope: Scope,
    ) -> Value {
        let ty = self.value_type(value);
        let kind = InstKind::AtomicRmw {
            op,
            ptr,
            value,
            order,
            scope,
        };
        self.value(kind, ty)
    }

    /// An atomic compare-exchange of the element at `ptr`; returns its old value.
    pub fn atomic_cas(
        &mut self,
        ptr: Value,
        expected: Value,
        new: Value,
        order: MemOrder,
        scope: Scope,
    ) -> Value {
        let ty = self.value_type(new);
        let kind = InstKind::AtomicCas {
            ptr,
            expected,
            new,
            order,
            scope,
        };
        self.value(kind, ty)
    }

    /// A memory fence.
    pub fn fence(&mut self, order: MemOrder, scope: Scope) -> Inst {
        self.append(InstKind::Fence { order, scope }, None).0
    }

    /// Traps with `trap` unless an element at `addr` lies in the `bytes` bytes from `base`.
    pub fn bounds_check(&mut self, addr: Value, base: Value, bytes: Value, trap: Trap) -> Inst {
        self.append(
            InstKind::BoundsCheck {
                addr,
                base,
                bytes,
                trap,
            },
            None,
        )
        .0
    }

    /// A call to an IR function returning `ret`.
    pub fn call(&mut self, func: FuncId, args: Vec<Value>, ret: Option<Type>) -> Option<Value> {
        self.append(InstKind::Call(func, args), ret).1
    }

    /// A call to an external function returning `ret`.
    pub fn call_extern(
        &mut self,
        ext: ExternId,
        args: Vec<Value>,
        ret: Option<Type>,
    ) -> Option<Value> {
        self.append(InstKind::CallExtern(ext, args), ret).1
    }

    /// A GPU index or dimension (`u32`).
    pub fn gpu_index(&mut self, index: GpuIndex, dim: Dim) -> Value {
        self.value(InstKind::GpuIndex(index, dim), Type::U32)
    }

    /// A block-wide barrier.
    pub fn barrier(&mut self) -> Inst {
        self.append(InstKind::Barrier, None).0
    }

    /// A block-shared array of `len` elements of `elem`; returns the pointer to it.
    pub fn shared_alloc(&mut self, elem: Scalar, len: u32) -> Value {
        self.value(InstKind::SharedAlloc { elem, len }, Type::ptr(elem))
    }

    /// A zeroed array of `len` elements of `elem` private to the call (see
    /// [`InstKind::LocalArray`]); returns the pointer to it.
    pub fn local_array(&mut self, elem: Scalar, len: u32) -> Value {
        self.value(InstKind::LocalArray { elem, len }, Type::ptr(elem))
    }

    /// The block's dynamic shared memory as a pointer to `elem`.
    pub fn dynamic_shared(&mut self, elem: Scalar) -> Value {
        self.value(InstKind::DynamicShared { elem }, Type::ptr(elem))
    }

    /// The size in bytes of the block's dynamic shared memory (`u32`).
    pub fn dynamic_shared_bytes(&mut self) -> Value {
        self.value(InstKind::DynamicSharedBytes, Type::U32)
    }

    /// The calling thread's lane in its warp (`u32`).
    pub fn lane_id(&mut self) -> Value {
        self.value(InstKind::LaneId, Type::U32)
    }

    /// `v` from the lane that `op` and `lane` (a `u32`) name.
    pub fn shuffle(&mut self, op: Shuffle, v: Value, lane: Value) -> Value {
        let ty = self.value_type(v);
        self.value(InstKind::Shuffle(op, v, lane), ty)
    }

    /// A warp reduction or vote over `v`.
    pub fn warp(&mut self, op: WarpOp, v: Value) -> Value {
        let ty = match self.value_type(v) {
            Type::Scalar(s) => Type::Scalar(op.result(s)),
            ptr => ptr,
        };
        self.value(InstKind::Warp(op, v), ty)
    }

    /// A barrier that votes on the `bool` `v` over the block.
    pub fn block_vote(&mut self, op: BlockVote, v: Value) -> Value {
        self.value(InstKind::BlockVote(op, v), Type::Scalar(op.result()))
    }

    /// Launches `kernel` over a grid, without dynamic shared memory.
    pub fn launch(
        &mut self,
        kernel: FuncId,
        grid: [Value; 3],
        block: [Value; 3],
        args: Vec<Value>,
    ) -> Inst {
        self.launch_shared(kernel, grid, block, None, args)
    }

    /// Launches `kernel` over a grid with `shared_bytes` (a `u32`) bytes of dynamic shared
    /// memory per block.
    pub fn launch_shared(
        &mut self,
        kernel: FuncId,
        grid: [Value; 3],
        block: [Value; 3],
        shared_bytes: Option<Value>,
        args: Vec<Value>,
    ) -> Inst {
        let launch = Launch {
            kernel,
            grid,
            block,
            args,
            shared_bytes,
        };
        self.append(InstKind::Launch(Box::new(launch)), None).0
    }

    /// Terminates the current block with a jump.
    pub fn jump(&mut self, block: Block, args: Vec<Value>) -> Inst {
        self.append(InstKind::Jump(BlockCall { block, args }), None)
            .0
    }

    /// Terminates the current block with a two-way branch.
    pub fn branch(
        &mut self,
        cond: Value,
        then_block: Block,
        then_args: Vec<Value>,
        else_block: Block,
        else_args: Vec<Value>,
    ) -> Inst {
        let kind = InstKind::Branch {
            cond,
            then_dest: BlockCall {
                block: then_block,
                args: then_args,
            },
            else_dest: BlockCall {
                block: else_block,
                args: else_args,
            },
        };
        self.append(kind, None).0
    }

    /// Terminates the current block with a return.
    pub fn ret(&mut self, value: Option<Value>) -> Inst {
        self.append(InstKind::Return(value), None).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::function::{FuncKind, Signature};

    #[test]
    fn builds_blocks_and_types() {
        let mut f = Function::new(
            "f",
            FuncKind::Host,
            Signature {
                params: vec![Type::I32],
                ret: Some(Type::BOOL),
            },
        );
        let mut b = FunctionBuilder::new(&mut f);
        let p = b.create_entry_block();
        let one = b.constant(Const {
            ty: Type::I32,
            bits: 1,
        });
        let sum = b.binary(BinaryOp::Add, p[0], one);
        let c = b.cmp(CmpOp::Lt, sum, p[0]);
        assert_eq!(b.value_type(sum), Type::I32);
        assert_eq!(b.value_type(c), Type::BOOL);
        b.ret(Some(c));
        assert!(b.is_terminated());
        assert_eq!(f.live_inst_count(), 4);
    }

    #[test]
    fn code_after_terminator_goes_to_a_fresh_block() {
        let mut f = Function::new("f", FuncKind::Host, Signature::default());
        let mut b = FunctionBuilder::new(&mut f);
        b.create_entry_block();
        b.ret(None);
        b.constant(Const {
            ty: Type::I32,
            bits: 7,
        });
        assert_eq!(f.layout.len(), 2);
    }
}
