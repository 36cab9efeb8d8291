//! Half-precision arithmetic as `f32` arithmetic: the lowering that lets backends know the
//! half types (`f16`, `bf16`) only as storage.
//!
//! [`widen_half`] rewrites every operator on a half type into its `f32` form between casts, the
//! meaning [`crate::semantics`] gives it: on `f16`, `r = a + b` becomes
//! `r = cast<f16>(cast<f32>(a) + cast<f32>(b))`, a comparison compares the widened operands,
//! and a cast between a half type and anything but `f32` goes through `f32`. Afterwards a half
//! value is only made by a constant, a load, a block parameter, a call, a select or a cast from
//! `f32`, and only used by a store, a select, a jump, a call, a return or a cast to `f32`. Each
//! operand is widened once per block.

use std::collections::HashMap;

use crate::entities::{Block, Inst, Value};
use crate::function::{Function, InstData, ValueData, ValueDef};
use crate::instructions::InstKind;
use crate::types::{Scalar, Type};
use crate::verifier::VerifiedModule;

/// Widens the half-precision arithmetic of every function (see the module docs). The result
/// is verified when the input is.
pub fn widen_half(module: VerifiedModule) -> VerifiedModule {
    let mut module = module.into_inner();
    for func in module.functions.values_mut() {
        widen_function(func);
    }
    VerifiedModule::trusted(module)
}

/// [`widen_half`] on one function; returns how many instructions it rewrote.
pub fn widen_function(func: &mut Function) -> usize {
    let mut rewritten = 0;
    for b in func.layout.clone() {
        rewritten += widen_block(func, b);
    }
    rewritten
}

fn widen_block(func: &mut Function, b: Block) -> usize {
    let old = std::mem::take(&mut func.blocks[b].insts);
    let mut out = Vec::with_capacity(old.len());
    let mut widened: HashMap<Value, Value> = HashMap::new();
    let mut rewritten = 0;
    for inst in old {
        let mut w = Widener {
            func: &mut *func,
            out: &mut out,
            widened: &mut widened,
        };
        if w.rewrite(inst) {
            rewritten += 1;
        }
    }
    func.blocks[b].insts = out;
    rewritten
}

/// The half type an instruction computes on, if it is arithmetic or a comparison on one: what
/// [`widen_half`] leaves no trace of, so that a backend that knows halves only as storage can
/// refuse it with a clear error.
pub fn unwidened_half(func: &Function, kind: &InstKind) -> Option<Scalar> {
    let operand = match kind {
        InstKind::Unary(_, a)
        | InstKind::Binary(_, a, _)
        | InstKind::Fma(a, ..)
        | InstKind::Math(_, a)
        | InstKind::Math2(_, a, _)
        | InstKind::Cmp(_, a, _) => *a,
        _ => return None,
    };
    func.values
        .get(operand)?
        .ty
        .scalar()
        .filter(|s| s.is_half())
}

/// The rewrite of one block: new instructions go to `out`, in order.
struct Widener<'a> {
    func: &'a mut Function,
    out: &'a mut Vec<Inst>,
    widened: &'a mut HashMap<Value, Value>,
}

