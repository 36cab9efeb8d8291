//! The structured control-flow API that `#[jit]` expands to (and that can be used by hand).
//!
//! Every construct takes the *state*: the variables assigned inside it, as a [`Carry`] tuple,
//! passed into closures by value and returned from them in a [`Flow`]. What happens depends on
//! the condition's type:
//!
//! - a plain `bool`, a Rust iterator or a range of plain integers runs natively while tracing:
//!   the untaken branch is never traced, loops unroll (trace-time specialisation);
//! - a `Val<bool>` or a range with a `Val` bound records a branch or a loop in the IR; the state
//!   becomes block parameters.
//!
//! Outside a trace (direct mode) everything runs natively on concrete values.
//!
//! Non-local exits ([`brk`], [`cont`], [`ret`]) return [`Flow::Exit`]; the enclosing
//! constructs pass it outwards until the target handles it. Inside traced control flow they are
//! recorded as IR jumps instead.

use crate::carry::{self, Carry, Slot};
use crate::context::{self, emit, take_pending, with_tracer, Frame, FrameKind, Join, Pending};
use crate::error::TraceError;
use crate::ptr::Ptr;
use crate::val::{value_of, Index, IntoVal, Val};
use nacre_ir::semantics::ScalarValue;
use nacre_ir::{BinaryOp, Value};

/// How control leaves a block of user code.
#[derive(Debug, Clone, Copy)]
#[must_use]
pub enum Flow<S> {
    /// Falls through to what follows, with the state.
    Next(S),
    /// Left by `break`, `continue` or `return` (already recorded or pending).
    Exit,
}

/// A branch or loop condition: `bool` (decided at trace time) or `Val<bool>` (traced).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a condition",
    label = "expected `bool` or `Val<bool>`",
    note = "conditions of `if` and `while` in traced code are `bool` (decided while tracing) or `Val<bool>` (traced)"
)]
pub trait Cond: Copy {
    /// The condition: `Ok(b)` when known now, `Err(v)` for a traced value.
    fn resolve(self) -> Result<bool, Value>;
}

impl Cond for bool {
    fn resolve(self) -> Result<bool, Value> {
        Ok(self)
    }
}

impl Cond for Val<bool> {
    fn resolve(self) -> Result<bool, Value> {
        if crate::is_tracing() {
            Err(value_of(self.raw()))
        } else {
            Ok(self.raw() & 1 != 0)
        }
    }
}

fn fail(e: TraceError) {
    with_tracer(|t| t.fail(e));
}

/// Jumps from the current position to `join` (recording an error if the values disagree).
fn jump_join(join: &mut Join, slots: &[Slot]) {
    with_tracer(|t| {
        let r = t.func().jump_to(join, slots);
        if let Err(e) = r {
            t.fail(e);
        }
    });
}

/// Continues at `join`, returning its slots, or marks the position dead.
fn enter_join(join: &Join) -> Option<Vec<Slot>> {
    with_tracer(|t| {
        let fs = t.func();
        let r = fs.enter(join);
        if r.is_none() {
            fs.current = None;
        }
        r
    })
    .flatten()
}

fn set_current(block: nacre_ir::Block) {
    with_tracer(|t| t.func().current = Some(block));
}

fn adjust_depth(delta: i32) {
    with_tracer(|t| {
        let fs = t.func();
        fs.traced_depth = fs.traced_depth.wrapping_add_signed(delta);
    });
}

/// `if cond { then_(state) } else { else_(state) }`. The output carries the variables assigned
/// in either branch and the value of the `if` expression.
pub fn if_else<C: Cond, I: Copy, O: Carry>(
    cond: C,
    state: I,
    then_: impl FnOnce(I) -> Flow<O>,
    else_: impl FnOnce(I) -> Flow<O>,
) -> Flow<O> {
    let c = match cond.resolve() {
        Ok(true) => return then_(state),
        Ok(false) => return else_(state),
        Err(c) => c,
    };
    let (then_b, else_b) = emit(|b| {
        let t = b.create_block();
        let e = b.create_block();
        b.branch(c, t, vec![], e, vec![]);
        (t, e)
    });
    adjust_depth(1);
    let mut join = Join::default();
    set_current(then_b);
    if let Flow::Next(o) = then_(state) {
        jump_join(&mut join, &carry::flatten(&o));
    }
    set_current(else_b);
    if let Flow::Next(o) = else_(state) {
        jump_join(&mut join, &carry::flatten(&o));
    }
    adjust_depth(-1);
    match enter_join(&join) {
        Some(slots) => Flow::Next(carry::rebuild(&slots)),
        None => Flow::Exit,
    }
}

