//! Printing one IR function as a C-family function.
//!
//! The translation is direct: every SSA value becomes a local variable `vN` declared at the top
//! of the function (entry-block parameters are the C parameters), every block a label `blockN`
//! (printed only when some `goto` targets it), every instruction one assignment. Jumps assign
//! the target block's parameters (see [`crate::moves`]) and `goto` its label, falling through
//! when the target is the next block in the layout.
//!
//! Each operator is spelled so that it has exactly the semantics of [`nacre_ir::semantics`] and
//! no undefined behaviour in C: wrapping integer arithmetic goes through unsigned types (at
//! least 32 bits wide, so that small types are not promoted to `int` and overflow), shift
//! amounts are masked, `MIN / -1` and `MIN % -1` are special-cased, division by zero stores the
//! trap code into `*status` and returns, and casts that C leaves undefined use helpers.
//! A kernel launch fills local `dims`/`args` arrays and calls the launcher named by
//! [`LaunchTables`], then checks the status like a call. Everything that depends on the target
//! language goes through [`Dialect`].
//!
//! On the device side ([`Side::Device`]) the same printer prints GPU kernels and the functions
//! they call. A kernel's head comes from [`Dialect::kernel_prototype`]; its body opens with the
//! dialect's prologue and the storage of every block-shared array (`s0`, `s1`, ... in layout
//! order), and each [`InstKind::SharedAlloc`] assigns its array's address to its value. Index
//! queries and barriers are spelled by the dialect. A kernel keeps the hidden status
//! parameter ([`STATUS`]): a trap stores its code there and returns, as in host functions.
//!
//! A kernel's lane-parallel grid-stride loop gets a wide-access variant in front of it in
//! dialects with [`Dialect::lane_group`] (see the `lanes` submodule).
//!
//! Dialects without `goto` ([`Dialect::structured_control_flow`]) get the body as nested
//! `if`s, `for (;;)` loops and `do { } while (0)` regions instead of labels and jumps (see
//! the `structured` submodule).
//!
//! The printer takes verified IR ([`nacre_ir::VerifiedModule`]) and trusts what the verifier
//! checks: the layout, terminators, definitions, dominance and every type (operands, results,
//! jump arguments, calls, returns). It reports only what a target cannot express
//! ([`BackendError::Unsupported`]: a [`crate::DialectError`] or a construct such as an
//! external call in device code) and, as [`BackendError::Codegen`], inconsistencies with
//! the analyses it builds on (the structured form, lane plans), which are bugs.

use crate::collective::{Collective, CollectiveAccess};
use crate::dialect::{AtomicAccess, AtomicKind, Dialect, KernelHead, KernelParam, MathFn};
use crate::error::DialectError;
use crate::helpers::Helper;
use crate::literal::literal;
use crate::moves::{sequentialize, Source, Step};
use crate::stack_check::StackCheck;
use nacre_backend::BackendError;
use nacre_ir::{
    BinaryOp, Block, BlockCall, CmpOp, FuncId, FuncKind, Function, GpuIndex, Inst, InstKind,
    Module, Scalar, Trap, Type, UnaryOp, Value,
};
use nacre_kernel::LaunchShape;
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;

mod lanes;
mod structured;

/// The identifier of the hidden status-word pointer, every function's last parameter.
pub const STATUS: &str = "status";

/// The flag of a kernel that deferred a bounds trap ([`Dialect::defers_bounds_traps`]).
const TRAPPED: &str = "nacre_trapped";

/// Which side of the program a [`ModuleContext`] prints for.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub enum Side {
    /// Host code: functions of kind [`FuncKind::Host`] with
    /// [`Dialect::function_qualifier`]; kernels are whatever the dialect makes of
    /// `function_qualifier(FuncKind::Kernel)` (plain C refuses them).
    #[default]
    Host,
    /// GPU code: kernels with [`Dialect::kernel_prototype`], and the host-kind functions they
    /// call as device functions with [`Dialect::device_function_qualifier`].
    Device,
}

/// What the printer needs to know about the module around the function it prints.
pub struct ModuleContext<'a, D: Dialect + ?Sized> {
    /// The target dialect.
    pub dialect: &'a D,
    /// The side of the program being printed.
    pub side: Side,
    /// The module, verified ([`nacre_ir::VerifiedModule::module`]): the printer trusts its
    /// structure and types.
    pub module: &'a Module,
    /// The C identifier of every function, indexed by [`FuncId`].
    pub names: &'a [String],
    /// The name of the table of external-function addresses, or `None` when the target cannot
    /// call external functions.
    pub extern_table: Option<&'a str>,
    /// Where kernel launches find the launcher and the kernels' handles, or `None` when the
    /// target cannot launch kernels.
    pub launch_tables: Option<LaunchTables<'a>>,
    /// The helpers used so far.
    pub helpers: BTreeSet<Helper>,
    /// What the kernel being printed was specialised for (unknown for host code).
    pub kernel_shape: LaunchShape,
    /// Which host functions check the stack on entry, or `None` for no checks (device code).
    pub stack_check: Option<&'a StackCheck>,
}

/// The loader-filled globals through which host code launches kernels (see
/// [`nacre_backend::LaunchBinding`]).
#[derive(Copy, Clone, Debug)]
pub struct LaunchTables<'a> {
    /// The name of the launcher, a function pointer
    /// `void (*)(uintptr_t handle, const uint32_t *dims, const uint64_t *args, uint32_t *status)`.
    pub launcher: &'a str,
    /// The name of the table of kernel handles (`uintptr_t[]`).
    pub handles: &'a str,
    /// The kernels with an entry in the handle table, in table order.
    pub kernels: &'a [FuncId],
}

impl<'a, D: Dialect + ?Sized> ModuleContext<'a, D> {
    /// An error for a construct the dialect cannot express.
    pub fn unsupported(&self, what: impl Into<String>) -> BackendError {
        BackendError::Unsupported {
            backend: self.dialect.backend_name(),
            what: what.into(),
        }
    }

    /// The error for a construct the dialect refuses ([`DialectError::unsupported`]).
    pub fn refused(&self, e: DialectError) -> BackendError {
        e.unsupported(self.dialect.backend_name())
    }

    /// An error for a request the module cannot serve (a kernel id that is not a kernel) or
    /// for an inconsistency between the printer and the analyses it uses (a bug).
    pub fn codegen(&self, message: impl Into<String>) -> BackendError {
        BackendError::Codegen {
            backend: self.dialect.backend_name(),
            message: message.into(),
        }
    }

