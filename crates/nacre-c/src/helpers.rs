//! Helper functions of the generated source: operations whose exact Rust semantics need more
//! than one C expression (saturating float-to-int casts, NaN-ignoring min/max, float bit casts,
//! integer bit operations).
//!
//! The printer records which helpers a module uses and emits only those, in a fixed order, so
//! the output stays small and deterministic.

use crate::dialect::Dialect;
use crate::dialect::MathFn;
use nacre_ir::{AtomicOp, Scalar, UnaryOp, WarpOp};

/// A helper function.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Helper {
    /// `Rust as` from a float type to an integer type: saturating, NaN gives 0.
    FloatToInt {
        /// The float type.
        from: Scalar,
        /// The integer type.
        to: Scalar,
    },
    /// Rust's `f32::min`/`f64::min`: a NaN operand is ignored.
    Min(Scalar),
    /// Rust's `f32::max`/`f64::max`: a NaN operand is ignored.
    Max(Scalar),
    /// Reinterprets integer bits as a float (`f32::from_bits`, `f64::from_bits`).
    FromBits(Scalar),
    /// Reinterprets a float as integer bits (`f32::to_bits`, `f64::to_bits`).
    ToBits(Scalar),
    /// An integer bit operation ([`UnaryOp::is_bit_op`]) on an integer type, in plain C
    /// (shifts and masks: the same definition on every target).
    Bits(UnaryOp, Scalar),
    /// A math-library function that the printer does not take from the target's library
    /// ([`Dialect::math_by_helper`]): in terms of functions the library has, or in plain
    /// arithmetic (see [`math_definition`] for which and how accurate).
    Math(MathFn, Scalar),
    /// Widens a half-precision value (`f16` or `bf16`, held in its 16-bit unsigned storage
    /// type) to `float`, exactly. Uses [`Helper::FromBits`] of `f32`.
    HalfToF32(Scalar),
    /// Rounds a `float` to a half-precision type (ties to even, NaN stays NaN), giving its
    /// 16-bit storage. Uses [`Helper::ToBits`] of `f32`.
    F32ToHalf(Scalar),
    /// An atomic read-modify-write `op` on elements of type `s` that the target lacks, as a
    /// compare-exchange loop (see [`crate::atomic::loop_definition`]): `t name(t *p, t v)`
    /// gives the old value. Float operations use the float's bits helpers (and min/max).
    AtomicLoop {
        /// The operation.
        op: AtomicOp,
        /// The element type.
        s: Scalar,
    },
    /// The dialect's prelude of collective operations (see [`crate::collective`]): the
    /// functions its [`Dialect::collective`] spellings call, among them the shuffle
    /// `nacre_shfl(v, src, lanes)` that [`Helper::WarpReduce`] uses.
    Collectives,
    /// A warp reduction `op` on `s` (see [`crate::collective::reduce_definition`]):
    /// `t name(t v, u32 lane, u32 lanes)`, the butterfly over the warp's `lanes` lanes.
    WarpReduce {
        /// The reduction.
        op: WarpOp,
        /// The element type.
        s: Scalar,
    },
    /// The storage a kernel's failed bounds check redirects its access to when the dialect
    /// defers bounds traps ([`Dialect::defers_bounds_traps`]): 64 bytes aligned to 16, which
    /// every element type and lane group fits. Trapped threads read and write it at once:
    /// under PTX's memory model such racing plain accesses give unspecified values (not
    /// undefined behaviour), and nothing read there reaches a result, since the call fails.
    TrapSink,
}

impl Helper {
    /// The helper's function name (`nacre_f64_to_i32`, `nacre_min_f32`, ...).
    pub fn name(self) -> String {
        match self {
            Helper::FloatToInt { from, to } => format!("nacre_{from}_to_{to}"),
            Helper::Min(s) => format!("nacre_min_{s}"),
            Helper::Max(s) => format!("nacre_max_{s}"),
            Helper::FromBits(s) => format!("nacre_{s}_from_bits"),
            Helper::ToBits(s) => format!("nacre_{s}_to_bits"),
            Helper::Bits(op, s) => format!("nacre_{}_{s}", op.name()),
            Helper::Math(f, s) => format!("nacre_{}_{s}", f.c_name()),
            Helper::HalfToF32(s) => format!("nacre_{s}_to_f32"),
            Helper::F32ToHalf(s) => format!("nacre_f32_to_{s}"),
            Helper::AtomicLoop { op, s } => format!("nacre_atomic_{}_{s}", op.name()),
            Helper::Collectives => "nacre_collectives".to_string(),
            Helper::WarpReduce { op, s } => format!("nacre_{}_{s}", op.name()),
            Helper::TrapSink => "nacre_trap_sink".to_string(),
        }
    }