/// [`if_else`] as `#[jit]` emits it: both branches take the state (the variables assigned in
/// either branch) and return it with the value of the `if`. Tying the output's state type to
/// the input's keeps the call well-typed when both branches always exit (and so produce no
/// value to infer it from).
pub fn branch<C: Cond, S: Carry, V: Carry>(
    cond: C,
    state: S,
    then_: impl FnOnce(S) -> Flow<(S, V)>,
    else_: impl FnOnce(S) -> Flow<(S, V)>,
) -> Flow<(S, V)> {
    if_else(cond, state, then_, else_)
}

fn push_frame(kind: FrameKind, exit: Join, cont: Join) {
    with_tracer(|t| {
        let fs = t.func();
        let traced_depth = fs.traced_depth;
        fs.frames.push(Frame {
            kind,
            traced_depth,
            exit,
            cont,
        });
    });
}

fn pop_frame() -> Option<Frame> {
    with_tracer(|t| t.func().frames.pop()).flatten()
}

/// How one iteration of a native loop ended.
enum Outcome<S> {
    /// Fell through or `continue`d: the next iteration gets this state.
    Fall(S),
    /// `break` out of this loop with this state.
    Break(S),
    /// An exit to an enclosing construct, already re-targeted to the frame stack without
    /// this loop.
    Outer(Pending),
    /// Every path left through recorded jumps; the position is unreachable.
    Dead,
}

/// Records a pending native exit as an IR jump to its target (used when other paths stay
/// alive, so the exit can no longer travel natively). `depth` counts loop frames from the top
/// of the frame stack, skipping `skip` frames.
fn materialize(p: Pending, skip: usize) {
    with_tracer(|t| {
        let fs = t.func();
        let frames_len = fs.frames.len() - skip.min(fs.frames.len());
        let (slots, target) = match p {
            Pending::None => return,
            Pending::Break { depth, slots } => (
                slots,
                loop_frame_index(&fs.frames[..frames_len], depth).map(|i| (i, true)),
            ),
            Pending::Continue { depth, slots } => (
                slots,
                loop_frame_index(&fs.frames[..frames_len], depth).map(|i| (i, false)),
            ),
            Pending::Return { slots } => (
                slots,
                fs.frames[..frames_len]
                    .iter()
                    .rposition(|f| f.kind == FrameKind::Function)
                    .map(|i| (i, true)),
            ),
        };
        let Some((i, to_exit)) = target else {
            t.fail(TraceError::NoEnclosingLoop { what: "break" });
            return;
        };
        let slot = if to_exit {
            &mut fs.frames[i].exit
        } else {
            &mut fs.frames[i].cont
        };
        let mut join = std::mem::take(slot);
        let r = fs.jump_to(&mut join, &slots);
        let slot = if to_exit {
            &mut fs.frames[i].exit
        } else {
            &mut fs.frames[i].cont
        };
        *slot = join;
        if let Err(e) = r {
            t.fail(e);
        }
    });
}

/// Drives a loop that runs natively (host condition or iterator, or direct mode). `step` runs
/// one iteration (`None` when the loop is over).
fn native_loop<S: Carry>(state: S, mut step: impl FnMut(S) -> Option<Flow<S>>) -> Flow<S> {
    let tracing = crate::is_tracing();
    if tracing {
        push_frame(FrameKind::Loop, Join::default(), Join::default());
    }
    let mut s = state;
    // `None` while the loop is running or after it ended normally with `s`.
    let mut end: Option<Outcome<S>> = None;
    while let Some(r) = step(s) {
        let outcome = match r {
            Flow::Next(next) => Outcome::Fall(next),
            Flow::Exit => match take_pending() {
                Pending::Break { depth: 0, slots } => Outcome::Break(carry::rebuild(&slots)),
                Pending::Continue { depth: 0, slots } => Outcome::Fall(carry::rebuild(&slots)),
                Pending::Break { depth, slots } => Outcome::Outer(Pending::Break {
                    depth: depth - 1,
                    slots,
                }),
                Pending::Continue { depth, slots } => Outcome::Outer(Pending::Continue {
                    depth: depth - 1,
                    slots,
                }),
                p @ Pending::Return { .. } => Outcome::Outer(p),
                Pending::None => Outcome::Dead,
            },
        };
        // A `continue` under a traced condition jumped to this iteration's continue block:
        // every path of this iteration is then merged there and the loop goes on.
        let cont = if tracing {
            with_tracer(|t| {
                std::mem::take(&mut t.func().frames.last_mut().expect("loop frame").cont)
            })
            .unwrap_or_default()
        } else {
            Join::default()
        };
        if cont.block.is_some() {
            let mut cont = cont;
            match outcome {
                Outcome::Fall(n) => jump_join(&mut cont, &carry::flatten(&n)),
                Outcome::Break(n) => with_tracer(|t| {
                    let fs = t.func();
                    let mut exit =
                        std::mem::take(&mut fs.frames.last_mut().expect("loop frame").exit);
                    let r = fs.jump_to(&mut exit, &carry::flatten(&n));
                    fs.frames.last_mut().expect("loop frame").exit = exit;
                    if let Err(e) = r {
                        t.fail(e);
                    }
                })
                .unwrap_or(()),
                Outcome::Outer(p) => materialize(p, 1),
                Outcome::Dead => {}
            }
            match enter_join(&cont) {
                Some(slots) => {
                    s = carry::rebuild(&slots);
                    continue;
                }
                None => {
                    end = Some(Outcome::Dead);
                    break;
                }
            }
        }
        match outcome {
            Outcome::Fall(n) => s = n,
            other => {
                end = Some(other);
                break;
            }
        }
    }
    let end = end.unwrap_or(Outcome::Break(s));
    if !tracing {
        return match end {
            Outcome::Fall(s) | Outcome::Break(s) => Flow::Next(s),
            Outcome::Outer(p) => {
                context::set_pending(p);
                Flow::Exit
            }
            Outcome::Dead => Flow::Exit,
        };
    }
    let frame = pop_frame().expect("loop frame");
    let mut exit = frame.exit;
    if exit.block.is_none() {
        return match end {
            Outcome::Fall(s) | Outcome::Break(s) => Flow::Next(s),
            Outcome::Outer(p) => {
                context::set_pending(p);
                Flow::Exit
            }
            Outcome::Dead => Flow::Exit,
        };
    }
    // Traced `break`s reach the exit block: merge the other paths there too.
    match end {
        Outcome::Fall(s) | Outcome::Break(s) => jump_join(&mut exit, &carry::flatten(&s)),
        Outcome::Outer(p) => materialize(p, 0),
        Outcome::Dead => {}
    }
    match enter_join(&exit) {
        Some(slots) => Flow::Next(carry::rebuild(&slots)),
        None => Flow::Exit,
    }
}

