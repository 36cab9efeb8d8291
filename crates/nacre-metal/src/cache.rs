//! The caching policy of compiled kernels: compile once per process.
//!
//! A [`KernelCache`] maps a kernel's MSL source (the whole text, so two kernels that print
//! the same share one entry and a changed kernel never hits a stale one) to what compiling it
//! produced: on macOS the library's compute pipeline state. Every module that contains the
//! same kernel, every engine and every thread gets the same compiled kernel; the first caller
//! compiles while later callers of the same source wait for it, and callers of other sources
//! compile in parallel. A failed compilation is not cached: it is reported to its caller and
//! the next caller tries again.
//!
//! The Metal device and command queue are one per process (see the runtime); they are not
//! part of this cache because they do not depend on a kernel.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// One source's entry: empty until a compilation succeeded.
type Slot<P> = Arc<Mutex<Option<Arc<P>>>>;

/// Compiled kernels by source, each compiled at most once at a time and kept for the
/// process's lifetime.
pub struct KernelCache<P> {
    entries: Mutex<HashMap<String, Slot<P>>>,
}

impl<P> Default for KernelCache<P> {
    fn default() -> Self {
        KernelCache {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

/// Locks a mutex; a panic while it was held cannot leave an entry half-written (entries are
/// written by a single assignment), so a poisoned lock is still consistent.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<P> KernelCache<P> {
    /// An empty cache.
    pub fn new() -> KernelCache<P> {
        KernelCache::default()
    }

    /// The compiled kernel for `source`, compiling it with `compile` if no earlier call
    /// succeeded.
    pub fn get_or_compile<E>(
        &self,
        source: &str,
        compile: impl FnOnce(&str) -> Result<P, E>,
    ) -> Result<Arc<P>, E> {
        let slot = lock(&self.entries)
            .entry(source.to_string())
            .or_default()
            .clone();
        let mut compiled = lock(&slot);
        if let Some(p) = compiled.as_ref() {
            return Ok(p.clone());
        }
        let p = Arc::new(compile(source)?);
        *compiled = Some(p.clone());
        Ok(p)
    }

    /// The number of sources compiled successfully.
    pub fn len(&self) -> usize {
        lock(&self.entries)
            .values()
            .filter(|slot| lock(slot).is_some())
            .count()
    }

    /// True when nothing was compiled yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Barrier;

    #[test]
    fn each_source_compiles_once_across_threads() {
        let cache = Arc::new(KernelCache::<String>::new());
        let compiles = Arc::new(AtomicUsize::new(0));
        let start = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let (cache, compiles, start) = (cache.clone(), compiles.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let source = if t % 2 == 0 { "kernel a" } else { "kernel b" };
                    cache
                        .get_or_compile(source, |s| {
                            compiles.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            Ok::<_, ()>(s.to_uppercase())
                        })
                        .unwrap()
                })
            })
            .collect();
        let results: Vec<Arc<String>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(compiles.load(Ordering::SeqCst), 2);
        assert_eq!(*results[0], "KERNEL A");
        assert!(Arc::ptr_eq(&results[0], &results[2]));
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn failures_are_not_cached() {
        let cache = KernelCache::<u32>::new();
        let err = cache.get_or_compile("bad", |_| Err::<u32, _>("rejected"));
        assert_eq!(err.unwrap_err(), "rejected");
        assert!(cache.is_empty());
        let ok = cache.get_or_compile("bad", |_| Ok::<_, &str>(7)).unwrap();
        assert_eq!(*ok, 7);
        let again = cache
            .get_or_compile("bad", |_| -> Result<u32, &str> { Err("not called") })
            .unwrap();
        assert!(Arc::ptr_eq(&ok, &again));
    }
}
