//! `--peers`: the suite's kernels timed on the same machine with PyTorch eager, CuPy
//! RawKernel and Triton by `bench/peers/gpu_peers.py`, and its figures read back.
//!
//! The script and the files beside it (the Triton kernels, the hand-written CUDA C) are
//! embedded in the `nacre` binary and written to a temporary folder for each run, so the
//! binary runs its peers on a machine that has Python but no checkout (`--peers-script`
//! runs another copy instead). Beside them go the CUDA C sources that the CUDA backend
//! generates for the suite's kernels ([`generate_sources`]), one `<kernel>.cu` per kernel with
//! a `kernels.json` naming each `extern "C"` symbol and NVRTC's options, so that CuPy
//! compiles and launches the very code Nacre runs (`peer_cupy_*`), with the same grids.
//!
//! The script writes `{"unit": "ns", "results": {..}, "host_results": {..}, "stats": {..},
//! "checks": {..}, "failed_checks": [..], "notes": [..], "machine": {..}}`; [`parse`] turns
//! it into report rows.

use super::super::measure::Stats;
use super::super::report::Row;
use anyhow::{bail, Context, Result};
use nacre::ir::{FuncKind, Module, PassOptions};
use nacre_cuda::codegen::{emit_kernel, KernelSource};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The peer script, embedded.
const SCRIPT: &str = include_str!("../../../bench/peers/gpu_peers.py");
/// The Triton kernels the script imports, embedded.
const TRITON_KERNELS: &str = include_str!("../../../bench/peers/triton_kernels.py");
/// The hand-written CUDA C of each kernel (`cuda/<kernel>.cu` beside the script), embedded.
const HAND_WRITTEN: [(&str, &str); 6] = [
    (
        "saxpy.cu",
        include_str!("../../../bench/peers/cuda/saxpy.cu"),
    ),
    (
        "vecadd.cu",
        include_str!("../../../bench/peers/cuda/vecadd.cu"),
    ),
    (
        "blocksum.cu",
        include_str!("../../../bench/peers/cuda/blocksum.cu"),
    ),
    (
        "logistic.cu",
        include_str!("../../../bench/peers/cuda/logistic.cu"),
    ),
    ("tiny.cu", include_str!("../../../bench/peers/cuda/tiny.cu")),
    (
        "stencil2d.cu",
        include_str!("../../../bench/peers/cuda/stencil2d.cu"),
    ),
];

/// The environment variable naming the Python interpreter (when `--python` does not).
pub const PYTHON_ENV: &str = "NACRE_PYTHON";

/// The CUDA C of the one kernel of a host function's module, as the CUDA backend prints it
/// from the optimised module.
pub fn kernel_source(kernel: &str, module: Module, passes: &PassOptions) -> Result<KernelSource> {
    let verified = nacre::optimize(module, passes)
        .with_context(|| format!("optimising the {kernel} kernel's module"))?;
    let m = verified.module();
    let ids: Vec<_> = m
        .functions
        .iter()
        .filter(|(_, f)| f.kind == FuncKind::Kernel)
        .map(|(id, _)| id)
        .collect();
    let [id] = ids[..] else {
        bail!(
            "the {kernel} host function's module has {} kernels, expected one",
            ids.len()
        );
    };
    emit_kernel(&verified, id).with_context(|| format!("printing the {kernel} kernel as CUDA C"))
}

