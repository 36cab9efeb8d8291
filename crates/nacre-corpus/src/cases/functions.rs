//! Function values (`FnVal`): a traced choice among the entries of a static function table,
//! picked by a traced index, compared, selected, carried through loops and called — traced
//! functions and Rust `extern "C"` functions. Nautilus's function-pointer fixtures (compare,
//! select, call through, in loops) have their counterparts here.

use crate::registry::{scalar_case, Case};
use nacre::prelude::*;

/// A binary operator over traced `i32`s.
pub type BinOp = fn(Val<i32>, Val<i32>) -> Val<i32>;

fn add(a: Val<i32>, b: Val<i32>) -> Val<i32> {
    a + b
}
fn sub(a: Val<i32>, b: Val<i32>) -> Val<i32> {
    a - b
}
fn mul(a: Val<i32>, b: Val<i32>) -> Val<i32> {
    a * b
}
/// A callee with control flow of its own.
#[jit]
fn clamp_sum(a: Val<i32>, b: Val<i32>) -> Val<i32> {
    let s = a + b;
    if s > 1000 {
        Val::new(1000)
    } else if s < -1000 {
        Val::new(-1000)
    } else {
        s
    }
}
fn xor(a: Val<i32>, b: Val<i32>) -> Val<i32> {
    a ^ b
}

/// The operators, indexed by a traced code.
pub static OPS: [BinOp; 5] = [add, sub, mul, clamp_sum, xor];
/// Two of them again, in another table.
pub static PAIR: [BinOp; 2] = [mul, add];

/// The operator the reference applies for code `k` (past the end: the last).
pub fn reference_op(k: u32, a: i32, b: i32) -> i32 {
    match k.min(4) {
        0 => a.wrapping_add(b),
        1 => a.wrapping_sub(b),
        2 => a.wrapping_mul(b),
        3 => a.wrapping_add(b).clamp(-1000, 1000),
        _ => a ^ b,
    }
}

/// Calls operator `k` of [`OPS`] on `a` and `b`.
#[jit]
pub fn fn_table_call(k: Val<u32>, a: Val<i32>, b: Val<i32>) -> Val<i32> {
    FnVal::pick(&OPS, k).call((a, b))
}

/// Function values in a loop: the operator is carried and switched when the accumulator
/// passes a threshold; values of two tables are compared by the function they name.
#[jit]
pub fn fn_value_loop(k: Val<u32>, n: Val<u32>) -> Val<i32> {
    let mut op = FnVal::pick(&OPS, k & 3u32);
    let mut acc = Val::new(1i32);
    for i in 0..(n & 31u32) {
        acc = op.call((acc, i.cast::<i32>() + 2));
        if acc > 500 {
            op = FnVal::pick(&OPS, 1u32);
        }
    }
    let multiplies = op == FnVal::pick(&PAIR, 0u32);
    let adds = FnVal::pick(&PAIR, 1u32) == op;
    let chosen = FnVal::select(acc.lt(0), FnVal::pick(&OPS, 4u32), op);
    chosen.call((acc, Val::new(3))) + multiplies.cast::<i32>() * 10000 + adds.cast::<i32>() * 20000
}

/// A Rust function called from traced code through a table.
pub extern "C" fn host_scale(x: i64) -> i64 {
    x.wrapping_mul(3)
}
/// Another.
pub extern "C" fn host_square(x: i64) -> i64 {
    x.wrapping_mul(x)
}
/// Rust functions, indexed by a traced code.
pub static HOST_OPS: [extern "C" fn(i64) -> i64; 2] = [host_scale, host_square];

/// Calls Rust function `k` of [`HOST_OPS`] on `x`.
#[jit]
pub fn extern_fn_table(k: Val<u32>, x: Val<i64>) -> Val<i64> {
    let f = FnVal::pick(&HOST_OPS, k);
    f.call((x,)) + f.call((Val::new(1i64),))
}

/// The cases of this module.
pub fn cases() -> Vec<Case> {
    vec![
        scalar_case("fn_table_call", fn_table_call, |k: u32, a: i32, b: i32| {
            Ok(reference_op(k, a, b))
        }),
        scalar_case("fn_value_loop", fn_value_loop, |k: u32, n: u32| {
            let mut op = k & 3;
            let mut acc = 1i32;
            for i in 0..(n & 31) {
                acc = reference_op(op, acc, i as i32 + 2);
                if acc > 500 {
                    op = 1;
                }
            }
            let multiplies = i32::from(op == 2) * 10000;
            let adds = i32::from(op == 0) * 20000;
            let chosen = if acc < 0 { 4 } else { op };
            Ok(reference_op(chosen, acc, 3)
                .wrapping_add(multiplies)
                .wrapping_add(adds))
        }),
        scalar_case("extern_fn_table", extern_fn_table, |k: u32, x: i64| {
            let f = if k == 0 { host_scale } else { host_square };
            Ok(f(x).wrapping_add(f(1)))
        }),
    ]
}