fn cont_ref(j: &Join) -> Join {
    Join {
        block: j.block,
        layout: j.layout.clone(),
    }
}

fn jump_join_owned(mut join: Join, slots: &[Slot]) {
    jump_join(&mut join, slots)
}

/// Records a traced loop: `header(state)`; `cond` evaluated in the header (`None` for an
/// infinite loop); `body` runs in the body block and falls through to `latch`, which computes
/// the next state (for `for` loops, the induction step) and jumps back to the header.
fn traced_loop<S: Carry, H: Carry>(
    state: H,
    cond: impl FnOnce(H) -> Option<Val<bool>>,
    body: impl FnOnce(H) -> Flow<S>,
    split: impl Fn(H) -> S,
    latch: impl FnOnce(H, S) -> H,
) -> Flow<S> {
    let slots = carry::flatten(&state);
    let header_join = with_tracer(|t| {
        let fs = t.func();
        let (block, layout) = fs.block_for(&slots);
        let mut j = Join::existing(block, layout);
        if let Err(e) = fs.jump_to(&mut j, &slots) {
            t.fail(e);
        }
        j
    })
    .expect("traced loops are only recorded while tracing");
    let hs: H = carry::rebuild(&enter_join(&header_join).unwrap_or(slots));
    let c = cond(hs);
    let exit = match c {
        Some(c) => {
            let exit_slots = carry::flatten(&split(hs));
            with_tracer(|t| {
                let fs = t.func();
                let (exit_b, layout) = fs.block_for(&exit_slots);
                let args = exit_slots
                    .iter()
                    .filter_map(|s| {
                        if let Slot::Value(v) = s {
                            Some(*v)
                        } else {
                            None
                        }
                    })
                    .collect();
                let mut b = fs.builder();
                let body_b = b.create_block();
                b.branch(value_of(c.raw()), body_b, vec![], exit_b, args);
                fs.current = Some(body_b);
                Join::existing(exit_b, layout)
            })
            .unwrap_or_default()
        }
        None => Join::default(),
    };
    push_frame(FrameKind::Loop, exit, Join::default());
    adjust_depth(1);
    let r = body(hs);
    // Fall-through and `continue`s meet at the latch.
    let mut cont =
        with_tracer(|t| std::mem::take(&mut t.func().frames.last_mut().expect("loop frame").cont))
            .unwrap_or_default();
    if let Flow::Next(s) = r {
        jump_join(&mut cont, &carry::flatten(&s));
    }
    if let Some(slots) = enter_join(&cont) {
        let s: S = carry::rebuild(&slots);
        let next = latch(hs, s);
        jump_join_owned(cont_ref(&header_join), &carry::flatten(&next));
    }
    adjust_depth(-1);
    let frame = pop_frame().expect("loop frame");
    match enter_join(&frame.exit) {
        Some(slots) => Flow::Next(carry::rebuild(&slots)),
        None => Flow::Exit,
    }
}

/// Whether a condition of type `C` will be traced (a `Val<bool>` while tracing).
pub trait CondType {
    /// True if values of this type are traced right now.
    fn traced_now() -> bool;
}
impl CondType for bool {
    fn traced_now() -> bool {
        false
    }
}
impl CondType for Val<bool> {
    fn traced_now() -> bool {
        crate::is_tracing()
    }
}

