//! Compiled pipelines in distributed queries, under
//! [datafusion-distributed](https://github.com/datafusion-contrib/datafusion-distributed).
//!
//! The coordinator plans as on one machine, the Nacre rule included, then the distributed
//! planner cuts the plan into stages. A compiled pipeline ([`NacreAggregateExec`]) is a leaf
//! of its stage: it asks for as many tasks as its scan has partitions ([`task_count`]; the
//! planner caps them at the workers), and each task gets every `tasks`-th partition
//! ([`split`]). A task reaches its worker as the DataFusion subtree the pipeline replaced
//! ([`NacreCodec`]: datafusion-proto carries the in-memory batches with the plan), and the
//! worker applies the Nacre rule to it again: it compiles its own code, cached per shape, on
//! the device its session asks for (`nacre.device` travels with the query). The final
//! aggregation runs where the distributed planner puts it, as DataFusion's own operator.
//!
//! Set-up, one line on each side:
//!
//! ```no_run
//! # use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
//! # use datafusion_distributed::{DistributedExt, SessionStateBuilderExt as _, Worker, WorkerResolver};
//! use nacre_datafusion::distributed::{self, DistributedNacre};
//!
//! // The coordinator: compiled pipelines, then the distributed planner.
//! fn coordinator(workers: impl WorkerResolver + 'static) -> SessionState {
//!     SessionStateBuilder::new()
//!         .with_default_features()
//!         .with_nacre_coordinator()
//!         .with_distributed_planner()
//!         .with_distributed_worker_resolver(workers)
//!         .build()
//! }
//! // Each worker (a gRPC service, see datafusion-distributed's `Worker`).
//! let worker = Worker::from_session_builder(distributed::worker_session);
//! ```

use crate::config::NacreConfig;
use crate::exec::NacreAggregateExec;
use crate::rule::NacreRule;
use crate::SessionStateBuilderExt;
use datafusion::arrow::array::RecordBatch;
use datafusion::common::config::ConfigOptions;
use datafusion::common::internal_err;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::execution::TaskContext;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::{replace_children_if_necessary, ExecutionPlan};
use datafusion_distributed::{
    DesiredTaskCountEvent, DesiredTaskCountEventResponse, DistributedExt, DistributedLeafExec,
    ScaleUpLeafNodeEvent, ScaleUpLeafNodeEventResponse, WorkerQueryContext,
};
use datafusion_proto::bytes::{physical_plan_from_bytes, physical_plan_to_bytes};
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use std::sync::Arc;

/// Compiled pipelines in a distributed session (see the module docs).
pub trait DistributedNacre: Sized {
    /// The coordinator's side: the Nacre rule with [`crate::default_options`], `nacre.*`
    /// options sent along with every task, the codec, and the tasks of compiled pipelines.
    /// Call it before `with_distributed_planner`.
    fn with_nacre_coordinator(self) -> Self;

    /// A worker's side: the `nacre.*` options of the query (from the request's `headers`)
    /// and the codec, which compiles the pipelines of the tasks the worker receives.
    fn with_nacre_worker(self, headers: &http::HeaderMap) -> Result<Self>;
}

impl DistributedNacre for SessionStateBuilder {
    fn with_nacre_coordinator(self) -> Self {
        self.with_distributed_option_extension(NacreConfig::default())
            .with_nacre()
            .with_distributed_user_codec(NacreCodec::default())
            .with_distributed_desired_task_count_handler(task_count)
            .with_distributed_scale_up_leaf_node_handler(scale_up)
    }

    fn with_nacre_worker(self, headers: &http::HeaderMap) -> Result<Self> {
        Ok(self
            .with_distributed_option_extension_from_headers::<NacreConfig>(headers)?
            .with_distributed_user_codec(NacreCodec::default()))
    }
}

/// A worker's session with compiled pipelines: pass it to datafusion-distributed's
/// `Worker::from_session_builder`.
pub async fn worker_session(ctx: WorkerQueryContext) -> Result<SessionState> {
    Ok(ctx.builder.with_nacre_worker(&ctx.headers)?.build())
}

/// Ships a [`NacreAggregateExec`] as the DataFusion subtree it replaced and compiles it again
/// where it arrives (the Nacre rule under the receiving session's options).
#[derive(Debug)]
pub struct NacreCodec {
    options: nacre::Options,
}

