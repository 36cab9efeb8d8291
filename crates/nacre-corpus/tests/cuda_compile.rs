//! The CUDA compile check: the CUDA C of every corpus kernel compiles with NVRTC to PTX for
//! `compute_90` and to a cubin for `sm_90`, and `ptxas -arch=sm_90` accepts the PTX, in both
//! forms the engine makes: bounds-checked (`Engine::compile`) and unchecked
//! (`Engine::compile_unchecked`).
//!
//! NVRTC is found as `nacre-cuda` finds it (libnvrtc on the loader path), ptxas through the
//! environment variable `NACRE_PTXAS` or `PATH`. Without them the tests say on stderr that they
//! were skipped and why, and pass, unless `NACRE_REQUIRE_CUDA_TOOLS=1`, which CI sets: then a
//! missing tool fails the test.

use crate::emulation::Form;
use nacre_corpus::kernels::{all, without_metal};
use nacre_cuda::codegen::{emit_kernels, KernelSource};
use nacre_cuda::nvrtc::{self, Arch, NvrtcError};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

const SM_90: Arch = Arch::new(9, 0);

/// Whether CI demands the CUDA tools.
fn required() -> bool {
    std::env::var("NACRE_REQUIRE_CUDA_TOOLS").is_ok_and(|v| v == "1")
}

/// Reports a missing tool: a failure when the tools are required, a skip otherwise. Returns
/// `true` when the caller should stop.
fn missing(test: &str, why: &str) -> bool {
    if required() {
        panic!("{test}: {why} (NACRE_REQUIRE_CUDA_TOOLS=1)");
    }
    eprintln!("{test} skipped: {why}");
    true
}

/// NVRTC, or why not.
fn nvrtc_ready(test: &str) -> bool {
    match nvrtc::available() {
        Ok(()) => true,
        Err(e) => !missing(test, &e.to_string()),
    }
}

/// The ptxas executable: `NACRE_PTXAS`, else `ptxas` on `PATH`.
fn ptxas() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("NACRE_PTXAS") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("NACRE_PTXAS={} is not a file", path.display()))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("ptxas"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "ptxas not found (set NACRE_PTXAS or put it on PATH; `pip install \
             nvidia-cuda-nvcc` provides it in nvidia/cu13/bin)"
                .to_string()
        })
}

/// Every kernel of the corpus, traced and optimised as the engine does, unchecked
/// (`Engine::compile_unchecked`) and bounds-checked (`Engine::compile`), each named by its case
/// and form; kernels shared by several cases appear once per form.
fn corpus_kernels() -> Vec<(String, KernelSource)> {
    let mut out: Vec<(String, KernelSource)> = Vec::new();
    for case in all().into_iter().chain(without_metal()) {
        for form in [Form::Unchecked, Form::Checked] {
            let module = (case.trace)()
                .unwrap_or_else(|e| panic!("{}: {e}", case.name))
                .module;
            let module = form
                .prepare(module)
                .unwrap_or_else(|e| panic!("{} ({form:?}): {e}", case.name));
            let kernels =
                emit_kernels(&module).unwrap_or_else(|e| panic!("{} ({form:?}): {e}", case.name));
            for (_, kernel) in kernels {
                if !out.iter().any(|(_, k)| *k == kernel) {
                    out.push((format!("{} ({form:?})", case.name), kernel));
                }
            }
        }
    }
    out
}