/// `while cond(state) { state = body(state) }`.
pub fn while_loop<S: Carry, C: Cond + CondType>(
    state: S,
    mut cond: impl FnMut(S) -> C,
    mut body: impl FnMut(S) -> Flow<S>,
) -> Flow<S> {
    if C::traced_now() {
        traced_loop(
            state,
            |s| {
                let c = cond(s);
                Some(Val::from_raw(match c.resolve() {
                    Err(v) => v.as_u32() as u64,
                    Ok(b) => Val::new(b).raw(),
                }))
            },
            body,
            |s| s,
            |_, s| s,
        )
    } else {
        native_loop(state, |s| match cond(s).resolve() {
            Ok(true) => Some(body(s)),
            _ => None,
        })
    }
}

/// `loop { state = body(state) }`: recorded as a traced loop while tracing (it ends only through
/// `break` or `return`), run natively otherwise.
pub fn loop_<S: Carry>(state: S, mut body: impl FnMut(S) -> Flow<S>) -> Flow<S> {
    if crate::is_tracing() {
        traced_loop(state, |_| None, body, |s| s, |_, s| s)
    } else {
        native_loop(state, |s| Some(body(s)))
    }
}

/// Something a `for` loop can iterate: a [`TracedRange`] (recorded as a loop) or any Rust
/// iterator (unrolled at trace time).
pub trait IntoLoop {
    /// The loop variable's type.
    type Item;
    /// Runs the loop.
    fn run_loop<S: Carry>(self, state: S, body: impl FnMut(Self::Item, S) -> Flow<S>) -> Flow<S>;
}

impl<I: IntoIterator> IntoLoop for I {
    type Item = I::Item;
    fn run_loop<S: Carry>(self, state: S, mut body: impl FnMut(I::Item, S) -> Flow<S>) -> Flow<S> {
        let mut it = self.into_iter();
        native_loop(state, |s| it.next().map(|x| body(x, s)))
    }
}

/// `for x in iter { state = body(x, state) }`.
pub fn for_loop<I: IntoLoop, S: Carry>(
    iter: I,
    state: S,
    body: impl FnMut(I::Item, S) -> Flow<S>,
) -> Flow<S> {
    iter.run_loop(state, body)
}

/// A range with at least one traced bound: `start..end` or `start..=end`, stepping by `step`
/// (which must be positive, as with `Iterator::step_by`).
#[derive(Clone, Copy, Debug)]
pub struct TracedRange<T: ScalarValue> {
    start: Val<T>,
    end: Val<T>,
    step: Val<T>,
    inclusive: bool,
}

impl<T: ScalarValue + crate::val::Int> TracedRange<T> {
    /// The same range, advancing by `step` each iteration.
    pub fn step_by(self, step: impl IntoVal<T>) -> TracedRange<T> {
        TracedRange {
            step: step.into_val(),
            ..self
        }
    }
}

impl<T: ScalarValue + crate::val::Int> IntoLoop for TracedRange<T> {
    type Item = Val<T>;
    fn run_loop<S: Carry>(self, state: S, mut body: impl FnMut(Val<T>, S) -> Flow<S>) -> Flow<S> {
        let TracedRange {
            start,
            end,
            step,
            inclusive,
        } = self;
        let below = move |i: Val<T>| if inclusive { i.le(end) } else { i.lt(end) };
        if crate::is_tracing() {
            traced_loop(
                (start, state),
                |(i, _)| Some(below(i)),
                |(i, s)| body(i, s),
                |(_, s)| s,
                |(i, _), s| (i.binary(BinaryOp::Add, step), s),
            )
        } else {
            let mut i = start;
            let mut done = false;
            native_loop(state, |s| {
                if done || below(i).raw() == 0 {
                    return None;
                }
                let cur = i;
                // Stop instead of wrapping around at the type's end (`0..=MAX`).
                let next = i.binary(BinaryOp::Add, step);
                done = next.lt(cur).raw() != 0;
                i = next;
                Some(body(cur, s))
            })
        }
    }
}

/// A range of plain integers, iterated at trace time.
#[derive(Clone, Copy, Debug)]
pub struct HostRange<T> {
    next: T,
    end: T,
    step: T,
    inclusive: bool,
    done: bool,
}

/// Plain integer types usable in ranges.
pub trait HostInt: Copy + PartialOrd + 'static {
    /// One.
    const ONE: Self;
    /// Checked addition.
    fn checked_add_(self, rhs: Self) -> Option<Self>;
    /// Conversion of a step.
    fn from_usize(n: usize) -> Self;
}

