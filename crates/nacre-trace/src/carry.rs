//! [`Carry`]: values that flow through traced control flow.
//!
//! When a variable is assigned inside a traced `if` or loop, its values on the different paths
//! meet at a merge block; traced values (`Val`, `Ptr`) become the block's parameters. Plain
//! host values (integers, `bool`, floats, `usize`) can be carried too, as long as every path
//! agrees on their value (they are trace-time constants); a disagreement is a
//! [`crate::TraceError::HostValueDiverges`]. Anything else (a `String`, a `Vec`) cannot be
//! carried, which is a compile error.

use crate::ptr::Ptr;
use crate::val::Val;
use nacre_ir::semantics::ScalarValue;
use nacre_ir::Value;

/// One carried scalar: an IR value while tracing, or plain bits.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Slot {
    /// A traced value.
    Value(Value),
    /// A host value (or a `Val` in direct mode), as bits.
    Bits(u64),
}

/// A value that can flow through traced control flow (see the module docs).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be carried through traced control flow",
    label = "assigned inside a traced `if`/loop or returned from it, but not carriable",
    note = "carriable types are `Val<T>`, `Ptr<T>`, plain scalars (`i32`, `bool`, `usize`, ...), and tuples and arrays of them"
)]
pub trait Carry: Copy + 'static {
    /// Appends this value's slots.
    fn flatten(&self, out: &mut Vec<Slot>);
    /// Rebuilds a value from slots produced by [`Carry::flatten`] of the same type.
    fn rebuild(slots: &mut std::slice::Iter<'_, Slot>) -> Self;
    /// A value of this type for code that can never run (after a `return` in every path);
    /// it is only used to keep tracing well-formed.
    fn unreachable_value() -> Self;
}

/// Flattens a carried value into a new vector.
pub fn flatten<C: Carry>(c: &C) -> Vec<Slot> {
    let mut out = Vec::new();
    c.flatten(&mut out);
    out
}

/// Rebuilds a carried value from a slice of slots.
pub fn rebuild<C: Carry>(slots: &[Slot]) -> C {
    C::rebuild(&mut slots.iter())
}

fn next_slot(slots: &mut std::slice::Iter<'_, Slot>) -> Slot {
    // A mismatch here is an internal bug: slots always come from `flatten` of the same type.
    *slots.next().expect("carried slots match the carried type")
}

fn slot_raw(slot: Slot) -> u64 {
    match slot {
        Slot::Value(v) => v.as_u32() as u64,
        Slot::Bits(b) => b,
    }
}

impl<T: ScalarValue> Carry for Val<T> {
    fn flatten(&self, out: &mut Vec<Slot>) {
        out.push(if crate::is_tracing() {
            Slot::Value(Value::from_u32(self.raw() as u32))
        } else {
            Slot::Bits(self.raw())
        });
    }
    fn rebuild(slots: &mut std::slice::Iter<'_, Slot>) -> Self {
        Val::from_raw(slot_raw(next_slot(slots)))
    }
    fn unreachable_value() -> Self {
        Val::new(T::from_bits(0))
    }
}

impl<T: ScalarValue> Carry for Ptr<T> {
    fn flatten(&self, out: &mut Vec<Slot>) {
        out.push(if crate::is_tracing() {
            Slot::Value(Value::from_u32(self.raw() as u32))
        } else {
            Slot::Bits(self.raw())
        });
    }
    fn rebuild(slots: &mut std::slice::Iter<'_, Slot>) -> Self {
        Ptr::from_raw(slot_raw(next_slot(slots)))
    }
    fn unreachable_value() -> Self {
        Ptr::from_raw(crate::val::constant_raw(Ptr::<T>::ir_type(), 0))
    }
}

macro_rules! host_carry {
    ($($t:ty),*) => {$(
        impl Carry for $t {
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
host_carry!(bool, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

impl Carry for usize {
    fn flatten(&self, out: &mut Vec<Slot>) {
        out.push(Slot::Bits(*self as u64));
    }
    fn rebuild(slots: &mut std::slice::Iter<'_, Slot>) -> Self {
        slot_raw(next_slot(slots)) as usize
    }
    fn unreachable_value() -> Self {
        0
    }
}

impl Carry for isize {
    fn flatten(&self, out: &mut Vec<Slot>) {
        out.push(Slot::Bits(*self as u64));
    }
    fn rebuild(slots: &mut std::slice::Iter<'_, Slot>) -> Self {
        slot_raw(next_slot(slots)) as isize
    }
    fn unreachable_value() -> Self {
        0
    }
}

impl Carry for () {
    fn flatten(&self, _: &mut Vec<Slot>) {}
    fn rebuild(_: &mut std::slice::Iter<'_, Slot>) -> Self {}
    fn unreachable_value() -> Self {}
}

impl<C: Carry, const N: usize> Carry for [C; N] {
    fn flatten(&self, out: &mut Vec<Slot>) {
        self.iter().for_each(|c| c.flatten(out));
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
            #[allow(non_snake_case)]
            fn flatten(&self, out: &mut Vec<Slot>) {
                let ($($n,)+) = self;
                $($n.flatten(out);)+
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
