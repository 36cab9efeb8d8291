//! `#[jit]` end to end: every function below runs in direct mode (plain Rust over concrete
//! values) and is traced, verified and run by the interpreter; both must agree with a plain
//! Rust reference on inputs that include the edge values. A few traces are snapshotted.
//!
//! `#![deny(unused)]` makes the usual lints about generated code (unused `mut`s, variables and
//! assignments, unnecessary parentheses, unreachable code) fail the build.

#![deny(unused)]

use nacre::{jit, kernel, Ptr, Val};
use nacre_backend::{Backend, Executable};
use nacre_interp::Interpreter;
use nacre_trace::{Scalar, TraceFn};
use std::cell::Cell;
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// Harness

const I32S: &[i32] = &[
    i32::MIN,
    i32::MIN + 1,
    -1000,
    -101,
    -100,
    -99,
    -7,
    -1,
    0,
    1,
    2,
    3,
    5,
    99,
    100,
    101,
    1000,
    i32::MAX - 1,
    i32::MAX,
];
const SMALL: &[i32] = &[-3, -1, 0, 1, 2, 5, 17, 64, 130];
const U32S: &[u32] = &[0, 1, 2, 3, 7, 8, 100, 1_000_000, u32::MAX - 1, u32::MAX];

/// A traced function: its printed IR and its interpreter executable.
struct Traced {
    text: String,
    exe: Arc<dyn Executable>,
}

fn traced<Args, F: TraceFn<Args>>(f: &F) -> Traced {
    let traced = nacre::trace(f).expect("the function traces");
    let text = traced.module.to_string();
    assert!(text.contains("function @"), "printed module:\n{text}");
    let verified =
        nacre::ir::verify(traced.module).unwrap_or_else(|e| panic!("verifier: {e}\n{text}"));
    let exe = Interpreter::new()
        .compile(&verified, &traced.linkage)
        .expect("the interpreter compiles it");
    Traced { text, exe }
}

/// The memory of `v`, lent writable to a direct-mode call.
fn region<T>(v: &mut [T]) -> nacre_trace::Region {
    nacre_trace::Region {
        addr: v.as_mut_ptr() as usize,
        bytes: std::mem::size_of_val(v),
        writable: true,
    }
}

/// Runs `f` directly and compiled on each `(args, expected)` (bits encoding); returns the IR.
fn check<Args, F: TraceFn<Args>>(f: &F, cases: &[(Vec<u64>, u64)]) -> String {
    let t = traced(f);
    for (args, want) in cases {
        assert_eq!(
            nacre_trace::direct_call(f, args, &[]),
            Ok(*want),
            "direct mode, args {args:?}"
        );
        assert_eq!(
            t.exe.call(args),
            Ok(*want),
            "compiled, args {args:?}\n{}",
            t.text
        );
    }
    t.text
}

fn check1<A: Scalar, R: Scalar, F: TraceFn<(Val<A>,)>>(
    f: &F,
    reference: impl Fn(A) -> R,
    inputs: &[A],
) -> String {
    let cases: Vec<_> = inputs
        .iter()
        .map(|&a| (vec![a.to_bits() as u64], reference(a).to_bits() as u64))
        .collect();
    check(f, &cases)
}

fn check2<A: Scalar, B: Scalar, R: Scalar, F: TraceFn<(Val<A>, Val<B>)>>(
    f: &F,
    reference: impl Fn(A, B) -> R,
    xs: &[A],
    ys: &[B],
) -> String {
    let mut cases = Vec::new();
    for &a in xs {
        for &b in ys {
            cases.push((
                vec![a.to_bits() as u64, b.to_bits() as u64],
                reference(a, b).to_bits() as u64,
            ));
        }
    }
    check(f, &cases)
}

fn addr(v: &mut [i32]) -> u64 {
    v.as_mut_ptr() as usize as u64
}

/// Runs an array function `f(data, n)` directly and compiled on copies of `data`; both the
/// result and the final array must match `reference` (which updates its copy in place).
fn check_array<R: Scalar, F: TraceFn<(Ptr<i32>, Val<i64>)>>(
    f: &F,
    reference: impl Fn(&mut Vec<i32>) -> R,
    inputs: &[&[i32]],
) -> String {
    let t = traced(f);
    for data in inputs {
        let mut want = data.to_vec();
        let want_r = reference(&mut want).to_bits() as u64;
        let mut direct = data.to_vec();
        let lent = [region(&mut direct)];
        let r = nacre_trace::direct_call(f, &[addr(&mut direct), data.len() as u64], &lent);
        assert_eq!((r, &direct), (Ok(want_r), &want), "direct mode on {data:?}");
        let mut compiled = data.to_vec();
        let r = t.exe.call(&[addr(&mut compiled), data.len() as u64]);
        assert_eq!(
            (r, &compiled),
            (Ok(want_r), &want),
            "compiled on {data:?}\n{}",
            t.text
        );
    }
    t.text
}

const ARRAYS: &[&[i32]] = &[
    &[],
    &[5],
    &[1, -2, 3, i32::MAX, i32::MIN, 0, 7],
    &[4, 4, 4, 9, -9, 12, 100, -100, 33],
];

// ---------------------------------------------------------------------------------------------
// `if`

