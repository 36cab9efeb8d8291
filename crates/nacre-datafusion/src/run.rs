//! The host side of a compiled pipeline: fills the frame of each batch (see
//! [`crate::codegen::FrameLayout`]), calls the compiled function, grows the group table when
//! it asks, switches to direct indexing once a batch has shown few key values,
//! and turns the accumulators into the partial aggregate's output batch.

use crate::build::BuildSide;
use crate::codegen::{
    hash_words, identity_bits, FrameLayout, STATUS_OVERFLOW, STATUS_UNSUPPORTED, STATUS_WIDE,
};
use crate::compile::PipelineFn;
use crate::error::Error;
use crate::pipeline::{
    bank, Acc, AccKind, Pipeline, Program, StateCol, MAX_ACCS, MAX_DIRECT_GROUPS,
};
use crate::types::{ColType, Repr};
use datafusion::arrow::array::{
    Array, ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array,
    Int64Array, PrimitiveArray, RecordBatch, StringViewArray, UInt64Array,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, Decimal128Type, Float64Type, Int32Type, Int64Type,
};
use nacre::RawPtr;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The first capacity of a group table (slots; a power of two).
const FIRST_CAPACITY: usize = 256;
/// The most slots a group table grows to.
const MAX_CAPACITY: usize = 1 << 30;

/// What running a partition with a compiled program gave.
#[derive(Debug)]
pub(crate) enum Ran {
    /// The partition's partial aggregate.
    Done(RecordBatch),
    /// Data the compiled code does not compute with (string keys over 12 bytes, NaN or -0.0
    /// compared): DataFusion runs the partition.
    DataFusion,
    /// A decimal outside 64 bits in a narrow program ([`Program::narrow`]): the wide
    /// program runs the partition.
    Wide,
}

/// Runs `program` (the pipeline's, or its variant for the partition's nulls:
/// [`Pipeline::program_for`]), compiled as `f`, over partition `partition`. With group keys,
/// the first batch whose rows form groups teaches the keys' values: where they are few, the
/// rest runs with the program that indexes them directly ([`Program::with_domain`],
/// compiled with `options`) until a row brings another value. A program with a join probes
/// `build`, its build side (a build side without rows matches no row: nothing runs).
/// Crate-private: `f` must be `program`'s compiled code (`crate::compile::compiled`), and
/// `program` the pipeline's for `build` (`Pipeline::program_for`), which the frames assume.
pub(crate) fn run_partition(
    p: &Pipeline,
    program: &Program,
    f: &PipelineFn,
    options: &nacre::Options,
    partition: usize,
    build: Option<&BuildSide>,
) -> Result<Ran, Error> {
    if program.join.is_some() && build.is_none() {
        // No build side to probe (never asked: the operator runs it first).
        return Ok(Ran::DataFusion);
    }
    let unmatched = build.is_some_and(|b| b.rows() == 0);
    let batches = match p.scan.partitions.get(partition) {
        Some(batches) if !unmatched => batches.as_slice(),
        _ => &[],
    };
    let mut status = 0u64;
    let columns = if program.keys.is_empty() {
        let mut banks = Banks::identities(program, 1);
        for b in batches {
            let data = BatchData::of(p, program, b)?;
            let mut frame = frame(program, &data, build, &mut banks, &mut status)?;
            call(f, &mut frame, 0, b.num_rows())?;
        }
        ungrouped_output(program, &banks)?
    } else {
        let l = FrameLayout {
            columns: program.columns.len(),
        };
        let mut table = GroupTable::new(program, FIRST_CAPACITY);
        let (mut direct, mut learnt) = (None::<Direct>, false);
        for b in batches {
            let data = BatchData::of(p, program, b)?;
            let mut start = 0;
            while start < b.num_rows() {
                let mut frame = frame(program, &data, build, &mut table.banks, &mut status)?;
                table.fill_frame(&mut frame, l);
                if let Some(d) = &mut direct {
                    frame[l.lut()] = d.lut.as_mut_ptr() as u64;
                    let from = start;
                    start = call(&d.f, &mut frame, start, b.num_rows())?;
                    DIRECT_ROWS.fetch_add(start - from, Ordering::Relaxed);
                    if start < b.num_rows() {
                        // A key value outside the domain: the hash table from here on.
                        direct = None;
                    }
                    continue;
                }
                start = call(f, &mut frame, start, b.num_rows())?;
                if start < b.num_rows() {
                    table = table.grow(program)?;
                }
            }
            if !learnt && table.count > 0 && status == 0 {
                learnt = true;
                direct = Direct::learn(program, &mut table, options)?;
            }
        }
        table.output(program)?
    };
    if status & STATUS_WIDE != 0 {
        return Ok(Ran::Wide);
    }
    if status & STATUS_UNSUPPORTED != 0 {
        return Ok(Ran::DataFusion);
    }
    if status & STATUS_OVERFLOW != 0 {
        return Err(Error::Overflow);
    }
    Ok(Ran::Done(RecordBatch::try_new(p.schema.clone(), columns)?))
}

