//! Sampling: warm-up, an adaptive batch size and sample count, and the median.
//!
//! A benchmark is first warmed up (its routine run in doubling rounds until the warm-up time
//! has passed), which also estimates the time of one call. A sample then times a batch of `K`
//! calls with [`Instant`] and divides by `K`, where `K` makes a sample last at least
//! [`Config::min_sample`] (so that nanosecond routines are not lost in the clock's
//! resolution). The number of samples aims at [`Config::target`] of measuring, within
//! [`Config::min_samples`]..=[`Config::max_samples`]. The reported value is the median of the
//! samples. Calls that synchronise with a GPU are timed one by one instead ([`measure_calls`]), or report their
//! own device and host times ([`measure_device_calls`]).

use nacre_corpus::bench::Batch;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// How long and how often to sample.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Time spent running the routine before sampling.
    pub warmup: Duration,
    /// Time the samples of one benchmark should take together.
    pub target: Duration,
    /// The shortest a sample may be; faster routines are batched.
    pub min_sample: Duration,
    /// The fewest samples taken, however slow the routine.
    pub min_samples: usize,
    /// The most samples taken, however fast the routine.
    pub max_samples: usize,
}

impl Config {
    /// The full run: about half a second of samples per benchmark.
    pub const FULL: Config = Config {
        warmup: Duration::from_millis(100),
        target: Duration::from_millis(500),
        min_sample: Duration::from_micros(200),
        min_samples: 10,
        max_samples: 2000,
    };

    /// `--quick`: a few tens of milliseconds per benchmark.
    pub const QUICK: Config = Config {
        warmup: Duration::from_millis(10),
        target: Duration::from_millis(30),
        min_sample: Duration::from_micros(50),
        min_samples: 5,
        max_samples: 300,
    };
}

/// How to sample a routine that is timed one call at a time ([`measure_calls`]): calls that
/// synchronise with a device, where each call's own time matters and a batch would hide it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CallConfig {
    /// Time spent calling the routine before sampling (at least [`CallConfig::MIN_WARMUP_CALLS`]
    /// calls).
    pub warmup: Duration,
    /// Time the timed calls of one benchmark should take together.
    pub target: Duration,
    /// The fewest calls timed, however slow the routine.
    pub min_calls: usize,
    /// The most calls timed, however fast the routine.
    pub max_calls: usize,
}

impl CallConfig {
    /// The fewest warm-up calls.
    pub const MIN_WARMUP_CALLS: usize = 3;

    /// The full run: about half a second of timed calls, at least 50.
    pub const FULL: CallConfig = CallConfig {
        warmup: Duration::from_millis(100),
        target: Duration::from_millis(500),
        min_calls: 50,
        max_calls: 5000,
    };

    /// `--quick`: a few tens of milliseconds, still at least 50 calls.
    pub const QUICK: CallConfig = CallConfig {
        warmup: Duration::from_millis(10),
        target: Duration::from_millis(30),
        min_calls: 50,
        max_calls: 1000,
    };
}

/// Warms `routine` up (at least [`CallConfig::MIN_WARMUP_CALLS`] calls and
/// [`CallConfig::warmup`]) and returns how many calls to time, from the warm-up's host-clock
/// estimate, within [`CallConfig::min_calls`]..=[`CallConfig::max_calls`].
fn warm_up_calls<T, E>(
    cfg: &CallConfig,
    routine: &mut impl FnMut() -> Result<T, E>,
) -> Result<usize, E> {
    let warmup_start = Instant::now();
    let mut warmup_calls = 0usize;
    while warmup_calls < CallConfig::MIN_WARMUP_CALLS || warmup_start.elapsed() < cfg.warmup {
        routine()?;
        warmup_calls += 1;
    }
    let per_call_ns = warmup_start.elapsed().as_nanos() as f64 / warmup_calls as f64;
    Ok(
        ((cfg.target.as_nanos() as f64 / per_call_ns.max(1.0)).round() as usize)
            .clamp(cfg.min_calls, cfg.max_calls.max(cfg.min_calls)),
    )
}

