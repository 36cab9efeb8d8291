//! The host side of pipelines on a GPU: tables loaded into device memory once, group keys
//! encoded as dense codes, one kernel launch for the whole table (see
//! [`crate::codegen::kernel`]), and the accumulators turned into the partial aggregate's
//! output batch.
//!
//! **One launch per table.** A GPU is one device however many partitions DataFusion runs:
//! launching a kernel per partition made the partitions' launches, waits and transfers
//! contend for it, and each paid them in full. So every partition of the scan runs in one
//! launch (`run_table`): the operator's first partition gives the whole table's partial
//! aggregate and the others none ([`crate::exec`]).
//!
//! **Loading.** A scanned column is copied once into one array of the engine's device
//! (managed memory on CUDA), every partition's batches end to end, and kept for later
//! queries (keyed by the Arrow arrays it was copied from, which the cache holds, so the key
//! is never reused while the copy lives). The group key columns are encoded together: each
//! row's combination of key values as a `u32` code, in the order combinations first appear,
//! with each combination's values kept for the output. What loading cost is counted in
//! [`load_stats`]; [`clear`] frees every copy.
//!
//! **Groups.** A row's group is its code: direct indexing, no hash table, for up to
//! [`MAX_GROUPS`] combinations, and only those that occur (Q1's 3 return flags and 2 line
//! statuses make 4, not 6: fewer accumulators per thread). Pipelines whose keys are not
//! plain columns, with more combinations, or with 128-bit minimum or maximum run on the CPU
//! instead ([`device_plan`], `Outcome::Host`), as do tables with nulls in the columns
//! a pipeline reads (the CPU's code reads their validity; [`table_plan`]).
//!
//! **Joins.** The build side is made on the CPU as for the CPU pipelines (`crate::build`:
//! a direct or hash table of its keys and its columns as pipelines read them) and copied to
//! the device for each run, its table and the build columns the kernel reads; the kernel
//! probes it as the CPU's code does ([`crate::codegen::join`]). A build side with nulls in
//! a column the kernel reads runs on the CPU, one whose keys repeat in DataFusion, as do
//! group keys from the build side. Columns under `LIKE` prefixes over 4 bytes are loaded as
//! the CPU reads them, as prefix views (`run::prefix_views`).

use crate::build::BuildSide;
use crate::codegen::kernel::{self, KernelLayout, Strategy, BLOCK};
use crate::codegen::{STATUS_OVERFLOW, STATUS_UNSUPPORTED, STATUS_WIDE};
use crate::error::Error;
use crate::expr::Expr;
use crate::pipeline::{Pipeline, Program};
use crate::run::{grouped_output, prefix_views, ungrouped_output, Banks};
use crate::types::ColType;
use datafusion::arrow::array::{
    Array as _, ArrayRef, PrimitiveArray, RecordBatch, StringViewArray, UInt64Array,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, Decimal128Type, Float64Type, Int32Type, Int64Type,
};
use nacre::gpu::{launch, Array, Block, Grid};
use nacre::{DeviceKind, Engine, Options, Ptr, RawPtr, RuntimeOptions, Unchecked, Val};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The most key combinations a pipeline on the device indexes directly.
pub const MAX_GROUPS: usize = 1 << 16;
/// Rows each thread takes at least (fewer blocks for small tables).
const ROWS_PER_THREAD: usize = 16;
/// The most blocks of one launch.
const MAX_BLOCKS: usize = 4096;

/// Why a pipeline cannot run on the device (it runs on the CPU), or `Ok` if it can.
pub fn device_plan(p: &Program) -> Result<(), String> {
    if p.nullable.iter().any(|&n| n) {
        return Err("kernels do not read nulls".into());
    }
    if !kernel::supports(p) {
        return Err("the minimum or maximum of 128-bit values has no atomic form".into());
    }
    if p.keys.iter().any(|k| !matches!(**k, Expr::Column { .. })) {
        return Err("group keys that are not plain columns".into());
    }
    let first_build = p.join.as_ref().map_or(usize::MAX, |j| j.first_build);
    if p.keys
        .iter()
        .any(|k| matches!(**k, Expr::Column { index, .. } if index >= first_build))
    {
        return Err("group keys from a join's build side".into());
    }
    Ok(())
}

