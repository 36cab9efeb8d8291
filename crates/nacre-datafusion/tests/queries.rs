//! Queries run by DataFusion alone and with compiled pipelines give the same results, and
//! the pipelines really run (the plan holds `NacreAggregateExec`), on TPC-H data at a small
//! scale factor and on random tables.

use datafusion::arrow::array::{
    Array, Date32Array, Decimal128Array, DictionaryArray, Float64Array, Int32Array, Int64Array,
    RecordBatch, StringArray, StringViewArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Int32Type, Schema};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::datasource::MemTable;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::physical_plan::displayable;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use nacre_datafusion::{tpch, NacreAggregateExec, NacreConfig, NacreRule};
use std::sync::Arc;

const PARTITIONS: usize = 2;

fn config() -> SessionConfig {
    SessionConfig::new().with_target_partitions(PARTITIONS)
}

fn nacre_config() -> SessionConfig {
    config().with_option_extension(NacreConfig::default())
}

/// The results of `sql` on `ctx` as text, and whether its plan ran a compiled pipeline.
async fn run(ctx: &SessionContext, sql: &str) -> (String, bool) {
    let df = ctx.sql(sql).await.expect("planned");
    let plan = df
        .clone()
        .create_physical_plan()
        .await
        .expect("physical plan");
    let compiled = displayable(plan.as_ref())
        .indent(true)
        .to_string()
        .contains("NacreAggregateExec");
    let batches = df.collect().await.expect("ran");
    (
        pretty_format_batches(&batches)
            .expect("printed")
            .to_string(),
        compiled,
    )
}

/// DataFusion alone, and with the rule (kept to ask why it declined a plan).
struct Contexts {
    plain: SessionContext,
    nacre: SessionContext,
    rule: Arc<NacreRule>,
}

async fn contexts(register: impl Fn(&SessionContext)) -> Contexts {
    let plain = SessionContext::new_with_config(config());
    let rule = Arc::new(NacreRule::new(nacre_datafusion::default_options()));
    let state = SessionStateBuilder::new()
        .with_config(nacre_config())
        .with_default_features()
        .with_physical_optimizer_rule(rule.clone())
        .build();
    let nacre = SessionContext::new_with_state(state);
    register(&plain);
    register(&nacre);
    Contexts { plain, nacre, rule }
}