fn call(f: &PipelineFn, frame: &mut [u64], start: usize, end: usize) -> Result<usize, Error> {
    // SAFETY: `frame` holds the addresses of the batch's columns (each with at least `end`
    // values of the column's type), of their validity bytes where the program reads them
    // (`end` bytes each, in the caller's `BatchData`), of the accumulators, status and group
    // table and, for a program with a key domain, of its lookup table (`Direct::lut`: one
    // slot below the capacity per combination of the domain's values), all alive until this
    // call returns; the compiled code reads rows `start..end` only, banks within their
    // lengths (`MAX_ACCS`, or `capacity + 1` slots of the bank's accumulators), the table
    // within its capacity (the probe ends at an empty slot: the table is at most half full)
    // and the lookup table at the index of key values found in the domain. With a join, the
    // frame also holds the build side's columns, validity and lookup table (`BuildSide`,
    // alive in the caller, not empty): the probe reads the hash table within its capacity
    // (at most two thirds full) or the direct table below its length, and build columns at
    // the row found or row 0.
    let r = unsafe { f.call(RawPtr::new(frame.as_mut_ptr()), start as u64, end as u64) };
    Ok(r? as usize)
}

/// Scanned column `k` of a batch as pipelines read it: strings of other encodings as views
/// (Arrow's cast), for the columns the program reads.
pub(crate) fn readable_column(p: &Pipeline, b: &RecordBatch, k: usize) -> Result<ArrayRef, Error> {
    let (col, ty) = p.scan.columns[k];
    let a = b.column(col);
    if p.program.reads(k) {
        readable(a, ty)
    } else {
        Ok(a.clone())
    }
}

/// A column of type `ty` as pipelines read it: strings of other encodings as views.
pub(crate) fn readable(a: &ArrayRef, ty: ColType) -> Result<ArrayRef, Error> {
    if ty.needs_views() {
        Ok(cast(a, &DataType::Utf8View)?)
    } else {
        Ok(a.clone())
    }
}

/// A string column (as views) as prefix views ([`crate::expr::Expr::long_prefix_columns`]):
/// two words per row, as its view's, but for a string longer than 12 bytes its bytes 4 to 12
/// in the second word.
pub(crate) fn prefix_views(a: &ArrayRef) -> Result<ArrayRef, Error> {
    let views = cast(a, &DataType::Utf8View)?;
    let Some(v) = views.as_any().downcast_ref::<StringViewArray>() else {
        return Ok(views);
    };
    let mut words = Vec::with_capacity(2 * v.len());
    for (i, &view) in v.views().iter().enumerate() {
        if v.is_null(i) {
            words.extend([0, 0]);
            continue;
        }
        let low = view as u64;
        let high = if (low as u32) <= 12 {
            (view >> 64) as u64
        } else {
            let bytes = v.value(i).as_bytes();
            let mut rest = [0u8; 8];
            rest.copy_from_slice(&bytes[4..12]);
            u64::from_le_bytes(rest)
        };
        words.extend([low, high]);
    }
    Ok(Arc::new(UInt64Array::from(words)))
}

/// What the frame of a batch points into, so it lives through the call: the scanned columns
/// as pipelines read them ([`readable_column`]) and, for those the program reads as
/// nullable, a validity byte per row.
struct BatchData {
    columns: Vec<ArrayRef>,
    validity: Vec<Option<Vec<u8>>>,
}

impl BatchData {
    fn of(p: &Pipeline, program: &Program, b: &RecordBatch) -> Result<BatchData, Error> {
        let mut columns = (0..p.scan.columns.len())
            .map(|k| readable_column(p, b, k))
            .collect::<Result<Vec<_>, _>>()?;
        let validity = columns
            .iter()
            .zip(&program.nullable)
            .map(|(a, &nullable)| nullable.then(|| validity_bytes(a.as_ref())))
            .collect();
        for k in program.long_prefix_columns() {
            if let Some(c) = columns.get_mut(k) {
                *c = prefix_views(c)?;
            }
        }
        Ok(BatchData { columns, validity })
    }
}

