//! What the step function's entry block computes once per round: the kernel parameters
//! loaded from their argument slots, the GPU operations replaced by values of the entry and
//! thread blocks (context words, `threadIdx`, shared arrays at their static offsets), and the
//! kernel's uniform computations hoisted out of the thread loop.

use super::{Lowering, MAX_SHARED_BYTES};
use crate::error::KernelError;
use crate::step::ctx::{self, addr};
use nacre_ir::FunctionBuilder;
use nacre_ir::{BinaryOp, Block, BlockData, Dim, GpuIndex, InstKind, Scalar, Type, Value};
use std::collections::{HashMap, HashSet};

/// A GPU operation found in the kernel, replaced by a value of the step function.
pub(super) enum Intrinsic {
    Index(GpuIndex, Dim),
    Shared {
        elem: Scalar,
        len: u32,
        ty: Type,
    },
    /// The dynamic shared memory (after the static arrays), as a pointer of this type.
    DynamicShared(Type),
    DynamicSharedBytes,
}

impl Lowering {
    /// Kernel parameters, from their argument slots.
    pub(super) fn load_params(&mut self) -> Vec<Value> {
        let args = self.args;
        let params = self.params.clone();
        params
            .iter()
            .enumerate()
            .map(|(i, &ty)| self.at_entry(|em| load_param(em, args, i as u32, ty)))
            .collect()
    }

    /// The kernel's GPU operations, in layout order, and its number of barriers (yields
    /// included).
    pub(super) fn find_gpu_operations(&self) -> (Vec<(Value, Intrinsic)>, u32) {
        let mut found: Vec<(Value, Intrinsic)> = Vec::new();
        let mut barriers = 0u32;
        for &b in &self.body {
            for &inst in &self.f.blocks[b].insts {
                let data = &self.f.insts[inst];
                match (&data.kind, data.result) {
                    (InstKind::GpuIndex(ix, dim), Some(r)) => {
                        found.push((r, Intrinsic::Index(*ix, *dim)))
                    }
                    (InstKind::SharedAlloc { elem, len }, Some(r)) => found.push((
                        r,
                        Intrinsic::Shared {
                            elem: *elem,
                            len: *len,
                            ty: self.f.values[r].ty,
                        },
                    )),
                    (InstKind::DynamicShared { .. }, Some(r)) => {
                        found.push((r, Intrinsic::DynamicShared(self.f.values[r].ty)))
                    }
                    (InstKind::DynamicSharedBytes, Some(r)) => {
                        found.push((r, Intrinsic::DynamicSharedBytes))
                    }
                    (InstKind::Barrier, _) => barriers += 1,
                    _ => {}
                }
            }
        }
        (found, barriers)
    }

    /// The value replacing each GPU operation (result → replacement), and the bytes of
    /// shared memory per block.
    pub(super) fn gpu_values(
        &mut self,
        found: Vec<(Value, Intrinsic)>,
    ) -> Result<(HashMap<Value, Value>, u64), KernelError> {
        let mut aliases: HashMap<Value, Value> = HashMap::new();
        let mut shared_bytes: u64 = 0;
        let mut dynamic = Vec::new();
        for (r, intrinsic) in found {
            let v = match intrinsic {
                Intrinsic::Index(GpuIndex::ThreadIdx, d) => self.xyz[d.index()],
                Intrinsic::Index(GpuIndex::BlockIdx, d) => {
                    self.ctx_word_u32(ctx::BLOCK_IDX + d.index())
                }
                Intrinsic::Index(GpuIndex::BlockDim, d) => {
                    self.ctx_word_u32(ctx::BLOCK_DIM + d.index())
                }
                Intrinsic::Index(GpuIndex::GridDim, d) => {
                    self.ctx_word_u32(ctx::GRID_DIM + d.index())
                }
                Intrinsic::Shared { elem, len, ty } => {
                    let align = ctx::SHARED_ALIGN.max(u64::from(elem.bytes()));
                    let offset = shared_bytes.next_multiple_of(align);
                    shared_bytes = offset + len as u64 * elem.bytes() as u64;
                    if shared_bytes > MAX_SHARED_BYTES {
                        return Err(self.unsupported(format!(
                            "its shared arrays need more than {MAX_SHARED_BYTES} bytes per \
                             block, the CPU runtime's limit; use smaller shared arrays"
                        )));
                    }
                    let base = self.ctx_word(ctx::SHARED_BASE);
                    self.at_entry(|em| addr(em, base, offset, ty))
                }
                Intrinsic::DynamicSharedBytes => self.ctx_word_u32(ctx::DYNAMIC_SHARED_BYTES),
                Intrinsic::DynamicShared(ty) => {
                    dynamic.push((r, ty));
                    continue;
                }
            };
            aliases.insert(r, v);
        }
        // Dynamic shared memory follows the static arrays, whose size is now known.
        let offset = ctx::dynamic_shared_offset(shared_bytes);
        for (r, ty) in dynamic {
            let base = self.ctx_word(ctx::SHARED_BASE);
            let v = self.at_entry(|em| addr(em, base, offset, ty));
            aliases.insert(r, v);
        }
        Ok((aliases, shared_bytes))
    }