/// Measures `routine` one call at a time: warm-up, then `n` calls each timed with [`Instant`]
/// (`n` from the warm-up's estimate, within [`CallConfig::min_calls`]..=[`CallConfig::max_calls`]);
/// the median of the calls (`batch` 1). The first error of the routine ends the measurement
/// and is returned.
pub fn measure_calls<E>(
    cfg: &CallConfig,
    mut routine: impl FnMut() -> Result<(), E>,
) -> Result<Stats, E> {
    let calls = warm_up_calls(cfg, &mut routine)?;
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        routine()?;
        samples.push(start.elapsed().as_nanos() as f64);
    }
    Ok(Stats::from_samples(samples, 1))
}

/// The two times of one call measured by [`measure_device_calls`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CallTimes {
    /// The time the device measured (CUDA events around the call).
    pub device: Duration,
    /// The host clock's time of the same call.
    pub host: Duration,
}

/// What [`measure_device_calls`] measured: the same calls on two clocks.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct DeviceStats {
    /// The device's times of the calls.
    pub device: Stats,
    /// The host clock's times of the same calls.
    pub host: Stats,
}

/// Measures `routine` one call at a time like [`measure_calls`], where each call reports its
/// own times ([`CallTimes`]: the device's and the host's) instead of being timed from outside:
/// warm-up, then `n` calls (`n` from the warm-up's host-clock estimate, within
/// [`CallConfig::min_calls`]..=[`CallConfig::max_calls`]); the medians of each clock's times
/// (`batch` 1). The first error of the routine ends the measurement and is returned.
pub fn measure_device_calls<E>(
    cfg: &CallConfig,
    mut routine: impl FnMut() -> Result<CallTimes, E>,
) -> Result<DeviceStats, E> {
    let calls = warm_up_calls(cfg, &mut routine)?;
    let mut device = Vec::with_capacity(calls);
    let mut host = Vec::with_capacity(calls);
    for _ in 0..calls {
        let times = routine()?;
        device.push(times.device.as_nanos() as f64);
        host.push(times.host.as_nanos() as f64);
    }
    Ok(DeviceStats {
        device: Stats::from_samples(device, 1),
        host: Stats::from_samples(host, 1),
    })
}

/// The most inputs prepared for one batch of a batched benchmark (they are all alive at once).
const MAX_BATCH_INPUTS: usize = 1024;

/// The result of measuring one benchmark.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Stats {
    /// Median time of one call, in nanoseconds.
    pub median_ns: f64,
    /// Median absolute deviation of the samples from the median, in nanoseconds.
    pub mad_ns: f64,
    /// The fastest sample, in nanoseconds per call.
    pub min_ns: f64,
    /// Number of samples.
    pub samples: usize,
    /// Calls per sample.
    pub batch: usize,
}

impl Stats {
    fn from_samples(mut per_call_ns: Vec<f64>, batch: usize) -> Stats {
        per_call_ns.sort_by(f64::total_cmp);
        let median_ns = median(&per_call_ns);
        let mut deviations: Vec<f64> = per_call_ns.iter().map(|x| (x - median_ns).abs()).collect();
        deviations.sort_by(f64::total_cmp);
        Stats {
            median_ns,
            mad_ns: median(&deviations),
            min_ns: per_call_ns.first().copied().unwrap_or(f64::NAN),
            samples: per_call_ns.len(),
            batch,
        }
    }
}

/// The median of sorted values (NaN for none).
fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The batch size and sample count for a routine that takes `per_call_ns`, at most
/// `max_batch` calls per sample.
fn plan(cfg: &Config, per_call_ns: f64, max_batch: usize) -> (usize, usize) {
    let per_call_ns = per_call_ns.max(0.1);
    let batch =
        ((cfg.min_sample.as_nanos() as f64 / per_call_ns).ceil() as usize).clamp(1, max_batch);
    let sample_ns = per_call_ns * batch as f64;
    let samples = ((cfg.target.as_nanos() as f64 / sample_ns).round() as usize)
        .clamp(cfg.min_samples, cfg.max_samples);
    (batch, samples)
}