async fn same(c: &Contexts, sql: &str, expect_compiled: bool) {
    let (want, _) = run(&c.plain, sql).await;
    let (got, compiled) = run(&c.nacre, sql).await;
    assert_eq!(got, want, "{sql}");
    assert_eq!(
        compiled,
        expect_compiled,
        "compiled pipeline for {sql}; declined: {:?}",
        c.rule.declined().last()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_queries_match_datafusion() {
    let data = tpch::Tables::generate(0.01, PARTITIONS).expect("generated");
    let c = contexts(|ctx| data.register(ctx).expect("registered")).await;
    for (name, sql) in tpch::QUERIES {
        same(&c, sql, true).await;
        // Twice: the second run reuses the cached code.
        same(&c, sql, true).await;
        eprintln!("{name} ok");
    }
}

/// With one partition DataFusion plans one single-stage aggregation; the rule splits it into
/// a compiled partial aggregation under a final one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_stage_aggregations_are_split_and_compiled() {
    let data = tpch::Tables::generate(0.01, 1).expect("generated");
    let c = contexts(|ctx| data.register(ctx).expect("registered")).await;
    for ctx in [&c.plain, &c.nacre] {
        ctx.sql("SET datafusion.execution.target_partitions = 1")
            .await
            .expect("set");
    }
    let grouped_with_limit = "select l_returnflag, l_linestatus, count(*), sum(l_quantity) \
        from lineitem group by l_returnflag, l_linestatus order by 3 desc limit 2";
    let plain_plan = physical_plan(&c.plain, grouped_with_limit).await;
    let text = displayable(plain_plan.as_ref()).indent(true).to_string();
    assert!(text.contains("mode=Single"), "{text}");
    for sql in [tpch::QUERIES[0].1, tpch::QUERIES[1].1, grouped_with_limit] {
        same(&c, sql, true).await;
        let plan = physical_plan(&c.nacre, sql).await;
        let text = displayable(plan.as_ref()).indent(true).to_string();
        assert!(
            text.contains("mode=Final") && text.contains("NacreAggregateExec"),
            "{text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_variants_match_datafusion() {
    let data = tpch::Tables::generate(0.01, PARTITIONS).expect("generated");
    let c = contexts(|ctx| data.register(ctx).expect("registered")).await;
    let compiled = [
        // Many groups: the group table grows several times.
        "select l_orderkey, sum(l_quantity), count(*), min(l_shipdate), max(l_discount) \
         from lineitem group by l_orderkey order by l_orderkey limit 20",
        "select l_suppkey, l_linenumber, avg(l_tax) from lineitem where l_returnflag = 'R' \
         group by l_suppkey, l_linenumber order by 1, 2 limit 30",
        // No row passes: NULL sums and minimums, a zero count.
        "select sum(l_quantity), min(l_extendedprice), count(*) from lineitem where l_quantity < 0",
        "select count(*), sum(l_linenumber), max(l_partkey) from lineitem \
         where l_shipmode in ('AIR', 'RAIL') or l_shipinstruct like 'NONE%'",
        "select l_shipmode, sum(l_extendedprice * l_discount - l_tax) from lineitem \
         where not (l_linestatus = 'F') and l_commitdate < l_receiptdate group by l_shipmode order by 1",
    ];
    for sql in compiled {
        same(&c, sql, true).await;
    }
    // Left to DataFusion: a LIKE that is not a prefix, a string comparison by order.
    let declined = [
        "select count(*) from lineitem where l_comment like '%special%'",
        "select sum(l_quantity) from lineitem where l_shipmode < 'MAIL'",
    ];
    for sql in declined {
        same(&c, sql, false).await;
    }
}

/// A small random generator of our own (an LCG's high bits), from `seed`.
fn generator(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    }
}

/// A random table of every supported type (a fixed seed; a small generator of our own).
fn random_table(rows: usize, seed: u64, partitions: usize) -> (Arc<Schema>, Vec<Vec<RecordBatch>>) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int32, false),
        Field::new("j", DataType::Int64, false),
        Field::new("f", DataType::Float64, false),
        Field::new("d", DataType::Date32, false),
        Field::new("m", DataType::Decimal128(12, 3), false),
        Field::new("s", DataType::Utf8View, false),
        Field::new("u", DataType::Utf8, false),
        Field::new(
            "e",
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            false,
        ),
    ]));
    let mut next = generator(seed);
    let words = ["a", "bb", "ccc", "dddd", "eeeeeeeeeeee"];
    let per = rows / partitions;
    let parts = (0..partitions)
        .map(|_| {
            let mut v = (
                Vec::new(),
                Vec::new(),
                Vec::new(),
                Vec::new(),
                Vec::new(),
                Vec::new(),
            );
            for _ in 0..per {
                v.0.push((next() % 200) as i32 - 100);
                v.1.push((next() as i64) - (1 << 30));
                v.2.push((next() % 100_000) as f64 / 7.0 - 5000.0);
                v.3.push(9000 + (next() % 3000) as i32);
                v.4.push(next() as i128 % 10_000_000 - 5_000_000);
                v.5.push(words[(next() % 5) as usize]);
            }
            let cols: Vec<Arc<dyn Array>> = vec![
                Arc::new(Int32Array::from(v.0)),
                Arc::new(Int64Array::from(v.1)),
                Arc::new(Float64Array::from(v.2)),
                Arc::new(Date32Array::from(v.3)),
                Arc::new(
                    Decimal128Array::from(v.4)
                        .with_precision_and_scale(12, 3)
                        .expect("decimal"),
                ),
                Arc::new(StringViewArray::from_iter_values(v.5.iter().copied())),
                Arc::new(StringArray::from_iter_values(v.5.iter().rev())),
                Arc::new(v.5.iter().copied().collect::<DictionaryArray<Int32Type>>()),
            ];
            vec![RecordBatch::try_new(schema.clone(), cols).expect("batch")]
        })
        .collect();
    (schema, parts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_tables_match_datafusion() {
    random_tables("cpu").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_tables_on_gpu_kernels_match_datafusion() {
    random_tables("cpu-kernels").await;
}

/// Random tables of every type, queried with pipelines placed by `nacre.device = device`.
async fn random_tables(device: &str) {
    for seed in 1..4 {
        let (schema, parts) = random_table(5000, seed, PARTITIONS);
        let register = |ctx: &SessionContext| {
            let t = MemTable::try_new(schema.clone(), parts.clone()).expect("table");
            ctx.register_table("t", Arc::new(t)).expect("registered");
        };
        let c = contexts_on(device, register).await;
        let exact = [
            "select s, i, count(*), sum(j), min(d), max(m), sum(m * m), avg(m) from t \
             where i > -50 and m < 4000 group by s, i order by s, i",
            "select d, sum(i + 1), sum(j - i), max(j) from t where s <> 'ccc' group by d order by d limit 40",
            "select sum(m * 2 - i), min(i * 3), count(*) from t where (d between 9500 and 10000) or s = 'eeeeeeeeeeee'",
            "select m, count(*) from t group by m order by m limit 10",
            "select cast(m as decimal(10, 1)) as r, count(*) from t group by r order by r limit 10",
            // Strings as Utf8 and dictionaries: read as views.
            "select u, count(*), sum(i) from t where e <> 'bb' group by u order by u",
            "select e, sum(j), min(d) from t where u like 'cc%' or u = 'a' group by e order by e",
            "select u, e, count(*) from t where e in ('a', 'dddd') group by u, e order by u, e",
        ];
        for sql in exact {
            same(&c, sql, true).await;
        }
        // Floats: sums in another order, compared to 1e-9 relative.
        let sql = "select s, sum(f), avg(f * 2.5), sum(f - i) from t where f > -1000 group by s order by s";
        let floats = |ctx: &SessionContext| {
            let ctx = ctx.clone();
            async move {
                let batches = ctx
                    .sql(sql)
                    .await
                    .expect("planned")
                    .collect()
                    .await
                    .expect("ran");
                batches
                    .iter()
                    .flat_map(|b| {
                        (1..b.num_columns()).flat_map(move |c| {
                            let a = b
                                .column(c)
                                .as_any()
                                .downcast_ref::<Float64Array>()
                                .expect("floats");
                            a.values().to_vec()
                        })
                    })
                    .collect::<Vec<f64>>()
            }
        };
        let (want, got) = (floats(&c.plain).await, floats(&c.nacre).await);
        assert_eq!(want.len(), got.len());
        for (w, g) in want.iter().zip(&got) {
            assert!((w - g).abs() <= 1e-9 * w.abs().max(1.0), "{w} vs {g}");
        }
        assert!(run(&c.nacre, sql).await.1, "floats compiled");
    }
}

/// A random table whose columns hold about one null in five (`k`, a small key, none).
fn nullable_table(
    rows: usize,
    seed: u64,
    partitions: usize,
) -> (Arc<Schema>, Vec<Vec<RecordBatch>>) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int32, false),
        Field::new("i", DataType::Int32, true),
        Field::new("j", DataType::Int64, true),
        Field::new("f", DataType::Float64, true),
        Field::new("m", DataType::Decimal128(12, 3), true),
        Field::new("s", DataType::Utf8View, true),
    ]));
    let mut next = generator(seed);
    let words = ["a", "bb", "ccc"];
    let parts = (0..partitions)
        .map(|_| {
            let (mut k, mut i, mut j, mut f, mut m, mut s) =
                (vec![], vec![], vec![], vec![], vec![], vec![]);
            for _ in 0..rows / partitions {
                let mut null = || next().is_multiple_of(5);
                let (ni, nj, nf, nm, ns) = (null(), null(), null(), null(), null());
                k.push((next() % 4) as i32);
                i.push((!ni).then(|| (next() % 200) as i32 - 100));
                j.push((!nj).then(|| (next() % 1000) as i64 - 500));
                f.push((!nf).then(|| (next() % 10_000) as f64 / 8.0));
                m.push((!nm).then(|| next() as i128 % 1_000_000 - 500_000));
                s.push((!ns).then(|| words[(next() % 3) as usize]));
            }
            let cols: Vec<Arc<dyn Array>> = vec![
                Arc::new(Int32Array::from(k)),
                Arc::new(Int32Array::from(i)),
                Arc::new(Int64Array::from(j)),
                Arc::new(Float64Array::from(f)),
                Arc::new(
                    Decimal128Array::from(m)
                        .with_precision_and_scale(12, 3)
                        .expect("decimal"),
                ),
                Arc::new(StringViewArray::from(s)),
            ];
            vec![RecordBatch::try_new(schema.clone(), cols).expect("batch")]
        })
        .collect();
    (schema, parts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nulls_follow_three_valued_logic_in_compiled_code() {
    for seed in 1..4 {
        let (schema, parts) = nullable_table(4000, seed, PARTITIONS);
        let register = |ctx: &SessionContext| {
            let t = MemTable::try_new(schema.clone(), parts.clone()).expect("table");
            ctx.register_table("t", Arc::new(t)).expect("registered");
        };
        let c = contexts(register).await;
        let compiled = [
            // Null arguments skipped; count(x) counts the non-null ones.
            "select k, count(*), count(i), sum(i), min(j), max(m), avg(m), avg(i), count(s) \
             from t group by k order by k",
            // A comparison with NULL is NULL: the row does not pass; OR and AND by Kleene.
            "select k, count(*), sum(j) from t where i > 0 or j < 100 group by k order by k",
            "select count(*), sum(i), max(j) from t where not (i > 10) and m > 0",
            "select k, count(*), sum(m) from t where s = 'bb' or s is null group by k order by k",
            "select count(*), sum(j * 2 + i), min(m - 1) from t where i is not null and not (s in ('a', 'ccc'))",
            "select k, sum(f), count(f) from t where f is null or f > 100 group by k order by k",
            // Every argument NULL: NULL sums, minimums and averages, zero counts.
            "select k, sum(i), min(i), max(m), avg(i), count(i), count(*) from t \
             where i is null group by k order by k",
            "select sum(i), min(m), avg(j), count(i), count(*) from t where i is null",
            "select sum(i), count(*) from t where i < -1000",
        ];
        for sql in compiled {
            assert_eq!(fallbacks(&c, sql).await, 0, "compiled: {sql}");
        }
        // Null group keys: the rows whose key is NULL form one group.
        let grouped = [
            "select i, count(*), sum(j) from t group by i order by i",
            "select s, k, count(*), count(s), min(m) from t group by s, k order by s, k",
            "select m, count(*) from t where i > 50 group by m order by m",
        ];
        for sql in grouped {
            assert_eq!(fallbacks(&c, sql).await, 0, "compiled: {sql}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overflow_is_an_error_as_in_datafusion() {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "m",
        DataType::Decimal128(38, 0),
        false,
    )]));
    let big = Decimal128Array::from(vec![i128::MAX / 2, 3])
        .with_precision_and_scale(38, 0)
        .expect("decimal");
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(big)]).expect("batch");
    let register = |ctx: &SessionContext| {
        let t = MemTable::try_new(schema.clone(), vec![vec![batch.clone()]]).expect("table");
        ctx.register_table("t", Arc::new(t)).expect("registered");
    };
    let c = contexts(register).await;
    let sql = "select sum(m * m) from t";
    let plain_err = c
        .plain
        .sql(sql)
        .await
        .expect("planned")
        .collect()
        .await
        .is_err();
    let nacre_result = c.nacre.sql(sql).await.expect("planned").collect().await;
    assert!(plain_err, "DataFusion reports the overflow");
    let err = nacre_result.expect_err("the compiled pipeline reports it too");
    assert!(err.to_string().contains("overflow"), "{err}");
    // In a `CASE`, only the rows that take a branch compute it (DataFusion's `CASE`); a
    // projection's value counts for every row, even where only a branch not taken uses it.
    for (sql, fails) in [
        ("select sum(case when m < 10 then m * m else 0 end) from t", false),
        ("select sum(case when m > 10 then m * m else 0 end) from t", true),
        (
            "select sum(case when m < 10 then p else 0 end), sum(case when m < 5 then p else 1 end) \
             from (select m, m * m as p from t)",
            true,
        ),
    ] {
        let plan = physical_plan(&c.nacre, sql).await;
        let text = displayable(plan.as_ref()).indent(true).to_string();
        assert!(text.contains("NacreAggregateExec"), "{sql}:\n{text}");
        let plain = c.plain.sql(sql).await.expect("planned").collect().await;
        let nacre = c.nacre.sql(sql).await.expect("planned").collect().await;
        assert_eq!(plain.is_err(), fails, "{sql}: DataFusion");
        assert_eq!(nacre.is_err(), fails, "{sql}: Nacre");
        if !fails {
            same(&c, sql, true).await;
        }
    }
}

