//! General transforms that passes and lowerings compose: they change a function in a way that
//! keeps it valid when their documented preconditions hold.
//!
//! - [`bounds`]: companions (base and size) for every pointer, and a bounds check before
//!   every load and store ([`insert_bounds_checks`]);
//! - [`mod@copy_blocks`]: copies of a set of blocks with fresh values, targets remapped;
//! - [`ssa_repair`]: restores SSA form for variables defined more than once, by adding block
//!   parameters ([`repair`], [`repair_everywhere`]);
//! - [`version_loops`](mod@version_loops): a copy of a loop nest entered when its inner loop
//!   runs at least once, for the C compiler's outer-loop vectoriser ([`version_loops()`]);
//! - [`mod@widen_half`]: half-precision arithmetic as `f32` arithmetic between casts, so that
//!   backends know `f16` and `bf16` only as storage ([`widen_half()`]).

pub mod bounds;
pub mod copy_blocks;
pub mod ssa_repair;
pub mod version_loops;
pub mod widen_half;

pub use bounds::{companion_positions, insert_bounds_checks, BoundsOptions};
pub use copy_blocks::{copy_blocks, Copied};
pub use ssa_repair::{repair, repair_everywhere, Variable};
pub use version_loops::version_loops;
pub use widen_half::widen_half;
