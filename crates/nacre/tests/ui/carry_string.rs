// A `String` assigned inside a traced `if` would have to merge at the join: it cannot be
// carried.
use nacre::{jit, Val};

#[jit]
fn describe(x: Val<i32>) -> Val<i32> {
    let mut name = String::from("none");
    if x > 0 {
        name = String::from("positive");
    }
    x + name.len() as i32
}

fn main() {
    let _ = describe;
}
