//! The stable text form of IR (`Display` for [`Function`] and [`Module`]).
//!
//! ```text
//! function @add(i32, i32) -> i32 {
//! block0(v0: i32, v1: i32):
//!     v2 = add.i32 v0, v1
//!     return v2
//! }
//! ```
//!
//! Operators print as `name.type`, where the type is the operands' type (the result type for
//! `const`, `cast` and `load`). Values and blocks print by their ids, which are deterministic
//! for a given trace. The text is everything the IR holds. [`with_loops`] and
//! [`module_with_loops`] add the loop analysis as comments, for dumps of valid IR.

use crate::analysis::loops::{compute_loops, LoopInfo};
use crate::function::{FuncKind, Function, Signature};
use crate::instructions::{Const, InstKind};
use crate::module::Module;
use crate::types::{Scalar, Type};
use std::fmt::{self, Write};

fn write_signature(f: &mut impl Write, sig: &Signature) -> fmt::Result {
    f.write_char('(')?;
    for (i, p) in sig.params.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{p}")?;
    }
    f.write_char(')')?;
    if let Some(r) = sig.ret {
        write!(f, " -> {r}")?;
    }
    Ok(())
}

/// Formats a constant's value (without its type).
pub fn const_value(c: Const) -> String {
    match c.ty {
        Type::Scalar(Scalar::Bool) => (c.bits & 1 != 0).to_string(),
        Type::Scalar(Scalar::I8) => (c.bits as i8).to_string(),
        Type::Scalar(Scalar::I16) => (c.bits as i16).to_string(),
        Type::Scalar(Scalar::I32) => (c.bits as i32).to_string(),
        Type::Scalar(Scalar::I64) => (c.bits as i64).to_string(),
        Type::Scalar(Scalar::I128) => (c.bits as i128).to_string(),
        Type::Scalar(Scalar::F32) => format!("{:?}", f32::from_bits(c.bits as u32)),
        Type::Scalar(Scalar::F64) => format!("{:?}", f64::from_bits(c.bits as u64)),
        Type::Scalar(s @ (Scalar::F16 | Scalar::BF16)) => {
            format!("{:?}", crate::semantics::half_to_f32(s, c.bits))
        }
        Type::Scalar(_) => c.bits.to_string(),
        Type::Ptr(..) => format!("{:#x}", c.bits),
    }
}

fn write_args(f: &mut impl Write, args: &[crate::Value]) -> fmt::Result {
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{a}")?;
    }
    Ok(())
}