/// Why the pipeline cannot run over its whole table on the device (every partition then
/// runs on the CPU), or `Ok` if it can: [`device_plan`], and no nulls in the columns it
/// reads. Reads the batches' null counts only.
pub fn table_plan(p: &Pipeline) -> Result<(), String> {
    device_plan(&p.program)?;
    let partitions = p.scan.partitions.len();
    if (0..partitions).any(|q| p.nulls(q).iter().any(|&n| n)) {
        return Err("nulls in the table".into());
    }
    Ok(())
}

/// What running the whole table on the device gave.
pub(crate) enum Outcome {
    /// The partial aggregate of every partition.
    Done(RecordBatch),
    /// Data the compiled code does not compute with (long string keys, NaN or -0.0
    /// compared): DataFusion runs the partitions.
    DataFusion,
    /// The table does not suit the device (the reason): the CPU pipeline runs the
    /// partitions.
    Host(String),
}

/// A device's engine, opened once per process.
pub fn engine(kind: DeviceKind) -> Result<Arc<Engine>, Error> {
    static ENGINES: OnceLock<Mutex<HashMap<DeviceKind, Arc<Engine>>>> = OnceLock::new();
    let mut engines = ENGINES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(e) = engines.get(&kind) {
        return Ok(e.clone());
    }
    let options = Options {
        runtime: RuntimeOptions::for_device(kind),
        ..Options::default()
    };
    let e = Arc::new(Engine::new(options)?);
    engines.insert(kind, e.clone());
    Ok(e)
}

/// A compiled kernel launch: `(frame, rows, blocks)`.
type LaunchFn = Unchecked<(Ptr<u64>, Val<u64>, Val<u32>), ()>;

/// The compiled launch of `p`'s kernel with `strategy` on `kind`, compiled on first use.
fn compiled(
    p: &Arc<Program>,
    kind: DeviceKind,
    strategy: Strategy,
) -> Result<Arc<LaunchFn>, Error> {
    type Cache = Mutex<HashMap<(String, DeviceKind, Strategy), Arc<LaunchFn>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = (p.shape(), kind, strategy);
    let mut cache = CACHE
        .get_or_init(Cache::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(f) = cache.get(&key) {
        return Ok(f.clone());
    }
    let f = Arc::new(engine(kind)?.compile_unchecked(launcher(p.clone(), strategy))?);
    cache.insert(key, f.clone());
    Ok(f)
}

/// The traced host function that launches `p`'s kernel with `strategy`: `(frame, rows,
/// blocks)`, blocks of [`BLOCK`] threads.
pub fn launcher(
    program: Arc<Program>,
    strategy: Strategy,
) -> impl Fn(Ptr<u64>, Val<u64>, Val<u32>) + Send + Sync + 'static {
    move |frame: Ptr<u64>, n: Val<u64>, blocks: Val<u32>| {
        let (grid, block) = (Grid::new(blocks), Block::new(BLOCK));
        let p = program.clone();
        match strategy {
            Strategy::Registers(groups) => launch(
                move |f: Ptr<u64>, n: Val<u64>| kernel::registers_kernel(&p, groups, f, n),
                grid,
                block,
                (frame, n),
            ),
            Strategy::Atomics => launch(
                move |f: Ptr<u64>, n: Val<u64>| kernel::atomics_kernel(&p, f, n),
                grid,
                block,
                (frame, n),
            ),
        }
    }
}

/// A scanned column of the table in device memory.
enum Column {
    I32(Array<i32>),
    I64(Array<i64>),
    I128(Array<i128>),
    F64(Array<f64>),
    /// String views, two words each.
    Words(Array<u64>),
}

impl Column {
    fn address(&self) -> u64 {
        match self {
            Column::I32(a) => a.as_ptr() as u64,
            Column::I64(a) => a.as_ptr() as u64,
            Column::I128(a) => a.as_ptr() as u64,
            Column::F64(a) => a.as_ptr() as u64,
            Column::Words(a) => a.as_ptr() as u64,
        }
    }

    /// The rows it holds.
    fn rows(&self) -> usize {
        match self {
            Column::I32(a) => a.len(),
            Column::I64(a) => a.len(),
            Column::I128(a) => a.len(),
            Column::F64(a) => a.len(),
            Column::Words(a) => a.len() / 2,
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Column::I32(a) => a.bytes(),
            Column::I64(a) => a.bytes(),
            Column::I128(a) => a.bytes(),
            Column::F64(a) => a.bytes(),
            Column::Words(a) => a.bytes(),
        }
    }
}

