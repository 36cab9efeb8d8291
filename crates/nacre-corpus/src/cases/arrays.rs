//! Loops over memory through pointers: sum, in-place update, prefix sum, search, and the bulk
//! copies and fills of `nacre::mem`.

use crate::registry::{Case, CaseKind};
use nacre::prelude::*;
use nacre::Engine;

/// Sum of an `i32` array (wrapping).
#[jit]
pub fn array_sum(data: Ptr<i32>, n: Val<i64>) -> Val<i32> {
    let mut sum = Val::new(0i32);
    for i in 0..n {
        sum += data[i];
    }
    sum
}

/// In-place update: `x = 3x + 1` on every element.
#[jit]
pub fn array_scale(data: Ptr<i32>, n: Val<i64>) {
    for i in 0..n {
        data[i] = data[i] * 3 + 1;
    }
}

/// In-place inclusive prefix sum.
#[jit]
pub fn prefix_sum(data: Ptr<i32>, n: Val<i64>) {
    let mut acc = Val::new(0i32);
    for i in 0..n {
        acc += data[i];
        data[i] = acc;
    }
}

/// Index of the first element equal to `needle`, or -1 (early return from a loop).
#[jit]
pub fn find_first(data: Ptr<i32>, n: Val<i64>, needle: Val<i32>) -> Val<i64> {
    for i in 0..n {
        if data[i] == needle {
            return i;
        }
    }
    Val::new(-1i64)
}

/// Pointer walk: sum through an advancing pointer until it reaches the end pointer.
#[jit]
pub fn pointer_walk(data: Ptr<i32>, n: Val<i64>) -> Val<i64> {
    let end = data.offset(n);
    let mut p = data;
    let mut sum = Val::new(0i64);
    while p.lt(end) {
        sum += p.read().cast::<i64>();
        p = p.offset(1i64);
    }
    sum
}

/// Bulk copy and fill (`memcpy`, `memset`): the first half of `data` over its second half,
/// then 7 into the first quarter.
#[jit]
pub fn bulk_copy_fill(data: Ptr<i32>, n: Val<i64>) {
    let half = (n / 2i64).cast::<u64>();
    nacre::mem::copy(data.offset(half), data, half);
    nacre::mem::fill(data, Val::new(7i32), half / 2u64);
}

/// Overlapping bulk copies (`memmove`): `data` shifted right by one element, then left by two.
#[jit]
pub fn bulk_move(data: Ptr<i32>, n: Val<i64>) {
    let m = n.cast::<u64>();
    if m > 2u64 {
        nacre::mem::copy_overlapping(data.offset(1u64), data, m - 1u64);
        nacre::mem::copy_overlapping(data, data.offset(2u64), m - 2u64);
    }
}

fn check_copy_fill(engine: &Engine, data: &[i32]) -> Result<(), String> {
    let f = engine.compile(bulk_copy_fill).map_err(|e| e.to_string())?;
    let mut v = data.to_vec();
    let n = v.len() as i64;
    f.call(&mut v, n).map_err(|e| e.to_string())?;
    let mut want = data.to_vec();
    let half = want.len() / 2;
    want.copy_within(..half, half);
    want[..half / 2].fill(7);
    expect_eq("copied and filled", v, want)
}

fn check_move(engine: &Engine, data: &[i32]) -> Result<(), String> {
    let f = engine.compile(bulk_move).map_err(|e| e.to_string())?;
    let mut v = data.to_vec();
    let n = v.len() as i64;
    f.call(&mut v, n).map_err(|e| e.to_string())?;
    let mut want = data.to_vec();
    let m = want.len();
    if m > 2 {
        want.copy_within(..m - 1, 1);
        want.copy_within(2.., 0);
    }
    expect_eq("moved", v, want)
}

fn expect_eq<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, expected {want:?}"))
    }
}

fn check_sum(engine: &Engine, data: &[i32]) -> Result<(), String> {
    let f = engine.compile(array_sum).map_err(|e| e.to_string())?;
    let v = data.to_vec();
    let got = f.call(&v, v.len() as i64).map_err(|e| e.to_string())?;
    expect_eq(
        "sum",
        got,
        data.iter().fold(0i32, |a, b| a.wrapping_add(*b)),
    )
}

fn check_scale(engine: &Engine, data: &[i32]) -> Result<(), String> {
    let f = engine.compile(array_scale).map_err(|e| e.to_string())?;
    let mut v = data.to_vec();
    let n = v.len() as i64;
    f.call(&mut v, n).map_err(|e| e.to_string())?;
    let want: Vec<i32> = data
        .iter()
        .map(|x| x.wrapping_mul(3).wrapping_add(1))
        .collect();
    expect_eq("scaled array", v, want)
}

fn check_prefix(engine: &Engine, data: &[i32]) -> Result<(), String> {
    let f = engine.compile(prefix_sum).map_err(|e| e.to_string())?;
    let mut v = data.to_vec();
    let n = v.len() as i64;
    f.call(&mut v, n).map_err(|e| e.to_string())?;
    let want: Vec<i32> = data
        .iter()
        .scan(0i32, |acc, x| {
            *acc = acc.wrapping_add(*x);
            Some(*acc)
        })
        .collect();
    expect_eq("prefix sums", v, want)
}

fn check_find(engine: &Engine, data: &[i32]) -> Result<(), String> {
    let f = engine.compile(find_first).map_err(|e| e.to_string())?;
    let v = data.to_vec();
    let needles = [data.get(data.len() / 2).copied().unwrap_or(0), i32::MIN + 3];
    for needle in needles {
        let got = f
            .call(&v, v.len() as i64, needle)
            .map_err(|e| e.to_string())?;
        let want = data
            .iter()
            .position(|x| *x == needle)
            .map_or(-1, |i| i as i64);
        expect_eq("index", got, want)?;
    }
    Ok(())
}

fn check_walk(engine: &Engine, data: &[i32]) -> Result<(), String> {
    let f = engine.compile(pointer_walk).map_err(|e| e.to_string())?;
    let v = data.to_vec();
    let got = f.call(&v, v.len() as i64).map_err(|e| e.to_string())?;
    expect_eq("walk sum", got, data.iter().map(|x| *x as i64).sum::<i64>())
}

/// The cases of this module.
pub fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "array_sum",
            kind: CaseKind::Array { check: check_sum },
        },
        Case {
            name: "array_scale",
            kind: CaseKind::Array { check: check_scale },
        },
        Case {
            name: "prefix_sum",
            kind: CaseKind::Array {
                check: check_prefix,
            },
        },
        Case {
            name: "find_first",
            kind: CaseKind::Array { check: check_find },
        },
        Case {
            name: "pointer_walk",
            kind: CaseKind::Array { check: check_walk },
        },
        Case {
            name: "bulk_copy_fill",
            kind: CaseKind::Array {
                check: check_copy_fill,
            },
        },
        Case {
            name: "bulk_move",
            kind: CaseKind::Array { check: check_move },
        },
    ]
}
