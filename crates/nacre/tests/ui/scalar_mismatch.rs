// Mixing scalar types suggests the conversion; an unsupported parameter type is named.
use nacre::prelude::*;

#[jit]
fn mixed_add(a: Val<i64>, b: Val<f64>) -> Val<f64> {
    b + a
}

#[jit]
fn host_length(n: usize) -> Val<u64> {
    Val::new(n as u64)
}

fn main() {
    let engine = Engine::new(Options::default()).unwrap();
    let _ = engine.compile(host_length);
}
