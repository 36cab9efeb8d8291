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
    nacre::ir::semantics::normalize(s.into(), u128::from(bits)) as u64
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
    fn warp_operations_agree_with_the_reference_on_random_data(
        data in prop::collection::vec((any::<i32>(), -1e6f32..1e6f32), 1..200),
    ) {
        let (ints, floats): (Vec<i32>, Vec<f32>) = data.into_iter().unzip();
        for (_, engine) in engines() {
            if let Err(e) = nacre_corpus::kernels::warp::check_warp_exchange_on(engine, &ints, &floats) {
                return Err(TestCaseError::fail(e));
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

/// Inputs of a math case: its edge values, then 3000 floats of every magnitude from 1e-6 to
/// 1e3 (both signs), the second argument of two-argument functions running along the list.
fn math_inputs(params: &[Scalar]) -> Vec<Vec<u64>> {
    let s = params[0];
    let mut xs = edge_values(s);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..3000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let mag = 10f64.powf((state % 10_000) as f64 / 10_000.0 * 9.0 - 6.0);
        let x = if state & (1 << 40) != 0 { -mag } else { mag };
        xs.push(if s == Scalar::F32 {
            u64::from((x as f32).to_bits())
        } else {
            x.to_bits()
        });
    }
    (0..xs.len())
        .map(|i| {
            (0..params.len())
                .map(|k| xs[(i * (7 * k + 1) + 3 * k) % xs.len()])
                .collect()
        })
        .collect()
}

/// The largest distance in ulps from the reference of every math-library case on every CPU
/// backend, over edge and random inputs: each within the corpus's `LIBRARY_ULPS`. With
/// `NACRE_ACCURACY_OUT` set, the table is written to that file.
#[test]
fn math_functions_are_within_their_ulps_on_every_cpu_backend() {
    let bound = nacre_corpus::cases::math::LIBRARY_ULPS;
    let mut table = String::from("| function |");
    for (kind, _) in engines() {
        table.push_str(&format!(" {kind:?} |"));
    }
    table.push_str("\n|---|");
    table.push_str(&"---|".repeat(engines().len()));
    table.push('\n');
    let mut failures = Vec::new();
    // The one-function cases of the math module (`math_exp_f32`, ...).
    let library: Vec<&str> = nacre_corpus::cases::math::cases()
        .iter()
        .map(|c| c.name)
        .filter(|n| n.starts_with("math_"))
        .collect();
    for case in cases().iter().filter(|c| library.contains(&c.name)) {
        let CaseKind::Scalar {
            params,
            compile,
            reference,
            ..
        } = &case.kind
        else {
            continue;
        };
        let inputs = math_inputs(params);
        table.push_str(&format!("| {} |", &case.name["math_".len()..]));
        for (kind, engine) in engines() {
            let f = compile(engine).expect("math cases compile");
            let mut worst = 0;
            for args in &inputs {
                let got = f(args).expect("math functions do not trap");
                let want = reference(args).expect("math functions do not trap");
                worst = worst.max(nacre::ir::semantics::ulps(params[0], got, want));
            }
            if worst > bound {
                failures.push(format!("{} on {kind:?}: {worst} ulps", case.name));
            }
            table.push_str(&format!(" {worst} |"));
        }
        table.push('\n');
    }
    if let Ok(path) = std::env::var("NACRE_ACCURACY_OUT") {
        let text = format!("Max ulps from libm on the CPU backends\n\n{table}");
        std::fs::write(&path, text).expect("write the accuracy table");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
