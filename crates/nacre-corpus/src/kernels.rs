//! The kernel corpus: the seed's GPU kernels, each with a traced host function that launches
//! it and a check against plain Rust. Shared by the CPU execution tests and the GPU backends:
//! every check allocates its arrays on the engine's device (`Engine::device`).

use nacre::atomic::{fence, Ordering};
use nacre::gpu::{
    block_dim_x, block_idx, block_idx_x, dynamic_shared, dynamic_shared_len, global_id_x,
    global_id_y, global_id_z, global_size_x, global_size_y, grid_dim_x, launch, launch_with_shared,
    shared_array, sync_threads, thread_idx, thread_idx_x, Array, Block, Grid,
};
use nacre::prelude::*;
use nacre::{f16, kernel, Engine};

pub mod single_pass;
pub mod tiled;
pub mod warp;
pub mod wide;

/// One kernel case.
pub struct KernelCase {
    /// A unique name.
    pub name: &'static str,
    /// True if the kernel is correct with grid = block = 1 (grid-stride loops), so it also
    /// runs in the serial CPU mode.
    pub grid_stride: bool,
    /// Compiles the host function on `engine`, runs it on data of size `n` (approximately;
    /// kernels round as they need) and compares with plain Rust.
    pub check: fn(&Engine, usize) -> Result<(), String>,
    /// Traces the host function that [`KernelCase::check`] runs into a module holding it and
    /// the kernels it launches, with its linkage (for code generators that print kernels on
    /// their own).
    pub trace: fn() -> Result<nacre::Traced, nacre::Error>,
}

impl std::fmt::Debug for KernelCase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelCase")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// `n` xorshift32 values after `start` (which must not be 0).
fn xorshift(n: usize, start: u32) -> impl Iterator<Item = u32> {
    let mut x = start;
    (0..n).map(move |_| {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    })
}

/// Deterministic pseudo-random `u32`s (xorshift32 from a seed).
pub fn pseudo_random_u32(n: usize, seed: u32) -> Vec<u32> {
    xorshift(n, seed.wrapping_mul(2_654_435_761) | 1).collect()
}

fn random_f32(n: usize, seed: u32) -> Vec<f32> {
    let start = seed.wrapping_mul(2_654_435_761).wrapping_add(12345);
    xorshift(n, start)
        .map(|x| (x % 2000) as f32 / 1000.0 - 1.0)
        .collect()
}

fn compare_f32(what: &str, got: &[f32], want: &[f32], tol: f32) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: length {} vs {}", got.len(), want.len()));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if (g - w).abs() > tol * (1.0 + w.abs()) {
            return Err(format!("{what}[{i}]: got {g}, expected {w}"));
        }
    }
    Ok(())
}

fn compare<T: PartialEq + std::fmt::Debug>(
    what: &str,
    got: &[T],
    want: &[T],
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: length {} vs {}", got.len(), want.len()));
    }
    match got.iter().zip(want).position(|(g, w)| g != w) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}[{i}]: got {:?}, expected {:?}",
            got[i], want[i]
        )),
    }
}

// ---- index queries ---------------------------------------------------------------------

/// Writes `threadIdx.x`, `blockIdx.x`, `blockDim.x` and `gridDim.x` of every thread.
#[kernel]
pub fn index_queries(out: Ptr<u32>) {
    let gid = global_id_x();
    out[gid * 4] = thread_idx_x();
    out[gid * 4 + 1] = block_idx_x();
    out[gid * 4 + 2] = block_dim_x();
    out[gid * 4 + 3] = grid_dim_x();
}

/// Launches [`index_queries`] on `blocks` × 64 threads.
#[jit]
pub fn run_index_queries(out: Ptr<u32>, blocks: Val<u32>) {
    launch(index_queries, Grid::new(blocks), Block::new(64u32), (out,));
}

fn check_index_queries(engine: &Engine, n: usize) -> Result<(), String> {
    let blocks = (n / 64).clamp(1, 64) as u32;
    let f = engine.compile(run_index_queries).map_err(err)?;
    let mut out = Array::<u32>::alloc_on(engine.device(), blocks as usize * 64 * 4).map_err(err)?;
    f.call(&mut out, blocks).map_err(err)?;
    let want: Vec<u32> = (0..blocks * 64)
        .flat_map(|g| [g % 64, g / 64, 64, blocks])
        .collect();
    compare("index queries", out.as_slice(), &want)
}

/// The global thread index, 3D: each thread writes its linear id at its 3D position
/// (`global_id_x/y/z`, `global_size_x/y`).
#[kernel]
pub fn index_3d(out: Ptr<u32>) {
    let (x, y, z) = (global_id_x(), global_id_y(), global_id_z());
    let (width, height) = (global_size_x(), global_size_y());
    out[(z * height + y) * width + x] = x + y * 1000 + z * 1_000_000;
}

/// Launches [`index_3d`] on a 2×3×2 grid of 4×2×2 blocks.
#[jit]
pub fn run_index_3d(out: Ptr<u32>) {
    launch(
        index_3d,
        Grid::new3(2u32, 3u32, 2u32),
        Block::new3(4u32, 2u32, 2u32),
        (out,),
    );
}

fn check_index_3d(engine: &Engine, _: usize) -> Result<(), String> {
    let (w, h, d) = (8u32, 6u32, 4u32);
    let f = engine.compile(run_index_3d).map_err(err)?;
    let mut out = Array::<u32>::alloc_on(engine.device(), (w * h * d) as usize).map_err(err)?;
    f.call(&mut out).map_err(err)?;
    let want: Vec<u32> = (0..d)
        .flat_map(|z| (0..h).flat_map(move |y| (0..w).map(move |x| x + y * 1000 + z * 1_000_000)))
        .collect();
    compare("3D index", out.as_slice(), &want)
}

/// Only barriers: every thread writes, syncs, reads its neighbour's value.
#[kernel]
pub fn sync_only(out: Ptr<u32>) {
    let tile = shared_array::<u32, 128>();
    let t = thread_idx_x();
    tile[t] = t * 3;
    sync_threads();
    sync_threads();
    let next = (t + 1) % block_dim_x();
    out[global_id_x()] = tile[next];
}

/// Launches [`sync_only`] with 128 threads per block.
#[jit]
pub fn run_sync_only(out: Ptr<u32>, blocks: Val<u32>) {
    launch(sync_only, Grid::new(blocks), Block::new(128u32), (out,));
}

fn check_sync_only(engine: &Engine, n: usize) -> Result<(), String> {
    let blocks = (n / 128).clamp(1, 256) as u32;
    let f = engine.compile(run_sync_only).map_err(err)?;
    let mut out = Array::<u32>::alloc_on(engine.device(), blocks as usize * 128).map_err(err)?;
    f.call(&mut out, blocks).map_err(err)?;
    let want: Vec<u32> = (0..blocks * 128)
        .map(|g| ((g % 128 + 1) % 128) * 3)
        .collect();
    compare("sync only", out.as_slice(), &want)
}

/// A bounds check against `n`: threads past the end do nothing.
#[kernel]
pub fn bounded_index(out: Ptr<u32>, n: Val<u32>) {
    let i = global_id_x();
    if i < n {
        out[i] = i * 2 + 1;
    }
}

/// Launches [`bounded_index`] over `n` with 256-thread blocks.
#[jit]
pub fn run_bounded_index(out: Ptr<u32>, n: Val<u32>) {
    let blocks = (n + 255) / 256;
    launch(
        bounded_index,
        Grid::new(blocks),
        Block::new(256u32),
        (out, n),
    );
}

fn check_bounded_index(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1) as u32 | 1;
    let f = engine.compile(run_bounded_index).map_err(err)?;
    let mut out = Array::<u32>::alloc_on(engine.device(), n as usize).map_err(err)?;
    f.call(&mut out, n).map_err(err)?;
    let want: Vec<u32> = (0..n).map(|i| i * 2 + 1).collect();
    compare("bounded index", out.as_slice(), &want)
}

// ---- vector kernels --------------------------------------------------------------------

/// `c = a + b` with exactly one thread per element (no bounds check).
#[kernel]
pub fn vec_add(a: Ptr<f32>, b: Ptr<f32>, c: Ptr<f32>) {
    let i = global_id_x();
    c[i] = a[i] + b[i];
}

/// Launches [`vec_add`] with a fixed 256 threads per block over `blocks` blocks.
#[jit]
pub fn run_vec_add(a: Ptr<f32>, b: Ptr<f32>, c: Ptr<f32>, blocks: Val<u32>) {
    launch(vec_add, Grid::new(blocks), Block::new(256u32), (a, b, c));
}

fn check_vec_add(engine: &Engine, n: usize) -> Result<(), String> {
    let blocks = n.div_ceil(256).max(1);
    let n = blocks * 256;
    let (x, y) = (random_f32(n, 1), random_f32(n, 2));
    let (a, b) = (
        Array::copy_on(engine.device(), &x).map_err(err)?,
        Array::copy_on(engine.device(), &y).map_err(err)?,
    );
    let mut c = Array::<f32>::alloc_on(engine.device(), n).map_err(err)?;
    let f = engine.compile(run_vec_add).map_err(err)?;
    f.call(&a, &b, &mut c, blocks as u32).map_err(err)?;
    let want: Vec<f32> = x.iter().zip(&y).map(|(p, q)| p + q).collect();
    compare("vec_add", c.as_slice(), &want)
}

/// Launches [`vec_add`] with the grid computed from `n` (a multiple of 256).
#[jit]
pub fn run_vec_add_dynamic(a: Ptr<f32>, b: Ptr<f32>, c: Ptr<f32>, n: Val<u32>) {
    launch(vec_add, Grid::new(n / 256), Block::new(256u32), (a, b, c));
}

fn check_vec_add_dynamic(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.div_ceil(256).max(1) * 256;
    let (x, y) = (random_f32(n, 3), random_f32(n, 4));
    let (a, b) = (
        Array::copy_on(engine.device(), &x).map_err(err)?,
        Array::copy_on(engine.device(), &y).map_err(err)?,
    );
    let mut c = Array::<f32>::alloc_on(engine.device(), n).map_err(err)?;
    let f = engine.compile(run_vec_add_dynamic).map_err(err)?;
    f.call(&a, &b, &mut c, n as u32).map_err(err)?;
    let want: Vec<f32> = x.iter().zip(&y).map(|(p, q)| p + q).collect();
    compare("vec_add_dynamic", c.as_slice(), &want)
}

