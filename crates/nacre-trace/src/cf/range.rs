//! Ranges for `for` loops: [`range`] and [`range_inclusive`] make a [`HostRange`] from two
//! plain integers (iterated at trace time) or a [`TracedRange`] when a bound is a `Val`
//! (recorded as a loop with an induction variable).

use super::loops::{native_loop, traced_loop};
use super::{Flow, IntoLoop};
use crate::carry::Carry;
use crate::val::{IntoVal, Val};
use nacre_ir::semantics::ScalarValue;
use nacre_ir::BinaryOp;

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
                if done || below(i).bits("loop condition") == 0 {
                    return None;
                }
                let cur = i;
                // Stop instead of wrapping around at the type's end (`0..=MAX`).
                let next = i.binary(BinaryOp::Add, step);
                done = next.lt(cur).bits("loop condition") != 0;
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
