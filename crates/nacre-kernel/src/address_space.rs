//! Address-space inference for GPU code.
//!
//! Tracing gives every pointer the [`AddressSpace::Generic`] space. Targets whose pointer types
//! carry their memory (Metal's `device float *` and `threadgroup float *`) need the space of
//! every pointer value of a kernel. [`infer_address_spaces`] computes it and returns a
//! [`DeviceModule`]: the kernels of a module and the device copies of the functions they call,
//! with every pointer type retagged to [`AddressSpace::Device`] or [`AddressSpace::Shared`].
//! Host functions are left out; the input module is not changed.
//!
//! Per function, the analysis is a propagation to a fixpoint over "same space" constraints:
//!
//! - seeds: a kernel's pointer parameters are device memory (kernel buffers), the result of a
//!   `shared_alloc` is shared (threadgroup) memory, a device function's pointer parameters
//!   have the spaces of the specialisation being built, and a call's pointer result has the
//!   space its callee's specialisation returns;
//! - constraints (both ways): the result of `elem_ptr` and its base; the result of `select`
//!   and both arms; a block parameter and every argument jumps pass to it; the operands of a
//!   pointer comparison; all returned pointers of a function; a cast between a pointer and a
//!   64-bit integer, or between 64-bit integers, and its operand (so a pointer that goes
//!   through an integer and back keeps its space);
//! - integer arithmetic (`add`, `sub`, `and`, `or`, `xor` on 64-bit integers) passes the space
//!   of an address-carrying operand on to its result, one way.
//!
//! A pointer value reached by two spaces is an error ([`AddressSpaceError::Conflict`]) that
//! names the value and where each space came from: a GPU pointer variable has one address
//! space, so such code cannot be written in MSL. Integers may mix (the difference of two
//! addresses is a plain number); a pointer made from such an integer is a conflict. Pointers
//! that no seed reaches (a null pointer, an integer turned into a pointer) are device memory.
//!
//! Calls from kernels are specialised: each function a kernel calls gets one device copy per
//! combination of its pointer parameters' spaces (named after the function with one letter
//! per pointer parameter: `d` device, `s` shared, e.g. `@scale__ds`; a function without
//! pointer parameters keeps its name). A callee whose copy would depend on itself (recursion)
//! is an error ([`AddressSpaceError::Recursion`]): the copies could not be specialised
//! finitely in general, and GPU shading languages such as MSL forbid recursion anyway.

use cranelift_entity::SecondaryMap;
use nacre_ir::Module;
use nacre_ir::{AddressSpace, Scalar, Type};
use nacre_ir::{BinaryOp, InstKind};
use nacre_ir::{FuncId, Inst, Value};
use nacre_ir::{FuncKind, Function, ValueDef};
use std::collections::HashMap;
use std::fmt;
use thiserror::Error;

/// The kernels of a module and the device functions they call, with inferred address spaces.
#[derive(Clone, Debug)]
pub struct DeviceModule {
    /// The kernels (first, in the input's order) and the device functions. Every pointer type
    /// is [`AddressSpace::Device`] or [`AddressSpace::Shared`]; `entry` is the first kernel
    /// (`None` when the input has no kernel).
    pub module: Module,
    /// Each kernel: its id in the input module and in [`DeviceModule::module`].
    pub kernels: Vec<(FuncId, FuncId)>,
    /// The device functions, in the order they were first called.
    pub device_functions: Vec<DeviceFunction>,
}

/// A device copy of a function called from a kernel.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct DeviceFunction {
    /// Its id in [`DeviceModule::module`].
    pub id: FuncId,
    /// The function it copies, in the input module.
    pub original: FuncId,
    /// The spaces of its parameters ([`AddressSpace::Generic`] for scalars).
    pub params: Vec<AddressSpace>,
}