macro_rules! host_int {
    ($($t:ty),*) => {$(
        impl HostInt for $t {
            const ONE: Self = 1;
            fn checked_add_(self, rhs: Self) -> Option<Self> { self.checked_add(rhs) }
            fn from_usize(n: usize) -> Self { n as $t }
        }
    )*};
}
host_int!(i8, i16, i32, i64, u8, u16, u32, u64, usize, isize);

impl<T: HostInt> HostRange<T> {
    /// The same range, advancing by `step` each iteration (as `Iterator::step_by`).
    pub fn step_by(self, step: usize) -> HostRange<T> {
        HostRange {
            step: T::from_usize(step.max(1)),
            ..self
        }
    }
}

impl<T: HostInt> Iterator for HostRange<T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        let in_range = if self.inclusive {
            self.next <= self.end
        } else {
            self.next < self.end
        };
        if self.done || !in_range {
            return None;
        }
        let cur = self.next;
        match cur.checked_add_(self.step) {
            Some(n) => self.next = n,
            None => self.done = true,
        }
        Some(cur)
    }
}

/// Bounds that make a range: two plain integers give a [`HostRange`], a `Val` bound gives a
/// [`TracedRange`].
pub trait MakeRange {
    /// The range type.
    type Output;
    /// Builds the range.
    fn make(self, inclusive: bool) -> Self::Output;
}

impl<T: HostInt> MakeRange for (T, T) {
    type Output = HostRange<T>;
    fn make(self, inclusive: bool) -> HostRange<T> {
        HostRange {
            next: self.0,
            end: self.1,
            step: T::ONE,
            inclusive,
            done: false,
        }
    }
}

impl<T: ScalarValue + crate::val::Int + HostOne> MakeRange for (Val<T>, Val<T>) {
    type Output = TracedRange<T>;
    fn make(self, inclusive: bool) -> TracedRange<T> {
        TracedRange {
            start: self.0,
            end: self.1,
            step: Val::new(T::one()),
            inclusive,
        }
    }
}

impl<T: ScalarValue + crate::val::Int + HostOne> MakeRange for (T, Val<T>) {
    type Output = TracedRange<T>;
    fn make(self, inclusive: bool) -> TracedRange<T> {
        (Val::new(self.0), self.1).make(inclusive)
    }
}

impl<T: ScalarValue + crate::val::Int + HostOne> MakeRange for (Val<T>, T) {
    type Output = TracedRange<T>;
    fn make(self, inclusive: bool) -> TracedRange<T> {
        (self.0, Val::new(self.1)).make(inclusive)
    }
}

/// The value one of a scalar type.
pub trait HostOne {
    /// One.
    fn one() -> Self;
}
macro_rules! host_one {
    ($($t:ty),*) => {$( impl HostOne for $t { fn one() -> Self { 1 } } )*};
}
host_one!(i8, i16, i32, i64, u8, u16, u32, u64);

/// `start..end`.
pub fn range<A, B>(start: A, end: B) -> <(A, B) as MakeRange>::Output
where
    (A, B): MakeRange,
{
    (start, end).make(false)
}

/// `start..=end`.
pub fn range_inclusive<A, B>(start: A, end: B) -> <(A, B) as MakeRange>::Output
where
    (A, B): MakeRange,
{
    (start, end).make(true)
}

/// Finds the loop `depth` loops out (0 = innermost) in the current function.
fn loop_frame_index(frames: &[Frame], depth: usize) -> Option<usize> {
    let mut seen = 0;
    for (i, f) in frames.iter().enumerate().rev() {
        match f.kind {
            FrameKind::Function => return None,
            FrameKind::Loop if seen == depth => return Some(i),
            FrameKind::Loop => seen += 1,
        }
    }
    None
}

fn exit_to<X>(depth: usize, slots: Vec<Slot>, is_break: bool) -> Flow<X> {
    let what = if is_break { "break" } else { "continue" };
    let native = with_tracer(|t| {
        let fs = t.func();
        let Some(i) = loop_frame_index(&fs.frames, depth) else {
            t.fail(TraceError::NoEnclosingLoop { what });
            return false;
        };
        if fs.frames[i].traced_depth == fs.traced_depth {
            return true;
        }
        let mut join = std::mem::take(if is_break {
            &mut fs.frames[i].exit
        } else {
            &mut fs.frames[i].cont
        });
        let r = fs.jump_to(&mut join, &slots);
        if is_break {
            fs.frames[i].exit = join;
        } else {
            fs.frames[i].cont = join;
        }
        if let Err(e) = r {
            t.fail(e);
        }
        false
    })
    .unwrap_or(true);
    if native {
        context::set_pending(if is_break {
            Pending::Break { depth, slots }
        } else {
            Pending::Continue { depth, slots }
        });
    }
    Flow::Exit
}

/// `break` out of the loop `depth` loops out (0 = innermost), whose state is `state`.
pub fn brk<S: Carry, X>(depth: usize, state: S) -> Flow<X> {
    exit_to(depth, carry::flatten(&state), true)
}

