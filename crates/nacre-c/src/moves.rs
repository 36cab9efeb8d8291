//! Sequentialising parallel moves.
//!
//! A jump assigns all of the target block's parameters at once. When an argument is itself a
//! parameter of the target (a loop that swaps two values), assigning in order would read an
//! already overwritten variable. [`sequentialize`] orders the assignments so that every
//! variable is read before it is overwritten, saving a value in a temporary only to break a
//! cycle.

use nacre_ir::Value;

/// The source of an assignment.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Source {
    /// A value's variable.
    Value(Value),
    /// The temporary with this number.
    Temp(usize),
}

/// One step of a sequentialised parallel move.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Step {
    /// Declare temporary `temp` holding the current contents of `value`.
    Save {
        /// The temporary's number.
        temp: usize,
        /// The variable saved.
        value: Value,
    },
    /// Assign `src` to `dst`.
    Assign {
        /// The variable written.
        dst: Value,
        /// What is written.
        src: Source,
    },
}

/// Orders the parallel assignment `dst_i = src_i` (all sources read before any destination is
/// written) into a sequence of steps. Destinations must be distinct. Self-moves are dropped.
pub fn sequentialize(moves: &[(Value, Value)]) -> Vec<Step> {
    let mut pending: Vec<(Value, Source)> = moves
        .iter()
        .filter(|(dst, src)| dst != src)
        .map(|&(dst, src)| (dst, Source::Value(src)))
        .collect();
    let mut steps = Vec::with_capacity(pending.len());
    let mut temps = 0;
    while !pending.is_empty() {
        let free = pending
            .iter()
            .position(|(dst, _)| !pending.iter().any(|(_, src)| *src == Source::Value(*dst)));
        match free {
            Some(i) => {
                let (dst, src) = pending.remove(i);
                steps.push(Step::Assign { dst, src });
            }
            None => {
                // Every remaining destination is still to be read: the moves form cycles.
                // Saving one destination frees it.
                let value = pending[0].0;
                let temp = temps;
                temps += 1;
                steps.push(Step::Save { temp, value });
                for (_, src) in &mut pending {
                    if *src == Source::Value(value) {
                        *src = Source::Temp(temp);
                    }
                }
            }
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(n: u32) -> Value {
        Value::from_u32(n)
    }

    /// Runs the steps on an environment and returns the final values of the variables.
    fn run(steps: &[Step], env: &mut [u32]) {
        let mut temps = Vec::new();
        for s in steps {
            match *s {
                Step::Save { temp, value } => {
                    assert_eq!(temp, temps.len());
                    temps.push(env[value.as_u32() as usize]);
                }
                Step::Assign { dst, src } => {
                    env[dst.as_u32() as usize] = match src {
                        Source::Value(v) => env[v.as_u32() as usize],
                        Source::Temp(t) => temps[t],
                    }
                }
            }
        }
    }

    fn check(moves: &[(u32, u32)]) -> Vec<Step> {
        let moves: Vec<(Value, Value)> = moves.iter().map(|&(d, s)| (v(d), v(s))).collect();
        let steps = sequentialize(&moves);
        let mut env: Vec<u32> = (0..16).map(|i| 100 + i).collect();
        let expected = {
            let mut e = env.clone();
            for (d, s) in &moves {
                e[d.as_u32() as usize] = env[s.as_u32() as usize];
            }
            e
        };
        run(&steps, &mut env);
        assert_eq!(env, expected);
        steps
    }

    #[test]
    fn independent_moves_keep_order() {
        let steps = check(&[(1, 5), (2, 6)]);
        assert_eq!(
            steps,
            [
                Step::Assign {
                    dst: v(1),
                    src: Source::Value(v(5))
                },
                Step::Assign {
                    dst: v(2),
                    src: Source::Value(v(6))
                }
            ]
        );
    }

    #[test]
    fn swap_uses_one_temporary() {
        let steps = check(&[(1, 2), (2, 1)]);
        assert_eq!(
            steps
                .iter()
                .filter(|s| matches!(s, Step::Save { .. }))
                .count(),
            1
        );
    }

    #[test]
    fn chains_and_cycles() {
        check(&[(1, 2), (2, 3), (3, 4)]);
        check(&[(1, 2), (2, 3), (3, 1)]);
        check(&[(1, 2), (2, 1), (3, 4), (4, 3), (5, 5), (6, 1)]);
        check(&[(1, 1), (2, 2)]);
        check(&[(1, 2), (2, 1), (3, 2)]);
    }
}