fn write_function(
    f: &mut impl Write,
    func: &Function,
    module: Option<&Module>,
    loops: Option<&LoopInfo>,
) -> fmt::Result {
    let kw = match func.kind {
        FuncKind::Host => "function",
        FuncKind::Kernel => "kernel",
    };
    write!(f, "{kw} @{}", func.name)?;
    write_signature(f, &func.signature)?;
    f.write_str(" {\n")?;
    for &block in &func.layout {
        let data = &func.blocks[block];
        write!(f, "{block}")?;
        if !data.params.is_empty() {
            f.write_char('(')?;
            for (i, p) in data.params.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{p}: {}", func.values[*p].ty)?;
            }
            f.write_char(')')?;
        }
        f.write_char(':')?;
        if let Some(loops) = loops {
            let depth = loops.depth[block];
            if loops.headers.contains(&block) {
                write!(f, "  ; loop header, depth {depth}")?;
            } else if depth > 0 {
                if let Some(h) = loops.innermost[block] {
                    write!(f, "  ; in loop {h}, depth {depth}")?;
                }
            }
        }
        f.write_char('\n')?;
        for &inst in &data.insts {
            let d = &func.insts[inst];
            f.write_str("    ")?;
            if let Some(r) = d.result {
                write!(f, "{r} = ")?;
            }
            let ty = |v: crate::Value| func.values[v].ty;
            match &d.kind {
                InstKind::Const(c) => write!(f, "const.{} {}", c.ty, const_value(*c))?,
                InstKind::Unary(op, a) => write!(f, "{}.{} {a}", op.name(), ty(*a))?,
                InstKind::Binary(op, a, b) => write!(f, "{}.{} {a}, {b}", op.name(), ty(*a))?,
                InstKind::Fma(a, b, c) => write!(f, "fma.{} {a}, {b}, {c}", ty(*a))?,
                InstKind::Math(m, a) => write!(f, "{}.{} {a}", m.name(), ty(*a))?,
                InstKind::Math2(m, a, b) => write!(f, "{}.{} {a}, {b}", m.name(), ty(*a))?,
                InstKind::Cmp(op, a, b) => write!(f, "{}.{} {a}, {b}", op.name(), ty(*a))?,
                InstKind::Cast(a) => {
                    let to = d.result.map(ty).unwrap_or(Type::BOOL);
                    write!(f, "cast.{} {a}  ; from {}", to, ty(*a))?
                }
                InstKind::Select(c, a, b) => write!(f, "select.{} {c}, {a}, {b}", ty(*a))?,
                InstKind::ElemPtr(p, i) => write!(f, "elem_ptr.{} {p}, {i}", ty(*p))?,
                InstKind::Load(p) => write!(f, "load.{} {p}", ty(*p))?,
                InstKind::Store(p, v) => write!(f, "store.{} {p}, {v}", ty(*v))?,
                InstKind::AtomicRmw {
                    op,
                    ptr,
                    value,
                    order,
                    scope,
                } => write!(
                    f,
                    "atomic_{}.{}.{}.{} {ptr}, {value}",
                    op.name(),
                    ty(*value),
                    order.name(),
                    scope.name()
                )?,
                InstKind::AtomicCas {
                    ptr,
                    expected,
                    new,
                    order,
                    scope,
                } => write!(
                    f,
                    "atomic_cas.{}.{}.{} {ptr}, {expected}, {new}",
                    ty(*new),
                    order.name(),
                    scope.name()
                )?,
                InstKind::Fence { order, scope } => {
                    write!(f, "fence.{}.{}", order.name(), scope.name())?
                }
                InstKind::BoundsCheck {
                    addr,
                    base,
                    bytes,
                    trap,
                } => {
                    write!(f, "bounds_check.{} {addr}, {base}, {bytes}", ty(*addr))?;
                    if let crate::Trap::OutOfBounds { func, param } = trap {
                        match (func, param) {
                            (Some(func), Some(p)) => write!(f, "  ; f{func} param {p}")?,
                            (Some(func), None) => write!(f, "  ; f{func}")?,
                            _ => {}
                        }
                    }
                }
                InstKind::Call(callee, args) => {
                    match module.and_then(|m| m.functions.get(*callee)) {
                        Some(c) => write!(f, "call @{}(", c.name)?,
                        None => write!(f, "call {callee}(")?,
                    }
                    write_args(f, args)?;
                    f.write_char(')')?
                }
                InstKind::CallExtern(ext, args) => {
                    match module.and_then(|m| m.externs.get(*ext)) {
                        Some(e) => write!(f, "call_extern @{}(", e.name)?,
                        None => write!(f, "call_extern {ext}(")?,
                    }
                    write_args(f, args)?;
                    f.write_char(')')?
                }
                InstKind::GpuIndex(index, dim) => write!(f, "{}.{}", index.name(), dim.name())?,
                InstKind::Barrier => f.write_str("barrier")?,
                InstKind::SharedAlloc { elem, len } => write!(f, "shared_alloc.{elem} {len}")?,
                InstKind::LocalArray { elem, len } => write!(f, "local_array.{elem} {len}")?,
                InstKind::DynamicShared { elem } => write!(f, "dynamic_shared.{elem}")?,
                InstKind::DynamicSharedBytes => f.write_str("dynamic_shared_bytes")?,
                InstKind::LaneId => f.write_str("lane_id")?,
                InstKind::Shuffle(op, v, lane) => {
                    write!(f, "{}.{} {v}, {lane}", op.name(), ty(*v))?
                }
                InstKind::Warp(op, v) => write!(f, "{}.{} {v}", op.name(), ty(*v))?,
                InstKind::BlockVote(op, v) => write!(f, "{} {v}", op.name())?,
                InstKind::Launch(l) => {
                    match module.and_then(|m| m.functions.get(l.kernel)) {
                        Some(k) => write!(f, "launch @{}", k.name)?,
                        None => write!(f, "launch {}", l.kernel)?,
                    }
                    let [gx, gy, gz] = l.grid;
                    let [bx, by, bz] = l.block;
                    write!(f, " grid({gx}, {gy}, {gz}) block({bx}, {by}, {bz})")?;
                    if let Some(bytes) = l.shared_bytes {
                        write!(f, " shared({bytes})")?;
                    }
                    f.write_str(" (")?;
                    write_args(f, &l.args)?;
                    f.write_char(')')?
                }
                InstKind::Jump(dest) => write!(f, "jump {dest}")?,
                InstKind::Branch {
                    cond,
                    then_dest,
                    else_dest,
                } => write!(f, "br {cond}, {then_dest}, {else_dest}")?,
                InstKind::Return(Some(v)) => write!(f, "return {v}")?,
                InstKind::Return(None) => f.write_str("return")?,
            }
            f.write_char('\n')?;
        }
    }
    f.write_str("}\n")
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_function(f, self, None, None)
    }
}

/// A function printed with its loops as comments on the block headers. The function must be
/// valid (verified), as the loop analysis assumes.
pub fn with_loops(func: &Function) -> impl fmt::Display + '_ {
    struct WithLoops<'a>(&'a Function);
    impl fmt::Display for WithLoops<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write_function(f, self.0, None, Some(&compute_loops(self.0)))
        }
    }
    WithLoops(func)
}

/// A verified module printed with the loops of its functions as comments.
pub fn module_with_loops(module: &crate::VerifiedModule) -> impl fmt::Display + '_ {
    struct WithLoops<'a>(&'a Module);
    impl fmt::Display for WithLoops<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write_module(f, self.0, true)
        }
    }
    WithLoops(module.module())
}

impl fmt::Display for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_module(f, self, false)
    }
}

fn write_module(f: &mut impl Write, module: &Module, loops: bool) -> fmt::Result {
    for (_, ext) in &module.externs {
        write!(f, "extern @{}", ext.name)?;
        write_signature(f, &ext.signature)?;
        f.write_char('\n')?;
    }
    for (i, (id, func)) in module.functions.iter().enumerate() {
        if i > 0 || !module.externs.is_empty() {
            f.write_char('\n')?;
        }
        if module.entry == Some(id) {
            f.write_str("; entry\n")?;
        }
        let info = loops.then(|| compute_loops(func));
        write_function(f, func, Some(module), info.as_ref())?;
    }
    Ok(())
}
