//! `nacre bench query`: TPC-H queries (Q1 and Q6 over `lineitem`, Q12 and Q14 joining it
//! with `orders` and `part`) over tables generated in the process
//! (`tpchgen-arrow`) and held in memory in `--partitions` partitions, run by DataFusion alone
//! (`query_datafusion_*`), by DataFusion with Nacre's compiled pipelines (`query_nacre_*`,
//! warm: compiled code cached; `query_nacre_cold_*`: the first run, with compiling), and by a
//! hand-fused single-pass Rust loop over the same Arrow arrays (`query_fused_rust_*`, one
//! thread per partition: what compiled code can reach; for a join, the other table indexed
//! by key first, in one thread), with the first tier's compile time
//! (`query_compile_*`), and the planning alone (`query_plan_datafusion_*`,
//! `query_plan_nacre_*`: SQL to an optimised physical plan). Every result is checked
//! against DataFusion's before timing.
//!
//! With `--device cuda` (or `cpu-kernels`), the same queries also run with
//! `SET nacre.device = '<device>'`: `query_nacre_cuda_*` warm (partitions already in device
//! memory, kernels compiled), `query_nacre_cuda_cold_*` the first run (loading and
//! compiling), and `query_load_cuda_*` the one-time load into device memory alone. Beside
//! them, `query_datafusion_exec_*` and `query_nacre_cuda_exec_*` time executing a physical
//! plan made once (DataFusion alone and with kernels): the query without SQL parsing and
//! planning, which take milliseconds and weigh on short GPU queries.

use super::measure::{measure, Config, Stats};
use super::report::{self, Results};
use anyhow::{bail, Context, Result};
use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::kernels::cast_utils::Parser;
use datafusion::arrow::datatypes::{Date32Type, Decimal128Type, Float64Type, Int64Type};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::{SessionConfig, SessionContext};
use nacre_datafusion::{compile, tpch};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// `nacre bench query`.
#[derive(clap::Args, Debug)]
pub struct QueryArgs {
    /// TPC-H scale factor.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Partitions of the table and DataFusion's `target_partitions` (the fused loop runs
    /// one thread per partition).
    #[arg(long, default_value_t = 2)]
    pub partitions: usize,
    /// Fewer samples.
    #[arg(long)]
    pub quick: bool,
    /// Only benchmarks whose names contain one of these (one ending in `$`: whose names end
    /// with it).
    #[arg(long, value_delimiter = ',')]
    pub filter: Vec<String>,
    /// Writes the results as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Also runs the queries with compiled pipelines on this device (`nacre.device`:
    /// `cuda`, `cpu-kernels`).
    #[arg(long)]
    pub device: Option<String>,
}

/// Runs the suite.
pub fn run(args: &QueryArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.partitions.max(1))
        .enable_all()
        .build()?;
    let cfg = Config {
        min_samples: if args.quick { 3 } else { 7 },
        max_samples: if args.quick { 5 } else { 21 },
        ..if args.quick {
            Config::QUICK
        } else {
            Config::FULL
        }
    };
    let start = Instant::now();
    let data = tpch::Tables::generate(args.scale, args.partitions)?;
    let rows = data.lineitem_rows();
    eprintln!(
        "TPC-H at SF {} (lineitem: {rows} rows) in {} partitions, generated in {:.1} s",
        args.scale,
        args.partitions,
        start.elapsed().as_secs_f64()
    );
    let config = SessionConfig::new().with_target_partitions(args.partitions);
    let plain = SessionContext::new_with_config(config.clone());
    let nacre = nacre_datafusion::session_context(config.clone());
    data.register(&plain)?;
    data.register(&nacre)?;
    let device = match &args.device {
        Some(d) => {
            let ctx = nacre_datafusion::session_context(config);
            data.register(&ctx)?;
            rt.block_on(ctx.sql(&format!("SET nacre.device = '{d}'")))?;
            Some((d.as_str(), ctx))
        }
        None => None,
    };
    let mut results = Results::new(args.filter.clone());
    for &(name, sql) in tpch::QUERIES.iter().chain(&tpch::JOIN_QUERIES) {
        let rows = [
            "compile",
            "nacre_cold",
            "datafusion",
            "nacre",
            "fused_rust",
            "plan_datafusion",
            "plan_nacre",
        ];
        let wanted = |k: &&str| {
            let row = format!("query_{k}_{name}");
            report::selects(&args.filter, &row)
        };
        if rows.iter().any(wanted) {
            rt.block_on(query(&mut results, &cfg, name, sql, &plain, &nacre, &data))?;
        }
        if let Some((d, ctx)) = &device {
            rt.block_on(on_device(&mut results, &cfg, (name, sql), &plain, (d, ctx)))?;
        }
    }
    results.done();
    report::ensure_matched(&args.filter, &results.rows)?;
    for r in &results.rows {
        println!(
            "{:<28} {:>11}  ±{:>5.1}%",
            r.name,
            report::format_ns(r.stats.median_ns),
            100.0 * r.stats.mad_ns / r.stats.median_ns.max(1.0)
        );
    }
    print_ratios(&results.rows);
    if let Some(path) = &args.json {
        let mut doc = report::to_json(&results.rows);
        doc["scale_factor"] = serde_json::json!(args.scale);
        doc["partitions"] = serde_json::json!(args.partitions);
        doc["rows"] = serde_json::json!(rows);
        report::write_document(path, &doc)?;
    }
    Ok(())
}