    /// The helpers this one calls (emitted before it: they order first).
    pub fn uses(self) -> &'static [Helper] {
        match self {
            Helper::HalfToF32(_) => &[Helper::FromBits(Scalar::F32)],
            Helper::F32ToHalf(_) => &[Helper::ToBits(Scalar::F32)],
            Helper::AtomicLoop { op, s } => atomic_loop_uses(op, s),
            Helper::WarpReduce { op, s } => crate::collective::reduce_uses(op, s),
            _ => &[],
        }
    }
}

/// The helpers of [`Helper::AtomicLoop`]: a float's bits, and its min or max.
fn atomic_loop_uses(op: AtomicOp, s: Scalar) -> &'static [Helper] {
    use Helper::{FromBits as F, Max, Min, ToBits as T};
    match (op, s) {
        (AtomicOp::Min, Scalar::F32) => &[F(Scalar::F32), T(Scalar::F32), Min(Scalar::F32)],
        (AtomicOp::Max, Scalar::F32) => &[F(Scalar::F32), T(Scalar::F32), Max(Scalar::F32)],
        (AtomicOp::Min, Scalar::F64) => &[F(Scalar::F64), T(Scalar::F64), Min(Scalar::F64)],
        (AtomicOp::Max, Scalar::F64) => &[F(Scalar::F64), T(Scalar::F64), Max(Scalar::F64)],
        (_, Scalar::F32) => &[F(Scalar::F32), T(Scalar::F32)],
        (_, Scalar::F64) => &[F(Scalar::F64), T(Scalar::F64)],
        _ => &[],
    }
}

/// The unsigned integer type with the width of a float type.
fn bits_type(s: Scalar) -> Scalar {
    if s == Scalar::F32 {
        Scalar::U32
    } else {
        Scalar::U64
    }
}

/// An exact float literal for `±2^exp` in type `s` (`2^128`, past `f32`'s range, is a hex
/// literal in `f64` and infinity in `f32`).
fn power_of_two(s: Scalar, exp: u32, negative: bool) -> String {
    let sign = if negative { "-" } else { "" };
    let suffix = if s == Scalar::F32 { "f" } else { "" };
    match 1u128.checked_shl(exp) {
        Some(p) if exp < 128 => format!("{sign}{p}.0{suffix}"),
        _ if s == Scalar::F32 => format!("{sign}INFINITY"),
        _ => format!("{sign}0x1p{exp}"),
    }
}

/// The unsigned integer type of an integer type's width.
pub(crate) fn unsigned_of(s: Scalar) -> Scalar {
    match s.bits() {
        8 => Scalar::U8,
        16 => Scalar::U16,
        32 => Scalar::U32,
        64 => Scalar::U64,
        _ => Scalar::U128,
    }
}

/// The C expression of integer type `to`'s `MIN` or `MAX` (`m`): the `<stdint.h>` macro, or
/// for the 128-bit types (which have none) an expression of their own type.
fn int_limit(d: &(impl Dialect + ?Sized), to: Scalar, m: &str) -> String {
    if !to.is_wide() {
        let u = if to.is_signed_int() { "" } else { "U" };
        return format!("{u}INT{}_{m}", to.bits());
    }
    let ones = format!("(~({})0)", d.scalar_type(Scalar::U128));
    match (to.is_signed_int(), m) {
        (false, _) => ones,
        (true, "MAX") => format!("(({})({ones} >> 1))", d.scalar_type(Scalar::I128)),
        (true, _) => format!("(-(({})({ones} >> 1)) - 1)", d.scalar_type(Scalar::I128)),
    }
}