/// Runs ptxas on `ptx`, writing into a scratch folder that is removed afterwards.
fn assemble(ptxas: &PathBuf, name: &str, ptx: &str) -> Result<Duration, String> {
    let dir = std::env::temp_dir().join(format!("nacre-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let input = dir.join(format!("{name}.ptx"));
    let output = dir.join(format!("{name}.cubin"));
    std::fs::write(&input, ptx).map_err(|e| format!("writing {}: {e}", input.display()))?;
    let start = Instant::now();
    let result = Command::new(ptxas)
        .arg("-arch=sm_90")
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .output();
    let elapsed = start.elapsed();
    let _ = std::fs::remove_dir_all(&dir);
    let result = result.map_err(|e| format!("running {}: {e}", ptxas.display()))?;
    if result.status.success() {
        Ok(elapsed)
    } else {
        Err(format!(
            "ptxas rejected the PTX of {name} ({}):\n{}{}\n--- PTX ---\n{ptx}",
            result.status,
            String::from_utf8_lossy(&result.stdout),
            String::from_utf8_lossy(&result.stderr)
        ))
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[test]
fn every_corpus_kernel_compiles_for_sm_90() {
    const TEST: &str = "CUDA compile check";
    if !nvrtc_ready(TEST) {
        return;
    }
    let ptxas = match ptxas() {
        Ok(p) => p,
        Err(why) => {
            missing(TEST, &why);
            return;
        }
    };
    let (major, minor) = nvrtc::version().expect("NVRTC version");
    let kernels = corpus_kernels();
    assert!(kernels.len() >= 2 * 15, "{} kernels", kernels.len());
    // The first compilation in a process also initialises NVRTC; measured apart.
    let start = Instant::now();
    nvrtc::compile_ptx(&kernels[0].1, SM_90).unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "first NVRTC compilation in the process: {:.1} ms",
        ms(start.elapsed())
    );
    eprintln!(
        "NVRTC {major}.{minor}, {}: {} kernels (ms: NVRTC cubin sm_90, NVRTC PTX compute_90, ptxas)",
        ptxas.display(),
        kernels.len()
    );
    let (mut cubin_total, mut ptx_total, mut ptxas_total) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for (case, kernel) in &kernels {
        let start = Instant::now();
        let cubin = nvrtc::compile_cubin(kernel, SM_90).unwrap_or_else(|e| panic!("{case}: {e}"));
        let cubin_time = start.elapsed();
        // A cubin is an ELF file.
        assert_eq!(cubin.get(..4), Some(&b"\x7fELF"[..]), "{case}");

        let start = Instant::now();
        let ptx = nvrtc::compile_ptx(kernel, SM_90).unwrap_or_else(|e| panic!("{case}: {e}"));
        let ptx_time = start.elapsed();
        assert!(ptx.contains(".target sm_90"), "{case}: {ptx}");
        assert!(
            ptx.contains(&format!(".entry {}(", kernel.name)),
            "{case}: {ptx}"
        );

        let asm_time =
            assemble(&ptxas, &kernel.name, &ptx).unwrap_or_else(|e| panic!("{case}: {e}"));
        eprintln!(
            "  {:<24} {:>7.1} {:>7.1} {:>7.1}",
            kernel.name,
            ms(cubin_time),
            ms(ptx_time),
            ms(asm_time)
        );
        cubin_total += cubin_time;
        ptx_total += ptx_time;
        ptxas_total += asm_time;
    }
    let n = kernels.len() as u32;
    eprintln!(
        "  {:<24} {:>7.1} {:>7.1} {:>7.1}",
        "mean",
        ms(cubin_total / n),
        ms(ptx_total / n),
        ms(ptxas_total / n)
    );
}

/// The lane-parallel grid-stride kernels (saxpy, vecadd, the `f16` saxpy) move their arrays
/// with 128-bit loads and stores (four 32-bit words, `v4`) in the PTX that NVRTC makes of them
/// (see `nacre_c`'s lane plans).
#[test]
fn grid_stride_kernels_use_128_bit_accesses() {
    const TEST: &str = "PTX vector-access check";
    if !nvrtc_ready(TEST) {
        return;
    }
    let kernels = corpus_kernels();
    let mut checked = 0;
    for (case, kernel) in &kernels {
        let ptx = nvrtc::compile_ptx(kernel, SM_90).unwrap_or_else(|e| panic!("{case}: {e}"));
        let wide = |op: &str| {
            [".f32", ".u32", ".b32"].iter().any(|t| {
                ptx.contains(&format!("{op}.global.v4{t}")) || ptx.contains(&format!("{op}.v4{t}"))
            })
        };
        let (wide_load, wide_store) = (wide("ld"), wide("st"));
        if kernel.source.contains("nacre_groups") {
            checked += 1;
            assert!(
                wide_load && wide_store,
                "{case}: no 128-bit accesses:\n{ptx}"
            );
        }
    }
    assert!(
        checked >= 2 * 2,
        "only {checked} grid-stride kernels in the corpus (unchecked and checked)"
    );
}

#[test]
fn broken_source_is_a_compile_error_with_the_log() {
    const TEST: &str = "NVRTC compile error check";
    if !nvrtc_ready(TEST) {
        return;
    }
    let broken = KernelSource {
        name: "f_broken".to_string(),
        source: "extern \"C\" __global__ void f_broken(float *v0, unsigned *status) {\n    \
                 v0[0] = undeclared_value;\n}\n"
            .to_string(),
        fast_math: false,
    };
    for result in [
        nvrtc::compile_cubin(&broken, SM_90).map(|_| ()),
        nvrtc::compile_ptx(&broken, SM_90).map(|_| ()),
    ] {
        match result {
            Err(NvrtcError::Compile {
                kernel,
                log,
                cuda_source,
                ..
            }) => {
                assert_eq!(kernel, "f_broken");
                assert!(log.contains("undeclared_value"), "{log}");
                assert!(log.contains("f_broken.cu(2)"), "{log}");
                assert_eq!(cuda_source, broken.source);
            }
            other => panic!("expected a compile error, got {other:?}"),
        }
    }
    let message = nvrtc::compile_ptx(&broken, SM_90).unwrap_err().to_string();
    assert!(
        message.contains("   2 |     v0[0] = undeclared_value;"),
        "{message}"
    );
}

#[test]
fn unknown_architecture_is_an_nvrtc_error() {
    const TEST: &str = "NVRTC option check";
    if !nvrtc_ready(TEST) {
        return;
    }
    let kernel = KernelSource {
        name: "f_empty".to_string(),
        source: "extern \"C\" __global__ void f_empty(unsigned *status) {}\n".to_string(),
        fast_math: false,
    };
    match nvrtc::compile_cubin(&kernel, Arch::new(1, 0)) {
        Err(NvrtcError::Call { call, message }) => {
            assert_eq!(call, "nvrtcCompileProgram");
            assert!(message.contains("sm_10"), "{message}");
        }
        other => panic!("expected an NVRTC call error, got {other:?}"),
    }
}
