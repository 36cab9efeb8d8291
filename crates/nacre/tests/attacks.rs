//! Attacks on the memory safety of the safe API, one test each (the soundness issue's list).
//!
//! A safe `Compiled::call` takes borrowed memory for every `Ptr<T>` parameter and checks every
//! load and store against it, in host code and in kernels, on every CPU backend and in both CPU
//! modes; a shared borrow for a parameter the function writes through is refused; launches are
//! bounded; deep recursion traps; a traced value of another trace is a tracing error. Each test
//! below tries to break one of these and checks the typed error and that no memory outside
//! what was lent changed.
//!
//! A test whose failure could crash the process (an unchecked access that segfaults, a stack
//! overflow that aborts, a launch that never ends) runs its body in child processes, one per
//! backend (and CPU mode): this test binary again, with `--exact <test> --nocapture` and
//! [`CHILD_ENV`] naming the test and the case ([`in_child`]). The child runs the body, whose
//! assertions panic on failure, and prints one line per attack with the error it got; the
//! parent asserts that every child exited normally and that every line names the expected
//! error, and shows the output of each child that did not (a segfault or an abort is then a
//! failed assertion naming the backend, not a dead test runner).
//!
//! Use after free and drop during a launch cannot be written in safe code: the call borrows
//! the memory for its whole duration. `tests/ui/drop_while_borrowed.rs` is the code a user
//! would try, and it does not compile.

use nacre::gpu::{
    global_id_x, global_size_x, launch, shared_array, sync_threads, thread_idx_x, Array, Block,
    CpuMode, CpuOptions, Grid, MemoryError, RuntimeOptions,
};
use nacre::prelude::*;
use nacre::{kernel, Error, Trap};
use std::cell::Cell;
use std::fmt::Debug;
use std::io::Read;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// Harness

/// Set in a child process to `test:case`: the test whose body it runs, and on what.
const CHILD_ENV: &str = "NACRE_ATTACK_CHILD";

/// The prefix of a child's line reporting one attack and its outcome.
const ATTACK_LINE: &str = "nacre-attack:";

/// The prefix of the line a child prints when its body has run to the end.
const DONE_LINE: &str = "nacre-attack-done:";

/// How long a child may run before the parent kills it.
const CHILD_TIMEOUT: Duration = Duration::from_secs(300);

/// One attack's outcome, printed at once (so that a child that crashes later still shows it).
#[derive(Default)]
struct Log {
    attacks: usize,
}

impl Log {
    fn push(&mut self, line: String) {
        use std::io::Write;
        println!("{ATTACK_LINE} {line}");
        let _ = std::io::stdout().flush();
        self.attacks += 1;
    }
}

/// The CPU backends, as cases.
const BACKEND_CASES: [&str; 3] = ["interp", "cranelift", "c"];
/// The CPU backends and direct mode, as cases.
const HOST_CASES: [&str; 4] = ["interp", "cranelift", "c", "direct"];
/// Every CPU backend in both CPU modes, as cases.
const KERNEL_CASES: [&str; 6] = [
    "interp Grid",
    "interp Serial",
    "cranelift Grid",
    "cranelift Serial",
    "c Grid",
    "c Serial",
];

/// Runs `body`, the risky part of test `name`, once per case in a child process each.
///
/// In a child (where [`CHILD_ENV`] is `name:case`), runs `body` on that case; it prints one
/// line per attack after [`ATTACK_LINE`] as it goes, then [`DONE_LINE`]. In the parent, runs
/// the child of every case and, after all of them, asserts for each that it exited
/// successfully within [`CHILD_TIMEOUT`], that it reached the end of the body, and that it
/// reported at least one attack and every attack line contains `expect` (the name of the
/// typed error, such as `OutOfBounds`); a failure shows the child's output.
fn in_child(name: &str, cases: &[&str], expect: &str, body: fn(&str, &mut Log)) {
    if let Ok(value) = std::env::var(CHILD_ENV) {
        let Some((test, case)) = value.split_once(':') else {
            panic!("{CHILD_ENV}={value}: expected test:case")
        };
        assert_eq!(test, name, "{CHILD_ENV} names another test");
        // The harness has printed `test <name> ... ` without a line end.
        println!();
        let mut log = Log::default();
        body(case, &mut log);
        println!("{DONE_LINE} {name}:{case} ({} attacks)", log.attacks);
        return;
    }
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| run_child(name, case, expect).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{name}: {} of {} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

/// Runs the child of test `name` on `case` and checks its outcome (see [`in_child`]).
fn run_child(name: &str, case: &str, expect: &str) -> Result<(), String> {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut child = Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{name}:{case}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the child process starts");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the child") {
            break Some(status);
        }
        if start.elapsed() > CHILD_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    let fail = |why: String| {
        Err(format!(
            "---- {name} [{case}]: {why}\n--- child stdout ---\n{stdout}\n--- child stderr ---\n{stderr}"
        ))
    };
    let Some(status) = status else {
        return fail(format!("ran longer than {CHILD_TIMEOUT:?} and was killed"));
    };
    if !status.success() {
        return fail(format!("the child exited with {status}"));
    }
    if !stdout.lines().any(|l| l.starts_with(DONE_LINE)) {
        return fail("the child did not run the body to its end (is the test name right?)".into());
    }
    let attacks: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with(ATTACK_LINE))
        .collect();
    if attacks.is_empty() {
        return fail("the child reported no attack".into());
    }
    if let Some(line) = attacks.iter().find(|l| !l.contains(expect)) {
        return fail(format!("an attack did not end in {expect}: {line}"));
    }
    Ok(())
}

/// Asserts that `r` is an out-of-bounds trap through pointer parameter `param` (of whichever
/// function; `None`: any parameter, or none known, as in direct mode) and logs it.
#[track_caller]
fn out_of_bounds<T: Debug>(
    log: &mut Log,
    what: impl std::fmt::Display,
    r: Result<T, Error>,
    param: Option<u8>,
) {
    let ok = matches!(
        &r,
        Err(Error::Trap(Trap::OutOfBounds { param: p, .. })) if param.is_none() || *p == param
    );
    assert!(
        ok,
        "{what}: expected Err(Trap(OutOfBounds {{ param: {param:?}, .. }})), got {r:?}"
    );
    log.push(format!("{what}: {:?}", r.err().unwrap()));
}

/// Asserts that `r` is `Err(Error::Trap(trap))` and logs it.
#[track_caller]
fn traps<T: Debug>(log: &mut Log, what: impl std::fmt::Display, r: Result<T, Error>, trap: Trap) {
    assert!(
        matches!(&r, Err(Error::Trap(t)) if *t == trap),
        "{what}: expected Err(Trap({trap:?})), got {r:?}"
    );
    log.push(format!("{what}: {:?}", r.err().unwrap()));
}

