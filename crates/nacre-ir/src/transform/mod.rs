//! General transforms that passes and lowerings compose: they change a function in a way that
//! keeps it valid when their documented preconditions hold.
//!
//! - [`mod@copy_blocks`]: copies of a set of blocks with fresh values, targets remapped;
//! - [`ssa_repair`]: restores SSA form for variables defined more than once, by adding block
//!   parameters ([`repair`]).

pub mod copy_blocks;
pub mod ssa_repair;

pub use copy_blocks::{copy_blocks, Copied};
pub use ssa_repair::{repair, Variable};
