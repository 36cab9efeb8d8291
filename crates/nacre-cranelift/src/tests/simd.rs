//! Counted loops run as SIMD lanes ([`crate::lower`]'s `simd` module): reductions and maps
//! give the scalar loop's bits for every length, start and overlap of the arrays, and the
//! vector loop is really there.

use super::*;
use nacre_ir::test_util::counted_loop as looped;
use nacre_ir::{BinaryOp, UnaryOp};

/// Compiles at both levels, keeping the listing.
fn compiled(f: &Function) -> Vec<Arc<dyn Executable>> {
    OPT_LEVELS
        .iter()
        .map(|&opt_level| {
            let backend = CraneliftBackend::new(CraneliftOptions {
                opt_level,
                keep_listing: true,
            })
            .unwrap();
            compile_fn(&backend, f.clone())
        })
        .collect()
}

fn assert_vectorised(exe: &Arc<dyn Executable>, vector: &str) {
    let listing = exe.listing().unwrap();
    assert!(listing.contains(vector), "no {vector} in\n{listing}");
}

/// A reduction `acc = acc op p[i]` over `i32`s.
fn reduce(op: BinaryOp, scalar: Scalar, start: u64, first: bool) -> Function {
    looped(
        &[Type::ptr(scalar)],
        Type::I64,
        &[(Type::Scalar(scalar), start)],
        |b, p, i, acc| {
            let x = b.elem_ptr(p[0], i);
            let v = b.load(x);
            vec![if first {
                b.binary(op, acc[0], v)
            } else {
                b.binary(op, v, acc[0])
            }]
        },
    )
}

fn pseudo_random(n: usize, seed: u64) -> Vec<u64> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect()
}

#[test]
fn integer_reductions_give_the_scalar_bits_for_every_range() {
    let data: Vec<i32> = pseudo_random(300, 7).iter().map(|&x| x as i32).collect();
    type Op = fn(i32, i32) -> i32;
    // (operation, start, accumulator first, the same in Rust as `acc op x`)
    let cases: [(BinaryOp, i32, bool, Op); 7] = [
        (BinaryOp::Add, 5, true, i32::wrapping_add),
        (BinaryOp::Add, 5, false, i32::wrapping_add),
        (BinaryOp::Sub, 9, true, i32::wrapping_sub),
        (BinaryOp::Xor, 3, false, |a, b| a ^ b),
        (BinaryOp::And, -1, true, |a, b| a & (b | 0x0100_0001)),
        (BinaryOp::Min, i32::MAX, true, i32::min),
        (BinaryOp::Max, i32::MIN, false, i32::max),
    ];
    for (op, start, first, rust) in cases {
        let f = reduce(op, Scalar::I32, start as u32 as u64, first);
        // `And` of random words is soon 0: its data keep two bits set everywhere.
        let data: Vec<i32> = if op == BinaryOp::And {
            data.iter().map(|x| x | 0x0100_0001).collect()
        } else {
            data.clone()
        };
        for exe in compiled(&f) {
            assert_vectorised(&exe, "i32x4");
            for (init, bound) in [(0, 0), (0, 1), (0, 7), (0, 8), (3, 300), (5, 4), (17, 290)] {
                let range = &data[init.min(bound)..bound];
                let want = range.iter().fold(start, |a, &b| rust(a, b));
                let got = exe.call(&[data.as_ptr() as u64, init as u64, bound as u64]);
                assert_eq!(
                    got,
                    Ok(u64::from(want as u32)),
                    "{op:?} over {init}..{bound}"
                );
            }
        }
    }
}

#[test]
fn narrow_and_wide_lanes_reduce_too() {
    let bytes: Vec<u8> = (0..101u32).map(|i| (i * 37 + 11) as u8).collect();
    let f = reduce(BinaryOp::Add, Scalar::U8, 0, true);
    let want = bytes.iter().fold(0u8, |a, &b| a.wrapping_add(b));
    for exe in compiled(&f) {
        assert_vectorised(&exe, "i8x16");
        let got = exe.call(&[bytes.as_ptr() as u64, 0, bytes.len() as u64]);
        assert_eq!(got, Ok(u64::from(want)));
    }
    let words: Vec<u64> = pseudo_random(67, 3);
    let f = reduce(BinaryOp::Xor, Scalar::U64, 0, true);
    let want = words.iter().fold(0, |a, b| a ^ b);
    for exe in compiled(&f) {
        assert_vectorised(&exe, "i64x2");
        let got = exe.call(&[words.as_ptr() as u64, 0, words.len() as u64]);
        assert_eq!(got, Ok(want));
    }
}

/// `y[i] = a * x[i] + y[i]` in `f32`, then `x[i] = sqrt(|x[i]|)`, with `a` a parameter.
fn saxpy() -> Function {
    let f32p = Type::ptr(Scalar::F32);
    looped(&[f32p, f32p], Type::U32, &[], |b, p, i, _| {
        let a = b.const_bits(Type::F32, u64::from(1.5f32.to_bits()));
        let (x, y) = (b.elem_ptr(p[0], i), b.elem_ptr(p[1], i));
        let (xv, yv) = (b.load(x), b.load(y));
        let ax = b.binary(BinaryOp::Mul, a, xv);
        let r = b.binary(BinaryOp::Add, ax, yv);
        b.store(y, r);
        let m = b.unary(UnaryOp::Abs, xv);
        let s = b.unary(UnaryOp::Sqrt, m);
        b.store(x, s);
        vec![]
    })
}

fn saxpy_reference(x: &mut [f32], y_offset: isize, init: usize, bound: usize) {
    for i in init..bound {
        let xv = x[i];
        let j = (i as isize + y_offset) as usize;
        x[j] += 1.5f32 * xv;
        x[i] = xv.abs().sqrt();
    }
}

#[test]
fn maps_give_the_scalar_bits_whatever_the_arrays_overlap() {
    let f = saxpy();
    let start: Vec<f32> = pseudo_random(64, 11)
        .iter()
        .map(|&r| (r % 2001) as f32 / 7.0 - 140.0)
        .collect();
    for exe in compiled(&f) {
        assert_vectorised(&exe, "f32x4");
        // `y` is `x` shifted by `offset` elements inside one buffer: apart, overlapping by
        // less than a vector, the same.
        for offset in -9isize..=9 {
            for (init, bound) in [(10usize, 50usize), (12, 13), (10, 10), (11, 54)] {
                let mut want = start.clone();
                saxpy_reference(&mut want, offset, init, bound);
                let mut got = start.clone();
                let x = got.as_mut_ptr();
                let y = x.wrapping_offset(offset);
                let r = exe.call(&[x as u64, y as u64, init as u64, bound as u64]);
                assert_eq!(r, Ok(0));
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "y = x + {offset}, {init}..{bound}");
            }
        }
    }
}

#[test]
fn loops_that_are_not_lanes_stay_scalar() {
    // A float sum is not associative: it must stay in the scalar order.
    let f = reduce(BinaryOp::Add, Scalar::F32, 0, true);
    for exe in compiled(&f) {
        assert!(!exe.listing().unwrap().contains("f32x4"));
        let data = [1e8f32, 1.0, -1e8, 1.0, 0.5, 3.0, 1e-3, 7.0, 1.0];
        let want = data.iter().fold(0f32, |a, b| a + b);
        let got = exe.call(&[data.as_ptr() as u64, 0, data.len() as u64]);
        assert_eq!(got, Ok(u64::from(want.to_bits())));
    }
}
