//! [`NacreAggregateExec`]: the DataFusion operator that runs a compiled pipeline in place of
//! a partial aggregation and everything below it, one call per partition, as many
//! partitions as the scan had. It keeps the subtree it replaced: a partition whose data the
//! compiled code does not compute with (string keys longer than their views, NaN or -0.0
//! compared, nulls in more arguments than the accumulator banks can count) runs through it,
//! as without Nacre. Where the session asks for a GPU ([`Placement`]), each
//! partition runs as a kernel there ([`crate::device`]), or on the CPU where the device
//! declines the partition or fails.

use crate::compile::compiled;
use crate::config::Placement;
use crate::device::{self, Outcome};
use crate::error::Error;
use crate::pipeline::Pipeline;
use crate::run::{run_partition, Ran};
use datafusion::arrow::array::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use futures::TryStreamExt;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Runs a [`Pipeline`] compiled by Nacre (see the module docs).
#[derive(Debug)]
pub struct NacreAggregateExec {
    pipeline: Arc<Pipeline>,
    options: nacre::Options,
    placement: Placement,
    properties: Arc<PlanProperties>,
    fallback: Arc<dyn ExecutionPlan>,
    counts: Arc<Counts>,
}

/// What became of the operator's partitions.
#[derive(Debug, Default)]
struct Counts {
    /// Ran through the DataFusion subtree.
    fallbacks: AtomicUsize,
    /// Ran as kernels on the device.
    on_device: AtomicUsize,
    /// Ran again on the CPU with the wide program ([`crate::pipeline::Program::narrow`]).
    wide: AtomicUsize,
}

impl NacreAggregateExec {
    /// The operator for `pipeline`, compiled with `options` (on the CPU) when it first runs,
    /// on `placement`, in place of `fallback` (the DataFusion subtree it was lowered from,
    /// with the same output).
    pub fn new(
        pipeline: Pipeline,
        options: nacre::Options,
        placement: Placement,
        fallback: Arc<dyn ExecutionPlan>,
    ) -> NacreAggregateExec {
        let partitions = pipeline.scan.partitions.len().max(1);
        let properties = PlanProperties::new(
            EquivalenceProperties::new(pipeline.schema.clone()),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        NacreAggregateExec {
            pipeline: Arc::new(pipeline),
            options,
            placement,
            properties: Arc::new(properties),
            fallback,
            counts: Arc::default(),
        }
    }

    /// How many partitions ran through the DataFusion subtree instead of compiled code.
    pub fn fallbacks(&self) -> usize {
        self.counts.fallbacks.load(Ordering::Relaxed)
    }

    /// How many partitions the narrow program handed to the wide one on the CPU, for a
    /// decimal outside 64 bits ([`crate::pipeline::Program::narrow`]).
    pub fn wide_runs(&self) -> usize {
        self.counts.wide.load(Ordering::Relaxed)
    }

    /// How many partitions ran as kernels on the device ([`Placement::Kernels`]).
    pub fn device_runs(&self) -> usize {
        self.counts.on_device.load(Ordering::Relaxed)
    }

    /// The pipeline it runs.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// Where it runs.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// The DataFusion subtree it replaced (same output; partitions the compiled code declines
    /// run through it).
    pub fn fallback(&self) -> &Arc<dyn ExecutionPlan> {
        &self.fallback
    }

    /// The compile options of its pipeline.
    pub fn options(&self) -> &nacre::Options {
        &self.options
    }
}

/// Partitions computed by compiled pipelines in this process, on any device.
static COMPILED_PARTITIONS: AtomicUsize = AtomicUsize::new(0);

/// How many partitions compiled pipelines have computed in this process (on the CPU or a
/// device; not those that ran through DataFusion's operators).
pub fn compiled_partitions() -> usize {
    COMPILED_PARTITIONS.load(Ordering::Relaxed)
}

/// Runs partition `partition` where `placement` says: its partial aggregate, or `None` for
/// DataFusion to run it.
fn run(
    pipeline: &Pipeline,
    options: &nacre::Options,
    placement: &Placement,
    partition: usize,
    counts: &Counts,
) -> Result<Option<RecordBatch>, Error> {
    if let Placement::Kernels(kind) = placement {
        match device::run_partition(pipeline, *kind, partition) {
            Ok(Outcome::Done(batch)) => {
                counts.on_device.fetch_add(1, Ordering::Relaxed);
                return Ok(Some(batch));
            }
            Ok(Outcome::DataFusion) => return Ok(None),
            Ok(Outcome::Host(_)) => {}
            Err(Error::Overflow) => return Err(Error::Overflow),
            Err(e) => {
                log::warn!("a compiled pipeline failed on {placement} ({e}); it runs on the CPU")
            }
        }
    }
    // A partition no program variant computes, or a pipeline that fails to compile, runs in
    // DataFusion, as one that declines data.
    let program = match pipeline.program_for(partition) {
        Ok(program) => program,
        Err(why) => {
            log::debug!("partition {partition} runs in DataFusion: {why}");
            return Ok(None);
        }
    };
    let mut program = program;
    loop {
        let Ok(c) = compiled(&program, options) else {
            return Ok(None);
        };
        match run_partition(pipeline, &program, &c.function, options, partition)? {
            Ran::Done(batch) => return Ok(Some(batch)),
            Ran::DataFusion => return Ok(None),
            // The wide program never asks again.
            Ran::Wide if program.narrow => {
                counts.wide.fetch_add(1, Ordering::Relaxed);
                program = Arc::new(program.wide());
            }
            Ran::Wide => return Ok(None),
        }
    }
}

impl DisplayAs for NacreAggregateExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let p = &self.pipeline.program;
        write!(
            f,
            "NacreAggregateExec: columns={}, filter={}, keys={}, aggregates={}, device={}",
            p.columns.len(),
            p.filter.is_some(),
            p.keys.len(),
            p.aggs.len(),
            self.placement
        )
    }
}

impl ExecutionPlan for NacreAggregateExec {
    fn name(&self) -> &str {
        "NacreAggregateExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let pipeline = self.pipeline.clone();
        let options = self.options.clone();
        let placement = self.placement.clone();
        let (fallback, counts) = (self.fallback.clone(), self.counts.clone());
        let schema = self.pipeline.schema.clone();
        let work = async move {
            let result = run(&pipeline, &options, &placement, partition, &counts)?;
            let stream: SendableRecordBatchStream = match result {
                Some(batch) => {
                    COMPILED_PARTITIONS.fetch_add(1, Ordering::Relaxed);
                    Box::pin(RecordBatchStreamAdapter::new(
                        schema,
                        futures::stream::iter([Ok(batch)]),
                    ))
                }
                None => {
                    counts.fallbacks.fetch_add(1, Ordering::Relaxed);
                    fallback.execute(partition, context)?
                }
            };
            Ok::<_, DataFusionError>(stream)
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.pipeline.schema.clone(),
            futures::stream::once(work).try_flatten(),
        )))
    }
}
