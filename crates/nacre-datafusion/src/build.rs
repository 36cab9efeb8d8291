//! The build side of a join on the host ([`BuildSide`]): DataFusion runs the build subtree
//! once per operator, each build column's batches are concatenated and made readable as the
//! scan's are, and its keys put in the lookup table the compiled probe reads
//! (`crate::codegen::join`): a table indexed by key where the keys are dense, else an
//! open-addressing hash table. Duplicate keys leave the join to DataFusion.
//!
//! Every partition of the probe waits for the build side, so it is made in parallel: the table
//! and each column on threads of their own, a large direct table by several threads.

use crate::codegen::join::hash_key;
use crate::codegen::FrameLayout;
use crate::error::Error;
use crate::pipeline::{Build, Lookup, Program};
use crate::run::{column_address, prefix_views, readable, validity_bytes};
use crate::types::ColType;
use datafusion::arrow::array::{Array, ArrayRef, Int64Array, RecordBatch};
use datafusion::arrow::compute::{cast, concat};
use datafusion::arrow::datatypes::DataType;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::collect;
use std::sync::Arc;

/// The most key values a direct table spans per build row (beyond which it is a hash
/// table).
const DIRECT_SPAN_PER_ROW: usize = 8;

/// Build rows from which a direct table is filled by several threads.
const PARALLEL_ROWS: usize = 1 << 16;