/// `c = a + b` with a bounds check.
#[kernel]
pub fn vec_add_bounded(a: Ptr<f32>, b: Ptr<f32>, c: Ptr<f32>, n: Val<u32>) {
    let i = global_id_x();
    if i < n {
        c[i] = a[i] + b[i];
    }
}

/// Launches [`vec_add_bounded`] over any `n`.
#[jit]
pub fn run_vec_add_bounded(a: Ptr<f32>, b: Ptr<f32>, c: Ptr<f32>, n: Val<u32>) {
    launch(
        vec_add_bounded,
        Grid::new((n + 255) / 256),
        Block::new(256u32),
        (a, b, c, n),
    );
}

fn check_vec_add_bounded(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1) | 1;
    let (x, y) = (random_f32(n, 5), random_f32(n, 6));
    let (a, b) = (
        Array::copy_on(engine.device(), &x).map_err(err)?,
        Array::copy_on(engine.device(), &y).map_err(err)?,
    );
    let mut c = Array::<f32>::alloc_on(engine.device(), n).map_err(err)?;
    let f = engine.compile(run_vec_add_bounded).map_err(err)?;
    f.call(&a, &b, &mut c, n as u32).map_err(err)?;
    let want: Vec<f32> = x.iter().zip(&y).map(|(p, q)| p + q).collect();
    compare("vec_add_bounded", c.as_slice(), &want)
}

/// `a *= s` in place.
#[kernel]
pub fn vec_scale(a: Ptr<f32>, s: Val<f32>, n: Val<u32>) {
    let i = global_id_x();
    if i < n {
        a[i] = a[i] * s;
    }
}

/// Launches [`vec_scale`].
#[jit]
pub fn run_vec_scale(a: Ptr<f32>, s: Val<f32>, n: Val<u32>) {
    launch(
        vec_scale,
        Grid::new((n + 127) / 128),
        Block::new(128u32),
        (a, s, n),
    );
}

fn check_vec_scale(engine: &Engine, n: usize) -> Result<(), String> {
    let x = random_f32(n.max(1), 7);
    let mut a = Array::copy_on(engine.device(), &x).map_err(err)?;
    let f = engine.compile(run_vec_scale).map_err(err)?;
    f.call(&mut a, 2.5, x.len() as u32).map_err(err)?;
    let want: Vec<f32> = x.iter().map(|v| v * 2.5).collect();
    compare("vec_scale", a.as_slice(), &want)
}

/// `y = alpha * x + y` with a bounds check.
#[kernel]
pub fn saxpy(alpha: Val<f32>, x: Ptr<f32>, y: Ptr<f32>, n: Val<u32>) {
    let i = global_id_x();
    if i < n {
        y[i] = alpha * x[i] + y[i];
    }
}

/// Launches [`saxpy`].
#[jit]
pub fn run_saxpy(alpha: Val<f32>, x: Ptr<f32>, y: Ptr<f32>, n: Val<u32>) {
    launch(
        saxpy,
        Grid::new((n + 255) / 256),
        Block::new(256u32),
        (alpha, x, y, n),
    );
}

fn check_saxpy(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1);
    let (xv, yv) = (random_f32(n, 8), random_f32(n, 9));
    let (x, mut y) = (
        Array::copy_on(engine.device(), &xv).map_err(err)?,
        Array::copy_on(engine.device(), &yv).map_err(err)?,
    );
    let f = engine.compile(run_saxpy).map_err(err)?;
    f.call(1.5, &x, &mut y, n as u32).map_err(err)?;
    let want: Vec<f32> = xv.iter().zip(&yv).map(|(a, b)| 1.5 * a + b).collect();
    compare("saxpy", y.as_slice(), &want)
}

/// Nested ifs sorting values into four buckets.
#[kernel]
pub fn classify(v: Ptr<f32>, out: Ptr<u32>, n: Val<u32>) {
    let i = global_id_x();
    if i < n {
        let x = v[i];
        if x < 0.0 {
            if x < -0.5 {
                out[i] = 0u32;
            } else {
                out[i] = 1u32;
            }
        } else if x < 0.5 {
            out[i] = 2u32;
        } else {
            out[i] = 3u32;
        }
    }
}

/// Launches [`classify`].
#[jit]
pub fn run_classify(v: Ptr<f32>, out: Ptr<u32>, n: Val<u32>) {
    launch(
        classify,
        Grid::new((n + 63) / 64),
        Block::new(64u32),
        (v, out, n),
    );
}

fn check_classify(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1);
    let xv = random_f32(n, 10);
    let v = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut out = Array::<u32>::alloc_on(engine.device(), n).map_err(err)?;
    let f = engine.compile(run_classify).map_err(err)?;
    f.call(&v, &mut out, n as u32).map_err(err)?;
    let want: Vec<u32> = xv
        .iter()
        .map(|&x| match x {
            x if x < -0.5 => 0,
            x if x < 0.0 => 1,
            x if x < 0.5 => 2,
            _ => 3,
        })
        .collect();
    compare("classify", out.as_slice(), &want)
}

// ---- shared memory ---------------------------------------------------------------------

/// Inclusive prefix sum within each block of 256 (Hillis–Steele scan in shared memory).
#[kernel]
pub fn prefix_sum(data: Ptr<i32>) {
    let tile = shared_array::<i32, 256>();
    let t = thread_idx_x();
    let i = global_id_x();
    tile[t] = data[i];
    sync_threads();
    let mut offset = Val::new(1u32);
    while offset < 256u32 {
        let mut add = Val::new(0i32);
        if t >= offset {
            add = tile[t - offset];
        }
        sync_threads();
        tile[t] = tile[t] + add;
        sync_threads();
        offset *= 2u32;
    }
    data[i] = tile[t];
}

/// Launches [`prefix_sum`] over `blocks` blocks of 256.
#[jit]
pub fn run_prefix_sum(data: Ptr<i32>, blocks: Val<u32>) {
    launch(prefix_sum, Grid::new(blocks), Block::new(256u32), (data,));
}

fn check_prefix_sum(engine: &Engine, n: usize) -> Result<(), String> {
    let blocks = n.div_ceil(256).clamp(1, 1024);
    let input: Vec<i32> = (0..blocks * 256)
        .map(|i| ((i * 7919) % 201) as i32 - 100)
        .collect();
    let mut data = Array::copy_on(engine.device(), &input).map_err(err)?;
    let f = engine.compile(run_prefix_sum).map_err(err)?;
    f.call(&mut data, blocks as u32).map_err(err)?;
    let want: Vec<i32> = input
        .chunks(256)
        .flat_map(|c| {
            c.iter().scan(0i32, |acc, x| {
                *acc += x;
                Some(*acc)
            })
        })
        .collect();
    compare("prefix sum", data.as_slice(), &want)
}

/// `match` in a kernel: each element classified by its remainder modulo 8.
#[kernel]
pub fn match_kernel(data: Ptr<u32>, out: Ptr<u32>, n: Val<u32>) {
    let i = global_id_x();
    if i < n {
        let x = data[i];
        out[i] = match x % 8u32 {
            0 => Val::new(1u32),
            1 | 2 => x * 2u32,
            3..=5 => x + 7u32,
            _ => Val::new(0u32),
        };
    }
}

/// Launches [`match_kernel`] with one thread per element.
#[jit]
pub fn run_match_kernel(data: Ptr<u32>, out: Ptr<u32>, n: Val<u32>) {
    launch(
        match_kernel,
        Grid::new((n + 127) / 128),
        Block::new(128u32),
        (data, out, n),
    );
}

fn check_match_kernel(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1);
    let xv: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let data = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut out = Array::<u32>::alloc_on(engine.device(), n).map_err(err)?;
    let f = engine.compile(run_match_kernel).map_err(err)?;
    f.call(&data, &mut out, n as u32).map_err(err)?;
    let want: Vec<u32> = xv
        .iter()
        .map(|&x| match x % 8 {
            0 => 1,
            1 | 2 => x.wrapping_mul(2),
            3..=5 => x.wrapping_add(7),
            _ => 0,
        })
        .collect();
    compare("match kernel", out.as_slice(), &want)
}

/// A traced enum in a kernel: each element's operator is decoded from the low byte of `ops`
/// and matched.
#[kernel]
pub fn enum_kernel(ops: Ptr<i32>, x: Ptr<i32>, out: Ptr<i32>, n: Val<u32>) {
    use crate::cases::enums::Op;
    let i = global_id_x();
    if i < n {
        let op = EnumVal::from_repr_or(ops[i].cast::<u8>(), Op::Add);
        let v = x[i];
        out[i] = match op {
            Op::Add => v + 1,
            Op::Sub | Op::Mul if v > 0 => v * 3,
            Op::Sub => v - 1,
            _ => v.max(Val::new(10)),
        };
    }
}

/// Launches [`enum_kernel`] with one thread per element.
#[jit]
pub fn run_enum_kernel(ops: Ptr<i32>, x: Ptr<i32>, out: Ptr<i32>, n: Val<u32>) {
    launch(
        enum_kernel,
        Grid::new((n + 63) / 64),
        Block::new(64u32),
        (ops, x, out, n),
    );
}

fn check_enum_kernel(engine: &Engine, n: usize) -> Result<(), String> {
    use crate::cases::enums::Op;
    let n = n.max(1);
    let opv: Vec<i32> = (0..n as i32)
        .map(|i| (i * 7) % 10 + 256 * (i % 3))
        .collect();
    let xv: Vec<i32> = (0..n as i32).map(|i| (i * 37) % 101 - 50).collect();
    let ops = Array::copy_on(engine.device(), &opv).map_err(err)?;
    let x = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut out = Array::<i32>::alloc_on(engine.device(), n).map_err(err)?;
    let f = engine.compile(run_enum_kernel).map_err(err)?;
    f.call(&ops, &x, &mut out, n as u32).map_err(err)?;
    let want: Vec<i32> = opv
        .iter()
        .zip(&xv)
        .map(|(&o, &v)| match Op::decode(o as u8) {
            Op::Add => v + 1,
            Op::Sub | Op::Mul if v > 0 => v * 3,
            Op::Sub => v - 1,
            _ => v.max(10),
        })
        .collect();
    compare("enum kernel", out.as_slice(), &want)
}

