//! The per-thread tracing context: the module being recorded, the function being built, the
//! stack of control-flow frames, and the pending non-local exit.
//!
//! No borrow of the context is ever held while user code runs: every operation borrows it,
//! appends to the IR, and releases it.

use crate::carry::Slot;
use crate::error::{TraceError, ValueOrigin};
use crate::identity::Handle;
use nacre_backend::{ExternAddr, Linkage};
use nacre_ir::{
    Block, Const, ExternFunc, ExternId, FuncId, Function, FunctionBuilder, Module, Signature, Type,
    Value,
};
use std::any::TypeId;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

/// A merge point of traced control flow, created on first use: the block and the shape of the
/// values that reach it (traced values become block parameters, host values must agree).
#[derive(Debug, Default)]
pub(crate) struct Join {
    pub block: Option<Block>,
    pub layout: Vec<SlotKind>,
}

#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) enum SlotKind {
    Value(Type),
    Bits(u128),
}

impl Join {
    /// A join whose block exists already (a loop header).
    pub fn existing(block: Block, layout: Vec<SlotKind>) -> Join {
        Join {
            block: Some(block),
            layout,
        }
    }
}

/// What a control-flow frame is.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) enum FrameKind {
    /// A loop (traced or unrolled at trace time).
    Loop,
    /// The body of a traced function (inlined or separate).
    Function,
}

/// A loop or function body on the frame stack.
#[derive(Debug)]
pub(crate) struct Frame {
    pub kind: FrameKind,
    /// Traced-construct depth when the frame was entered; an exit from deeper inside must be
    /// recorded as an IR jump, an exit at the same depth happens natively.
    pub traced_depth: u32,
    /// Where `break` (loops) or `return` (functions) goes.
    pub exit: Join,
    /// Where `continue` goes (loops).
    pub cont: Join,
}

/// A non-local exit travelling natively (through `Flow::Exit`) to the construct that handles it.
#[derive(Debug, Default)]
pub(crate) enum Pending {
    #[default]
    None,
    Break {
        depth: usize,
        slots: Vec<Slot>,
    },
    Continue {
        depth: usize,
        slots: Vec<Slot>,
    },
    Return {
        slots: Vec<Slot>,
    },
}

/// One IR function under construction.
pub(crate) struct FuncState {
    pub id: FuncId,
    /// The trace id of this function's values (see [`crate::identity`]).
    pub trace: u64,
    pub func: Function,
    pub current: Option<Block>,
    pub frames: Vec<Frame>,
    pub traced_depth: u32,
}

impl FuncState {
    pub fn builder(&mut self) -> FunctionBuilder<'_> {
        let mut b = FunctionBuilder::new(&mut self.func);
        if let Some(c) = self.current {
            b.switch_to_block(c);
        }
        b
    }

    /// True if code at the current position is reachable so far.
    pub fn is_live(&self) -> bool {
        matches!(self.current, Some(b) if self.func.terminator(b).is_none())
    }

    fn kinds(&self, slots: &[Slot]) -> Vec<SlotKind> {
        slots
            .iter()
            .map(|s| match *s {
                Slot::Value(v) => SlotKind::Value(self.func.value_type(v)),
                Slot::Bits(b) => SlotKind::Bits(b),
            })
            .collect()
    }

    /// Creates a block whose parameters take the traced slots of `slots`.
    pub fn block_for(&mut self, slots: &[Slot]) -> (Block, Vec<SlotKind>) {
        let layout = self.kinds(slots);
        let mut b = FunctionBuilder::new(&mut self.func);
        let block = b.create_block();
        for k in &layout {
            if let SlotKind::Value(ty) = k {
                b.append_block_param(block, *ty);
            }
        }
        (block, layout)
    }

    /// Jumps from the current position to `join` with `slots` (nothing if the position is dead).
    pub fn jump_to(&mut self, join: &mut Join, slots: &[Slot]) -> Result<(), TraceError> {
        if !self.is_live() {
            return Ok(());
        }
        let block = match join.block {
            Some(b) => {
                let kinds = self.kinds(slots);
                check_layout(&join.layout, &kinds)?;
                b
            }
            None => {
                let (b, layout) = self.block_for(slots);
                join.block = Some(b);
                join.layout = layout;
                b
            }
        };
        let args = slots
            .iter()
            .filter_map(|s| match s {
                Slot::Value(v) => Some(*v),
                Slot::Bits(_) => None,
            })
            .collect();
        self.builder().jump(block, args);
        self.current = None;
        Ok(())
    }

    /// Continues at `join`; returns the slots available there, or `None` if nothing jumps there.
    pub fn enter(&mut self, join: &Join) -> Option<Vec<Slot>> {
        let block = join.block?;
        self.current = Some(block);
        Some(slots_of(&self.func.blocks[block].params, &join.layout))
    }
}

