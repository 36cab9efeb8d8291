//! The report of `nacre bench gpu --backend cuda`: Nacre's CUDA figures beside the CPU's,
//! the peers' figures with the ratios `gpu_cuda_X / peer_F_X`, the runtime's counters over the
//! timed calls, the targets with PASS/MISS, and the JSON document.
//!
//! Each `gpu_P_X_unchecked` row (the kernel compiled with `Engine::compile_unchecked`) is
//! printed beside the CPU's and the peers' like `gpu_P_X`, and the pair's checked/unchecked
//! ratios under the tables; targets judge the checked rows.
//!
//! Two clocks: Nacre's kernel benchmarks and the peers' kernels are timed with CUDA events
//! (the rows, `results` in the JSON), and the same calls on the host clock as well (Nacre's in
//! [`Outcome::host`], `host_results` in the JSON; the peers' in `peer_host_results`). Targets
//! compare event time with event time; the host-clock ratio is printed beside each.

use super::super::measure::Stats;
use super::super::report::{self, format_ns, Row};
use super::cuda::{Outcome, BLOCKSUM_SIZES, COMPILED_KERNELS, LOGISTIC};
use super::{checked_pairs, GpuArgs, UNCHECKED};
use serde_json::{json, Map, Value};

/// The peers' frameworks, in the report's column order, with their column titles.
pub const PEERS: [(&str, &str); 4] = [
    ("torch", "PyTorch eager"),
    ("cupy", "CuPy, Nacre's CUDA"),
    ("cudac", "CuPy, hand-written"),
    ("triton", "Triton"),
];

/// The copy ceiling of saxpy and vecadd over 16M floats on an H200 (three arrays of 64 MiB
/// at the measured 4.4 TB/s): the floor of their targets.
pub const COPY_CEILING_NS: f64 = 45_600.0;
/// The launch-latency target.
pub const LATENCY_LIMIT_NS: f64 = 7_000.0;
/// The cold-compile target per kernel.
pub const COMPILE_LIMIT_NS: f64 = 20e6;

fn lookup<'a>(rows: &'a [Row], name: &str) -> Option<&'a Stats> {
    rows.iter().find(|r| r.name == name).map(|r| &r.stats)
}

fn median(rows: &[Row], name: &str) -> Option<f64> {
    lookup(rows, name).map(|s| s.median_ns)
}

/// Nacre's rows and the peers' rows together.
fn all_rows(o: &Outcome) -> Vec<Row> {
    let mut rows = o.rows.clone();
    if let Some(p) = &o.peers {
        rows.extend(p.rows.iter().cloned());
    }
    rows
}

/// What a target compares.
#[derive(Clone, Debug, PartialEq)]
pub enum Limit {
    /// At most this many nanoseconds.
    Time(f64),
    /// At most a peer's median (or `floor`, if that is larger).
    Peer { name: String, floor: Option<f64> },
    /// No compile while the CUDA benchmarks were timed.
    NoRecompile,
}

/// A performance target of the CUDA suite.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// The benchmark it is about (`relaunch` for [`Limit::NoRecompile`]).
    pub name: String,
    /// What it must stay under.
    pub limit: Limit,
}

/// A target's measurement and verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// What is compared, in words.
    pub what: String,
    /// The measured value and the limit, in words.
    pub measured: String,
    /// PASS, MISS or `not run`.
    pub verdict: &'static str,
}

