//! The report of a benchmark run: the results table (with the ratio of each `exec_B_F` to
//! `exec_rust_F` and the seed's Nautilus figures beside ours), the targets with PASS/MISS, the
//! trace-time scaling, and the JSON file.

use super::measure::Stats;
use super::seed_figures::{counterparts, figure};
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::time::Duration;

/// One measured benchmark.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The benchmark's name.
    pub name: String,
    /// Its measurement.
    pub stats: Stats,
}

/// The rows of a run as they are measured: which benchmarks the filter selects, each
/// measurement printed to stderr as it is recorded, and a spinner naming the benchmark being
/// measured (drawn only when stderr is a terminal).
#[derive(Debug)]
pub struct Results {
    filter: Vec<String>,
    /// The rows recorded so far, in order.
    pub rows: Vec<Row>,
    progress: ProgressBar,
}

impl Results {
    /// No rows yet; `filter` selects benchmarks as [`selects`] says (all of them when empty).
    pub fn new(filter: Vec<String>) -> Results {
        let progress = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        progress.set_style(
            ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        progress.enable_steady_tick(Duration::from_millis(120));
        Results {
            filter,
            rows: Vec::new(),
            progress,
        }
    }

    /// Whether the filter selects benchmark `name` (the spinner then names it: suites ask
    /// just before measuring).
    pub fn wants(&self, name: &str) -> bool {
        let wanted = selects(&self.filter, name);
        if wanted {
            self.progress
                .set_message(format!("{name} ({} measured)", self.rows.len()));
        }
        wanted
    }

    /// Prints and keeps `stats` as row `name`; `detail` ends the printed line's parenthesis.
    pub fn record(&mut self, name: &str, stats: Stats, detail: &str) {
        let line = format!(
            "{:>4} {name:<36} {:>11}  ±{:>5.1}%  ({} samples × {}{detail})",
            self.rows.len() + 1,
            format_ns(stats.median_ns),
            100.0 * stats.mad_ns / stats.median_ns,
            stats.samples,
            stats.batch
        );
        self.progress.suspend(|| eprintln!("{line}"));
        self.rows.push(Row {
            name: name.to_string(),
            stats,
        });
    }
}

impl Results {
    /// Clears the spinner (before the report is printed).
    pub fn done(&self) {
        self.progress.finish_and_clear();
    }
}

impl Drop for Results {
    fn drop(&mut self) {
        self.progress.finish_and_clear();
    }
}

/// The median of each row, by name (what [`super::plot`] pairs).
pub fn medians(rows: &[Row]) -> std::collections::BTreeMap<String, f64> {
    rows.iter()
        .map(|r| (r.name.clone(), r.stats.median_ns))
        .collect()
}

/// Formats nanoseconds with four significant digits and a fitting unit.
pub fn format_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "n/a".to_string();
    }
    let (value, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let decimals = if value >= 100.0 {
        1
    } else if value >= 10.0 {
        2
    } else {
        3
    };
    format!("{value:.decimals$} {unit}")
}

fn lookup(rows: &[Row], name: &str) -> Option<f64> {
    rows.iter()
        .find(|r| r.name == name)
        .map(|r| r.stats.median_ns)
}

/// `exec_B_F / exec_rust_F` for an execution benchmark of a backend.
fn rust_ratio(rows: &[Row], name: &str) -> Option<f64> {
    let rest = name.strip_prefix("exec_")?;
    let (backend, function) = rest.split_once('_')?;
    if backend == "rust" {
        return None;
    }
    Some(lookup(rows, name)? / lookup(rows, &format!("exec_rust_{function}"))?)
}

/// Prints the results table, the targets and the trace-time scaling to standard output.
pub fn print(rows: &[Row]) {
    print_table(rows);
    print_targets(rows);
    print_scaling(rows);
}

fn print_table(rows: &[Row]) {
    println!();
    println!(
        "{:<34} {:>11} {:>7} {:>8}   {:<36} {:>11} {:>9}",
        "benchmark",
        "median",
        "±MAD",
        "vs rust",
        "Nautilus counterpart (seed)",
        "seed",
        "ours/seed"
    );
    println!("{}", "-".repeat(34 + 12 + 8 + 9 + 3 + 36 + 12 + 10));
    for row in rows {
        let median = row.stats.median_ns;
        let spread = format!("{:.1}%", 100.0 * row.stats.mad_ns / median);
        let ratio = rust_ratio(rows, &row.name)
            .map(|r| format!("{r:.2}×"))
            .unwrap_or_default();
        let mut seeds = counterparts(&row.name);
        let first = seeds.next();
        let (theirs, seed, vs) = match first {
            Some(f) => (
                f.theirs.to_string(),
                format_ns(f.ns),
                format!("{:.3}×", median / f.ns),
            ),
            None => (String::new(), String::new(), String::new()),
        };
        println!(
            "{:<34} {:>11} {:>7} {:>8}   {:<36} {:>11} {:>9}",
            row.name,
            format_ns(median),
            spread,
            ratio,
            theirs,
            seed,
            vs
        );
        for f in seeds {
            println!(
                "{:<34} {:>11} {:>7} {:>8}   {:<36} {:>11} {:>9}",
                "",
                "",
                "",
                "",
                f.theirs,
                format_ns(f.ns),
                format!("{:.3}×", median / f.ns)
            );
        }
    }
}

