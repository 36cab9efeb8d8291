//! [`Carry`]: values that flow through traced control flow.
//!
//! When a variable is assigned inside a traced `if` or loop, its values on the different paths
//! meet at a merge block; traced values (`Val`, `Ptr`) become the block's parameters. Plain
//! host values (integers, `bool`, floats, `usize`) can be carried too, as long as every path
//! agrees on their value (they are trace-time constants); a disagreement is a
//! [`crate::TraceError::HostValueDiverges`]. Anything else (a `String`, a `Vec`) cannot be
//! carried, which is a compile error.
//!
//! A carried `Val` or `Ptr` must belong to the function being traced (see
//! [`crate::identity`]): one of another trace, or one made outside any trace, fails the trace
//! with [`crate::TraceError::ForeignValue`] naming how it was carried ("carried into a loop",
//! "return value", ...).

use crate::context::{current_trace, with_tracer};
use crate::identity::Handle;
use crate::ptr::Ptr;
use crate::val::Val;
use nacre_ir::half::{bf16, f16};
use nacre_ir::semantics::ScalarValue;
use nacre_ir::Value;

/// One carried scalar: an IR value while tracing, or plain bits.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Slot {
    /// A traced value.
    Value(Value),
    /// A host value (or a `Val` in direct mode), as bits.
    Bits(u128),
}

/// A value that can flow through traced control flow (see the module docs).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be carried through traced control flow",
    label = "assigned inside a traced `if`/loop or returned from it, but not carriable",
    note = "carriable types are `Val<T>`, `Ptr<T>`, plain scalars (`i32`, `bool`, `usize`, ...), tuples and arrays of them, and structs of them with `#[derive(nacre::Carry)]`"
)]
pub trait Carry: Copy + 'static {
    /// How many slots [`Carry::flatten`] appends (the same for every value of the type).
    const SLOTS: usize;
    /// Appends this value's slots.
    fn flatten(&self, out: &mut Vec<Slot>);
    /// [`Carry::flatten`] on behalf of `operation` ("carried into a loop", "return value",
    /// ...), the name under which a `Val` or `Ptr` of another trace is reported. The default
    /// (for types holding no traced value) ignores the name.
    fn flatten_as(&self, out: &mut Vec<Slot>, operation: &'static str) {
        let _ = operation;
        self.flatten(out);
    }
    /// Rebuilds a value from slots produced by [`Carry::flatten`] of the same type.
    fn rebuild(slots: &mut std::slice::Iter<'_, Slot>) -> Self;
    /// A value of this type for code that can never run (after a `return` in every path);
    /// it is only used to keep tracing well-formed.
    fn unreachable_value() -> Self;
}

/// The operation a foreign value met by a plain [`flatten`] is reported under.
const CARRIED: &str = "carried through traced control flow";

/// Flattens a carried value into a new vector.
pub fn flatten<C: Carry>(c: &C) -> Vec<Slot> {
    let mut out = Vec::new();
    c.flatten(&mut out);
    out
}

/// [`flatten`] on behalf of `operation` ("carried into a loop", "return value", ...), the
/// name under which a value of another trace is reported.
pub(crate) fn flatten_for<C: Carry>(c: &C, operation: &'static str) -> Vec<Slot> {
    let mut out = Vec::new();
    c.flatten_as(&mut out, operation);
    out
}

/// The slot of a traced value (of IR type `ty()`) carried by `operation`: its IR value while
/// tracing (checked to belong to the function being traced), its bits otherwise.
#[inline]
fn carried_slot(h: Handle, ty: fn() -> nacre_ir::Type, operation: &'static str) -> Slot {
    match with_tracer(|t| t.value(h, operation, ty)) {
        Some(v) => Slot::Value(v),
        None => Slot::Bits(h.bits(operation)),
    }
}

/// The handle of a rebuilt traced value: an IR value of the function being traced, or bits.
#[inline]
fn rebuilt_handle(slot: Slot) -> Handle {
    match slot {
        Slot::Value(v) => Handle::traced(v, current_trace()),
        Slot::Bits(b) => Handle::direct(b),
    }
}

/// Rebuilds a carried value from a slice of slots.
pub fn rebuild<C: Carry>(slots: &[Slot]) -> C {
    C::rebuild(&mut slots.iter())
}

fn next_slot(slots: &mut std::slice::Iter<'_, Slot>) -> Slot {
    // A mismatch here is an internal bug: slots always come from `flatten` of the same type.
    *slots.next().expect("carried slots match the carried type")
}

fn slot_raw(slot: Slot) -> u128 {
    match slot {
        Slot::Value(v) => u128::from(v.as_u32()),
        Slot::Bits(b) => b,
    }
}

impl<T: ScalarValue> Carry for Val<T> {
    const SLOTS: usize = 1;
    fn flatten(&self, out: &mut Vec<Slot>) {
        self.flatten_as(out, CARRIED);
    }
    fn flatten_as(&self, out: &mut Vec<Slot>, operation: &'static str) {
        out.push(carried_slot(self.handle(), Val::<T>::ir_type, operation));
    }
    fn rebuild(slots: &mut std::slice::Iter<'_, Slot>) -> Self {
        Val::from_handle(rebuilt_handle(next_slot(slots)))
    }
    fn unreachable_value() -> Self {
        Val::new(T::from_bits(0))
    }
}

