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
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Module {
    /// All functions.
    pub functions: PrimaryMap<FuncId, Function>,
    /// All external functions.
    pub externs: PrimaryMap<ExternId, ExternFunc>,
    /// The function a compiled callable enters.
    pub entry: Option<FuncId>,
    /// Whether every pointer carries its memory and every access is checked
    /// ([`crate::transform::insert_bounds_checks`]).
    pub bounds_checked: bool,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::FunctionBuilder;
    use crate::function::FuncKind;
    use crate::instructions::BinaryOp;
    use crate::types::Type;
    use std::collections::hash_map::DefaultHasher;
    use std::hash::{Hash, Hasher};

    /// `f(x) = x + k`, calling extern `@log`.
    fn module(k: u64) -> Module {
        let mut m = Module::new();
        let log = m.declare_extern(ExternFunc {
            name: "log".into(),
            signature: Signature {
                params: vec![Type::I32],
                ret: None,
            },
        });
        let f = FunctionBuilder::build(
            "f",
            FuncKind::Host,
            &[Type::I32],
            Some(Type::I32),
            |b, p| {
                let c = b.const_bits(Type::I32, k);
                let s = b.binary(BinaryOp::Add, p[0], c);
                b.call_extern(log, vec![s], None);
                b.ret(Some(s));
            },
        );
        m.entry = Some(m.add_function(f));
        m
    }

    fn hash(m: &Module) -> u64 {
        let mut h = DefaultHasher::new();
        m.hash(&mut h);
        h.finish()
    }

    #[test]
    fn modules_compare_and_hash_as_data() {
        assert_eq!(module(1), module(1));
        assert_eq!(hash(&module(1)), hash(&module(1)));
        assert_ne!(module(1), module(2));
        assert_eq!(module(1).to_string(), module(1).to_string());
    }

    #[test]
    fn externs_are_declared_once_per_name_and_signature() {
        let mut m = module(1);
        let again = m.declare_extern(m.externs[m.extern_named("log").unwrap()].clone());
        assert_eq!(Some(again), m.extern_named("log"));
        assert_eq!(m.externs.len(), 1);
        assert_eq!(m.extern_named("missing"), None);
    }
}
