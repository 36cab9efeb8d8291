//! Test support: the host function that launches a test kernel, and the kernel of a module.

use nacre_ir::{FuncId, FuncKind, Function, FunctionBuilder, Module, Type};

/// Adds a host function taking `params` that launches kernel `k` once with constant `grid`
/// and `block` shapes, passing its own parameters, and makes it the module's entry.
pub(crate) fn launch_once(
    m: &mut Module,
    k: FuncId,
    params: &[Type],
    grid: [u32; 3],
    block: [u32; 3],
) {
    let host = m.add_function(FunctionBuilder::build(
        "host",
        FuncKind::Host,
        params,
        None,
        |b, a| {
            let grid = grid.map(|n| b.const_u32(n));
            let block = block.map(|n| b.const_u32(n));
            b.launch(k, grid, block, a.to_vec());
            b.ret(None);
        },
    ));
    m.entry = Some(host);
}

/// The module's (first) kernel.
pub(crate) fn kernel(m: &mut Module) -> &mut Function {
    m.functions
        .values_mut()
        .find(|f| f.kind == FuncKind::Kernel)
        .expect("a kernel")
}
