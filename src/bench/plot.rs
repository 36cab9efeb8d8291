//! `--plot FILE.svg`: each benchmark's ratio to its peers as a bar chart (a bar from 1 to the
//! ratio on a log scale: left of 1 is faster than the peer, right is slower), drawn with
//! `plotters` from the medians of a run or of a committed JSON report.
//!
//! The pairs follow the suites' names: `exec_B_F` against `exec_rust_F` (CPU suite),
//! `gpu_cpu_X` against `rust_rayon_X` (GPU suite on the CPU), and `gpu_cuda_X` against every
//! `peer_P_X` (PyTorch, CuPy, Triton, CUDA C).

use anyhow::{bail, Context, Result};
use plotters::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// One bar: a benchmark of ours, its peer, and the ratio of their medians.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// `ours vs peer`.
    pub label: String,
    /// ours / peer.
    pub ratio: f64,
}

/// The peers of a CUDA benchmark, as the peer script names them.
const GPU_PEERS: [&str; 4] = ["torch", "cupy", "triton", "cudac"];

/// The bars of a run whose medians (in any unit) are `medians`, by benchmark name.
pub fn bars(medians: &BTreeMap<String, f64>) -> Vec<Bar> {
    let mut out = Vec::new();
    let mut push = |ours: &str, peer: String, label: &str| {
        if let (Some(a), Some(b)) = (medians.get(ours), medians.get(&peer)) {
            if *a > 0.0 && *b > 0.0 {
                out.push(Bar {
                    label: format!("{ours} vs {label}"),
                    ratio: a / b,
                });
            }
        }
    };
    for name in medians.keys() {
        if let Some(rest) = name.strip_prefix("exec_") {
            match rest.split_once('_') {
                Some((backend, f)) if backend != "rust" => {
                    push(name, format!("exec_rust_{f}"), "rust")
                }
                _ => {}
            }
        } else if let Some(rest) = name.strip_prefix("gpu_cpu_") {
            let rest = rest.strip_suffix("_unchecked").unwrap_or(rest);
            push(name, format!("rust_rayon_{rest}"), "rayon");
        } else if let Some(rest) = name.strip_prefix("gpu_cuda_") {
            for peer in GPU_PEERS {
                push(name, format!("peer_{peer}_{rest}"), peer);
            }
        }
    }
    out
}

/// The medians of a JSON report's `results` (a number per benchmark, or an object with a
/// `median_ns`).
pub fn medians_of(doc: &Value) -> Result<BTreeMap<String, f64>> {
    let results = doc
        .get("results")
        .and_then(Value::as_object)
        .context("the report has no `results` object")?;
    Ok(results
        .iter()
        .filter_map(|(k, v)| {
            let ns = v.as_f64().or_else(|| v.get("median_ns")?.as_f64())?;
            Some((k.clone(), ns))
        })
        .collect())
}

/// Draws `bars` under `title` as an SVG file at `path`.
pub fn draw(bars: &[Bar], title: &str, path: &Path) -> Result<()> {
    if bars.is_empty() {
        bail!("nothing to plot: no benchmark of this run has a peer measured beside it");
    }
    let (lo, hi) = bars.iter().fold((1.0f64, 1.0f64), |(lo, hi), b| {
        (lo.min(b.ratio), hi.max(b.ratio))
    });
    let (lo, hi) = (lo / 1.5, hi * 1.5);
    let height = 90 + 18 * bars.len() as u32;
    let root = SVGBackend::new(path, (1100, height)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let n = bars.len();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(430)
        .build_cartesian_2d((lo..hi).log_scale(), (0..n).into_segmented())
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("ours / peer (log scale; below 1 is faster)")
        .y_labels(n)
        .y_label_formatter(&|y| label_at(bars, y))
        .disable_y_mesh()
        .draw()
        .map_err(plot_err)?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, b)| {
            let y = n - 1 - i;
            let color = if b.ratio <= 1.0 { GREEN } else { RED };
            let mut bar = Rectangle::new(
                [
                    (1.0, SegmentValue::Exact(y)),
                    (b.ratio, SegmentValue::Exact(y + 1)),
                ],
                color.mix(0.7).filled(),
            );
            bar.set_margin(3, 3, 0, 0);
            bar
        }))
        .map_err(plot_err)?;
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(1.0, SegmentValue::Exact(0)), (1.0, SegmentValue::Last)],
            BLACK.stroke_width(1),
        )))
        .map_err(plot_err)?;
    root.present().map_err(plot_err)?;
    Ok(())
}

/// The label of the bar drawn in segment `y` (bars run top to bottom).
fn label_at(bars: &[Bar], y: &SegmentValue<usize>) -> String {
    match y {
        SegmentValue::CenterOf(row) if *row < bars.len() => {
            let b = &bars[bars.len() - 1 - row];
            format!("{} ({:.3}×)", b.label, b.ratio)
        }
        _ => String::new(),
    }
}

fn plot_err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("drawing the plot failed: {e:?}")
}

/// `nacre bench plot REPORT.json FILE.svg`: the plot of a committed report.
pub fn from_report(report: &Path, out: &Path, title: Option<&str>) -> Result<()> {
    let text =
        std::fs::read_to_string(report).with_context(|| format!("reading {}", report.display()))?;
    let doc: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", report.display()))?;
    let medians = medians_of(&doc)?;
    let title = title.map_or_else(|| report.display().to_string(), str::to_string);
    draw(&bars(&medians), &title, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_follow_the_suites_names() {
        let medians: BTreeMap<String, f64> = [
            ("exec_c_sum", 2.0),
            ("exec_rust_sum", 4.0),
            ("exec_rust_gcd", 1.0),
            ("gpu_cpu_saxpy_16", 3.0),
            ("gpu_cpu_saxpy_16_unchecked", 6.0),
            ("rust_rayon_saxpy_16", 3.0),
            ("gpu_cuda_vecadd_16", 1.0),
            ("peer_torch_vecadd_16", 2.0),
            ("peer_cupy_vecadd_16", 0.5),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let got: Vec<(String, f64)> = bars(&medians)
            .into_iter()
            .map(|b| (b.label, b.ratio))
            .collect();
        assert_eq!(
            got,
            vec![
                ("exec_c_sum vs rust".to_string(), 0.5),
                ("gpu_cpu_saxpy_16 vs rayon".to_string(), 1.0),
                ("gpu_cpu_saxpy_16_unchecked vs rayon".to_string(), 2.0),
                ("gpu_cuda_vecadd_16 vs torch".to_string(), 0.5),
                ("gpu_cuda_vecadd_16 vs cupy".to_string(), 2.0),
            ]
        );
    }

    #[test]
    fn draws_an_svg() {
        let path = std::env::temp_dir().join(format!("nacre-plot-{}.svg", std::process::id()));
        let bars = vec![
            Bar {
                label: "a vs rust".into(),
                ratio: 0.5,
            },
            Bar {
                label: "b vs rust".into(),
                ratio: 3.0,
            },
        ];
        draw(&bars, "test", &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(
            svg.contains("<svg") && svg.contains("a vs rust (0.500×)"),
            "{svg}"
        );
        std::fs::remove_file(&path).unwrap();
        assert!(draw(&[], "empty", &path).is_err());
    }
}
