//! Trace identity through the facade: a `Val` used in a trace it does not belong to (kept from
//! an earlier compile in a `thread_local`, or made outside any trace and captured) makes
//! `Engine::compile` fail with a tracing error that names the operation, never an internal
//! verifier error about a stray value.

use nacre::{jit, Engine, Error, Options, TraceError, Val};
use nacre_trace::ValueOrigin;
use std::cell::Cell;

thread_local! {
    static KEPT: Cell<Option<Val<i32>>> = const { Cell::new(None) };
}

/// Keeps its parameter after its trace ends.
#[jit]
fn keep(x: Val<i32>) -> Val<i32> {
    KEPT.with(|k| k.set(Some(x)));
    x + 1
}

/// Uses the value `keep` kept, inside traced control flow.
#[jit]
fn use_kept(x: Val<i32>) -> Val<i32> {
    let k = KEPT.with(|k| k.get()).expect("`keep` was compiled first");
    if x > 0 {
        x + k
    } else {
        x
    }
}

fn engine() -> Engine {
    Engine::new(Options::default()).expect("an engine on the CPU")
}

#[track_caller]
fn foreign_value(e: Error) -> (&'static str, ValueOrigin, String) {
    let message = e.to_string();
    match e {
        Error::Trace(TraceError::ForeignValue {
            operation, origin, ..
        }) => (operation, origin, message),
        other => panic!("expected a ForeignValue tracing error, got: {other}"),
    }
}

#[test]
fn a_value_of_an_earlier_trace_kept_in_a_thread_local() {
    let engine = engine();
    engine.compile(keep).expect("`keep` compiles");
    let err = engine.compile(use_kept).expect_err("`use_kept` fails");
    let (operation, origin, message) = foreign_value(err);
    assert_eq!(operation, "add");
    assert_eq!(origin, ValueOrigin::OtherTrace);
    assert!(
        message.starts_with("tracing failed: a `Val<i32>` made in another trace"),
        "{message}"
    );
    assert!(message.contains("`Val::new`"), "{message}");
}

#[test]
fn a_value_made_outside_any_trace_captured_by_a_closure() {
    let k = Val::new(5i32);
    let err = engine()
        .compile(move |x: Val<i32>| x * k)
        .expect_err("fails");
    let (operation, origin, message) = foreign_value(err);
    assert_eq!((operation, origin), ("mul", ValueOrigin::OutsideTrace));
    assert!(!message.contains("internal error"), "{message}");
}
