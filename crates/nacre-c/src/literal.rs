//! C spellings of IR constants.
//!
//! Every constant is assigned to a variable of its own type, so a literal only has to denote
//! the right value: small integers are plain decimals, larger ones use the `<stdint.h>` macros
//! (`INT64_C`, `UINT64_C`, `INT32_MIN`, ...). Finite floats use Rust's shortest round-trip
//! decimal form (C compilers round decimal literals correctly), infinities `INFINITY`, the
//! canonical NaN `NAN`, and any other NaN its exact bits through a helper.

use crate::dialect::Dialect;
use crate::error::DialectError;
use crate::helpers::Helper;
use nacre_ir::{Const, Scalar, Type};
use std::collections::BTreeSet;

/// A signed integer literal.
fn signed(value: i64, s: Scalar) -> String {
    match value {
        i64::MIN => "INT64_MIN".to_string(),
        v if v == i64::from(i32::MIN) && s == Scalar::I32 => "INT32_MIN".to_string(),
        v if v > i64::from(i32::MIN) && v <= i64::from(i32::MAX) => v.to_string(),
        v => format!("INT64_C({v})"),
    }
}

/// An unsigned integer literal.
fn unsigned(value: u64) -> String {
    if value <= i32::MAX as u64 {
        value.to_string()
    } else if value <= u64::from(u32::MAX) {
        format!("{value}u")
    } else {
        format!("UINT64_C({value})")
    }
}

/// A 128-bit integer literal: C has none, so the value is built from its 64-bit halves in
/// `unsigned __int128` (a value that fits 64 bits is a 64-bit literal), cast to the type.
fn wide(d: &(impl Dialect + ?Sized), s: Scalar, bits: u128) -> String {
    let t = d.scalar_type(s);
    let (hi, lo) = ((bits >> 64) as u64, bits as u64);
    let value = bits as i128;
    if s == Scalar::I128 && i128::from(i64::MIN) <= value && value <= i128::from(i64::MAX) {
        return format!("({t}){}", signed(value as i64, Scalar::I64));
    }
    if hi == 0 {
        return format!("({t}){}", unsigned(lo));
    }
    let u = d.scalar_type(Scalar::U128);
    format!("({t})((({u}){} << 64) | {})", unsigned(hi), unsigned(lo))
}

/// A float literal of type `s` (`f32` or `f64`) with the given bits.
fn float(s: Scalar, bits: u64, helpers: &mut BTreeSet<Helper>) -> String {
    let (text, nan, infinite, negative, canonical_nan) = if s == Scalar::F32 {
        let x = f32::from_bits(bits as u32);
        (
            format!("{x:?}f"),
            x.is_nan(),
            x.is_infinite(),
            x < 0.0,
            x.to_bits() == f32::NAN.to_bits(),
        )
    } else {
        let x = f64::from_bits(bits);
        (
            format!("{x:?}"),
            x.is_nan(),
            x.is_infinite(),
            x < 0.0,
            x.to_bits() == f64::NAN.to_bits(),
        )
    };
    if nan {
        if canonical_nan {
            return "NAN".to_string();
        }
        let helper = Helper::FromBits(s);
        helpers.insert(helper);
        let bits = if s == Scalar::F32 {
            format!("{:#010x}u", bits as u32)
        } else {
            format!("UINT64_C({bits:#018x})")
        };
        return format!("{}({bits})", helper.name());
    }
    if infinite {
        return if negative { "-INFINITY" } else { "INFINITY" }.to_string();
    }
    text
}

