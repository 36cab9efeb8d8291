//! Lowering of a kernel to a host *step function* that any CPU backend can compile.
//!
//! [`lower_kernel`] turns a kernel (a function of kind [`FuncKind::Kernel`], with GPU
//! operations) into a host function without GPU operations:
//!
//! ```text
//! function @kernel(args: ptr<u64>, ctx: ptr<u64>) -> u32
//! ```
//!
//! One call of the step function runs **one round of one block**: every thread of the block,
//! one after the other, from where it stopped up to its next barrier (or yield, see below) or
//! to its end. The executor calls it again (a new round) as long as it returns nonzero, i.e.
//! as long as some thread waits. The context layout is in [`crate::step::ctx`].
//!
//! # Shape of the result
//!
//! ```text
//! entry(args, ctx):   kernel parameters loaded from args[i]; ctx words (block index and
//!                     dimensions, grid dimensions, shared and state bases) loaded once;
//!                     shared arrays = shared base + a static offset per allocation site
//!     jump thread(0, 0, 0, 0, 0, state_base)
//! thread(t, x, y, z, acc, state):   one iteration per thread; threadIdx = (x, y, z)
//!     [with barriers: `state` = the thread's state (state_base + t * state_words * 8); on
//!      round 0 go to the kernel's start, otherwise dispatch on the thread's saved phase to
//!      the block after that barrier]
//!     ... the kernel's blocks; `return` becomes `jump next(0)` ...
//! next(w):                          acc |= w; t += 1; advance (x, y, z) and state; loop or exit
//! exit:
//!     return acc                    0: every thread finished; else ctx::AT_BARRIER and/or
//!                                   ctx::AT_YIELD: some threads wait
//! ```
//!
//! Kernel parameters are read from their `u64` slot through a pointer retyped to the
//! parameter's type (`elem_ptr`, `cast ptr -> u64`, `cast u64 -> ptr<T>`, `load`): the bits
//! encoding zero-extends, so on a little-endian host the low bytes are the value. Pointer
//! parameters load the `u64` and cast it to the pointer type. Everything uniform across the
//! block is computed once per round in the entry block, outside the thread loop: the context
//! words, and every computation of the kernel that depends only on them, on the parameters
//! and on constants and can neither trap nor access memory (it is moved there).
//!
//! # Barriers
//!
//! A kernel whose barriers all sit in uniform control flow (every thread of a block reaches
//! the same barriers in the same order, as CUDA requires) and that has no yields is lowered
//! by `regions` instead: one plain loop over the block's threads per stretch of code between
//! barriers, the control between them decided once per block, the whole block in one call
//! ([`StepShape::Regions`]). The state machine below is the general case
//! ([`StepShape::StateMachine`]): barriers in divergent control flow, yields of grid-stride
//! loops, and whatever the region lowering declines.
//!
//! A kernel with barriers becomes a resumable state machine. Each block of the kernel is split
//! at each barrier; barrier `k` (numbered from 1 in layout order) ends its block with
//!
//! ```text
//!     br single, resume_k, save_k   a block of one thread has nobody to wait for
//! save_k:
//!     store state[slot(v)], v       for every value v live across barrier k
//!     store state[0], k             the thread's phase
//!     jump next(AT_BARRIER)
//! reload_k:
//!     v' = load state[slot(v)]      for the same values
//!     jump resume_k
//! resume_k:
//!     ... the rest of the block ...
//! ```
//!
//! On rounds after the first, the thread block dispatches on the saved phase: `k` to
//! `reload_k`, 0 (the thread returned; `return` stores phase 0) to `next(0)`. Values live across
//! a barrier are found by liveness over the split blocks (the block before a barrier flowing
//! into the block after it), and their uses are reconnected to the original definition or the
//! reloads by SSA repair (`ssa_repair`), which adds block parameters where both meet; values
//! not live across any barrier keep their SSA form. Every value live across a barrier gets one
//! `u64` word of per-thread state; word 0 is the phase.
//!
//! Within a round the threads of a block run in order `t = 0, 1, ...`, each up to its next
//! barrier, so every thread has reached barrier `k` before any thread runs past it: shared
//! memory written before a barrier is visible after it, as on a GPU.
//!
//! **Divergent barriers.** A barrier that not every thread of the block reaches (inside a
//! branch that depends on the thread, or after an early `return` of some threads) is undefined
//! behaviour on GPUs. On the CPU it never deadlocks: a thread that has returned is skipped,
//! and a round ends when every other thread has reached *some* barrier, whichever it is; the
//! next round resumes each one after the barrier it reached.
//!
//! **Grid-stride loops.** In [`CpuMode::Grid`], the back edge of a loop whose counter advances
//! by a multiple of `gridDim` or `blockDim` gets a *yield* (see `stride_loops`), so that round
//! `k` runs iteration `k` of every thread and consecutive threads access consecutive elements,
//! as warps do on a GPU; run thread after thread, the accesses of one thread are a grid apart
//! and thrash the caches. A yield is lowered like a barrier, saving the thread's live values,
//! but ends with `jump next(AT_YIELD)` and waits for nobody: threads at a yield resume in the
//! next round, while threads at a barrier resume only in a round whose context has
//! [`ctx::BARRIERS_OPEN`] set, which the executor sets once a round left no thread at a
//! yield. Between barriers any interleaving of the threads is a valid execution, so yields
//! change the order of work, never its result. (Kernels of the collapsible grid-stride shape
//! usually run through a separate collapsed step function instead, see `collapse`; this
//! lowering is their fallback.)
//!
//! Kernels with neither barriers nor yields are translated directly
//! ([`StepShape::ThreadLoop`]): their blocks are embedded unchanged in the thread loop, with
//! no per-thread state, and the step function always returns 0.