/// `continue` the loop `depth` loops out (0 = innermost), whose state is `state`.
pub fn cont<S: Carry, X>(depth: usize, state: S) -> Flow<X> {
    exit_to(depth, carry::flatten(&state), false)
}

/// `return value` from the enclosing traced function body (see [`function_body`]).
pub fn ret<R: Carry, X>(value: R) -> Flow<X> {
    let slots = carry::flatten(&value);
    let native = with_tracer(|t| {
        let fs = t.func();
        let Some(i) = fs
            .frames
            .iter()
            .rposition(|f| f.kind == FrameKind::Function)
        else {
            return true;
        };
        if fs.frames[i].traced_depth == fs.traced_depth {
            return true;
        }
        let mut join = std::mem::take(&mut fs.frames[i].exit);
        let r = fs.jump_to(&mut join, &slots);
        fs.frames[i].exit = join;
        if let Err(e) = r {
            t.fail(e);
        }
        false
    })
    .unwrap_or(true);
    if native {
        context::set_pending(Pending::Return { slots });
    }
    Flow::Exit
}

/// The body of a traced function: runs `body`, and merges its early [`ret`]urns with the
/// value of its tail expression.
pub fn function_body<R: Carry>(body: impl FnOnce() -> Flow<R>) -> R {
    let tracing = crate::is_tracing();
    if tracing {
        push_frame(FrameKind::Function, Join::default(), Join::default());
    }
    let value: Option<R> = match body() {
        Flow::Next(v) => Some(v),
        Flow::Exit => match take_pending() {
            Pending::Return { slots } => Some(carry::rebuild(&slots)),
            Pending::None => None,
            Pending::Break { .. } | Pending::Continue { .. } => {
                fail(TraceError::NoEnclosingLoop { what: "break" });
                None
            }
        },
    };
    if tracing {
        if let Some(mut frame) = pop_frame() {
            if frame.exit.block.is_some() {
                if let Some(v) = value {
                    jump_join(&mut frame.exit, &carry::flatten(&v));
                }
                if let Some(slots) = enter_join(&frame.exit) {
                    return carry::rebuild(&slots);
                }
            }
        }
    }
    value.unwrap_or_else(R::unreachable_value)
}

/// The return types of `#[jit]` functions: `Val<T>`, `Ptr<T>` and `()` (what a traced
/// function can return to compiled code, see [`crate::Ret`]; unlike `Ret`, this holds for
/// every scalar `T`, so generic helpers need no extra bound).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a `#[jit]` function",
    label = "not `Val<T>`, `Ptr<T>` or `()`",
    note = "`#[jit]` functions return `Val<T>`, `Ptr<T>` or `()`; plain Rust helpers (without `#[jit]`) can return anything"
)]
pub trait Return: Carry {}
impl<T: ScalarValue> Return for Val<T> {}
impl<T: ScalarValue> Return for Ptr<T> {}
impl Return for () {}

/// Compile-time check that `R` is a [`Return`] type; `#[jit]` names it on the declared return
/// type of every function it rewrites.
pub fn returns<R: Return>() {}

/// Short-circuit logic (`&&`, `||`) over `bool` and `Val<bool>`.
pub trait Logic<B> {
    /// `bool` if both sides are plain, `Val<bool>` otherwise.
    type Output;
    /// `self && rhs()`.
    fn and(self, rhs: impl FnOnce() -> B) -> Self::Output;
    /// `self || rhs()`.
    fn or(self, rhs: impl FnOnce() -> B) -> Self::Output;
}

impl Logic<bool> for bool {
    type Output = bool;
    fn and(self, rhs: impl FnOnce() -> bool) -> bool {
        self && rhs()
    }
    fn or(self, rhs: impl FnOnce() -> bool) -> bool {
        self || rhs()
    }
}

impl Logic<Val<bool>> for bool {
    type Output = Val<bool>;
    fn and(self, rhs: impl FnOnce() -> Val<bool>) -> Val<bool> {
        if self {
            rhs()
        } else {
            Val::new(false)
        }
    }
    fn or(self, rhs: impl FnOnce() -> Val<bool>) -> Val<bool> {
        if self {
            Val::new(true)
        } else {
            rhs()
        }
    }
}

fn short_circuit(
    a: Val<bool>,
    on_true: impl FnOnce() -> Val<bool>,
    on_false: impl FnOnce() -> Val<bool>,
) -> Val<bool> {
    match if_else(
        a,
        (),
        |()| Flow::Next(on_true()),
        |()| Flow::Next(on_false()),
    ) {
        Flow::Next(v) => v,
        Flow::Exit => Val::unreachable_value(),
    }
}

impl<B: IntoVal<bool>> Logic<B> for Val<bool> {
    type Output = Val<bool>;
    fn and(self, rhs: impl FnOnce() -> B) -> Val<bool> {
        short_circuit(self, || rhs().into_val(), || Val::new(false))
    }
    fn or(self, rhs: impl FnOnce() -> B) -> Val<bool> {
        short_circuit(self, || Val::new(true), || rhs().into_val())
    }
}