/// The targets: saxpy and vecadd at 16M within PyTorch (floored at the copy ceiling); the
/// block sum and the logistic maps within CuPy running the same algorithms written by hand;
/// the row softmax, GELU and the `f16` saxpy within PyTorch's; the 2D stencil within the same algorithm written
/// by hand under CuPy;
/// the tiny kernel's call within 8 µs; each cold compile within 20 ms; no recompile on
/// relaunch.
pub fn targets() -> Vec<Target> {
    let n16 = 1usize << 24;
    let mut t = Vec::new();
    for k in ["saxpy", "vecadd"] {
        t.push(Target {
            name: format!("gpu_cuda_{k}_{n16}"),
            limit: Limit::Peer {
                name: format!("peer_torch_{k}_{n16}"),
                floor: Some(COPY_CEILING_NS),
            },
        });
    }
    for n in BLOCKSUM_SIZES {
        t.push(Target {
            name: format!("gpu_cuda_blocksum_{n}"),
            limit: Limit::Peer {
                name: format!("peer_cudac_blocksum_{n}"),
                floor: None,
            },
        });
    }
    for (n, i) in LOGISTIC {
        t.push(Target {
            name: format!("gpu_cuda_logistic_{n}_{i}"),
            limit: Limit::Peer {
                name: format!("peer_cudac_logistic_{n}_{i}"),
                floor: None,
            },
        });
    }
    t.push(Target {
        name: format!("gpu_cuda_{}", super::language::stencil_name()),
        limit: Limit::Peer {
            name: format!("peer_cudac_{}", super::language::stencil_name()),
            floor: None,
        },
    });
    for k in [
        super::language::softmax_name(),
        super::language::gelu_name(),
        super::language::saxpy_f16_name(),
    ] {
        t.push(Target {
            name: format!("gpu_cuda_{k}"),
            limit: Limit::Peer {
                name: format!("peer_torch_{k}"),
                floor: None,
            },
        });
    }
    t.push(Target {
        name: format!("gpu_cuda_{}", super::atomics::histogram_name()),
        limit: Limit::Peer {
            name: format!("peer_torch_bincount_{}", super::atomics::HISTOGRAM_SIZE),
            floor: None,
        },
    });
    for (k, peer) in [
        (super::warps::blocksum_name(), "sum"),
        (super::warps::compact_name(), "compact"),
    ] {
        t.push(Target {
            name: format!("gpu_cuda_{k}"),
            limit: Limit::Peer {
                name: format!("peer_torch_{peer}_{}", super::warps::SIZE),
                floor: None,
            },
        });
    }
    t.push(Target {
        name: "gpu_cuda_launch_latency".into(),
        limit: Limit::Time(LATENCY_LIMIT_NS),
    });
    t.push(Target {
        name: "gpu_cuda_launch100_latency".into(),
        limit: Limit::Peer {
            name: "peer_torch_graph_launch100_latency".into(),
            floor: None,
        },
    });
    for k in COMPILED_KERNELS {
        t.push(Target {
            name: format!("gpu_cuda_compile_{k}"),
            limit: Limit::Time(COMPILE_LIMIT_NS),
        });
    }
    t.push(Target {
        name: "relaunch".into(),
        limit: Limit::NoRecompile,
    });
    t
}

/// Judges a target on the run's rows (Nacre's and the peers') and counters.
pub fn judge(target: &Target, rows: &[Row], o: &Outcome) -> Verdict {
    let verdict = |pass: Option<bool>| match pass {
        Some(true) => "PASS",
        Some(false) => "MISS",
        None => "not run",
    };
    let got = median(rows, &target.name);
    match &target.limit {
        Limit::Time(limit) => Verdict {
            what: format!("{} ≤ {}", target.name, format_ns(*limit)),
            measured: got.map(format_ns).unwrap_or_default(),
            verdict: verdict(got.map(|g| g <= *limit)),
        },
        Limit::Peer { name, floor } => {
            let peer = median(rows, name);
            let limit = peer.map(|p| floor.map_or(p, |f| p.max(f)));
            let what = match floor {
                Some(f) => format!("{} ≤ max({name}, {})", target.name, format_ns(*f)),
                None => format!("{} ≤ {name}", target.name),
            };
            let host_limit = o
                .peers
                .as_ref()
                .and_then(|p| p.host.get(name))
                .map(|h| floor.map_or(*h, |f| h.max(f)));
            let host_ratio = o
                .host
                .get(&target.name)
                .zip(host_limit)
                .map(|(g, l)| format!(" (host clock: {:.3})", g / l))
                .unwrap_or_default();
            let measured = match (got, limit) {
                (Some(g), Some(l)) => format!(
                    "{} / {} = {:.3}{host_ratio}",
                    format_ns(g),
                    format_ns(l),
                    g / l,
                ),
                (Some(g), None) => format!("{} (no peer)", format_ns(g)),
                _ => String::new(),
            };
            Verdict {
                what,
                measured,
                verdict: verdict(got.zip(limit).map(|(g, l)| g <= l)),
            }
        }
        Limit::NoRecompile => {
            let (calls, compiles) = o
                .steady
                .values()
                .fold((0, 0), |(c, k), s| (c + s.calls, k + s.stats.compiles));
            Verdict {
                what: "a relaunch never recompiles (compiles during the timed CUDA calls = 0)"
                    .into(),
                measured: if o.steady.is_empty() {
                    String::new()
                } else {
                    format!("{compiles} in {calls} calls")
                },
                verdict: verdict((!o.steady.is_empty()).then_some(compiles == 0)),
            }
        }
    }
}

