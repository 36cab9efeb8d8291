//! Half-precision floats (`f16`, `bf16`): arithmetic, comparisons, min/max, `mul_add`, math
//! functions, casts to and from other scalars, and an axpy over half arrays.
//!
//! The references are the `half` crate's own operators, which compute in `f32` and round
//! once, as `nacre_ir::semantics` defines the half types; math functions are the `f32`
//! reference rounded to the half type, within one half ulp (a C library's `f32` result can
//! sit on the other side of a half rounding boundary).

use crate::registry::{scalar_case, Case, CaseKind};
use nacre::ir::semantics::{float_max, float_min, math_f32};
use nacre::ir::MathFn;
use nacre::prelude::*;
use nacre::{bf16, f16, Engine};

/// `(a + b) * a - b / a + a % b` on `f16`.
#[jit]
pub fn half_arith_f16(a: Val<f16>, b: Val<f16>) -> Val<f16> {
    (a + b) * a - b / a + a % b
}

/// `(a + b) * a - b / a + a % b` on `bf16`.
#[jit]
pub fn half_arith_bf16(a: Val<bf16>, b: Val<bf16>) -> Val<bf16> {
    (a + b) * a - b / a + a % b
}

/// Negation, `abs`, `min` and `max` (NaN-ignoring, `-0.0` below `+0.0`).
#[jit]
pub fn half_minmax_f16(a: Val<f16>, b: Val<f16>) -> Val<f16> {
    (-a).min(b).max(b.abs() - a)
}

/// Every comparison, folded into one flag word.
#[jit]
pub fn half_compare_bf16(a: Val<bf16>, b: Val<bf16>) -> Val<u32> {
    let flags = [a < b, a <= b, a > b, a >= b, a == b, a != b];
    let mut word = Val::new(0u32);
    for (k, f) in flags.into_iter().enumerate() {
        word |= f.cast::<u32>() << k as u32;
    }
    word
}

/// `mul_add` (rounded once in `f32`, once to `f16`).
#[jit]
pub fn half_fma_f16(a: Val<f16>, b: Val<f16>, c: Val<f16>) -> Val<f16> {
    a.mul_add(b, c)
}

/// Casts from `f16` to `f64`, `i32`, `u8` and `bf16`, and from `i32` to `f16`.
#[jit]
pub fn half_casts_f16(x: Val<f16>, i: Val<i32>) -> Val<f64> {
    x.cast::<f64>()
        + x.cast::<i32>().cast::<f64>()
        + i.cast::<f16>().cast::<f64>()
        + x.cast::<bf16>().cast::<f64>()
        + x.cast::<u8>().cast::<f64>()
}

/// Rounding `f32` to both half types and back.
#[jit]
pub fn half_round_trip_f32(x: Val<f32>) -> Val<f32> {
    x.cast::<f16>().cast::<f32>() + x.cast::<bf16>().cast::<f32>()
}

/// Rounding `f64` to `f16` (through `f32`) and back.
#[jit]
pub fn half_round_trip_f64(x: Val<f64>) -> Val<f64> {
    x.cast::<f16>().cast::<f64>()
}

/// `y = a * x + y` over `f16` arrays; returns the sum of the new `y` in `f32`.
#[jit]
pub fn half_axpy(a: Val<f16>, x: Ptr<f16>, y: Ptr<f16>, n: Val<i64>) -> Val<f32> {
    let mut sum = Val::new(0.0f32);
    for i in 0..n {
        y[i] = a * x[i] + y[i];
        sum += y[i].cast::<f32>();
    }
    sum
}

fn r16(x: f32) -> f16 {
    f16::from_f32(x)
}

fn check_axpy(engine: &Engine, data: &[i32]) -> Result<(), String> {
    let f = engine.compile(half_axpy).map_err(|e| e.to_string())?;
    let x: Vec<f16> = data.iter().map(|&d| r16(d as f32 / 4096.0)).collect();
    let mut y: Vec<f16> = data
        .iter()
        .map(|&d| r16((d >> 7) as f32 / 1024.0))
        .collect();
    let a = r16(-1.375);
    let mut want = y.clone();
    let mut want_sum = 0.0f32;
    for (w, &xi) in want.iter_mut().zip(&x) {
        *w = a * xi + *w;
        want_sum += w.to_f32();
    }
    let n = x.len() as i64;
    let sum = f.call(a, &x, &mut y, n).map_err(|e| e.to_string())?;
    let same = |p: f32, q: f32| p == q || (p.is_nan() && q.is_nan());
    if !same(sum, want_sum) {
        return Err(format!("axpy sum: got {sum}, expected {want_sum}"));
    }
    match y
        .iter()
        .zip(&want)
        .position(|(g, w)| !same(g.to_f32(), w.to_f32()))
    {
        Some(i) => Err(format!("y[{i}]: got {}, expected {}", y[i], want[i])),
        None => Ok(()),
    }
}

/// One case per math function on `f16`: the `f32` reference rounded.
macro_rules! half_math_cases {
    ($($f:ident => $variant:ident),* $(,)?) => {
        fn math_cases() -> Vec<Case> {
            vec![$(
                scalar_case(
                    concat!("half_", stringify!($f), "_f16"),
                    |x: Val<f16>| x.$f(),
                    |x: f16| Ok(r16(math_f32(MathFn::$variant, x.to_f32()))),
                )
                .within_ulps(1),
            )*]
        }
    };
}
half_math_cases!(exp => Exp, ln => Ln, sin => Sin, tanh => Tanh, erf => Erf);

/// The cases of this module.
pub fn cases() -> Vec<Case> {
    let mut v = vec![
        scalar_case("half_arith_f16", half_arith_f16, |a: f16, b: f16| {
            Ok((a + b) * a - b / a + a % b)
        }),
        scalar_case("half_arith_bf16", half_arith_bf16, |a: bf16, b: bf16| {
            Ok((a + b) * a - b / a + a % b)
        }),
        scalar_case("half_minmax_f16", half_minmax_f16, |a: f16, b: f16| {
            let neg = r16(-a.to_f32());
            let low = r16(float_min(neg.to_f32(), b.to_f32()));
            let diff = r16(b.to_f32().abs()) - a;
            Ok(r16(float_max(low.to_f32(), diff.to_f32())))
        }),
        scalar_case(
            "half_compare_bf16",
            half_compare_bf16,
            |a: bf16, b: bf16| {
                let flags = [a < b, a <= b, a > b, a >= b, a == b, a != b];
                Ok(flags
                    .iter()
                    .enumerate()
                    .fold(0u32, |w, (k, &f)| w | (u32::from(f) << k)))
            },
        ),
        scalar_case("half_fma_f16", half_fma_f16, |a: f16, b: f16, c: f16| {
            Ok(r16(a.to_f32().mul_add(b.to_f32(), c.to_f32())))
        }),
        scalar_case("half_casts_f16", half_casts_f16, |x: f16, i: i32| {
            let w = x.to_f32();
            Ok(x.to_f64()
                + f64::from(w as i32)
                + r16(i as f32).to_f64()
                + bf16::from_f32(w).to_f64()
                + f64::from(w as u8))
        }),
        scalar_case("half_round_trip_f32", half_round_trip_f32, |x: f32| {
            Ok(r16(x).to_f32() + bf16::from_f32(x).to_f32())
        }),
        scalar_case("half_round_trip_f64", half_round_trip_f64, |x: f64| {
            Ok(r16(x as f32).to_f64())
        }),
        Case {
            name: "half_axpy",
            kind: CaseKind::Array { check: check_axpy },
        },
    ];
    v.extend(math_cases());
    v
}
