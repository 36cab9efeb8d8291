//! A pipeline: what one compiled function computes, lowered from a DataFusion subtree — an
//! in-memory scan, the filters and projections above it, and the partial aggregation that
//! ends it (the aggregation's first phase, one per partition; DataFusion merges the
//! partitions' states as before).

use crate::error::Decline;
use crate::expr::{lower, Expr, Input, Lit};
use crate::types::{ColType, Repr};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::source::{DataSource, DataSourceExec};
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::{ExecutionPlan, InputOrderMode};
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
/// rows that passed the filter (so that an empty input gives SQL's NULL sums; `count(*)` and
/// the counts of `avg` share it, but for an argument that can be null, whose non-null rows
/// have a count of their own: [`Program::with_nulls`]).
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
    /// Where the aggregate's argument can be null: the count of the rows whose argument is
    /// not, which makes the state (a sum, minimum, maximum, or either state of an average)
    /// SQL's NULL where it is zero. `None`: a count is never NULL, other states only where
    /// no row passed (without keys).
    pub present: Option<Acc>,
}

/// An aggregate of the pipeline.
#[derive(Clone, PartialEq, Debug)]
pub struct Aggregate {
    /// The function.
    pub func: AggFunc,
    /// Its argument (`count(*)` counts a literal).
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
    /// The accumulators, each once (the first counts the rows that pass the filter).
    pub accs: Vec<AccSpec>,
    /// Accumulators in each bank: `i64`, `i128`, `f64`.
    pub banks: [usize; 3],
    /// For each scanned column, whether the data it runs over holds nulls there (the code
    /// then reads the column's validity; a variant per pattern, see [`Program::with_nulls`]).
    pub nullable: Vec<bool>,
    /// Whether decimals are computed in 64 bits (see [`Program::narrowable`]): the code then
    /// reads each decimal as an `i64` and checks every step for overflow; a value or result
    /// outside `i64` sets [`crate::codegen::STATUS_WIDE`], and the partition runs again
    /// with [`Program::wide`], in 128 bits. Results are the same either way.
    pub narrow: bool,
    /// Group key values for direct indexing (see [`Program::with_domain`]): for each key,
    /// its values as key words ([`Program::words_of_key`] each); `None`: a hash table.
    pub domain: Option<Vec<Vec<Vec<u64>>>>,
}

/// The most key value combinations a program indexes directly ([`Program::with_domain`]).
pub const MAX_DIRECT_GROUPS: usize = 256;

/// An accumulator and what it folds.
#[derive(Clone, PartialEq, Debug)]
pub struct AccSpec {
    /// The accumulator.
    pub acc: Acc,
    /// Its argument: a sum's, minimum's or maximum's value; for a count, the value whose
    /// non-null rows it counts (`None`: every row that passes the filter).
    pub arg: Option<Arc<Expr>>,
}

impl Program {
    /// The key under which its compiled code is cached.
    pub fn shape(&self) -> String {
        format!("{self:?}")
    }

    /// The 64-bit words of the group keys: each key's value, and after a key that can be
    /// null a word saying whether it is not.
    pub fn key_words(&self) -> usize {
        (0..self.keys.len()).map(|k| self.words_of_key(k)).sum()
    }

    /// The words of group key `k` (see [`Program::key_words`]).
    pub fn words_of_key(&self, k: usize) -> usize {
        let key = &self.keys[k];
        key.ty().repr().key_words() + usize::from(key.may_be_null(&self.nullable))
    }

    /// Whether the program reads scanned column `k`.
    pub fn reads(&self, k: usize) -> bool {
        let mut found = false;
        let args = self.aggs.iter().filter_map(|a| a.arg.as_ref());
        let roots = self.filter.iter().chain(&self.keys).chain(args);
        for e in roots {
            e.visit(&mut |n| found |= matches!(n, Expr::Column { index, .. } if *index == k));
        }
        found
    }

    /// Whether the program computes with decimals and every decimal constant fits an
    /// `i64`, so that its rows can be computed in 64 bits ([`Program::narrow`]).
    pub fn narrowable(&self) -> bool {
        let (mut decimals, mut fits) = (false, true);
        let args = self.aggs.iter().filter_map(|a| a.arg.as_ref());
        for e in self.filter.iter().chain(&self.keys).chain(args) {
            e.visit(&mut |n| {
                if n.ty().repr() != Repr::I128 {
                    return;
                }
                decimals = true;
                if let Expr::Literal { value, ty } = n {
                    fits &= match value {
                        Lit::Decimal(x) => i64::try_from(*x).is_ok(),
                        Lit::Int(x) => 10i64
                            .checked_pow(u32::from(ty.scale().unsigned_abs()))
                            .and_then(|c| x.checked_mul(c))
                            .is_some(),
                        _ => true,
                    };
                }
            });
        }
        decimals && fits
    }