/// A ratio with three significant digits (`0.00612×`, `1.17×`, `2741×`).
pub fn ratio(r: f64) -> String {
    if !r.is_finite() {
        return "n/a".into();
    }
    let digits = if r >= 100.0 {
        0
    } else if r >= 1.0 {
        2
    } else {
        (2 - r.log10().floor() as i32).clamp(2, 6) as usize
    };
    format!("{r:.digits$}×")
}

/// `gpu_cuda_X`'s suffix `X`, for the kernel and launch rows.
fn suffix(name: &str) -> Option<&str> {
    name.strip_prefix("gpu_cuda_")
}

fn spread(st: &Stats) -> String {
    if st.mad_ns.is_finite() {
        format!("{:.1}%", 100.0 * st.mad_ns / st.median_ns)
    } else {
        String::new()
    }
}

/// A cell `median ratio×` where ratio = ours / theirs.
fn cell(ours: f64, theirs: Option<f64>) -> String {
    match theirs {
        Some(t) => format!("{} {:>8}", format_ns(t), ratio(ours / t)),
        None => String::new(),
    }
}

/// Prints the tables, the counters, the notes and the targets to standard output.
pub fn print(o: &Outcome) {
    let rows = all_rows(o);
    println!(
        "\nnacre bench gpu --backend cuda: {} ({} multiprocessors), blocks of 256",
        o.device["name"].as_str().unwrap_or("?"),
        o.device["multiprocessors"]
    );
    let with_cpu = o.rows.iter().any(|r| r.name.starts_with("gpu_cpu_"));
    println!(
        "\nmedian: CUDA events around the call (launch_latency and compile_*: host clock); \
         host clock: the same calls from call to return{}",
        if with_cpu {
            "; the CPU: host clock; cpu/cuda: by host clocks"
        } else {
            ""
        }
    );
    if with_cpu {
        println!(
            "{:<42} {:>11} {:>7} {:>11}   {:<42} {:>11} {:>7} {:>9}",
            "benchmark",
            "median",
            "±MAD",
            "host clock",
            "the CPU beside it",
            "median",
            "±MAD",
            "cpu/cuda"
        );
        println!("{}", "-".repeat(42 + 12 + 8 + 12 + 3 + 42 + 12 + 8 + 10));
    } else {
        println!(
            "{:<42} {:>11} {:>7} {:>11}",
            "benchmark", "median", "±MAD", "host clock"
        );
        println!("{}", "-".repeat(42 + 12 + 8 + 12));
    }
    for row in o.rows.iter().filter(|r| r.name.starts_with("gpu_cuda_")) {
        let host = o.host.get(&row.name).copied();
        let host_cell = host.map(format_ns).unwrap_or_default();
        if !with_cpu {
            println!(
                "{:<42} {:>11} {:>7} {:>11}",
                row.name,
                format_ns(row.stats.median_ns),
                spread(&row.stats),
                host_cell
            );
            continue;
        }
        let rest = suffix(&row.name).unwrap_or_default();
        let cpu_name = format!("gpu_cpu_{rest}");
        let cuda_host = host.unwrap_or(row.stats.median_ns);
        let (cpu, cpu_median, cpu_spread, ratio) = match lookup(&rows, &cpu_name) {
            Some(c) => (
                cpu_name,
                format_ns(c.median_ns),
                spread(c),
                ratio(c.median_ns / cuda_host),
            ),
            None => Default::default(),
        };
        println!(
            "{:<42} {:>11} {:>7} {:>11}   {:<42} {:>11} {:>7} {:>9}",
            row.name,
            format_ns(row.stats.median_ns),
            spread(&row.stats),
            host_cell,
            cpu,
            cpu_median,
            cpu_spread,
            ratio
        );
    }

    if let Some(p) = &o.peers {
        for (title, host) in [
            (
                "CUDA events around each call or launch (launch_latency and compile_*: host \
                 clock); ratio = gpu_cuda / peer",
                false,
            ),
            (
                "host clock around each call, or launch + synchronize; ratio = gpu_cuda / peer",
                true,
            ),
        ] {
            println!("\npeers on the same GPU ({title})");
            print!("{:<34} {:>11}", "benchmark", "gpu_cuda");
            for (_, col) in PEERS {
                print!("   {col:>20}");
            }
            println!();
            println!("{}", "-".repeat(34 + 12 + 4 * 23));
            for row in o.rows.iter().filter(|r| r.name.starts_with("gpu_cuda_")) {
                let rest = suffix(&row.name).unwrap_or_default();
                let ours = if host {
                    match o.host.get(&row.name) {
                        Some(h) => *h,
                        None => continue,
                    }
                } else {
                    row.stats.median_ns
                };
                // An `_unchecked` or `_direct` row compares with the same peers as its
                // checked row.
                let peer_rest = rest
                    .strip_suffix(UNCHECKED)
                    .or_else(|| rest.strip_suffix("_direct"))
                    .unwrap_or(rest);
                let cells: Vec<String> = PEERS
                    .iter()
                    .map(|(fw, _)| {
                        let name = format!("peer_{fw}_{peer_rest}");
                        let theirs = if host {
                            p.host.get(&name).copied()
                        } else {
                            median(&p.rows, &name)
                        };
                        cell(ours, theirs)
                    })
                    .collect();
                if cells.iter().all(String::is_empty) {
                    continue;
                }
                print!("{rest:<34} {:>11}", format_ns(ours));
                for c in cells {
                    print!("   {c:>20}");
                }
                println!();
            }
        }
    }

    let pairs = checked_pairs(&o.rows);
    if !pairs.is_empty() {
        println!(
            "\nbounds checks: the safe `call` (checked, kernels too) against `compile_unchecked` \
             (on CUDA on an engine with unchecked kernels), same kernel and data; ratio = \
             checked / unchecked"
        );
        println!(
            "{:<42} {:>11} {:>11} {:>9}   {:>11} {:>11} {:>9}",
            "benchmark", "checked", "unchecked", "ratio", "host clock", "unchecked", "ratio"
        );
        println!("{}", "-".repeat(42 + 2 * 12 + 10 + 3 + 2 * 12 + 10));
        for (name, checked, unchecked) in pairs {
            let host = o
                .host
                .get(name)
                .zip(o.host.get(&format!("{name}{UNCHECKED}")));
            let (hc, hu, hr) = match host {
                Some((c, u)) => (format_ns(*c), format_ns(*u), ratio(c / u)),
                None => Default::default(),
            };
            println!(
                "{name:<42} {:>11} {:>11} {:>9}   {hc:>11} {hu:>11} {hr:>9}",
                format_ns(checked),
                format_ns(unchecked),
                ratio(checked / unchecked)
            );
        }
    }

    println!("\nnotes");
    if !o.steady.is_empty() {
        let (calls, compiles, launches, syncs, prefetches) =
            o.steady.values().fold((0, 0, 0, 0, 0), |acc, s| {
                (
                    acc.0 + s.calls,
                    acc.1 + s.stats.compiles,
                    acc.2 + s.stats.launches,
                    acc.3 + s.stats.syncs,
                    acc.4 + s.stats.prefetches(),
                )
            });
        println!(
            "  the runtime over the timed CUDA benchmarks (warm-up included): {calls} calls, \
             {launches} launches, {syncs} synchronisations, {compiles} compiles, {prefetches} \
             prefetches"
        );
    }
    if !o.grids.is_empty() {
        let grids: Vec<String> = o.grids.iter().map(|(k, b)| format!("{k} {b}")).collect();
        println!("  blocks of 256 of the grid-stride launches:");
        for line in grids.chunks(3) {
            println!("    {}", line.join(", "));
        }
    }
    println!(
        "  gpu_cuda_*: CUDA events on the thread's stream, before the call and just before it \
         waits for its kernels, so launch and kernel on the GPU's clock; their host-clock \
         figures (call to return) are the `host clock` column; gpu_cuda_launch_latency, \
         gpu_cuda_compile_* and gpu_cpu_*: host clock. peer_*: CUDA events around the launch \
         (peer_*_launch_latency and peer_*_compile_*: host clock). Targets compare event with \
         event; the host-clock ratio is beside each"
    );
    for note in &o.notes {
        println!("  {note}");
    }
    if let Some(p) = &o.peers {
        if let Some(gpu) = p.machine["gpu"].as_str() {
            println!(
                "  peers: {gpu}, torch {}, cupy {}, triton {}",
                p.machine["torch"].as_str().unwrap_or("-"),
                p.machine["cupy"].as_str().unwrap_or("-"),
                p.machine["triton"].as_str().unwrap_or("-")
            );
        }
        for note in &p.notes {
            println!("  peers: {note}");
        }
        for name in &p.failed_checks {
            println!("  peers: {name}: result check FAILED (not timed)");
        }
    }
    for f in &o.failures {
        println!("  FAILED: {f}");
    }

    println!("\ntargets (a MISS is reported, not an error)");
    for target in targets() {
        let v = judge(&target, &rows, o);
        println!("  {:<7}  {:<72} {}", v.verdict, v.what, v.measured);
    }
}

