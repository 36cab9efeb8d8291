//! The lowered form of a module: [`Program`], its functions and externs, and its listing.
//!
//! A lowered function's frame is a window of `nregs` register slots laid out as
//! `[params | constants | other values | scratch]`: the entry block's parameters come first (so
//! a caller copies arguments to slots `0..nparams`), then the deduplicated constants (copied
//! from [`LoweredFunc::consts`] when a frame is entered), then every other value, then one
//! scratch slot used to break parallel-move cycles and to receive ignored call results.

use crate::ops::{Op, Reg};
use nacre_backend::{DynCall, LaunchFn};
use std::fmt::Write;

/// A lowered IR function.
#[derive(Clone, Debug)]
pub(crate) struct LoweredFunc {
    /// The IR function's name.
    pub name: String,
    /// The instructions; execution starts at offset 0.
    pub code: Vec<Op>,
    /// Frame size in slots (at least 1: the scratch slot).
    pub nregs: usize,
    /// Number of parameters (slots `0..nparams`).
    pub nparams: usize,
    /// Constant values for slots `nparams..nparams + consts.len()`.
    pub consts: Vec<u128>,
    /// Per parameter, the mask that normalises an argument passed from outside.
    pub param_masks: Vec<u64>,
    /// Argument slots of the calls in this function, referenced by [`crate::ops::CallOp`].
    pub arg_pool: Vec<Reg>,
    /// Code offset of every laid-out block, in layout order (for the listing).
    pub block_starts: Vec<(String, u32)>,
}

/// An external function, with what is needed to call it through its trampoline.
#[derive(Copy, Clone, Debug)]
pub(crate) struct ExternEntry {
    /// The function's address.
    pub addr: usize,
    /// The trampoline created for that address and signature.
    pub dyn_call: DynCall,
    /// The mask that normalises the returned bits (0 for functions without a result).
    pub ret_mask: u64,
}

/// A kernel that host code launches, with what is needed to launch it.
#[derive(Clone, Debug)]
pub(crate) struct LaunchEntry {
    /// The kernel's name, for the listing.
    pub name: String,
    /// The module's launcher (see [`nacre_backend::LaunchBinding`]).
    pub launcher: LaunchFn,
    /// The GPU runtime's handle of the kernel.
    pub handle: usize,
}

/// A whole lowered module.
#[derive(Clone, Debug)]
pub(crate) struct Program {
    /// All functions; [`crate::ops::CallOp::callee`] of a `Call` indexes this.
    pub funcs: Vec<LoweredFunc>,
    /// All externs; [`crate::ops::CallOp::callee`] of a `CallExtern` indexes this.
    pub externs: Vec<ExternEntry>,
    /// Names of the externs, for the listing.
    pub extern_names: Vec<String>,
    /// The launched kernels; [`crate::ops::LaunchOp::kernel`] indexes this.
    pub launches: Vec<LaunchEntry>,
    /// Index of the entry function.
    pub entry: usize,
}

impl Program {
    /// A readable, deterministic dump of the lowered code.
    pub(crate) fn listing(&self) -> String {
        let mut out = String::new();
        for (i, func) in self.funcs.iter().enumerate() {
            let marker = if i == self.entry { " (entry)" } else { "" };
            let _ = writeln!(
                out,
                "function #{i} @{}{marker}: {} params, {} consts, {} regs",
                func.name,
                func.nparams,
                func.consts.len(),
                func.nregs
            );
            for (k, c) in func.consts.iter().enumerate() {
                let _ = writeln!(out, "    const r{} = {c:#x}", func.nparams + k);
            }
            let mut blocks = func.block_starts.iter().peekable();
            for (pc, op) in func.code.iter().enumerate() {
                while let Some((name, _)) = blocks.next_if(|(_, start)| *start as usize == pc) {
                    let _ = writeln!(out, "  {name}:");
                }
                let _ = write!(out, "    {pc:4}  ");
                match op {
                    Op::Call(c) | Op::CallExtern(c) => {
                        let (kind, callee) = if let Op::Call(_) = op {
                            (
                                "call",
                                self.funcs.get(c.callee as usize).map(|f| f.name.as_str()),
                            )
                        } else {
                            (
                                "call_extern",
                                self.extern_names.get(c.callee as usize).map(String::as_str),
                            )
                        };
                        let _ = write!(out, "r{} = {kind} @{}(", c.d, callee.unwrap_or("?"));
                        let start = c.args as usize;
                        let args = func
                            .arg_pool
                            .get(start..start + c.nargs as usize)
                            .unwrap_or(&[]);
                        for (k, a) in args.iter().enumerate() {
                            let sep = if k > 0 { ", " } else { "" };
                            let _ = write!(out, "{sep}r{a}");
                        }
                        out.push(')');
                    }
                    Op::Launch(l) => {
                        let kernel = self.launches.get(l.kernel as usize);
                        let _ = write!(out, "launch @{}", kernel.map_or("?", |k| k.name.as_str()));
                        let start = l.args as usize;
                        let regs = func
                            .arg_pool
                            .get(start..start.saturating_add(l.sizes() + l.nargs as usize))
                            .unwrap_or(&[]);
                        let list = |rs: &[Reg]| {
                            rs.iter()
                                .map(|r| format!("r{r}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        };
                        let (dims, args) = regs.split_at(regs.len().min(l.sizes()));
                        let (grid, rest) = dims.split_at(dims.len().min(3));
                        let (block, shared) = rest.split_at(rest.len().min(3));
                        let _ = write!(out, " grid({}) block({})", list(grid), list(block));
                        if !shared.is_empty() {
                            let _ = write!(out, " shared({})", list(shared));
                        }
                        let _ = write!(out, " args({})", list(args));
                    }
                    _ => {
                        let _ = write!(out, "{op}");
                    }
                }
                out.push('\n');
            }
            for (name, _) in blocks {
                let _ = writeln!(out, "  {name}: (empty)");
            }
        }
        out
    }
}
