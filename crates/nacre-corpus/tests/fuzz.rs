//! Differential fuzzing of the backends (see `nacre_corpus::fuzz`): random valid modules, run
//! on the interpreter (the reference, optimised and not), Cranelift (both optimisation levels)
//! and C, kernels on the CPU runtime in grid mode with each of them as host backend. Results,
//! traps and memory must agree, and memory around the arrays must stay untouched.
//!
//! The CI runs are bounded and deterministic. The long run is ignored by default:
//!
//! ```text
//! NACRE_FUZZ_CASES=20000 cargo test --release -p nacre-corpus --test fuzz -- --ignored
//! ```
//!
//! `NACRE_FUZZ_SEED` changes its base seed, `NACRE_FUZZ_VERBOSE=1` prints every case's seed
//! before it runs (to name a case that crashes the process). A failure prints the seed and
//! the module; `reproduce` below runs one seed (`NACRE_FUZZ_ONE=<seed> ... -- --ignored
//! reproduce`).

use nacre::ir::{BinaryOp, Scalar, UnaryOp};
use nacre_corpus::fuzz::{case_seed, census, generate, Flavor, Mismatch, Runner, Stats};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The base seed of the CI runs.
const CI_SEED: u64 = 0x6e61_6372_6566_757a;

fn runner() -> &'static Runner {
    static RUNNER: OnceLock<Runner> = OnceLock::new();
    RUNNER.get_or_init(Runner::new)
}

fn verbose() -> bool {
    std::env::var_os("NACRE_FUZZ_VERBOSE").is_some_and(|v| v != "0")
}

/// Runs one case; a panic (in the generator or a backend) is a failure too.
fn one(seed: u64, flavor: Flavor, stats: &mut Stats) -> Result<(), Mismatch> {
    if verbose() {
        eprintln!("fuzz: {flavor:?} seed {seed:#018x}");
    }
    let r = catch_unwind(AssertUnwindSafe(|| {
        let p = generate(seed, flavor);
        runner().check(&p)
    }));
    match r {
        Ok(Ok(outs)) => {
            stats.add(&outs);
            Ok(())
        }
        Ok(Err(m)) => Err(m),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let module = catch_unwind(|| generate(seed, flavor).module.to_string())
                .unwrap_or_else(|_| "(the generator panicked)".into());
            Err(Mismatch {
                seed,
                what: format!("panicked: {msg}"),
                module,
            })
        }
    }
}

/// Runs `n` cases of `flavor` from `base` on all cores; returns the statistics and failures.
fn run(flavor: Flavor, n: u64, base: u64) -> (Stats, Vec<Mismatch>) {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
    let workers = threads.min(n.max(1)) as usize;
    let next = AtomicU64::new(0);
    // What each worker runs and since when (milliseconds since `start`), for the watchdog.
    let start = Instant::now();
    let running: Vec<(AtomicU64, AtomicU64)> = (0..workers)
        .map(|_| (AtomicU64::new(0), AtomicU64::new(u64::MAX)))
        .collect();
    let done = AtomicBool::new(false);
    let results: Vec<(Stats, Vec<Mismatch>)> = std::thread::scope(|s| {
        // Names a case that runs for long (a program that does not terminate hangs the run).
        s.spawn(|| {
            let mut warned = vec![0u64; workers];
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                let now = start.elapsed().as_millis() as u64;
                for (w, (seed, since)) in running.iter().enumerate() {
                    let since = since.load(Ordering::Relaxed);
                    let seed = seed.load(Ordering::Relaxed);
                    if since != u64::MAX && now - since > 30_000 && warned[w] != seed {
                        warned[w] = seed;
                        eprintln!("fuzz: {flavor:?} seed {seed:#018x} has run for over 30 s");
                    }
                }
            }
        });
        let handles: Vec<_> = running
            .iter()
            .map(|(cur_seed, cur_since)| {
                s.spawn(|| {
                    let mut stats = Stats::default();
                    let mut failures = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            break;
                        }
                        let seed = case_seed(base, i);
                        cur_seed.store(seed, Ordering::Relaxed);
                        cur_since.store(start.elapsed().as_millis() as u64, Ordering::Relaxed);
                        if let Err(m) = one(seed, flavor, &mut stats) {
                            eprintln!("FUZZ FAILURE ({flavor:?}, case {i}) {m}");
                            failures.push(m);
                        }
                        cur_since.store(u64::MAX, Ordering::Relaxed);
                    }
                    (stats, failures)
                })
            })
            .collect();
        let results = handles
            .into_iter()
            .map(|h| h.join().expect("fuzz worker"))
            .collect();
        done.store(true, Ordering::Relaxed);
        results
    });
    let mut stats = Stats::default();
    let mut failures = Vec::new();
    for (s, f) in results {
        stats.merge(&s);
        failures.extend(f);
    }
    (stats, failures)
}

