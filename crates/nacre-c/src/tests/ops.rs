//! Every operator on every type, on edge values, against [`nacre_ir::semantics`].
//!
//! Compiling costs tens of milliseconds, so each test batches many small functions (one per
//! operator and type) into one module. Its entry is a dispatcher
//! `dispatch(sel: u32, args: ptr<u64>, out: ptr<u64>)` that loads the arguments of function
//! `sel` from `args` (each in the low bytes of a `u64` slot, pointers as `u64`), calls it and
//! stores the result zero-extended into `*out`. Traps propagate out of the dispatcher.
//!
//! Combinations the verifier rejects (`sqrt` on integers, bitwise operators on floats, ...)
//! have a definition in `semantics` too, but the printer takes verified modules only, so those
//! cases are left out.

use super::{compile, function, konst};
use crate::CExecutable;
use nacre_backend::Executable;
use nacre_ir::semantics::{self, normalize};
use nacre_ir::verifier::check_function;
use nacre_ir::{
    BinaryOp, Block, CmpOp, Const, FuncId, Function, FunctionBuilder, Module, Scalar, Signature,
    Trap, Type, UnaryOp, Value,
};

/// The expected result of a case for given arguments.
type Expected = Box<dyn Fn(&[u64]) -> Result<u64, Trap>>;

/// One function under test with its inputs.
struct Case {
    /// Its selector in the module.
    sel: u32,
    /// Its description.
    what: String,
    /// Argument lists to run it on.
    inputs: Vec<Vec<u64>>,
    /// The expected results.
    expected: Expected,
    /// Whether any zero result matches any zero (Rust leaves the sign of `min(-0.0, 0.0)`
    /// unspecified).
    any_zero: bool,
}

/// Functions collected for the compilation, and their cases.
#[derive(Default)]
struct Suite {
    functions: Vec<Function>,
    cases: Vec<Case>,
}