/// A byte per row of `a`: 1 where the value is not null.
pub(crate) fn validity_bytes(a: &dyn Array) -> Vec<u8> {
    match a.logical_nulls() {
        Some(nulls) => nulls.iter().map(u8::from).collect(),
        None => vec![1; a.len()],
    }
}

/// A frame with the batch's columns and validity, the build side's, the banks and the
/// status word.
fn frame(
    program: &Program,
    data: &BatchData,
    build: Option<&BuildSide>,
    banks: &mut Banks,
    status: &mut u64,
) -> Result<Vec<u64>, Error> {
    let l = FrameLayout {
        columns: program.columns.len(),
    };
    let mut frame = vec![0u64; l.words()];
    let scanned = data
        .columns
        .iter()
        .zip(&data.validity)
        .zip(&program.columns);
    for (k, ((a, v), &ty)) in scanned.enumerate() {
        frame[k] = column_address(a.as_ref(), ty);
        if let Some(v) = v {
            frame[l.validity(k)] = v.as_ptr() as u64;
        }
    }
    if let (Some(b), Some(j)) = (build, &program.join) {
        b.fill_frame(&mut frame, l, j.first_build);
    }
    frame[l.bank(0)] = banks.i64.as_mut_ptr() as u64;
    frame[l.bank(1)] = banks.i128.as_mut_ptr() as u64;
    frame[l.bank(2)] = banks.f64.as_mut_ptr() as u64;
    frame[l.status()] = status as *mut u64 as u64;
    check_frame(program, &frame, l)?;
    Ok(frame)
}

/// Refuses a frame the compiled code would read through a null address: a column the
/// program reads that is missing or of another type than the program's (its address is 0),
/// a validity it reads that is missing, a join's table that is not the kind the program
/// looks keys up in. The pipeline's parts are public: this keeps a mismatched one an error.
fn check_frame(program: &Program, frame: &[u64], l: FrameLayout) -> Result<(), Error> {
    for k in (0..program.columns.len()).filter(|&k| program.reads(k)) {
        if frame[k] == 0 {
            return Err(Error::Mismatch(format!(
                "column {k} is missing or of another type"
            )));
        }
        if program.nullable[k] && frame[l.validity(k)] == 0 {
            return Err(Error::Mismatch(format!("column {k} has no validity")));
        }
    }
    if let Some(j) = &program.join {
        let hashed = j.lookup == crate::pipeline::Lookup::Hash;
        if frame[l.join().rows] == 0 || (hashed && frame[l.join().keys] == 0) {
            return Err(Error::Mismatch(
                "the join's table is missing or of another kind".into(),
            ));
        }
    }
    Ok(())
}

fn values_address<T: ArrowPrimitiveType>(a: &dyn Array) -> u64 {
    a.as_any()
        .downcast_ref::<PrimitiveArray<T>>()
        .map_or(0, |a| a.values().as_ptr() as u64)
}

/// The address of a column's values (0 for a column the program does not read).
pub(crate) fn column_address(a: &dyn Array, ty: ColType) -> u64 {
    match ty {
        ColType::Int32 => values_address::<Int32Type>(a),
        ColType::Date32 => values_address::<Date32Type>(a),
        ColType::Int64 => values_address::<Int64Type>(a),
        ColType::Float64 => values_address::<Float64Type>(a),
        ColType::Decimal { .. } => values_address::<Decimal128Type>(a),
        // Views, or prefix views (`prefix_views`).
        ColType::Utf8View | ColType::Utf8 | ColType::DictUtf8 => {
            match a.as_any().downcast_ref::<StringViewArray>() {
                Some(v) => v.views().as_ptr() as u64,
                None => values_address::<datafusion::arrow::datatypes::UInt64Type>(a),
            }
        }
        ColType::UInt64 | ColType::Boolean => 0,
    }
}

/// Accumulator banks: the accumulators of each group slot, slot-major (see [`acc_index`]).
pub(crate) struct Banks {
    pub(crate) i64: Vec<i64>,
    pub(crate) i128: Vec<i128>,
    pub(crate) f64: Vec<f64>,
}