use crate::error::KernelError;
use crate::step::ctx::{self, addr};
use crate::step::regions::{lower_regions, Input};
use crate::step::stride_loops::insert_yields;
use crate::step::CpuMode;
use nacre_ir::analysis::live_in;
use nacre_ir::transform::{repair, Variable};
use nacre_ir::verifier::check_function;
use nacre_ir::FunctionBuilder;
use nacre_ir::{
    BinaryOp, Block, BlockCall, BlockData, CmpOp, Dim, FuncId, FuncKind, Function, GpuIndex, Inst,
    InstKind, Module, Scalar, Signature, Type, Value,
};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The most shared memory, in bytes, that one block of a kernel may use on the CPU (256 MiB).
pub const MAX_SHARED_BYTES: u64 = 1 << 28;

/// What the executor needs to know about a step function.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct StepInfo {
    /// The kernel's parameter types (one `args` slot each).
    pub params: Vec<Type>,
    /// Bytes of shared memory per block (all shared arrays, 8-aligned each).
    pub shared_bytes: usize,
    /// Words of state per thread: 0 without barriers and yields, else 1 (the phase) + one per
    /// value live across a barrier or yield.
    pub state_words: usize,
    /// Number of barriers in the kernel.
    pub barriers: u32,
    /// Number of yields added to interleave grid-stride loops (see `stride_loops`); they are
    /// lowered like barriers.
    pub yields: u32,
    /// How the step function runs a block.
    pub shape: StepShape,
}

/// How a step function runs a block.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum StepShape {
    /// No barriers and no yields: one loop over the block's threads, one call per block.
    ThreadLoop,
    /// Barriers in uniform control flow: one loop over the threads per region between
    /// barriers (see `regions`), one call per block. `narrowed` of the `loops` thread loops
    /// run over a narrowed range of `threadIdx.x`.
    Regions {
        /// Thread loops.
        loops: usize,
        /// Thread loops with a narrowed range.
        narrowed: usize,
    },
    /// The resumable state machine: one call per round (barriers in divergent control flow,
    /// or yields of grid-stride loops).
    StateMachine,
}

/// A kernel lowered to a step function.
#[derive(Clone, Debug)]
pub struct LoweredKernel {
    /// The step function (a host function named like the kernel).
    pub func: Function,
    /// Its layout information.
    pub info: StepInfo,
}

/// The signature of every step function: `(args: ptr<u64>, ctx: ptr<u64>) -> u32`.
pub fn step_signature() -> Signature {
    Signature {
        params: vec![Type::ptr(Scalar::U64), Type::ptr(Scalar::U64)],
        ret: Some(Type::U32),
    }
}

