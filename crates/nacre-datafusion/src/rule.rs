//! [`NacreRule`]: the physical optimizer rule that puts compiled pipelines into DataFusion
//! plans.

use crate::config::Placement;
use crate::error::Decline;
use crate::exec::NacreAggregateExec;
use crate::pipeline::Pipeline;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::ExecutionPlan;
use std::sync::{Arc, Mutex};

/// Replaces every partial aggregation that reads in-memory batches through filters and
/// projections Nacre understands by a [`NacreAggregateExec`]; the rest of the plan (the
/// final aggregation, sorts, joins, ...) stays DataFusion's. Subtrees it does not understand
/// stay as they are; [`NacreRule::declined`] says why.
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
        let Some(agg) = plan
            .downcast_ref::<AggregateExec>()
            .filter(|a| *a.mode() == AggregateMode::Partial)
        else {
            return Ok(Transformed::no(plan));
        };
        match Pipeline::from_partial_aggregate(agg) {
            Ok(p) => {
                let placement = Placement::choose(config, &p.program)?;
                Ok(Transformed::yes(Arc::new(NacreAggregateExec::new(
                    p,
                    self.options.clone(),
                    placement,
                    plan.clone(),
                ))))
            }
            Err(why) => {
                self.declined
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(why);
                Ok(Transformed::no(plan))
            }
        }
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
