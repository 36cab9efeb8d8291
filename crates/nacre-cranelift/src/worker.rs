//! A compilation worker: the reusable Cranelift contexts, the generation it compiles into and
//! the driver that turns one IR module into an executable.
//!
//! The backend keeps a pool of workers; a compilation takes one out of the pool (or makes a new
//! one), so concurrent compilations never share mutable state and each worker's contexts and
//! JIT module are reused from one compilation to the next.

use crate::abi;
use crate::executable::CraneliftExecutable;
use crate::generation::{
    Generation, GenerationStats, ARENA_SIZE, LARGE_ARENA_SIZE, MODULES_PER_GENERATION,
};
use crate::lower::{lower_function, LowerScratch, ModuleEnv};
use crate::options::CraneliftOptions;
use crate::target::{codegen_error, BACKEND};
use crate::trampoline::{build_trampoline, trampoline_signature, ArrayTrampoline};
use cranelift_codegen::entity::EntityRef;
use cranelift_codegen::ir::{self as clif, UserFuncName};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::Context;
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::JITModule;
use cranelift_module::{Module as _, ModuleError};
use nacre_backend::{BackendError, Linkage};
use nacre_ir::analysis::CallGraph;
use nacre_ir::{FuncId, FuncKind, Module, Signature};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

/// What every compilation of a backend shares.
pub(crate) struct CompileEnv {
    /// The host ISA with the backend's flags.
    pub isa: OwnedTargetIsa,
    /// The backend's options.
    pub options: CraneliftOptions,
    /// Generation counters.
    pub stats: Arc<GenerationStats>,
}

/// The generation a worker is compiling into.
struct Active {
    generation: Arc<Generation>,
    /// Modules compiled into it.
    modules: usize,
    /// Bytes of its arena used so far (an estimate: code sizes rounded up to pages).
    used: usize,
    /// Its size.
    arena_size: usize,
    /// Array trampolines compiled into it, by signature.
    trampolines: HashMap<Signature, usize>,
}

/// Why a compilation attempt failed.
enum Failure {
    /// The generation's arena is full: retry in a fresh generation.
    CodeMemoryFull(BackendError),
    /// Anything else.
    Error(BackendError),
}

impl From<BackendError> for Failure {
    fn from(e: BackendError) -> Failure {
        Failure::Error(e)
    }
}

fn module_error(e: ModuleError) -> Failure {
    match e {
        ModuleError::Allocation { .. } => Failure::CodeMemoryFull(codegen_error(e)),
        e => Failure::Error(codegen_error(e)),
    }
}

/// The entry function of the module being compiled.
#[derive(Copy, Clone)]
struct Entry<'a> {
    id: FuncId,
    signature: &'a Signature,
}

/// What a successful compilation into a JIT module produced.
struct Compiled {
    entry: usize,
    trampoline: usize,
    code_bytes: usize,
    listing: Option<String>,
}

/// Reusable compilation state.
pub(crate) struct Worker {
    ctx: Context,
    fctx: FunctionBuilderContext,
    scratch: LowerScratch,
    func_ids: Vec<Option<cranelift_module::FuncId>>,
    signatures: Vec<clif::Signature>,
    active: Option<Active>,
}

impl Worker {
    /// A worker with empty contexts and no generation yet.
    pub(crate) fn new() -> Worker {
        Worker {
            ctx: Context::new(),
            fctx: FunctionBuilderContext::new(),
            scratch: LowerScratch::default(),
            func_ids: Vec::new(),
            signatures: Vec::new(),
            active: None,
        }
    }

