//! The C source of a whole module: [`emit_c`].
//!
//! GPU kernels are not printed (a GPU runtime compiles them); host code reaches them only
//! through launches.
//!
//! Layout of the generated file, in this order:
//!
//! 1. the preamble (`#include <stdint.h>`, `<string.h>`, `<math.h>`);
//! 2. the helper functions the module uses (see [`crate::helpers`]);
//! 3. when the module has external functions, the table [`EXTERNS_SYMBOL`] of their
//!    addresses, which the loader fills in before the first call (the source itself stays
//!    free of addresses, so it is deterministic);
//! 4. when host code launches kernels, the launcher pointer [`LAUNCHER_SYMBOL`] and the table
//!    [`KERNEL_HANDLES_SYMBOL`] of the launched kernels' handles, filled in by the loader from
//!    the linkage's [`nacre_backend::LaunchBinding`] (the source does not depend on the binding);
//! 5. when a host function is recursive, the stack-check pointer
//!    [`crate::stack_check::STACK_CHECK_SYMBOL`], filled in by the loader (see
//!    [`crate::stack_check`]);
//! 6. forward declarations of all host IR functions (so that calls and recursion need no
//!    ordering);
//! 7. the host IR functions, all `static`, in module order (recursive ones opening with the
//!    stack check);
//! 8. the exported [`ENTRY_SYMBOL`], which calls the entry function with the native calling
//!    convention, and [`ARRAY_ENTRY_SYMBOL`], which decodes arguments from their bit encoding
//!    (see [`nacre_ir::semantics`]), calls it and encodes the result.

use crate::dialect::{CDialect, Dialect, StructuredCDialect};
use crate::function::{FunctionPrinter, LaunchTables, ModuleContext, Side};
use crate::helpers::Helper;
use crate::names::unique_names;
use crate::stack_check::StackCheck;
use nacre_backend::{BackendError, LaunchFn, Linkage};
use nacre_ir::{FuncId, FuncKind, InstKind, Module, Scalar, Type, VerifiedModule};
use nacre_kernel::LaunchShape;
use std::collections::BTreeSet;

/// The exported symbol of the entry function, with the native calling convention.
pub const ENTRY_SYMBOL: &str = "nacre_entry";

/// The exported symbol of the array trampoline
/// `uint64_t nacre_entry_array(const uint64_t *args, uint32_t *status)`.
pub const ARRAY_ENTRY_SYMBOL: &str = "nacre_entry_array";

/// The exported table `void (*nacre_externs[N])(void)` of external-function addresses, in
/// [`nacre_ir::ExternId`] order; present only when the module declares external functions.
pub const EXTERNS_SYMBOL: &str = "nacre_externs";

/// The exported launcher pointer
/// `void (*nacre_launcher)(uintptr_t, const uint32_t *, const uint64_t *, uint32_t *)` (see
/// [`nacre_backend::LaunchFn`]); present only when host code launches kernels.
pub const LAUNCHER_SYMBOL: &str = "nacre_launcher";

/// The exported table `uintptr_t nacre_kernel_handles[N]` of the launched kernels' handles, in
/// the order of [`launched_kernels`]; present only when host code launches kernels.
pub const KERNEL_HANDLES_SYMBOL: &str = "nacre_kernel_handles";

/// Prints a module as C99 source (GNU dialect). The output depends only on the module's
/// structure, never on addresses or the environment (not even on its launch binding: the
/// loader fills in the launcher and the kernels' handles).
///
/// The module is verified, so the printer trusts its structure and types. Fails with
/// [`BackendError::Unsupported`] for constructs plain C cannot express (a GPU kernel as the
/// entry, calls of kernels).
pub fn emit_c(module: &VerifiedModule) -> Result<String, BackendError> {
    emit_with(&CDialect, module.module())
}

/// [`emit_c`] with control flow printed without `goto`, as nested `if`s, `for (;;)` loops and
/// `do { } while (0)` regions ([`StructuredCDialect`]): the form the Metal printer uses, which
/// the C compiler can then run on the host.
///
/// Fails as [`emit_c`] does, and with [`BackendError::Unsupported`] for control flow that
/// cannot be structured (irreducible, or nested too deeply).
pub fn emit_c_structured(module: &VerifiedModule) -> Result<String, BackendError> {
    emit_with(&StructuredCDialect, module.module())
}

