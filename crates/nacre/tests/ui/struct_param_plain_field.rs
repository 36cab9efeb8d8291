// A struct passed to a traced function needs traced fields: a plain `u8` field is named.
use nacre::prelude::*;
use nacre::Carry;

#[derive(Clone, Copy, Carry)]
struct Tagged {
    value: Val<i32>,
    tag: u8,
}

#[jit]
fn inner(t: Tagged) -> Val<i32> {
    t.value
}

#[jit]
fn outer(x: Val<i32>) -> Val<i32> {
    call(inner, (Tagged { value: x, tag: 1 },))
}

fn main() {}
