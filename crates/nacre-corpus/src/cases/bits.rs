//! Integer bit operations and explicit wrapping and saturating arithmetic, with Rust's names:
//! `count_ones`, `count_zeros`, `leading_zeros`, `trailing_zeros`, `leading_ones`,
//! `trailing_ones`, `swap_bytes`, `reverse_bits`, `rotate_left`, `rotate_right`, `pow`,
//! `saturating_add`, `saturating_sub`, `saturating_mul`, `abs_diff`, `checked_*` and `overflowing_*`, on every
//! width and signedness.

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

/// Overflow-checked arithmetic on a signed and an unsigned type: each result folded with its
/// flag.
macro_rules! checked_mix {
    ($name:ident, $t:ty) => {
        #[doc = concat!("`checked_*`, `overflowing_*`, `saturating_mul` and `abs_diff` on `", stringify!($t), "`.")]
        #[jit]
        pub fn $name(a: Val<$t>, b: Val<$t>) -> Val<i64> {
            let (s, s_ok) = a.checked_add(b);
            let (d, d_ok) = a.checked_sub(b);
            let (p, p_over) = a.overflowing_mul(b);
            let (_, p_ok) = a.checked_mul(b);
            let flags = s_ok.cast::<i64>()
                + d_ok.cast::<i64>() * 2
                + p_over.cast::<i64>() * 4
                + p_ok.cast::<i64>() * 8;
            let sat = a.saturating_mul(b).cast::<i64>() ^ a.abs_diff(b).cast::<i64>();
            ((s.cast::<i64>() ^ d.cast::<i64>() ^ p.cast::<i64>()) << 4i64) + flags + (sat << 1i64)
        }
    };
}
checked_mix!(checked_i32, i32);
checked_mix!(checked_u64, u64);
checked_mix!(checked_i64, i64);
checked_mix!(checked_u8, u8);

/// What [`checked_mix`] computes, in plain Rust.
macro_rules! checked_reference {
    ($t:ty) => {
        |a: $t, b: $t| -> Result<i64, nacre::Trap> {
            let (s, s_ok) = (a.wrapping_add(b), a.checked_add(b).is_some());
            let (d, d_ok) = (a.wrapping_sub(b), a.checked_sub(b).is_some());
            let (p, p_over) = a.overflowing_mul(b);
            let p_ok = a.checked_mul(b).is_some();
            let flags =
                i64::from(s_ok) + i64::from(d_ok) * 2 + i64::from(p_over) * 4 + i64::from(p_ok) * 8;
            let sat = a.saturating_mul(b) as i64 ^ a.abs_diff(b) as i64;
            Ok((((s as i64) ^ (d as i64) ^ (p as i64)) << 4)
                .wrapping_add(flags)
                .wrapping_add(sat << 1))
        }
    };
}

/// The cases of this module.
pub fn cases() -> Vec<Case> {
    vec![
        scalar_case("bits_u8", bits_u8, bit_mix_reference!(u8)),
        scalar_case("bits_i16", bits_i16, bit_mix_reference!(i16)),
        scalar_case("bits_u32", bits_u32, bit_mix_reference!(u32)),
        scalar_case("bits_i64", bits_i64, bit_mix_reference!(i64)),
        scalar_case("checked_i32", checked_i32, checked_reference!(i32)),
        scalar_case("checked_u64", checked_u64, checked_reference!(u64)),
        scalar_case("checked_i64", checked_i64, checked_reference!(i64)),
        scalar_case("checked_u8", checked_u8, checked_reference!(u8)),
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