/// `if` as a statement, with `else`.
#[jit]
fn if_stmt(a: Val<i32>, b: Val<i32>) -> Val<i32> {
    let mut r = a;
    if a > b {
        r = a - b;
    } else {
        r = b - a;
    }
    r
}

/// `if` as an expression, its value used later.
#[jit]
fn if_expr(a: Val<i64>) -> Val<i64> {
    let r = if a < 0 { -a } else { a * 2 };
    r + 1
}

/// `if` without `else`, and an `if` whose branches have different assignments.
#[jit]
fn if_no_else(a: Val<i32>, b: Val<i32>) -> Val<i32> {
    let mut x = a;
    let mut y = b;
    if a < b {
        x = b;
    }
    if x == y {
        y += 1;
    } else {
        x *= 2;
    }
    x - y
}

/// An `else if` chain returning literals from the tail.
#[jit]
fn else_if_chain(x: Val<i32>) -> Val<i32> {
    if x < -100 {
        -2
    } else if x < 0 {
        -1
    } else if x == 0 {
        0
    } else if x <= 100 {
        1
    } else {
        2
    }
}

/// Nested `if`s with an `else if` on the outside.
#[jit]
fn nested_if(a: Val<i32>, b: Val<i32>) -> Val<i32> {
    let mut r = Val::new(0i32);
    if a > 0 {
        if b > 0 {
            r = a + b;
        } else {
            r = a - b;
        }
    } else if b > 0 {
        r = b - a;
    }
    r
}

/// Sequential `if`s accumulating.
#[jit]
fn sequential_ifs(x: Val<u32>) -> Val<u32> {
    let mut r = Val::new(0u32);
    if x & 1 != 0 {
        r += 10;
    }
    if x & 2 != 0 {
        r += 200;
    }
    if x & 4 != 0 {
        r *= 3;
    }
    if r > 500 {
        r -= 500;
    }
    r
}

/// Assignments through destructuring and to a field; a shadowing `let` inside a branch.
#[jit]
fn destructure_and_fields(a: Val<i32>, b: Val<i32>) -> Val<i32> {
    let mut pair = (a, b);
    let (mut lo, mut hi) = (a, b);
    if a > b {
        (lo, hi) = (b, a);
        pair.0 = b;
        pair.1 = a;
    }
    let mut k = Val::new(1i32);
    if lo == hi {
        k += 1;
        let k = Val::new(1000i32);
        hi += k;
    }
    (hi - lo) * 3 + (pair.1 - pair.0) + k
}

/// An `if` expression whose branch returns early, in a `let`.
#[jit]
fn if_expr_with_return(x: Val<i32>) -> Val<i32> {
    let y = if x > 10 {
        return Val::new(-1);
    } else {
        x * 2
    };
    y + 1
}

/// `match` and `if let` run natively; their arms are rewritten.
#[jit]
fn native_match(x: Val<i32>, mode: u8, table: Option<&[i32; 3]>) -> Val<i32> {
    let mut r = x;
    match mode {
        0 => {
            if x > 0 {
                r = x * 2;
            }
        }
        1 => r = if x < 0 { -x } else { x },
        _ => {}
    }
    if let Some(t) = table {
        for k in 0..3 {
            if x > t[k] {
                r += 1;
            }
        }
    }
    r
}

#[test]
fn ifs() {
    let text = check2(
        &if_stmt,
        |a: i32, b: i32| {
            if a > b {
                a.wrapping_sub(b)
            } else {
                b.wrapping_sub(a)
            }
        },
        I32S,
        SMALL,
    );
    insta::assert_snapshot!("if_stmt", text);
    check1(
        &if_expr,
        |a: i64| {
            if a < 0 {
                a.wrapping_neg()
            } else {
                a.wrapping_mul(2)
            }
            .wrapping_add(1)
        },
        &[i64::MIN, -5, -1, 0, 1, 7, i64::MAX],
    );
    check2(
        &if_no_else,
        |a: i32, b: i32| {
            let (mut x, mut y) = (a, b);
            if a < b {
                x = b;
            }
            if x == y {
                y = y.wrapping_add(1);
            } else {
                x = x.wrapping_mul(2);
            }
            x.wrapping_sub(y)
        },
        SMALL,
        SMALL,
    );
    let text = check1(
        &else_if_chain,
        |x: i32| match x {
            i32::MIN..=-101 => -2,
            -100..=-1 => -1,
            0 => 0,
            1..=100 => 1,
            _ => 2,
        },
        I32S,
    );
    insta::assert_snapshot!("else_if_chain", text);
    check2(
        &nested_if,
        |a: i32, b: i32| {
            if a > 0 {
                if b > 0 {
                    a.wrapping_add(b)
                } else {
                    a.wrapping_sub(b)
                }
            } else if b > 0 {
                b.wrapping_sub(a)
            } else {
                0
            }
        },
        I32S,
        SMALL,
    );
    check1(
        &sequential_ifs,
        |x: u32| {
            let mut r = 0u32;
            if x & 1 != 0 {
                r += 10;
            }
            if x & 2 != 0 {
                r += 200;
            }
            if x & 4 != 0 {
                r *= 3;
            }
            if r > 500 {
                r -= 500;
            }
            r
        },
        &(0..16).chain([u32::MAX]).collect::<Vec<_>>(),
    );
    check2(
        &destructure_and_fields,
        |a: i32, b: i32| {
            let (lo, hi0) = if a > b { (b, a) } else { (a, b) };
            let (k, hi) = if lo == hi0 {
                (2, hi0.wrapping_add(1000))
            } else {
                (1, hi0)
            };
            hi.wrapping_sub(lo)
                .wrapping_mul(3)
                .wrapping_add(hi0.wrapping_sub(lo))
                .wrapping_add(k)
        },
        SMALL,
        SMALL,
    );
    check1(
        &if_expr_with_return,
        |x: i32| {
            if x > 10 {
                -1
            } else {
                x.wrapping_mul(2).wrapping_add(1)
            }
        },
        I32S,
    );
}

