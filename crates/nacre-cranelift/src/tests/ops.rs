//! Every operator on every type, compiled as a one-operation function and compared with
//! [`nacre_ir::semantics`] on edge values (0, ±1, MIN, MAX, NaN, ±inf, -0.0, ...), both
//! through [`Executable::call`] and through the typed native entry.

use super::*;
use nacre_ir::{semantics, with_scalar};
use nacre_ir::{BinaryOp, CmpOp, Const, Trap, UnaryOp};

/// Integer bit patterns, truncated to each width.
const INT_PATTERNS: [u64; 37] = [
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
    65,
    100,
    127,
    128,
    255,
    256,
    0x7fff,
    0x8000,
    0xffff,
    0x1_0000,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    0x1_0000_0000,
    i64::MAX as u64,
    i64::MIN as u64,
    u64::MAX,
    u64::MAX - 1,
    -7i64 as u64,
    -100i64 as u64,
    0x1234_5678_9abc_def0,
    0xdead_beef_cafe_f00d,
];

/// Float edge values (converted to `f32` for the `f32` tests).
fn float_values() -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        3.7,
        -3.7,
        0.1,
        1.0 / 3.0,
        100.25,
        127.0,
        127.5,
        128.0,
        -128.0,
        -128.5,
        -129.0,
        255.0,
        255.9,
        256.0,
        32767.0,
        32768.0,
        -32769.0,
        65535.0,
        65536.0,
        2147483647.0,
        2147483648.0,
        -2147483649.0,
        4294967295.0,
        4294967296.0,
        9.2e18,
        9.3e18,
        1.8e19,
        1.9e19,
        1e-7,
        1e300,
        -1e300,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        f64::EPSILON,
        5e-324,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
    ];
    v.extend([f32::MAX as f64, f32::MIN_POSITIVE as f64, 1e-45]);
    v
}

/// Test inputs of a scalar type, as bits.
fn values(s: Scalar) -> Vec<u64> {
    let mut v: Vec<u64> = match s {
        Scalar::Bool => vec![0, 1],
        Scalar::F32 => float_values()
            .into_iter()
            .map(|x| (x as f32).to_bits() as u64)
            .collect(),
        Scalar::F64 => float_values().into_iter().map(f64::to_bits).collect(),
        Scalar::F16 | Scalar::BF16 => float_values()
            .into_iter()
            .map(|x| semantics::f32_to_half(s, x as f32) as u64)
            .collect(),
        _ => INT_PATTERNS
            .iter()
            .map(|&p| semantics::normalize(Type::Scalar(s), u128::from(p)) as u64)
            .collect(),
    };
    v.sort_unstable();
    v.dedup();
    v
}

/// Whether two results agree: bits must be equal, except that any NaN matches any NaN, and
/// (for min/max, where IEEE leaves the choice open) zeros of either sign match.
fn same(s: Scalar, want: u64, got: u64, zeros_equal: bool) -> bool {
    match s {
        Scalar::F32 => {
            let (w, g) = (f32::from_bits(want as u32), f32::from_bits(got as u32));
            want == got || (w.is_nan() && g.is_nan()) || (zeros_equal && w == 0.0 && g == 0.0)
        }
        Scalar::F64 => {
            let (w, g) = (f64::from_bits(want), f64::from_bits(got));
            want == got || (w.is_nan() && g.is_nan()) || (zeros_equal && w == 0.0 && g == 0.0)
        }
        Scalar::F16 | Scalar::BF16 => {
            let wide = |bits| u64::from(semantics::half_to_f32(s, u128::from(bits)).to_bits());
            same(Scalar::F32, wide(want), wide(got), zeros_equal)
        }
        _ => want == got,
    }
}

/// The outcome of a native call.
fn outcome(bits: u64, status: u32) -> Result<u64, Trap> {
    match status {
        0 => Ok(bits),
        code => Err(Trap::from_code(code).expect("known trap code")),
    }
}

/// Collects mismatches so that a failing test reports many at once.
#[derive(Default)]
struct Mismatches(Vec<String>);

impl Mismatches {
    fn check(
        &mut self,
        what: impl FnOnce() -> String,
        s: Scalar,
        want: Result<u64, Trap>,
        got: Result<u64, Trap>,
        zeros_equal: bool,
    ) {
        let ok = match (want, got) {
            (Ok(w), Ok(g)) => same(s, w, g, zeros_equal),
            (w, g) => w == g,
        };
        if !ok {
            self.0
                .push(format!("{}: want {want:x?}, got {got:x?}", what()));
        }
    }

    fn assert_none(self) {
        let n = self.0.len();
        let shown: Vec<&String> = self.0.iter().take(40).collect();
        assert!(n == 0, "{n} mismatches:\n{shown:#?}");
    }
}