/// Function values in a kernel: each element's operator is entry `codes[i]` of
/// [`crate::cases::functions::OPS`], called on the element and 7.
#[kernel]
pub fn fn_value_kernel(codes: Ptr<i32>, x: Ptr<i32>, out: Ptr<i32>, n: Val<u32>) {
    use crate::cases::functions::OPS;
    let i = global_id_x();
    if i < n {
        let op = FnVal::pick(&OPS, codes[i].cast::<u32>());
        out[i] = op.call((x[i], Val::new(7)));
    }
}

/// Launches [`fn_value_kernel`] with one thread per element.
#[jit]
pub fn run_fn_value_kernel(codes: Ptr<i32>, x: Ptr<i32>, out: Ptr<i32>, n: Val<u32>) {
    launch(
        fn_value_kernel,
        Grid::new((n + 63) / 64),
        Block::new(64u32),
        (codes, x, out, n),
    );
}

fn check_fn_value_kernel(engine: &Engine, n: usize) -> Result<(), String> {
    use crate::cases::functions::reference_op;
    let n = n.max(1);
    let codes: Vec<i32> = (0..n as i32).map(|i| (i * 5) % 7 - 1).collect();
    let xv: Vec<i32> = (0..n as i32).map(|i| (i * 331) % 2001 - 1000).collect();
    let c = Array::copy_on(engine.device(), &codes).map_err(err)?;
    let x = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut out = Array::<i32>::alloc_on(engine.device(), n).map_err(err)?;
    let f = engine.compile(run_fn_value_kernel).map_err(err)?;
    f.call(&c, &x, &mut out, n as u32).map_err(err)?;
    let want: Vec<i32> = codes
        .iter()
        .zip(&xv)
        .map(|(&k, &v)| reference_op(k as u32, v, 7))
        .collect();
    compare("function-value kernel", out.as_slice(), &want)
}

/// An affine map passed by value to a kernel (one parameter per field).
#[derive(Clone, Copy, nacre::Carry)]
pub struct AffineMap {
    /// The factor.
    pub scale: Val<f32>,
    /// The offset.
    pub shift: Val<f32>,
}

/// A struct parameter: `out[i] = x[i] * map.scale + map.shift`.
#[kernel]
pub fn struct_param(map: AffineMap, x: Ptr<f32>, out: Ptr<f32>, n: Val<u32>) {
    let i = global_id_x();
    if i < n {
        out[i] = x[i] * map.scale + map.shift;
    }
}

/// Launches [`struct_param`] with one thread per element.
#[jit]
pub fn run_struct_param(x: Ptr<f32>, out: Ptr<f32>, n: Val<u32>, scale: Val<f32>) {
    let map = AffineMap {
        scale,
        shift: Val::new(0.25f32),
    };
    launch(
        struct_param,
        Grid::new((n + 127) / 128),
        Block::new(128u32),
        (map, x, out, n),
    );
}

fn check_struct_param(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1);
    let xv: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
    let x = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut out = Array::<f32>::alloc_on(engine.device(), n).map_err(err)?;
    let f = engine.compile(run_struct_param).map_err(err)?;
    f.call(&x, &mut out, n as u32, 1.5).map_err(err)?;
    let want: Vec<f32> = xv.iter().map(|&v| v * 1.5 + 0.25).collect();
    compare_f32("struct parameter", out.as_slice(), &want, 1e-6)
}

/// A particle in memory: a `#[repr(C)]` record reached through `Ptr<Particle>`.
#[derive(Clone, Copy, Debug, PartialEq, nacre::Record)]
#[repr(C)]
pub struct Particle {
    /// Position.
    pub x: f32,
    /// Velocity.
    pub v: f32,
    /// Mass.
    pub mass: f32,
    /// Identifier.
    pub id: u32,
}

/// Records in a kernel: each thread moves one particle by `v * dt` and bounces it off 0,
/// reading and writing its fields through `fields()`.
#[kernel]
pub fn record_kernel(ps: Ptr<Particle>, n: Val<u32>, dt: Val<f32>) {
    let i = global_id_x();
    if i < n {
        let p = ps.offset(i).fields();
        let x = p.x.read() + p.v.read() * dt;
        if x < 0.0f32 {
            p.x.write(-x);
            p.v.write(-p.v.read());
        } else {
            p.x.write(x);
        }
        p.id.write(p.id.read() ^ i);
    }
}

/// Launches [`record_kernel`] with one thread per particle.
#[jit]
pub fn run_record_kernel(ps: Ptr<Particle>, n: Val<u32>, dt: Val<f32>) {
    launch(
        record_kernel,
        Grid::new((n + 63) / 64),
        Block::new(64u32),
        (ps, n, dt),
    );
}

fn check_record_kernel(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1);
    let ps: Vec<Particle> = (0..n as u32)
        .map(|i| Particle {
            x: (i % 17) as f32 * 0.25,
            v: (i % 11) as f32 - 5.0,
            mass: 1.0 + i as f32,
            id: i.wrapping_mul(2_654_435_761),
        })
        .collect();
    let mut arr = Array::copy_on(engine.device(), &ps).map_err(err)?;
    let f = engine.compile(run_record_kernel).map_err(err)?;
    f.call(&mut arr, n as u32, 0.125).map_err(err)?;
    let want: Vec<Particle> = ps
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let x = p.x + p.v * 0.125;
            let (x, v) = if x < 0.0 { (-x, -p.v) } else { (x, p.v) };
            Particle {
                x,
                v,
                mass: p.mass,
                id: p.id ^ i as u32,
            }
        })
        .collect();
    compare("record kernel", arr.as_slice(), &want)
}

/// Integer bit operations in a kernel: counts, byte and bit reversal and rotations of each
/// element as `i32`, `u32` and `u8`.
#[kernel]
pub fn bits_kernel(x: Ptr<i32>, out: Ptr<u32>, n: Val<u32>) {
    let i = global_id_x();
    if i < n {
        let v = x[i];
        let u = v.cast::<u32>();
        let b = v.cast::<u8>();
        let counts = u.count_ones() + (v.leading_zeros() << 6u32) + (u.trailing_zeros() << 12u32);
        let small = b.reverse_bits().rotate_left(i).cast::<u32>() + (b.leading_zeros() << 8u32);
        out[i] =
            counts ^ u.swap_bytes() ^ v.rotate_right(i * 7u32).cast::<u32>() ^ (small << 20u32);
    }
}

/// The math functions in a kernel: thread `i` computes function `i % 23` (every one-argument
/// function but `erf`, which Metal lacks, then `powf`, `atan2` and `hypot` with the roundings)
/// of element `i` and of `y = x * 0.37 + 0.25`.
#[kernel]
pub fn math_kernel(x: Ptr<f32>, out: Ptr<f32>, n: Val<u32>) {
    let i = global_id_x();
    if i < n {
        let v = x[i];
        let y = v * 0.37f32 + 0.25f32;
        out[i] = match i % 23u32 {
            0 => v.exp(),
            1 => v.exp2(),
            2 => v.exp_m1(),
            3 => v.ln(),
            4 => v.log2(),
            5 => v.log10(),
            6 => v.ln_1p(),
            7 => v.sin(),
            8 => v.cos(),
            9 => v.tan(),
            10 => y.asin(),
            11 => y.acos(),
            12 => v.atan(),
            13 => v.sinh(),
            14 => v.cosh(),
            15 => v.tanh(),
            16 => v.asinh(),
            17 => v.acosh(),
            18 => y.atanh(),
            19 => v.cbrt(),
            20 => v.powf(y),
            21 => v.atan2(y),
            _ => v.hypot(y) + v.round() * 0.5f32 + v.trunc() * 0.25f32,
        };
    }
}

/// What thread `i` of [`math_kernel`] computes, with the reference functions.
pub fn math_kernel_reference(i: usize, v: f32) -> f32 {
    use nacre::ir::semantics::{math2_f32, math_f32};
    use nacre::ir::{MathFn, MathFn2};
    let y = v * 0.37 + 0.25;
    let k = i % 23;
    match k {
        10 | 11 | 18 => math_f32(MathFn::ALL[k], y),
        0..=19 => math_f32(MathFn::ALL[k], v),
        20 => math2_f32(MathFn2::Pow, v, y),
        21 => math2_f32(MathFn2::Atan2, v, y),
        _ => math2_f32(MathFn2::Hypot, v, y) + v.round() * 0.5 + v.trunc() * 0.25,
    }
}

/// Launches [`math_kernel`] with one thread per element.
#[jit]
pub fn run_math_kernel(x: Ptr<f32>, out: Ptr<f32>, n: Val<u32>) {
    launch(
        math_kernel,
        Grid::new((n + 127) / 128),
        Block::new(128u32),
        (x, out, n),
    );
}

/// Inputs for the math kernel: every float range the functions care about (tiny, negative,
/// near 1, large) and the edge values.
pub fn math_inputs(n: usize) -> Vec<f32> {
    let edges = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e-40,
        f32::MAX,
        88.8,
    ];
    (0..n)
        .map(|i| match i % 3 {
            0 => edges[(i / 3) % edges.len()],
            1 => (i as f32 * 0.731).sin() * 12.0,
            _ => (i as f32 * 0.173).cos() * 0.999,
        })
        .collect()
}

fn check_math_kernel(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1);
    let xv = math_inputs(n);
    let x = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut out = Array::<f32>::alloc_on(engine.device(), n).map_err(err)?;
    let f = engine.compile(run_math_kernel).map_err(err)?;
    f.call(&x, &mut out, n as u32).map_err(err)?;
    for (i, (&v, &got)) in xv.iter().zip(out.as_slice()).enumerate() {
        let want = math_kernel_reference(i, v);
        let d = nacre::ir::semantics::ulps(
            nacre::ir::Scalar::F32,
            got.to_bits().into(),
            want.to_bits().into(),
        );
        if d > crate::cases::math::LIBRARY_ULPS {
            return Err(format!(
                "thread {i} (function {}) of x = {v:e}: {got:e}, expected {want:e} ({d} ulps)",
                i % 23
            ));
        }
    }
    Ok(())
}

/// Threads per block of [`softmax_rows`].
pub const SOFTMAX_BLOCK: u32 = 256;

