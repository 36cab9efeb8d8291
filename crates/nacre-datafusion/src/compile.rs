//! Compiled pipelines, cached per program shape for the whole process: a query planned again
//! (or another query with the same pipeline) reuses the code.

use crate::codegen;
use crate::error::Error;
use crate::pipeline::Program;
use nacre::{Engine, Options, Ptr, Unchecked, Val};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// A compiled pipeline: `(frame, start, end) -> row` (see [`crate::codegen`]).
pub type PipelineFn = Unchecked<(Ptr<u64>, Val<u64>, Val<u64>), Val<u64>>;

/// A compiled pipeline and how long its first tier took to compile.
#[derive(Clone)]
pub struct CompiledPipeline {
    /// The callable.
    pub function: Arc<PipelineFn>,
    /// Tracing and compiling its first tier.
    pub compile_time: Duration,
}

type Cache = Mutex<HashMap<(String, String), CompiledPipeline>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Cache::default)
}

/// The compiled code of `program` under `options`, compiled on first use.
pub fn compiled(program: &Arc<Program>, options: &Options) -> Result<CompiledPipeline, Error> {
    let key = (program.shape(), format!("{options:?}"));
    let mut cache = cache().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(c) = cache.get(&key) {
        return Ok(c.clone());
    }
    let engine = Engine::new(options.clone())?;
    let p = program.clone();
    let function =
        engine.compile_unchecked(move |frame: Ptr<u64>, start: Val<u64>, end: Val<u64>| {
            codegen::run(&p, frame, start, end)
        })?;
    let c = CompiledPipeline {
        compile_time: function.timings().total,
        function: Arc::new(function),
    };
    cache.insert(key, c.clone());
    Ok(c)
}

/// Forgets every compiled pipeline (benchmarks measure compile times with it).
pub fn clear_cache() {
    cache().lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// The pipelines compiled so far (benchmarks read their compile times and wait for their
/// second tiers).
pub fn cached() -> Vec<CompiledPipeline> {
    let cache = cache().lock().unwrap_or_else(|e| e.into_inner());
    cache.values().cloned().collect()
}
