//! Every operator on every type, compared bit for bit with [`nacre_ir::semantics`].
//!
//! The operator tests cover combinations the verifier rejects too (bitwise operators on
//! floats, `sqrt` on integers, ...): the reference semantics defines them all, and the
//! interpreter must agree with it wherever it runs code.

use super::{konst, single, single_unverified};
use nacre_ir::semantics::{self, normalize};
use nacre_ir::{BinaryOp, CmpOp, Scalar, Trap, Type, UnaryOp};

/// Interesting values of a scalar type, normalised.
fn samples(s: Scalar) -> Vec<u64> {
    let raw: Vec<u64> = match s {
        Scalar::Bool => vec![0, 1],
        Scalar::F32 => [
            0.0f32,
            -0.0,
            1.0,
            -1.5,
            2.5,
            0.5,
            -0.5,
            3.7,
            -3.7,
            1e10,
            -3e9,
            2147483648.0,
            -2147483904.0,
            4294967296.0,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
            1e-42,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
        ]
        .iter()
        .map(|x| u64::from(x.to_bits()))
        .chain([0x7fa0_0001, 0xffc0_1234])
        .collect(),
        Scalar::F64 => [
            0.0f64,
            -0.0,
            1.0,
            -1.5,
            2.5,
            0.5,
            -0.5,
            3.7,
            -3.7,
            1e10,
            -3e9,
            1e20,
            -1e19,
            2147483648.0,
            -2147483649.0,
            9.3e18,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            5e-324,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
        ]
        .iter()
        .map(|x| x.to_bits())
        .chain([0x7ff4_0000_0000_0001, 0xfff8_0000_dead_beef])
        .collect(),
        _ => {
            let bits = s.bits();
            let min = if s.is_signed_int() {
                1u64 << (bits - 1)
            } else {
                0
            };
            let max = if s.is_signed_int() {
                (1u64 << (bits - 1)) - 1
            } else {
                u64::MAX
            };
            vec![
                0,
                1,
                2,
                3,
                5,
                7,
                8,
                9,
                15,
                16,
                31,
                32,
                33,
                63,
                64,
                100,
                127,
                128,
                200,
                255,
                256,
                1000,
                65535,
                65536,
                0x1234_5678,
                0x8000_0000,
                0xdead_beef_cafe_f00d,
                u64::MAX,
                u64::MAX - 1,
                u64::MAX - 6,
                -100i64 as u64,
                min,
                min + 1,
                max,
                max - 1,
            ]
        }
    };
    let mut v: Vec<u64> = raw
        .into_iter()
        .map(|x| normalize(Type::Scalar(s), u128::from(x)) as u64)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Bits above the type's width, which arguments from outside may carry and which must be
/// ignored.
fn garbage(s: Scalar) -> u64 {
    if s.bits() == 64 {
        0
    } else {
        0xa5a5_a5a5_a5a5_a5a5 & !(normalize(Type::Scalar(s), u128::from(u64::MAX)) as u64)
    }
}

#[test]
fn binary_operators_match_semantics() {
    for s in Scalar::HOST {
        let ty = Type::Scalar(s);
        for op in BinaryOp::ALL {
            let exe = single_unverified(vec![ty, ty], Some(ty), |b, p| {
                let r = b.binary(op, p[0], p[1]);
                b.ret(Some(r));
            });
            for &x in &samples(s) {
                for &y in &samples(s) {
                    let want =
                        semantics::binary(op, s, u128::from(x), u128::from(y)).map(|r| r as u64);
                    let got =
                        exe.try_call(&[x | garbage(s), y | garbage(s)])
                            .map_err(|e| match e {
                                crate::ExecError::Trap(t) => t,
                                other => panic!("{other}"),
                            });
                    assert_eq!(got, want, "{}.{s} {x:#x} {y:#x}", op.name());
                }
            }
        }
    }
}

#[test]
fn unary_operators_match_semantics() {
    for s in Scalar::HOST {
        let ty = Type::Scalar(s);
        for op in UnaryOp::ALL {
            let exe = single_unverified(vec![ty], Some(ty), |b, p| {
                let r = b.unary(op, p[0]);
                b.ret(Some(r));
            });
            for &x in &samples(s) {
                let want = semantics::unary(op, s, u128::from(x)) as u64;
                assert_eq!(
                    exe.try_call(&[x | garbage(s)]),
                    Ok(want),
                    "{}.{s} {x:#x}",
                    op.name()
                );
            }
        }
    }
}

/// Pointer types and every scalar, for comparisons and casts.
fn all_types() -> Vec<Type> {
    let mut v: Vec<Type> = Scalar::HOST.iter().map(|&s| Type::Scalar(s)).collect();
    v.push(Type::ptr(Scalar::U8));
    v
}

fn samples_of(ty: Type) -> Vec<u64> {
    match ty {
        Type::Scalar(s) => samples(s),
        Type::Ptr(..) => samples(Scalar::U64),
    }
}

#[test]
fn comparisons_match_semantics_as_values() {
    for ty in all_types() {
        for op in CmpOp::ALL {
            let exe = single(vec![ty, ty], Some(Type::BOOL), |b, p| {
                let r = b.cmp(op, p[0], p[1]);
                b.ret(Some(r));
            });
            for &x in &samples_of(ty) {
                for &y in &samples_of(ty) {
                    let want = u64::from(semantics::compare(op, ty, u128::from(x), u128::from(y)));
                    assert_eq!(
                        exe.try_call(&[x, y]),
                        Ok(want),
                        "{}.{ty} {x:#x} {y:#x}",
                        op.name()
                    );
                }
            }
        }
    }
}

/// The ways a branch on a comparison can be laid out; each returns the comparison's value.
#[derive(Copy, Clone, Debug)]
enum Shape {
    /// `brif c, t, e` with no block arguments, `t` laid out first.
    Plain,
    /// As `Plain`, but `e` laid out first (the branch jumps to `then`).
    ElseFirst,
    /// Both edges pass an argument to one join block.
    BothArgs,
    /// Only the `then` edge passes an argument.
    ThenArgs,
    /// Only the `else` edge passes an argument.
    ElseArgs,
    /// The comparison is also passed on, so it cannot be fused.
    Unfused,
}

const SHAPES: [Shape; 6] = [
    Shape::Plain,
    Shape::ElseFirst,
    Shape::BothArgs,
    Shape::ThenArgs,
    Shape::ElseArgs,
    Shape::Unfused,
];

fn branch_on(op: CmpOp, ty: Type, shape: Shape) -> crate::InterpExecutable {
    single(vec![ty, ty], Some(Type::BOOL), |b, p| {
        let one = konst(b, Type::BOOL, 1);
        let zero = konst(b, Type::BOOL, 0);
        let c = b.cmp(op, p[0], p[1]);
        let ret_block = |b: &mut nacre_ir::FunctionBuilder<'_>, bits: u64| {
            let blk = b.create_block();
            b.switch_to_block(blk);
            let v = konst(b, Type::BOOL, bits);
            b.ret(Some(v));
            blk
        };
        let entry = b.current_block().expect("entry block");
        match shape {
            Shape::Plain | Shape::ElseFirst => {
                let (t, e) = if let Shape::Plain = shape {
                    let t = ret_block(b, 1);
                    (t, ret_block(b, 0))
                } else {
                    let e = ret_block(b, 0);
                    (ret_block(b, 1), e)
                };
                b.switch_to_block(entry);
                b.branch(c, t, vec![], e, vec![]);
            }
            Shape::BothArgs | Shape::ThenArgs | Shape::ElseArgs | Shape::Unfused => {
                let join = b.create_block();
                let j = b.append_block_param(join, Type::BOOL);
                let j2 = b.append_block_param(join, Type::BOOL);
                b.switch_to_block(join);
                let same = b.cmp(CmpOp::Eq, j, j2);
                let r = b.select(same, j, zero);
                b.ret(Some(r));
                b.switch_to_block(entry);
                match shape {
                    Shape::BothArgs => b.branch(c, join, vec![one, one], join, vec![zero, zero]),
                    Shape::Unfused => b.branch(c, join, vec![c, one], join, vec![zero, c]),
                    Shape::ThenArgs => {
                        let e = ret_block(b, 0);
                        b.switch_to_block(entry);
                        b.branch(c, join, vec![one, one], e, vec![])
                    }
                    _ => {
                        let t = ret_block(b, 1);
                        b.switch_to_block(entry);
                        b.branch(c, t, vec![], join, vec![zero, zero])
                    }
                };
            }
        }
    })
}

