//! The source of one GPU kernel in a device dialect: [`emit_kernel_source`].
//!
//! A GPU runtime compiles each kernel on its own, with the non-kernel functions it calls
//! (directly or through other calls) as device functions. Layout of the generated source, in
//! this order:
//!
//! 1. a comment naming the kernel;
//! 2. the dialect's preamble ([`Dialect::preamble`]);
//! 3. the helper functions the printed code uses (see [`crate::helpers`]), in a fixed order;
//! 4. forward declarations of the device functions, in module order (so that calls and
//!    recursion need no ordering);
//! 5. the device functions, in module order, with [`Dialect::device_function_qualifier`];
//! 6. the kernel, with the head of [`Dialect::kernel_prototype`].
//!
//! Identifiers are those of the whole module (see [`crate::names`]), so a kernel keeps its
//! symbol whichever other kernels the module holds. The output depends only on the module's
//! structure. Device code cannot call external (Rust) functions or launch kernels: both are
//! [`BackendError::Unsupported`].

use crate::dialect::Dialect;
use crate::emit::function_names;
use crate::function::{FunctionPrinter, ModuleContext, Side};
use nacre_backend::BackendError;
use nacre_ir::{FuncId, FuncKind, InstKind, Module, VerifiedModule};
use nacre_kernel::LaunchShape;
use std::collections::BTreeSet;

/// The source of one kernel.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct KernelCode {
    /// The kernel's symbol in `source` (what the runtime looks up after compiling it).
    pub symbol: String,
    /// The complete source: preamble, helpers, device functions and the kernel.
    pub source: String,
}

/// The functions `root` calls, directly or transitively, without `root` itself unless it is
/// recursive; unknown callees (which a verified module does not have) are left out.
pub fn callees(module: &Module, root: FuncId) -> BTreeSet<FuncId> {
    let mut found = BTreeSet::new();
    let mut work = vec![root];
    while let Some(f) = work.pop() {
        let Some(func) = module.functions.get(f) else {
            continue;
        };
        for data in func.live_insts() {
            if let InstKind::Call(callee, _) = &data.kind {
                if module.functions.get(*callee).is_some() && found.insert(*callee) {
                    work.push(*callee);
                }
            }
        }
    }
    found
}

/// Prints kernel `kernel` of `module`, with the device functions it calls, in dialect `d`;
/// `shape` is what the kernel was specialised for ([`nacre_kernel::specialised_for_launches`]).
///
/// The module is verified, so the printer trusts its structure and types. Fails with
/// [`BackendError::Codegen`] when `kernel` is not a kernel of the module, and with
/// [`BackendError::Unsupported`] for what the dialect cannot express (including calls of
/// kernels, external calls and launches in device code).
pub fn emit_kernel_source<D: Dialect + ?Sized>(
    d: &D,
    module: &VerifiedModule,
    kernel: FuncId,
    shape: LaunchShape,
) -> Result<KernelCode, BackendError> {
    let module = module.module();
    let names = function_names(module);
    let mut ctx = ModuleContext {
        dialect: d,
        side: Side::Device,
        module,
        names: &names,
        extern_table: None,
        launch_tables: None,
        helpers: BTreeSet::new(),
        kernel_shape: shape,
        stack_check: None,
    };
    let func = module
        .functions
        .get(kernel)
        .ok_or_else(|| ctx.codegen(format!("no function {kernel}")))?;
    if func.kind != FuncKind::Kernel {
        return Err(ctx.codegen(format!(
            "@{} is not a kernel; only kernels are compiled for the device on their own",
            func.name
        )));
    }
    let symbol = ctx.function_name(kernel).to_string();

    let device: Vec<FuncId> = callees(module, kernel).into_iter().collect();
    for &f in &device {
        let callee = &module.functions[f];
        if callee.kind == FuncKind::Kernel {
            return Err(ctx.unsupported(format!(
                "calls to GPU kernel @{} (kernels are launched)",
                callee.name
            )));
        }
    }
    let mut definitions = Vec::with_capacity(device.len() + 1);
    for &f in &device {
        definitions.push(FunctionPrinter::new(&mut ctx, f).print()?);
    }
    definitions.push(FunctionPrinter::new(&mut ctx, kernel).print()?);
    let mut declarations = String::new();
    if !device.is_empty() {
        let qualifier = d.device_function_qualifier().map_err(|e| ctx.refused(e))?;
        for &f in &device {
            let name = ctx.function_name(f);
            declarations.push_str(&ctx.prototype(&module.functions[f], name, qualifier, None)?);
            declarations.push_str(";\n");
        }
    }

    let comment: String = func
        .name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    let mut out = format!(
        "/* Generated by nacre-c for the {} backend: kernel @{comment}. */\n",
        d.backend_name()
    );
    out.push_str(d.preamble());
    out.push('\n');
    for &helper in &ctx.helpers {
        out.push_str(&d.helper_definition(helper));
        out.push('\n');
    }
    out.push_str(&declarations);
    for (i, def) in definitions.into_iter().enumerate() {
        if i > 0 || !declarations.is_empty() {
            out.push('\n');
        }
        out.push_str(&def);
    }
    Ok(KernelCode {
        symbol,
        source: out,
    })
}