#[test]
fn unary_ops_match_semantics() {
    for opt in OPT_LEVELS {
        let be = backend(opt);
        let mut bad = Mismatches::default();
        for op in UnaryOp::ALL {
            for s in Scalar::HOST {
                if !op.accepts(s) {
                    continue;
                }
                let ty = Type::Scalar(s);
                let f = function("unary", &[ty], Some(ty), |b, p| {
                    let r = b.unary(op, p[0]);
                    b.ret(Some(r));
                });
                let exe = compile_fn(&be, f);
                let entry = exe.native_entry().expect("native");
                for a in values(s) {
                    let want = Ok(semantics::unary(op, s, u128::from(a)) as u64);
                    let what = || format!("{opt:?} {op:?} {s} {a:#x}");
                    bad.check(what, s, want, exe.call(&[a]), false);
                    // SAFETY: the function is `fn(T) -> T`.
                    let (r, st) = with_scalar!(s, T => unsafe { native1::<T, T>(entry, a) });
                    bad.check(
                        || format!("native {}", what()),
                        s,
                        want,
                        outcome(r, st),
                        false,
                    );
                }
            }
        }
        bad.assert_none();
    }
}

#[test]
fn binary_ops_match_semantics() {
    for opt in OPT_LEVELS {
        let be = backend(opt);
        let mut bad = Mismatches::default();
        for op in BinaryOp::ALL {
            let zeros_equal = matches!(op, BinaryOp::Min | BinaryOp::Max);
            for s in Scalar::HOST {
                if !op.accepts(s) {
                    continue;
                }
                let ty = Type::Scalar(s);
                let f = function("binary", &[ty, ty], Some(ty), |b, p| {
                    let r = b.binary(op, p[0], p[1]);
                    b.ret(Some(r));
                });
                let exe = compile_fn(&be, f);
                let entry = exe.native_entry().expect("native");
                let vals = values(s);
                for &a in &vals {
                    for &c in &vals {
                        let want = semantics::binary(op, s, u128::from(a), u128::from(c))
                            .map(|r| r as u64);
                        let what = || format!("{opt:?} {op:?} {s} {a:#x} {c:#x}");
                        bad.check(what, s, want, exe.call(&[a, c]), zeros_equal);
                        // SAFETY: the function is `fn(T, T) -> T`.
                        let (r, st) = with_scalar!(s, T => unsafe { native2::<T, T>(entry, a, c) });
                        let got = outcome(r, st);
                        bad.check(|| format!("native {}", what()), s, want, got, zeros_equal);
                    }
                }
            }
        }
        bad.assert_none();
    }
}

#[test]
fn comparisons_match_semantics() {
    let types: Vec<Type> = Scalar::HOST
        .iter()
        .map(|&s| Type::Scalar(s))
        .chain([Type::ptr(Scalar::I32)])
        .collect();
    for opt in OPT_LEVELS {
        let be = backend(opt);
        let mut bad = Mismatches::default();
        for op in CmpOp::ALL {
            for &ty in &types {
                let f = function("cmp", &[ty, ty], Some(Type::BOOL), |b, p| {
                    let r = b.cmp(op, p[0], p[1]);
                    b.ret(Some(r));
                });
                let exe = compile_fn(&be, f);
                let entry = exe.native_entry().expect("native");
                let s = carrier(ty);
                let vals = values(s);
                for &a in &vals {
                    for &c in &vals {
                        let want =
                            Ok(semantics::compare(op, ty, u128::from(a), u128::from(c)) as u64);
                        let what = || format!("{opt:?} {op:?} {ty} {a:#x} {c:#x}");
                        bad.check(what, Scalar::Bool, want, exe.call(&[a, c]), false);
                        // SAFETY: the function is `fn(T, T) -> bool`.
                        let (r, st) =
                            with_scalar!(s, T => unsafe { native2::<T, bool>(entry, a, c) });
                        let got = outcome(r, st);
                        bad.check(
                            || format!("native {}", what()),
                            Scalar::Bool,
                            want,
                            got,
                            false,
                        );
                    }
                }
            }
        }
        bad.assert_none();
    }
}