/// The group key columns encoded: a code per row, and for each code its combination's key
/// words, key by key (as the CPU's group table holds them: one-word keys twice).
struct Codes {
    codes: Array<u32>,
    values: Vec<Vec<[u64; 2]>>,
}

/// What encoding the key columns gave.
enum Encoded {
    Codes(Codes),
    /// A string key longer than its view: DataFusion runs the table.
    LongString,
    /// More than [`MAX_GROUPS`] combinations: the CPU runs the table.
    TooMany,
}

/// A cached copy and the Arrow arrays it was made from (held so that their addresses, the
/// key, stay theirs).
struct Entry<T> {
    value: Arc<T>,
    _arrays: Vec<ArrayRef>,
}

/// What a copy is keyed by: the device, how many columns and batches it was made from and
/// the addresses of their arrays, and what was made of them.
type Key = (DeviceKind, Vec<usize>, &'static str);

struct Store {
    columns: HashMap<Key, Entry<Column>>,
    codes: HashMap<Key, Entry<Encoded>>,
}

fn store() -> &'static Mutex<Store> {
    static STORE: OnceLock<Mutex<Store>> = OnceLock::new();
    STORE.get_or_init(|| {
        Mutex::new(Store {
            columns: HashMap::new(),
            codes: HashMap::new(),
        })
    })
}

static LOADED_BYTES: AtomicU64 = AtomicU64::new(0);
static LOAD_NANOS: AtomicU64 = AtomicU64::new(0);

/// What loading partitions into device memory has cost in this process.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct LoadStats {
    /// Bytes copied to device memory (columns and key codes).
    pub bytes: u64,
    /// Time spent copying and encoding.
    pub time: Duration,
}

/// What loading has cost so far (see the module docs).
pub fn load_stats() -> LoadStats {
    LoadStats {
        bytes: LOADED_BYTES.load(Ordering::Relaxed),
        time: Duration::from_nanos(LOAD_NANOS.load(Ordering::Relaxed)),
    }
}

/// Frees every table copied to a device and the launches' reused memory, and resets
/// [`load_stats`] and [`run_stats`].
pub fn clear() {
    let mut s = store().lock().unwrap_or_else(|e| e.into_inner());
    s.columns.clear();
    s.codes.clear();
    LOADED_BYTES.store(0, Ordering::Relaxed);
    LOAD_NANOS.store(0, Ordering::Relaxed);
    RUNS.store(0, Ordering::Relaxed);
    RUN_PARTITIONS.store(0, Ordering::Relaxed);
    for slot in &RUN_NANOS {
        slot.store(0, Ordering::Relaxed);
    }
    scratch_pool()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
}

static RUN_NANOS: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];
static RUNS: AtomicU64 = AtomicU64::new(0);
static RUN_PARTITIONS: AtomicU64 = AtomicU64::new(0);

/// Where the time of the launches on a device went, summed over them.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct RunStats {
    /// Launches run (one per table and query).
    pub launches: u64,
    /// Partitions those launches computed.
    pub partitions: u64,
    /// Preparing each launch: accumulators reset, frame filled, memory prefetched.
    pub setup: Duration,
    /// The compiled call: launching the kernel and waiting for it.
    pub kernel: Duration,
    /// Reading the accumulators back and building the output batch.
    pub output: Duration,
}

/// The time of the launches run so far (see [`RunStats`]); [`clear`] resets it.
pub fn run_stats() -> RunStats {
    let ns = |i: usize| Duration::from_nanos(RUN_NANOS[i].load(Ordering::Relaxed));
    RunStats {
        launches: RUNS.load(Ordering::Relaxed),
        partitions: RUN_PARTITIONS.load(Ordering::Relaxed),
        setup: ns(0),
        kernel: ns(1),
        output: ns(2),
    }
}

fn note_run(partitions: usize, times: [Duration; 3]) {
    RUNS.fetch_add(1, Ordering::Relaxed);
    RUN_PARTITIONS.fetch_add(partitions as u64, Ordering::Relaxed);
    for (slot, t) in RUN_NANOS.iter().zip(times) {
        slot.fetch_add(t.as_nanos() as u64, Ordering::Relaxed);
    }
}

fn note_load(bytes: usize, since: Instant) {
    LOADED_BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
    LOAD_NANOS.fetch_add(since.elapsed().as_nanos() as u64, Ordering::Relaxed);
}