    /// The program that finds each row's group by direct indexing over `domain`, each key's
    /// values (key words, [`Program::words_of_key`] each): a row whose key values are all
    /// there compares them with those values (no hash, no probe) and updates the group at
    /// `Σ index_k · stride_k` of a lookup table the host fills; the first row with another
    /// value stops the call, and the host goes on with the hash table. `None` where the
    /// program has no keys or the combinations exceed [`MAX_DIRECT_GROUPS`].
    pub fn with_domain(&self, domain: Vec<Vec<Vec<u64>>>) -> Option<Program> {
        let combinations = domain
            .iter()
            .try_fold(1usize, |n, values| n.checked_mul(values.len()))?;
        let fits = domain.len() == self.keys.len()
            && !self.keys.is_empty()
            && (1..=MAX_DIRECT_GROUPS).contains(&combinations)
            && domain
                .iter()
                .enumerate()
                .all(|(k, values)| values.iter().all(|v| v.len() == self.words_of_key(k)));
        fits.then(|| Program {
            domain: Some(domain),
            ..self.clone()
        })
    }

    /// The program computing decimals in 128 bits (see [`Program::narrow`]).
    pub fn wide(&self) -> Program {
        Program {
            narrow: false,
            ..self.clone()
        }
    }

    /// Every accumulator, once.
    pub fn accs(&self) -> impl Iterator<Item = Acc> + '_ {
        self.accs.iter().map(|a| a.acc)
    }

    /// The program for data with nulls in the scanned columns `nullable` says, with SQL's
    /// three-valued logic: a row passes a filter that is true (not NULL), aggregates skip
    /// null arguments (a count of the non-null ones per aggregate, which makes a sum,
    /// minimum or maximum of none NULL), `count(x)` counts the non-null `x`, and the rows
    /// whose group key is NULL form one group. Declines more accumulators than a bank holds.
    pub fn with_nulls(&self, nullable: Vec<bool>) -> Result<Program, Decline> {
        let mut p = self.clone();
        for a in &mut p.aggs {
            let Some(arg) = a.arg.as_ref().filter(|e| e.may_be_null(&nullable)) else {
                continue;
            };
            // A cast is null where its operand is: `x`, `x as bigint` and `x as double`
            // share one count.
            let mut counted = arg;
            while let Expr::Cast { expr, .. } = &**counted {
                counted = expr;
            }
            let present = accumulator(
                &mut p.accs,
                AccKind::Count,
                Repr::I64,
                Some(counted.clone()),
            );
            for s in &mut a.states {
                if s.acc.kind == AccKind::Count {
                    s.acc = present;
                }
                // An average of no value is NULL in both states (DataFusion's grouped
                // average merges a zero count as a value: 0 / 0); `count(x)` is a count.
                if a.func != AggFunc::Count {
                    s.present = Some(present);
                }
            }
        }
        p.banks = banks(&p.accs)?;
        p.nullable = nullable;
        Ok(p)
    }
}

/// The accumulators in each bank, at most [`MAX_ACCS`].
fn banks(accs: &[AccSpec]) -> Result<[usize; 3], Decline> {
    let mut banks = [0; 3];
    for a in accs {
        banks[bank(a.acc.repr)] += 1;
    }
    if banks.iter().any(|&n| n > MAX_ACCS) {
        return Err(Decline::Plan(format!(
            "more than {MAX_ACCS} accumulators of one type"
        )));
    }
    Ok(banks)
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
        if *agg.input_order_mode() != InputOrderMode::Linear {
            return Err(Decline::Plan("an aggregation over ordered input".into()));
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
        let mut accs = Vec::new();
        accumulator(&mut accs, AccKind::Count, Repr::I64, None);
        let aggs = agg
            .aggr_expr()
            .iter()
            .map(|a| aggregate(a, &schema, &inputs, &mut accs))
            .collect::<Result<Vec<_>, _>>()?;
        let banks = banks(&accs)?;
        let program = Program {
            columns: scan.columns.iter().map(|c| c.1).collect(),
            filter,
            keys,
            aggs,
            accs,
            banks,
            nullable: vec![false; scan.columns.len()],
            narrow: false,
            domain: None,
        };
        let program = Program {
            narrow: program.narrowable(),
            ..program
        };
        let p = Pipeline {
            scan,
            program: Arc::new(program),
            schema: agg.schema(),
        };
        p.check_keys()?;
        Ok(p)
    }

    /// Checks the group keys: no floats (DataFusion groups NaNs and zeros its own way), and
    /// strings only as scanned columns (held in their views).
    fn check_keys(&self) -> Result<(), Decline> {
        let keys = &self.program.keys;
        if keys.iter().any(|k| k.ty() == ColType::Float64) {
            return Err(Decline::Plan("float group keys".into()));
        }
        if keys
            .iter()
            .any(|k| k.ty().is_string() && !matches!(**k, Expr::Column { .. }))
        {
            return Err(Decline::Plan("computed string group keys".into()));
        }
        Ok(())
    }

    /// For each scanned column, whether partition `partition` holds nulls in it (where the
    /// program reads it; from the batches' null counts, without reading the data).
    pub fn nulls(&self, partition: usize) -> Vec<bool> {
        let batches = self
            .scan
            .partitions
            .get(partition)
            .map_or(&[][..], Vec::as_slice);
        self.scan
            .columns
            .iter()
            .enumerate()
            .map(|(k, &(col, _))| {
                self.program.reads(k)
                    && batches
                        .iter()
                        .any(|b| b.column(col).logical_null_count() > 0)
            })
            .collect()
    }

    /// The program that runs partition `partition`: the pipeline's, or its variant for the
    /// nulls the partition holds ([`Program::with_nulls`]); `Err` where no variant computes
    /// it (DataFusion runs it).
    pub fn program_for(&self, partition: usize) -> Result<Arc<Program>, Decline> {
        let nulls = self.nulls(partition);
        if nulls.iter().any(|&n| n) {
            Ok(Arc::new(self.program.with_nulls(nulls)?))
        } else {
            Ok(self.program.clone())
        }
    }
}

