//! Snapshots of the IR of corpus functions as traced (the capture, before passes) and after
//! the optimisation passes.

use nacre::ir::PassOptions;
use nacre::{optimize, trace_module};
use nacre_corpus::cases::{algorithms, arith, arrays, calls, casts, compare, control, explosion};
use nacre_trace::TraceFn;

fn snapshot<Args, F: TraceFn<Args>>(name: &str, f: F) {
    let module = trace_module(&f).expect("traces").module;
    let before = module.to_string();
    let verified = optimize(module, &PassOptions::default()).expect("verifies");
    let after = nacre::ir::printer::module_with_loops(&verified).to_string();
    insta::assert_snapshot!(format!("{name}__trace"), before);
    insta::assert_snapshot!(format!("{name}__optimized"), after);
}

#[test]
fn ir_of_corpus_functions() {
    snapshot("arith_i32", arith::arith_i32);
    snapshot("divrem_u8", arith::divrem_u8);
    snapshot("minmax_f64", arith::minmax_f64);
    snapshot("logic_bool", arith::logic_bool);
    snapshot("cast_f64_i32", casts::cast_f64_i32);
    snapshot("compare_i32", compare::compare_i32);
    snapshot("conditional_sum", control::conditional_sum);
    snapshot("if_expr", control::if_expr);
    snapshot("else_if_chain", control::else_if_chain);
    snapshot("nested_if", control::nested_if);
    snapshot("short_circuit", control::short_circuit);
    snapshot("while_sum", control::while_sum);
    snapshot("for_step", control::for_step);
    snapshot("loop_break", control::loop_break);
    snapshot("break_continue", control::break_continue);
    snapshot("labeled_loops", control::labeled_loops);
    snapshot("early_return", control::early_return);
    snapshot("static_unroll", control::static_unroll);
    snapshot("host_table", control::host_table);
    snapshot("inline_calls", calls::inline_calls);
    snapshot("separate_calls", calls::separate_calls);
    snapshot("recursive_fib", calls::recursive_fib);
    snapshot("runtime_calls", calls::runtime_calls);
    snapshot("gcd", algorithms::gcd);
    snapshot("collatz", algorithms::collatz);
    snapshot("fnv1a", algorithms::fnv1a);
    snapshot("array_sum", arrays::array_sum);
    snapshot("prefix_sum", arrays::prefix_sum);
    snapshot("find_first", arrays::find_first);
    snapshot("chained_ifs_10", |x| explosion::chained_ifs_n(x, 0, 10));
}
