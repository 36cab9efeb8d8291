// A traced enum needs an integer `repr`, and its variants cannot carry fields.
use nacre::TracedEnum;

#[derive(Clone, Copy, TracedEnum)]
enum NoRepr {
    A,
}

#[derive(Clone, Copy, TracedEnum)]
#[repr(u8)]
enum WithFields {
    A(u8),
}

fn main() {}
