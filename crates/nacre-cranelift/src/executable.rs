//! The executable the backend returns: function pointers into finalized code, and the
//! generation that keeps that code mapped.

use crate::generation::Generation;
use crate::trampoline::ArrayTrampoline;
use nacre_backend::Executable;
use nacre_ir::Trap;
use std::sync::Arc;

/// A compiled module.
pub(crate) struct CraneliftExecutable {
    /// Address of the entry function (native calling convention).
    pub(crate) entry: usize,
    /// The array trampoline for the entry's signature.
    pub(crate) trampoline: ArrayTrampoline,
    /// Number of parameters of the entry function.
    pub(crate) arity: usize,
    /// Cranelift IR and machine code of the compiled functions, when kept.
    pub(crate) listing: Option<String>,
    /// Keeps the code memory alive.
    pub(crate) _generation: Arc<Generation>,
}

impl Executable for CraneliftExecutable {
    fn call(&self, args: &[u64]) -> Result<u64, Trap> {
        debug_assert_eq!(args.len(), self.arity, "wrong number of arguments");
        let padded: Vec<u64>;
        let args = if args.len() >= self.arity {
            args
        } else {
            padded = args
                .iter()
                .copied()
                .chain(std::iter::repeat(0))
                .take(self.arity)
                .collect();
            &padded
        };
        let mut status = 0u32;
        // SAFETY: the trampoline was generated for the entry function's signature, `entry` is
        // that function, `args` holds at least `arity` values and `status` is a valid, zeroed
        // status word. The code stays mapped while `self` holds the generation.
        let bits =
            unsafe { (self.trampoline)(self.entry as *const u8, args.as_ptr(), &mut status) };
        match status {
            0 => Ok(bits),
            // Generated code writes only trap codes; a launcher (foreign code) might write
            // another nonzero value, which counts as a device error.
            code => Err(Trap::from_code(code).unwrap_or(Trap::DeviceError)),
        }
    }

    fn native_entry(&self) -> Option<*const u8> {
        Some(self.entry as *const u8)
    }

    fn listing(&self) -> Option<&str> {
        self.listing.as_deref()
    }
}
