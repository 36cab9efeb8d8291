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
//!     return acc                    0: every thread finished; else ctx::AT_BARRIER,
//!                                   ctx::AT_YIELD, ctx::AT_WARP: some threads wait
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
//! **Grid-stride loops.** In [`CpuMode::Grid`], a grid-stride loop in uniform control flow
//! whose index starts at `u + threadIdx.x` becomes a uniform loop with a barrier per group of
//! iterations (`stride_lockstep`), which the region lowering takes. Otherwise, the back edge of
//! a loop whose counter advances
//! by a multiple of `gridDim` or `blockDim` gets a *yield* (see `stride_loops`), so that round
//! `k` runs iteration `k` of every thread and consecutive threads access consecutive elements,
//! as warps do on a GPU; run thread after thread, the accesses of one thread are a grid apart
//! and thrash the caches. A yield is lowered like a barrier, saving the thread's live values,
//! but ends with `jump next(AT_YIELD)` and waits for nobody: threads at a yield resume in the
//! next round, while threads at a barrier resume only in a round whose context has
//! [`ctx::BARRIERS_OPEN`]'s barrier bit set, which the executor sets once a round left no
//! thread at a yield or at a warp stop (warp stops open once no thread is left at a yield; see
//! [`ctx::open_word`]). Between barriers any interleaving of the threads is a valid execution, so yields
//! change the order of work, never its result. (Kernels of the collapsible grid-stride shape
//! usually run through a separate collapsed step function instead, see `collapse`; this
//! lowering is their fallback.)
//!
//! Kernels with neither barriers nor yields nor loops are one region of `regions` (a thread
//! loop the C tier can vectorise); those with loops are translated directly
//! ([`StepShape::ThreadLoop`]): their blocks are embedded unchanged in the thread loop, with
//! no per-thread state, and the step function always returns 0.

//!
//! # Code layout
//!
//! This module holds the driver ([`lower_kernel`] and the steps of the lowering in order) and
//! the thread loop without barriers; `entry` builds what the entry block computes once per
//! round (parameters, GPU indices, shared arrays, hoisted uniform code), and `state_machine`
//! the resumable state machine. The per-thread state words are stored and loaded by
//! `step::state`, shared with `regions`.

mod collectives;
mod entry;
mod state_machine;

use crate::error::KernelError;
use crate::step::ctx;
use crate::step::regions::{lower_regions, Input};
use crate::step::stride_lockstep::lockstep_strided_loops;
use crate::step::stride_loops::insert_yields;
use crate::step::stride_unroll::unroll_strided_loops;
use crate::step::CpuMode;
use entry::Intrinsic;
use nacre_ir::verifier::check_function;
use nacre_ir::FunctionBuilder;
use nacre_ir::{
    BinaryOp, Block, BlockCall, BlockData, CmpOp, FuncId, FuncKind, Function, Inst, InstKind,
    Module, Scalar, Signature, Type, Value, ValueDef,
};
use state_machine::StopKind;
use std::collections::{HashMap, HashSet};

/// The most shared memory, in bytes, that one block of a kernel may use on the CPU (256 MiB).
pub const MAX_SHARED_BYTES: u64 = 1 << 28;

/// The most static shared memory, in bytes, that a step function holds in a local array
/// (on its worker's stack) rather than in the context's shared memory.
const MAX_LOCAL_SHARED_BYTES: u64 = 64 << 10;

/// What the executor needs to know about a step function.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct StepInfo {
    /// The kernel's parameter types (one `args` slot each).
    pub params: Vec<Type>,
    /// Bytes of shared memory per block (all shared arrays, each aligned to 8 bytes or its
    /// element size).
    pub shared_bytes: usize,
    /// Words of state per thread: 0 without barriers and yields, else 1 (the phase) + one per
    /// value live across a barrier or yield (the phase only for a state machine).
    pub state_words: usize,
    /// Number of barriers in the kernel (voting barriers included).
    pub barriers: u32,
    /// Whether the kernel performs collective operations (warp shuffles, reductions and
    /// votes, voting barriers), which exchange values through the block's exchange area
    /// ([`ctx::EXCHANGE_BASE`]).
    pub exchange: bool,
    /// Number of yields added to interleave grid-stride loops (see `stride_loops`); they are
    /// lowered like barriers.
    pub yields: u32,
    /// How the step function runs a block.
    pub shape: StepShape,
}

impl StepInfo {
    /// The 8-byte words of state a block of `threads` threads needs: `state_words` per thread
    /// in a state machine's thread-major layout, `state_words` arrays
    /// [`crate::step::LANE_STRIDE`] bytes apart in the thread loops' word-major one (see
    /// `step::state`).
    pub fn block_state_words(&self, threads: u64) -> usize {
        match self.shape {
            StepShape::Regions { .. } => self.state_words * (crate::step::LANE_STRIDE / 8) as usize,
            StepShape::ThreadLoop | StepShape::StateMachine => self.state_words * threads as usize,
        }
    }
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