    /// Compiles `module` into an executable entering its entry function.
    pub(crate) fn compile(
        &mut self,
        env: &CompileEnv,
        module: &Module,
        linkage: &Linkage,
    ) -> Result<CraneliftExecutable, BackendError> {
        let entry = module
            .entry
            .ok_or_else(|| codegen_error("the module has no entry function"))?;
        let entry_fn = match module.functions.get(entry) {
            None => return Err(codegen_error("the module's entry function does not exist")),
            Some(f) if f.kind == FuncKind::Kernel => {
                return Err(BackendError::Unsupported {
                    backend: BACKEND,
                    what: format!("GPU kernel @{} as an entry function", f.name),
                })
            }
            Some(f) => f,
        };
        let entry = Entry {
            id: entry,
            signature: &entry_fn.signature,
        };
        match self.attempt(env, (module, linkage), entry, ARENA_SIZE) {
            Ok(exe) => Ok(exe),
            Err(Failure::Error(e)) => Err(e),
            // The module does not fit in what is left of the generation (or in a whole normal
            // one): retry in a fresh generation with a large arena.
            Err(Failure::CodeMemoryFull(_)) => {
                match self.attempt(env, (module, linkage), entry, LARGE_ARENA_SIZE) {
                    Ok(exe) => Ok(exe),
                    Err(Failure::Error(e) | Failure::CodeMemoryFull(e)) => Err(e),
                }
            }
        }
    }

    /// One compilation attempt, in the current generation or a new one of `arena_size` bytes.
    /// Any failure retires the generation: it may hold half-defined functions.
    fn attempt(
        &mut self,
        env: &CompileEnv,
        unit: (&Module, &Linkage),
        entry: Entry<'_>,
        arena_size: usize,
    ) -> Result<CraneliftExecutable, Failure> {
        let active = match &mut self.active {
            Some(active) => active,
            slot @ None => {
                let generation = Generation::new(env.isa.clone(), arena_size, env.stats.clone())?;
                slot.insert(Active {
                    generation: Arc::new(generation),
                    modules: 0,
                    used: 0,
                    arena_size,
                    trampolines: HashMap::new(),
                })
            }
        };
        let generation = active.generation.clone();
        let mut parts = Parts {
            ctx: &mut self.ctx,
            fctx: &mut self.fctx,
            scratch: &mut self.scratch,
            func_ids: &mut self.func_ids,
            signatures: &mut self.signatures,
            trampolines: &mut active.trampolines,
        };
        let compiled = match generation.with_module(|jit| Ok(parts.compile(env, unit, entry, jit)))
        {
            Ok(Ok(compiled)) => compiled,
            Ok(Err(failure)) => {
                self.active = None;
                return Err(failure);
            }
            Err(e) => {
                self.active = None;
                return Err(Failure::Error(e));
            }
        };
        active.modules += 1;
        active.used += compiled.code_bytes.next_multiple_of(PAGE);
        if active.modules >= MODULES_PER_GENERATION || active.used >= active.arena_size / 2 {
            self.active = None;
        }
        // SAFETY: `compiled.trampoline` is the address of a finalized array trampoline, whose
        // native type is `ArrayTrampoline` (see `trampoline_signature`); `generation` keeps it
        // mapped for as long as the executable exists.
        let trampoline = unsafe {
            std::mem::transmute::<*const u8, ArrayTrampoline>(compiled.trampoline as *const u8)
        };
        Ok(CraneliftExecutable {
            entry: compiled.entry,
            trampoline,
            arity: entry.signature.params.len(),
            listing: compiled.listing,
            _generation: generation,
        })
    }
}

/// Page size assumed when estimating arena use (each compilation starts a new page).
const PAGE: usize = 4096;

/// The worker state a compilation borrows, split from the generation it compiles into.
struct Parts<'a> {
    ctx: &'a mut Context,
    fctx: &'a mut FunctionBuilderContext,
    scratch: &'a mut LowerScratch,
    func_ids: &'a mut Vec<Option<cranelift_module::FuncId>>,
    signatures: &'a mut Vec<clif::Signature>,
    trampolines: &'a mut HashMap<Signature, usize>,
}

