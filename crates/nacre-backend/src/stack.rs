//! Stack limits for native code: the check that turns runaway IR recursion into
//! [`Trap::StackOverflow`](nacre_ir::Trap::StackOverflow) instead of a crash.
//!
//! Native backends run IR calls as machine calls on the caller's thread stack, so unbounded
//! recursion would run into the thread's guard page and abort the process. Every unbounded
//! chain of native frames passes through a function on a cycle of the call graph
//! ([`nacre_ir::analysis::CallGraph::is_recursive`]), so native backends call
//! [`nacre_stack_ok`] on entry to each recursive function (and only those: non-recursive
//! functions pay nothing). When it returns 0 the function stores
//! [`Trap::StackOverflow`](nacre_ir::Trap::StackOverflow) into its status word and returns,
//! and its callers propagate the trap as after any other trap.
//!
//! The check compares the address of a local of [`nacre_stack_ok`] (the current stack depth,
//! within a few bytes of the caller's frame) with the lowest usable address of the current
//! stack plus [`STACK_MARGIN`]. The stack's bounds come from the `stacker` crate
//! ([`stacker::remaining_stack`]), which asks the OS for the current thread's stack once per
//! thread and follows stacks switched by `stacker::grow`; the margin leaves room for what runs
//! below the last checked frame: the non-recursive callees of that frame, the external Rust
//! functions they call, and the trap path.
//!
//! Asking `stacker` on every call would cost a call into its assembly helper and a lazily
//! initialised thread-local per check, so each thread caches the limit together with the
//! highest stack address seen with that limit: a check between the two is answered from the
//! cache (two comparisons); any other one (the first on a thread, a frame above the highest
//! seen so far, a stack switched by `stacker::grow`, or too little stack left) asks `stacker`
//! again and refreshes the cache. Where `stacker` cannot tell the stack's bounds, the check
//! always passes (recursion is then bounded only by the OS, as without the check).

use std::cell::Cell;

/// Bytes of stack that must remain below a recursive function's frame for the function to
/// run: room for its non-recursive callees, the external functions they call and the trap
/// path. The limit is the lowest usable address of the thread's stack plus this margin.
pub const STACK_MARGIN: usize = 64 * 1024;

/// The signature of the stack check that native code calls on entry to a recursive function:
/// nonzero when enough stack remains, 0 when the function must trap with
/// [`Trap::StackOverflow`](nacre_ir::Trap::StackOverflow).
pub type StackCheckFn = extern "C" fn() -> u8;

thread_local! {
    /// This thread's cached `(limit, top)`: a stack address above `limit` (the lowest usable
    /// address plus [`STACK_MARGIN`]) and at most `top` (the highest address checked against
    /// this limit) has enough stack left. `(usize::MAX, 0)` until the first check, so that the
    /// first check asks `stacker`.
    static LIMIT: Cell<(usize, usize)> = const { Cell::new((usize::MAX, 0)) };
}

/// The address of a local of the calling frame: the current depth of the stack.
#[inline(always)]
fn stack_address() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

/// The stack check native code calls on entry to a recursive function (a [`StackCheckFn`]):
/// 1 when at least [`STACK_MARGIN`] bytes of the current thread's stack remain below the
/// caller, 0 when they do not. Never unwinds; safe to call from any thread.
pub extern "C" fn nacre_stack_ok() -> u8 {
    let here = stack_address();
    let (limit, top) = LIMIT.get();
    if here > limit && here <= top {
        return 1;
    }
    refresh(here)
}

/// The slow path of [`nacre_stack_ok`]: asks `stacker` for the remaining stack and refreshes
/// the thread's cached limit.
#[cold]
#[inline(never)]
fn refresh(here: usize) -> u8 {
    let Some(remaining) = remaining_stack() else {
        // The stack's bounds are unknown here: never refuse, never ask again.
        LIMIT.set((0, usize::MAX));
        return 1;
    };
    let limit = here.saturating_sub(remaining).saturating_add(STACK_MARGIN);
    let (cached, top) = LIMIT.get();
    let top = if cached == limit { top.max(here) } else { here };
    LIMIT.set((limit, top));
    u8::from(here > limit)
}

/// The bytes of stack left on this thread, where the OS tells.
#[cfg(not(target_vendor = "apple"))]
fn remaining_stack() -> Option<usize> {
    stacker::remaining_stack()
}

/// On Apple targets Nacre does not use `stacker` (its assembly does not build when the macOS
/// layer is type-checked from Linux): the bounds are unknown and the check passes.
#[cfg(target_vendor = "apple")]
fn remaining_stack() -> Option<usize> {
    None
}

/// The address of [`nacre_stack_ok`], for code generators that call it through a pointer.
pub fn stack_check_address() -> usize {
    nacre_stack_ok as StackCheckFn as usize
}

/// Bytes of stack left below the caller before [`nacre_stack_ok`] refuses (0 when it would
/// refuse now); `None` where the stack's bounds are unknown. For tests and diagnostics.
pub fn stack_headroom() -> Option<usize> {
    let remaining = remaining_stack()?;
    Some(remaining.saturating_sub(STACK_MARGIN))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recurses (in Rust) until the check refuses; returns the depth reached and the stack
    /// that `stacker` says remained there.
    #[inline(never)]
    fn descend(depth: usize) -> (usize, usize) {
        if nacre_stack_ok() == 0 {
            return (
                depth,
                stacker::remaining_stack().expect("known on this platform"),
            );
        }
        // A frame of a few hundred bytes, kept alive across the call.
        let pad = std::hint::black_box([depth as u8; 256]);
        let d = descend(depth + 1);
        std::hint::black_box(&pad);
        d
    }

    #[test]
    fn the_check_passes_with_room_left() {
        assert_eq!(nacre_stack_ok(), 1);
        // Cached now: still passes.
        assert_eq!(nacre_stack_ok(), 1);
        if let Some(room) = stack_headroom() {
            assert!(room > 0);
        }
    }

    #[test]
    fn deep_rust_recursion_is_refused_at_the_margin() {
        let mut depths = Vec::new();
        for size in [256 * 1024, 1024 * 1024] {
            let (depth, left) = std::thread::Builder::new()
                .stack_size(size)
                .spawn(|| descend(0))
                .expect("spawn")
                .join()
                .expect("the thread ran to completion (no overflow)");
            // Refused once the margin is reached, not before (within a frame or two).
            assert!(
                (STACK_MARGIN - 4096..=STACK_MARGIN + 4096).contains(&left),
                "refused with {left} bytes left on a {size}-byte stack"
            );
            depths.push(depth);
        }
        // The limit follows the thread: more stack, deeper recursion.
        assert!(depths[0] > 100 && depths[1] > 2 * depths[0], "{depths:?}");
    }

    #[test]
    fn the_limit_is_per_thread() {
        // A thread with a small stack, then the test thread again: each has its own cache.
        let small = std::thread::Builder::new()
            .stack_size(128 * 1024)
            .spawn(|| (descend(0).0, nacre_stack_ok()))
            .expect("spawn")
            .join()
            .expect("join");
        assert_eq!(small.1, 1, "back at the top of the thread's stack");
        assert!(descend(0).0 > small.0);
    }

    #[test]
    fn the_address_is_the_function() {
        let f: StackCheckFn = nacre_stack_ok;
        assert_eq!(stack_check_address(), f as usize);
    }
}
