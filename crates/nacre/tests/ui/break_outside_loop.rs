use nacre::{jit, Val};

#[jit]
fn stray_break(x: Val<i32>) -> Val<i32> {
    if x > 0 {
        break;
    }
    x
}

#[jit]
fn stray_continue(x: Val<i32>) {
    let _ = x;
    continue;
}

#[jit]
fn unknown_label(x: Val<i32>) {
    for _ in 0..3 {
        if x > 0 {
            break 'outer;
        }
    }
}

fn main() {}