fn values<T: ArrowPrimitiveType>(arrays: &[ArrayRef]) -> Vec<T::Native> {
    let mut out = Vec::new();
    for a in arrays {
        if let Some(a) = a.as_any().downcast_ref::<PrimitiveArray<T>>() {
            out.extend_from_slice(a.values());
        }
    }
    out
}

/// The string views of a column's arrays, two words each (strings of other encodings
/// converted by Arrow's cast; prefix views, `UInt64` arrays from [`prefix_views`], as they
/// are).
fn view_words(arrays: &[ArrayRef]) -> Result<Vec<u64>, Error> {
    let mut out = Vec::new();
    for a in arrays {
        if let Some(words) = a.as_any().downcast_ref::<UInt64Array>() {
            out.extend_from_slice(words.values());
            continue;
        }
        let a = match a.data_type() {
            DataType::Utf8View => a.clone(),
            _ => cast(a, &DataType::Utf8View)?,
        };
        if let Some(v) = a.as_any().downcast_ref::<StringViewArray>() {
            out.extend(v.views().iter().flat_map(|&w| [w as u64, (w >> 64) as u64]));
        }
    }
    Ok(out)
}

/// `data` in an array of the engine's device, moved to the device now (managed memory
/// would otherwise move page by page as the kernel first touches it).
fn on_device<T: nacre::Element>(e: &Engine, data: &[T]) -> Result<Array<T>, Error> {
    let a = Array::copy_on(e.device(), data)?;
    e.device()
        .prepare_device_access(a.as_ptr() as *const u8, a.bytes());
    Ok(a)
}

/// Copies a column's arrays to the device, end to end.
fn load_column(e: &Engine, ty: ColType, arrays: &[ArrayRef]) -> Result<Column, Error> {
    Ok(match ty {
        ColType::Int32 => Column::I32(on_device(e, &values::<Int32Type>(arrays))?),
        ColType::Date32 => Column::I32(on_device(e, &values::<Date32Type>(arrays))?),
        ColType::Int64 => Column::I64(on_device(e, &values::<Int64Type>(arrays))?),
        ColType::Float64 => Column::F64(on_device(e, &values::<Float64Type>(arrays))?),
        ColType::Decimal { .. } => Column::I128(on_device(e, &values::<Decimal128Type>(arrays))?),
        ColType::Utf8View | ColType::Utf8 | ColType::DictUtf8 => {
            Column::Words(on_device(e, &view_words(arrays)?)?)
        }
        // Pipelines never read these (`pipeline::scan`).
        ColType::UInt64 | ColType::Boolean => Column::Words(on_device(e, &[0u64])?),
    })
}

/// The key words of each row of a key column (`None` for a string longer than its view).
fn key_words(ty: ColType, arrays: &[ArrayRef]) -> Result<Vec<Option<[u64; 2]>>, Error> {
    let one = |w: u64| Some([w, w]);
    Ok(match ty {
        ColType::Int32 => values::<Int32Type>(arrays)
            .into_iter()
            .map(|x| one(x as u64))
            .collect(),
        ColType::Date32 => values::<Date32Type>(arrays)
            .into_iter()
            .map(|x| one(x as u64))
            .collect(),
        ColType::Int64 => values::<Int64Type>(arrays)
            .into_iter()
            .map(|x| one(x as u64))
            .collect(),
        ColType::Decimal { .. } => values::<Decimal128Type>(arrays)
            .into_iter()
            .map(|x| Some([x as u64, (x >> 64) as u64]))
            .collect(),
        ColType::Utf8View | ColType::Utf8 | ColType::DictUtf8 => view_words(arrays)?
            .chunks(2)
            .map(|w| ((w[0] & 0xffff_ffff) <= 12).then_some([w[0], w[1]]))
            .collect(),
        ColType::Float64 | ColType::UInt64 | ColType::Boolean => Vec::new(),
    })
}

