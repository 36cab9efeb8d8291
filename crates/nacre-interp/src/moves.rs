//! Sequentialisation of parallel moves (block-parameter passing).
//!
//! A jump `jump b(x, y)` to a block with parameters `(p, q)` assigns `p := x` and `q := y`
//! *simultaneously*: `jump b(q, p)` into `(p, q)` swaps. [`sequentialize`] turns such a set of
//! simultaneous moves into an equivalent sequence of single copies, using one scratch slot to
//! break cycles.

use crate::ops::Reg;

/// Orders the parallel moves `dst := src` (destinations pairwise distinct) into sequential
/// copies `(dst, src)` with the same effect, appending them to `out`. `scratch` must be a slot
/// that is neither a source nor a destination; it is used to break cycles (one slot always
/// suffices).
pub(crate) fn sequentialize(moves: &[(Reg, Reg)], scratch: Reg, out: &mut Vec<(Reg, Reg)>) {
    let mut pending: Vec<(Reg, Reg)> = moves.iter().copied().filter(|(d, s)| d != s).collect();
    while !pending.is_empty() {
        // A move whose destination no other pending move still reads can go first.
        let ready = pending
            .iter()
            .position(|&(d, _)| !pending.iter().any(|&(_, s)| s == d));
        match ready {
            Some(i) => out.push(pending.remove(i)),
            None => {
                // Every destination is still read: the pending moves form cycles. Save the first
                // destination in the scratch slot and let its readers read the copy instead;
                // that opens the cycle into a chain.
                let (d, _) = pending[0];
                out.push((scratch, d));
                for m in pending.iter_mut() {
                    if m.1 == d {
                        m.1 = scratch;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the sequential copies on a register file and returns it.
    fn run(regs: &[u64], seq: &[(Reg, Reg)]) -> Vec<u64> {
        let mut r = regs.to_vec();
        for &(d, s) in seq {
            r[d as usize] = r[s as usize];
        }
        r
    }

    /// The effect of the parallel moves, computed directly.
    fn parallel(regs: &[u64], moves: &[(Reg, Reg)]) -> Vec<u64> {
        let mut r = regs.to_vec();
        for &(d, s) in moves {
            r[d as usize] = regs[s as usize];
        }
        r
    }

    fn check(moves: &[(Reg, Reg)]) {
        let scratch = 9;
        let regs: Vec<u64> = (0..10).map(|i| 100 + i).collect();
        let mut seq = Vec::new();
        sequentialize(moves, scratch, &mut seq);
        let mut got = run(&regs, &seq);
        let mut want = parallel(&regs, moves);
        got[scratch as usize] = 0;
        want[scratch as usize] = 0;
        assert_eq!(got, want, "moves {moves:?} sequenced as {seq:?}");
    }

    #[test]
    fn swaps_and_rotations() {
        check(&[(0, 1), (1, 0)]);
        check(&[(0, 1), (1, 2), (2, 0)]);
        check(&[(0, 1), (1, 2), (2, 0), (3, 4), (4, 3)]);
        check(&[(0, 0), (1, 1)]);
    }

    #[test]
    fn chains_and_fanout() {
        check(&[(0, 1), (1, 2), (2, 3)]);
        check(&[(2, 3), (1, 2), (0, 1)]);
        check(&[(0, 5), (1, 5), (2, 5)]);
        check(&[(0, 1), (1, 0), (2, 0), (3, 1)]);
        check(&[(1, 0), (2, 1), (0, 2), (3, 2), (4, 3)]);
    }

    #[test]
    fn exhaustive_permutations_of_four() {
        let mut perm = [0u32, 1, 2, 3];
        // Heap's algorithm over all 24 permutations, each also with a shared source.
        fn visit(k: usize, perm: &mut [u32; 4]) {
            if k == 1 {
                let moves: Vec<(Reg, Reg)> = perm
                    .iter()
                    .enumerate()
                    .map(|(d, &s)| (d as Reg, s))
                    .collect();
                check(&moves);
                let mut with_copy = moves.clone();
                with_copy.push((5, perm[0]));
                check(&with_copy);
                return;
            }
            for i in 0..k {
                visit(k - 1, perm);
                if k.is_multiple_of(2) {
                    perm.swap(i, k - 1);
                } else {
                    perm.swap(0, k - 1);
                }
            }
        }
        visit(4, &mut perm);
    }
}
