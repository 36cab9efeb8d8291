//! Conversions between numeric types (Rust `as` semantics).

use crate::registry::{scalar_case, Case};
use nacre::prelude::*;

macro_rules! cast_cases {
    ($($name:ident: $from:ident => $to:ident);* $(;)?) => {
        $(
            /// A cast.
            #[jit]
            pub fn $name(a: Val<$from>) -> Val<$to> {
                a.cast::<$to>()
            }
        )*
        /// The cases of this module.
        pub fn cases() -> Vec<Case> {
            let mut v = vec![$(
                #[allow(clippy::unnecessary_cast)]
                scalar_case(stringify!($name), $name, |a: $from| Ok(a as $to)),
            )*];
            v.push(scalar_case("cast_i32_bool", cast_i32_bool, |a: i32| Ok(a != 0)));
            v.push(scalar_case("cast_f64_bool", cast_f64_bool, |a: f64| Ok(a != 0.0)));
            v.push(scalar_case("cast_bool_i32", cast_bool_i32, |a: bool| Ok(a as i32)));
            v.push(scalar_case("cast_bool_f32", cast_bool_f32, |a: bool| Ok(a as u8 as f32)));
            v
        }
    };
}

cast_cases! {
    cast_i32_f64: i32 => f64;
    cast_f64_i32: f64 => i32;
    cast_f32_u8: f32 => u8;
    cast_i64_i8: i64 => i8;
    cast_u8_i32: u8 => i32;
    cast_i8_u64: i8 => u64;
    cast_u64_f32: u64 => f32;
    cast_f64_u64: f64 => u64;
    cast_f32_f64: f32 => f64;
    cast_f64_f32: f64 => f32;
    cast_u32_i16: u32 => i16;
    cast_i16_u32: i16 => u32;
    cast_f64_i64: f64 => i64;
    cast_i64_f32: i64 => f32;
    cast_u16_f64: u16 => f64;
}

/// Integer to bool (`!= 0`).
#[jit]
pub fn cast_i32_bool(a: Val<i32>) -> Val<bool> {
    a.cast::<bool>()
}

/// Float to bool (`!= 0.0`).
#[jit]
pub fn cast_f64_bool(a: Val<f64>) -> Val<bool> {
    a.cast::<bool>()
}

/// Bool to integer (0 or 1).
#[jit]
pub fn cast_bool_i32(a: Val<bool>) -> Val<i32> {
    a.cast::<i32>()
}

/// Bool to float.
#[jit]
pub fn cast_bool_f32(a: Val<bool>) -> Val<f32> {
    a.cast::<f32>()
}