/// The kernels that host functions launch, without repetition, in module order: the order of
/// the handle table [`KERNEL_HANDLES_SYMBOL`].
pub fn launched_kernels(module: &Module) -> Vec<FuncId> {
    let mut kernels = BTreeSet::new();
    for func in module.functions.values() {
        if func.kind != FuncKind::Host {
            continue;
        }
        for data in func.live_insts() {
            if let InstKind::Launch(l) = &data.kind {
                kernels.insert(l.kernel);
            }
        }
    }
    kernels.into_iter().collect()
}

/// What the loader writes into the launch globals: the launcher and the handle of every
/// kernel of [`launched_kernels`], in order, from `linkage`; `None` when host code launches no
/// kernel.
///
/// Fails with [`BackendError::Unsupported`] when the module launches kernels but the linkage
/// has no launch binding, or its binding has no handle for a launched kernel.
pub fn launch_table(
    module: &Module,
    linkage: &Linkage,
) -> Result<Option<(LaunchFn, Vec<usize>)>, BackendError> {
    let kernels = launched_kernels(module);
    if kernels.is_empty() {
        return Ok(None);
    }
    let unbound = |why: String| BackendError::unbound_launch(CDialect.backend_name(), &why);
    let binding = linkage
        .launch
        .as_ref()
        .ok_or_else(|| unbound("the linkage has none".to_string()))?;
    let handles = kernels
        .iter()
        .map(|k| {
            binding.handles.get(k).copied().ok_or_else(|| {
                let name = module.functions.get(*k).map_or("?", |f| f.name.as_str());
                unbound(format!("it has no handle for kernel @{name}"))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some((binding.launcher, handles)))
}

/// The C identifier of every function, indexed by [`FuncId`]. Host functions are named first,
/// so that their identifiers do not depend on the module's kernels.
pub(crate) fn function_names(module: &Module) -> Vec<String> {
    let host = module
        .functions
        .iter()
        .filter(|(_, f)| f.kind == FuncKind::Host);
    let kernels = module
        .functions
        .iter()
        .filter(|(_, f)| f.kind != FuncKind::Host);
    let order: Vec<(FuncId, &str)> = host
        .chain(kernels)
        .map(|(id, f)| (id, f.name.as_str()))
        .collect();
    let unique = unique_names(order.iter().map(|&(_, name)| name));
    let mut names = vec![String::new(); module.functions.len()];
    for ((id, _), name) in order.into_iter().zip(unique) {
        names[id.as_u32() as usize] = name;
    }
    names
}

/// Prints a verified module for the host dialect `d`.
fn emit_with<D: Dialect + ?Sized>(d: &D, module: &Module) -> Result<String, BackendError> {
    let names = function_names(module);
    let kernels = launched_kernels(module);
    let stack_check = StackCheck::new(module);
    let mut ctx = ModuleContext {
        dialect: d,
        side: Side::Host,
        module,
        names: &names,
        extern_table: Some(EXTERNS_SYMBOL),
        launch_tables: Some(LaunchTables {
            launcher: LAUNCHER_SYMBOL,
            handles: KERNEL_HANDLES_SYMBOL,
            kernels: &kernels,
        }),
        helpers: BTreeSet::new(),
        kernel_shape: LaunchShape::default(),
        stack_check: Some(&stack_check),
    };
    // The verifier guarantees an entry function that exists.
    let Some(entry) = module.entry else {
        unreachable!("a verified module has an entry function");
    };
    let entry_function = &module.functions[entry];
    if entry_function.kind != FuncKind::Host {
        return Err(ctx.unsupported(format!(
            "GPU kernel @{} as an entry function",
            entry_function.name
        )));
    }

    // Kernels are compiled by a GPU runtime, not here.
    let host = || {
        module
            .functions
            .iter()
            .filter(|(_, f)| f.kind == FuncKind::Host)
    };
    let mut definitions = Vec::with_capacity(module.functions.len());
    for (id, _) in host() {
        definitions.push(FunctionPrinter::new(&mut ctx, id).print()?);
    }
    let mut declarations = String::new();
    for (id, func) in host() {
        let qualifier = d
            .function_qualifier(func.kind)
            .map_err(|e| ctx.refused(e))?;
        declarations.push_str(&ctx.prototype(func, ctx.function_name(id), qualifier, None)?);
        declarations.push_str(";\n");
    }
    let exports = exports(&mut ctx, entry)?;

    let mut out = String::from("/* Generated by nacre-c. */\n");
    out.push_str(d.preamble());
    out.push('\n');
    for &helper in &ctx.helpers {
        out.push_str(&d.helper_definition(helper));
        out.push('\n');
    }
    if !module.externs.is_empty() {
        out.push_str("/* External functions, filled in by the loader: ");
        for (i, (_, e)) in module.externs.iter().enumerate() {
            let name: String = e
                .name
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            out.push_str(&format!("{}[{i}] @{name}", if i > 0 { ", " } else { "" }));
        }
        out.push_str(&format!(
            ". */\nvoid (*{EXTERNS_SYMBOL}[{}])(void);\n\n",
            module.externs.len()
        ));
    }
    if !kernels.is_empty() {
        out.push_str("/* Kernel launches, filled in by the loader: handles ");
        for (i, &k) in kernels.iter().enumerate() {
            let name: String = module.functions[k]
                .name
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            out.push_str(&format!("{}[{i}] @{name}", if i > 0 { ", " } else { "" }));
        }
        let (u32_type, u64_type, address) = (
            d.scalar_type(Scalar::U32),
            d.scalar_type(Scalar::U64),
            d.address_type(),
        );
        out.push_str(&format!(
            ". */\nvoid (*{LAUNCHER_SYMBOL})({address}, const {u32_type} *, const {u64_type} *, {u32_type} *);\n{address} {KERNEL_HANDLES_SYMBOL}[{}];\n\n",
            kernels.len()
        ));
    }
    out.extend(stack_check.declaration(d));
    out.push_str(&declarations);
    for def in definitions {
        out.push('\n');
        out.push_str(&def);
    }
    out.push('\n');
    out.push_str(&exports);
    Ok(out)
}

/// The exported entry and array trampoline.
fn exports<D: Dialect + ?Sized>(
    ctx: &mut ModuleContext<'_, D>,
    entry: FuncId,
) -> Result<String, BackendError> {
    let func = &ctx.module.functions[entry];
    let name = ctx.function_name(entry);
    let params: Vec<String> = (0..func.signature.params.len())
        .map(|i| format!("p{i}"))
        .collect();
    let mut call_args = params.clone();
    call_args.push("status".to_string());
    let call = format!("{name}({})", call_args.join(", "));

    let mut out = ctx.prototype(func, ENTRY_SYMBOL, "", Some(&params))?;
    out.push_str(" {\n");
    match func.signature.ret {
        Some(_) => out.push_str(&format!("    return {call};\n}}\n\n")),
        None => out.push_str(&format!("    {call};\n}}\n\n")),
    }

    out.push_str(&format!(
        "uint64_t {ARRAY_ENTRY_SYMBOL}(const uint64_t *args, uint32_t *status) {{\n"
    ));
    for (i, (&ty, p)) in func.signature.params.iter().zip(&params).enumerate() {
        let value = match ty {
            Type::Scalar(Scalar::Bool) => format!("(uint8_t)(args[{i}] & 1)"),
            Type::Scalar(Scalar::F32) => {
                ctx.helpers.insert(Helper::FromBits(Scalar::F32));
                format!(
                    "{}((uint32_t)args[{i}])",
                    Helper::FromBits(Scalar::F32).name()
                )
            }
            Type::Scalar(Scalar::F64) => {
                ctx.helpers.insert(Helper::FromBits(Scalar::F64));
                format!("{}(args[{i}])", Helper::FromBits(Scalar::F64).name())
            }
            Type::Scalar(s) => format!("({})args[{i}]", ctx.dialect.scalar_type(s)),
            Type::Ptr(..) => format!("({})(uintptr_t)args[{i}]", ctx.c_type(ty)?),
        };
        out.push_str(&format!("    {} = {value};\n", ctx.declaration(ty, p)?));
    }
    match func.signature.ret {
        None => out.push_str(&format!("    {call};\n    return 0;\n")),
        Some(ty) => {
            let bits = ctx.bits_of(ty, "r");
            out.push_str(&format!(
                "    {} = {call};\n    return {bits};\n",
                ctx.declaration(ty, "r")?
            ));
        }
    }
    out.push_str("}\n");
    Ok(out)
}