/// A performance target of the suite.
enum Target {
    /// A benchmark's median at most (or, `strict`, below) a time.
    Time {
        name: &'static str,
        limit_ns: f64,
        strict: bool,
        why: &'static str,
    },
    /// `exec_B_F / exec_rust_F` at most a ratio.
    Ratio { name: &'static str, limit: f64 },
}

fn targets() -> Vec<Target> {
    let bc = |theirs: &'static str| figure(theirs).unwrap_or(f64::NAN);
    vec![
        Target::Time {
            name: "comp_cranelift_add",
            limit_ns: 40e3,
            strict: false,
            why: "",
        },
        Target::Time {
            name: "e2e_cranelift_add",
            limit_ns: 60e3,
            strict: false,
            why: "",
        },
        Target::Time {
            name: "trace_nestedIf100",
            limit_ns: 50e3,
            strict: false,
            why: "",
        },
        Target::Time {
            name: "trace_chainedIf100",
            limit_ns: 50e3,
            strict: false,
            why: "",
        },
        Target::Ratio {
            name: "exec_cranelift_fibonacci",
            limit: 1.3,
        },
        Target::Ratio {
            name: "exec_cranelift_gcd",
            limit: 1.3,
        },
        Target::Ratio {
            name: "exec_c_sum",
            limit: 1.2,
        },
        Target::Time {
            name: "exec_interp_fibonacci",
            limit_ns: bc("exec_bc_fibonacci"),
            strict: true,
            why: " (seed exec_bc_fibonacci)",
        },
        Target::Time {
            name: "exec_interp_sum",
            limit_ns: bc("exec_bc_sum"),
            strict: true,
            why: " (seed exec_bc_sum)",
        },
        Target::Time {
            name: "exec_interp_add",
            limit_ns: bc("exec_bc_add"),
            strict: true,
            why: " (seed exec_bc_add)",
        },
    ]
}

fn verdict(pass: Option<bool>) -> &'static str {
    match pass {
        Some(true) => "PASS",
        Some(false) => "MISS",
        None => "not run",
    }
}

fn print_targets(rows: &[Row]) {
    println!("\ntargets (a MISS is reported, not an error)");
    for target in targets() {
        let (what, measured, pass) = match target {
            Target::Time {
                name,
                limit_ns,
                strict,
                why,
            } => {
                let got = lookup(rows, name);
                let op = if strict { "<" } else { "≤" };
                (
                    format!("{name} {op} {}{why}", format_ns(limit_ns)),
                    got.map(format_ns).unwrap_or_default(),
                    got.map(|g| if strict { g < limit_ns } else { g <= limit_ns }),
                )
            }
            Target::Ratio { name, limit } => {
                let (_, function) = name
                    .strip_prefix("exec_")
                    .and_then(|r| r.split_once('_'))
                    .unwrap_or(("", name));
                let got = rust_ratio(rows, name);
                (
                    format!("{name} / exec_rust_{function} ≤ {limit}"),
                    got.map(|r| format!("{r:.3}")).unwrap_or_default(),
                    got.map(|r| r <= limit),
                )
            }
        };
        println!("  {what:<62} {measured:>11}  {}", verdict(pass));
    }
}

fn print_scaling(rows: &[Row]) {
    println!("\ntrace-time scaling (time per conditional stays flat when tracing is linear)");
    for family in ["nestedIf", "chainedIf"] {
        let mut line = format!("  trace_{family:<10}");
        let mut any = false;
        for n in [10u32, 100, 1000] {
            if let Some(t) = lookup(rows, &format!("trace_{family}{n}")) {
                any = true;
                line.push_str(&format!(
                    "  N={n}: {} ({}/if)",
                    format_ns(t),
                    format_ns(t / f64::from(n))
                ));
            }
        }
        if any {
            println!("{line}");
        }
    }
}

/// Facts about this machine for the JSON file.
fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| "unknown".to_string());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let cc = std::process::Command::new("cc")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_string))
        .unwrap_or_default();
    json!({
        "cpu": cpu,
        "logical_cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "os": std::env::consts::OS,
        "arch": std::env::consts::ARCH,
        "kernel": kernel,
        "cc": cc,
    })
}