/// Reduces `red[0..256]` in place to `red[0]` by a tree of maxima (`max`) or sums, with
/// barriers; every thread of the block calls it.
#[jit]
fn reduce_block(red: Ptr<f32>, t: Val<u32>, max: bool) {
    sync_threads();
    let mut s = Val::new(SOFTMAX_BLOCK / 2);
    while s > 0u32 {
        if t < s {
            let (a, b) = (red[t], red[t + s]);
            red[t] = if max { a.max(b) } else { a + b };
        }
        sync_threads();
        s /= 2u32;
    }
}

/// Columns of a row each thread of [`softmax_rows`] keeps in registers: the row's first
/// `SOFTMAX_CACHED × SOFTMAX_BLOCK` columns (4096) are read from memory once.
pub const SOFTMAX_CACHED: u32 = 16;

/// The numerically stable softmax of each row of a row-major matrix with `cols` columns:
/// one block of [`SOFTMAX_BLOCK`] threads per row. Each thread reads its columns of the row's
/// first 4096 into registers (columns past the end count as `-inf`), the block finds the
/// row's maximum and the sum of `exp(x - max)` by shared-memory trees, and each thread
/// writes `exp(x - max) / sum` from its registers; columns beyond 4096 are read again from
/// memory in loops.
#[kernel]
pub fn softmax_rows(x: Ptr<f32>, out: Ptr<f32>, cols: Val<u32>) {
    let red = shared_array::<f32, 256>();
    let t = thread_idx_x();
    let row = block_idx_x() * cols;
    let last = cols.max(1u32) - 1u32;
    let cached = SOFTMAX_CACHED * SOFTMAX_BLOCK;
    let mut vals = [Val::new(0.0f32); SOFTMAX_CACHED as usize];
    let mut m = Val::new(f32::NEG_INFINITY);
    for (k, slot) in vals.iter_mut().enumerate() {
        let j = t + k as u32 * SOFTMAX_BLOCK;
        let v = select(j < cols, x[row + j.min(last)], f32::NEG_INFINITY);
        *slot = v;
        m = m.max(v);
    }
    let mut j = t + cached;
    while j < cols {
        m = m.max(x[row + j]);
        j += SOFTMAX_BLOCK;
    }
    red[t] = m;
    reduce_block(red, t, true);
    let m = red[0u32];
    sync_threads();
    let mut sum = Val::new(0.0f32);
    for slot in vals.iter_mut() {
        *slot = (*slot - m).exp();
        sum += *slot;
    }
    j = t + cached;
    while j < cols {
        sum += (x[row + j] - m).exp();
        j += SOFTMAX_BLOCK;
    }
    red[t] = sum;
    reduce_block(red, t, false);
    let inv = red[0u32].recip();
    for (k, slot) in vals.iter().enumerate() {
        let j = t + k as u32 * SOFTMAX_BLOCK;
        if j < cols {
            out[row + j] = *slot * inv;
        }
    }
    j = t + cached;
    while j < cols {
        out[row + j] = (x[row + j] - m).exp() * inv;
        j += SOFTMAX_BLOCK;
    }
}

/// Launches [`softmax_rows`] with one block per row of a `rows × cols` matrix (nothing when
/// `cols` is 0).
#[jit]
pub fn run_softmax_rows(x: Ptr<f32>, out: Ptr<f32>, rows: Val<u32>, cols: Val<u32>) {
    if cols > 0u32 {
        launch(
            softmax_rows,
            Grid::new(rows),
            Block::new(SOFTMAX_BLOCK),
            (x, out, cols),
        );
    }
}

/// The row softmax in plain Rust, in `f64` (the reference of the benchmark's check).
pub fn softmax_reference(x: &[f32], cols: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(cols) {
        let m = row
            .iter()
            .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
        let sum: f64 = row.iter().map(|&v| (f64::from(v) - m).exp()).sum();
        out.extend(row.iter().map(|&v| ((f64::from(v) - m).exp() / sum) as f32));
    }
    out
}

/// Whether a softmax result is within `1e-5` of the reference relative to the row's largest
/// probability (the order of the sums differs); `Err` names the first element that is not.
pub fn check_softmax(got: &[f32], want: &[f32], cols: usize) -> Result<(), String> {
    for (r, (g, w)) in got.chunks(cols).zip(want.chunks(cols)).enumerate() {
        let scale = w.iter().fold(0.0f32, |a, &b| a.max(b));
        for (c, (&a, &b)) in g.iter().zip(w).enumerate() {
            if (a - b).abs() > 1e-5 * scale || a.is_nan() {
                return Err(format!("row {r}, column {c}: {a:e}, expected {b:e}"));
            }
        }
    }
    Ok(())
}

fn check_softmax_rows(engine: &Engine, n: usize) -> Result<(), String> {
    // Short rows (most columns past the end), and rows wider than the registers hold.
    for cols in [300, 4100] {
        check_softmax_shape(engine, n.div_ceil(cols).clamp(1, 4), cols)?;
    }
    Ok(())
}

fn check_softmax_shape(engine: &Engine, rows: usize, cols: usize) -> Result<(), String> {
    let mut xv = random_f32(rows * cols, 23);
    xv.iter_mut().for_each(|v| *v *= 30.0);
    let x = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut out = Array::<f32>::alloc_on(engine.device(), rows * cols).map_err(err)?;
    let f = engine.compile(run_softmax_rows).map_err(err)?;
    f.call(&x, &mut out, rows as u32, cols as u32)
        .map_err(err)?;
    check_softmax(out.as_slice(), &softmax_reference(&xv, cols), cols)
}

/// Side of the output tile of [`stencil2d`] (its blocks are 16 × 16 threads).
pub const STENCIL_TILE: u32 = 16;

/// A 5-point stencil over a row-major `w × h` image, `0.5 c + 0.125 (up + down + left +
/// right)` with edges clamped, through a 2D shared tile: each 16 × 16 block loads the
/// 18 × 18 tile of its outputs and their one-element halo (324 loads by 256 threads), waits,
/// and computes its outputs from shared memory.
#[kernel]
pub fn stencil2d(input: Ptr<f32>, out: Ptr<f32>, w: Val<u32>, h: Val<u32>) {
    let tile = nacre::gpu::shared_array_2d::<f32, 18, 18>();
    let (tx, ty) = (thread_idx().x, thread_idx().y);
    let (bx, by) = (block_idx().x * STENCIL_TILE, block_idx().y * STENCIL_TILE);
    let mut p = ty * STENCIL_TILE + tx;
    while p < 324u32 {
        let (ly, lx) = (p / 18u32, p % 18u32);
        let gx = ((bx + lx).max(1u32) - 1u32).min(w - 1u32);
        let gy = ((by + ly).max(1u32) - 1u32).min(h - 1u32);
        tile[(ly, lx)] = input[gy * w + gx];
        p += 256u32;
    }
    sync_threads();
    let (x, y) = (bx + tx, by + ty);
    if x < w && y < h {
        let c = tile[(ty + 1u32, tx + 1u32)];
        let around = tile[(ty, tx + 1u32)]
            + tile[(ty + 2u32, tx + 1u32)]
            + tile[(ty + 1u32, tx)]
            + tile[(ty + 1u32, tx + 2u32)];
        out[y * w + x] = c * 0.5f32 + around * 0.125f32;
    }
}

/// Launches [`stencil2d`] with one 16 × 16 block per output tile (nothing for an empty
/// image).
#[jit]
pub fn run_stencil2d(input: Ptr<f32>, out: Ptr<f32>, w: Val<u32>, h: Val<u32>) {
    if w > 0u32 && h > 0u32 {
        launch(
            stencil2d,
            Grid::new3((w + 15u32) / 16u32, (h + 15u32) / 16u32, 1u32),
            Block::new3(STENCIL_TILE, STENCIL_TILE, 1u32),
            (input, out, w, h),
        );
    }
}

/// The stencil of [`stencil2d`] in plain Rust, in its operation order.
pub fn stencil_reference(input: &[f32], w: usize, h: usize) -> Vec<f32> {
    let at = |x: isize, y: isize| {
        let x = x.clamp(0, w as isize - 1) as usize;
        let y = y.clamp(0, h as isize - 1) as usize;
        input[y * w + x]
    };
    let mut out = Vec::with_capacity(w * h);
    for y in 0..h as isize {
        for x in 0..w as isize {
            let around = at(x, y - 1) + at(x, y + 1) + at(x - 1, y) + at(x + 1, y);
            out.push(at(x, y) * 0.5 + around * 0.125);
        }
    }
    out
}

fn check_stencil2d(engine: &Engine, n: usize) -> Result<(), String> {
    // A width and height that are not multiples of the tile.
    let (w, h) = (37, n.div_ceil(37).clamp(1, 40));
    let xv = random_f32(w * h, 41);
    let input = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut out = Array::<f32>::alloc_on(engine.device(), w * h).map_err(err)?;
    let f = engine.compile(run_stencil2d).map_err(err)?;
    f.call(&input, &mut out, w as u32, h as u32).map_err(err)?;
    compare("stencil2d", out.as_slice(), &stencil_reference(&xv, w, h))
}

/// `sqrt(2 / pi)`, the scale of GELU's tanh form.
pub const GELU_SCALE: f32 = 0.797_884_6;
/// The cubic coefficient of GELU's tanh form.
pub const GELU_CUBIC: f32 = 0.044_715;

/// GELU in its tanh form, `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, over `n`
/// elements in a grid-stride loop.
#[kernel]
pub fn gelu(x: Ptr<f32>, out: Ptr<f32>, n: Val<u32>) {
    let stride = global_size_x();
    let mut i = global_id_x();
    while i < n {
        let v = x[i];
        let inner = (v + v * v * v * GELU_CUBIC) * GELU_SCALE;
        out[i] = v * 0.5f32 * (inner.tanh() + 1.0f32);
        i += stride;
    }
}

/// Launches [`gelu`] on `blocks` × 256 threads.
#[jit]
pub fn run_gelu(x: Ptr<f32>, out: Ptr<f32>, n: Val<u32>, blocks: Val<u32>) {
    launch(gelu, Grid::new(blocks), Block::new(256u32), (x, out, n));
}

/// GELU's tanh form on one value, with the reference `tanh` (what [`gelu`] computes).
pub fn gelu_reference(v: f32) -> f32 {
    let inner = (v + v * v * v * GELU_CUBIC) * GELU_SCALE;
    let t = nacre::ir::semantics::math_f32(nacre::ir::MathFn::Tanh, inner);
    v * 0.5 * (t + 1.0)
}

