//! Small algorithms: gcd, Fibonacci, Collatz, hashing, integer square root, bit tricks.

use crate::registry::{scalar_case, Case};
use nacre::prelude::*;

/// Euclid's algorithm.
#[jit]
pub fn gcd(a: Val<u64>, b: Val<u64>) -> Val<u64> {
    let mut x = a;
    let mut y = b;
    while y != 0 {
        let t = x % y;
        x = y;
        y = t;
    }
    x
}

/// Iterative Fibonacci (wrapping), `n` bounded.
#[jit]
pub fn fibonacci(n: Val<u32>) -> Val<u64> {
    let mut a = Val::new(0u64);
    let mut b = Val::new(1u64);
    for _ in 0..(n & 1023) {
        let t = a + b;
        a = b;
        b = t;
    }
    a
}

/// Collatz steps until 1 (bounded).
#[jit]
pub fn collatz(n: Val<u64>) -> Val<u32> {
    let mut x = n | 1;
    let mut steps = Val::new(0u32);
    while x != 1 && steps < 1000 {
        if x % 2 == 0 {
            x /= 2;
        } else {
            x = x * 3 + 1;
        }
        steps += 1;
    }
    steps
}

/// FNV-1a hash of the 8 bytes of a value (trace-time unrolled).
#[jit]
pub fn fnv1a(x: Val<u64>) -> Val<u64> {
    let mut h = Val::new(0xcbf2_9ce4_8422_2325u64);
    for i in 0..8u64 {
        let byte = (x >> (i * 8)) & 0xff;
        h = (h ^ byte) * 0x0000_0100_0000_01b3u64;
    }
    h
}

/// Integer square root by binary search.
#[jit]
pub fn isqrt(n: Val<u32>) -> Val<u32> {
    let mut lo = Val::new(0u64);
    let mut hi = Val::new(65536u64);
    let target = n.cast::<u64>();
    while lo + 1 < hi {
        let mid = (lo + hi) / 2;
        if mid * mid <= target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo.cast::<u32>()
}

/// Population count by clearing the lowest set bit.
#[jit]
pub fn popcount(x: Val<u64>) -> Val<u32> {
    let mut v = x;
    let mut c = Val::new(0u32);
    while v != 0 {
        v = v & (v - 1);
        c += 1;
    }
    c
}

/// Modular exponentiation by squaring.
#[jit]
pub fn pow_mod(base: Val<u64>, exp: Val<u64>) -> Val<u64> {
    let m = 1_000_000_007u64;
    let mut result = Val::new(1u64);
    let mut b = base % m;
    let mut e = exp;
    while e > 0 {
        if e & 1 == 1 {
            result = result * b % m;
        }
        b = b * b % m;
        e >>= 1;
    }
    result
}

/// Newton iterations for a square root in floating point.
#[jit]
pub fn newton_sqrt(x: Val<f64>) -> Val<f64> {
    let a = x.abs() + 1.0;
    let mut g = a;
    for _ in 0..20 {
        g = 0.5 * (g + a / g);
    }
    g
}

/// Wrapping factorial.
#[jit]
pub fn factorial(n: Val<u32>) -> Val<u64> {
    let mut r = Val::new(1u64);
    let mut i = Val::new(2u64);
    let n = (n & 63).cast::<u64>();
    while i <= n {
        r *= i;
        i += 1;
    }
    r
}

/// The logistic map iterated a bounded number of times.
#[jit]
pub fn logistic(v0: Val<f32>, iters: Val<u32>) -> Val<f32> {
    let mut v = v0;
    for _ in 0..(iters & 511) {
        v = 3.9 * v * (1.0 - v);
    }
    v
}

/// The cases of this module.
pub fn cases() -> Vec<Case> {
    vec![
        scalar_case("gcd", gcd, |a: u64, b: u64| {
            let (mut x, mut y) = (a, b);
            while y != 0 {
                (x, y) = (y, x % y);
            }
            Ok(x)
        }),
        scalar_case("fibonacci", fibonacci, |n: u32| {
            let (mut a, mut b) = (0u64, 1u64);
            for _ in 0..(n & 1023) {
                (a, b) = (b, a.wrapping_add(b));
            }
            Ok(a)
        }),
        scalar_case("collatz", collatz, |n: u64| {
            let (mut x, mut steps) = (n | 1, 0u32);
            while x != 1 && steps < 1000 {
                x = if x % 2 == 0 {
                    x / 2
                } else {
                    x.wrapping_mul(3).wrapping_add(1)
                };
                steps += 1;
            }
            Ok(steps)
        }),
        scalar_case("fnv1a", fnv1a, |x: u64| {
            Ok(x.to_le_bytes()
                .iter()
                .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                    (h ^ *b as u64).wrapping_mul(0x0000_0100_0000_01b3)
                }))
        }),
        scalar_case("isqrt", isqrt, |n: u32| {
            let (mut lo, mut hi) = (0u64, 65536u64);
            while lo + 1 < hi {
                let mid = (lo + hi) / 2;
                if mid * mid <= n as u64 {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            Ok(lo as u32)
        }),
        scalar_case("popcount", popcount, |x: u64| Ok(x.count_ones())),
        scalar_case("pow_mod", pow_mod, |base: u64, exp: u64| {
            let m = 1_000_000_007u64;
            let (mut r, mut b, mut e) = (1u64, base % m, exp);
            while e > 0 {
                if e & 1 == 1 {
                    r = r * b % m;
                }
                b = b * b % m;
                e >>= 1;
            }
            Ok(r)
        }),
        scalar_case("newton_sqrt", newton_sqrt, |x: f64| {
            let a = x.abs() + 1.0;
            let mut g = a;
            for _ in 0..20 {
                g = 0.5 * (g + a / g);
            }
            Ok(g)
        }),
        scalar_case("factorial", factorial, |n: u32| {
            Ok((2..=((n & 63) as u64)).fold(1u64, |r, i| r.wrapping_mul(i)))
        }),
        scalar_case("logistic", logistic, |v0: f32, iters: u32| {
            let mut v = v0;
            for _ in 0..(iters & 511) {
                v = 3.9 * v * (1.0 - v);
            }
            Ok(v)
        }),
    ]
}