/// The C definition of bit operation `op` on integer type `s` (Rust's `count_ones`,
/// `leading_zeros`, `trailing_zeros`, `swap_bytes`, `reverse_bits`): loops over the bits of the
/// unsigned value, in any C-family dialect.
pub fn bits_definition(
    d: &(impl Dialect + ?Sized),
    qualifier: &str,
    op: UnaryOp,
    s: Scalar,
) -> String {
    let name = Helper::Bits(op, s).name();
    let t = d.scalar_type(s);
    let u = d.scalar_type(unsigned_of(s));
    let w = s.bits();
    let top = format!("(({u})1 << {})", w - 1);
    let body = match op {
        UnaryOp::CountOnes => "    int n = 0;
    while (u) { u &= u - 1; n++; }
    return n;"
            .to_string(),
        UnaryOp::LeadingZeros => format!(
            "    int n = 0;
    if (u == 0) return {w};
    while (!(u & {top})) {{ u <<= 1; n++; }}
    return n;"
        ),
        UnaryOp::TrailingZeros => format!(
            "    int n = 0;
    if (u == 0) return {w};
    while (!(u & 1)) {{ u >>= 1; n++; }}
    return n;"
        ),
        UnaryOp::SwapBytes => format!(
            "    {u} r = 0;
    for (int i = 0; i < {}; i++) {{ r = ({u})((r << 8) | (u & 0xff)); u >>= 8; }}
    return ({t})r;",
            w / 8
        ),
        _ => format!(
            "    {u} r = 0;
    for (int i = 0; i < {w}; i++) {{ r = ({u})((r << 1) | (u & 1)); u >>= 1; }}
    return ({t})r;"
        ),
    };
    format!(
        "{qualifier}{t} {name}({t} x) {{
    {u} u = ({u})x;
{body}
}}
"
    )
}

/// The C definition of `helper`, for dialects that have `<stdint.h>` limits and `memcpy`.
/// `qualifier` precedes the return type (for example `static inline `).
pub fn c_definition(d: &(impl Dialect + ?Sized), qualifier: &str, helper: Helper) -> String {
    let name = helper.name();
    match helper {
        Helper::AtomicLoop { op, s } => crate::atomic::c_loop_definition(d, qualifier, op, s),
        // Collectives exist in kernels only, which a GPU dialect prints with its own prelude.
        Helper::Collectives => String::new(),
        Helper::TrapSink => {
            format!("static unsigned char {name}[64] __attribute__((aligned(16)));\n")
        }
        Helper::WarpReduce { op, s } => crate::collective::reduce_definition(d, qualifier, op, s),
        Helper::FloatToInt { from, to } => {
            let f = d.scalar_type(from);
            let t = d.scalar_type(to);
            let bits = to.bits();
            let limit = |m: &str| int_limit(d, to, m);
            if to.is_signed_int() {
                format!(
                    "{qualifier}{t} {name}({f} x) {{\n    if (x != x) return 0;\n    if (x <= {lo}) return {min};\n    if (x >= {hi}) return {max};\n    return ({t})x;\n}}\n",
                    lo = power_of_two(from, bits - 1, true),
                    hi = power_of_two(from, bits - 1, false),
                    min = limit("MIN"),
                    max = limit("MAX"),
                )
            } else {
                format!(
                    "{qualifier}{t} {name}({f} x) {{\n    if (!(x > -1.0{suffix})) return 0;\n    if (x >= {hi}) return {max};\n    return ({t})x;\n}}\n",
                    suffix = if from == Scalar::F32 { "f" } else { "" },
                    hi = power_of_two(from, bits, false),
                    max = limit("MAX"),
                )
            }
        }
        Helper::Min(s) | Helper::Max(s) => {
            let f = d.scalar_type(s);
            // NaN operands are ignored; -0.0 orders below +0.0 (see nacre_ir::semantics).
            let (op, zero) = if matches!(helper, Helper::Min(_)) {
                ('<', "a : b")
            } else {
                ('>', "b : a")
            };
            format!(
                "{qualifier}{f} {name}({f} a, {f} b) {{\n    if (b != b) return a;\n    if (a != a) return b;\n    if (a == b) return signbit(a) ? {zero};\n    return a {op} b ? a : b;\n}}\n"
            )
        }
        Helper::FromBits(s) => {
            let f = d.scalar_type(s);
            let u = d.scalar_type(bits_type(s));
            format!("{qualifier}{f} {name}({u} b) {{\n    {f} x;\n    memcpy(&x, &b, sizeof x);\n    return x;\n}}\n")
        }
        Helper::ToBits(s) => {
            let f = d.scalar_type(s);
            let u = d.scalar_type(bits_type(s));
            format!("{qualifier}{u} {name}({f} x) {{\n    {u} b;\n    memcpy(&b, &x, sizeof b);\n    return b;\n}}\n")
        }
        Helper::Bits(op, s) => bits_definition(d, qualifier, op, s),
        Helper::Math(f, s) => math_definition(d, qualifier, f, s),
        Helper::HalfToF32(s) => half_to_f32_definition(d, qualifier, s),
        Helper::F32ToHalf(s) => f32_to_half_definition(d, qualifier, s),
    }
}

