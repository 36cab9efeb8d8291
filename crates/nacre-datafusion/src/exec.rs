//! [`NacreAggregateExec`]: the DataFusion operator that runs a compiled pipeline in place of
//! a partial aggregation and everything below it, one call per partition, as many
//! partitions as the scan had. It keeps the subtree it replaced: a partition whose data the
//! compiled code does not compute with (string keys longer than their views, NaN or -0.0
//! compared, nulls in more arguments than the accumulator banks can count) runs through it,
//! as without Nacre. Where the session asks for a GPU ([`Placement`]), the whole table runs
//! as one kernel launch there ([`crate::device`]): the first partition's stream gives the
//! table's partial aggregate and the others give that of no rows. Where the device declines
//! the table or fails, the partitions run on the CPU: all of them in the first partition's
//! stream (the others give nothing whatever the outcome), in parallel threads. A pipeline
//! with a join runs its build side once, for the first partition that needs it
//! ([`BuildSide::run`]); where its keys are not unique, every partition runs through the
//! subtree (a join collected on its build side, partitioned as the scan).

use crate::build::{BuildSide, Built};
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
use futures::{StreamExt, TryStreamExt};
use nacre::DeviceKind;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// Runs a [`Pipeline`] compiled by Nacre (see the module docs).
#[derive(Debug)]
pub struct NacreAggregateExec {
    pipeline: Arc<Pipeline>,
    options: nacre::Options,
    placement: Placement,
    properties: Arc<PlanProperties>,
    fallback: Arc<dyn ExecutionPlan>,
    counts: Arc<Counts>,
    /// Whether the table runs on the device in one launch ([`device::table_plan`]), asked
    /// once: every partition's stream asks, and it reads every batch's null counts.
    whole_table: OnceLock<bool>,
    /// The build side of the pipeline's join, once run.
    built: BuiltOnce,
}

/// A join's build side, run by the first partition that needs it. The partitions that wait
/// for it are woken together when it is ready (a once-cell closes its semaphore), so that idle
/// workers take them: behind a mutex each woke the next as it let go, and on a tokio worker
/// that then ran its own partition, the wake waited in the worker's LIFO slot, which no other
/// worker may take, so the partitions of a join ran one after another.
type BuiltOnce = Arc<tokio::sync::OnceCell<Arc<Built>>>;

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
            whole_table: OnceLock::new(),
            built: Arc::default(),
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

/// The partitions whose output partition `partition`'s stream gives.
enum Share {
    /// Its own, on the CPU.
    Own,
    /// The whole table's, as one launch on a device (partition 0).
    Table(DeviceKind),
    /// None: partition 0 gives the whole table's.
    Nothing,
}

impl NacreAggregateExec {
    /// What partition `partition`'s stream gives.
    fn share(&self, partition: usize) -> Share {
        let Placement::Kernels(kind) = self.placement else {
            return Share::Own;
        };
        let whole_table = *self
            .whole_table
            .get_or_init(|| device::table_plan(&self.pipeline).is_ok());
        match (whole_table, partition) {
            (true, 0) => Share::Table(kind),
            (true, _) => Share::Nothing,
            (false, _) => Share::Own,
        }
    }
}

/// The whole table's partial aggregate from one launch on device `kind` (probing `build`,
/// the join's build side), or `None` where the device declines it or fails (the partitions
/// then run on the CPU).
fn run_table(
    pipeline: &Pipeline,
    kind: DeviceKind,
    counts: &Counts,
    build: Option<&BuildSide>,
) -> Result<Option<RecordBatch>, Error> {
    match device::run_table(pipeline, kind, build) {
        Ok(Outcome::Done(batch)) => {
            let partitions = pipeline.scan.partitions.len();
            counts.on_device.fetch_add(partitions, Ordering::Relaxed);
            COMPILED_PARTITIONS.fetch_add(partitions, Ordering::Relaxed);
            Ok(Some(batch))
        }
        Ok(Outcome::DataFusion) => Ok(None),
        Ok(Outcome::Host(why)) => {
            log::debug!("the table runs on the CPU: {why}");
            Ok(None)
        }
        Err(Error::Overflow) => Err(Error::Overflow),
        Err(e) => {
            let on = Placement::Kernels(kind);
            log::warn!("a compiled pipeline failed on {on} ({e}); it runs on the CPU");
            Ok(None)
        }
    }
}