impl Suite {
    /// Adds a case: a function with `params` returning `ret` built by `body`, run on `inputs`,
    /// unless the verifier rejects the function (the printer never sees such functions).
    /// Returns whether the case was added.
    fn case(
        &mut self,
        what: impl Into<String>,
        params: &[Type],
        ret: Type,
        body: impl FnOnce(&mut FunctionBuilder<'_>, &[Value]) -> Value,
        inputs: Vec<Vec<u64>>,
        expected: impl Fn(&[u64]) -> Result<u64, Trap> + 'static,
    ) -> bool {
        let sel = self.functions.len() as u32;
        let f = function(&format!("case{sel}"), params, Some(ret), |b, p| {
            let r = body(b, p);
            b.ret(Some(r));
        });
        if check_function(&Module::new(), &f).is_err() {
            return false;
        }
        self.functions.push(f);
        let what = what.into();
        self.cases.push(Case {
            sel,
            what,
            inputs,
            expected: Box::new(expected),
            any_zero: false,
        });
        true
    }

    /// Marks the last case as accepting any zero for a zero result.
    fn any_zero(&mut self) {
        if let Some(c) = self.cases.last_mut() {
            c.any_zero = true;
        }
    }

    /// Compiles the module, runs every case and reports all mismatches.
    fn run(self) {
        let runner = Runner::new(self.functions);
        let mut failures = Vec::new();
        let mut count = 0usize;
        for case in &self.cases {
            let ret = runner.sigs[case.sel as usize]
                .ret
                .expect("cases return a value");
            for args in &case.inputs {
                count += 1;
                let got = runner.run(case.sel, args);
                let want = (case.expected)(args);
                let ok = match (got, want) {
                    (Ok(g), Ok(w)) => same(ret, g, w, case.any_zero),
                    (Err(g), Err(w)) => g == w,
                    _ => false,
                };
                if !ok && failures.len() < 40 {
                    failures.push(format!(
                        "{} on {args:x?}: got {got:x?}, want {want:x?}",
                        case.what
                    ));
                }
            }
        }
        assert!(count > 0);
        assert!(
            failures.is_empty(),
            "{} failures:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}

/// The dispatcher over `sigs` (function `k` has id `k + 1`).
fn dispatcher(sigs: &[Signature]) -> Function {
    let u64p = Type::ptr(Scalar::U64);
    // `ptr<u64>` to `ptr<T>` goes through the address.
    let retype = |b: &mut FunctionBuilder<'_>, p: Value, s: Scalar| {
        let addr = b.cast(p, Type::U64);
        b.cast(addr, Type::ptr(s))
    };
    function("dispatch", &[Type::U32, u64p, u64p], None, |b, p| {
        let (sel, args, out) = (p[0], p[1], p[2]);
        let checks: Vec<Block> = (0..=sigs.len()).map(|_| b.create_block()).collect();
        b.jump(checks[0], vec![]);
        for (k, sig) in sigs.iter().enumerate() {
            b.switch_to_block(checks[k]);
            let kv = konst(b, Type::U32, k as u64);
            let hit = b.cmp(CmpOp::Eq, sel, kv);
            let case = b.create_block();
            b.branch(hit, case, vec![], checks[k + 1], vec![]);
            b.switch_to_block(case);
            let mut values = Vec::new();
            for (i, &ty) in sig.params.iter().enumerate() {
                let idx = konst(b, Type::I64, i as u64);
                let slot = b.elem_ptr(args, idx);
                values.push(match ty {
                    Type::Ptr(..) => {
                        let bits = b.load(slot);
                        b.cast(bits, ty)
                    }
                    Type::Scalar(s) => {
                        let typed = retype(b, slot, s);
                        b.load(typed)
                    }
                });
            }
            let ret = sig.ret.expect("cases return a value");
            let r = b
                .call(FuncId::from_u32(k as u32 + 1), values, Some(ret))
                .expect("call result");
            let zero = konst(b, Type::U64, 0);
            b.store(out, zero);
            match ret {
                Type::Ptr(..) => {
                    let bits = b.cast(r, Type::U64);
                    b.store(out, bits);
                }
                Type::Scalar(s) => {
                    let typed = retype(b, out, s);
                    b.store(typed, r);
                }
            }
            b.ret(None);
        }
        b.switch_to_block(checks[sigs.len()]);
        b.ret(None);
    })
}

/// A compiled module of cases.
struct Runner {
    exe: Option<CExecutable>,
    sigs: Vec<Signature>,
}

impl Runner {
    /// Verifies and compiles `functions` behind a dispatcher.
    fn new(functions: Vec<Function>) -> Runner {
        let sigs: Vec<Signature> = functions.iter().map(|f| f.signature.clone()).collect();
        if functions.is_empty() {
            return Runner { exe: None, sigs };
        }
        let mut m = Module::new();
        m.entry = Some(m.add_function(dispatcher(&sigs)));
        for f in functions {
            m.add_function(f);
        }
        Runner {
            exe: Some(compile(m)),
            sigs,
        }
    }

    /// Runs function `sel` on arguments encoded as bits.
    fn run(&self, sel: u32, args: &[u64]) -> Result<u64, Trap> {
        assert_eq!(args.len(), self.sigs[sel as usize].params.len());
        let exe = self.exe.as_ref().expect("the module has cases");
        let mut out = u64::MAX;
        let r = exe.call(&[
            u64::from(sel),
            args.as_ptr() as u64,
            &mut out as *mut u64 as u64,
        ]);
        r.map(|_| out)
    }
}

/// True if `got` is an acceptable result of type `ty` where `want` is expected: floats compare
/// bits except that any NaN matches any NaN and, with `any_zero`, any zero matches any zero.
fn same(ty: Type, got: u64, want: u64, any_zero: bool) -> bool {
    match ty {
        Type::Scalar(Scalar::F32) => {
            let (g, w) = (f32::from_bits(got as u32), f32::from_bits(want as u32));
            (g.is_nan() && w.is_nan()) || (any_zero && g == 0.0 && w == 0.0) || got == want
        }
        Type::Scalar(Scalar::F64) => {
            let (g, w) = (f64::from_bits(got), f64::from_bits(want));
            (g.is_nan() && w.is_nan()) || (any_zero && g == 0.0 && w == 0.0) || got == want
        }
        Type::Scalar(s) if s.is_half() => {
            let wide = |bits: u64| nacre_ir::semantics::half_to_f32(s, bits.into());
            same(
                Type::F32,
                wide(got).to_bits().into(),
                wide(want).to_bits().into(),
                any_zero,
            )
        }
        _ => got == want,
    }
}

/// Edge values of a scalar type, encoded.
fn values(s: Scalar) -> Vec<u64> {
    let mut v: Vec<u64> = match s {
        Scalar::Bool => vec![0, 1],
        Scalar::F32 => float_values()
            .into_iter()
            .map(|x| u64::from((x as f32).to_bits()))
            .collect(),
        Scalar::F64 => float_values().into_iter().map(f64::to_bits).collect(),
        Scalar::F16 | Scalar::BF16 => float_values()
            .into_iter()
            .map(|x| nacre_ir::semantics::f32_to_half(s, x as f32) as u64)
            .collect(),
        _ => {
            let ints: [i128; 32] = [
                0,
                1,
                2,
                3,
                7,
                15,
                16,
                31,
                32,
                33,
                63,
                64,
                65,
                -1,
                -2,
                -7,
                -128,
                127,
                128,
                255,
                0x7fff,
                0x8000,
                0xffff,
                i32::MAX as i128,
                i32::MIN as i128,
                u32::MAX as i128,
                i64::MAX as i128,
                i64::MIN as i128,
                u64::MAX as i128,
                123_456_789,
                -987_654_321,
                0x1234_5678_9abc_def0,
            ];
            ints.iter()
                .map(|&i| normalize(Type::Scalar(s), i as u128) as u64)
                .collect()
        }
    };
    if s.is_float() {
        // Bits of NaNs other than the canonical one.
        let extra = match s {
            Scalar::F32 => [0xffc0_0000u64, 0x7f80_0001],
            Scalar::F16 => [0xfe00, 0x7c01],
            Scalar::BF16 => [0xffc0, 0x7f81],
            _ => [0xfff8_0000_0000_0000, 0x7ff0_0000_0000_0001],
        };
        v.extend(extra);
    }
    v.sort_unstable();
    v.dedup();
    v
}

fn float_values() -> Vec<f64> {
    vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1.5,
        -2.5,
        2.5,
        0.1,
        -0.99,
        3.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        5e-324,
        1e-45,
        f32::MAX as f64,
        127.5,
        128.0,
        -128.5,
        -129.0,
        255.9,
        256.0,
        65535.5,
        65536.0,
        2147483647.0,
        2147483648.0,
        -2147483648.0,
        -2147483649.0,
        4294967295.5,
        4294967296.0,
        9223372036854775807.0,
        -9223372036854775808.0,
        18446744073709551615.0,
        1e20,
        -1e20,
        16777217.0,
        9007199254740993.0,
    ]
}

fn pairs(s: Scalar) -> Vec<Vec<u64>> {
    let v = values(s);
    v.iter()
        .flat_map(|&a| v.iter().map(move |&b| vec![a, b]))
        .collect()
}

fn singles(s: Scalar) -> Vec<Vec<u64>> {
    values(s).into_iter().map(|a| vec![a]).collect()
}

#[test]
fn unary_ops() {
    let mut suite = Suite::default();
    for s in Scalar::HOST {
        for op in UnaryOp::ALL {
            let ty = Type::Scalar(s);
            suite.case(
                format!("{}.{s}", op.name()),
                &[ty],
                ty,
                |b, p| b.unary(op, p[0]),
                singles(s),
                move |a| Ok(semantics::unary(op, s, a[0].into()) as u64),
            );
        }
    }
    suite.run();
}

#[test]
fn binary_ops() {
    let mut suite = Suite::default();
    for s in Scalar::HOST {
        for op in BinaryOp::ALL {
            let ty = Type::Scalar(s);
            let added = suite.case(
                format!("{}.{s}", op.name()),
                &[ty, ty],
                ty,
                |b, p| b.binary(op, p[0], p[1]),
                pairs(s),
                move |a| semantics::binary(op, s, a[0].into(), a[1].into()).map(|r| r as u64),
            );
            if added && matches!(op, BinaryOp::Min | BinaryOp::Max) {
                suite.any_zero();
            }
        }
    }
    suite.run();
}

#[test]
fn fma_select_and_constants() {
    let mut suite = Suite::default();
    for s in Scalar::HOST {
        let ty = Type::Scalar(s);
        // All triples of every third edge value.
        let v: Vec<u64> = values(s).into_iter().step_by(3).collect();
        let mut triples = Vec::new();
        for &a in &v {
            for &b in &v {
                triples.extend(v.iter().map(|&c| vec![a, b, c]));
            }
        }
        suite.case(
            format!("fma.{s}"),
            &[ty, ty, ty],
            ty,
            |b, p| b.fma(p[0], p[1], p[2]),
            triples,
            move |a| Ok(semantics::fma(s, a[0].into(), a[1].into(), a[2].into()) as u64),
        );

        let inputs = pairs(s)
            .into_iter()
            .flat_map(|p| [vec![0, p[0], p[1]], vec![1, p[0], p[1]]])
            .collect();
        suite.case(
            format!("select.{s}"),
            &[Type::BOOL, ty, ty],
            ty,
            |b, p| b.select(p[0], p[1], p[2]),
            inputs,
            |a| Ok(if a[0] & 1 != 0 { a[1] } else { a[2] }),
        );

        for bits in values(s) {
            suite.case(
                format!("const.{s} {bits:#x}"),
                &[],
                ty,
                |b, _| konst(b, ty, bits),
                vec![vec![]],
                move |_| Ok(bits),
            );
        }
    }
    let pty = Type::ptr(Scalar::I16);
    for bits in pointer_values() {
        suite.case(
            format!("const.ptr {bits:#x}"),
            &[],
            pty,
            |b, _| konst(b, pty, bits),
            vec![vec![]],
            move |_| Ok(bits),
        );
    }
    suite.case(
        "select.ptr",
        &[Type::BOOL, pty, pty],
        pty,
        |b, p| b.select(p[0], p[1], p[2]),
        vec![vec![1, 16, 32], vec![0, 16, 32]],
        |a| Ok(if a[0] == 1 { a[1] } else { a[2] }),
    );
    suite.run();
}

fn pointer_values() -> Vec<u64> {
    vec![0, 8, 0x1000, 0x7fff_0000_0000, 0xffff_ffff_ffff_fff8]
}

#[test]
fn comparisons() {
    let mut suite = Suite::default();
    let pty = Type::ptr(Scalar::F64);
    let ptr_pairs: Vec<Vec<u64>> = pointer_values()
        .iter()
        .flat_map(|&a| pointer_values().into_iter().map(move |b| vec![a, b]))
        .collect();
    for op in CmpOp::ALL {
        for ty in Scalar::HOST.iter().map(|&s| Type::Scalar(s)).chain([pty]) {
            let inputs = match ty {
                Type::Scalar(s) => pairs(s),
                Type::Ptr(..) => ptr_pairs.clone(),
            };
            suite.case(
                format!("{}.{ty}", op.name()),
                &[ty, ty],
                Type::BOOL,
                |b, p| b.cmp(op, p[0], p[1]),
                inputs,
                move |a| {
                    Ok(u64::from(semantics::compare(
                        op,
                        ty,
                        a[0].into(),
                        a[1].into(),
                    )))
                },
            );
        }
    }
    suite.run();
}

#[test]
fn casts() {
    let mut suite = Suite::default();
    let mut types: Vec<Type> = Scalar::HOST.iter().map(|&s| Type::Scalar(s)).collect();
    types.push(Type::ptr(Scalar::U8));
    for &from in &types {
        for &to in types.iter().chain([&Type::ptr(Scalar::F32)]) {
            let inputs = match from {
                Type::Scalar(s) => singles(s),
                Type::Ptr(..) => pointer_values().into_iter().map(|a| vec![a]).collect(),
            };
            suite.case(
                format!("cast {from} -> {to}"),
                &[from],
                to,
                |b, p| b.cast(p[0], to),
                inputs,
                move |a| Ok(semantics::cast(from, to, a[0].into()) as u64),
            );
        }
    }
    suite.run();
}

/// The dispatcher itself: an unknown selector runs nothing, and results reach `out`
/// zero-extended.
#[test]
fn dispatcher_sanity() {
    let runner = Runner::new(vec![function("c", &[], Some(Type::I8), |b, _| {
        let c = b.constant(Const {
            ty: Type::I8,
            bits: 0xff,
        });
        b.ret(Some(c));
    })]);
    assert_eq!(runner.run(0, &[]), Ok(0xff));
    let mut out = 7u64;
    let exe = runner.exe.as_ref().expect("compiled");
    assert_eq!(exe.call(&[99, 0, &mut out as *mut u64 as u64]), Ok(0));
    assert_eq!(out, 7);
}

/// Half arithmetic that `widen_half` has not lowered is a typed error that says what to do.
#[test]
fn unwidened_half_arithmetic_is_refused() {
    let f = function("h", &[Type::BF16, Type::BF16], Some(Type::BOOL), |b, p| {
        let r = b.cmp(CmpOp::Lt, p[0], p[1]);
        b.ret(Some(r));
    });
    let verified = nacre_ir::verify(super::module(vec![f])).expect("valid IR");
    let result = crate::CBackend::new(crate::COptions::default())
        .compile_module(&verified, &nacre_backend::Linkage::default());
    match result {
        Err(e @ nacre_backend::BackendError::Unsupported { .. }) => {
            assert!(e.to_string().contains("bf16 arithmetic"), "{e}");
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("unwidened bf16 comparison compiled"),
    }
}