/// Fails unless `got` prints as DataFusion's `want`.
fn check_same(what: &str, got: &[RecordBatch], want: &[RecordBatch]) -> Result<()> {
    let (got, want) = (pretty_format_batches(got)?, pretty_format_batches(want)?);
    if got.to_string() != want.to_string() {
        bail!("{what}: results differ from DataFusion's:\n{got}\n{want}");
    }
    Ok(())
}

/// The statistics of one timed run.
fn single(d: Duration) -> Stats {
    let ns = d.as_nanos() as f64;
    Stats {
        median_ns: ns,
        mad_ns: 0.0,
        min_ns: ns,
        samples: 1,
        batch: 1,
    }
}

/// The physical plan of `sql` (parsed, planned and optimised, the rule included).
async fn plan(
    ctx: &SessionContext,
    sql: &str,
) -> Result<std::sync::Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
    Ok(ctx.sql(sql).await?.create_physical_plan().await?)
}

async fn collect(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>> {
    Ok(ctx.sql(sql).await?.collect().await?)
}

fn sample(cfg: &Config, rt: &tokio::runtime::Handle, ctx: &SessionContext, sql: &str) -> Stats {
    measure(cfg, || {
        tokio::task::block_in_place(|| rt.block_on(collect(ctx, sql)).map(|b| b.len()).unwrap_or(0))
    })
}

#[allow(clippy::too_many_arguments)]
async fn query(
    results: &mut Results,
    cfg: &Config,
    name: &str,
    sql: &str,
    plain: &SessionContext,
    nacre: &SessionContext,
    data: &tpch::Tables,
) -> Result<()> {
    let rt = tokio::runtime::Handle::current();
    let want = collect(plain, sql).await?;
    // The first run with nothing compiled: end to end with the compile.
    compile::clear_cache();
    let cold = Instant::now();
    let got = collect(nacre, sql).await?;
    let cold = cold.elapsed();
    let compiled = compile::cached();
    if compiled.is_empty() {
        bail!("{name}: no compiled pipeline ran (the rule declined the plan)");
    }
    check_same(name, &got, &want)?;
    check_fused(name, data, &want).with_context(|| format!("{name}: the fused loop"))?;
    let compile_time: Duration = compiled.iter().map(|c| c.compile_time).sum();
    if results.wants(&format!("query_compile_{name}")) {
        results.record(
            &format!("query_compile_{name}"),
            single(compile_time),
            ", first tier",
        );
    }
    if results.wants(&format!("query_nacre_cold_{name}")) {
        results.record(
            &format!("query_nacre_cold_{name}"),
            single(cold),
            ", with compile",
        );
    }
    for c in &compiled {
        c.function.wait_for_second_tier(Duration::from_secs(60));
    }
    let plain_name = format!("query_datafusion_{name}");
    if results.wants(&plain_name) {
        let s = sample(cfg, &rt, plain, sql);
        results.record(&plain_name, s, "");
    }
    let nacre_name = format!("query_nacre_{name}");
    if results.wants(&nacre_name) {
        let s = sample(cfg, &rt, nacre, sql);
        results.record(&nacre_name, s, "");
    }
    for (row, ctx) in [("datafusion", plain), ("nacre", nacre)] {
        let row = format!("query_plan_{row}_{name}");
        if results.wants(&row) {
            let s = measure(cfg, || {
                tokio::task::block_in_place(|| rt.block_on(plan(ctx, sql)).map_or(0, |_| 1))
            });
            results.record(&row, s, ", SQL to physical plan");
        }
    }
    let fused_name = format!("query_fused_rust_{name}");
    if results.wants(&fused_name) {
        let s = measure(cfg, || fused(name, data));
        results.record(&fused_name, s, "");
    }
    Ok(())
}

/// The rows of a query with pipelines on `device` (see the module docs), checked against
/// DataFusion's results and the plan's placement.
async fn on_device(
    results: &mut Results,
    cfg: &Config,
    (name, sql): (&str, &str),
    plain: &SessionContext,
    (device, ctx): (&str, &SessionContext),
) -> Result<()> {
    let rows = [
        format!("query_nacre_{device}_cold_{name}"),
        format!("query_load_{device}_{name}"),
        format!("query_nacre_{device}_{name}"),
    ];
    if !rows.iter().any(|r| results.wants(r)) {
        return Ok(());
    }
    let plan = ctx.sql(sql).await?.create_physical_plan().await?;
    let shown = datafusion::physical_plan::displayable(plan.as_ref())
        .indent(true)
        .to_string();
    if !shown.contains(&format!("device={device}")) {
        bail!("{name}: the pipeline is not placed on {device}:\n{shown}");
    }
    let want = collect(plain, sql).await?;
    nacre_datafusion::device::clear();
    let cold = Instant::now();
    let got = collect(ctx, sql).await?;
    let cold = cold.elapsed();
    let load = nacre_datafusion::device::load_stats();
    check_same(&format!("{name} on {device}"), &got, &want)?;
    results.record(&rows[0], single(cold), ", with loading and compile");
    let mb = load.bytes as f64 / 1e6;
    results.record(&rows[1], single(load.time), &format!(", {mb:.0} MB"));
    let rt = tokio::runtime::Handle::current();
    let before = nacre_datafusion::device::run_stats();
    let s = sample(cfg, &rt, ctx, sql);
    let after = nacre_datafusion::device::run_stats();
    let runs = (after.launches - before.launches).max(1) as u32;
    let us = |a: Duration, b: Duration| (a - b).as_secs_f64() * 1e6 / f64::from(runs);
    let detail = format!(
        ", per launch: setup {:.0} us, kernel call {:.0} us, output {:.0} us",
        us(after.setup, before.setup),
        us(after.kernel, before.kernel),
        us(after.output, before.output)
    );
    results.record(&rows[2], s, &detail);
    let planned = [
        (format!("query_datafusion_exec_{name}"), plain),
        (format!("query_nacre_{device}_exec_{name}"), ctx),
    ];
    for (row, ctx) in planned {
        if results.wants(&row) {
            let s = sample_planned(cfg, &rt, ctx, sql, &want).await?;
            results.record(&row, s, ", planned once");
        }
    }
    Ok(())
}

/// Times executing the physical plan of `sql` on `ctx`, made once and reset before each run
/// (checked against `want`).
async fn sample_planned(
    cfg: &Config,
    rt: &tokio::runtime::Handle,
    ctx: &SessionContext,
    sql: &str,
    want: &[RecordBatch],
) -> Result<Stats> {
    let plan = plan(ctx, sql).await?;
    // A plan's operators keep the state of their last run (repartitions): reset, as to run
    // a prepared plan again.
    let run = || async {
        let plan = datafusion::physical_plan::execution_plan::reset_plan_states(plan.clone())?;
        datafusion::physical_plan::collect(plan, ctx.task_ctx()).await
    };
    check_same(&format!("{sql} planned once"), &run().await?, want)?;
    Ok(measure(cfg, || {
        tokio::task::block_in_place(|| rt.block_on(run()).map(|b| b.len()).unwrap_or(0))
    }))
}

/// Ratios of each query's rows to the fused loop and to DataFusion, with the targets.
fn print_ratios(rows: &[report::Row]) {
    let m = report::medians(rows);
    for &(name, _) in tpch::QUERIES.iter().chain(&tpch::JOIN_QUERIES) {
        let get = |k: &str| m.get(&format!("query_{k}_{name}")).copied();
        let (Some(nacre), Some(fused), Some(df)) =
            (get("nacre"), get("fused_rust"), get("datafusion"))
        else {
            continue;
        };
        let r = nacre / fused;
        println!(
            "{name}: nacre {:.2}x the fused loop (target 1.3x: {}), {:.2}x faster than DataFusion alone",
            r,
            if r <= 1.3 { "PASS" } else { "MISS" },
            df / nacre
        );
        for (k, v) in &m {
            let Some(device) = k
                .strip_prefix("query_nacre_")
                .and_then(|r| r.strip_suffix(&format!("_{name}")))
                .filter(|d| !d.ends_with("cold") && !d.ends_with("exec"))
            else {
                continue;
            };
            let x = df / v;
            println!(
                "{name}: nacre on {device} {x:.1}x faster than DataFusion alone (target 10x: {})",
                if x >= 10.0 { "PASS" } else { "MISS" }
            );
            if let (Some(a), Some(b)) =
                (get("datafusion_exec"), get(&format!("nacre_{device}_exec")))
            {
                println!(
                    "{name}: executing a plan made once, nacre on {device} {:.1}x faster than DataFusion alone",
                    a / b
                );
            }
        }
        if let Some(c) = get("compile") {
            let ms = c / 1e6;
            println!(
                "{name}: compile {ms:.2} ms (target 10 ms: {})",
                if ms <= 10.0 { "PASS" } else { "MISS" }
            );
        }
    }
}

/// The hand-fused loop of a query: its checked figures (Q1: per group the four sums and the
/// count; Q6: the revenue; Q12: per ship mode the high and low counts; Q14: the promotion
/// revenue and the revenue), one thread per partition of `lineitem`.
fn fused(name: &str, data: &tpch::Tables) -> Vec<i128> {
    let index = match name {
        "q12" => high_priority_orders(&data.orders),
        "q14" => promo_parts(&data.part),
        _ => Vec::new(),
    };
    let index = &index;
    let per_partition: Vec<Vec<i128>> = std::thread::scope(|s| {
        let handles: Vec<_> = data
            .lineitem
            .iter()
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|b| match name {
                            "q1" => q1_batch(b),
                            "q6" => q6_batch(b),
                            "q12" => q12_batch(b, index),
                            _ => q14_batch(b, index),
                        })
                        .fold(Vec::new(), add)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    per_partition.into_iter().fold(Vec::new(), add)
}

/// A byte per key value of `key` (0: no row) from `value` of each row, indexed by key.
fn index_by_key(
    table: &[Vec<RecordBatch>],
    key: &str,
    value: impl Fn(&RecordBatch, usize) -> u8,
) -> Vec<u8> {
    let keys = |b: &RecordBatch| {
        b.column_by_name(key)
            .map_or(&[][..], |c| c.as_primitive::<Int64Type>().values())
            .to_vec()
    };
    let most = table.iter().flatten().flat_map(keys).max().unwrap_or(0);
    let mut index = vec![0u8; most.max(0) as usize + 1];
    for b in table.iter().flatten() {
        for (row, k) in keys(b).into_iter().enumerate() {
            index[k as usize] = value(b, row);
        }
    }
    index
}

/// Per order key: 2 for an order of high priority (`1-URGENT`, `2-HIGH`), 1 for another.
fn high_priority_orders(orders: &[Vec<RecordBatch>]) -> Vec<u8> {
    index_by_key(orders, "o_orderkey", |b, row| {
        let p = b
            .column_by_name("o_orderpriority")
            .map(|c| c.as_string_view().value(row));
        1 + u8::from(matches!(p, Some("1-URGENT" | "2-HIGH")))
    })
}

/// Per part key: 2 for a part whose type starts with `PROMO`, 1 for another.
fn promo_parts(part: &[Vec<RecordBatch>]) -> Vec<u8> {
    index_by_key(part, "p_partkey", |b, row| {
        let t = b
            .column_by_name("p_type")
            .map(|c| c.as_string_view().value(row));
        1 + u8::from(t.is_some_and(|t| t.starts_with("PROMO")))
    })
}

/// A string view's first word for a string of 4 bytes (its length and bytes).
fn view4(s: &[u8; 4]) -> u64 {
    4 | u64::from(u32::from_le_bytes(*s)) << 32
}

fn dates<'a>(b: &'a RecordBatch, col: &str) -> &'a [i32] {
    b.column_by_name(col)
        .map_or(&[], |c| c.as_primitive::<Date32Type>().values())
}

