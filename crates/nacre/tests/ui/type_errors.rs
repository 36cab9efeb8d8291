// Type errors in rewritten code point at the user's expressions.
use nacre::{jit, Val};

#[jit]
fn int_condition(x: Val<i32>) -> Val<i32> {
    if x {
        x
    } else {
        -x
    }
}

#[jit]
fn mixed_comparison(x: Val<i32>, y: Val<i64>) -> Val<bool> {
    x < y
}

fn main() {}
