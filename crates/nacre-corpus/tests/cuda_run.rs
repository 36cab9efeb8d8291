//! Every corpus kernel's generated CUDA C *executed* on the host: compiled as C++20 by the
//! host's C++ compiler against `crates/nacre-cuda/emulation/nacre_cuda_emulation.h`, which
//! emulates CUDA's execution model (one OS thread per GPU thread, the threads of a block
//! meeting at `__syncthreads`, blocks one after another, `__shared__` arrays per block), and
//! launched by the traced host function in place of a GPU (see `emulation.rs`). Every array
//! must come out bit-identical to the CPU runtime in grid mode, for bounds-checked kernels
//! (as `Engine::compile` makes them) and unchecked ones, and a checked kernel given too short
//! an array must trap as it does on the CPU runtime.
//!
//! This checks what the generated CUDA C computes on machines without a GPU (indices,
//! barriers, shared arrays, control flow, the lane groups of grid-stride loops with their
//! alignment checks and remainders), not NVIDIA's compiler or GPU: `cuda_compile.rs` checks
//! that NVRTC and ptxas accept the same source, and `cuda_kernels.rs` runs it on a GPU.
//! Without a C++ compiler the test says it is skipped.

use crate::emulation::{
    build, check_against_cpu, check_out_of_bounds, cxx_ready, runner, Emulated, Form, Header, Param,
};
use nacre::ir::{Module, Type, VerifiedModule};
use nacre_c::Dialect;
use nacre_corpus::kernels::without_metal;
use nacre_cuda::codegen::{emit_kernels, CudaDialect, KernelSource};

const HEADER: Header = Header {
    dir: concat!(env!("CARGO_MANIFEST_DIR"), "/../nacre-cuda/emulation"),
    name: "nacre_cuda_emulation.h",
};

/// The kernel's source inside a namespace (its fixed-width typedefs then shadow the C
/// library's), and a runner `nacre_run` that calls the kernel once per thread of every block.
fn emulation_source(k: &KernelSource, params: &[Param]) -> String {
    let mut args: Vec<String> = params
        .iter()
        .enumerate()
        .map(|(i, p)| match *p {
            Param::Buffer(s) => format!("({} *)args[{i}]", CudaDialect::default().scalar_type(s)),
            Param::Scalar(s) => format!(
                "*(const {} *)args[{i}]",
                CudaDialect::default().scalar_type(s)
            ),
        })
        .collect();
    args.push("(uint32_t *)status".to_string());
    let run = runner(
        "nacre_dim3",
        &[
            "threadIdx = {tx, ty, tz};".to_string(),
            "blockIdx = {gx, gy, gz};".to_string(),
            "blockDim = block;".to_string(),
            "gridDim = grid;".to_string(),
            "nacre_dynamic_smem = dyn_shared;".to_string(),
            "nacre_dynamic_smem_bytes = dyn_bytes;".to_string(),
            format!("{}({});", k.name, args.join(", ")),
        ],
    );
    format!(
        "#include \"nacre_cuda_emulation.h\"\n\nnamespace nacre_kernel {{\n{}\n{run}}} // namespace nacre_kernel\n",
        k.source
    )
}

/// How each parameter of kernel `id` of `module` reaches the runner.
fn params(module: &Module, id: nacre::ir::FuncId) -> Result<Vec<Param>, String> {
    let f = module
        .functions
        .get(id)
        .ok_or_else(|| format!("no kernel {id}"))?;
    f.signature
        .params
        .iter()
        .map(|&ty| match ty {
            Type::Ptr(elem, _) => Ok(Param::Buffer(elem)),
            Type::Scalar(s) => Ok(Param::Scalar(s)),
        })
        .collect()
}

/// The emulated CUDA kernels of a module, built with `cxx`.
fn emulated(
    cxx: String,
) -> impl FnMut(&VerifiedModule) -> Result<Vec<(nacre::ir::FuncId, Emulated)>, String> {
    move |verified| {
        let module = verified.module();
        let kernels = emit_kernels(verified).map_err(|e| e.to_string())?;
        kernels
            .iter()
            .map(|(id, k)| {
                let params = params(module, *id)?;
                let source = emulation_source(k, &params);
                let kernel = build(&cxx, &HEADER, &k.name, &source, params)?;
                Ok((*id, kernel))
            })
            .collect()
    }
}

/// The kernels `Engine::compile` makes: bounds-checked.
#[test]
fn generated_cuda_computes_what_the_cpu_runtime_computes() {
    let Some(cxx) = cxx_ready() else {
        return;
    };
    check_against_cpu("CUDA", Form::Checked, without_metal(), emulated(cxx));
}

/// The kernels `Engine::compile_unchecked` makes.
#[test]
fn generated_unchecked_cuda_computes_what_the_cpu_runtime_computes() {
    let Some(cxx) = cxx_ready() else {
        return;
    };
    check_against_cpu("CUDA", Form::Unchecked, without_metal(), emulated(cxx));
}

#[test]
fn generated_cuda_traps_out_of_bounds_as_the_cpu_runtime_does() {
    let Some(cxx) = cxx_ready() else {
        return;
    };
    check_out_of_bounds("CUDA", emulated(cxx));
}
