//! IR modules: the unit of compilation handed to a backend.

use crate::entities::{ExternId, FuncId};
use crate::function::{Function, Signature};
use cranelift_entity::PrimaryMap;

/// An external Rust function (`extern "C"`) that IR code can call, by symbol. Its address in
/// the process is not part of the IR: the backend gets it from the linkage handed over
/// beside the module (`nacre_backend::Linkage`).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ExternFunc {
    /// The symbol name (unique within its module), used by the printer and by
    /// source-emitting backends.
    pub name: String,
    /// Parameter and return types.
    pub signature: Signature,
}

/// A compilation unit: functions (the entry and everything it calls) and external functions.
/// It is plain data: what it prints is all it holds, so modules can be compared and hashed.
#[derive(Clone, PartialEq, Debug, Default)]
pub struct Module {
    /// All functions.
    pub functions: PrimaryMap<FuncId, Function>,
    /// All external functions.
    pub externs: PrimaryMap<ExternId, ExternFunc>,
    /// The function a compiled callable enters.
    pub entry: Option<FuncId>,
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

    /// Declares an external function, reusing an existing declaration of the same name and
    /// signature.
    pub fn declare_extern(&mut self, ext: ExternFunc) -> ExternId {
        if let Some((id, _)) = self.externs.iter().find(|(_, e)| **e == ext) {
            return id;
        }
        self.externs.push(ext)
    }

    /// The extern function named `name`, if one is declared.
    pub fn extern_named(&self, name: &str) -> Option<ExternId> {
        self.externs
            .iter()
            .find(|(_, e)| e.name == name)
            .map(|(id, _)| id)
    }

    /// The entry function, if one is set.
    pub fn entry_function(&self) -> Option<&Function> {
        self.entry.map(|e| &self.functions[e])
    }
}