impl Default for NacreCodec {
    /// The codec compiling with [`crate::default_options`].
    fn default() -> NacreCodec {
        NacreCodec::new(crate::default_options())
    }
}

impl NacreCodec {
    /// The codec, compiling received pipelines with `options` (see
    /// [`crate::default_options`]).
    pub fn new(options: nacre::Options) -> NacreCodec {
        NacreCodec { options }
    }
}

impl PhysicalExtensionCodec for NacreCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        _inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let subtree = physical_plan_from_bytes(buf, ctx)?;
        NacreRule::new(self.options.clone()).optimize(subtree, ctx.session_config().options())
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        let Some(exec) = node.downcast_ref::<NacreAggregateExec>() else {
            return internal_err!("NacreCodec cannot encode {}", node.name());
        };
        buf.extend_from_slice(&physical_plan_to_bytes(exec.fallback().clone())?);
        Ok(())
    }
}

/// How many tasks a compiled pipeline's stage asks for: one per partition of its scan.
pub fn task_count(ev: DesiredTaskCountEvent<'_>) -> Option<Result<DesiredTaskCountEventResponse>> {
    let exec = ev.plan.downcast_ref::<NacreAggregateExec>()?;
    let partitions = exec.pipeline().scan.partitions.len().max(1);
    Some(Ok(DesiredTaskCountEventResponse::desired(partitions)))
}

/// Replaces a compiled pipeline by one variant per task ([`split`]).
pub fn scale_up(ev: ScaleUpLeafNodeEvent<'_>) -> Option<Result<ScaleUpLeafNodeEventResponse>> {
    let exec = ev.plan.downcast_ref::<NacreAggregateExec>()?;
    let variants = split(exec, ev.task_count, ev.session_config.options());
    Some(variants.and_then(|v| {
        let leaf = DistributedLeafExec::try_new(ev.plan.clone(), v)?;
        Ok(ScaleUpLeafNodeEventResponse::new(Arc::new(leaf)))
    }))
}

/// The pipeline of `exec` once per task, task `t` scanning partitions `t`, `t + tasks`, ...:
/// as many partitions in every task (empty ones where they run out), each task's pipeline
/// lowered again from the subtree it replaced, its scan narrowed to those partitions.
pub fn split(
    exec: &NacreAggregateExec,
    tasks: usize,
    config: &ConfigOptions,
) -> Result<Vec<Arc<dyn ExecutionPlan>>> {
    let tasks = tasks.max(1);
    let parts = &exec.pipeline().scan.partitions;
    let per_task = parts.len().div_ceil(tasks).max(1);
    let rule = NacreRule::new(exec.options().clone());
    (0..tasks)
        .map(|t| {
            let mine: Vec<Vec<RecordBatch>> = (0..per_task)
                .map(|k| parts.get(t + k * tasks).cloned().unwrap_or_default())
                .collect();
            let subtree = with_partitions(exec.fallback(), &mine)?;
            let variant = rule.optimize(subtree, config)?;
            if variant.downcast_ref::<NacreAggregateExec>().is_none() {
                return Err(DataFusionError::Internal(format!(
                    "a compiled pipeline declined its own partitions: {:?}",
                    rule.declined()
                )));
            }
            Ok(variant)
        })
        .collect()
}

/// `plan` with its in-memory scan reading `parts` instead. Under a join (a compiled
/// pipeline's fallback collects its build side, the left: `pipeline::collected_join`) only
/// the probe side is narrowed: every task joins with the whole build side.
fn with_partitions(
    plan: &Arc<dyn ExecutionPlan>,
    parts: &[Vec<RecordBatch>],
) -> Result<Arc<dyn ExecutionPlan>> {
    let memory = plan
        .downcast_ref::<DataSourceExec>()
        .and_then(|d| d.data_source().downcast_ref::<MemorySourceConfig>());
    if let Some(m) = memory {
        let source =
            MemorySourceConfig::try_new(parts, m.original_schema(), m.projection().clone())?;
        let scan: Arc<dyn ExecutionPlan> = DataSourceExec::from_data_source(source);
        return Ok(scan);
    }
    let children = plan.children();
    let join = plan.downcast_ref::<HashJoinExec>().is_some();
    let children = children
        .iter()
        .enumerate()
        .map(|(k, c)| {
            if join && k == 0 {
                Ok((*c).clone())
            } else {
                with_partitions(c, parts)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    replace_children_if_necessary(plan.clone(), children)
}
