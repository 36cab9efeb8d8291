//! Helper functions of the generated source: operations whose exact Rust semantics need more
//! than one C expression (saturating float-to-int casts, NaN-ignoring min/max, float bit casts,
//! integer bit operations).
//!
//! The printer records which helpers a module uses and emits only those, in a fixed order, so
//! the output stays small and deterministic.

use crate::dialect::Dialect;
use nacre_ir::{Scalar, UnaryOp};

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
        }
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

/// An exact float literal for `±2^exp` in type `s`.
fn power_of_two(s: Scalar, exp: u32, negative: bool) -> String {
    let sign = if negative { "-" } else { "" };
    let suffix = if s == Scalar::F32 { "f" } else { "" };
    format!("{sign}{}.0{suffix}", 1u128 << exp)
}

/// The unsigned integer type of an integer type's width.
fn unsigned_of(s: Scalar) -> Scalar {
    match s.bits() {
        8 => Scalar::U8,
        16 => Scalar::U16,
        32 => Scalar::U32,
        _ => Scalar::U64,
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
        Helper::FloatToInt { from, to } => {
            let f = d.scalar_type(from);
            let t = d.scalar_type(to);
            let bits = to.bits();
            let limit =
                |m: &str| format!("{}INT{bits}_{m}", if to.is_signed_int() { "" } else { "U" });
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
    }
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
}
