//! [`NacreRule`]: the physical optimizer rule that puts compiled pipelines into DataFusion
//! plans.

use crate::config::Placement;
use crate::error::Decline;
use crate::exec::NacreAggregateExec;
use crate::pipeline::{partial_aggregate, Pipeline};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use std::sync::{Arc, Mutex};

/// Replaces every partial aggregation that reads in-memory batches through filters and
/// projections Nacre understands by a [`NacreAggregateExec`]; the rest of the plan (the
/// final aggregation, sorts, joins, ...) stays DataFusion's. A single-stage aggregation
/// (DataFusion's plan for one input partition) is split as DataFusion splits a parallel
/// one: the partial aggregation, compiled, under a final one. Subtrees it does not
/// understand stay as they are; [`NacreRule::declined`] says why.
#[derive(Debug, Default)]
pub struct NacreRule {
    options: nacre::Options,
    declined: Mutex<Vec<Decline>>,
}

impl NacreRule {
    /// The rule, compiling with `options` (see [`crate::default_options`]).
    pub fn new(options: nacre::Options) -> NacreRule {
        NacreRule {
            options,
            declined: Mutex::default(),
        }
    }

    /// Why the partial aggregations the rule left to DataFusion were left (the most recent
    /// last).
    pub fn declined(&self) -> Vec<Decline> {
        self.declined
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn replace(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Transformed<Arc<dyn ExecutionPlan>>> {
        let Some(agg) = plan.downcast_ref::<AggregateExec>() else {
            return Ok(Transformed::no(plan));
        };
        let replaced = match agg.mode() {
            AggregateMode::Partial => self.compile(&plan, agg, config)?,
            AggregateMode::Single => self.split(agg, config)?,
            _ => None,
        };
        Ok(match replaced {
            Some(new) => Transformed::yes(new),
            None => Transformed::no(plan),
        })
    }

    /// The compiled form of the partial aggregation `agg` (the node `plan`), or `None` with
    /// the reason noted.
    fn compile(
        &self,
        plan: &Arc<dyn ExecutionPlan>,
        agg: &AggregateExec,
        config: &ConfigOptions,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        match Pipeline::from_partial_aggregate(agg) {
            Ok(p) => {
                let placement = Placement::choose(config, &p.program)?;
                let fallback = p.fallback.clone().unwrap_or_else(|| plan.clone());
                Ok(Some(Arc::new(NacreAggregateExec::new(
                    p,
                    self.options.clone(),
                    placement,
                    fallback,
                ))))
            }
            Err(why) => {
                self.decline(why);
                Ok(None)
            }
        }
    }

    /// The single-stage aggregation `agg` as a final aggregation over its partial one,
    /// compiled; `None` (with the reason noted) where the partial one is not compiled.
    fn split(
        &self,
        agg: &AggregateExec,
        config: &ConfigOptions,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let partial = partial_aggregate(agg, agg.input().clone());
        let partial = match partial {
            Ok(p) => Arc::new(p),
            Err(e) => return Ok(self.split_failed(e)),
        };
        let node: Arc<dyn ExecutionPlan> = partial.clone();
        let Some(compiled) = self.compile(&node, &partial, config)? else {
            return Ok(None);
        };
        if compiled.output_partitioning().partition_count() != 1 {
            // A single-stage aggregation reads one partition, and so does its final one.
            self.decline(Decline::Plan(
                "a single-stage aggregation over partitions".into(),
            ));
            return Ok(None);
        }
        let last = AggregateExec::try_new(
            AggregateMode::Final,
            agg.group_expr().as_final(),
            agg.aggr_expr().to_vec(),
            agg.filter_expr().to_vec(),
            compiled,
            agg.input_schema(),
        );
        match last {
            Ok(last) => Ok(Some(Arc::new(last.with_limit_options(agg.limit_options())))),
            Err(e) => Ok(self.split_failed(e)),
        }
    }

    /// DataFusion refused a node of the split (the aggregation stays as it was).
    fn split_failed(&self, e: DataFusionError) -> Option<Arc<dyn ExecutionPlan>> {
        self.decline(Decline::Plan(format!(
            "a single-stage aggregation DataFusion would not split: {e}"
        )));
        None
    }

    fn decline(&self, why: Decline) {
        self.declined
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(why);
    }
}

impl PhysicalOptimizerRule for NacreRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(plan.transform_up(|p| self.replace(p, config))?.data)
    }

    fn name(&self) -> &str {
        "nacre"
    }

    fn schema_check(&self) -> bool {
        true
    }
}
