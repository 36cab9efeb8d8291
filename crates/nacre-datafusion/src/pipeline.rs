//! A pipeline: what one compiled function computes, lowered from a DataFusion subtree — an
//! in-memory scan, the filters and projections above it, and the partial aggregation that
//! ends it (the aggregation's first phase, one per partition; DataFusion merges the
//! partitions' states as before).

use crate::error::Decline;
use crate::expr::{lower, Expr};
use crate::types::{ColType, Repr};
use datafusion::arrow::array::{Array, RecordBatch, StringViewArray};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::source::{DataSource, DataSourceExec};
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::ExecutionPlan;
use std::sync::Arc;

/// An aggregate function.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum AggFunc {
    /// `sum`
    Sum,
    /// `count`
    Count,
    /// `avg` (its partial state: a count and a sum)
    Avg,
    /// `min`
    Min,
    /// `max`
    Max,
}

/// How an accumulator combines rows.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum AccKind {
    /// Adds the argument (wrapping, as DataFusion's sums).
    Sum,
    /// Counts rows.
    Count,
    /// Keeps the least argument.
    Min,
    /// Keeps the greatest argument.
    Max,
}

/// Where an accumulator lives: one bank per representation, `i64` bank slot 0 counting the
/// rows that passed the filter (so that an empty input gives SQL's NULL sums).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Acc {
    /// How it combines rows.
    pub kind: AccKind,
    /// Its representation: `I64`, `I128` or `F64`.
    pub repr: Repr,
    /// Its index in the bank of its representation.
    pub slot: usize,
}

/// One column of the partial aggregate's output state.
#[derive(Clone, PartialEq, Debug)]
pub struct StateCol {
    /// The accumulator it reads.
    pub acc: Acc,
    /// Its Arrow type (DataFusion's state type).
    pub ty: DataType,
}

/// An aggregate of the pipeline.
#[derive(Clone, PartialEq, Debug)]
pub struct Aggregate {
    /// The function.
    pub func: AggFunc,
    /// Its argument (`None` for `count(*)`).
    pub arg: Option<Arc<Expr>>,
    /// Its state columns, in DataFusion's order.
    pub states: Vec<StateCol>,
}

/// The in-memory data a pipeline scans.
#[derive(Clone, Debug)]
pub struct Scan {
    /// The batches of each partition (columns of the source's own schema).
    pub partitions: Vec<Vec<RecordBatch>>,
    /// For each scanned column, its index in the batches, and its type.
    pub columns: Vec<(usize, ColType)>,
}

/// The most accumulators of one representation a pipeline holds.
pub const MAX_ACCS: usize = 8;

/// What the compiled code of a pipeline depends on: everything but the data. Pipelines of
/// equal programs share compiled code.
#[derive(Clone, PartialEq, Debug)]
pub struct Program {
    /// The types of the scanned columns.
    pub columns: Vec<ColType>,
    /// The rows that take part (`None`: all).
    pub filter: Option<Arc<Expr>>,
    /// The group keys (none: one group).
    pub keys: Vec<Arc<Expr>>,
    /// The aggregates.
    pub aggs: Vec<Aggregate>,
    /// Accumulators in each bank: `i64`, `i128`, `f64`.
    pub banks: [usize; 3],
}

impl Program {
    /// The key under which its compiled code is cached.
    pub fn shape(&self) -> String {
        format!("{self:?}")
    }

    /// The 64-bit words of the group keys.
    pub fn key_words(&self) -> usize {
        self.keys.iter().map(|k| k.ty().repr().key_words()).sum()
    }

    /// Every accumulator, with the state columns' order.
    pub fn accs(&self) -> impl Iterator<Item = Acc> + '_ {
        self.aggs
            .iter()
            .flat_map(|a| a.states.iter().map(|s| s.acc))
    }
}

/// A program and its data (see the module docs).
#[derive(Clone, Debug)]
pub struct Pipeline {
    /// The data.
    pub scan: Scan,
    /// What is computed.
    pub program: Arc<Program>,
    /// The output schema: the keys, then every aggregate's states.
    pub schema: SchemaRef,
}

/// The bank index of a representation.
pub fn bank(repr: Repr) -> usize {
    match repr {
        Repr::I128 => 1,
        Repr::F64 => 2,
        _ => 0,
    }
}

