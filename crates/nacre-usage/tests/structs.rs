//! Structs of traced values carried through loops and branches (`#[derive(Carry)]`), with
//! `nacre` as the only dependency.

use nacre::prelude::*;
use nacre::Carry;

/// Running statistics: nested arrays and a plain field travel with the traced ones.
#[derive(Clone, Copy, Carry)]
struct Stats {
    sum: Val<f64>,
    count: Val<u32>,
    range: [Val<f64>; 2],
    big: Counter,
}

/// A nested carried struct (a tuple struct).
#[derive(Clone, Copy, Carry)]
struct Counter(Val<u32>, u8);

impl Stats {
    fn new() -> Stats {
        Stats {
            sum: Val::new(0.0),
            count: Val::new(0),
            range: [Val::new(f64::MAX), Val::new(f64::MIN)],
            big: Counter(Val::new(0), 7),
        }
    }
}

/// Mean plus spread plus the number of elements above 100, over `p[0..n]`.
#[jit]
fn summary(p: Ptr<f64>, n: Val<u32>) -> Val<f64> {
    let mut s = Stats::new();
    for i in 0..n {
        let x = p[i];
        s.sum += x;
        s.count += 1u32;
        s.range = [s.range[0].min(x), s.range[1].max(x)];
        if x > 100.0 {
            s.big = Counter(s.big.0 + 1u32, s.big.1);
        }
    }
    let mean = s.sum / s.count.cast::<f64>();
    mean + (s.range[1] - s.range[0]) + s.big.0.cast::<f64>() * f64::from(s.big.1)
}

#[test]
fn a_struct_is_carried_through_a_loop_and_a_branch() {
    let engine = Engine::new(Options::default()).unwrap();
    let f = engine.compile(summary).unwrap();
    let data = [1.0, 200.0, 3.0, 400.0];
    let mean = data.iter().sum::<f64>() / 4.0;
    let want = mean + (400.0 - 1.0) + 2.0 * 7.0;
    assert_eq!(f.call(&data[..], 4).unwrap(), want);
}