/// The slots a block provides: its parameters for traced slots, the recorded bits otherwise.
pub(crate) fn slots_of(params: &[nacre_ir::Value], layout: &[SlotKind]) -> Vec<Slot> {
    let mut params = params.iter();
    layout
        .iter()
        .map(|k| match k {
            SlotKind::Value(_) => {
                Slot::Value(*params.next().expect("one parameter per traced slot"))
            }
            SlotKind::Bits(b) => Slot::Bits(*b),
        })
        .collect()
}

fn check_layout(expected: &[SlotKind], got: &[SlotKind]) -> Result<(), TraceError> {
    if expected.len() != got.len() {
        return Err(TraceError::CarryMismatch {
            detail: format!("{} values expected, {} given", expected.len(), got.len()),
        });
    }
    for (k, (e, g)) in expected.iter().zip(got).enumerate() {
        match (e, g) {
            (SlotKind::Value(a), SlotKind::Value(b)) if a == b => {}
            (SlotKind::Bits(a), SlotKind::Bits(b)) if a == b => {}
            (SlotKind::Bits(_), SlotKind::Bits(_)) => return Err(host_value_diverges(k)),
            (a, b) => {
                return Err(TraceError::CarryMismatch {
                    detail: format!("expected {a:?}, got {b:?}"),
                })
            }
        }
    }
    Ok(())
}

/// [`TraceError::HostValueDiverges`] for slot `k` of the state of the innermost construct
/// `#[jit]` named: the variable it belongs to, the construct and its line.
fn host_value_diverges(k: usize) -> TraceError {
    let location = match crate::cf::innermost() {
        Some(c) => {
            let what = match c.variable_of_slot(k) {
                Some(v) if c.variables.contains(", ") => format!("`{v}` (of `{}`)", c.variables),
                Some(v) => format!("`{v}`"),
                None => format!("the value (carrying `{}`)", c.variables),
            };
            format!(
                "{what}, carried by the traced `{}` at {}:{}",
                c.construct, c.file, c.line
            )
        }
        None => "it is assigned inside a traced `if` or loop".to_string(),
    };
    TraceError::HostValueDiverges { location }
}

/// The recording state of one trace.
pub(crate) struct Tracer {
    pub module: Module,
    /// The addresses of the module's externs.
    pub linkage: Linkage,
    pub funcs: Vec<FuncState>,
    /// Separate IR functions already traced, by the Rust function's type (and, for a function
    /// pointer of a function table, its address; 0 otherwise).
    pub callees: HashMap<(TypeId, usize), FuncId>,
    /// The first error met; the trace continues (on dead values) and fails at the end.
    pub error: Option<TraceError>,
}

impl Tracer {
    #[inline]
    pub fn func(&mut self) -> &mut FuncState {
        self.funcs
            .last_mut()
            .expect("a function is being traced while the tracer is active")
    }

    /// Declares the extern function at `at` (once per address): under `name`, or under a
    /// numbered variant of it when another function already has that name.
    pub fn declare_extern(&mut self, name: &str, signature: Signature, at: ExternAddr) -> ExternId {
        if let Some((&id, _)) = self.linkage.externs.iter().find(|(_, e)| e.addr == at.addr) {
            return id;
        }
        let mut symbol = name.to_string();
        let mut n = 1;
        while self.module.extern_named(&symbol).is_some() {
            n += 1;
            symbol = format!("{name}_{n}");
        }
        let id = self.module.declare_extern(ExternFunc {
            name: symbol,
            signature,
        });
        self.linkage.externs.insert(id, at);
        id
    }