/// A join's build side, ready for compiled code (see the module docs).
#[derive(Debug)]
pub struct BuildSide {
    /// Rows.
    rows: usize,
    /// The build columns as pipelines read them, one per [`Build::columns`].
    columns: Vec<Column>,
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
        BuildSide::of(build, program, &batches)
    }

    /// The build side of the rows of `batches` (the subtree's output) for `program`.
    ///
    /// The lookup table and each build column are made on threads of their own, and a large
    /// direct table is filled by several (see `Table::of`): on a machine of many cores the
    /// build is what the probe's partitions wait for.
    pub fn of(build: &Build, program: &Program, batches: &[RecordBatch]) -> Result<Built, Error> {
        // No batch: one empty batch, which gives empty columns of the subtree's types.
        let empty;
        let batches = match batches {
            [] => {
                empty = [RecordBatch::new_empty(build.plan.schema())];
                &empty[..]
            }
            b => b,
        };
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        if u32::try_from(rows).is_err() {
            return Err(Error::Build(format!(
                "{rows} build rows (at most 2^32 - 1)"
            )));
        }
        let column = |b: &RecordBatch, c: usize| {
            let missing = || Error::Mismatch(format!("the build side has no column {c}"));
            b.columns().get(c).cloned().ok_or_else(missing)
        };
        let keys = batches
            .iter()
            .map(|b| {
                let keys = cast(&column(b, build.key)?, &DataType::Int64)?;
                let keys = keys.as_any().downcast_ref::<Int64Array>().cloned();
                keys.ok_or_else(|| Error::Build("the join key is not an integer".into()))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let parts = build
            .columns
            .iter()
            .map(|&(c, ty)| {
                let parts = batches.iter().map(|b| column(b, c));
                Ok((parts.collect::<Result<Vec<_>, Error>>()?, ty))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let first = program.join.as_ref().map_or(0, |j| j.first_build);
        let (table, columns) = std::thread::scope(|s| {
            let table = s.spawn(|| Table::of(&keys));
            let columns: Vec<_> = parts
                .iter()
                .enumerate()
                .map(|(k, (parts, ty))| {
                    s.spawn(move || build_column(program, first + k, parts, *ty))
                })
                .collect();
            let columns = columns
                .into_iter()
                .map(|c| c.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect::<Result<Vec<_>, Error>>();
            let table = table
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            (table, columns)
        });
        let Some(table) = table else {
            return Ok(Built::Duplicates);
        };
        let (columns, validity) = columns?.into_iter().unzip();
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
        let t = self.table_parts();
        let at = l.join();
        frame[at.keys] = t.keys.map_or(0, |k| k.as_ptr() as u64);
        frame[at.rows] = t.rows.as_ptr() as u64;
        frame[at.size] = t.size;
        frame[at.base] = t.base;
    }

    /// Its build columns as pipelines read them, each with its type.
    pub(crate) fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// Its lookup table as traced code reads it (see [`crate::codegen::JoinWords`]).
    pub(crate) fn table_parts(&self) -> TableParts<'_> {
        match &self.table {
            Table::Hash { keys, rows } => TableParts {
                keys: Some(keys),
                rows,
                size: rows.len() as u64 - 1,
                base: 0,
            },
            Table::Direct { base, rows } => TableParts {
                keys: None,
                rows,
                size: rows.len() as u64,
                base: *base as u64,
            },
        }
    }
}

/// A build side's lookup table: the hash table's slot keys (`None` for a direct table), the
/// build rows (row + 1, 0: none) per slot or key, and the words of its size and least key.
pub(crate) struct TableParts<'a> {
    pub(crate) keys: Option<&'a [i64]>,
    pub(crate) rows: &'a [u32],
    pub(crate) size: u64,
    pub(crate) base: u64,
}

/// A build column as pipelines read it, with its type.
pub(crate) type Column = (ArrayRef, ColType);

/// Build column `index` of `program` from its `parts` (one per batch) as pipelines read it, and
/// its validity bytes where the program reads it and it holds nulls.
fn build_column(
    program: &Program,
    index: usize,
    parts: &[ArrayRef],
    ty: ColType,
) -> Result<(Column, Option<Vec<u8>>), Error> {
    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
    let whole = match refs.len() {
        1 => parts[0].clone(),
        _ => concat(&refs)?,
    };
    let reads = program.reads(index);
    let a = if program.long_prefix_columns().contains(&index) {
        prefix_views(&whole)?
    } else if reads {
        readable(&whole, ty)?
    } else {
        whole.clone()
    };
    let nulls = reads && whole.logical_null_count() > 0;
    Ok(((a, ty), nulls.then(|| validity_bytes(whole.as_ref()))))
}

impl Table {
    /// The table of `keys` (the key columns of the batches, rows numbered across them; the
    /// rows with a NULL key match nothing), `None` where two rows share a key.
    ///
    /// A direct table of [`PARALLEL_ROWS`] keys or more is filled by several threads, each
    /// over its own range of slots (reading every key, writing those in its range): the
    /// table's pages are first touched, and faulted in, in parallel.
    fn of(keys: &[Int64Array]) -> Option<Table> {
        let present = || {
            let mut offset = 0u32;
            keys.iter().flat_map(move |batch| {
                let first = offset;
                offset += batch.len() as u32;
                batch
                    .iter()
                    .enumerate()
                    .filter_map(move |(row, k)| Some((first + row as u32 + 1, k?)))
            })
        };
        let (n, least, most) = present()
            .fold((0usize, i64::MAX, i64::MIN), |(n, lo, hi), (_, k)| {
                (n + 1, lo.min(k), hi.max(k))
            });
        let span = (most as i128 - least as i128 + 1).max(1) as u128;
        if n > 0 && span <= (n * DIRECT_SPAN_PER_ROW + 1024) as u128 {
            let mut rows = vec![0u32; span as usize];
            let threads = match n >= PARALLEL_ROWS {
                true => std::thread::available_parallelism().map_or(1, |t| t.get().min(16)),
                false => 1,
            };
            let per = rows.len().div_ceil(threads);
            let unique = std::thread::scope(|s| {
                let fills: Vec<_> = rows
                    .chunks_mut(per)
                    .enumerate()
                    .map(|(i, range)| {
                        let lo = least + (i * per) as i64;
                        s.spawn(move || fill_direct(range, lo, present()))
                    })
                    .collect();
                // Threads not joined here are joined, and their panics raised, by the scope.
                fills
                    .into_iter()
                    .all(|f| f.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            });
            return unique.then_some(Table::Direct { base: least, rows });
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

/// Puts each `(row, key)` of `keys` whose key is in `range`'s slots (slot 0 is key `lo`) there;
/// false if two rows share a key.
fn fill_direct(range: &mut [u32], lo: i64, keys: impl Iterator<Item = (u32, i64)>) -> bool {
    let len = range.len() as u64;
    for (row, k) in keys {
        let at = k.wrapping_sub(lo) as u64;
        if at < len {
            let slot = &mut range[at as usize];
            if *slot != 0 {
                return false;
            }
            *slot = row;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `k` as two batches of keys (rows numbered across them).
    fn batches(k: &[Option<i64>]) -> Vec<Int64Array> {
        let (a, b) = k.split_at(k.len() / 2);
        vec![a.iter().copied().collect(), b.iter().copied().collect()]
    }

    #[test]
    fn a_large_direct_table_filled_in_parallel_finds_every_row() {
        let n = PARALLEL_ROWS as i64 * 3;
        // Every other key of [-n, n), last to first, and one NULL.
        let mut k: Vec<Option<i64>> = (0..n).map(|i| Some(n - 2 * i - 1)).collect();
        k.push(None);
        let t = Table::of(&batches(&k)).unwrap();
        assert!(matches!(t, Table::Direct { base, .. } if base == -n + 1));
        for (row, key) in k.iter().enumerate() {
            if let Some(key) = key {
                assert_eq!(find(&t, *key), row as u32 + 1, "{key}");
                assert_eq!(find(&t, key + 1), 0);
            }
        }
        // A key repeated at both ends of the rows, in different batches.
        k[0] = k[k.len() - 2];
        assert!(Table::of(&batches(&k)).is_none());
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
        let dense = Table::of(&batches(&[Some(12), None, Some(10), Some(11)])).unwrap();
        assert!(matches!(dense, Table::Direct { base: 10, .. }));
        let sparse = Table::of(&batches(&[Some(1), Some(1 << 40), Some(-7), None])).unwrap();
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
        assert!(Table::of(&batches(&[Some(3), Some(4), Some(3)])).is_none());
        assert!(Table::of(&batches(&[Some(1 << 50), Some(4), Some(1 << 50)])).is_none());
        // NULL keys match nothing and do not collide.
        assert!(Table::of(&batches(&[None, None, Some(4)])).is_some());
    }
}
