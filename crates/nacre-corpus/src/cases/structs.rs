//! Structs of traced values (`#[derive(Carry)]`): built, copied, updated field by field,
//! carried through loops and branches, returned from `#[jit]` helpers and passed to functions
//! traced once by `call` (one IR parameter per field). Nautilus's struct fixtures (`val<Struct>`
//! with fields, copies and nesting) have their counterparts here.

use crate::registry::{scalar_case, Case};
use nacre::prelude::*;
use nacre::Carry;

/// A complex number.
#[derive(Clone, Copy, Carry)]
pub struct Complex {
    /// Real part.
    pub re: Val<f64>,
    /// Imaginary part.
    pub im: Val<f64>,
}

/// An iteration state: a nested struct, a counter and an array.
#[derive(Clone, Copy, Carry)]
pub struct Orbit {
    /// The current point.
    pub z: Complex,
    /// Steps taken while bounded.
    pub steps: Val<u32>,
    /// The largest |z|² seen and the last one.
    pub norms: [Val<f64>; 2],
}

/// `z² + c`, a helper returning a struct (inlined).
#[jit]
fn square_add(z: Complex, c: Complex) -> Complex {
    Complex {
        re: z.re * z.re - z.im * z.im + c.re,
        im: z.re * z.im * 2.0 + c.im,
    }
}

/// |z|², traced once as its own IR function taking the struct's two scalars.
#[jit]
fn norm_sq(z: Complex) -> Val<f64> {
    z.re * z.re + z.im * z.im
}

/// The Mandelbrot orbit of `c = (re, im)` for `n & 63` steps, escaping at |z|² > 4.
#[jit]
pub fn struct_orbit(re: Val<f64>, im: Val<f64>, n: Val<u32>) -> Val<f64> {
    let c = Complex { re, im };
    let mut o = Orbit {
        z: Complex {
            re: Val::new(0.0),
            im: Val::new(0.0),
        },
        steps: Val::new(0),
        norms: [Val::new(0.0), Val::new(0.0)],
    };
    for _ in 0..(n & 63u32) {
        let next = square_add(o.z, c);
        let m = call(norm_sq, (next,));
        if m > 4.0 {
            break;
        }
        o = Orbit {
            z: next,
            steps: o.steps + 1u32,
            norms: [o.norms[0].max(m), m],
        };
    }
    o.steps.cast::<f64>() * 1000.0 + o.norms[0] + o.norms[1] * 0.5 + o.z.re
}

fn reference_orbit(re: f64, im: f64, n: u32) -> f64 {
    let (mut zr, mut zi, mut steps, mut top, mut last) = (0.0f64, 0.0f64, 0u32, 0.0f64, 0.0f64);
    for _ in 0..(n & 63) {
        let (nr, ni) = (zr * zr - zi * zi + re, zr * zi * 2.0 + im);
        let m = nr * nr + ni * ni;
        if m > 4.0 {
            break;
        }
        (zr, zi, steps, top, last) = (nr, ni, steps + 1, top.max(m), m);
    }
    f64::from(steps) * 1000.0 + top + last * 0.5 + zr
}

/// The cases of this module.
pub fn cases() -> Vec<Case> {
    vec![scalar_case(
        "struct_orbit",
        struct_orbit,
        |re: f64, im: f64, n: u32| Ok(reference_orbit(re, im, n)),
    )]
}