fn check_gelu(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1);
    let mut xv = random_f32(n, 29);
    xv.iter_mut().for_each(|v| *v *= 6.0);
    let x = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut out = Array::<f32>::alloc_on(engine.device(), n).map_err(err)?;
    let f = engine.compile(run_gelu).map_err(err)?;
    f.call(&x, &mut out, n as u32, 3).map_err(err)?;
    let want: Vec<f32> = xv.iter().map(|&v| gelu_reference(v)).collect();
    compare_f32("gelu", out.as_slice(), &want, 1e-6)
}

/// Launches [`bits_kernel`] with one thread per element.
#[jit]
pub fn run_bits_kernel(x: Ptr<i32>, out: Ptr<u32>, n: Val<u32>) {
    launch(
        bits_kernel,
        Grid::new((n + 127) / 128),
        Block::new(128u32),
        (x, out, n),
    );
}

fn check_bits_kernel(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1);
    let xv: Vec<i32> = (0..n as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> (i % 29)) as i32)
        .collect();
    let x = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut out = Array::<u32>::alloc_on(engine.device(), n).map_err(err)?;
    let f = engine.compile(run_bits_kernel).map_err(err)?;
    f.call(&x, &mut out, n as u32).map_err(err)?;
    let want: Vec<u32> = xv
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let (i, u, b) = (i as u32, v as u32, v as u8);
            let counts = u.count_ones() + (v.leading_zeros() << 6) + (u.trailing_zeros() << 12);
            let small = u32::from(b.reverse_bits().rotate_left(i)) + (b.leading_zeros() << 8);
            counts ^ u.swap_bytes() ^ v.rotate_right(i.wrapping_mul(7)) as u32 ^ (small << 20)
        })
        .collect();
    compare("bits kernel", out.as_slice(), &want)
}

/// The transposed matrix's width and height (the input is `TRANSPOSE_H` × `TRANSPOSE_W`).
const TRANSPOSE_W: u32 = 24;
/// The input's height.
const TRANSPOSE_H: u32 = 16;

/// A 2D shared tile: each 8×8 block loads a tile of the `TRANSPOSE_H × TRANSPOSE_W` input with
/// `tile[(y, x)]`, synchronises, and writes it transposed, reading `tile[(x, y)]`.
#[kernel]
pub fn transpose_tile(input: Ptr<f32>, out: Ptr<f32>) {
    let tile = nacre::gpu::shared_array_2d::<f32, 8, 8>();
    let (tx, ty) = (thread_idx().x, thread_idx().y);
    let (bx, by) = (block_idx().x, block_idx().y);
    let (x, y) = (global_id_x(), global_id_y());
    tile[(ty, tx)] = input[y * TRANSPOSE_W + x];
    sync_threads();
    // Thread (tx, ty) writes element (bx * 8 + ty, by * 8 + tx) of the transposed matrix.
    out[(bx * 8u32 + ty) * TRANSPOSE_H + by * 8u32 + tx] = tile[(tx, ty)];
}

/// Launches [`transpose_tile`] on a 3×2 grid of 8×8 blocks.
#[jit]
pub fn run_transpose_tile(input: Ptr<f32>, out: Ptr<f32>) {
    launch(
        transpose_tile,
        Grid::new3(TRANSPOSE_W / 8, TRANSPOSE_H / 8, 1u32),
        Block::new3(8u32, 8u32, 1u32),
        (input, out),
    );
}

fn check_transpose_tile(engine: &Engine, _: usize) -> Result<(), String> {
    let (w, h) = (TRANSPOSE_W as usize, TRANSPOSE_H as usize);
    let xv: Vec<f32> = (0..w * h).map(|i| i as f32 * 0.5).collect();
    let x = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut out = Array::<f32>::alloc_on(engine.device(), w * h).map_err(err)?;
    let f = engine.compile(run_transpose_tile).map_err(err)?;
    f.call(&x, &mut out).map_err(err)?;
    let want: Vec<f32> = (0..w)
        .flat_map(|c| (0..h).map(move |r| (r, c)))
        .map(|(r, c)| xv[r * w + c])
        .collect();
    compare("2D shared transpose", out.as_slice(), &want)
}

/// Bulk memory in a kernel: thread `r` copies 12 elements of row `r` (16 wide) from `src` to
/// `dst` (`nacre::mem::copy`) and fills the row's last 4 with `r` (`nacre::mem::fill`).
#[kernel]
pub fn copy_rows(dst: Ptr<f32>, src: Ptr<f32>, rows: Val<u32>) {
    let r = global_id_x();
    if r < rows {
        let at = (r * 16u32).cast::<u64>();
        nacre::mem::copy(dst.offset(at), src.offset(at), Val::new(12u64));
        nacre::mem::fill(dst.offset(at + 12u64), r.cast::<f32>(), Val::new(4u64));
    }
}

/// Launches [`copy_rows`] with one thread per row (64 per block).
#[jit]
pub fn run_copy_rows(dst: Ptr<f32>, src: Ptr<f32>, rows: Val<u32>) {
    launch(
        copy_rows,
        Grid::new((rows + 63) / 64),
        Block::new(64u32),
        (dst, src, rows),
    );
}

fn check_copy_rows(engine: &Engine, n: usize) -> Result<(), String> {
    let rows = (n / 16).max(1);
    let xv = random_f32(rows * 16, 5);
    let src = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut dst = Array::<f32>::alloc_on(engine.device(), rows * 16).map_err(err)?;
    let f = engine.compile(run_copy_rows).map_err(err)?;
    f.call(&mut dst, &src, rows as u32).map_err(err)?;
    let want: Vec<f32> = xv
        .chunks(16)
        .enumerate()
        .flat_map(|(r, row)| {
            let mut out = row.to_vec();
            out[12..].fill(r as f32);
            out
        })
        .collect();
    compare_f32("copied rows", dst.as_slice(), &want, 0.0)
}

/// Block sum: each block reduces 256 elements in shared memory (tree reduction with
/// barriers) and writes its sum to `out[blockIdx.x]`.
#[kernel]
pub fn block_sum(input: Ptr<f32>, out: Ptr<f32>, n: Val<u32>) {
    let sdata = shared_array::<f32, 256>();
    let t = thread_idx_x();
    let i = global_id_x();
    let mut v = Val::new(0.0f32);
    if i < n {
        v = input[i];
    }
    sdata[t] = v;
    sync_threads();
    let mut s = block_dim_x() / 2;
    while s > 0u32 {
        if t < s {
            sdata[t] = sdata[t] + sdata[t + s];
        }
        sync_threads();
        s /= 2u32;
    }
    if t == 0u32 {
        out[block_idx_x()] = sdata[0u32];
    }
}

/// Launches [`block_sum`] over `n` elements (256 per block).
#[jit]
pub fn run_block_sum(input: Ptr<f32>, out: Ptr<f32>, n: Val<u32>) {
    launch(
        block_sum,
        Grid::new((n + 255) / 256),
        Block::new(256u32),
        (input, out, n),
    );
}

fn check_block_sum(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1);
    let blocks = n.div_ceil(256);
    let xv = random_f32(n, 11);
    let input = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut out = Array::<f32>::alloc_on(engine.device(), blocks).map_err(err)?;
    let f = engine.compile(run_block_sum).map_err(err)?;
    f.call(&input, &mut out, n as u32).map_err(err)?;
    let want: Vec<f32> = xv.chunks(256).map(|c| c.iter().sum()).collect();
    compare_f32("block sums", out.as_slice(), &want, 1e-4)
}

/// Block sum and maximum through dynamic shared memory: the launch gives `2 * blockDim.x`
/// floats (sums in the first half, maxima in the second), which follow a static 3-element
/// array (12 bytes, so the dynamic memory's own alignment shows) holding the block's results
/// and the number of floats the kernel was given. Writes `out[3 * b..3 * b + 3]` for block `b`.
#[kernel]
pub fn dyn_block_stats(input: Ptr<f32>, out: Ptr<f32>, n: Val<u32>) {
    let res = shared_array::<f32, 3>();
    let s = dynamic_shared::<f32>();
    let t = thread_idx_x();
    let b = block_dim_x();
    let i = global_id_x();
    let mut v = Val::new(0.0f32);
    let mut m = Val::new(f32::NEG_INFINITY);
    if i < n {
        v = input[i];
        m = v;
    }
    s[t] = v;
    s[t + b] = m;
    sync_threads();
    let mut k = b / 2;
    while k > 0u32 {
        if t < k {
            s[t] = s[t] + s[t + k];
            s[t + b] = s[t + b].max(s[t + k + b]);
        }
        sync_threads();
        k /= 2u32;
    }
    if t == 0u32 {
        res[0u32] = s[0u32];
        res[1u32] = s[b];
        res[2u32] = dynamic_shared_len::<f32>().cast::<f32>();
    }
    sync_threads();
    if t < 3u32 {
        out[block_idx_x() * 3u32 + t] = res[t];
    }
}

/// Launches [`dyn_block_stats`] over `n` elements in blocks of `block` threads (a power of
/// two), with `2 * block` floats of dynamic shared memory per block.
#[jit]
pub fn run_dyn_block_stats(input: Ptr<f32>, out: Ptr<f32>, n: Val<u32>, block: Val<u32>) {
    launch_with_shared(
        dyn_block_stats,
        Grid::new((n + block - 1u32) / block),
        Block::new(block),
        block * 8u32,
        (input, out, n),
    );
}

/// The per-block sums, maxima and dynamic float counts [`dyn_block_stats`] computes.
fn dyn_block_stats_reference(x: &[f32], block: usize) -> Vec<f32> {
    x.chunks(block)
        .flat_map(|c| {
            let max = c.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            [c.iter().sum(), max, (2 * block) as f32]
        })
        .collect()
}

fn check_dyn_block_stats(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1);
    let block = 128;
    let blocks = n.div_ceil(block);
    let xv = random_f32(n, 29);
    let input = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut out = Array::<f32>::alloc_on(engine.device(), 3 * blocks).map_err(err)?;
    let f = engine.compile(run_dyn_block_stats).map_err(err)?;
    f.call(&input, &mut out, n as u32, block as u32)
        .map_err(err)?;
    let want = dyn_block_stats_reference(&xv, block);
    compare_f32("block stats", out.as_slice(), &want, 1e-4)
}

