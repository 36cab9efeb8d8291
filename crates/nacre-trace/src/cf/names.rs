//! The variables a construct carries, named for errors: `#[jit]` wraps each traced construct
//! that carries state in [`carrying`], so that a host variable whose values disagree at a merge
//! ([`crate::TraceError::HostValueDiverges`]) is reported with the variables, the construct and
//! its place in the user's code.

use std::cell::RefCell;

/// A construct being traced and the variables it carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Carrying {
    /// `if`, `while`, `loop` or `for`.
    pub construct: &'static str,
    /// The carried variables, comma-separated, in order of first assignment.
    pub variables: &'static str,
    /// How many slots each variable spans, in the same order.
    pub slots: Vec<usize>,
    /// The source file of the construct.
    pub file: &'static str,
    /// Its line.
    pub line: u32,
}

thread_local! {
    static STACK: RefCell<Vec<Carrying>> = const { RefCell::new(Vec::new()) };
}

/// Names the variables of the construct about to run (and the slots each spans,
/// [`crate::Carry::SLOTS`]), until the guard drops. Only while a trace is recorded (the only
/// time the names are read); a no-op otherwise.
pub fn carrying(
    construct: &'static str,
    variables: &'static str,
    slots: &[usize],
    file: &'static str,
    line: u32,
) -> CarryingGuard {
    let pushed = crate::is_tracing();
    if pushed {
        STACK.with(|s| {
            s.borrow_mut().push(Carrying {
                construct,
                variables,
                slots: slots.to_vec(),
                file,
                line,
            })
        });
    }
    CarryingGuard { pushed }
}

/// Ends a [`carrying`] scope when dropped.
#[derive(Debug)]
pub struct CarryingGuard {
    pushed: bool,
}

impl Drop for CarryingGuard {
    fn drop(&mut self) {
        if self.pushed {
            STACK.with(|s| s.borrow_mut().pop());
        }
    }
}

/// The innermost construct being traced, if `#[jit]` named it.
pub(crate) fn innermost() -> Option<Carrying> {
    STACK.with(|s| s.borrow().last().cloned())
}

impl Carrying {
    /// The variable that slot `k` of the construct's carried state belongs to (`None` past
    /// the variables: the value the construct yields).
    pub fn variable_of_slot(&self, k: usize) -> Option<&'static str> {
        let mut end = 0;
        for (name, n) in self.variables.split(", ").zip(&self.slots) {
            end += n;
            if k < end {
                return Some(name);
            }
        }
        None
    }
}