fn report(name: &str, flavor: Flavor, n: u64, base: u64) {
    let start = Instant::now();
    let (stats, failures) = run(flavor, n, base);
    eprintln!(
        "{name}: {} cases ({} targets: {}), {} runs returned, traps {:?}, {} failures, {:.1?}",
        stats.cases,
        runner().target_names().len(),
        runner().target_names().join(", "),
        stats.ok,
        stats.traps,
        failures.len(),
        start.elapsed()
    );
    eprintln!("{name}: {}", timings());
    assert!(
        failures.is_empty(),
        "{} of {n} {flavor:?} cases failed (base seed {base:#x}); seeds: {:x?}\nfirst:\n{}",
        failures.len(),
        failures.iter().map(|m| m.seed).collect::<Vec<_>>(),
        failures[0]
    );
}

/// Seconds spent compiling and running per target (all tests of the process so far).
fn timings() -> String {
    runner()
        .timings()
        .iter()
        .map(|(n, c, r)| format!("{n} {c:.1}s+{r:.1}s"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn generator_is_deterministic_and_valid() {
    for i in 0..300 {
        for flavor in [Flavor::Host, Flavor::Kernels] {
            let seed = case_seed(CI_SEED ^ 1, i);
            let a = generate(seed, flavor);
            let b = generate(seed, flavor);
            assert_eq!(a.module, b.module, "seed {seed:#x}");
            if let Err(e) = nacre::ir::verify(a.module.clone()) {
                panic!(
                    "seed {seed:#x} ({flavor:?}) does not verify: {e}\n{}",
                    a.module
                );
            }
        }
    }
}

/// Over a few hundred programs the generator produces every operator on every type it is
/// defined on, every cast, all memory and control-flow forms and every kernel construct.
#[test]
fn generator_covers_the_instruction_set() {
    let mut total: BTreeMap<String, usize> = BTreeMap::new();
    for i in 0..400 {
        for flavor in [Flavor::Host, Flavor::Kernels] {
            let p = generate(case_seed(CI_SEED ^ 2, i), flavor);
            for (k, n) in census(&p.module) {
                *total.entry(k).or_default() += n;
            }
        }
    }
    let mut want: Vec<String> = Vec::new();
    for s in Scalar::HOST {
        for op in BinaryOp::ALL {
            if op.accepts(s) {
                want.push(format!("binary.{}.{s}", op.name()));
            }
        }
        for op in UnaryOp::ALL {
            if op.accepts(s) {
                want.push(format!("unary.{}.{s}", op.name()));
            }
        }
        for t in Scalar::HOST {
            if s != t {
                want.push(format!("cast.{s}>{t}"));
            }
        }
        want.push(format!("load.{s}"));
        want.push(format!("store.{s}"));
        want.push(format!("shared_alloc.{s}"));
        want.push(format!("cmp.lt.{s}"));
        want.push(format!("cmp.eq.{s}"));
    }
    for k in [
        "fma.f32",
        "fma.f64",
        "select",
        "select.ptr",
        "cmp.ne.ptr",
        "cast.ptr-int",
        "elem_ptr",
        "call",
        "call.recursive",
        "call.mutual",
        "call.returns_ptr",
        "call.from_kernel",
        "launch",
        "barrier",
        "gpu.thread_idx.x",
        "gpu.thread_idx.y",
        "gpu.block_idx.x",
        "gpu.block_idx.y",
        "gpu.block_dim.x",
        "gpu.grid_dim.x",
        "branch",
        "jump",
        "block_params",
        "return.early",
        "function.kernel",
    ] {
        want.push(k.to_string());
    }
    let missing: Vec<&String> = want.iter().filter(|k| !total.contains_key(*k)).collect();
    assert!(missing.is_empty(), "never generated: {missing:?}");
}

#[test]
fn fuzz_host_programs() {
    report("fuzz_host_programs", Flavor::Host, 200, CI_SEED);
}

#[test]
fn fuzz_kernel_programs() {
    report("fuzz_kernel_programs", Flavor::Kernels, 50, CI_SEED);
}

/// The long run: `NACRE_FUZZ_CASES` cases (default 20000), four in five host programs.
#[test]
#[ignore = "long: run with --release and NACRE_FUZZ_CASES"]
fn fuzz_long() {
    let n: u64 = std::env::var("NACRE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let base: u64 = std::env::var("NACRE_FUZZ_SEED")
        .ok()
        .and_then(|v| parse_seed(&v))
        .unwrap_or(CI_SEED ^ 0x1000);
    let kernels = n / 5;
    let start = Instant::now();
    let mut failures = Vec::new();
    for (flavor, count, b) in [
        (Flavor::Host, n - kernels, base),
        (Flavor::Kernels, kernels, base ^ 0x4b),
    ] {
        let (stats, f) = run(flavor, count, b);
        eprintln!(
            "fuzz_long {flavor:?}: {} cases, {} runs returned, traps {:?}, {} failures",
            stats.cases,
            stats.ok,
            stats.traps,
            f.len()
        );
        failures.extend(f);
    }
    eprintln!(
        "fuzz_long: {n} cases (base seed {base:#x}) in {:.1?}, {} failures; compile+run: {}",
        start.elapsed(),
        failures.len(),
        timings()
    );
    assert!(
        failures.is_empty(),
        "{} failures; seeds: {:x?}\nfirst:\n{}",
        failures.len(),
        failures.iter().map(|m| m.seed).collect::<Vec<_>>(),
        failures[0]
    );
}

fn parse_seed(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Runs the one case `NACRE_FUZZ_ONE=<seed>` (`NACRE_FUZZ_FLAVOR=kernels` for a kernel
/// program) and prints its module.
#[test]
#[ignore = "runs the seed of NACRE_FUZZ_ONE"]
fn reproduce() {
    let Some(seed) = std::env::var("NACRE_FUZZ_ONE")
        .ok()
        .and_then(|v| parse_seed(&v))
    else {
        return;
    };
    let flavor = match std::env::var("NACRE_FUZZ_FLAVOR").as_deref() {
        Ok("kernels") => Flavor::Kernels,
        _ => Flavor::Host,
    };
    let p = generate(seed, flavor);
    eprintln!("{}", p.module);
    let mut stats = Stats::default();
    if let Err(m) = one(seed, flavor, &mut stats) {
        panic!("{m}");
    }
    eprintln!("agrees: {stats:?}");
}

/// Found by `fuzz_host_programs`, minimised: a recursion that never ends must be
/// `Trap::StackOverflow` on every backend. No caller uses `h`'s result, so GCC drops it
/// (IPA-SRA, `h.isra.0`) and could make the recursive call a jump, under which the stack
/// stops growing and the stack check on entry never fails; the C backend therefore compiles
/// with `-fno-optimize-sibling-calls`.
#[test]
fn unbounded_tail_recursion_traps_on_every_backend() {
    use nacre::ir::{CmpOp, FuncKind, FunctionBuilder, Module, Type};
    use std::sync::mpsc::channel;
    // h(d) = if d == 0 { 0 } else { h(d) }; entry(d) = h(d)
    let mut m = Module::new();
    let h = FunctionBuilder::build(
        "h",
        FuncKind::Host,
        &[Type::U32],
        Some(Type::U32),
        |b, p| {
            let zero = b.const_u32(0);
            let c = b.cmp(CmpOp::Eq, p[0], zero);
            let base = b.create_block();
            let rec = b.create_block();
            b.branch(c, base, vec![], rec, vec![]);
            b.switch_to_block(base);
            b.ret(Some(zero));
            b.switch_to_block(rec);
            let r = b.call(nacre::ir::FuncId::from_u32(0), vec![p[0]], Some(Type::U32));
            b.ret(r);
        },
    );
    let h = m.add_function(h);
    let entry = FunctionBuilder::build(
        "entry",
        FuncKind::Host,
        &[Type::U32],
        Some(Type::U32),
        |b, p| {
            // The result is not used: GCC drops it from `h` (IPA-SRA), which makes the recursive
            // call a tail call.
            b.call(h, vec![p[0]], Some(Type::U32));
            let seven = b.const_u32(7);
            b.ret(Some(seven));
        },
    );
    m.entry = Some(m.add_function(entry));
    eprintln!("{m}");
    let verified = nacre::ir::verify(m).expect("valid");
    let mut results = Vec::new();
    for kind in nacre::BackendKind::ALL {
        let backend = nacre::make_backend(&nacre::Options::with_backend(kind)).expect("backend");
        let exec = backend
            .compile(&verified, &nacre::Linkage::default())
            .expect("compiles");
        let (tx, rx) = channel();
        // On a thread of its own: a call that never returns is abandoned there.
        std::thread::spawn(move || {
            let _ = tx.send(exec.call(&[5000]));
        });
        let r = rx.recv_timeout(Duration::from_secs(10));
        eprintln!("{}: {r:?}", kind.name());
        results.push((kind.name(), r));
    }
    for (name, r) in &results {
        assert_eq!(
            *r,
            Ok(Err(nacre::Trap::StackOverflow)),
            "{name}: h(1) recurses forever and must trap with StackOverflow"
        );
    }
}