/// Why address spaces cannot be assigned.
#[derive(Clone, PartialEq, Eq, Debug, Error)]
pub enum AddressSpaceError {
    /// One pointer value would need two address spaces.
    #[error(
        "in @{function}: {value} ({what}) would point into {first} (from {first_origin}) and \
         into {second} (from {second_origin}), along {}; a GPU pointer has one address \
         space, so keep pointers to shared arrays and pointers to kernel buffers in separate \
         variables",
        path.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" - ")
    )]
    Conflict {
        /// The function (for a device copy, the name of the copy).
        function: String,
        /// The value where the two spaces meet: the first block parameter or `select` on
        /// [`AddressSpaceError::Conflict::path`], else the value where the clash was found.
        value: Value,
        /// The values that tie the two origins together, from the first origin to the second.
        path: Vec<Value>,
        /// How the value is defined (`parameter of block3`, `result of select`, ...).
        what: String,
        /// The first space that reached it.
        first: SpaceName,
        /// Where the first space came from.
        first_origin: String,
        /// The second space.
        second: SpaceName,
        /// Where the second space came from.
        second_origin: String,
    },
    /// A function called from a kernel calls itself, directly or through others.
    #[error(
        "@{} is recursive when called from a kernel (call chain {}); GPU code cannot \
         recurse: rewrite the recursion as a loop",
        chain.last().map_or("?", String::as_str),
        chain.iter().map(|f| format!("@{f}")).collect::<Vec<_>>().join(" -> ")
    )]
    Recursion {
        /// The call chain from the kernel to the repeated function.
        chain: Vec<String>,
    },
    /// A kernel or a function it calls calls a kernel (kernels are launched, never called).
    #[error("@{caller} calls kernel @{kernel}; kernels can only be launched from host code")]
    CallsKernel {
        /// The caller.
        caller: String,
        /// The kernel.
        kernel: String,
    },
    /// The module refers to a function that does not exist (the input was not verified).
    #[error(
        "@{caller} calls {callee}, which does not exist in the module; verify the module first"
    )]
    MissingFunction {
        /// The caller.
        caller: String,
        /// The missing id.
        callee: FuncId,
    },
}

/// An address space, named for messages.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct SpaceName(pub AddressSpace);

impl fmt::Display for SpaceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            AddressSpace::Device => "device memory",
            AddressSpace::Shared => "shared (threadgroup) memory",
            AddressSpace::Generic => "generic memory",
        })
    }
}

/// Infers the address space of every pointer in the kernels of `module` and the functions
/// they call, and returns them as a [`DeviceModule`].
///
/// `module` should be verified: ids that do not exist are reported as
/// [`AddressSpaceError::MissingFunction`], never a panic, but other malformed IR gives
/// unspecified spaces.
pub fn infer_address_spaces(module: &Module) -> Result<DeviceModule, AddressSpaceError> {
    let mut state = State {
        input: module,
        output: Module::new(),
        specialised: HashMap::new(),
        device_functions: Vec::new(),
        stack: Vec::new(),
    };
    let mut kernels = Vec::new();
    let kernel_ids: Vec<FuncId> = module
        .functions
        .iter()
        .filter(|(_, f)| f.kind == FuncKind::Kernel)
        .map(|(id, _)| id)
        .collect();
    // Kernels take the first ids of the output, in input order; device functions follow.
    let mut pending = Vec::with_capacity(kernel_ids.len());
    for &id in &kernel_ids {
        let f = &module.functions[id];
        let out = state.output.add_function(Function::new(
            f.name.clone(),
            FuncKind::Kernel,
            f.signature.clone(),
        ));
        pending.push((id, out));
    }
    for (id, out) in pending {
        let f = &module.functions[id];
        let params: Vec<AddressSpace> = f
            .signature
            .params
            .iter()
            .map(|t| space_of_param(*t, AddressSpace::Device))
            .collect();
        state.stack.push(f.name.clone());
        let (copy, _) = state.analyse(id, &params, f.name.clone())?;
        state.stack.pop();
        state.output.functions[out] = copy;
        kernels.push((id, out));
    }
    state.output.entry = kernels.first().map(|&(_, out)| out);
    Ok(DeviceModule {
        module: state.output,
        kernels,
        device_functions: state.device_functions,
    })
}

/// The space a parameter of type `ty` gets: `space` for pointers, generic for scalars.
fn space_of_param(ty: Type, space: AddressSpace) -> AddressSpace {
    if ty.is_ptr() {
        space
    } else {
        AddressSpace::Generic
    }
}

/// Where a value's space came from.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Origin {
    /// The `n`th parameter of the function.
    Param(usize, Value),
    /// A `shared_alloc`.
    SharedAlloc(Value),
    /// The result of a call of a device copy.
    CallResult(String, Value),
    /// A call argument no seed reached, taken as device memory.
    Defaulted(Value),
}

impl Origin {
    /// The value the space was seeded at.
    fn value(&self) -> Value {
        match self {
            Origin::Param(_, v)
            | Origin::SharedAlloc(v)
            | Origin::CallResult(_, v)
            | Origin::Defaulted(v) => *v,
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Param(n, v) => write!(f, "parameter {n}, {v}"),
            Origin::SharedAlloc(v) => write!(f, "the shared array {v}"),
            Origin::CallResult(callee, v) => write!(f, "the result {v} of @{callee}"),
            Origin::Defaulted(v) => write!(
                f,
                "{v}, an argument whose space nothing determines, taken as device memory"
            ),
        }
    }
}

