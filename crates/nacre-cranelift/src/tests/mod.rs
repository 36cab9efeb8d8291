//! Tests of the Cranelift backend: every operator against [`nacre_ir::semantics`]
//! ([`ops`]), control flow, calls and traps ([`control`]), kernel launches ([`launch`]),
//! code memory and threads ([`memory`]), the stack check of recursive functions
//! ([`stack`]) and loops run as SIMD lanes ([`simd`]).

mod control;
mod launch;
mod memory;
mod ops;
mod simd;
mod stack;

use crate::{CraneliftBackend, CraneliftOptions, OptLevel};
use nacre_backend::{Backend, Executable, Linkage};
use nacre_ir::semantics::ScalarValue;
use nacre_ir::{FuncKind, Function, FunctionBuilder, Module, Scalar, Signature, Type, Value};
use std::sync::Arc;

/// Both optimisation levels.
const OPT_LEVELS: [OptLevel; 2] = [OptLevel::None, OptLevel::Speed];

/// A backend at `opt_level`.
fn backend(opt_level: OptLevel) -> CraneliftBackend {
    CraneliftBackend::new(CraneliftOptions {
        opt_level,
        ..CraneliftOptions::default()
    })
    .expect("the host is supported")
}

/// A function built by `body` from the entry block's parameters.
fn function(
    name: &str,
    params: &[Type],
    ret: Option<Type>,
    body: impl FnOnce(&mut FunctionBuilder<'_>, &[Value]),
) -> Function {
    FunctionBuilder::build(name, FuncKind::Host, params, ret, body)
}

/// A module whose entry is `entry` (added first) followed by `others`.
fn module(entry: Function, others: Vec<Function>) -> Module {
    let mut m = Module::new();
    let id = m.add_function(entry);
    for f in others {
        m.add_function(f);
    }
    m.entry = Some(id);
    m
}

/// Verifies and compiles a module that needs no linkage.
fn compile(backend: &CraneliftBackend, m: Module) -> Arc<dyn Executable> {
    compile_linked(backend, m, &Linkage::default())
}

/// Verifies and compiles a module with its linkage, its half-precision arithmetic widened to
/// `f32` as the engine widens it.
fn compile_linked(backend: &CraneliftBackend, m: Module, linkage: &Linkage) -> Arc<dyn Executable> {
    let verified = nacre_ir::transform::widen_half(nacre_ir::verify(m).expect("valid IR"));
    backend.compile(&verified, linkage).expect("compiles")
}

/// Compiles a single function.
fn compile_fn(backend: &CraneliftBackend, f: Function) -> Arc<dyn Executable> {
    compile(backend, module(f, Vec::new()))
}

/// The scalar a value of `ty` travels as in native calls (pointers as `u64`).
fn carrier(ty: Type) -> Scalar {
    ty.scalar().unwrap_or(Scalar::U64)
}

/// Calls a compiled `fn(A) -> R` through its native entry; returns the result bits and status.
///
/// # Safety
/// `entry` must be a function of that native signature.
unsafe fn native1<A: ScalarValue, R: ScalarValue>(entry: *const u8, a: u64) -> (u64, u32) {
    // SAFETY: the caller guarantees the signature.
    let f = unsafe { std::mem::transmute::<*const u8, extern "C" fn(A, *mut u32) -> R>(entry) };
    let mut status = 0;
    let r = f(A::from_bits(u128::from(a)), &mut status);
    (r.to_bits() as u64, status)
}

/// Calls a compiled `fn(A, A) -> R` through its native entry.
///
/// # Safety
/// `entry` must be a function of that native signature.
unsafe fn native2<A: ScalarValue, R: ScalarValue>(entry: *const u8, a: u64, b: u64) -> (u64, u32) {
    // SAFETY: the caller guarantees the signature.
    let f = unsafe { std::mem::transmute::<*const u8, extern "C" fn(A, A, *mut u32) -> R>(entry) };
    let mut status = 0;
    let r = f(
        A::from_bits(u128::from(a)),
        A::from_bits(u128::from(b)),
        &mut status,
    );
    (r.to_bits() as u64, status)
}

/// Calls a compiled `fn(C, A, A) -> A` through its native entry.
///
/// # Safety
/// `entry` must be a function of that native signature.
unsafe fn native3<C: ScalarValue, A: ScalarValue>(
    entry: *const u8,
    c: u64,
    a: u64,
    b: u64,
) -> (u64, u32) {
    // SAFETY: the caller guarantees the signature.
    let f =
        unsafe { std::mem::transmute::<*const u8, extern "C" fn(C, A, A, *mut u32) -> A>(entry) };
    let mut status = 0;
    let r = f(
        C::from_bits(u128::from(c)),
        A::from_bits(u128::from(a)),
        A::from_bits(u128::from(b)),
        &mut status,
    );
    (r.to_bits() as u64, status)
}