/// The compiled operators of a plan.
fn compiled_nodes(plan: &Arc<dyn ExecutionPlan>, out: &mut Vec<Arc<dyn ExecutionPlan>>) {
    if plan.downcast_ref::<NacreAggregateExec>().is_some() {
        out.push(plan.clone());
    }
    for c in plan.children() {
        compiled_nodes(c, out);
    }
}

/// Runs `sql` with the rule, checks it against DataFusion, and gives how many partitions the
/// compiled operator left to DataFusion.
async fn fallbacks(c: &Contexts, sql: &str) -> usize {
    compiled_node(c, sql)
        .await
        .downcast_ref::<NacreAggregateExec>()
        .map_or(0, |n| n.fallbacks())
}

/// Runs `sql` with the rule, checks it against DataFusion, and gives its compiled operator.
async fn compiled_node(c: &Contexts, sql: &str) -> Arc<dyn ExecutionPlan> {
    let (want, _) = run(&c.plain, sql).await;
    let plan = physical_plan(&c.nacre, sql).await;
    let batches = datafusion::physical_plan::collect(plan.clone(), c.nacre.task_ctx())
        .await
        .expect("ran");
    assert_eq!(
        pretty_format_batches(&batches)
            .expect("printed")
            .to_string(),
        want,
        "{sql}"
    );
    let mut nodes = Vec::new();
    compiled_nodes(&plan, &mut nodes);
    assert_eq!(
        nodes.len(),
        1,
        "one compiled operator in {sql}; declined: {:?}",
        c.rule.declined().last()
    );
    nodes.swap_remove(0)
}