/// Encodes the combinations of the key columns (`keys[k]`: key `k`'s type and arrays).
fn encode(e: &Engine, keys: &[(ColType, &[ArrayRef])]) -> Result<Encoded, Error> {
    let words = keys
        .iter()
        .map(|&(ty, arrays)| key_words(ty, arrays))
        .collect::<Result<Vec<_>, _>>()?;
    let rows = words.first().map_or(0, Vec::len);
    let mut index: HashMap<Vec<[u64; 2]>, u32> = HashMap::new();
    let mut values = Vec::new();
    let mut codes = Vec::with_capacity(rows);
    let mut row = Vec::with_capacity(keys.len());
    for r in 0..rows {
        row.clear();
        for key in &words {
            let Some(w) = key[r] else {
                return Ok(Encoded::LongString);
            };
            row.push(w);
        }
        let code = match index.get(&row[..]) {
            Some(&code) => code,
            None if values.len() == MAX_GROUPS => return Ok(Encoded::TooMany),
            None => {
                values.push(row.clone());
                index.insert(row.clone(), values.len() as u32 - 1);
                values.len() as u32 - 1
            }
        };
        codes.push(code);
    }
    Ok(Encoded::Codes(Codes {
        codes: on_device(e, &codes)?,
        values,
    }))
}

/// What the store caches: columns or key codes, each in its own map.
trait Cached: Sized + Send + Sync + 'static {
    fn map(store: &mut Store) -> &mut HashMap<Key, Entry<Self>>;
}

impl Cached for Column {
    fn map(store: &mut Store) -> &mut HashMap<Key, Entry<Self>> {
        &mut store.columns
    }
}

impl Cached for Encoded {
    fn map(store: &mut Store) -> &mut HashMap<Key, Entry<Self>> {
        &mut store.codes
    }
}

/// The cached copy of columns `cols` of `batches` made by `make` (from their arrays, column
/// after column), made now if missing (without holding the store).
fn cached<T: Cached>(
    key: (DeviceKind, &'static str),
    batches: &[&RecordBatch],
    cols: &[usize],
    make: impl FnOnce(&[ArrayRef]) -> Result<(T, usize), Error>,
) -> Result<Arc<T>, Error> {
    let arrays: Vec<ArrayRef> = cols
        .iter()
        .flat_map(|&col| batches.iter().map(move |b| b.column(col).clone()))
        .collect();
    // The shape first (as many columns and batches), then the arrays: one list of addresses
    // could otherwise be two columns of one batch or one column of two.
    let addresses = [cols.len(), batches.len()]
        .into_iter()
        .chain(arrays.iter().map(|a| Arc::as_ptr(a) as *const u8 as usize))
        .collect();
    let key = (key.0, addresses, key.1);
    let lock = || store().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = T::map(&mut lock()).get(&key) {
        return Ok(e.value.clone());
    }
    let start = Instant::now();
    let (value, bytes) = make(&arrays)?;
    note_load(bytes, start);
    let value = Arc::new(value);
    let mut store = lock();
    let entry = T::map(&mut store).entry(key).or_insert(Entry {
        value,
        _arrays: arrays,
    });
    Ok(entry.value.clone())
}

/// A table in device memory: the columns the program reads (by scanned column) and the
/// codes of its key combinations (`None` without keys).
struct Loaded {
    columns: Vec<Option<Arc<Column>>>,
    keys: Option<Arc<Encoded>>,
    rows: usize,
}

fn load(p: &Pipeline, e: &Engine, kind: DeviceKind) -> Result<Loaded, Error> {
    let batches = &table(p)[..];
    let mut columns = Vec::new();
    for (k, &(col, ty)) in p.scan.columns.iter().enumerate() {
        if !p.program.reads(k) {
            columns.push(None);
            continue;
        }
        let prefixes = p.program.long_prefix_columns().contains(&k);
        let what = if prefixes { "prefix views" } else { "values" };
        let c = cached((kind, what), batches, &[col], |arrays| {
            let c = match prefixes {
                true => {
                    let views = arrays
                        .iter()
                        .map(prefix_views)
                        .collect::<Result<Vec<_>, _>>()?;
                    load_column(e, ty, &views)?
                }
                false => load_column(e, ty, arrays)?,
            };
            let bytes = c.bytes();
            Ok((c, bytes))
        })?;
        columns.push(Some(c));
    }
    let keys: Vec<(usize, ColType)> = p
        .program
        .keys
        .iter()
        .map(|k| match **k {
            Expr::Column { index, ty } => (p.scan.columns[index].0, ty),
            _ => unreachable!("device_plan admits column keys only"),
        })
        .collect();
    let cols: Vec<usize> = keys.iter().map(|k| k.0).collect();
    let keys = if keys.is_empty() {
        None
    } else {
        Some(cached((kind, "codes"), batches, &cols, |arrays| {
            let per_key: Vec<(ColType, &[ArrayRef])> = keys
                .iter()
                .zip(arrays.chunks(batches.len().max(1)))
                .map(|(k, a)| (k.1, a))
                .collect();
            let encoded = encode(e, &per_key)?;
            let bytes = match &encoded {
                Encoded::Codes(c) => c.codes.bytes(),
                _ => 0,
            };
            Ok((encoded, bytes))
        })?)
    };
    Ok(Loaded {
        columns,
        keys,
        rows: batches.iter().map(|b| b.num_rows()).sum(),
    })
}

/// The memory of one launch: global accumulators, the status word and the frame. Allocating
/// managed memory costs more than a small kernel, so calls of the same sizes reuse it.
struct Scratch {
    ints: Array<i64>,
    wide: Array<u64>,
    floats: Array<f64>,
    status: Array<u64>,
    frame: Array<u64>,
}

/// What a [`Scratch`] is reused by: the device and its arrays' lengths.
type ScratchKey = (DeviceKind, [usize; 4]);

fn scratch_pool() -> &'static Mutex<HashMap<ScratchKey, Vec<Scratch>>> {
    static POOL: OnceLock<Mutex<HashMap<ScratchKey, Vec<Scratch>>>> = OnceLock::new();
    POOL.get_or_init(Mutex::default)
}

