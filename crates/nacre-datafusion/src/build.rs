//! The build side of a join on the host ([`BuildSide`]): DataFusion runs the build subtree
//! once per operator, its rows are concatenated, the columns the program reads made
//! readable as the scan's are, and its keys put in the lookup table the compiled probe reads
//! (`crate::codegen::join`): a table indexed by key where the keys are dense, else an
//! open-addressing hash table. Duplicate keys leave the join to DataFusion.

use crate::codegen::join::hash_key;
use crate::codegen::FrameLayout;
use crate::error::Error;
use crate::pipeline::{Build, Lookup, Program};
use crate::run::{column_address, prefix_views, readable, validity_bytes};
use datafusion::arrow::array::{Array, ArrayRef, Int64Array, RecordBatch};
use datafusion::arrow::compute::{cast, concat_batches};
use datafusion::arrow::datatypes::DataType;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::collect;
use std::sync::Arc;

/// The most key values a direct table spans per build row (beyond which it is a hash
/// table).
const DIRECT_SPAN_PER_ROW: usize = 8;

/// A join's build side, ready for compiled code (see the module docs).
#[derive(Debug)]
pub struct BuildSide {
    /// Rows.
    rows: usize,
    /// The build columns as pipelines read them, one per [`Build::columns`].
    columns: Vec<(ArrayRef, crate::types::ColType)>,
    /// A validity byte per row of the columns the program reads that hold nulls.
    validity: Vec<Option<Vec<u8>>>,
    table: Table,
}

/// The lookup table of the build keys.
#[derive(Debug)]
enum Table {
    /// Slot keys and rows (row + 1, 0: empty), linear probing from [`hash_key`].
    Hash { keys: Vec<i64>, rows: Vec<u32> },
    /// The row (+ 1, 0: none) of each key from `base`.
    Direct { base: i64, rows: Vec<u32> },
}

/// What running the build side gave.
#[derive(Debug)]
pub enum Built {
    /// The build side.
    Side(BuildSide),
    /// Two build rows share a key: DataFusion runs the join (the compiled probe finds one
    /// row per key).
    Duplicates,
}

impl BuildSide {
    /// Runs `build`'s subtree (every partition) in `context` and builds its lookup table,
    /// for `program` (which says the build columns it reads).
    pub async fn run(
        build: &Build,
        program: &Program,
        context: Arc<TaskContext>,
    ) -> Result<Built, Error> {
        let batches = collect(build.plan.clone(), context)
            .await
            .map_err(|e| Error::Build(e.to_string()))?;
        let batch = concat_batches(&build.plan.schema(), &batches)?;
        BuildSide::of(build, program, &batch)
    }

