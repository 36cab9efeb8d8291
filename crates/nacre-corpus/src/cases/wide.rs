//! The 128-bit integers (`i128`, `u128`): full products, division and remainder, shifts, bit
//! operations, comparisons and conversions to and from floats, computed inside traced code
//! from 64-bit arguments (128-bit values cannot cross the host boundary), and through memory
//! (`Ptr<i128>`), as decimal arithmetic in queries uses them.

use crate::registry::{scalar_case, Case, CaseKind};
use nacre::ir::Trap;
use nacre::prelude::*;
use nacre::Engine;

/// The high word of the full signed product `a × b`.
#[jit]
pub fn mul_hi_i64(a: Val<i64>, b: Val<i64>) -> Val<i64> {
    ((a.cast::<i128>() * b.cast::<i128>()) >> 64i128).cast::<i64>()
}

/// The high word of the full unsigned product, plus the low word of the square of the sum.
#[jit]
pub fn mul_hi_u64(a: Val<u64>, b: Val<u64>) -> Val<u64> {
    let p = a.cast::<u128>() * b.cast::<u128>();
    let s = a.cast::<u128>() + b.cast::<u128>();
    (p >> 64u128).cast::<u64>() ^ (s * s).cast::<u64>()
}

/// Signed 128-bit division and remainder of a value made of both arguments by a multiple of
/// `b` (a zero `b` traps).
#[jit]
pub fn wide_divrem(a: Val<i64>, b: Val<i64>) -> Val<i64> {
    let x = (a.cast::<i128>() << 64i128) | b.cast::<u64>().cast::<i128>();
    let d = b.cast::<i128>() * 1_000_003i128;
    let (q, r) = (x / d, x % d);
    (q ^ r).cast::<i64>() ^ (q >> 64i128).cast::<i64>()
}

/// Unsigned 128-bit division and remainder (the divisor is zero only when `b` is zero and
/// `a < 2^61`, which traps).
#[jit]
pub fn wide_udivrem(a: Val<u64>, b: Val<u64>) -> Val<u64> {
    let x = (a.cast::<u128>() << 64u128) | b.cast::<u128>();
    let d = (b.cast::<u128>() << 3u128) | (a >> 61u64).cast::<u128>();
    ((x / d) ^ (x % d)).cast::<u64>() ^ ((x / d) >> 64u128).cast::<u64>()
}

/// Every bit operation on a `u128` made of `a` and its complement pattern.
#[jit]
pub fn wide_bits(a: Val<u64>, n: Val<u32>) -> Val<u64> {
    let x = (a.cast::<u128>() << 64u128) | (a ^ 0x5555_5555_5555_5555u64).cast::<u128>();
    let counts = x.count_ones() + (x.leading_zeros() << 8u32) + (x.trailing_zeros() << 16u32);
    let y = x.cast::<i128>() >> n.cast::<i128>();
    let moved = x.rotate_left(n) ^ x.swap_bytes() ^ x.reverse_bits().rotate_right(n + 5u32);
    moved.cast::<u64>() ^ (moved >> 64u128).cast::<u64>() ^ counts.cast::<u64>() ^ y.cast::<u64>()
}

/// Comparisons, `min`, `max`, `abs` and `select` on values beyond 64 bits.
#[jit]
pub fn wide_order(a: Val<i64>, b: Val<u64>) -> Val<i64> {
    let x = a.cast::<i128>() * 3_000_000_000_000i128;
    let y = b.cast::<i128>() << 40i128;
    let u = b.cast::<u128>() * 0x1_0000_0001u128;
    let m = x.min(y) - x.max(y) + (x - y).abs();
    let flags = x.lt(y).cast::<i64>()
        + u.ge(x.cast::<u128>()).cast::<i64>() * 2i64
        + x.eq(y).cast::<i64>() * 4i64
        + u.min(x.cast::<u128>()).gt(u128::MAX >> 1).cast::<i64>() * 8i64;
    let pick = select(x.le(y), m, -m);
    (pick >> 32i128).cast::<i64>() ^ flags ^ (u.max(7u128) >> 70u128).cast::<i64>()
}

/// Conversions between the 128-bit integers and floats (saturating from floats, as Rust's
/// `as`: NaN is 0, out-of-range values are the limits).
#[jit]
pub fn wide_floats(a: Val<i64>, b: Val<f64>) -> Val<f64> {
    let x = a.cast::<i128>() * a.cast::<i128>();
    let back = (b * 1e30f64).cast::<i128>();
    let unsigned = b.cast::<u128>();
    x.cast::<f64>()
        + back.cast::<f64>()
        + unsigned.cast::<f32>().cast::<f64>()
        + x.cast::<u128>().cast::<f64>()
        + (b * 1e38f64).cast::<u128>().cast::<f64>()
}