impl Scratch {
    /// A scratch for `groups` groups of `p` and a frame of `words`: from the pool, or new.
    fn take(
        e: &Engine,
        kind: DeviceKind,
        p: &Program,
        groups: usize,
        words: usize,
    ) -> Result<(Scratch, ScratchKey), Error> {
        let n = |b: usize| (p.banks[b] * groups).max(1);
        let key = (kind, [n(0), 2 * n(1), n(2), words]);
        let pooled = scratch_pool()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(&key)
            .and_then(Vec::pop);
        let s = match pooled {
            Some(s) => s,
            None => Scratch {
                ints: Array::alloc_on(e.device(), key.1[0])?,
                wide: Array::alloc_on(e.device(), key.1[1])?,
                floats: Array::alloc_on(e.device(), key.1[2])?,
                status: Array::alloc_on(e.device(), 1)?,
                frame: Array::alloc_on(e.device(), words)?,
            },
        };
        Ok((s, key))
    }

    fn give_back(self, key: ScratchKey) {
        scratch_pool()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key)
            .or_default()
            .push(self);
    }

    /// Sets every accumulator of `groups` groups to its identity and the status to 0.
    fn reset(&mut self, p: &Program, groups: usize) {
        // The CPU pipeline's banks have the same group-major layout.
        let start = Banks::identities(p, groups);
        for (to, from) in self.ints.as_mut_slice().iter_mut().zip(&start.i64) {
            *to = *from;
        }
        for (to, from) in self.wide.as_mut_slice().chunks_mut(2).zip(&start.i128) {
            to[0] = *from as u64;
            to[1] = (*from >> 64) as u64;
        }
        for (to, from) in self.floats.as_mut_slice().iter_mut().zip(&start.f64) {
            *to = *from;
        }
        self.status.as_mut_slice()[0] = 0;
    }

    /// Moves the scratch to the device before the kernel touches it.
    fn prefetch(&self, e: &Engine) {
        let d = e.device();
        d.prepare_device_access(self.ints.as_ptr() as *const u8, self.ints.bytes());
        d.prepare_device_access(self.wide.as_ptr() as *const u8, self.wide.bytes());
        d.prepare_device_access(self.floats.as_ptr() as *const u8, self.floats.bytes());
        d.prepare_device_access(self.status.as_ptr() as *const u8, self.status.bytes());
    }

    /// The accumulators back on the host, as the CPU pipeline's banks.
    fn to_host(&self) -> Banks {
        Banks {
            i64: self.ints.as_slice().to_vec(),
            i128: self
                .wide
                .as_slice()
                .chunks(2)
                .map(|w| (u128::from(w[0]) | (u128::from(w[1]) << 64)) as i128)
                .collect(),
            f64: self.floats.as_slice().to_vec(),
        }
    }
}

/// Every batch of the pipeline's scan, partition after partition.
fn table(p: &Pipeline) -> Vec<&RecordBatch> {
    p.scan.partitions.iter().flatten().collect()
}

