use nacre::{jit, Val};

#[jit]
fn plain_return(x: Val<i32>) -> i32 {
    let _ = x;
    1
}

#[jit]
fn tuple_return(x: Val<i32>) -> (Val<i32>, Val<i32>) {
    (x, x)
}

fn main() {}
