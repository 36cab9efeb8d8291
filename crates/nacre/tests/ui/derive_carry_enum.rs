// `#[derive(Carry)]` is for structs; a field that cannot be carried is named.
use nacre::prelude::*;
use nacre::Carry;

#[derive(Clone, Copy, Carry)]
enum Mode {
    Fast,
    Slow,
}

#[derive(Clone, Copy, Carry)]
struct Labelled {
    value: Val<f32>,
    label: &'static str,
}

fn main() {}
