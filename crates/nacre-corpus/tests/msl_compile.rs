//! Every corpus kernel's MSL through clang in C++ for OpenCL mode with the Metal header of
//! `nacre-metal` (see `nacre_metal::clang_check`): it must compile, and a deliberately wrong
//! address space planted in generated code must not.
//!
//! Without clang the tests say they are skipped, unless `NACRE_REQUIRE_CLANG=1` (as in CI),
//! which makes a missing clang a failure.

use nacre::ir::PassOptions;
use nacre::optimize;
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

fn corpus_msl() -> Vec<(&'static str, MslKernel)> {
    all()
        .into_iter()
        .flat_map(|case| {
            let module = (case.trace)()
                .unwrap_or_else(|e| panic!("{}: {e}", case.name))
                .module;
            let verified = optimize(module, &PassOptions::default()).expect("verifies");
            emit_msl(&verified)
                .unwrap_or_else(|e| panic!("{}: {e}", case.name))
                .into_iter()
                .map(move |k| (case.name, k))
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
    for (case, k) in &kernels {
        if let Err(e) = check_msl(&k.source) {
            failures.push(format!("{case} / @{}: {e}\n{}", k.name, k.source));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(kernels.len() >= 17, "only {} kernels", kernels.len());
}

#[test]
fn a_planted_wrong_address_space_is_rejected() {
    if !clang_ready("a_planted_wrong_address_space_is_rejected") {
        return;
    }
    let (_, k) = corpus_msl()
        .into_iter()
        .find(|(case, _)| *case == "block_sum")
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