/// What is known about one value's space.
#[derive(Clone, Debug, Default)]
enum Fact {
    /// Nothing reached it yet.
    #[default]
    Unknown,
    /// One space, from one origin.
    Space(AddressSpace, Origin),
    /// Two spaces (only integers can stay in this state).
    Mixed,
}

/// The whole analysis: the input, the output being built and the specialisations so far.
struct State<'m> {
    input: &'m Module,
    output: Module,
    /// (function, parameter spaces) -> (id of the copy, space of its pointer result).
    specialised: HashMap<(FuncId, Vec<AddressSpace>), (FuncId, Option<AddressSpace>)>,
    device_functions: Vec<DeviceFunction>,
    /// Names of the functions being analysed, outermost (the kernel) first.
    stack: Vec<String>,
}

impl State<'_> {
    /// The device copy of `callee` for parameter spaces `params`, creating it if needed.
    fn specialise(
        &mut self,
        caller: &str,
        callee: FuncId,
        params: Vec<AddressSpace>,
    ) -> Result<(FuncId, Option<AddressSpace>), AddressSpaceError> {
        let Some(f) = self.input.functions.get(callee) else {
            return Err(AddressSpaceError::MissingFunction {
                caller: caller.to_string(),
                callee,
            });
        };
        if f.kind == FuncKind::Kernel {
            return Err(AddressSpaceError::CallsKernel {
                caller: caller.to_string(),
                kernel: f.name.clone(),
            });
        }
        if let Some(&done) = self.specialised.get(&(callee, params.clone())) {
            return Ok(done);
        }
        if self.stack.contains(&f.name) {
            let mut chain = self.stack.clone();
            chain.push(f.name.clone());
            return Err(AddressSpaceError::Recursion { chain });
        }
        let mut name = copy_name(&f.name, &f.signature.params, &params);
        let base = name.clone();
        let mut n = 2;
        while self.output.functions.values().any(|g| g.name == name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.stack.push(f.name.clone());
        let (copy, ret) = self.analyse(callee, &params, name)?;
        self.stack.pop();
        let id = self.output.add_function(copy);
        self.specialised.insert((callee, params.clone()), (id, ret));
        self.device_functions.push(DeviceFunction {
            id,
            original: callee,
            params,
        });
        Ok((id, ret))
    }

    /// Analyses function `id` with parameter spaces `params` and returns its retagged copy
    /// named `name`, and the space of its pointer result.
    fn analyse(
        &mut self,
        id: FuncId,
        params: &[AddressSpace],
        name: String,
    ) -> Result<(Function, Option<AddressSpace>), AddressSpaceError> {
        let func = &self.input.functions[id];
        let mut a = Analysis::new(func, name);
        a.build_edges();
        if let Some(entry) = func.entry() {
            for (n, (&p, &space)) in func.blocks[entry].params.iter().zip(params).enumerate() {
                if func.values[p].ty.is_ptr() {
                    a.seed(p, space, Origin::Param(n, p))?;
                }
            }
        }
        for &v in &a.shared_allocs.clone() {
            a.seed(v, AddressSpace::Shared, Origin::SharedAlloc(v))?;
        }

        // Calls, resolved once their pointer arguments are known; when none is ready, the
        // first pending call's unknown arguments are taken as device memory.
        let mut pending = a.calls.clone();
        let mut targets: HashMap<Inst, FuncId> = HashMap::new();
        while !pending.is_empty() {
            let ready = pending.iter().position(|&inst| a.call_ready(inst));
            let index = match ready {
                Some(i) => i,
                None => {
                    let inst = pending[0];
                    for arg in a.call_args(inst) {
                        if func.values[arg].ty.is_ptr() && matches!(a.facts[arg], Fact::Unknown) {
                            a.seed(arg, AddressSpace::Device, Origin::Defaulted(arg))?;
                        }
                    }
                    0
                }
            };
            let inst = pending.remove(index);
            let InstKind::Call(callee, args) = &func.insts[inst].kind else {
                continue;
            };
            let spaces = args
                .iter()
                .map(|&arg| match (&a.facts[arg], func.values[arg].ty) {
                    (Fact::Space(s, _), Type::Ptr(..)) => *s,
                    (_, Type::Ptr(..)) => AddressSpace::Device,
                    _ => AddressSpace::Generic,
                })
                .collect();
            let (copy, ret) = self.specialise(&a.name, *callee, spaces)?;
            targets.insert(inst, copy);
            if let (Some(r), Some(space)) = (func.insts[inst].result, ret) {
                if func.values[r].ty.is_ptr() {
                    let callee_name = self.output.functions[copy].name.clone();
                    a.seed(r, space, Origin::CallResult(callee_name, r))?;
                }
            }
        }

        let copy = a.retag(&targets);
        let ret = match copy.signature.ret {
            Some(Type::Ptr(_, space)) => Some(space),
            _ => None,
        };
        Ok((copy, ret))
    }
}