/// A 256-bin histogram of the low bytes of `data`: each block counts its grid-stride share in
/// a shared histogram with block-scoped atomics, then adds every nonzero bin to the global
/// histogram with one device-scoped atomic.
#[kernel]
pub fn histogram256(data: Ptr<u32>, bins: Ptr<u32>, n: Val<u32>) {
    let local = shared_array::<u32, 256>();
    let t = thread_idx_x();
    let mut b = t;
    while b < 256u32 {
        local[b] = 0u32;
        b += block_dim_x();
    }
    sync_threads();
    let mut i = global_id_x();
    while i < n {
        local
            .atomic(data[i] & 255u32)
            .block()
            .fetch_add(1u32, Ordering::Relaxed);
        i += global_size_x();
    }
    sync_threads();
    let mut k = t;
    while k < 256u32 {
        let c = local[k];
        if c > 0u32 {
            bins.atomic(k).fetch_add(c, Ordering::Relaxed);
        }
        k += block_dim_x();
    }
}

/// Launches [`histogram256`] with `blocks` blocks of 128 threads.
#[jit]
pub fn run_histogram256(data: Ptr<u32>, bins: Ptr<u32>, n: Val<u32>, blocks: Val<u32>) {
    launch(
        histogram256,
        Grid::new(blocks),
        Block::new(128u32),
        (data, bins, n),
    );
}

fn check_histogram256(engine: &Engine, n: usize) -> Result<(), String> {
    let xv = pseudo_random_u32(n, 5);
    let data = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut bins = Array::<u32>::alloc_on(engine.device(), 256).map_err(err)?;
    let f = engine.compile(run_histogram256).map_err(err)?;
    f.call(&data, &mut bins, n as u32, 3).map_err(err)?;
    let mut want = vec![0u32; 256];
    for x in &xv {
        want[(x & 255) as usize] += 1;
    }
    if bins.as_slice() != want.as_slice() {
        return Err(format!(
            "histogram: got {:?}, expected {want:?}",
            bins.as_slice()
        ));
    }
    Ok(())
}

/// Every thread adds its element to `out[0]` (wrapping) and raises `out[1]` to it with a
/// compare-exchange loop: one sum and one maximum over the whole grid.
#[kernel]
pub fn atomic_total(x: Ptr<u32>, out: Ptr<u32>, n: Val<u32>) {
    let i = global_id_x();
    if i < n {
        let v = x[i];
        out.atomic(0u32).fetch_add(v, Ordering::Relaxed);
        let mut cur = Val::new(0u32);
        let mut done = Val::new(false);
        while !done {
            let (old, ok) = out.atomic(1u32).compare_exchange(
                cur,
                cur.max(v),
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            done = ok | (old >= v);
            cur = old;
        }
    }
}

/// Launches [`atomic_total`] over `n` threads (64 per block).
#[jit]
pub fn run_atomic_total(x: Ptr<u32>, out: Ptr<u32>, n: Val<u32>) {
    launch(
        atomic_total,
        Grid::new((n + 63u32) / 64u32),
        Block::new(64u32),
        (x, out, n),
    );
}

fn check_atomic_total(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1);
    let xv: Vec<u32> = pseudo_random_u32(n, 9).iter().map(|x| x >> 8).collect();
    let x = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let mut out = Array::<u32>::alloc_on(engine.device(), 2).map_err(err)?;
    let f = engine.compile(run_atomic_total).map_err(err)?;
    f.call(&x, &mut out, n as u32).map_err(err)?;
    let sum = xv.iter().fold(0u32, |s, &v| s.wrapping_add(v));
    let max = xv.iter().copied().max().unwrap_or(0);
    if out.as_slice() != [sum, max] {
        return Err(format!(
            "total: got {:?}, expected {:?}",
            out.as_slice(),
            [sum, max]
        ));
    }
    Ok(())
}

/// Every atomic on every type (not in [`all`]: Metal has no 64-bit atomics): 64-bit integers through their overloads, `f32`
/// min and max through the compare-exchange loop, `f64` add and swap, a compare-exchange on
/// `i64`, block scope on shared memory, and each ordering's fences.
#[kernel]
pub fn wide_atomics(
    ints: Ptr<i64>,
    words: Ptr<u64>,
    floats: Ptr<f32>,
    doubles: Ptr<f64>,
    n: Val<u32>,
) {
    let local = shared_array::<u32, 1>();
    let i = global_id_x();
    if thread_idx_x() == 0u32 {
        local[0u32] = 0u32;
    }
    sync_threads();
    if i < n {
        let v = i.cast::<i64>() - 500i64;
        ints.atomic(0u32).fetch_add(v, Ordering::Relaxed);
        ints.atomic(1u32).fetch_min(v, Ordering::SeqCst);
        ints.atomic(2u32).fetch_max(v, Ordering::AcqRel);
        // One increment per thread through a compare-exchange loop.
        let mut cur = Val::new(0i64);
        let mut done = Val::new(false);
        while !done {
            let (old, ok) = ints.atomic(3u32).compare_exchange(
                cur,
                cur + 1i64,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
            done = ok;
            cur = old;
        }
        let w = i.cast::<u64>() << 33u64;
        words.atomic(0u32).fetch_sub(w, Ordering::Release);
        words.atomic(1u32).fetch_or(w, Ordering::Acquire);
        words.atomic(2u32).fetch_xor(w, Ordering::Relaxed);
        let x = v.cast::<f32>() * 0.25f32;
        floats.atomic(0u32).fetch_min(x, Ordering::Relaxed);
        floats.atomic(1u32).fetch_max(x, Ordering::Relaxed);
        floats.atomic(2u32).fetch_add(1.0f32, Ordering::Relaxed);
        doubles
            .atomic(0u32)
            .fetch_add(x.cast::<f64>(), Ordering::Relaxed);
        local.atomic(0u32).block().fetch_add(1u32, Ordering::SeqCst);
    }
    fence(Ordering::SeqCst);
    sync_threads();
    if thread_idx_x() == 0u32 {
        doubles
            .atomic(1u32)
            .swap(local[0u32].cast::<f64>(), Ordering::Relaxed);
    }
}

#[jit]
pub fn run_wide_atomics(
    ints: Ptr<i64>,
    words: Ptr<u64>,
    floats: Ptr<f32>,
    doubles: Ptr<f64>,
    n: Val<u32>,
) {
    launch(
        wide_atomics,
        Grid::new((n + 127u32) / 128u32),
        Block::new(128u32),
        (ints, words, floats, doubles, n),
    );
}

/// Runs [`run_wide_atomics`] on `engine` and checks every cell.
pub fn check_wide_atomics(engine: &Engine) -> Result<(), String> {
    let f = engine.compile(run_wide_atomics).map_err(err)?;
    let n = 1000u32;
    let dev = engine.device();
    let mut ints = Array::copy_on(dev.clone(), &[0i64, i64::MAX, i64::MIN, 7]).map_err(err)?;
    let mut words = Array::copy_on(dev.clone(), &[0u64, 1, u64::MAX]).map_err(err)?;
    let mut floats =
        Array::copy_on(dev.clone(), &[f32::NAN, f32::NEG_INFINITY, 0.0]).map_err(err)?;
    let mut doubles = Array::copy_on(dev.clone(), &[0.0f64, -1.0]).map_err(err)?;
    f.call(&mut ints, &mut words, &mut floats, &mut doubles, n)
        .map_err(err)?;
    fn same<T: PartialEq + std::fmt::Debug>(
        what: &str,
        got: &[T],
        want: &[T],
    ) -> Result<(), String> {
        if got == want {
            return Ok(());
        }
        Err(format!("{what}: got {got:?}, expected {want:?}"))
    }
    let vs: Vec<i64> = (0..i64::from(n)).map(|i| i - 500).collect();
    let ws: Vec<u64> = (0..u64::from(n)).map(|i| i << 33).collect();
    let want_ints = [vs.iter().sum(), -500, 499, 7 + i64::from(n)];
    same(
        "i64 add, min, max, compare-exchange",
        ints.as_slice(),
        &want_ints,
    )?;
    let sub = ws.iter().fold(0u64, |a, &w| a.wrapping_sub(w));
    let or = ws.iter().fold(1u64, |a, &w| a | w);
    let xor = ws.iter().fold(u64::MAX, |a, &w| a ^ w);
    same("u64 sub, or, xor", words.as_slice(), &[sub, or, xor])?;
    same(
        "f32 min, max, add",
        floats.as_slice(),
        &[-125.0, 124.75, 1000.0],
    )?;
    // Quarter-integers sum exactly in any order.
    let sum: f64 = vs.iter().map(|&v| (v as f32 * 0.25) as f64).sum();
    same("f64 add", &doubles.as_slice()[..1], &[sum])?;
    // The last block to swap leaves its own count: 128 threads, or 1000 - 7 * 128 = 104.
    let swapped = doubles.as_slice()[1];
    if ![128.0, 104.0].contains(&swapped) {
        return Err(format!("f64 swap of a block's shared count: got {swapped}"));
    }
    Ok(())
}

/// Matrix transpose through a 16×16 shared tile (2D grid and blocks).
#[kernel]
pub fn transpose(input: Ptr<f32>, out: Ptr<f32>, width: Val<u32>, height: Val<u32>) {
    let tile = shared_array::<f32, { 16 * 17 }>();
    let t = thread_idx();
    let b = block_idx();
    let x = b.x * 16 + t.x;
    let y = b.y * 16 + t.y;
    if x < width && y < height {
        tile[t.y * 17 + t.x] = input[y * width + x];
    }
    sync_threads();
    let tx = b.y * 16 + t.x;
    let ty = b.x * 16 + t.y;
    if tx < height && ty < width {
        out[ty * height + tx] = tile[t.x * 17 + t.y];
    }
}

/// Launches [`transpose`] on a `width` × `height` matrix.
#[jit]
pub fn run_transpose(input: Ptr<f32>, out: Ptr<f32>, width: Val<u32>, height: Val<u32>) {
    let grid = Grid::new3((width + 15) / 16, (height + 15) / 16, 1u32);
    launch(
        transpose,
        grid,
        Block::new3(16u32, 16u32, 1u32),
        (input, out, width, height),
    );
}

fn check_transpose(engine: &Engine, n: usize) -> Result<(), String> {
    let width = ((n as f64).sqrt() as u32).clamp(1, 512) + 3;
    let height = width / 2 + 5;
    let m: Vec<f32> = (0..width * height).map(|i| i as f32).collect();
    let input = Array::copy_on(engine.device(), &m).map_err(err)?;
    let mut out = Array::<f32>::alloc_on(engine.device(), m.len()).map_err(err)?;
    let f = engine.compile(run_transpose).map_err(err)?;
    f.call(&input, &mut out, width, height).map_err(err)?;
    let mut want = vec![0f32; m.len()];
    for y in 0..height {
        for x in 0..width {
            want[(x * height + y) as usize] = m[(y * width + x) as usize];
        }
    }
    compare("transpose", out.as_slice(), &want)
}

/// Each of 32 threads counts into `out[threadIdx.x]` the iterations of a block-stride loop
/// from `base + threadIdx.x` while below `n`. Near `u32::MAX` the CPU's lockstep rewrite of
/// such loops (`nacre_kernel::step`) must fall back to the plain loop, since its indices could
/// wrap; the cases straddle that bound.
#[kernel]
pub fn stride_counts(out: Ptr<u32>, base: Val<u32>, n: Val<u32>) {
    let t = thread_idx_x();
    let mut i = base + t;
    while i < n {
        out[t] = out[t] + 1u32;
        i += block_dim_x();
    }
}

/// Launches [`stride_counts`] on one block of 32 threads.
#[jit]
pub fn run_stride_counts(out: Ptr<u32>, base: Val<u32>, n: Val<u32>) {
    launch(
        stride_counts,
        Grid::new(1u32),
        Block::new(32u32),
        (out, base, n),
    );
}

fn check_stride_counts(engine: &Engine, n: usize) -> Result<(), String> {
    let f = engine.compile(run_stride_counts).map_err(err)?;
    let max = u64::from(u32::MAX);
    // (base, n): ordinary; the last bound the rewrite takes (n + 32 + 32 = u32::MAX); past it;
    // a start that wraps for most threads (`base + threadIdx.x` past u32::MAX).
    let cases = [
        (3, n as u64),
        (max - 200, max - 64),
        (max - 131, max - 31),
        (max - 5, 100),
    ];
    for (base, bound) in cases {
        let mut out = Array::<u32>::alloc_on(engine.device(), 32).map_err(err)?;
        f.call(&mut out, base as u32, bound as u32).map_err(err)?;
        let want: Vec<u32> = (0..32u64)
            .map(|t| {
                let start = (base + t) & max;
                bound.saturating_sub(start).div_ceil(32) as u32
            })
            .collect();
        if out.as_slice() != want.as_slice() {
            return Err(format!(
                "stride counts from {base} below {bound}: got {:?}, expected {want:?}",
                out.as_slice()
            ));
        }
    }
    Ok(())
}

// ---- grid-stride kernels (also correct with grid = block = 1) ---------------------------

/// Grid-stride `y = alpha * x + y`.
#[kernel]
pub fn saxpy_grid_stride(alpha: Val<f32>, x: Ptr<f32>, y: Ptr<f32>, n: Val<u32>) {
    let stride = global_size_x();
    let mut i = global_id_x();
    while i < n {
        y[i] = alpha * x[i] + y[i];
        i += stride;
    }
}

/// Launches [`saxpy_grid_stride`] on `blocks` × 256 threads.
#[jit]
pub fn run_saxpy_grid_stride(
    alpha: Val<f32>,
    x: Ptr<f32>,
    y: Ptr<f32>,
    n: Val<u32>,
    blocks: Val<u32>,
) {
    launch(
        saxpy_grid_stride,
        Grid::new(blocks),
        Block::new(256u32),
        (alpha, x, y, n),
    );
}

fn check_saxpy_grid_stride(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1);
    let (xv, yv) = (random_f32(n, 12), random_f32(n, 13));
    let (x, mut y) = (
        Array::copy_on(engine.device(), &xv).map_err(err)?,
        Array::copy_on(engine.device(), &yv).map_err(err)?,
    );
    let f = engine.compile(run_saxpy_grid_stride).map_err(err)?;
    f.call(2.0, &x, &mut y, n as u32, 7).map_err(err)?;
    let want: Vec<f32> = xv.iter().zip(&yv).map(|(a, b)| 2.0 * a + b).collect();
    compare("saxpy grid-stride", y.as_slice(), &want)
}

