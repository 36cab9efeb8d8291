//! Bounds checking: every pointer carries the memory it may access, and every load and store
//! is checked against it.
//!
//! The transform gives each pointer value two *companions*: the `base` of the memory it was
//! derived from (a pointer of the same type) and that memory's size in `bytes` (`u64`). They
//! travel beside the pointer as SSA values:
//!
//! - each pointer parameter of a function gets two trailing parameters, in parameter order:
//!   for parameters `(p, n, q)` the signature becomes `(p, n, q, p.base, p.bytes, q.base,
//!   q.bytes)`; calls and launches pass the companions of their pointer arguments the same way;
//! - each pointer parameter of a block gets two trailing block parameters, and every edge
//!   passes the companions of its argument;
//! - a derived pointer (`elem_ptr`, a pointer cast) has its source's companions, a `select` of
//!   pointers selects the companions, a shared array is its own base with its size;
//! - a pointer returned by a call is matched against the pointer arguments of that call (of the
//!   same element type) and gets the companions of the one it lies in; a pointer from nowhere
//!   (an integer cast, a null constant, an extern's result) gets zero bytes, so every access
//!   through it traps.
//!
//! Before each load and store the transform inserts a [`InstKind::BoundsCheck`] that traps with
//! [`Trap::OutOfBounds`] naming the function and, when the pointer has one root, the parameter.
//! Whoever calls the transformed entry passes, for each pointer argument, the pointer itself as
//! its base and the size of the memory it may access. The checks keep memory safety whatever
//! the indices; [`elide`] hoists those of counted loops out of the loop, and [`proven`] removes
//! those that cannot fail (shared-array indices proven in range, repeated checks).

use crate::analysis::pointer_roots::PointerRoots;
use crate::analysis::postorder;
use crate::analysis::GpuBounds;
use crate::builder::FunctionBuilder;
use crate::entities::{Block, FuncId, Inst, Value};
use crate::function::{FuncKind, Function};
use crate::instructions::{BlockCall, InstKind};
use crate::module::Module;
use crate::trap::Trap;
use crate::types::Type;
use crate::verifier::VerifiedModule;
use cranelift_entity::SecondaryMap;
use std::collections::{HashMap, HashSet};

/// What the transform checks.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct BoundsOptions {
    /// Insert checks in kernels and device functions too (companions are passed either way,
    /// so that host code and kernels agree on signatures).
    pub check_kernels: bool,
}

impl Default for BoundsOptions {
    fn default() -> Self {
        BoundsOptions {
            check_kernels: true,
        }
    }
}

/// The memory a pointer may access: its base and size in bytes.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
struct Companions {
    base: Value,
    bytes: Value,
}

/// The signature positions of the companions of each pointer parameter: for parameter `i`
/// (a pointer), `(base, bytes)` positions; for scalars, `None`. The layout
/// [`insert_bounds_checks`] gives every function.
pub fn companion_positions(params: &[Type]) -> Vec<Option<(usize, usize)>> {
    let mut next = params.len();
    params
        .iter()
        .map(|ty| {
            ty.is_ptr().then(|| {
                next += 2;
                (next - 2, next - 1)
            })
        })
        .collect()
}

/// Adds companions to every pointer and a bounds check before every load and store of every
/// function of `module` (kernels and device functions only with
/// [`BoundsOptions::check_kernels`]).
pub fn insert_bounds_checks(module: VerifiedModule, options: BoundsOptions) -> VerifiedModule {
    let mut module = module.into_inner();
    let ids: Vec<FuncId> = module.functions.keys().collect();
    let originals: HashMap<FuncId, Vec<Type>> = ids
        .iter()
        .map(|&id| (id, module.functions[id].signature.params.clone()))
        .collect();
    let host = host_side(&module);
    for &id in &ids {
        let check = options.check_kernels || host.contains(&id);
        let func = &mut module.functions[id];
        Rewriter::new(func, id, check, &originals).run();
        if check {
            elide::hoist_loop_checks(func);
            proven::remove_proven_checks(func, GpuBounds::LIMITS);
        }
    }
    for &id in &ids {
        let sig = &mut module.functions[id].signature;
        let extra: Vec<Type> = sig
            .params
            .iter()
            .filter(|t| t.is_ptr())
            .flat_map(|&t| [t, Type::U64])
            .collect();
        sig.params.extend(extra);
    }
    module.bounds_checked = true;
    VerifiedModule::trusted(module)
}

/// The functions host code runs: the entry and what it calls (not what it launches).
fn host_side(module: &Module) -> HashSet<FuncId> {
    let mut seen = HashSet::new();
    let mut work: Vec<FuncId> = module.entry.into_iter().collect();
    while let Some(id) = work.pop() {
        if module.functions[id].kind == FuncKind::Kernel || !seen.insert(id) {
            continue;
        }
        for data in module.functions[id].live_insts() {
            if let InstKind::Call(callee, _) = data.kind {
                work.push(callee);
            }
        }
    }
    seen
}

