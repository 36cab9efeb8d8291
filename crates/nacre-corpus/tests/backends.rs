//! Every corpus function on every CPU backend: edge values, fixed arrays, and a differential
//! property test (all backends agree with plain Rust on random inputs).

use nacre::ir::Scalar;
use nacre::{BackendKind, Engine, Options};
use nacre_corpus::{all, edge_values, Case, CaseKind};
use proptest::prelude::*;
use std::sync::OnceLock;

fn engines() -> &'static [(BackendKind, Engine)] {
    static ENGINES: OnceLock<Vec<(BackendKind, Engine)>> = OnceLock::new();
    ENGINES.get_or_init(|| {
        BackendKind::ALL
            .iter()
            .map(|k| (*k, Engine::new(Options::with_backend(*k)).expect("engine")))
            .collect()
    })
}

fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(all)
}

fn arrays() -> Vec<Vec<i32>> {
    let mut big: Vec<i32> = (0..1000)
        .map(|i: i32| i.wrapping_mul(7919) ^ (i << 13))
        .collect();
    big[17] = i32::MIN;
    big[500] = i32::MAX;
    vec![vec![], vec![5], vec![-1, 2, -3, 4], big]
}

#[test]
fn corpus_is_large_and_names_are_unique() {
    let names: std::collections::HashSet<_> = cases().iter().map(|c| c.name).collect();
    assert_eq!(names.len(), cases().len(), "duplicate case names");
    assert!(
        cases().len() >= 80,
        "the corpus has {} cases",
        cases().len()
    );
}

fn run_edges(kind: BackendKind) {
    let engine = &engines()
        .iter()
        .find(|(k, _)| *k == kind)
        .expect("engine")
        .1;
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in cases() {
        let data_sets = if matches!(case.kind, CaseKind::Array { .. }) {
            arrays()
        } else {
            vec![vec![]]
        };
        for data in data_sets {
            match case.check(engine, &case.edge_inputs(400), &data) {
                Ok(n) => checked += n,
                Err(e) => failures.push(e),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures on {}:\n{}",
        failures.len(),
        kind.name(),
        failures.join("\n")
    );
    assert!(checked > 1000, "only {checked} checks ran");
}

#[test]
fn corpus_on_interpreter() {
    run_edges(BackendKind::Interp);
}

#[test]
fn corpus_on_cranelift() {
    run_edges(BackendKind::Cranelift);
}

#[test]
fn corpus_on_c() {
    run_edges(BackendKind::C);
}

/// Random bits made into a valid value of the type, or an edge value when `edge` says so.
fn shape(s: Scalar, bits: u64, edge: u8) -> u64 {
    let edges = edge_values(s);
    if edge.is_multiple_of(4) {
        return edges[(bits as usize) % edges.len()];
    }
    nacre::ir::semantics::normalize(s.into(), bits)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn backends_agree_with_rust_on_random_scalars(raw in prop::collection::vec(any::<u64>(), 4), edges in prop::collection::vec(any::<u8>(), 4)) {
        for case in cases() {
            let params = case.params();
            if params.is_empty() && matches!(case.kind, CaseKind::Array { .. }) {
                continue;
            }
            let args: Vec<u64> = params.iter().enumerate().map(|(i, p)| shape(*p, raw[i % 4], edges[i % 4])).collect();
            for (_, engine) in engines() {
                if let Err(e) = case.check(engine, std::slice::from_ref(&args), &[]) {
                    return Err(TestCaseError::fail(e));
                }
            }
        }
    }

    #[test]
    fn backends_agree_with_rust_on_random_arrays(data in prop::collection::vec(any::<i32>(), 0..300)) {
        for case in cases().iter().filter(|c| matches!(c.kind, CaseKind::Array { .. })) {
            for (_, engine) in engines() {
                if let Err(e) = case.check(engine, &[], &data) {
                    return Err(TestCaseError::fail(e));
                }
            }
        }
    }
}
