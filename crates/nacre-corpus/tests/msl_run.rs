//! Every corpus kernel's generated MSL *executed* on the host: compiled as C++20 by g++
//! against `crates/nacre-metal/emulation/metal_stdlib`, which emulates Metal's execution
//! model (one OS thread per GPU thread, the threads of a threadgroup meeting at
//! `threadgroup_barrier`, threadgroups one after another, shared arrays per threadgroup), and
//! launched by the traced host function in place of a GPU. Every array must come out
//! bit-identical to the same host function launching the kernels on the CPU runtime in grid
//! mode, for bounds-checked kernels (as `Engine::compile` makes them) and unchecked ones, and
//! a checked kernel given too short an array must trap as it does on the CPU runtime.
//!
//! This checks what the generated MSL computes (indices, barriers, shared arrays, the
//! structured control flow, loop guards, scalar copies), not Apple's compiler or GPU. Without
//! a C++ compiler (`c++`, `g++`, `clang++`, or `NACRE_CXX`) the test says it is skipped.

use crate::emulation::{
    build, check_against_cpu, check_out_of_bounds, cxx_ready, runner, Emulated, Form, Header, Param,
};
use nacre::ir::VerifiedModule;
use nacre_c::Dialect;
use nacre_metal::clang_check::THREADGROUP_ATTRIBUTE;
use nacre_metal::layout;
use nacre_metal::{emit_msl, MslDialect, MslKernel};

const HEADER: Header = Header {
    dir: concat!(env!("CARGO_MANIFEST_DIR"), "/../nacre-metal/emulation"),
    name: "metal_stdlib",
};

/// The kernel source with its kernel-scope shared arrays made function statics (one array
/// for the threads of the threadgroup that runs), and a runner `nacre_run` that calls the
/// kernel once per thread of every threadgroup. The dynamic shared memory parameter loses its
/// attribute (`threadgroup` is an empty macro here, see `nacre_metal::clang_check::check_msl`).
fn emulation_source(k: &MslKernel) -> String {
    let mut out = String::new();
    let source = k.source.replace(THREADGROUP_ATTRIBUTE, "");
    for line in source.lines() {
        let t = line.trim_start();
        let is_shared_storage = t.starts_with("threadgroup ")
            && !t.contains('*')
            && t.ends_with("];")
            && t.split_whitespace()
                .nth(2)
                .is_some_and(|n| n.starts_with('s'));
        if is_shared_storage {
            out.push_str(&line.replacen("threadgroup ", "static ", 1));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    let signature = k
        .source
        .lines()
        .find(|l| l.contains("kernel void "))
        .unwrap_or_default();
    let mut args: Vec<String> = k
        .layout
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| match p {
            layout::Param::Buffer(s) => format!("({} *)args[{i}]", MslDialect.scalar_type(*s)),
            layout::Param::Scalar(s) => {
                format!("*(const {} *)args[{i}]", MslDialect.scalar_type(*s))
            }
        })
        .collect();
    args.push("status".to_string());
    let mut builtins: Vec<(usize, &str)> = [
        ("nacre_thread_idx", "tid"),
        ("nacre_block_idx", "gid"),
        ("nacre_block_dim", "block"),
        ("nacre_grid_dim", "grid"),
    ]
    .iter()
    .filter_map(|(name, value)| signature.find(&format!(" {name} ")).map(|at| (at, *value)))
    .collect();
    builtins.sort();
    args.extend(builtins.into_iter().map(|(_, v)| v.to_string()));
    if k.layout.dynamic_shared {
        // Threadgroup memory 0 and its size, after the built-ins (see the MSL prototype).
        args.extend(["dyn_shared".to_string(), "dyn_bytes".to_string()]);
    }
    out.push_str("\n#undef thread\n\n");
    out.push_str(&runner(
        "uint3",
        &[
            "uint3 tid{tx, ty, tz};".to_string(),
            "uint3 gid{gx, gy, gz};".to_string(),
            format!("{}({});", k.symbol, args.join(", ")),
        ],
    ));
    out
}

/// The emulated MSL kernels of a module, built with `cxx`.
fn emulated(
    cxx: String,
) -> impl FnMut(&VerifiedModule) -> Result<Vec<(nacre::ir::FuncId, Emulated)>, String> {
    move |verified| {
        let msl = emit_msl(verified).map_err(|e| e.to_string())?;
        msl.iter()
            .map(|k: &MslKernel| {
                let params = k
                    .layout
                    .params
                    .iter()
                    .map(|p| match *p {
                        layout::Param::Buffer(s) => Param::Buffer(s),
                        layout::Param::Scalar(s) => Param::Scalar(s),
                    })
                    .collect();
                let source = emulation_source(k);
                let kernel = build(&cxx, &HEADER, &k.name, &source, params)?;
                Ok((k.id, kernel))
            })
            .collect()
    }
}

/// The kernels `Engine::compile` makes: bounds-checked.
#[test]
fn generated_msl_computes_what_the_cpu_runtime_computes() {
    let Some(cxx) = cxx_ready() else {
        return;
    };
    check_against_cpu("MSL", Form::Checked, Vec::new(), emulated(cxx));
}

/// The kernels `Engine::compile_unchecked` makes.
#[test]
fn generated_unchecked_msl_computes_what_the_cpu_runtime_computes() {
    let Some(cxx) = cxx_ready() else {
        return;
    };
    check_against_cpu("MSL", Form::Unchecked, Vec::new(), emulated(cxx));
}

#[test]
fn generated_msl_traps_out_of_bounds_as_the_cpu_runtime_does() {
    let Some(cxx) = cxx_ready() else {
        return;
    };
    check_out_of_bounds("MSL", emulated(cxx));
}
