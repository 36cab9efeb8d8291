//! The CPU benchmark suite's workloads, shared by `nacre bench cpu` (the root package's
//! `src/bench/`) and the criterion bench `benches/cpu.rs`, so that both measure the same
//! functions under the same names.
//!
//! The suite follows the shapes of Nautilus's tracing benchmark:
//!
//! - the pipeline stages, on [`SHAPES`] (and the trace-time scaling shapes
//!   [`SCALING_SHAPES`]): `trace_F` (running the traced function to its capture), `ir_F`
//!   (capture to optimised, verified IR), `comp_B_F` (optimised IR to a callable on backend
//!   `B`) and `e2e_B_F` (nothing to a callable: trace, optimise and compile);
//! - execution, on [`EXEC_FUNCTIONS`]: `exec_B_F` (a call of the compiled function) and
//!   `exec_rust_F` (the same logic written in plain Rust, see [`rust`]);
//! - tiered compilation: `tiered_first_call_F` (from nothing to the first result).
//!
//! A benchmark driver implements [`Bencher`]; the `*_suite` functions hand it one routine per
//! benchmark name. Each suite first runs its routines once and checks the results, so a
//! failure is reported as an error rather than measured.

use crate::cases::{algorithms, arrays, control, explosion};
use nacre::ir::{PassOptions, VerifiedModule};
use nacre::prelude::*;
use nacre::{Error, Tiering};
use nacre::{Linkage, Traced};
use std::fmt;
use std::hint::black_box;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// Traced functions
// ---------------------------------------------------------------------------------------------

/// `add`: `a + b` (wrapping).
#[jit]
pub fn add(a: Val<i32>, b: Val<i32>) -> Val<i32> {
    a + b
}

/// `addOne`: `x + 1` (wrapping).
#[jit]
pub fn add_one(x: Val<i32>) -> Val<i32> {
    x + 1
}

/// `ifThenElse`: one if/else on the argument.
#[jit]
pub fn if_then_else(value: Val<i32>) -> Val<i32> {
    let mut iw = Val::new(1i32);
    if value == 42 {
        iw += 1;
    } else {
        iw += 42;
    }
    iw + 42
}

/// `deeplyNestedIfElse`: if/else nested four levels deep on the argument.
#[jit]
pub fn deeply_nested_if_else(value: Val<i32>) -> Val<i32> {
    let mut iw = Val::new(5i32);
    if value < 20 {
        iw += 10;
    } else if value > 40 {
        if value > 80 {
            iw += 20;
        } else {
            iw -= 20;
        }
    } else if value == 30 {
        iw *= 3;
    } else {
        iw *= 7;
    }
    iw + 42
}

/// `loop`: a counted loop summing (Nautilus's `sumLoop`).
#[jit]
pub fn sum_loop(upper: Val<i32>) -> Val<i32> {
    let mut sum = Val::new(1i32);
    for _ in 0..upper {
        sum += 10;
    }
    sum
}

/// `ifInsideLoop`: a counted loop with an if in its body.
#[jit]
pub fn if_inside_loop(upper: Val<i32>) -> Val<i32> {
    let mut sum = Val::new(0i32);
    for i in 0..upper {
        if i % 2 == 0 {
            sum += 1;
        }
    }
    sum
}

/// The helper of [`loop_direct_call`], traced once as its own IR function.
#[jit]
pub fn loop_helper(acc: Val<i32>, x: Val<i32>) -> Val<i32> {
    acc + x
}

/// `loopDirectCall`: a counted loop calling [`loop_helper`] as a separate IR function.
#[jit]
pub fn loop_direct_call(count: Val<i32>, x: Val<i32>) -> Val<i32> {
    let mut sum = Val::new(0i32);
    for _ in 0..count {
        sum = call(loop_helper, (sum, x));
    }
    sum
}

/// `fibonacci`: iterative Fibonacci (wrapping `u64`), `n` unbounded.
#[jit]
pub fn fibonacci(n: Val<u32>) -> Val<u64> {
    let mut a = Val::new(0u64);
    let mut b = Val::new(1u64);
    for _ in 0..n {
        let t = a + b;
        a = b;
        b = t;
    }
    a
}

/// `nestedIf10`: 10 nested ifs on the argument.
pub fn nested_if_10(x: Val<i32>) -> Val<i32> {
    explosion::nested_ifs_n(x, 10)
}

