// Constructs `#[jit]` rejects, each with an error at the construct.
use nacre::{jit, Val};

#[jit]
fn break_value(x: Val<i32>) -> Val<i32> {
    let mut i = x;
    let r = loop {
        i += 1;
        if i > 10 {
            break i;
        }
    };
    r
}

#[jit]
fn question_mark(x: Val<i32>, s: &str) -> Val<i32> {
    let n: i32 = s.parse().ok()?;
    x + n
}

#[jit]
fn labelled_block(x: Val<i32>) -> Val<i32> {
    let y = 'b: {
        if x > 0 {
            break 'b x;
        }
        x + 1
    };
    y
}

#[jit]
fn control_flow_in_rhs(x: Val<i32>) -> Val<bool> {
    x > 0 && if x > 5 { x < 10 } else { x < 3 }
}

#[jit]
fn assignment_in_while_condition(x: Val<i32>) -> Val<i32> {
    let mut i = x;
    while {
        i += 1;
        i < 10
    } {}
    i
}

#[jit]
fn shadowed_loop_state(x: Val<i32>) -> Val<i32> {
    let mut acc = x;
    loop {
        acc += 1;
        let acc = 5;
        if x > acc {
            break;
        }
    }
    acc
}

#[jit(fast)]
fn with_arguments(x: Val<i32>) -> Val<i32> {
    x
}

#[jit]
const fn constant(x: i32) -> i32 {
    x
}

fn main() {}