/// An engine on `backend` with the CPU runtime in `mode`.
fn engine(backend: BackendKind, mode: CpuMode) -> Engine {
    Engine::new(Options {
        backend,
        runtime: RuntimeOptions::Cpu(CpuOptions { mode }),
        ..Options::default()
    })
    .unwrap_or_else(|e| panic!("an engine on {}: {e}", backend.name()))
}

/// One engine per CPU backend, and a direct-mode engine: `(name, engine, param)`, where
/// `param` is the parameter an out-of-bounds trap through parameter 0 names (direct mode does
/// not know it).
fn all_host_engines() -> Vec<(String, Engine, Option<u8>)> {
    let mut engines: Vec<_> = BackendKind::ALL
        .into_iter()
        .map(|k| (k.name().to_string(), engine(k, CpuMode::Grid), Some(0)))
        .collect();
    let direct = Engine::new(Options {
        direct: true,
        ..Options::default()
    })
    .expect("a direct-mode engine");
    engines.push(("direct".to_string(), direct, None));
    engines
}

/// One engine per CPU backend and CPU mode: `(name, engine, mode)`.
fn all_kernel_engines() -> Vec<(String, Engine, CpuMode)> {
    let mut engines = Vec::new();
    for kind in BackendKind::ALL {
        for mode in [CpuMode::Grid, CpuMode::Serial] {
            let name = format!("{} {mode:?}", kind.name());
            engines.push((name, engine(kind, mode), mode));
        }
    }
    engines
}

/// The backend of case `case` (none if `case` is not one of [`BACKEND_CASES`]).
fn backends(case: &str) -> Vec<BackendKind> {
    let mut kinds = BackendKind::ALL.to_vec();
    kinds.retain(|k| k.name() == case);
    kinds
}

/// The engine of host case `case` (none if `case` is not one of [`HOST_CASES`]).
fn host_engines(case: &str) -> Vec<(String, Engine, Option<u8>)> {
    let mut engines = all_host_engines();
    engines.retain(|(name, _, _)| name == case);
    engines
}

/// The engine of kernel case `case` (none if `case` is not one of [`KERNEL_CASES`]).
fn kernel_engines(case: &str) -> Vec<(String, Engine, CpuMode)> {
    let mut engines = all_kernel_engines();
    engines.retain(|(name, _, _)| name == case);
    engines
}

/// What memory next to the lent memory holds; it must never change.
const GUARD: i32 = 0x5a5a_5a5a;

/// The kernel grid: many blocks, so that blocks run on several workers at once.
const BLOCKS: u32 = 64;
/// Threads per block.
const THREADS: u32 = 128;
/// One element per thread.
const N: usize = (BLOCKS * THREADS) as usize;

/// Kernel memory outside the lent part holds this.
const KGUARD: u32 = 0xdead_beef;

// ---------------------------------------------------------------------------------------------
// Host functions

/// `p[i]`.
#[jit]
fn read_at(p: Ptr<i32>, i: Val<i64>) -> Val<i32> {
    p[i]
}

/// `p[i] = v`.
#[jit]
fn write_at(p: Ptr<i32>, i: Val<i64>, v: Val<i32>) {
    p[i] = v;
}

/// `p[1 << 40]`, a constant index.
#[jit]
fn read_far(p: Ptr<i32>) -> Val<i32> {
    p[1i64 << 40]
}

/// `p[-1]`, a constant index.
#[jit]
fn read_before(p: Ptr<i32>) -> Val<i32> {
    p[-1i64]
}

/// `p[4] = 99`, a constant index.
#[jit]
fn write_past_end(p: Ptr<i32>) {
    p[4i64] = 99;
}

/// `p[1000] = 99`, a constant index.
#[jit]
fn write_far_past_end(p: Ptr<i32>) {
    p[1000i64] = 99;
}

/// `p[i] = 99` for `i` in `lo..hi`: a counted loop, whose checks are hoisted before it.
#[jit]
fn fill(p: Ptr<i32>, lo: Val<i64>, hi: Val<i64>) {
    for i in lo..hi {
        p[i] = 99;
    }
}

/// `p.offset(k)[i]`: an interior pointer made in traced code.
#[jit]
fn read_via_offset(p: Ptr<i32>, k: Val<i64>, i: Val<i64>) -> Val<i32> {
    p.offset(k)[i]
}

// ---------------------------------------------------------------------------------------------
// Kernels

/// `out[gid + off] = gid`.
#[kernel]
fn k_write_at(out: Ptr<u32>, off: Val<i64>) {
    let i = global_id_x();
    out[i.cast::<i64>() + off] = i;
}

/// Launches [`k_write_at`] on [`BLOCKS`] × [`THREADS`].
#[jit]
fn run_write_at(out: Ptr<u32>, off: Val<i64>) {
    launch(
        k_write_at,
        Grid::new(BLOCKS),
        Block::new(THREADS),
        (out, off),
    );
}

/// `dst[gid] = src[gid + off]`.
#[kernel]
fn k_read_at(src: Ptr<u32>, dst: Ptr<u32>, off: Val<i64>) {
    let i = global_id_x();
    dst[i] = src[i.cast::<i64>() + off];
}

/// Launches [`k_read_at`] on [`BLOCKS`] × [`THREADS`].
#[jit]
fn run_read_at(src: Ptr<u32>, dst: Ptr<u32>, off: Val<i64>) {
    launch(
        k_read_at,
        Grid::new(BLOCKS),
        Block::new(THREADS),
        (src, dst, off),
    );
}

/// Thread 0 copies `src[idx]` to `dst[0]`.
#[kernel]
fn k_read_index(src: Ptr<u32>, dst: Ptr<u32>, idx: Val<i64>) {
    if global_id_x() == 0u32 {
        dst[0i64] = src[idx];
    }
}

/// Launches [`k_read_index`] on [`BLOCKS`] × [`THREADS`].
#[jit]
fn run_read_index(src: Ptr<u32>, dst: Ptr<u32>, idx: Val<i64>) {
    launch(
        k_read_index,
        Grid::new(BLOCKS),
        Block::new(THREADS),
        (src, dst, idx),
    );
}

/// Each thread writes `tile[tid + extra]` of a 128-element shared array.
#[kernel]
fn k_shared_overrun(out: Ptr<u32>, extra: Val<u32>) {
    let tile = shared_array::<u32, 128>();
    let t = thread_idx_x();
    tile[t + extra] = t;
    sync_threads();
    out[global_id_x()] = tile[t];
}