/// Measures `routine`, called repeatedly; outputs go through [`black_box`] and are dropped as
/// they come (inside the timing).
pub fn measure<O>(cfg: &Config, mut routine: impl FnMut() -> O) -> Stats {
    let mut run = |calls: usize| -> Duration {
        let start = Instant::now();
        for _ in 0..calls {
            black_box(routine());
        }
        start.elapsed()
    };

    let warmup_start = Instant::now();
    let mut round = 1usize;
    let mut per_call_ns;
    loop {
        per_call_ns = run(round).as_nanos() as f64 / round as f64;
        if warmup_start.elapsed() >= cfg.warmup {
            break;
        }
        round = round.saturating_mul(2);
    }

    let (batch, samples) = plan(cfg, per_call_ns, usize::MAX);
    let per_call: Vec<f64> = (0..samples)
        .map(|_| run(batch).as_nanos() as f64 / batch as f64)
        .collect();
    Stats::from_samples(per_call, batch)
}

/// [`measure`] of a routine that can fail: every sample is still taken, and the first error,
/// if any, is returned instead of the figures.
pub fn measure_fallible<E>(
    cfg: &Config,
    mut routine: impl FnMut() -> Result<(), E>,
) -> Result<Stats, E> {
    let mut failure: Option<E> = None;
    let stats = measure(cfg, || {
        if let Err(e) = routine() {
            failure.get_or_insert(e);
        }
    });
    failure.map_or(Ok(stats), Err)
}

