//! [`NacreAggregateExec`]: the DataFusion operator that runs a compiled pipeline in place of
//! a partial aggregation and everything below it, one call per partition, as many
//! partitions as the scan had.

use crate::compile::compiled;
use crate::pipeline::Pipeline;
use crate::run::run_partition;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use std::fmt;
use std::sync::Arc;

/// Runs a [`Pipeline`] compiled by Nacre (see the module docs).
#[derive(Debug)]
pub struct NacreAggregateExec {
    pipeline: Arc<Pipeline>,
    options: nacre::Options,
    properties: Arc<PlanProperties>,
}

impl NacreAggregateExec {
    /// The operator for `pipeline`, compiled with `options` when it first runs.
    pub fn new(pipeline: Pipeline, options: nacre::Options) -> NacreAggregateExec {
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
            properties: Arc::new(properties),
        }
    }

    /// The pipeline it runs.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
}

impl DisplayAs for NacreAggregateExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let p = &self.pipeline.program;
        write!(
            f,
            "NacreAggregateExec: columns={}, filter={}, keys={}, aggregates={}",
            p.columns.len(),
            p.filter.is_some(),
            p.keys.len(),
            p.aggs.len()
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
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let pipeline = self.pipeline.clone();
        let options = self.options.clone();
        let work = async move {
            let c = compiled(&pipeline.program, &options)?;
            Ok(run_partition(&pipeline, &c.function, partition)?)
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.pipeline.schema.clone(),
            futures::stream::once(work),
        )))
    }
}