static TABLE: [i32; 3] = [-5, 0, 5];

#[test]
fn native_match_and_if_let() {
    for mode in 0..3u8 {
        for use_table in [false, true] {
            let f = move |x: Val<i32>| native_match(x, mode, use_table.then_some(&TABLE));
            check1(
                &f,
                |x: i32| {
                    let mut r = match mode {
                        0 if x > 0 => x.wrapping_mul(2),
                        1 => x.wrapping_abs(),
                        _ => x,
                    };
                    if use_table {
                        r += TABLE.iter().filter(|&&t| x > t).count() as i32;
                    }
                    r
                },
                SMALL,
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Loops

/// `while` with a traced condition.
#[jit]
fn while_sum(n: Val<u32>) -> Val<u32> {
    let n = n & 255;
    let mut i = Val::new(0u32);
    let mut sum = Val::new(0u32);
    while i < n {
        sum += i * i;
        i += 1;
    }
    sum
}

/// Euclid: a `let` inside the loop body is not state.
#[jit]
fn gcd(a: Val<u64>, b: Val<u64>) -> Val<u64> {
    let mut x = a;
    let mut y = b;
    while y != 0 {
        let t = x % y;
        x = y;
        y = t;
    }
    x
}

/// `while` with `&&` in its condition and an `if` in its body.
#[jit]
fn collatz(n: Val<u64>) -> Val<u32> {
    let mut x = n | 1;
    let mut steps = Val::new(0u32);
    while x != 1 && steps < 1000 {
        if x % 2 == 0 {
            x /= 2;
        } else {
            x = x * 3 + 1;
        }
        steps += 1;
    }
    steps
}

/// `loop` with `break`.
#[jit]
fn loop_break(x: Val<u32>) -> Val<u32> {
    let mut v = x | 1;
    let mut steps = Val::new(0u32);
    loop {
        if v >= 1_000_000 {
            break;
        }
        v *= 3;
        steps += 1;
    }
    steps
}

/// A `loop` left only by `return` (an expression of type `!`).
#[jit]
fn loop_return(x: Val<i32>) -> Val<i32> {
    let x = x & 4095;
    let mut i = Val::new(0i32);
    loop {
        if i * i > x {
            return i;
        }
        i += 1;
    }
}

/// `for` over a range with a traced bound; destructuring state.
#[jit]
fn fibonacci(n: Val<u32>) -> Val<u64> {
    let mut a = Val::new(0u64);
    let mut b = Val::new(1u64);
    for _ in 0..(n & 127) {
        (a, b) = (b, a + b);
    }
    a
}

/// The README's example.
#[jit]
fn conditional_sum(n: Val<i32>) -> Val<i32> {
    let n = n & 1023;
    let mut sum = Val::new(0i32);
    for i in 0..n {
        if i % 3 == 0 {
            sum += i;
        }
    }
    sum
}

/// `for` with `.step_by`, exclusive and inclusive, traced and host bounds.
#[jit]
fn for_step(n: Val<i32>) -> Val<i32> {
    let n = n & 255;
    let mut sum = Val::new(0i32);
    for i in (0..n).step_by(3) {
        sum += i;
    }
    for i in (1..=n).step_by(2) {
        sum += i * 1000;
    }
    for k in (0..=10).step_by(5) {
        sum += k;
    }
    sum
}

/// `for` over a host range: unrolled at trace time.
#[jit]
fn host_unrolled(x: Val<i64>) -> Val<i64> {
    let mut acc = Val::new(1i64);
    for _ in 0..5 {
        acc *= x;
    }
    for i in 0..=3i64 {
        acc += x << i;
    }
    acc
}

/// `for` over host collections: a `Vec` of plain values, with `enumerate`, and a `while let`.
#[jit]
fn host_collections(x: Val<i32>) -> Val<i32> {
    let weights = vec![3, 0, -2, 5];
    let mut r = Val::new(0i32);
    for w in weights.iter() {
        if *w != 0 {
            r += x * *w;
        }
    }
    for (k, w) in weights.into_iter().enumerate() {
        if w > 0 && x > k as i32 {
            r += 1;
        }
    }
    let mut stack = vec![1, 2, 3];
    while let Some(k) = stack.pop() {
        r = r * 2 + k;
    }
    r
}

/// Nested loops with a traced inner bound.
#[jit]
fn nested_loops(n: Val<i32>) -> Val<i32> {
    let n = n & 31;
    let mut sum = Val::new(0i32);
    for i in 0..n {
        for j in 0..i {
            sum += i * j;
        }
    }
    sum
}

/// Arrays of traced values as loop state.
#[jit]
fn array_state(x: Val<i32>) -> Val<i32> {
    let mut acc = [Val::new(0i32), Val::new(1i32)];
    for i in 0..(x & 15) {
        acc = [acc[1], acc[0] + acc[1] + i];
    }
    acc[0] * 7 + acc[1]
}

fn fib(n: u32) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..(n & 127) {
        (a, b) = (b, a.wrapping_add(b));
    }
    a
}

/// `continue` and `break` in a traced `loop`.
#[jit]
fn loop_continue(n: Val<i32>) -> Val<i32> {
    let n = n & 63;
    let mut i = Val::new(0i32);
    let mut s = Val::new(0i32);
    loop {
        i += 1;
        if i % 3 == 0 {
            continue;
        }
        if i > n {
            break;
        }
        s += i;
    }
    s * 100 + i
}

/// A `while let` over a host stack inside a traced loop, with exits out of both.
#[jit]
fn while_let_exits(n: Val<i32>) -> Val<i32> {
    let mut total = Val::new(0i32);
    for i in 0..(n & 15) {
        let mut stack = vec![1, 2, 3, 4];
        while let Some(k) = stack.pop() {
            if k == 2 {
                continue;
            }
            if i * k > 20 {
                break;
            }
            total += i * k;
        }
        if total > 100 {
            return total;
        }
    }
    -total
}

#[test]
fn loops() {
    check1(
        &while_sum,
        |n: u32| (0..(n & 255)).fold(0u32, |s, i| s.wrapping_add(i * i)),
        U32S,
    );
    check2(
        &gcd,
        |a: u64, b: u64| {
            let (mut x, mut y) = (a, b);
            while y != 0 {
                (x, y) = (y, x % y);
            }
            x
        },
        &[0, 1, 12, 18, 97, u64::MAX],
        &[0, 1, 8, 27, 1 << 40],
    );
    check1(
        &collatz,
        |n: u64| {
            let (mut x, mut steps) = (n | 1, 0u32);
            while x != 1 && steps < 1000 {
                x = if x % 2 == 0 {
                    x / 2
                } else {
                    x.wrapping_mul(3).wrapping_add(1)
                };
                steps += 1;
            }
            steps
        },
        &[0, 1, 6, 27, 97, 871, u64::MAX],
    );
    check1(
        &loop_break,
        |x: u32| {
            let (mut v, mut steps) = (x | 1, 0u32);
            while v < 1_000_000 {
                v = v.wrapping_mul(3);
                steps += 1;
            }
            steps
        },
        U32S,
    );
    check1(
        &loop_return,
        |x: i32| (0..).find(|i: &i32| i * i > (x & 4095)).unwrap_or(0),
        I32S,
    );
    check1(&fibonacci, fib, U32S);
    check1(
        &loop_continue,
        |n: i32| {
            let n = n & 63;
            let (mut i, mut s) = (0i32, 0i32);
            loop {
                i += 1;
                if i % 3 == 0 {
                    continue;
                }
                if i > n {
                    break;
                }
                s += i;
            }
            s * 100 + i
        },
        I32S,
    );
    check1(
        &while_let_exits,
        |n: i32| {
            let mut total = 0i32;
            for i in 0..(n & 15) {
                let mut stack = vec![1, 2, 3, 4];
                while let Some(k) = stack.pop() {
                    if k == 2 {
                        continue;
                    }
                    if i * k > 20 {
                        break;
                    }
                    total += i * k;
                }
                if total > 100 {
                    return total;
                }
            }
            -total
        },
        I32S,
    );
    let text = check1(
        &conditional_sum,
        |n: i32| (0..(n & 1023)).filter(|i| i % 3 == 0).sum::<i32>(),
        I32S,
    );
    insta::assert_snapshot!("conditional_sum", text);
    check1(
        &for_step,
        |n: i32| {
            let n = n & 255;
            let a: i32 = (0..n).step_by(3).sum();
            let b: i32 = (1..=n).step_by(2).map(|i| i * 1000).sum();
            a.wrapping_add(b).wrapping_add(15)
        },
        I32S,
    );
    let text = check1(
        &host_unrolled,
        |x: i64| {
            let acc = (0..5).fold(1i64, |a, _| a.wrapping_mul(x));
            (0..=3u32).fold(acc, |a, i| a.wrapping_add(x.wrapping_shl(i)))
        },
        &[i64::MIN, -3, -1, 0, 1, 2, 10, i64::MAX],
    );
    assert!(
        !text.contains("br ") && !text.contains("jump"),
        "host loops unroll:\n{text}"
    );
    check1(
        &host_collections,
        |x: i32| {
            let weights = [3, 0, -2, 5];
            let mut r = weights
                .iter()
                .fold(0i32, |r, w| r.wrapping_add(x.wrapping_mul(*w)));
            r += weights
                .iter()
                .enumerate()
                .filter(|(k, w)| **w > 0 && x > *k as i32)
                .count() as i32;
            for k in [3, 2, 1] {
                r = r.wrapping_mul(2).wrapping_add(k);
            }
            r
        },
        I32S,
    );
    check1(
        &nested_loops,
        |n: i32| {
            let n = n & 31;
            (0..n)
                .map(|i| (0..i).map(|j| i * j).sum::<i32>())
                .sum::<i32>()
        },
        I32S,
    );
    check1(
        &array_state,
        |x: i32| {
            let mut acc = [0i32, 1];
            for i in 0..(x & 15) {
                acc = [acc[1], acc[0].wrapping_add(acc[1]).wrapping_add(i)];
            }
            acc[0].wrapping_mul(7).wrapping_add(acc[1])
        },
        I32S,
    );
}

// ---------------------------------------------------------------------------------------------
// Exits

/// `break` and `continue` in a traced loop.
#[jit]
fn break_continue(n: Val<i32>) -> Val<i32> {
    let n = n & 1023;
    let mut sum = Val::new(0i32);
    for i in 0..n {
        if i % 2 == 0 {
            continue;
        }
        if sum > 5000 {
            break;
        }
        sum += i;
    }
    sum
}

/// A labelled `continue` of the outer loop and a labelled `break` out of both.
#[jit]
fn labeled_loops(n: Val<i32>) -> Val<i32> {
    let n = n & 63;
    let mut count = Val::new(0i32);
    'outer: for i in 0..n {
        for j in 0..n {
            if j > i {
                continue 'outer;
            }
            if i * j > 300 {
                break 'outer;
            }
            count += 1;
        }
    }
    count
}

/// Exits out of a `while`, a `loop` and a host loop nested in each other, with state at
/// several levels.
#[jit]
fn mixed_exits(x: Val<i32>) -> Val<i32> {
    let mut total = Val::new(0i32);
    let mut i = Val::new(0i32);
    'outer: while i < (x & 15) {
        i += 1;
        let mut j = Val::new(0i32);
        loop {
            j += 1;
            for k in 0..3 {
                if j == k + i {
                    continue 'outer;
                }
                total += k;
            }
            if j > 5 {
                break;
            }
            if total > 200 {
                break 'outer;
            }
        }
        total += 100;
    }
    total * 1000 + i
}

/// Early `return` from inside nested loops.
#[jit]
fn early_return(n: Val<i32>, target: Val<i32>) -> Val<i32> {
    let n = n & 63;
    for i in 0..n {
        for j in 0..n {
            if i * j == target {
                return i * 1000 + j;
            }
        }
    }
    -1
}

/// A `#[jit]` helper with early returns, inlined into its callers.
#[jit]
fn clamp_helper(x: Val<i32>, lo: Val<i32>, hi: Val<i32>) -> Val<i32> {
    if x < lo {
        return lo;
    }
    if x > hi {
        return hi;
    }
    x
}

/// Calls the helper inline, including inside a traced loop and a traced branch.
#[jit]
fn inline_calls(x: Val<i32>) -> Val<i32> {
    let y = clamp_helper(x, Val::new(-1000), Val::new(1000));
    let mut acc = Val::new(0i32);
    for i in 0..(x & 7) {
        acc += clamp_helper(y + i, Val::new(0), Val::new(50));
    }
    if y > 0 {
        acc += clamp_helper(y * 3, Val::new(0), Val::new(50));
    }
    acc
}

/// A helper returning `()` that stores through a pointer and returns early.
#[jit]
fn store_max(out: Ptr<i32>, a: Val<i32>, b: Val<i32>) {
    if a > b {
        out[0] = a;
        return;
    }
    out[0] = b;
}

/// Calls the unit helper in a loop.
#[jit]
fn call_unit_helper(out: Ptr<i32>, n: Val<i64>) {
    for i in 0..n {
        store_max(out.offset(i), out[i], Val::new(10));
    }
}

fn clamp_ref(x: i32, lo: i32, hi: i32) -> i32 {
    x.clamp(lo, hi)
}

#[test]
fn exits() {
    check1(
        &break_continue,
        |n: i32| {
            let mut sum = 0i32;
            for i in 0..(n & 1023) {
                if i % 2 == 0 {
                    continue;
                }
                if sum > 5000 {
                    break;
                }
                sum += i;
            }
            sum
        },
        I32S,
    );
    let text = check1(
        &labeled_loops,
        |n: i32| {
            let n = n & 63;
            let mut count = 0;
            'outer: for i in 0..n {
                for j in 0..n {
                    if j > i {
                        continue 'outer;
                    }
                    if i * j > 300 {
                        break 'outer;
                    }
                    count += 1;
                }
            }
            count
        },
        I32S,
    );
    insta::assert_snapshot!("labeled_loops", text);
    check1(
        &mixed_exits,
        |x: i32| {
            let (mut total, mut i) = (0i32, 0i32);
            'outer: while i < (x & 15) {
                i += 1;
                let mut j = 0;
                loop {
                    j += 1;
                    for k in 0..3 {
                        if j == k + i {
                            continue 'outer;
                        }
                        total += k;
                    }
                    if j > 5 {
                        break;
                    }
                    if total > 200 {
                        break 'outer;
                    }
                }
                total += 100;
            }
            total * 1000 + i
        },
        &(-2..20).collect::<Vec<_>>(),
    );
    check2(
        &early_return,
        |n: i32, target: i32| {
            let n = n & 63;
            for i in 0..n {
                for j in 0..n {
                    if i * j == target {
                        return i * 1000 + j;
                    }
                }
            }
            -1
        },
        &[0, 1, 5, 63, -1],
        &[-1, 0, 6, 35, 3000],
    );
    check1(
        &inline_calls,
        |x: i32| {
            let y = clamp_ref(x, -1000, 1000);
            let mut acc = (0..(x & 7)).map(|i| clamp_ref(y + i, 0, 50)).sum::<i32>();
            if y > 0 {
                acc += clamp_ref(y * 3, 0, 50);
            }
            acc
        },
        I32S,
    );
    let t = traced(&call_unit_helper);
    for data in ARRAYS {
        let want: Vec<i32> = data.iter().map(|&x| x.max(10)).collect();
        let mut direct = data.to_vec();
        let lent = [region(&mut direct)];
        let args = [addr(&mut direct), data.len() as u64];
        let r = nacre_trace::direct_call(&call_unit_helper, &args, &lent);
        assert_eq!((r, direct), (Ok(0), want.clone()));
        let mut compiled = data.to_vec();
        let r = t.exe.call(&[addr(&mut compiled), data.len() as u64]);
        assert_eq!((r, compiled), (Ok(0), want));
    }
}

