//! The GPU programming model in traced code: thread and block indices, barriers, block-shared
//! arrays (static, and dynamic ones sized by the launch: [`launch_with_shared`],
//! [`dynamic_shared`]), warp operations and voting barriers (from [`crate::warp`]), and kernel
//! launches from host functions.
//!
//! A kernel is a traced function over `Ptr<T>` and `Val` parameters that returns nothing
//! (write it with `#[kernel]`). A host function launches it with [`launch`]; the grid and block
//! sizes are traced values, so they can be computed from data. While tracing, the kernel
//! becomes a kernel function of the module and the launch an IR op. Outside a trace (direct
//! mode) a launch runs the kernel once with grid = block = 1, which is correct for grid-stride
//! kernels only (barriers are no-ops then).

use crate::context::with_tracer;
use crate::error::TraceError;
use crate::extern_fn::{operands, traced_function, CallArgs};
use crate::identity::Handle;
use crate::ptr::Ptr;
pub use crate::shared::{shared_array_2d, shared_array_3d, Shared2, Shared3};
use crate::signature::{fn_name, Ret, TraceFn};
use crate::val::{IntoVal, Val};
pub use crate::warp::{
    lane_id, sync_threads_and, sync_threads_count, sync_threads_or, warp_all, warp_any,
    warp_ballot, warp_max, warp_min, warp_shuffle, warp_shuffle_down, warp_shuffle_up,
    warp_shuffle_xor, warp_size, warp_sum, WarpNum, WARP_SIZE,
};
use nacre_ir::semantics::ScalarValue;
use nacre_ir::{Dim, FuncKind, GpuIndex, Type};
use std::cell::RefCell;

/// Three `u32` dimensions (an index or a size).
#[derive(Clone, Copy, Debug)]
pub struct Dim3 {
    /// x
    pub x: Val<u32>,
    /// y
    pub y: Val<u32>,
    /// z
    pub z: Val<u32>,
}

impl Dim3 {
    /// `(x, y, z)`.
    pub fn new(x: impl IntoVal<u32>, y: impl IntoVal<u32>, z: impl IntoVal<u32>) -> Dim3 {
        Dim3 {
            x: x.into_val(),
            y: y.into_val(),
            z: z.into_val(),
        }
    }

    /// `(x, 1, 1)`.
    pub fn x(x: impl IntoVal<u32>) -> Dim3 {
        Dim3::new(x, 1u32, 1u32)
    }
}

/// The number of blocks of a launch.
#[derive(Clone, Copy, Debug)]
pub struct Grid(pub Dim3);

/// The number of threads per block of a launch.
#[derive(Clone, Copy, Debug)]
pub struct Block(pub Dim3);

impl Grid {
    /// A 1D grid of `x` blocks.
    pub fn new(x: impl IntoVal<u32>) -> Grid {
        Grid(Dim3::x(x))
    }
    /// A 3D grid.
    pub fn new3(x: impl IntoVal<u32>, y: impl IntoVal<u32>, z: impl IntoVal<u32>) -> Grid {
        Grid(Dim3::new(x, y, z))
    }
}

impl Block {
    /// A 1D block of `x` threads.
    pub fn new(x: impl IntoVal<u32>) -> Block {
        Block(Dim3::x(x))
    }
    /// A 3D block.
    pub fn new3(x: impl IntoVal<u32>, y: impl IntoVal<u32>, z: impl IntoVal<u32>) -> Block {
        Block(Dim3::new(x, y, z))
    }
}

/// The indices a kernel sees in direct mode (grid = block = 1).
struct DirectKernel {
    next_shared: usize,
    /// The launch's dynamic shared memory in bytes.
    dynamic_bytes: u32,
    /// Its address, once the kernel asked for it.
    dynamic_addr: Option<u64>,
}

impl DirectKernel {
    /// Ready for a launch with `dynamic_bytes` of dynamic shared memory.
    fn start(&mut self, dynamic_bytes: u32) {
        *self = DirectKernel {
            next_shared: 0,
            dynamic_bytes,
            dynamic_addr: None,
        };
    }
}

thread_local! {
    static DIRECT: RefCell<DirectKernel> = const {
        RefCell::new(DirectKernel {
            next_shared: 0,
            dynamic_bytes: 0,
            dynamic_addr: None,
        })
    };
}

fn index(kind: GpuIndex, dim: Dim) -> Val<u32> {
    let traced = with_tracer(|t| t.build(|b| b.gpu_index(kind, dim)));
    // Direct mode: one block of one thread.
    let direct = match kind {
        GpuIndex::ThreadIdx | GpuIndex::BlockIdx => 0,
        GpuIndex::BlockDim | GpuIndex::GridDim => 1,
    };
    Val::from_handle(traced.unwrap_or(Handle::direct(direct)))
}