impl<T: crate::ptr::Element> Carry for Ptr<T> {
    const SLOTS: usize = 1;
    fn flatten(&self, out: &mut Vec<Slot>) {
        self.flatten_as(out, CARRIED);
    }
    fn flatten_as(&self, out: &mut Vec<Slot>, operation: &'static str) {
        out.push(carried_slot(self.handle(), Ptr::<T>::ir_type, operation));
    }
    fn rebuild(slots: &mut std::slice::Iter<'_, Slot>) -> Self {
        Ptr::from_handle(rebuilt_handle(next_slot(slots)))
    }
    fn unreachable_value() -> Self {
        Ptr::from_handle(crate::val::constant_raw(Ptr::<T>::ir_type(), 0))
    }
}

macro_rules! host_carry {
    ($($t:ty),*) => {$(
        impl Carry for $t {
            const SLOTS: usize = 1;
            fn flatten(&self, out: &mut Vec<Slot>) {
                out.push(Slot::Bits(ScalarValue::to_bits(*self)));
            }
            fn rebuild(slots: &mut std::slice::Iter<'_, Slot>) -> Self {
                <$t as ScalarValue>::from_bits(slot_raw(next_slot(slots)))
            }
            fn unreachable_value() -> Self {
                <$t as ScalarValue>::from_bits(0)
            }
        }
    )*};
}
host_carry!(bool, i8, i16, i32, i64, i128, u8, u16, u32, u64, u128, f32, f64, f16, bf16);

impl Carry for usize {
    const SLOTS: usize = 1;
    fn flatten(&self, out: &mut Vec<Slot>) {
        out.push(Slot::Bits(*self as u128));
    }
    fn rebuild(slots: &mut std::slice::Iter<'_, Slot>) -> Self {
        slot_raw(next_slot(slots)) as usize
    }
    fn unreachable_value() -> Self {
        0
    }
}

impl Carry for isize {
    const SLOTS: usize = 1;
    fn flatten(&self, out: &mut Vec<Slot>) {
        out.push(Slot::Bits(*self as u64 as u128));
    }
    fn rebuild(slots: &mut std::slice::Iter<'_, Slot>) -> Self {
        slot_raw(next_slot(slots)) as isize
    }
    fn unreachable_value() -> Self {
        0
    }
}

impl Carry for () {
    const SLOTS: usize = 0;
    fn flatten(&self, _: &mut Vec<Slot>) {}
    fn rebuild(_: &mut std::slice::Iter<'_, Slot>) -> Self {}
    fn unreachable_value() -> Self {}
}

impl<C: Carry, const N: usize> Carry for [C; N] {
    const SLOTS: usize = C::SLOTS * N;
    fn flatten(&self, out: &mut Vec<Slot>) {
        self.iter().for_each(|c| c.flatten(out));
    }
    fn flatten_as(&self, out: &mut Vec<Slot>, operation: &'static str) {
        self.iter().for_each(|c| c.flatten_as(out, operation));
    }
    fn rebuild(slots: &mut std::slice::Iter<'_, Slot>) -> Self {
        std::array::from_fn(|_| C::rebuild(slots))
    }
    fn unreachable_value() -> Self {
        std::array::from_fn(|_| C::unreachable_value())
    }
}

macro_rules! tuple_carry {
    ($($n:ident),+) => {
        impl<$($n: Carry),+> Carry for ($($n,)+) {
            const SLOTS: usize = 0 $(+ $n::SLOTS)+;
            #[allow(non_snake_case)]
            fn flatten(&self, out: &mut Vec<Slot>) {
                let ($($n,)+) = self;
                $($n.flatten(out);)+
            }
            #[allow(non_snake_case)]
            fn flatten_as(&self, out: &mut Vec<Slot>, operation: &'static str) {
                let ($($n,)+) = self;
                $($n.flatten_as(out, operation);)+
            }
            fn rebuild(slots: &mut std::slice::Iter<'_, Slot>) -> Self {
                ($($n::rebuild(slots),)+)
            }
            fn unreachable_value() -> Self {
                ($($n::unreachable_value(),)+)
            }
        }
    };
}
tuple_carry!(A);
tuple_carry!(A, B);
tuple_carry!(A, B, C);
tuple_carry!(A, B, C, D);
tuple_carry!(A, B, C, D, E);
tuple_carry!(A, B, C, D, E, F);
tuple_carry!(A, B, C, D, E, F, G);
tuple_carry!(A, B, C, D, E, F, G, H);
tuple_carry!(A, B, C, D, E, F, G, H, I);
tuple_carry!(A, B, C, D, E, F, G, H, I, J);
tuple_carry!(A, B, C, D, E, F, G, H, I, J, K);
tuple_carry!(A, B, C, D, E, F, G, H, I, J, K, L);
tuple_carry!(A, B, C, D, E, F, G, H, I, J, K, L, M);
tuple_carry!(A, B, C, D, E, F, G, H, I, J, K, L, M, N);
tuple_carry!(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O);
tuple_carry!(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P);

/// The slot count of `c`'s type ([`Carry::SLOTS`]), for code that names a value but not its
/// type (`#[jit]`'s [`crate::cf::carrying`]).
pub fn slot_count<C: Carry>(_: &C) -> usize {
    C::SLOTS
}