// ---------------------------------------------------------------------------------------------
// Logic and comparisons

/// `&&` and `||` short-circuit around a division that would trap if evaluated.
#[jit]
fn short_circuit(a: Val<i32>, b: Val<i32>) -> Val<bool> {
    (b != 0 && a / b > 2) || (b == 0 && a > 5)
}

/// Counts its calls in `counter[0]` and returns `x > 0`.
#[jit]
fn counted(counter: Ptr<i32>, x: Val<i32>) -> Val<bool> {
    counter[0] += 1;
    x > 0
}

/// The right operand of `&&` runs only when the left one is true.
#[jit]
fn and_counts(a: Val<i32>, b: Val<i32>, counter: Ptr<i32>) -> Val<bool> {
    a > 0 && counted(counter, b)
}

/// The right operand of `||` runs only when the left one is false.
#[jit]
fn or_counts(a: Val<i32>, b: Val<i32>, counter: Ptr<i32>) -> Val<bool> {
    a > 0 || counted(counter, b)
}

thread_local! {
    static PROBES: Cell<u32> = const { Cell::new(0) };
}

/// A trace-time side effect.
fn probe() -> bool {
    PROBES.with(|p| p.set(p.get() + 1));
    true
}

/// `&&` on plain `bool`s short-circuits while tracing.
#[jit]
fn host_and(x: Val<i32>, flag: bool) -> Val<i32> {
    if flag && probe() {
        x + 1
    } else {
        x
    }
}

