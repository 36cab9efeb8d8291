//! [`Emit`]: creates instructions of a function into a list that the lowering then places
//! (appended to a new block, or spliced into an existing one at a position), which
//! [`nacre_ir::FunctionBuilder`], appending to the end of a current block, does not offer.

use nacre_ir::{
    BinaryOp, Block, BlockCall, CmpOp, Const, Function, Inst, InstData, InstKind, Type, Value,
    ValueData, ValueDef,
};

/// Instructions created for `f`, not yet placed in a block.
pub(crate) struct Emit<'f> {
    f: &'f mut Function,
    out: Vec<Inst>,
}

impl<'f> Emit<'f> {
    /// An empty list for `f`.
    pub(crate) fn new(f: &'f mut Function) -> Emit<'f> {
        Emit { f, out: Vec::new() }
    }

    /// The instructions created, in order.
    pub(crate) fn finish(self) -> Vec<Inst> {
        self.out
    }

    /// The type of `v`.
    pub(crate) fn ty(&self, v: Value) -> Type {
        self.f.values[v].ty
    }

    /// An instruction without a result.
    pub(crate) fn effect(&mut self, kind: InstKind) {
        let inst = self.f.insts.push(InstData { kind, result: None });
        self.out.push(inst);
    }

    /// An instruction with a result of type `ty`.
    pub(crate) fn value(&mut self, kind: InstKind, ty: Type) -> Value {
        let inst = self.f.insts.push(InstData { kind, result: None });
        let v = self.f.values.push(ValueData {
            ty,
            def: ValueDef::Result(inst),
        });
        self.f.insts[inst].result = Some(v);
        self.out.push(inst);
        v
    }

    /// A constant of type `ty` (the bits must be normalized for it).
    pub(crate) fn konst(&mut self, ty: Type, bits: u64) -> Value {
        self.value(InstKind::Const(Const { ty, bits }), ty)
    }

    /// A `u32` constant.
    pub(crate) fn u32(&mut self, x: u32) -> Value {
        self.konst(Type::U32, x as u64)
    }

    /// A `u64` constant.
    pub(crate) fn u64(&mut self, x: u64) -> Value {
        self.konst(Type::U64, x)
    }

    /// A binary operation (result of the operands' type).
    pub(crate) fn binary(&mut self, op: BinaryOp, a: Value, b: Value) -> Value {
        let ty = self.f.values[a].ty;
        self.value(InstKind::Binary(op, a, b), ty)
    }

    /// A comparison.
    pub(crate) fn cmp(&mut self, op: CmpOp, a: Value, b: Value) -> Value {
        self.value(InstKind::Cmp(op, a, b), Type::BOOL)
    }

    /// A conversion to `to`.
    pub(crate) fn cast(&mut self, a: Value, to: Type) -> Value {
        self.value(InstKind::Cast(a), to)
    }

    /// `if c { a } else { b }`.
    pub(crate) fn select(&mut self, c: Value, a: Value, b: Value) -> Value {
        let ty = self.f.values[a].ty;
        self.value(InstKind::Select(c, a, b), ty)
    }

    /// `p + i` elements.
    pub(crate) fn elem_ptr(&mut self, p: Value, i: Value) -> Value {
        let ty = self.f.values[p].ty;
        self.value(InstKind::ElemPtr(p, i), ty)
    }

    /// A load of the pointee of `p`.
    pub(crate) fn load(&mut self, p: Value) -> Value {
        let ty = match self.f.values[p].ty {
            Type::Ptr(elem, _) => Type::Scalar(elem),
            other => other,
        };
        self.value(InstKind::Load(p), ty)
    }

    /// A store of `v` through `p`.
    pub(crate) fn store(&mut self, p: Value, v: Value) {
        self.effect(InstKind::Store(p, v))
    }

    /// `jump block(args)`.
    pub(crate) fn jump(&mut self, block: Block, args: Vec<Value>) {
        self.effect(InstKind::Jump(BlockCall { block, args }))
    }

    /// `br cond, then(then_args), else(else_args)`.
    pub(crate) fn branch(
        &mut self,
        cond: Value,
        then: (Block, Vec<Value>),
        els: (Block, Vec<Value>),
    ) {
        self.effect(InstKind::Branch {
            cond,
            then_dest: BlockCall {
                block: then.0,
                args: then.1,
            },
            else_dest: BlockCall {
                block: els.0,
                args: els.1,
            },
        })
    }

    /// `return v`.
    pub(crate) fn ret(&mut self, v: Value) {
        self.effect(InstKind::Return(Some(v)))
    }

    /// The address `base + offset` (both `u64`) as a pointer of type `ptr`.
    pub(crate) fn addr(&mut self, base: Value, offset: u64, ptr: Type) -> Value {
        let a = if offset == 0 {
            base
        } else {
            let k = self.u64(offset);
            self.binary(BinaryOp::Add, base, k)
        };
        self.cast(a, ptr)
    }
}

/// Adds a parameter of type `ty` to `block` of `f`.
pub(crate) fn add_param(f: &mut Function, block: Block, ty: Type) -> Value {
    let n = f.blocks[block].params.len() as u32;
    let v = f.values.push(ValueData {
        ty,
        def: ValueDef::Param(block, n),
    });
    f.blocks[block].params.push(v);
    v
}