/// Writes `<kernel>.cu` for each source into `dir`, and `kernels.json` with each symbol and
/// NVRTC's options.
pub fn write_sources(dir: &Path, sources: &[(&str, KernelSource)]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut kernels = serde_json::Map::new();
    for (kernel, src) in sources {
        let file = format!("{kernel}.cu");
        let path = dir.join(&file);
        std::fs::write(&path, &src.source)
            .with_context(|| format!("writing {}", path.display()))?;
        kernels.insert(
            kernel.to_string(),
            json!({"file": file, "symbol": src.name}),
        );
    }
    let manifest = json!({
        "nvrtc_options": nacre_cuda::nvrtc::OPTIONS,
        "kernels": kernels,
    });
    let path = dir.join("kernels.json");
    std::fs::write(&path, serde_json::to_string_pretty(&manifest)? + "\n")
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Writes the embedded script, its Triton kernels and the hand-written CUDA C into `dir`;
/// returns the script's path.
pub fn write_script(dir: &Path) -> Result<PathBuf> {
    let cuda = dir.join("cuda");
    std::fs::create_dir_all(&cuda).with_context(|| format!("creating {}", cuda.display()))?;
    let script = dir.join("gpu_peers.py");
    let files = [
        (script.clone(), SCRIPT),
        (dir.join("triton_kernels.py"), TRITON_KERNELS),
    ]
    .into_iter()
    .chain(HAND_WRITTEN.iter().map(|(f, text)| (cuda.join(f), *text)));
    for (path, text) in files {
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(script)
}

/// What the peers are asked to time: the suite's sizes and grids, and how long.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// Floats of saxpy and vecadd.
    pub sizes: Vec<usize>,
    /// Floats of the block sum.
    pub blocksum_sizes: Vec<usize>,
    /// (floats, steps) of the logistic map.
    pub logistic: Vec<(usize, u32)>,
    /// Blocks of 256 of the grid-stride launches, per size (as Nacre launches them).
    pub blocks: Vec<(usize, u32)>,
    /// A rough run.
    pub quick: bool,
    /// `--filter` of the suite, with the `gpu_cuda_` / `gpu_cpu_` prefixes taken off.
    pub filter: Vec<String>,
}

impl Request {
    /// The script's command-line arguments (after the script's path).
    pub fn arguments(&self, source_dir: &Path, json_out: &Path) -> Vec<OsString> {
        let list = |v: Vec<String>| v.join(",");
        let mut args: Vec<OsString> = vec![
            "--sizes".into(),
            list(self.sizes.iter().map(usize::to_string).collect()).into(),
            "--blocksum-sizes".into(),
            list(self.blocksum_sizes.iter().map(usize::to_string).collect()).into(),
            "--logistic".into(),
            list(
                self.logistic
                    .iter()
                    .map(|(n, i)| format!("{n}x{i}"))
                    .collect(),
            )
            .into(),
            "--blocks".into(),
            list(
                self.blocks
                    .iter()
                    .map(|(n, b)| format!("{n}={b}"))
                    .collect(),
            )
            .into(),
            "--source-dir".into(),
            source_dir.into(),
            "--json".into(),
            json_out.into(),
        ];
        if self.quick {
            args.push("--quick".into());
        }
        if !self.filter.is_empty() {
            args.push("--filter".into());
            args.push(self.filter.join(",").into());
        }
        args
    }
}

/// The suite's `--filter` for the peers: names there start `peer_<fw>_`, so the prefixes of
/// Nacre's names are dropped (`gpu_cuda_saxpy` selects `peer_torch_saxpy_*` too).
pub fn peer_filter(filter: &[String]) -> Vec<String> {
    filter
        .iter()
        .map(|f| {
            f.strip_prefix("gpu_cuda_")
                .or_else(|| f.strip_prefix("gpu_cpu_"))
                .unwrap_or(f)
                .to_string()
        })
        .filter(|f| !f.is_empty())
        .collect()
}

/// The peers' figures, read from the script's JSON.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PeerResults {
    /// `peer_*` medians (CUDA events for kernels, host clock for latency and compiles).
    pub rows: Vec<Row>,
    /// Host-timed launch + synchronize medians of the kernels, by the same names.
    pub host: BTreeMap<String, f64>,
    /// The script's notes (skipped frameworks, failures).
    pub notes: Vec<String>,
    /// Names whose result check failed (not timed).
    pub failed_checks: Vec<String>,
    /// The machine as the script saw it (GPU, versions).
    pub machine: Value,
}