    /// The lowering, step by step (see the module docs).
    fn run(mut self, mode: CpuMode) -> Result<LoweredKernel, KernelError> {
        // Grid-stride loops in uniform control flow run in lockstep (no yields); other small
        // ones are unrolled, to yield less often (the new blocks join the body).
        let (lockstep, unrolled) = if mode == CpuMode::Grid {
            let lockstep = lockstep_strided_loops(&mut self.f);
            let unrolled = unroll_strided_loops(&mut self.f, &lockstep);
            (lockstep, unrolled)
        } else {
            (HashSet::new(), Vec::new())
        };
        self.body = self.f.layout.clone();
        let loaded = self.load_params();

        // Collectives exchange values around stops; grid-stride loops yield at their back
        // edge.
        let exchange = self.has_collectives();
        let mut real_barriers = self.count_barriers();
        let (warp_stops, votes) = self.lower_collectives();
        real_barriers += votes;
        let yields: HashSet<Inst> = if mode == CpuMode::Grid {
            insert_yields(&mut self.f, &unrolled, &lockstep)
                .into_iter()
                .collect()
        } else {
            HashSet::new()
        };

        // GPU operations become values of the entry and thread blocks.
        let (found, barriers) = self.find_gpu_operations();
        let dynamic_shared = found.iter().any(|(_, i)| {
            matches!(
                i,
                Intrinsic::DynamicShared(_) | Intrinsic::DynamicSharedBytes
            )
        });
        let (mut aliases, shared_bytes) = self.gpu_values(found)?;
        self.drop_gpu_operations();

        // The kernel's entry parameters receive the loaded arguments.
        let start = self.bind_kernel_params(loaded, &mut aliases);
        self.rename(&aliases);

        self.hoist_uniform();

        let (state_words, shape) = self.lower_threads(start, barriers, &yields, &warp_stops);
        if matches!(shape, StepShape::Regions { .. }) && !dynamic_shared {
            self.local_shared(shared_bytes);
        }
        self.place_entry_insts();
        Ok(LoweredKernel {
            func: self.f,
            info: StepInfo {
                params: self.params,
                shared_bytes: shared_bytes as usize,
                state_words,
                barriers: real_barriers,
                exchange,
                yields: yields.len() as u32,
                shape,
            },
        })
    }

    /// Holds the block's static shared arrays (`bytes`, at most [`MAX_LOCAL_SHARED_BYTES`])
    /// in a local array of the step function instead of the context's shared memory: a
    /// step function of the region lowering runs a whole block in one call, so the arrays
    /// live exactly as long, and the C compiler then sees memory no argument points into
    /// (it vectorises loads from the arguments into the arrays, which it otherwise must
    /// assume may overlap).
    fn local_shared(&mut self, bytes: u64) {
        let Some(&base) = self.ctx_u64.get(&ctx::SHARED_BASE) else {
            return;
        };
        if bytes == 0 || bytes > MAX_LOCAL_SHARED_BYTES {
            return;
        }
        let ValueDef::Result(load) = self.f.values[base].def else {
            return;
        };
        let Some(at) = self.entry_insts.iter().position(|&i| i == load) else {
            return;
        };
        let mut em = FunctionBuilder::detached(&mut self.f);
        let local = em.local_array(Scalar::U64, bytes.div_ceil(8) as u32);
        let insts = em.into_insts();
        self.f.insts[load].kind = InstKind::Cast(local);
        self.entry_insts.splice(at..at, insts);
    }

    /// The number of barriers in the kernel's blocks (with the yields once they are in).
    fn count_barriers(&self) -> u32 {
        self.body
            .iter()
            .flat_map(|&b| &self.f.blocks[b].insts)
            .filter(|&&i| matches!(self.f.insts[i].kind, InstKind::Barrier))
            .count() as u32
    }

    /// Builds the loop over the block's threads in the shape the kernel allows (`barriers`
    /// counts the yields and warp stops too); returns the state words per thread and the
    /// shape. Warp stops are barriers to the region lowering (which takes only stops in
    /// uniform control flow) and [`StopKind::Warp`] stops to the state machine (see
    /// `collectives`).
    fn lower_threads(
        &mut self,
        start: Block,
        barriers: u32,
        yields: &HashSet<Inst>,
        warp_stops: &HashSet<Inst>,
    ) -> (usize, StepShape) {
        if barriers == 0 {
            // A kernel without loops is one region: the thread loops of `regions` nest x
            // inside y inside z, which the C tier can vectorise; the plain thread loop is the
            // fallback (and the shape of kernels with loops, which the C compiler could not
            // vectorise across threads anyway).
            let acyclic = nacre_ir::analysis::compute_loops(&self.f)
                .headers
                .is_empty();
            if let Some(r) = acyclic.then(|| self.regions(start)).flatten() {
                return r;
            }
            self.thread_loop(start);
            (0, StepShape::ThreadLoop)
        } else if let Some(r) = yields.is_empty().then(|| self.regions(start)).flatten() {
            r
        } else {
            let kinds = yields
                .iter()
                .map(|&i| (i, StopKind::Yield))
                .chain(warp_stops.iter().map(|&i| (i, StopKind::Warp)))
                .collect();
            (self.state_machine(start, &kinds), StepShape::StateMachine)
        }
    }

    /// Puts the instructions collected for the entry block in front of those it holds (its
    /// terminator).
    fn place_entry_insts(&mut self) {
        let mut entry_insts = std::mem::take(&mut self.entry_insts);
        entry_insts.extend(std::mem::take(&mut self.f.blocks[self.entry].insts));
        self.f.blocks[self.entry].insts = entry_insts;
    }

    /// Lowers the kernel to one loop over the threads per region between barriers (see
    /// `regions`), if its barriers sit in uniform control flow; returns the state words per
    /// thread and the shape, or `None` (nothing changed) if the kernel does not qualify.
    fn regions(&mut self, start: Block) -> Option<(usize, StepShape)> {
        let dims = [0, 1, 2].map(|d| self.ctx_word_u32(ctx::BLOCK_DIM + d));
        let state_base = self.ctx_word(ctx::STATE_BASE);
        let uniform = self.entry_values();
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