impl Parts<'_> {
    /// Declares, translates and defines every host function of `module` and the entry's array
    /// trampoline (unless this generation has one for the signature), then finalizes them.
    fn compile(
        &mut self,
        env: &CompileEnv,
        (module, linkage): (&Module, &Linkage),
        entry: Entry<'_>,
        jit: &mut JITModule,
    ) -> Result<Compiled, Failure> {
        let isa = &*env.isa;
        let pointer = isa.pointer_type();
        let call_conv = isa.default_call_conv();
        let keep_listing = env.options.keep_listing;
        self.func_ids.clear();
        self.signatures.clear();
        for (_, f) in module.functions.iter() {
            if f.kind == FuncKind::Kernel {
                self.func_ids.push(None);
                self.signatures.push(clif::Signature::new(call_conv));
                continue;
            }
            let sig = abi::native_signature(&f.signature, pointer, call_conv, true);
            let id = jit.declare_anonymous_function(&sig).map_err(module_error)?;
            self.func_ids.push(Some(id));
            self.signatures.push(sig);
        }
        let lower_env = ModuleEnv {
            module,
            linkage,
            func_ids: self.func_ids,
            signatures: self.signatures,
            pointer,
            call_conv,
            frontend: isa.frontend_config(),
        };
        // Recursive functions check the stack on entry (see `lower::stack_check`).
        let calls = CallGraph::compute(module);
        let mut listing = keep_listing.then(String::new);
        let mut code_bytes = 0;
        for (fid, f) in module.functions.iter() {
            let Some(id) = self.func_ids[fid.index()] else {
                continue;
            };
            self.ctx.clear();
            self.ctx.set_disasm(keep_listing);
            self.ctx.func.signature = self.signatures[fid.index()].clone();
            let check_stack = calls.is_recursive(fid);
            lower_function(
                &lower_env,
                f,
                check_stack,
                &mut self.ctx.func,
                self.fctx,
                self.scratch,
            )?;
            if let Some(listing) = &mut listing {
                self.ctx.func.name = UserFuncName::testcase(&f.name);
                let _ = write!(
                    listing,
                    "; @{}: Cranelift IR\n{}",
                    f.name,
                    self.ctx.func.display()
                );
            }
            jit.define_function(id, self.ctx).map_err(module_error)?;
            if let Some(code) = self.ctx.compiled_code() {
                code_bytes += code.code_buffer().len();
                if let (Some(listing), Some(vcode)) = (&mut listing, &code.vcode) {
                    let _ = write!(listing, "; @{}: machine code\n{vcode}\n", f.name);
                }
            }
        }

        let entry_sig = entry.signature;
        let entry_id = self.func_ids[entry.id.index()]
            .ok_or_else(|| codegen_error("the entry is not a host function"))?;
        let cached = self.trampolines.get(entry_sig).copied();
        let new_trampoline = match cached {
            Some(_) => None,
            None => {
                let sig = trampoline_signature(pointer, call_conv);
                let id = jit.declare_anonymous_function(&sig).map_err(module_error)?;
                self.ctx.clear();
                self.ctx.set_disasm(false);
                self.ctx.func.signature = sig;
                let big_endian = isa.endianness() == cranelift_codegen::ir::Endianness::Big;
                build_trampoline(
                    entry_sig,
                    &self.signatures[entry.id.index()],
                    &mut self.ctx.func,
                    self.fctx,
                    isa.frontend_config(),
                    big_endian,
                );
                jit.define_function(id, self.ctx).map_err(module_error)?;
                code_bytes += self
                    .ctx
                    .compiled_code()
                    .map_or(0, |c| c.code_buffer().len());
                Some(id)
            }
        };

        jit.finalize_definitions().map_err(module_error)?;
        let trampoline = match (cached, new_trampoline) {
            (Some(addr), _) => addr,
            (None, Some(id)) => {
                let addr = jit.get_finalized_function(id) as usize;
                self.trampolines.insert(entry_sig.clone(), addr);
                addr
            }
            (None, None) => return Err(Failure::Error(codegen_error("missing trampoline"))),
        };
        Ok(Compiled {
            entry: jit.get_finalized_function(entry_id) as usize,
            trampoline,
            code_bytes,
            listing,
        })
    }
}