fn number(v: &Value) -> Option<f64> {
    v.as_f64().filter(|x| x.is_finite())
}

/// Reads the script's JSON document.
pub fn parse(doc: &Value) -> Result<PeerResults> {
    if doc["unit"] != "ns" {
        bail!("the peers' JSON has unit {}, expected \"ns\"", doc["unit"]);
    }
    let Some(results) = doc["results"].as_object() else {
        bail!("the peers' JSON has no \"results\" object");
    };
    let mut rows = Vec::new();
    for (name, value) in results {
        let Some(median) = number(value) else {
            bail!("the peers' result {name} is not a number: {value}");
        };
        let st = &doc["stats"][name];
        let stats = Stats {
            median_ns: median,
            mad_ns: number(&st["mad"]).unwrap_or(f64::NAN),
            min_ns: number(&st["min"]).unwrap_or(f64::NAN),
            samples: st["runs"].as_u64().unwrap_or(0) as usize,
            batch: 1,
        };
        rows.push(Row {
            name: name.clone(),
            stats,
        });
    }
    let host = doc["host_results"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| number(v).map(|x| (k.clone(), x)))
                .collect()
        })
        .unwrap_or_default();
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok(PeerResults {
        rows,
        host,
        notes: strings(&doc["notes"]),
        failed_checks: strings(&doc["failed_checks"]),
        machine: doc["machine"].clone(),
    })
}

/// How to run the script.
#[derive(Clone, Debug)]
pub struct Runner {
    /// The Python interpreter.
    pub python: OsString,
    /// A copy of the script to run instead of the embedded one.
    pub script: Option<PathBuf>,
}

impl Runner {
    /// `--python` if given, else `$NACRE_PYTHON`, else `python3`.
    pub fn new(python: Option<&Path>, script: Option<&Path>) -> Runner {
        let python = python
            .map(|p| p.as_os_str().to_os_string())
            .or_else(|| std::env::var_os(PYTHON_ENV).filter(|v| !v.is_empty()))
            .unwrap_or_else(|| "python3".into());
        Runner {
            python,
            script: script.map(Path::to_path_buf),
        }
    }

    /// Writes the sources (and the embedded script) into `dir`, runs the script there (its
    /// progress on this process's standard error) and reads its results.
    pub fn run(
        &self,
        dir: &Path,
        sources: &[(&str, KernelSource)],
        request: &Request,
    ) -> Result<PeerResults> {
        let source_dir = dir.join("nacre_cuda");
        write_sources(&source_dir, sources)?;
        let script = match &self.script {
            Some(s) => s.clone(),
            None => write_script(&dir.join("peers"))?,
        };
        let out = dir.join("peers.json");
        let args = request.arguments(&source_dir, &out);
        eprintln!(
            "\nrunning the peers: {} {}",
            self.python.to_string_lossy(),
            script.display()
        );
        let status = Command::new(&self.python)
            .arg(&script)
            .args(&args)
            .env("PYTHONUNBUFFERED", "1")
            .stdout(std::process::Stdio::inherit())
            .status()
            .with_context(|| {
                format!(
                    "cannot start the Python interpreter `{}` for the peers; name one with \
                     --python or {PYTHON_ENV} (it needs NumPy, and PyTorch, CuPy or Triton \
                     to time anything)",
                    self.python.to_string_lossy()
                )
            })?;
        if !status.success() {
            bail!(
                "the peer script {} failed ({status}); its sources are in {}",
                script.display(),
                source_dir.display()
            );
        }
        let text = std::fs::read_to_string(&out)
            .with_context(|| format!("reading the peers' results {}", out.display()))?;
        let doc: Value = serde_json::from_str(&text)
            .with_context(|| format!("parsing the peers' results {}", out.display()))?;
        parse(&doc)
    }
}