/// `a && b`, short-circuiting.
pub fn and<A: Logic<B>, B>(a: A, b: impl FnOnce() -> B) -> A::Output {
    a.and(b)
}

/// `a || b`, short-circuiting.
pub fn or<A: Logic<B>, B>(a: A, b: impl FnOnce() -> B) -> A::Output {
    a.or(b)
}

/// Ordering operators over plain and traced values: `bool` for plain operands, `Val<bool>`
/// when either side is traced. Implemented for the values and for references to them:
/// `#[jit]` rewrites `a < b` to `cf::lt(&a, &b)`, which (like the operator) does not move its
/// operands.
#[diagnostic::on_unimplemented(
    message = "cannot compare `{Self}` with `{Rhs}` in traced code",
    note = "both sides must have the same type, or be a `Val<T>` and a `T` (convert with `.cast::<U>()` or `Val::new`)"
)]
pub trait Compare<Rhs> {
    /// The result type.
    type Output;
    /// `<`
    fn lt(self, rhs: Rhs) -> Self::Output;
    /// `<=`
    fn le(self, rhs: Rhs) -> Self::Output;
    /// `>`
    fn gt(self, rhs: Rhs) -> Self::Output;
    /// `>=`
    fn ge(self, rhs: Rhs) -> Self::Output;
}

/// Equality operators over plain and traced values, like [`Compare`] (plain values only need
/// `PartialEq`, so `String == &str` or an enum without an order work as in Rust).
#[diagnostic::on_unimplemented(
    message = "cannot compare `{Self}` with `{Rhs}` in traced code",
    note = "both sides must have the same type, or be a `Val<T>` and a `T` (convert with `.cast::<U>()` or `Val::new`)"
)]
pub trait Equality<Rhs> {
    /// The result type.
    type Output;
    /// `==`
    fn eq(self, rhs: Rhs) -> Self::Output;
    /// `!=`
    fn ne(self, rhs: Rhs) -> Self::Output;
}

impl<T: PartialOrd> Compare<T> for T {
    type Output = bool;
    fn lt(self, rhs: T) -> bool {
        self < rhs
    }
    fn le(self, rhs: T) -> bool {
        self <= rhs
    }
    fn gt(self, rhs: T) -> bool {
        self > rhs
    }
    fn ge(self, rhs: T) -> bool {
        self >= rhs
    }
}

impl<A: PartialEq<B>, B> Equality<B> for A {
    type Output = bool;
    fn eq(self, rhs: B) -> bool {
        self == rhs
    }
    fn ne(self, rhs: B) -> bool {
        self != rhs
    }
}

/// `Compare` and `Equality` for one pair of operand types of scalar `$t`, at least one traced;
/// `$d` is `*` for reference operands.
macro_rules! traced_compare {
    ($t:ty; $lhs:ty, $rhs:ty; $($d:tt)?) => {
        impl Compare<$rhs> for $lhs {
            type Output = Val<bool>;
            fn lt(self, rhs: $rhs) -> Val<bool> { IntoVal::<$t>::into_val($($d)? self).lt($($d)? rhs) }
            fn le(self, rhs: $rhs) -> Val<bool> { IntoVal::<$t>::into_val($($d)? self).le($($d)? rhs) }
            fn gt(self, rhs: $rhs) -> Val<bool> { IntoVal::<$t>::into_val($($d)? self).gt($($d)? rhs) }
            fn ge(self, rhs: $rhs) -> Val<bool> { IntoVal::<$t>::into_val($($d)? self).ge($($d)? rhs) }
        }
        impl Equality<$rhs> for $lhs {
            type Output = Val<bool>;
            fn eq(self, rhs: $rhs) -> Val<bool> { IntoVal::<$t>::into_val($($d)? self).eq($($d)? rhs) }
            fn ne(self, rhs: $rhs) -> Val<bool> { IntoVal::<$t>::into_val($($d)? self).ne($($d)? rhs) }
        }
    };
}

