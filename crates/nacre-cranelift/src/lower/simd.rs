//! Counted loops run as SIMD lanes ([`nacre_ir::analysis::SimdLoop`]): before the scalar
//! loop, a vector loop runs its iterations [`UNROLL`] × (lanes of a 128-bit vector) at a
//! time, then the scalar loop runs the rest from where it stopped.
//!
//! The preheader's jump into the loop becomes:
//!
//! ```text
//! count = init < bound ? (bound - init) & -step : 0        ; whole vector steps
//! count = arrays apart ? count : 0                        ; else scalar only
//! end = init + count
//! brif init != end, vbody(init, identity accumulators), vexit(init, the same)
//! vbody(i, accs): UNROLL copies of the body on lanes i + u*lanes ..
//!                 brif i + step != end, vbody(i + step, accs'), vexit(i + step, accs')
//! vexit(i, accs): each reduction folded across copies and lanes, then with its scalar start
//!                 jump header(i, reductions)
//! ```
//!
//! "Arrays apart": every array stored through is the same pointer as, or at least a vector's
//! bytes away from, every other array the loop indexes, so that a vector's loads never miss a
//! store of an earlier lane and stores land in the scalar order (module docs of
//! [`nacre_ir::analysis::simd_loop`]). Values defined before the loop and constants are
//! splatted once, before the vector loop.

use super::{malformed, Lowerer};
use crate::abi;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{self as clif, BlockArg, InstBuilder, MemFlagsData};
use nacre_backend::BackendError;
use nacre_ir::analysis::simd_loop::{Reduction, SimdLoop};
use nacre_ir::{BinaryOp, InstKind, Scalar, Type, UnaryOp, Value};
use std::collections::HashMap;

/// Copies of the body in one vector iteration (independent accumulators hide the latency of
/// a reduction's adds).
const UNROLL: u32 = 4;

/// Lane values of one vector iteration, by IR value.
type Lanes = HashMap<Value, clif::Value>;

impl Lowerer<'_, '_> {
    /// Emits the vector loop of `plan` in front of the preheader's jump, whose arguments are in
    /// `then_args`; leaves the builder in the block that makes that jump, with the index and
    /// the reductions replaced by where the vector loop stopped.
    pub(super) fn simd_loop(&mut self, plan: &SimdLoop) -> Result<(), BackendError> {
        let func = self.func;
        let mut args = Vec::with_capacity(self.s.then_args.len());
        for a in &self.s.then_args {
            let BlockArg::Value(v) = a else {
                return Err(malformed(func, "a block argument that is not a value"));
            };
            args.push(*v);
        }
        let index_ty = self.ty(plan.index.0)?;
        let ity = abi::clif_type(index_ty, self.env.pointer);
        let signed = matches!(index_ty, Type::Scalar(s) if s.is_signed_int());
        let init = args[plan.index.1];
        let bound = self.value(plan.bound)?;
        let step = plan.lanes() * UNROLL;

        let less = if signed {
            IntCC::SignedLessThan
        } else {
            IntCC::UnsignedLessThan
        };
        let runs = self.b.ins().icmp(less, init, bound);
        let diff = self.b.ins().isub(bound, init);
        let zero = self.b.ins().iconst(ity, 0);
        let count = self.b.ins().select(runs, diff, zero);
        let count = self.b.ins().band_imm_s(count, -i64::from(step));
        let apart = self.arrays_apart(plan)?;
        let count = self.b.ins().select(apart, count, zero);
        let end = self.b.ins().iadd(init, count);
        let mut uniform = self.splat_uniform(plan)?;

        let (body, exit) = (self.b.create_block(), self.b.create_block());
        let mut start = vec![init];
        for r in &plan.reductions {
            let v = self.splat(r.scalar, identity(r.op, r.scalar), plan)?;
            start.extend(std::iter::repeat_n(v, UNROLL as usize));
        }
        for block in [body, exit] {
            self.b.append_block_param(block, ity);
            for v in &start[1..] {
                let ty = self.b.func.dfg.value_type(*v);
                self.b.append_block_param(block, ty);
            }
        }
        let any = self.b.ins().icmp(IntCC::NotEqual, init, end);
        self.branch_with(any, body, exit, &start);

        self.b.switch_to_block(body);
        let state: Vec<clif::Value> = self.b.block_params(body).to_vec();
        let mut next = vec![self.b.ins().iadd_imm_s(state[0], i64::from(step))];
        let mut accs = vec![Vec::new(); plan.reductions.len()];
        for u in 0..UNROLL {
            let i = self
                .b
                .ins()
                .iadd_imm_s(state[0], i64::from(u * plan.lanes()));
            let mut lanes = std::mem::take(&mut uniform);
            for (k, r) in plan.reductions.iter().enumerate() {
                lanes.insert(r.param, state[1 + k * UNROLL as usize + u as usize]);
            }
            self.lane_body(plan, i, index_ty, &mut lanes)?;
            for (k, r) in plan.reductions.iter().enumerate() {
                accs[k].push(self.reduced(plan, r, &lanes)?);
            }
            for r in &plan.reductions {
                lanes.remove(&r.param);
            }
            uniform = lanes;
        }
        next.extend(accs.into_iter().flatten());
        let more = self.b.ins().icmp(IntCC::NotEqual, next[0], end);
        self.branch_with(more, body, exit, &next);

        self.b.switch_to_block(exit);
        let state: Vec<clif::Value> = self.b.block_params(exit).to_vec();
        args[plan.index.1] = state[0];
        for (k, r) in plan.reductions.iter().enumerate() {
            let copies = &state[1 + k * UNROLL as usize..1 + (k + 1) * UNROLL as usize];
            args[r.position] = self.fold(r, args[r.position], copies)?;
        }
        self.s.then_args.clear();
        self.s
            .then_args
            .extend(args.iter().map(|&v| BlockArg::Value(v)));
        Ok(())
    }