    /// The C identifier of a function of the module.
    ///
    /// # Panics
    ///
    /// If `f` is not a function of the module (`names` has one per function).
    pub fn function_name(&self, f: FuncId) -> &'a str {
        &self.names[f.as_u32() as usize]
    }

    /// The spelling of a type.
    pub fn c_type(&self, ty: Type) -> Result<String, BackendError> {
        let s = match ty {
            Type::Scalar(s) | Type::Ptr(s, _) => s,
        };
        self.dialect.check_scalar(s).map_err(|e| self.refused(e))?;
        match ty {
            Type::Scalar(s) => Ok(self.dialect.scalar_type(s).to_string()),
            Type::Ptr(elem, space) => self
                .dialect
                .pointer_type(elem, space)
                .map_err(|e| self.refused(e)),
        }
    }

    /// A declaration of `name` with type `ty` (`int32_t x`, `double *p`).
    pub fn declaration(&self, ty: Type, name: &str) -> Result<String, BackendError> {
        let t = self.c_type(ty)?;
        Ok(if t.ends_with('*') {
            format!("{t}{name}")
        } else {
            format!("{t} {name}")
        })
    }

    /// An expression of type `uint64_t` holding the bits of `expr`, a value of type `ty`, in
    /// the encoding of [`nacre_ir::semantics`]: integers and `bool` zero-extended, floats by
    /// their bit pattern, pointers as addresses.
    pub fn bits_of(&mut self, ty: Type, expr: &str) -> String {
        let u64_type = self.dialect.scalar_type(Scalar::U64);
        match ty {
            Type::Scalar(s @ (Scalar::F32 | Scalar::F64)) => {
                self.helpers.insert(Helper::ToBits(s));
                let widen = if s == Scalar::F32 {
                    format!("({u64_type})")
                } else {
                    String::new()
                };
                format!("{widen}{}({expr})", Helper::ToBits(s).name())
            }
            Type::Scalar(s) if s.is_signed_int() && s.bits() < 64 => format!(
                "({u64_type})({}){expr}",
                self.dialect.scalar_type(unsigned_of(s))
            ),
            Type::Scalar(Scalar::U64) => expr.to_string(),
            Type::Scalar(_) => format!("({u64_type}){expr}"),
            Type::Ptr(..) => format!("({u64_type})({}){expr}", self.dialect.address_type()),
        }
    }

    /// The spelling of an optional return type (`void` for none).
    pub fn return_type(&self, ret: Option<Type>) -> Result<String, BackendError> {
        ret.map_or_else(|| Ok("void".to_string()), |t| self.c_type(t))
    }

    /// The prototype of an IR function under the native calling convention: the parameters
    /// named `param_names` (or unnamed), then `uint32_t *status`.
    ///
    /// # Panics
    ///
    /// If `param_names` has fewer names than the function has parameters.
    pub fn prototype(
        &self,
        func: &Function,
        name: &str,
        qualifier: &str,
        param_names: Option<&[String]>,
    ) -> Result<String, BackendError> {
        let mut params = Vec::with_capacity(func.signature.params.len() + 1);
        for (i, &ty) in func.signature.params.iter().enumerate() {
            params.push(match param_names {
                Some(names) => self.declaration(ty, &names[i])?,
                None => self.c_type(ty)?,
            });
        }
        let status = self.dialect.status_type().map_err(|e| self.refused(e))?;
        params.push(if param_names.is_some() {
            format!("{status}{STATUS}")
        } else {
            status
        });
        let ret = self.return_type(func.signature.ret)?;
        let space = if ret.ends_with('*') { "" } else { " " };
        Ok(format!(
            "{qualifier}{ret}{space}{name}({})",
            params.join(", ")
        ))
    }
}

/// The unsigned type in which wrapping arithmetic on `s` is done: at least 32 bits, so that
/// operands are not promoted to (signed) `int`.
fn wide(s: Scalar) -> Scalar {
    match s.bits() {
        0..=32 => Scalar::U32,
        33..=64 => Scalar::U64,
        _ => Scalar::U128,
    }
}

/// The unsigned type of the same width.
fn unsigned_of(s: Scalar) -> Scalar {
    match s {
        Scalar::I8 => Scalar::U8,
        Scalar::I16 => Scalar::U16,
        Scalar::I32 => Scalar::U32,
        Scalar::I64 => Scalar::U64,
        Scalar::I128 => Scalar::U128,
        other => other,
    }
}

/// The C operator of a comparison.
fn cmp_op(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "==",
        CmpOp::Ne => "!=",
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
    }
}

/// The result of an instruction that the verifier guarantees to have one.
fn result_of(inst: Inst, result: Option<Value>) -> Value {
    match result {
        Some(r) => r,
        None => unreachable!("verified IR: {inst} has a result"),
    }
}

/// The identifiers of values passed as arguments (whose types the verifier checks).
fn arguments(values: &[Value]) -> Vec<String> {
    values.iter().map(Value::to_string).collect()
}

/// Appends a line indented by `indent` levels of four spaces.
fn line(out: &mut String, indent: usize, text: impl std::fmt::Display) {
    for _ in 0..indent {
        out.push_str("    ");
    }
    // Writing to a `String` cannot fail.
    let _ = writeln!(out, "{text}");
}

/// Prints one function.
pub struct FunctionPrinter<'c, 'a, D: Dialect + ?Sized> {
    ctx: &'c mut ModuleContext<'a, D>,
    func: &'a Function,
    name: &'a str,
    /// Values declared in this function (parameters and results of laid-out blocks).
    declared: Vec<bool>,
    /// Blocks some `goto` targets.
    referenced: Vec<bool>,
    /// The statement that leaves the function after a trap.
    trap_return: &'static str,
    /// The storage name of each block-shared array, by allocating instruction.
    shared: HashMap<Inst, String>,
    /// The declarations of the block-shared arrays, in layout order.
    shared_decls: Vec<String>,
    /// The declarations of the call's local arrays ([`InstKind::LocalArray`]: `l0`, `l1`,
    /// ... in layout order), among the function's declarations; `shared` names them too.
    local_decls: Vec<String>,
    /// The dialect's storage of voting barriers ([`Dialect::block_vote_storage`]), printed
    /// after the shared arrays, if the kernel has any.
    vote_decls: Vec<String>,
    /// The index kinds the function reads, by position in [`GpuIndex::ALL`].
    indices: [bool; 4],
    /// Whether the function reads its dynamic shared memory or its size.
    dynamic_shared: bool,
    /// The kernel's lane-parallel grid-stride loop, printed with wide accesses (see `lanes`).
    lanes: Option<lanes::LanePlan>,
    /// Whether the function opens with the stack check (a recursive host function).
    stack_check: bool,
    /// For a kernel whose dialect defers bounds traps ([`Dialect::defers_bounds_traps`]) and
    /// that checks bounds: which blocks head loops that a check can lead to, where a trapped
    /// thread leaves (see [`trapped_exits`]).
    deferred_traps: Option<Vec<bool>>,
}

