//! Launch sequences replayed as CUDA graphs.
//!
//! A call of a module whose host code touches no memory ([`LaunchSync::PerCall`]) queues its
//! launches and waits once, when it returns. Unless [`CudaOptions::direct_launches`] is set,
//! its launches are not queued one by one: each launch is checked and prepared as
//! before (shape, arguments, residency: a failure is reported by that launch, as before)
//! and then *recorded*, and the call's end hands the whole sequence to the GPU at once:
//!
//! - the first time a sequence of that *shape* is seen (the same kernels, in the same order,
//!   with the same grid, block and dynamic shared memory), its launches are queued directly;
//! - the second time, it is built into a CUDA graph (one kernel node per launch, each
//!   depending on the one before, as on the stream), instantiated and launched;
//! - from then on the instantiated graph is replayed: nodes whose arguments differ from the
//!   graph's are updated in place (`cuGraphExecKernelNodeSetParams`), then one
//!   `cuGraphLaunch`.
//!
//! Replays compute what the same launches queued on the stream compute: a graph's nodes run in
//! the order the stream would run them, with the arguments of this call. A call of another
//! shape gets (or builds) the graph of its own shape. A sequence longer than
//! [`MAX_RECORDED`] launches is queued directly from there on, without a graph. On the H200 a
//! one-kernel call replayed as a graph waits about 2 µs less than the same launch queued, and
//! 100 dependent tiny kernels run in 78 µs instead of 330–410 µs
//! (`bench/results/launch_floor_graphs.txt`).
//!
//! Graphs are kept per thread and device, the [`GRAPHS_PER_THREAD`] most recently used ones;
//! a thread that ends leaves its graphs to the next thread that needs one of the same shape
//! (no driver call runs at thread exit). Each graph holds its kernels' modules loaded.
//!
//! [`LaunchSync::PerCall`]: crate::runtime::LaunchSync::PerCall
//! [`CudaOptions::direct_launches`]: crate::runtime::CudaOptions::direct_launches

use crate::runtime::context::{per_thread_stream, Context};
use crate::runtime::driver;
use crate::runtime::error::CudaError;
use crate::runtime::module_cache::LoadedKernel;
use crate::runtime::stats::{self, Counter};
use cudarc::driver::sys;
use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

/// The most launches a call records; past them it queues its launches directly.
pub const MAX_RECORDED: usize = 4096;

/// The most graphs a thread keeps per device.
pub const GRAPHS_PER_THREAD: usize = 32;

/// The most graphs left by threads that ended, per process.
const SPARE_LIMIT: usize = 256;

/// One launch of a call, checked and ready to be queued.
pub(crate) struct Recorded {
    /// The kernel (its module stays loaded while this or a graph holds it).
    pub kernel: Arc<LoadedKernel>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    /// One slot per kernel parameter, then the status word's device address.
    pub args: Vec<u64>,
}

/// What makes two sequences replayable by one graph: per launch, the function and the
/// launch's shape.
#[derive(Clone, PartialEq, Eq, Debug)]
struct Shape(Vec<(usize, [u32; 3], [u32; 3], u32)>);

impl Shape {
    fn of(launches: &[Recorded]) -> Shape {
        Shape(
            launches
                .iter()
                .map(|r| (r.kernel.function as usize, r.grid, r.block, r.shared_bytes))
                .collect(),
        )
    }
}

/// A sequence shape seen before: its instantiated graph once the shape repeats.
struct Entry {
    ordinal: u32,
    shape: Shape,
    graph: Option<Graph>,
    /// A graph of this shape failed: its calls are queued directly.
    failed: bool,
}

/// An instantiated graph of one sequence shape.
struct Graph {
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    nodes: Vec<sys::CUgraphNode>,
    /// The arguments each node launches with now.
    args: Vec<Vec<u64>>,
    /// The kernels of the nodes, kept loaded.
    _kernels: Vec<Arc<LoadedKernel>>,
}

// SAFETY: graph and graph-exec handles are driver objects usable from any thread with their
// context current; a graph is used by one thread at a time (its thread's cache, or the spare
// list).
unsafe impl Send for Graph {}

/// Graphs of threads that ended, for threads that need the same shape.
static SPARE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// A thread's sequence shapes and graphs on one device, most recently used last.
#[derive(Default)]
pub(crate) struct GraphCache {
    entries: VecDeque<Entry>,
}

impl Drop for GraphCache {
    fn drop(&mut self) {
        let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
        spare.extend(self.entries.drain(..).filter(|e| e.graph.is_some()));
    }
}

