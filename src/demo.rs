//! The demo: a few traced functions compiled on one backend, run, and checked against plain
//! Rust.

use anyhow::{bail, Context, Result};
use nacre::prelude::*;
use nacre_corpus::cases::{algorithms, arrays, calls, control, explosion};

fn check<T: PartialEq + std::fmt::Debug>(name: &str, got: T, want: T) -> Result<()> {
    let verdict = if got == want { "ok" } else { "MISMATCH" };
    println!("  {name:<34} = {got:?} (expected {want:?}) {verdict}");
    if got != want {
        bail!("{name}: got {got:?}, expected {want:?}");
    }
    Ok(())
}

/// Runs the demo on the named backend.
pub fn run(backend: &str) -> Result<()> {
    let kind: BackendKind = backend.parse()?;
    let engine = Engine::new(Options::with_backend(kind)).context("creating the engine")?;
    println!("Nacre demo on the {} backend", kind.name());

    let f = engine
        .compile(control::conditional_sum)
        .context("compiling conditional_sum")?;
    let t = f.timings();
    println!(
        "  conditional_sum compiled in {:?} (trace {:?}, passes {:?}, backend {:?})",
        t.total, t.trace, t.passes, t.backend
    );
    check(
        "conditional_sum(100)",
        f.call(100)?,
        (0..100).filter(|i| i % 3 == 0).sum::<i32>(),
    )?;

    let f = engine
        .compile(algorithms::fibonacci)
        .context("compiling fibonacci")?;
    check("fibonacci(90)", f.call(90)?, 2_880_067_194_370_816_120u64)?;

    let f = engine.compile(algorithms::gcd).context("compiling gcd")?;
    check("gcd(1071, 462)", f.call(1071, 462)?, 21u64)?;

    let f = engine
        .compile(calls::recursive_fib)
        .context("compiling recursive_fib")?;
    check("recursive_fib(19) (IR recursion)", f.call(19)?, 4181u32)?;

    let f = engine
        .compile(calls::runtime_calls)
        .context("compiling runtime_calls")?;
    let want = calls::host_mix(6, 0.25) + calls::host_checksum(6, 17) as f64;
    check(
        "runtime_calls(6, 0.25) (calls Rust)",
        f.call(6, 0.25)?,
        want,
    )?;

    let f = engine
        .compile(explosion::nested_ifs_100)
        .context("compiling nested_ifs_100")?;
    check("nested_ifs_100(150)", f.call(150)?, 250)?;

    let data: Vec<i32> = (1..=1000).collect();
    let f = engine
        .compile(arrays::array_sum)
        .context("compiling array_sum")?;
    check(
        "array_sum(1..=1000)",
        f.call(&data, data.len() as i64)?,
        500_500,
    )?;

    let f = engine
        .compile(control::short_circuit)
        .context("compiling short_circuit")?;
    check("short_circuit(7, 0) (no division)", f.call(7, 0)?, true)?;

    let f = engine.compile(arith_div).context("compiling division")?;
    match f.call(1, 0) {
        Err(nacre::Error::Trap(nacre::Trap::DivisionByZero)) => {
            println!("  {:<34} = Err(division by zero) ok", "div(1, 0)")
        }
        other => bail!("div(1, 0): expected a division-by-zero error, got {other:?}"),
    }
    kernels(kind)?;
    println!("all demo results ok");
    Ok(())
}

/// vecAdd and blockSum launched through `Array`s on the best available device: a CUDA GPU
/// when one works here, else the CPU (full grid semantics, blocks over all cores).
fn kernels(kind: BackendKind) -> Result<()> {
    use nacre::gpu::{Array, DeviceKind};
    use nacre_corpus::kernels::{run_block_sum, run_vec_add_bounded};
    let device = DeviceKind::best_available();
    let mut options = Options::with_backend(kind);
    options.runtime = nacre::RuntimeOptions::for_device(device);
    let engine = Engine::new(options).context("creating the engine")?;
    let dev = engine.device();
    match device {
        DeviceKind::Cpu => println!("Kernels on the CPU device (grid mode):"),
        _ => println!("Kernels on the {} device:", dev.name()),
    }
    let n = 1_000_000usize;
    let a = Array::copy_on(dev.clone(), &(0..n).map(|i| i as f32).collect::<Vec<_>>())?;
    let b = Array::copy_on(dev.clone(), &vec![0.5f32; n])?;
    let mut c = Array::<f32>::alloc_on(dev.clone(), n)?;
    let f = engine
        .compile(run_vec_add_bounded)
        .context("compiling vec_add")?;
    f.call(&a, &b, &mut c, n as u32)?;
    check("vec_add: c[999_999]", c.as_slice()[n - 1], 999_999.5f32)?;
    let ok = c
        .as_slice()
        .iter()
        .enumerate()
        .all(|(i, x)| *x == i as f32 + 0.5);
    check("vec_add: all 1M elements", ok, true)?;

    let input = Array::copy_on(dev.clone(), &vec![1.0f32; n])?;
    let blocks = n.div_ceil(256);
    let mut sums = Array::<f32>::alloc_on(dev, blocks)?;
    let f = engine
        .compile(run_block_sum)
        .context("compiling block_sum")?;
    f.call(&input, &mut sums, n as u32)?;
    let total: f32 = sums.as_slice().iter().sum();
    check("block_sum (shared memory, barriers)", total, n as f32)?;
    Ok(())
}

#[jit]
fn arith_div(a: Val<i32>, b: Val<i32>) -> Val<i32> {
    a / b
}
