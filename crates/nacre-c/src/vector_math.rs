//! Math functions in plain arithmetic, for C compilers to vectorise: `f32` `exp` and `tanh`.
//!
//! The C library's `expf` and `tanhf` are opaque calls, and GCC vectorises loops around
//! library calls only under `-ffast-math`, which Nacre's semantics rule out. A softmax's
//! `exp` per element or a GELU's `tanh` then keeps a whole thread loop (or collapsed
//! grid-stride loop) scalar. The C dialects therefore compute both with the definitions here
//! ([`crate::Dialect::math_by_helper`]): no branch, no call, only arithmetic, bit operations
//! and integer `min`, which GCC and Clang vectorise once the definition is inlined.
//!
//! Both work in `double`: `2^z = 2^k 2^r` with `k` the nearest integer to `z` (rounded by
//! adding `1.5 * 2^52`, whose low bits then hold `k`), `|r| <= 1/2`, `2^r - 1` by its Taylor
//! polynomial of degree 8 (relative error below `2e-10`) and `2^k` built in the exponent
//! field. One rounding to `float` then gives a result within 1 ulp of the exact one. Inputs are
//! clamped on their bits to where the result no longer changes in `f32`, and a NaN input is
//! made NaN again at the end, on the bits: float comparisons and selects would let compilers
//! branch around the clamped cases, which stops vectorisation.

use crate::dialect::{Dialect, MathFn};
use nacre_ir::Scalar;

/// `log2(e)`, for `e^x = 2^(x log2(e))`.
const LOG2_E: &str = "1.4426950408889634";
/// `2 log2(e)`, for `e^(2x)`.
const TWO_LOG2_E: &str = "2.8853900817779268";
/// The Taylor coefficients `ln(2)^n / n!` of `2^r - 1`, from `n = 8` down to 1.
const POW2_M1: [&str; 8] = [
    "1.3215486790144307e-06",
    "1.5252733804059840e-05",
    "1.5403530393381606e-04",
    "1.3333558146428443e-03",
    "9.6181291076284772e-03",
    "5.5504108664821580e-02",
    "2.4022650695910071e-01",
    "6.9314718055994531e-01",
];
/// The bits of `110.0f`: `e^110` overflows `f32`, `e^-110` rounds to 0.
const EXP_LIMIT: &str = "0x42dc0000u";
/// The bits of `9.5f`: `tanh(x)` rounds to `±1` in `f32` from there on.
const TANH_LIMIT: &str = "0x41180000u";

/// The definition of `f` on `s` named `nacre_<f>_<s>`, if this module has one.
pub fn definition(
    d: &(impl Dialect + ?Sized),
    qualifier: &str,
    f: MathFn,
    s: Scalar,
) -> Option<String> {
    if s != Scalar::F32 {
        return None;
    }
    let body = match f {
        MathFn::Lib(nacre_ir::MathFn::Exp) => exp_body(d),
        MathFn::Lib(nacre_ir::MathFn::Tanh) => tanh_body(d),
        _ => return None,
    };
    let name = crate::helpers::Helper::Math(f, s).name();
    let head = format!("float {name}(float x)");
    Some(crate::helpers::function(qualifier, &head, &body))
}

/// Whether [`definition`] has `f` on `s`.
pub fn defines(f: MathFn, s: Scalar) -> bool {
    s == Scalar::F32
        && matches!(
            f,
            MathFn::Lib(nacre_ir::MathFn::Exp | nacre_ir::MathFn::Tanh)
        )
}

/// `e^x`: `x` clamped to `|x| <= 110`, then `2^(x log2(e))`.
fn exp_body(d: &(impl Dialect + ?Sized)) -> Vec<String> {
    let mut body = declarations(d);
    body.extend(clamp(d, EXP_LIMIT));
    body.extend([
        "b = (b & 0x80000000u) | a;".to_string(),
        "memcpy(&x, &b, sizeof x);".to_string(),
        format!("z = (double)x * {LOG2_E};"),
    ]);
    body.extend(pow2());
    body.push("y = (float)(scale * (q + 1.0));".to_string());
    body.extend(finish(""));
    body
}

/// `tanh(x)`: with `|x|` clamped to `9.5`, `e = e^(2|x|) - 1` as `2^k (2^r - 1) + (2^k - 1)`
/// (no cancellation near 0), then `e / (e + 2)` with the sign of `x`.
fn tanh_body(d: &(impl Dialect + ?Sized)) -> Vec<String> {
    let mut body = declarations(d);
    body.extend(clamp(d, TANH_LIMIT));
    body.extend([
        "memcpy(&y, &a, sizeof y);".to_string(),
        format!("z = (double)y * {TWO_LOG2_E};"),
    ]);
    body.extend(pow2());
    body.extend([
        "q = scale * q + (scale - 1.0);".to_string(),
        "y = (float)(q / (q + 2.0));".to_string(),
    ]);
    body.extend(finish("b & 0x80000000u"));
    body
}

/// The variables every definition uses.
fn declarations(d: &(impl Dialect + ?Sized)) -> Vec<String> {
    let (u32_, u64_) = (d.scalar_type(Scalar::U32), d.scalar_type(Scalar::U64));
    vec![
        format!("{u32_} b, a, nan;"),
        format!("{u64_} kb, sb;"),
        "double z, kd, r, q, scale;".to_string(),
        "float y;".to_string(),
    ]
}

/// `b` = the bits of `x`, `a` = those of `|x|` clamped to `limit`, `nan` = all ones if `x` is
/// a NaN.
fn clamp(d: &(impl Dialect + ?Sized), limit: &str) -> Vec<String> {
    let u32_ = d.scalar_type(Scalar::U32);
    vec![
        "memcpy(&b, &x, sizeof b);".to_string(),
        "a = b & 0x7fffffffu;".to_string(),
        format!("nan = -({u32_})(a > 0x7f800000u);"),
        format!("a = a < {limit} ? a : {limit};"),
    ]
}