/// Comparisons mixing literals, plain values and `Val`s, packed into bits.
#[jit]
fn comparisons(x: Val<i32>, f: Val<f64>) -> Val<i32> {
    let limit = 5;
    let mut r = Val::new(0i32);
    if 3 < x {
        r |= 1;
    }
    if x <= limit {
        r |= 2;
    }
    if f >= 2.5 {
        r |= 4;
    }
    if 0.0 > f {
        r |= 8;
    }
    if x != 7 {
        r |= 16;
    }
    let big = x > 100;
    if big == true {
        r |= 32;
    }
    if limit < 10 {
        r |= 64;
    }
    r
}

/// Comparisons under parentheses combined with bit operators.
#[jit]
fn bool_ops(x: Val<i32>) -> Val<bool> {
    let inside = (x > -3) & (x < 3);
    let edge = (x == -3) | (x == 3);
    (inside | edge) ^ (x == 0)
}

/// `==` on a host enum that is `PartialEq` but not `PartialOrd`, and on a `String`, which
/// must not be moved by the comparison.
#[derive(PartialEq, Debug)]
enum Mode {
    Double,
    Negate,
}

#[jit]
fn host_equality(x: Val<i32>, mode: &Mode, name: &str) -> Val<i32> {
    let owned = String::from(name);
    let mut r = x;
    if *mode == Mode::Double {
        r *= 2;
    }
    if owned == "neg" && *mode != Mode::Double {
        r = -r;
    }
    r + owned.len() as i32
}