/// Group keys with few values are indexed directly once a partition's first batch has shown
/// them, and a later batch with another value goes back to the hash table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn few_key_values_are_indexed_directly() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("s", DataType::Utf8View, false),
        Field::new("k", DataType::Int32, true),
        Field::new("v", DataType::Int64, false),
    ]));
    let batch = |s: &[&str], k: &[Option<i32>], v: &[i64]| {
        let cols: Vec<Arc<dyn Array>> = vec![
            Arc::new(StringViewArray::from_iter_values(s.iter().copied())),
            Arc::new(Int32Array::from(k.to_vec())),
            Arc::new(Int64Array::from(v.to_vec())),
        ];
        RecordBatch::try_new(schema.clone(), cols).expect("batch")
    };
    let parts = vec![
        // The domain {x, y} x {1, NULL}; then rows within it; then a value outside it.
        vec![
            batch(&["x", "y", "x"], &[Some(1), None, Some(1)], &[1, 2, 3]),
            batch(
                &["y", "y", "x", "x"],
                &[Some(1), None, None, Some(1)],
                &[4, 5, 6, 7],
            ),
            batch(&["x", "zz", "y"], &[Some(1), Some(2), None], &[8, 9, 10]),
            batch(&["x", "y"], &[Some(3), Some(1)], &[11, 12]),
        ],
        // Within the domain throughout (a combination, (x, NULL), never seen).
        vec![
            batch(&["y"], &[Some(1)], &[13]),
            batch(&["y", "y"], &[Some(1), None], &[14, 15]),
        ],
    ];
    let register = |ctx: &SessionContext| {
        let t = MemTable::try_new(schema.clone(), parts.clone()).expect("table");
        ctx.register_table("t", Arc::new(t)).expect("registered");
    };
    let c = contexts(register).await;
    let before = nacre_datafusion::run::direct_rows();
    for sql in [
        "select s, k, count(*), sum(v), min(v) from t group by s, k order by s, k",
        "select s, sum(v) from t where v <> 4 and v <> 9 group by s order by s",
        "select k, max(v) from t where v > 3 group by k order by k",
    ] {
        assert_eq!(fallbacks(&c, sql).await, 0, "{sql}");
    }
    assert!(
        nacre_datafusion::run::direct_rows() > before,
        "rows indexed directly"
    );
}

/// Decimals are computed in 64 bits; a partition with a value or a result outside them runs
/// again in 128 bits, with DataFusion's results either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decimals_outside_64_bits_run_again_in_128() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("m", DataType::Decimal128(30, 2), false),
        Field::new("k", DataType::Int32, false),
    ]));
    let batch = |m: Vec<i128>, k: Vec<i32>| {
        let m = Decimal128Array::from(m)
            .with_precision_and_scale(30, 2)
            .expect("m");
        let cols: Vec<Arc<dyn Array>> = vec![Arc::new(m), Arc::new(Int32Array::from(k))];
        RecordBatch::try_new(schema.clone(), cols).expect("batch")
    };
    let parts = vec![
        // Values within 64 bits whose squares are not.
        vec![batch(
            vec![4_000_000_000, -3_000_000_000, 7, 250],
            vec![1, 2, 1, 2],
        )],
        // Values outside 64 bits.
        vec![batch(vec![10i128.pow(19), 5, -3, 349], vec![2, 1, 2, 1])],
    ];
    let register = |ctx: &SessionContext| {
        let t = MemTable::try_new(schema.clone(), parts.clone()).expect("table");
        ctx.register_table("t", Arc::new(t)).expect("registered");
    };
    let c = contexts(register).await;
    // (query, partitions run again in 128 bits)
    let cases = [
        ("select sum(m * m), min(m), max(m), count(*) from t", 2),
        (
            "select k, sum(m + 1.5), min(m) from t group by k order by k",
            1,
        ),
        ("select m, count(*) from t group by m order by m", 1),
        ("select count(*) from t where m > 2.5", 1),
        (
            "select k, sum(cast(m as decimal(38, 0))) from t group by k order by k",
            1,
        ),
        ("select sum(m - 0.01) from t where k = 3", 1),
    ];
    for (sql, wide) in cases {
        let node = compiled_node(&c, sql).await;
        let node = node.downcast_ref::<NacreAggregateExec>().expect("compiled");
        assert!(node.pipeline().program.narrow, "{sql} computed in 64 bits");
        assert_eq!(node.wide_runs(), wide, "{sql}");
        assert_eq!(node.fallbacks(), 0, "{sql}");
    }
    // A constant outside 64 bits: the program is wide from the start.
    let sql = "select sum(m) from t where m < 100000000000000000000.00";
    let node = compiled_node(&c, sql).await;
    let node = node.downcast_ref::<NacreAggregateExec>().expect("compiled");
    assert!(!node.pipeline().program.narrow, "{sql}");
    assert_eq!(node.wide_runs(), 0, "{sql}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_with_long_string_keys_run_in_datafusion() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Utf8View, true),
        Field::new("v", DataType::Int64, true),
    ]));
    let batch = |keys: Vec<Option<&str>>, values: Vec<Option<i64>>| {
        let cols: Vec<Arc<dyn Array>> = vec![
            Arc::new(StringViewArray::from(keys)),
            Arc::new(Int64Array::from(values)),
        ];
        RecordBatch::try_new(schema.clone(), cols).expect("batch")
    };
    let clean = batch(
        vec![Some("a"), Some("b"), Some("a")],
        vec![Some(1), Some(2), Some(3)],
    );
    let cases = [
        (
            batch(vec![Some("a"), None], vec![Some(5), Some(6)]),
            "a null key (compiled: one group)",
            0,
        ),
        (
            batch(vec![Some("a"), Some("b")], vec![None, Some(6)]),
            "a null value (compiled with three-valued logic)",
            0,
        ),
        (
            batch(
                vec![Some("a string of more than twelve bytes"), Some("b")],
                vec![Some(5), Some(6)],
            ),
            "a long key",
            1,
        ),
    ];
    let sql = "select k, sum(v), count(v), count(*) from t group by k order by k";
    for (other, what, left) in cases {
        let parts = vec![vec![clean.clone()], vec![other]];
        let register = |ctx: &SessionContext| {
            let t = MemTable::try_new(schema.clone(), parts.clone()).expect("table");
            ctx.register_table("t", Arc::new(t)).expect("registered");
        };
        let c = contexts(register).await;
        assert_eq!(
            fallbacks(&c, sql).await,
            left,
            "{what}: partitions left to DataFusion"
        );
        // As kernels: the table runs in one launch unless it holds nulls (then each
        // partition on the CPU, as above) or a long key (the launch declines the table and
        // its first partition's stream runs every partition on the CPU).
        let c = contexts_on("cpu-kernels", register).await;
        let node = compiled_node(&c, sql).await;
        let node = node.downcast_ref::<NacreAggregateExec>().expect("compiled");
        assert_eq!(
            node.fallbacks(),
            left,
            "{what} as kernels: left to DataFusion"
        );
        assert_eq!(
            node.device_runs(),
            0,
            "{what} as kernels: computed on the device"
        );
    }
    // Clean partitions only: nothing falls back, and as kernels both partitions run in the
    // first one's launch.
    let parts = vec![vec![clean.clone()], vec![clean]];
    let register = |ctx: &SessionContext| {
        let t = MemTable::try_new(schema.clone(), parts.clone()).expect("table");
        ctx.register_table("t", Arc::new(t)).expect("registered");
    };
    let c = contexts(register).await;
    assert_eq!(fallbacks(&c, sql).await, 0);
    let c = contexts_on("cpu-kernels", register).await;
    assert_eq!(fallbacks(&c, sql).await, 0);
    assert_eq!(device_runs(&c.nacre, sql).await, 2);
}