/// Grid-stride `y = alpha * x + y` on `f16` storage, computed in `f32` and rounded once (as
/// PyTorch's half kernels compute).
#[kernel]
pub fn saxpy_f16(alpha: Val<f32>, x: Ptr<f16>, y: Ptr<f16>, n: Val<u32>) {
    let stride = global_size_x();
    let mut i = global_id_x();
    while i < n {
        let sum = alpha * x[i].cast::<f32>() + y[i].cast::<f32>();
        y[i] = sum.cast::<f16>();
        i += stride;
    }
}

/// Launches [`saxpy_f16`] on `blocks` × 256 threads.
#[jit]
pub fn run_saxpy_f16(alpha: Val<f32>, x: Ptr<f16>, y: Ptr<f16>, n: Val<u32>, blocks: Val<u32>) {
    launch(
        saxpy_f16,
        Grid::new(blocks),
        Block::new(256u32),
        (alpha, x, y, n),
    );
}

/// [`saxpy_f16`]'s result in plain Rust (the `half` crate's conversions).
pub fn saxpy_f16_reference(alpha: f32, x: &[f16], y: &[f16]) -> Vec<f16> {
    x.iter()
        .zip(y)
        .map(|(&a, &b)| f16::from_f32(alpha * a.to_f32() + b.to_f32()))
        .collect()
}

fn check_saxpy_f16(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1);
    let half =
        |v: Vec<f32>| -> Vec<f16> { v.into_iter().map(|x| f16::from_f32(x * 8.0)).collect() };
    let (xv, yv) = (half(random_f32(n, 14)), half(random_f32(n, 15)));
    let (x, mut y) = (
        Array::copy_on(engine.device(), &xv).map_err(err)?,
        Array::copy_on(engine.device(), &yv).map_err(err)?,
    );
    let f = engine.compile(run_saxpy_f16).map_err(err)?;
    let alpha = -1.25f32;
    f.call(alpha, &x, &mut y, n as u32, 5).map_err(err)?;
    compare(
        "saxpy f16",
        y.as_slice(),
        &saxpy_f16_reference(alpha, &xv, &yv),
    )
}

/// Launches [`saxpy_grid_stride`] on `n` elements from `x[dx]` and `y[dy]`: arrays that need
/// not be aligned to a GPU backend's wide accesses, and lengths that leave a remainder.
#[jit]
pub fn run_saxpy_offsets(
    alpha: Val<f32>,
    x: Ptr<f32>,
    y: Ptr<f32>,
    n: Val<u32>,
    dx: Val<u32>,
    dy: Val<u32>,
) {
    launch(
        saxpy_grid_stride,
        Grid::new(7u32),
        Block::new(256u32),
        (alpha, x.offset(dx), y.offset(dy), n),
    );
}

fn check_saxpy_offsets(engine: &Engine, n: usize) -> Result<(), String> {
    let f = engine.compile(run_saxpy_offsets).map_err(err)?;
    let n = n.max(1);
    for (dx, dy, len) in [(0, 0, n + 3), (1, 0, n + 1), (0, 3, n + 2), (2, 2, n + 1)] {
        let (xv, yv) = (random_f32(len + dx, 14), random_f32(len + dy, 15));
        let (x, mut y) = (
            Array::copy_on(engine.device(), &xv).map_err(err)?,
            Array::copy_on(engine.device(), &yv).map_err(err)?,
        );
        f.call(2.0, &x, &mut y, len as u32, dx as u32, dy as u32)
            .map_err(err)?;
        let mut want = yv.clone();
        for i in 0..len {
            want[dy + i] = 2.0 * xv[dx + i] + yv[dy + i];
        }
        compare(
            &format!("saxpy from x[{dx}], y[{dy}], {len} elements"),
            y.as_slice(),
            &want,
        )?;
    }
    Ok(())
}

/// Grid-stride `c = a + b`.
#[kernel]
pub fn vec_add_grid_stride(a: Ptr<f32>, b: Ptr<f32>, c: Ptr<f32>, n: Val<u32>) {
    let stride = global_size_x();
    let mut i = global_id_x();
    while i < n {
        c[i] = a[i] + b[i];
        i += stride;
    }
}

/// Launches [`vec_add_grid_stride`] on `blocks` × 256 threads.
#[jit]
pub fn run_vec_add_grid_stride(
    a: Ptr<f32>,
    b: Ptr<f32>,
    c: Ptr<f32>,
    n: Val<u32>,
    blocks: Val<u32>,
) {
    launch(
        vec_add_grid_stride,
        Grid::new(blocks),
        Block::new(256u32),
        (a, b, c, n),
    );
}

fn check_vec_add_grid_stride(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.max(1);
    let (xv, yv) = (random_f32(n, 14), random_f32(n, 15));
    let (a, b) = (
        Array::copy_on(engine.device(), &xv).map_err(err)?,
        Array::copy_on(engine.device(), &yv).map_err(err)?,
    );
    let mut c = Array::<f32>::alloc_on(engine.device(), n).map_err(err)?;
    let f = engine.compile(run_vec_add_grid_stride).map_err(err)?;
    f.call(&a, &b, &mut c, n as u32, 5).map_err(err)?;
    let want: Vec<f32> = xv.iter().zip(&yv).map(|(p, q)| p + q).collect();
    compare("vec_add grid-stride", c.as_slice(), &want)
}

/// Grid-stride logistic map: `iters` steps of `v = 3.9 v (1 - v)` per element.
#[kernel]
pub fn logistic(v: Ptr<f32>, n: Val<u32>, iters: Val<u32>) {
    let stride = global_size_x();
    let mut i = global_id_x();
    while i < n {
        let mut x = v[i];
        for _ in 0u32..iters {
            x = 3.9 * x * (1.0 - x);
        }
        v[i] = x;
        i += stride;
    }
}

/// Launches [`logistic`] on `blocks` × 256 threads.
#[jit]
pub fn run_logistic(v: Ptr<f32>, n: Val<u32>, iters: Val<u32>, blocks: Val<u32>) {
    launch(
        logistic,
        Grid::new(blocks),
        Block::new(256u32),
        (v, n, iters),
    );
}

