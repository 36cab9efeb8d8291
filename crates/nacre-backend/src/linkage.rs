//! [`Linkage`]: what binds a module's IR to this process, handed to a backend beside the
//! verified module.
//!
//! The IR names external functions by symbol and kernels by id; it holds no addresses. A
//! linkage gives each extern symbol its address and call trampoline ([`ExternAddr`], filled
//! in by the tracer) and, when the module launches kernels, the kernel runtime's launcher and
//! a handle per kernel ([`LaunchBinding`], filled in by the runtime after it prepared the
//! kernels).

use nacre_ir::{ExternId, FuncId};
use std::collections::HashMap;

/// Calls an external function through a monomorphized trampoline: `addr` is the function's
/// address, `args` its arguments as bits (one `u64` per argument, encoded as in
/// [`nacre_ir::semantics`]); the result is returned the same way (0 for no result).
///
/// # Safety
/// `addr` must be the address of a function whose signature is the one the trampoline was
/// created for, and `args` must hold exactly that many arguments.
pub type DynCall = unsafe fn(addr: usize, args: &[u64]) -> u64;

/// Where an external function is in this process.
#[derive(Copy, Clone, Debug)]
pub struct ExternAddr {
    /// The function's address.
    pub addr: usize,
    /// A typed trampoline through which interpreters can call it.
    pub dyn_call: DynCall,
}

/// The kernel runtime's launcher: `launch(handle, dims, args, status)`, where `handle` is the
/// runtime's handle of the kernel, `dims` points to a [`LaunchDims`] (seven `u32`s), `args` to one `u64` per kernel parameter in the bits encoding of
/// [`nacre_ir::semantics`], and `status` to the caller's status word, which the launcher sets
/// to a nonzero [`nacre_ir::Trap::code`] when the launch fails.
pub type LaunchFn =
    unsafe extern "C" fn(handle: usize, dims: *const u32, args: *const u64, status: *mut u32);

/// The shape of one launch as the launcher receives it: seven `u32`s, grid x, y, z, block x,
/// y, z, then the bytes of dynamic shared memory per block (0 for none).
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct LaunchDims {
    /// Blocks per grid in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory per block.
    pub shared_bytes: u32,
}

impl LaunchDims {
    /// The number of `u32` words compiled code writes for a launch.
    pub const WORDS: usize = 7;

    /// The shape from its words.
    pub fn from_words(w: [u32; Self::WORDS]) -> LaunchDims {
        LaunchDims {
            grid: [w[0], w[1], w[2]],
            block: [w[3], w[4], w[5]],
            shared_bytes: w[6],
        }
    }

    /// Its words, in the launcher's order.
    pub fn words(&self) -> [u32; Self::WORDS] {
        let ([gx, gy, gz], [bx, by, bz]) = (self.grid, self.block);
        [gx, gy, gz, bx, by, bz, self.shared_bytes]
    }

    /// Reads the shape a launcher was given.
    ///
    /// # Safety
    /// `dims` must point to [`Self::WORDS`] readable `u32`s (any alignment).
    pub unsafe fn read(dims: *const u32) -> LaunchDims {
        // SAFETY: guaranteed by the caller.
        LaunchDims::from_words(unsafe { std::ptr::read_unaligned(dims.cast()) })
    }
}

/// How compiled host code launches kernels: given by a kernel runtime after it prepared the
/// module's kernels. Backends compile a [`nacre_ir::InstKind::Launch`] into a call of
/// `launcher` with the kernel's handle.
#[derive(Clone, Debug)]
pub struct LaunchBinding {
    /// The launcher.
    pub launcher: LaunchFn,
    /// The runtime's handle for each kernel of the module.
    pub handles: HashMap<FuncId, usize>,
}

/// The process-side half of a compilation unit: extern addresses and the kernel launcher.
///
/// Whoever fills it in vouches that every [`ExternAddr`] is the function its extern's
/// signature describes, and that the launcher accepts the handles it lists (the tracer and
/// the kernel runtimes do).
#[derive(Clone, Debug, Default)]
pub struct Linkage {
    /// The address of each extern function of the module.
    pub externs: HashMap<ExternId, ExternAddr>,
    /// How launches reach the kernel runtime (`None` until a runtime prepared the kernels; a
    /// module with launches cannot be compiled without it).
    pub launch: Option<LaunchBinding>,
}

impl Linkage {
    /// The address of extern `id`, if the linkage has one.
    pub fn extern_addr(&self, id: ExternId) -> Option<ExternAddr> {
        self.externs.get(&id).copied()
    }

    /// This linkage with `binding` as its launcher.
    pub fn with_launch(mut self, binding: LaunchBinding) -> Linkage {
        self.launch = Some(binding);
        self
    }
}
