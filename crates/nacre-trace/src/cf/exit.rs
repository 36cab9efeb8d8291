//! Non-local exits: `break` ([`brk`]), `continue` ([`cont`]) and `return` ([`ret`]). Out of
//! natively run constructs they travel as a pending exit in a [`Flow::Exit`]; out of traced ones
//! they are recorded as jumps to their target's exit or continue block.

use super::Flow;
use crate::carry::{self, Carry, Slot};
use crate::context::{self, with_tracer, Frame, FrameKind, Pending};
use crate::error::TraceError;

/// Records a pending native exit as an IR jump to its target (used when other paths stay
/// alive, so the exit can no longer travel natively). `depth` counts loop frames from the top
/// of the frame stack, skipping `skip` frames.
pub(super) fn materialize(p: Pending, skip: usize) {
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
    exit_to(
        depth,
        carry::flatten_for(&state, "carried out of a loop by `break`"),
        true,
    )
}

/// `continue` the loop `depth` loops out (0 = innermost), whose state is `state`.
pub fn cont<S: Carry, X>(depth: usize, state: S) -> Flow<X> {
    let slots = carry::flatten_for(&state, "carried to the next iteration by `continue`");
    exit_to(depth, slots, false)
}

/// `return value` from the enclosing traced function body (see
/// [`function_body`](super::function_body)).
pub fn ret<R: Carry, X>(value: R) -> Flow<X> {
    let slots = carry::flatten_for(&value, "return value");
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