/// The partial aggregate of no rows: every accumulator at its identity, no group (what
/// DataFusion's partial aggregate gives for an empty partition).
pub(crate) fn empty_output(p: &Pipeline) -> Result<RecordBatch, Error> {
    let program = &p.program;
    let columns = if program.keys.is_empty() {
        ungrouped_output(program, &Banks::identities(program, 1))?
    } else {
        grouped_output(program, &Banks::identities(program, 1), &[], |_, _| None)?
    };
    Ok(RecordBatch::try_new(p.schema.clone(), columns)?)
}

/// Runs the pipeline over every partition of its scan in one launch on device `kind` (see
/// the module docs), probing `build`, its join's build side (`None` without a join): the
/// whole table's partial aggregate. The caller has found the table suits the device
/// ([`table_plan`]; kernels do not read validity).
pub(crate) fn run_table(
    p: &Pipeline,
    kind: DeviceKind,
    build: Option<&BuildSide>,
) -> Result<Outcome, Error> {
    let program = match (&p.program.join, build) {
        (None, _) => p.program.clone(),
        (Some(_), None) => return Ok(Outcome::Host("the join's build side is missing".into())),
        (Some(_), Some(b)) if b.nulls().iter().any(|&n| n) => {
            return Ok(Outcome::Host("nulls in the join's build side".into()))
        }
        (Some(_), Some(b)) => Arc::new(p.program.with_lookup(b.lookup())),
    };
    match run_program(p, &program, kind, build)? {
        Some(outcome) => Ok(outcome),
        // A decimal outside 64 bits in the narrow program: the wide one, which never asks
        // again (a second ask would leave the table to DataFusion).
        None => {
            Ok(run_program(p, &Arc::new(program.wide()), kind, build)?
                .unwrap_or(Outcome::DataFusion))
        }
    }
}

/// A join's build side in device memory: its columns (by build column) and lookup table.
struct DeviceBuild {
    /// The columns the program reads (`None`: unread).
    columns: Vec<Option<Column>>,
    keys: Option<Array<i64>>,
    rows: Array<u32>,
    size: u64,
    base: u64,
}

impl DeviceBuild {
    /// Copies `b` to the device of `e`: the columns `program` reads, and the table.
    fn load(e: &Engine, program: &Program, b: &BuildSide) -> Result<DeviceBuild, Error> {
        let first = program.join.as_ref().map_or(0, |j| j.first_build);
        let mut columns = Vec::new();
        for (k, (a, ty)) in b.columns().iter().enumerate() {
            let read = program.reads(first + k);
            columns.push(
                read.then(|| load_column(e, *ty, std::slice::from_ref(a)))
                    .transpose()?,
            );
        }
        let t = b.table_parts();
        Ok(DeviceBuild {
            columns,
            keys: t.keys.map(|k| on_device(e, k)).transpose()?,
            rows: on_device(e, t.rows)?,
            size: t.size,
            base: t.base,
        })
    }

    /// Stores its addresses in `frame` (the build columns from `first`).
    fn fill_frame(&self, frame: &mut [u64], l: KernelLayout, first: usize) {
        for (k, c) in self.columns.iter().enumerate() {
            if let Some(w) = frame.get_mut(first + k) {
                *w = c.as_ref().map_or(0, Column::address);
            }
        }
        let at = l.join();
        frame[at.keys] = self.keys.as_ref().map_or(0, |k| k.as_ptr() as u64);
        frame[at.rows] = self.rows.as_ptr() as u64;
        frame[at.size] = self.size;
        frame[at.base] = self.base;
    }
}