fn keys<'a>(b: &'a RecordBatch, col: &str) -> &'a [i64] {
    b.column_by_name(col)
        .map_or(&[], |c| c.as_primitive::<Int64Type>().values())
}

/// Q12 over one batch: high and low counts for MAIL, then for SHIP.
fn q12_batch(b: &RecordBatch, orders: &[u8]) -> Vec<i128> {
    let (lo, hi) = (days("1994-01-01"), days("1995-01-01"));
    let (ship, commit, receipt) = (
        dates(b, "l_shipdate"),
        dates(b, "l_commitdate"),
        dates(b, "l_receiptdate"),
    );
    let key = keys(b, "l_orderkey");
    let mode = b
        .column_by_name("l_shipmode")
        .map_or(&[][..], |c| c.as_string_view().views());
    let (mail, ship_mode) = (view4(b"MAIL"), view4(b"SHIP"));
    let mut acc = [0i128; 4];
    for i in 0..key.len() {
        let m = mode[i] as u64;
        let pass = (m == mail || m == ship_mode)
            & (commit[i] < receipt[i])
            & (ship[i] < commit[i])
            & (receipt[i] >= lo)
            & (receipt[i] < hi);
        if pass {
            let o = orders.get(key[i] as usize).copied().unwrap_or(0);
            let at = 2 * usize::from(m == ship_mode);
            acc[at] += i128::from(o == 2);
            acc[at + 1] += i128::from(o == 1);
        }
    }
    acc.to_vec()
}

