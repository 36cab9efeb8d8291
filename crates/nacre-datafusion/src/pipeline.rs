//! A pipeline: what one compiled function computes, lowered from a DataFusion subtree — an
//! in-memory scan, the filters and projections above it, at most one inner equi-join that
//! probes a hash table of another subtree's rows ([`Join`], [`Build`]), and the partial
//! aggregation that ends it (the aggregation's first phase, one per partition; DataFusion
//! merges the partitions' states as before).

use crate::build::BuildSide;
use crate::error::Decline;
use crate::expr::{lower, Expr, Input, Lit};
use crate::types::{ColType, Repr};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::{JoinSide, JoinType, NullEquality};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::source::{DataSource, DataSourceExec};
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::{HashJoinExec, PartitionMode};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::{replace_children_if_necessary, ExecutionPlan, InputOrderMode};
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
    /// The join the scanned rows probe, if any: [`Program::columns`] then ends with the
    /// build side's columns, read at the matching build row.
    pub join: Option<Join>,
    /// What the projections below the aggregate compute (but plain columns and constants):
    /// DataFusion computes them for every row that reaches them, so their overflows count
    /// for every row that passes, even where they are used only in a `CASE` branch the row
    /// does not take.
    pub projected: Vec<Arc<Expr>>,
}

/// An inner equi-join in a program: each scanned row that passes [`Program::filter`] looks
/// its key up among the build side's rows ([`Build`]), whose keys are unique; a row without
/// a match, or whose key is NULL, drops out, as in DataFusion's hash join.
#[derive(Clone, PartialEq, Debug)]
pub struct Join {
    /// The scanned rows' key: an `Int32` or `Int64` expression over scanned columns.
    pub key: Arc<Expr>,
    /// The first build column in [`Program::columns`]: columns from here on are read at the
    /// matching build row.
    pub first_build: usize,
    /// The filters above the join (over both sides' columns), computed for matched rows.
    pub filter: Option<Arc<Expr>>,
    /// How the build side's keys are found: by direct indexing where they are dense
    /// ([`Lookup::Direct`], chosen when the build side is known), else a hash table.
    pub lookup: Lookup,
}

/// How a program finds a key among the build side's ([`Join::lookup`]).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Lookup {
    /// An open-addressing table of the keys (linear probing).
    Hash,
    /// A table indexed by `key - least key`: the build side's keys span at most a few times
    /// as many values as there are rows.
    Direct,
}

/// The build side of a join: a DataFusion subtree, run once per operator (every partition),
/// whose rows the scanned rows probe ([`Join`]).
#[derive(Clone, Debug)]
pub struct Build {
    /// The subtree.
    pub plan: Arc<dyn ExecutionPlan>,
    /// The column of its output holding the join key.
    pub key: usize,
    /// For each build column of the program (in order, from [`Join::first_build`]): its
    /// index in the subtree's output, and its type.
    pub columns: Vec<(usize, ColType)>,
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

    /// Whether the program reads column `k` (scanned, or of the build side).
    pub fn reads(&self, k: usize) -> bool {
        let mut found = false;
        for e in self.roots() {
            e.visit(&mut |n| found |= matches!(n, Expr::Column { index, .. } if *index == k));
        }
        found
    }

