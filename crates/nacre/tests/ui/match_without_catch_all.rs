// A `match` on literals needs a last `_` arm: a traced value has no exhaustiveness check.
use nacre::prelude::*;

#[jit]
fn pick(x: Val<i32>) -> Val<i32> {
    match x {
        0 => Val::new(1),
        1 => Val::new(2),
    }
}

fn main() {}