/// The JSON document: the common one (`unit`, `results` with Nacre's and the peers' medians,
/// `machine`, `command`) plus Nacre's host-clock figures of its event-timed benchmarks
/// (`host_results`), the peers' host-timed figures, notes and failed checks, the runtime's
/// counters, the targets and the configuration.
pub fn to_json(o: &Outcome, args: &GpuArgs) -> Value {
    let rows = all_rows(o);
    let mut doc = report::to_json(&rows);
    let steady: Map<String, Value> = o
        .steady
        .iter()
        .map(|(name, s)| {
            (
                name.clone(),
                json!({
                    "calls": s.calls,
                    "launches": s.stats.launches,
                    "syncs": s.stats.syncs,
                    "compiles": s.stats.compiles,
                    "cache_hits": s.stats.cache_hits,
                    "prefetches_to_device": s.stats.prefetches_to_device,
                    "prefetches_to_host": s.stats.prefetches_to_host,
                    "bytes_to_device": s.stats.bytes_to_device,
                    "bytes_to_host": s.stats.bytes_to_host,
                }),
            )
        })
        .collect();
    doc["steady_state"] = Value::Object(steady);
    doc["host_results"] = json!(o.host);
    doc["targets"] = targets()
        .iter()
        .map(|t| {
            let v = judge(t, &rows, o);
            json!({"target": v.what, "measured": v.measured, "verdict": v.verdict})
        })
        .collect();
    doc["notes"] = json!(o.notes);
    doc["failures"] = json!(o.failures);
    if let Some(p) = &o.peers {
        doc["peer_host_results"] = json!(p.host);
        doc["peer_notes"] = json!(p.notes);
        doc["peer_failed_checks"] = json!(p.failed_checks);
        doc["peer_machine"] = p.machine.clone();
    }
    doc["config"] = json!({
        "backend": "cuda",
        "device": o.device,
        "cpu_mode": (!args.no_cpu).then(|| args.mode.name()),
        "block_threads": 256,
        "grid_blocks": o
            .grids
            .iter()
            .map(|(name, blocks)| (name.clone(), json!(blocks)))
            .collect::<Map<_, _>>(),
        "quick": o.quick,
        "peers": args.peers,
    });
    doc
}

