//! The CPU benchmark suite under criterion: the same workloads and names as
//! `nacre bench cpu` (both drive `nacre_corpus::bench`), with criterion's statistics.
//!
//! `cargo bench --bench cpu` runs all of it (several minutes); pass a name filter to run a
//! group, e.g. `cargo bench --bench cpu -- exec_` or `-- comp_cranelift_`. Measurement time is
//! shortened to one second per benchmark (criterion's default is five).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use nacre::{BackendKind, Options};
use nacre_backend::Backend;
use nacre_corpus::bench::{self as suite, Batch, Bencher};
use std::time::Duration;

/// Drives the shared suites with criterion.
struct Criterio<'a> {
    c: &'a mut Criterion,
}

impl Bencher for Criterio<'_> {
    fn wants(&self, _name: &str) -> bool {
        // Criterion applies the command line's filter itself.
        true
    }

    fn iter<O, R: FnMut() -> O>(&mut self, name: &str, mut routine: R) {
        self.c.bench_function(name, |b| b.iter(&mut routine));
    }

    fn iter_batched<I, O, S: FnMut() -> I, R: FnMut(I) -> O>(
        &mut self,
        name: &str,
        batch: Batch,
        mut setup: S,
        mut routine: R,
    ) {
        let size = match batch {
            Batch::Small => BatchSize::SmallInput,
            Batch::PerIteration => BatchSize::PerIteration,
        };
        self.c
            .bench_function(name, |b| b.iter_batched(&mut setup, &mut routine, size));
    }
}

fn backend(kind: BackendKind) -> std::sync::Arc<dyn Backend> {
    nacre::make_backend(&Options::with_backend(kind))
        .unwrap_or_else(|e| panic!("creating the {} backend: {e}", kind.name()))
}

fn check(what: &str, result: Result<(), suite::BenchError>) {
    if let Err(e) = result {
        panic!("{what}: {e}");
    }
}

/// `trace_F` and `ir_F`.
fn stages(c: &mut Criterion) {
    let mut b = Criterio { c };
    check("trace", suite::trace_suite(&mut b));
    check("ir", suite::ir_suite(&mut b));
}

/// `comp_B_F` for the interpreter and Cranelift (the C backend, tens of milliseconds per
/// compile, runs in [`c_backend`]).
fn compile(c: &mut Criterion) {
    let mut b = Criterio { c };
    for kind in [BackendKind::Interp, BackendKind::Cranelift] {
        let be = backend(kind);
        check(
            kind.name(),
            suite::comp_suite(&mut b, kind.name(), |m, l| Ok(be.compile(m, l)?)),
        );
    }
}

/// `e2e_B_F` for the interpreter and Cranelift.
fn end_to_end(c: &mut Criterion) {
    let mut b = Criterio { c };
    for kind in [BackendKind::Interp, BackendKind::Cranelift] {
        let be = backend(kind);
        check(
            kind.name(),
            suite::e2e_suite(&mut b, kind.name(), |m, l| Ok(be.compile(m, l)?)),
        );
    }
}

/// `comp_c_F` and `e2e_c_F`.
fn c_backend(c: &mut Criterion) {
    let mut b = Criterio { c };
    let be = backend(BackendKind::C);
    check(
        "comp_c",
        suite::comp_suite(&mut b, "c", |m, l| Ok(be.compile(m, l)?)),
    );
    check(
        "e2e_c",
        suite::e2e_suite(&mut b, "c", |m, l| Ok(be.compile(m, l)?)),
    );
}

/// `exec_B_F`, `exec_rust_F` and `tiered_first_call_F`.
fn execution(c: &mut Criterion) {
    let mut b = Criterio { c };
    check("exec", suite::exec_suite(&mut b));
    check("tiered", suite::tiered_suite(&mut b));
}

fn fast() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
}

fn slow() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .sample_size(10)
}

criterion_group! {
    name = fast_group;
    config = fast();
    targets = stages, compile, end_to_end, execution
}
criterion_group! {
    name = slow_group;
    config = slow();
    targets = c_backend
}
criterion_main!(fast_group, slow_group);