/// Measures `routine` on inputs made by `setup`. A sample prepares its batch of inputs, times
/// the routine on each (keeping the outputs), then drops the outputs: neither `setup` nor the
/// drops are timed. [`Batch::PerIteration`] makes every sample a single call.
pub fn measure_batched<I, O>(
    cfg: &Config,
    batch_kind: Batch,
    mut setup: impl FnMut() -> I,
    mut routine: impl FnMut(I) -> O,
) -> Stats {
    let max_batch = match batch_kind {
        Batch::Small => MAX_BATCH_INPUTS,
        Batch::PerIteration => 1,
    };
    let mut run = |calls: usize| -> Duration {
        let inputs: Vec<I> = (0..calls).map(|_| setup()).collect();
        let mut outputs: Vec<O> = Vec::with_capacity(calls);
        let start = Instant::now();
        for input in inputs {
            outputs.push(routine(input));
        }
        let elapsed = start.elapsed();
        drop(black_box(outputs));
        elapsed
    };

    let warmup_start = Instant::now();
    let mut round = 1usize;
    let mut per_call_ns;
    loop {
        per_call_ns = run(round).as_nanos() as f64 / round as f64;
        if warmup_start.elapsed() >= cfg.warmup {
            break;
        }
        round = (round * 2).min(max_batch);
    }

    let (batch, samples) = plan(cfg, per_call_ns, max_batch);
    let per_call: Vec<f64> = (0..samples)
        .map(|_| run(batch).as_nanos() as f64 / batch as f64)
        .collect();
    Stats::from_samples(per_call, batch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[1.0, 2.0, 9.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0, 4.0, 9.0]), 3.0);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn stats_report_median_and_spread() {
        let s = Stats::from_samples(vec![5.0, 1.0, 3.0, 100.0, 4.0], 7);
        assert_eq!(s.median_ns, 4.0);
        assert_eq!(s.min_ns, 1.0);
        assert_eq!(s.mad_ns, 1.0);
        assert_eq!((s.samples, s.batch), (5, 7));
    }

    #[test]
    fn plan_batches_fast_routines_and_bounds_samples() {
        let cfg = Config::FULL;
        let (batch, samples) = plan(&cfg, 2.0, usize::MAX);
        assert_eq!(batch, 100_000);
        assert_eq!(samples, cfg.max_samples.min(2500));
        let (batch, samples) = plan(&cfg, 50e6, usize::MAX);
        assert_eq!((batch, samples), (1, cfg.min_samples));
        assert_eq!(plan(&cfg, 2.0, 1).0, 1);
    }

    #[test]
    fn measure_fallible_returns_the_first_error() {
        let cfg = Config {
            warmup: Duration::from_millis(1),
            target: Duration::from_millis(2),
            ..Config::QUICK
        };
        let mut calls = 0u32;
        let r = measure_fallible(&cfg, || {
            calls += 1;
            if calls == 3 || calls == 5 {
                Err(calls)
            } else {
                Ok(())
            }
        });
        assert_eq!(r.unwrap_err(), 3);
        assert!(calls > 5, "sampling went on after the error");
        let s = measure_fallible(&cfg, || Ok::<(), u32>(())).unwrap();
        assert!(s.samples >= cfg.min_samples);
    }

    #[test]
    fn measure_calls_times_each_call_and_stops_at_an_error() {
        let cfg = CallConfig {
            warmup: Duration::from_millis(1),
            target: Duration::from_millis(2),
            min_calls: 50,
            max_calls: 60,
        };
        let mut calls = 0usize;
        let s = measure_calls(&cfg, || {
            calls += 1;
            std::thread::sleep(Duration::from_micros(20));
            Ok::<(), String>(())
        })
        .unwrap();
        assert_eq!(s.batch, 1);
        assert!((50..=60).contains(&s.samples), "{s:?}");
        assert!(s.median_ns >= 20_000.0, "{s:?}");
        assert!(calls >= s.samples + CallConfig::MIN_WARMUP_CALLS);
        let mut left = 10;
        let e = measure_calls(&cfg, || {
            left -= 1;
            if left == 0 {
                Err("stopped")
            } else {
                Ok(())
            }
        });
        assert_eq!(e.unwrap_err(), "stopped");
    }

    #[test]
    fn measure_device_calls_keeps_each_clock_apart() {
        let cfg = CallConfig {
            warmup: Duration::from_millis(1),
            target: Duration::from_millis(1),
            min_calls: 50,
            max_calls: 60,
        };
        // Device times cycle 10, 20, 30 µs; host times are always 100 µs more.
        let mut calls = 0u64;
        let s = measure_device_calls(&cfg, || {
            calls += 1;
            let device = Duration::from_micros(10 * (1 + calls % 3));
            Ok::<_, String>(CallTimes {
                device,
                host: device + Duration::from_micros(100),
            })
        })
        .unwrap();
        assert!((50..=60).contains(&s.device.samples), "{s:?}");
        assert_eq!(s.device.samples, s.host.samples);
        assert_eq!(s.device.batch, 1);
        assert_eq!(s.device.median_ns, 20_000.0);
        assert_eq!(s.device.min_ns, 10_000.0);
        assert_eq!(s.host.median_ns, 120_000.0);
        assert_eq!(s.host.min_ns, 110_000.0);
        assert!(calls as usize >= s.device.samples + CallConfig::MIN_WARMUP_CALLS);
        let mut left = 5;
        let e = measure_device_calls(&cfg, || {
            left -= 1;
            if left == 0 {
                Err("stopped")
            } else {
                Ok(CallTimes {
                    device: Duration::ZERO,
                    host: Duration::ZERO,
                })
            }
        });
        assert_eq!(e.unwrap_err(), "stopped");
    }

    #[test]
    fn measure_times_a_routine() {
        let cfg = Config {
            warmup: Duration::from_millis(1),
            target: Duration::from_millis(5),
            min_sample: Duration::from_micros(100),
            min_samples: 3,
            max_samples: 50,
        };
        let s = measure(&cfg, || std::thread::sleep(Duration::from_micros(300)));
        assert!(s.median_ns >= 300_000.0, "{s:?}");
        assert!(s.samples >= 3);
        let s = measure_batched(&cfg, Batch::PerIteration, || 3u64, |x| x * 2);
        assert_eq!(s.batch, 1);
    }
}
