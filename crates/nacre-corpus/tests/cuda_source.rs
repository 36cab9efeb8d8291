//! Snapshots of the CUDA C of every kernel of the kernel corpus: each case's host function is
//! traced and optimised as the engine does, and every kernel of the resulting module is
//! printed by `nacre-cuda` (see `cuda_compile.rs` for the check that NVRTC accepts them).
//! Each case has two snapshots: unchecked (`Engine::compile_unchecked`, named after the case)
//! and bounds-checked as `Engine::compile` makes it (the case's name with `__checked`).

use crate::emulation::Form;
use nacre_corpus::kernels::{all, without_metal};
use nacre_cuda::codegen::emit_kernels;

/// The CUDA C of every kernel of `case`'s module in `form`, concatenated.
fn cuda_source(case: &nacre_corpus::kernels::KernelCase, form: Form) -> String {
    let module = (case.trace)()
        .unwrap_or_else(|e| panic!("{}: {e}", case.name))
        .module;
    let module = form
        .prepare(module)
        .unwrap_or_else(|e| panic!("{} ({form:?}): {e}", case.name));
    let kernels = emit_kernels(&module).unwrap_or_else(|e| panic!("{} ({form:?}): {e}", case.name));
    assert!(!kernels.is_empty(), "{} launches a kernel", case.name);
    let mut text = String::new();
    for (_, kernel) in &kernels {
        assert!(
            kernel.source.lines().any(|l| {
                l.starts_with("extern \"C\" __global__ void ")
                    && l.contains(&format!(" {}(", kernel.name))
            }),
            "{}: the source defines its symbol",
            case.name
        );
        assert!(!kernel.source.contains("#include"), "{}", case.name);
        text.push_str(&kernel.source);
    }
    text
}

#[test]
fn cuda_source_of_every_corpus_kernel() {
    for case in all().into_iter().chain(without_metal()) {
        let text = cuda_source(&case, Form::Unchecked);
        let checked = cuda_source(&case, Form::Checked);
        assert_ne!(text, checked, "{}: the checked kernels differ", case.name);
        insta::assert_snapshot!(case.name, text);
        insta::assert_snapshot!(format!("{}__checked", case.name), checked);
    }
}