/// The loop headers of `func` that a thread can reach after a bounds check (a check in the
/// loop or before it), indexed by block: where a thread whose check failed leaves, so that it
/// never spins on values read from the trap sink. Loops no check leads to (those of a kernel's
/// check-free body) need no exit.
fn trapped_exits(func: &Function) -> Vec<bool> {
    let mut after_check = vec![false; func.blocks.len()];
    let mut todo: Vec<Block> = func
        .layout
        .iter()
        .copied()
        .filter(|&b| {
            func.blocks[b]
                .insts
                .iter()
                .any(|&i| matches!(func.insts[i].kind, InstKind::BoundsCheck { .. }))
        })
        .collect();
    for &b in &todo {
        after_check[b.as_u32() as usize] = true;
    }
    while let Some(b) = todo.pop() {
        for s in func.successors(b) {
            if !std::mem::replace(&mut after_check[s.as_u32() as usize], true) {
                todo.push(s);
            }
        }
    }
    let mut headers = vec![false; func.blocks.len()];
    for h in nacre_ir::analysis::compute_loops(func).headers {
        headers[h.as_u32() as usize] = after_check[h.as_u32() as usize];
    }
    headers
}

impl<'c, 'a, D: Dialect + ?Sized> FunctionPrinter<'c, 'a, D> {
    /// A printer for function `id` of the context's module.
    ///
    /// # Panics
    ///
    /// If `id` is not a function of the module.
    pub fn new(ctx: &'c mut ModuleContext<'a, D>, id: FuncId) -> Self {
        let module = ctx.module;
        let func = &module.functions[id];
        let name = ctx.function_name(id);
        let trap_return = if func.signature.ret.is_some() {
            "return 0;"
        } else {
            "return;"
        };
        let lanes = match func.kind {
            FuncKind::Kernel => lanes::plan(ctx.dialect, func, &ctx.kernel_shape),
            _ => None,
        };
        let stack_check = ctx.stack_check.is_some_and(|s| s.checks(id));
        let deferred_traps = (func.kind == FuncKind::Kernel
            && ctx.dialect.defers_bounds_traps()
            && !ctx.dialect.structured_control_flow()
            && func
                .live_insts()
                .any(|d| matches!(d.kind, InstKind::BoundsCheck { .. })))
        .then(|| trapped_exits(func));
        FunctionPrinter {
            ctx,
            func,
            name,
            declared: vec![false; func.values.len()],
            referenced: vec![false; func.blocks.len()],
            trap_return,
            shared: HashMap::new(),
            shared_decls: Vec::new(),
            local_decls: Vec::new(),
            vote_decls: Vec::new(),
            indices: [false; 4],
            dynamic_shared: false,
            lanes,
            stack_check,
            deferred_traps,
        }
    }

    /// An error for an inconsistency between the printer and an analysis it relies on (the
    /// structured form, a lane plan): a bug, never a property of the verified input.
    fn internal(&self, message: impl std::fmt::Display) -> BackendError {
        self.ctx.codegen(format!(
            "function @{}: internal error: {message}",
            self.func.name
        ))
    }

    /// The type of a value of this function.
    fn ty(&self, v: Value) -> Type {
        self.func.values[v].ty
    }

    /// The scalar type of a value that the verifier guarantees to be a scalar (the operand of
    /// an arithmetic operator).
    fn scalar(&self, v: Value) -> Scalar {
        match self.ty(v) {
            Type::Scalar(s) => s,
            Type::Ptr(..) => unreachable!("verified IR: {v} is a scalar operand"),
        }
    }