/// Lowers kernel `id` of `module` to a step function (see the module docs).
///
/// The kernel is verified first. It may call host functions of the module (the caller copies
/// them next to the step function); calling another kernel is an error.
///
/// `mode` is the mode the step function will run in: in [`CpuMode::Grid`] grid-stride loops
/// yield at their back edge (see the module docs); a [`CpuMode::Serial`] launch has one
/// thread, which gains nothing from interleaving.
pub fn lower_kernel(
    module: &Module,
    id: FuncId,
    mode: CpuMode,
) -> Result<LoweredKernel, KernelError> {
    let Some(kernel) = module.functions.get(id) else {
        return Err(KernelError::Unsupported {
            kernel: id.to_string(),
            what: "the module has no such function".to_string(),
        });
    };
    let unsupported = |what: String| KernelError::Unsupported {
        kernel: kernel.name.clone(),
        what,
    };
    if kernel.kind != FuncKind::Kernel {
        return Err(unsupported(
            "it is a host function; only kernels are lowered".to_string(),
        ));
    }
    check_function(module, kernel).map_err(|source| KernelError::Verify {
        kernel: kernel.name.clone(),
        source,
    })?;
    for &b in &kernel.layout {
        for &inst in &kernel.blocks[b].insts {
            if let InstKind::Call(callee, _) = &kernel.insts[inst].kind {
                let target = &module.functions[*callee];
                if target.kind == FuncKind::Kernel {
                    return Err(unsupported(format!(
                        "it calls kernel @{}; kernels can call host functions only \
                         (launch kernels from host code)",
                        target.name
                    )));
                }
            }
        }
    }
    Lowering::new(kernel).run(mode)
}

/// A GPU operation found in the kernel, replaced by a value of the step function.
enum Intrinsic {
    Index(GpuIndex, Dim),
    Shared { elem: Scalar, len: u32, ty: Type },
}

/// The lowering of one kernel.
struct Lowering {
    /// The step function being built: a copy of the kernel, then transformed.
    f: Function,
    /// The kernel's parameter types.
    params: Vec<Type>,
    /// The kernel's blocks (later: split at barriers), in layout order.
    body: Vec<Block>,
    /// The new entry block and its instructions so far (its terminator comes last).
    entry: Block,
    entry_insts: Vec<Inst>,
    /// The entry parameters.
    args: Value,
    ctx: Value,
    /// Context words already loaded in the entry block (as `u64`, and as `u32`).
    ctx_u64: HashMap<usize, Value>,
    ctx_u32: HashMap<usize, Value>,
    /// The thread-loop block and its parameters: linear thread index and `threadIdx`.
    thread: Block,
    t: Value,
    xyz: [Value; 3],
}

impl Lowering {
    fn new(kernel: &Function) -> Lowering {
        let mut f = kernel.clone();
        f.kind = FuncKind::Host;
        f.signature = step_signature();
        let body = f.layout.clone();
        let entry = f.blocks.push(BlockData::default());
        let args = f.add_block_param(entry, Type::ptr(Scalar::U64));
        let ctx = f.add_block_param(entry, Type::ptr(Scalar::U64));
        let thread = f.blocks.push(BlockData::default());
        let t = f.add_block_param(thread, Type::U32);
        let xyz = [
            f.add_block_param(thread, Type::U32),
            f.add_block_param(thread, Type::U32),
            f.add_block_param(thread, Type::U32),
        ];
        Lowering {
            f,
            params: kernel.signature.params.clone(),
            body,
            entry,
            entry_insts: Vec::new(),
            args,
            ctx,
            ctx_u64: HashMap::new(),
            ctx_u32: HashMap::new(),
            thread,
            t,
            xyz,
        }
    }