#[test]
fn casts_match_semantics() {
    let types: Vec<Type> = Scalar::HOST
        .iter()
        .map(|&s| Type::Scalar(s))
        .chain([Type::ptr(Scalar::F64)])
        .collect();
    for opt in OPT_LEVELS {
        let be = backend(opt);
        let mut bad = Mismatches::default();
        for &from in &types {
            for &to in &types {
                // Pointers convert only to and from 64-bit integers.
                let defined = match (from, to) {
                    (Type::Ptr(..), Type::Ptr(..)) => false,
                    (Type::Ptr(..), Type::Scalar(s)) | (Type::Scalar(s), Type::Ptr(..)) => {
                        matches!(s, Scalar::I64 | Scalar::U64)
                    }
                    _ => true,
                };
                if !defined {
                    continue;
                }
                let f = function("cast", &[from], Some(to), |b, p| {
                    let r = b.cast(p[0], to);
                    b.ret(Some(r));
                });
                let exe = compile_fn(&be, f);
                let entry = exe.native_entry().expect("native");
                let (fs, ts) = (carrier(from), carrier(to));
                for a in values(fs) {
                    let want = Ok(semantics::cast(from, to, u128::from(a)) as u64);
                    let what = || format!("{opt:?} cast {from} -> {to} {a:#x}");
                    bad.check(what, ts, want, exe.call(&[a]), false);
                    // SAFETY: the function is `fn(F) -> T`.
                    let (r, st) = with_scalar!(fs, F => with_scalar!(ts, T => unsafe {
                        native1::<F, T>(entry, a)
                    }));
                    bad.check(
                        || format!("native {}", what()),
                        ts,
                        want,
                        outcome(r, st),
                        false,
                    );
                }
            }
        }
        bad.assert_none();
    }
}

#[test]
fn fma_matches_semantics() {
    for opt in OPT_LEVELS {
        let be = backend(opt);
        let mut bad = Mismatches::default();
        for s in [Scalar::F32, Scalar::F64] {
            let ty = Type::Scalar(s);
            let f = function("fma", &[ty, ty, ty], Some(ty), |b, p| {
                let r = b.fma(p[0], p[1], p[2]);
                b.ret(Some(r));
            });
            let exe = compile_fn(&be, f);
            let entry = exe.native_entry().expect("native");
            let vals = values(s);
            for &a in &vals {
                for &c in &vals {
                    for &d in &vals {
                        let want = Ok(
                            semantics::fma(s, u128::from(a), u128::from(c), u128::from(d)) as u64,
                        );
                        let what = || format!("{opt:?} fma {s} {a:#x} {c:#x} {d:#x}");
                        bad.check(what, s, want, exe.call(&[a, c, d]), false);
                        // SAFETY: the function is `fn(T, T, T) -> T`.
                        let (r, st) =
                            with_scalar!(s, T => unsafe { native3::<T, T>(entry, a, c, d) });
                        bad.check(
                            || format!("native {}", what()),
                            s,
                            want,
                            outcome(r, st),
                            false,
                        );
                    }
                }
            }
        }
        bad.assert_none();
    }
}

#[test]
fn select_matches_semantics() {
    for opt in OPT_LEVELS {
        let be = backend(opt);
        let mut bad = Mismatches::default();
        for s in Scalar::HOST {
            let ty = Type::Scalar(s);
            let f = function("select", &[Type::BOOL, ty, ty], Some(ty), |b, p| {
                let r = b.select(p[0], p[1], p[2]);
                b.ret(Some(r));
            });
            let exe = compile_fn(&be, f);
            let entry = exe.native_entry().expect("native");
            let vals = values(s);
            for c in [0, 1] {
                for (&a, &d) in vals.iter().zip(vals.iter().rev()) {
                    let want = Ok(if c == 1 { a } else { d });
                    let what = || format!("{opt:?} select {s} {c} {a:#x} {d:#x}");
                    bad.check(what, s, want, exe.call(&[c, a, d]), false);
                    // SAFETY: the function is `fn(bool, T, T) -> T`.
                    let (r, st) =
                        with_scalar!(s, T => unsafe { native3::<bool, T>(entry, c, a, d) });
                    bad.check(
                        || format!("native {}", what()),
                        s,
                        want,
                        outcome(r, st),
                        false,
                    );
                }
            }
        }
        bad.assert_none();
    }
}

/// Calls a compiled `fn() -> R` through its native entry.
///
/// # Safety
/// `entry` must be a function of that native signature.
unsafe fn native0<R: ScalarValue>(entry: *const u8) -> (u64, u32) {
    // SAFETY: the caller guarantees the signature.
    let f = unsafe { std::mem::transmute::<*const u8, extern "C" fn(*mut u32) -> R>(entry) };
    let mut status = 0;
    let r = f(&mut status);
    (r.to_bits() as u64, status)
}