/// Runs partition `partition` on the CPU: its partial aggregate, or `None` for DataFusion
/// to run it.
fn run(
    pipeline: &Pipeline,
    options: &nacre::Options,
    partition: usize,
    counts: &Counts,
    build: Option<&BuildSide>,
) -> Result<Option<RecordBatch>, Error> {
    // A partition no program variant computes, or a pipeline that fails to compile, runs in
    // DataFusion, as one that declines data.
    let program = match pipeline.program_for(partition, build) {
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
        match run_partition(pipeline, &program, &c.function, options, partition, build)? {
            Ran::Done(batch) => {
                COMPILED_PARTITIONS.fetch_add(1, Ordering::Relaxed);
                return Ok(Some(batch));
            }
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

/// What running the operator's partitions needs.
struct Partitions {
    pipeline: Arc<Pipeline>,
    options: nacre::Options,
    fallback: Arc<dyn ExecutionPlan>,
    counts: Arc<Counts>,
    context: Arc<TaskContext>,
    built: BuiltOnce,
}

impl Partitions {
    /// The build side of the pipeline's join (run by the first caller), `None` without one.
    async fn build_side(&self) -> Result<Option<Arc<Built>>> {
        let Some(b) = &self.pipeline.build else {
            return Ok(None);
        };
        let built = self
            .built
            .get_or_try_init(|| async {
                let context = self.context.clone();
                let built = BuildSide::run(b, &self.pipeline.program, context).await?;
                Ok::<_, DataFusionError>(Arc::new(built))
            })
            .await?;
        Ok(Some(built.clone()))
    }

    /// A stream of one batch.
    fn batch(&self, batch: RecordBatch) -> SendableRecordBatchStream {
        Box::pin(RecordBatchStreamAdapter::new(
            self.pipeline.schema.clone(),
            futures::stream::iter([Ok(batch)]),
        ))
    }

    /// Partition `partition` on the CPU (joined with `built`, the join's build side), or
    /// through the DataFusion subtree.
    fn on_cpu(&self, partition: usize, built: Option<&Built>) -> Result<SendableRecordBatchStream> {
        let build = match built {
            Some(Built::Duplicates) => return self.stream(partition, None),
            Some(Built::Side(b)) => Some(b),
            None => None,
        };
        let ran = run(
            &self.pipeline,
            &self.options,
            partition,
            &self.counts,
            build,
        )?;
        self.stream(partition, ran)
    }

    /// The stream of partition `partition` given what its compiled pipeline gave: its
    /// batch, or (`None`) the DataFusion subtree's partition.
    fn stream(
        &self,
        partition: usize,
        ran: Option<RecordBatch>,
    ) -> Result<SendableRecordBatchStream> {
        match ran {
            Some(batch) => Ok(self.batch(batch)),
            None => {
                self.counts.fallbacks.fetch_add(1, Ordering::Relaxed);
                self.fallback.execute(partition, self.context.clone())
            }
        }
    }

    /// Every partition on the CPU (joined with `built`, the join's build side), each in a
    /// thread of its own, their outputs one after the other in one stream (the device
    /// declined the table, whose other partitions give nothing).
    fn all_on_cpu(&self, built: Option<&Built>) -> Result<SendableRecordBatchStream> {
        let partitions = self.pipeline.scan.partitions.len();
        let build = match built {
            Some(Built::Side(b)) => Some(b),
            _ => None,
        };
        let duplicates = matches!(built, Some(Built::Duplicates));
        let ran: Vec<Result<Option<RecordBatch>, Error>> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..partitions)
                .map(|q| {
                    s.spawn(move || match duplicates {
                        // DataFusion runs a join whose build keys repeat.
                        true => Ok(None),
                        false => run(&self.pipeline, &self.options, q, &self.counts, build),
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let streams = ran
            .into_iter()
            .enumerate()
            .map(|(q, r)| self.stream(q, r?))
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.pipeline.schema.clone(),
            futures::stream::iter(streams).flatten(),
        )))
    }
}

impl DisplayAs for NacreAggregateExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let p = &self.pipeline.program;
        write!(
            f,
            "NacreAggregateExec: columns={}, filter={}, join={}, keys={}, aggregates={}, device={}",
            p.columns.len(),
            p.filter.is_some(),
            p.join.is_some(),
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
        let this = Partitions {
            pipeline: self.pipeline.clone(),
            options: self.options.clone(),
            fallback: self.fallback.clone(),
            counts: self.counts.clone(),
            context,
            built: self.built.clone(),
        };
        let share = self.share(partition);
        let work = async move {
            match share {
                Share::Own => {
                    let built = this.build_side().await?;
                    this.on_cpu(partition, built.as_deref())
                }
                Share::Nothing => Ok(this.batch(device::empty_output(&this.pipeline)?)),
                Share::Table(kind) => {
                    let built = this.build_side().await?;
                    let build = match built.as_deref() {
                        Some(Built::Side(b)) => Some(b),
                        _ => None,
                    };
                    let duplicates = matches!(built.as_deref(), Some(Built::Duplicates));
                    let ran = match duplicates {
                        true => None,
                        false => run_table(&this.pipeline, kind, &this.counts, build)?,
                    };
                    match ran {
                        Some(batch) => Ok(this.batch(batch)),
                        None => this.all_on_cpu(built.as_deref()),
                    }
                }
            }
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.pipeline.schema.clone(),
            futures::stream::once(work).try_flatten(),
        )))
    }
}
