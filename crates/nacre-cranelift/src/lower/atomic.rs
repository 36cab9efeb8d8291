//! Atomic read-modify-writes, compare-exchanges and fences.
//!
//! Cranelift's atomics are sequentially consistent, which is at least every ordering the IR
//! asks for, and a block runs on one core, so block scope is device scope. Integer operations
//! are one `atomic_rmw` (signed or unsigned min and max by the type); a float swap exchanges
//! the bits; float add, min and max, which Cranelift lacks, are a compare-exchange loop on the
//! bits, the new value computed as the IR's `+`, `min` or `max` compute it.

use super::Lowerer;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    self as clif, types, AtomicRmwOp, BlockArg, InstBuilder, MemFlagsData,
};
use nacre_ir::{AtomicOp, BinaryOp, Scalar, Type};

impl Lowerer<'_, '_> {
    /// `op` on the element of type `s` at `p` with operand `x`; the old value.
    pub(super) fn atomic_rmw(
        &mut self,
        op: AtomicOp,
        s: Scalar,
        p: clif::Value,
        x: clif::Value,
    ) -> clif::Value {
        let flags = MemFlagsData::trusted();
        if !s.is_float() {
            let ty = if s.bytes() == 8 {
                types::I64
            } else {
                types::I32
            };
            let signed = s.is_signed_int();
            let op = match op {
                AtomicOp::Add => AtomicRmwOp::Add,
                AtomicOp::Sub => AtomicRmwOp::Sub,
                AtomicOp::Min if signed => AtomicRmwOp::Smin,
                AtomicOp::Min => AtomicRmwOp::Umin,
                AtomicOp::Max if signed => AtomicRmwOp::Smax,
                AtomicOp::Max => AtomicRmwOp::Umax,
                AtomicOp::And => AtomicRmwOp::And,
                AtomicOp::Or => AtomicRmwOp::Or,
                AtomicOp::Xor => AtomicRmwOp::Xor,
                AtomicOp::Swap => AtomicRmwOp::Xchg,
            };
            return self.b.ins().atomic_rmw(ty, flags, op, p, x);
        }
        let (fty, ity) = if s == Scalar::F64 {
            (types::F64, types::I64)
        } else {
            (types::F32, types::I32)
        };
        let bits = self.b.ins().bitcast(ity, MemFlagsData::new(), x);
        if op == AtomicOp::Swap {
            let old = self
                .b
                .ins()
                .atomic_rmw(ity, flags, AtomicRmwOp::Xchg, p, bits);
            return self.b.ins().bitcast(fty, MemFlagsData::new(), old);
        }
        let binary = match op {
            AtomicOp::Min => BinaryOp::Min,
            AtomicOp::Max => BinaryOp::Max,
            _ => BinaryOp::Add,
        };
        // loop(old): new = old `op` x; got = cas(p, old, new); if got == old done else loop(got).
        let start = self.b.ins().atomic_load(ity, flags, p);
        let head = self.b.create_block();
        let old = self.b.append_block_param(head, ity);
        let done = self.b.create_block();
        self.b.ins().jump(head, &[BlockArg::Value(start)]);
        self.b.switch_to_block(head);
        let old_f = self.b.ins().bitcast(fty, MemFlagsData::new(), old);
        let new_f = self.binary(binary, Type::Scalar(s), old_f, x);
        let new = self.b.ins().bitcast(ity, MemFlagsData::new(), new_f);
        let got = self.b.ins().atomic_cas(flags, p, old, new);
        let same = self.b.ins().icmp(IntCC::Equal, got, old);
        self.b
            .ins()
            .brif(same, done, &[], head, &[BlockArg::Value(got)]);
        self.b.switch_to_block(done);
        old_f
    }

    /// Compare-exchange of the integer element at `p`; the old value.
    pub(super) fn atomic_cas(
        &mut self,
        p: clif::Value,
        expected: clif::Value,
        new: clif::Value,
    ) -> clif::Value {
        self.b
            .ins()
            .atomic_cas(MemFlagsData::trusted(), p, expected, new)
    }
}
