//! Counters of what the runtime did: compiles, cache hits, launches and graphs,
//! synchronisations and page migrations.
//!
//! Every event is counted twice: process-wide ([`stats`]) and for the calling thread
//! ([`thread_stats`]). Compiles, launches and migrations happen on the thread that called the
//! compiled function or touched the array, so a test or benchmark that takes
//! [`thread_stats`] before and after some work and subtracts ([`CudaStats::since`]) gets
//! exact figures even while other threads use the GPU.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of the runtime's counters.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct CudaStats {
    /// Kernels compiled by NVRTC.
    pub compiles: u64,
    /// Kernels found already loaded in the process's kernel cache.
    pub cache_hits: u64,
    /// Kernels loaded from the on-disk cache instead of being compiled.
    pub disk_cache_hits: u64,
    /// Failures to read or write the on-disk cache (compilation went on without it; see
    /// [`crate::runtime::take_last_error`] right after the compile for the cause).
    pub disk_cache_errors: u64,
    /// Total time spent in NVRTC, in nanoseconds.
    pub compile_nanos: u64,
    /// Kernel launches queued (directly or as nodes of a graph launch).
    pub launches: u64,
    /// CUDA graphs built and instantiated from a call's launches.
    pub graph_builds: u64,
    /// CUDA graph launches (each runs a whole call's kernels).
    pub graph_launches: u64,
    /// Stream synchronisations that waited for launches (at the end of a call, or after each
    /// launch when the host code reads memory between launches).
    pub syncs: u64,
    /// Prefetches of an array to the device.
    pub prefetches_to_device: u64,
    /// Prefetches of an array back to the host.
    pub prefetches_to_host: u64,
    /// Bytes prefetched to the device.
    pub bytes_to_device: u64,
    /// Bytes prefetched to the host.
    pub bytes_to_host: u64,
}

impl CudaStats {
    /// The counts from `earlier` to `self` (each counter's difference).
    pub fn since(&self, earlier: &CudaStats) -> CudaStats {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        CudaStats {
            compiles: d(self.compiles, earlier.compiles),
            cache_hits: d(self.cache_hits, earlier.cache_hits),
            disk_cache_hits: d(self.disk_cache_hits, earlier.disk_cache_hits),
            disk_cache_errors: d(self.disk_cache_errors, earlier.disk_cache_errors),
            compile_nanos: d(self.compile_nanos, earlier.compile_nanos),
            launches: d(self.launches, earlier.launches),
            graph_builds: d(self.graph_builds, earlier.graph_builds),
            graph_launches: d(self.graph_launches, earlier.graph_launches),
            syncs: d(self.syncs, earlier.syncs),
            prefetches_to_device: d(self.prefetches_to_device, earlier.prefetches_to_device),
            prefetches_to_host: d(self.prefetches_to_host, earlier.prefetches_to_host),
            bytes_to_device: d(self.bytes_to_device, earlier.bytes_to_device),
            bytes_to_host: d(self.bytes_to_host, earlier.bytes_to_host),
        }
    }

    /// All prefetches, both ways.
    pub fn prefetches(&self) -> u64 {
        self.prefetches_to_device + self.prefetches_to_host
    }
}

/// One counter.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Counter {
    Compiles,
    CacheHits,
    DiskCacheHits,
    DiskCacheErrors,
    CompileNanos,
    Launches,
    GraphBuilds,
    GraphLaunches,
    Syncs,
    PrefetchesToDevice,
    PrefetchesToHost,
    BytesToDevice,
    BytesToHost,
}

const COUNTERS: usize = 13;

static GLOBAL: [AtomicU64; COUNTERS] = [const { AtomicU64::new(0) }; COUNTERS];

thread_local! {
    static LOCAL: [Cell<u64>; COUNTERS] = const { [const { Cell::new(0) }; COUNTERS] };
}

/// Adds `n` to a counter, process-wide and for this thread.
pub(crate) fn add(counter: Counter, n: u64) {
    let i = counter as usize;
    GLOBAL[i].fetch_add(n, Ordering::Relaxed);
    let _ = LOCAL.try_with(|l| l[i].set(l[i].get().wrapping_add(n)));
}

/// Builds a snapshot from a reader of counter values.
fn snapshot(get: impl Fn(Counter) -> u64) -> CudaStats {
    CudaStats {
        compiles: get(Counter::Compiles),
        cache_hits: get(Counter::CacheHits),
        disk_cache_hits: get(Counter::DiskCacheHits),
        disk_cache_errors: get(Counter::DiskCacheErrors),
        compile_nanos: get(Counter::CompileNanos),
        launches: get(Counter::Launches),
        graph_builds: get(Counter::GraphBuilds),
        graph_launches: get(Counter::GraphLaunches),
        syncs: get(Counter::Syncs),
        prefetches_to_device: get(Counter::PrefetchesToDevice),
        prefetches_to_host: get(Counter::PrefetchesToHost),
        bytes_to_device: get(Counter::BytesToDevice),
        bytes_to_host: get(Counter::BytesToHost),
    }
}

/// The process-wide counters.
pub fn stats() -> CudaStats {
    snapshot(|c| GLOBAL[c as usize].load(Ordering::Relaxed))
}

/// The calling thread's counters.
pub fn thread_stats() -> CudaStats {
    snapshot(|c| LOCAL.try_with(|l| l[c as usize].get()).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_per_thread_and_global() {
        let g0 = stats();
        let t0 = thread_stats();
        add(Counter::Launches, 3);
        add(Counter::BytesToDevice, 4096);
        let t = thread_stats().since(&t0);
        assert_eq!(t.launches, 3);
        assert_eq!(t.bytes_to_device, 4096);
        assert_eq!(t.compiles, 0);
        // Other tests may count concurrently: the global figures grow by at least as much.
        let g = stats().since(&g0);
        assert!(g.launches >= 3 && g.bytes_to_device >= 4096);
        let other = std::thread::spawn(thread_stats).join().unwrap();
        assert_eq!(other, CudaStats::default());
    }

    #[test]
    fn since_saturates() {
        let a = CudaStats {
            launches: 1,
            prefetches_to_host: 2,
            prefetches_to_device: 1,
            ..CudaStats::default()
        };
        assert_eq!(CudaStats::default().since(&a), CudaStats::default());
        assert_eq!(a.prefetches(), 3);
    }

    #[test]
    fn counter_indices_cover_the_table() {
        assert_eq!(Counter::BytesToHost as usize, COUNTERS - 1);
    }
}