macro_rules! compare_val {
    ($($t:ty),*) => {$(
        traced_compare!($t; Val<$t>, $t;);
        traced_compare!($t; Val<$t>, Val<$t>;);
        traced_compare!($t; $t, Val<$t>;);
        traced_compare!($t; &Val<$t>, &$t; *);
        traced_compare!($t; &Val<$t>, &Val<$t>; *);
        traced_compare!($t; &$t, &Val<$t>; *);
    )*};
}
compare_val!(bool, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

/// `Compare` and `Equality` for pointers (by address), by value or by reference.
macro_rules! compare_ptr {
    ($lhs:ty, $rhs:ty; $($d:tt)?) => {
        impl<T: ScalarValue> Compare<$rhs> for $lhs {
            type Output = Val<bool>;
            fn lt(self, rhs: $rhs) -> Val<bool> { Ptr::lt($($d)? self, $($d)? rhs) }
            fn le(self, rhs: $rhs) -> Val<bool> { Ptr::le($($d)? self, $($d)? rhs) }
            fn gt(self, rhs: $rhs) -> Val<bool> { Ptr::gt($($d)? self, $($d)? rhs) }
            fn ge(self, rhs: $rhs) -> Val<bool> { Ptr::ge($($d)? self, $($d)? rhs) }
        }
        impl<T: ScalarValue> Equality<$rhs> for $lhs {
            type Output = Val<bool>;
            fn eq(self, rhs: $rhs) -> Val<bool> { Ptr::eq($($d)? self, $($d)? rhs) }
            fn ne(self, rhs: $rhs) -> Val<bool> { Ptr::ne($($d)? self, $($d)? rhs) }
        }
    };
}
compare_ptr!(Ptr<T>, Ptr<T>;);
compare_ptr!(&Ptr<T>, &Ptr<T>; *);

/// `a < b`.
pub fn lt<A: Compare<B>, B>(a: A, b: B) -> A::Output {
    a.lt(b)
}
/// `a <= b`.
pub fn le<A: Compare<B>, B>(a: A, b: B) -> A::Output {
    a.le(b)
}
/// `a > b`.
pub fn gt<A: Compare<B>, B>(a: A, b: B) -> A::Output {
    a.gt(b)
}
/// `a >= b`.
pub fn ge<A: Compare<B>, B>(a: A, b: B) -> A::Output {
    a.ge(b)
}
/// `a == b`.
pub fn eq<A: Equality<B>, B>(a: A, b: B) -> A::Output {
    a.eq(b)
}
/// `a != b`.
pub fn ne<A: Equality<B>, B>(a: A, b: B) -> A::Output {
    a.ne(b)
}

/// Reading `ptr[index]` through a [`Ptr`]. `#[jit]` rewrites `a[i]` in value position to
/// `a.nacre_index(i)`, which resolves to this trait or to [`HostIndexRead`].
pub trait PtrIndexRead<I> {
    /// The element.
    type Output;
    /// Reads the element.
    fn nacre_index(&self, index: I) -> Self::Output;
}

/// An index already resolved to its traced handle and its direct-mode value. A plain integer
/// index creates an IR constant in `index_raw`, which must not happen while `Ptr::offset`
/// holds the tracer, so the index traits resolve it first.
#[derive(Copy, Clone)]
struct ResolvedIndex {
    raw: u64,
    direct: i64,
}

impl ResolvedIndex {
    fn new(index: impl Index) -> ResolvedIndex {
        ResolvedIndex {
            raw: index.index_raw(),
            direct: index.index_direct(),
        }
    }
}

impl Index for ResolvedIndex {
    fn index_raw(self) -> u64 {
        self.raw
    }
    fn index_direct(self) -> i64 {
        self.direct
    }
}

impl<T: ScalarValue, I: Index> PtrIndexRead<I> for Ptr<T> {
    type Output = Val<T>;
    fn nacre_index(&self, index: I) -> Val<T> {
        self.load(ResolvedIndex::new(index))
    }
}

/// Reading `container[index]` (a `Copy` element) for Rust containers.
pub trait HostIndexRead<I> {
    /// The element.
    type Output;
    /// Reads the element.
    fn nacre_index(&self, index: I) -> Self::Output;
}

impl<C: ?Sized + std::ops::Index<I>, I> HostIndexRead<I> for C
where
    C::Output: Copy + Sized,
{
    type Output = C::Output;
    fn nacre_index(&self, index: I) -> C::Output {
        self[index]
    }
}

/// Writing `ptr[index] = value` through a [`Ptr`] (which need not be `mut`).
pub trait PtrIndexWrite<I, V> {
    /// Stores the element.
    fn nacre_index_set(&self, index: I, value: V);
}

impl<T: ScalarValue, I: Index, V: IntoVal<T>> PtrIndexWrite<I, V> for Ptr<T> {
    fn nacre_index_set(&self, index: I, value: V) {
        self.store(ResolvedIndex::new(index), value)
    }
}

/// Writing `container[index] = value` for Rust containers.
pub trait HostIndexWrite<I, V> {
    /// Stores the element.
    fn nacre_index_set(&mut self, index: I, value: V);
}

impl<C: ?Sized + std::ops::IndexMut<I>, I> HostIndexWrite<I, C::Output> for C
where
    C::Output: Sized,
{
    fn nacre_index_set(&mut self, index: I, value: C::Output) {
        self[index] = value;
    }
}

pub use crate::extern_fn::{
    call, extern_fn0, extern_fn1, extern_fn2, extern_fn3, extern_fn4, extern_fn5, extern_fn6,
    invoke,
};
