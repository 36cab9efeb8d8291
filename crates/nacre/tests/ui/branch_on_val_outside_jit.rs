// Without `#[jit]`, Rust's `if` needs a `bool`: a traced condition cannot drive it.
use nacre::Val;

fn pick(v: Val<i32>) -> Val<i32> {
    if v.lt(3) {
        v
    } else {
        v + 1
    }
}

fn main() {
    let _ = pick;
}
