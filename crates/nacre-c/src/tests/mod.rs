//! Tests of the C backend: emitted-source snapshots, execution against
//! [`nacre_ir::semantics`], kernel launches, and the stack check of recursive functions.

mod kernel;
mod launch;
mod ops;
mod programs;
mod snapshots;
mod stack;
mod structured;

use crate::{CBackend, CExecutable, COptions};
use nacre_backend::Linkage;
use nacre_ir::{Const, FuncKind, Function, FunctionBuilder, Module, Type, Value, VerifiedModule};

/// Builds a host function; `body` gets the builder positioned in the entry block and the
/// entry parameters.
pub(crate) fn function(
    name: &str,
    params: &[Type],
    ret: Option<Type>,
    body: impl FnOnce(&mut FunctionBuilder<'_>, &[Value]),
) -> Function {
    FunctionBuilder::build(name, FuncKind::Host, params, ret, body)
}

/// A module of `functions` whose entry is the first.
pub(crate) fn module(functions: Vec<Function>) -> Module {
    let mut m = Module::new();
    let ids: Vec<_> = functions.into_iter().map(|f| m.add_function(f)).collect();
    m.entry = ids.first().copied();
    m
}

/// A constant.
pub(crate) fn konst(b: &mut FunctionBuilder<'_>, ty: Type, bits: u64) -> Value {
    b.constant(Const {
        ty,
        bits: u128::from(bits),
    })
}

/// Verifies a module that the test built valid, with its half-precision arithmetic widened
/// to `f32` as the engine widens it (`nacre_ir::transform::widen_half`).
pub(crate) fn verified(m: Module) -> VerifiedModule {
    let v = nacre_ir::verify(m).unwrap_or_else(|e| panic!("test IR is invalid: {e}"));
    nacre_ir::transform::widen_half(v)
}

/// Verifies and compiles a module that needs no linkage with the default options.
pub(crate) fn compile(m: Module) -> CExecutable {
    compile_linked(m, &Linkage::default())
}

/// Verifies and compiles a module with its linkage and the default options.
pub(crate) fn compile_linked(m: Module, linkage: &Linkage) -> CExecutable {
    CBackend::new(COptions::default())
        .compile_module(&verified(m), linkage)
        .unwrap_or_else(|e| panic!("{e}"))
}
