use super::*;
use crate::builder::FunctionBuilder;
use crate::entities::{ExternId, FuncId, Inst, Value};
use crate::function::{FuncKind, InstData, Signature, ValueData, ValueDef};
use crate::instructions::{BinaryOp, BlockCall, CmpOp, Const, InstKind, UnaryOp};
use crate::module::ExternFunc;
use crate::types::{Scalar, Type};
use VerifierErrorKind as K;

fn sig(params: &[Type], ret: Option<Type>) -> Signature {
    Signature {
        params: params.to_vec(),
        ret,
    }
}

fn func(params: &[Type], ret: Option<Type>) -> Function {
    Function::new("f", FuncKind::Host, sig(params, ret))
}

fn konst(b: &mut FunctionBuilder<'_>, ty: Type, bits: u64) -> Value {
    b.constant(Const {
        ty,
        bits: u128::from(bits),
    })
}

fn module_of(f: Function) -> Module {
    let mut m = Module::new();
    let id = m.add_function(f);
    m.entry = Some(id);
    m
}

/// Verifies a one-function module and returns the error, which must name `@f`.
fn error(f: Function) -> VerifierError {
    let e = verify(module_of(f)).expect_err("the function must be rejected");
    assert_eq!(e.function, "f");
    e
}

/// Asserts the error's category and that its message contains every fragment.
fn assert_err(e: &VerifierError, kind: VerifierErrorKind, fragments: &[&str]) {
    assert_eq!(e.kind, kind, "{e}");
    for frag in fragments {
        assert!(
            e.message.contains(frag),
            "`{}` does not mention `{frag}`",
            e.message
        );
    }
}

/// `f(x: i32) -> i32 { x + 1 }`, the base that most cases break.
fn add_one() -> (Function, Inst) {
    let mut f = func(&[Type::I32], Some(Type::I32));
    let mut b = FunctionBuilder::new(&mut f);
    let x = b.create_entry_block()[0];
    let one = konst(&mut b, Type::I32, 1);
    let y = b.binary(BinaryOp::Add, x, one);
    let ret = b.ret(Some(y));
    (f, ret)
}

/// A module exercising every instruction: loops, calls, memory, casts.
fn good_module() -> Module {
    let mut m = Module::new();
    let ext = m.declare_extern(ExternFunc {
        name: "double".into(),
        signature: sig(&[Type::F64], Some(Type::F64)),
    });
    let mut callee = Function::new(
        "sum",
        FuncKind::Host,
        sig(&[Type::ptr(Scalar::F64), Type::U64], Some(Type::F64)),
    );
    {
        let mut b = FunctionBuilder::new(&mut callee);
        let p = b.create_entry_block();
        let (head, body, exit) = (b.create_block(), b.create_block(), b.create_block());
        let zero = konst(&mut b, Type::U64, 0);
        let fzero = konst(&mut b, Type::F64, 0f64.to_bits());
        b.jump(head, vec![zero, fzero]);
        let i = b.append_block_param(head, Type::U64);
        let acc = b.append_block_param(head, Type::F64);
        b.switch_to_block(head);
        let c = b.cmp(CmpOp::Lt, i, p[1]);
        b.branch(c, body, vec![], exit, vec![acc]);
        b.switch_to_block(body);
        let addr = b.elem_ptr(p[0], i);
        let x = b.load(addr);
        let d = b.call_extern(ext, vec![x], Some(Type::F64)).unwrap();
        let s = b.fma(d, x, acc);
        let sq = b.unary(UnaryOp::Sqrt, s);
        b.store(addr, sq);
        let one = konst(&mut b, Type::U64, 1);
        let i2 = b.binary(BinaryOp::Add, i, one);
        b.jump(head, vec![i2, sq]);
        let r = b.append_block_param(exit, Type::F64);
        b.switch_to_block(exit);
        b.ret(Some(r));
    }
    let callee_id = m.add_function(callee);
    let mut main = Function::new(
        "main",
        FuncKind::Host,
        sig(&[Type::I64, Type::U64], Some(Type::I32)),
    );
    {
        let mut b = FunctionBuilder::new(&mut main);
        let p = b.create_entry_block();
        let ptr = b.cast(p[0], Type::ptr(Scalar::F64));
        let back = b.cast(ptr, Type::U64);
        let nul = konst(&mut b, Type::ptr(Scalar::F64), 0);
        let is_null = b.cmp(CmpOp::Eq, ptr, nul);
        let n = b.select(is_null, p[1], back);
        let total = b.call(callee_id, vec![ptr, n], Some(Type::F64)).unwrap();
        let t = b.cast(total, Type::I32);
        let m1 = konst(&mut b, Type::I8, 0xff);
        let wide = b.cast(m1, Type::I32);
        let mask = b.binary(BinaryOp::Shl, wide, wide);
        let r = b.binary(BinaryOp::Xor, t, mask);
        b.ret(Some(r));
    }
    let main_id = m.add_function(main);
    m.entry = Some(main_id);
    m
}