/// `scale = 2^k` and `q = 2^r - 1` for `z = k + r` (see the module docs).
fn pow2() -> Vec<String> {
    let mut lines = vec![
        "kd = z + 0x1.8p52;".to_string(),
        "memcpy(&kb, &kd, sizeof kb);".to_string(),
        "r = z - (kd - 0x1.8p52);".to_string(),
        "sb = (kb + 1023u) << 52;".to_string(),
        "memcpy(&scale, &sb, sizeof scale);".to_string(),
        format!("q = {};", POW2_M1[0]),
    ];
    lines.extend(POW2_M1[1..].iter().map(|c| format!("q = q * r + {c};")));
    lines.push("q = q * r;".to_string());
    lines
}

/// Returns `y` with the bits of `sign` (a C expression, or none) and a NaN's bits set.
fn finish(sign: &str) -> Vec<String> {
    let mut lines = vec!["memcpy(&a, &y, sizeof a);".to_string()];
    if !sign.is_empty() {
        lines.push(format!("a |= {sign};"));
    }
    lines.extend([
        "a |= nan & 0x7fc00000u;".to_string(),
        "memcpy(&y, &a, sizeof y);".to_string(),
        "return y;".to_string(),
    ]);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::{compile_and_load, COptions};
    use crate::dialect::CDialect;
    use crate::helpers::{c_definition, Helper};
    use nacre_ir::semantics;

    /// Every 61st `f32` bit pattern (both signs, every exponent) and the edges: the clamps,
    /// subnormal results, zeros, infinities and NaN.
    fn inputs() -> Vec<f32> {
        let mut xs: Vec<f32> = (0..u32::MAX / 61).map(|i| f32::from_bits(i * 61)).collect();
        xs.extend([
            0.0,
            -0.0,
            1.0,
            0.17,
            -0.35,
            9.0,
            9.5,
            -9.6,
            88.72283,
            88.72284,
            89.0,
            -87.33654,
            -103.27893,
            -103.97208,
            -104.0,
            -110.0,
            1e-30,
            -1e-30,
            f32::from_bits(1),
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7f80_0001),
        ]);
        xs
    }

    /// `f` on every input through the C dialect's definition, compiled with the default
    /// flags: within 1 ulp of `f` in `f64` rounded to `f32` (`exact`), and within the C
    /// backends' bound of 4 ulps of the reference (musl's algorithms, themselves up to 2 ulps
    /// off for `tanh`).
    fn check(f: nacre_ir::MathFn, exact: fn(f64) -> f64) {
        let math = MathFn::Lib(f);
        assert_eq!(CDialect.math_by_helper(math, Scalar::F32), Ok(true));
        assert_eq!(CDialect.math_by_helper(math, Scalar::F64), Ok(false));
        let helper = Helper::Math(math, Scalar::F32);
        let mut src = String::from("#include <stdint.h>\n#include <string.h>\n");
        src.push_str(&c_definition(&CDialect, "static inline ", helper));
        src.push_str(&format!(
            "void run(const float *x, float *y, int n) {{ for (int i = 0; i < n; i++) y[i] = {}(x[i]); }}\n",
            helper.name()
        ));
        let xs = inputs();
        let lib = compile_and_load(&COptions::default(), &src).expect("compiles");
        type Run = unsafe extern "C" fn(*const f32, *mut f32, i32);
        // SAFETY: the symbol is the function above, with this signature.
        let run = unsafe { *lib.get::<Run>(b"run").unwrap() };
        let mut ys = vec![0f32; xs.len()];
        // SAFETY: the call reads and writes `n` elements of buffers that long.
        unsafe { run(xs.as_ptr(), ys.as_mut_ptr(), xs.len() as i32) };
        let ulps =
            |a: f32, b: f32| semantics::ulps(Scalar::F32, a.to_bits().into(), b.to_bits().into());
        for (&x, &y) in xs.iter().zip(&ys) {
            let bits = x.to_bits();
            let close = exact(f64::from(x)) as f32;
            let d = ulps(y, close);
            assert!(
                d <= 1,
                "{f:?}({x:e} = {bits:#010x}) = {y:e}, f64 gives {close:e}: {d} ulps"
            );
            let want = semantics::math_f32(f, x);
            let d = ulps(y, want);
            assert!(
                d <= 4,
                "{f:?}({x:e} = {bits:#010x}) = {y:e}, want {want:e}: {d} ulps"
            );
        }
    }

    #[test]
    fn exp_is_within_one_ulp_of_the_exact_result() {
        check(nacre_ir::MathFn::Exp, f64::exp);
    }

    #[test]
    fn tanh_is_within_one_ulp_of_the_exact_result() {
        check(nacre_ir::MathFn::Tanh, f64::tanh);
    }

    #[test]
    fn only_f32_exp_and_tanh_are_defined_here() {
        let exp = MathFn::Lib(nacre_ir::MathFn::Exp);
        let ln = MathFn::Lib(nacre_ir::MathFn::Ln);
        assert!(defines(exp, Scalar::F32));
        assert!(!defines(exp, Scalar::F64));
        assert!(!defines(ln, Scalar::F32));
        assert!(definition(&CDialect, "", ln, Scalar::F32).is_none());
        let text = definition(&CDialect, "static ", exp, Scalar::F32).unwrap();
        assert!(
            text.starts_with("static float nacre_exp_f32(float x) {"),
            "{text}"
        );
    }
}
