// Outside `#[jit]`, Rust's comparison operators on `Val`s say to use `#[jit]` or the methods.
use nacre::Val;

fn smaller(a: Val<i32>, b: Val<i32>) -> Val<i32> {
    if a < b {
        a
    } else {
        b
    }
}

fn is_three(a: Val<i32>) -> bool {
    a == 3
}

fn main() {
    let _ = (smaller, is_three);
}