/// Tables sharing Arrow arrays: the device's copies are keyed by the arrays they were made
/// from, so one column over two batches and two columns over one batch (the same array
/// twice) must not be taken for each other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_copies_of_shared_arrays_are_told_apart() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int32, false),
        Field::new("b", DataType::Int32, false),
        Field::new("v", DataType::Int64, false),
    ]));
    let keys: Arc<dyn Array> = Arc::new(Int32Array::from(
        (0..1000).map(|i| i % 7).collect::<Vec<_>>(),
    ));
    let values: Arc<dyn Array> = Arc::new(Int64Array::from((0..1000i64).collect::<Vec<_>>()));
    let batch =
        RecordBatch::try_new(schema.clone(), vec![keys.clone(), keys, values]).expect("batch");
    let one = vec![vec![batch.clone()]];
    let two = vec![vec![batch.clone()], vec![batch]];
    let register = |ctx: &SessionContext| {
        for (name, parts) in [("one", &one), ("two", &two)] {
            let t = MemTable::try_new(schema.clone(), parts.clone()).expect("table");
            ctx.register_table(name, Arc::new(t)).expect("registered");
        }
    };
    let c = contexts_on("cpu-kernels", register).await;
    for sql in [
        "select a, b, count(*), sum(v) from one group by a, b order by a, b",
        "select a, count(*), sum(v) from two group by a order by a",
        "select a, b, sum(v) from two group by a, b order by a, b",
    ] {
        same(&c, sql, true).await;
        assert!(device_runs(&c.nacre, sql).await > 0, "{sql}: on the device");
    }
}

/// Cases where the compiled code must not compute what DataFusion would compute differently.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edge_semantics_match_datafusion() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("v", DataType::Int64, true),
        Field::new("m", DataType::Decimal128(38, 0), false),
        Field::new("p", DataType::Decimal128(19, 0), false),
        Field::new("f", DataType::Float64, false),
        Field::new("u", DataType::UInt64, false),
    ]));
    let batch = |v: Vec<Option<i64>>, m: Vec<i128>, p: Vec<i128>, f: Vec<f64>| {
        let n = v.len();
        let cols: Vec<Arc<dyn Array>> = vec![
            Arc::new(Int64Array::from(v)),
            Arc::new(
                Decimal128Array::from(m)
                    .with_precision_and_scale(38, 0)
                    .expect("m"),
            ),
            // Values beyond the declared precision: Arrow does not forbid them.
            Arc::new(
                Decimal128Array::from(p)
                    .with_precision_and_scale(19, 0)
                    .expect("p"),
            ),
            Arc::new(Float64Array::from(f)),
            Arc::new(datafusion::arrow::array::UInt64Array::from(vec![
                u64::MAX;
                n
            ])),
        ];
        RecordBatch::try_new(schema.clone(), cols).expect("batch")
    };
    let parts = vec![
        vec![batch(
            vec![Some(1), None, Some(3)],
            vec![10i128.pow(20), 3, 4],
            vec![5, 6, 10i128.pow(30)],
            vec![1.0, -0.0, 2.0],
        )],
        vec![batch(
            vec![Some(4), Some(5), Some(6)],
            vec![7, 8, 9],
            vec![1, 2, 3],
            vec![0.5, 3.0, f64::NAN],
        )],
    ];
    let register = |ctx: &SessionContext| {
        let t = MemTable::try_new(schema.clone(), parts.clone()).expect("table");
        ctx.register_table("t", Arc::new(t)).expect("registered");
    };
    let c = contexts(register).await;
    for sql in [
        "select count(v), count(*) from t",
        "select count(*) from t where v is null",
        // m * m overflows only in a row the filter rejects.
        "select sum(m * m) from t where m < 100",
        "select count(*) from t where f = 0.0",
        "select count(*) from t where f > 1.5",
    ] {
        let (want, _) = run(&c.plain, sql).await;
        let (got, _) = run(&c.nacre, sql).await;
        assert_eq!(got, want, "{sql}");
    }
    // p * p fits its declared precision's 38 digits, but a value breaks the precision: the
    // overflow is reported with or without the rule (declared precisions are not trusted).
    let sql = "select sum(p * p) from t";
    for ctx in [&c.plain, &c.nacre] {
        let r = ctx.sql(sql).await.expect("planned").collect().await;
        let e = r.expect_err("overflow").to_string().to_lowercase();
        assert!(e.contains("overflow"), "{e}");
    }
    // Unsigned columns are not computed with.
    let (_, compiled) = run(&c.nacre, "select sum(u) from t").await;
    assert!(!compiled, "UInt64 declined");
}

/// DataFusion alone, and with the rule under `SET nacre.device = '<device>'`.
async fn contexts_on(device: &str, register: impl Fn(&SessionContext)) -> Contexts {
    let c = contexts(register).await;
    c.nacre
        .sql(&format!("SET nacre.device = '{device}'"))
        .await
        .expect("nacre.device set");
    c
}

/// The physical plan of `sql` on `ctx`.
async fn physical_plan(ctx: &SessionContext, sql: &str) -> Arc<dyn ExecutionPlan> {
    ctx.sql(sql)
        .await
        .expect("planned")
        .create_physical_plan()
        .await
        .expect("physical plan")
}