fn dim3(kind: GpuIndex) -> Dim3 {
    Dim3 {
        x: index(kind, Dim::X),
        y: index(kind, Dim::Y),
        z: index(kind, Dim::Z),
    }
}

/// The thread's index within its block (`threadIdx`).
pub fn thread_idx() -> Dim3 {
    dim3(GpuIndex::ThreadIdx)
}

/// The block's index within the grid (`blockIdx`).
pub fn block_idx() -> Dim3 {
    dim3(GpuIndex::BlockIdx)
}

/// Threads per block (`blockDim`).
pub fn block_dim() -> Dim3 {
    dim3(GpuIndex::BlockDim)
}

/// Blocks per grid (`gridDim`).
pub fn grid_dim() -> Dim3 {
    dim3(GpuIndex::GridDim)
}

/// `threadIdx.x`.
pub fn thread_idx_x() -> Val<u32> {
    index(GpuIndex::ThreadIdx, Dim::X)
}

/// `blockIdx.x`.
pub fn block_idx_x() -> Val<u32> {
    index(GpuIndex::BlockIdx, Dim::X)
}

/// `blockDim.x`.
pub fn block_dim_x() -> Val<u32> {
    index(GpuIndex::BlockDim, Dim::X)
}

/// `gridDim.x`.
pub fn grid_dim_x() -> Val<u32> {
    index(GpuIndex::GridDim, Dim::X)
}

/// The global thread index in x: `blockIdx.x * blockDim.x + threadIdx.x`.
pub fn global_id_x() -> Val<u32> {
    block_idx_x() * block_dim_x() + thread_idx_x()
}

/// The total number of threads in x: `gridDim.x * blockDim.x` (the stride of grid-stride
/// loops).
pub fn global_size_x() -> Val<u32> {
    grid_dim_x() * block_dim_x()
}

/// The global thread index in y: `blockIdx.y * blockDim.y + threadIdx.y`.
pub fn global_id_y() -> Val<u32> {
    global_id(Dim::Y)
}

/// The global thread index in z: `blockIdx.z * blockDim.z + threadIdx.z`.
pub fn global_id_z() -> Val<u32> {
    global_id(Dim::Z)
}

/// The total number of threads in y: `gridDim.y * blockDim.y`.
pub fn global_size_y() -> Val<u32> {
    global_size(Dim::Y)
}

/// The total number of threads in z: `gridDim.z * blockDim.z`.
pub fn global_size_z() -> Val<u32> {
    global_size(Dim::Z)
}

/// The global thread index in `dim`.
fn global_id(dim: Dim) -> Val<u32> {
    index(GpuIndex::BlockIdx, dim) * index(GpuIndex::BlockDim, dim)
        + index(GpuIndex::ThreadIdx, dim)
}

/// The total number of threads in `dim`.
fn global_size(dim: Dim) -> Val<u32> {
    index(GpuIndex::GridDim, dim) * index(GpuIndex::BlockDim, dim)
}

/// Block-wide barrier (`__syncthreads()`): every thread of the block arrives before any
/// continues; shared-memory writes before it are visible after it.
pub fn sync_threads() {
    with_tracer(|t| {
        let fs = t.func();
        let mut b = fs.builder();
        b.barrier();
        fs.current = b.current_block();
    });
}

/// A block-shared array of `N` elements of `T` (`__shared__ T a[N]` / `threadgroup T a[N]`).
/// Several per kernel are allowed; each call site is its own array.
pub fn shared_array<T: ScalarValue, const N: usize>() -> Ptr<T> {
    shared_alloc::<T>(N)
}

/// A block-shared array of `n` elements of `T` (what [`shared_array`] and the 2D and 3D
/// arrays are made of).
pub(crate) fn shared_alloc<T: ScalarValue>(n: usize) -> Ptr<T> {
    let len = u32::try_from(n).unwrap_or(u32::MAX);
    let traced = with_tracer(|t| t.build(|b| b.shared_alloc(T::SCALAR, len)));
    if let Some(h) = traced {
        return Ptr::from_handle(h);
    }
    DIRECT.with(|d| {
        let mut d = d.borrow_mut();
        let i = d.next_shared;
        d.next_shared += 1;
        // Outside a direct call no access can succeed, so a null pointer serves.
        let addr = crate::region::shared_array(i, n * T::SCALAR.bytes() as usize).unwrap_or(0);
        Ptr::from_handle(Handle::direct_word(addr as u64))
    })
}