/// The portable definition of [`Helper::HalfToF32`]: integer operations on the bits (the
/// `half` crate's algorithm), NaN quieted.
pub fn half_to_f32_definition(d: &(impl Dialect + ?Sized), qualifier: &str, s: Scalar) -> String {
    let name = Helper::HalfToF32(s).name();
    let (h, u) = (d.scalar_type(Scalar::U16), d.scalar_type(Scalar::U32));
    let from_bits = Helper::FromBits(Scalar::F32).name();
    let body = if s == Scalar::BF16 {
        [
            format!("{u} b = ({u})h << 16;"),
            "if ((h & 0x7fffu) > 0x7f80u) b |= 0x400000u;".to_string(),
            format!("return {from_bits}(b);"),
        ]
        .to_vec()
    } else {
        [
            format!("{u} sign = ({u})(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;"),
            format!("if (e == 0x1fu) return {from_bits}(sign | 0x7f800000u | (m ? 0x400000u | (m << 13) : 0u));"),
            format!("if (e != 0u) return {from_bits}(sign | ((e + 112u) << 23) | (m << 13));"),
            format!("if (m == 0u) return {from_bits}(sign);"),
            "for (e = 113u; !(m & 0x400u); e -= 1u) m <<= 1;".to_string(),
            format!("return {from_bits}(sign | (e << 23) | ((m & 0x3ffu) << 13));"),
        ]
        .to_vec()
    };
    function(qualifier, &format!("float {name}({h} h)"), &body)
}

/// The portable definition of [`Helper::F32ToHalf`]: round to nearest, ties to even, on the
/// bits (the `half` crate's algorithm).
pub fn f32_to_half_definition(d: &(impl Dialect + ?Sized), qualifier: &str, s: Scalar) -> String {
    let name = Helper::F32ToHalf(s).name();
    let (h, u) = (d.scalar_type(Scalar::U16), d.scalar_type(Scalar::U32));
    let i = d.scalar_type(Scalar::I32);
    let to_bits = Helper::ToBits(Scalar::F32).name();
    let body = if s == Scalar::BF16 {
        vec![
            format!("{u} x = {to_bits}(f);"),
            format!("if ((x & 0x7fffffffu) > 0x7f800000u) return ({h})((x >> 16) | 0x40u);"),
            format!("if ((x & 0x8000u) && (x & 0x17fffu)) return ({h})((x >> 16) + 1u);"),
            format!("return ({h})(x >> 16);"),
        ]
    } else {
        vec![
            format!("{u} x = {to_bits}(f), sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xffu, m = x & 0x7fffffu;"),
            format!("if (e == 0xffu) return ({h})(sign | 0x7c00u | (m ? 0x200u | (m >> 13) : 0u));"),
            format!("{i} he = ({i})e - 112;"),
            format!("if (he >= 0x1f) return ({h})(sign | 0x7c00u);"),
            format!("if (he <= 0) {{"),
            format!("    if (14 - he > 24) return ({h})sign;"),
            "    m |= 0x800000u;".to_string(),
            format!("    {u} hm = m >> (14 - he), round = 1u << (13 - he);"),
            "    if ((m & round) && (m & (3u * round - 1u))) hm += 1u;".to_string(),
            format!("    return ({h})(sign | hm);"),
            "}".to_string(),
            format!("{u} r = sign | (({u})he << 10) | (m >> 13);"),
            "if ((m & 0x1000u) && (m & 0x2fffu)) r += 1u;".to_string(),
            format!("return ({h})r;"),
        ]
    };
    function(qualifier, &format!("{h} {name}(float f)"), &body)
}

/// The host C definition of `helper`: [`c_definition`], except for the `f16` conversions,
/// which use the F16C instructions where the compiler targets them (`vcvtph2ps` and
/// `vcvtps2ph` through `_cvtsh_ss`/`_cvtss_sh`: eight times the portable definition's speed
/// on a saxpy over halves) and the portable definition elsewhere; `bf16` (no such
/// instruction before AVX-512 BF16) stays portable. The instructions round to nearest, ties
/// to even, keep subnormals, and quiet a NaN keeping its sign and payload, as
/// [`nacre_ir::semantics`] does (the `half` crate uses them too). GCC's `_Float16` casts
/// are not used: on targets with AVX-512 FP16, GCC 12 merges each scalar conversion into the
/// previous value's register, a dependency chain that made them slower than F16C by 3×.
/// Float `min` and `max` are selects without a branch (`selecting_min_max`).
pub fn host_c_definition(d: &(impl Dialect + ?Sized), qualifier: &str, helper: Helper) -> String {
    let portable = c_definition(d, qualifier, helper);
    let name = helper.name();
    let h = d.scalar_type(Scalar::U16);
    let native = match helper {
        Helper::HalfToF32(Scalar::F16) => format!("{qualifier}float {name}({h} h) {{ return _cvtsh_ss(h); }}\n"),
        Helper::F32ToHalf(Scalar::F16) => format!(
            "{qualifier}{h} {name}(float f) {{ return ({h})_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT); }}\n"
        ),
        Helper::Min(s @ (Scalar::F32 | Scalar::F64)) => return selecting_min_max(d, qualifier, s, false),
        Helper::Max(s @ (Scalar::F32 | Scalar::F64)) => return selecting_min_max(d, qualifier, s, true),
        _ => return portable,
    };
    format!("#if defined(__F16C__)\n#include <immintrin.h>\n{native}#else\n{portable}#endif\n")
}