/// Where the plan of `sql` runs its compiled pipelines (the `device=` of each operator).
async fn placements(ctx: &SessionContext, sql: &str) -> Vec<String> {
    let plan = physical_plan(ctx, sql).await;
    let text = displayable(plan.as_ref()).indent(true).to_string();
    text.lines()
        .filter_map(|l| l.split("device=").nth(1))
        .map(str::to_string)
        .collect()
}

/// Runs `sql` with the rule and gives how many partitions ran as kernels on the device.
async fn device_runs(ctx: &SessionContext, sql: &str) -> usize {
    let plan = physical_plan(ctx, sql).await;
    datafusion::physical_plan::collect(plan.clone(), ctx.task_ctx())
        .await
        .expect("ran");
    let mut nodes = Vec::new();
    compiled_nodes(&plan, &mut nodes);
    nodes
        .iter()
        .filter_map(|n| n.downcast_ref::<NacreAggregateExec>())
        .map(NacreAggregateExec::device_runs)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gpu_kernels_match_datafusion_on_the_cpu_runtime() {
    let data = tpch::Tables::generate(0.01, PARTITIONS).expect("generated");
    let c = contexts_on("cpu-kernels", |ctx| data.register(ctx).expect("registered")).await;
    let on_device = [
        tpch::QUERIES[0].1,
        tpch::QUERIES[1].1,
        // 15,000 groups: per-row atomics instead of registers.
        "select l_orderkey, sum(l_quantity), count(*), min(l_shipdate), avg(l_tax) \
         from lineitem group by l_orderkey order by l_orderkey limit 20",
        "select l_suppkey, l_linenumber, avg(l_tax), sum(l_extendedprice * l_discount) \
         from lineitem where l_returnflag = 'R' group by l_suppkey, l_linenumber \
         order by 1, 2 limit 30",
        "select sum(l_quantity), min(l_shipdate), count(*) from lineitem where l_quantity < 0",
        "select l_shipmode, sum(l_extendedprice * l_discount - l_tax), max(l_partkey) \
         from lineitem where not (l_linestatus = 'F') and l_commitdate < l_receiptdate \
         group by l_shipmode order by 1",
    ];
    for sql in on_device {
        same(&c, sql, true).await;
        assert_eq!(placements(&c.nacre, sql).await, ["cpu-kernels"], "{sql}");
        assert_eq!(device_runs(&c.nacre, sql).await, PARTITIONS, "{sql}");
    }
    // The maximum of decimals has no atomic form: that pipeline stays on the CPU.
    let sql = "select l_returnflag, max(l_discount) from lineitem group by l_returnflag order by 1";
    same(&c, sql, true).await;
    let placed = placements(&c.nacre, sql).await;
    assert!(
        placed[0].starts_with("cpu (not on the device"),
        "{placed:?}"
    );
    assert_eq!(device_runs(&c.nacre, sql).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cuda_runs_where_usable_and_says_why_not() {
    let data = tpch::Tables::generate(0.01, PARTITIONS).expect("generated");
    let c = contexts_on("cuda", |ctx| data.register(ctx).expect("registered")).await;
    let sql = tpch::QUERIES[0].1;
    same(&c, sql, true).await;
    let placed = placements(&c.nacre, sql).await;
    match nacre::gpu::cuda::probe(0) {
        Ok(_) => {
            assert_eq!(placed, ["cuda"]);
            assert_eq!(device_runs(&c.nacre, sql).await, PARTITIONS);
        }
        Err(_) => assert!(
            placed[0].starts_with("cpu (CUDA is not usable"),
            "{placed:?}"
        ),
    }
    let err = c.nacre.sql("SET nacre.device = 'tpu'").await;
    let bad = match err {
        Ok(df) => df.create_physical_plan().await.err(),
        Err(e) => Some(e),
    };
    let planned = c
        .nacre
        .sql(sql)
        .await
        .expect("planned")
        .create_physical_plan()
        .await;
    let message = bad
        .or(planned.err())
        .expect("an unknown device is an error")
        .to_string();
    assert!(message.contains("unknown nacre.device 'tpu'"), "{message}");
}

/// The CUDA C of the TPC-H pipelines' kernels (each strategy) compiles with NVRTC for
/// `sm_90` (skipped, saying why, without NVRTC; CI requires it with NACRE_REQUIRE_CUDA_TOOLS=1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gpu_kernels_compile_with_nvrtc() {
    use nacre_cuda::nvrtc;
    use nacre_datafusion::codegen::kernel::Strategy;
    use nacre_datafusion::pipeline::Lookup;
    if let Err(e) = nvrtc::available() {
        let required = std::env::var("NACRE_REQUIRE_CUDA_TOOLS").is_ok_and(|v| v == "1");
        assert!(!required, "NVRTC required: {e}");
        eprintln!("gpu_kernels_compile_with_nvrtc skipped: {e}");
        return;
    }
    let data = tpch::Tables::generate(0.01, PARTITIONS).expect("generated");
    let c = contexts_on("cpu-kernels", |ctx| data.register(ctx).expect("registered")).await;
    for (name, sql) in tpch::QUERIES.iter().chain(&tpch::JOIN_QUERIES) {
        let plan = physical_plan(&c.nacre, sql).await;
        let mut nodes = Vec::new();
        compiled_nodes(&plan, &mut nodes);
        let exec = nodes[0]
            .downcast_ref::<NacreAggregateExec>()
            .expect("compiled");
        let program = exec.pipeline().program.clone();
        // A join's probe in both forms: a hash table and a direct one.
        let programs = match program.join {
            Some(_) => [Lookup::Hash, Lookup::Direct]
                .map(|l| Arc::new(program.with_lookup(l)))
                .to_vec(),
            None => vec![program],
        };
        for (program, strategy) in programs.iter().flat_map(|p| {
            [
                (p.clone(), Strategy::Registers(6)),
                (p.clone(), Strategy::Atomics),
            ]
        }) {
            let launcher = nacre_datafusion::device::launcher(program.clone(), strategy);
            let traced = nacre::trace_module(&launcher).expect("traced");
            let module = nacre::optimize(traced.module, &Default::default()).expect("optimised");
            let kernels = nacre_cuda::codegen::emit_kernels(&module).expect("CUDA C");
            assert_eq!(kernels.len(), 1, "{name}");
            for (_, k) in &kernels {
                if let Err(e) = nvrtc::compile_cubin(k, nvrtc::Arch::new(9, 0)) {
                    panic!("{name} {strategy:?}: {e}\n{}", k.source);
                }
            }
        }
    }
}

/// TPC-H Q12 and Q14: the joins' probes run in `lineitem`'s compiled pipeline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_joins_match_datafusion() {
    let data = tpch::Tables::generate(0.01, PARTITIONS).expect("generated");
    let c = contexts(|ctx| data.register(ctx).expect("registered")).await;
    for (name, sql) in tpch::JOIN_QUERIES {
        same(&c, sql, true).await;
        let plan = physical_plan(&c.nacre, sql).await;
        let text = displayable(plan.as_ref()).indent(true).to_string();
        assert!(text.contains("join=true"), "{name}:\n{text}");
        assert_eq!(fallbacks(&c, sql).await, 0, "{name}");
    }
}

/// A fact table (`k` with NULLs and keys the dimensions lack, `k32`, `x`, `m`) and
/// dimension tables keyed sparsely (`dim`, a hash table), densely (`dense`, direct
/// indexing) and with a duplicate key (`dup`: DataFusion runs that join).
fn join_tables(ctx: &SessionContext) {
    let mut next = generator(7);
    let dims = 300i64;
    let sparse = |r: i64| r * 1_000_003 - 500_000_000;
    let fact = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("k32", DataType::Int32, false),
        Field::new("x", DataType::Int64, false),
        Field::new("m", DataType::Decimal128(12, 3), false),
    ]));
    let parts: Vec<Vec<RecordBatch>> = (0..PARTITIONS)
        .map(|_| {
            let (mut k, mut k32, mut x, mut m) = (vec![], vec![], vec![], vec![]);
            for _ in 0..3000 {
                let r = (next() % (dims as u64 + 20)) as i64;
                k.push((!next().is_multiple_of(17)).then_some(sparse(r)));
                k32.push(r as i32);
                x.push((next() % 1000) as i64 - 300);
                m.push(next() as i128 % 1_000_000);
            }
            let cols: Vec<Arc<dyn Array>> = vec![
                Arc::new(Int64Array::from(k)),
                Arc::new(Int32Array::from(k32)),
                Arc::new(Int64Array::from(x)),
                Arc::new(
                    Decimal128Array::from(m)
                        .with_precision_and_scale(12, 3)
                        .expect("decimal"),
                ),
            ];
            vec![RecordBatch::try_new(fact.clone(), cols).expect("batch")]
        })
        .collect();
    let t = MemTable::try_new(fact, parts).expect("table");
    ctx.register_table("fact", Arc::new(t)).expect("registered");
    let names = ["a", "bb", "PROMO x", "a name longer than a view", "ccc"];
    let dim = |name: &str, key: &dyn Fn(i64) -> Option<i64>, rows: i64| {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("k32", DataType::Int32, false),
            Field::new("name", DataType::Utf8, false),
            Field::new("v", DataType::Int32, true),
        ]));
        let cols: Vec<Arc<dyn Array>> = vec![
            Arc::new((0..rows).map(key).collect::<Int64Array>()),
            Arc::new(Int32Array::from_iter_values((0..rows).map(|r| r as i32))),
            Arc::new(StringArray::from_iter_values(
                (0..rows).map(|r| names[r as usize % names.len()]),
            )),
            Arc::new(Int32Array::from_iter(
                (0..rows).map(|r| (r % 7 != 3).then_some((r % 11) as i32)),
            )),
        ];
        let batch = RecordBatch::try_new(schema.clone(), cols).expect("batch");
        let t = MemTable::try_new(schema, vec![vec![batch]]).expect("table");
        ctx.register_table(name, Arc::new(t)).expect("registered");
    };
    dim("dim", &|r| (r % 50 != 49).then_some(sparse(r)), dims);
    dim("dense", &|r| Some(sparse(r)), dims);
    dim("dup", &|r| Some(sparse(r % 200)), dims);
}

