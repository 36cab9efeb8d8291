//! Wide memory accesses for lane-parallel grid-stride loops, in dialects with
//! [`Dialect::lane_group`](crate::Dialect::lane_group).
//!
//! A kernel whose canonical grid-stride loop ([`nacre_kernel::grid_stride_loop`]) has a
//! lane-parallel body ([`lane_access`]) gets, before its entry's jump into the loop, a loop over
//! *groups* of `L` consecutive iterations ([`lanes_for`] the element sizes: 4 for `f32`, 8
//! for `f16`): thread `g` runs groups `j = g, g + T, ...` below `X / L`, loads each array's
//! elements `Lj .. Lj + L - 1` as one aligned group, runs the body once per lane on them (each
//! lane in a scope that redeclares the body's values), and stores each written array's group
//! back. The loop's start then moves to `L * (X / L) + g`, so the ordinary loop runs the
//! remaining `X % L` iterations. Together the threads still run every iteration of `[0, X)`
//! exactly once.
//!
//! The group loop runs only when every array is aligned to its group's size and `X` is small
//! enough that no index wraps (`0 <= X <= max - T`); otherwise the kernel runs the plain loop
//! from `g`, as printed without this module. On the GPU, a thread then moves 16 bytes of its
//! narrowest array with one instruction instead of four or eight, as hand-tuned streaming
//! kernels do.

use super::{line, FunctionPrinter};
use crate::dialect::{lanes_for, Dialect, LaneGroup};
use nacre_backend::BackendError;
use nacre_ir::{Function, InstKind, Scalar, Type};
use nacre_kernel::{grid_stride_loop, lane_access, GridStrideLoop, LaneAccess, LaunchShape};

/// A kernel's lane-parallel grid-stride loop and how its body accesses memory.
pub(super) struct LanePlan {
    lp: GridStrideLoop,
    access: LaneAccess,
    /// Iterations per group.
    lanes: u32,
}

impl LanePlan {
    /// The entry's jump into the loop, before which the group loop is printed.
    pub(super) fn entry_jump(&self) -> nacre_ir::Inst {
        self.lp.entry_jump
    }

    /// The kernel's entry block, whose edge into the loop structured output prints it on.
    pub(super) fn entry(&self) -> nacre_ir::Block {
        self.lp.entry
    }
}

/// The lane plan of kernel `f` in dialect `d`, if its loop qualifies and the dialect has a
/// group type for every accessed element type.
pub(super) fn plan<D: Dialect + ?Sized>(
    d: &D,
    f: &Function,
    shape: &LaunchShape,
) -> Option<LanePlan> {
    let lp = grid_stride_loop(f, shape)?;
    let access = lane_access(f, &lp)?;
    let sizes = access.arrays.iter().map(|a| a.elem.bytes());
    let lanes = lanes_for(sizes.clone().min()?, sizes.max()?);
    for a in &access.arrays {
        d.lane_group(a.elem, lanes)?;
    }
    Some(LanePlan { lp, access, lanes })
}

/// The C spelling of the largest value of an index type.
fn max_macro(ty: Type) -> Option<&'static str> {
    Some(match ty.scalar()? {
        Scalar::U32 => "UINT32_MAX",
        Scalar::I32 => "INT32_MAX",
        Scalar::U64 => "UINT64_MAX",
        Scalar::I64 => "INT64_MAX",
        _ => return None,
    })
}

/// Adds `levels` of indentation to every line of `text`.
fn indented(text: &str, levels: usize) -> String {
    let pad = "    ".repeat(levels);
    text.lines().map(|l| format!("{pad}{l}\n")).collect()
}

impl<D: Dialect + ?Sized> FunctionPrinter<'_, '_, D> {
    /// Prints the group loop (see the module docs) before the entry's jump into the loop.
    pub(super) fn lane_prelude(&mut self, out: &mut String) -> Result<(), BackendError> {
        let Some(plan) = self.lanes.take() else {
            return Ok(());
        };
        let result = self.print_lane_prelude(out, &plan);
        self.lanes = Some(plan);
        result
    }

