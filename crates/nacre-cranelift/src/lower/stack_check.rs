//! The stack check on entry to a recursive function.
//!
//! The function's first block calls [`nacre_backend::stack::nacre_stack_ok`] through its
//! address (as float remainder calls its Rust helper) and branches on the result: on 0 to the
//! function's cold [`Trap::StackOverflow`] block, which stores the trap code into `*status` and
//! returns like every trap; otherwise on to the IR entry block. Only recursive functions get
//! the check (see [`nacre_ir::analysis::CallGraph`]), so other functions pay nothing.

use super::Lowerer;
use cranelift_codegen::ir::{self as clif, types, AbiParam, InstBuilder};
use nacre_backend::stack::stack_check_address;
use nacre_ir::Trap;

impl Lowerer<'_, '_> {
    /// Emits the stack check at the current position and continues in a new block when
    /// enough stack remains.
    pub(super) fn check_stack(&mut self) {
        let mut sig = clif::Signature::new(self.env.call_conv);
        sig.returns.push(AbiParam::new(types::I8));
        let sig = self.b.import_signature(sig);
        let callee = self.iconst(self.env.pointer, stack_check_address() as u64);
        let call = self.b.ins().call_indirect(sig, callee, &[]);
        let ok = self.b.inst_results(call)[0];
        let overflow = self.trap_block(Trap::StackOverflow);
        let cont = self.b.create_block();
        self.b.ins().brif(ok, cont, &[], overflow, &[]);
        self.b.switch_to_block(cont);
    }
}
