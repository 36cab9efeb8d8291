// A record needs `#[repr(C)]` (not packed), scalar fields and no padding.
use nacre::Record;

#[derive(Clone, Copy, Record)]
struct NoRepr {
    a: f32,
}

#[derive(Clone, Copy, Record)]
#[repr(C)]
struct Padded {
    a: u8,
    b: f64,
}

#[derive(Clone, Copy, Record)]
#[repr(C)]
struct Nested {
    a: [f32; 2],
}

#[derive(Clone, Copy, Record)]
#[repr(C, packed)]
struct Packed {
    a: u8,
    b: u128,
}

fn main() {}
