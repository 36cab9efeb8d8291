//! Traced enums by hand (the derive lives in `nacre-macros`): construction, equality, the
//! match queries, `from_repr_or` and carrying, traced and in direct mode.

use super::*;
use crate::cf::{NativeScrutinee as _, Scrutinee, TracedScrutinee as _};
use crate::{direct_call, trace};

#[derive(Clone, Copy, PartialEq, Debug)]
#[repr(u8)]
enum Op {
    Add = 3,
    Mul = 7,
    Neg = 9,
}

impl HostValue for Op {
    type Abi = u8;
    fn to_bits(self) -> u64 {
        self as u64
    }
    fn from_bits(bits: u64) -> Self {
        variant_from_bits(bits)
    }
    fn to_abi(self) -> u8 {
        self as u8
    }
    fn from_abi(abi: u8) -> Self {
        variant_from_bits(abi as u64)
    }
}

impl TracedEnum for Op {
    type Repr = u8;
    const VARIANTS: &'static [Op] = &[Op::Add, Op::Mul, Op::Neg];
    const NAME: &'static str = "Op";
    fn to_repr(self) -> u8 {
        self as u8
    }
}

#[test]
fn from_repr_maps_unknown_discriminants_to_the_fallback() {
    for (r, want) in [
        (3, Op::Add),
        (7, Op::Mul),
        (9, Op::Neg),
        (0, Op::Mul),
        (8, Op::Mul),
    ] {
        let e = EnumVal::<Op>::from_repr_or(Val::new(r), Op::Mul);
        assert_eq!(
            variant_from_bits::<Op>(e.repr().bits("test") as u64),
            want,
            "repr {r}"
        );
    }
}

#[test]
fn queries_name_the_picked_variants() {
    let v = EnumVal::new(Op::Mul);
    let q = &Scrutinee(&v);
    let is = |pick: fn(&Op) -> bool| q.is(pick).bits("test") != 0;
    assert!(is(|o| matches!(o, Op::Mul)));
    assert!(!is(|o| matches!(o, Op::Add | Op::Neg)));
    assert!(is(|_| true));
    assert!(!is(|_| false));
    // A host value answers natively.
    let host = &Scrutinee(&Op::Neg);
    assert!(host.is(|o| matches!(o, Op::Neg)));
    assert_eq!(q.bound().repr().bits("test"), 7);
}

#[test]
fn equality_with_variants_and_values() {
    let (a, b) = (EnumVal::new(Op::Add), EnumVal::from(Op::Neg));
    assert_eq!(a.eq(Op::Add).bits("t"), 1);
    assert_eq!(a.ne(b).bits("t"), 1);
    assert_eq!(
        EnumVal::select(Val::new(false), a, b).eq(Op::Neg).bits("t"),
        1
    );
}

#[test]
fn traces_as_the_discriminant() {
    let f = |x: EnumVal<Op>| -> EnumVal<Op> {
        let q = &Scrutinee(&x);
        let neg = q.is(|o| matches!(o, Op::Neg | Op::Add));
        EnumVal::select(neg, EnumVal::new(Op::Mul), x)
    };
    let traced = trace(&f).expect("traces");
    let text = traced.module.to_string();
    assert!(text.contains("u8"), "{text}");
    assert_eq!(
        direct_call(&f, &[Op::Neg.to_bits()], &[]).expect("runs"),
        Op::Mul.to_bits()
    );
    assert_eq!(
        direct_call(&f, &[Op::Mul.to_bits()], &[]).expect("runs"),
        Op::Mul.to_bits()
    );
}
