//! Nacre as a query compiler inside Apache DataFusion.
//!
//! [`NacreRule`], a physical optimizer rule, finds the pipelines of a plan that Nacre
//! understands — a scan of in-memory batches, filters and projections, and the partial
//! aggregation above them (sum, count, avg, min, max; with or without group keys) — and
//! replaces each by a [`NacreAggregateExec`] that runs one traced, compiled function per
//! batch: every operator fused, the filter a mask, no row leaving registers between
//! operators and no call back into Rust per row. DataFusion keeps the rest of the plan and
//! runs the partitions in parallel, as before. Enable it in one line:
//!
//! ```no_run
//! # use datafusion::prelude::*;
//! let ctx = nacre_datafusion::session_context(SessionConfig::new());
//! ```
//!
//! On a GPU, `SET nacre.device = 'cuda'` ([`NacreConfig`]) runs each pipeline as one CUDA
//! kernel launch over the whole table's columns, loaded into device memory once.
//!
//! The modules follow one query: [`pipeline`] lowers the DataFusion subtree (with [`expr`]
//! and [`types`]), [`codegen`] is the traced code (the CPU's loop, and the GPU's kernel in
//! [`codegen::kernel`]), [`compile`] caches compiled pipelines per shape, [`run`] is the
//! host side of a call on the CPU and [`device`] on a GPU, [`config`] says where a pipeline
//! runs, [`exec`] is the operator, [`rule`] the rule; [`tpch`] generates TPC-H tables in
//! memory for tests and benchmarks. `distributed` (the default feature of that name) runs
//! compiled pipelines on the workers of datafusion-distributed.

#![warn(missing_docs)]

pub mod build;
pub mod codegen;
pub mod compile;
pub mod config;
pub mod device;
#[cfg(feature = "distributed")]
pub mod distributed;
pub mod error;
pub mod exec;
pub mod expr;
pub mod pipeline;
pub mod rule;
pub mod run;
pub mod tpch;
pub mod types;

pub use config::{NacreConfig, Placement};
pub use error::{Decline, Error};
pub use exec::{compiled_partitions, NacreAggregateExec};
pub use rule::NacreRule;

use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use std::sync::Arc;

/// The compile options of pipelines: tiered, Cranelift first (so that a short query does not
/// wait for a C compiler), the C backend compiled in the background and taking over, with
/// Clang where it is installed ([`pipeline_c_compiler`]).
pub fn default_options() -> nacre::Options {
    nacre::Options {
        tiering: Some(nacre::Tiering {
            first: nacre::FirstTier::CraneliftFast,
            second: nacre::SecondTier::C,
        }),
        c: nacre::COptions {
            compiler: pipeline_c_compiler().to_string(),
            ..nacre::COptions::default()
        },
        ..nacre::Options::default()
    }
}

/// The C compiler of pipelines' second tier: `clang` where it is in `PATH`, else `cc`. On
/// pipelines' 128-bit accumulators, 64-bit checked arithmetic and group table Clang's code is
/// shorter: TPC-H Q1's loop is 138 instructions a row with Clang 14 against 142 with GCC 12
/// with direct indexing, 144 against 185 with the hash table (`bench/probes/q1_instructions.sh`).
pub fn pipeline_c_compiler() -> &'static str {
    if nacre::c_compiler_available("clang") {
        "clang"
    } else {
        "cc"
    }
}

/// Adds [`NacreRule`] to a session state builder.
pub trait SessionStateBuilderExt {
    /// The builder with compiled pipelines ([`default_options`]) and Nacre's session options
    /// ([`NacreConfig`]: `SET nacre.device = 'cuda'` runs them on the GPU).
    fn with_nacre(self) -> Self;
}

impl SessionStateBuilderExt for SessionStateBuilder {
    fn with_nacre(mut self) -> Self {
        let config = self.config().get_or_insert_with(SessionConfig::new);
        if config.options().extensions.get::<NacreConfig>().is_none() {
            *config = std::mem::take(config).with_option_extension(NacreConfig::default());
        }
        self.with_physical_optimizer_rule(Arc::new(NacreRule::new(default_options())))
    }
}

/// A session context with DataFusion's defaults, `config`, and compiled pipelines.
pub fn session_context(config: SessionConfig) -> SessionContext {
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_nacre()
        .build();
    SessionContext::new_with_state(state)
}