/// Rust's `min` or `max` on `f32` or `f64` (see [`Helper::Min`]) for host C, as selects and
/// bit operations without a branch, so that C compilers vectorise loops over it (the
/// portable definition's early returns keep GCC's thread loops scalar): the smaller or larger
/// operand; of two equal ones the bits or'd (`min`: `-0.0` wins) or and'd (`max`: `+0.0`
/// wins); the other operand when one is NaN, `b` when both are (as [`nacre_ir::semantics`]).
fn selecting_min_max(d: &(impl Dialect + ?Sized), qualifier: &str, s: Scalar, max: bool) -> String {
    let helper = if max { Helper::Max(s) } else { Helper::Min(s) };
    let (f, u) = (d.scalar_type(s), d.scalar_type(bits_type(s)));
    let (op, equal) = if max { ('>', '&') } else { ('<', '|') };
    let body = [
        format!("{f} m = a {op} b ? a : b;"),
        format!("{u} ua, ub, um;"),
        "memcpy(&ua, &a, sizeof ua);".to_string(),
        "memcpy(&ub, &b, sizeof ub);".to_string(),
        "memcpy(&um, &m, sizeof um);".to_string(),
        format!("um = a == b ? (ua {equal} ub) : um;"),
        "um = b != b ? ua : um;".to_string(),
        "um = a != a ? ub : um;".to_string(),
        "memcpy(&m, &um, sizeof m);".to_string(),
        "return m;".to_string(),
    ];
    function(
        qualifier,
        &format!("{f} {}({f} a, {f} b)", helper.name()),
        &body,
    )
}