    /// `brif cond, then(values), other(values)`.
    fn branch_with(
        &mut self,
        cond: clif::Value,
        then: clif::Block,
        other: clif::Block,
        values: &[clif::Value],
    ) {
        let args: Vec<BlockArg> = values.iter().map(|&v| BlockArg::Value(v)).collect();
        self.b.ins().brif(cond, then, &args, other, &args);
    }

    /// Whether every array stored through is the same as, or a vector's bytes away from,
    /// every other array indexed (an `i8`: 1 or 0).
    fn arrays_apart(&mut self, plan: &SimdLoop) -> Result<clif::Value, BackendError> {
        let width = i64::from(plan.lanes() * plan.lane_bytes);
        let mut apart = self.b.ins().iconst(clif::types::I8, 1);
        for (k, &(stored, is_stored)) in plan.bases.iter().enumerate() {
            if !is_stored {
                continue;
            }
            for (j, &(other, _)) in plan.bases.iter().enumerate() {
                if j == k {
                    continue;
                }
                let (s, o) = (self.value(stored)?, self.value(other)?);
                let d = self.b.ins().isub(o, s);
                let same = self.b.ins().icmp_imm_s(IntCC::Equal, d, 0);
                // |d| >= width  <=>  d + width - 1 >= 2 * width - 1, unsigned.
                let shifted = self.b.ins().iadd_imm_s(d, width - 1);
                let far = self.b.ins().icmp_imm_s(
                    IntCC::UnsignedGreaterThanOrEqual,
                    shifted,
                    2 * width - 1,
                );
                let ok = self.b.ins().bor(same, far);
                apart = self.b.ins().band(apart, ok);
            }
        }
        Ok(apart)
    }

    /// Splats of the values the lanes use that are the same in every lane: constants of the
    /// body and values defined before the loop.
    fn splat_uniform(&mut self, plan: &SimdLoop) -> Result<Lanes, BackendError> {
        let func = self.func;
        let mut lanes = Lanes::new();
        let defined: Vec<Value> = plan
            .insts
            .iter()
            .filter_map(|&i| func.insts[i].result)
            .collect();
        let reduced: Vec<Value> = plan.reductions.iter().map(|r| r.param).collect();
        for &inst in &plan.insts {
            let data = &func.insts[inst];
            if let InstKind::Const(c) = &data.kind {
                let scalar = self.constant(c.ty, c.bits);
                let s =
                    c.ty.scalar()
                        .ok_or_else(|| malformed(func, "a pointer constant"))?;
                if let Some(r) = data.result {
                    if s.bytes() == plan.lane_bytes {
                        lanes.insert(r, self.splat_value(s, scalar, plan)?);
                    }
                }
                continue;
            }
            if matches!(data.kind, InstKind::ElemPtr(..) | InstKind::Load(_)) {
                continue;
            }
            let mut operands = Vec::new();
            data.kind.for_each_operand(|v| operands.push(v));
            if let InstKind::Store(_, v) = data.kind {
                operands = vec![v];
            }
            for v in operands {
                let outside = !defined.contains(&v) && !reduced.contains(&v);
                if outside && !lanes.contains_key(&v) {
                    let s = self
                        .ty(v)?
                        .scalar()
                        .ok_or_else(|| malformed(func, "a pointer lane"))?;
                    let x = self.value(v)?;
                    lanes.insert(v, self.splat_value(s, x, plan)?);
                }
            }
        }
        Ok(lanes)
    }