/// Q14 over one batch: the revenue of promotion parts, and all revenue (scale 4).
fn q14_batch(b: &RecordBatch, parts: &[u8]) -> Vec<i128> {
    let (lo, hi) = (days("1995-09-01"), days("1995-10-01"));
    let (price, disc) = (decimals(b, "l_extendedprice"), decimals(b, "l_discount"));
    let ship = dates(b, "l_shipdate");
    let key = keys(b, "l_partkey");
    let (mut promo, mut all) = (0i128, 0i128);
    for i in 0..key.len() {
        if (ship[i] >= lo) & (ship[i] < hi) {
            let p = parts.get(key[i] as usize).copied().unwrap_or(0);
            let revenue = i128::from(p != 0) * price[i] * (100 - disc[i]);
            all += revenue;
            promo += i128::from(p == 2) * revenue;
        }
    }
    vec![promo, all]
}

fn add(a: Vec<i128>, b: Vec<i128>) -> Vec<i128> {
    if a.is_empty() {
        return b;
    }
    a.iter().zip(&b).map(|(x, y)| x + y).collect()
}

fn days(date: &str) -> i32 {
    Date32Type::parse(date).unwrap_or_default()
}

fn decimals<'a>(b: &'a RecordBatch, col: &str) -> &'a [i128] {
    b.column_by_name(col)
        .map_or(&[], |c| c.as_primitive::<Decimal128Type>().values())
}