impl Pipeline {
    /// Lowers the partial aggregation `agg` and the operators below it, down to an in-memory
    /// scan.
    pub fn from_partial_aggregate(agg: &AggregateExec) -> Result<Pipeline, Decline> {
        if *agg.mode() != AggregateMode::Partial {
            return Err(Decline::Plan(format!("aggregate mode {:?}", agg.mode())));
        }
        let group = agg.group_expr();
        if !group.is_single() || agg.filter_expr().iter().any(Option::is_some) {
            return Err(Decline::Plan("grouping sets or FILTER clauses".into()));
        }
        let (scan, inputs, filter) = lower_input(agg.input())?;
        let schema = agg.input_schema();
        let keys = group
            .expr()
            .iter()
            .map(|(e, _)| lower(e, &schema, &inputs))
            .collect::<Result<Vec<_>, _>>()?;
        let mut banks = [1, 0, 0];
        let aggs = agg
            .aggr_expr()
            .iter()
            .map(|a| aggregate(a, &schema, &inputs, &mut banks))
            .collect::<Result<Vec<_>, _>>()?;
        if banks.iter().any(|&n| n > MAX_ACCS) {
            return Err(Decline::Plan(format!(
                "more than {MAX_ACCS} accumulators of one type"
            )));
        }
        let program = Program {
            columns: scan.columns.iter().map(|c| c.1).collect(),
            filter,
            keys,
            aggs,
            banks,
        };
        let p = Pipeline {
            scan,
            program: Arc::new(program),
            schema: agg.schema(),
        };
        p.check_data()?;
        Ok(p)
    }