impl Banks {
    /// Banks for `slots` groups, slot-major (see [`acc_index`]), each accumulator at its
    /// identity; without keys (`slots` 1) the banks have `MAX_ACCS` values, as the carried
    /// registers.
    pub(crate) fn identities(p: &Program, slots: usize) -> Banks {
        let n = |b: usize| {
            if slots == 1 {
                MAX_ACCS
            } else {
                p.banks[b] * slots
            }
        };
        let mut banks = Banks {
            i64: vec![0; n(0)],
            i128: vec![0; n(1)],
            f64: vec![0.0; n(2)],
        };
        for acc in p.accs() {
            let bits = identity_bits(acc);
            for s in 0..slots {
                let at = acc_index(p, acc, s);
                match acc.repr {
                    Repr::I128 => banks.i128[at] = bits as i128,
                    Repr::F64 => banks.f64[at] = f64::from_bits(bits as u64),
                    _ => banks.i64[at] = bits as u64 as i64,
                }
            }
        }
        banks
    }

    fn get(&self, acc: Acc, at: usize) -> Scalar {
        match bank(acc.repr) {
            1 => Scalar::Wide(self.i128[at]),
            2 => Scalar::Float(self.f64[at]),
            _ => Scalar::Int(self.i64[at]),
        }
    }
}

/// Where accumulator `acc` of group slot `slot` is in its bank (slot-major, as the compiled
/// code's `Table::update`).
fn acc_index(p: &Program, acc: Acc, slot: usize) -> usize {
    slot * p.banks[bank(acc.repr)] + acc.slot
}

/// One accumulator's value.
#[derive(Copy, Clone)]
enum Scalar {
    Int(i64),
    Wide(i128),
    Float(f64),
}

impl Scalar {
    fn int(self) -> i64 {
        match self {
            Scalar::Int(x) => x,
            Scalar::Wide(x) => x as i64,
            Scalar::Float(x) => x as i64,
        }
    }
    fn wide(self) -> i128 {
        match self {
            Scalar::Wide(x) => x,
            other => i128::from(other.int()),
        }
    }
    fn float(self) -> f64 {
        match self {
            Scalar::Float(x) => x,
            other => other.int() as f64,
        }
    }
}

/// An array of type `ty` from values (`None`: null).
fn array(ty: &DataType, values: &[Option<Scalar>]) -> Result<ArrayRef, Error> {
    let ints = || values.iter().map(|v| v.map(Scalar::int));
    Ok(match ty {
        DataType::Int64 => Arc::new(ints().collect::<Int64Array>()),
        DataType::UInt64 => Arc::new(ints().map(|v| v.map(|x| x as u64)).collect::<UInt64Array>()),
        DataType::Int32 => Arc::new(ints().map(|v| v.map(|x| x as i32)).collect::<Int32Array>()),
        DataType::Date32 => Arc::new(ints().map(|v| v.map(|x| x as i32)).collect::<Date32Array>()),
        DataType::Float64 => Arc::new(
            values
                .iter()
                .map(|v| v.map(Scalar::float))
                .collect::<Float64Array>(),
        ),
        DataType::Decimal128(p, s) => Arc::new(
            values
                .iter()
                .map(|v| v.map(Scalar::wide))
                .collect::<Decimal128Array>()
                .with_precision_and_scale(*p, *s)?,
        ),
        other => {
            return Err(Error::Arrow(
                datafusion::arrow::error::ArrowError::NotYetImplemented(format!(
                    "aggregate state of type {other}"
                )),
            ))
        }
    })
}

/// The one-row output of a program without keys: SQL's NULL for the sum, minimum and
/// maximum of no rows.
pub(crate) fn ungrouped_output(p: &Program, banks: &Banks) -> Result<Vec<ArrayRef>, Error> {
    p.aggs
        .iter()
        .flat_map(|a| &a.states)
        .map(|s| {
            let v = banks.get(s.acc, s.acc.slot);
            array(
                &s.ty,
                &[present(p, s, banks, 0, banks.i64[0] > 0).then_some(v)],
            )
        })
        .collect()
}

/// Whether state `s` of group `g` is a value rather than SQL's NULL (see
/// [`StateCol::present`]; `rows`: whether any row passed).
fn present(p: &Program, s: &StateCol, banks: &Banks, g: usize, rows: bool) -> bool {
    match s.present {
        Some(count) => banks.i64[acc_index(p, count, g)] > 0,
        None => s.acc.kind == AccKind::Count || rows,
    }
}