#[test]
fn accepts_valid_ir() {
    let m = good_module();
    let v = verify(m).expect("valid module");
    assert_eq!(v.module().functions.len(), 2);
    let (f, _) = add_one();
    verify(module_of(f)).expect("valid function");
}

#[test]
fn accepts_non_dominated_uses_in_unreachable_blocks() {
    let (mut f, _) = add_one();
    let mut b = FunctionBuilder::new(&mut f);
    let dead = b.create_block();
    b.switch_to_block(dead);
    let later = b.create_block();
    b.jump(later, vec![]);
    b.switch_to_block(later);
    let v = b.append_block_param(dead, Type::I32);
    b.ret(Some(v));
    verify(module_of(f)).expect("unreachable code is not dominance-checked");
}

#[test]
fn rejects_module_without_entry_and_duplicate_names() {
    let (f, _) = add_one();
    let mut m = module_of(f.clone());
    m.entry = None;
    let e = verify(m).unwrap_err();
    assert_err(&e, K::Module, &["no entry"]);
    assert_eq!(
        e.to_string(),
        "invalid IR in module: module has no entry function"
    );

    let mut m = module_of(f.clone());
    m.entry = Some(FuncId::from_u32(7));
    assert_err(
        &verify(m).unwrap_err(),
        K::Module,
        &["fn7", "does not exist"],
    );

    let mut m = module_of(f.clone());
    m.add_function(f);
    let e = verify(m).unwrap_err();
    assert_err(&e, K::Module, &["@f", "fn0", "fn1"]);
    assert!(e.to_string().starts_with("invalid IR in function @f: "));
}

#[test]
fn rejects_bad_layouts() {
    let e = error(func(&[], None));
    assert_err(&e, K::Layout, &["no blocks"]);

    let (mut f, _) = add_one();
    let entry = f.layout[0];
    f.layout.push(entry);
    assert_err(&error(f), K::Layout, &["block0", "twice"]);

    let (mut f, _) = add_one();
    f.layout.push(Block::from_u32(1000));
    assert_err(&error(f), K::Layout, &["block1000", "does not exist"]);

    let (mut f, ret) = add_one();
    let other = f.blocks.push(crate::function::BlockData::default());
    f.insts[ret].kind = InstKind::Jump(BlockCall {
        block: other,
        args: vec![],
    });
    assert_err(
        &error(f),
        K::Layout,
        &["jumps to block1", "not a laid-out block"],
    );
}

#[test]
fn rejects_bad_terminators() {
    let (mut f, _) = add_one();
    let mut b = FunctionBuilder::new(&mut f);
    b.create_block();
    assert_err(&error(f), K::Block, &["block1 is empty"]);

    let (mut f, ret) = add_one();
    let entry = f.layout[0];
    f.blocks[entry].insts.retain(|&i| i != ret);
    assert_err(
        &error(f),
        K::Block,
        &["block0 does not end in a terminator"],
    );

    let (mut f, ret) = add_one();
    let entry = f.layout[0];
    f.blocks[entry].insts.insert(0, ret);
    let e = error(f);
    assert!(e.kind == K::Block || e.kind == K::Definition, "{e}");

    let (mut f, _) = add_one();
    let entry = f.layout[0];
    let early = f.insts.push(InstData {
        kind: InstKind::Return(None),
        result: None,
    });
    f.blocks[entry].insts.insert(1, early);
    assert_err(&error(f), K::Block, &["terminator inst", "before its end"]);
}