    /// The expressions the program computes: the filters, the join key, the group keys and
    /// the aggregates' arguments.
    pub fn roots(&self) -> impl Iterator<Item = &Arc<Expr>> + '_ {
        let join = self.join.iter();
        let join = join.flat_map(|j| std::iter::once(&j.key).chain(&j.filter));
        let args = self.aggs.iter().filter_map(|a| a.arg.as_ref());
        let roots = self.filter.iter().chain(join).chain(&self.keys);
        roots.chain(args).chain(&self.projected)
    }

    /// The columns the host gives as prefix views ([`Expr::long_prefix_columns`]), each
    /// once.
    pub fn long_prefix_columns(&self) -> Vec<usize> {
        let mut out = Vec::new();
        for e in self.roots() {
            e.long_prefix_columns(&mut out);
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The program whose join finds keys by `lookup` ([`Join::lookup`]).
    pub fn with_lookup(&self, lookup: Lookup) -> Program {
        let mut p = self.clone();
        if let Some(j) = &mut p.join {
            j.lookup = lookup;
        }
        p
    }

    /// Whether the program computes with decimals and every decimal constant fits an
    /// `i64`, so that its rows can be computed in 64 bits ([`Program::narrow`]).
    pub fn narrowable(&self) -> bool {
        let (mut decimals, mut fits) = (false, true);
        for e in self.roots() {
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
    /// The build side of the program's join ([`Program::join`]).
    pub build: Option<Build>,
    /// The subtree to run where compiled code declines, where it differs from the one the
    /// pipeline was lowered from: with a join, that join collected on its build side (see
    /// `collected_join`), so that its partitions are the scan's.
    pub fallback: Option<Arc<dyn ExecutionPlan>>,
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
        let Lowered {
            scan,
            inputs,
            filter,
            join,
            plan: input,
            projected,
        } = lower_input(agg.input())?;
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
        let (join, build) = join.unzip();
        let build_types = build.iter().flat_map(|b| b.columns.iter().map(|c| c.1));
        let columns: Vec<ColType> = scan
            .columns
            .iter()
            .map(|c| c.1)
            .chain(build_types)
            .collect();
        let program = Program {
            nullable: vec![false; columns.len()],
            columns,
            filter,
            keys,
            aggs,
            accs,
            banks,
            narrow: false,
            domain: None,
            join,
            projected,
        };
        let program = Program {
            narrow: program.narrowable(),
            ..program
        };
        let fallback = if Arc::ptr_eq(&input, agg.input()) {
            None
        } else {
            let partial = partial_aggregate(agg, input)
                .map_err(|e| Decline::Plan(format!("rebuilding the aggregate: {e}")))?;
            Some(Arc::new(partial) as Arc<dyn ExecutionPlan>)
        };
        let p = Pipeline {
            scan,
            program: Arc::new(program),
            schema: agg.schema(),
            build,
            fallback,
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
    /// program reads it; from the batches' null counts, without reading the data). The build
    /// side's columns follow in a program with a join ([`BuildSide::nulls`]).
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

    /// The program that runs partition `partition` (joined with `build`, the build side,
    /// in a pipeline with a join): the pipeline's, or its variant for the nulls the
    /// partition and the build side hold ([`Program::with_nulls`]) and the build side's
    /// lookup ([`Program::with_lookup`]); `Err` where no variant computes it (DataFusion
    /// runs it).
    pub fn program_for(
        &self,
        partition: usize,
        build: Option<&BuildSide>,
    ) -> Result<Arc<Program>, Decline> {
        let mut nulls = self.nulls(partition);
        if let Some(b) = build {
            nulls.extend(b.nulls());
        }
        let program = if nulls.iter().any(|&n| n) {
            Arc::new(self.program.with_nulls(nulls)?)
        } else {
            self.program.clone()
        };
        Ok(match build {
            Some(b) if program.join.is_some() => Arc::new(program.with_lookup(b.lookup())),
            _ => program,
        })
    }
}

/// The partial (first-phase) aggregation of `agg`'s groups and aggregates over `input`.
pub(crate) fn partial_aggregate(
    agg: &AggregateExec,
    input: Arc<dyn ExecutionPlan>,
) -> datafusion::error::Result<AggregateExec> {
    AggregateExec::try_new(
        AggregateMode::Partial,
        agg.group_expr().clone(),
        agg.aggr_expr().to_vec(),
        agg.filter_expr().to_vec(),
        input,
        agg.input_schema(),
    )
}

/// What the operators below an aggregate lower to.
struct Lowered {
    /// The scan.
    scan: Scan,
    /// The expression of each column of the operator's output.
    inputs: Vec<Input>,
    /// The conjunction of the filters below the join (or all, without one).
    filter: Option<Arc<Expr>>,
    /// The join, with the conjunction of the filters above it.
    join: Option<(Join, Build)>,
    /// The subtree with its join (if any) collected on its build side, so that its
    /// partitions are those of the scan (see [`collected_join`]).
    plan: Arc<dyn ExecutionPlan>,
    /// What the projections on the way compute ([`Program::projected`]).
    projected: Vec<Arc<Expr>>,
}

/// `conjunction AND pred`.
fn and(conjunction: Option<Arc<Expr>>, pred: Arc<Expr>) -> Option<Arc<Expr>> {
    Some(match conjunction {
        None => pred,
        Some(g) => Arc::new(Expr::And(g, pred)),
    })
}

/// `plan` with its only child replaced by `child` (itself where that is its child).
fn with_child(
    plan: &Arc<dyn ExecutionPlan>,
    child: &Arc<dyn ExecutionPlan>,
) -> Result<Arc<dyn ExecutionPlan>, Decline> {
    replace_children_if_necessary(plan.clone(), vec![child.clone()])
        .map_err(|e| Decline::Plan(format!("rebuilding {}: {e}", plan.name())))
}

/// Lowers the operators below the aggregate: the scan, and the expressions that give each
/// column of `plan`'s output, and the conjunction of the filters on the way.
fn lower_input(plan: &Arc<dyn ExecutionPlan>) -> Result<Lowered, Decline> {
    if let Some(p) = plan.downcast_ref::<ProjectionExec>() {
        let mut below = lower_input(p.input())?;
        let schema = p.input().schema();
        let inputs = p
            .expr()
            .iter()
            .map(|e| lower(&e.expr, &schema, &below.inputs).map(Some))
            .collect::<Result<Vec<_>, _>>()?;
        let computed = inputs
            .iter()
            .flatten()
            .filter(|e| !matches!(***e, Expr::Column { .. } | Expr::Literal { .. }));
        below.projected.extend(computed.cloned());
        let plan = with_child(plan, &below.plan)?;
        return Ok(Lowered {
            inputs,
            plan,
            ..below
        });
    }
    if let Some(f) = plan.downcast_ref::<FilterExec>() {
        return lower_filter(plan, f);
    }
    if plan.name() == "CoalesceBatchesExec" && plan.children().len() == 1 {
        let below = lower_input(plan.children()[0])?;
        let plan = with_child(plan, &below.plan)?;
        return Ok(Lowered { plan, ..below });
    }
    if let Some(j) = plan.downcast_ref::<HashJoinExec>() {
        return lower_join(j);
    }
    if let Some(d) = plan.downcast_ref::<DataSourceExec>() {
        if let Some(m) = d.data_source().downcast_ref::<MemorySourceConfig>() {
            let (scan, inputs) = scan(m)?;
            return Ok(Lowered {
                scan,
                inputs,
                filter: None,
                join: None,
                plan: plan.clone(),
                projected: Vec::new(),
            });
        }
    }
    Err(Decline::Plan(format!("operator {}", plan.name())))
}

/// A filter (the node `plan`): below a join it joins the scan's filter, above one the
/// join's.
fn lower_filter(plan: &Arc<dyn ExecutionPlan>, f: &FilterExec) -> Result<Lowered, Decline> {
    if f.fetch().is_some() {
        return Err(Decline::Plan("a filter with a limit".into()));
    }
    let mut below = lower_input(f.input())?;
    let pred = lower(f.predicate(), &f.input().schema(), &below.inputs)?;
    match &mut below.join {
        Some((join, _)) => join.filter = and(join.filter.take(), pred),
        None => below.filter = and(below.filter.take(), pred),
    }
    let inputs = match f.projection() {
        None => below.inputs,
        Some(p) => p
            .iter()
            .map(|&i| {
                below
                    .inputs
                    .get(i)
                    .cloned()
                    .ok_or_else(|| Decline::Plan(format!("filter projection {i}")))
            })
            .collect::<Result<_, _>>()?,
    };
    let plan = with_child(plan, &below.plan)?;
    Ok(Lowered {
        inputs,
        plan,
        ..below
    })
}

fn scan(m: &MemorySourceConfig) -> Result<(Scan, Vec<Input>), Decline> {
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
        let ty = readable(schema.field(c).data_type());
        exprs.push(ty.map(|ty| {
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
    Ok((scan, exprs))
}

/// The type of a column pipelines read, `None` for those they do not.
fn readable(ty: &DataType) -> Option<ColType> {
    ColType::of(ty).filter(|t| !matches!(t, ColType::UInt64 | ColType::Boolean))
}

/// `plan` without the repartitioning and coalescing DataFusion puts above a join's inputs:
/// a join whose build side is collected reads its probe side's partitions.
fn unpartitioned(plan: &Arc<dyn ExecutionPlan>) -> &Arc<dyn ExecutionPlan> {
    match plan.name() {
        "RepartitionExec" | "CoalesceBatchesExec" | "CoalescePartitionsExec"
            if plan.children().len() == 1 =>
        {
            unpartitioned(plan.children()[0])
        }
        _ => plan,
    }
}

/// The rows of a scan.
fn scan_rows(scan: &Scan) -> usize {
    scan.partitions
        .iter()
        .flatten()
        .map(RecordBatch::num_rows)
        .sum()
}

/// An inner equi-join on one integer key (and a filter over both sides' columns): the side
/// with more scanned rows is the probe side, lowered into the pipeline; the other is the
/// build side, run by DataFusion.
fn lower_join(j: &HashJoinExec) -> Result<Lowered, Decline> {
    let simple = *j.join_type() == JoinType::Inner
        && j.fetch().is_none()
        && j.null_equality() == NullEquality::NullEqualsNothing
        && j.on().len() == 1;
    if !simple {
        return Err(Decline::Plan(format!(
            "a join other than an inner equi-join on one key ({:?})",
            j.join_type()
        )));
    }
    let (left, right) = (unpartitioned(j.left()), unpartitioned(j.right()));
    // A join collected on its left side without coalescing it (the fallback of a compiled
    // join, `collected_join`, or DataFusion's own over one partition) keeps its orientation:
    // lowered again elsewhere (a distributed task's share of the probe side) it must choose
    // the same sides. Otherwise the side with more rows probes.
    let collected = *j.partition_mode() == PartitionMode::CollectLeft
        && j.left().name() != "CoalescePartitionsExec";
    let sides = if collected {
        vec![(right, left, true)]
    } else {
        vec![(right, left, true), (left, right, false)]
    };
    let mut lowered: Vec<_> = sides
        .into_iter()
        .filter_map(|(probe, build, right)| Some((lower_input(probe).ok()?, build, right)))
        .collect();
    lowered.sort_by_key(|(l, ..)| std::cmp::Reverse(scan_rows(&l.scan)));
    let Some((probe, build, probe_right)) = lowered.into_iter().next() else {
        return Err(Decline::Plan(
            "a join neither of whose sides is a pipeline".into(),
        ));
    };
    if probe.join.is_some() {
        return Err(Decline::Plan("a join above a join".into()));
    }
    let (probe_on, build_on) = if probe_right {
        (&j.on()[0].1, &j.on()[0].0)
    } else {
        (&j.on()[0].0, &j.on()[0].1)
    };
    let probe_schema = if probe_right { j.right() } else { j.left() }.schema();
    let key = lower(probe_on, &probe_schema, &probe.inputs)?;
    let build_key = build_on
        .downcast_ref::<Column>()
        .filter(|c| readable(build.schema().field(c.index()).data_type()) == Some(key.ty()))
        .filter(|_| matches!(key.ty(), ColType::Int32 | ColType::Int64))
        .ok_or_else(|| {
            Decline::Plan(format!(
                "join key {build_on} (an integer column of one type on both sides)"
            ))
        })?;
    let first_build = probe.scan.columns.len();
    let mut columns = Vec::new();
    let build_inputs: Vec<Input> = build
        .schema()
        .fields()
        .iter()
        .enumerate()
        .map(|(c, f)| {
            readable(f.data_type()).map(|ty| {
                columns.push((c, ty));
                Arc::new(Expr::Column {
                    index: first_build + columns.len() - 1,
                    ty,
                })
            })
        })
        .collect();
    let (left_inputs, right_inputs) = if probe_right {
        (build_inputs, probe.inputs)
    } else {
        (probe.inputs, build_inputs)
    };
    let filter = j
        .filter()
        .map(|f| {
            let inputs: Vec<Input> = f
                .column_indices()
                .iter()
                .map(|c| match c.side {
                    JoinSide::Left => left_inputs.get(c.index).cloned().flatten(),
                    JoinSide::Right => right_inputs.get(c.index).cloned().flatten(),
                    JoinSide::None => None,
                })
                .collect();
            lower(f.expression(), f.schema(), &inputs)
        })
        .transpose()?;
    let all: Vec<Input> = left_inputs.into_iter().chain(right_inputs).collect();
    let inputs = match j.projection.as_deref() {
        None => all,
        Some(p) => p.iter().map(|&i| all.get(i).cloned().flatten()).collect(),
    };
    let join = Join {
        key,
        first_build,
        filter,
        lookup: Lookup::Hash,
    };
    let build = Build {
        plan: build.clone(),
        key: build_key.index(),
        columns,
    };
    let plan = collected_join(j, left, right, probe_right)?;
    Ok(Lowered {
        scan: probe.scan,
        inputs,
        filter: probe.filter,
        join: Some((join, build)),
        plan,
        projected: probe.projected,
    })
}

/// The join `j` with its build side collected (DataFusion's `CollectLeft`) and its inputs
/// not repartitioned (`left`, `right`), the build side on the left: its output partitions
/// are then those of the probe side's scan, as the compiled pipeline's. Swapped where the
/// probe side is on the left, under a projection that keeps the columns' order.
fn collected_join(
    j: &HashJoinExec,
    left: &Arc<dyn ExecutionPlan>,
    right: &Arc<dyn ExecutionPlan>,
    probe_right: bool,
) -> Result<Arc<dyn ExecutionPlan>, Decline> {
    let failed =
        |e: datafusion::error::DataFusionError| Decline::Plan(format!("rebuilding a join: {e}"));
    let collected = HashJoinExec::try_new(
        left.clone(),
        right.clone(),
        j.on().to_vec(),
        j.filter().cloned(),
        &JoinType::Inner,
        j.projection.as_deref().map(<[usize]>::to_vec),
        PartitionMode::CollectLeft,
        NullEquality::NullEqualsNothing,
        false,
    )
    .map_err(failed)?;
    if probe_right {
        Ok(Arc::new(collected))
    } else {
        collected
            .swap_inputs(PartitionMode::CollectLeft)
            .map_err(failed)
    }
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