/// Rows that programs with a key domain computed.
static DIRECT_ROWS: AtomicUsize = AtomicUsize::new(0);

/// How many rows programs with a key domain ([`Program::with_domain`]) computed in this
/// process, in every partition so far: whether direct indexing ran.
pub fn direct_rows() -> usize {
    DIRECT_ROWS.load(Ordering::Relaxed)
}

/// A program with a key domain ([`Program::with_domain`]) and its lookup table: the slot of
/// each combination of key values in the partition's group table.
struct Direct {
    f: Arc<PipelineFn>,
    lut: Vec<u64>,
}

impl Direct {
    /// The domain of the groups in `table`, where the combinations of their key values are
    /// few: every combination gets a group (those without rows are not output), and the
    /// program indexing them is compiled. `None` where they are many or it does not compile.
    fn learn(
        program: &Program,
        table: &mut GroupTable,
        options: &nacre::Options,
    ) -> Result<Option<Direct>, Error> {
        if table.count as usize > MAX_DIRECT_GROUPS {
            return Ok(None);
        }
        let mut domain = Vec::new();
        let mut first = 0;
        for k in 0..program.keys.len() {
            let n = program.words_of_key(k);
            let values: BTreeSet<&[u64]> = table
                .slots()
                .map(|s| &table.keys[s * table.words + first..s * table.words + first + n])
                .collect();
            domain.push(values.into_iter().map(<[u64]>::to_vec).collect::<Vec<_>>());
            first += n;
        }
        let Some(direct) = program.with_domain(domain.clone()) else {
            return Ok(None);
        };
        let Ok(compiled) = crate::compile::compiled(&Arc::new(direct), options) else {
            return Ok(None);
        };
        let combinations: usize = domain.iter().map(Vec::len).product();
        while (table.count as usize + combinations) * 2 > table.capacity {
            let t = std::mem::replace(table, GroupTable::new(program, 0));
            *table = t.grow(program)?;
        }
        let lut = (0..combinations)
            .map(|c| {
                let mut words = Vec::with_capacity(table.words);
                let mut rest = c;
                let mut digits = vec![0; domain.len()];
                for k in (0..domain.len()).rev() {
                    digits[k] = rest % domain[k].len();
                    rest /= domain[k].len();
                }
                for (k, &d) in digits.iter().enumerate() {
                    words.extend_from_slice(&domain[k][d]);
                }
                table.insert(&words) as u64
            })
            .collect();
        Ok(Some(Direct {
            f: compiled.function,
            lut,
        }))
    }
}

/// The group table of one partition: keys, used flags and accumulators.
struct GroupTable {
    capacity: usize,
    words: usize,
    keys: Vec<u64>,
    used: Vec<u64>,
    count: u64,
    banks: Banks,
}

impl GroupTable {
    fn new(p: &Program, capacity: usize) -> GroupTable {
        let words = p.key_words();
        GroupTable {
            capacity,
            words,
            keys: vec![0; capacity * words],
            used: vec![0; capacity],
            count: 0,
            banks: Banks::identities(p, capacity + 1),
        }
    }

    fn fill_frame(&mut self, frame: &mut [u64], l: FrameLayout) {
        frame[l.keys()] = self.keys.as_mut_ptr() as u64;
        frame[l.used()] = self.used.as_mut_ptr() as u64;
        frame[l.count()] = &mut self.count as *mut u64 as u64;
        frame[l.capacity()] = self.capacity as u64;
    }

