//! End-to-end tests of the interpreter: IR built by hand, compiled and run.
//!
//! - [`conformance`]: every operator on every type against [`nacre_ir::semantics`].
//! - [`programs`]: loops, block parameters, memory, calls, recursion, externs and traps,
//!   against plain Rust.
//! - [`launch`]: kernel launches through a recording launcher, and skipped kernels.
//! - [`stack`]: deep recursion is a stack-overflow trap.

mod conformance;
mod launch;
mod programs;
mod stack;

use crate::{InterpExecutable, Interpreter};
use nacre_backend::Linkage;
use nacre_ir::{verify, Const, FuncKind, Function, FunctionBuilder, Module, Type, Value};

/// Verifies and compiles a module that needs no linkage.
fn compile(module: Module) -> InterpExecutable {
    compile_linked(module, &Linkage::default())
}

/// Verifies and compiles a module with its linkage.
fn compile_linked(module: Module, linkage: &Linkage) -> InterpExecutable {
    let verified = verify(module).expect("valid IR");
    Interpreter::new()
        .compile_module(&verified, linkage)
        .expect("lowering succeeds")
}

/// Builds a host function from its signature; `build` gets the entry block's parameters.
fn function(
    name: &str,
    params: Vec<Type>,
    ret: Option<Type>,
    build: impl FnOnce(&mut FunctionBuilder<'_>, &[Value]),
) -> Function {
    FunctionBuilder::build(name, FuncKind::Host, &params, ret, build)
}

/// Compiles a module holding one function, its entry.
fn single(
    params: Vec<Type>,
    ret: Option<Type>,
    build: impl FnOnce(&mut FunctionBuilder<'_>, &[Value]),
) -> InterpExecutable {
    let mut m = Module::new();
    let id = m.add_function(function("f", params, ret, build));
    m.entry = Some(id);
    compile(m)
}

/// Compiles a module without verifying it, so that operator/type combinations the verifier
/// rejects can still be checked against the reference semantics, which defines them all.
fn compile_unverified(module: &Module) -> InterpExecutable {
    let program =
        crate::lower::lower_module(module, &Linkage::default()).expect("lowering succeeds");
    InterpExecutable {
        program,
        listing: std::sync::OnceLock::new(),
    }
}

/// As [`single`], without verification (see [`compile_unverified`]).
fn single_unverified(
    params: Vec<Type>,
    ret: Option<Type>,
    build: impl FnOnce(&mut FunctionBuilder<'_>, &[Value]),
) -> InterpExecutable {
    let mut m = Module::new();
    let id = m.add_function(function("f", params, ret, build));
    m.entry = Some(id);
    compile_unverified(&m)
}

/// A constant.
fn konst(b: &mut FunctionBuilder<'_>, ty: Type, bits: u64) -> Value {
    b.constant(Const {
        ty,
        bits: u128::from(bits),
    })
}
