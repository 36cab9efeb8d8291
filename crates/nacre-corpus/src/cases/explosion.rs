//! The path-explosion shapes that make re-executing tracers slow: long runs of sequential,
//! nested and chained conditionals. Nacre traces each in one pass.

use crate::registry::{scalar_case, Case};
use nacre::prelude::*;

/// Number of conditionals in each shape.
pub const N: i32 = 100;

/// `n` sequential ifs on an integer argument (host loop, unrolled at trace time).
pub fn sequential_ifs_n(x: Val<i32>, n: i32) -> Val<i32> {
    sequential_body(x, n)
}

#[jit]
fn sequential_body(x: Val<i32>, n: i32) -> Val<i32> {
    let mut r = Val::new(0i32);
    for k in 0..n {
        if x > k {
            r += k;
        }
    }
    r
}

/// `depth` nested ifs on an integer argument (host recursion, unrolled at trace time).
#[jit]
pub fn nested_ifs_n(x: Val<i32>, depth: i32) -> Val<i32> {
    if depth == 0 {
        return x;
    }
    if x > depth {
        nested_ifs_n(x, depth - 1) + 1
    } else {
        x - depth
    }
}

/// A chain of `count` `else if`s on an integer argument (host recursion).
#[jit]
pub fn chained_ifs_n(x: Val<i32>, k: i32, count: i32) -> Val<i32> {
    if k == count {
        return x;
    }
    if x == k {
        Val::new(k * 7 + 1)
    } else {
        chained_ifs_n(x, k + 1, count)
    }
}

/// 100 sequential ifs.
pub fn sequential_ifs_100(x: Val<i32>) -> Val<i32> {
    sequential_ifs_n(x, N)
}

/// 100 nested ifs.
pub fn nested_ifs_100(x: Val<i32>) -> Val<i32> {
    nested_ifs_n(x, N)
}

/// 100 chained else-ifs.
pub fn chained_ifs_100(x: Val<i32>) -> Val<i32> {
    chained_ifs_n(x, 0, N)
}

fn nested_ref(x: i32, depth: i32) -> i32 {
    if depth == 0 {
        x
    } else if x > depth {
        nested_ref(x, depth - 1).wrapping_add(1)
    } else {
        x.wrapping_sub(depth)
    }
}

/// The cases of this module.
pub fn cases() -> Vec<Case> {
    vec![
        scalar_case("sequential_ifs_100", sequential_ifs_100, |x: i32| {
            Ok((0..N).filter(|k| x > *k).sum::<i32>())
        }),
        scalar_case("nested_ifs_100", nested_ifs_100, |x: i32| {
            Ok(nested_ref(x, N))
        }),
        scalar_case("chained_ifs_100", chained_ifs_100, |x: i32| {
            Ok(if (0..N).contains(&x) { x * 7 + 1 } else { x })
        }),
    ]
}
