//! Arithmetic, bitwise and math operators on every scalar type.

use crate::registry::{scalar_case, Case};
use nacre::ir::semantics::{float_max, float_min};
use nacre::ir::Trap;
use nacre::prelude::*;

macro_rules! int_cases {
    ($($t:ident: $arith:ident, $divrem:ident, $shift:ident, $minmax:ident);* $(;)?) => {
        $(
            /// Wrapping arithmetic mixed with a shift.
            #[jit]
            pub fn $arith(a: Val<$t>, b: Val<$t>) -> Val<$t> {
                (a + b) * (a - b) ^ (a >> 3)
            }

            /// Division and remainder (trap on zero, wrap on MIN / -1).
            #[jit]
            pub fn $divrem(a: Val<$t>, b: Val<$t>) -> Val<$t> {
                a / b + a % b
            }

            /// Shifts by a variable amount (masked to the width).
            #[jit]
            pub fn $shift(a: Val<$t>, b: Val<$t>) -> Val<$t> {
                (a << b) | (a >> b)
            }

            /// Minimum and maximum.
            #[jit]
            pub fn $minmax(a: Val<$t>, b: Val<$t>) -> Val<$t> {
                a.min(b) - a.max(b) + (a & b)
            }
        )*

        fn int_cases() -> Vec<Case> {
            vec![$(
                scalar_case(stringify!($arith), $arith, |a: $t, b: $t| {
                    Ok(a.wrapping_add(b).wrapping_mul(a.wrapping_sub(b)) ^ (a >> 3))
                }),
                scalar_case(stringify!($divrem), $divrem, |a: $t, b: $t| {
                    if b == 0 {
                        return Err(Trap::DivisionByZero);
                    }
                    Ok(a.wrapping_div(b).wrapping_add(a.wrapping_rem(b)))
                }),
                scalar_case(stringify!($shift), $shift, |a: $t, b: $t| {
                    Ok(a.wrapping_shl(b as u32) | a.wrapping_shr(b as u32))
                }),
                scalar_case(stringify!($minmax), $minmax, |a: $t, b: $t| {
                    Ok(a.min(b).wrapping_sub(a.max(b)).wrapping_add(a & b))
                }),
            )*]
        }
    };
}

int_cases! {
    i8: arith_i8, divrem_i8, shift_i8, minmax_i8;
    i16: arith_i16, divrem_i16, shift_i16, minmax_i16;
    i32: arith_i32, divrem_i32, shift_i32, minmax_i32;
    i64: arith_i64, divrem_i64, shift_i64, minmax_i64;
    u8: arith_u8, divrem_u8, shift_u8, minmax_u8;
    u16: arith_u16, divrem_u16, shift_u16, minmax_u16;
    u32: arith_u32, divrem_u32, shift_u32, minmax_u32;
    u64: arith_u64, divrem_u64, shift_u64, minmax_u64;
}

macro_rules! signed_cases {
    ($($t:ident: $name:ident);* $(;)?) => {
        $(
            /// Negation, absolute value and bitwise not (wrapping at MIN).
            #[jit]
            pub fn $name(a: Val<$t>, b: Val<$t>) -> Val<$t> {
                (-a).abs() ^ !b
            }
        )*
        fn signed_cases() -> Vec<Case> {
            vec![$(
                scalar_case(stringify!($name), $name, |a: $t, b: $t| Ok(a.wrapping_neg().wrapping_abs() ^ !b)),
            )*]
        }
    };
}

signed_cases! { i8: neg_abs_i8; i16: neg_abs_i16; i32: neg_abs_i32; i64: neg_abs_i64 }

macro_rules! float_cases {
    ($($t:ident: $arith:ident, $math:ident, $fma:ident, $minmax:ident, $neg:ident);* $(;)?) => {
        $(
            /// IEEE arithmetic including remainder.
            #[jit]
            pub fn $arith(a: Val<$t>, b: Val<$t>) -> Val<$t> {
                a * b + a / b - a % b
            }

            /// Square root, floor and ceiling.
            #[jit]
            pub fn $math(a: Val<$t>, b: Val<$t>) -> Val<$t> {
                a.sqrt() + b.floor() * a.ceil()
            }

            /// Fused multiply-add.
            #[jit]
            pub fn $fma(a: Val<$t>, b: Val<$t>) -> Val<$t> {
                a.fma(b, a)
            }

            /// Minimum and maximum (a NaN operand is ignored).
            #[jit]
            pub fn $minmax(a: Val<$t>, b: Val<$t>) -> Val<$t> {
                a.min(b) * 2.0 + a.max(b)
            }

            /// Negation and absolute value.
            #[jit]
            pub fn $neg(a: Val<$t>, b: Val<$t>) -> Val<$t> {
                -a + b.abs()
            }
        )*
        fn float_cases() -> Vec<Case> {
            vec![$(
                scalar_case(stringify!($arith), $arith, |a: $t, b: $t| Ok(a * b + a / b - a % b)),
                scalar_case(stringify!($math), $math, |a: $t, b: $t| Ok(a.sqrt() + b.floor() * a.ceil())),
                scalar_case(stringify!($fma), $fma, |a: $t, b: $t| Ok(a.mul_add(b, a))),
                scalar_case(stringify!($minmax), $minmax, |a: $t, b: $t| Ok(float_min(a, b) * 2.0 + float_max(a, b))),
                scalar_case(stringify!($neg), $neg, |a: $t, b: $t| Ok(-a + b.abs())),
            )*]
        }
    };
}

float_cases! {
    f32: arith_f32, math_f32, fma_f32, minmax_f32, neg_abs_f32;
    f64: arith_f64, math_f64, fma_f64, minmax_f64, neg_abs_f64;
}

/// Logical operators on `bool` (no short-circuit).
#[jit]
pub fn logic_bool(a: Val<bool>, b: Val<bool>, c: Val<bool>) -> Val<bool> {
    (a & b) | (!a ^ c)
}

/// The cases of this module.
pub fn cases() -> Vec<Case> {
    let mut v = int_cases();
    v.extend(signed_cases());
    v.extend(float_cases());
    v.push(scalar_case(
        "logic_bool",
        logic_bool,
        |a: bool, b: bool, c: bool| Ok((a & b) | (!a ^ c)),
    ));
    v
}
