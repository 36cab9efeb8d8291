//! Generated GPU kernels *executed* on the host, for targets this machine has no GPU for: the
//! shared part of `msl_run.rs` (Metal) and `cuda_run.rs` (CUDA). A target turns each kernel's
//! source into a C++20 translation unit that includes its emulation header (one OS thread per
//! GPU thread, the threads of a block meeting at the barrier, blocks one after another, shared
//! arrays per block) and defines a runner `nacre_run`; [`check_against_cpu`] compiles it with
//! the host's C++ compiler, launches it from every corpus case's traced host function in place
//! of a GPU, and requires every array to come out bit-identical to the same host function
//! launching the kernels on the CPU runtime in grid mode.
//!
//! What every kernel shares is built once per process: the emulation header precompiled, and
//! the launcher (the threads, barrier and warps of each block, [`launcher_source`]) compiled
//! to an object that every kernel links; a kernel's `nacre_run` hands the launcher a function
//! that runs one thread ([`runner`]).
//!
//! The runner's signature is `extern "C" void nacre_run(const unsigned *dims, void *const
//! *args, unsigned *status)`: the launch's seven words (`nacre_backend::LaunchDims`: grid,
//! block, bytes of dynamic shared memory), a pointer per kernel parameter
//! (the array's address for a pointer, the address of the value for a scalar), the status
//! word.
//!
//! Modules are checked in both forms the engine makes: bounds-checked as `Engine::compile`
//! does ([`nacre::bounds_checked`] with kernels checked; the entry and every kernel then take
//! a base and a size in bytes after their declared parameters for each pointer), and
//! unchecked as `Engine::compile_unchecked` does. [`check_out_of_bounds`] runs checked kernels
//! on an array too short for them: the emulation must trap as the CPU runtime does.

use nacre::ir::{FuncId, Module, PassOptions, Scalar, VerifiedModule};
use nacre::{bounds_checked, make_backend, optimize, Backend, BackendKind, Options};
use nacre_backend::{Executable, LaunchBinding, LaunchDims};
use nacre_corpus::kernels::{all, KernelCase};
use nacre_cpu::{prepare_cpu, CpuKernels, CpuMode};
use nacre_runtime::{Array, PreparedKernels};
use std::collections::HashMap;
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

type RunFn = unsafe extern "C" fn(*const u32, *const *mut c_void, *mut u32);

/// How a kernel parameter reaches the runner.
#[derive(Copy, Clone, Debug)]
pub enum Param {
    /// A pointer to an array of this element type.
    Buffer(Scalar),
    /// A scalar, read in its own size.
    Scalar(Scalar),
}

/// A kernel compiled for an emulation.
pub struct Emulated {
    _lib: libloading::Library,
    run: RunFn,
    params: Vec<Param>,
}

