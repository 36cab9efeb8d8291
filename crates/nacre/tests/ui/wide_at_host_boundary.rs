use nacre::{jit, Engine, Val};

// 128-bit integers are values inside compiled code, not arguments or results of it.
#[jit]
fn wide_param(x: Val<i128>) -> Val<i64> {
    x.cast::<i64>()
}

#[jit]
fn wide_result(x: Val<i64>) -> Val<u128> {
    x.cast::<u128>()
}

fn main() {
    let engine = Engine::new(Default::default()).unwrap();
    let _ = engine.compile(wide_param);
    let _ = engine.compile(wide_result);
}