#[test]
fn logic() {
    let text = check2(
        &short_circuit,
        |a: i32, b: i32| (b != 0 && a.wrapping_div(b) > 2) || (b == 0 && a > 5),
        &[i32::MIN, -9, 0, 3, 6, 100, i32::MAX],
        &[-1, 0, 1, 2, 3],
    );
    insta::assert_snapshot!("short_circuit", text);
    let (and_t, or_t) = (traced(&and_counts), traced(&or_counts));
    for a in [-1, 0, 1] {
        for b in [-1, 1] {
            let args = |c: &mut [i32; 1]| {
                vec![
                    a.to_bits() as u64,
                    b.to_bits() as u64,
                    c.as_mut_ptr() as usize as u64,
                ]
            };
            // The result and how often the right operand ran, for `&&` and `||`.
            let (and_want, and_calls) = ((a > 0 && b > 0) as u64, (a > 0) as i32);
            let (or_want, or_calls) = ((a > 0 || b > 0) as u64, (a <= 0) as i32);
            let mut c = [0i32];
            assert_eq!(
                (and_t.exe.call(&args(&mut c)), c[0]),
                (Ok(and_want), and_calls),
                "compiled &&"
            );
            let mut c = [0i32];
            assert_eq!(
                (
                    nacre_trace::direct_call(&and_counts, &args(&mut c), &[region(&mut c)]),
                    c[0]
                ),
                (Ok(and_want), and_calls),
                "direct &&"
            );
            let mut c = [0i32];
            assert_eq!(
                (or_t.exe.call(&args(&mut c)), c[0]),
                (Ok(or_want), or_calls),
                "compiled ||"
            );
            let mut c = [0i32];
            assert_eq!(
                (
                    nacre_trace::direct_call(&or_counts, &args(&mut c), &[region(&mut c)]),
                    c[0]
                ),
                (Ok(or_want), or_calls),
                "direct ||"
            );
        }
    }
    for flag in [false, true] {
        let f = move |x: Val<i32>| host_and(x, flag);
        PROBES.with(|p| p.set(0));
        check1(
            &f,
            |x: i32| if flag { x.wrapping_add(1) } else { x },
            &[0, 5],
        );
        // Once while tracing, once per direct call.
        assert_eq!(PROBES.with(|p| p.get()), if flag { 3 } else { 0 });
    }
}