/// `nestedIf100`: 100 nested ifs on the argument.
pub fn nested_if_100(x: Val<i32>) -> Val<i32> {
    explosion::nested_ifs_n(x, 100)
}

/// `nestedIf1000`: 1000 nested ifs on the argument (trace-time scaling).
pub fn nested_if_1000(x: Val<i32>) -> Val<i32> {
    explosion::nested_ifs_n(x, 1000)
}

/// `chainedIf10`: a chain of 10 `else if`s on the argument.
pub fn chained_if_10(x: Val<i32>) -> Val<i32> {
    explosion::chained_ifs_n(x, 0, 10)
}

/// `chainedIf100`: a chain of 100 `else if`s on the argument.
pub fn chained_if_100(x: Val<i32>) -> Val<i32> {
    explosion::chained_ifs_n(x, 0, 100)
}

/// `chainedIf1000`: a chain of 1000 `else if`s on the argument (trace-time scaling).
pub fn chained_if_1000(x: Val<i32>) -> Val<i32> {
    explosion::chained_ifs_n(x, 0, 1000)
}

// ---------------------------------------------------------------------------------------------
// Shapes and inputs
// ---------------------------------------------------------------------------------------------

/// A traced function of the pipeline-stage benchmarks, with its benchmark name.
#[derive(Copy, Clone)]
pub struct Shape {
    /// The name in benchmark names (`trace_<name>`, Nautilus's spelling).
    pub name: &'static str,
    /// Runs the function to its capture (`nacre::trace_module`).
    pub trace: fn() -> Result<Traced, Error>,
}

impl fmt::Debug for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shape").field("name", &self.name).finish()
    }
}

/// The shapes of Nautilus's tracing benchmark. `pointerLoop` is the corpus's
/// [`arrays::array_sum`], `staticLoop` its [`control::static_unroll`] and `gcd` its
/// [`algorithms::gcd`].
pub const SHAPES: &[Shape] = &[
    Shape {
        name: "add",
        trace: || nacre::trace_module(&add),
    },
    Shape {
        name: "ifThenElse",
        trace: || nacre::trace_module(&if_then_else),
    },
    Shape {
        name: "deeplyNestedIfElse",
        trace: || nacre::trace_module(&deeply_nested_if_else),
    },
    Shape {
        name: "loop",
        trace: || nacre::trace_module(&sum_loop),
    },
    Shape {
        name: "ifInsideLoop",
        trace: || nacre::trace_module(&if_inside_loop),
    },
    Shape {
        name: "loopDirectCall",
        trace: || nacre::trace_module(&loop_direct_call),
    },
    Shape {
        name: "pointerLoop",
        trace: || nacre::trace_module(&arrays::array_sum),
    },
    Shape {
        name: "staticLoop",
        trace: || nacre::trace_module(&control::static_unroll),
    },
    Shape {
        name: "fibonacci",
        trace: || nacre::trace_module(&fibonacci),
    },
    Shape {
        name: "gcd",
        trace: || nacre::trace_module(&algorithms::gcd),
    },
    Shape {
        name: "nestedIf10",
        trace: || nacre::trace_module(&nested_if_10),
    },
    Shape {
        name: "nestedIf100",
        trace: || nacre::trace_module(&nested_if_100),
    },
    Shape {
        name: "chainedIf10",
        trace: || nacre::trace_module(&chained_if_10),
    },
    Shape {
        name: "chainedIf100",
        trace: || nacre::trace_module(&chained_if_100),
    },
];

/// Larger instances of the path-explosion shapes, traced only (`trace_F`), to show that trace
/// time grows linearly with the number of conditionals.
pub const SCALING_SHAPES: &[Shape] = &[
    Shape {
        name: "nestedIf1000",
        trace: || nacre::trace_module(&nested_if_1000),
    },
    Shape {
        name: "chainedIf1000",
        trace: || nacre::trace_module(&chained_if_1000),
    },
];

/// The functions of the execution benchmarks (`exec_B_F`, `exec_rust_F`).
pub const EXEC_FUNCTIONS: [&str; 5] = ["add", "addOne", "fibonacci", "sum", "gcd"];

