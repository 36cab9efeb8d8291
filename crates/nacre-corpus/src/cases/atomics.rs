//! Atomic operations in host code: every read-modify-write on every element type that has it,
//! compare-exchange, and fences, over arrays, against the same sequence of operations in plain
//! Rust (one thread: the values are exact). The kernel corpus has the parallel cases.

use crate::registry::{Case, CaseKind};
use nacre::atomic::{fence, Ordering};
use nacre::ir::semantics::{float_max, float_min};
use nacre::prelude::*;
use nacre::Engine;

/// Applies every integer read-modify-write to its own cell for each element of `data`
/// (`cells[0..8]`: add, sub, min, max, and, or, xor, swap) and returns the wrapping sum of the
/// previous values the operations returned.
#[jit]
pub fn atomic_ops_i32(cells: Ptr<i32>, data: Ptr<i32>, n: Val<i64>) -> Val<i32> {
    let mut olds = Val::new(0i32);
    for i in 0..n {
        let d = data[i];
        let o = [
            cells.atomic(0i64).fetch_add(d, Ordering::Relaxed),
            cells.atomic(1i64).fetch_sub(d, Ordering::Acquire),
            cells.atomic(2i64).fetch_min(d, Ordering::Release),
            cells.atomic(3i64).fetch_max(d, Ordering::AcqRel),
            cells.atomic(4i64).fetch_and(d, Ordering::SeqCst),
            cells.atomic(5i64).fetch_or(d, Ordering::Relaxed),
            cells.atomic(6i64).fetch_xor(d, Ordering::Relaxed),
            cells.atomic(7i64).swap(d, Ordering::Relaxed),
        ];
        for x in o {
            olds = olds.wrapping_add(x);
        }
    }
    fence(Ordering::SeqCst);
    olds
}

/// [`atomic_ops_i32`] on `u64` cells, with each element widened and spread over the high bits.
#[jit]
pub fn atomic_ops_u64(cells: Ptr<u64>, data: Ptr<i32>, n: Val<i64>) -> Val<u64> {
    let mut olds = Val::new(0u64);
    for i in 0..n {
        let d = data[i].cast::<u64>() * 0x9e37_79b9u64;
        let o = [
            cells.atomic(0i64).fetch_add(d, Ordering::Relaxed),
            cells.atomic(1i64).fetch_sub(d, Ordering::Relaxed),
            cells.atomic(2i64).fetch_min(d, Ordering::Relaxed),
            cells.atomic(3i64).fetch_max(d, Ordering::Relaxed),
            cells.atomic(4i64).fetch_and(d, Ordering::Relaxed),
            cells.atomic(5i64).fetch_or(d, Ordering::Relaxed),
            cells.atomic(6i64).fetch_xor(d, Ordering::Relaxed),
            cells.atomic(7i64).swap(d, Ordering::Relaxed),
        ];
        for x in o {
            olds = olds.wrapping_add(x);
        }
    }
    olds
}

