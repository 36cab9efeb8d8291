//! The corpus: traced functions, each paired with the same logic written as plain Rust.
//!
//! Every backend runs every case (see `crates/nacre/tests/corpus.rs` and the differential
//! tests). A case knows its parameter types, so tests can feed it edge values and random
//! inputs; [`Case::check`] compares the compiled function against the reference.
//!
//! Functions bound their own work (loop counts are masked) so that random inputs stay cheap.

pub mod bench;
pub mod cases;
pub mod fuzz;
pub mod kernels;
mod registry;

pub use registry::{all, edge_values, find, Case, CaseKind, Outcome};
