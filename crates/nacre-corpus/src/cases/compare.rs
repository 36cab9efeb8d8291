//! Every comparison operator, packed into one result per type.

use crate::registry::{scalar_case, Case};
use nacre::prelude::*;

macro_rules! compare_cases {
    ($($name:ident: $t:ident);* $(;)?) => {
        $(
            /// All six comparisons, one bit each, through traced `if`s.
            #[jit]
            pub fn $name(a: Val<$t>, b: Val<$t>) -> Val<i32> {
                let mut r = Val::new(0i32);
                if a < b { r |= 1; }
                if a <= b { r |= 2; }
                if a > b { r |= 4; }
                if a >= b { r |= 8; }
                if a == b { r |= 16; }
                if a != b { r |= 32; }
                r
            }
        )*
        /// The cases of this module.
        pub fn cases() -> Vec<Case> {
            vec![$(
                scalar_case(stringify!($name), $name, |a: $t, b: $t| {
                    Ok((a < b) as i32 | ((a <= b) as i32) << 1 | ((a > b) as i32) << 2
                        | ((a >= b) as i32) << 3 | ((a == b) as i32) << 4 | ((a != b) as i32) << 5)
                }),
            )*]
        }
    };
}

compare_cases! {
    compare_i8: i8;
    compare_i32: i32;
    compare_u32: u32;
    compare_u64: u64;
    compare_f32: f32;
    compare_f64: f64;
}
