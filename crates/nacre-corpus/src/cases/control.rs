//! Structured control flow: branches, loops, exits, short-circuit logic, trace-time
//! specialisation.

use crate::registry::{scalar_case, Case};
use nacre::prelude::*;

/// The README's example: sum of the multiples of 3 below `n` (bounded).
#[jit]
pub fn conditional_sum(n: Val<i32>) -> Val<i32> {
    let n = n & 1023;
    let mut sum = Val::new(0i32);
    for i in 0..n {
        if i % 3 == 0 {
            sum += i;
        }
    }
    sum
}

/// `if` as a statement with `else`.
#[jit]
pub fn if_else_stmt(a: Val<i32>, b: Val<i32>) -> Val<i32> {
    let mut r = a;
    if a > b {
        r = a - b;
    } else {
        r = b - a;
    }
    r
}

/// `if` as an expression.
#[jit]
pub fn if_expr(a: Val<i64>) -> Val<i64> {
    let r = if a < 0 { -a } else { a * 2 };
    r + 1
}

/// An `else if` chain classifying a value.
#[jit]
pub fn else_if_chain(x: Val<i32>) -> Val<i32> {
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

/// Nested ifs.
#[jit]
pub fn nested_if(a: Val<i32>, b: Val<i32>) -> Val<i32> {
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

/// Sequential ifs accumulating.
#[jit]
pub fn sequential_ifs(x: Val<u32>) -> Val<u32> {
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

/// `&&` and `||` short-circuit around a division that would trap if evaluated.
#[jit]
pub fn short_circuit(a: Val<i32>, b: Val<i32>) -> Val<bool> {
    (b != 0 && a / b > 2) || (b == 0 && a > 5)
}

/// A `while` loop.
#[jit]
pub fn while_sum(n: Val<u32>) -> Val<u32> {
    let n = n & 4095;
    let mut i = Val::new(0u32);
    let mut sum = Val::new(0u32);
    while i < n {
        sum += i * i;
        i += 1;
    }
    sum
}

/// A `for` loop with a step.
#[jit]
pub fn for_step(n: Val<i32>) -> Val<i32> {
    let n = n & 4095;
    let mut sum = Val::new(0i32);
    for i in (0..n).step_by(3) {
        sum += i;
    }
    sum
}

/// `loop` with `break`.
#[jit]
pub fn loop_break(x: Val<u32>) -> Val<u32> {
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

/// Nested loops.
#[jit]
pub fn nested_loops(n: Val<i32>) -> Val<i32> {
    let n = n & 63;
    let mut sum = Val::new(0i32);
    for i in 0..n {
        for j in 0..i {
            sum += i * j;
        }
    }
    sum
}

/// `break` and `continue` in a loop.
#[jit]
pub fn break_continue(n: Val<i32>) -> Val<i32> {
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

/// A labelled `break` out of an inner loop and `continue` of the outer one.
#[jit]
pub fn labeled_loops(n: Val<i32>) -> Val<i32> {
    let n = n & 127;
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

/// Early `return` from inside nested loops.
#[jit]
pub fn early_return(n: Val<i32>, target: Val<i32>) -> Val<i32> {
    let n = n & 127;
    for i in 0..n {
        for j in 0..n {
            if i * j == target {
                return i * 1000 + j;
            }
        }
    }
    -1
}

/// A host loop that unrolls at trace time (power by repeated multiplication).
#[jit]
pub fn static_unroll(x: Val<i64>) -> Val<i64> {
    let mut acc = Val::new(1i64);
    for _ in 0..7 {
        acc *= x;
    }
    acc
}

/// Trace-time specialisation: a host table drives the generated code.
#[jit]
pub fn host_table(x: Val<i32>) -> Val<i32> {
    let weights = [3, 0, -2, 5];
    let mut r = Val::new(0i32);
    for k in 0..weights.len() {
        if weights[k] != 0 {
            r += x * weights[k] + k as i32;
        }
    }
    r
}

/// A `while` loop whose condition uses `&&`.
#[jit]
pub fn while_and(a: Val<u32>) -> Val<u32> {
    let mut x = a;
    let mut n = Val::new(0u32);
    while x > 0 && n < 40 {
        x /= 2;
        n += 1;
    }
    n
}

/// `match` on a traced integer: literals, `|`, ranges (closed and half-open), a guarded
/// binding and `_`, recorded as a chain of branches.
#[jit]
pub fn match_classify(x: Val<i32>) -> Val<i32> {
    match x {
        0 => Val::new(100),
        1 | 2 | 3 => x * 10,
        -5..=-1 => -x,
        10..20 => x + 1000,
        n if n > 1000 => n / 2,
        big @ 500..=1000 => big - 500,
        _ => Val::new(-1),
    }
}

/// `match` on a traced `bool` (both arms, no `_`) inside a loop, as a statement.
#[jit]
pub fn match_in_loop(n: Val<u32>) -> Val<u32> {
    let n = n & 255u32;
    let mut acc = Val::new(0u32);
    for i in 0..n {
        match (i & 1u32) == 0u32 {
            true => acc += i,
            false => acc ^= i,
        }
    }
    acc
}

/// The cases of this module.
pub fn cases() -> Vec<Case> {
    vec![
        scalar_case("match_classify", match_classify, |x: i32| {
            Ok(match x {
                0 => 100,
                1..=3 => x * 10,
                -5..=-1 => -x,
                10..20 => x + 1000,
                n if n > 1000 => n / 2,
                500..=1000 => x - 500,
                _ => -1,
            })
        }),
        scalar_case("match_in_loop", match_in_loop, |n: u32| {
            let mut acc = 0u32;
            for i in 0..(n & 255) {
                if i & 1 == 0 {
                    acc = acc.wrapping_add(i);
                } else {
                    acc ^= i;
                }
            }
            Ok(acc)
        }),
        scalar_case("conditional_sum", conditional_sum, |n: i32| {
            Ok((0..(n & 1023)).filter(|i| i % 3 == 0).sum::<i32>())
        }),
        scalar_case("if_else_stmt", if_else_stmt, |a: i32, b: i32| {
            Ok(if a > b {
                a.wrapping_sub(b)
            } else {
                b.wrapping_sub(a)
            })
        }),
        scalar_case("if_expr", if_expr, |a: i64| {
            Ok(if a < 0 {
                a.wrapping_neg()
            } else {
                a.wrapping_mul(2)
            }
            .wrapping_add(1))
        }),
        scalar_case("else_if_chain", else_if_chain, |x: i32| {
            Ok(if x < -100 {
                -2
            } else if x < 0 {
                -1
            } else if x == 0 {
                0
            } else if x <= 100 {
                1
            } else {
                2
            })
        }),
        scalar_case("nested_if", nested_if, |a: i32, b: i32| {
            Ok(if a > 0 {
                if b > 0 {
                    a.wrapping_add(b)
                } else {
                    a.wrapping_sub(b)
                }
            } else if b > 0 {
                b.wrapping_sub(a)
            } else {
                0
            })
        }),
        scalar_case("sequential_ifs", sequential_ifs, |x: u32| {
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
            Ok(r)
        }),
        scalar_case("short_circuit", short_circuit, |a: i32, b: i32| {
            Ok((b != 0 && a.wrapping_div(b) > 2) || (b == 0 && a > 5))
        }),
        scalar_case("while_sum", while_sum, |n: u32| {
            Ok((0..(n & 4095)).fold(0u32, |s, i| s.wrapping_add(i.wrapping_mul(i))))
        }),
        scalar_case("for_step", for_step, |n: i32| {
            Ok((0..(n & 4095)).step_by(3).sum::<i32>())
        }),
        scalar_case("loop_break", loop_break, |x: u32| {
            let mut v = x | 1;
            let mut steps = 0u32;
            while v < 1_000_000 {
                v = v.wrapping_mul(3);
                steps += 1;
            }
            Ok(steps)
        }),
        scalar_case("nested_loops", nested_loops, |n: i32| {
            let n = n & 63;
            Ok((0..n)
                .map(|i| (0..i).map(|j| i * j).sum::<i32>())
                .sum::<i32>())
        }),
        scalar_case("break_continue", break_continue, |n: i32| {
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
            Ok(sum)
        }),
        scalar_case("labeled_loops", labeled_loops, |n: i32| {
            let n = n & 127;
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
            Ok(count)
        }),
        scalar_case("early_return", early_return, |n: i32, target: i32| {
            let n = n & 127;
            for i in 0..n {
                for j in 0..n {
                    if i * j == target {
                        return Ok(i * 1000 + j);
                    }
                }
            }
            Ok(-1)
        }),
        scalar_case("static_unroll", static_unroll, |x: i64| {
            Ok((0..7).fold(1i64, |a, _| a.wrapping_mul(x)))
        }),
        scalar_case("host_table", host_table, |x: i32| {
            let weights = [3, 0, -2, 5];
            let mut r = 0i32;
            for (k, w) in weights.iter().enumerate() {
                if *w != 0 {
                    r = r.wrapping_add(x.wrapping_mul(*w).wrapping_add(k as i32));
                }
            }
            Ok(r)
        }),
        scalar_case("while_and", while_and, |a: u32| {
            let (mut x, mut n) = (a, 0u32);
            while x > 0 && n < 40 {
                x /= 2;
                n += 1;
            }
            Ok(n)
        }),
    ]
}