    pub fn fail(&mut self, e: TraceError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// Starts recording `fs` (a callee or kernel traced inside the current function, or the
    /// entry); its values are the current trace's until [`Tracer::pop_func`].
    pub fn push_func(&mut self, fs: FuncState) {
        set_current_trace(fs.trace);
        self.funcs.push(fs);
    }

    /// Ends recording the innermost function; the enclosing one's values are current again.
    pub fn pop_func(&mut self) -> FuncState {
        let fs = self.funcs.pop().expect("a function is being traced");
        set_current_trace(self.top_trace());
        fs
    }

    /// The trace id of the innermost function being recorded (0 if none).
    fn top_trace(&self) -> u64 {
        self.funcs.last().map_or(0, |f| f.trace)
    }

    /// The IR value that `h` names, as an operand of `operation` in the function being
    /// recorded. A handle of another trace or function, or a direct one, records a
    /// [`TraceError::ForeignValue`] and gives a zero constant of type `ty()` instead, so that
    /// the trace goes on and fails at its end.
    #[inline]
    pub fn value(
        &mut self,
        h: Handle,
        operation: &'static str,
        ty: impl FnOnce() -> Type,
    ) -> Value {
        if h.belongs_to(self.func().trace) {
            h.ir_value()
        } else {
            self.foreign(h, operation, ty())
        }
    }

    #[cold]
    #[inline(never)]
    fn foreign(&mut self, h: Handle, operation: &'static str, ty: Type) -> Value {
        let origin = if h.trace() == 0 {
            ValueOrigin::OutsideTrace
        } else if let Some(f) = self.funcs.iter().find(|f| f.trace == h.trace()) {
            ValueOrigin::EnclosingFunction(f.func.name.clone())
        } else {
            ValueOrigin::OtherTrace
        };
        let value = match ty {
            Type::Scalar(s) => format!("Val<{s}>"),
            Type::Ptr(s, _) => format!("Ptr<{s}>"),
        };
        let function = self.func().func.name.clone();
        self.fail(TraceError::ForeignValue {
            operation,
            value,
            origin,
            function,
        });
        // A stand-in of the right type, placed without changing where recording goes on (in a
        // fresh unreachable block when the position is dead).
        let fs = self.func();
        let at = fs.current;
        let v = fs.builder().constant(Const { ty, bits: 0 });
        fs.current = at;
        v
    }

    /// Runs `f` with a builder at the current position of the function being recorded and
    /// returns the value it builds as a handle of that function.
    #[inline]
    pub fn build(&mut self, f: impl FnOnce(&mut FunctionBuilder<'_>) -> Value) -> Handle {
        let fs = self.func();
        let mut b = fs.builder();
        let v = f(&mut b);
        fs.current = b.current_block();
        Handle::traced(v, fs.trace)
    }
}

/// The trace id of the function being recorded on this thread (0 outside any trace): a
/// mirror of the tracer's innermost function, kept by [`Tracer::push_func`],
/// [`Tracer::pop_func`] and [`run_tracer`], so that rebuilding carried values costs no borrow
/// of the tracer.
#[inline]
pub(crate) fn current_trace() -> u64 {
    CURRENT_TRACE.with(Cell::get)
}

fn set_current_trace(id: u64) {
    CURRENT_TRACE.with(|c| c.set(id));
}

thread_local! {
    static TRACER: RefCell<Option<Tracer>> = const { RefCell::new(None) };
    static PENDING: RefCell<Pending> = const { RefCell::new(Pending::None) };
    static CURRENT_TRACE: Cell<u64> = const { Cell::new(0) };
}

/// Whether a trace is being recorded on this thread.
pub(crate) fn is_tracing() -> bool {
    TRACER.with(|t| t.borrow().is_some())
}

/// Runs `f` on the active tracer, or returns `None` when not tracing (direct mode).
#[inline]
pub(crate) fn with_tracer<R>(f: impl FnOnce(&mut Tracer) -> R) -> Option<R> {
    TRACER.with(|t| t.borrow_mut().as_mut().map(f))
}

/// Runs `f` with a builder at the current position of the function being traced.
/// Must only be called while tracing.
#[inline]
pub(crate) fn emit<R>(f: impl FnOnce(&mut FunctionBuilder<'_>) -> R) -> R {
    with_tracer(|t| {
        let fs = t.func();
        let mut b = fs.builder();
        let r = f(&mut b);
        fs.current = b.current_block();
        r
    })
    .expect("emit is only called while tracing")
}

/// Installs a tracer for the duration of `f` and returns it afterwards. The previous state is
/// restored even if `f` unwinds.
pub(crate) fn run_tracer<R>(tracer: Tracer, f: impl FnOnce() -> R) -> (R, Tracer) {
    struct Restore(Option<Tracer>, Pending);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            set_current_trace(prev.as_ref().map_or(0, Tracer::top_trace));
            TRACER.with(|t| *t.borrow_mut() = prev);
            let pending = std::mem::take(&mut self.1);
            PENDING.with(|p| *p.borrow_mut() = pending);
        }
    }
    set_current_trace(tracer.top_trace());
    let prev = TRACER.with(|t| t.borrow_mut().replace(tracer));
    let prev_pending = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
    let _restore = Restore(prev, prev_pending);
    let r = f();
    let tracer = TRACER
        .with(|t| t.borrow_mut().take())
        .expect("tracer still installed");
    (r, tracer)
}

/// Sets the pending exit.
pub(crate) fn set_pending(p: Pending) {
    PENDING.with(|c| *c.borrow_mut() = p);
}

/// Takes the pending exit.
pub(crate) fn take_pending() -> Pending {
    PENDING.with(|c| std::mem::take(&mut *c.borrow_mut()))
}