    fn print_lane_prelude(
        &mut self,
        out: &mut String,
        plan: &LanePlan,
    ) -> Result<(), BackendError> {
        let (lp, access, lanes) = (&plan.lp, &plan.access, plan.lanes);
        let f = self.func;
        // What `grid_stride_loop` and `lane_access` (nacre-kernel) promise, not what the
        // verifier checks: a mismatch is an internal error.
        let max = max_macro(lp.ty)
            .ok_or_else(|| self.internal("a lane plan over a non-integer index"))?;
        let index_type = self.ctx.c_type(lp.ty)?;
        let address = self.ctx.dialect.address_type();
        let offset = self.scalar_type(Scalar::I64);
        let (bound, start, stride) = (lp.bound, lp.start, lp.stride);

        let mut guard: Vec<String> = Vec::new();
        for a in &access.arrays {
            let bytes = a.elem.bytes() * lanes;
            guard.push(format!("(({address}){} & {}) == 0", a.base, bytes - 1));
        }
        if lp.ty.scalar().is_some_and(Scalar::is_signed_int) {
            guard.push(format!("{stride} > 0 && {bound} >= 0"));
        }
        guard.push(format!("{bound} <= {max} - {stride}"));
        line(out, 1, format_args!("if ({}) {{", guard.join(" && ")));

        let mut groups: Vec<LaneGroup> = Vec::with_capacity(access.arrays.len());
        for a in &access.arrays {
            let group = self
                .ctx
                .dialect
                .lane_group(a.elem, lanes)
                .ok_or_else(|| self.internal(format_args!("no lane group for {}", a.elem)))?;
            if !groups.iter().any(|g| g.name == group.name) {
                if let Some(definition) = &group.definition {
                    line(out, 2, definition);
                }
            }
            groups.push(group);
        }
        line(
            out,
            2,
            format_args!("{index_type} nacre_groups = {bound} / {lanes};"),
        );
        line(
            out,
            2,
            format_args!(
                "for ({index_type} nacre_j = {start}; nacre_j < nacre_groups; nacre_j += {stride}) {{"
            ),
        );
        let mut group_pointers = Vec::with_capacity(access.arrays.len());
        for (a, group) in access.arrays.iter().zip(&groups) {
            let Type::Ptr(_, space) = f.values[a.base].ty else {
                return Err(self.internal(format_args!("{} is not a pointer", a.base)));
            };
            let qualifier = self
                .ctx
                .dialect
                .address_space_qualifier(space)
                .map_err(|e| self.ctx.refused(e))?;
            group_pointers.push(format!("{qualifier}{} *", group.name));
        }
        let group_at = |k: usize| {
            format!(
                "*({})({} + ({offset})nacre_j * {lanes})",
                group_pointers[k], access.arrays[k].base
            )
        };
        for (k, (a, group)) in access.arrays.iter().zip(&groups).enumerate() {
            if a.loaded {
                line(
                    out,
                    3,
                    format_args!("{} nacre_a{k} = {};", group.name, group_at(k)),
                );
            } else {
                line(out, 3, format_args!("{} nacre_a{k};", group.name));
            }
        }

        let body = &f.blocks[lp.body].insts;
        let jump = body.last().copied();
        let printed: Vec<_> = body
            .iter()
            .copied()
            .filter(|&i| Some(i) != jump && i != lp.advance && access.array_of(i).is_none())
            .collect();
        let mut uses_index = false;
        for &i in &printed {
            f.insts[i]
                .kind
                .for_each_operand(|v| uses_index |= v == lp.index);
        }
        for lane in 0..lanes {
            let mut text = String::new();
            if uses_index {
                let decl = self.ctx.declaration(lp.ty, &lp.index.to_string())?;
                line(
                    &mut text,
                    1,
                    format_args!("{decl} = nacre_j * {lanes} + {lane};"),
                );
            }
            for &i in &printed {
                if let Some(r) = f.insts[i].result {
                    let decl = self.ctx.declaration(self.ty(r), &r.to_string())?;
                    line(&mut text, 1, format_args!("{decl};"));
                }
            }
            for &i in &printed {
                let data = &f.insts[i];
                match data.kind {
                    InstKind::Load(p) => {
                        let k = self.lane_array(access, p)?;
                        let r = super::result_of(i, data.result);
                        let e = groups[k].elements;
                        line(&mut text, 1, format_args!("{r} = nacre_a{k}{e}[{lane}];"));
                    }
                    InstKind::Store(p, v) => {
                        let k = self.lane_array(access, p)?;
                        let e = groups[k].elements;
                        line(&mut text, 1, format_args!("nacre_a{k}{e}[{lane}] = {v};"));
                    }
                    _ => self.inst(&mut text, i, None)?,
                }
            }
            line(out, 3, "{");
            out.push_str(&indented(&text, 3));
            line(out, 3, "}");
        }
        for (k, a) in access.arrays.iter().enumerate() {
            if a.stored {
                line(out, 3, format_args!("{} = nacre_a{k};", group_at(k)));
            }
        }
        line(out, 2, "}");
        line(
            out,
            2,
            format_args!("{start} = nacre_groups * {lanes} + {start};"),
        );
        line(out, 1, "}");
        Ok(())
    }

    /// The position of the array that address `p` points into.
    fn lane_array(&self, access: &LaneAccess, p: nacre_ir::Value) -> Result<usize, BackendError> {
        match self.func.values[p].def {
            nacre_ir::ValueDef::Result(i) => access.array_of(i),
            _ => None,
        }
        .ok_or_else(|| self.internal(format_args!("{p} is not an address of the lane plan")))
    }
}