/// Launches [`k_shared_overrun`] on [`BLOCKS`] × 128.
#[jit]
fn run_shared_overrun(out: Ptr<u32>, extra: Val<u32>) {
    launch(
        k_shared_overrun,
        Grid::new(BLOCKS),
        Block::new(128u32),
        (out, extra),
    );
}

/// A grid-stride loop writing `out[i] = i` for `i < n` (collapsible, so the CPU runtime runs
/// it as chunks of one loop, and as C once its C tier is compiled).
#[kernel]
fn k_grid_stride_write(out: Ptr<u32>, n: Val<u32>) {
    let stride = global_size_x();
    let mut i = global_id_x();
    while i < n {
        out[i] = i;
        i += stride;
    }
}

/// Launches [`k_grid_stride_write`] on [`BLOCKS`] × [`THREADS`].
#[jit]
fn run_grid_stride_write(out: Ptr<u32>, n: Val<u32>) {
    launch(
        k_grid_stride_write,
        Grid::new(BLOCKS),
        Block::new(THREADS),
        (out, n),
    );
}

/// One thread per element under a guard: `if i < n { out[i] = i }` (its check is made once
/// per launch, on the host, for `min(n, threads)` elements).
#[kernel]
fn k_guarded_write(out: Ptr<u32>, n: Val<u32>) {
    let i = global_id_x();
    if i < n {
        out[i] = i;
    }
}

/// Launches [`k_guarded_write`] on enough blocks of [`THREADS`] for `n` (at most [`BLOCKS`]).
#[jit]
fn run_guarded_write(out: Ptr<u32>, n: Val<u32>, blocks: Val<u32>) {
    launch(
        k_guarded_write,
        Grid::new(blocks),
        Block::new(THREADS),
        (out, n),
    );
}

// ---------------------------------------------------------------------------------------------
// 1. Host code: reads and writes outside the lent memory

#[test]
fn host_out_of_bounds_accesses_trap_and_leave_neighbours_alone() {
    in_child(
        "host_out_of_bounds_accesses_trap_and_leave_neighbours_alone",
        &HOST_CASES,
        "OutOfBounds",
        host_out_of_bounds_body,
    );
}

fn host_out_of_bounds_body(case: &str, log: &mut Log) {
    // (Not `i64::MIN`: its byte offset wraps to 0, so it addresses `p[0]`, which is in bounds.)
    let bad: [i64; 7] = [4, 5, 1000, -1, 1 << 40, -(1 << 40), i64::MAX];
    for (name, engine, param) in host_engines(case) {
        let read = engine.compile(read_at).unwrap();
        let write = engine.compile(write_at).unwrap();
        let far = engine.compile(read_far).unwrap();
        let before = engine.compile(read_before).unwrap();
        let past = engine.compile(write_past_end).unwrap();
        let far_past = engine.compile(write_far_past_end).unwrap();
        let fill = engine.compile(fill).unwrap();

        // A Vec of 8: the first 4 lent, the other 4 the neighbours.
        let mut v = vec![10, 11, 12, 13, GUARD, GUARD, GUARD, GUARD];
        let original = v.clone();
        assert_eq!(read.call(&v[..4], 3i64).unwrap(), 13, "{name}");
        for i in bad {
            let what = format!("{name}: read (&v[..4])[{i}]");
            out_of_bounds(log, what, read.call(&v[..4], i), param);
            let what = format!("{name}: write (&mut v[..4])[{i}]");
            out_of_bounds(log, what, write.call(&mut v[..4], i, 99), param);
            assert_eq!(v, original, "{name}: memory changed by writing index {i}");
        }
        let what = format!("{name}: read p[1 << 40] of &v[..4]");
        out_of_bounds(log, what, far.call(&v[..4]), param);
        let what = format!("{name}: read p[-1] of &v[4..] (must not read v[3])");
        out_of_bounds(log, what, before.call(&v[4..]), param);
        let what = format!("{name}: write p[4] of &mut v[..4]");
        out_of_bounds(log, what, past.call(&mut v[..4]), param);
        let what = format!("{name}: write p[1000] of &mut v[..4]");
        out_of_bounds(log, what, far_past.call(&mut v[..4]), param);
        assert_eq!(
            v, original,
            "{name}: memory changed by constant-index writes"
        );
        for (lo, hi) in [(0, 5), (-1, 4), (3, 1 << 40), (2, i64::MAX)] {
            let what = format!("{name}: fill (&mut v[..4])[{lo}..{hi}]");
            out_of_bounds(log, what, fill.call(&mut v[..4], lo, hi), param);
            assert_eq!(
                &v[4..],
                &original[4..],
                "{name}: fill {lo}..{hi} wrote past the end"
            );
            v.copy_from_slice(&original);
        }
        fill.call(&mut v[..4], 0i64, 4i64).unwrap();
        assert_eq!(v, [99, 99, 99, 99, GUARD, GUARD, GUARD, GUARD], "{name}");
        v.copy_from_slice(&original);

        // A whole Vec, and a Vec whose capacity is larger than its length: only the length
        // is lent.
        let mut w: Vec<i32> = Vec::with_capacity(64);
        w.extend([1, 2, 3, 4]);
        for i in [4i64, 63, 1 << 40, -1] {
            let what = format!("{name}: read (&Vec of len 4, capacity 64)[{i}]");
            out_of_bounds(log, what, read.call(&w, i), param);
            let what = format!("{name}: write (&mut Vec of len 4, capacity 64)[{i}]");
            out_of_bounds(log, what, write.call(&mut w, i, 99), param);
        }
        assert_eq!(w, [1, 2, 3, 4], "{name}");
        let what = format!("{name}: read p[1 << 40] of &Vec");
        out_of_bounds(log, what, far.call(&w), param);
        let what = format!("{name}: write p[4] of &mut Vec");
        out_of_bounds(log, what, past.call(&mut w), param);
        let mut empty: Vec<i32> = Vec::new();
        let what = format!("{name}: read (&empty Vec)[0]");
        out_of_bounds(log, what, read.call(&empty, 0i64), param);
        let what = format!("{name}: write (&mut empty Vec)[0]");
        out_of_bounds(log, what, write.call(&mut empty, 0i64, 1), param);

        // Arrays, with guard arrays allocated around the attacked one.
        let guard_before = Array::copy(&[GUARD; 1024]).unwrap();
        let mut a = Array::copy(&[10, 11, 12, 13]).unwrap();
        let guard_after = Array::copy(&[GUARD; 1024]).unwrap();
        assert_eq!(read.call(&a, 0i64).unwrap(), 10, "{name}");
        for i in bad {
            let what = format!("{name}: read (&Array of 4)[{i}]");
            out_of_bounds(log, what, read.call(&a, i), param);
            let what = format!("{name}: write (&mut Array of 4)[{i}]");
            out_of_bounds(log, what, write.call(&mut a, i, 99), param);
        }
        let what = format!("{name}: read p[1 << 40] of &Array");
        out_of_bounds(log, what, far.call(&a), param);
        let what = format!("{name}: read p[-1] of &Array");
        out_of_bounds(log, what, before.call(&a), param);
        let what = format!("{name}: write p[4] of &mut Array");
        out_of_bounds(log, what, past.call(&mut a), param);
        let what = format!("{name}: write p[1000] of &mut Array");
        out_of_bounds(log, what, far_past.call(&mut a), param);
        assert_eq!(a.as_slice(), &[10, 11, 12, 13][..], "{name}");
        // (The iterations before the one out of bounds may have written the lent memory: the
        // backends check the loop before it runs, direct mode at each access.)
        let what = format!("{name}: fill (&mut Array of 4)[0..5]");
        out_of_bounds(log, what, fill.call(&mut a, 0i64, 5i64), param);
        assert!(
            guard_before.as_slice().iter().all(|&x| x == GUARD),
            "{name}"
        );
        assert!(guard_after.as_slice().iter().all(|&x| x == GUARD), "{name}");
        // An Array of 8 lent as its first 4 elements.
        let mut b = Array::copy(&original).unwrap();
        for i in [4i64, 7, -1] {
            let what = format!("{name}: write (&mut Array of 8 as [..4])[{i}]");
            let r = write.call(&mut b.as_mut_slice()[..4], i, 99);
            out_of_bounds(log, what, r, param);
        }
        let what = format!("{name}: write p[4] of &mut Array of 8 as [..4]");
        out_of_bounds(log, what, past.call(&mut b.as_mut_slice()[..4]), param);
        assert_eq!(b.as_slice(), &original[..], "{name}");
    }
}