#[test]
fn constants_round_trip() {
    let be = backend(OptLevel::None);
    let mut bad = Mismatches::default();
    let types = Scalar::HOST
        .iter()
        .map(|&s| Type::Scalar(s))
        .chain([Type::ptr(Scalar::U8)]);
    for ty in types {
        let s = carrier(ty);
        for bits in values(s) {
            let f = function("const", &[], Some(ty), |b, _| {
                let c = b.constant(Const {
                    ty,
                    bits: u128::from(bits),
                });
                b.ret(Some(c));
            });
            let exe = compile_fn(&be, f);
            let entry = exe.native_entry().expect("native");
            let what = || format!("const {ty} {bits:#x}");
            bad.check(what, s, Ok(bits), exe.call(&[]), false);
            // SAFETY: the function is `fn() -> T`.
            let (r, st) = with_scalar!(s, T => unsafe { native0::<T>(entry) });
            bad.check(
                || format!("native {}", what()),
                s,
                Ok(bits),
                outcome(r, st),
                false,
            );
        }
    }
    bad.assert_none();
}

#[test]
fn division_traps_and_min_by_minus_one() {
    let be = backend(OptLevel::Speed);
    for s in [
        Scalar::I8,
        Scalar::I16,
        Scalar::I32,
        Scalar::I64,
        Scalar::U8,
        Scalar::U64,
    ] {
        let ty = Type::Scalar(s);
        for op in [BinaryOp::Div, BinaryOp::Rem] {
            let f = function("div", &[ty, ty], Some(ty), |b, p| {
                let r = b.binary(op, p[0], p[1]);
                b.ret(Some(r));
            });
            let exe = compile_fn(&be, f);
            let trap = if op == BinaryOp::Div {
                Trap::DivisionByZero
            } else {
                Trap::RemainderByZero
            };
            assert_eq!(exe.call(&[7, 0]), Err(trap), "{op:?} {s} by zero");
            assert_eq!(trap.code(), if op == BinaryOp::Div { 1 } else { 2 });
            if s.is_signed_int() {
                let min = semantics::normalize(ty, u128::from(1u64 << (s.bits() - 1))) as u64;
                let minus_one = semantics::normalize(ty, u128::from(u64::MAX)) as u64;
                let want = if op == BinaryOp::Div { min } else { 0 };
                assert_eq!(
                    exe.call(&[min, minus_one]),
                    Ok(want),
                    "{op:?} {s} MIN by -1"
                );
            }
        }
    }
}

#[test]
#[cfg(target_arch = "x86_64")]
fn float_library_calls_without_sse41_and_fma() {
    // Without SSE4.1 and FMA, Cranelift calls library functions for floor/ceil/fma; they
    // resolve to this crate's helpers.
    let flags = [("has_sse41", "false"), ("has_fma", "false")];
    let mut bad = Mismatches::default();
    for opt in OPT_LEVELS {
        let opts = CraneliftOptions {
            opt_level: opt,
            ..CraneliftOptions::default()
        };
        let be = CraneliftBackend::with_isa_flags(opts, &flags).expect("host");
        for s in [Scalar::F32, Scalar::F64] {
            let ty = Type::Scalar(s);
            for op in [UnaryOp::Floor, UnaryOp::Ceil] {
                let f = function("round", &[ty], Some(ty), |b, p| {
                    let r = b.unary(op, p[0]);
                    b.ret(Some(r));
                });
                let exe = compile_fn(&be, f);
                for a in values(s) {
                    let want = Ok(semantics::unary(op, s, u128::from(a)) as u64);
                    bad.check(
                        || format!("{opt:?} {op:?} {s} {a:#x}"),
                        s,
                        want,
                        exe.call(&[a]),
                        false,
                    );
                }
            }
            let f = function("fma", &[ty, ty, ty], Some(ty), |b, p| {
                let r = b.fma(p[0], p[1], p[2]);
                b.ret(Some(r));
            });
            let exe = compile_fn(&be, f);
            let vals = values(s);
            for (i, &a) in vals.iter().enumerate() {
                for &c in &vals {
                    let d = vals[(i * 7) % vals.len()];
                    let want =
                        Ok(semantics::fma(s, u128::from(a), u128::from(c), u128::from(d)) as u64);
                    let got = exe.call(&[a, c, d]);
                    bad.check(
                        || format!("{opt:?} fma {s} {a:#x} {c:#x} {d:#x}"),
                        s,
                        want,
                        got,
                        false,
                    );
                }
            }
        }
    }
    bad.assert_none();
}

/// Half arithmetic that `widen_half` has not lowered is a typed error that says what to do.
#[test]
fn unwidened_half_arithmetic_is_refused() {
    let f = function("h", &[Type::F16, Type::F16], Some(Type::F16), |b, p| {
        let r = b.binary(BinaryOp::Add, p[0], p[1]);
        b.ret(Some(r));
    });
    let verified = nacre_ir::verify(module(f, Vec::new())).expect("valid IR");
    match backend(OptLevel::Speed).compile(&verified, &Linkage::default()) {
        Err(e @ nacre_backend::BackendError::Unsupported { .. }) => {
            assert!(e.to_string().contains("widen_half"), "{e}");
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("unwidened f16 arithmetic compiled"),
    }
}