/// Decimal-style accumulation through memory: `out[0]` is the sum of squares of `xs` and
/// `out[1]` their wrapping product, both in `i128`; `out[2]` is `out[0]` read back, halved.
#[jit]
pub fn wide_accumulate(xs: Ptr<i64>, n: Val<i64>, out: Ptr<i128>) {
    let mut sum = Val::new(0i128);
    let mut product = Val::new(1i128);
    for i in 0..n {
        let x = xs[i].cast::<i128>();
        sum += x * x;
        product *= x | 1i128;
    }
    out[0i64] = sum;
    out[1i64] = product;
    out[2i64] = out[0i64] >> 1i128;
}

fn check_accumulate(engine: &Engine, data: &[i32]) -> Result<(), String> {
    let f = engine.compile(wide_accumulate).map_err(|e| e.to_string())?;
    let xs: Vec<i64> = data.iter().map(|&x| i64::from(x) << 20).collect();
    let mut out = vec![0i128; 3];
    f.call(&xs, xs.len() as i64, &mut out)
        .map_err(|e| e.to_string())?;
    let sum = xs
        .iter()
        .fold(0i128, |s, &x| s.wrapping_add(i128::from(x) * i128::from(x)));
    let product = xs
        .iter()
        .fold(1i128, |p, &x| p.wrapping_mul(i128::from(x) | 1));
    if out != [sum, product, sum >> 1] {
        return Err(format!("got {out:?}, want {:?}", [sum, product, sum >> 1]));
    }
    Ok(())
}

/// The cases of this module.
pub fn cases() -> Vec<Case> {
    vec![
        scalar_case("mul_hi_i64", mul_hi_i64, |a: i64, b: i64| {
            Ok(((i128::from(a) * i128::from(b)) >> 64) as i64)
        }),
        scalar_case("mul_hi_u64", mul_hi_u64, |a: u64, b: u64| {
            let p = u128::from(a) * u128::from(b);
            let s = u128::from(a) + u128::from(b);
            Ok((p >> 64) as u64 ^ s.wrapping_mul(s) as u64)
        }),
        scalar_case("wide_divrem", wide_divrem, |a: i64, b: i64| {
            let x = (i128::from(a) << 64) | i128::from(b as u64);
            let d = i128::from(b) * 1_000_003;
            if d == 0 {
                return Err(Trap::DivisionByZero);
            }
            let (q, r) = (x.wrapping_div(d), x.wrapping_rem(d));
            Ok((q ^ r) as i64 ^ (q >> 64) as i64)
        }),
        scalar_case("wide_udivrem", wide_udivrem, |a: u64, b: u64| {
            let x = (u128::from(a) << 64) | u128::from(b);
            let d = (u128::from(b) << 3) | u128::from(a >> 61);
            if d == 0 {
                return Err(Trap::DivisionByZero);
            }
            Ok(((x / d) ^ (x % d)) as u64 ^ ((x / d) >> 64) as u64)
        }),
        scalar_case("wide_bits", wide_bits, |a: u64, n: u32| {
            let x = (u128::from(a) << 64) | u128::from(a ^ 0x5555_5555_5555_5555);
            let counts = x
                .count_ones()
                .wrapping_add(x.leading_zeros() << 8)
                .wrapping_add(x.trailing_zeros() << 16);
            let y = (x as i128).wrapping_shr(n);
            let moved = x.rotate_left(n)
                ^ x.swap_bytes()
                ^ x.reverse_bits().rotate_right(n.wrapping_add(5));
            Ok(moved as u64 ^ (moved >> 64) as u64 ^ u64::from(counts) ^ y as u64)
        }),
        scalar_case("wide_order", wide_order, |a: i64, b: u64| {
            let x = i128::from(a) * 3_000_000_000_000;
            let y = i128::from(b) << 40;
            let u = u128::from(b) * 0x1_0000_0001;
            let m = x
                .min(y)
                .wrapping_sub(x.max(y))
                .wrapping_add(x.wrapping_sub(y).wrapping_abs());
            let flags = i64::from(x < y)
                + i64::from(u >= x as u128) * 2
                + i64::from(x == y) * 4
                + i64::from(u.min(x as u128) > u128::MAX >> 1) * 8;
            let pick = if x <= y { m } else { m.wrapping_neg() };
            Ok((pick >> 32) as i64 ^ flags ^ (u.max(7) >> 70) as i64)
        }),
        scalar_case("wide_floats", wide_floats, |a: i64, b: f64| {
            let x = i128::from(a) * i128::from(a);
            Ok(x as f64
                + (b * 1e30) as i128 as f64
                + f64::from(b as u128 as f32)
                + x as u128 as f64
                + (b * 1e38) as u128 as f64)
        }),
        Case {
            name: "wide_accumulate",
            kind: CaseKind::Array {
                check: check_accumulate,
            },
        },
    ]
}