/// Runs `program` (the pipeline's, or its wide form) over the table on device `kind`,
/// probing `build`; `None` where the narrow program met a decimal outside 64 bits
/// ([`STATUS_WIDE`]).
fn run_program(
    p: &Pipeline,
    program: &Arc<Program>,
    kind: DeviceKind,
    build: Option<&BuildSide>,
) -> Result<Option<Outcome>, Error> {
    let no_rows = p
        .scan
        .partitions
        .iter()
        .flatten()
        .all(|b| b.num_rows() == 0);
    // A build side without rows matches no row.
    if no_rows || build.is_some_and(|b| b.rows() == 0) {
        return Ok(Some(Outcome::Done(empty_output(p)?)));
    }
    let e = engine(kind)?;
    let data = load(p, &e, kind)?;
    let joined = match (&program.join, build) {
        (Some(_), Some(b)) => Some(DeviceBuild::load(&e, program, b)?),
        _ => None,
    };
    let keys = match data.keys.as_deref() {
        None => None,
        Some(Encoded::Codes(c)) => Some(c),
        // As the CPU pipeline does.
        Some(Encoded::LongString) => return Ok(Some(Outcome::DataFusion)),
        Some(Encoded::TooMany) => {
            return Ok(Some(Outcome::Host(format!(
                "more than {MAX_GROUPS} combinations of group key values"
            ))))
        }
    };
    let groups = keys.map_or(1, |k| k.values.len().max(1));
    // The kernel reads `rows` values of every loaded array: make sure they hold them.
    let complete = data.columns.iter().flatten().all(|c| c.rows() == data.rows)
        && keys.is_none_or(|k| k.codes.len() == data.rows)
        && joined.as_ref().is_none_or(|j| {
            let rows = build.map_or(0, BuildSide::rows);
            j.columns.iter().flatten().all(|c| c.rows() == rows)
        });
    if !complete {
        return Ok(Some(Outcome::Host(
            "a column loaded to the device does not hold every row".into(),
        )));
    }

    let started = Instant::now();
    let l = KernelLayout::of(program);
    let (mut scratch, scratch_key) = Scratch::take(&e, kind, program, groups, l.words())?;
    scratch.reset(program, groups);
    let s = &mut scratch;
    let frame = s.frame.as_mut_slice();
    for (k, c) in data.columns.iter().enumerate() {
        frame[k] = c.as_ref().map_or(0, |c| c.address());
    }
    frame[l.codes()] = keys.map_or(0, |k| k.codes.as_ptr() as u64);
    frame[l.bank(0)] = s.ints.as_ptr() as u64;
    frame[l.bank(1)] = s.wide.as_ptr() as u64;
    frame[l.bank(2)] = s.floats.as_ptr() as u64;
    frame[l.status()] = s.status.as_ptr() as u64;
    if let (Some(j), Some(first)) = (&joined, program.join.as_ref().map(|j| j.first_build)) {
        j.fill_frame(frame, l, first);
    }
    s.prefetch(&e);

    let f = compiled(program, kind, Strategy::for_groups(groups))?;
    let launched = Instant::now();
    let threads = data.rows.div_ceil(ROWS_PER_THREAD);
    let blocks = threads.div_ceil(BLOCK as usize).clamp(1, MAX_BLOCKS) as u32;
    // SAFETY: the frame (device memory) holds the addresses of device arrays with `rows`
    // values of each read column and of the code array (read only with keys; both checked
    // above), of the accumulators of `groups` groups (every code is below `groups`:
    // `encode` gives codes below its number of combinations), of the status word and, with
    // a join, of the build columns the program reads (each with the build side's rows,
    // checked above) and of the build side's table (as `BuildSide::table_parts` gives it:
    // the probe reads slots below its size word and finds build rows below the build
    // side's rows, as on the CPU), all alive until the call returns (it waits for the
    // kernel); the kernel reads rows below `rows` only.
    let called = unsafe { f.call(RawPtr::new(s.frame.as_ptr()), data.rows as u64, blocks) };
    let finished = Instant::now();
    let status = s.status.as_slice()[0];
    let host = s.to_host();
    scratch.give_back(scratch_key);
    called?;
    if status & STATUS_WIDE != 0 {
        return Ok(None);
    }
    if status & STATUS_UNSUPPORTED != 0 {
        return Ok(Some(Outcome::DataFusion));
    }
    if status & STATUS_OVERFLOW != 0 {
        return Err(Error::Overflow);
    }
    let columns = if program.keys.is_empty() {
        ungrouped_output(program, &host)?
    } else {
        let values = keys.map_or(&[][..], |k| &k.values[..]);
        let decode = |g: usize, k: usize| values.get(g).map(|v| v[k]);
        let present: Vec<usize> = (0..groups)
            .filter(|&g| host.i64[g * program.banks[0]] > 0)
            .collect();
        grouped_output(program, &host, &present, decode)?
    };
    let partitions = p.scan.partitions.len();
    note_run(
        partitions,
        [launched - started, finished - launched, finished.elapsed()],
    );
    Ok(Some(Outcome::Done(RecordBatch::try_new(
        p.schema.clone(),
        columns,
    )?)))
}
