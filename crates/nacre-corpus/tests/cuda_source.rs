//! Snapshots of the CUDA C of every kernel of the kernel corpus: each case's host function is
//! traced and optimised as the engine does, and every kernel of the resulting module is
//! printed by `nacre-cuda` (see `cuda_compile.rs` for the check that NVRTC accepts them).

use nacre::ir::PassOptions;
use nacre_corpus::kernels::all;
use nacre_cuda::codegen::emit_kernels;

#[test]
fn cuda_source_of_every_corpus_kernel() {
    for case in all() {
        let module = (case.trace)()
            .unwrap_or_else(|e| panic!("{}: {e}", case.name))
            .module;
        let module = nacre::optimize(module, &PassOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let kernels = emit_kernels(&module).unwrap_or_else(|e| panic!("{}: {e}", case.name));
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
        insta::assert_snapshot!(case.name, text);
    }
}