/// The block's dynamic shared memory as elements of `T` (`extern __shared__ T a[]` /
/// `threadgroup T *a [[threadgroup(0)]]`): [`dynamic_shared_bytes`] bytes, given by the launch
/// ([`launch_with_shared`]; none with [`launch`]), 16-byte aligned. Every call in a kernel
/// returns the same memory, whatever `T`; accesses are bounds-checked against the launch's
/// size like any other. Like static shared arrays it is not initialised.
pub fn dynamic_shared<T: ScalarValue>() -> Ptr<T> {
    let traced = with_tracer(|t| t.build(|b| b.dynamic_shared(T::SCALAR)));
    if let Some(h) = traced {
        return Ptr::from_handle(h);
    }
    DIRECT.with(|d| {
        let mut d = d.borrow_mut();
        let addr = match d.dynamic_addr {
            Some(a) => a,
            None => {
                let i = d.next_shared;
                d.next_shared += 1;
                let bytes = d.dynamic_bytes as usize;
                // Outside a direct call no access can succeed, so a null pointer serves.
                let a = crate::region::shared_array(i, bytes).unwrap_or(0) as u64;
                d.dynamic_addr = Some(a);
                a
            }
        };
        Ptr::from_handle(Handle::direct_word(addr))
    })
}

/// The size in bytes of the block's dynamic shared memory (what the launch gave).
pub fn dynamic_shared_bytes() -> Val<u32> {
    let traced = with_tracer(|t| t.build(|b| b.dynamic_shared_bytes()));
    let direct = DIRECT.with(|d| d.borrow().dynamic_bytes);
    Val::from_handle(traced.unwrap_or(Handle::direct_word(u64::from(direct))))
}

/// The number of whole elements of `T` in the block's dynamic shared memory.
pub fn dynamic_shared_len<T: ScalarValue>() -> Val<u32> {
    dynamic_shared_bytes() / T::SCALAR.bytes()
}

/// Launches kernel `k` over `grid` × `block` threads with `args` (a tuple of `Val`/`Ptr`) and
/// waits for it. In a traced host function this records a launch; the kernel is traced once
/// per trace.
pub fn launch<Args: CallArgs, K: TraceFn<Args, Ret = ()>>(
    k: K,
    grid: Grid,
    block: Block,
    args: Args,
) {
    launch_inner(k, grid, block, None, args)
}

/// Launches kernel `k` like [`launch`], with `shared_bytes` bytes of dynamic shared memory per
/// block, which the kernel reads through [`dynamic_shared`]. The size is a traced value, so it
/// can follow the data (a tile per block of `block` elements: `block * 4`); it is checked at
/// each launch against the device's limit, with the kernel's static shared arrays
/// ([`nacre_ir::Trap::SharedMemoryLimit`] when over: 48 KiB on the CPU runtime, as on every CUDA
/// GPU; on CUDA the device's opt-in maximum, 227 KiB on an H100 or H200, for which the runtime
/// raises the kernel's limit itself).
pub fn launch_with_shared<Args: CallArgs, K: TraceFn<Args, Ret = ()>>(
    k: K,
    grid: Grid,
    block: Block,
    shared_bytes: impl IntoVal<u32>,
    args: Args,
) {
    launch_inner(k, grid, block, Some(shared_bytes.into_val()), args)
}

fn launch_inner<Args: CallArgs, K: TraceFn<Args, Ret = ()>>(
    k: K,
    grid: Grid,
    block: Block,
    shared_bytes: Option<Val<u32>>,
    args: Args,
) {
    let raws = args.raws();
    if !crate::is_tracing() {
        let bytes = shared_bytes.map_or(0, |v| v.handle().bits("launch_with_shared") as u32);
        DIRECT.with(|d| d.borrow_mut().start(bytes));
        k.call_raw(&raws);
        return;
    }
    if <K::Ret as Ret>::ir_type().is_some() {
        with_tracer(|t| {
            t.fail(TraceError::BadKernel {
                name: fn_name::<K>(),
                reason: "kernels return nothing".into(),
            })
        });
        return;
    }
    let id = traced_function(&k, FuncKind::Kernel);
    with_tracer(|t| {
        let mut dims =
            |d: Dim3, what| [d.x, d.y, d.z].map(|v| t.value(v.handle(), what, || Type::U32));
        let g = dims(grid.0, "launch grid size");
        let b = dims(block.0, "launch block size");
        let shared =
            shared_bytes.map(|v| t.value(v.handle(), "launch shared memory size", || Type::U32));
        let args = operands::<Args>(t, &raws, "launch argument");
        let fs = t.func();
        let mut bld = fs.builder();
        bld.launch_shared(id, g, b, shared, args);
        fs.current = bld.current_block();
    });
}