fn check_logistic(engine: &Engine, n: usize) -> Result<(), String> {
    let n = n.clamp(1, 1 << 16);
    let xv: Vec<f32> = (0..n).map(|i| 0.1 + 0.8 * (i as f32 / n as f32)).collect();
    let mut v = Array::copy_on(engine.device(), &xv).map_err(err)?;
    let f = engine.compile(run_logistic).map_err(err)?;
    // No step leaves the values as they are (the loop nest's copy for a running inner loop
    // is not entered, see `nacre_ir::transform::version_loops`).
    f.call(&mut v, n as u32, 0, 3).map_err(err)?;
    compare("logistic, no step", v.as_slice(), &xv)?;
    f.call(&mut v, n as u32, 64, 3).map_err(err)?;
    let want: Vec<f32> = xv
        .iter()
        .map(|&x0| (0..64).fold(x0, |x, _| 3.9 * x * (1.0 - x)))
        .collect();
    compare("logistic", v.as_slice(), &want)
}

/// The seed's large-batch case: vec_add over at least 16M elements (the old fixed-size
/// buffers truncated it).
fn check_large_batch(engine: &Engine, _: usize) -> Result<(), String> {
    let n = 1usize << 24;
    let a = Array::copy_on(engine.device(), &vec![1.5f32; n]).map_err(err)?;
    let bv: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let b = Array::copy_on(engine.device(), &bv).map_err(err)?;
    let mut c = Array::<f32>::alloc_on(engine.device(), n).map_err(err)?;
    let f = engine.compile(run_vec_add_grid_stride).map_err(err)?;
    f.call(&a, &b, &mut c, n as u32, 1024).map_err(err)?;
    let want: Vec<f32> = bv.iter().map(|x| x + 1.5).collect();
    compare("large batch", c.as_slice(), &want)
}

/// Every kernel case.
/// The kernel cases Metal cannot run (it has no 128-bit integers: its code generator refuses
/// them with a typed error), which every other target runs.
pub fn without_metal() -> Vec<KernelCase> {
    wide::cases()
}

pub fn all() -> Vec<KernelCase> {
    vec![
        KernelCase {
            name: "index_queries",
            grid_stride: false,
            check: check_index_queries,
            trace: || nacre::trace_module(&run_index_queries),
        },
        KernelCase {
            name: "index_3d",
            grid_stride: false,
            check: check_index_3d,
            trace: || nacre::trace_module(&run_index_3d),
        },
        KernelCase {
            name: "sync_only",
            grid_stride: false,
            check: check_sync_only,
            trace: || nacre::trace_module(&run_sync_only),
        },
        KernelCase {
            name: "bounded_index",
            grid_stride: false,
            check: check_bounded_index,
            trace: || nacre::trace_module(&run_bounded_index),
        },
        KernelCase {
            name: "vec_add",
            grid_stride: false,
            check: check_vec_add,
            trace: || nacre::trace_module(&run_vec_add),
        },
        KernelCase {
            name: "vec_add_dynamic",
            grid_stride: false,
            check: check_vec_add_dynamic,
            trace: || nacre::trace_module(&run_vec_add_dynamic),
        },
        KernelCase {
            name: "vec_add_bounded",
            grid_stride: false,
            check: check_vec_add_bounded,
            trace: || nacre::trace_module(&run_vec_add_bounded),
        },
        KernelCase {
            name: "vec_scale",
            grid_stride: false,
            check: check_vec_scale,
            trace: || nacre::trace_module(&run_vec_scale),
        },
        KernelCase {
            name: "saxpy",
            grid_stride: false,
            check: check_saxpy,
            trace: || nacre::trace_module(&run_saxpy),
        },
        KernelCase {
            name: "classify",
            grid_stride: false,
            check: check_classify,
            trace: || nacre::trace_module(&run_classify),
        },
        KernelCase {
            name: "prefix_sum",
            grid_stride: false,
            check: check_prefix_sum,
            trace: || nacre::trace_module(&run_prefix_sum),
        },
        KernelCase {
            name: "match_kernel",
            grid_stride: false,
            check: check_match_kernel,
            trace: || nacre::trace_module(&run_match_kernel),
        },
        KernelCase {
            name: "enum_kernel",
            grid_stride: false,
            check: check_enum_kernel,
            trace: || nacre::trace_module(&run_enum_kernel),
        },
        KernelCase {
            name: "fn_value_kernel",
            grid_stride: false,
            check: check_fn_value_kernel,
            trace: || nacre::trace_module(&run_fn_value_kernel),
        },
        KernelCase {
            name: "struct_param",
            grid_stride: false,
            check: check_struct_param,
            trace: || nacre::trace_module(&run_struct_param),
        },
        KernelCase {
            name: "record_kernel",
            grid_stride: false,
            check: check_record_kernel,
            trace: || nacre::trace_module(&run_record_kernel),
        },
        KernelCase {
            name: "bits_kernel",
            grid_stride: false,
            check: check_bits_kernel,
            trace: || nacre::trace_module(&run_bits_kernel),
        },
        KernelCase {
            name: "softmax_rows",
            grid_stride: false,
            check: check_softmax_rows,
            trace: || nacre::trace_module(&run_softmax_rows),
        },
        KernelCase {
            name: "stencil2d",
            grid_stride: false,
            check: check_stencil2d,
            trace: || nacre::trace_module(&run_stencil2d),
        },
        KernelCase {
            name: "blur3",
            grid_stride: false,
            check: tiled::check_blur3,
            trace: || nacre::trace_module(&tiled::run_blur3),
        },
        KernelCase {
            name: "matmul_tiled",
            grid_stride: false,
            check: tiled::check_matmul_tiled,
            trace: || nacre::trace_module(&tiled::run_matmul_tiled),
        },
        KernelCase {
            name: "gelu",
            grid_stride: true,
            check: check_gelu,
            trace: || nacre::trace_module(&run_gelu),
        },
        KernelCase {
            name: "math_kernel",
            grid_stride: false,
            check: check_math_kernel,
            trace: || nacre::trace_module(&run_math_kernel),
        },
        KernelCase {
            name: "transpose_tile",
            grid_stride: false,
            check: check_transpose_tile,
            trace: || nacre::trace_module(&run_transpose_tile),
        },
        KernelCase {
            name: "copy_rows",
            grid_stride: false,
            check: check_copy_rows,
            trace: || nacre::trace_module(&run_copy_rows),
        },
        KernelCase {
            name: "histogram256",
            grid_stride: true,
            check: check_histogram256,
            trace: || nacre::trace_module(&run_histogram256),
        },
        KernelCase {
            name: "stride_counts",
            grid_stride: false,
            check: check_stride_counts,
            trace: || nacre::trace_module(&run_stride_counts),
        },
        KernelCase {
            name: "atomic_total",
            grid_stride: false,
            check: check_atomic_total,
            trace: || nacre::trace_module(&run_atomic_total),
        },
        KernelCase {
            name: "warp_exchange",
            grid_stride: false,
            check: warp::check_warp_exchange,
            trace: || nacre::trace_module(&warp::run_warp_exchange),
        },
        KernelCase {
            name: "warp_scan",
            grid_stride: false,
            check: warp::check_warp_scan,
            trace: || nacre::trace_module(&warp::run_warp_scan),
        },
        KernelCase {
            name: "warp_after_loop",
            grid_stride: false,
            check: warp::check_warp_after_loop,
            trace: || nacre::trace_module(&warp::run_warp_after_loop),
        },
        KernelCase {
            name: "block_votes",
            grid_stride: false,
            check: warp::check_block_votes,
            trace: || nacre::trace_module(&warp::run_block_votes),
        },
        KernelCase {
            name: "block_sum_warp",
            grid_stride: false,
            check: single_pass::check_block_sum_warp,
            trace: || nacre::trace_module(&single_pass::run_block_sum_warp),
        },
        KernelCase {
            name: "compact",
            grid_stride: false,
            check: single_pass::check_compact,
            trace: || nacre::trace_module(&single_pass::run_compact),
        },
        KernelCase {
            name: "dyn_block_stats",
            grid_stride: false,
            check: check_dyn_block_stats,
            trace: || nacre::trace_module(&run_dyn_block_stats),
        },
        KernelCase {
            name: "block_sum",
            grid_stride: false,
            check: check_block_sum,
            trace: || nacre::trace_module(&run_block_sum),
        },
        KernelCase {
            name: "transpose",
            grid_stride: false,
            check: check_transpose,
            trace: || nacre::trace_module(&run_transpose),
        },
        KernelCase {
            name: "saxpy_grid_stride",
            grid_stride: true,
            check: check_saxpy_grid_stride,
            trace: || nacre::trace_module(&run_saxpy_grid_stride),
        },
        KernelCase {
            name: "saxpy_f16",
            grid_stride: true,
            check: check_saxpy_f16,
            trace: || nacre::trace_module(&run_saxpy_f16),
        },
        KernelCase {
            name: "saxpy_offsets",
            grid_stride: true,
            check: check_saxpy_offsets,
            trace: || nacre::trace_module(&run_saxpy_offsets),
        },
        KernelCase {
            name: "vec_add_grid_stride",
            grid_stride: true,
            check: check_vec_add_grid_stride,
            trace: || nacre::trace_module(&run_vec_add_grid_stride),
        },
        KernelCase {
            name: "logistic",
            grid_stride: true,
            check: check_logistic,
            trace: || nacre::trace_module(&run_logistic),
        },
        KernelCase {
            name: "large_batch",
            grid_stride: true,
            check: check_large_batch,
            trace: || nacre::trace_module(&run_vec_add_grid_stride),
        },
    ]
}

/// Runs the check of every case ([`all`] and [`without_metal`]) on `engine`, once per size `sizes` gives for the case (none
/// leaves it out). Returns the number of runs and one line per failed run.
pub fn check_all(
    engine: &Engine,
    sizes: impl Fn(&KernelCase) -> Vec<usize>,
) -> (usize, Vec<String>) {
    let mut ran = 0;
    let mut failures = Vec::new();
    for case in all().into_iter().chain(without_metal()) {
        for n in sizes(&case) {
            ran += 1;
            if let Err(e) = (case.check)(engine, n) {
                failures.push(format!("{} (n = {n}): {e}", case.name));
            }
        }
    }
    (ran, failures)
}