    fn scalar_type(&self, s: Scalar) -> &'static str {
        self.ctx.dialect.scalar_type(s)
    }

    fn helper(&mut self, h: Helper) -> String {
        self.ctx.helpers.extend(h.uses().iter().copied());
        self.ctx.helpers.insert(h);
        h.name()
    }

    fn math(&self, f: MathFn, s: Scalar) -> String {
        self.ctx.dialect.math_function(f, s)
    }

    /// The function that computes library function `f` on `s`: the target's own or, where the
    /// dialect says so ([`crate::Dialect::math_by_helper`]), Nacre's definition.
    fn library(&mut self, f: MathFn, s: Scalar) -> Result<String, BackendError> {
        let by_helper = (self.ctx.dialect.math_by_helper(f, s)).map_err(|e| self.ctx.refused(e))?;
        Ok(if by_helper {
            self.helper(Helper::Math(f, s))
        } else {
            self.math(f, s)
        })
    }

    /// Marks the values defined in the function's layout (the verifier guarantees that each
    /// is defined once) and records its GPU operations.
    fn collect(&mut self) -> Result<(), BackendError> {
        for &block in &self.func.layout {
            let data = &self.func.blocks[block];
            for &i in &data.insts {
                self.scan_gpu_op(i)?;
            }
            let results = data.insts.iter().filter_map(|&i| self.func.insts[i].result);
            for v in data.params.iter().copied().chain(results) {
                self.declared[v.as_u32() as usize] = true;
            }
        }
        Ok(())
    }

    /// Records a GPU operation: the index kind it reads, or the storage of the shared array
    /// it allocates (the verifier allows GPU operations only in kernels).
    fn scan_gpu_op(&mut self, inst: Inst) -> Result<(), BackendError> {
        match self.func.insts[inst].kind {
            InstKind::GpuIndex(index, _) => {
                if let Some(i) = GpuIndex::ALL.iter().position(|&k| k == index) {
                    self.indices[i] = true;
                }
            }
            InstKind::DynamicShared { .. } | InstKind::DynamicSharedBytes => {
                self.dynamic_shared = true;
            }
            InstKind::LaneId | InstKind::Shuffle(..) | InstKind::Warp(..) => self.reads_lanes(),
            InstKind::BlockVote(..) => {
                self.reads_lanes();
                if self.vote_decls.is_empty() {
                    let storage = self.ctx.dialect.block_vote_storage();
                    self.vote_decls = storage.iter().map(|d| d.to_string()).collect();
                }
            }
            InstKind::LocalArray { elem, len } => {
                if self.ctx.side == Side::Device {
                    return Err(self.ctx.unsupported("local arrays in device code"));
                }
                let name = format!("l{}", self.local_decls.len());
                let ty = self.ctx.c_type(Type::Scalar(elem))?;
                let align = nacre_ir::LOCAL_ARRAY_ALIGN;
                self.local_decls.push(format!(
                    "{ty} {name}[{len}] __attribute__((aligned({align})));"
                ));
                self.shared.insert(inst, name);
            }
            InstKind::SharedAlloc { elem, len } => {
                let name = format!("s{}", self.shared_decls.len());
                self.ctx.c_type(Type::Scalar(elem))?;
                let decl = self
                    .ctx
                    .dialect
                    .shared_array(elem, len, &name)
                    .map_err(|e| self.ctx.refused(e))?;
                self.shared_decls.push(decl);
                self.shared.insert(inst, name);
            }
            _ => {}
        }
        Ok(())
    }

    /// Marks the thread index and the block size as read: every collective derives its lane
    /// and its warp's extent from them (a dialect whose indices are kernel parameters then
    /// declares both).
    fn reads_lanes(&mut self) {
        for (seen, index) in self.indices.iter_mut().zip(GpuIndex::ALL) {
            if matches!(index, GpuIndex::ThreadIdx | GpuIndex::BlockDim) {
                *seen = true;
            }
        }
    }

    /// The function's head (everything before the opening brace) and the statements that
    /// open its body.
    fn head(&self, param_names: &[String]) -> Result<(String, Vec<String>), BackendError> {
        let dialect = self.ctx.dialect;
        let refused = |e| self.ctx.refused(e);
        match (self.ctx.side, self.func.kind) {
            (Side::Device, FuncKind::Kernel) => {
                let params = self
                    .func
                    .signature
                    .params
                    .iter()
                    .zip(param_names)
                    .map(|(&ty, name)| {
                        Ok(KernelParam {
                            name: name.clone(),
                            ty,
                            c_type: self.ctx.c_type(ty)?,
                        })
                    })
                    .collect::<Result<Vec<_>, BackendError>>()?;
                let indices: Vec<GpuIndex> = GpuIndex::ALL
                    .iter()
                    .zip(self.indices)
                    .filter_map(|(&k, used)| used.then_some(k))
                    .collect();
                let head = KernelHead {
                    name: self.name,
                    params: &params,
                    status: STATUS,
                    indices: &indices,
                    dynamic_shared: self.dynamic_shared,
                    threads_per_block: self.ctx.kernel_shape.threads_per_block(),
                };
                let p = dialect.kernel_prototype(&head).map_err(refused)?;
                Ok((p.signature, p.prologue))
            }
            (Side::Device, FuncKind::Host) => {
                let qualifier = dialect.device_function_qualifier().map_err(refused)?;
                let proto =
                    self.ctx
                        .prototype(self.func, self.name, qualifier, Some(param_names))?;
                Ok((proto, Vec::new()))
            }
            (Side::Host, kind) => {
                let qualifier = dialect.function_qualifier(kind).map_err(refused)?;
                let proto =
                    self.ctx
                        .prototype(self.func, self.name, qualifier, Some(param_names))?;
                let prologue = match self.stack_check {
                    true => vec![StackCheck::statement(self.trap_return)],
                    false => Vec::new(),
                };
                Ok((proto, prologue))
            }
        }
    }

    /// Prints the function definition.
    pub fn print(mut self) -> Result<String, BackendError> {
        self.collect()?;
        let entry = self.func.layout[0];
        let param_names: Vec<String> = self.func.blocks[entry]
            .params
            .iter()
            .map(|p| p.to_string())
            .collect();
        let (head, prologue) = self.head(&param_names)?;

        let mut is_param = vec![false; self.func.values.len()];
        for p in &self.func.blocks[entry].params {
            is_param[p.as_u32() as usize] = true;
        }
        let mut decls = String::new();
        for (v, data) in self.func.values.iter() {
            let i = v.as_u32() as usize;
            if self.declared[i] && !is_param[i] {
                line(
                    &mut decls,
                    1,
                    format_args!("{};", self.ctx.declaration(data.ty, &v.to_string())?),
                );
            }
        }

        if self.deferred_traps.is_some() {
            let u8_t = self.scalar_type(Scalar::U8);
            line(&mut decls, 1, format_args!("{u8_t} {TRAPPED} = 0;"));
        }

        for d in &self.local_decls {
            line(&mut decls, 1, d);
        }
        let mut body = String::new();
        if self.ctx.dialect.structured_control_flow() {
            body = self.structured_body()?;
        } else {
            let mut bodies = Vec::with_capacity(self.func.layout.len());
            for (i, &block) in self.func.layout.iter().enumerate() {
                let next = self.func.layout.get(i + 1).copied();
                bodies.push(self.block(block, next)?);
            }
            for (&block, text) in self.func.layout.iter().zip(bodies) {
                if self.referenced[block.as_u32() as usize] {
                    line(&mut body, 0, format_args!("{block}:"));
                }
                body.push_str(&text);
            }
        }

        let mut out = String::new();
        line(&mut out, 0, format_args!("{head} {{"));
        let kernel_scope = self.shared_decls.iter().chain(&self.vote_decls);
        for statement in prologue.iter().chain(kernel_scope) {
            line(&mut out, 1, statement);
        }
        let opened =
            !prologue.is_empty() || !self.shared_decls.is_empty() || !self.vote_decls.is_empty();
        if opened && !decls.is_empty() {
            out.push('\n');
        }
        out.push_str(&decls);
        if !decls.is_empty() {
            out.push('\n');
        }
        out.push_str(&body);
        line(&mut out, 0, "}");
        Ok(out)
    }

    /// Prints the instructions of a block (which ends in a terminator: the verifier checks it).
    fn block(&mut self, block: Block, next: Option<Block>) -> Result<String, BackendError> {
        let mut out = String::new();
        let header = |h: &Vec<bool>| h[block.as_u32() as usize];
        if self.deferred_traps.as_ref().is_some_and(header) {
            line(
                &mut out,
                1,
                format_args!("if ({TRAPPED}) {}", self.trap_return),
            );
        }
        for &inst in &self.func.blocks[block].insts {
            self.inst(&mut out, inst, next)?;
        }
        Ok(out)
    }

    /// Prints one instruction.
    fn inst(
        &mut self,
        out: &mut String,
        inst: Inst,
        next: Option<Block>,
    ) -> Result<(), BackendError> {
        let data = &self.func.insts[inst];
        let result = data.result;
        if let Some(s) = nacre_ir::transform::widen_half::unwidened_half(self.func, &data.kind) {
            return Err(self.ctx.unsupported(format!(
                "{s} arithmetic (widen it to f32 first: nacre_ir::transform::widen_half)"
            )));
        }
        let expr = match &data.kind {
            InstKind::Const(c) => literal(self.ctx.dialect, *c, &mut self.ctx.helpers)
                .map_err(|e| self.ctx.refused(e))?,
            InstKind::Unary(op, a) => self.unary(*op, *a),
            InstKind::Binary(op, a, b) => self.binary(out, *op, *a, *b),
            InstKind::Fma(a, b, c) => self.fma(*a, *b, *c),
            InstKind::Math(f, a) => {
                format!("{}({a})", self.library(MathFn::Lib(*f), self.scalar(*a))?)
            }
            InstKind::Math2(f, a, b) => {
                format!(
                    "{}({a}, {b})",
                    self.library(MathFn::Lib2(*f), self.scalar(*a))?
                )
            }
            // The verifier checks that both operands have the same type.
            InstKind::Cmp(op, a, b) if self.ty(*a).is_ptr() => {
                let addr = self.ctx.dialect.address_type();
                format!("({addr}){a} {} ({addr}){b}", cmp_op(*op))
            }
            InstKind::Cmp(op, a, b) => format!("{a} {} {b}", cmp_op(*op)),
            InstKind::Cast(a) => {
                let to = self.ty(result_of(inst, result));
                self.cast(self.ty(*a), to, &a.to_string())?
            }
            InstKind::Select(c, a, b) => format!("{c} ? {a} : {b}"),
            InstKind::ElemPtr(p, i) => format!("{p} + ({}){i}", self.scalar_type(Scalar::I64)),
            InstKind::Load(p) => format!("*{p}"),
            InstKind::Store(p, v) => {
                line(out, 1, format_args!("*{p} = {v};"));
                return Ok(());
            }
            InstKind::BoundsCheck {
                addr,
                base,
                bytes,
                trap,
            } => {
                return self.bounds_check(out, *addr, *base, *bytes, *trap);
            }
            InstKind::AtomicRmw {
                op,
                ptr,
                value,
                order,
                scope,
            } => {
                let value = value.to_string();
                let kind = AtomicKind::Rmw {
                    op: *op,
                    value: &value,
                };
                return self.atomic(out, result, *ptr, kind, *order, *scope);
            }
            InstKind::AtomicCas {
                ptr,
                expected,
                new,
                order,
                scope,
            } => {
                let (expected, new) = (expected.to_string(), new.to_string());
                let kind = AtomicKind::Cas {
                    expected: &expected,
                    new: &new,
                };
                return self.atomic(out, result, *ptr, kind, *order, *scope);
            }
            InstKind::Fence { order, scope } => {
                let fence = self
                    .ctx
                    .dialect
                    .fence(*order, *scope)
                    .map_err(|e| self.ctx.refused(e))?;
                line(out, 1, fence);
                return Ok(());
            }
            InstKind::Call(callee, args) => return self.call(out, result, *callee, args),
            InstKind::CallExtern(ext, args) => {
                let (call, comment) = self.call_extern(*ext, args)?;
                match result {
                    Some(r) => line(out, 1, format_args!("{r} = {call}; /* {comment} */")),
                    None => line(out, 1, format_args!("{call}; /* {comment} */")),
                }
                return Ok(());
            }
            InstKind::Launch(l) => return self.launch(out, l),
            InstKind::GpuIndex(index, dim) => self
                .ctx
                .dialect
                .gpu_index(*index, *dim)
                .map_err(|e| self.ctx.refused(e))?,
            InstKind::Barrier => {
                let barrier = self
                    .ctx
                    .dialect
                    .barrier()
                    .map_err(|e| self.ctx.refused(e))?;
                line(out, 1, barrier);
                return Ok(());
            }
            // `collect` named the storage of every shared array of the layout.
            InstKind::SharedAlloc { .. } => self.shared[&inst].clone(),
            // Zeroed where it is allocated, then its address.
            InstKind::LocalArray { .. } => {
                let name = self.shared[&inst].clone();
                line(out, 1, format_args!("memset({name}, 0, sizeof {name});"));
                name
            }
            InstKind::DynamicShared { .. } => {
                let r = result.ok_or_else(|| self.internal("dynamic_shared without a result"))?;
                let ptr_type = self.ctx.c_type(self.func.values[r].ty)?;
                self.ctx
                    .dialect
                    .dynamic_shared(&ptr_type)
                    .map_err(|e| self.ctx.refused(e))?
            }
            InstKind::DynamicSharedBytes => self
                .ctx
                .dialect
                .dynamic_shared_bytes()
                .map_err(|e| self.ctx.refused(e))?,
            InstKind::LaneId => self.collective(Collective::LaneId, Scalar::U32, &[])?,
            InstKind::Shuffle(op, v, lane) => {
                self.collective(Collective::Shuffle(*op), self.scalar(*v), &[*v, *lane])?
            }
            InstKind::Warp(op, v) => {
                self.collective(Collective::Warp(*op), self.scalar(*v), &[*v])?
            }
            InstKind::BlockVote(op, v) => {
                self.collective(Collective::BlockVote(*op), Scalar::Bool, &[*v])?
            }
            InstKind::Jump(dest) => {
                if self.lanes.as_ref().is_some_and(|p| p.entry_jump() == inst) {
                    self.lane_prelude(out)?;
                }
                return self.jump(out, dest, next);
            }
            InstKind::Branch {
                cond,
                then_dest,
                else_dest,
            } => return self.branch(out, *cond, then_dest, else_dest, next),
            // The verifier checks the returned value against the signature.
            InstKind::Return(v) => {
                match v {
                    Some(v) => line(out, 1, format_args!("return {v};")),
                    None => line(out, 1, "return;"),
                }
                return Ok(());
            }
        };
        let r = result_of(inst, result);
        line(out, 1, format_args!("{r} = {expr};"));
        Ok(())
    }

    fn unary(&mut self, op: UnaryOp, a: Value) -> String {
        let s = self.scalar(a);
        let t = self.scalar_type(s);
        let a = a.to_string();
        if s == Scalar::Bool {
            match op {
                UnaryOp::Not => format!("!{a}"),
                _ => a,
            }
        } else if s.is_int() {
            let w = self.scalar_type(wide(s));
            match op {
                UnaryOp::Neg if wide(s) == s => format!("-{a}"),
                UnaryOp::Neg => format!("({t})-({w}){a}"),
                UnaryOp::Not => format!("({t})~{a}"),
                UnaryOp::Abs if s.is_signed_int() => format!("{a} < 0 ? ({t})-({w}){a} : {a}"),
                UnaryOp::Abs
                | UnaryOp::Sqrt
                | UnaryOp::Floor
                | UnaryOp::Ceil
                | UnaryOp::Trunc
                | UnaryOp::Round => a,
                UnaryOp::CountOnes
                | UnaryOp::LeadingZeros
                | UnaryOp::TrailingZeros
                | UnaryOp::SwapBytes
                | UnaryOp::ReverseBits => format!("{}({a})", self.helper(Helper::Bits(op, s))),
            }
        } else {
            let math = |f| format!("{}({a})", self.math(f, s));
            match op {
                UnaryOp::Neg => format!("-{a}"),
                UnaryOp::Not => a,
                UnaryOp::Abs => math(MathFn::Abs),
                UnaryOp::Sqrt => math(MathFn::Sqrt),
                UnaryOp::Floor => math(MathFn::Floor),
                UnaryOp::Ceil => math(MathFn::Ceil),
                UnaryOp::Trunc => math(MathFn::Trunc),
                UnaryOp::Round => math(MathFn::Round),
                // Integer bit operations are not defined on floats (the verifier refuses them).
                UnaryOp::CountOnes
                | UnaryOp::LeadingZeros
                | UnaryOp::TrailingZeros
                | UnaryOp::SwapBytes
                | UnaryOp::ReverseBits => a,
            }
        }
    }

    /// Prints the check that leaves with `trap` when `divisor` is zero.
    fn trap_if_zero(&self, out: &mut String, divisor: &str, trap: Trap) {
        self.trap_if(out, &format!("{divisor} == 0"), trap);
    }

    /// Prints `if (cond) { *status = code; return; }`.
    fn trap_if(&self, out: &mut String, cond: &str, trap: Trap) {
        line(
            out,
            1,
            format_args!(
                "if ({cond}) {{ *status = {}; {} }}",
                trap.code(),
                self.trap_return
            ),
        );
    }

    /// A bounds check ([`nacre_ir::semantics::in_bounds`]): the offset from the base must be
    /// below `bytes - size + 1`, or 0 when `bytes < size`.
    /// With deferred traps, a failure records its trap, redirects `addr` to the sink and sets
    /// the kernel's trapped flag.
    fn bounds_check(
        &mut self,
        out: &mut String,
        addr: Value,
        base: Value,
        bytes: Value,
        trap: Trap,
    ) -> Result<(), BackendError> {
        let size = self.ty(addr).pointee().map_or(1, |s| s.bytes());
        let addr_t = self.ctx.dialect.address_type();
        let u64_t = self.scalar_type(Scalar::U64);
        let off = format!("({u64_t})(({addr_t}){addr} - ({addr_t}){base})");
        let limit = if size == 1 {
            bytes.to_string()
        } else {
            format!(
                "({bytes} >= ({u64_t}){size} ? {bytes} - ({u64_t}){} : ({u64_t})0)",
                size - 1
            )
        };
        let cond = format!("{off} >= {limit}");
        if self.deferred_traps.is_none() {
            self.trap_if(out, &cond, trap);
            return Ok(());
        }
        let ptr_t = self.ctx.c_type(self.ty(addr))?;
        let sink = self.helper(Helper::TrapSink);
        // The flag is or-ed in without a branch: set inside the failure path, it would make
        // every check a real branch (10 µs more on the H200's checked softmax).
        let u8_t = self.scalar_type(Scalar::U8);
        line(
            out,
            1,
            format_args!(
                "{{ {u8_t} nacre_bad = {cond}; if (nacre_bad) {{ *status = {}; {addr} = ({ptr_t}){sink}; }} {TRAPPED} |= nacre_bad; }}",
                trap.code()
            ),
        );
        Ok(())
    }

    fn binary(&mut self, out: &mut String, op: BinaryOp, a: Value, b: Value) -> String {
        // The verifier checks that both operands have the same scalar type.
        let s = self.scalar(a);
        let t = self.scalar_type(s);
        let (a, b) = (a.to_string(), b.to_string());
        if s == Scalar::Bool {
            return match op {
                BinaryOp::And | BinaryOp::Mul | BinaryOp::Min => format!("{a} & {b}"),
                BinaryOp::Or | BinaryOp::Max => format!("{a} | {b}"),
                BinaryOp::Xor | BinaryOp::Add | BinaryOp::Sub => format!("{a} ^ {b}"),
                BinaryOp::Div
                | BinaryOp::Rem
                | BinaryOp::Shl
                | BinaryOp::Shr
                | BinaryOp::Copysign => a,
            };
        }
        if s.is_float() {
            return match op {
                BinaryOp::Add => format!("{a} + {b}"),
                BinaryOp::Sub => format!("{a} - {b}"),
                BinaryOp::Mul => format!("{a} * {b}"),
                BinaryOp::Div => format!("{a} / {b}"),
                BinaryOp::Rem => format!("{}({a}, {b})", self.math(MathFn::Rem, s)),
                BinaryOp::Min => format!("{}({a}, {b})", self.helper(Helper::Min(s))),
                BinaryOp::Max => format!("{}({a}, {b})", self.helper(Helper::Max(s))),
                BinaryOp::Copysign => format!("{}({a}, {b})", self.math(MathFn::Copysign, s)),
                BinaryOp::And | BinaryOp::Or | BinaryOp::Xor | BinaryOp::Shl | BinaryOp::Shr => a,
            };
        }
        let w = self.scalar_type(wide(s));
        let mask = s.bits() - 1;
        let wrapping = |op: &str| {
            if wide(s) == s {
                format!("{a} {op} {b}")
            } else {
                format!("({t})(({w}){a} {op} ({w}){b})")
            }
        };
        match op {
            BinaryOp::Add => wrapping("+"),
            BinaryOp::Sub => wrapping("-"),
            BinaryOp::Mul => wrapping("*"),
            BinaryOp::Div => {
                self.trap_if_zero(out, &b, Trap::DivisionByZero);
                if s.is_signed_int() {
                    format!("{b} == -1 ? ({t})-({w}){a} : {a} / {b}")
                } else {
                    format!("{a} / {b}")
                }
            }
            BinaryOp::Rem => {
                self.trap_if_zero(out, &b, Trap::RemainderByZero);
                if s.is_signed_int() {
                    format!("{b} == -1 ? 0 : {a} % {b}")
                } else {
                    format!("{a} % {b}")
                }
            }
            BinaryOp::And => format!("{a} & {b}"),
            BinaryOp::Or => format!("{a} | {b}"),
            BinaryOp::Xor => format!("{a} ^ {b}"),
            BinaryOp::Shl if wide(s) == s => format!("{a} << ({b} & {mask})"),
            BinaryOp::Shl => format!("({t})(({w}){a} << ({b} & {mask}))"),
            BinaryOp::Shr => format!("({t})({a} >> ({b} & {mask}))"),
            BinaryOp::Min => format!("{a} < {b} ? {a} : {b}"),
            BinaryOp::Max => format!("{a} > {b} ? {a} : {b}"),
            // Defined on floats only (the verifier refuses it on integers).
            BinaryOp::Copysign => a,
        }
    }

    fn fma(&self, a: Value, b: Value, c: Value) -> String {
        // The verifier checks that the operands are floats of one type (fma on integers and
        // `bool`, which `semantics` defines, does not verify).
        let s = self.scalar(a);
        format!("{}({a}, {b}, {c})", self.math(MathFn::Fma, s))
    }

    /// A conversion with Rust `as` semantics of expression `a` from `from` to `to`.
    fn cast(&mut self, from: Type, to: Type, a: &str) -> Result<String, BackendError> {
        let address = self.ctx.dialect.address_type();
        match (from, to) {
            (Type::Ptr(..), Type::Ptr(..)) => Ok(format!("({}){a}", self.ctx.c_type(to)?)),
            (Type::Ptr(..), Type::Scalar(t)) => {
                let addr = format!("({})({address}){a}", self.scalar_type(Scalar::U64));
                if t == Scalar::U64 {
                    Ok(addr)
                } else {
                    self.scalar_cast(Scalar::U64, t, &format!("({addr})"))
                }
            }
            (Type::Scalar(f), Type::Ptr(..)) => {
                let bits = self.scalar_cast(f, Scalar::U64, a)?;
                Ok(format!("({})({address})({bits})", self.ctx.c_type(to)?))
            }
            (Type::Scalar(f), Type::Scalar(t)) => self.scalar_cast(f, t, a),
        }
    }

    fn scalar_cast(&mut self, from: Scalar, to: Scalar, a: &str) -> Result<String, BackendError> {
        let t = self.scalar_type(to);
        Ok(if from == to {
            a.to_string()
        } else if from.is_half() {
            let wide = format!("{}({a})", self.helper(Helper::HalfToF32(from)));
            self.scalar_cast(Scalar::F32, to, &wide)?
        } else if to.is_half() {
            let wide = self.scalar_cast(from, Scalar::F32, a)?;
            format!("{}({wide})", self.helper(Helper::F32ToHalf(to)))
        } else if to == Scalar::Bool {
            format!("{a} != 0")
        } else if from.is_float() && to.is_int() {
            format!("{}({a})", self.helper(Helper::FloatToInt { from, to }))
        } else {
            format!("({t}){a}")
        })
    }

    fn call(
        &mut self,
        out: &mut String,
        result: Option<Value>,
        callee: FuncId,
        args: &[Value],
    ) -> Result<(), BackendError> {
        // The verifier checks that the callee exists and the arguments and result against its
        // signature, but not its kind.
        let func = &self.ctx.module.functions[callee];
        if func.kind == FuncKind::Kernel {
            return Err(self.ctx.unsupported(format!(
                "calls to GPU kernel @{} (kernels are launched)",
                func.name
            )));
        }
        let mut args = arguments(args);
        args.push(STATUS.to_string());
        let call = format!("{}({})", self.ctx.function_name(callee), args.join(", "));
        match result {
            Some(r) => line(out, 1, format_args!("{r} = {call};")),
            None => line(out, 1, format_args!("{call};")),
        }
        line(out, 1, format_args!("if (*status) {}", self.trap_return));
        Ok(())
    }

    /// Prints an atomic instruction as its dialect spells it, defining the helper it calls.
    /// The expression of a collective operation, from the dialect; defines the helpers it
    /// calls.
    fn collective(
        &mut self,
        op: Collective,
        elem: Scalar,
        operands: &[Value],
    ) -> Result<String, BackendError> {
        let operands: Vec<String> = operands.iter().map(Value::to_string).collect();
        let access = CollectiveAccess {
            op,
            elem,
            operands: &operands,
        };
        let spelling = self
            .ctx
            .dialect
            .collective(&access)
            .map_err(|e| self.ctx.refused(e))?;
        for h in spelling.helpers {
            self.helper(h);
        }
        Ok(spelling.expr)
    }

    fn atomic(
        &mut self,
        out: &mut String,
        result: Option<Value>,
        ptr: Value,
        kind: AtomicKind<'_>,
        order: nacre_ir::MemOrder,
        scope: nacre_ir::Scope,
    ) -> Result<(), BackendError> {
        let r = result.ok_or_else(|| self.internal("an atomic without a result"))?;
        let elem = self
            .ty(r)
            .scalar()
            .ok_or_else(|| self.internal("a pointer atomic"))?;
        let space = match self.ty(ptr) {
            Type::Ptr(_, space) => space,
            _ => return Err(self.internal("an atomic through a non-pointer")),
        };
        let (result, ptr) = (r.to_string(), ptr.to_string());
        let access = AtomicAccess {
            result: &result,
            ptr: &ptr,
            space,
            elem,
            kind,
            order,
            scope,
        };
        let spelling = self
            .ctx
            .dialect
            .atomic(&access)
            .map_err(|e| self.ctx.refused(e))?;
        if let Some(h) = spelling.helper {
            self.helper(h);
        }
        line(out, 1, spelling.statements);
        Ok(())
    }

    /// Prints a kernel launch: the sizes and the arguments' bits go into local arrays, the
    /// launcher is called with the kernel's handle and this function's status, and a nonzero
    /// status leaves the function as after a trapping call.
    fn launch(&mut self, out: &mut String, l: &nacre_ir::Launch) -> Result<(), BackendError> {
        // The verifier allows launches in host functions only, but a host function that a
        // kernel calls is device code, which has no launch tables.
        let Some(tables) = self.ctx.launch_tables else {
            return Err(self.ctx.unsupported("kernel launches"));
        };
        // The verifier checks that the launched function is a kernel, the sizes `u32`s and
        // the arguments against the kernel's signature.
        let kernel = &self.ctx.module.functions[l.kernel];
        // The tables come with the context, not the IR: a context whose handle table lacks a
        // launched kernel is a bug of its builder.
        let slot = tables
            .kernels
            .iter()
            .position(|&k| k == l.kernel)
            .ok_or_else(|| self.internal(format_args!("no handle slot for @{}", kernel.name)))?;
        let mut dims = arguments(&[l.grid, l.block].concat());
        dims.push(l.shared_bytes.map_or("0".into(), |v| v.to_string()));
        let args = arguments(&l.args);
        let u32_type = self.scalar_type(Scalar::U32);
        let u64_type = self.scalar_type(Scalar::U64);
        line(out, 1, "{");
        line(
            out,
            2,
            format_args!(
                "{u32_type} dims[{}] = {{ {} }};",
                dims.len(),
                dims.join(", ")
            ),
        );
        if args.is_empty() {
            // C has no empty arrays; the launcher reads no argument.
            line(out, 2, format_args!("{u64_type} args[1] = {{ 0 }};"));
        } else {
            line(out, 2, format_args!("{u64_type} args[{}];", args.len()));
        }
        for (i, (&v, &ty)) in l.args.iter().zip(&kernel.signature.params).enumerate() {
            let bits = self.ctx.bits_of(ty, &v.to_string());
            line(out, 2, format_args!("args[{i}] = {bits};"));
        }
        let comment: String = kernel
            .name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        line(
            out,
            2,
            format_args!(
                "{}({}[{slot}], dims, args, status); /* launch @{comment} */",
                tables.launcher, tables.handles
            ),
        );
        line(out, 1, "}");
        line(out, 1, format_args!("if (*status) {}", self.trap_return));
        Ok(())
    }

    /// The call expression of an external function and a comment naming it.
    fn call_extern(
        &mut self,
        ext: nacre_ir::ExternId,
        args: &[Value],
    ) -> Result<(String, String), BackendError> {
        let Some(table) = self.ctx.extern_table else {
            return Err(self.ctx.unsupported("calls to external functions"));
        };
        // The verifier checks that the extern exists and the arguments and result against its
        // signature.
        let e = &self.ctx.module.externs[ext];
        let args = arguments(args);
        let params = e
            .signature
            .params
            .iter()
            .map(|&t| self.ctx.c_type(t))
            .collect::<Result<Vec<_>, _>>()?;
        let params = if params.is_empty() {
            "void".to_string()
        } else {
            params.join(", ")
        };
        let ret = self.ctx.return_type(e.signature.ret)?;
        let comment: String = e
            .name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let call = format!(
            "(({ret} (*)({params})){table}[{}])({})",
            ext.as_u32(),
            args.join(", ")
        );
        Ok((call, format!("extern @{comment}")))
    }

    /// The assignments of a jump's arguments to its target's parameters, and whether they
    /// declare temporaries (and so need their own scope). The verifier checks that the
    /// target is laid out and the arguments against its parameters.
    fn moves(&mut self, dest: &BlockCall) -> Result<(Vec<String>, bool), BackendError> {
        let params = &self.func.blocks[dest.block].params;
        let pairs: Vec<(Value, Value)> = params
            .iter()
            .copied()
            .zip(dest.args.iter().copied())
            .collect();
        let mut lines = Vec::new();
        let mut temps = false;
        for step in sequentialize(&pairs) {
            match step {
                Step::Save { temp, value } => {
                    temps = true;
                    let decl = self.ctx.declaration(self.ty(value), &format!("t{temp}"))?;
                    lines.push(format!("{decl} = {value};"));
                }
                Step::Assign {
                    dst,
                    src: Source::Value(v),
                } => lines.push(format!("{dst} = {v};")),
                Step::Assign {
                    dst,
                    src: Source::Temp(t),
                } => lines.push(format!("{dst} = t{t};")),
            }
        }
        Ok((lines, temps))
    }

    fn goto(&mut self, out: &mut String, indent: usize, block: Block) {
        self.referenced[block.as_u32() as usize] = true;
        line(out, indent, format_args!("goto {block};"));
    }

    /// Prints a jump: parameter moves (in their own scope when they need temporaries), then a
    /// `goto` unless the target is the next block.
    fn jump(
        &mut self,
        out: &mut String,
        dest: &BlockCall,
        next: Option<Block>,
    ) -> Result<(), BackendError> {
        let (lines, temps) = self.moves(dest)?;
        let indent = if temps { 2 } else { 1 };
        if temps {
            line(out, 1, "{");
        }
        for l in &lines {
            line(out, indent, l);
        }
        if temps {
            line(out, 1, "}");
        }
        if Some(dest.block) != next {
            self.goto(out, 1, dest.block);
        }
        Ok(())
    }

    /// Prints a branch as `if (cond) { moves; goto taken; }` followed by the other edge. The
    /// edge to the next block, if any, is the one that falls through. (The verifier checks
    /// that the condition is a `bool`.)
    fn branch(
        &mut self,
        out: &mut String,
        cond: Value,
        then_dest: &BlockCall,
        else_dest: &BlockCall,
        next: Option<Block>,
    ) -> Result<(), BackendError> {
        let invert = Some(then_dest.block) == next && Some(else_dest.block) != next;
        let (taken, rest, test) = if invert {
            (else_dest, then_dest, format!("!{cond}"))
        } else {
            (then_dest, else_dest, cond.to_string())
        };
        let (lines, _) = self.moves(taken)?;
        if lines.is_empty() {
            self.referenced[taken.block.as_u32() as usize] = true;
            line(out, 1, format_args!("if ({test}) goto {};", taken.block));
        } else {
            line(out, 1, format_args!("if ({test}) {{"));
            for l in &lines {
                line(out, 2, l);
            }
            self.goto(out, 2, taken.block);
            line(out, 1, "}");
        }
        self.jump(out, rest, next)
    }
}