/// The scan below an operator, the expressions of the operator's columns, and its filter.
type Lowered = (Scan, Vec<Input>, Option<Arc<Expr>>);

/// Lowers the operators below the aggregate: the scan, and the expressions that give each
/// column of `plan`'s output, and the conjunction of the filters on the way.
fn lower_input(plan: &Arc<dyn ExecutionPlan>) -> Result<Lowered, Decline> {
    if let Some(p) = plan.downcast_ref::<ProjectionExec>() {
        let (scan, inputs, filter) = lower_input(p.input())?;
        let schema = p.input().schema();
        let exprs = p
            .expr()
            .iter()
            .map(|e| lower(&e.expr, &schema, &inputs).map(Some))
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
            Some(p) => p
                .iter()
                .map(|&i| {
                    inputs
                        .get(i)
                        .cloned()
                        .ok_or_else(|| Decline::Plan(format!("filter projection {i}")))
                })
                .collect::<Result<_, _>>()?,
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
        let readable = ColType::of(schema.field(c).data_type())
            .filter(|t| !matches!(t, ColType::UInt64 | ColType::Boolean));
        exprs.push(readable.map(|ty| {
            columns.push((c, ty));
            Arc::new(Expr::Column {
                index: columns.len() - 1,
                ty,
            })
        }));
    }
    let scan = Scan {
        partitions: m.partitions().to_vec(),
        columns,
    };
    Ok((scan, exprs, None))
}

/// The accumulator of `kind` over `arg` in representation `repr`: one already in `accs` (a
/// count shared by `count(*)` and every `avg`, the sum of `sum(x)` and `avg(x)`), or a new one
/// in the next slot of its bank.
fn accumulator(accs: &mut Vec<AccSpec>, kind: AccKind, repr: Repr, arg: Option<Arc<Expr>>) -> Acc {
    if let Some(a) = accs
        .iter()
        .find(|a| a.acc.kind == kind && a.acc.repr == repr && a.arg == arg)
    {
        return a.acc;
    }
    let slot = accs
        .iter()
        .filter(|a| bank(a.acc.repr) == bank(repr))
        .count();
    let acc = Acc { kind, repr, slot };
    accs.push(AccSpec { acc, arg });
    acc
}

/// Lowers one aggregate: its function, argument and state columns.
fn aggregate(
    a: &AggregateFunctionExpr,
    schema: &datafusion::arrow::datatypes::Schema,
    inputs: &[Input],
    accs: &mut Vec<AccSpec>,
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
        if !matches!(
            ty,
            DataType::Int64
                | DataType::UInt64
                | DataType::Int32
                | DataType::Date32
                | DataType::Float64
                | DataType::Decimal128(..)
        ) {
            return Err(Decline::Type(ty));
        }
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
        if repr == Repr::F64 && matches!(kind, AccKind::Min | AccKind::Max) {
            // DataFusion's float minimum and maximum order NaNs and infinities their own way.
            return Err(Decline::Plan(format!("aggregate {} of floats", a.name())));
        }
        let input = if kind == AccKind::Count {
            None
        } else {
            arg.clone()
        };
        states.push(StateCol {
            acc: accumulator(accs, kind, repr, input),
            ty,
            present: None,
        });
    }
    Ok(Aggregate { func, arg, states })
}