/// The C expression for a constant. Pointer constants are raw addresses; fails when the
/// dialect refuses the pointer's type.
pub fn literal(
    d: &(impl Dialect + ?Sized),
    c: Const,
    helpers: &mut BTreeSet<Helper>,
) -> Result<String, DialectError> {
    if let Some(s) = c.ty.scalar().filter(|s| s.is_wide()) {
        return Ok(wide(d, s, c.bits));
    }
    let bits = c.bits as u64;
    Ok(match c.ty {
        Type::Ptr(elem, space) => {
            let ty = d.pointer_type(elem, space)?;
            if bits == 0 {
                format!("({ty})0")
            } else {
                format!("({ty})({})UINT64_C({bits:#x})", d.address_type())
            }
        }
        Type::Scalar(s) => match s {
            Scalar::Bool => if bits & 1 != 0 { "1" } else { "0" }.to_string(),
            Scalar::I8 => signed(i64::from(bits as i8), s),
            Scalar::I16 => signed(i64::from(bits as i16), s),
            Scalar::I32 => signed(i64::from(bits as i32), s),
            Scalar::I64 => signed(bits as i64, s),
            Scalar::U8 => unsigned(bits & 0xff),
            // A half constant is its bits in the 16-bit storage type.
            Scalar::U16 | Scalar::F16 | Scalar::BF16 => unsigned(bits & 0xffff),
            Scalar::U32 => unsigned(bits & 0xffff_ffff),
            Scalar::U64 => unsigned(bits),
            Scalar::F32 | Scalar::F64 => float(s, bits, helpers),
            Scalar::I128 | Scalar::U128 => wide(d, s, c.bits),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::CDialect;

    fn lit(ty: Type, bits: u64) -> String {
        wide_lit(ty, u128::from(bits))
    }

    fn wide_lit(ty: Type, bits: u128) -> String {
        literal(&CDialect, Const { ty, bits }, &mut BTreeSet::new()).unwrap()
    }

    #[test]
    fn wide_integers() {
        assert_eq!(wide_lit(Type::I128, (-5i128) as u128), "(__int128)-5");
        assert_eq!(wide_lit(Type::U128, 7), "(unsigned __int128)7");
        assert_eq!(
            wide_lit(Type::I128, i128::MIN as u128),
            "(__int128)(((unsigned __int128)UINT64_C(9223372036854775808) << 64) | 0)"
        );
        assert_eq!(
            wide_lit(Type::U128, u128::MAX),
            "(unsigned __int128)(((unsigned __int128)UINT64_C(18446744073709551615) << 64) \
             | UINT64_C(18446744073709551615))"
        );
    }

    #[test]
    fn integers() {
        assert_eq!(lit(Type::I32, (-5i32) as u32 as u64), "-5");
        assert_eq!(lit(Type::I32, i32::MIN as u32 as u64), "INT32_MIN");
        assert_eq!(lit(Type::I64, i64::MIN as u64), "INT64_MIN");
        assert_eq!(
            lit(Type::I64, i64::MAX as u64),
            "INT64_C(9223372036854775807)"
        );
        assert_eq!(
            lit(Type::I64, i32::MIN as i64 as u64),
            "INT64_C(-2147483648)"
        );
        assert_eq!(lit(Type::I8, 0x80), "-128");
        assert_eq!(lit(Type::U32, u32::MAX as u64), "4294967295u");
        assert_eq!(lit(Type::U64, u64::MAX), "UINT64_C(18446744073709551615)");
        assert_eq!(lit(Type::BOOL, 1), "1");
    }

    #[test]
    fn floats() {
        assert_eq!(lit(Type::F64, 1.5f64.to_bits()), "1.5");
        assert_eq!(lit(Type::F32, 0.1f32.to_bits() as u64), "0.1f");
        assert_eq!(lit(Type::F64, (-0.0f64).to_bits()), "-0.0");
        assert_eq!(lit(Type::F64, f64::NEG_INFINITY.to_bits()), "-INFINITY");
        assert_eq!(lit(Type::F32, f32::NAN.to_bits() as u64), "NAN");
        let mut helpers = BTreeSet::new();
        let odd = literal(
            &CDialect,
            Const {
                ty: Type::F64,
                bits: 0xfff0_0000_0000_0001,
            },
            &mut helpers,
        )
        .unwrap();
        assert_eq!(odd, "nacre_f64_from_bits(UINT64_C(0xfff0000000000001))");
        assert!(helpers.contains(&Helper::FromBits(Scalar::F64)));
    }

    #[test]
    fn pointers() {
        assert_eq!(lit(Type::ptr(Scalar::I32), 0), "(int32_t *)0");
        assert_eq!(
            lit(Type::ptr(Scalar::U8), 0x1000),
            "(uint8_t *)(uintptr_t)UINT64_C(0x1000)"
        );
    }
}
