//! Test helpers for passes (here and in crates above, through the `test-util` feature): function construction shortcuts, verification and a tiny
//! reference evaluator used to check that passes preserve behaviour.

use crate::builder::FunctionBuilder;
use crate::entities::{Block, Value};
use crate::function::{FuncKind, Function, Signature};
use crate::instructions::{BinaryOp, CmpOp, Const, InstKind};
use crate::module::Module;
use crate::semantics;
use crate::trap::Trap;
use crate::types::Type;
use crate::verifier::check_module;
use cranelift_entity::EntityRef;

/// A host function with the given parameter and return types and no blocks.
pub fn new_func(params: &[Type], ret: Option<Type>) -> Function {
    Function::new(
        "f",
        FuncKind::Host,
        Signature {
            params: params.to_vec(),
            ret,
        },
    )
}

/// A constant of type `ty` holding `v` (truncated to the type).
pub fn k(b: &mut FunctionBuilder<'_>, ty: Type, v: i64) -> Value {
    b.constant(Const {
        ty,
        bits: semantics::normalize(ty, v as u128),
    })
}

/// A boolean constant.
pub fn kb(b: &mut FunctionBuilder<'_>, v: bool) -> Value {
    b.constant(Const {
        ty: Type::BOOL,
        bits: u128::from(v),
    })
}

/// An `f64` constant.
pub fn kf(b: &mut FunctionBuilder<'_>, v: f64) -> Value {
    b.constant(Const {
        ty: Type::F64,
        bits: u128::from(v.to_bits()),
    })
}

/// Panics with the verifier's message (and the function) if `f` is invalid.
pub fn assert_valid(f: &Function) {
    let mut m = Module::new();
    let id = m.add_function(f.clone());
    m.entry = Some(id);
    if let Err(e) = check_module(&m) {
        panic!("{e}\n{f}");
    }
}

/// Runs `pass` on `f`, checks the result verifies, and returns the stats.
pub fn run<T>(f: &mut Function, pass: impl FnOnce(&mut Function) -> T) -> T {
    assert_valid(f);
    let r = pass(f);
    assert_valid(f);
    r
}

/// Evaluates a function (without memory or calls) on arguments encoded as bits; panics on
/// unsupported instructions or after a million steps.
pub fn eval(f: &Function, args: &[u64]) -> Result<Option<u64>, Trap> {
    let mut env = vec![0u128; f.values.len()];
    let mut block: Block = f.layout[0];
    for (p, a) in f.blocks[block].params.iter().zip(args) {
        env[p.index()] = u128::from(*a);
    }
    let ty = |v: Value| f.values[v].ty;
    let scalar = |v: Value| ty(v).scalar().expect("scalar operand");
    for _ in 0..1_000_000 {
        let mut next = None;
        for &inst in &f.blocks[block].insts {
            let data = &f.insts[inst];
            let result = match &data.kind {
                InstKind::Const(c) => c.bits,
                InstKind::Unary(op, a) => semantics::unary(*op, scalar(*a), env[a.index()]),
                InstKind::Binary(op, a, b) => {
                    semantics::binary(*op, scalar(*a), env[a.index()], env[b.index()])?
                }
                InstKind::Fma(a, b, c) => {
                    semantics::fma(scalar(*a), env[a.index()], env[b.index()], env[c.index()])
                }
                InstKind::Math(m, a) => semantics::math(*m, scalar(*a), env[a.index()]),
                InstKind::Math2(m, a, b) => {
                    semantics::math2(*m, scalar(*a), env[a.index()], env[b.index()])
                }
                InstKind::Cmp(op, a, b) => u128::from(semantics::compare(
                    *op,
                    ty(*a),
                    env[a.index()],
                    env[b.index()],
                )),
                InstKind::Cast(a) => {
                    let to = ty(data.result.expect("cast result"));
                    semantics::normalize(to, semantics::cast(ty(*a), to, env[a.index()]))
                }
                InstKind::Select(c, a, b) => {
                    if env[c.index()] & 1 != 0 {
                        env[a.index()]
                    } else {
                        env[b.index()]
                    }
                }
                InstKind::Jump(dest) => {
                    next = Some(dest);
                    0
                }
                InstKind::Branch {
                    cond,
                    then_dest,
                    else_dest,
                } => {
                    next = Some(if env[cond.index()] & 1 != 0 {
                        then_dest
                    } else {
                        else_dest
                    });
                    0
                }
                InstKind::Return(v) => return Ok(v.map(|v| env[v.index()] as u64)),
                other => panic!("the test evaluator does not support {other:?}"),
            };
            if let Some(r) = data.result {
                env[r.index()] = result;
            }
        }
        let dest = next.expect("block ends in a jump or branch");
        let vals: Vec<u128> = dest.args.iter().map(|a| env[a.index()]).collect();
        for (p, v) in f.blocks[dest.block].params.iter().zip(vals) {
            env[p.index()] = v;
        }
        block = dest.block;
    }
    panic!("evaluation did not terminate")
}

/// `fn(ptrs.., init, bound) -> carried[0]`: a loop `for i in init..bound` (`i` of type
/// `index`) carrying values of `carried` (type, initial bits). `body` gets the pointer
/// parameters, `i` and the carried values and returns the carried values' next ones; the
/// function returns the first carried value, or nothing.
pub fn counted_loop(
    ptrs: &[Type],
    index: Type,
    carried: &[(Type, u64)],
    body: impl FnOnce(&mut FunctionBuilder<'_>, &[Value], Value, &[Value]) -> Vec<Value>,
) -> Function {
    let mut params = ptrs.to_vec();
    params.extend([index, index]);
    let n = ptrs.len();
    FunctionBuilder::build(
        "looped",
        FuncKind::Host,
        &params,
        carried.first().map(|c| c.0),
        |b, p| {
            let head = b.create_block();
            let i = b.append_block_param(head, index);
            let acc: Vec<Value> = carried
                .iter()
                .map(|(ty, _)| b.append_block_param(head, *ty))
                .collect();
            let (inner, exit) = (b.create_block(), b.create_block());
            let mut start = vec![p[n]];
            start.extend(carried.iter().map(|&(ty, bits)| b.const_bits(ty, bits)));
            b.jump(head, start);
            b.switch_to_block(head);
            let more = b.cmp(CmpOp::Lt, i, p[n + 1]);
            b.branch(more, inner, vec![], exit, vec![]);
            b.switch_to_block(inner);
            let next = body(b, &p[..n], i, &acc);
            let one = b.const_bits(index, 1);
            let i2 = b.binary(BinaryOp::Add, i, one);
            let mut args = vec![i2];
            args.extend(next);
            b.jump(head, args);
            b.switch_to_block(exit);
            b.ret(acc.first().copied());
        },
    )
}
