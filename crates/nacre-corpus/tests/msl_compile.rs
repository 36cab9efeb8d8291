//! Every corpus kernel's MSL through clang in C++ for OpenCL mode with the Metal header of
//! `nacre-metal` (see `nacre_metal::clang_check`): it must compile, and a deliberately wrong
//! address space planted in generated code must not. Both forms the engine makes are checked:
//! bounds-checked (`Engine::compile`) and unchecked (`Engine::compile_unchecked`).
//!
//! Without clang the tests say they are skipped, unless `NACRE_REQUIRE_CLANG=1` (as in CI),
//! which makes a missing clang a failure.

use crate::emulation::Form;
use nacre_corpus::kernels::all;
use nacre_metal::clang_check::{check_msl, clang_version, ClangCheckError};
use nacre_metal::{emit_msl, MslKernel};

/// True when clang can run; false (after saying so) when the check is skipped.
fn clang_ready(test: &str) -> bool {
    match clang_version() {
        Ok(version) => {
            eprintln!("{test}: checking with {version}");
            true
        }
        Err(e) => {
            if std::env::var("NACRE_REQUIRE_CLANG").is_ok_and(|v| v == "1") {
                panic!("{test}: NACRE_REQUIRE_CLANG=1 but {e}");
            }
            eprintln!("{test}: skipped: {e}");
            false
        }
    }
}

/// Every corpus kernel's MSL, unchecked (`Engine::compile_unchecked`) and bounds-checked
/// (`Engine::compile`), each with its case's name and form.
fn corpus_msl() -> Vec<(&'static str, Form, MslKernel)> {
    all()
        .into_iter()
        .flat_map(|case| {
            [Form::Unchecked, Form::Checked]
                .into_iter()
                .flat_map(move |form| {
                    let module = (case.trace)()
                        .unwrap_or_else(|e| panic!("{}: {e}", case.name))
                        .module;
                    let verified = form.prepare(module).expect("verifies");
                    emit_msl(&verified)
                        .unwrap_or_else(|e| panic!("{} ({form:?}): {e}", case.name))
                        .into_iter()
                        .map(move |k| (case.name, form, k))
                })
        })
        .collect()
}

#[test]
fn every_corpus_kernel_compiles_as_opencl_cpp() {
    if !clang_ready("every_corpus_kernel_compiles_as_opencl_cpp") {
        return;
    }
    let mut failures = Vec::new();
    let kernels = corpus_msl();
    for (case, form, k) in &kernels {
        if let Err(e) = check_msl(&k.source) {
            failures.push(format!(
                "{case} ({form:?}) / @{}: {e}\n{}",
                k.name, k.source
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(kernels.len() >= 2 * 17, "only {} kernels", kernels.len());
}

#[test]
fn a_planted_wrong_address_space_is_rejected() {
    if !clang_ready("a_planted_wrong_address_space_is_rejected") {
        return;
    }
    let (_, _, k) = corpus_msl()
        .into_iter()
        .find(|(case, form, _)| *case == "block_sum" && *form == Form::Checked)
        .expect("block_sum is in the corpus");
    check_msl(&k.source).expect("the generated kernel compiles");
    // Declare the pointers into the shared array as device pointers.
    let planted = k
        .source
        .replace("    threadgroup float *v", "    device float *v");
    assert_ne!(
        planted, k.source,
        "no threadgroup pointer to replace:\n{}",
        k.source
    );
    match check_msl(&planted) {
        Err(ClangCheckError::Rejected { diagnostics }) => assert!(
            diagnostics.contains("__local") && diagnostics.contains("__global"),
            "the rejection is not about address spaces:\n{diagnostics}"
        ),
        other => panic!("the planted error was not caught: {other:?}\n{planted}"),
    }
}