#[cfg(test)]
mod tests {
    use super::super::cuda::Steady;
    use super::super::peers::PeerResults;
    use super::*;
    use nacre::gpu::cuda::CudaStats;
    use std::collections::BTreeMap;

    fn row(name: &str, ns: f64) -> Row {
        Row {
            name: name.to_string(),
            stats: Stats {
                median_ns: ns,
                mad_ns: 0.0,
                min_ns: ns,
                samples: 50,
                batch: 1,
            },
        }
    }

    fn outcome(rows: Vec<Row>, peers: Vec<Row>, compiles: u64) -> Outcome {
        let mut steady = BTreeMap::new();
        steady.insert(
            "gpu_cuda_saxpy_16777216".to_string(),
            Steady {
                calls: 100,
                stats: CudaStats {
                    compiles,
                    launches: 100,
                    ..CudaStats::default()
                },
            },
        );
        Outcome {
            rows,
            peers: Some(PeerResults {
                rows: peers,
                ..PeerResults::default()
            }),
            notes: Vec::new(),
            failures: Vec::new(),
            steady,
            host: BTreeMap::new(),
            grids: Vec::new(),
            device: json!({"name": "test GPU", "multiprocessors": 1}),
            quick: true,
        }
    }

    fn verdict_of(o: &Outcome, name: &str) -> &'static str {
        let t = targets().into_iter().find(|t| t.name == name).unwrap();
        judge(&t, &all_rows(o), o).verdict
    }

    #[test]
    fn peer_targets_compare_with_the_peer_and_the_copy_ceiling() {
        let o = outcome(
            vec![
                row("gpu_cuda_saxpy_16777216", 50_000.0),
                row("gpu_cuda_vecadd_16777216", 44_000.0),
                row("gpu_cuda_blocksum_16777216", 90_000.0),
                row("gpu_cuda_logistic_262144_256", 17_000.0),
            ],
            vec![
                row("peer_torch_saxpy_16777216", 56_000.0),
                row("peer_torch_vecadd_16777216", 40_000.0),
                row("peer_cudac_blocksum_16777216", 82_000.0),
                row("peer_cudac_logistic_262144_256", 17_000.0),
            ],
            0,
        );
        assert_eq!(verdict_of(&o, "gpu_cuda_saxpy_16777216"), "PASS");
        // Under the copy ceiling the ceiling is the limit.
        assert_eq!(verdict_of(&o, "gpu_cuda_vecadd_16777216"), "PASS");
        assert_eq!(verdict_of(&o, "gpu_cuda_blocksum_16777216"), "MISS");
        assert_eq!(verdict_of(&o, "gpu_cuda_logistic_262144_256"), "PASS");
        assert_eq!(verdict_of(&o, "gpu_cuda_logistic_16777216_1024"), "not run");
        assert_eq!(verdict_of(&o, "relaunch"), "PASS");
    }

    #[test]
    fn peer_targets_also_give_the_host_clock_ratio() {
        let mut o = outcome(
            vec![row("gpu_cuda_blocksum_16777216", 86_000.0)],
            vec![row("peer_cudac_blocksum_16777216", 82_000.0)],
            0,
        );
        if let Some(p) = o.peers.as_mut() {
            p.host
                .insert("peer_cudac_blocksum_16777216".into(), 86_000.0);
        }
        o.host.insert("gpu_cuda_blocksum_16777216".into(), 94_600.0);
        let t = targets()
            .into_iter()
            .find(|t| t.name == "gpu_cuda_blocksum_16777216")
            .unwrap();
        let v = judge(&t, &all_rows(&o), &o);
        assert_eq!(v.verdict, "MISS");
        assert!(
            v.measured.ends_with("= 1.049 (host clock: 1.100)"),
            "{}",
            v.measured
        );
    }

    #[test]
    fn targets_judge_event_time_not_the_host_clock() {
        let mut o = outcome(
            vec![row("gpu_cuda_logistic_262144_256", 16_000.0)],
            vec![row("peer_cudac_logistic_262144_256", 17_000.0)],
            0,
        );
        let t = targets()
            .into_iter()
            .find(|t| t.name == "gpu_cuda_logistic_262144_256")
            .unwrap();
        // Without host figures there is no host-clock ratio.
        let v = judge(&t, &all_rows(&o), &o);
        assert_eq!(v.verdict, "PASS");
        assert!(!v.measured.contains("host clock"), "{}", v.measured);
        // A slower host clock does not change the verdict; its ratio is printed beside it.
        o.host
            .insert("gpu_cuda_logistic_262144_256".into(), 40_000.0);
        if let Some(p) = o.peers.as_mut() {
            p.host
                .insert("peer_cudac_logistic_262144_256".into(), 20_000.0);
        }
        let v = judge(&t, &all_rows(&o), &o);
        assert_eq!(v.verdict, "PASS");
        assert!(
            v.measured.ends_with("(host clock: 2.000)"),
            "{}",
            v.measured
        );
    }

    #[test]
    fn ratios_keep_three_significant_digits() {
        assert_eq!(ratio(1.1666), "1.17×");
        assert_eq!(ratio(0.00612), "0.00612×");
        assert_eq!(ratio(0.61), "0.610×");
        assert_eq!(ratio(2741.04), "2741×");
        assert_eq!(ratio(f64::NAN), "n/a");
    }

    #[test]
    fn time_targets_and_recompiles() {
        let o = outcome(
            vec![
                row("gpu_cuda_launch_latency", 9_000.0),
                row("gpu_cuda_compile_saxpy", 12e6),
            ],
            Vec::new(),
            3,
        );
        assert_eq!(verdict_of(&o, "gpu_cuda_launch_latency"), "MISS");
        assert_eq!(verdict_of(&o, "gpu_cuda_compile_saxpy"), "PASS");
        assert_eq!(verdict_of(&o, "gpu_cuda_compile_vecadd"), "not run");
        assert_eq!(verdict_of(&o, "relaunch"), "MISS");
        let t = targets()
            .into_iter()
            .find(|t| t.name == "gpu_cuda_saxpy_16777216")
            .unwrap();
        let v = judge(&t, &all_rows(&o), &o);
        assert_eq!(v.verdict, "not run");
    }

    #[test]
    fn json_merges_peers_and_counters() {
        let mut o = outcome(
            vec![row("gpu_cuda_saxpy_16777216", 50_000.0)],
            vec![row("peer_torch_saxpy_16777216", 56_000.0)],
            0,
        );
        o.host.insert("gpu_cuda_saxpy_16777216".into(), 58_000.0);
        let args = GpuArgs {
            backend: super::super::GpuBackend::Cuda,
            peers: true,
            ..GpuArgs::for_tests()
        };
        let doc = to_json(&o, &args);
        assert_eq!(doc["unit"], "ns");
        assert_eq!(doc["results"]["gpu_cuda_saxpy_16777216"], 50_000.0);
        assert_eq!(doc["results"]["peer_torch_saxpy_16777216"], 56_000.0);
        assert_eq!(doc["host_results"]["gpu_cuda_saxpy_16777216"], 58_000.0);
        assert_eq!(
            doc["steady_state"]["gpu_cuda_saxpy_16777216"]["launches"],
            100
        );
        assert_eq!(doc["config"]["backend"], "cuda");
        assert_eq!(doc["config"]["peers"], true);
        let targets = doc["targets"].as_array().unwrap();
        assert_eq!(targets.len(), self::targets().len());
        assert!(targets
            .iter()
            .any(|t| t["verdict"] == "PASS" && t["target"].as_str().unwrap().contains("saxpy")));
    }
}