    /// The build side of the rows of `batch` (the subtree's output) for `program`.
    pub fn of(build: &Build, program: &Program, batch: &RecordBatch) -> Result<Built, Error> {
        let first = program.join.as_ref().map_or(0, |j| j.first_build);
        let rows = batch.num_rows();
        if u32::try_from(rows).is_err() {
            return Err(Error::Build(format!(
                "{rows} build rows (at most 2^32 - 1)"
            )));
        }
        let column = |c: usize| {
            let missing = || Error::Mismatch(format!("the build side has no column {c}"));
            batch.columns().get(c).ok_or_else(missing)
        };
        let keys = cast(column(build.key)?, &DataType::Int64)?;
        let keys = keys
            .as_any()
            .downcast_ref::<Int64Array>()
            .ok_or_else(|| Error::Build("the join key is not an integer".into()))?;
        let Some(table) = Table::of(keys) else {
            return Ok(Built::Duplicates);
        };
        let prefixed = program.long_prefix_columns();
        let columns = build
            .columns
            .iter()
            .enumerate()
            .map(|(k, &(c, ty))| {
                let a = column(c)?;
                let a = if prefixed.contains(&(first + k)) {
                    prefix_views(a)?
                } else if program.reads(first + k) {
                    readable(a, ty)?
                } else {
                    a.clone()
                };
                Ok((a, ty))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let validity = build
            .columns
            .iter()
            .enumerate()
            .map(|(k, &(c, _))| {
                let a = column(c)?;
                let nulls = program.reads(first + k) && a.logical_null_count() > 0;
                Ok(nulls.then(|| validity_bytes(a.as_ref())))
            })
            .collect::<Result<_, Error>>()?;
        Ok(Built::Side(BuildSide {
            rows,
            columns,
            validity,
            table,
        }))
    }

    /// Its rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// For each build column, whether it holds nulls.
    pub fn nulls(&self) -> Vec<bool> {
        self.validity.iter().map(Option::is_some).collect()
    }

    /// How the compiled probe finds its keys.
    pub fn lookup(&self) -> Lookup {
        match self.table {
            Table::Hash { .. } => Lookup::Hash,
            Table::Direct { .. } => Lookup::Direct,
        }
    }

    /// Stores the addresses of its columns, their validity and its table in `frame`, whose
    /// build columns start at `first` (those past the frame's columns are left out; the
    /// frame's check then finds them missing).
    pub(crate) fn fill_frame(&self, frame: &mut [u64], l: FrameLayout, first: usize) {
        let columns = self.columns.iter().zip(&self.validity);
        for (k, ((a, ty), v)) in columns.enumerate().take(l.columns.saturating_sub(first)) {
            frame[first + k] = column_address(a.as_ref(), *ty);
            if let Some(v) = v {
                frame[l.validity(first + k)] = v.as_ptr() as u64;
            }
        }
        let (keys, rows, size, base) = match &self.table {
            Table::Hash { keys, rows } => (keys.as_ptr() as u64, rows, rows.len() as u64 - 1, 0),
            Table::Direct { base, rows } => (0, rows, rows.len() as u64, *base as u64),
        };
        frame[l.join_keys()] = keys;
        frame[l.join_rows()] = rows.as_ptr() as u64;
        frame[l.join_size()] = size;
        frame[l.join_base()] = base;
    }
}

impl Table {
    /// The table of `keys` (the rows with a NULL key match nothing), `None` where two rows
    /// share a key.
    fn of(keys: &Int64Array) -> Option<Table> {
        let present = || {
            keys.iter()
                .enumerate()
                .filter_map(|(row, k)| Some((row as u32 + 1, k?)))
        };
        let (n, least, most) = present()
            .fold((0usize, i64::MAX, i64::MIN), |(n, lo, hi), (_, k)| {
                (n + 1, lo.min(k), hi.max(k))
            });
        let span = (most as i128 - least as i128 + 1).max(1) as u128;
        if n > 0 && span <= (n * DIRECT_SPAN_PER_ROW + 1024) as u128 {
            let mut rows = vec![0u32; span as usize];
            for (row, k) in present() {
                let slot = &mut rows[(k - least) as usize];
                if *slot != 0 {
                    return None;
                }
                *slot = row;
            }
            return Some(Table::Direct { base: least, rows });
        }
        let capacity = (n + n / 2 + 1).next_power_of_two().max(2);
        let mask = capacity as u64 - 1;
        let (mut slots, mut rows) = (vec![0i64; capacity], vec![0u32; capacity]);
        for (row, k) in present() {
            let mut at = hash_key(k) & mask;
            while rows[at as usize] != 0 {
                if slots[at as usize] == k {
                    return None;
                }
                at = (at + 1) & mask;
            }
            slots[at as usize] = k;
            rows[at as usize] = row;
        }
        Some(Table::Hash { keys: slots, rows })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(k: &[Option<i64>]) -> Int64Array {
        k.iter().copied().collect()
    }

    /// The row (+ 1) the table gives `k`, as the compiled probe finds it.
    fn find(t: &Table, k: i64) -> u32 {
        match t {
            Table::Direct { base, rows } => {
                let at = k.wrapping_sub(*base) as u64;
                if at < rows.len() as u64 {
                    rows[at as usize]
                } else {
                    0
                }
            }
            Table::Hash { keys, rows } => {
                let mask = rows.len() as u64 - 1;
                let mut at = hash_key(k) & mask;
                while rows[at as usize] != 0 && keys[at as usize] != k {
                    at = (at + 1) & mask;
                }
                rows[at as usize]
            }
        }
    }

    #[test]
    fn dense_keys_are_indexed_and_sparse_ones_hashed() {
        let dense = Table::of(&keys(&[Some(12), None, Some(10), Some(11)])).unwrap();
        assert!(matches!(dense, Table::Direct { base: 10, .. }));
        let sparse = Table::of(&keys(&[Some(1), Some(1 << 40), Some(-7), None])).unwrap();
        assert!(matches!(sparse, Table::Hash { .. }));
        for (t, present) in [(&dense, [12, 10, 11]), (&sparse, [1, 1 << 40, -7])] {
            let found: Vec<u32> = present.iter().map(|&k| find(t, k)).collect();
            let expected: Vec<u32> = if matches!(t, Table::Direct { .. }) {
                vec![1, 3, 4]
            } else {
                vec![1, 2, 3]
            };
            assert_eq!(found, expected);
            for absent in [0, 9, 13, 2, i64::MIN, i64::MAX] {
                assert_eq!(find(t, absent), 0, "{absent}");
            }
        }
    }

    #[test]
    fn duplicate_keys_are_refused() {
        assert!(Table::of(&keys(&[Some(3), Some(4), Some(3)])).is_none());
        assert!(Table::of(&keys(&[Some(1 << 50), Some(4), Some(1 << 50)])).is_none());
        // NULL keys match nothing and do not collide.
        assert!(Table::of(&keys(&[None, None, Some(4)])).is_some());
    }
}