/// The C++ compiler: `NACRE_CXX`, else the first of `c++`, `g++` and `clang++` that runs.
fn cxx() -> Option<String> {
    if let Ok(c) = std::env::var("NACRE_CXX") {
        return Some(c);
    }
    ["c++", "g++", "clang++"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .map(str::to_string)
}

/// What a kernel's translation unit and the launcher share: one emulated GPU thread's place
/// in the launch, and the launcher, which runs `per_thread` for every thread of every block
/// (C linkage: a target may put the kernel's side in a namespace).
const LAUNCH_INTERFACE: &str = r#"
struct nacre_emulated_thread {
    unsigned tx, ty, tz, gx, gy, gz;
    const unsigned *dims;
    unsigned char *dyn_shared;
    void *const *args;
    unsigned *status;
};
extern "C" void nacre_emulated_launch(const unsigned *dims, void *const *args, unsigned *status,
                                      void (*per_thread)(const nacre_emulated_thread &));
"#;

/// The launcher (see [`LAUNCH_INTERFACE`]), compiled once per process and linked into every
/// kernel (see [`prebuilt`]): for every block of the grid in turn, one thread per thread of the
/// block, all meeting at the block's `std::barrier` (published to the emulation header as
/// `nacre_emulated_barrier`), with the block's warps, votes and dynamic shared memory
/// (16-byte aligned). Kept out of the kernels' sources, its C++ library templates are
/// instantiated and compiled once instead of once per kernel.
fn launcher_source(header: &Header) -> String {
    format!(
        r#"#include <{}>
#undef thread
{LAUNCH_INTERFACE}
extern "C" void nacre_emulated_launch(const unsigned *dims, void *const *args, unsigned *status,
                                      void (*per_thread)(const nacre_emulated_thread &)) {{
    unsigned bx = dims[3], by = dims[4], bz = dims[5];
    unsigned n = bx * by * bz;
    for (unsigned gz = 0; gz < dims[2]; gz++)
    for (unsigned gy = 0; gy < dims[1]; gy++)
    for (unsigned gx = 0; gx < dims[0]; gx++) {{
        std::vector<__int128> dyn_storage(dims[6] / 16 + 1);
        unsigned char *dyn_shared = (unsigned char *)dyn_storage.data();
        std::barrier<> group(n);
        std::deque<nacre_emulated_warp> warps;
        for (unsigned w = 0; w * 32 < n; w++) warps.emplace_back(n - w * 32 < 32 ? n - w * 32 : 32);
        std::vector<int> votes(n);
        std::vector<std::thread> threads;
        threads.reserve(n);
        for (unsigned tz = 0; tz < bz; tz++)
        for (unsigned ty = 0; ty < by; ty++)
        for (unsigned tx = 0; tx < bx; tx++)
            threads.emplace_back([&, tx, ty, tz] {{
                nacre_emulated_barrier = &group;
                unsigned linear = tx + bx * (ty + by * tz);
                nacre_emulated_warp_of = &warps[linear / 32];
                nacre_emulated_lane = linear % 32;
                nacre_emulated_votes = votes.data();
                per_thread(nacre_emulated_thread{{tx, ty, tz, gx, gy, gz, dims, dyn_shared, args, status}});
            }});
        for (auto &t : threads) t.join();
    }}
}}
"#,
        header.name
    )
}

/// The end of a kernel's translation unit (see the module docs): `nacre_run`, which hands the
/// launcher a function running `per_thread` as one thread. `dim3` is the emulation's
/// three-component index type; `grid`, `block`, `gx`.. and `tx`.. name the launch's shape and
/// the thread's block and thread indices, `dyn_shared` and `dyn_bytes` the block's dynamic
/// shared memory, `args` and `status` the runner's arguments.
pub fn runner(dim3: &str, per_thread: &[String]) -> String {
    let body: String = per_thread.iter().map(|l| format!("    {l}\n")).collect();
    format!(
        r#"{LAUNCH_INTERFACE}
static void nacre_thread(const nacre_emulated_thread &t) {{
    unsigned tx = t.tx, ty = t.ty, tz = t.tz, gx = t.gx, gy = t.gy, gz = t.gz;
    {dim3} grid{{t.dims[0], t.dims[1], t.dims[2]}};
    {dim3} block{{t.dims[3], t.dims[4], t.dims[5]}};
    unsigned char *dyn_shared = t.dyn_shared;
    unsigned dyn_bytes = t.dims[6];
    void *const *args = t.args;
    unsigned *status = t.status;
{body}}}

extern "C" void nacre_run(const unsigned *dims, void *const *args, unsigned *status) {{
    nacre_emulated_launch(dims, args, status, nacre_thread);
}}
"#
    )
}

/// A target's emulation header: the folder that holds it and its name as every translation
/// unit's first line includes it.
pub struct Header {
    /// The folder, put on the include path.
    pub dir: &'static str,
    /// The file name.
    pub name: &'static str,
}

/// The compiler flags of every emulated kernel, and of the precompiled header, which must be
/// built with the same.
const CXX_FLAGS: [&str; 7] = [
    "-std=c++20",
    "-O1",
    "-ffp-contract=off",
    "-fno-strict-aliasing",
    "-fPIC",
    "-pthread",
    "-w",
];

/// What every kernel of a target is built with, made once per process and compiler (in the
/// tests' scratch folder under `target/`).
#[derive(Clone)]
struct Prebuilt {
    /// The arguments that make the compiler read the header precompiled; none where it cannot
    /// precompile it, when every kernel parses the header itself. Parsing it (the C++ library's
    /// threads and barriers) was most of a kernel's compile time.
    header_args: Vec<String>,
    /// The launcher's object file (see [`launcher_source`]), linked into every kernel.
    launcher: PathBuf,
}

/// The [`Prebuilt`] parts for `cxx` and `header`, built the first time this process asks.
fn prebuilt(cxx: &str, header: &Header) -> Result<Prebuilt, String> {
    type Built = Vec<(String, &'static str, Prebuilt)>;
    static BUILT: Mutex<Built> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, p)) = built.iter().find(|(c, n, _)| c == cxx && *n == header.name) {
        return Ok(p.clone());
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("emulation")
        .join(cxx.replace('/', "_"));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let header_args = precompile(cxx, header, &dir).unwrap_or_default();
    let src = dir.join(format!(
        "{}.launcher.{}.cpp",
        header.name,
        std::process::id()
    ));
    let fresh = dir.join(format!("{}.launcher.{}.o", header.name, std::process::id()));
    let launcher = dir.join(format!("{}.launcher.o", header.name));
    std::fs::write(&src, launcher_source(header)).map_err(|e| e.to_string())?;
    let out = Command::new(cxx)
        .args(CXX_FLAGS)
        .arg("-c")
        .args(&header_args)
        .arg(format!("-I{}", header.dir))
        .arg(&src)
        .arg("-o")
        .arg(&fresh)
        .output()
        .map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&src);
    if !out.status.success() {
        return Err(format!(
            "{cxx} rejected the launcher:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    std::fs::rename(&fresh, &launcher).map_err(|e| e.to_string())?;
    let p = Prebuilt {
        header_args,
        launcher,
    };
    built.push((cxx.to_string(), header.name, p.clone()));
    Ok(p)
}

/// Precompiles `header` with `cxx` into `dir`: GCC finds `<name>.gch` in a folder ahead of the
/// header's on the include path, Clang takes the file with `-include-pch`. `None` where the
/// compiler cannot.
fn precompile(cxx: &str, header: &Header, dir: &Path) -> Option<Vec<String>> {
    let version = Command::new(cxx).arg("--version").output().ok()?;
    let clang = String::from_utf8_lossy(&version.stdout).contains("clang");
    let out = dir.join(format!(
        "{}.{}",
        header.name,
        if clang { "pch" } else { "gch" }
    ));
    // Built beside and renamed over the last process's: a compiler still reading that one
    // keeps its file.
    let fresh = dir.join(format!("{}.{}", header.name, std::process::id()));
    let status = Command::new(cxx)
        .args(CXX_FLAGS)
        .args(["-x", "c++-header"])
        .arg(Path::new(header.dir).join(header.name))
        .arg("-o")
        .arg(&fresh)
        .status()
        .ok()?;
    if !status.success() || std::fs::rename(&fresh, &out).is_err() {
        return None;
    }
    Some(if clang {
        vec!["-include-pch".to_string(), out.display().to_string()]
    } else {
        vec![format!("-I{}", dir.display())]
    })
}

/// Compiles `source` (a translation unit whose first line includes `header` and which defines
/// `nacre_run`, see the module docs), for kernel `name` with `params`.
pub fn build(
    cxx: &str,
    header: &Header,
    name: &str,
    source: &str,
    params: Vec<Param>,
) -> Result<Emulated, String> {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let dir: PathBuf = std::env::temp_dir().join(format!(
        "nacre-emulated-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    ));
    let prebuilt = prebuilt(cxx, header)?;
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let src = dir.join("kernel.cpp");
    let lib = dir.join("kernel.so");
    std::fs::write(&src, source).map_err(|e| e.to_string())?;
    let out = Command::new(cxx)
        .args(CXX_FLAGS)
        .arg("-shared")
        .args(&prebuilt.header_args)
        .arg(format!("-I{}", header.dir))
        .arg(&src)
        .arg(&prebuilt.launcher)
        .arg("-o")
        .arg(&lib)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "{cxx} rejected @{name}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    // SAFETY: the library was just built from generated code with no initialisers that run
    // at load time beyond the C++ runtime's.
    let library = unsafe { libloading::Library::new(&lib) }.map_err(|e| e.to_string())?;
    // SAFETY: `nacre_run` is defined by every target's source with exactly this signature.
    let run: RunFn = unsafe { library.get::<RunFn>("nacre_run") }
        .map(|s| *s)
        .map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Emulated {
        _lib: library,
        run,
        params,
    })
}

/// The launcher of emulated kernels (a [`nacre::ir::LaunchFn`]).
pub unsafe extern "C" fn emulated_launch(
    handle: usize,
    dims: *const u32,
    args: *const u64,
    status: *mut u32,
) {
    // SAFETY: the handle is a live `Emulated` of this test; a `LaunchDims` and one argument
    // per parameter, as every launcher gets.
    let (k, d) = unsafe { (&*(handle as *const Emulated), LaunchDims::read(dims)) };
    // The GPU's limits (the CPU runtime's), static shared arrays not counted.
    if let Err(trap) = nacre_runtime::LaunchLimits::TYPICAL.check(&d, 0) {
        // SAFETY: `status` is the caller's writable status word.
        unsafe { *status = trap.code() };
        return;
    }
    let ptrs: Vec<*mut c_void> = k
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| match p {
            // SAFETY: `args` holds one slot per parameter.
            Param::Buffer(_) => (unsafe { *args.add(i) }) as usize as *mut c_void,
            // Scalars are read in their own size from the little-endian slot.
            // SAFETY: as above.
            Param::Scalar(_) => (unsafe { args.add(i) }) as *mut c_void,
        })
        .collect();
    // SAFETY: the runner reads the dims, the argument pointers and writes the status word.
    unsafe { (k.run)(dims, ptrs.as_ptr(), status) };
}

/// One argument of a host function.
#[derive(Clone, Copy)]
pub enum Arg {
    /// An `f32` array of this length with values in (-1, 1).
    F32s(usize),
    /// An `f32` array with values in (0, 1).
    Unit(usize),
    /// A `u32` array.
    U32s(usize),
    /// An `i32` array.
    I32s(usize),
    /// A `u32` scalar.
    U32(u32),
    /// An `f32` scalar.
    F32(f32),
    /// An `f16` array of this length with values in (-8, 8).
    F16s(usize),
    /// An `i64` array with values of up to 63 bits, of both signs.
    I64s(usize),
    /// An `i128` array (filled with a pattern).
    I128s(usize),
}

impl Arg {
    /// An array's size in bytes; `None` for a scalar.
    fn bytes(self) -> Option<usize> {
        match self {
            Arg::F32s(len) | Arg::Unit(len) | Arg::U32s(len) | Arg::I32s(len) => Some(len * 4),
            Arg::F16s(len) => Some(len * 2),
            Arg::I64s(len) => Some(len * 8),
            Arg::I128s(len) => Some(len * 16),
            Arg::U32(_) | Arg::F32(_) => None,
        }
    }
}

pub fn spec(case: &str) -> Vec<Arg> {
    use Arg::*;
    match case {
        "index_queries" => vec![U32s(3 * 64 * 4), U32(3)],
        "index_3d" => vec![U32s(8 * 6 * 4)],
        "sync_only" => vec![U32s(2 * 128), U32(2)],
        "bounded_index" => vec![U32s(300), U32(300)],
        "vec_add" => vec![F32s(512), F32s(512), F32s(512), U32(2)],
        "vec_add_dynamic" => vec![F32s(512), F32s(512), F32s(512), U32(512)],
        "vec_add_bounded" => vec![F32s(300), F32s(300), F32s(300), U32(300)],
        "vec_scale" => vec![F32s(300), F32(2.5), U32(300)],
        "saxpy" => vec![F32(1.5), F32s(300), F32s(300), U32(300)],
        "classify" => vec![F32s(300), U32s(300), U32(300)],
        "prefix_sum" => vec![I32s(512), U32(2)],
        "wide_products" => vec![I64s(300), I64s(300), I128s(300), I128s(3), U32(300)],
        "block_sum" => vec![F32s(600), F32s(3), U32(600)],
        "dyn_block_stats" => vec![F32s(300), F32s(9), U32(300), U32(128)],
        "histogram256" => vec![U32s(700), U32s(256), U32(700), U32(3)],
        "atomic_total" => vec![U32s(300), U32s(2), U32(300)],
        // Just past the bound of the CPU's lockstep rewrite (see the case's docs).
        "stride_counts" => vec![U32s(32), U32(u32::MAX - 131), U32(u32::MAX - 31)],
        "warp_exchange" => vec![
            I32s(300),
            F32s(300),
            I32s(300 * 16),
            F32s(300 * 4),
            U32(300),
        ],
        "warp_scan" => vec![U32s(300), U32s(600), U32(300)],
        "block_votes" => vec![U32s(300), U32s(12 * 8), U32(300)],
        "warp_after_loop" => vec![U32s(288), U32s(2), U32(288), U32(2)],
        // One block, so the float atomic adds in the same order on both sides.
        "block_sum_warp" => vec![F32s(1000), F32s(1), U32(1000), U32(1)],
        "compact" => vec![
            F32s(9000),
            F32s(9000),
            U32s(1),
            U32s(3),
            U32s(1),
            F32(0.5),
            U32(9000),
        ],
        "copy_rows" => vec![F32s(70 * 16), F32s(70 * 16), U32(70)],
        "match_kernel" => vec![U32s(300), U32s(300), U32(300)],
        "enum_kernel" => vec![I32s(300), I32s(300), I32s(300), U32(300)],
        "fn_value_kernel" => vec![I32s(300), I32s(300), I32s(300), U32(300)],
        "struct_param" => vec![F32s(300), F32s(300), U32(300), F32(1.5)],
        // 300 particles of four 4-byte fields.
        "record_kernel" => vec![F32s(1200), U32(300), F32(0.125)],
        "bits_kernel" => vec![I32s(300), U32s(300), U32(300)],
        "math_kernel" => vec![F32s(300), F32s(300), U32(300)],
        "softmax_rows" => vec![F32s(3 * 300), F32s(3 * 300), U32(3), U32(300)],
        "gelu" => vec![F32s(1000), F32s(1000), U32(1000), U32(2)],
        "stencil2d" => vec![F32s(37 * 20), F32s(37 * 20), U32(37), U32(20)],
        "blur3" => vec![F32s(29 * 21), F32s(29 * 21), U32(29), U32(21)],
        "matmul_tiled" => vec![F32s(37 * 37), F32s(37 * 37), F32s(37 * 37), U32(37)],
        "transpose_tile" => vec![F32s(384), F32s(384)],
        "transpose" => vec![F32s(20 * 36), F32s(20 * 36), U32(20), U32(36)],
        "saxpy_grid_stride" => vec![F32(1.5), F32s(1000), F32s(1000), U32(998), U32(2)],
        "saxpy_f16" => vec![F32(-1.25), F16s(1000), F16s(1000), U32(998), U32(2)],
        "saxpy_offsets" => vec![F32(1.5), F32s(1000), F32s(1000), U32(985), U32(1), U32(3)],
        "vec_add_grid_stride" | "large_batch" => {
            vec![F32s(1000), F32s(1000), F32s(1000), U32(1000), U32(2)]
        }
        "logistic" => vec![Unit(700), U32(700), U32(50), U32(2)],
        other => panic!("no argument spec for kernel case {other}"),
    }
}

/// Live arrays of one run, as (bits of every element).
enum Data {
    F32(Array<f32>),
    U32(Array<u32>),
    I32(Array<i32>),
    F16(Array<nacre::f16>),
    I64(Array<i64>),
    I128(Array<i128>),
}

impl Data {
    fn bits(&self) -> Vec<u64> {
        match self {
            Data::F32(a) => a.as_slice().iter().map(|x| x.to_bits() as u64).collect(),
            Data::U32(a) => a.as_slice().iter().map(|&x| x as u64).collect(),
            Data::I32(a) => a.as_slice().iter().map(|&x| x as u32 as u64).collect(),
            Data::F16(a) => a
                .as_slice()
                .iter()
                .map(|x| u64::from(x.to_bits()))
                .collect(),
            Data::I64(a) => a.as_slice().iter().map(|&x| x as u64).collect(),
            // Both halves of each element.
            Data::I128(a) => a
                .as_slice()
                .iter()
                .flat_map(|&x| [x as u64, (x >> 64) as u64])
                .collect(),
        }
    }
}

/// The form of a module a check runs.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Form {
    /// As `Engine::compile_unchecked` makes it: optimised only.
    Unchecked,
    /// As `Engine::compile` makes it: optimised, then bounds-checked, kernels included.
    Checked,
}

impl Form {
    /// `module` verified, optimised and (for [`Form::Checked`]) bounds-checked.
    pub fn prepare(self, module: Module) -> Result<VerifiedModule, nacre::Error> {
        let verified = optimize(module, &PassOptions::default())?;
        match self {
            Form::Unchecked => Ok(verified),
            Form::Checked => bounds_checked(verified, true, Default::default()),
        }
    }
}

/// Runs `exec` on fresh arrays made from `args`; returns the call's outcome and the arrays'
/// contents afterwards. For a [`Form::Checked`] entry the base address and size in bytes of
/// every array follow the declared arguments, in argument order (the layout of
/// [`nacre::ir::transform::companion_positions`]).
pub fn run(
    exec: &dyn Executable,
    args: &[Arg],
    form: Form,
) -> (Result<u64, nacre::Trap>, Vec<Vec<u64>>) {
    let mut arrays = Vec::new();
    let mut bits = Vec::new();
    let mut companions = Vec::new();
    for (n, a) in args.iter().enumerate() {
        let seed = (n as u64 + 1) * 7919;
        let value = |i: usize| ((i as u64 * 7919 + seed) % 2000) as f32 / 1000.0 - 1.0;
        match *a {
            Arg::F32s(len) => {
                let v: Vec<f32> = (0..len).map(value).collect();
                let arr = Array::copy(&v).expect("array");
                bits.push(arr.as_ptr() as u64);
                arrays.push(Data::F32(arr));
            }
            Arg::Unit(len) => {
                let v: Vec<f32> = (0..len).map(|i| 0.05 + 0.45 * (value(i) + 1.0)).collect();
                let arr = Array::copy(&v).expect("array");
                bits.push(arr.as_ptr() as u64);
                arrays.push(Data::F32(arr));
            }
            Arg::U32s(len) => {
                let arr = Array::copy(&vec![u32::MAX; len]).expect("array");
                bits.push(arr.as_ptr() as u64);
                arrays.push(Data::U32(arr));
            }
            Arg::I32s(len) => {
                let v: Vec<i32> = (0..len).map(|i| ((i * 7919) % 201) as i32 - 100).collect();
                let arr = Array::copy(&v).expect("array");
                bits.push(arr.as_ptr() as u64);
                arrays.push(Data::I32(arr));
            }
            Arg::F16s(len) => {
                let v: Vec<nacre::f16> = (0..len)
                    .map(|i| nacre::f16::from_f32(8.0 * value(i)))
                    .collect();
                let arr = Array::copy(&v).expect("array");
                bits.push(arr.as_ptr() as u64);
                arrays.push(Data::F16(arr));
            }
            Arg::I64s(len) => {
                let v: Vec<i64> = (0..len as u64)
                    .map(|i| {
                        (i.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(seed) as i64)
                            >> (i % 40)
                    })
                    .collect();
                let arr = Array::copy(&v).expect("array");
                bits.push(arr.as_ptr() as u64);
                arrays.push(Data::I64(arr));
            }
            Arg::I128s(len) => {
                let arr = Array::copy(&vec![-1i128; len]).expect("array");
                bits.push(arr.as_ptr() as u64);
                arrays.push(Data::I128(arr));
            }
            Arg::U32(x) => bits.push(x as u64),
            Arg::F32(x) => bits.push(x.to_bits() as u64),
        }
        if let Some(bytes) = a.bytes() {
            companions.extend([*bits.last().expect("the array's address"), bytes as u64]);
        }
    }
    if form == Form::Checked {
        bits.extend(companions);
    }
    let result = exec.call(&bits);
    (result, arrays.iter().map(Data::bits).collect())
}

/// The C++ compiler, or `None` (after saying the test is skipped). With
/// `NACRE_REQUIRE_CLANG=1` (CI, where clang++ comes with clang) a missing compiler fails.
pub fn cxx_ready() -> Option<String> {
    let found = cxx();
    if found.is_none() {
        if std::env::var("NACRE_REQUIRE_CLANG").is_ok_and(|v| v == "1") {
            panic!("NACRE_REQUIRE_CLANG=1 but no C++ compiler (c++, g++, clang++) runs");
        }
        eprintln!("skipped: no C++ compiler (c++, g++, clang++; or set NACRE_CXX)");
    }
    found
}

/// A corpus case's host function compiled twice: launching its kernels on the CPU runtime in
/// grid mode, and through the emulated kernels. Fields drop in order: the executables before
/// the kernels they launch.
struct Both {
    on_cpu: Arc<dyn Executable>,
    on_emulation: Arc<dyn Executable>,
    _cpu: CpuKernels,
    // Boxed: the launch handles are the kernels' addresses, which must not move.
    #[allow(clippy::vec_box)]
    _emulated: Vec<Box<Emulated>>,
}

/// Traces `case` and compiles it both ways from the same module of `form`.
fn compile_both(
    backend: &dyn Backend,
    case: &KernelCase,
    form: Form,
    kernels: &mut impl FnMut(&VerifiedModule) -> Result<Vec<(FuncId, Emulated)>, String>,
) -> Both {
    let traced = (case.trace)().unwrap_or_else(|e| panic!("{}: {e}", case.name));
    let verified = form
        .prepare(traced.module)
        .unwrap_or_else(|e| panic!("{} ({form:?}): {e}", case.name));
    let linkage = traced.linkage;
    let emulated: Vec<(FuncId, Box<Emulated>)> = kernels(&verified)
        .unwrap_or_else(|e| panic!("{} ({form:?}): {e}", case.name))
        .into_iter()
        .map(|(id, k)| (id, Box::new(k)))
        .collect();
    let handles: HashMap<_, _> = emulated
        .iter()
        .map(|(id, e)| (*id, &**e as *const Emulated as usize))
        .collect();
    let emu_binding = LaunchBinding {
        launcher: emulated_launch,
        handles,
    };
    let cpu = prepare_cpu(
        verified.module(),
        &linkage,
        backend,
        CpuMode::Grid,
        &nacre_c::COptions::default(),
    )
    .expect("cpu kernels");
    let on_cpu = backend
        .compile(
            &verified,
            &linkage.clone().with_launch(cpu.launch_binding()),
        )
        .expect("compiles");
    let on_emulation = backend
        .compile(&verified, &linkage.with_launch(emu_binding))
        .expect("compiles");
    Both {
        on_cpu,
        on_emulation,
        _cpu: cpu,
        _emulated: emulated.into_iter().map(|(_, k)| k).collect(),
    }
}

/// Runs every corpus case's host function (and those of `extra`, the cases only some targets
/// run) twice, launching its kernels once on the CPU runtime and once through `kernels` (the
/// emulated kernels of a module, by kernel id), and fails unless both runs return the same and
/// leave every array bit-identical. Both run the module in `form`; `target` names the emulated
/// side in messages.
pub fn check_against_cpu(
    target: &str,
    form: Form,
    extra: Vec<KernelCase>,
    mut kernels: impl FnMut(&VerifiedModule) -> Result<Vec<(FuncId, Emulated)>, String>,
) {
    let backend = make_backend(&Options::with_backend(BackendKind::Cranelift)).expect("backend");
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in all().into_iter().chain(extra) {
        let both = compile_both(&*backend, &case, form, &mut kernels);
        let args = spec(case.name);
        let (want, want_arrays) = run(&*both.on_cpu, &args, form);
        let (got, got_arrays) = run(&*both.on_emulation, &args, form);
        checked += 1;
        if want != got {
            failures.push(format!("{}: CPU {want:?}, {target} {got:?}", case.name));
        } else if want_arrays != got_arrays && !within_ulps(case.name, &want_arrays, &got_arrays) {
            let (arg, index) = want_arrays
                .iter()
                .zip(&got_arrays)
                .enumerate()
                .find_map(|(n, (w, g))| w.iter().zip(g).position(|(x, y)| x != y).map(|i| (n, i)))
                .unwrap_or((0, 0));
            failures.push(format!(
                "{}: argument {arg} differs first at element {index}: CPU {:#x}, {target} {:#x}",
                case.name, want_arrays[arg][index], got_arrays[arg][index]
            ));
        }
        assert!(
            want.is_ok(),
            "{} ({form:?}): the CPU run failed ({want:?}); fix the argument spec",
            case.name
        );
    }
    assert!(
        failures.is_empty(),
        "{form:?} modules:\n{}",
        failures.join("\n")
    );
    assert!(checked >= 18, "only {checked} cases");
}

/// Whether the arrays of a case whose kernels call math functions agree within the ulps a
/// math function may differ by (the emulation calls the host's C library, the CPU runtime
/// the reference); every other case must agree bit for bit.
fn within_ulps(case: &str, want: &[Vec<u64>], got: &[Vec<u64>]) -> bool {
    let ulps = match case {
        "math_kernel" | "gelu" => nacre_corpus::cases::math::LIBRARY_ULPS,
        "softmax_rows" => 2 * nacre_corpus::cases::math::LIBRARY_ULPS,
        _ => return false,
    };
    want.iter().zip(got).all(|(w, g)| {
        w.len() == g.len()
            && w.iter()
                .zip(g)
                .all(|(&a, &b)| nacre::ir::semantics::ulps(Scalar::F32, a, b) <= ulps)
    })
}

/// Bounds-checked kernels given an output array one element shorter than their index range
/// (`vec_add`: one thread per element, the check in the loop-free body;
/// `vec_add_grid_stride`: the checks hoisted out of the grid-stride loop to the kernel's
/// entry): the emulated kernels must report the same [`nacre::Trap::OutOfBounds`] as the CPU
/// runtime, naming the same kernel and parameter.
pub fn check_out_of_bounds(
    target: &str,
    mut kernels: impl FnMut(&VerifiedModule) -> Result<Vec<(FuncId, Emulated)>, String>,
) {
    let backend = make_backend(&Options::with_backend(BackendKind::Cranelift)).expect("backend");
    let short = [
        (
            "vec_add",
            vec![Arg::F32s(512), Arg::F32s(512), Arg::F32s(511), Arg::U32(2)],
        ),
        (
            "vec_add_grid_stride",
            vec![
                Arg::F32s(1000),
                Arg::F32s(1000),
                Arg::F32s(999),
                Arg::U32(1000),
                Arg::U32(2),
            ],
        ),
    ];
    for (name, args) in short {
        let case = all()
            .into_iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("{name} is in the corpus"));
        let both = compile_both(&*backend, &case, Form::Checked, &mut kernels);
        let (want, _) = run(&*both.on_cpu, &args, Form::Checked);
        let (got, _) = run(&*both.on_emulation, &args, Form::Checked);
        let Err(trap @ nacre::Trap::OutOfBounds { param, .. }) = want else {
            panic!("{name}: the CPU runtime gave {want:?} for a short array, not OutOfBounds");
        };
        // The kernel's third pointer parameter, `c`, is the short one.
        assert_eq!(param, Some(2), "{name}: the CPU runtime's {trap:?} names c");
        assert_eq!(got, want, "{name}: CPU {want:?}, {target} {got:?}");
        // In bounds, the same call runs.
        let (ok, _) = run(&*both.on_emulation, &spec(name), Form::Checked);
        assert!(ok.is_ok(), "{name}: {target} {ok:?} on arrays in bounds");
    }
}

/// In grid mode the CPU runtime gives each worker its own copy of the histogram's global bins
/// (only added to, relaxed, results unused), checked or not; kernels that read what their
/// atomics return keep them shared. The corpus runs compare the results with the emulation.
#[test]
fn the_histograms_bins_and_no_read_atomic_are_privatised_on_the_cpu() {
    let backend = make_backend(&Options::with_backend(BackendKind::Cranelift)).expect("backend");
    let private = |name: &str, form: Form| {
        let case = all()
            .into_iter()
            .find(|c| c.name == name)
            .expect("a corpus case");
        let traced = (case.trace)().expect("traces");
        let verified = form.prepare(traced.module).expect("prepares");
        let cpu = prepare_cpu(
            verified.module(),
            &traced.linkage,
            &*backend,
            CpuMode::Grid,
            &nacre_c::COptions::default(),
        )
        .expect("cpu kernels");
        let params: Vec<Vec<usize>> = cpu.iter().map(|(_, k)| k.private_params()).collect();
        params
    };
    for form in [Form::Unchecked, Form::Checked] {
        assert_eq!(private("histogram256", form), [vec![1]], "{form:?}");
        for name in ["compact", "atomic_total"] {
            let params = private(name, form);
            assert!(
                params.iter().all(Vec::is_empty),
                "{name} {form:?}: {params:?}"
            );
        }
    }
}
