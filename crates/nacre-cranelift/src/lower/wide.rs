//! The 128-bit integers (`i128`, `u128`) as Cranelift `i128` values.
//!
//! Cranelift adds, multiplies, shifts, compares, selects, loads and stores `i128` itself; what
//! it lacks is done here: constants are the concatenation of two 64-bit halves, `abs`, `min`
//! and `max` are bit arithmetic (no `select`, which the optimizer would turn back into the
//! instructions Cranelift lacks on `i128`), and division, remainder and conversions to and from
//! floats call Rust helpers ([`crate::runtime::wide_fn`]) that compute them as
//! [`nacre_ir::semantics`] does. (A zero divisor traps before the helper is called.)

use super::Lowerer;
use crate::runtime::{self, WideFn};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{self as clif, types, AbiParam, InstBuilder};
use nacre_ir::{BinaryOp, Scalar};

impl Lowerer<'_, '_> {
    /// The `i128` constant with the given bits.
    pub(super) fn wide_const(&mut self, bits: u128) -> clif::Value {
        let lo = self.b.ins().iconst(types::I64, bits as u64 as i64);
        let hi = self.b.ins().iconst(types::I64, (bits >> 64) as u64 as i64);
        self.b.ins().iconcat(lo, hi)
    }

    /// `abs` of an `i128`, wrapping at `MIN`: `(x ^ m) - m` with `m` the sign copied into every
    /// bit. (A compare and select would be rewritten by Cranelift's optimizer into `iabs`,
    /// which it cannot lower on `i128`.)
    pub(super) fn wide_abs(&mut self, x: clif::Value) -> clif::Value {
        let m = self.b.ins().sshr_imm_u(x, 127);
        let flipped = self.b.ins().bxor(x, m);
        self.b.ins().isub(flipped, m)
    }

    /// `min` (or with `max`, `max`) of 128-bit integers of type `s`.
    pub(super) fn wide_min_max(
        &mut self,
        max: bool,
        s: Scalar,
        x: clif::Value,
        y: clif::Value,
    ) -> clif::Value {
        let cc = match (max, s.is_signed_int()) {
            (false, true) => IntCC::SignedLessThan,
            (false, false) => IntCC::UnsignedLessThan,
            (true, true) => IntCC::SignedGreaterThan,
            (true, false) => IntCC::UnsignedGreaterThan,
        };
        let pick_x = self.b.ins().icmp(cc, x, y);
        self.wide_select(pick_x, x, y)
    }

    /// `c ? x : y` on `i128`s as `y ^ ((x ^ y) & m)`, `m` all ones when `c` holds: a `select`
    /// whose condition compares its operands would be rewritten by the optimizer into `smin`,
    /// `umax`, ..., which Cranelift cannot lower on `i128`.
    pub(super) fn wide_select(
        &mut self,
        c: clif::Value,
        x: clif::Value,
        y: clif::Value,
    ) -> clif::Value {
        let wide = self.b.ins().uextend(types::I128, c);
        let m = self.b.ins().ineg(wide);
        let diff = self.b.ins().bxor(x, y);
        let chosen = self.b.ins().band(diff, m);
        self.b.ins().bxor(y, chosen)
    }

    /// Division or remainder of 128-bit integers by a divisor already known to be non-zero
    /// (wrapping: `MIN / -1` is `MIN`, `MIN % -1` is 0).
    pub(super) fn wide_div(
        &mut self,
        op: BinaryOp,
        s: Scalar,
        x: clif::Value,
        y: clif::Value,
    ) -> clif::Value {
        let f = match (op == BinaryOp::Div, s.is_signed_int()) {
            (true, true) => WideFn::SignedDiv,
            (true, false) => WideFn::UnsignedDiv,
            (false, true) => WideFn::SignedRem,
            (false, false) => WideFn::UnsignedRem,
        };
        self.wide_call(f, &[types::I128, types::I128], types::I128, &[x, y])
    }

    /// A 128-bit integer of type `fs` converted to the float of Cranelift type `to`.
    pub(super) fn wide_to_float(
        &mut self,
        x: clif::Value,
        fs: Scalar,
        to: clif::Type,
    ) -> clif::Value {
        let f = WideFn::ToFloat {
            signed: fs.is_signed_int(),
            f64: to == types::F64,
        };
        self.wide_call(f, &[types::I128], to, &[x])
    }

    /// A float of Cranelift type `from` converted to the 128-bit integer type `ts` (Rust's
    /// `as`: saturating, NaN to 0).
    pub(super) fn float_to_wide(
        &mut self,
        x: clif::Value,
        from: clif::Type,
        ts: Scalar,
    ) -> clif::Value {
        let f = WideFn::FromFloat {
            signed: ts.is_signed_int(),
            f64: from == types::F64,
        };
        self.wide_call(f, &[from], types::I128, &[x])
    }

    /// A call of the helper for `f` with native parameters `params` and result `ret`.
    fn wide_call(
        &mut self,
        f: WideFn,
        params: &[clif::Type],
        ret: clif::Type,
        args: &[clif::Value],
    ) -> clif::Value {
        let mut sig = clif::Signature::new(self.env.call_conv);
        sig.params.extend(params.iter().map(|&t| AbiParam::new(t)));
        sig.returns.push(AbiParam::new(ret));
        let sig = self.b.import_signature(sig);
        let callee = self.iconst(self.env.pointer, runtime::wide_fn(f) as u64);
        let call = self.b.ins().call_indirect(sig, callee, args);
        self.b.inst_results(call)[0]
    }
}