#[test]
fn rejects_entry_parameters_that_differ_from_the_signature() {
    let (mut f, _) = add_one();
    f.signature.params = vec![Type::I64];
    assert_err(&error(f), K::Signature, &["entry block0", "(i32)", "(i64)"]);

    let mut f = Function::new("f", FuncKind::Kernel, sig(&[], Some(Type::I32)));
    let mut b = FunctionBuilder::new(&mut f);
    b.create_entry_block();
    let z = konst(&mut b, Type::I32, 0);
    b.ret(Some(z));
    assert_err(&error(f), K::Signature, &["kernel returns i32"]);
}

/// A function `(i128) -> i128` that returns its parameter.
fn wide_identity(name: &str, kind: FuncKind) -> Function {
    let ret = (kind == FuncKind::Host).then_some(Type::I128);
    let mut f = Function::new(name, kind, sig(&[Type::I128], ret));
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block()[0];
    b.ret(ret.map(|_| p));
    f
}

#[test]
fn wide_integers_cannot_cross_the_host_boundary() {
    let e = error(wide_identity("f", FuncKind::Host));
    assert_err(
        &e,
        K::Signature,
        &["i128 cannot cross the host boundary", "pointer"],
    );
    let e = error(wide_identity("f", FuncKind::Kernel));
    assert_err(&e, K::Signature, &["i128", "host boundary"]);

    // An internal function may take and return one; the entry passes it through memory.
    let mut m = Module::new();
    let callee = m.add_function(wide_identity("g", FuncKind::Host));
    let mut f = func(&[Type::ptr(Scalar::I128)], None);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block()[0];
    let x = b.load(p);
    let y = b.call(callee, vec![x], Some(Type::I128));
    b.store(p, y.expect("a result"));
    b.ret(None);
    let id = m.add_function(f);
    m.entry = Some(id);
    verify(m).expect("wide values inside the module are fine");

    let mut m = Module::new();
    m.declare_extern(ExternFunc {
        name: "h".into(),
        signature: sig(&[Type::U128], None),
    });
    let (f, _) = add_one();
    let id = m.add_function(f);
    m.entry = Some(id);
    let e = verify(m).expect_err("an extern taking a u128");
    assert_err(&e, K::Signature, &["u128 cannot cross"]);
    assert_eq!(e.function, "h");
}

#[test]
fn rejects_undefined_values() {
    let (mut f, ret) = add_one();
    f.insts[ret].kind = InstKind::Return(Some(Value::from_u32(999)));
    assert_err(&error(f), K::Definition, &["uses v999", "does not exist"]);

    // A value whose defining instruction was dropped from its block.
    let (mut f, ret) = add_one();
    let entry = f.layout[0];
    let add = f.blocks[entry].insts[1];
    f.blocks[entry].insts.remove(1);
    let _ = add;
    let e = error(f);
    assert_err(
        &e,
        K::Definition,
        &["uses v2", "defined by inst1", "not in a laid-out block"],
    );
    let _ = ret;

    // A parameter of a block that is not laid out.
    let (mut f, ret) = add_one();
    let mut b = FunctionBuilder::new(&mut f);
    let other = b.create_block();
    let p = b.append_block_param(other, Type::I32);
    f.layout.pop();
    f.insts[ret].kind = InstKind::Return(Some(p));
    assert_err(
        &error(f),
        K::Definition,
        &["uses v3", "parameter of block1"],
    );

    // A value that claims to be the result of an instruction producing another value.
    let (mut f, ret) = add_one();
    let entry = f.layout[0];
    let one = f.blocks[entry].insts[0];
    let stray = f.values.push(ValueData {
        ty: Type::I32,
        def: ValueDef::Result(one),
    });
    f.insts[ret].kind = InstKind::Return(Some(stray));
    assert_err(
        &error(f),
        K::Definition,
        &["uses v3", "result of inst0", "does not produce it"],
    );

    // Instructions and values that do not exist, or are listed twice.
    let (mut f, _) = add_one();
    let entry = f.layout[0];
    f.blocks[entry].insts.insert(0, Inst::from_u32(77));
    assert_err(&error(f), K::Definition, &["inst77", "does not exist"]);

    let (mut f, _) = add_one();
    let entry = f.layout[0];
    let first = f.blocks[entry].insts[0];
    f.blocks[entry].insts.insert(0, first);
    assert_err(
        &error(f),
        K::Definition,
        &["inst0 is listed more than once"],
    );

    let (mut f, _) = add_one();
    let entry = f.layout[0];
    f.blocks[entry].params.push(Value::from_u32(4000));
    assert_err(&error(f), K::Definition, &["v4000", "does not exist"]);
}