/// Q1 over one batch: for the 6 groups (flag A/N/R × status F/O), sum_qty, sum_base_price,
/// sum_disc_price, sum_charge and the count, 30 values.
fn q1_batch(b: &RecordBatch) -> Vec<i128> {
    let cutoff = days("1998-09-02");
    let (qty, price, disc, tax) = (
        decimals(b, "l_quantity"),
        decimals(b, "l_extendedprice"),
        decimals(b, "l_discount"),
        decimals(b, "l_tax"),
    );
    let ship = b
        .column_by_name("l_shipdate")
        .map_or(&[][..], |c| c.as_primitive::<Date32Type>().values());
    let view = |c: &str| {
        b.column_by_name(c)
            .map_or(&[][..], |c| c.as_string_view().views())
    };
    let (flag, status) = (view("l_returnflag"), view("l_linestatus"));
    let mut acc = [[0i128; 5]; 6];
    for i in 0..qty.len() {
        let pass = i128::from(ship[i] <= cutoff);
        let f = match (flag[i] >> 32) as u8 {
            b'A' => 0,
            b'N' => 1,
            _ => 2,
        };
        let g = f * 2 + usize::from((status[i] >> 32) as u8 == b'O');
        let disc_price = price[i] * (100 - disc[i]);
        let a = &mut acc[g];
        a[0] += pass * qty[i];
        a[1] += pass * price[i];
        a[2] += pass * disc_price;
        a[3] += pass * disc_price * (100 + tax[i]);
        a[4] += pass;
    }
    acc.concat()
}

