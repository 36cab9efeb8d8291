//! The engine: compile and call on every backend, caching, threads, dumps, direct mode,
//! tiered compilation, options and errors.

use nacre::ir::PassOptions;
use nacre::prelude::*;
use nacre::{DumpOptions, DumpTarget, Error, Stage, Tiering, Trap};
use std::time::Duration;

#[jit]
fn mix(a: Val<i32>, b: Val<i32>) -> Val<i32> {
    let mut r = a;
    for i in 0..(b & 63) {
        if i % 2 == 0 {
            r += i;
        } else {
            r -= 1;
        }
    }
    r
}

fn mix_ref(a: i32, b: i32) -> i32 {
    (0..(b & 63)).fold(a, |r, i| {
        if i % 2 == 0 {
            r.wrapping_add(i)
        } else {
            r.wrapping_sub(1)
        }
    })
}

#[jit]
fn divide(a: Val<i64>, b: Val<i64>) -> Val<i64> {
    a / b
}

#[test]
fn every_backend_compiles_and_runs() {
    for kind in BackendKind::ALL {
        let engine = Engine::new(Options::with_backend(kind)).unwrap();
        let f = engine.compile(mix).unwrap();
        for (a, b) in [(0, 0), (5, 10), (-3, 63), (i32::MAX, 7)] {
            assert_eq!(
                f.call(a, b).unwrap(),
                mix_ref(a, b),
                "{} on ({a}, {b})",
                kind.name()
            );
        }
        let d = engine.compile(divide).unwrap();
        assert_eq!(d.call(7, 2).unwrap(), 3);
        assert!(
            matches!(d.call(7, 0), Err(Error::Trap(Trap::DivisionByZero))),
            "{}",
            kind.name()
        );
        assert_eq!(d.call(i64::MIN, -1).unwrap(), i64::MIN);
    }
}

#[test]
fn compiled_functions_are_cached_per_function() {
    let engine = Engine::new(Options::default()).unwrap();
    let a = engine.compile(mix).unwrap();
    let b = engine.compile(mix).unwrap();
    assert!(a.is_same(&b));
    let c = engine.compile(divide).unwrap();
    assert_eq!(c.name(), "divide");
    let other = Engine::new(Options::default()).unwrap();
    assert!(!other.compile(mix).unwrap().is_same(&a));
}

#[test]
fn callable_and_compilable_from_many_threads() {
    let engine = Engine::new(Options::default()).unwrap();
    let f = engine.compile(mix).unwrap();
    std::thread::scope(|s| {
        for t in 0..8 {
            let f = f.clone();
            let engine = &engine;
            s.spawn(move || {
                for i in 0..200 {
                    assert_eq!(f.call(i, t).unwrap(), mix_ref(i, t));
                }
                let g = engine.compile(divide).unwrap();
                assert_eq!(g.call(100, t as i64 + 1).unwrap(), 100 / (t as i64 + 1));
            });
        }
    });
}

#[test]
fn timings_cover_every_stage() {
    let engine = Engine::new(Options::default()).unwrap();
    let t = engine.compile(mix).unwrap().timings();
    assert!(t.trace > Duration::ZERO && t.passes > Duration::ZERO && t.backend > Duration::ZERO);
    assert!(t.total >= t.trace + t.passes + t.backend);
}