/// `out[i] = 99` for `i` in `lo..hi`, in thread 0: a counted loop in a kernel.
#[kernel]
fn k_fill(out: Ptr<i32>, lo: Val<i64>, hi: Val<i64>) {
    if global_id_x() == 0u32 {
        for i in lo..hi {
            out[i] = 99;
        }
    }
}

/// Launches [`k_fill`] on [`BLOCKS`] × [`THREADS`].
#[jit]
fn run_fill(out: Ptr<i32>, lo: Val<i64>, hi: Val<i64>) {
    launch(
        k_fill,
        Grid::new(BLOCKS),
        Block::new(THREADS),
        (out, lo, hi),
    );
}

/// A counted loop whose byte offsets wrap around the address space: `p[i]` for `i` from
/// `-(1 << 62)` to 0 over `i32`s starts at byte offset `-(1 << 64)`, which wraps to 0, so the
/// first and the last index of the loop both address `p[0]`, in bounds, while the indices in
/// between address all of memory (the fifth iteration writes `p[4]`). Checking only the first
/// and the last access (what `nacre_ir::transform::bounds::elide` hoists the checks of a
/// counted loop to) lets the loop write past the end; each access must be checked, or the
/// hoisted check must also rule out offsets that wrap. In host code and in a kernel.
#[test]
fn a_loop_whose_byte_offsets_wrap_traps() {
    in_child(
        "a_loop_whose_byte_offsets_wrap_traps",
        &[&HOST_CASES[..], &KERNEL_CASES[..]].concat(),
        "OutOfBounds",
        loop_wrap_body,
    );
}