/// `exec_*_add` computes `add(42, 42)`.
pub const ADD_ARGS: (i32, i32) = (42, 42);
/// `exec_*_addOne` computes `addOne(42)`.
pub const ADD_ONE_ARG: i32 = 42;
/// `exec_*_fibonacci` computes the 15000th Fibonacci number (wrapping `u64`).
pub const FIB_N: u32 = 15_000;
/// `exec_*_sum` sums an `i32` array of 10 MiB.
pub const SUM_LEN: usize = 10 * 1024 * 1024 / 4;
/// `exec_*_gcd` computes the gcd of the consecutive Fibonacci numbers F(93) and F(92), the
/// largest that fit a `u64`: Euclid's worst case, 91 remainder steps.
pub const GCD_ARGS: (u64, u64) = (12_200_160_415_121_876_738, 7_540_113_804_746_346_429);
/// `tiered_first_call_sum_1k` sums this many elements: a first call dominated by compilation,
/// like Nautilus's `tiered_compile_sumLoop`.
pub const TIERED_SUM_SMALL_LEN: usize = 1024;

/// The array that `exec_*_sum` sums: [`SUM_LEN`] values in -500..500.
pub fn sum_data() -> Vec<i32> {
    (0..SUM_LEN).map(|i| (i % 1000) as i32 - 500).collect()
}

/// The hand-written Rust versions of the execution benchmarks (`exec_rust_F`), plain loops
/// compiled in release. The suite calls them through [`black_box`]ed function pointers with
/// [`black_box`]ed inputs, like a compiled function's native entry, and keeps their results,
/// so nothing is folded away.
pub mod rust {
    /// `a + b`.
    pub fn add(a: i32, b: i32) -> i32 {
        a.wrapping_add(b)
    }

    /// `x + 1`.
    pub fn add_one(x: i32) -> i32 {
        x.wrapping_add(1)
    }

    /// Iterative Fibonacci, wrapping.
    pub fn fibonacci(n: u32) -> u64 {
        let mut a = 0u64;
        let mut b = 1u64;
        for _ in 0..n {
            let t = a.wrapping_add(b);
            a = b;
            b = t;
        }
        a
    }

    /// Wrapping sum of the elements.
    pub fn sum(data: &[i32]) -> i32 {
        let mut sum = 0i32;
        for &x in data {
            sum = sum.wrapping_add(x);
        }
        sum
    }

    /// Euclid's algorithm.
    pub fn gcd(a: u64, b: u64) -> u64 {
        let mut x = a;
        let mut y = b;
        while y != 0 {
            let t = x % y;
            x = y;
            y = t;
        }
        x
    }
}

/// Engine options for the tiered benchmarks: the default tiering (Cranelift without
/// optimisation first, optimised Cranelift in the background).
pub fn tiered_options() -> Options {
    Options {
        tiering: Some(Tiering::default()),
        ..Options::default()
    }
}

// ---------------------------------------------------------------------------------------------
// The driver interface
// ---------------------------------------------------------------------------------------------

/// How many inputs [`Bencher::iter_batched`] may prepare for one timed sample.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Batch {
    /// Many per sample: the inputs are small and the routine leaves nothing running.
    Small,
    /// One per sample: the routine leaves work behind (a background compile) that finishes
    /// when its output is dropped, before the next sample is timed.
    PerIteration,
}

/// A benchmark driver: measures the routines the suites hand it.
pub trait Bencher {
    /// Whether the benchmark `name` should run at all (a filter); the suites skip the
    /// preparation of benchmarks that do not.
    fn wants(&self, name: &str) -> bool;

    /// Measures `routine`, called repeatedly; its output goes through [`black_box`].
    fn iter<O, R: FnMut() -> O>(&mut self, name: &str, routine: R);

    /// Measures `routine` on inputs made by `setup`; `setup` and dropping the outputs are not
    /// timed.
    fn iter_batched<I, O, S: FnMut() -> I, R: FnMut(I) -> O>(
        &mut self,
        name: &str,
        batch: Batch,
        setup: S,
        routine: R,
    );
}

/// Why a suite could not run.
#[derive(Debug)]
pub enum BenchError {
    /// Tracing, compiling or calling a function failed.
    Nacre(Error),
    /// A compiled function returned something other than its Rust version.
    Mismatch {
        /// The benchmark.
        name: String,
        /// What the compiled function returned.
        got: String,
        /// What the Rust version returned.
        want: String,
    },
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::Nacre(e) => write!(f, "{e}"),
            BenchError::Mismatch { name, got, want } => {
                write!(
                    f,
                    "{name}: the compiled function returned {got}, expected {want}"
                )
            }
        }
    }
}

