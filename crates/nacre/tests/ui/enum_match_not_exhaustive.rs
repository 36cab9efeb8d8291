// A `match` on a traced enum is checked for exhaustiveness by Rust, on the enum type.
use nacre::prelude::*;

#[derive(Clone, Copy, TracedEnum)]
#[repr(u8)]
enum Light {
    Red,
    Amber,
    Green,
}

#[jit]
fn wait(l: EnumVal<Light>) -> Val<i32> {
    match l {
        Light::Red => Val::new(60),
        Light::Amber => Val::new(5),
    }
}

fn main() {}