fn loop_wrap_body(case: &str, log: &mut Log) {
    let ranges = [(-(1i64 << 62), 1i64), (i64::MIN, 1), (-(1i64 << 62), 4)];
    for (name, engine, param) in host_engines(case) {
        let fill = engine.compile(fill).unwrap();
        // Shown only if the child fails: the checked IR the attack runs.
        eprintln!(
            "{name}: the IR of `fill`:\n{}",
            fill.ir().unwrap_or("(none)")
        );
        let mut v = [10, 11, 12, 13, GUARD, GUARD, GUARD, GUARD];
        for (lo, hi) in ranges {
            let what = format!("{name}: fill (&mut v[..4])[{lo}..{hi}] (offsets wrap)");
            out_of_bounds(log, what, fill.call(&mut v[..4], lo, hi), param);
            assert_eq!(
                &v[4..],
                &[GUARD; 4],
                "{name}: fill {lo}..{hi} wrote past the end"
            );
        }
    }
    for (name, engine, _) in kernel_engines(case) {
        let fill = engine.compile(run_fill).unwrap();
        eprintln!(
            "{name}: the IR of `run_fill`:\n{}",
            fill.ir().unwrap_or("(none)")
        );
        let mut v = vec![10, 11, 12, 13, GUARD, GUARD, GUARD, GUARD];
        fill.call(&mut v[..4], 0i64, 4i64).unwrap();
        assert_eq!(v, [99, 99, 99, 99, GUARD, GUARD, GUARD, GUARD], "{name}");
        for (lo, hi) in ranges {
            let what = format!("{name}: kernel fill (&mut v[..4])[{lo}..{hi}] (offsets wrap)");
            out_of_bounds(log, what, fill.call(&mut v[..4], lo, hi), Some(0));
            assert_eq!(
                &v[4..],
                &[GUARD; 4],
                "{name}: fill {lo}..{hi} wrote past the end"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Kernels: reads and writes outside the lent memory, in grid and serial mode

#[test]
fn kernel_out_of_bounds_accesses_trap_in_grid_and_serial_mode() {
    in_child(
        "kernel_out_of_bounds_accesses_trap_in_grid_and_serial_mode",
        &KERNEL_CASES,
        "OutOfBounds",
        kernel_out_of_bounds_body,
    );
}

fn kernel_out_of_bounds_body(case: &str, log: &mut Log) {
    let n = N as i64;
    for (name, engine, mode) in kernel_engines(case) {
        let write = engine.compile(run_write_at).unwrap();
        let read = engine.compile(run_read_at).unwrap();
        let shared = engine.compile(run_shared_overrun).unwrap();
        let stride = engine.compile(run_grid_stride_write).unwrap();
        // In serial mode only thread 0 runs: offsets that take thread 0 out of bounds.
        let mut offsets = vec![n, -1, 1 << 40, -(1 << 40), i64::MAX];
        if mode == CpuMode::Grid {
            offsets.push(1); // only the last thread of the last block is out of bounds
        }

        // Writes: a Vec of 2N lent as its first N, and a whole Array of N.
        let mut v = vec![KGUARD; 2 * N];
        write.call(&mut v[..N], 0i64).unwrap();
        let threads = if mode == CpuMode::Grid { N } else { 1 };
        assert!(
            (0..threads).all(|i| v[i] == i as u32),
            "{name}: in-bounds writes"
        );
        assert!(v[N..].iter().all(|&x| x == KGUARD), "{name}");
        for &off in &offsets {
            let what = format!("{name}: write (&mut v[..N])[gid + {off}]");
            out_of_bounds(log, what, write.call(&mut v[..N], off), Some(0));
            assert!(
                v[N..].iter().all(|&x| x == KGUARD),
                "{name}: offset {off} wrote past the lent memory"
            );
        }
        let mut a = Array::<u32>::alloc_unified(N).unwrap();
        let after = Array::copy(&vec![KGUARD; N]).unwrap();
        for &off in &offsets {
            let what = format!("{name}: write (&mut Array of N)[gid + {off}]");
            out_of_bounds(log, what, write.call(&mut a, off), Some(0));
        }
        assert!(after.as_slice().iter().all(|&x| x == KGUARD), "{name}");
        let mut b = Array::copy(&vec![KGUARD; 2 * N]).unwrap();
        let what = format!("{name}: write (&mut Array of 2N as [..N])[gid + N]");
        let r = write.call(&mut b.as_mut_slice()[..N], n);
        out_of_bounds(log, what, r, Some(0));
        assert!(b.as_slice().iter().all(|&x| x == KGUARD), "{name}");

        // Reads: the memory past the lent part holds markers no read may return.
        let mut src: Vec<u32> = (0..N as u32).collect();
        src.extend(std::iter::repeat_n(KGUARD, N));
        let mut dst = vec![0u32; N];
        read.call(&src[..N], &mut dst, 0i64).unwrap();
        assert!(
            (0..threads).all(|i| dst[i] == i as u32),
            "{name}: in-bounds reads"
        );
        for &off in &offsets {
            dst.fill(0);
            let what = format!("{name}: read (&src[..N])[gid + {off}]");
            out_of_bounds(log, what, read.call(&src[..N], &mut dst, off), Some(0));
            assert!(
                dst.iter().all(|&x| x != KGUARD),
                "{name}: offset {off} read memory past the lent part"
            );
        }
        let src_array = Array::copy(&src[..N]).unwrap();
        let what = format!("{name}: read (&Array of N)[gid + 1 << 40]");
        out_of_bounds(
            log,
            what,
            read.call(&src_array, &mut dst, 1i64 << 40),
            Some(0),
        );

        // A shared array of 128 written at [tid + 128].
        let mut out = vec![0u32; N];
        shared.call(&mut out, 0u32).unwrap();
        let what = format!("{name}: write shared[tid + 128] of a shared array of 128");
        out_of_bounds(log, what, shared.call(&mut out, 128u32), None);
        if mode == CpuMode::Grid {
            let what = format!("{name}: write shared[tid + 1] of a shared array of 128");
            out_of_bounds(log, what, shared.call(&mut out, 1u32), None);
        }

        // A guard `i < n` with `n` past the end; with `n` in bounds but more threads.
        let guarded = engine.compile(run_guarded_write).unwrap();
        let mut g = vec![KGUARD; 2 * N];
        guarded.call(&mut g[..N], N as u32 - 1, BLOCKS).unwrap();
        let last = if mode == CpuMode::Grid { N - 1 } else { 1 };
        assert!(
            (0..last).all(|i| g[i] == i as u32),
            "{name}: guarded in bounds"
        );
        assert!(g[N - 1..].iter().all(|&x| x == KGUARD), "{name}: guarded");
        for (len, blocks) in [(N as u32 + 1, BLOCKS + 1), (u32::MAX, BLOCKS + 1)] {
            let what = format!("{name}: guarded write of {len} into N");
            // Also in serial mode, where thread 0 alone runs: the launch asked for the rest.
            out_of_bounds(log, what, guarded.call(&mut g[..N], len, blocks), Some(0));
            assert!(
                g[N..].iter().all(|&x| x == KGUARD),
                "{name}: guarded past the end"
            );
        }
        // More threads than elements, all of them guarded off: no access, no trap.
        guarded.call(&mut g[..N], N as u32, BLOCKS + 1).unwrap();
        assert!(g[N..].iter().all(|&x| x == KGUARD), "{name}: guarded");

        // A grid-stride loop past the end, before and after its C tier is compiled.
        let mut g = vec![KGUARD; 2 * N];
        stride.call(&mut g[..N], N as u32).unwrap();
        assert!(
            (0..N).all(|i| g[i] == i as u32),
            "{name}: grid-stride in bounds"
        );
        for round in ["first", "after the C tier"] {
            for len in [N as u32 + 1, 2 * N as u32, u32::MAX] {
                let what = format!("{name}: grid-stride write of {len} into N ({round})");
                out_of_bounds(log, what, stride.call(&mut g[..N], len), Some(0));
                assert!(
                    g[N..].iter().all(|&x| x == KGUARD),
                    "{name}: the grid-stride loop wrote past the end ({round})"
                );
            }
            nacre::gpu::wait_for_c_tier(Duration::from_secs(60));
        }
    }
}

/// An empty array (`Array::alloc_unified(0)`, `Vec::new()`) lent to a kernel that writes:
/// every access is out of bounds, and the heap stays intact.
#[test]
fn kernel_writing_an_empty_array_traps() {
    in_child(
        "kernel_writing_an_empty_array_traps",
        &KERNEL_CASES,
        "OutOfBounds",
        kernel_empty_array_body,
    );
}

fn kernel_empty_array_body(case: &str, log: &mut Log) {
    for (name, engine, _) in kernel_engines(case) {
        let write = engine.compile(run_write_at).unwrap();
        let stride = engine.compile(run_grid_stride_write).unwrap();
        for round in 0..3 {
            let mut empty = Array::<u32>::alloc_unified(0).unwrap();
            assert!(empty.is_empty());
            let what = format!("{name}: write into Array::alloc_unified(0) (round {round})");
            out_of_bounds(log, what, write.call(&mut empty, 0i64), Some(0));
            let what = format!("{name}: grid-stride write into Array::alloc_unified(0)");
            out_of_bounds(log, what, stride.call(&mut empty, N as u32), Some(0));
            let mut vec: Vec<u32> = Vec::new();
            let what = format!("{name}: write into Vec::new()");
            out_of_bounds(log, what, write.call(&mut vec, 0i64), Some(0));
            drop(empty);
            // The heap is intact: allocate, fill and check much of it, and run a kernel on
            // fresh memory.
            let blocks: Vec<Vec<u64>> = (0..256).map(|k| vec![k as u64; 1 + k * 17]).collect();
            for (k, b) in blocks.iter().enumerate() {
                assert!(b.iter().all(|&x| x == k as u64), "{name}: heap corrupted");
            }
            let mut out = Array::<u32>::alloc_unified(N).unwrap();
            write.call(&mut out, 0i64).unwrap();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 4. Interior and one-past-the-end pointers

#[test]
fn a_subslice_lends_exactly_its_elements() {
    in_child(
        "a_subslice_lends_exactly_its_elements",
        &[&HOST_CASES[..], &KERNEL_CASES[..]].concat(),
        "OutOfBounds",
        subslice_body,
    );
}

fn subslice_body(case: &str, log: &mut Log) {
    for (name, engine, param) in host_engines(case) {
        let read = engine.compile(read_at).unwrap();
        let write = engine.compile(write_at).unwrap();
        let offset = engine.compile(read_via_offset).unwrap();
        let mut v = vec![10, 11, 12, 13, 14, 15, 16, 17];
        let original = v.clone();
        assert_eq!(read.call(&v[2..4], 0i64).unwrap(), 12, "{name}");
        assert_eq!(read.call(&v[2..4], 1i64).unwrap(), 13, "{name}");
        for i in [2i64, 3, -1, -2] {
            let what = format!("{name}: read (&v[2..4])[{i}] (not v[{}])", 2 + i);
            out_of_bounds(log, what, read.call(&v[2..4], i), param);
            let what = format!("{name}: write (&mut v[2..4])[{i}]");
            out_of_bounds(log, what, write.call(&mut v[2..4], i, 99), param);
        }
        assert_eq!(v, original, "{name}");
        // Empty slices at the end (one past the end) and in the middle.
        for (what, s) in [("&v[8..]", &v[8..]), ("&v[4..4]", &v[4..4])] {
            let what = format!("{name}: read ({what})[0]");
            out_of_bounds(log, what, read.call(s, 0i64), param);
        }
        let what = format!("{name}: write (&mut v[8..])[0]");
        out_of_bounds(log, what, write.call(&mut v[8..], 0i64, 99), param);
        // Interior pointers made in traced code keep the memory of their source.
        assert_eq!(offset.call(&v[..4], 3i64, 0i64).unwrap(), 13, "{name}");
        assert_eq!(offset.call(&v[..4], 5i64, -2i64).unwrap(), 13, "{name}");
        for (k, i) in [(3i64, 1i64), (4, 0), (-1, 0), (1 << 40, 0), (2, 2)] {
            let what = format!("{name}: read (&v[..4]).offset({k})[{i}]");
            out_of_bounds(log, what, offset.call(&v[..4], k, i), param);
        }
    }
    for (name, engine, _) in kernel_engines(case) {
        let read = engine.compile(run_read_index).unwrap();
        let v: Vec<u32> = vec![10, 11, 12, 13, 14, 15, 16, 17];
        let mut dst = vec![0u32; 1];
        read.call(&v[2..4], &mut dst, 1i64).unwrap();
        assert_eq!(dst, [13], "{name}");
        for i in [2i64, -1, 6] {
            dst[0] = 0;
            let what = format!("{name}: kernel read (&v[2..4])[{i}]");
            out_of_bounds(log, what, read.call(&v[2..4], &mut dst, i), Some(0));
            assert_eq!(dst, [0], "{name}: the kernel read v[{}]", 2 + i);
        }
        let what = format!("{name}: kernel read (&v[8..])[0]");
        out_of_bounds(log, what, read.call(&v[8..], &mut dst, 0i64), Some(0));
        let what = format!("{name}: kernel write into an empty dst (&mut dst[1..])");
        out_of_bounds(log, what, read.call(&v[..], &mut dst[1..], 0i64), Some(1));
    }
}

// ---------------------------------------------------------------------------------------------
// 5. A shared borrow for a parameter the function writes through

/// Writes `p[0]` through a callee.
#[jit]
fn write_first(p: Ptr<i32>) {
    p[0i64] = 1;
}

/// Writes through `p` by calling [`write_first`].
#[jit]
fn write_through_call(p: Ptr<i32>) {
    call(write_first, (p,));
}

/// Writes through `p` or `q`, whichever `c` picks.
#[jit]
fn write_either(p: Ptr<i32>, q: Ptr<i32>, c: Val<i32>) {
    let r = if c > 0 { p } else { q };
    r[0i64] = 1;
}

/// Writes `p[0]` only when `n > 100`.
#[jit]
fn write_rarely(p: Ptr<i32>, n: Val<i32>) -> Val<i32> {
    if n > 100 {
        p[0i64] = n;
    }
    p[1i64]
}

#[test]
fn a_shared_borrow_of_a_written_parameter_is_refused() {
    for kind in BackendKind::ALL {
        let name = kind.name();
        let engine = engine(kind, CpuMode::Grid);
        let v = vec![7, 8, 9, 10];
        let a = Array::copy(&v).unwrap();
        let refused = |what: &str, r: Result<(), Error>, function: &str, param: usize| match r {
            Err(Error::ReadOnlyArgument {
                function: f,
                param: p,
            }) if p == param && f.contains(function) => {}
            other => panic!(
                "{name}: {what}: expected ReadOnlyArgument {{ function: {function}, param: \
                 {param} }}, got {other:?}"
            ),
        };
        let write = engine.compile(write_at).unwrap();
        refused("store", write.call(&v, 0i64, 1), "write_at", 0);
        refused("store", write.call(&v[..], 0i64, 1), "write_at", 0);
        refused("store", write.call(&a, 0i64, 1), "write_at", 0);
        let f = engine.compile(write_through_call).unwrap();
        refused("store in a callee", f.call(&v), "write_through_call", 0);
        let f = engine.compile(write_either).unwrap();
        let mut q = vec![0; 4];
        refused(
            "store through a select",
            f.call(&v, &mut q, 0),
            "write_either",
            0,
        );
        refused(
            "store through a select",
            f.call(&mut q, &v, 1),
            "write_either",
            1,
        );
        let f = engine.compile(write_rarely).unwrap();
        let r = f.call(&v, 0).map(|_| ());
        refused("store on a path not taken", r, "write_rarely", 0);
        let f = engine.compile(run_write_at).unwrap();
        let k = vec![0u32; N];
        refused(
            "store in a launched kernel",
            f.call(&k, 0i64),
            "run_write_at",
            0,
        );
        assert_eq!(v, [7, 8, 9, 10], "{name}");
        assert_eq!(a.as_slice(), &[7, 8, 9, 10], "{name}");
        assert!(k.iter().all(|&x| x == 0), "{name}");
        // Read-only parameters take shared borrows; written ones take `&mut`.
        let read = engine.compile(read_at).unwrap();
        assert_eq!(read.call(&v, 2i64).unwrap(), 9, "{name}");
        assert_eq!(read.call(&a, 3i64).unwrap(), 10, "{name}");
        let mut w = v.clone();
        write.call(&mut w, 0i64, 1).unwrap();
        assert_eq!(w, [1, 8, 9, 10], "{name}");
    }
    // Direct mode has no IR to analyse: it checks each write against the borrow, and a write
    // to memory lent shared is an out-of-bounds trap.
    let engine = Engine::new(Options {
        direct: true,
        ..Options::default()
    })
    .unwrap();
    let v = vec![7, 8, 9, 10];
    let write = engine.compile(write_at).unwrap();
    assert!(
        matches!(
            write.call(&v, 0i64, 1),
            Err(Error::Trap(Trap::OutOfBounds { .. }))
        ),
        "direct mode"
    );
    assert_eq!(v, [7, 8, 9, 10], "direct mode");
}

// ---------------------------------------------------------------------------------------------
// 6. Traced values used in a trace they do not belong to

thread_local! {
    static KEPT_VAL: Cell<Option<Val<i32>>> = const { Cell::new(None) };
    static KEPT_PTR: Cell<Option<Ptr<i32>>> = const { Cell::new(None) };
}

/// Keeps its parameters after its trace ends.
#[jit]
fn keep(p: Ptr<i32>, x: Val<i32>) -> Val<i32> {
    KEPT_VAL.with(|k| k.set(Some(x)));
    KEPT_PTR.with(|k| k.set(Some(p)));
    x + 1
}

/// Adds the value `keep` kept.
#[jit]
fn use_kept_val(x: Val<i32>) -> Val<i32> {
    let k = KEPT_VAL
        .with(|k| k.get())
        .expect("`keep` was compiled first");
    if x > 0 {
        x + k
    } else {
        x
    }
}

/// Loads through the pointer `keep` kept.
#[jit]
fn use_kept_ptr(i: Val<i64>) -> Val<i32> {
    let p = KEPT_PTR
        .with(|k| k.get())
        .expect("`keep` was compiled first");
    p[i]
}

/// `out[gid] = k`.
#[kernel]
fn k_store_value(out: Ptr<u32>, k: Val<i32>) {
    out[global_id_x()] = k.cast::<u32>();
}

/// Launches [`k_store_value`] with the value `keep` kept as its argument.
#[jit]
fn launch_kept_val(out: Ptr<u32>) {
    let k = KEPT_VAL
        .with(|k| k.get())
        .expect("`keep` was compiled first");
    launch(k_store_value, Grid::new(1u32), Block::new(32u32), (out, k));
}

#[test]
fn a_foreign_value_in_a_trace_is_a_tracing_error() {
    #[track_caller]
    fn tracing_error<T>(what: &str, r: Result<T, Error>) {
        let Err(e) = r else {
            panic!("{what}: compiled, expected a tracing error")
        };
        let message = e.to_string();
        assert!(
            matches!(e, Error::Trace(_)),
            "{what}: expected Error::Trace, got: {message}"
        );
        assert!(message.contains("trace"), "{what}: {message}");
        assert!(!message.contains("internal error"), "{what}: {message}");
    }
    for kind in BackendKind::ALL {
        let name = kind.name();
        let engine = engine(kind, CpuMode::Grid);
        engine.compile(keep).expect("`keep` compiles");
        tracing_error(
            &format!("{name}: a Val of another trace"),
            engine.compile(use_kept_val),
        );
        tracing_error(
            &format!("{name}: a Ptr of another trace"),
            engine.compile(use_kept_ptr),
        );
        tracing_error(
            &format!("{name}: a Val of another trace as a launch argument"),
            engine.compile(launch_kept_val),
        );
        let k = Val::new(5i32);
        tracing_error(
            &format!("{name}: a Val made outside any trace, captured"),
            engine.compile(move |x: Val<i32>| x * k),
        );
        // The engine and the thread still trace and run other functions.
        let f = engine.compile(read_at).unwrap();
        assert_eq!(f.call(&[1, 2, 3][..], 2i64).unwrap(), 3, "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// 7. Launches beyond the limits

/// `out[gid] = 1`.
#[kernel]
fn k_mark(out: Ptr<u32>) {
    out[global_id_x()] = 1u32;
}

/// Launches [`k_mark`] on a grid and block given at run time.
#[jit]
fn run_mark(out: Ptr<u32>, gx: Val<u32>, gy: Val<u32>, bx: Val<u32>) {
    launch(k_mark, Grid::new3(gx, gy, 1u32), Block::new(bx), (out,));
}

#[test]
fn a_huge_grid_is_an_invalid_launch_at_once() {
    in_child(
        "a_huge_grid_is_an_invalid_launch_at_once",
        &KERNEL_CASES,
        "InvalidLaunch",
        huge_grid_body,
    );
}

fn huge_grid_body(case: &str, log: &mut Log) {
    let max = u32::MAX;
    for (name, engine, mode) in kernel_engines(case) {
        let f = engine.compile(run_mark).unwrap();
        let mut out = vec![0u32; 64];
        f.call(&mut out, 1u32, 1u32, 64u32).unwrap();
        let threads = if mode == CpuMode::Grid { 64 } else { 1 };
        assert!(
            out[..threads].iter().all(|&x| x == 1),
            "{name}: a valid launch"
        );
        out.fill(0);
        for (gx, gy, bx) in [
            (max, max, 1),
            (max, max, 1024),
            (max, 1, 1),
            (1, 65536, 1),
            (1, 1, 1025),
            (1, 1, max),
            (0, 1, 1),
            (1, 0, 1),
            (1, 1, 0),
        ] {
            let start = Instant::now();
            let r = f.call(&mut out, gx, gy, bx);
            let took = start.elapsed();
            let what = format!("{name}: grid ({gx}, {gy}), block {bx}");
            assert!(took < Duration::from_secs(5), "{what} took {took:?}");
            traps(log, what, r, Trap::InvalidLaunch);
            assert!(out.iter().all(|&x| x == 0), "{name}: an invalid launch ran");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 8. Deep recursion

/// The recursion depth, one call per unit of `n`.
#[jit]
fn depth(n: Val<u64>) -> Val<u64> {
    if n == 0u64 {
        return Val::new(0u64);
    }
    call(depth, (n - 1,)) + 1
}

#[test]
fn deep_recursion_is_a_stack_overflow_trap() {
    in_child(
        "deep_recursion_is_a_stack_overflow_trap",
        &BACKEND_CASES,
        "StackOverflow",
        deep_recursion_body,
    );
}

fn deep_recursion_body(case: &str, log: &mut Log) {
    for kind in backends(case) {
        let name = kind.name();
        let f = engine(kind, CpuMode::Grid).compile(depth).unwrap();
        assert_eq!(f.call(1000u64).unwrap(), 1000, "{name}");
        let what = format!("{name}: depth(10_000_000)");
        traps(log, what, f.call(10_000_000u64), Trap::StackOverflow);
        assert_eq!(f.call(10u64).unwrap(), 10, "{name}: after the trap");
    }
}

// ---------------------------------------------------------------------------------------------
// 9. What held up must stay

/// `100 / p[i]`: a division in a function with a pointer parameter (the checked call path;
/// scalar-only division is tested in `engine.rs`).
#[jit]
fn divide_by_elem(p: Ptr<i32>, i: Val<i64>) -> Val<i32> {
    100 / p[i]
}

/// `dst[gid] = 1000 / src[gid]` and `dst[gid] += 1000 % src[gid]`.
#[kernel]
fn k_divide(src: Ptr<i32>, dst: Ptr<i32>) {
    let i = global_id_x();
    dst[i] = 1000 / src[i];
    dst[i] += 1000 % src[i];
}

/// Launches [`k_divide`] on [`BLOCKS`] × [`THREADS`].
#[jit]
fn run_divide(src: Ptr<i32>, dst: Ptr<i32>) {
    launch(k_divide, Grid::new(BLOCKS), Block::new(THREADS), (src, dst));
}

#[test]
fn division_by_zero_traps_in_checked_host_code_and_in_kernels() {
    for kind in BackendKind::ALL {
        let f = engine(kind, CpuMode::Grid).compile(divide_by_elem).unwrap();
        let v = [5, 0, 7];
        assert_eq!(f.call(&v[..], 0i64).unwrap(), 20);
        assert!(
            matches!(f.call(&v[..], 1i64), Err(Error::Trap(Trap::DivisionByZero))),
            "{}",
            kind.name()
        );
    }
    for (name, engine, mode) in all_kernel_engines() {
        let f = engine.compile(run_divide).unwrap();
        let mut src: Vec<i32> = (1..=N as i32).collect();
        let mut dst = vec![0; N];
        f.call(&src, &mut dst).unwrap();
        let threads = if mode == CpuMode::Grid { N } else { 1 };
        for i in 0..threads {
            assert_eq!(dst[i], 1000 / src[i] + 1000 % src[i], "{name} [{i}]");
        }
        // Thread 0 divides by zero, so serial mode meets it too.
        src[0] = 0;
        let r = f.call(&src, &mut dst);
        assert!(
            matches!(r, Err(Error::Trap(Trap::DivisionByZero))),
            "{name}: {r:?}"
        );
    }
}

#[test]
fn huge_allocations_on_the_engines_device_are_memory_errors() {
    // `Array::alloc_unified` itself is tested in nacre-runtime; this goes through the engine's
    // device and the facade's error.
    let engine = engine(BackendKind::Cranelift, CpuMode::Grid);
    let err = Array::<f64>::alloc_on(engine.device(), usize::MAX / 2).unwrap_err();
    assert!(matches!(err, MemoryError::TooLarge { .. }), "{err}");
    let err = Array::<u8>::alloc_on(engine.device(), 1 << 60).unwrap_err();
    assert!(matches!(err, MemoryError::OutOfMemory { .. }), "{err}");
    assert!(matches!(Error::from(err), Error::Memory(_)));
}

thread_local! {
    static PANIC_NOW: Cell<bool> = const { Cell::new(false) };
}

/// Panics while its trace is recorded (when [`PANIC_NOW`] is set), in host code.
fn boom(x: i32) -> i32 {
    if PANIC_NOW.with(|p| p.get()) {
        panic!("boom while tracing");
    }
    x
}

/// A host function whose tracing panics.
#[jit]
fn panics_in_host(x: Val<i32>) -> Val<i32> {
    x + boom(1)
}

/// A kernel whose tracing panics (inside the launch of [`panics_in_launch`]).
#[kernel]
fn k_panics(out: Ptr<u32>) {
    out[global_id_x()] = boom(2) as u32;
}

/// Launches [`k_panics`].
#[jit]
fn panics_in_launch(out: Ptr<u32>) {
    launch(k_panics, Grid::new(1u32), Block::new(32u32), (out,));
}

#[test]
fn a_panic_while_tracing_unwinds_and_leaves_the_thread_usable() {
    in_child(
        "a_panic_while_tracing_unwinds_and_leaves_the_thread_usable",
        &BACKEND_CASES,
        "boom while tracing",
        panic_while_tracing_body,
    );
}

fn panic_while_tracing_body(case: &str, log: &mut Log) {
    std::panic::set_hook(Box::new(|_| {}));
    for kind in backends(case) {
        let name = kind.name();
        let engine = engine(kind, CpuMode::Grid);
        PANIC_NOW.with(|p| p.set(true));
        for (what, r) in [
            (
                "host",
                catch_unwind(AssertUnwindSafe(|| {
                    engine.compile(panics_in_host).map(|_| ())
                })),
            ),
            (
                "kernel",
                catch_unwind(AssertUnwindSafe(|| {
                    engine.compile(panics_in_launch).map(|_| ())
                })),
            ),
        ] {
            // Either the engine turns the panic into an error or the panic unwinds to the
            // caller with its message: never an abort, never a compiled function.
            let outcome = match r {
                Ok(Ok(())) => panic!("{name} {what}: compiled although tracing panicked"),
                Ok(Err(e)) => format!("error: {e}"),
                Err(payload) => {
                    let message = payload
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| payload.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    format!("panic: {message}")
                }
            };
            assert!(
                outcome.contains("boom while tracing"),
                "{name} {what}: {outcome}"
            );
            log.push(format!("{name} {what}: {outcome}"));
        }
        PANIC_NOW.with(|p| p.set(false));
        // The same thread traces again, the same functions and others.
        assert_eq!(engine.compile(panics_in_host).unwrap().call(1).unwrap(), 2);
        let mut out = vec![0u32; 32];
        engine
            .compile(panics_in_launch)
            .unwrap()
            .call(&mut out)
            .unwrap();
        assert!(out.iter().all(|&x| x == 2), "{name}");
        assert_eq!(engine.compile(depth).unwrap().call(5u64).unwrap(), 5);
    }
    let _ = std::panic::take_hook();
}
