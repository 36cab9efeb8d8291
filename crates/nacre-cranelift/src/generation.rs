//! Code memory in generations.
//!
//! A [`Generation`] owns one `JITModule`, whose code lives in one arena (a contiguous address
//! range reserved up front, so direct calls between functions of the generation always reach).
//! Each compilation goes into the current generation of the compiling worker; the executables
//! it produces hold the generation through an `Arc`. A worker retires its generation after
//! [`MODULES_PER_GENERATION`] compilations, when its arena fills, or after a failed
//! compilation; a retired generation's memory is unmapped when its last executable is dropped.

use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_jit::{ArenaMemoryProvider, JITBuilder, JITModule};
use nacre_backend::BackendError;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Compilations after which a worker starts a new generation.
pub(crate) const MODULES_PER_GENERATION: usize = 64;

/// Address space reserved by the arena of a normal generation (pages are committed on use).
pub(crate) const ARENA_SIZE: usize = 32 << 20;

/// Address space reserved for a generation that holds a single module too large for a normal
/// one. Direct calls reach ±2 GiB, so an arena must stay below that.
pub(crate) const LARGE_ARENA_SIZE: usize = 1 << 30;

/// Counters shared by a backend and all its generations.
#[derive(Debug, Default)]
pub(crate) struct GenerationStats {
    /// Generations created so far.
    pub created: AtomicUsize,
    /// Generations whose memory has not been freed yet.
    pub live: AtomicUsize,
}

/// One JIT module and its code memory.
pub(crate) struct Generation {
    /// The module; locked only by the worker compiling into it. `None` once freed.
    module: Mutex<Option<JITModule>>,
    stats: Arc<GenerationStats>,
}

impl Generation {
    /// A new generation whose arena reserves `arena_size` bytes of address space.
    pub(crate) fn new(
        isa: OwnedTargetIsa,
        arena_size: usize,
        stats: Arc<GenerationStats>,
    ) -> Result<Generation, BackendError> {
        let arena = ArenaMemoryProvider::new_with_size(arena_size).map_err(|e| {
            crate::target::codegen_error(format!(
                "reserving {arena_size} bytes of code memory: {e}"
            ))
        })?;
        let mut builder = JITBuilder::with_isa(isa, crate::runtime::libcall_names());
        crate::runtime::register_symbols(&mut builder);
        builder.memory_provider(Box::new(arena));
        let module = JITModule::new(builder);
        stats.created.fetch_add(1, Ordering::Relaxed);
        stats.live.fetch_add(1, Ordering::Relaxed);
        Ok(Generation {
            module: Mutex::new(Some(module)),
            stats,
        })
    }

    /// Runs `f` on the JIT module. Only the worker that owns the generation calls this, so the
    /// lock is never contended.
    pub(crate) fn with_module<R>(
        &self,
        f: impl FnOnce(&mut JITModule) -> Result<R, BackendError>,
    ) -> Result<R, BackendError> {
        let mut guard = self
            .module
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match guard.as_mut() {
            Some(module) => f(module),
            None => Err(crate::target::codegen_error("JIT module already freed")),
        }
    }
}

impl Drop for Generation {
    fn drop(&mut self) {
        let slot = self
            .module
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(module) = slot.take() {
            // SAFETY: the generation is dropped when its last `Arc` goes: no executable that
            // points into its code exists any more, and the worker compiling into it has let
            // it go, so no function of the module can be running or be called again.
            unsafe { module.free_memory() };
            self.stats.live.fetch_sub(1, Ordering::Relaxed);
        }
    }
}