#[test]
fn comparisons_match_semantics_in_branches() {
    for ty in all_types() {
        for op in CmpOp::ALL {
            for shape in SHAPES {
                let exe = branch_on(op, ty, shape);
                for &x in &samples_of(ty) {
                    for &y in &samples_of(ty) {
                        let want =
                            u64::from(semantics::compare(op, ty, u128::from(x), u128::from(y)));
                        assert_eq!(
                            exe.try_call(&[x, y]),
                            Ok(want),
                            "{}.{ty} {shape:?} {x:#x} {y:#x}",
                            op.name()
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn casts_match_semantics() {
    let mut types = all_types();
    types.push(Type::ptr(Scalar::F64));
    for &from in &types {
        for &to in &types {
            let exe = single_unverified(vec![from], Some(to), |b, p| {
                let r = b.cast(p[0], to);
                b.ret(Some(r));
            });
            for &x in &samples_of(from) {
                let want = semantics::cast(from, to, u128::from(x)) as u64;
                assert_eq!(exe.try_call(&[x]), Ok(want), "cast {from} -> {to} {x:#x}");
            }
        }
    }
}

#[test]
fn fma_and_select_match_semantics() {
    for s in Scalar::HOST {
        let ty = Type::Scalar(s);
        let fma = single_unverified(vec![ty, ty, ty], Some(ty), |b, p| {
            let r = b.fma(p[0], p[1], p[2]);
            b.ret(Some(r));
        });
        let select = single_unverified(vec![Type::BOOL, ty, ty], Some(ty), |b, p| {
            let r = b.select(p[0], p[1], p[2]);
            b.ret(Some(r));
        });
        let xs = samples(s);
        for &x in &xs {
            for &y in &xs {
                for &z in xs.iter().step_by(3) {
                    assert_eq!(
                        fma.try_call(&[x, y, z]),
                        Ok(semantics::fma(s, u128::from(x), u128::from(y), u128::from(z)) as u64),
                        "fma.{s} {x:#x} {y:#x} {z:#x}"
                    );
                }
                assert_eq!(select.try_call(&[1, x, y]), Ok(x));
                assert_eq!(select.try_call(&[0, x, y]), Ok(y));
            }
        }
    }
}

#[test]
fn narrow_wrapping_examples() {
    let exe = single(vec![Type::I8, Type::I8], Some(Type::I8), |b, p| {
        let r = b.binary(BinaryOp::Add, p[0], p[1]);
        b.ret(Some(r));
    });
    assert_eq!(
        exe.try_call(&[127, 1]),
        Ok(0x80),
        "i8 127 + 1 wraps to -128"
    );
    let exe = single(vec![Type::U16, Type::U16], Some(Type::U16), |b, p| {
        let r = b.binary(BinaryOp::Shl, p[0], p[1]);
        b.ret(Some(r));
    });
    assert_eq!(exe.try_call(&[0xffff, 4]), Ok(0xfff0));
    assert_eq!(
        exe.try_call(&[1, 17]),
        Ok(2),
        "shift amount masked to 4 bits"
    );
    let exe = single(vec![Type::I16], Some(Type::I16), |b, p| {
        let r = b.unary(UnaryOp::Neg, p[0]);
        b.ret(Some(r));
    });
    assert_eq!(exe.try_call(&[1]), Ok(0xffff));
    assert_eq!(exe.try_call(&[0x8000]), Ok(0x8000), "neg MIN wraps");
}

#[test]
fn division_edge_cases() {
    for s in [Scalar::I8, Scalar::I16, Scalar::I32, Scalar::I64] {
        let ty = Type::Scalar(s);
        let div = single(vec![ty, ty], Some(ty), |b, p| {
            let r = b.binary(BinaryOp::Div, p[0], p[1]);
            b.ret(Some(r));
        });
        let rem = single(vec![ty, ty], Some(ty), |b, p| {
            let r = b.binary(BinaryOp::Rem, p[0], p[1]);
            b.ret(Some(r));
        });
        let min = 1u64 << (s.bits() - 1);
        let minus_one = normalize(ty, u128::from(u64::MAX)) as u64;
        assert_eq!(
            div.call_bits(&[min, minus_one]),
            Ok(min),
            "{s} MIN / -1 wraps"
        );
        assert_eq!(rem.call_bits(&[min, minus_one]), Ok(0), "{s} MIN % -1 is 0");
        assert_eq!(div.call_bits(&[5, 0]), Err(Trap::DivisionByZero));
        assert_eq!(rem.call_bits(&[5, 0]), Err(Trap::RemainderByZero));
    }
    let fdiv = single(vec![Type::F64, Type::F64], Some(Type::F64), |b, p| {
        let r = b.binary(BinaryOp::Div, p[0], p[1]);
        b.ret(Some(r));
    });
    assert_eq!(
        fdiv.call_bits(&[1f64.to_bits(), 0]),
        Ok(f64::INFINITY.to_bits())
    );
}

#[test]
fn float_to_int_saturates() {
    let exe = single(vec![Type::F64], Some(Type::I32), |b, p| {
        let r = b.cast(p[0], Type::I32);
        b.ret(Some(r));
    });
    assert_eq!(exe.call_bits(&[f64::NAN.to_bits()]), Ok(0));
    assert_eq!(
        exe.call_bits(&[1e20f64.to_bits()]),
        Ok(u64::from(i32::MAX as u32))
    );
    assert_eq!(
        exe.call_bits(&[(-1e20f64).to_bits()]),
        Ok(u64::from(i32::MIN as u32))
    );
    assert_eq!(
        exe.call_bits(&[(-7.9f64).to_bits()]),
        Ok(u64::from(-7i32 as u32))
    );
    let exe = single(vec![Type::F32], Some(Type::U8), |b, p| {
        let r = b.cast(p[0], Type::U8);
        b.ret(Some(r));
    });
    assert_eq!(exe.call_bits(&[u64::from(300f32.to_bits())]), Ok(255));
    assert_eq!(exe.call_bits(&[u64::from((-3f32).to_bits())]), Ok(0));
}

/// `Executable::call` through the trait object interface.
trait CallBits {
    fn call_bits(&self, args: &[u64]) -> Result<u64, Trap>;
}

impl CallBits for crate::InterpExecutable {
    fn call_bits(&self, args: &[u64]) -> Result<u64, Trap> {
        nacre_backend::Executable::call(self, args)
    }
}