/// The rewrite of one function.
struct Rewriter<'a> {
    func: &'a mut Function,
    id: FuncId,
    check: bool,
    roots: PointerRoots,
    comps: SecondaryMap<Value, Option<Companions>>,
    /// The number of parameters each block had before companions were added.
    arity: SecondaryMap<Block, usize>,
    /// The original parameter types of every function (calls pass companions for the pointer
    /// ones).
    originals: &'a HashMap<FuncId, Vec<Type>>,
}

impl<'a> Rewriter<'a> {
    fn new(
        func: &'a mut Function,
        id: FuncId,
        check: bool,
        originals: &'a HashMap<FuncId, Vec<Type>>,
    ) -> Rewriter<'a> {
        let roots = PointerRoots::compute(func);
        Rewriter {
            func,
            id,
            check,
            roots,
            comps: SecondaryMap::new(),
            arity: SecondaryMap::new(),
            originals,
        }
    }

    fn run(mut self) {
        let layout = self.func.layout.clone();
        for &block in &layout {
            self.add_block_companions(block);
        }
        // Dominators before the blocks they dominate (a DFS preorder from the entry), then
        // anything unreachable.
        let mut order: Vec<Block> = postorder(self.func);
        order.reverse();
        for &b in &layout {
            if !order.contains(&b) {
                order.push(b);
            }
        }
        for block in order {
            self.rewrite_block(block);
        }
    }

    /// Two trailing parameters per pointer parameter of `block`.
    fn add_block_companions(&mut self, block: Block) {
        let params = self.func.blocks[block].params.clone();
        self.arity[block] = params.len();
        for p in params {
            let ty = self.func.values[p].ty;
            if ty.is_ptr() {
                let base = self.func.add_block_param(block, ty);
                let bytes = self.func.add_block_param(block, Type::U64);
                self.comps[p] = Some(Companions { base, bytes });
            }
        }
    }

    fn rewrite_block(&mut self, block: Block) {
        let insts = std::mem::take(&mut self.func.blocks[block].insts);
        let mut out = Vec::with_capacity(insts.len());
        for inst in insts {
            let (before, after) = self.rewrite_inst(inst);
            out.extend(before);
            out.push(inst);
            out.extend(after);
        }
        self.func.blocks[block].insts = out;
    }

    /// Instructions to place before and after `inst`, whose operands it may extend.
    fn rewrite_inst(&mut self, inst: Inst) -> (Vec<Inst>, Vec<Inst>) {
        let kind = self.func.insts[inst].kind.clone();
        let result = self.func.insts[inst].result;
        let mut before = Vec::new();
        let mut after = Vec::new();
        match &kind {
            InstKind::Load(p)
            | InstKind::Store(p, _)
            | InstKind::AtomicRmw { ptr: p, .. }
            | InstKind::AtomicCas { ptr: p, .. }
                if self.check =>
            {
                before = self.checked(*p);
            }
            InstKind::Call(callee, args) => {
                let (extra, made) = self.arg_companions(*callee, args);
                before = made;
                if let InstKind::Call(_, a) = &mut self.func.insts[inst].kind {
                    a.extend(extra);
                }
            }
            InstKind::Launch(l) => {
                let (extra, made) = self.arg_companions(l.kernel, &l.args);
                before = made;
                if let InstKind::Launch(l) = &mut self.func.insts[inst].kind {
                    l.args.extend(extra);
                }
            }
            InstKind::Jump(_) | InstKind::Branch { .. } => before = self.extend_edges(inst),
            _ => {}
        }
        if let Some(r) = result.filter(|&r| self.func.values[r].ty.is_ptr()) {
            after = self.result_companions(&kind, r);
        }
        (before, after)
    }

    /// The companions of `v`, made (as "no memory") where it has none.
    fn companions(&mut self, v: Value, made: &mut Vec<Inst>) -> Companions {
        if let Some(c) = self.comps[v] {
            return c;
        }
        let mut b = FunctionBuilder::detached(self.func);
        let bytes = b.const_u64(0);
        made.extend(b.into_insts());
        let c = Companions { base: v, bytes };
        self.comps[v] = Some(c);
        c
    }

    /// A bounds check of an access through `p`.
    fn checked(&mut self, p: Value) -> Vec<Inst> {
        let mut made = Vec::new();
        let c = self.companions(p, &mut made);
        let trap = Trap::out_of_bounds(
            Some(cranelift_entity::EntityRef::index(self.id)),
            self.roots.unique(p),
        );
        let mut b = FunctionBuilder::detached(self.func);
        b.bounds_check(p, c.base, c.bytes, trap);
        made.extend(b.into_insts());
        made
    }

    /// The companions to append to the arguments of a call or launch of `callee`.
    fn arg_companions(&mut self, callee: FuncId, args: &[Value]) -> (Vec<Value>, Vec<Inst>) {
        let mut made = Vec::new();
        let mut extra = Vec::new();
        let params = self.originals.get(&callee).cloned().unwrap_or_default();
        for (&a, ty) in args.iter().zip(&params) {
            if ty.is_ptr() {
                let c = self.companions(a, &mut made);
                extra.extend([c.base, c.bytes]);
            }
        }
        (extra, made)
    }

    /// Passes the companions of pointer arguments along every edge of a terminator.
    fn extend_edges(&mut self, inst: Inst) -> Vec<Inst> {
        let mut made = Vec::new();
        let calls: Vec<BlockCall> = self.func.insts[inst].kind.successors().cloned().collect();
        let mut extended = Vec::new();
        for call in calls {
            let mut args = call.args.clone();
            let originals = call.args.len().min(self.arity[call.block]);
            for &a in &call.args[..originals] {
                if self.func.values[a].ty.is_ptr() {
                    let c = self.companions(a, &mut made);
                    args.extend([c.base, c.bytes]);
                }
            }
            extended.push(args);
        }
        for (dest, args) in self.func.insts[inst].kind.successors_mut().zip(extended) {
            dest.args = args;
        }
        made
    }

    /// Companions for the pointer result `r` of an instruction, and the instructions making
    /// them.
    fn result_companions(&mut self, kind: &InstKind, r: Value) -> Vec<Inst> {
        let mut made = Vec::new();
        let c = match kind {
            InstKind::ElemPtr(p, _) => self.companions(*p, &mut made),
            InstKind::Cast(a) if self.func.values[*a].ty.is_ptr() => {
                let c = self.companions(*a, &mut made);
                let ty = self.func.values[r].ty;
                let mut b = FunctionBuilder::detached(self.func);
                let base = b.cast(c.base, ty);
                made.extend(b.into_insts());
                Companions {
                    base,
                    bytes: c.bytes,
                }
            }
            InstKind::Select(cond, x, y) => {
                let (cx, cy) = (
                    self.companions(*x, &mut made),
                    self.companions(*y, &mut made),
                );
                let mut b = FunctionBuilder::detached(self.func);
                let base = b.select(*cond, cx.base, cy.base);
                let bytes = b.select(*cond, cx.bytes, cy.bytes);
                made.extend(b.into_insts());
                Companions { base, bytes }
            }
            InstKind::SharedAlloc { elem, len } | InstKind::LocalArray { elem, len } => {
                let mut b = FunctionBuilder::detached(self.func);
                let bytes = b.const_u64(u64::from(*len) * u64::from(elem.bytes()));
                made.extend(b.into_insts());
                Companions { base: r, bytes }
            }
            InstKind::DynamicShared { .. } => {
                let mut b = FunctionBuilder::detached(self.func);
                let size = b.dynamic_shared_bytes();
                let bytes = b.cast(size, Type::U64);
                made.extend(b.into_insts());
                Companions { base: r, bytes }
            }
            InstKind::Call(_, args) => self.call_result(args, r, &mut made),
            _ => self.companions(r, &mut made),
        };
        self.comps[r] = Some(c);
        made
    }

    /// The companions of a pointer returned by a call: those of the first pointer argument of
    /// the same element type whose memory holds it, else none.
    fn call_result(&mut self, args: &[Value], r: Value, made: &mut Vec<Inst>) -> Companions {
        let ty = self.func.values[r].ty;
        let same: Vec<Value> = args
            .iter()
            .copied()
            .filter(|&a| self.func.values[a].ty.pointee() == ty.pointee())
            .collect();
        let candidates: Vec<Companions> =
            same.into_iter().map(|a| self.companions(a, made)).collect();
        let mut b = FunctionBuilder::detached(self.func);
        let mut c = Companions {
            base: r,
            bytes: b.const_u64(0),
        };
        let addr = b.cast(r, Type::U64);
        for cand in candidates.into_iter().rev() {
            let base = b.cast(cand.base, Type::U64);
            let off = b.binary(crate::BinaryOp::Sub, addr, base);
            let inside = b.cmp(crate::CmpOp::Le, off, cand.bytes);
            let cand_base = if b.value_type(cand.base) == ty {
                cand.base
            } else {
                b.cast(cand.base, ty)
            };
            c = Companions {
                base: b.select(inside, cand_base, c.base),
                bytes: b.select(inside, cand.bytes, c.bytes),
            };
        }
        made.extend(b.into_insts());
        c
    }
}

pub mod elide;
pub mod proven;

#[cfg(test)]
mod tests;