#[test]
fn comparisons_mixing_literals() {
    check2(
        &comparisons,
        |x: i32, f: f64| {
            let mut r = 0;
            r |= (3 < x) as i32;
            r |= ((x <= 5) as i32) << 1;
            r |= ((f >= 2.5) as i32) << 2;
            r |= ((0.0 > f) as i32) << 3;
            r |= ((x != 7) as i32) << 4;
            r |= ((x > 100) as i32) << 5;
            r | 64
        },
        I32S,
        &[-1.5, 0.0, 2.5, 3.0, f64::INFINITY],
    );
    check1(&bool_ops, |x: i32| ((-3..=3).contains(&x)) ^ (x == 0), I32S);
    for (mode, name) in [
        (Mode::Double, "neg"),
        (Mode::Negate, "neg"),
        (Mode::Negate, "x"),
    ] {
        let double = mode == Mode::Double;
        let f = move |x: Val<i32>| {
            host_equality(x, if double { &Mode::Double } else { &Mode::Negate }, name)
        };
        check1(
            &f,
            |x: i32| {
                let r = if double { x.wrapping_mul(2) } else { x };
                let r = if name == "neg" && !double {
                    r.wrapping_neg()
                } else {
                    r
                };
                r.wrapping_add(name.len() as i32)
            },
            SMALL,
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Pointers

/// Sum of an array (index reads).
#[jit]
fn array_sum(data: Ptr<i32>, n: Val<i64>) -> Val<i32> {
    let mut sum = Val::new(0i32);
    for i in 0..n {
        sum += data[i];
    }
    sum
}

/// In-place update through index reads and writes, and compound assignments.
#[jit]
fn array_update(data: Ptr<i32>, n: Val<i64>) -> Val<i32> {
    for i in 0..n {
        data[i] = data[i] * 3 + 1;
        if data[i] > 10 {
            data[i] -= 10;
        }
        data[i] += 1;
    }
    if n > 2 {
        data[n - 1] *= 2;
        data[0i64] ^= 0xff;
    }
    n.cast::<i32>()
}

/// In-place prefix sum: `acc` is state, the pointer writes are memory operations.
#[jit]
fn prefix_sum(data: Ptr<i32>, n: Val<i64>) -> Val<i32> {
    let mut acc = Val::new(0i32);
    for i in 0..n {
        acc += data[i];
        data[i] = acc;
    }
    acc
}

/// First index of the maximum (a comparison of loads, early exits).
#[jit]
fn argmax(data: Ptr<i32>, n: Val<i64>) -> Val<i64> {
    if n == 0 {
        return Val::new(-1i64);
    }
    let mut best = Val::new(0i64);
    for i in 1..n {
        if data[i] > data[best] {
            best = i;
        }
    }
    best
}

#[test]
fn pointers() {
    check_array(
        &array_sum,
        |v: &mut Vec<i32>| v.iter().fold(0i32, |a, b| a.wrapping_add(*b)),
        ARRAYS,
    );
    let text = check_array(
        &array_update,
        |v: &mut Vec<i32>| {
            for x in v.iter_mut() {
                *x = x.wrapping_mul(3).wrapping_add(1);
                if *x > 10 {
                    *x -= 10;
                }
                *x = x.wrapping_add(1);
            }
            let n = v.len();
            if n > 2 {
                v[n - 1] = v[n - 1].wrapping_mul(2);
                v[0] ^= 0xff;
            }
            n as i32
        },
        ARRAYS,
    );
    insta::assert_snapshot!("array_update", text);
    check_array(
        &prefix_sum,
        |v: &mut Vec<i32>| {
            let mut acc = 0i32;
            for x in v.iter_mut() {
                acc = acc.wrapping_add(*x);
                *x = acc;
            }
            acc
        },
        ARRAYS,
    );
    check_array(
        &argmax,
        |v: &mut Vec<i32>| {
            let mut best = 0;
            for (i, x) in v.iter().enumerate() {
                if *x > v[best] {
                    best = i;
                }
            }
            if v.is_empty() {
                -1
            } else {
                best as i64
            }
        },
        ARRAYS,
    );
}

// ---------------------------------------------------------------------------------------------
// Trace-time specialisation

const NEGATE: bool = true;

/// A helper specialised on plain parameters: its `if`s are decided while tracing.
#[jit]
fn specialised(x: Val<i32>, negate: bool, scale: i32) -> Val<i32> {
    let mut r = x;
    if negate {
        r = -r;
    }
    if scale != 1 {
        r *= scale;
    }
    r
}

/// Instantiates the helper from a constant and from a trace-time loop.
#[jit]
fn specialise(x: Val<i32>) -> Val<i32> {
    let mut acc = Val::new(0i32);
    for k in 0..3 {
        acc += specialised(x, k == 1, k + 1);
    }
    acc + specialised(x, NEGATE, 1)
}

/// Host state that changes in a host `if` inside a traced loop (it agrees on every path).
#[jit]
fn host_state(x: Val<i32>) -> Val<i32> {
    let mut scale = 1;
    let mut r = Val::new(0i32);
    for k in 0..4 {
        if k % 2 == 0 {
            scale *= 2;
        }
        if x > k {
            r += x * scale;
        }
    }
    r
}

#[test]
fn specialisation() {
    let text = check1(
        &specialise,
        |x: i32| {
            let s = |x: i32, negate: bool, scale: i32| {
                if negate { x.wrapping_neg() } else { x }.wrapping_mul(scale)
            };
            (0..3)
                .fold(0i32, |a, k| a.wrapping_add(s(x, k == 1, k + 1)))
                .wrapping_add(s(x, NEGATE, 1))
        },
        I32S,
    );
    assert!(
        !text.contains("br ") && !text.contains("jump"),
        "plain conditions are decided while tracing:\n{text}"
    );
    insta::assert_snapshot!("specialise", text);
    check1(
        &host_state,
        |x: i32| {
            let (mut scale, mut r) = (1, 0i32);
            for k in 0..4 {
                if k % 2 == 0 {
                    scale *= 2;
                }
                if x > k {
                    r = r.wrapping_add(x.wrapping_mul(scale));
                }
            }
            r
        },
        I32S,
    );
}

// ---------------------------------------------------------------------------------------------
// Long chains and `#[kernel]`

/// Defines `$name(x)`: an `else if` chain with one arm per listed value (the `if`s are
/// written out before `#[jit]` sees them), and a statement chain assigning a variable.
macro_rules! chains {
    ($value:ident, $stmt:ident: $first:literal $(, $rest:literal)*) => {
        #[jit]
        fn $value(x: Val<i32>) -> Val<i32> {
            if x == $first {
                $first * 7 + 1
            } $(else if x == $rest {
                $rest * 7 + 1
            })* else {
                x
            }
        }

        #[jit]
        fn $stmt(x: Val<i32>) -> Val<i32> {
            let mut r = Val::new(-1i32);
            let mut hits = Val::new(0i32);
            if x == $first {
                r = x * 7;
            } $(else if x == $rest {
                r = x * 7;
                hits += $rest;
            })*
            r + hits
        }
    };
}

chains!(chain100, chain100_stmt:
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
    20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39,
    40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59,
    60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79,
    80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99);

/// `#[kernel]` is, for now, `#[jit]`.
#[kernel]
fn kernel_alias(data: Ptr<f32>, n: Val<i64>, a: Val<f32>) {
    for i in 0..n {
        data[i] = data[i] * a + 1.0;
    }
}

#[test]
fn hundred_arm_else_if_chain() {
    let inputs: Vec<i32> = (-2..103).chain([i32::MIN, i32::MAX]).collect();
    let text = check1(
        &chain100,
        |x: i32| if (0..100).contains(&x) { x * 7 + 1 } else { x },
        &inputs,
    );
    assert_eq!(text.matches("br ").count(), 100);
    check1(
        &chain100_stmt,
        |x: i32| if (0..100).contains(&x) { x * 7 + x } else { -1 },
        &inputs,
    );
}

#[test]
fn kernel_is_an_alias_of_jit() {
    let t = traced(&kernel_alias);
    let data = [1.0f32, -2.5, 4.0];
    let mut direct = data;
    let args = |v: &mut [f32; 3]| [v.as_mut_ptr() as usize as u64, 3, 2.0f32.to_bits() as u64];
    assert_eq!(
        nacre_trace::direct_call(&kernel_alias, &args(&mut direct), &[region(&mut direct)]),
        Ok(0)
    );
    let mut compiled = data;
    assert_eq!(t.exe.call(&args(&mut compiled)), Ok(0));
    assert_eq!(direct, [3.0, -4.0, 9.0]);
    assert_eq!(compiled, direct);
}

// ---------------------------------------------------------------------------------------------
// Methods

/// A polynomial with host coefficients, evaluated by a `#[jit]` method.
struct Poly {
    coeffs: Vec<i32>,
}

impl Poly {
    /// Horner's scheme; zero coefficients are skipped while tracing.
    #[jit]
    fn eval(&self, x: Val<i32>) -> Val<i32> {
        let mut acc = Val::new(0i32);
        for c in self.coeffs.iter() {
            acc *= x;
            if *c != 0 {
                acc += *c;
            }
        }
        if self.coeffs.is_empty() {
            return Val::new(-1);
        }
        acc
    }
}

#[test]
fn methods() {
    for coeffs in [vec![], vec![3], vec![1, 0, -2, 5]] {
        let reference = coeffs.clone();
        let poly = Poly { coeffs };
        let f = move |x: Val<i32>| poly.eval(x);
        check1(
            &f,
            |x: i32| {
                if reference.is_empty() {
                    return -1;
                }
                reference
                    .iter()
                    .fold(0i32, |a, c| a.wrapping_mul(x).wrapping_add(*c))
            },
            I32S,
        );
    }
}