impl Widener<'_> {
    /// Appends `inst` to the block, rewritten if it computes on a half type.
    fn rewrite(&mut self, inst: Inst) -> bool {
        let kind = self.func.insts[inst].kind.clone();
        let changed = match kind {
            InstKind::Unary(..)
            | InstKind::Binary(..)
            | InstKind::Fma(..)
            | InstKind::Math(..)
            | InstKind::Math2(..) => {
                if let Some(narrow) = self.arithmetic(inst) {
                    self.out.extend([inst, narrow]);
                    return true;
                }
                false
            }
            InstKind::Cmp(op, a, c) if self.half(a).is_some() => {
                let (a, c) = (self.widen(a), self.widen(c));
                self.func.insts[inst].kind = InstKind::Cmp(op, a, c);
                true
            }
            InstKind::Cast(v) => self.cast(inst, v),
            _ => false,
        };
        self.out.push(inst);
        changed
    }

    /// For an arithmetic instruction with a half result: widens its operands (appending the
    /// casts), gives it a fresh `f32` result and returns a new cast that makes the old result
    /// from it, to be appended after `inst`.
    fn arithmetic(&mut self, inst: Inst) -> Option<Inst> {
        let result = self.func.insts[inst].result?;
        self.half(result)?;
        let mut kind = self.func.insts[inst].kind.clone();
        kind.map_operands(|v| self.widen(v));
        let wide = self.new_value(Type::F32, ValueDef::Result(inst));
        self.func.insts[inst] = InstData {
            kind,
            result: Some(wide),
        };
        let narrow = self.func.insts.push(InstData {
            kind: InstKind::Cast(wide),
            result: Some(result),
        });
        self.func.values[result].def = ValueDef::Result(narrow);
        Some(narrow)
    }

    /// A cast from or to a half type other than between it and `f32` goes through `f32`.
    fn cast(&mut self, inst: Inst, v: Value) -> bool {
        let Some(result) = self.func.insts[inst].result else {
            return false;
        };
        let (from, to) = (self.func.value_type(v), self.func.value_type(result));
        let via_f32 = match (from, to) {
            (Type::Scalar(f), Type::Scalar(t)) => {
                (f.is_half() || t.is_half()) && f != Scalar::F32 && t != Scalar::F32
            }
            _ => false,
        };
        if !via_f32 {
            return false;
        }
        let wide = if self.half(v).is_some() {
            self.widen(v)
        } else {
            self.emit_cast(v, Type::F32)
        };
        self.func.insts[inst].kind = InstKind::Cast(wide);
        true
    }

    /// The `f32` value of half value `v` (a new cast, or the one made earlier in this block);
    /// other values unchanged.
    fn widen(&mut self, v: Value) -> Value {
        if self.half(v).is_none() {
            return v;
        }
        if let Some(&w) = self.widened.get(&v) {
            return w;
        }
        let w = self.emit_cast(v, Type::F32);
        self.widened.insert(v, w);
        w
    }

    /// Appends `cast<ty>(v)` and returns its result.
    fn emit_cast(&mut self, v: Value, ty: Type) -> Value {
        let inst = self.func.insts.push(InstData {
            kind: InstKind::Cast(v),
            result: None,
        });
        let r = self.new_value(ty, ValueDef::Result(inst));
        self.func.insts[inst].result = Some(r);
        self.out.push(inst);
        r
    }

    fn new_value(&mut self, ty: Type, def: ValueDef) -> Value {
        self.func.values.push(ValueData { ty, def })
    }

    /// The half type of `v`, if it has one.
    fn half(&self, v: Value) -> Option<Scalar> {
        match self.func.value_type(v) {
            Type::Scalar(s) if s.is_half() => Some(s),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::FunctionBuilder;
    use crate::instructions::{BinaryOp, CmpOp, MathFn, UnaryOp};
    use crate::test_util::{assert_valid, eval, new_func};
    use insta::assert_snapshot;

    /// `f(a, b, n) = select(a < b, sqrt(a) * b + tanh(a), n as h) as i32 as h as bf16 ...`: every
    /// kind of instruction the transform rewrites, on half type `h`.
    fn sample(h: Scalar) -> Function {
        let ht = Type::Scalar(h);
        let mut f = new_func(&[ht, ht, Type::I64], Some(Type::BF16));
        let mut b = FunctionBuilder::new(&mut f);
        let p = b.create_entry_block();
        let (x, y, n) = (p[0], p[1], p[2]);
        let root = b.unary(UnaryOp::Sqrt, x);
        let prod = b.binary(BinaryOp::Mul, root, y);
        let t = b.math(MathFn::Tanh, x);
        let sum = b.binary(BinaryOp::Add, prod, t);
        let fused = b.fma(sum, y, x);
        let from_int = b.cast(n, ht);
        let lt = b.cmp(CmpOp::Lt, x, y);
        let pick = b.select(lt, fused, from_int);
        let int = b.cast(pick, Type::I32);
        let back = b.cast(int, ht);
        let other = b.cast(back, Type::BF16);
        b.ret(Some(other));
        f
    }

    #[test]
    fn half_arithmetic_becomes_f32_arithmetic_between_casts() {
        let mut f = sample(Scalar::F16);
        assert_eq!(widen_function(&mut f), 10);
        assert_valid(&f);
        assert_snapshot!(f.to_string());
    }

    #[test]
    fn widened_functions_compute_what_the_half_semantics_define() {
        for h in [Scalar::F16, Scalar::BF16] {
            let before = sample(h);
            let mut after = before.clone();
            widen_function(&mut after);
            assert_valid(&after);
            let mut seed = 0x9e37_79b9_7f4a_7c15u64;
            for _ in 0..2000 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let args = [
                    seed >> 48,
                    (seed >> 32) & 0xffff,
                    (seed >> 40) as i8 as i64 as u64,
                ];
                let (want, got) = (eval(&before, &args), eval(&after, &args));
                assert_eq!(want, got, "{h} on {args:x?}");
            }
        }
    }

    #[test]
    fn casts_between_half_and_f32_and_storage_are_left_alone() {
        let mut f = new_func(&[Type::F16], Some(Type::F32));
        let mut b = FunctionBuilder::new(&mut f);
        let x = b.create_entry_block()[0];
        let wide = b.cast(x, Type::F32);
        let c = b.cmp(CmpOp::Eq, wide, wide);
        let r = b.select(c, wide, wide);
        b.ret(Some(r));
        let before = f.clone();
        assert_eq!(widen_function(&mut f), 0);
        assert_eq!(f, before);
    }
}