    /// Checks what compiled code assumes of the data: no nulls in the scanned columns, and
    /// string group keys short enough to be held whole in their views (12 bytes).
    fn check_data(&self) -> Result<(), Decline> {
        let keys = &self.program.keys;
        let key_cols: Vec<usize> = keys
            .iter()
            .filter_map(|k| match **k {
                Expr::Column { index, .. } => Some(index),
                _ => None,
            })
            .collect();
        if keys.iter().any(|k| k.ty() == ColType::Float64) {
            return Err(Decline::Plan("float group keys".into()));
        }
        if keys
            .iter()
            .any(|k| k.ty() == ColType::Utf8View && !matches!(**k, Expr::Column { .. }))
        {
            return Err(Decline::Plan("computed string group keys".into()));
        }
        for batch in self.scan.partitions.iter().flatten() {
            for (i, &(col, ty)) in self.scan.columns.iter().enumerate() {
                let array = batch.column(col);
                if array.null_count() > 0 {
                    return Err(Decline::Data(format!("column {col} has nulls")));
                }
                if ty == ColType::Utf8View && key_cols.contains(&i) {
                    let views = array
                        .as_any()
                        .downcast_ref::<StringViewArray>()
                        .ok_or_else(|| Decline::Data("a string column is not a view".into()))?;
                    if views.views().iter().any(|v| (*v as u32) > 12) {
                        return Err(Decline::Data(
                            "a string group key longer than 12 bytes".into(),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// The scan below an operator, the expressions of the operator's columns, and its filter.
type Lowered = (Scan, Vec<Arc<Expr>>, Option<Arc<Expr>>);

/// Lowers the operators below the aggregate: the scan, and the expressions that give each
/// column of `plan`'s output, and the conjunction of the filters on the way.
fn lower_input(plan: &Arc<dyn ExecutionPlan>) -> Result<Lowered, Decline> {
    if let Some(p) = plan.downcast_ref::<ProjectionExec>() {
        let (scan, inputs, filter) = lower_input(p.input())?;
        let schema = p.input().schema();
        let exprs = p
            .expr()
            .iter()
            .map(|e| lower(&e.expr, &schema, &inputs))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok((scan, exprs, filter));
    }
    if let Some(f) = plan.downcast_ref::<FilterExec>() {
        if f.fetch().is_some() {
            return Err(Decline::Plan("a filter with a limit".into()));
        }
        let (scan, inputs, filter) = lower_input(f.input())?;
        let pred = lower(f.predicate(), &f.input().schema(), &inputs)?;
        let filter = Some(match filter {
            None => pred,
            Some(g) => Arc::new(Expr::And(g, pred)),
        });
        let out = match f.projection() {
            None => inputs,
            Some(p) => p.iter().map(|&i| inputs[i].clone()).collect(),
        };
        return Ok((scan, out, filter));
    }
    if plan.name() == "CoalesceBatchesExec" && plan.children().len() == 1 {
        return lower_input(plan.children()[0]);
    }
    if let Some(d) = plan.downcast_ref::<DataSourceExec>() {
        if let Some(m) = d.data_source().downcast_ref::<MemorySourceConfig>() {
            return scan(m);
        }
    }
    Err(Decline::Plan(format!("operator {}", plan.name())))
}

fn scan(m: &MemorySourceConfig) -> Result<Lowered, Decline> {
    if m.fetch().is_some() {
        return Err(Decline::Plan("a scan with a limit".into()));
    }
    let schema = m.original_schema();
    let projected: Vec<usize> = match m.projection() {
        Some(p) => p.clone(),
        None => (0..schema.fields().len()).collect(),
    };
    let mut columns = Vec::new();
    let mut exprs = Vec::new();
    for &c in &projected {
        // A column of another type stays unread: lowering an expression that reads it fails
        // on its type before reaching this placeholder.
        let ty = ColType::of(schema.field(c).data_type()).unwrap_or(ColType::Boolean);
        exprs.push(Arc::new(Expr::Column {
            index: columns.len(),
            ty,
        }));
        columns.push((c, ty));
    }
    let scan = Scan {
        partitions: m.partitions().to_vec(),
        columns,
    };
    Ok((scan, exprs, None))
}

/// Lowers one aggregate: its function, argument and state columns.
fn aggregate(
    a: &AggregateFunctionExpr,
    schema: &datafusion::arrow::datatypes::Schema,
    inputs: &[Arc<Expr>],
    banks: &mut [usize; 3],
) -> Result<Aggregate, Decline> {
    if a.is_distinct() || !a.order_bys().is_empty() {
        return Err(Decline::Plan(format!("aggregate {}", a.name())));
    }
    let func = match a.fun().name() {
        "sum" => AggFunc::Sum,
        "count" => AggFunc::Count,
        "avg" => AggFunc::Avg,
        "min" => AggFunc::Min,
        "max" => AggFunc::Max,
        other => return Err(Decline::Plan(format!("aggregate function {other}"))),
    };
    let args = a.expressions();
    let arg = match args.as_slice() {
        [e] => Some(lower(e, schema, inputs)?),
        _ => return Err(Decline::Plan(format!("aggregate {}", a.name()))),
    };
    let arg_repr = arg.as_ref().map(|e| e.ty().repr());
    let fields = a.state_fields().map_err(|e| Decline::Plan(e.to_string()))?;
    let mut states = Vec::new();
    for f in fields {
        let ty = f.data_type().clone();
        let state = f
            .name()
            .rsplit('[')
            .next()
            .unwrap_or("")
            .trim_end_matches(']');
        let kind = match (func, state) {
            (AggFunc::Count | AggFunc::Avg, "count") => AccKind::Count,
            (AggFunc::Sum | AggFunc::Avg, "sum") => AccKind::Sum,
            (AggFunc::Min, "min" | "value") => AccKind::Min,
            (AggFunc::Max, "max" | "value") => AccKind::Max,
            _ => return Err(Decline::Plan(format!("aggregate state {}", f.name()))),
        };
        let repr = match kind {
            AccKind::Count => Repr::I64,
            _ => match arg_repr {
                Some(Repr::I32 | Repr::I64) if kind == AccKind::Sum => Repr::I64,
                Some(r @ (Repr::I32 | Repr::I64 | Repr::I128 | Repr::F64)) => r,
                _ => return Err(Decline::Plan(format!("aggregate {}", a.name()))),
            },
        };
        let repr = if repr == Repr::I32 { Repr::I64 } else { repr };
        let b = bank(repr);
        states.push(StateCol {
            acc: Acc {
                kind,
                repr,
                slot: banks[b],
            },
            ty,
        });
        banks[b] += 1;
    }
    let arg = if func == AggFunc::Count { None } else { arg };
    Ok(Aggregate { func, arg, states })
}
