//! The warp benchmarks, each beside its peers in the same run:
//!
//! - `blocksum_warp_16777216`: the corpus's `run_block_sum_warp`, a single-launch sum of 16M
//!   f32 (warp shuffles, one float atomic per block). Peers: `torch.sum` on the GPU, and a
//!   hand-written rayon sum (`rust_rayon_blocksum_warp_16777216`) on the CPU.
//! - `compact_16777216`: the corpus's `run_compact`, an order-preserving stream compaction of
//!   16M f32 keeping `x > 0` (about half): ballots, an atomic ticket per tile and a decoupled
//!   look-back over one 32-bit status word per tile, in one clearing launch and one
//!   compaction launch. Peers: `x[x > 0]` in PyTorch on the GPU, and rayon's order-preserving
//!   `filter` + `par_extend` (`rust_rayon_compact_16777216`) on the CPU.
//!
//! The inputs are uniform in [-1, 1). The sum is checked against an `f64` sum (relative
//! 1e-5: its blocks add in any order), the compaction exactly, count and order included.
//! The timed sum calls add into the same cell (a caller zeroes it once), so a call is the
//! sum kernel alone.

use super::random_in;
use anyhow::{bail, Result};
use rayon::prelude::*;

/// Elements of both benchmarks.
pub const SIZE: usize = 1 << 24;
/// The compaction keeps the elements above this.
pub const THRESHOLD: f32 = 0.0;
/// Relative tolerance of the sums.
pub const SUM_TOLERANCE: f64 = 1e-5;

/// The suffix of the warp block sum's names.
pub fn blocksum_name() -> String {
    format!("blocksum_warp_{SIZE}")
}

/// The suffix of the compaction's names.
pub fn compact_name() -> String {
    format!("compact_{SIZE}")
}

/// The inputs of both benchmarks.
pub fn input() -> Vec<f32> {
    random_in(SIZE, 71, -1.0, 1.0)
}

/// The exact sum (in `f64`) of `x`.
pub fn exact_sum(x: &[f32]) -> f64 {
    x.par_iter().map(|&v| f64::from(v)).sum()
}

/// The sum by hand with rayon (what `torch.sum` computes: an `f32` sum in any order).
pub fn rayon_sum(x: &[f32]) -> f32 {
    x.par_chunks(1 << 16).map(|c| c.iter().sum::<f32>()).sum()
}

/// Fails unless `got` is `want` within [`SUM_TOLERANCE`] of the sum of magnitudes.
pub fn check_sum(what: &str, got: f32, want: f64, x: &[f32]) -> Result<()> {
    let scale: f64 = x
        .par_iter()
        .map(|&v| f64::from(v.abs()))
        .sum::<f64>()
        .max(1.0);
    let err = (f64::from(got) - want).abs() / scale;
    if err > SUM_TOLERANCE {
        bail!("{what}: sum {got}, expected {want} (error {err:.2e} of the magnitudes)");
    }
    Ok(())
}

/// The compaction by hand with rayon, in order.
pub fn rayon_compact(x: &[f32], out: &mut Vec<f32>) {
    out.clear();
    out.par_extend(x.par_iter().copied().filter(|&v| v > THRESHOLD));
}

/// Fails unless `got` is exactly `want` (the same elements in the same order).
pub fn check_compact(what: &str, got: &[f32], want: &[f32]) -> Result<()> {
    if got.len() != want.len() {
        bail!(
            "{what}: kept {} elements, expected {}",
            got.len(),
            want.len()
        );
    }
    match got
        .iter()
        .zip(want)
        .position(|(g, w)| g.to_bits() != w.to_bits())
    {
        Some(i) => bail!("{what}: element {i} is {}, expected {}", got[i], want[i]),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rayon_baselines_agree_with_plain_loops_and_the_checks_catch_errors() {
        let x = random_in(100_000, 71, -1.0, 1.0);
        let want_sum = exact_sum(&x);
        check_sum("rayon", rayon_sum(&x), want_sum, &x).unwrap();
        assert!(check_sum("off", rayon_sum(&x) + 1.0, want_sum, &x).is_err());
        let want: Vec<f32> = x.iter().copied().filter(|&v| v > THRESHOLD).collect();
        let mut out = Vec::new();
        rayon_compact(&x, &mut out);
        check_compact("rayon", &out, &want).unwrap();
        out.swap(0, 1);
        assert!(check_compact("swapped", &out, &want).is_err());
        out.swap(0, 1);
        assert!(check_compact("short", &out[1..], &want).is_err());
    }
}
