//! `--backend cpu --peers`: the suite's kernels written in OpenCL C and run by PoCL on the
//! same machine (`bench/peers/cpu_peers.py` with `bench/peers/opencl/kernels.cl`), as rows
//! `peer_pocl_<suffix>` beside `gpu_cpu_<suffix>`.
//!
//! The script and the kernels are embedded in the `nacre` binary and written to a temporary
//! folder for each run. It needs NumPy, PyOpenCL and an OpenCL CPU device (PoCL:
//! `bash bench/setup-pocl.sh` installs Debian's `pocl-opencl-icd` and PyOpenCL); without them
//! it reports no rows and a note saying what is missing.

use super::peers::{self, PeerResults};
use anyhow::{bail, Context, Result};
use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

/// The peer script, embedded.
const SCRIPT: &str = include_str!("../../../bench/peers/cpu_peers.py");
/// The OpenCL C of the suite's kernels, embedded.
const KERNELS: &str = include_str!("../../../bench/peers/opencl/kernels.cl");

/// Runs the PoCL peers in `dir` with `python` (the suite's `--filter`, prefixes dropped, and
/// `--quick`) and reads their results.
pub fn run(python: &OsString, dir: &Path, quick: bool, filter: &[String]) -> Result<PeerResults> {
    let opencl = dir.join("opencl");
    std::fs::create_dir_all(&opencl).with_context(|| format!("creating {}", opencl.display()))?;
    let script = dir.join("cpu_peers.py");
    for (path, text) in [(&script, SCRIPT), (&opencl.join("kernels.cl"), KERNELS)] {
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let out = dir.join("pocl.json");
    let mut cmd = Command::new(python);
    cmd.arg(&script).arg("--json").arg(&out);
    if quick {
        cmd.arg("--quick");
    }
    let filter = peers::peer_filter(filter);
    if !filter.is_empty() {
        cmd.arg("--filter").arg(filter.join(","));
    }
    eprintln!(
        "\nrunning the PoCL peers: {} {}",
        python.to_string_lossy(),
        script.display()
    );
    let status = cmd.env("PYTHONUNBUFFERED", "1").status().with_context(|| {
        format!(
            "cannot start the Python interpreter `{}` for the PoCL peers; name one with \
                 --python or {} (bench/setup-pocl.sh installs what it needs)",
            python.to_string_lossy(),
            peers::PYTHON_ENV
        )
    })?;
    if !status.success() {
        bail!("the PoCL peer script failed ({status})");
    }
    let text =
        std::fs::read_to_string(&out).with_context(|| format!("reading {}", out.display()))?;
    let doc: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("parsing the PoCL peers' JSON {}", out.display()))?;
    peers::parse(&doc)
}
