//! Traced enums (`#[derive(TracedEnum)]`, `EnumVal`): decoded from integers, matched on
//! variants with `|`, guards and bindings, compared, and carried through loops and branches.
//! Nautilus's enum fixtures (`val<Enum>` compared, selected and switched on) have their
//! counterparts here.

use crate::registry::{scalar_case, Case};
use nacre::prelude::*;

/// An arithmetic operator, as a query plan would name one.
#[derive(Clone, Copy, PartialEq, Debug, TracedEnum)]
#[repr(u8)]
pub enum Op {
    /// `a + b`
    Add = 1,
    /// `a - b`
    Sub = 2,
    /// `a * b`
    Mul = 4,
    /// `max(a, b)`
    Max = 8,
}

impl Op {
    /// The variant with discriminant `code`, or `Add`.
    pub fn decode(code: u8) -> Op {
        [Op::Sub, Op::Mul, Op::Max]
            .into_iter()
            .find(|o| *o as u8 == code)
            .unwrap_or(Op::Add)
    }
}

/// A traffic light, cycled by a loop.
#[derive(Clone, Copy, PartialEq, Debug, TracedEnum)]
#[repr(i32)]
pub enum Light {
    /// Stop.
    Red = -1,
    /// Ready.
    Amber = 0,
    /// Go.
    Green = 5,
}

/// Applies the operator coded in `code` (unknown codes add); a `Mul` that would overflow an
/// `i16` range is guarded to a subtraction.
#[jit]
pub fn enum_dispatch(code: Val<u8>, a: Val<i32>, b: Val<i32>) -> Val<i32> {
    let op = EnumVal::from_repr_or(code, Op::Add);
    match op {
        Op::Add => a + b,
        Op::Sub => a - b,
        Op::Mul if a > -30000 && a < 30000 && b > -30000 && b < 30000 => a * b,
        Op::Mul => a - b,
        other => {
            if other == Op::Max {
                a.max(b)
            } else {
                Val::new(0)
            }
        }
    }
}

/// Cycles a light `n & 63` times from the one coded in `start`, counting the greens; the
/// light is carried through the loop and a branch.
#[jit]
pub fn enum_state_machine(start: Val<i32>, n: Val<u32>) -> Val<i32> {
    let mut light = EnumVal::from_repr_or(start, Light::Red);
    let mut greens = Val::new(0i32);
    for _ in 0..(n & 63u32) {
        light = match light {
            Light::Red => EnumVal::new(Light::Green),
            Light::Green => EnumVal::new(Light::Amber),
            Light::Amber => EnumVal::new(Light::Red),
        };
        if light == Light::Green {
            greens += 1;
        }
    }
    greens * 100 + light.repr()
}

/// The cases of this module.
pub fn cases() -> Vec<Case> {
    vec![
        scalar_case(
            "enum_dispatch",
            enum_dispatch,
            |code: u8, a: i32, b: i32| {
                let small = |x: i32| x > -30000 && x < 30000;
                Ok(match Op::decode(code) {
                    Op::Add => a.wrapping_add(b),
                    Op::Sub => a.wrapping_sub(b),
                    Op::Mul if small(a) && small(b) => a.wrapping_mul(b),
                    Op::Mul => a.wrapping_sub(b),
                    Op::Max => a.max(b),
                })
            },
        ),
        scalar_case(
            "enum_state_machine",
            enum_state_machine,
            |start: i32, n: u32| {
                let mut light = [Light::Amber, Light::Green]
                    .into_iter()
                    .find(|l| *l as i32 == start)
                    .unwrap_or(Light::Red);
                let mut greens = 0;
                for _ in 0..(n & 63) {
                    light = match light {
                        Light::Red => Light::Green,
                        Light::Green => Light::Amber,
                        Light::Amber => Light::Red,
                    };
                    greens += i32::from(light == Light::Green);
                }
                Ok(greens * 100 + light as i32)
            },
        ),
    ]
}