/// A helper function's text: `qualifier head {`, the body's lines indented, `}`.
pub(crate) fn function(qualifier: &str, head: &str, body: &[String]) -> String {
    let mut out = format!("{qualifier}{head} {{\n");
    for line in body {
        out.push_str("    ");
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("}\n");
    out
}

/// The portable definition of math function `f` on `s`, in terms of `exp`, `log`, `pow`,
/// `sqrt` and `fabs` as the dialect spells them, for a target that lacks `f`:
///
/// - `expm1` and `log1p` with Kahan's correction (`(e^x - 1) * x / ln(e^x)` and
///   `ln(1 + x) * x / ((1 + x) - 1)`), within a few ulps of the exact result;
/// - `cbrt` as `pow(|x|, 1/3)` with the sign of `x`, refined by one Newton step;
/// - `hypot` as `a * sqrt(1 + (b/a)^2)` with `a` the larger magnitude (no undue overflow);
/// - `exp` and `tanh` on `f32` in plain arithmetic, for C compilers to vectorise (see
///   [`crate::vector_math`]).
///
/// Other functions are never lacking (a dialect refuses them instead); they get a definition
/// that calls the library function by its name.
pub fn math_definition(
    d: &(impl Dialect + ?Sized),
    qualifier: &str,
    f: MathFn,
    s: Scalar,
) -> String {
    let name = Helper::Math(f, s).name();
    if let Some(definition) = crate::vector_math::definition(d, qualifier, f, s) {
        return definition;
    }
    let t = d.scalar_type(s);
    let k = |v: &str| {
        if s == Scalar::F32 {
            format!("{v}f")
        } else {
            v.to_string()
        }
    };
    let call = |g| d.math_function(g, s);
    let (exp, log, pow, sqrt, abs) = (
        call(MathFn::Lib(nacre_ir::MathFn::Exp)),
        call(MathFn::Lib(nacre_ir::MathFn::Ln)),
        call(MathFn::Lib2(nacre_ir::MathFn2::Pow)),
        call(MathFn::Sqrt),
        call(MathFn::Abs),
    );
    let (one, zero) = (k("1.0"), k("0.0"));
    let body = match f {
        MathFn::Lib(nacre_ir::MathFn::ExpM1) => format!(
            "{t} u = {exp}(x);\n    if (u == {one}) return x;\n    {t} m = u - {one};\n    if (m == -{one}) return -{one};\n    if (u - u != {zero}) return u;\n    return m * (x / {log}(u));"
        ),
        MathFn::Lib(nacre_ir::MathFn::Ln1p) => format!(
            "{t} u = {one} + x;\n    if (u == {one}) return x;\n    if (u - u != {zero}) return {log}(u);\n    return {log}(u) * (x / (u - {one}));"
        ),
        MathFn::Lib(nacre_ir::MathFn::Cbrt) => format!(
            "if (x == {zero} || x - x != {zero}) return x;\n    {t} y = {pow}({abs}(x), {one} / {three});\n    y = x < {zero} ? -y : y;\n    return y - (y - x / (y * y)) / {three};",
            three = k("3.0")
        ),
        MathFn::Lib2(nacre_ir::MathFn2::Hypot) => format!(
            "{t} a = {abs}(x), b = {abs}(y);\n    if (a != {zero} && a + a == a) return a;\n    if (b != {zero} && b + b == b) return b;\n    if (a < b) {{ {t} c = a; a = b; b = c; }}\n    if (a == {zero}) return a;\n    {t} r = b / a;\n    return a * {sqrt}({one} + r * r);"
        ),
        other => {
            let args = if matches!(other, MathFn::Lib2(_)) { "x, y" } else { "x" };
            format!("return {}({args});", call(other))
        }
    };
    let params = if matches!(f, MathFn::Lib2(_)) {
        format!("{t} x, {t} y")
    } else {
        format!("{t} x")
    };
    format!("{qualifier}{t} {name}({params}) {{\n    {body}\n}}\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::CDialect;

    #[test]
    fn saturating_cast_bounds_are_exact() {
        let s = c_definition(
            &CDialect,
            "static inline ",
            Helper::FloatToInt {
                from: Scalar::F32,
                to: Scalar::I32,
            },
        );
        assert!(s.contains("x <= -2147483648.0f) return INT32_MIN"), "{s}");
        assert!(s.contains("x >= 2147483648.0f) return INT32_MAX"), "{s}");
        let u = c_definition(
            &CDialect,
            "",
            Helper::FloatToInt {
                from: Scalar::F64,
                to: Scalar::U64,
            },
        );
        assert!(u.starts_with("uint64_t nacre_f64_to_u64(double x)"), "{u}");
        assert!(
            u.contains("x >= 18446744073709551616.0) return UINT64_MAX"),
            "{u}"
        );
    }

    #[test]
    fn names() {
        assert_eq!(Helper::Min(Scalar::F32).name(), "nacre_min_f32");
        assert_eq!(Helper::FromBits(Scalar::F64).name(), "nacre_f64_from_bits");
    }

    /// The portable definitions of the functions Metal lacks, compiled as plain C and run on
    /// inputs across the range, stay within 8 ulps of the reference (`f32` and `f64`).
    #[test]
    fn portable_math_definitions_are_accurate() {
        use nacre_ir::semantics;
        use nacre_ir::{MathFn as F, MathFn2 as F2};
        let lacking = [
            MathFn::Lib(F::ExpM1),
            MathFn::Lib(F::Ln1p),
            MathFn::Lib(F::Cbrt),
            MathFn::Lib2(F2::Hypot),
        ];
        let mut inputs = vec![
            0.0, -0.0, 1.0, -1.0, 1e-30, -3e-8, 5e-5, 0.3, -0.7, 2.5, 88.0, -100.0,
        ];
        inputs.extend([
            1e30,
            3e38,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e-39,
            1e-310,
        ]);
        inputs.extend((0..200).map(|i| ((i as f64) * 0.731).sin() * 10f64.powi(i % 9 - 4)));
        let dir = std::env::temp_dir().join(format!("nacre_math_helpers_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for s in [Scalar::F32, Scalar::F64] {
            let t = CDialect.scalar_type(s);
            let mut src =
                String::from("#include <math.h>\n#include <stdio.h>\n#include <stdint.h>\n");
            for f in lacking {
                src.push_str(&c_definition(&CDialect, "static ", Helper::Math(f, s)));
            }
            src.push_str(&format!("int main(void) {{\n    {t} xs[] = {{"));
            for x in &inputs {
                src.push_str(&format!(
                    "{}, ",
                    if x.is_nan() {
                        "NAN".into()
                    } else if x.is_infinite() {
                        format!("{}INFINITY", if *x < 0.0 { "-" } else { "" })
                    } else {
                        format!("{x:e}")
                    }
                ));
            }
            src.push_str(
                "};\n    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {\n        ",
            );
            src.push_str(&format!(
                "{t} x = xs[i], y = xs[(i * 7 + 3) % (sizeof xs / sizeof xs[0])];\n        "
            ));
            let names: Vec<String> = lacking.iter().map(|&f| Helper::Math(f, s).name()).collect();
            src.push_str(&format!(
                "printf(\"%.17g %.17g %.17g %.17g %.17g %.17g\\n\", (double)x, (double)y, (double){}(x), (double){}(x), (double){}(x), (double){}(x, y));\n    }}\n    return 0;\n}}\n",
                names[0], names[1], names[2], names[3]
            ));
            let c = dir.join(format!("m_{s}.c"));
            let exe = dir.join(format!("m_{s}"));
            std::fs::write(&c, &src).unwrap();
            let built = std::process::Command::new("cc")
                .arg("-O1")
                .arg(&c)
                .arg("-o")
                .arg(&exe)
                .arg("-lm")
                .status()
                .expect("cc runs");
            assert!(built.success(), "{src}");
            let out = std::process::Command::new(&exe).output().expect("runs");
            for line in String::from_utf8(out.stdout).unwrap().lines() {
                let v: Vec<f64> = line.split(' ').map(|w| w.parse().unwrap()).collect();
                let bits = |x: f64| {
                    if s == Scalar::F32 {
                        u64::from((x as f32).to_bits())
                    } else {
                        x.to_bits()
                    }
                };
                let (x, y) = (bits(v[0]), bits(v[1]));
                let want = [
                    semantics::math(F::ExpM1, s, x.into()) as u64,
                    semantics::math(F::Ln1p, s, x.into()) as u64,
                    semantics::math(F::Cbrt, s, x.into()) as u64,
                    semantics::math2(F2::Hypot, s, x.into(), y.into()) as u64,
                ];
                for (k, &w) in want.iter().enumerate() {
                    let d = semantics::ulps(s, bits(v[2 + k]), w);
                    assert!(d <= 8, "{} on {s}: {line}: {d} ulps", names[k]);
                }
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    /// The host `f16` conversions, with F16C where this machine has it (the default flags
    /// target it) and portable with `-mno-f16c`, agree with the reference bit for bit: every
    /// half widened, and every 97th `f32` bit pattern and the edges rounded.
    #[test]
    fn host_half_conversions_match_the_reference_bit_for_bit() {
        use crate::compile::{compile_and_load, COptions};
        use nacre_ir::semantics;
        let mut src = String::from("#include <stdint.h>\n#include <string.h>\n");
        for helper in [
            Helper::FromBits(Scalar::F32),
            Helper::ToBits(Scalar::F32),
            Helper::HalfToF32(Scalar::F16),
            Helper::F32ToHalf(Scalar::F16),
        ] {
            src.push_str(&host_c_definition(&CDialect, "static inline ", helper));
        }
        src.push_str(
            "void widen(const uint16_t *h, float *f, int n) { for (int i = 0; i < n; i++) f[i] = nacre_f16_to_f32(h[i]); }\n\
             void narrow(const float *f, uint16_t *h, int n) { for (int i = 0; i < n; i++) h[i] = nacre_f32_to_f16(f[i]); }\n",
        );
        let halves: Vec<u16> = (0..=u16::MAX).collect();
        let mut floats: Vec<f32> = (0..u32::MAX / 97).map(|i| f32::from_bits(i * 97)).collect();
        floats.extend(
            [
                0x7f80_0001,
                0xffc0_1234,
                0x3380_0000,
                0x3380_0001,
                0x477f_f000,
                0x477f_efff,
            ]
            .map(f32::from_bits),
        );
        for flags in [vec![], vec!["-mno-f16c".to_string()]] {
            if !flags.is_empty() && !cfg!(target_arch = "x86_64") {
                continue;
            }
            let options = COptions {
                flags: flags.clone(),
                ..COptions::default()
            };
            let lib = compile_and_load(&options, &src).expect("compiles");
            type Widen = unsafe extern "C" fn(*const u16, *mut f32, i32);
            type Narrow = unsafe extern "C" fn(*const f32, *mut u16, i32);
            // SAFETY: the symbols are the functions above, with these signatures.
            let (widen, narrow) = unsafe {
                (
                    *lib.get::<Widen>(b"widen").unwrap(),
                    *lib.get::<Narrow>(b"narrow").unwrap(),
                )
            };
            let mut wide = vec![0f32; halves.len()];
            let mut narrowed = vec![0u16; floats.len()];
            // SAFETY: each call reads and writes `n` elements of buffers that long.
            unsafe {
                widen(halves.as_ptr(), wide.as_mut_ptr(), halves.len() as i32);
                narrow(floats.as_ptr(), narrowed.as_mut_ptr(), floats.len() as i32);
            }
            for (&h, w) in halves.iter().zip(&wide) {
                let want = semantics::half_to_f32(Scalar::F16, h.into());
                assert_eq!(w.to_bits(), want.to_bits(), "{flags:?}: widening {h:#06x}");
            }
            for (&f, &h) in floats.iter().zip(&narrowed) {
                let want = semantics::f32_to_half(Scalar::F16, f) as u16;
                assert_eq!(h, want, "{flags:?}: rounding {:#010x}", f.to_bits());
            }
        }
    }

    /// The host C dialects' branch-free float `min` and `max` agree with the reference bit
    /// for bit on zeros of both signs, NaNs, infinities and ordinary values, in every order.
    #[test]
    fn host_min_max_match_the_reference_bit_for_bit() {
        use crate::compile::{compile_and_load, COptions};
        use nacre_ir::semantics;
        let mut src = String::from("#include <stdint.h>\n#include <string.h>\n");
        for s in [Scalar::F32, Scalar::F64] {
            for helper in [Helper::Min(s), Helper::Max(s)] {
                src.push_str(&host_c_definition(&CDialect, "static inline ", helper));
            }
        }
        src.push_str(
            "void run32(const float *a, const float *b, float *lo, float *hi, int n) { for (int i = 0; i < n; i++) { lo[i] = nacre_min_f32(a[i], b[i]); hi[i] = nacre_max_f32(a[i], b[i]); } }\n\
             void run64(const double *a, const double *b, double *lo, double *hi, int n) { for (int i = 0; i < n; i++) { lo[i] = nacre_min_f64(a[i], b[i]); hi[i] = nacre_max_f64(a[i], b[i]); } }\n",
        );
        let values = [
            0.0,
            -0.0,
            1.5,
            -1.5,
            2.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            1e-310,
        ];
        let pairs: Vec<(f64, f64)> = values
            .iter()
            .flat_map(|&a| values.iter().map(move |&b| (a, b)))
            .collect();
        let lib = compile_and_load(&COptions::default(), &src).expect("compiles");
        type Run<T> = unsafe extern "C" fn(*const T, *const T, *mut T, *mut T, i32);
        // SAFETY: the symbols are the functions above, with these signatures.
        let (run32, run64) = unsafe {
            (
                *lib.get::<Run<f32>>(b"run32").unwrap(),
                *lib.get::<Run<f64>>(b"run64").unwrap(),
            )
        };
        let n = pairs.len();
        let (a64, b64): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
        let (a32, b32): (Vec<f32>, Vec<f32>) =
            pairs.iter().map(|&(a, b)| (a as f32, b as f32)).unzip();
        let (mut lo32, mut hi32) = (vec![0f32; n], vec![0f32; n]);
        let (mut lo64, mut hi64) = (vec![0f64; n], vec![0f64; n]);
        // SAFETY: each call reads and writes `n` elements of buffers that long.
        unsafe {
            run32(
                a32.as_ptr(),
                b32.as_ptr(),
                lo32.as_mut_ptr(),
                hi32.as_mut_ptr(),
                n as i32,
            );
            run64(
                a64.as_ptr(),
                b64.as_ptr(),
                lo64.as_mut_ptr(),
                hi64.as_mut_ptr(),
                n as i32,
            );
        }
        for i in 0..n {
            let (a, b) = (a32[i], b32[i]);
            let want = semantics::float_min(a, b).to_bits();
            assert_eq!(lo32[i].to_bits(), want, "min({a:?}, {b:?})");
            let want = semantics::float_max(a, b).to_bits();
            assert_eq!(hi32[i].to_bits(), want, "max({a:?}, {b:?})");
            let (a, b) = (a64[i], b64[i]);
            let want = semantics::float_min(a, b).to_bits();
            assert_eq!(lo64[i].to_bits(), want, "min({a:?}, {b:?})");
            let want = semantics::float_max(a, b).to_bits();
            assert_eq!(hi64[i].to_bits(), want, "max({a:?}, {b:?})");
        }
    }
}
