//! Integer bit operations and explicit wrapping and saturating arithmetic, with Rust's names:
//! `count_ones`, `count_zeros`, `leading_zeros`, `trailing_zeros`, `leading_ones`,
//! `trailing_ones`, `swap_bytes`, `reverse_bits`, `rotate_left`, `rotate_right`, `pow`,
//! `saturating_add`, `saturating_sub`, on every width and signedness.

use crate::registry::{scalar_case, Case};
use nacre::prelude::*;

/// Every bit operation on `x` (rotations by `n`), folded into one `u32`.
macro_rules! bit_mix {
    ($name:ident, $t:ty) => {
        #[doc = concat!("Every bit operation on a `", stringify!($t), "`, folded into a `u32`.")]
        #[jit]
        pub fn $name(x: Val<$t>, n: Val<u32>) -> Val<u32> {
            let counts = x.count_ones()
                + (x.leading_zeros() << 7u32)
                + (x.trailing_zeros() << 14u32)
                + (x.count_zeros() << 21u32)
                + (x.leading_ones() ^ x.trailing_ones());
            let moved = x.swap_bytes() ^ x.reverse_bits().rotate_left(n) ^ x.rotate_right(n + 3u32);
            counts ^ moved.cast::<u32>()
        }
    };
}
bit_mix!(bits_u8, u8);
bit_mix!(bits_i16, i16);
bit_mix!(bits_u32, u32);
bit_mix!(bits_i64, i64);

/// What [`bit_mix`] computes, in plain Rust.
macro_rules! bit_mix_reference {
    ($t:ty) => {
        |x: $t, n: u32| -> Result<u32, nacre::Trap> {
            let counts = x
                .count_ones()
                .wrapping_add(x.leading_zeros() << 7)
                .wrapping_add(x.trailing_zeros() << 14)
                .wrapping_add(x.count_zeros() << 21)
                .wrapping_add(x.leading_ones() ^ x.trailing_ones());
            let moved = x.swap_bytes()
                ^ x.reverse_bits().rotate_left(n)
                ^ x.rotate_right(n.wrapping_add(3));
            Ok(counts ^ moved as u32)
        }
    };
}

/// Saturating and wrapping arithmetic and powers on signed and unsigned types.
#[jit]
pub fn saturating_mix(a: Val<i32>, b: Val<i32>, c: Val<u16>, d: Val<u16>) -> Val<i64> {
    let s = a.saturating_add(b).cast::<i64>() ^ (a.saturating_sub(b).cast::<i64>() << 1i64);
    let u = c.saturating_add(d).cast::<i64>() + (c.saturating_sub(d).cast::<i64>() << 20i64);
    let p =
        a.pow(3).cast::<i64>() + c.wrapping_pow(5).cast::<i64>() + a.wrapping_mul(b).cast::<i64>();
    s + (u << 2i64) + p
}

/// The cases of this module.
pub fn cases() -> Vec<Case> {
    vec![
        scalar_case("bits_u8", bits_u8, bit_mix_reference!(u8)),
        scalar_case("bits_i16", bits_i16, bit_mix_reference!(i16)),
        scalar_case("bits_u32", bits_u32, bit_mix_reference!(u32)),
        scalar_case("bits_i64", bits_i64, bit_mix_reference!(i64)),
        scalar_case(
            "saturating_mix",
            saturating_mix,
            |a: i32, b: i32, c: u16, d: u16| {
                let s = i64::from(a.saturating_add(b)) ^ (i64::from(a.saturating_sub(b)) << 1);
                let u = i64::from(c.saturating_add(d)) + (i64::from(c.saturating_sub(d)) << 20);
                let p = i64::from(a.wrapping_pow(3))
                    + i64::from(c.wrapping_pow(5))
                    + i64::from(a.wrapping_mul(b));
                Ok(s.wrapping_add(u << 2).wrapping_add(p))
            },
        ),
    ]
}
