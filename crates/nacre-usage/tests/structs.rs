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

/// A 2D point of traced coordinates.
#[derive(Clone, Copy, Carry)]
struct Point {
    x: Val<f32>,
    y: Val<f32>,
}

/// A segment: a nested struct and an array field.
#[derive(Clone, Copy, Carry)]
struct Segment {
    from: Point,
    to: Point,
    weight: [Val<f32>; 2],
}

/// A `#[jit]` helper that takes and returns structs (inlined into its caller).
#[jit]
fn midpoint(s: Segment) -> Point {
    let w = s.weight[0] + s.weight[1];
    if w > 0.0 {
        Point {
            x: (s.from.x * s.weight[0] + s.to.x * s.weight[1]) / w,
            y: (s.from.y * s.weight[0] + s.to.y * s.weight[1]) / w,
        }
    } else {
        s.from
    }
}

/// A helper traced once as an IR function of its own (`call`), taking a struct.
#[jit]
fn length_sq(s: Segment) -> Val<f32> {
    let (dx, dy) = (s.to.x - s.from.x, s.to.y - s.from.y);
    dx * dx + dy * dy
}

#[jit]
fn segment_stats(x0: Val<f32>, y0: Val<f32>, x1: Val<f32>, y1: Val<f32>) -> Val<f32> {
    let s = Segment {
        from: Point { x: x0, y: y0 },
        to: Point { x: x1, y: y1 },
        weight: [Val::new(1.0), Val::new(3.0)],
    };
    let m = midpoint(s);
    call(length_sq, (s,)) + call(length_sq, (Segment { to: m, ..s },)) * 100.0
}

#[test]
fn structs_are_parameters_and_results_of_traced_functions() {
    let engine = Engine::new(Options::default()).unwrap();
    let traced = nacre::trace_module(&segment_stats).unwrap();
    // `length_sq` is one IR function taking the segment's six scalars.
    let text = traced.module.to_string();
    assert!(
        text.contains("function @length_sq(f32, f32, f32, f32, f32, f32) -> f32"),
        "{text}"
    );
    let f = engine.compile(segment_stats).unwrap();
    // Midpoint of (0,0)-(4,8) weighted 1:3 is (3,6); lengths² are 80 and 45.
    assert_eq!(f.call(0.0, 0.0, 4.0, 8.0).unwrap(), 80.0 + 45.0 * 100.0);
}

/// A kernel that takes a struct by value: each thread maps `x[i]` through an affine map.
#[derive(Clone, Copy, Carry)]
struct Affine {
    scale: Val<f32>,
    shift: Val<f32>,
}

#[kernel]
fn affine(map: Affine, x: Ptr<f32>, n: Val<u32>) {
    let i = nacre::gpu::global_id_x();
    if i < n {
        x[i] = x[i] * map.scale + map.shift;
    }
}

#[jit]
fn run_affine(x: Ptr<f32>, n: Val<u32>, scale: Val<f32>) {
    let map = Affine {
        scale,
        shift: Val::new(1.0),
    };
    nacre::gpu::launch(
        affine,
        nacre::gpu::Grid::new((n + 63) / 64),
        nacre::gpu::Block::new(64u32),
        (map, x, n),
    );
}

#[test]
fn a_struct_is_passed_by_value_to_a_kernel() {
    let engine = Engine::new(Options::default()).unwrap();
    let f = engine.compile(run_affine).unwrap();
    let mut x: Vec<f32> = (0..100).map(|i| i as f32).collect();
    f.call(&mut x, 100, 2.0).unwrap();
    assert!(x
        .iter()
        .enumerate()
        .all(|(i, &v)| v == i as f32 * 2.0 + 1.0));
}