    /// The vector type of lanes of `s`.
    fn vector_type(&self, s: Scalar, plan: &SimdLoop) -> Result<clif::Type, BackendError> {
        abi::clif_type(Type::Scalar(s), self.env.pointer)
            .by(plan.lanes())
            .ok_or_else(|| malformed(self.func, "a lane type without a vector type"))
    }

    fn splat_value(
        &mut self,
        s: Scalar,
        x: clif::Value,
        plan: &SimdLoop,
    ) -> Result<clif::Value, BackendError> {
        let vty = self.vector_type(s, plan)?;
        Ok(self.b.ins().splat(vty, x))
    }

    fn splat(
        &mut self,
        s: Scalar,
        bits: u128,
        plan: &SimdLoop,
    ) -> Result<clif::Value, BackendError> {
        let x = self.constant(Type::Scalar(s), bits);
        self.splat_value(s, x, plan)
    }

    /// Lowers the body's instructions on the lanes starting at index `i`.
    fn lane_body(
        &mut self,
        plan: &SimdLoop,
        i: clif::Value,
        index_ty: Type,
        lanes: &mut Lanes,
    ) -> Result<(), BackendError> {
        let func = self.func;
        let mut addresses: HashMap<Value, clif::Value> = HashMap::new();
        let lane = |lanes: &Lanes, v: &Value| {
            lanes
                .get(v)
                .copied()
                .ok_or_else(|| malformed(func, &format!("lane {v} is used before its definition")))
        };
        for &inst in &plan.insts {
            let data = &func.insts[inst];
            let value = match &data.kind {
                InstKind::Const(_) => continue,
                InstKind::ElemPtr(p, _) => {
                    let (ptr, ptr_ty) = self.operand(*p)?;
                    let addr = self.elem_ptr(ptr, ptr_ty, i, index_ty);
                    if let Some(r) = data.result {
                        addresses.insert(r, addr);
                    }
                    continue;
                }
                InstKind::Load(p) => {
                    let s = self.lane_scalar(data.result)?;
                    let vty = self.vector_type(s, plan)?;
                    let addr = addresses[p];
                    self.b.ins().load(vty, MemFlagsData::new(), addr, 0)
                }
                InstKind::Store(p, v) => {
                    let x = lane(lanes, v)?;
                    self.b.ins().store(MemFlagsData::new(), x, addresses[p], 0);
                    continue;
                }
                InstKind::Binary(op, x, y) => {
                    let s = self.lane_scalar(Some(*x))?;
                    let (x, y) = (lane(lanes, x)?, lane(lanes, y)?);
                    self.lane_binary(*op, s, x, y)?
                }
                InstKind::Unary(op, x) => {
                    let s = self.lane_scalar(Some(*x))?;
                    let x = lane(lanes, x)?;
                    self.lane_unary(*op, s, x)?
                }
                _ => return Err(malformed(func, "an instruction a SIMD loop cannot hold")),
            };
            if let Some(r) = data.result {
                lanes.insert(r, value);
            }
        }
        Ok(())
    }

    fn lane_scalar(&self, v: Option<Value>) -> Result<Scalar, BackendError> {
        v.and_then(|v| self.func.values.get(v))
            .and_then(|d| d.ty.scalar())
            .ok_or_else(|| malformed(self.func, "a lane without a scalar type"))
    }

