//! The seed's Nautilus figures, to print beside ours.
//!
//! They come from the "Tracing Benchmark" comment at the end of
//! `shared/seed/nautilus-gpu-pr.txt` (github-action-benchmark's "Current" column, commit
//! a11fdef; Catch2 means on the CI machine of that project, not this one). Each entry pairs
//! one of our benchmark names with the Nautilus benchmark it is compared with; one of ours may
//! have several counterparts:
//!
//! | ours | Nautilus |
//! | --- | --- |
//! | `trace_F` | `trace_F`, `completing_trace_F` |
//! | `ir_F` | `ir_F` |
//! | `comp_interp_F` | `comp_bc_F` (bytecode interpreter) |
//! | `comp_cranelift_F` | `comp_asmjit_F`, `comp_mlir_F` |
//! | `comp_c_F` | `comp_cpp_F` |
//! | `e2e_B_add`, `e2e_B_loop` | `single_compile_X_addOne`, `single_compile_X_sumLoop` (X: bc, mlir, cpp) |
//! | `exec_interp_F` | `exec_bc_F` |
//! | `exec_cranelift_F` | `exec_asmjit_F`, `exec_mlir_F` |
//! | `exec_c_F` | `exec_cpp_F` |
//! | `exec_rust_F`, `exec_B_gcd` | none |
//! | `tiered_first_call_add` | `tiered_compile_addOne` |
//! | `tiered_first_call_sum_1k` | `tiered_compile_sumLoop` |
//!
//! Nautilus's `ssa_F` has no counterpart: Nacre records SSA directly while tracing.

const NS: f64 = 1.0;
const US: f64 = 1e3;
const MS: f64 = 1e6;

/// One Nautilus figure and the benchmark of ours it is compared with.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct SeedFigure {
    /// Our benchmark name.
    pub ours: &'static str,
    /// The Nautilus benchmark name.
    pub theirs: &'static str,
    /// The Nautilus figure in nanoseconds.
    pub ns: f64,
}

const fn fig(ours: &'static str, theirs: &'static str, value: f64, unit: f64) -> SeedFigure {
    SeedFigure {
        ours,
        theirs,
        ns: value * unit,
    }
}