/// A fresh temporary folder for one run of the peers, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates `nacre-gpu-peers-<pid>-<n>` in the system's temporary folder.
    pub fn new() -> Result<TempDir> {
        let base = std::env::temp_dir();
        for n in 0..1000 {
            let dir = base.join(format!("nacre-gpu-peers-{}-{n}", std::process::id()));
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(TempDir(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).with_context(|| format!("creating {}", dir.display()));
                }
            }
        }
        bail!(
            "cannot create a temporary folder for the peers in {}",
            base.display()
        )
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Keeps the folder (for a look after a failure): it is not removed on drop.
    pub fn keep(mut self) -> PathBuf {
        std::mem::take(&mut self.0)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.0.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_drops_nacres_prefixes() {
        let f = |v: &[&str]| peer_filter(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            f(&[
                "gpu_cuda_saxpy",
                "logistic_16777216",
                "gpu_cpu_compile",
                "gpu_cuda_"
            ]),
            ["saxpy", "logistic_16777216", "compile"]
        );
    }

    #[test]
    fn arguments_carry_sizes_grids_and_paths() {
        let req = Request {
            sizes: vec![1 << 20, 1 << 24],
            blocksum_sizes: vec![1 << 24],
            logistic: vec![(1 << 18, 256)],
            blocks: vec![(1 << 20, 1024), (1 << 18, 256)],
            quick: true,
            filter: vec!["saxpy".into()],
        };
        let args: Vec<String> = req
            .arguments(Path::new("/s"), Path::new("/o.json"))
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "--sizes",
                "1048576,16777216",
                "--blocksum-sizes",
                "16777216",
                "--logistic",
                "262144x256",
                "--blocks",
                "1048576=1024,262144=256",
                "--source-dir",
                "/s",
                "--json",
                "/o.json",
                "--quick",
                "--filter",
                "saxpy"
            ]
        );
    }

    #[test]
    fn parse_reads_results_stats_and_failures() {
        let doc = json!({
            "unit": "ns",
            "results": {"peer_torch_saxpy_16777216": 56480.0, "peer_cupy_launch_latency": 12264.5},
            "host_results": {"peer_torch_saxpy_16777216": 61851.0},
            "stats": {"peer_torch_saxpy_16777216": {"median": 56480.0, "mad": 1000.0, "min": 55000.0, "runs": 200}},
            "failed_checks": ["peer_triton_logistic_262144_256"],
            "notes": ["triton unavailable"],
            "machine": {"gpu": "NVIDIA H200"},
        });
        let r = parse(&doc).unwrap();
        assert_eq!(r.rows.len(), 2);
        let saxpy = r
            .rows
            .iter()
            .find(|row| row.name == "peer_torch_saxpy_16777216")
            .unwrap();
        assert_eq!(saxpy.stats.median_ns, 56480.0);
        assert_eq!(saxpy.stats.mad_ns, 1000.0);
        assert_eq!(saxpy.stats.samples, 200);
        assert_eq!(r.host["peer_torch_saxpy_16777216"], 61851.0);
        assert_eq!(r.failed_checks, ["peer_triton_logistic_262144_256"]);
        assert_eq!(r.notes, ["triton unavailable"]);
        assert_eq!(r.machine["gpu"], "NVIDIA H200");

        assert!(parse(&json!({"unit": "ms", "results": {}})).is_err());
        assert!(parse(&json!({"unit": "ns"})).is_err());
        let bad = parse(&json!({"unit": "ns", "results": {"peer_x": "fast"}}));
        assert!(bad.unwrap_err().to_string().contains("peer_x"));
    }

    #[test]
    fn the_embedded_script_is_written_with_its_files() {
        let dir = TempDir::new().unwrap();
        let script = write_script(dir.path()).unwrap();
        assert!(std::fs::read_to_string(&script)
            .unwrap()
            .contains("def main("));
        assert!(dir.path().join("triton_kernels.py").exists());
        for (file, _) in HAND_WRITTEN {
            assert!(dir.path().join("cuda").join(file).exists(), "{file}");
        }
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(!path.exists());
    }
}