    /// The used slots.
    fn slots(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.capacity).filter(|&s| self.used[s] != 0)
    }

    /// The slot of the group of key `words`, inserted if missing (the table must not be
    /// full), probing as the compiled code does.
    fn insert(&mut self, words: &[u64]) -> usize {
        let (w, mask) = (self.words, self.capacity - 1);
        let mut s = hash_words(words) as usize & mask;
        while self.used[s] != 0 {
            if self.keys[s * w..(s + 1) * w] == *words {
                return s;
            }
            s = (s + 1) & mask;
        }
        self.keys[s * w..(s + 1) * w].copy_from_slice(words);
        self.used[s] = 1;
        self.count += 1;
        s
    }

    /// A table of twice the capacity holding the same groups.
    fn grow(self, p: &Program) -> Result<GroupTable, Error> {
        let capacity = self.capacity * 2;
        if capacity > MAX_CAPACITY {
            return Err(Error::TooManyGroups(MAX_CAPACITY / 2));
        }
        let mut t = GroupTable::new(p, capacity);
        let w = self.words;
        for s in self.slots() {
            let to = t.insert(&self.keys[s * w..(s + 1) * w]);
            for acc in p.accs() {
                let (from, at) = (acc_index(p, acc, s), acc_index(p, acc, to));
                match bank(acc.repr) {
                    1 => t.banks.i128[at] = self.banks.i128[from],
                    2 => t.banks.f64[at] = self.banks.f64[from],
                    _ => t.banks.i64[at] = self.banks.i64[from],
                }
            }
        }
        Ok(t)
    }

    /// The keys, then the accumulators, of every group some row passed into (groups of
    /// [`Direct::learn`]'s combinations may have none).
    fn output(&self, program: &Program) -> Result<Vec<ArrayRef>, Error> {
        let rows = program.accs[0].acc;
        let slots: Vec<usize> = self
            .slots()
            .filter(|&s| self.banks.i64[acc_index(program, rows, s)] > 0)
            .collect();
        let mut first_word = Vec::new();
        let mut word = 0;
        for k in 0..program.keys.len() {
            first_word.push(word);
            word += program.words_of_key(k);
        }
        let key = |s: usize, k: usize| {
            let at = s * self.words + first_word[k];
            let value = program.keys[k].ty().repr().key_words();
            let not_null = value == program.words_of_key(k) || self.keys[at + value] != 0;
            not_null.then(|| [self.keys[at], self.keys[at + value - 1]])
        };
        grouped_output(program, &self.banks, &slots, key)
    }
}

/// The output columns of the groups in `slots`: each key (`key(slot, k)` gives key `k`'s
/// words, one-word keys twice, or `None` for NULL), then every aggregate state.
pub(crate) fn grouped_output(
    program: &Program,
    banks: &Banks,
    slots: &[usize],
    key: impl Fn(usize, usize) -> Option<[u64; 2]>,
) -> Result<Vec<ArrayRef>, Error> {
    let mut out = Vec::new();
    for (k, e) in program.keys.iter().enumerate() {
        out.push(key_array(e.ty(), slots.iter().map(|&s| key(s, k)))?);
    }
    for s in program.aggs.iter().flat_map(|a| &a.states) {
        let values: Vec<_> = slots
            .iter()
            .map(|&g| {
                let v = banks.get(s.acc, acc_index(program, s.acc, g));
                present(program, s, banks, g, true).then_some(v)
            })
            .collect();
        out.push(array(&s.ty, &values)?);
    }
    Ok(out)
}

/// The array of a group key's values, each given by its (one or two) words or `None` for
/// NULL.
fn key_array(
    ty: ColType,
    words: impl Iterator<Item = Option<[u64; 2]>>,
) -> Result<ArrayRef, Error> {
    Ok(match ty {
        ColType::Utf8View | ColType::Utf8 | ColType::DictUtf8 => {
            let strings: Vec<Option<String>> = words.map(|w| w.map(view_string)).collect();
            let views: ArrayRef = Arc::new(
                strings
                    .iter()
                    .map(Option::as_deref)
                    .collect::<StringViewArray>(),
            );
            if ty.needs_views() {
                cast(&views, &ty.arrow())?
            } else {
                views
            }
        }
        ColType::Boolean => Arc::new(
            words
                .map(|w| w.map(|w| w[0] != 0))
                .collect::<BooleanArray>(),
        ),
        ColType::Decimal { .. } => {
            let v: Vec<_> = words
                .map(|w| {
                    w.map(|w| Scalar::Wide((u128::from(w[0]) | (u128::from(w[1]) << 64)) as i128))
                })
                .collect();
            array(&ty.arrow(), &v)?
        }
        _ => {
            let v: Vec<_> = words.map(|w| w.map(|w| Scalar::Int(w[0] as i64))).collect();
            array(&ty.arrow(), &v)?
        }
    })
}

/// The string of an inline view (at most 12 bytes, checked when the pipeline was built).
fn view_string(w: [u64; 2]) -> String {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&w[0].to_le_bytes());
    b[8..].copy_from_slice(&w[1].to_le_bytes());
    let len = (u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize).min(12);
    String::from_utf8_lossy(&b[4..4 + len]).into_owned()
}