/// A kernel node's parameters for launch `r`: `slots` receives one pointer per argument slot
/// of `r` (both must outlive the use of the result).
fn node_params(r: &mut Recorded, slots: &mut Vec<*mut c_void>) -> sys::CUDA_KERNEL_NODE_PARAMS {
    slots.clear();
    slots.extend(r.args.iter_mut().map(|a| a as *mut u64 as *mut c_void));
    sys::CUDA_KERNEL_NODE_PARAMS {
        func: r.kernel.function,
        gridDimX: r.grid[0],
        gridDimY: r.grid[1],
        gridDimZ: r.grid[2],
        blockDimX: r.block[0],
        blockDimY: r.block[1],
        blockDimZ: r.block[2],
        sharedMemBytes: r.shared_bytes,
        kernelParams: slots.as_mut_ptr(),
        extra: std::ptr::null_mut(),
        kern: std::ptr::null_mut(),
        ctx: std::ptr::null_mut(),
    }
}

/// Queues `launches` on the thread's stream one by one (the context must be current).
pub(crate) fn launch_directly(ctx: &Context, launches: &mut [Recorded]) -> Result<(), CudaError> {
    let mut slots = Vec::new();
    for r in launches {
        let p = node_params(r, &mut slots);
        // SAFETY: the function is loaded in the current context (the record holds its
        // module); `slots` holds one pointer per kernel parameter and the status word, each
        // to an 8-byte slot whose low bytes are the value (little-endian), read by the driver
        // before it returns; pointer arguments were checked against live arrays of this
        // device when the launch was recorded, and the call that owns them has not returned.
        ctx.check("cuLaunchKernel", unsafe {
            sys::cuLaunchKernel(
                p.func,
                p.gridDimX,
                p.gridDimY,
                p.gridDimZ,
                p.blockDimX,
                p.blockDimY,
                p.blockDimZ,
                p.sharedMemBytes,
                per_thread_stream(),
                p.kernelParams,
                std::ptr::null_mut(),
            )
        })?;
        stats::add(Counter::Launches, 1);
    }
    Ok(())
}

impl Graph {
    /// Builds and instantiates the graph of `launches` (the context must be current).
    fn build(ctx: &Context, launches: &mut [Recorded]) -> Result<Graph, CudaError> {
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: writes one graph handle; flags must be 0.
        ctx.check("cuGraphCreate", unsafe {
            sys::cuGraphCreate(&mut graph, 0)
        })?;
        let mut g = Graph {
            graph,
            exec: std::ptr::null_mut(),
            nodes: Vec::with_capacity(launches.len()),
            args: Vec::with_capacity(launches.len()),
            _kernels: launches.iter().map(|r| r.kernel.clone()).collect(),
        };
        let mut slots = Vec::new();
        for r in launches.iter_mut() {
            let params = node_params(r, &mut slots);
            let mut node: sys::CUgraphNode = std::ptr::null_mut();
            let deps: &[sys::CUgraphNode] = match g.nodes.last() {
                Some(last) => std::slice::from_ref(last),
                None => &[],
            };
            // SAFETY: `graph` is live; `deps` are nodes of it; the parameters point to
            // argument slots that live until the call returns (the driver copies them).
            let added = ctx.check("cuGraphAddKernelNode", unsafe {
                sys::cuGraphAddKernelNode_v2(&mut node, g.graph, deps.as_ptr(), deps.len(), &params)
            });
            if let Err(e) = added {
                g.destroy();
                return Err(e);
            }
            g.nodes.push(node);
            g.args.push(r.args.clone());
        }
        // SAFETY: writes one executable graph of the live `graph`; no flags.
        let instantiated = ctx.check("cuGraphInstantiateWithFlags", unsafe {
            sys::cuGraphInstantiateWithFlags(&mut g.exec, g.graph, 0)
        });
        if let Err(e) = instantiated {
            g.exec = std::ptr::null_mut();
            g.destroy();
            return Err(e);
        }
        stats::add(Counter::GraphBuilds, 1);
        Ok(g)
    }