/// Joins of every kind the pipelines compile, and some they leave to DataFusion, give
/// DataFusion's results.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_match_datafusion() {
    let c = contexts(join_tables).await;
    let compiled = [
        // A hash table of sparse keys; NULL keys on both sides match nothing; a string
        // group key from the build side (one too long for its view: DataFusion runs it).
        "select d.name, count(*), sum(f.x), sum(f.m) from fact f join dim d on f.k = d.k \
         group by d.name order by d.name",
        // A nullable build column in an aggregate and in a CASE.
        "select sum(d.v), count(d.v), sum(case when d.v is null then 1 else f.x end), \
         sum(case when d.name like 'PRO%' then f.m else 0 end) from fact f, dim d where f.k = d.k",
        // A filter over both sides, above the join.
        "select count(*), sum(f.x * d.v) from fact f join dim d on f.k = d.k \
         where f.x + d.v > 100 or d.name = 'bb'",
        // Int32 keys, indexed directly.
        "select d.v, count(*), min(f.x) from fact f join dense d on f.k32 = d.k32 \
         where f.x > 0 group by d.v order by d.v",
        // Over 256 groups: the group table grows while rows are joined.
        "select f.k32, count(*), sum(d.v), max(f.x) from fact f join dim d on f.k = d.k \
         where f.x > -200 group by f.k32 order by f.k32",
        // No build row passes its filter: the build side is empty.
        "select count(*), sum(f.x) from fact f join dim d on f.k = d.k where d.v > 1000",
    ];
    for sql in compiled {
        same(&c, sql, true).await;
        let plan = physical_plan(&c.nacre, sql).await;
        let text = displayable(plan.as_ref()).indent(true).to_string();
        assert!(text.contains("join=true"), "{sql}:\n{text}");
    }
    // Suggested in review: a NULL `CASE` condition; a join filter DataFusion keeps in the
    // join beside one above it; a build side whose keys are all NULL; the probe side on the
    // right of the query; a build side of several batches.
    let more = [
        "select sum(case when d.v > 5 then f.x else 0 - f.x end), count(*) from fact f \
         join dim d on f.k = d.k",
        "select count(*), sum(f.x) from fact f join dim d on f.k = d.k and f.x > d.v * 20 \
         where d.name <> 'bb'",
        "select count(*), sum(f.x) from fact f join (select * from dim where k is null) d \
         on f.k = d.k",
        "select d.name, count(*), sum(f.m) from dim d join fact f on d.k = f.k \
         group by d.name order by d.name",
        "select count(*), sum(f.x), sum(d.v) from fact f join \
         (select * from dim union all select k + 1, k32, name, v from dim where k32 < 100) d \
         on f.k = d.k",
    ];
    for sql in more {
        same(&c, sql, true).await;
    }
    let sql =
        "select d.v, count(*) from fact f join dense d on f.k = d.k group by d.v order by d.v";
    same(&c, sql, true).await;
    assert_eq!(fallbacks(&c, sql).await, 0, "{sql}");
    // Two build rows of one key: every partition runs in DataFusion.
    let sql = "select count(*), sum(f.x) from fact f join dup d on f.k = d.k";
    same(&c, sql, true).await;
    assert_eq!(fallbacks(&c, sql).await, PARTITIONS, "{sql}");
}

