//! Function values (`FnVal`) with `nacre` as the only dependency: picked at run time from a
//! static table, called, carried through a branch; mixing tables where one is needed is a
//! typed error.

use nacre::prelude::*;

fn double(x: Val<f64>) -> Val<f64> {
    x * 2.0
}
fn square(x: Val<f64>) -> Val<f64> {
    x * x
}
fn negate(x: Val<f64>) -> Val<f64> {
    -x
}

static SHAPES: [fn(Val<f64>) -> Val<f64>; 3] = [double, square, negate];
static OTHER: [fn(Val<f64>) -> Val<f64>; 1] = [square];

/// Applies shape `k` twice, switching to `negate` when the first result is large.
#[jit]
fn apply(k: Val<u32>, x: Val<f64>) -> Val<f64> {
    let mut f = FnVal::pick(&SHAPES, k);
    let y = f.call((x,));
    if y > 100.0 {
        f = FnVal::pick(&SHAPES, 2u32);
    }
    f.call((y,))
}

#[test]
fn a_function_value_is_picked_carried_and_called() {
    let engine = Engine::new(Options::default()).unwrap();
    let f = engine.compile(apply).unwrap();
    assert_eq!(f.call(0, 3.0).unwrap(), 12.0);
    assert_eq!(f.call(1, 3.0).unwrap(), 81.0);
    assert_eq!(f.call(1, 11.0).unwrap(), -121.0);
    // Past the end: the last entry.
    assert_eq!(f.call(9, 3.0).unwrap(), 3.0);
}

#[test]
fn selecting_between_tables_is_a_typed_error() {
    #[jit]
    fn mixed(c: Val<bool>, x: Val<f64>) -> Val<f64> {
        let f = FnVal::select(c, FnVal::pick(&SHAPES, 0u32), FnVal::pick(&OTHER, 0u32));
        f.call((x,))
    }
    let engine = Engine::new(Options::default()).unwrap();
    let Err(e) = engine.compile(mixed) else {
        panic!("mixing tables compiled");
    };
    let text = e.to_string();
    assert!(text.contains("different tables"), "{text}");
}