    fn lane_binary(
        &mut self,
        op: BinaryOp,
        s: Scalar,
        x: clif::Value,
        y: clif::Value,
    ) -> Result<clif::Value, BackendError> {
        let ins = self.b.ins();
        Ok(match (op, s.is_float()) {
            (BinaryOp::Add, false) => ins.iadd(x, y),
            (BinaryOp::Sub, false) => ins.isub(x, y),
            (BinaryOp::Mul, false) => ins.imul(x, y),
            (BinaryOp::And, false) => ins.band(x, y),
            (BinaryOp::Or, false) => ins.bor(x, y),
            (BinaryOp::Xor, false) => ins.bxor(x, y),
            (BinaryOp::Min, false) if s.is_signed_int() => ins.smin(x, y),
            (BinaryOp::Min, false) => ins.umin(x, y),
            (BinaryOp::Max, false) if s.is_signed_int() => ins.smax(x, y),
            (BinaryOp::Max, false) => ins.umax(x, y),
            (BinaryOp::Add, true) => ins.fadd(x, y),
            (BinaryOp::Sub, true) => ins.fsub(x, y),
            (BinaryOp::Mul, true) => ins.fmul(x, y),
            (BinaryOp::Div, true) => ins.fdiv(x, y),
            _ => {
                return Err(malformed(
                    self.func,
                    "a lane operation without a vector form",
                ))
            }
        })
    }

    fn lane_unary(
        &mut self,
        op: UnaryOp,
        s: Scalar,
        x: clif::Value,
    ) -> Result<clif::Value, BackendError> {
        let ins = self.b.ins();
        Ok(match (op, s.is_float()) {
            (UnaryOp::Neg, false) => ins.ineg(x),
            (UnaryOp::Not, false) => ins.bnot(x),
            (UnaryOp::Abs, false) => ins.iabs(x),
            (UnaryOp::Neg, true) => ins.fneg(x),
            (UnaryOp::Abs, true) => ins.fabs(x),
            (UnaryOp::Sqrt, true) => ins.sqrt(x),
            _ => {
                return Err(malformed(
                    self.func,
                    "a lane operation without a vector form",
                ))
            }
        })
    }

    /// The accumulator of `r` after one copy of the body: its operation's result.
    fn reduced(
        &self,
        plan: &SimdLoop,
        r: &Reduction,
        lanes: &Lanes,
    ) -> Result<clif::Value, BackendError> {
        let func = self.func;
        plan.insts
            .iter()
            .find_map(|&i| {
                let data = &func.insts[i];
                let mut uses = false;
                data.kind.for_each_operand(|v| uses |= v == r.param);
                uses.then_some(data.result).flatten()
            })
            .and_then(|v| lanes.get(&v).copied())
            .ok_or_else(|| malformed(func, "a reduction without its operation"))
    }

    /// `start` combined with every lane of every copy of a reduction's accumulator.
    fn fold(
        &mut self,
        r: &Reduction,
        start: clif::Value,
        copies: &[clif::Value],
    ) -> Result<clif::Value, BackendError> {
        // Subtractions accumulate negated sums, which add.
        let op = if r.op == BinaryOp::Sub {
            BinaryOp::Add
        } else {
            r.op
        };
        let ty = Type::Scalar(r.scalar);
        let mut acc = copies[0];
        for &c in &copies[1..] {
            acc = self.lane_binary(op, r.scalar, acc, c)?;
        }
        let lanes = self.b.func.dfg.value_type(acc).lane_count();
        let mut total = start;
        for lane in 0..lanes {
            let x = self.b.ins().extractlane(acc, lane as u8);
            total = self.binary(op, ty, total, x);
        }
        Ok(total)
    }
}

/// The value a reduction's lanes start from: `x op identity == x`.
fn identity(op: BinaryOp, s: Scalar) -> u128 {
    let bits = s.bits();
    let ones = u128::MAX >> (128 - bits);
    let sign = 1u128 << (bits - 1);
    match op {
        BinaryOp::And => ones,
        BinaryOp::Min if s.is_signed_int() => sign - 1,
        BinaryOp::Min => ones,
        BinaryOp::Max if s.is_signed_int() => sign,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_leave_values_alone() {
        assert_eq!(identity(BinaryOp::Add, Scalar::I32), 0);
        assert_eq!(identity(BinaryOp::And, Scalar::U16), 0xffff);
        assert_eq!(identity(BinaryOp::Min, Scalar::I32), i32::MAX as u128);
        assert_eq!(identity(BinaryOp::Min, Scalar::U8), 0xff);
        assert_eq!(identity(BinaryOp::Max, Scalar::I8), 0x80);
        assert_eq!(identity(BinaryOp::Max, Scalar::U32), 0);
    }
}
