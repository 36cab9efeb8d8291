use nacre::{jit, Val};

#[jit]
fn plain_return(x: Val<i32>) -> i32 {
    let _ = x;
    1
}

#[jit]
fn vec_return(x: Val<i32>) -> Vec<Val<i32>> {
    vec![x, x]
}

fn main() {}