#[test]
fn rejects_uses_not_dominated_by_their_definition() {
    // if c { y = x + 1 } ; return y   (y is defined in one arm only)
    let mut f = func(&[Type::BOOL, Type::I32], Some(Type::I32));
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let (t, join) = (b.create_block(), b.create_block());
    b.branch(p[0], t, vec![], join, vec![]);
    b.switch_to_block(t);
    let y = b.binary(BinaryOp::Add, p[1], p[1]);
    b.jump(join, vec![]);
    b.switch_to_block(join);
    b.ret(Some(y));
    assert_err(
        &error(f),
        K::Dominance,
        &["uses v2", "defined in block1", "does not dominate"],
    );

    // A use before the definition in the same block.
    let (mut f, _) = add_one();
    let entry = f.layout[0];
    f.blocks[entry].insts.swap(0, 1);
    assert_err(&error(f), K::Dominance, &["uses v1 before its definition"]);
}

#[test]
fn rejects_bad_block_arguments() {
    let mut f = func(&[Type::I32], Some(Type::I32));
    let mut b = FunctionBuilder::new(&mut f);
    let x = b.create_entry_block()[0];
    let next = b.create_block();
    let jump = b.jump(next, vec![x]);
    let p = b.append_block_param(next, Type::I32);
    b.switch_to_block(next);
    b.ret(Some(p));
    verify(module_of(f.clone())).expect("valid before breaking");

    let mut g = f.clone();
    g.insts[jump].kind = InstKind::Jump(BlockCall {
        block: next,
        args: vec![],
    });
    assert_err(
        &error(g),
        K::BlockArgs,
        &["passes 0 arguments to block1", "1 parameters"],
    );

    // Pass a bool constant instead of x.
    let mut g = f.clone();
    let entry = g.layout[0];
    let cinst = g.insts.push(InstData {
        kind: InstKind::Const(Const {
            ty: Type::BOOL,
            bits: 1,
        }),
        result: None,
    });
    let c = g.values.push(ValueData {
        ty: Type::BOOL,
        def: ValueDef::Result(cinst),
    });
    g.insts[cinst].result = Some(c);
    g.blocks[entry].insts.insert(0, cinst);
    g.insts[jump].kind = InstKind::Jump(BlockCall {
        block: next,
        args: vec![c],
    });
    assert_err(
        &error(g),
        K::BlockArgs,
        &["v2: bool as argument 0 of block1", "parameter v1 is i32"],
    );
}

/// Builds `f(a: A, b: B) -> R` whose body is one instruction of kind `kind(a, b)` with a
/// result of type `result`, returned if it matches `R`.
fn one_inst(
    params: &[Type],
    ret: Option<Type>,
    result: Option<Type>,
    kind: impl FnOnce(&[Value]) -> InstKind,
) -> Function {
    let mut f = func(params, ret);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let (_, r) = b.append(kind(&p), result);
    b.ret(r.filter(|_| ret.is_some()));
    f
}