impl std::error::Error for BenchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BenchError::Nacre(e) => Some(e),
            BenchError::Mismatch { .. } => None,
        }
    }
}

impl From<Error> for BenchError {
    fn from(e: Error) -> Self {
        BenchError::Nacre(e)
    }
}

fn expect<T: PartialEq + fmt::Debug>(name: &str, got: T, want: T) -> Result<(), BenchError> {
    if got == want {
        Ok(())
    } else {
        Err(BenchError::Mismatch {
            name: name.to_string(),
            got: format!("{got:?}"),
            want: format!("{want:?}"),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The suites
// ---------------------------------------------------------------------------------------------

/// `trace_F` for every shape of [`SHAPES`] and [`SCALING_SHAPES`]: `nacre::trace_module(&f)`.
/// The captured modules are dropped outside the timing.
pub fn trace_suite(b: &mut impl Bencher) -> Result<(), BenchError> {
    for shape in SHAPES.iter().chain(SCALING_SHAPES) {
        let name = format!("trace_{}", shape.name);
        if !b.wants(&name) {
            continue;
        }
        (shape.trace)()?;
        b.iter_batched(&name, Batch::Small, || (), |()| (shape.trace)());
    }
    Ok(())
}

/// `ir_F` for every shape of [`SHAPES`]: `nacre::optimize(capture, &PassOptions::default())`
/// on a clone of the capture made before the clock starts.
pub fn ir_suite(b: &mut impl Bencher) -> Result<(), BenchError> {
    for shape in SHAPES {
        let name = format!("ir_{}", shape.name);
        if !b.wants(&name) {
            continue;
        }
        let capture = (shape.trace)()?.module;
        nacre::optimize(capture.clone(), &PassOptions::default())?;
        b.iter_batched(
            &name,
            Batch::Small,
            || capture.clone(),
            |m| nacre::optimize(m, &PassOptions::default()),
        );
    }
    Ok(())
}

/// `comp_B_F` for every shape of [`SHAPES`], where `compile` is backend `B`'s compile stage
/// (`backend.compile(&verified)`, the backend made once beforehand): optimised IR to a
/// callable. The callables are dropped outside the timing.
pub fn comp_suite<E>(
    b: &mut impl Bencher,
    backend: &str,
    compile: impl Fn(&VerifiedModule, &Linkage) -> Result<E, Error>,
) -> Result<(), BenchError> {
    for shape in SHAPES {
        let name = format!("comp_{backend}_{}", shape.name);
        if !b.wants(&name) {
            continue;
        }
        let Traced { module, linkage } = (shape.trace)()?;
        let verified = nacre::optimize(module, &PassOptions::default())?;
        compile(&verified, &linkage)?;
        b.iter_batched(
            &name,
            Batch::Small,
            || (),
            |()| compile(&verified, &linkage),
        );
    }
    Ok(())
}

/// `e2e_B_F` for every shape of [`SHAPES`]: from nothing to a callable, by hand (trace,
/// optimise, then backend `B`'s `compile`, the backend made once beforehand as an engine
/// holds it); no engine and so no cache is involved. The callables are dropped outside the
/// timing.
pub fn e2e_suite<E>(
    b: &mut impl Bencher,
    backend: &str,
    compile: impl Fn(&VerifiedModule, &Linkage) -> Result<E, Error>,
) -> Result<(), BenchError> {
    for shape in SHAPES {
        let name = format!("e2e_{backend}_{}", shape.name);
        if !b.wants(&name) {
            continue;
        }
        let pipeline = || -> Result<E, Error> {
            let Traced { module, linkage } = (shape.trace)()?;
            let verified = nacre::optimize(module, &PassOptions::default())?;
            compile(&verified, &linkage)
        };
        pipeline()?;
        b.iter_batched(&name, Batch::Small, || (), |()| pipeline());
    }
    Ok(())
}

/// The name of an execution benchmark.
pub fn exec_name(backend: &str, function: &str) -> String {
    format!("exec_{backend}_{function}")
}

/// `exec_rust_F` and `exec_B_F` for every function of [`EXEC_FUNCTIONS`] and every CPU
/// backend. Compiled functions come from an engine per backend (`Engine::compile`) and are
/// called through `Compiled::call`, the way a program calls them; inputs and outputs go
/// through [`black_box`]. A routine returns the call's `Result` as an `Option` (the results
/// were checked beforehand): the full `Result<_, nacre::Error>` is 72 bytes, returned through
/// memory, and a driver that does not inline the routine (criterion) would time its copy.
pub fn exec_suite(b: &mut impl Bencher) -> Result<(), BenchError> {
    let data = sum_data();
    let len = data.len() as i64;
    let want_sum = rust::sum(&data);
    let data = &data;

    if b.wants("exec_rust_add") {
        b.iter("exec_rust_add", || {
            let f = black_box(rust::add as fn(i32, i32) -> i32);
            f(black_box(ADD_ARGS.0), black_box(ADD_ARGS.1))
        });
    }
    if b.wants("exec_rust_addOne") {
        b.iter("exec_rust_addOne", || {
            let f = black_box(rust::add_one as fn(i32) -> i32);
            f(black_box(ADD_ONE_ARG))
        });
    }
    if b.wants("exec_rust_fibonacci") {
        b.iter("exec_rust_fibonacci", || {
            let f = black_box(rust::fibonacci as fn(u32) -> u64);
            f(black_box(FIB_N))
        });
    }
    if b.wants("exec_rust_sum") {
        b.iter("exec_rust_sum", || {
            let f = black_box(rust::sum as fn(&[i32]) -> i32);
            f(black_box(data.as_slice()))
        });
    }
    if b.wants("exec_rust_gcd") {
        b.iter("exec_rust_gcd", || {
            let f = black_box(rust::gcd as fn(u64, u64) -> u64);
            f(black_box(GCD_ARGS.0), black_box(GCD_ARGS.1))
        });
    }

    for kind in BackendKind::ALL {
        let backend = kind.name();
        if !EXEC_FUNCTIONS
            .iter()
            .any(|f| b.wants(&exec_name(backend, f)))
        {
            continue;
        }
        let engine = Engine::new(Options::with_backend(kind))?;

        let name = exec_name(backend, "add");
        if b.wants(&name) {
            let f = engine.compile(add)?;
            let want = rust::add(ADD_ARGS.0, ADD_ARGS.1);
            expect(&name, f.call(ADD_ARGS.0, ADD_ARGS.1)?, want)?;
            b.iter(&name, || {
                f.call(black_box(ADD_ARGS.0), black_box(ADD_ARGS.1)).ok()
            });
        }
        let name = exec_name(backend, "addOne");
        if b.wants(&name) {
            let f = engine.compile(add_one)?;
            expect(&name, f.call(ADD_ONE_ARG)?, rust::add_one(ADD_ONE_ARG))?;
            b.iter(&name, || f.call(black_box(ADD_ONE_ARG)).ok());
        }
        let name = exec_name(backend, "fibonacci");
        if b.wants(&name) {
            let f = engine.compile(fibonacci)?;
            expect(&name, f.call(FIB_N)?, rust::fibonacci(FIB_N))?;
            b.iter(&name, || f.call(black_box(FIB_N)).ok());
        }
        let name = exec_name(backend, "sum");
        if b.wants(&name) {
            let f = engine.compile(arrays::array_sum)?;
            expect(&name, f.call(&data[..], len)?, want_sum)?;
            b.iter(&name, || f.call(black_box(&data[..]), black_box(len)).ok());
        }
        // The same loop without bounds checks, for their cost.
        let name = exec_name(backend, "sum_unchecked");
        if b.wants(&name) {
            let f = engine.compile_unchecked(arrays::array_sum)?;
            // SAFETY: array_sum reads `data[0..len]` (`len` is `data.len()`); `data` outlives
            // every call and nothing writes it.
            let ptr = unsafe { RawPtr::new(data.as_ptr().cast_mut()) };
            // SAFETY: as above.
            expect(&name, unsafe { f.call(ptr, len) }?, want_sum)?;
            // SAFETY: as above.
            b.iter(&name, || {
                unsafe { f.call(black_box(ptr), black_box(len)) }.ok()
            });
        }
        let name = exec_name(backend, "gcd");
        if b.wants(&name) {
            let f = engine.compile(algorithms::gcd)?;
            expect(
                &name,
                f.call(GCD_ARGS.0, GCD_ARGS.1)?,
                rust::gcd(GCD_ARGS.0, GCD_ARGS.1),
            )?;
            b.iter(&name, || {
                f.call(black_box(GCD_ARGS.0), black_box(GCD_ARGS.1)).ok()
            });
        }
    }
    Ok(())
}

/// One timed first call of a tiered engine: dropping it (outside the timing) waits until the
/// background tier has finished, so that the next sample does not compete with it.
struct TieredRun<Args, R> {
    compiled: Option<Compiled<Args, R>>,
    _engine: Option<Engine>,
}

impl<Args, R> Drop for TieredRun<Args, R> {
    fn drop(&mut self) {
        let Some(f) = &self.compiled else {
            return;
        };
        // Poll, yielding, rather than sleep (`Compiled::wait_for_second_tier` sleeps): a thread
        // that slept starts the next sample on an idle core with cold caches, which makes a
        // first compile up to twice as slow as in a running program.
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(30) {
            match f.tier_stats() {
                Some(s) if !s.second_tier_ready && s.second_tier_error.is_none() => {
                    std::thread::yield_now()
                }
                _ => break,
            }
        }
    }
}

/// `tiered_first_call_F`: from nothing to the first result under tiered compilation
/// ([`tiered_options`]): `engine.compile(f)` then the first call, on a fresh engine per sample
/// (engines cache compiled functions). Creating the engine is not timed; `tiered_engine_new`
/// measures it on its own. Rows: `tiered_first_call_add` (`add(42, 42)`),
/// `tiered_first_call_sum` (the 10 MiB sum of `exec_*_sum`, which the first tier runs) and
/// `tiered_first_call_sum_1k` (the same function on [`TIERED_SUM_SMALL_LEN`] elements).
pub fn tiered_suite(b: &mut impl Bencher) -> Result<(), BenchError> {
    if b.wants("tiered_engine_new") {
        Engine::new(tiered_options())?;
        b.iter_batched(
            "tiered_engine_new",
            Batch::PerIteration,
            || (),
            |()| Engine::new(tiered_options()),
        );
    }

    let name = "tiered_first_call_add";
    if b.wants(name) {
        let engine = Engine::new(tiered_options())?;
        let f = engine.compile(add)?;
        expect(
            name,
            f.call(ADD_ARGS.0, ADD_ARGS.1)?,
            rust::add(ADD_ARGS.0, ADD_ARGS.1),
        )?;
        drop(TieredRun {
            compiled: Some(f),
            _engine: Some(engine),
        });
        b.iter_batched(
            name,
            Batch::PerIteration,
            || Engine::new(tiered_options()).ok(),
            |engine| {
                let compiled = engine.as_ref().and_then(|e| e.compile(add).ok());
                let result = compiled
                    .as_ref()
                    .map(|f| f.call(black_box(ADD_ARGS.0), black_box(ADD_ARGS.1)));
                (
                    result,
                    TieredRun {
                        compiled,
                        _engine: engine,
                    },
                )
            },
        );
    }

    let data = sum_data();
    for (name, len) in [
        ("tiered_first_call_sum", data.len()),
        ("tiered_first_call_sum_1k", TIERED_SUM_SMALL_LEN),
    ] {
        if !b.wants(name) {
            continue;
        }
        let slice = &data[..len];
        let want = rust::sum(&data[..len]);
        let n = len as i64;
        let engine = Engine::new(tiered_options())?;
        let f = engine.compile(arrays::array_sum)?;
        expect(name, f.call(slice, n)?, want)?;
        drop(TieredRun {
            compiled: Some(f),
            _engine: Some(engine),
        });
        b.iter_batched(
            name,
            Batch::PerIteration,
            || Engine::new(tiered_options()).ok(),
            |engine| {
                let compiled = engine
                    .as_ref()
                    .and_then(|e| e.compile(arrays::array_sum).ok());
                let result = compiled
                    .as_ref()
                    .map(|f| f.call(black_box(slice), black_box(n)));
                (
                    result,
                    TieredRun {
                        compiled,
                        _engine: engine,
                    },
                )
            },
        );
    }
    Ok(())
}
