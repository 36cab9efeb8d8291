//! Generic traced code with `nacre` as the only dependency: one bound (`Num`, `Float`)
//! and `engine.compile(f::<T>)`.

use nacre::gpu::{global_id_x, launch, Array, Block, Grid};
use nacre::prelude::*;
use nacre::{Float, Num};

/// `min(a + b, hi)` for any number type.
#[jit]
fn clamped_sum<T: Num>(a: Val<T>, b: Val<T>, hi: Val<T>) -> Val<T> {
    let s = a + b;
    if s > hi {
        hi
    } else {
        s
    }
}

/// `0 + 1 + .. + (n - 1)`, counting in `T`.
#[jit]
fn triangle<T: Num>(n: Val<T>) -> Val<T> {
    let mut acc = Val::new(T::ZERO);
    let mut i = Val::new(T::ZERO);
    while i < n {
        acc += i;
        i += T::ONE;
    }
    acc
}

/// The length of `(x, y)`, for either float type.
#[jit]
fn hypot<T: Float>(x: Val<T>, y: Val<T>) -> Val<T> {
    (x * x + y * y).sqrt()
}

#[test]
fn one_generic_function_compiles_for_every_number_type() {
    let engine = Engine::new(Options::default()).unwrap();
    assert_eq!(
        engine
            .compile(clamped_sum::<i32>)
            .unwrap()
            .call(2, 3, 4)
            .unwrap(),
        4
    );
    assert_eq!(
        engine
            .compile(clamped_sum::<u8>)
            .unwrap()
            .call(2, 1, 4)
            .unwrap(),
        3
    );
    assert_eq!(
        engine
            .compile(clamped_sum::<f64>)
            .unwrap()
            .call(0.5, 0.25, 4.0)
            .unwrap(),
        0.75
    );
    assert_eq!(
        engine.compile(triangle::<u64>).unwrap().call(10).unwrap(),
        45
    );
    assert_eq!(
        engine.compile(triangle::<f32>).unwrap().call(4.0).unwrap(),
        6.0
    );
    assert_eq!(
        engine
            .compile(hypot::<f32>)
            .unwrap()
            .call(3.0, 4.0)
            .unwrap(),
        5.0
    );
}

/// `y[i] = a * x[i] + y[i]` for any number type.
#[kernel]
fn axpy<T: Num>(a: Val<T>, x: Ptr<T>, y: Ptr<T>, n: Val<u32>) {
    let i = global_id_x();
    if i < n {
        y[i] = a * x[i] + y[i];
    }
}

#[jit]
fn run_axpy<T: Num>(a: Val<T>, x: Ptr<T>, y: Ptr<T>, n: Val<u32>) {
    launch(
        axpy::<T>,
        Grid::new((n + 255) / 256),
        Block::new(256u32),
        (a, x, y, n),
    );
}

#[test]
fn a_generic_kernel_runs_for_two_types() {
    let engine = Engine::new(Options::default()).unwrap();
    let f = engine.compile(run_axpy::<f32>).unwrap();
    let x = Array::copy(&[1.0f32, 2.0, 3.0]).unwrap();
    let mut y = Array::copy(&[10.0f32, 20.0, 30.0]).unwrap();
    f.call(2.0, &x, &mut y, 3).unwrap();
    assert_eq!(y.as_slice(), &[12.0, 24.0, 36.0]);
    let g = engine.compile(run_axpy::<i64>).unwrap();
    let x = vec![1i64, -2, 3];
    let mut y = vec![0i64; 3];
    g.call(-3, &x, &mut y, 3).unwrap();
    assert_eq!(y, [-3, 6, -9]);
    // Half precision: each operator computes in f32 and rounds to f16.
    let h = engine.compile(run_axpy::<nacre::f16>).unwrap();
    let half =
        |v: &[f32]| -> Vec<nacre::f16> { v.iter().map(|&x| nacre::f16::from_f32(x)).collect() };
    let x = Array::copy(&half(&[1.0, 2.0, 3.0])).unwrap();
    let mut y = Array::copy(&half(&[10.0, 20.0, 2048.0])).unwrap();
    h.call(nacre::f16::from_f32(0.5), &x, &mut y, 3).unwrap();
    // 2048 + 1.5 rounds to 2050 in f16 (its spacing there is 2), ties to even.
    assert_eq!(y.as_slice(), half(&[10.5, 21.0, 2050.0]).as_slice());
}

/// Ordinary float code, ported by adding `#[jit]` and changing the types: a logistic, a
/// polar conversion and a rounding, for any float type.
#[jit]
fn float_methods<T: Float>(x: Val<T>, y: Val<T>) -> Val<T> {
    let logistic = ((-x).exp() + T::ONE).recip();
    let r = x.hypot(y);
    let theta = y.atan2(x).to_degrees();
    let bound = Val::new(100i32).cast::<T>();
    let rounded = (x * y).round().clamp(-bound, bound);
    if r.is_finite() {
        logistic + r.ln_1p() + theta.sin().abs() + rounded
    } else {
        logistic
    }
}

#[test]
fn float_methods_work_on_both_float_types() {
    let engine = nacre::Engine::new(nacre::Options::default()).unwrap();
    let f = engine.compile(float_methods::<f32>).unwrap();
    let g = engine.compile(float_methods::<f64>).unwrap();
    let h = engine.compile(float_methods::<nacre::f16>).unwrap();
    let want = |x: f64, y: f64| {
        let r = x.hypot(y);
        let logistic = ((-x).exp() + 1.0).recip();
        let rounded = (x * y).round().clamp(-100.0, 100.0);
        if r.is_finite() {
            logistic + r.ln_1p() + y.atan2(x).to_degrees().sin().abs() + rounded
        } else {
            logistic
        }
    };
    for (x, y) in [(0.5, 2.0), (-3.0, 0.25), (1e3, -7.5), (f64::INFINITY, 1.0)] {
        let got = g.call(x, y).unwrap();
        assert!(
            (got - want(x, y)).abs() <= 1e-12 * (1.0 + want(x, y).abs()),
            "{x} {y}: {got}"
        );
        let got = f.call(x as f32, y as f32).unwrap();
        let w = want(x, y) as f32;
        assert!(
            (got - w).abs() <= 1e-4 * (1.0 + w.abs()),
            "{x} {y}: {got} vs {w}"
        );
        // f16 keeps 11 bits, and `sin` of an angle of about 175 (degrees, as radians)
        // amplifies the rounding of the angle.
        let half = |v: f64| nacre::f16::from_f64(v);
        let got = h.call(half(x), half(y)).unwrap().to_f64();
        assert!(
            (got - want(x, y)).abs() <= 0.1 * (1.0 + want(x, y).abs()),
            "{x} {y}: {got} in f16 vs {}",
            want(x, y)
        );
    }
}