#[test]
fn rejects_operator_type_errors() {
    let i32s = [Type::I32, Type::I32];
    let e = error(one_inst(
        &[Type::I32, Type::I64],
        Some(Type::I32),
        Some(Type::I32),
        |p| InstKind::Binary(BinaryOp::Add, p[0], p[1]),
    ));
    assert_err(&e, K::Type, &["(add)", "operand types differ: i32 vs i64"]);

    let e = error(one_inst(&i32s, Some(Type::I64), Some(Type::I64), |p| {
        InstKind::Binary(BinaryOp::Add, p[0], p[1])
    }));
    assert_err(&e, K::Type, &["result type differs", "i64 vs i32"]);

    let e = error(one_inst(
        &[Type::F32, Type::F32],
        Some(Type::F32),
        Some(Type::F32),
        |p| InstKind::Binary(BinaryOp::Xor, p[0], p[1]),
    ));
    assert_err(&e, K::Type, &["(xor)", "bitwise operator on f32"]);

    let e = error(one_inst(
        &[Type::I32],
        Some(Type::I32),
        Some(Type::I32),
        |p| InstKind::Unary(UnaryOp::Sqrt, p[0]),
    ));
    assert_err(&e, K::Type, &["(sqrt)", "not defined on i32"]);

    let e = error(one_inst(
        &[Type::F64],
        Some(Type::F64),
        Some(Type::F64),
        |p| InstKind::Unary(UnaryOp::Not, p[0]),
    ));
    assert_err(&e, K::Type, &["(not)", "not defined on f64"]);

    let e = error(one_inst(&i32s, Some(Type::I32), Some(Type::I32), |p| {
        InstKind::Fma(p[0], p[1], p[1])
    }));
    assert_err(&e, K::Type, &["(fma)", "not defined on i32"]);

    let e = error(one_inst(&i32s, Some(Type::I32), Some(Type::I32), |p| {
        InstKind::Cmp(CmpOp::Lt, p[0], p[1])
    }));
    assert_err(&e, K::Type, &["(lt)", "the result is i32, expected bool"]);

    let e = error(one_inst(
        &[Type::I32, Type::U32],
        Some(Type::BOOL),
        Some(Type::BOOL),
        |p| InstKind::Cmp(CmpOp::Eq, p[0], p[1]),
    ));
    assert_err(&e, K::Type, &["(eq)", "operand types differ: i32 vs u32"]);

    let e = error(one_inst(&i32s, Some(Type::I32), Some(Type::I32), |p| {
        InstKind::Select(p[0], p[1], p[1])
    }));
    assert_err(
        &e,
        K::Type,
        &["(select)", "condition v0 is i32, expected bool"],
    );

    let e = error(one_inst(
        &[Type::BOOL, Type::I32, Type::I64],
        Some(Type::I32),
        Some(Type::I32),
        |p| InstKind::Select(p[0], p[1], p[2]),
    ));
    assert_err(&e, K::Type, &["arm types differ"]);

    let e = error(one_inst(&[Type::I32], None, None, |p| {
        InstKind::Unary(UnaryOp::Neg, p[0])
    }));
    assert_err(&e, K::Type, &["(neg)", "has no result"]);
}

#[test]
fn rejects_memory_and_cast_type_errors() {
    let ptr = Type::ptr(Scalar::I32);
    let e = error(one_inst(
        &[Type::I64],
        Some(Type::I32),
        Some(Type::I32),
        |p| InstKind::Load(p[0]),
    ));
    assert_err(
        &e,
        K::Type,
        &["(load)", "address v0 has type i64, expected a pointer"],
    );

    let e = error(one_inst(&[ptr], Some(Type::I64), Some(Type::I64), |p| {
        InstKind::Load(p[0])
    }));
    assert_err(
        &e,
        K::Type,
        &[
            "(load)",
            "the result (the pointee type) is i64, expected i32",
        ],
    );

    let e = error(one_inst(&[ptr, Type::F32], None, None, |p| {
        InstKind::Store(p[0], p[1])
    }));
    assert_err(
        &e,
        K::Type,
        &["(store)", "stored value v1 is f32, expected i32"],
    );

    let e = error(one_inst(&[ptr, Type::F32], Some(ptr), Some(ptr), |p| {
        InstKind::ElemPtr(p[0], p[1])
    }));
    assert_err(
        &e,
        K::Type,
        &["(elem_ptr)", "index v1 has type f32, expected an integer"],
    );

    let e = error(one_inst(
        &[Type::I64, Type::I64],
        Some(Type::I64),
        Some(Type::I64),
        |p| InstKind::ElemPtr(p[0], p[1]),
    ));
    assert_err(&e, K::Type, &["(elem_ptr)", "expected a pointer"]);

    let e = error(one_inst(&[ptr], Some(Type::I32), Some(Type::I32), |p| {
        InstKind::Cast(p[0])
    }));
    assert_err(&e, K::Type, &["(cast)", "cannot cast ptr<i32> to i32"]);
}