    /// Appends instructions to the entry block.
    fn at_entry<R>(&mut self, build: impl FnOnce(&mut FunctionBuilder<'_>) -> R) -> R {
        let mut em = FunctionBuilder::detached(&mut self.f);
        let r = build(&mut em);
        self.entry_insts.extend(em.into_insts());
        r
    }

    /// Appends instructions to `block`.
    fn append<R>(&mut self, block: Block, build: impl FnOnce(&mut FunctionBuilder<'_>) -> R) {
        let mut em = FunctionBuilder::detached(&mut self.f);
        build(&mut em);
        let insts = em.into_insts();
        self.f.blocks[block].insts.extend(insts);
    }

    /// Context word `k` as `u64`, loaded once in the entry block.
    fn ctx_word(&mut self, k: usize) -> Value {
        if let Some(&v) = self.ctx_u64.get(&k) {
            return v;
        }
        let ctx = self.ctx;
        let v = self.at_entry(|em| {
            let i = em.const_u32(k as u32);
            let p = em.elem_ptr(ctx, i);
            em.load(p)
        });
        self.ctx_u64.insert(k, v);
        v
    }

    /// Context word `k` as `u32`.
    fn ctx_word_u32(&mut self, k: usize) -> Value {
        if let Some(&v) = self.ctx_u32.get(&k) {
            return v;
        }
        let w = self.ctx_word(k);
        let v = self.at_entry(|em| em.cast(w, Type::U32));
        self.ctx_u32.insert(k, v);
        v
    }

    fn unsupported(&self, what: String) -> KernelError {
        KernelError::Unsupported {
            kernel: self.f.name.clone(),
            what,
        }
    }

    fn run(mut self, mode: CpuMode) -> Result<LoweredKernel, KernelError> {
        // Kernel parameters, from their argument slots.
        let args = self.args;
        let params = self.params.clone();
        let loaded: Vec<Value> = params
            .iter()
            .enumerate()
            .map(|(i, &ty)| self.at_entry(|em| load_param(em, args, i as u32, ty)))
            .collect();

        // Grid-stride loops yield at their back edge.
        let real_barriers = self
            .body
            .iter()
            .flat_map(|&b| &self.f.blocks[b].insts)
            .filter(|&&i| matches!(self.f.insts[i].kind, InstKind::Barrier))
            .count() as u32;
        let yields: HashSet<Inst> = if mode == CpuMode::Grid {
            insert_yields(&mut self.f).into_iter().collect()
        } else {
            HashSet::new()
        };

        // GPU operations become values of the entry and thread blocks.
        let mut found: Vec<(Value, Intrinsic)> = Vec::new();
        let mut barriers = 0u32;
        for &b in &self.body {
            for &inst in &self.f.blocks[b].insts {
                let data = &self.f.insts[inst];
                match (&data.kind, data.result) {
                    (InstKind::GpuIndex(ix, dim), Some(r)) => {
                        found.push((r, Intrinsic::Index(*ix, *dim)))
                    }
                    (InstKind::SharedAlloc { elem, len }, Some(r)) => found.push((
                        r,
                        Intrinsic::Shared {
                            elem: *elem,
                            len: *len,
                            ty: self.f.values[r].ty,
                        },
                    )),
                    (InstKind::Barrier, _) => barriers += 1,
                    _ => {}
                }
            }
        }
        let mut aliases: HashMap<Value, Value> = HashMap::new();
        let mut shared_bytes: u64 = 0;
        for (r, intrinsic) in found {
            let v = match intrinsic {
                Intrinsic::Index(GpuIndex::ThreadIdx, d) => self.xyz[d.index()],
                Intrinsic::Index(GpuIndex::BlockIdx, d) => {
                    self.ctx_word_u32(ctx::BLOCK_IDX + d.index())
                }
                Intrinsic::Index(GpuIndex::BlockDim, d) => {
                    self.ctx_word_u32(ctx::BLOCK_DIM + d.index())
                }
                Intrinsic::Index(GpuIndex::GridDim, d) => {
                    self.ctx_word_u32(ctx::GRID_DIM + d.index())
                }
                Intrinsic::Shared { elem, len, ty } => {
                    let offset = shared_bytes.next_multiple_of(ctx::SHARED_ALIGN);
                    shared_bytes = offset + len as u64 * elem.bytes() as u64;
                    if shared_bytes > MAX_SHARED_BYTES {
                        return Err(self.unsupported(format!(
                            "its shared arrays need more than {MAX_SHARED_BYTES} bytes per \
                             block, the CPU runtime's limit; use smaller shared arrays"
                        )));
                    }
                    let base = self.ctx_word(ctx::SHARED_BASE);
                    self.at_entry(|em| addr(em, base, offset, ty))
                }
            };
            aliases.insert(r, v);
        }
        for &b in &self.body {
            let f = &mut self.f;
            let mut insts = std::mem::take(&mut f.blocks[b].insts);
            insts.retain(|&i| {
                !matches!(
                    f.insts[i].kind,
                    InstKind::GpuIndex(..) | InstKind::SharedAlloc { .. }
                )
            });
            f.blocks[b].insts = insts;
        }

        // The kernel's entry parameters receive the loaded arguments.
        let kernel_entry = self.body[0];
        let entry_has_preds = self
            .body
            .iter()
            .any(|&b| self.f.successors(b).contains(&kernel_entry));
        let start = if entry_has_preds {
            let pre = self.f.blocks.push(BlockData::default());
            self.append(pre, |em| em.jump(kernel_entry, loaded));
            self.body.insert(0, pre);
            pre
        } else {
            let old = std::mem::take(&mut self.f.blocks[kernel_entry].params);
            aliases.extend(old.into_iter().zip(loaded));
            kernel_entry
        };
        for &b in &self.body {
            for k in 0..self.f.blocks[b].insts.len() {
                let inst = self.f.blocks[b].insts[k];
                self.f.insts[inst]
                    .kind
                    .map_operands(|v| aliases.get(&v).copied().unwrap_or(v));
            }
        }

        self.hoist_uniform();

        let (state_words, shape) = if barriers == 0 {
            self.thread_loop(start);
            (0, StepShape::ThreadLoop)
        } else if let Some(r) = yields.is_empty().then(|| self.regions(start)).flatten() {
            r
        } else {
            (self.state_machine(start, &yields), StepShape::StateMachine)
        };
        let mut entry_insts = std::mem::take(&mut self.entry_insts);
        entry_insts.extend(std::mem::take(&mut self.f.blocks[self.entry].insts));
        self.f.blocks[self.entry].insts = entry_insts;
        Ok(LoweredKernel {
            func: self.f,
            info: StepInfo {
                params: self.params,
                shared_bytes: shared_bytes as usize,
                state_words,
                barriers: real_barriers,
                yields: yields.len() as u32,
                shape,
            },
        })
    }

    /// Moves the kernel's computations that depend only on values of the entry block (kernel
    /// parameters, block index, dimensions, shared arrays, constants) into the entry block:
    /// they are then computed once per round instead of once per thread, and never need
    /// saving across a barrier. Only instructions that neither trap nor touch memory move.
    fn hoist_uniform(&mut self) {
        let mut uniform: HashSet<Value> =
            self.f.blocks[self.entry].params.iter().copied().collect();
        for &i in &self.entry_insts {
            uniform.extend(self.f.insts[i].result);
        }
        let mut changed = true;
        while changed {
            changed = false;
            for &b in &self.body {
                let insts = std::mem::take(&mut self.f.blocks[b].insts);
                let mut kept = Vec::with_capacity(insts.len());
                for inst in insts {
                    let data = &self.f.insts[inst];
                    let movable = match &data.kind {
                        InstKind::Const(_)
                        | InstKind::Unary(..)
                        | InstKind::Fma(..)
                        | InstKind::Cmp(..)
                        | InstKind::Cast(_)
                        | InstKind::Select(..)
                        | InstKind::ElemPtr(..) => true,
                        InstKind::Binary(op, a, _) => {
                            !(matches!(op, BinaryOp::Div | BinaryOp::Rem)
                                && self.f.values[*a].ty.is_int())
                        }
                        _ => false,
                    };
                    let mut operands_uniform = true;
                    data.kind
                        .for_each_operand(|v| operands_uniform &= uniform.contains(&v));
                    match data.result {
                        Some(r) if movable && operands_uniform => {
                            uniform.insert(r);
                            self.entry_insts.push(inst);
                            changed = true;
                        }
                        _ => kept.push(inst),
                    }
                }
                self.f.blocks[b].insts = kept;
            }
        }
    }

    /// Lowers the kernel to one loop over the threads per region between barriers (see
    /// `regions`), if its barriers sit in uniform control flow; returns the state words per
    /// thread and the shape, or `None` (nothing changed) if the kernel does not qualify.
    fn regions(&mut self, start: Block) -> Option<(usize, StepShape)> {
        let dims = [0, 1, 2].map(|d| self.ctx_word_u32(ctx::BLOCK_DIM + d));
        let state_base = self.ctx_word(ctx::STATE_BASE);
        let mut uniform: HashSet<Value> =
            self.f.blocks[self.entry].params.iter().copied().collect();
        for &i in &self.entry_insts {
            uniform.extend(self.f.insts[i].result);
        }
        let out = lower_regions(&Input {
            f: &self.f,
            body: &self.body,
            start,
            entry: self.entry,
            uniform: &uniform,
            xyz: self.xyz,
            t: self.t,
            dims,
            state_base,
        })?;
        self.f = out.f;
        self.entry_insts.extend(out.entry_insts);
        let shape = StepShape::Regions {
            loops: out.loops,
            narrowed: out.narrowed,
        };
        Some((out.state_words, shape))
    }

    /// The context values the thread-loop advance needs (`blockDim.x`, `blockDim.y`, threads
    /// per block), loaded in the entry block.
    fn advance_values(&mut self) -> [Value; 3] {
        [
            self.ctx_word_u32(ctx::BLOCK_DIM),
            self.ctx_word_u32(ctx::BLOCK_DIM + 1),
            self.ctx_word_u32(ctx::BLOCK_THREADS),
        ]
    }

    /// The loop without barriers: the kernel's blocks run once per thread.
    fn thread_loop(&mut self, start: Block) {
        let next = self.f.blocks.push(BlockData::default());
        let exit = self.f.blocks.push(BlockData::default());
        for &b in &self.body {
            if let Some(&last) = self.f.blocks[b].insts.last() {
                if let InstKind::Return(_) = self.f.insts[last].kind {
                    self.f.insts[last].kind = InstKind::Jump(BlockCall {
                        block: next,
                        args: Vec::new(),
                    });
                }
            }
        }
        self.append(self.thread, |em| em.jump(start, Vec::new()));
        let dims = self.advance_values();
        let (thread, t, xyz) = (self.thread, self.t, self.xyz);
        self.append(next, |em| {
            let (args, done) = advance(em, t, xyz, dims);
            em.branch(done, exit, Vec::new(), thread, args);
        });
        self.append(exit, |em| {
            let zero = em.const_u32(0);
            em.ret(Some(zero))
        });
        let entry = self.entry;
        self.append(entry, |em| {
            let zero = em.const_u32(0);
            em.jump(thread, vec![zero; 4]);
        });
        let mut layout = vec![self.entry, self.thread];
        layout.extend(&self.body);
        layout.extend([next, exit]);
        self.f.layout = layout;
    }

    /// The loop with barriers: a state machine resumed at the barrier each thread waits at.
    /// Returns the number of state words per thread.
    fn state_machine(&mut self, start: Block, yields: &HashSet<Inst>) -> usize {
        let acc = self.f.add_block_param(self.thread, Type::U32);
        let state = self.f.add_block_param(self.thread, Type::U64);
        let state_base = self.ctx_word(ctx::STATE_BASE);
        let round = self.ctx_word(ctx::ROUND);
        let first = self.at_entry(|em| {
            let zero = em.const_u64(0);
            em.cmp(CmpOp::Eq, round, zero)
        });
        let open = if yields.is_empty() {
            None
        } else {
            let word = self.ctx_word(ctx::BARRIERS_OPEN);
            Some(self.at_entry(|em| {
                let zero = em.const_u64(0);
                em.cmp(CmpOp::Ne, word, zero)
            }))
        };

        // Split blocks at barriers.
        let mut parts: Vec<Block> = Vec::new();
        let mut waits: HashMap<Block, usize> = HashMap::new();
        let mut resumes: Vec<Block> = Vec::new();
        // Whether each stop (by phase - 1) is a yield rather than a barrier.
        let mut is_yield: Vec<bool> = Vec::new();
        for &b in &self.body {
            let insts = std::mem::take(&mut self.f.blocks[b].insts);
            let mut cur = b;
            let mut cur_insts = Vec::new();
            for inst in insts {
                if let InstKind::Barrier = self.f.insts[inst].kind {
                    self.f.blocks[cur].insts = std::mem::take(&mut cur_insts);
                    parts.push(cur);
                    let resume = self.f.blocks.push(BlockData::default());
                    resumes.push(resume);
                    is_yield.push(yields.contains(&inst));
                    waits.insert(cur, resumes.len());
                    cur = resume;
                } else {
                    cur_insts.push(inst);
                }
            }
            self.f.blocks[cur].insts = cur_insts;
            parts.push(cur);
        }

        // Values live across each barrier, and their state slots.
        let live = {
            let f = &self.f;
            live_in(f, &parts, |b| match waits.get(&b) {
                Some(&k) => vec![resumes[k - 1]],
                None => f.successors(b),
            })
        };
        let empty = Vec::new();
        let live_at = |k: usize| live.get(&resumes[k - 1]).unwrap_or(&empty);
        let mut slots: BTreeMap<Value, usize> = BTreeMap::new();
        for k in 1..=resumes.len() {
            for &v in live_at(k) {
                let n = slots.len() + 1;
                slots.entry(v).or_insert(n);
            }
        }
        let state_words = 1 + slots.len();

        // The thread block: the thread's state, then start or resume.
        let next = self.f.blocks.push(BlockData::default());
        let w = self.f.add_block_param(next, Type::U32);
        let exit = self.f.blocks.push(BlockData::default());
        let dispatch: Vec<Block> = (0..resumes.len())
            .map(|_| self.f.blocks.push(BlockData::default()))
            .collect();
        // Per stop: the block that saves the thread and the block that reloads it.
        let saves: Vec<Block> = (0..resumes.len())
            .map(|_| self.f.blocks.push(BlockData::default()))
            .collect();
        let reloads: Vec<Block> = (0..resumes.len())
            .map(|_| self.f.blocks.push(BlockData::default()))
            .collect();
        let threads = self.ctx_word_u32(ctx::BLOCK_THREADS);
        let single = self.at_entry(|em| {
            let one = em.const_u32(1);
            em.cmp(CmpOp::Eq, threads, one)
        });
        let t = self.t;
        let mut phase = t;
        self.append(self.thread, |em| {
            phase = em.cast(state, Type::ptr(Scalar::U64));
            em.branch(first, start, Vec::new(), dispatch[0], Vec::new());
        });
        let mut saved = phase;
        for (i, &d) in dispatch.iter().enumerate() {
            let k = i + 1;
            let resume = reloads[i];
            let else_block = dispatch.get(k).copied();
            let gate = if is_yield[i] { None } else { open };
            self.append(d, |em| {
                if i == 0 {
                    saved = em.load(phase);
                }
                let kk = em.const_u64(k as u64);
                let mut c = em.cmp(CmpOp::Eq, saved, kk);
                if let Some(open) = gate {
                    // A barrier opens only once no thread is at a yield.
                    c = em.binary(BinaryOp::And, c, open);
                }
                match else_block {
                    Some(e) => em.branch(c, resume, Vec::new(), e, Vec::new()),
                    None => {
                        // Phase 0: the thread has finished; otherwise it keeps waiting at a
                        // barrier that is not open yet.
                        let zero = em.const_u64(0);
                        let waiting = em.cmp(CmpOp::Ne, saved, zero);
                        let w = em.cast(waiting, Type::U32);
                        em.branch(c, resume, Vec::new(), next, vec![w])
                    }
                }
            });
        }

        // Barriers save the live values and the phase, reload blocks reload the values; a block
        // of one thread has nobody to wait for and goes straight on.
        let mut vars: BTreeMap<Value, Variable> = BTreeMap::new();
        for &part in &parts {
            let Some(&k) = waits.get(&part) else {
                continue;
            };
            let (save, reload, resume) = (saves[k - 1], reloads[k - 1], resumes[k - 1]);
            let values: Vec<(Value, usize, Type)> = live_at(k)
                .iter()
                .map(|&v| (v, slots[&v], self.f.values[v].ty))
                .collect();
            let why = if is_yield[k - 1] {
                ctx::AT_YIELD
            } else {
                ctx::AT_BARRIER
            };
            self.append(part, |em| {
                em.branch(single, resume, Vec::new(), save, Vec::new());
            });
            self.append(save, |em| {
                for &(v, slot, ty) in &values {
                    store_slot(em, state, slot, v, ty);
                }
                let kk = em.const_u64(k as u64);
                em.store(phase, kk);
                let w = em.const_u32(why);
                em.jump(next, vec![w]);
            });
            let mut em = FunctionBuilder::detached(&mut self.f);
            let loaded: Vec<(Value, Value)> = values
                .iter()
                .map(|&(v, slot, ty)| (v, load_slot(&mut em, state, slot, ty)))
                .collect();
            em.jump(resume, Vec::new());
            let insts = em.into_insts();
            self.f.blocks[reload].insts = insts;
            for (v, r) in loaded {
                vars.entry(v)
                    .or_insert_with(|| Variable {
                        value: v,
                        redefs: HashMap::new(),
                    })
                    .redefs
                    .insert(reload, r);
            }
        }

        // Returns finish the thread.
        for &part in &parts {
            let Some(&last) = self.f.blocks[part].insts.last() else {
                continue;
            };
            if let InstKind::Return(_) = self.f.insts[last].kind {
                self.f.blocks[part].insts.pop();
                self.append(part, |em| {
                    let zero = em.const_u64(0);
                    em.store(phase, zero);
                    let done = em.const_u32(0);
                    em.jump(next, vec![done]);
                });
            }
        }

        // Next thread, and the end of the round.
        let dims = self.advance_values();
        let (thread, xyz) = (self.thread, self.xyz);
        let mut total = w;
        self.append(next, |em| {
            total = em.binary(BinaryOp::Or, acc, w);
            let (mut args, done) = advance(em, t, xyz, dims);
            let stride = em.const_u64(state_words as u64 * 8);
            let next_state = em.binary(BinaryOp::Add, state, stride);
            args.extend([total, next_state]);
            em.branch(done, exit, Vec::new(), thread, args);
        });
        self.append(exit, |em| em.ret(Some(total)));
        let entry = self.entry;
        self.append(entry, |em| {
            let zero = em.const_u32(0);
            em.jump(thread, vec![zero, zero, zero, zero, zero, state_base]);
        });

        let mut layout = vec![self.entry, self.thread];
        layout.extend(&dispatch);
        let mut region = Vec::with_capacity(parts.len() + 2 * resumes.len());
        for &part in &parts {
            region.push(part);
            if let Some(&k) = waits.get(&part) {
                region.extend([saves[k - 1], reloads[k - 1]]);
            }
        }
        layout.extend(&region);
        layout.extend([next, exit]);
        self.f.layout = layout;

        // Reconnect the uses of values live across barriers.
        let vars: Vec<Variable> = vars.into_values().collect();
        let mut zeros: Vec<Inst> = Vec::new();
        repair(&mut self.f, &region, &vars, &mut |f, ty| {
            let mut em = FunctionBuilder::detached(f);
            let v = em.const_bits(ty, 0);
            zeros.extend(em.into_insts());
            v
        });
        self.entry_insts.extend(zeros);
        state_words
    }
}

/// Loads kernel parameter `i` of type `ty` from its `u64` slot in `args`.
fn load_param(em: &mut FunctionBuilder<'_>, args: Value, i: u32, ty: Type) -> Value {
    let idx = em.const_u32(i);
    let slot = em.elem_ptr(args, idx);
    match ty {
        Type::Ptr(..) => {
            let bits = em.load(slot);
            em.cast(bits, ty)
        }
        Type::Scalar(Scalar::U64) => em.load(slot),
        Type::Scalar(s) => {
            let addr = em.cast(slot, Type::U64);
            let p = em.cast(addr, Type::ptr(s));
            em.load(p)
        }
    }
}

/// Stores `v` (of type `ty`) into state word `slot` of the thread whose state starts at the
/// address `state` (`u64`).
pub(crate) fn store_slot(
    em: &mut FunctionBuilder<'_>,
    state: Value,
    slot: usize,
    v: Value,
    ty: Type,
) {
    let offset = slot as u64 * 8;
    match ty {
        Type::Ptr(..) => {
            let bits = em.cast(v, Type::U64);
            let p = addr(em, state, offset, Type::ptr(Scalar::U64));
            em.store(p, bits);
        }
        Type::Scalar(s) => {
            let p = addr(em, state, offset, Type::ptr(s));
            em.store(p, v);
        }
    }
}

/// Loads a value of type `ty` from state word `slot`.
pub(crate) fn load_slot(
    em: &mut FunctionBuilder<'_>,
    state: Value,
    slot: usize,
    ty: Type,
) -> Value {
    let offset = slot as u64 * 8;
    match ty {
        Type::Ptr(..) => {
            let p = addr(em, state, offset, Type::ptr(Scalar::U64));
            let bits = em.load(p);
            em.cast(bits, ty)
        }
        Type::Scalar(s) => {
            let p = addr(em, state, offset, Type::ptr(s));
            em.load(p)
        }
    }
}

/// Emits the advance to the next thread: returns the next `(t, x, y, z)` and whether the
/// block is done. `dims` are `blockDim.x`, `blockDim.y` and the thread count.
fn advance(
    em: &mut FunctionBuilder<'_>,
    t: Value,
    [x, y, z]: [Value; 3],
    [bdx, bdy, count]: [Value; 3],
) -> (Vec<Value>, Value) {
    let zero = em.const_u32(0);
    let one = em.const_u32(1);
    let t1 = em.binary(BinaryOp::Add, t, one);
    let x1 = em.binary(BinaryOp::Add, x, one);
    let wrap_x = em.cmp(CmpOp::Eq, x1, bdx);
    let x2 = em.select(wrap_x, zero, x1);
    let carry_y = em.cast(wrap_x, Type::U32);
    let y1 = em.binary(BinaryOp::Add, y, carry_y);
    let wrap_y = em.cmp(CmpOp::Eq, y1, bdy);
    let y2 = em.select(wrap_y, zero, y1);
    let carry_z = em.cast(wrap_y, Type::U32);
    let z2 = em.binary(BinaryOp::Add, z, carry_z);
    let done = em.cmp(CmpOp::Ge, t1, count);
    (vec![t1, x2, y2, z2], done)
}
