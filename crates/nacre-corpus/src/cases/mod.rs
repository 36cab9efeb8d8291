//! The corpus functions, grouped by what they exercise.

pub mod algorithms;
pub mod arith;
pub mod arrays;
pub mod atomics;
pub mod bits;
pub mod calls;
pub mod casts;
pub mod compare;
pub mod control;
pub mod enums;
pub mod explosion;
pub mod functions;
pub mod half;
pub mod math;
pub mod structs;
pub mod wide;

use crate::registry::Case;

/// Every case, in a fixed order.
pub fn all() -> Vec<Case> {
    let mut v = Vec::new();
    v.extend(arith::cases());
    v.extend(bits::cases());
    v.extend(math::cases());
    v.extend(half::cases());
    v.extend(wide::cases());
    v.extend(atomics::cases());
    v.extend(casts::cases());
    v.extend(compare::cases());
    v.extend(control::cases());
    v.extend(enums::cases());
    v.extend(calls::cases());
    v.extend(functions::cases());
    v.extend(structs::cases());
    v.extend(algorithms::cases());
    v.extend(explosion::cases());
    v.extend(arrays::cases());
    v
}