/// The name of a device copy: the function's name, then one letter per pointer parameter.
fn copy_name(name: &str, types: &[Type], spaces: &[AddressSpace]) -> String {
    let letters: String = types
        .iter()
        .zip(spaces)
        .filter(|(t, _)| t.is_ptr())
        .map(|(_, s)| match s {
            AddressSpace::Shared => 's',
            _ => 'd',
        })
        .collect();
    if letters.is_empty() {
        name.to_string()
    } else {
        format!("{name}__{letters}")
    }
}

/// The propagation over one function.
struct Analysis<'f> {
    func: &'f Function,
    /// The name of the copy being built (for messages).
    name: String,
    facts: SecondaryMap<Value, Fact>,
    /// "Same space" constraints, both ways.
    same: SecondaryMap<Value, Vec<Value>>,
    /// One-way flow from an integer operand to the result of integer arithmetic.
    flows: SecondaryMap<Value, Vec<Value>>,
    /// Results of `shared_alloc`.
    shared_allocs: Vec<Value>,
    /// Calls of IR functions, in layout order.
    calls: Vec<Inst>,
    /// The value that all returned pointers are tied to (the first one returned).
    returned: Option<Value>,
}

impl<'f> Analysis<'f> {
    fn new(func: &'f Function, name: String) -> Analysis<'f> {
        Analysis {
            func,
            name,
            facts: SecondaryMap::with_capacity(func.values.len()),
            same: SecondaryMap::with_capacity(func.values.len()),
            flows: SecondaryMap::new(),
            shared_allocs: Vec::new(),
            calls: Vec::new(),
            returned: None,
        }
    }

    /// True for the types that can carry an address: pointers and 64-bit integers.
    fn carries(&self, v: Value) -> bool {
        match self.func.values.get(v).map(|d| d.ty) {
            Some(Type::Ptr(..)) => true,
            Some(Type::Scalar(s)) => matches!(s, Scalar::I64 | Scalar::U64),
            None => false,
        }
    }

    fn tie(&mut self, a: Value, b: Value) {
        if self.carries(a) && self.carries(b) {
            self.same[a].push(b);
            self.same[b].push(a);
        }
    }

    /// Collects the constraints of every laid-out instruction.
    fn build_edges(&mut self) {
        let func = self.func;
        for &block in &func.layout {
            let Some(data) = func.blocks.get(block) else {
                continue;
            };
            for &inst in &data.insts {
                let Some(idata) = func.insts.get(inst) else {
                    continue;
                };
                let result = idata.result;
                match &idata.kind {
                    InstKind::ElemPtr(p, _) | InstKind::Cast(p) => {
                        if let Some(r) = result {
                            self.tie(r, *p);
                        }
                    }
                    InstKind::Select(_, x, y) => {
                        if let Some(r) = result {
                            self.tie(r, *x);
                            self.tie(r, *y);
                        }
                    }
                    InstKind::Cmp(_, x, y) => {
                        if func.values.get(*x).is_some_and(|d| d.ty.is_ptr()) {
                            self.tie(*x, *y);
                        }
                    }
                    InstKind::Binary(
                        BinaryOp::Add
                        | BinaryOp::Sub
                        | BinaryOp::And
                        | BinaryOp::Or
                        | BinaryOp::Xor,
                        x,
                        y,
                    ) => {
                        if let Some(r) = result.filter(|&r| self.carries(r)) {
                            self.flows[*x].push(r);
                            self.flows[*y].push(r);
                        }
                    }
                    InstKind::SharedAlloc { .. } | InstKind::DynamicShared { .. } => {
                        if let Some(r) = result {
                            self.shared_allocs.push(r);
                        }
                    }
                    InstKind::Call(..) => self.calls.push(inst),
                    InstKind::Return(Some(v)) if self.carries(*v) => match self.returned {
                        Some(first) => self.tie(first, *v),
                        None => self.returned = Some(*v),
                    },
                    kind => {
                        for dest in kind.successors() {
                            let Some(target) = func.blocks.get(dest.block) else {
                                continue;
                            };
                            for (&p, &arg) in target.params.iter().zip(&dest.args) {
                                self.tie(p, arg);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Records that `v` is in `space` because of `origin`, and propagates.
    fn seed(
        &mut self,
        v: Value,
        space: AddressSpace,
        origin: Origin,
    ) -> Result<(), AddressSpaceError> {
        let mut work = vec![(v, space, origin)];
        while let Some((v, space, origin)) = work.pop() {
            let is_ptr = self.func.values[v].ty.is_ptr();
            match &self.facts[v] {
                Fact::Mixed => continue,
                Fact::Space(s, _) if *s == space => continue,
                Fact::Space(s, first) => {
                    if is_ptr {
                        return Err(self.conflict(v, *s, first.clone(), space, origin));
                    }
                    self.facts[v] = Fact::Mixed;
                    // Mixed integers pass nothing on: a pointer made from one has no space,
                    // which is found when a space reaches that pointer from elsewhere, or it
                    // defaults to device memory.
                    continue;
                }
                Fact::Unknown => {}
            }
            self.facts[v] = Fact::Space(space, origin.clone());
            for &w in &self.same[v] {
                work.push((w, space, origin.clone()));
            }
            for &w in &self.flows[v] {
                work.push((w, space, origin.clone()));
            }
        }
        Ok(())
    }

    fn conflict(
        &self,
        v: Value,
        first: AddressSpace,
        first_origin: Origin,
        second: AddressSpace,
        second_origin: Origin,
    ) -> AddressSpaceError {
        let mut path = self.path(first_origin.value(), v);
        let mut back = self.path(second_origin.value(), v);
        back.pop();
        path.extend(back.into_iter().rev());
        let value = path.iter().copied().find(|&p| self.is_join(p)).unwrap_or(v);
        AddressSpaceError::Conflict {
            function: self.name.clone(),
            value,
            path,
            what: self.describe(value),
            first: SpaceName(first),
            first_origin: first_origin.to_string(),
            second: SpaceName(second),
            second_origin: second_origin.to_string(),
        }
    }

    /// The shortest chain of constraints along which a space flows from `from` to `to`
    /// (both included; just `[to]` if there is none).
    fn path(&self, from: Value, to: Value) -> Vec<Value> {
        let mut prev: HashMap<Value, Value> = HashMap::new();
        let mut queue = std::collections::VecDeque::from([from]);
        prev.insert(from, from);
        while let Some(v) = queue.pop_front() {
            if v == to {
                let mut path = vec![to];
                let mut cur = to;
                while cur != from {
                    cur = prev[&cur];
                    path.push(cur);
                }
                path.reverse();
                return path;
            }
            for &w in self.same[v].iter().chain(&self.flows[v]) {
                if let std::collections::hash_map::Entry::Vacant(e) = prev.entry(w) {
                    e.insert(v);
                    queue.push_back(w);
                }
            }
        }
        vec![to]
    }

    /// True for the values where different pointers meet: block parameters (other than the
    /// function's) and `select` results.
    fn is_join(&self, v: Value) -> bool {
        match self.func.values[v].def {
            ValueDef::Param(block, _) => Some(block) != self.func.entry(),
            ValueDef::Result(inst) => matches!(
                self.func.insts.get(inst).map(|d| &d.kind),
                Some(InstKind::Select(..))
            ),
        }
    }

    /// How a value is defined, for messages.
    fn describe(&self, v: Value) -> String {
        match self.func.values[v].def {
            ValueDef::Param(block, n) => {
                if Some(block) == self.func.entry() {
                    format!("parameter {n}")
                } else {
                    format!("parameter {n} of {block}")
                }
            }
            ValueDef::Result(inst) => {
                let op = match self.func.insts.get(inst).map(|d| &d.kind) {
                    Some(InstKind::ElemPtr(..)) => "elem_ptr",
                    Some(InstKind::Select(..)) => "select",
                    Some(InstKind::Cast(..)) => "cast",
                    Some(InstKind::Call(..)) => "call",
                    Some(InstKind::Const(..)) => "const",
                    Some(InstKind::SharedAlloc { .. }) => "shared_alloc",
                    Some(InstKind::DynamicShared { .. }) => "dynamic_shared",
                    Some(InstKind::Binary(op, ..)) => op.name(),
                    _ => "instruction",
                };
                format!("result of {op} {inst}")
            }
        }
    }

    fn call_args(&self, inst: Inst) -> Vec<Value> {
        match &self.func.insts[inst].kind {
            InstKind::Call(_, args) => args.clone(),
            _ => Vec::new(),
        }
    }

    /// True when every pointer argument of the call has a space.
    fn call_ready(&self, inst: Inst) -> bool {
        self.call_args(inst).iter().all(|&arg| {
            !self.func.values[arg].ty.is_ptr() || matches!(self.facts[arg], Fact::Space(..))
        })
    }

    /// The copy of the function with every pointer retagged (device where nothing reached)
    /// and calls redirected to the device copies in `targets`.
    fn retag(&self, targets: &HashMap<Inst, FuncId>) -> Function {
        let mut f = self.func.clone();
        f.name = self.name.clone();
        let space = |facts: &SecondaryMap<Value, Fact>, v: Value| match facts[v] {
            Fact::Space(s, _) => s,
            _ => AddressSpace::Device,
        };
        for (v, data) in f.values.iter_mut() {
            if let Type::Ptr(elem, _) = data.ty {
                data.ty = Type::Ptr(elem, space(&self.facts, v));
            }
        }
        for (inst, data) in f.insts.iter_mut() {
            match &mut data.kind {
                InstKind::Const(c) => {
                    if let (Type::Ptr(..), Some(r)) = (c.ty, data.result) {
                        c.ty = f.values[r].ty;
                    }
                }
                InstKind::Call(callee, _) => {
                    if let Some(&copy) = targets.get(&inst) {
                        *callee = copy;
                    }
                }
                _ => {}
            }
        }
        if let Some(entry) = f.entry() {
            f.signature.params = f.blocks[entry]
                .params
                .iter()
                .map(|&p| f.values[p].ty)
                .collect();
        }
        if let Some(Type::Ptr(elem, _)) = f.signature.ret {
            let s = self
                .returned
                .map_or(AddressSpace::Device, |r| space(&self.facts, r));
            f.signature.ret = Some(Type::Ptr(elem, s));
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cranelift_entity::EntityRef;
    use nacre_ir::verify;
    use nacre_ir::FunctionBuilder;
    use nacre_ir::Signature;
    use nacre_ir::{CmpOp, Const, Dim, GpuIndex};

    fn module_with(functions: Vec<Function>) -> Module {
        let mut m = Module::new();
        for f in functions {
            m.add_function(f);
        }
        m.entry = m.functions.keys().next();
        m
    }

    fn kernel(name: &str, params: &[Type]) -> Function {
        Function::new(
            name,
            FuncKind::Kernel,
            Signature {
                params: params.to_vec(),
                ret: None,
            },
        )
    }

    fn host(name: &str, params: &[Type], ret: Option<Type>) -> Function {
        Function::new(
            name,
            FuncKind::Host,
            Signature {
                params: params.to_vec(),
                ret,
            },
        )
    }

    fn u32k(b: &mut FunctionBuilder<'_>, v: u32) -> Value {
        b.constant(Const {
            ty: Type::U32,
            bits: v as u128,
        })
    }

    fn f32p() -> Type {
        Type::ptr(Scalar::F32)
    }

    /// `tile = shared[64]; t = thread_idx.x; tile[t] = buf[t]; barrier; buf[t] = tile[63 - t]`
    fn tile_kernel() -> Function {
        let mut f = kernel("tile", &[f32p()]);
        let mut b = FunctionBuilder::new(&mut f);
        let buf = b.create_entry_block()[0];
        let tile = b.shared_alloc(Scalar::F32, 64);
        let t = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
        let src = b.elem_ptr(buf, t);
        let x = b.load(src);
        let dst = b.elem_ptr(tile, t);
        b.store(dst, x);
        b.barrier();
        let k63 = u32k(&mut b, 63);
        let r = b.binary(BinaryOp::Sub, k63, t);
        let from = b.elem_ptr(tile, r);
        let y = b.load(from);
        let to = b.elem_ptr(buf, t);
        b.store(to, y);
        b.ret(None);
        f
    }

    fn ptr_types(f: &Function) -> Vec<String> {
        f.layout
            .iter()
            .flat_map(|&b| {
                f.blocks[b]
                    .params
                    .iter()
                    .copied()
                    .chain(f.blocks[b].insts.iter().filter_map(|&i| f.insts[i].result))
            })
            .filter(|&v| f.values[v].ty.is_ptr())
            .map(|v| format!("{v}: {}", f.values[v].ty))
            .collect()
    }

    #[test]
    fn buffers_are_device_and_shared_arrays_shared() {
        let m = module_with(vec![tile_kernel()]);
        let out = infer_address_spaces(&m).unwrap();
        let f = &out.module.functions[out.kernels[0].1];
        assert_eq!(
            ptr_types(f),
            [
                "v0: ptr<f32, device>",
                "v1: ptr<f32, shared>",
                "v3: ptr<f32, device>",
                "v5: ptr<f32, shared>",
                "v8: ptr<f32, shared>",
                "v10: ptr<f32, device>",
            ]
        );
        assert_eq!(
            f.signature.params,
            [Type::Ptr(Scalar::F32, AddressSpace::Device)]
        );
        verify(out.module).expect("the retagged module verifies");
    }

    #[test]
    fn spaces_flow_through_block_parameters_selects_and_casts() {
        // p = cond ? tile : tile + 1 ; q = (p as u64 + 4) as ptr ; loop carries q
        let mut f = kernel("k", &[f32p(), Type::BOOL]);
        let mut b = FunctionBuilder::new(&mut f);
        let params = b.create_entry_block();
        let (buf, c) = (params[0], params[1]);
        let tile = b.shared_alloc(Scalar::F32, 16);
        let one = u32k(&mut b, 1);
        let next = b.elem_ptr(tile, one);
        let p = b.select(c, tile, next);
        let addr = b.cast(p, Type::U64);
        let four = b.constant(Const {
            ty: Type::U64,
            bits: 4,
        });
        let moved = b.binary(BinaryOp::Add, addr, four);
        let q = b.cast(moved, f32p());
        let (head, exit) = (b.create_block(), b.create_block());
        let carried = b.append_block_param(head, f32p());
        b.jump(head, vec![q]);
        b.switch_to_block(head);
        let x = b.load(carried);
        let dst = b.elem_ptr(buf, one);
        b.store(dst, x);
        let again = b.elem_ptr(carried, one);
        b.branch(c, head, vec![again], exit, vec![]);
        b.switch_to_block(exit);
        b.ret(None);
        let m = module_with(vec![f]);
        let out = infer_address_spaces(&m).unwrap();
        let k = &out.module.functions[out.kernels[0].1];
        let shared = Type::Ptr(Scalar::F32, AddressSpace::Shared);
        for v in [tile, next, p, q, carried, again] {
            assert_eq!(k.values[v].ty, shared, "{v}\n{k}");
        }
        assert_eq!(
            k.values[buf].ty,
            Type::Ptr(Scalar::F32, AddressSpace::Device)
        );
        verify(out.module).expect("verifies");
    }

    #[test]
    fn a_value_with_two_spaces_is_an_error_naming_both_origins() {
        let mut f = kernel("mix", &[f32p(), Type::BOOL]);
        let mut b = FunctionBuilder::new(&mut f);
        let params = b.create_entry_block();
        let tile = b.shared_alloc(Scalar::F32, 16);
        let join = b.create_block();
        let p = b.append_block_param(join, f32p());
        let other = b.create_block();
        b.branch(params[1], join, vec![params[0]], other, vec![]);
        b.switch_to_block(other);
        b.jump(join, vec![tile]);
        b.switch_to_block(join);
        let x = b.load(p);
        b.store(params[0], x);
        b.ret(None);
        let err = infer_address_spaces(&module_with(vec![f])).unwrap_err();
        let AddressSpaceError::Conflict {
            function,
            value,
            path,
            ..
        } = &err
        else {
            panic!("{err}");
        };
        assert_eq!((function.as_str(), *value), ("mix", p));
        assert_eq!(path, &[params[0], p, tile]);
        let msg = err.to_string();
        for part in [
            "parameter 0 of block1",
            "device memory",
            "shared (threadgroup) memory",
            "the shared array v2",
            "parameter 0, v0",
            "along v0 - v3 - v2",
        ] {
            assert!(msg.contains(part), "{part} missing in: {msg}");
        }
    }

    #[test]
    fn comparing_a_shared_and_a_device_pointer_is_an_error() {
        let mut f = kernel("cmp", &[f32p()]);
        let mut b = FunctionBuilder::new(&mut f);
        let buf = b.create_entry_block()[0];
        let tile = b.shared_alloc(Scalar::F32, 4);
        let c = b.cmp(CmpOp::Eq, buf, tile);
        let _ = c;
        b.ret(None);
        let err = infer_address_spaces(&module_with(vec![f])).unwrap_err();
        assert!(matches!(err, AddressSpaceError::Conflict { .. }), "{err}");
    }

    #[test]
    fn integers_may_mix_but_pointers_made_from_them_default_to_device() {
        // d = (buf as u64) - (tile as u64) is a number; nothing else is affected.
        let mut f = kernel("diff", &[f32p(), Type::ptr(Scalar::U64)]);
        let mut b = FunctionBuilder::new(&mut f);
        let p = b.create_entry_block();
        let tile = b.shared_alloc(Scalar::F32, 4);
        let x = b.cast(p[0], Type::U64);
        let y = b.cast(tile, Type::U64);
        let d = b.binary(BinaryOp::Sub, x, y);
        b.store(p[1], d);
        b.ret(None);
        let out = infer_address_spaces(&module_with(vec![f])).unwrap();
        verify(out.module).expect("verifies");
    }

    /// `@scale(p: ptr<f32>, i: u32) -> ptr<f32> { p[i] *= 2; return p + i }`
    fn scale() -> Function {
        let mut f = host("scale", &[f32p(), Type::U32], Some(f32p()));
        let mut b = FunctionBuilder::new(&mut f);
        let p = b.create_entry_block();
        let q = b.elem_ptr(p[0], p[1]);
        let x = b.load(q);
        let y = b.binary(BinaryOp::Add, x, x);
        b.store(q, y);
        b.ret(Some(q));
        f
    }

    #[test]
    fn callees_are_specialised_per_argument_space() {
        let mut k = kernel("k", &[f32p()]);
        let mut b = FunctionBuilder::new(&mut k);
        let buf = b.create_entry_block()[0];
        let tile = b.shared_alloc(Scalar::F32, 8);
        let i = u32k(&mut b, 1);
        let callee = FuncId::new(1);
        let r1 = b.call(callee, vec![buf, i], Some(f32p())).unwrap();
        let r2 = b.call(callee, vec![tile, i], Some(f32p())).unwrap();
        let r3 = b.call(callee, vec![buf, i], Some(f32p())).unwrap();
        let x = b.load(r2);
        b.store(r1, x);
        b.store(r3, x);
        b.ret(None);
        let m = module_with(vec![k, scale()]);
        let out = infer_address_spaces(&m).unwrap();
        let names: Vec<_> = out
            .device_functions
            .iter()
            .map(|d| out.module.functions[d.id].name.as_str())
            .collect();
        assert_eq!(names, ["scale__d", "scale__s"]);
        let k = &out.module.functions[out.kernels[0].1];
        assert_eq!(
            k.values[r1].ty,
            Type::Ptr(Scalar::F32, AddressSpace::Device)
        );
        assert_eq!(
            k.values[r2].ty,
            Type::Ptr(Scalar::F32, AddressSpace::Shared)
        );
        let s = &out.module.functions[out.device_functions[1].id];
        assert_eq!(
            s.signature,
            Signature {
                params: vec![Type::Ptr(Scalar::F32, AddressSpace::Shared), Type::U32],
                ret: Some(Type::Ptr(Scalar::F32, AddressSpace::Shared)),
            }
        );
        assert_eq!(out.module.functions.len(), 3, "host functions are left out");
        verify(out.module).expect("verifies");
    }

    #[test]
    fn recursion_from_a_kernel_is_an_error() {
        let mut r = host("down", &[Type::U32], Some(Type::U32));
        let mut b = FunctionBuilder::new(&mut r);
        let n = b.create_entry_block()[0];
        let v = b.call(FuncId::new(1), vec![n], Some(Type::U32)).unwrap();
        b.ret(Some(v));
        let mut k = kernel("k", &[Type::ptr(Scalar::U32)]);
        let mut b = FunctionBuilder::new(&mut k);
        let out_ptr = b.create_entry_block()[0];
        let one = u32k(&mut b, 1);
        let v = b.call(FuncId::new(1), vec![one], Some(Type::U32)).unwrap();
        b.store(out_ptr, v);
        b.ret(None);
        let err = infer_address_spaces(&module_with(vec![k, r])).unwrap_err();
        assert_eq!(
            err,
            AddressSpaceError::Recursion {
                chain: vec!["k".into(), "down".into(), "down".into()]
            }
        );
        assert!(err.to_string().contains("@k -> @down -> @down"), "{err}");
    }

    #[test]
    fn calling_a_kernel_or_a_missing_function_is_an_error() {
        let mut k = kernel("k", &[]);
        let mut b = FunctionBuilder::new(&mut k);
        b.create_entry_block();
        b.call(FuncId::new(0), vec![], None);
        b.ret(None);
        let err = infer_address_spaces(&module_with(vec![k])).unwrap_err();
        assert!(
            matches!(err, AddressSpaceError::CallsKernel { .. }),
            "{err}"
        );

        let mut k = kernel("k", &[]);
        let mut b = FunctionBuilder::new(&mut k);
        b.create_entry_block();
        b.call(FuncId::new(7), vec![], None);
        b.ret(None);
        let err = infer_address_spaces(&module_with(vec![k])).unwrap_err();
        assert!(
            matches!(err, AddressSpaceError::MissingFunction { .. }),
            "{err}"
        );
    }

    #[test]
    fn the_input_is_unchanged_and_host_only_modules_give_an_empty_result() {
        let m = module_with(vec![tile_kernel()]);
        let before = m.to_string();
        infer_address_spaces(&m).unwrap();
        assert_eq!(m.to_string(), before);
        let out = infer_address_spaces(&module_with(vec![scale()])).unwrap();
        assert!(out.kernels.is_empty() && out.module.functions.is_empty());
        assert_eq!(out.module.entry, None);
    }
}