/// Every seed figure with a counterpart among our benchmarks, as printed in the seed.
#[rustfmt::skip]
pub const SEED_FIGURES: &[SeedFigure] = &[
    fig("trace_add", "trace_add", 1.87507, US),
    fig("trace_add", "completing_trace_add", 1.82703, US),
    fig("trace_ifThenElse", "trace_ifThenElse", 6.50987, US),
    fig("trace_ifThenElse", "completing_trace_ifThenElse", 3.67544, US),
    fig("trace_deeplyNestedIfElse", "trace_deeplyNestedIfElse", 19.4309, US),
    fig("trace_deeplyNestedIfElse", "completing_trace_deeplyNestedIfElse", 10.0746, US),
    fig("trace_loop", "trace_loop", 6.46981, US),
    fig("trace_loop", "completing_trace_loop", 3.66515, US),
    fig("trace_ifInsideLoop", "trace_ifInsideLoop", 12.5641, US),
    fig("trace_ifInsideLoop", "completing_trace_ifInsideLoop", 6.72638, US),
    fig("trace_loopDirectCall", "trace_loopDirectCall", 6.54736, US),
    fig("trace_loopDirectCall", "completing_trace_loopDirectCall", 3.70674, US),
    fig("trace_pointerLoop", "trace_pointerLoop", 10.9279, US),
    fig("trace_pointerLoop", "completing_trace_pointerLoop", 9.1247, US),
    fig("trace_staticLoop", "trace_staticLoop", 5.93182, US),
    fig("trace_staticLoop", "completing_trace_staticLoop", 5.89582, US),
    fig("trace_fibonacci", "trace_fibonacci", 7.63102, US),
    fig("trace_fibonacci", "completing_trace_fibonacci", 4.72481, US),
    fig("trace_gcd", "trace_gcd", 5.90647, US),
    fig("trace_gcd", "completing_trace_gcd", 3.04341, US),
    fig("trace_nestedIf10", "trace_nestedIf10", 31.5552, US),
    fig("trace_nestedIf10", "completing_trace_nestedIf10", 31.6524, US),
    fig("trace_nestedIf100", "trace_nestedIf100", 1.15108, MS),
    fig("trace_nestedIf100", "completing_trace_nestedIf100", 1.17289, MS),
    fig("trace_chainedIf10", "trace_chainedIf10", 74.7706, US),
    fig("trace_chainedIf10", "completing_trace_chainedIf10", 40.5501, US),
    fig("trace_chainedIf100", "trace_chainedIf100", 3.44566, MS),
    fig("trace_chainedIf100", "completing_trace_chainedIf100", 1.84358, MS),
    fig("ir_add", "ir_add", 547.449, NS),
    fig("ir_ifThenElse", "ir_ifThenElse", 1.2072, US),
    fig("ir_deeplyNestedIfElse", "ir_deeplyNestedIfElse", 2.59962, US),
    fig("ir_loop", "ir_loop", 1.21298, US),
    fig("ir_ifInsideLoop", "ir_ifInsideLoop", 2.2362, US),
    fig("ir_loopDirectCall", "ir_loopDirectCall", 1.39689, US),
    fig("ir_pointerLoop", "ir_pointerLoop", 1.4939, US),
    fig("ir_staticLoop", "ir_staticLoop", 1.13289, US),
    fig("ir_fibonacci", "ir_fibonacci", 1.32318, US),
    fig("ir_gcd", "ir_gcd", 1.13213, US),
    fig("ir_nestedIf10", "ir_nestedIf10", 6.0616, US),
    fig("ir_nestedIf100", "ir_nestedIf100", 72.8324, US),
    fig("ir_chainedIf10", "ir_chainedIf10", 9.4055, US),
    fig("ir_chainedIf100", "ir_chainedIf100", 132.717, US),
    fig("comp_interp_add", "comp_bc_add", 11.118, US),
    fig("comp_cranelift_add", "comp_asmjit_add", 13.6439, US),
    fig("comp_cranelift_add", "comp_mlir_add", 5.02455, MS),
    fig("comp_c_add", "comp_cpp_add", 28.8232, MS),
    fig("comp_interp_ifThenElse", "comp_bc_ifThenElse", 18.1199, US),
    fig("comp_cranelift_ifThenElse", "comp_asmjit_ifThenElse", 21.0181, US),
    fig("comp_cranelift_ifThenElse", "comp_mlir_ifThenElse", 5.46357, MS),
    fig("comp_c_ifThenElse", "comp_cpp_ifThenElse", 34.6031, MS),
    fig("comp_interp_deeplyNestedIfElse", "comp_bc_deeplyNestedIfElse", 17.0555, US),
    fig("comp_cranelift_deeplyNestedIfElse", "comp_asmjit_deeplyNestedIfElse", 37.7607, US),
    fig("comp_cranelift_deeplyNestedIfElse", "comp_mlir_deeplyNestedIfElse", 4.56082, MS),
    fig("comp_c_deeplyNestedIfElse", "comp_cpp_deeplyNestedIfElse", 23.0601, MS),
    fig("comp_interp_loop", "comp_bc_loop", 12.9305, US),
    fig("comp_cranelift_loop", "comp_asmjit_loop", 23.2627, US),
    fig("comp_cranelift_loop", "comp_mlir_loop", 6.27033, MS),
    fig("comp_c_loop", "comp_cpp_loop", 28.2878, MS),
    fig("comp_interp_ifInsideLoop", "comp_bc_ifInsideLoop", 14.7405, US),
    fig("comp_cranelift_ifInsideLoop", "comp_asmjit_ifInsideLoop", 38.8383, US),
    fig("comp_cranelift_ifInsideLoop", "comp_mlir_ifInsideLoop", 25.068, MS),
    fig("comp_c_ifInsideLoop", "comp_cpp_ifInsideLoop", 34.6707, MS),
    fig("comp_interp_loopDirectCall", "comp_bc_loopDirectCall", 13.2449, US),
    fig("comp_cranelift_loopDirectCall", "comp_asmjit_loopDirectCall", 25.5455, US),
    fig("comp_cranelift_loopDirectCall", "comp_mlir_loopDirectCall", 10.2086, MS),
    fig("comp_c_loopDirectCall", "comp_cpp_loopDirectCall", 22.2504, MS),
    fig("comp_interp_pointerLoop", "comp_bc_pointerLoop", 13.8977, US),
    fig("comp_cranelift_pointerLoop", "comp_asmjit_pointerLoop", 27.8923, US),
    fig("comp_cranelift_pointerLoop", "comp_mlir_pointerLoop", 23.7211, MS),
    fig("comp_c_pointerLoop", "comp_cpp_pointerLoop", 35.1556, MS),
    fig("comp_interp_staticLoop", "comp_bc_staticLoop", 12.8765, US),
    fig("comp_cranelift_staticLoop", "comp_asmjit_staticLoop", 19.019, US),
    fig("comp_cranelift_staticLoop", "comp_mlir_staticLoop", 4.51181, MS),
    fig("comp_c_staticLoop", "comp_cpp_staticLoop", 26.0297, MS),
    fig("comp_interp_fibonacci", "comp_bc_fibonacci", 13.1778, US),
    fig("comp_cranelift_fibonacci", "comp_asmjit_fibonacci", 24.8794, US),
    fig("comp_cranelift_fibonacci", "comp_mlir_fibonacci", 9.06594, MS),
    fig("comp_c_fibonacci", "comp_cpp_fibonacci", 36.6623, MS),
    fig("comp_interp_gcd", "comp_bc_gcd", 12.861, US),
    fig("comp_cranelift_gcd", "comp_asmjit_gcd", 22.7344, US),
    fig("comp_cranelift_gcd", "comp_mlir_gcd", 8.12359, MS),
    fig("comp_c_gcd", "comp_cpp_gcd", 26.6215, MS),
    fig("comp_interp_nestedIf10", "comp_bc_nestedIf10", 24.1182, US),
    fig("comp_cranelift_nestedIf10", "comp_asmjit_nestedIf10", 76.1474, US),
    fig("comp_cranelift_nestedIf10", "comp_mlir_nestedIf10", 8.80645, MS),
    fig("comp_c_nestedIf10", "comp_cpp_nestedIf10", 24.3381, MS),
    fig("comp_interp_nestedIf100", "comp_bc_nestedIf100", 152.157, US),
    fig("comp_cranelift_nestedIf100", "comp_asmjit_nestedIf100", 816.402, US),
    fig("comp_cranelift_nestedIf100", "comp_mlir_nestedIf100", 20.6257, MS),
    fig("comp_c_nestedIf100", "comp_cpp_nestedIf100", 50.9686, MS),
    fig("comp_interp_chainedIf10", "comp_bc_chainedIf10", 33.3486, US),
    fig("comp_cranelift_chainedIf10", "comp_asmjit_chainedIf10", 113.233, US),
    fig("comp_cranelift_chainedIf10", "comp_mlir_chainedIf10", 9.84736, MS),
    fig("comp_c_chainedIf10", "comp_cpp_chainedIf10", 30.8227, MS),
    fig("comp_interp_chainedIf100", "comp_bc_chainedIf100", 239.194, US),
    fig("comp_cranelift_chainedIf100", "comp_asmjit_chainedIf100", 1.71431, MS),
    fig("comp_cranelift_chainedIf100", "comp_mlir_chainedIf100", 48.0965, MS),
    fig("comp_c_chainedIf100", "comp_cpp_chainedIf100", 74.4901, MS),
    fig("e2e_interp_add", "single_compile_bc_addOne", 37.2243, US),
    fig("e2e_cranelift_add", "single_compile_mlir_addOne", 2.91712, MS),
    fig("e2e_c_add", "single_compile_cpp_addOne", 28.1675, MS),
    fig("e2e_interp_loop", "single_compile_bc_sumLoop", 49.8412, US),
    fig("e2e_cranelift_loop", "single_compile_mlir_sumLoop", 4.5666, MS),
    fig("e2e_c_loop", "single_compile_cpp_sumLoop", 29.6654, MS),
    fig("exec_interp_add", "exec_bc_add", 33.8129, NS),
    fig("exec_cranelift_add", "exec_asmjit_add", 2.73003, NS),
    fig("exec_cranelift_add", "exec_mlir_add", 8.54981, NS),
    fig("exec_c_add", "exec_cpp_add", 3.45914, NS),
    fig("exec_interp_addOne", "exec_bc_addOne", 28.2694, NS),
    fig("exec_cranelift_addOne", "exec_mlir_addOne", 214.291, NS),
    fig("exec_c_addOne", "exec_cpp_addOne", 3.37508, NS),
    fig("exec_interp_fibonacci", "exec_bc_fibonacci", 533.115, US),
    fig("exec_cranelift_fibonacci", "exec_asmjit_fibonacci", 17.3051, US),
    fig("exec_cranelift_fibonacci", "exec_mlir_fibonacci", 12.4245, US),
    fig("exec_c_fibonacci", "exec_cpp_fibonacci", 83.8254, US),
    fig("exec_interp_sum", "exec_bc_sum", 126.731, MS),
    fig("exec_cranelift_sum", "exec_asmjit_sum", 4.09924, MS),
    fig("exec_cranelift_sum", "exec_mlir_sum", 500.677, US),
    fig("exec_c_sum", "exec_cpp_sum", 18.2544, MS),
    fig("tiered_first_call_add", "tiered_compile_addOne", 36.3155, US),
    fig("tiered_first_call_sum_1k", "tiered_compile_sumLoop", 49.5577, US),
];

/// The seed figures compared with our benchmark `ours`, in table order.
pub fn counterparts(ours: &str) -> impl Iterator<Item = &'static SeedFigure> + '_ {
    SEED_FIGURES.iter().filter(move |f| f.ours == ours)
}

/// The seed figure of the Nautilus benchmark `theirs`, if the table has it.
pub fn figure(theirs: &str) -> Option<f64> {
    SEED_FIGURES
        .iter()
        .find(|f| f.theirs == theirs)
        .map(|f| f.ns)
}
