//! IR modules: the unit of compilation handed to a backend.

use crate::entities::{ExternId, FuncId};
use crate::function::{Function, Signature};
use cranelift_entity::PrimaryMap;
use std::collections::HashMap;
use std::fmt;

/// Calls an external function through a monomorphized trampoline: `addr` is the function's
/// address, `args` its arguments as bits (one `u64` per argument, encoded as in
/// [`crate::semantics`]); the result is returned the same way (0 for no result).
///
/// # Safety
/// `addr` must be the address of a function whose signature is the one the trampoline was
/// created for, and `args` must hold exactly that many arguments.
pub type DynCall = unsafe fn(addr: usize, args: &[u64]) -> u64;

/// An external Rust function (`extern "C"`) that IR code can call.
#[derive(Clone)]
pub struct ExternFunc {
    /// The symbol name, used by the printer and by source-emitting backends.
    pub name: String,
    /// Parameter and return types.
    pub signature: Signature,
    /// The function's address in this process.
    pub addr: usize,
    /// A typed trampoline through which interpreters can call it.
    pub dyn_call: DynCall,
}

impl fmt::Debug for ExternFunc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExternFunc")
            .field("name", &self.name)
            .field("signature", &self.signature)
            .finish_non_exhaustive()
    }
}

/// The GPU runtime's launcher: `launch(handle, dims, args, status)`, where `handle` is the
/// runtime's handle of the kernel, `dims` points to six `u32`s (grid x, y, z, then block x, y,
/// z), `args` to one `u64` per kernel parameter in the bits encoding of
/// [`crate::semantics`], and `status` to the caller's status word, which the launcher sets to
/// a nonzero [`crate::Trap::code`] when the launch fails.
pub type LaunchFn =
    unsafe extern "C" fn(handle: usize, dims: *const u32, args: *const u64, status: *mut u32);

/// How compiled host code launches kernels: set by a GPU runtime (after it compiled the
/// module's kernels) before the host functions are compiled. Backends compile a
/// [`crate::InstKind::Launch`] into a call of `launcher` with the kernel's handle.
#[derive(Clone, Debug)]
pub struct LaunchBinding {
    /// The launcher.
    pub launcher: LaunchFn,
    /// The runtime's handle for each kernel of the module.
    pub handles: HashMap<FuncId, usize>,
}

/// A compilation unit: functions (the entry and everything it calls) and external functions.
#[derive(Clone, Debug, Default)]
pub struct Module {
    /// All functions.
    pub functions: PrimaryMap<FuncId, Function>,
    /// All external functions.
    pub externs: PrimaryMap<ExternId, ExternFunc>,
    /// The function a compiled callable enters.
    pub entry: Option<FuncId>,
    /// How launches reach the GPU runtime (`None` until a runtime binds the kernels; a module
    /// with launches cannot be compiled without it).
    pub launch: Option<LaunchBinding>,
}

impl Module {
    /// An empty module.
    pub fn new() -> Module {
        Module::default()
    }

    /// Adds a function and returns its id.
    pub fn add_function(&mut self, f: Function) -> FuncId {
        self.functions.push(f)
    }

    /// Declares an external function, reusing an existing declaration with the same address
    /// and signature.
    pub fn declare_extern(&mut self, ext: ExternFunc) -> ExternId {
        if let Some((id, _)) = self
            .externs
            .iter()
            .find(|(_, e)| e.addr == ext.addr && e.signature == ext.signature && e.name == ext.name)
        {
            return id;
        }
        self.externs.push(ext)
    }

    /// The entry function, if one is set.
    pub fn entry_function(&self) -> Option<&Function> {
        self.entry.map(|e| &self.functions[e])
    }
}
