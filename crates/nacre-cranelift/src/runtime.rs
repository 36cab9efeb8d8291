//! Rust helpers that generated code calls: float remainder (Rust's `%` on floats, which has
//! no machine instruction) and the float library calls Cranelift emits when the host lacks an
//! instruction (`floor`/`ceil`/`trunc`/`nearest` without SSE4.1, `fma` without FMA).
//!
//! The library calls are registered as symbols of every JIT module under the names
//! [`libcall_names`] gives them, so they never depend on what the C library exports.

use cranelift_codegen::ir::LibCall;
use cranelift_jit::JITBuilder;

/// `a % b` on `f32` (C's `fmodf`).
pub(crate) extern "C" fn fmod_f32(a: f32, b: f32) -> f32 {
    a % b
}

/// `a % b` on `f64` (C's `fmod`).
pub(crate) extern "C" fn fmod_f64(a: f64, b: f64) -> f64 {
    a % b
}

extern "C" fn floor_f32(a: f32) -> f32 {
    a.floor()
}

extern "C" fn floor_f64(a: f64) -> f64 {
    a.floor()
}

extern "C" fn ceil_f32(a: f32) -> f32 {
    a.ceil()
}

extern "C" fn ceil_f64(a: f64) -> f64 {
    a.ceil()
}

extern "C" fn trunc_f32(a: f32) -> f32 {
    a.trunc()
}

extern "C" fn trunc_f64(a: f64) -> f64 {
    a.trunc()
}

extern "C" fn nearest_f32(a: f32) -> f32 {
    a.round_ties_even()
}

extern "C" fn nearest_f64(a: f64) -> f64 {
    a.round_ties_even()
}

extern "C" fn fma_f32(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}

extern "C" fn fma_f64(a: f64, b: f64, c: f64) -> f64 {
    a.mul_add(b, c)
}

/// The float library calls this crate implements: (libcall, symbol name, address).
fn float_libcalls() -> [(LibCall, &'static str, *const u8); 10] {
    [
        (LibCall::FloorF32, "nacre_floor_f32", floor_f32 as *const u8),
        (LibCall::FloorF64, "nacre_floor_f64", floor_f64 as *const u8),
        (LibCall::CeilF32, "nacre_ceil_f32", ceil_f32 as *const u8),
        (LibCall::CeilF64, "nacre_ceil_f64", ceil_f64 as *const u8),
        (LibCall::TruncF32, "nacre_trunc_f32", trunc_f32 as *const u8),
        (LibCall::TruncF64, "nacre_trunc_f64", trunc_f64 as *const u8),
        (
            LibCall::NearestF32,
            "nacre_nearest_f32",
            nearest_f32 as *const u8,
        ),
        (
            LibCall::NearestF64,
            "nacre_nearest_f64",
            nearest_f64 as *const u8,
        ),
        (LibCall::FmaF32, "nacre_fma_f32", fma_f32 as *const u8),
        (LibCall::FmaF64, "nacre_fma_f64", fma_f64 as *const u8),
    ]
}

/// Symbol names of Cranelift's library calls: this crate's helpers for the float ones,
/// Cranelift's defaults (resolved in the process) for the rest.
pub(crate) fn libcall_names() -> Box<dyn Fn(LibCall) -> String + Send + Sync> {
    Box::new(
        |libcall| match float_libcalls().iter().find(|(l, _, _)| *l == libcall) {
            Some((_, name, _)) => (*name).to_owned(),
            None => cranelift_module::default_libcall_names()(libcall),
        },
    )
}

/// Registers the float library call helpers as symbols of a JIT module.
pub(crate) fn register_symbols(builder: &mut JITBuilder) {
    builder.symbols(
        float_libcalls()
            .into_iter()
            .map(|(_, name, addr)| (name, addr)),
    );
}