#[test]
fn rejects_branch_conditions_and_returns_of_the_wrong_type() {
    let mut f = func(&[Type::I32], None);
    let mut b = FunctionBuilder::new(&mut f);
    let x = b.create_entry_block()[0];
    let next = b.create_block();
    b.branch(x, next, vec![], next, vec![]);
    b.switch_to_block(next);
    b.ret(None);
    assert_err(
        &error(f),
        K::Type,
        &["(br)", "condition v0 is i32, expected bool"],
    );

    let (mut f, _) = add_one();
    f.signature.ret = Some(Type::I64);
    assert_err(
        &error(f),
        K::Signature,
        &["returns i32 but the signature returns i64"],
    );

    let (mut f, _) = add_one();
    f.signature.ret = None;
    assert_err(
        &error(f),
        K::Signature,
        &["returns i32 but the signature returns nothing"],
    );

    let (mut f, ret) = add_one();
    f.insts[ret].kind = InstKind::Return(None);
    assert_err(
        &error(f),
        K::Signature,
        &["returns nothing but the signature returns i32"],
    );
}

#[test]
fn rejects_bad_calls() {
    let m = good_module();
    let main = m.entry.unwrap();
    let find = |m: &Module, pred: &dyn Fn(&InstKind) -> bool| {
        m.functions
            .iter()
            .flat_map(|(id, f)| f.insts.iter().map(move |(i, d)| (id, i, d)))
            .find(|x| pred(&x.2.kind))
            .map(|(id, i, _)| (id, i))
            .unwrap()
    };
    let (fid, call) = find(&m, &|k| matches!(k, InstKind::Call(..)));
    let (eid, call_ext) = find(&m, &|k| matches!(k, InstKind::CallExtern(..)));

    let mut bad = m.clone();
    if let InstKind::Call(_, args) = &mut bad.functions[fid].insts[call].kind {
        args.pop();
    }
    let e = verify(bad).unwrap_err();
    assert_eq!(e.function, "main");
    assert_err(&e, K::Call, &["calls @sum", "1 arguments, but it takes 2"]);

    let mut bad = m.clone();
    if let InstKind::Call(_, args) = &mut bad.functions[fid].insts[call].kind {
        args.swap(0, 1);
    }
    assert_err(
        &verify(bad).unwrap_err(),
        K::Call,
        &["argument 0", "is u64, but the parameter is ptr<f64>"],
    );

    let mut bad = m.clone();
    if let InstKind::Call(callee, _) = &mut bad.functions[fid].insts[call].kind {
        *callee = FuncId::from_u32(9);
    }
    assert_err(
        &verify(bad).unwrap_err(),
        K::Call,
        &["calls fn9, which does not exist"],
    );

    let mut bad = m.clone();
    let r = bad.functions[fid].insts[call].result.unwrap();
    bad.functions[fid].values[r].ty = Type::F32;
    let e = verify(bad).unwrap_err();
    assert_eq!(e.kind, K::Call, "{e}");
    assert!(
        e.message
            .contains("result is f32, but the callee returns f64"),
        "{e}"
    );

    let mut bad = m.clone();
    if let InstKind::CallExtern(ext, _) = &mut bad.functions[eid].insts[call_ext].kind {
        *ext = ExternId::from_u32(3);
    }
    let e = verify(bad).unwrap_err();
    assert_eq!(e.function, "sum");
    assert_err(&e, K::Call, &["calls extern3, which does not exist"]);
    let _ = main;
}

#[test]
fn rejects_non_normalized_constants() {
    let mut f = func(&[], Some(Type::U8));
    let mut b = FunctionBuilder::new(&mut f);
    b.create_entry_block();
    let c = konst(&mut b, Type::U8, 0x1ff);
    b.ret(Some(c));
    assert_err(
        &error(f),
        K::Const,
        &["0x1ff", "not normalized for u8", "0xff"],
    );

    let mut f = func(&[], Some(Type::BOOL));
    let mut b = FunctionBuilder::new(&mut f);
    b.create_entry_block();
    let c = konst(&mut b, Type::BOOL, 2);
    b.ret(Some(c));
    assert_err(&error(f), K::Const, &["not normalized for bool"]);

    let mut f = func(&[], Some(Type::I32));
    let mut b = FunctionBuilder::new(&mut f);
    b.create_entry_block();
    let (_, c) = b.append(
        InstKind::Const(Const {
            ty: Type::I64,
            bits: 1,
        }),
        Some(Type::I32),
    );
    b.ret(c);
    assert_err(
        &error(f),
        K::Type,
        &["(const)", "the result is i32, expected i64"],
    );
}

