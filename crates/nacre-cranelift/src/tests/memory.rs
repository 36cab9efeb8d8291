//! Code memory reclamation in generations, and compilation from several threads.

use super::*;
use crate::generation::MODULES_PER_GENERATION;
use nacre_ir::{BinaryOp, Const};

/// `fn(x: i64) -> i64 { x + k }`.
fn add_const(k: i64) -> Function {
    function("addk", &[Type::I64], Some(Type::I64), |b, p| {
        let c = b.constant(Const {
            ty: Type::I64,
            bits: k as u128,
        });
        let r = b.binary(BinaryOp::Add, p[0], c);
        b.ret(Some(r));
    })
}

#[test]
fn dropped_executables_free_their_generation() {
    let be = backend(OptLevel::None);
    let n = 10_000;
    for k in 0..n {
        let exe = compile_fn(&be, add_const(k));
        assert_eq!(exe.call(&[1]), Ok((k + 1) as u64));
        // At most the worker's current generation and the one just retired (freed as soon as
        // this executable drops) hold memory.
        assert!(
            be.live_generations() <= 2,
            "{} live generations",
            be.live_generations()
        );
    }
    assert!(be.generations_created() >= n as usize / MODULES_PER_GENERATION);
    assert_eq!(be.live_generations(), 1);
    drop(be);
}

#[test]
fn live_executables_keep_their_generation() {
    let be = backend(OptLevel::Speed);
    let first = compile_fn(&be, add_const(1000));
    for k in 0..(3 * MODULES_PER_GENERATION as i64) {
        let exe = compile_fn(&be, add_const(k));
        assert_eq!(exe.call(&[2]), Ok((k + 2) as u64));
    }
    // The first generation is retired but still mapped for `first`.
    assert_eq!(be.live_generations(), 2);
    assert_eq!(first.call(&[1]), Ok(1001));
    drop(first);
    assert_eq!(be.live_generations(), 1);
    // An executable may outlive its backend.
    let last = compile_fn(&be, add_const(5));
    drop(be);
    assert_eq!(last.call(&[1]), Ok(6));
}

#[test]
fn concurrent_compilation_and_execution() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CraneliftBackend>();
    assert_send_sync::<crate::executable::CraneliftExecutable>();

    let be = Arc::new(backend(OptLevel::Speed));
    let threads: Vec<_> = (0..4i64)
        .map(|t| {
            let be = be.clone();
            std::thread::spawn(move || {
                let mut kept = Vec::new();
                for k in 0..150 {
                    let exe = compile_fn(&be, add_const(t * 1000 + k));
                    assert_eq!(exe.call(&[1]), Ok((t * 1000 + k + 1) as u64));
                    if k % 50 == 0 {
                        kept.push((t * 1000 + k, exe));
                    }
                }
                kept
            })
        })
        .collect();
    let kept: Vec<_> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("thread"))
        .collect();
    // Executables compiled on one thread run on others.
    std::thread::scope(|s| {
        for (k, exe) in &kept {
            s.spawn(move || assert_eq!(exe.call(&[1]), Ok((k + 1) as u64)));
        }
    });
    assert!(be.live_generations() >= 1);
    drop(kept);
}
