//! The tracer state that the control-flow constructs share: joins (the blocks where paths
//! meet), the current block, the traced nesting depth and the frame stack of enclosing loops
//! and function bodies.

use crate::carry::Slot;
use crate::context::{with_tracer, Frame, FrameKind, Join};
use crate::error::TraceError;

/// Records `e` as the trace's failure.
pub(super) fn fail(e: TraceError) {
    with_tracer(|t| t.fail(e));
}

/// Jumps from the current position to `join` (recording an error if the values disagree).
pub(super) fn jump_join(join: &mut Join, slots: &[Slot]) {
    with_tracer(|t| {
        let r = t.func().jump_to(join, slots);
        if let Err(e) = r {
            t.fail(e);
        }
    });
}

/// Continues at `join`, returning its slots, or marks the position dead.
pub(super) fn enter_join(join: &Join) -> Option<Vec<Slot>> {
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

/// Continues recording in `block`.
pub(super) fn set_current(block: nacre_ir::Block) {
    with_tracer(|t| t.func().current = Some(block));
}

/// Changes the traced nesting depth (the number of enclosing traced constructs) by `delta`.
pub(super) fn adjust_depth(delta: i32) {
    with_tracer(|t| {
        let fs = t.func();
        fs.traced_depth = fs.traced_depth.wrapping_add_signed(delta);
    });
}

/// Pushes a frame for a loop or a function body, at the current traced depth.
pub(super) fn push_frame(kind: FrameKind, exit: Join, cont: Join) {
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

/// Pops the innermost frame.
pub(super) fn pop_frame() -> Option<Frame> {
    with_tracer(|t| t.func().frames.pop()).flatten()
}

/// Takes the innermost loop frame's continue join (where traced `continue`s went), leaving an
/// empty one.
pub(super) fn take_loop_cont() -> Join {
    with_tracer(|t| std::mem::take(&mut t.func().frames.last_mut().expect("loop frame").cont))
        .unwrap_or_default()
}