#[test]
fn garbage_never_panics() {
    // Every kind of out-of-range id, in every position.
    let v = Value::from_u32(u32::MAX - 1);
    let blk = Block::from_u32(u32::MAX - 1);
    let kinds = [
        InstKind::Unary(UnaryOp::Neg, v),
        InstKind::Binary(BinaryOp::Add, v, v),
        InstKind::Fma(v, v, v),
        InstKind::Select(v, v, v),
        InstKind::Load(v),
        InstKind::Store(v, v),
        InstKind::Call(FuncId::from_u32(u32::MAX - 1), vec![v]),
        InstKind::CallExtern(ExternId::from_u32(u32::MAX - 1), vec![v]),
        InstKind::Jump(BlockCall {
            block: blk,
            args: vec![v],
        }),
        InstKind::Branch {
            cond: v,
            then_dest: BlockCall {
                block: blk,
                args: vec![],
            },
            else_dest: BlockCall {
                block: blk,
                args: vec![],
            },
        },
        InstKind::Return(Some(v)),
    ];
    for kind in kinds {
        let (mut f, ret) = add_one();
        let is_term = kind.is_terminator();
        if is_term {
            f.insts[ret].kind = kind;
        } else {
            let entry = f.layout[0];
            let i = f.insts.push(InstData {
                kind,
                result: Some(v),
            });
            f.blocks[entry].insts.insert(0, i);
        }
        assert!(verify(module_of(f)).is_err());
    }
    let (mut f, _) = add_one();
    f.layout = vec![blk];
    assert!(verify(module_of(f)).is_err());
    let (mut f, _) = add_one();
    let entry = f.layout[0];
    f.values[f.blocks[entry].params[0]].def = ValueDef::Param(blk, 3);
    assert_err(
        &error(f),
        K::Definition,
        &["recorded as parameter 3 of block4294967294"],
    );
}

#[test]
fn random_corruptions_never_panic() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n.max(1) as u64) as usize
    };
    let types = [
        Type::I32,
        Type::BOOL,
        Type::F64,
        Type::U64,
        Type::ptr(Scalar::F64),
    ];
    let mut accepted = 0;
    for _ in 0..3000 {
        let mut m = good_module();
        for _ in 0..1 + next(3) {
            let fid = FuncId::from_u32(next(m.functions.len()) as u32);
            let f = &mut m.functions[fid];
            // Ids slightly out of range as well as valid ones.
            let (nv, ni, nb) = (f.values.len() + 2, f.insts.len() + 2, f.blocks.len() + 2);
            let inst = Inst::from_u32(next(f.insts.len()) as u32);
            if f.layout.is_empty() {
                break;
            }
            match next(9) {
                0 => {
                    let v = Value::from_u32(next(nv) as u32);
                    let mut first = true;
                    f.insts[inst].kind.map_operands(|o| {
                        let r = if first { v } else { o };
                        first = false;
                        r
                    });
                }
                1 => {
                    let v = Value::from_u32(next(f.values.len()) as u32);
                    f.values[v].ty = types[next(types.len())];
                }
                2 => {
                    let b = Block::from_u32(next(nb) as u32);
                    if let Some(call) = f.insts[inst].kind.successors_mut().next() {
                        call.block = b;
                    }
                }
                3 => {
                    let i = next(f.layout.len());
                    f.layout.remove(i);
                }
                4 => {
                    let b = f.layout[next(f.layout.len())];
                    let list = &mut f.blocks[b].insts;
                    if !list.is_empty() {
                        let i = next(list.len());
                        list[i] = Inst::from_u32(next(ni) as u32);
                    }
                }
                5 => {
                    let v = Value::from_u32(next(f.values.len()) as u32);
                    let b = Block::from_u32(next(nb) as u32);
                    f.values[v].def = ValueDef::Param(b, next(3) as u32);
                }
                6 => {
                    let b = f.layout[next(f.layout.len())];
                    let v = Value::from_u32(next(nv) as u32);
                    f.blocks[b].params.push(v);
                }
                7 => {
                    f.insts[inst].result = Some(Value::from_u32(next(nv) as u32));
                }
                _ => {
                    let b1 = f.layout[next(f.layout.len())];
                    let b2 = f.layout[next(f.layout.len())];
                    let moved = f.blocks[b1].insts.pop();
                    f.blocks[b2].insts.extend(moved);
                }
            }
        }
        if let Ok(v) = verify(m) {
            accepted += 1;
            let (m, _) = crate::passes::optimize(v, &crate::passes::PassOptions::default());
            check_module(m.module()).expect("passes keep a valid mutant valid");
        }
    }
    // Some mutations are harmless (an unused type change, a dead jump target...).
    assert!(accepted > 0);
}