    /// Sets the arguments of the nodes whose arguments differ, then launches the graph on
    /// the thread's stream (the context must be current).
    fn replay(&mut self, ctx: &Context, launches: &mut [Recorded]) -> Result<(), CudaError> {
        let mut slots = Vec::new();
        for (i, r) in launches.iter_mut().enumerate() {
            if self.args[i] == r.args {
                continue;
            }
            let params = node_params(r, &mut slots);
            // SAFETY: `exec` was instantiated from the graph that holds `nodes[i]`, a kernel
            // node of the same function and shape; the arguments are read before the call
            // returns.
            ctx.check("cuGraphExecKernelNodeSetParams", unsafe {
                sys::cuGraphExecKernelNodeSetParams_v2(self.exec, self.nodes[i], &params)
            })?;
            self.args[i].clone_from(&r.args);
        }
        // SAFETY: `exec` is a live executable graph of this context, launched on the
        // thread's stream; its kernels' modules are held by `self`.
        ctx.check("cuGraphLaunch", unsafe {
            sys::cuGraphLaunch(self.exec, per_thread_stream())
        })?;
        stats::add(Counter::GraphLaunches, 1);
        stats::add(Counter::Launches, launches.len() as u64);
        Ok(())
    }

    /// Destroys the graph (the context must be current; errors are ignored: the handles
    /// are gone either way).
    fn destroy(&mut self) {
        // SAFETY: the handles are live and destroyed once, here; no launch of them is being
        // queued (the owner is the thread that calls this).
        unsafe {
            if !self.exec.is_null() {
                let _ = sys::cuGraphExecDestroy(self.exec);
            }
            let _ = sys::cuGraphDestroy(self.graph);
        }
        self.exec = std::ptr::null_mut();
    }
}

impl GraphCache {
    /// Runs the recorded `launches` of a call on `ctx`'s device (current): as a graph of
    /// their shape if one was built or the shape was seen before, else directly (module
    /// docs). A graph that fails to build, update or launch (or a driver without graphs)
    /// leaves that call, and later calls of that shape on this thread, to the direct path.
    pub(crate) fn run(
        &mut self,
        ctx: &Context,
        launches: &mut [Recorded],
    ) -> Result<(), CudaError> {
        if launches.is_empty() {
            return Ok(());
        }
        let shape = Shape::of(launches);
        let ordinal = ctx.info.ordinal;
        let mut entry = match self.take(ordinal, &shape) {
            Some(e) => e,
            None => {
                self.insert(
                    ctx,
                    Entry {
                        ordinal,
                        shape,
                        graph: None,
                        failed: false,
                    },
                );
                return launch_directly(ctx, launches);
            }
        };
        if entry.failed {
            let result = launch_directly(ctx, launches);
            self.insert(ctx, entry);
            return result;
        }
        // A panic of the bindings (a driver without a graph entry point) is an error too.
        let result = driver::guard("a CUDA graph launch", || match entry.graph.as_mut() {
            Some(g) => g.replay(ctx, launches),
            None => Graph::build(ctx, launches).and_then(|g| {
                let g = entry.graph.insert(g);
                g.replay(ctx, launches)
            }),
        });
        let result = match result {
            Ok(()) => Ok(()),
            Err(_) => {
                // Never again for this shape on this thread: the direct path reports errors
                // of its own if the device is at fault.
                if let Some(mut g) = entry.graph.take() {
                    g.destroy();
                }
                entry.failed = true;
                launch_directly(ctx, launches)
            }
        };
        self.insert(ctx, entry);
        result
    }

    /// Removes and returns this thread's entry of `shape`, or a spare graph of it.
    fn take(&mut self, ordinal: u32, shape: &Shape) -> Option<Entry> {
        if let Some(i) = self
            .entries
            .iter()
            .position(|e| e.ordinal == ordinal && &e.shape == shape)
        {
            return self.entries.remove(i);
        }
        let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
        let i = spare
            .iter()
            .position(|e| e.ordinal == ordinal && &e.shape == shape)?;
        Some(spare.swap_remove(i))
    }

    /// Keeps `entry` as the most recently used, destroying the graph of the least recently
    /// used beyond [`GRAPHS_PER_THREAD`], and this device's oldest spare graphs while there
    /// are more than [`SPARE_LIMIT`]. The entries of a cache are all of `ctx`'s device.
    fn insert(&mut self, ctx: &Context, entry: Entry) {
        self.entries.push_back(entry);
        let mut dropped = Vec::new();
        while self.entries.len() > GRAPHS_PER_THREAD {
            dropped.extend(self.entries.pop_front());
        }
        {
            let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
            while spare.len() > SPARE_LIMIT {
                match spare.iter().position(|e| e.ordinal == ctx.info.ordinal) {
                    Some(i) => dropped.push(spare.remove(i)),
                    None => break,
                }
            }
        }
        for mut g in dropped.into_iter().filter_map(|e| e.graph) {
            g.destroy();
        }
    }
}