/// Q6 over one batch: the revenue.
fn q6_batch(b: &RecordBatch) -> Vec<i128> {
    let (lo, hi) = (days("1994-01-01"), days("1995-01-01"));
    let (qty, price, disc) = (
        decimals(b, "l_quantity"),
        decimals(b, "l_extendedprice"),
        decimals(b, "l_discount"),
    );
    let ship = b
        .column_by_name("l_shipdate")
        .map_or(&[][..], |c| c.as_primitive::<Date32Type>().values());
    let mut revenue = 0i128;
    for i in 0..qty.len() {
        let pass =
            (ship[i] >= lo) & (ship[i] < hi) & (disc[i] >= 5) & (disc[i] <= 7) & (qty[i] < 2400);
        revenue += i128::from(pass) * price[i] * disc[i];
    }
    vec![revenue]
}

/// Checks the fused loop's figures against DataFusion's result.
fn check_fused(name: &str, data: &tpch::Tables, want: &[RecordBatch]) -> Result<()> {
    let got = fused(name, data);
    if name == "q14" {
        let got = 100.0 * got[0] as f64 / got[1] as f64;
        let want = want
            .first()
            .map(|b| b.column(0).as_primitive::<Float64Type>().value(0));
        if want.is_none_or(|w| (got - w).abs() > 1e-9 * w.abs()) {
            bail!("fused {got} != DataFusion {want:?}");
        }
        return Ok(());
    }
    let mut expect = Vec::new();
    for b in want {
        let dec = |c: usize| {
            b.column(c)
                .as_primitive::<Decimal128Type>()
                .values()
                .to_vec()
        };
        if name == "q6" {
            expect.extend(dec(0));
            continue;
        }
        if name == "q12" {
            let count = |c: usize| b.column(c).as_primitive::<Int64Type>().values().to_vec();
            let (high, low) = (count(1), count(2));
            expect.extend(
                high.iter()
                    .zip(&low)
                    .flat_map(|(h, l)| [i128::from(*h), i128::from(*l)]),
            );
            continue;
        }
        let count = b.column(9).as_primitive::<Int64Type>().values();
        for r in 0..b.num_rows() {
            expect.extend((2..6).map(|c| dec(c)[r]).chain([i128::from(count[r])]));
        }
    }
    let got: Vec<i128> = if name == "q1" {
        got.chunks(5)
            .filter(|g| g[4] > 0)
            .flatten()
            .copied()
            .collect()
    } else {
        got
    };
    if got != expect {
        bail!("fused {got:?} != DataFusion {expect:?}");
    }
    Ok(())
}
