//! The atomics benchmarks: a 256-bin histogram of 16M values (`histogram256_16777216`, the
//! corpus's `run_histogram256`: each block counts its grid-stride share in a shared histogram
//! with block-scoped atomics, then adds its nonzero bins to the global one with device-scoped
//! atomics), beside `torch.bincount(x, minlength=256)` on the GPU and a hand-written rayon
//! histogram (one local histogram per task, summed) on the CPU.
//!
//! The values are `u32` in `[0, 256)` (PyTorch gets them as `int32`: the same bytes); every
//! first result is compared with the exact counts. The timed calls add into the same bins (a
//! caller zeroes them once), so a call is the histogram kernel alone.

use super::random_in;
use rayon::prelude::*;

/// Values in the histogram benchmark.
pub const HISTOGRAM_SIZE: usize = 1 << 24;
/// Bins.
pub const BINS: usize = 256;

/// The suffix of the histogram benchmark's names.
pub fn histogram_name() -> String {
    format!("histogram256_{HISTOGRAM_SIZE}")
}

/// The values (`[0, 256)`) and their exact counts.
pub fn histogram_case() -> (Vec<u32>, Vec<u32>) {
    let x: Vec<u32> = random_in(HISTOGRAM_SIZE, 47, 0.0, 256.0)
        .into_iter()
        .map(|v| (v as u32).min(255))
        .collect();
    let mut want = vec![0u32; BINS];
    for &v in &x {
        want[v as usize] += 1;
    }
    (x, want)
}

/// The histogram by hand with rayon: a local histogram per task, summed.
pub fn rayon_histogram(x: &[u32], bins: &mut [u32]) {
    let counts = x
        .par_chunks(1 << 16)
        .fold(
            || [0u32; BINS],
            |mut h, chunk| {
                for &v in chunk {
                    h[(v & 255) as usize] += 1;
                }
                h
            },
        )
        .reduce(
            || [0u32; BINS],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
                a
            },
        );
    bins.copy_from_slice(&counts);
}

/// Checks counts exactly.
pub fn check_counts(what: &str, got: &[u32], want: &[u32]) -> anyhow::Result<()> {
    match got.iter().zip(want).position(|(g, w)| g != w) {
        Some(i) => anyhow::bail!("{what}: bin {i} holds {}, expected {}", got[i], want[i]),
        None if got.len() != want.len() => {
            anyhow::bail!("{what}: {} bins, expected {}", got.len(), want.len())
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rayon_counts_are_exact_and_the_check_catches_a_wrong_bin() {
        let x: Vec<u32> = (0..100_000u32)
            .map(|i| i.wrapping_mul(2_654_435_761) >> 24)
            .collect();
        let mut want = vec![0u32; BINS];
        for &v in &x {
            want[v as usize] += 1;
        }
        let mut bins = vec![0u32; BINS];
        rayon_histogram(&x, &mut bins);
        check_counts("rayon", &bins, &want).unwrap();
        bins[7] += 1;
        assert!(check_counts("rayon", &bins, &want).is_err());
    }
}