    /// Removes the GPU operations from the kernel's blocks (their results are replaced).
    pub(super) fn drop_gpu_operations(&mut self) {
        for &b in &self.body {
            let f = &mut self.f;
            let mut insts = std::mem::take(&mut f.blocks[b].insts);
            insts.retain(|&i| {
                !matches!(
                    f.insts[i].kind,
                    InstKind::GpuIndex(..)
                        | InstKind::SharedAlloc { .. }
                        | InstKind::DynamicShared { .. }
                        | InstKind::DynamicSharedBytes
                )
            });
            f.blocks[b].insts = insts;
        }
    }

    /// Passes the loaded arguments to the kernel's entry parameters: through `aliases`, or
    /// through a new block that jumps to the kernel's entry when something else jumps there
    /// too. Returns the block the kernel starts at (without parameters).
    pub(super) fn bind_kernel_params(
        &mut self,
        loaded: Vec<Value>,
        aliases: &mut HashMap<Value, Value>,
    ) -> Block {
        let kernel_entry = self.body[0];
        let entry_has_preds = self
            .body
            .iter()
            .any(|&b| self.f.successors(b).contains(&kernel_entry));
        if entry_has_preds {
            let pre = self.f.blocks.push(BlockData::default());
            self.append(pre, |em| em.jump(kernel_entry, loaded));
            self.body.insert(0, pre);
            pre
        } else {
            let old = std::mem::take(&mut self.f.blocks[kernel_entry].params);
            aliases.extend(old.into_iter().zip(loaded));
            kernel_entry
        }
    }

    /// Replaces the operands of the kernel's instructions found in `aliases`.
    pub(super) fn rename(&mut self, aliases: &HashMap<Value, Value>) {
        for &b in &self.body {
            for k in 0..self.f.blocks[b].insts.len() {
                let inst = self.f.blocks[b].insts[k];
                self.f.insts[inst]
                    .kind
                    .map_operands(|v| aliases.get(&v).copied().unwrap_or(v));
            }
        }
    }

    /// The values of the entry block so far (its parameters and the results of the
    /// instructions collected for it): uniform across the block.
    pub(super) fn entry_values(&self) -> HashSet<Value> {
        let mut uniform: HashSet<Value> =
            self.f.blocks[self.entry].params.iter().copied().collect();
        for &i in &self.entry_insts {
            uniform.extend(self.f.insts[i].result);
        }
        uniform
    }

    /// Moves the kernel's computations that depend only on values of the entry block (kernel
    /// parameters, block index, dimensions, shared arrays, constants) into the entry block:
    /// they are then computed once per round instead of once per thread, and never need
    /// saving across a barrier. Only instructions that neither trap nor touch memory move.
    pub(super) fn hoist_uniform(&mut self) {
        let mut uniform = self.entry_values();
        let mut changed = true;
        while changed {
            changed = false;
            for &b in &self.body {
                let insts = std::mem::take(&mut self.f.blocks[b].insts);
                let mut kept = Vec::with_capacity(insts.len());
                for inst in insts {
                    let data = &self.f.insts[inst];
                    let movable = match &data.kind {
                        InstKind::Const(_)
                        | InstKind::Unary(..)
                        | InstKind::Fma(..)
                        | InstKind::Math(..)
                        | InstKind::Math2(..)
                        | InstKind::Cmp(..)
                        | InstKind::Cast(_)
                        | InstKind::Select(..)
                        | InstKind::ElemPtr(..) => true,
                        InstKind::Binary(op, a, _) => {
                            !(matches!(op, BinaryOp::Div | BinaryOp::Rem)
                                && self.f.values[*a].ty.is_int())
                        }
                        _ => false,
                    };
                    let mut operands_uniform = true;
                    data.kind
                        .for_each_operand(|v| operands_uniform &= uniform.contains(&v));
                    match data.result {
                        Some(r) if movable && operands_uniform => {
                            uniform.insert(r);
                            self.entry_insts.push(inst);
                            changed = true;
                        }
                        _ => kept.push(inst),
                    }
                }
                self.f.blocks[b].insts = kept;
            }
        }
    }
}

/// Loads kernel parameter `i` of type `ty` from its `u64` slot in `args`.
fn load_param(em: &mut FunctionBuilder<'_>, args: Value, i: u32, ty: Type) -> Value {
    let idx = em.const_u32(i);
    let slot = em.elem_ptr(args, idx);
    match ty {
        Type::Ptr(..) => {
            let bits = em.load(slot);
            em.cast(bits, ty)
        }
        Type::Scalar(Scalar::U64) => em.load(slot),
        Type::Scalar(s) => {
            let addr = em.cast(slot, Type::U64);
            let p = em.cast(addr, Type::ptr(s));
            em.load(p)
        }
    }
}