/// Joins as kernels (`SET nacre.device = 'cpu-kernels'`: the GPU kernels on the CPU
/// runtime): the probe runs in the kernel over the build side's table and columns copied to
/// the device, a hash table of sparse keys or a direct one of dense keys, with build columns
/// in filters and aggregates; a build side whose keys repeat goes to DataFusion. TPC-H Q12
/// and Q14 too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_as_kernels_match_datafusion() {
    let data = tpch::Tables::generate(0.01, PARTITIONS).expect("generated");
    let c = contexts_on("cpu-kernels", |ctx| {
        join_tables(ctx);
        data.register(ctx).expect("registered");
    })
    .await;
    let sparse_key = "cast(f.k32 as bigint) * 1000003 - 500000000";
    let on_device = [
        // Sparse build keys (a hash table), NULL build keys matching nothing.
        format!("select count(*), sum(f.x), sum(f.m) from fact f join dim d on {sparse_key} = d.k"),
        // Dense build keys (a direct table), a build column in a filter over both sides and
        // in an aggregate, more groups than registers hold (atomics).
        "select f.k32, count(*), sum(f.x + d.k32), sum(f.m) from fact f join dense d \
         on f.k32 = d.k32 where f.x > d.k32 group by f.k32 order by 1 limit 40"
            .to_string(),
        tpch::JOIN_QUERIES[0].1.to_string(),
        tpch::JOIN_QUERIES[1].1.to_string(),
    ];
    for sql in &on_device {
        same(&c, sql, true).await;
        assert_eq!(placements(&c.nacre, sql).await, ["cpu-kernels"], "{sql}");
        assert_eq!(device_runs(&c.nacre, sql).await, PARTITIONS, "{sql}");
    }
    // Two build rows of one key: DataFusion runs the join.
    let sql = format!("select count(*), sum(f.x) from fact f join dup d on {sparse_key} = d.k");
    same(&c, &sql, true).await;
    assert_eq!(device_runs(&c.nacre, &sql).await, 0, "{sql}");
    assert_eq!(fallbacks(&c, &sql).await, PARTITIONS, "{sql}");
    // A nullable build column the kernel would read: the partitions run on the CPU.
    let sql = "select sum(d.v), count(*) from fact f join dense d on f.k32 = d.k32";
    same(&c, sql, true).await;
    assert_eq!(device_runs(&c.nacre, sql).await, 0, "{sql}");
    assert_eq!(fallbacks(&c, sql).await, 0, "{sql}");
}

/// `LIKE` prefixes longer than a view's 4 bytes, over strings shorter and longer than 12
/// bytes, with NULLs, on the scanned side and the build side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_like_prefixes_match_datafusion() {
    let c = contexts(|ctx| {
        join_tables(ctx);
        let schema = Arc::new(Schema::new(vec![
            Field::new("s", DataType::Utf8, true),
            Field::new("x", DataType::Int64, false),
        ]));
        let words = [
            Some("PROMO"),
            Some("PROMO BURNISHED COPPER"),
            Some("PROMOTION"),
            Some("PROM"),
            None,
            Some("a name longer than a view"),
            Some("a name long"),
            Some("PROMO PLATED"),
        ];
        let parts = (0..PARTITIONS)
            .map(|p| {
                let s: StringArray = (0..400).map(|r| words[(r * 7 + p) % words.len()]).collect();
                let x = Int64Array::from_iter_values((0..400).map(|r| r as i64));
                let cols: Vec<Arc<dyn Array>> = vec![Arc::new(s), Arc::new(x)];
                vec![RecordBatch::try_new(schema.clone(), cols).expect("batch")]
            })
            .collect();
        let t = MemTable::try_new(schema, parts).expect("table");
        ctx.register_table("w", Arc::new(t)).expect("registered");
    })
    .await;
    for sql in [
        "select count(*), sum(x) from w where s like 'PROMO%'",
        "select count(*), sum(x) from w where s not like 'PROMO %'",
        "select sum(case when s like 'a name long%' then x else 0 end) from w",
        "select count(*) from w where s like 'PROMOTION%' or s like 'PROMO PLATED%'",
        "select sum(case when d.name like 'a name lo%' then f.x else 1 end) \
         from fact f join dim d on f.k = d.k",
    ] {
        same(&c, sql, true).await;
    }
}

/// A pipeline put together by hand whose program does not match its data (a date column
/// declared an `Int32`) is an error, not a read through a null address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_made_pipelines_that_do_not_match_their_data_are_errors() {
    use nacre_datafusion::types::ColType;
    let data = tpch::Tables::generate(0.01, PARTITIONS).expect("generated");
    let c = contexts(|ctx| data.register(ctx).expect("registered")).await;
    for (name, sql) in [("q6", tpch::Q6), ("q14", tpch::Q14)] {
        let plan = physical_plan(&c.nacre, sql).await;
        let mut nodes = Vec::new();
        compiled_nodes(&plan, &mut nodes);
        let exec = nodes[0]
            .downcast_ref::<NacreAggregateExec>()
            .expect("compiled");
        let mut pipeline = exec.pipeline().clone();
        let mut program = (*pipeline.program).clone();
        let k = (0..program.columns.len())
            .find(|&k| program.reads(k) && program.columns[k] == ColType::Date32)
            .expect("a date column");
        program.columns[k] = ColType::Int32;
        pipeline.program = Arc::new(program);
        let bad = NacreAggregateExec::new(
            pipeline,
            exec.options().clone(),
            exec.placement().clone(),
            exec.fallback().clone(),
        );
        let err = datafusion::physical_plan::collect(Arc::new(bad), c.nacre.task_ctx())
            .await
            .expect_err("a mismatch is an error");
        assert!(err.to_string().contains("does not match"), "{name}: {err}");
    }
}
