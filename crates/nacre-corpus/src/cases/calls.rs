//! Calls: helpers inlined at trace time, separate IR functions (with recursion), and runtime
//! calls into Rust.

use crate::registry::{scalar_case, Case};
use nacre::prelude::*;

/// A plain Rust helper over `Val`s: inlined when traced.
fn square_plus(x: Val<i32>, k: i32) -> Val<i32> {
    x * x + k
}

/// A `#[jit]` helper with an early return, inlined into its caller.
#[jit]
fn clamp_helper(x: Val<i32>, lo: Val<i32>, hi: Val<i32>) -> Val<i32> {
    if x < lo {
        return lo;
    }
    if x > hi {
        return hi;
    }
    x
}

/// Calls inlined helpers.
#[jit]
pub fn inline_calls(x: Val<i32>) -> Val<i32> {
    let y = clamp_helper(x, Val::new(-1000), Val::new(1000));
    square_plus(y, 7) - clamp_helper(y * 3, Val::new(0), Val::new(50))
}

/// A helper traced once as its own IR function.
#[jit]
pub fn poly(x: Val<i64>) -> Val<i64> {
    x * x * 3 - x * 2 + 1
}

/// Calls `poly` as a separate function several times.
#[jit]
pub fn separate_calls(a: Val<i64>, b: Val<i64>) -> Val<i64> {
    call(poly, (a,)) + call(poly, (b,)) * call(poly, (a - b,))
}

/// Recursive Fibonacci through separate-function calls.
#[jit]
pub fn fib_rec(n: Val<u32>) -> Val<u32> {
    if n < 2 {
        return n;
    }
    call(fib_rec, (n - 1,)) + call(fib_rec, (n - 2,))
}

/// Entry point bounding the recursion depth.
#[jit]
pub fn recursive_fib(n: Val<u32>) -> Val<u32> {
    call(fib_rec, (n % 20,))
}

/// Mutual recursion: even/odd.
#[jit]
pub fn is_even(n: Val<u32>) -> Val<bool> {
    if n == 0 {
        return Val::new(true);
    }
    call(is_odd, (n - 1,))
}

/// Mutual recursion: odd/even.
#[jit]
pub fn is_odd(n: Val<u32>) -> Val<bool> {
    if n == 0 {
        return Val::new(false);
    }
    call(is_even, (n - 1,))
}

/// Entry point for the even/odd pair.
#[jit]
pub fn mutual_recursion(n: Val<u32>) -> Val<bool> {
    call(is_even, (n % 500,))
}

/// A Rust function called at run time.
pub extern "C" fn host_mix(a: i64, b: f64) -> f64 {
    a as f64 * 0.5 + b
}

/// A Rust function without result, called for its effect on memory owned by the test.
pub extern "C" fn host_checksum(a: u32, b: u32) -> u32 {
    a.rotate_left(5) ^ b.wrapping_mul(0x9E37_79B9)
}

/// Runtime calls into Rust.
#[jit]
pub fn runtime_calls(a: Val<i64>, b: Val<f64>) -> Val<f64> {
    let m = nacre::invoke!(host_mix(a, b));
    let c = nacre::invoke!(host_checksum(a.cast::<u32>(), Val::new(17u32)));
    m + c.cast::<f64>()
}

/// A Rust function called at run time inside a loop.
#[jit]
pub fn runtime_call_loop(n: Val<u32>) -> Val<u32> {
    let mut h = Val::new(0u32);
    for i in 0..(n & 255) {
        h = nacre::invoke!(host_checksum(h, i));
    }
    h
}

fn fib_ref(n: u32) -> u32 {
    if n < 2 {
        n
    } else {
        fib_ref(n - 1).wrapping_add(fib_ref(n - 2))
    }
}

/// The cases of this module.
pub fn cases() -> Vec<Case> {
    vec![
        scalar_case("inline_calls", inline_calls, |x: i32| {
            let y = x.clamp(-1000, 1000);
            Ok(y.wrapping_mul(y)
                .wrapping_add(7)
                .wrapping_sub(y.wrapping_mul(3).clamp(0, 50)))
        }),
        scalar_case("separate_calls", separate_calls, |a: i64, b: i64| {
            let p = |x: i64| {
                x.wrapping_mul(x)
                    .wrapping_mul(3)
                    .wrapping_sub(x.wrapping_mul(2))
                    .wrapping_add(1)
            };
            Ok(p(a).wrapping_add(p(b).wrapping_mul(p(a.wrapping_sub(b)))))
        }),
        scalar_case("recursive_fib", recursive_fib, |n: u32| Ok(fib_ref(n % 20))),
        scalar_case("mutual_recursion", mutual_recursion, |n: u32| {
            Ok((n % 500).is_multiple_of(2))
        }),
        scalar_case("runtime_calls", runtime_calls, |a: i64, b: f64| {
            Ok(host_mix(a, b) + host_checksum(a as u32, 17) as f64)
        }),
        scalar_case("runtime_call_loop", runtime_call_loop, |n: u32| {
            Ok((0..(n & 255)).fold(0u32, |h, i| host_checksum(h, i)))
        }),
    ]
}
