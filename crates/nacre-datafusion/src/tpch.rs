//! TPC-H data generated in the process (`tpchgen-arrow`, no download) and the queries the
//! tests and `nacre bench query` run.

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;
use datafusion::datasource::MemTable;
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use std::sync::Arc;
use tpchgen::generators::{LineItemGenerator, OrderGenerator, PartGenerator};
use tpchgen_arrow::{LineItemArrow, OrderArrow, PartArrow};

/// Rows per generated batch (DataFusion's default batch size).
pub const BATCH_ROWS: usize = 8192;

/// TPC-H Q1, the pricing summary report.
pub const Q1: &str = "select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty, \
    sum(l_extendedprice) as sum_base_price, \
    sum(l_extendedprice * (1 - l_discount)) as sum_disc_price, \
    sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, \
    avg(l_quantity) as avg_qty, avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc, \
    count(*) as count_order \
    from lineitem where l_shipdate <= date '1998-12-01' - interval '90' day \
    group by l_returnflag, l_linestatus order by l_returnflag, l_linestatus";

/// TPC-H Q6, the forecasting revenue change query.
pub const Q6: &str = "select sum(l_extendedprice * l_discount) as revenue from lineitem \
    where l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' \
    and l_discount between 0.06 - 0.01 and 0.06 + 0.01 and l_quantity < 24";

/// TPC-H Q12, the shipping modes and order priority query (a join of `lineitem` and
/// `orders`).
pub const Q12: &str = "select l_shipmode, \
    sum(case when o_orderpriority = '1-URGENT' or o_orderpriority = '2-HIGH' then 1 else 0 end) \
    as high_line_count, \
    sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH' then 1 else 0 end) \
    as low_line_count \
    from orders, lineitem \
    where o_orderkey = l_orderkey and l_shipmode in ('MAIL', 'SHIP') \
    and l_commitdate < l_receiptdate and l_shipdate < l_commitdate \
    and l_receiptdate >= date '1994-01-01' \
    and l_receiptdate < date '1994-01-01' + interval '1' year \
    group by l_shipmode order by l_shipmode";

/// TPC-H Q14, the promotion effect query (a join of `lineitem` and `part`).
pub const Q14: &str = "select 100.00 * sum(case when p_type like 'PROMO%' \
    then l_extendedprice * (1 - l_discount) else 0 end) \
    / sum(l_extendedprice * (1 - l_discount)) as promo_revenue \
    from lineitem, part \
    where l_partkey = p_partkey and l_shipdate >= date '1995-09-01' \
    and l_shipdate < date '1995-09-01' + interval '1' month";

/// The queries of `lineitem` alone by name (their pipelines also run on devices).
pub const QUERIES: [(&str, &str); 2] = [("q1", Q1), ("q6", Q6)];

/// The queries with a join by name (their pipelines run on the CPU).
pub const JOIN_QUERIES: [(&str, &str); 2] = [("q12", Q12), ("q14", Q14)];

/// The tables the queries read, each in partitions of batches.
#[derive(Clone, Debug)]
pub struct Tables {
    /// `lineitem`.
    pub lineitem: Vec<Vec<RecordBatch>>,
    /// `orders`.
    pub orders: Vec<Vec<RecordBatch>>,
    /// `part`.
    pub part: Vec<Vec<RecordBatch>>,
}

impl Tables {
    /// The tables at `scale_factor`, each in `partitions` partitions (generated in
    /// parallel, one thread per partition).
    pub fn generate(scale_factor: f64, partitions: usize) -> Result<Tables> {
        Ok(Tables {
            lineitem: generate(partitions, |part, n| {
                LineItemArrow::new(LineItemGenerator::new(scale_factor, part, n))
                    .with_batch_size(BATCH_ROWS)
            })?,
            orders: generate(partitions, |part, n| {
                OrderArrow::new(OrderGenerator::new(scale_factor, part, n))
                    .with_batch_size(BATCH_ROWS)
            })?,
            part: generate(partitions, |part, n| {
                PartArrow::new(PartGenerator::new(scale_factor, part, n))
                    .with_batch_size(BATCH_ROWS)
            })?,
        })
    }

    /// The rows of `lineitem`.
    pub fn lineitem_rows(&self) -> usize {
        self.lineitem
            .iter()
            .flatten()
            .map(RecordBatch::num_rows)
            .sum()
    }

    /// Registers the tables in `ctx`.
    pub fn register(&self, ctx: &SessionContext) -> Result<()> {
        let tables = [
            ("lineitem", LineItemArrow::schema_ref(), &self.lineitem),
            ("orders", OrderArrow::schema_ref(), &self.orders),
            ("part", PartArrow::schema_ref(), &self.part),
        ];
        for (name, schema, partitions) in tables {
            register(ctx, name, schema, partitions.clone())?;
        }
        Ok(())
    }
}

fn register(
    ctx: &SessionContext,
    name: &str,
    schema: SchemaRef,
    partitions: Vec<Vec<RecordBatch>>,
) -> Result<()> {
    let table = MemTable::try_new(schema, partitions)?;
    ctx.register_table(name, Arc::new(table))?;
    Ok(())
}

/// A table in `partitions` partitions, partition `part` of `n` (from 1) generated by
/// `make(part, n)` in a thread of its own.
fn generate<I>(
    partitions: usize,
    make: impl Fn(i32, i32) -> I + Sync,
) -> Result<Vec<Vec<RecordBatch>>>
where
    I: Iterator<Item = std::result::Result<RecordBatch, ArrowError>>,
{
    let n = partitions.max(1) as i32;
    let make = &make;
    std::thread::scope(|s| {
        let parts: Vec<_> = (1..=n)
            .map(|part| s.spawn(move || make(part, n).collect::<std::result::Result<Vec<_>, _>>()))
            .collect();
        parts
            .into_iter()
            .map(|h| match h.join() {
                Ok(batches) => Ok(batches?),
                Err(_) => Err(DataFusionError::Execution(
                    "generating a TPC-H table failed".into(),
                )),
            })
            .collect()
    })
}