/// The command line, with the program spelled `nacre`.
fn command() -> String {
    std::iter::once("nacre".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The JSON document: `{"unit": "ns", "results": {name: median}, "machine": {..},
/// "command": ".."}`, medians rounded to a thousandth of a nanosecond.
pub fn to_json(rows: &[Row]) -> Value {
    let results: Map<String, Value> = rows
        .iter()
        .map(|r| {
            (
                r.name.clone(),
                json!((r.stats.median_ns * 1e3).round() / 1e3),
            )
        })
        .collect();
    json!({
        "unit": "ns",
        "results": results,
        "machine": machine(),
        "command": command(),
    })
}

/// Checks before a run that `path` can be written (its folder created, the file opened
/// without truncating it), so that a long run does not end in a failed write.
pub fn check_writable(path: &Path) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--json {}: cannot create its folder", path.display()))?;
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .with_context(|| format!("--json {}: cannot write there", path.display()))?;
    if !existed {
        std::fs::remove_file(path)?;
    }
    Ok(())
}

/// Whether `--filter` selects benchmark `name`: an empty filter selects everything; a string
/// selects the names that contain it, and one ending in `$` the names that end with the rest
/// (`query_nacre_q1$` is Q1 alone, where `query_nacre_q1` also names Q12 and Q14).
pub fn selects(filter: &[String], name: &str) -> bool {
    filter.is_empty()
        || filter.iter().any(|f| match f.strip_suffix('$') {
            Some(end) => name.ends_with(end),
            None => name.contains(f.as_str()),
        })
}

/// Fails when `filter` is set but selected none of the suite's benchmarks.
pub fn ensure_matched(filter: &[String], rows: &[Row]) -> Result<()> {
    if !filter.is_empty() && rows.is_empty() {
        anyhow::bail!(
            "--filter {} matched no benchmark of this suite (names are substrings of rows such \
             as `exec_cranelift_sum` or `gpu_cpu_saxpy_1048576`; run without --filter to see \
             them all)",
            filter.join(",")
        );
    }
    Ok(())
}

/// Writes the JSON document of `rows` ([`to_json`]) to `path`, creating its folder.
pub fn write_json(path: &Path, rows: &[Row]) -> Result<()> {
    write_document(path, &to_json(rows))
}

/// Writes a JSON document (e.g. [`to_json`] with fields added by a suite) to `path`, pretty
/// printed, creating its folder.
pub fn write_document(path: &Path, doc: &Value) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(doc)?;
    std::fs::write(path, text + "\n")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_selects_substrings_or_name_ends() {
        let filter = |fs: &[&str]| fs.iter().map(|f| f.to_string()).collect::<Vec<_>>();
        assert!(selects(&[], "anything"));
        assert!(selects(&filter(&["nacre_q1"]), "query_nacre_q12"));
        assert!(selects(&filter(&["nacre_q1$"]), "query_nacre_q1"));
        assert!(!selects(&filter(&["nacre_q1$"]), "query_nacre_q12"));
        assert!(selects(&filter(&["x", "q14$"]), "query_nacre_q14"));
        // A lone `$` ends every name.
        assert!(selects(&filter(&["$"]), "gpu_cpu_saxpy_1048576"));
    }

    fn row(name: &str, ns: f64) -> Row {
        Row {
            name: name.to_string(),
            stats: Stats {
                median_ns: ns,
                mad_ns: 0.0,
                min_ns: ns,
                samples: 1,
                batch: 1,
            },
        }
    }

    #[test]
    fn formats_with_units() {
        assert_eq!(format_ns(2.5), "2.500 ns");
        assert_eq!(format_ns(13_643.9), "13.64 µs");
        assert_eq!(format_ns(1_151_080.0), "1.151 ms");
        assert_eq!(format_ns(126_731_000.0), "126.7 ms");
    }

    #[test]
    fn ratios_against_rust() {
        let rows = vec![
            row("exec_rust_fibonacci", 10.0),
            row("exec_cranelift_fibonacci", 12.0),
        ];
        assert_eq!(rust_ratio(&rows, "exec_cranelift_fibonacci"), Some(1.2));
        assert_eq!(rust_ratio(&rows, "exec_rust_fibonacci"), None);
        assert_eq!(rust_ratio(&rows, "exec_c_fibonacci"), None);
    }

    #[test]
    fn json_has_unit_and_results() {
        let v = to_json(&[row("trace_add", 1234.5)]);
        assert_eq!(v["unit"], "ns");
        assert_eq!(v["results"]["trace_add"], 1234.5);
        assert!(v["command"].as_str().unwrap_or("").starts_with("nacre"));
    }

    #[test]
    fn every_seed_figure_names_a_benchmark_of_ours() {
        use super::super::seed_figures::SEED_FIGURES;
        let prefixes = [
            "trace_",
            "ir_",
            "comp_",
            "e2e_",
            "exec_",
            "tiered_first_call_",
        ];
        for f in SEED_FIGURES {
            assert!(prefixes.iter().any(|p| f.ours.starts_with(p)), "{f:?}");
            assert!(f.ns > 0.0, "{f:?}");
        }
        let bc_fib = figure("exec_bc_fibonacci").unwrap_or(0.0);
        assert!((bc_fib - 533_115.0).abs() < 1e-6, "{bc_fib}");
    }
}