#[test]
fn dumps_every_stage_to_a_folder() {
    let dir = std::env::temp_dir().join(format!("nacre-dump-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let options = Options {
        backend: BackendKind::C,
        dump: DumpOptions {
            stages: Stage::ALL.to_vec(),
            target: DumpTarget::Dir(dir.clone()),
        },
        ..Options::default()
    };
    let engine = Engine::new(options).unwrap();
    engine.compile(mix).unwrap();
    let read = |stage: &str| std::fs::read_to_string(dir.join(format!("mix.{stage}.txt"))).unwrap();
    assert!(read("trace").contains("function @mix(i32, i32) -> i32"));
    assert!(read("passes").contains("; after "));
    assert!(read("ir").contains("loop header"));
    assert!(
        read("backend").contains("nacre_entry"),
        "the C source is the backend stage"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn direct_mode_runs_the_rust_code() {
    let engine = Engine::new(Options {
        direct: true,
        ..Options::default()
    })
    .unwrap();
    let f = engine.compile(mix).unwrap();
    assert!(f.ir().is_none(), "nothing is traced in direct mode");
    assert_eq!(f.call(3, 20).unwrap(), mix_ref(3, 20));
    let d = engine.compile(divide).unwrap();
    assert!(matches!(
        d.call(1, 0),
        Err(Error::Trap(Trap::DivisionByZero))
    ));
}

#[test]
fn passes_can_be_switched_off() {
    let engine = Engine::new(Options {
        passes: PassOptions::none(),
        ..Options::default()
    })
    .unwrap();
    let f = engine.compile(mix).unwrap();
    assert_eq!(f.call(4, 9).unwrap(), mix_ref(4, 9));
    // Without passes the IR is the capture as traced.
    let capture = nacre::ir::verify(nacre::trace_module(&mix).unwrap().module).unwrap();
    assert_eq!(
        f.ir().unwrap(),
        nacre::ir::printer::module_with_loops(&capture).to_string()
    );
}

#[test]
fn tiered_compilation_switches_tiers_without_blocking() {
    for first in [nacre::FirstTier::Interp, nacre::FirstTier::CraneliftFast] {
        for second in [nacre::SecondTier::CraneliftSpeed, nacre::SecondTier::C] {
            let options = Options {
                tiering: Some(Tiering { first, second }),
                ..Options::default()
            };
            let engine = Engine::new(options).unwrap();
            let f = engine.compile(mix).unwrap();
            assert_eq!(f.call(1, 2).unwrap(), mix_ref(1, 2));
            assert!(
                f.wait_for_second_tier(Duration::from_secs(60)),
                "{:?}",
                f.tier_stats()
            );
            for i in 0..10 {
                assert_eq!(f.call(i, 33).unwrap(), mix_ref(i, 33));
            }
            let stats = f.tier_stats().unwrap();
            assert!(
                stats.second_tier_ready && stats.second_tier_calls >= 10,
                "{stats:?}"
            );
            assert_eq!(stats.first_tier_calls + stats.second_tier_calls, 11);
            assert!(stats.second_tier_compile.is_some());
        }
    }
}

#[test]
fn invalid_options_are_errors() {
    let bad = Options {
        c: nacre::COptions {
            compiler: " ".into(),
            ..Default::default()
        },
        ..Options::default()
    };
    assert!(matches!(Engine::new(bad), Err(Error::InvalidOption(_))));
    let e = "gpu".parse::<BackendKind>().unwrap_err();
    assert!(e.to_string().contains("unknown backend `gpu`"), "{e}");
}

#[test]
fn c_compiler_failure_is_a_typed_error() {
    let options = Options {
        backend: BackendKind::C,
        c: nacre::COptions {
            compiler: "cc".into(),
            flags: vec!["-fno-such-flag-for-nacre".into()],
            ..Default::default()
        },
        ..Options::default()
    };
    let engine = Engine::new(options).unwrap();
    match engine.compile(mix) {
        Err(Error::Backend(nacre::BackendError::CCompiler {
            message,
            source_path,
            ..
        })) => {
            assert!(message.contains("no-such-flag"), "{message}");
            assert!(source_path.exists());
        }
        other => panic!("expected a C compiler error, got {other:?}"),
    }
}

#[test]
fn trace_errors_are_reported() {
    #[jit]
    fn diverging_host_value(a: Val<i32>) -> Val<i32> {
        let mut count = 0u32;
        let mut b = a;
        if a > 7 {
            b = a + 1;
            count = 1;
        }
        b + count as i32
    }
    let engine = Engine::new(Options::default()).unwrap();
    match engine.compile(diverging_host_value) {
        Err(Error::Trace(nacre::TraceError::HostValueDiverges { location })) => {
            assert!(
                location.contains("`count` (of `b, count`), carried by the traced `if` at"),
                "{location}"
            );
            let line = 1 + include_str!("engine.rs")
                .lines()
                .position(|l| l.trim() == "if a > 7 {")
                .unwrap();
            assert!(location.ends_with(&format!(":{line}")), "{location}");
        }
        other => panic!("expected a trace error, got {other:?}"),
    }
}

mod doubling {
    pub extern "C" fn scale(x: i32) -> i32 {
        x.wrapping_mul(2)
    }
}

mod tripling {
    pub extern "C" fn scale(x: i32) -> i32 {
        x.wrapping_mul(3)
    }
}

/// Two Rust functions of the same name: each keeps its own address in the linkage.
#[jit]
fn scale_both(x: Val<i32>) -> Val<i32> {
    let a = {
        use doubling::scale;
        nacre::invoke!(scale(x))
    };
    let b = {
        use tripling::scale;
        nacre::invoke!(scale(x))
    };
    a * 10 + b
}

#[test]
fn externs_with_the_same_name_stay_apart() {
    let traced = nacre::trace_module(&scale_both).unwrap();
    let names: Vec<&str> = traced
        .module
        .externs
        .values()
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(names, ["scale", "scale_2"]);
    assert_eq!(traced.linkage.externs.len(), 2);
    for kind in BackendKind::ALL {
        let engine = Engine::new(Options::with_backend(kind)).unwrap();
        let f = engine.compile(scale_both).unwrap();
        assert_eq!(f.call(5).unwrap(), 10 * 10 + 15, "{}", kind.name());
    }
}

/// Sums the `u64`s at the address stored in `table[0]` (a pointer read from memory).
fn sum_through_table(table: Ptr<u64>, n: Val<u64>) -> Val<u64> {
    // SAFETY: the callers store in `table[0]` the address of `n` live `u64`s and compile
    // unchecked.
    let data = unsafe { Ptr::<u64>::from_addr(table.load(0u64)) };
    let mut sum = Val::new(0u64);
    for k in 0..4u64 {
        sum += select(Val::new(k).lt(n), data.load(k), 0u64);
    }
    sum
}

#[test]
fn pointers_loaded_from_memory_on_every_backend() {
    let data = [3u64, 5, 7, 11];
    let mut table = [data.as_ptr() as u64];
    for kind in BackendKind::ALL {
        let engine = Engine::new(Options::with_backend(kind)).expect("engine");
        let f = engine
            .compile_unchecked(sum_through_table)
            .expect("compiled");
        // SAFETY: `table[0]` holds the address of `data`'s four values, live for the call.
        let r = unsafe { f.call(nacre::RawPtr::new(table.as_mut_ptr()), 4) };
        assert_eq!(r.ok(), Some(26), "{kind:?}");
    }
    // Direct mode lets a call touch only its arguments' memory: the loaded pointer's is not.
    let engine = Engine::new(Options {
        direct: true,
        ..Options::default()
    })
    .expect("engine");
    let f = engine
        .compile_unchecked(sum_through_table)
        .expect("compiled");
    // SAFETY: as above.
    let r = unsafe { f.call(nacre::RawPtr::new(table.as_mut_ptr()), 4) };
    assert!(
        matches!(r, Err(Error::Trap(Trap::OutOfBounds { .. }))),
        "{r:?}"
    );
}
