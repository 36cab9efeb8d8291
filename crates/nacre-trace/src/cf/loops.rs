//! Loops: `while` ([`while_loop`]), `loop` ([`loop_`]) and `for` ([`for_loop`] over an
//! [`IntoLoop`]), and the two ways of running them: natively, iteration by iteration at trace
//! time (unrolled), or recorded as a traced loop (header, body and latch blocks).

use super::branch::{Cond, CondType};
use super::exit::materialize;
use super::frames::{adjust_depth, enter_join, jump_join, pop_frame, push_frame, take_loop_cont};
use super::Flow;
use crate::carry::{self, Carry, Slot};
use crate::context::{self, current_trace, take_pending, with_tracer, FrameKind, Join, Pending};
use crate::identity::Handle;
use crate::val::Val;

/// How a loop's state entering it is reported if it belongs to another trace.
const INTO_LOOP: &str = "carried into a loop";
/// How a loop's state going to its next iteration is reported.
const AROUND_LOOP: &str = "carried to the next iteration of a loop";
/// How a loop's state leaving it is reported.
const OUT_OF_LOOP: &str = "carried out of a loop";

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
/// Drives a loop that runs natively (host condition or iterator, or direct mode). `step` runs
/// one iteration (`None` when the loop is over).
pub(super) fn native_loop<S: Carry>(
    state: S,
    mut step: impl FnMut(S) -> Option<Flow<S>>,
) -> Flow<S> {
    let tracing = crate::is_tracing();
    if tracing {
        push_frame(FrameKind::Loop, Join::default(), Join::default());
    }
    let mut s = state;
    // `None` while the loop is running or after it ended normally with `s`.
    let mut end: Option<Outcome<S>> = None;
    while let Some(r) = step(s) {
        let outcome = iteration_outcome(r);
        // A `continue` under a traced condition jumped to this iteration's continue block:
        // every path of this iteration is then merged there and the loop goes on.
        let cont = if tracing {
            take_loop_cont()
        } else {
            Join::default()
        };
        if cont.block.is_some() {
            match merge_at_cont(cont, outcome) {
                Some(next) => {
                    s = next;
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
    if tracing {
        end_traced_frame(end)
    } else {
        end_native(end)
    }
}

/// How an iteration that ended with `r` ended for its loop: a `break` or `continue` of this
/// loop is taken here, one of an enclosing loop is re-targeted to the frame stack without it.
fn iteration_outcome<S: Carry>(r: Flow<S>) -> Outcome<S> {
    match r {
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
    }
}

/// Merges the other paths of an iteration at `cont`, the continue block a traced `continue`
/// jumped to, and continues there: the next iteration's state, or `None` if no path reaches it.
fn merge_at_cont<S: Carry>(mut cont: Join, outcome: Outcome<S>) -> Option<S> {
    match outcome {
        Outcome::Fall(n) => jump_join(&mut cont, &carry::flatten_for(&n, AROUND_LOOP)),
        Outcome::Break(n) => jump_loop_exit(&carry::flatten_for(&n, OUT_OF_LOOP)),
        Outcome::Outer(p) => materialize(p, 1),
        Outcome::Dead => {}
    }
    enter_join(&cont).map(|slots| carry::rebuild(&slots))
}

/// Jumps to the exit block of the innermost loop frame.
fn jump_loop_exit(slots: &[Slot]) {
    with_tracer(|t| {
        let fs = t.func();
        let mut exit = std::mem::take(&mut fs.frames.last_mut().expect("loop frame").exit);
        let r = fs.jump_to(&mut exit, slots);
        fs.frames.last_mut().expect("loop frame").exit = exit;
        if let Err(e) = r {
            t.fail(e);
        }
    })
    .unwrap_or(())
}

/// How a native loop that no traced `break` left ends.
fn end_native<S>(end: Outcome<S>) -> Flow<S> {
    match end {
        Outcome::Fall(s) | Outcome::Break(s) => Flow::Next(s),
        Outcome::Outer(p) => {
            context::set_pending(p);
            Flow::Exit
        }
        Outcome::Dead => Flow::Exit,
    }
}

/// Ends a native loop while tracing: pops its frame and, if traced `break`s reached its exit
/// block, merges the other paths there and continues there.
fn end_traced_frame<S: Carry>(end: Outcome<S>) -> Flow<S> {
    let frame = pop_frame().expect("loop frame");
    let mut exit = frame.exit;
    if exit.block.is_none() {
        return end_native(end);
    }
    // Traced `break`s reach the exit block: merge the other paths there too.
    match end {
        Outcome::Fall(s) | Outcome::Break(s) => {
            jump_join(&mut exit, &carry::flatten_for(&s, OUT_OF_LOOP))
        }
        Outcome::Outer(p) => materialize(p, 0),
        Outcome::Dead => {}
    }
    match enter_join(&exit) {
        Some(slots) => Flow::Next(carry::rebuild(&slots)),
        None => Flow::Exit,
    }
}

/// A copy of `j` (the header's join, jumped to again from the latch).
fn cont_ref(j: &Join) -> Join {
    Join {
        block: j.block,
        layout: j.layout.clone(),
    }
}

/// Jumps from the current position to `join`, which is consumed.
fn jump_join_owned(mut join: Join, slots: &[Slot]) {
    jump_join(&mut join, slots)
}

/// Records a traced loop: `header(state)`; `cond` evaluated in the header (`None` for an
/// infinite loop); `body` runs in the body block and falls through to `latch`, which computes
/// the next state (for `for` loops, the induction step) and jumps back to the header.
pub(super) fn traced_loop<S: Carry, H: Carry>(
    state: H,
    cond: impl FnOnce(H) -> Option<Val<bool>>,
    body: impl FnOnce(H) -> Flow<S>,
    split: impl Fn(H) -> S,
    latch: impl FnOnce(H, S) -> H,
) -> Flow<S> {
    let slots = carry::flatten_for(&state, INTO_LOOP);
    let header_join = jump_to_header(&slots);
    let hs: H = carry::rebuild(&enter_join(&header_join).unwrap_or(slots));
    let c = cond(hs);
    let exit = match c {
        Some(c) => branch_to_body(c, &carry::flatten_for(&split(hs), OUT_OF_LOOP)),
        None => Join::default(),
    };
    push_frame(FrameKind::Loop, exit, Join::default());
    adjust_depth(1);
    let r = body(hs);
    // Fall-through and `continue`s meet at the latch.
    let mut cont = take_loop_cont();
    if let Flow::Next(s) = r {
        jump_join(&mut cont, &carry::flatten_for(&s, AROUND_LOOP));
    }
    if let Some(slots) = enter_join(&cont) {
        let s: S = carry::rebuild(&slots);
        let next = latch(hs, s);
        jump_join_owned(
            cont_ref(&header_join),
            &carry::flatten_for(&next, AROUND_LOOP),
        );
    }
    adjust_depth(-1);
    let frame = pop_frame().expect("loop frame");
    match enter_join(&frame.exit) {
        Some(slots) => Flow::Next(carry::rebuild(&slots)),
        None => Flow::Exit,
    }
}

/// Creates a traced loop's header block for the state `slots` and jumps to it; returns its join.
fn jump_to_header(slots: &[Slot]) -> Join {
    with_tracer(|t| {
        let fs = t.func();
        let (block, layout) = fs.block_for(slots);
        let mut j = Join::existing(block, layout);
        if let Err(e) = fs.jump_to(&mut j, slots) {
            t.fail(e);
        }
        j
    })
    .expect("traced loops are only recorded while tracing")
}

/// Ends a traced loop's header with a branch on `c` to a new body block (where recording
/// continues) or to the exit block, which receives `exit_slots`; returns the exit's join.
fn branch_to_body(c: Val<bool>, exit_slots: &[Slot]) -> Join {
    with_tracer(|t| {
        let c = t.value(c.handle(), "loop condition", Val::<bool>::ir_type);
        let fs = t.func();
        let (exit_b, layout) = fs.block_for(exit_slots);
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
        b.branch(c, body_b, vec![], exit_b, args);
        fs.current = Some(body_b);
        Join::existing(exit_b, layout)
    })
    .unwrap_or_default()
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
                Some(match c.resolve("loop condition") {
                    Err(v) => Val::from_handle(Handle::traced(v, current_trace())),
                    Ok(b) => Val::new(b),
                })
            },
            body,
            |s| s,
            |_, s| s,
        )
    } else {
        native_loop(state, |s| match cond(s).resolve("loop condition") {
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

/// Something a `for` loop can iterate: a [`TracedRange`](super::TracedRange) (recorded as a
/// loop) or any Rust iterator (unrolled at trace time).
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
