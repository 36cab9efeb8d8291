//! Analyses of one function: they read the IR and never change it, and their results are
//! returned to the caller (nothing is cached in the [`crate::Function`]).
//!
//! - [`dominators`]: [`DominatorTree`] and [`PostDominators`], and reverse postorder;
//! - [`loops`]: natural loops and their nesting ([`LoopInfo`]);
//! - [`liveness`]: the values live into each block of a region ([`live_in`]);
//! - [`uniformity`]: which values and blocks differ between the threads of a GPU block
//!   ([`Divergence`]).

pub mod dominators;
pub mod liveness;
pub mod loops;
pub mod uniformity;

pub use dominators::{postorder, DominatorTree, PostDominators};
pub use liveness::live_in;
pub use loops::{compute_loops, LoopInfo};
pub use uniformity::{divergence, Divergence};