/// For each element `d`, `compare_exchange(d & 7, d)` on `cells[d & 3]` (`i64`): counts the
/// exchanges that succeeded and sums the previous values.
#[jit]
pub fn atomic_cas_i64(cells: Ptr<i64>, data: Ptr<i32>, n: Val<i64>) -> Val<i64> {
    let mut acc = Val::new(0i64);
    for i in 0..n {
        let d = data[i].cast::<i64>();
        let (old, ok) = cells.atomic(d & 3i64).compare_exchange(
            d & 7i64,
            d,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        acc = acc
            .wrapping_add(old)
            .wrapping_add(ok.cast::<i64>() << 40i64);
    }
    acc
}

/// Float atomics: `f32` add, min, max and swap on `cells[0..4]`, `f64` add and swap on
/// `wide[0..2]`; returns the sum of the previous `f32` values of cells 0, 2 and 3.
#[jit]
pub fn atomic_floats(cells: Ptr<f32>, wide: Ptr<f64>, data: Ptr<i32>, n: Val<i64>) -> Val<f32> {
    let mut olds = Val::new(0.0f32);
    for i in 0..n {
        let x = data[i].cast::<f32>() / 1024.0f32;
        olds += cells.atomic(0i64).fetch_add(x, Ordering::Relaxed);
        // Cell 1 starts as NaN, which `min` ignores; its previous values stay out of the sum.
        cells.atomic(1i64).fetch_min(x, Ordering::SeqCst);
        olds += cells.atomic(2i64).fetch_max(x, Ordering::Relaxed);
        olds += cells.atomic(3i64).swap(x, Ordering::Relaxed);
        wide.atomic(0i64)
            .fetch_add(x.cast::<f64>(), Ordering::Relaxed);
        wide.atomic(1i64).swap(x.cast::<f64>(), Ordering::Relaxed);
    }
    olds
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The cells and the wrapping sum of previous values after applying every integer
/// read-modify-write (add, sub, min, max, and, or, xor, swap: `ops`) to its own cell for each
/// element of `data`, one after another.
fn sequential_ops<T: Copy>(
    init: [T; 8],
    data: impl Iterator<Item = T>,
    ops: [fn(T, T) -> T; 8],
    wrapping_add: fn(T, T) -> T,
    zero: T,
) -> (T, [T; 8]) {
    let (mut cells, mut olds) = (init, zero);
    for d in data {
        for (c, op) in cells.iter_mut().zip(ops) {
            olds = wrapping_add(olds, *c);
            *c = op(*c, d);
        }
    }
    (olds, cells)
}

fn check_ops_i32(engine: &Engine, data: &[i32]) -> Result<(), String> {
    let f = engine.compile(atomic_ops_i32).map_err(err)?;
    let init = [5, -3, i32::MAX, i32::MIN, -1, 0, 0x5555, 7];
    let mut cells = init.to_vec();
    let got = f.call(&mut cells, data, data.len() as i64).map_err(err)?;
    let ops: [fn(i32, i32) -> i32; 8] = [
        i32::wrapping_add,
        i32::wrapping_sub,
        i32::min,
        i32::max,
        |a, b| a & b,
        |a, b| a | b,
        |a, b| a ^ b,
        |_, b| b,
    ];
    let (olds, want) = sequential_ops(init, data.iter().copied(), ops, i32::wrapping_add, 0);
    if (got, cells.as_slice()) != (olds, want.as_slice()) {
        return Err(format!("got {got} {cells:?}, expected {olds} {want:?}"));
    }
    Ok(())
}

fn check_ops_u64(engine: &Engine, data: &[i32]) -> Result<(), String> {
    let f = engine.compile(atomic_ops_u64).map_err(err)?;
    let init = [5, 3, u64::MAX, 0, u64::MAX, 0, 0x5555, 7];
    let mut cells = init.to_vec();
    let got = f.call(&mut cells, data, data.len() as i64).map_err(err)?;
    let ops: [fn(u64, u64) -> u64; 8] = [
        u64::wrapping_add,
        u64::wrapping_sub,
        u64::min,
        u64::max,
        |a, b| a & b,
        |a, b| a | b,
        |a, b| a ^ b,
        |_, b| b,
    ];
    let spread = data.iter().map(|&d| (d as u64).wrapping_mul(0x9e37_79b9));
    let (olds, want) = sequential_ops(init, spread, ops, u64::wrapping_add, 0);
    if (got, cells.as_slice()) != (olds, want.as_slice()) {
        return Err(format!("got {got} {cells:?}, expected {olds} {want:?}"));
    }
    Ok(())
}

fn check_cas_i64(engine: &Engine, data: &[i32]) -> Result<(), String> {
    let f = engine.compile(atomic_cas_i64).map_err(err)?;
    let init = [0i64, 1, 2, 3];
    let mut cells = init.to_vec();
    let got = f.call(&mut cells, data, data.len() as i64).map_err(err)?;
    let mut want = init;
    let mut acc = 0i64;
    for &d in data {
        let d = i64::from(d);
        let c = &mut want[(d & 3) as usize];
        let old = *c;
        let ok = old == d & 7;
        if ok {
            *c = d;
        }
        acc = acc.wrapping_add(old).wrapping_add(i64::from(ok) << 40);
    }
    if (got, cells.as_slice()) != (acc, want.as_slice()) {
        return Err(format!("got {got} {cells:?}, expected {acc} {want:?}"));
    }
    Ok(())
}

fn check_floats(engine: &Engine, data: &[i32]) -> Result<(), String> {
    let f = engine.compile(atomic_floats).map_err(err)?;
    let init = [0.5f32, f32::NAN, -0.0, 2.0];
    let mut cells = init.to_vec();
    let mut wide = vec![0.25f64, 1.0];
    let got = f
        .call(&mut cells, &mut wide, data, data.len() as i64)
        .map_err(err)?;
    let (mut want, mut want_wide, mut olds) = (init, [0.25f64, 1.0], 0.0f32);
    for &d in data {
        let x = d as f32 / 1024.0;
        olds += want[0];
        want[0] += x;
        want[1] = float_min(want[1], x);
        olds += want[2];
        want[2] = float_max(want[2], x);
        olds += want[3];
        want[3] = x;
        want_wide[0] += f64::from(x);
        want_wide[1] = f64::from(x);
    }
    let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    let cells_same = cells.iter().zip(&want).all(|(&a, &b)| same(a, b));
    if !same(got, olds) || !cells_same || wide != want_wide {
        return Err(format!(
            "got {got} {cells:?} {wide:?}, expected {olds} {want:?} {want_wide:?}"
        ));
    }
    Ok(())
}

/// The atomic cases.
pub fn cases() -> Vec<Case> {
    let array = |name, check| Case {
        name,
        kind: CaseKind::Array { check },
    };
    vec![
        array("atomic_ops_i32", check_ops_i32),
        array("atomic_ops_u64", check_ops_u64),
        array("atomic_cas_i64", check_cas_i64),
        array("atomic_floats", check_floats),
    ]
}
