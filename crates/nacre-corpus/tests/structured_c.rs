//! The structured printer (control flow without `goto`, as the Metal backend prints it) on the
//! host: corpus functions with branches, loops, labelled breaks, early returns and calls are
//! compiled as structured C and must compute what the interpreter computes on every edge input,
//! unchecked and bounds-checked (as `Engine::compile` makes them).

use crate::emulation::Form;
use nacre::ir::{Module, Scalar};
use nacre::{make_backend, trace_module, BackendKind, Linkage, Options};
use nacre_backend::Executable;
use nacre_c::{emit_c_structured, CBackend, COptions};
use nacre_corpus::cases::{algorithms, calls, control, explosion};
use nacre_corpus::{find, CaseKind};
use nacre_trace::TraceFn;

fn module<Args, F: TraceFn<Args>>(f: F) -> (Module, Linkage) {
    let traced = trace_module(&f).expect("traces");
    (traced.module, traced.linkage)
}

fn modules() -> Vec<(&'static str, (Module, Linkage))> {
    vec![
        ("gcd", module(algorithms::gcd)),
        ("fibonacci", module(algorithms::fibonacci)),
        ("collatz", module(algorithms::collatz)),
        ("fnv1a", module(algorithms::fnv1a)),
        ("isqrt", module(algorithms::isqrt)),
        ("popcount", module(algorithms::popcount)),
        ("pow_mod", module(algorithms::pow_mod)),
        ("newton_sqrt", module(algorithms::newton_sqrt)),
        ("factorial", module(algorithms::factorial)),
        ("logistic", module(algorithms::logistic)),
        ("inline_calls", module(calls::inline_calls)),
        ("separate_calls", module(calls::separate_calls)),
        ("recursive_fib", module(calls::recursive_fib)),
        ("mutual_recursion", module(calls::mutual_recursion)),
        ("runtime_call_loop", module(calls::runtime_call_loop)),
        ("conditional_sum", module(control::conditional_sum)),
        ("if_else_stmt", module(control::if_else_stmt)),
        ("if_expr", module(control::if_expr)),
        ("else_if_chain", module(control::else_if_chain)),
        ("nested_if", module(control::nested_if)),
        ("sequential_ifs", module(control::sequential_ifs)),
        ("short_circuit", module(control::short_circuit)),
        ("while_sum", module(control::while_sum)),
        ("for_step", module(control::for_step)),
        ("loop_break", module(control::loop_break)),
        ("nested_loops", module(control::nested_loops)),
        ("break_continue", module(control::break_continue)),
        ("labeled_loops", module(control::labeled_loops)),
        ("early_return", module(control::early_return)),
        ("static_unroll", module(control::static_unroll)),
        ("while_and", module(control::while_and)),
        ("sequential_ifs_100", module(explosion::sequential_ifs_100)),
        ("nested_ifs_100", module(explosion::nested_ifs_100)),
        ("chained_ifs_100", module(explosion::chained_ifs_100)),
    ]
}

fn same(ret: Option<Scalar>, a: u64, b: u64) -> bool {
    match ret {
        Some(Scalar::F32) => {
            a == b || (f32::from_bits(a as u32).is_nan() && f32::from_bits(b as u32).is_nan())
        }
        Some(Scalar::F64) => a == b || (f64::from_bits(a).is_nan() && f64::from_bits(b).is_nan()),
        _ => a == b,
    }
}

#[test]
fn structured_c_agrees_with_the_interpreter() {
    let interp = make_backend(&Options::with_backend(BackendKind::Interp)).expect("interp");
    let structured = CBackend::new(COptions::default()).with_structured_control_flow(true);
    let mut failures = Vec::new();
    let mut runs = 0;
    let mut regions = 0;
    for ((name, (traced, linkage)), form) in modules()
        .into_iter()
        .flat_map(|m| [(m.clone(), Form::Unchecked), (m, Form::Checked)])
    {
        let case = find(name).unwrap_or_else(|| panic!("no corpus case {name}"));
        let CaseKind::Scalar { ret, params, .. } = &case.kind else {
            panic!("{name} is not a scalar case");
        };
        let m = form
            .prepare(traced)
            .unwrap_or_else(|e| panic!("{name} ({form:?}): {e}"));
        // Scalar cases take no pointers, so the checked entry takes no companions.
        assert_eq!(
            m.module().functions[m.module().entry.expect("an entry")]
                .signature
                .params
                .len(),
            params.len(),
            "{name}"
        );
        let source = emit_c_structured(&m).expect("prints");
        assert!(!source.contains("goto"), "{name} uses goto:\n{source}");
        regions += source.matches("while (0);").count();
        let want = interp.compile(&m, &linkage).expect("interp compiles");
        let got = structured
            .compile_module(&m, &linkage)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for args in case.edge_inputs(300) {
            runs += 1;
            let (w, g) = (want.call(&args), got.call(&args));
            let ok = match (w, g) {
                (Ok(a), Ok(b)) => same(*ret, a, b),
                (a, b) => a == b,
            };
            if !ok {
                failures.push(format!(
                    "{name} ({form:?}){args:?}: interpreter {w:?}, structured C {g:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(runs > 2 * 500, "only {runs} runs");
    assert!(regions > 0, "no labelled region was exercised");
}