#[test]
fn dynamic_shared_memory_is_for_kernels_and_sized_by_a_u32() {
    let shared = Type::Ptr(Scalar::F32, crate::AddressSpace::Generic);
    let e = error(one_inst(&[], Some(shared), Some(shared), |_| {
        InstKind::DynamicShared { elem: Scalar::F32 }
    }));
    assert_err(
        &e,
        K::Type,
        &["(dynamic_shared)", "only allowed in kernels"],
    );
    let e = error(one_inst(&[], Some(Type::U32), Some(Type::U32), |_| {
        InstKind::DynamicSharedBytes
    }));
    assert_err(
        &e,
        K::Type,
        &["(dynamic_shared_bytes)", "only allowed in kernels"],
    );

    // A launch whose shared memory size is not a `u32`.
    let mut m = Module::new();
    let k = m.add_function(Function::new("k", FuncKind::Kernel, sig(&[], None)));
    {
        let mut b = FunctionBuilder::new(&mut m.functions[k]);
        b.create_entry_block();
        b.ret(None);
    }
    let mut f = func(&[Type::U64], None);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let one = konst(&mut b, Type::U32, 1);
    b.launch_shared(k, [one; 3], [one; 3], Some(p[0]), vec![]);
    b.ret(None);
    let id = m.add_function(f);
    m.entry = Some(id);
    let e = verify(m).expect_err("a u64 size is rejected");
    assert_err(&e, K::Type, &["shared memory size v0", "u64"]);
}

#[test]
fn atomics_are_checked_against_their_element_type() {
    let f64p = Type::ptr(Scalar::F64);
    let e = error(one_inst(
        &[f64p, Type::F64],
        Some(Type::F64),
        Some(Type::F64),
        |p| InstKind::AtomicRmw {
            op: crate::AtomicOp::Min,
            ptr: p[0],
            value: p[1],
            order: crate::MemOrder::Relaxed,
            scope: crate::Scope::Device,
        },
    ));
    assert_err(
        &e,
        K::Type,
        &["(atomic_rmw)", "atomic min is not defined on f64"],
    );
    let i32p = Type::ptr(Scalar::I32);
    let e = error(one_inst(
        &[i32p, Type::I64],
        Some(Type::I32),
        Some(Type::I32),
        |p| InstKind::AtomicRmw {
            op: crate::AtomicOp::Add,
            ptr: p[0],
            value: p[1],
            order: crate::MemOrder::SeqCst,
            scope: crate::Scope::Block,
        },
    ));
    assert_err(&e, K::Type, &["operand v1 is i64, expected i32"]);
    let f32p = Type::ptr(Scalar::F32);
    let e = error(one_inst(
        &[f32p, Type::F32],
        Some(Type::F32),
        Some(Type::F32),
        |p| InstKind::AtomicCas {
            ptr: p[0],
            expected: p[1],
            new: p[1],
            order: crate::MemOrder::Relaxed,
            scope: crate::Scope::Device,
        },
    ));
    assert_err(&e, K::Type, &["compare-exchange is not defined on f32"]);
    let e = error(one_inst(&[], None, None, |_| InstKind::Fence {
        order: crate::MemOrder::Relaxed,
        scope: crate::Scope::Device,
    }));
    assert_err(&e, K::Type, &["(fence)", "cannot be relaxed"]);
}
