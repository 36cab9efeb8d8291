//! Fieldless enums as traced values (`#[derive(TracedEnum)]`): parameters and results,
//! equality, `match` on variants with `|`, guards and bindings, carried through loops; and a
//! `match` on a host enum, which still runs at trace time. `nacre` is the only dependency.

use nacre::prelude::*;

/// An order's side.
#[derive(Clone, Copy, PartialEq, Debug, TracedEnum)]
#[repr(u8)]
enum Side {
    Buy = 1,
    Sell = 2,
    Cancel = 9,
}

/// A host-side operator, chosen when the function is traced.
#[derive(Clone, Copy)]
enum Scale {
    Unit,
    Double,
}

/// The signed quantity of an order; large cancels count double.
#[jit]
fn signed_qty(side: EnumVal<Side>, qty: Val<i64>) -> Val<i64> {
    match side {
        Side::Buy => qty,
        Side::Sell => -qty,
        Side::Cancel if qty > 100 => qty * 2,
        _ => Val::new(0),
    }
}

/// The next state of a little state machine, `n` steps from `start`.
#[jit]
fn cycle(start: EnumVal<Side>, n: Val<u32>) -> EnumVal<Side> {
    let mut s = start;
    for _ in 0..n {
        s = match s {
            Side::Buy => EnumVal::new(Side::Sell),
            Side::Sell | Side::Cancel => EnumVal::new(Side::Buy),
        };
    }
    s
}

/// Equality against variants and other values, and a binding arm.
#[jit]
fn same_side(a: EnumVal<Side>, b: EnumVal<Side>) -> Val<u8> {
    let c = match a {
        Side::Cancel => EnumVal::new(Side::Buy),
        other => other,
    };
    if c == b && a != Side::Cancel {
        c.repr()
    } else {
        Val::new(0)
    }
}

/// Traced code specialised on a host enum: the native `match` picks at trace time.
fn scaled(scale: Scale) -> impl Fn(Val<i32>) -> Val<i32> + Send + Sync + 'static {
    #[jit]
    fn body(x: Val<i32>, scale: Scale) -> Val<i32> {
        match scale {
            Scale::Unit => x,
            Scale::Double => x * 2,
        }
    }
    move |x| body(x, scale)
}

fn engines() -> Vec<Engine> {
    [BackendKind::Interp, BackendKind::Cranelift]
        .into_iter()
        .map(|b| Engine::new(Options::with_backend(b)).unwrap())
        .collect()
}

#[test]
fn enums_are_parameters_results_and_match_scrutinees() {
    for engine in engines() {
        let f = engine.compile(signed_qty).unwrap();
        assert_eq!(f.call(Side::Buy, 5).unwrap(), 5);
        assert_eq!(f.call(Side::Sell, 5).unwrap(), -5);
        assert_eq!(f.call(Side::Cancel, 500).unwrap(), 1000);
        assert_eq!(f.call(Side::Cancel, 5).unwrap(), 0);

        let g = engine.compile(cycle).unwrap();
        assert_eq!(g.call(Side::Buy, 0).unwrap(), Side::Buy);
        assert_eq!(g.call(Side::Buy, 3).unwrap(), Side::Sell);
        assert_eq!(g.call(Side::Cancel, 1).unwrap(), Side::Buy);

        let h = engine.compile(same_side).unwrap();
        assert_eq!(h.call(Side::Sell, Side::Sell).unwrap(), 2);
        assert_eq!(h.call(Side::Sell, Side::Buy).unwrap(), 0);
        assert_eq!(h.call(Side::Cancel, Side::Buy).unwrap(), 0);
    }
}

#[test]
fn from_repr_keeps_values_valid() {
    #[jit]
    fn decode(code: Val<u8>) -> EnumVal<Side> {
        EnumVal::from_repr_or(code, Side::Cancel)
    }
    let engine = Engine::new(Options::default()).unwrap();
    let f = engine.compile(decode).unwrap();
    assert_eq!(f.call(1).unwrap(), Side::Buy);
    assert_eq!(f.call(2).unwrap(), Side::Sell);
    for code in [0, 3, 8, 200] {
        assert_eq!(f.call(code).unwrap(), Side::Cancel);
    }
}

#[test]
fn a_host_enum_match_runs_at_trace_time() {
    let engine = Engine::new(Options::default()).unwrap();
    assert_eq!(
        engine
            .compile(scaled(Scale::Unit))
            .unwrap()
            .call(21)
            .unwrap(),
        21
    );
    assert_eq!(
        engine
            .compile(scaled(Scale::Double))
            .unwrap()
            .call(21)
            .unwrap(),
        42
    );
}
