//! Analyses of a function or a module: they read the IR and never change it, and their
//! results are returned to the caller (nothing is cached in the [`crate::Function`]).
//!
//! - [`call_graph`]: which functions of a module call which, and which are recursive
//!   ([`CallGraph`]);
//! - [`dominators`]: [`DominatorTree`] and [`PostDominators`], and reverse postorder;
//! - [`loops`]: natural loops and their nesting ([`LoopInfo`]);
//! - [`liveness`]: the values live into each block of a region ([`live_in`]);
//! - [`pointer_roots`]: the pointer parameters each pointer derives from, and the parameters
//!   each function may write through ([`written_params`]);
//! - [`ranges`]: the interval of values each integer takes, narrowed where branch conditions
//!   hold ([`Ranges`]);
//! - [`simd_loop`]: counted loops whose iterations can run as SIMD lanes ([`SimdLoop`]);
//! - [`uniformity`]: which values and blocks differ between the threads of a GPU block
//!   ([`Divergence`]).

pub mod call_graph;
pub mod dominators;
pub mod liveness;
pub mod loops;
pub mod pointer_roots;
pub mod ranges;
pub mod simd_loop;
pub mod uniformity;

pub use call_graph::CallGraph;
pub use dominators::{postorder, DominatorTree, PostDominators};
pub use liveness::live_in;
pub use loops::{compute_loops, LoopInfo};
pub use pointer_roots::{written_params, ParamSet, PointerRoots};
pub use ranges::{GpuBounds, Interval, Ranges};
pub use simd_loop::SimdLoop;
pub use uniformity::{divergence, Divergence};
