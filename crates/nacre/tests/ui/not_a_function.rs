#[nacre::jit]
struct Kernel {
    size: usize,
}

fn main() {}
