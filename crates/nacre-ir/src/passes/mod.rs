//! The target-independent optimisation passes and the pass manager.
//!
//! Each pass works on one [`Function`] of a verified module, keeps it valid, and returns a
//! [`PassStats`] saying what it changed:
//!
//! - [`const_fold()`]: constant folding and propagation, exact algebraic identities, constant
//!   branches, block parameters that always receive the same value;
//! - [`simplify_cfg()`]: unreachable blocks, jump threading, block merging;
//! - [`dce()`]: dead pure instructions and dead block parameters.
//!
//! [`optimize`] runs the enabled passes on every function of a verified module. All passes are
//! linear or near-linear in the size of the function. Analyses are in [`crate::analysis`];
//! passes that exist for kernels live in the `nacre-kernel` crate.

pub mod const_fold;
pub mod dce;
pub mod simplify_cfg;
pub(crate) mod support;

pub use const_fold::const_fold;
pub use dce::dce;
pub use simplify_cfg::simplify_cfg;

use crate::entities::FuncId;
use crate::function::Function;
use crate::module::Module;
use crate::verifier::{check_function, VerifiedModule};
use std::ops::AddAssign;

/// The most rounds of `const_fold -> simplify_cfg -> dce` [`optimize`] runs per function.
pub const MAX_ROUNDS: usize = 6;

/// Which passes run.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct PassOptions {
    /// Constant folding and propagation.
    pub const_fold: bool,
    /// Dead-code elimination.
    pub dce: bool,
    /// CFG simplification.
    pub simplify_cfg: bool,
}

impl PassOptions {
    /// No pass enabled (useful to see the IR as traced).
    pub const fn none() -> PassOptions {
        PassOptions {
            const_fold: false,
            dce: false,
            simplify_cfg: false,
        }
    }
}

impl Default for PassOptions {
    fn default() -> Self {
        PassOptions {
            const_fold: true,
            dce: true,
            simplify_cfg: true,
        }
    }
}

/// What the passes changed.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct PassStats {
    /// Instructions and block parameters replaced by a constant or by an existing value.
    pub folded: usize,
    /// Instructions deleted (dead code, instructions replaced by an existing value, jumps of
    /// merged or bypassed blocks, contents of unreachable blocks).
    pub removed_insts: usize,
    /// Blocks removed, bypassed or merged into their predecessor.
    pub removed_blocks: usize,
    /// Block parameters removed (with their jump arguments).
    pub removed_params: usize,
    /// Branches turned into jumps, and edges redirected past blocks that only jump.
    pub simplified_branches: usize,
    /// Rounds of `const_fold -> simplify_cfg -> dce` run, summed over functions.
    pub rounds: usize,
}

impl PassStats {
    /// True if the code changed (the counter `rounds` does not count).
    pub fn changed(&self) -> bool {
        self.folded
            + self.removed_insts
            + self.removed_blocks
            + self.removed_params
            + self.simplified_branches
            > 0
    }
}

impl AddAssign for PassStats {
    fn add_assign(&mut self, other: PassStats) {
        self.folded += other.folded;
        self.removed_insts += other.removed_insts;
        self.removed_blocks += other.removed_blocks;
        self.removed_params += other.removed_params;
        self.simplified_branches += other.simplified_branches;
        self.rounds += other.rounds;
    }
}

/// Runs the enabled passes on every function of a verified module: rounds of
/// `const_fold -> simplify_cfg -> dce` while something changes (at most [`MAX_ROUNDS`]).
/// Returns the module, still verified (passes preserve validity), and the sum of what changed.
///
/// In debug builds every function is verified again after each pass that changed it, and a
/// pass that produced invalid IR panics with the verifier's message: that is an internal bug.
pub fn optimize(module: VerifiedModule, options: &PassOptions) -> (VerifiedModule, PassStats) {
    optimize_observed(module, options, &mut |_, _| {})
}

/// [`optimize`], calling `observer` with the pass name (`const_fold`, `simplify_cfg` or `dce`)
/// and the module after every pass that changed a function (for stage dumps).
pub fn optimize_observed(
    module: VerifiedModule,
    options: &PassOptions,
    observer: &mut dyn FnMut(&str, &Module),
) -> (VerifiedModule, PassStats) {
    let mut module = module.into_inner();
    let mut total = PassStats::default();
    let ids: Vec<FuncId> = module.functions.keys().collect();
    for id in ids {
        total += optimise_function(&mut module, id, options, observer);
    }
    (VerifiedModule::trusted(module), total)
}

/// The pass pipeline on one (valid) function.
///
/// A pass is skipped when nothing changed since it last ran and found nothing to do (or, for
/// the idempotent [`dce()`], since it last ran at all), so the final round that confirms the
/// fixpoint only runs the passes that can still find work.
fn optimise_function(
    module: &mut Module,
    id: FuncId,
    options: &PassOptions,
    observer: &mut dyn FnMut(&str, &Module),
) -> PassStats {
    type Pass = fn(&mut Function) -> PassStats;
    // (enabled, name, pass, idempotent)
    let pipeline: [(bool, &str, Pass, bool); 3] = [
        (options.const_fold, "const_fold", const_fold, false),
        (options.simplify_cfg, "simplify_cfg", simplify_cfg, false),
        (options.dce, "dce", dce, true),
    ];
    let mut total = PassStats::default();
    // Number of pass runs that changed the function so far.
    let mut epoch = 0usize;
    // For each pass, the epoch at which it is known to have nothing to do.
    let mut clean_at: [Option<usize>; 3] = [None; 3];
    if pipeline.iter().any(|p| p.0) {
        for _ in 0..MAX_ROUNDS {
            let mut round = PassStats::default();
            for (i, &(enabled, name, pass, idempotent)) in pipeline.iter().enumerate() {
                if !enabled || clean_at[i] == Some(epoch) {
                    continue;
                }
                let stats = pass(&mut module.functions[id]);
                if stats.changed() {
                    epoch += 1;
                    debug_check(module, id, name);
                    observer(name, module);
                    if idempotent {
                        clean_at[i] = Some(epoch);
                    }
                } else {
                    clean_at[i] = Some(epoch);
                }
                round += stats;
            }
            total += round;
            total.rounds += 1;
            if !round.changed() {
                break;
            }
        }
    }
    total
}

/// In debug builds, panics if function `id` no longer verifies after pass `name`.
fn debug_check(module: &Module, id: FuncId, name: &str) {
    if cfg!(debug_assertions) {
        if let Err(e) = check_function(module, &module.functions[id]) {
            panic!(
                "internal error: pass `{name}` produced invalid IR: {e}\n{}",
                module.functions[id]
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::FunctionBuilder;
    use crate::entities::Value;
    use crate::instructions::{BinaryOp, CmpOp, UnaryOp};
    use crate::test_util::{assert_valid, eval, k, kb, new_func};
    use crate::types::Type;
    use insta::assert_snapshot;
    use std::time::{Duration, Instant};

    fn module_of(f: Function) -> Module {
        let mut m = Module::new();
        let id = m.add_function(f);
        m.entry = Some(id);
        m
    }

    /// Verifies `m`, runs the passes on it and returns the result.
    fn run_passes(m: &mut Module, options: &PassOptions) -> PassStats {
        let (out, stats) = optimize(crate::verify(std::mem::take(m)).unwrap(), options);
        *m = out.into_inner();
        stats
    }

    /// `f(x) = if x < 0 { if x < 1 { .. } else { .. } } else { .. }`, `depth` levels deep, with
    /// a join block (and a join parameter) per level. Constant conditions when `constant`.
    fn nested_ifs(depth: usize, constant: bool) -> Function {
        let mut f = new_func(&[Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let mut acc = b.create_entry_block()[0];
        let mut joins = Vec::with_capacity(depth);
        for level in 0..depth {
            let bound = k(&mut b, Type::I32, level as i64);
            let c = if constant {
                kb(&mut b, level % 3 != 2)
            } else {
                b.cmp(CmpOp::Lt, acc, bound)
            };
            let (then, els, join) = (b.create_block(), b.create_block(), b.create_block());
            let param = b.append_block_param(join, Type::I32);
            b.branch(c, then, vec![], els, vec![]);
            b.switch_to_block(els);
            let three = k(&mut b, Type::I32, 3);
            let e = b.binary(BinaryOp::Mul, acc, three);
            b.jump(join, vec![e]);
            b.switch_to_block(then);
            acc = b.binary(BinaryOp::Add, acc, bound);
            joins.push((join, param));
        }
        for (join, param) in joins.into_iter().rev() {
            b.jump(join, vec![acc]);
            b.switch_to_block(join);
            acc = param;
        }
        b.ret(Some(acc));
        f
    }

    #[test]
    fn pipeline_folds_constant_nested_ifs_to_one_block() {
        let f = nested_ifs(6, true);
        let expect = eval(&f, &[5]);
        let mut m = module_of(f);
        let stats = run_passes(&mut m, &PassOptions::default());
        assert!(stats.changed() && stats.rounds >= 2, "{stats:?}");
        let f = &m.functions[m.entry.unwrap()];
        assert_eq!(eval(f, &[5]), expect);
        assert_snapshot!(f.to_string());
    }

    #[test]
    fn pipeline_on_nested_ifs_keeps_the_structure_and_values() {
        let f = nested_ifs(3, false);
        let inputs = [0u64, 1, 2, 3, (-7i32) as u32 as u64, 1 << 30];
        let before: Vec<_> = inputs.iter().map(|&x| eval(&f, &[x])).collect();
        let mut m = module_of(f);
        run_passes(&mut m, &PassOptions::default());
        let f = &m.functions[m.entry.unwrap()];
        let after: Vec<_> = inputs.iter().map(|&x| eval(f, &[x])).collect();
        assert_eq!(before, after);
        assert_snapshot!(f.to_string());
    }

    #[test]
    fn pipeline_simplifies_a_traced_loop_and_annotates_it() {
        // sum = 0; for i in 0..n { sum += i * 1 + 0 }; dead code after the return.
        let mut f = new_func(&[Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let n = b.create_entry_block()[0];
        let (head, body, latch, exit) = (
            b.create_block(),
            b.create_block(),
            b.create_block(),
            b.create_block(),
        );
        let zero = k(&mut b, Type::I32, 0);
        b.jump(head, vec![zero, zero, n]);
        let [i, sum, limit] = [(); 3].map(|_| b.append_block_param(head, Type::I32));
        b.switch_to_block(head);
        let c = b.cmp(CmpOp::Lt, i, limit);
        b.branch(c, body, vec![], exit, vec![]);
        b.switch_to_block(body);
        let one = k(&mut b, Type::I32, 1);
        let zero2 = k(&mut b, Type::I32, 0);
        let t = b.binary(BinaryOp::Mul, i, one);
        let t = b.binary(BinaryOp::Add, t, zero2);
        let sum2 = b.binary(BinaryOp::Add, sum, t);
        let i2 = b.binary(BinaryOp::Add, i, one);
        let _dead = b.binary(BinaryOp::Xor, i2, sum2);
        b.jump(latch, vec![]);
        b.switch_to_block(latch);
        b.jump(head, vec![i2, sum2, limit]);
        b.switch_to_block(exit);
        b.ret(Some(sum));
        let dead = k(&mut b, Type::I32, 9);
        b.ret(Some(dead));
        let before = eval(&f, &[10]);
        let mut m = module_of(f);
        run_passes(&mut m, &PassOptions::default());
        let f = &m.functions[m.entry.unwrap()];
        assert_eq!(crate::analysis::compute_loops(f).headers.len(), 1);
        assert_eq!(eval(f, &[10]), before);
        assert_eq!(before, Ok(Some(45)));
        assert_snapshot!(crate::printer::with_loops(f).to_string());
    }

    #[test]
    fn disabled_passes_do_nothing() {
        let f = nested_ifs(4, true);
        let text = f.to_string();
        let mut m = module_of(f);
        let stats = run_passes(&mut m, &PassOptions::none());
        assert_eq!(stats, PassStats::default());
        assert_eq!(m.functions[m.entry.unwrap()].to_string(), text);
    }

    #[test]
    fn jumps_back_to_the_entry_block_are_handled() {
        // f(n, acc) = if n == 0 { acc } else { f(n - 1, acc + n * 1) }, as a loop on the entry.
        let mut f = new_func(&[Type::I32, Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let p = b.create_entry_block();
        let entry = b.current_block().unwrap();
        let (done, again, fwd) = (b.create_block(), b.create_block(), b.create_block());
        let zero = k(&mut b, Type::I32, 0);
        let c = b.cmp(CmpOp::Eq, p[0], zero);
        b.branch(c, done, vec![], again, vec![]);
        b.switch_to_block(done);
        b.ret(Some(p[1]));
        b.switch_to_block(again);
        let one = k(&mut b, Type::I32, 1);
        let n1 = b.binary(BinaryOp::Sub, p[0], one);
        let t = b.binary(BinaryOp::Mul, p[0], one);
        let acc = b.binary(BinaryOp::Add, p[1], t);
        b.jump(fwd, vec![n1, acc]);
        let q = [
            b.append_block_param(fwd, Type::I32),
            b.append_block_param(fwd, Type::I32),
        ];
        b.switch_to_block(fwd);
        b.jump(entry, vec![q[0], q[1]]);
        let before = eval(&f, &[10, 0]);
        let mut m = module_of(f);
        run_passes(&mut m, &PassOptions::default());
        let f = &m.functions[m.entry.unwrap()];
        assert_eq!(crate::analysis::compute_loops(f).headers.len(), 1);
        assert_eq!(f.layout[0], entry);
        assert_eq!(eval(f, &[10, 0]), before);
        assert_eq!(before, Ok(Some(55)));
        assert_snapshot!(crate::printer::with_loops(f).to_string());
    }

    #[test]
    fn the_observer_sees_every_changing_pass() {
        let m = module_of(nested_ifs(3, true));
        let mut seen = Vec::new();
        let (_, stats) = optimize_observed(
            crate::verify(m).unwrap(),
            &PassOptions::default(),
            &mut |pass: &str, m: &Module| {
                assert_valid(&m.functions[m.entry.unwrap()]);
                seen.push(pass.to_string());
            },
        );
        assert!(stats.changed());
        assert_eq!(seen.first().map(String::as_str), Some("const_fold"));
        assert!(
            seen.iter().any(|p| p == "simplify_cfg") && seen.iter().any(|p| p == "dce"),
            "{seen:?}"
        );
    }

    #[test]
    fn deep_nested_ifs_optimise_in_near_linear_time() {
        let f = nested_ifs(1000, false);
        let inputs = [0u64, 5, 999, (-1i32) as u32 as u64];
        let before: Vec<_> = inputs.iter().map(|&x| eval(&f, &[x])).collect();
        let mut m = module_of(f);
        let start = Instant::now();
        run_passes(&mut m, &PassOptions::default());
        let elapsed = start.elapsed();
        let f = &m.functions[m.entry.unwrap()];
        let after: Vec<_> = inputs.iter().map(|&x| eval(f, &[x])).collect();
        assert_eq!(before, after);
        // Generous even for unoptimised builds that also verify after every pass; a quadratic
        // pass would take far longer.
        assert!(elapsed < Duration::from_secs(2), "took {elapsed:?}");

        let f = nested_ifs(5000, true);
        let mut m = module_of(f);
        let start = Instant::now();
        run_passes(&mut m, &PassOptions::default());
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "took {:?}",
            start.elapsed()
        );
        assert_eq!(m.functions[m.entry.unwrap()].layout.len(), 1);
    }

    /// `depth` nested counted loops (each running `limit` times), then the counters' sum.
    fn nested_loops(depth: usize, limit: i64) -> Function {
        let mut f = new_func(&[], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        b.create_entry_block();
        let zero = k(&mut b, Type::I32, 0);
        let one = k(&mut b, Type::I32, 1);
        let lim = k(&mut b, Type::I32, limit);
        let mut levels = Vec::with_capacity(depth);
        for _ in 0..depth {
            let (head, body, exit) = (b.create_block(), b.create_block(), b.create_block());
            b.jump(head, vec![zero]);
            let i = b.append_block_param(head, Type::I32);
            b.switch_to_block(head);
            let c = b.cmp(CmpOp::Lt, i, lim);
            b.branch(c, body, vec![], exit, vec![]);
            b.switch_to_block(body);
            levels.push((head, i, exit));
        }
        for (head, i, exit) in levels.into_iter().rev() {
            let i2 = b.binary(BinaryOp::Add, i, one);
            b.jump(head, vec![i2]);
            b.switch_to_block(exit);
        }
        b.ret(Some(zero));
        f
    }

    /// `count` if/else diamonds in sequence, each joining a value.
    fn diamonds(count: usize) -> Function {
        let mut f = new_func(&[Type::I32], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let mut acc = b.create_entry_block()[0];
        for i in 0..count {
            let bound = k(&mut b, Type::I32, i as i64);
            let c = b.cmp(CmpOp::Lt, acc, bound);
            let (t, e, j) = (b.create_block(), b.create_block(), b.create_block());
            b.branch(c, t, vec![], e, vec![]);
            b.switch_to_block(t);
            let x = b.binary(BinaryOp::Add, acc, bound);
            b.jump(j, vec![x]);
            b.switch_to_block(e);
            b.jump(j, vec![acc]);
            acc = b.append_block_param(j, Type::I32);
            b.switch_to_block(j);
        }
        b.ret(Some(acc));
        f
    }

    #[test]
    fn deep_loop_nests_and_long_sequences_stay_correct() {
        let f = nested_loops(50, 2);
        let mut m = module_of(f);
        run_passes(&mut m, &PassOptions::default());
        let g = &m.functions[m.entry.unwrap()];
        let info = crate::analysis::compute_loops(g);
        assert_eq!(info.headers.len(), 50);
        assert_eq!(info.headers.iter().map(|&h| info.depth[h]).max(), Some(50));

        let f = diamonds(300);
        let before: Vec<_> = [0u64, 100, 5000].iter().map(|&x| eval(&f, &[x])).collect();
        let mut m = module_of(f);
        run_passes(&mut m, &PassOptions::default());
        let g = &m.functions[m.entry.unwrap()];
        let after: Vec<_> = [0u64, 100, 5000].iter().map(|&x| eval(g, &[x])).collect();
        assert_eq!(before, after);
    }

    /// Timing of the whole pipeline (run with `--release -- --ignored --nocapture`).
    #[test]
    #[ignore = "benchmark"]
    fn bench_pipeline() {
        let cases: Vec<(String, Function)> = vec![
            ("100 nested ifs".into(), nested_ifs(100, false)),
            (
                "100 nested ifs, constant conditions".into(),
                nested_ifs(100, true),
            ),
            ("1000 nested ifs".into(), nested_ifs(1000, false)),
            ("10000 nested ifs".into(), nested_ifs(10000, false)),
            ("100 nested loops".into(), nested_loops(100, 2)),
            ("1000 nested loops".into(), nested_loops(1000, 2)),
            ("1000 sequential diamonds".into(), diamonds(1000)),
            ("10000 sequential diamonds".into(), diamonds(10000)),
        ];
        for (name, f) in cases {
            let iters = (200_000 / f.live_inst_count()).clamp(3, 1000) as u32;
            let start = Instant::now();
            for _ in 0..iters {
                let mut m = module_of(f.clone());
                std::hint::black_box(run_passes(&mut m, &PassOptions::default()));
            }
            let per = start.elapsed() / iters;
            let clone_start = Instant::now();
            for _ in 0..iters {
                std::hint::black_box(module_of(f.clone()));
            }
            let clone = clone_start.elapsed() / iters;
            println!(
                "{name} ({} insts): {:?} per run_passes, excluding {clone:?} of cloning",
                f.live_inst_count(),
                per.saturating_sub(clone)
            );
        }
    }

    /// A xorshift generator, so that the random programs are reproducible.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn percent(&mut self, p: usize) -> bool {
            self.below(100) < p
        }
        fn pick(&mut self, pool: &[Value]) -> Value {
            pool[self.below(pool.len())]
        }
    }

    /// Generates random structured programs `(i32, i32, bool) -> i32`: arithmetic (including
    /// trapping division), comparisons, selects, casts, if/else with join parameters (sometimes
    /// on constant conditions, sometimes with empty arms) and bounded loops carrying values.
    struct Gen<'a, 'f> {
        b: &'a mut FunctionBuilder<'f>,
        rng: Rng,
        ints: Vec<Value>,
        bools: Vec<Value>,
        budget: usize,
    }

    impl Gen<'_, '_> {
        fn int_operand(&mut self) -> Value {
            if self.rng.percent(30) {
                let c = [0, 1, -1, 2, 3, 7, 31, 32, i32::MIN as i64][self.rng.below(9)];
                k(self.b, Type::I32, c)
            } else {
                self.rng.pick(&self.ints)
            }
        }

        fn bool_operand(&mut self) -> Value {
            if self.rng.percent(20) {
                let v = self.rng.percent(50);
                kb(self.b, v)
            } else {
                self.rng.pick(&self.bools)
            }
        }

        fn stmts(&mut self, depth: usize) {
            let n = 1 + self.rng.below(6);
            for _ in 0..n {
                if self.budget == 0 {
                    return;
                }
                self.budget -= 1;
                self.stmt(depth);
            }
        }

        fn stmt(&mut self, depth: usize) {
            use BinaryOp::*;
            match self.rng.below(12) {
                0..=4 => {
                    let ops = [Add, Sub, Mul, And, Or, Xor, Shl, Shr, Min, Max, Div, Rem];
                    let op = ops[self.rng.below(ops.len())];
                    let a = self.int_operand();
                    let b = if self.rng.percent(20) {
                        a
                    } else {
                        self.int_operand()
                    };
                    let v = self.b.binary(op, a, b);
                    self.ints.push(v);
                }
                5 => {
                    let op = CmpOp::ALL[self.rng.below(CmpOp::ALL.len())];
                    let a = self.int_operand();
                    let b = if self.rng.percent(20) {
                        a
                    } else {
                        self.int_operand()
                    };
                    let v = self.b.cmp(op, a, b);
                    self.bools.push(v);
                }
                6 => {
                    let a = self.bool_operand();
                    let v = match self.rng.below(3) {
                        0 => self.b.unary(UnaryOp::Not, a),
                        1 => {
                            let b = self.bool_operand();
                            self.b.binary(And, a, b)
                        }
                        _ => {
                            let b = self.bool_operand();
                            self.b.binary(Xor, a, b)
                        }
                    };
                    self.bools.push(v);
                }
                7 => {
                    let c = self.bool_operand();
                    let a = self.int_operand();
                    let b = if self.rng.percent(25) {
                        a
                    } else {
                        self.int_operand()
                    };
                    let v = self.b.select(c, a, b);
                    self.ints.push(v);
                }
                8 => {
                    let a = self.int_operand();
                    let via = [
                        Type::I64,
                        Type::U8,
                        Type::I8,
                        Type::U64,
                        Type::F64,
                        Type::I32,
                    ][self.rng.below(6)];
                    let w = self.b.cast(a, via);
                    let v = self.b.cast(w, Type::I32);
                    self.ints.push(v);
                    let c = self.bool_operand();
                    let v = self.b.cast(c, Type::I32);
                    self.ints.push(v);
                }
                9 => {
                    let a = self.int_operand();
                    let v = self.b.unary(
                        [UnaryOp::Neg, UnaryOp::Not, UnaryOp::Abs][self.rng.below(3)],
                        a,
                    );
                    self.ints.push(v);
                }
                10 if depth < 4 => self.if_else(depth),
                11 if depth < 3 => self.counted_loop(depth),
                _ => {}
            }
        }

        fn if_else(&mut self, depth: usize) {
            let cond = if self.rng.percent(25) {
                let v = self.rng.percent(50);
                kb(self.b, v)
            } else {
                self.bool_operand()
            };
            let (then, els, join) = (
                self.b.create_block(),
                self.b.create_block(),
                self.b.create_block(),
            );
            let nparams = 1 + self.rng.below(3);
            let params: Vec<Value> = (0..nparams)
                .map(|_| self.b.append_block_param(join, Type::I32))
                .collect();
            // Arms sometimes receive a value through a parameter of their own.
            let mut arm_args = [vec![], vec![]];
            let mut arm_params = [vec![], vec![]];
            for (i, arm) in [then, els].into_iter().enumerate() {
                if self.rng.percent(40) {
                    arm_args[i].push(self.int_operand());
                    arm_params[i].push(self.b.append_block_param(arm, Type::I32));
                }
            }
            let [then_args, else_args] = arm_args;
            self.b.branch(cond, then, then_args, els, else_args);
            let saved = (self.ints.len(), self.bools.len());
            for (arm, params) in [then, els].into_iter().zip(arm_params) {
                self.b.switch_to_block(arm);
                self.ints.extend(params);
                if self.rng.percent(70) {
                    self.stmts(depth + 1);
                }
                let args = (0..nparams).map(|_| self.int_operand()).collect();
                self.b.jump(join, args);
                self.ints.truncate(saved.0);
                self.bools.truncate(saved.1);
            }
            self.b.switch_to_block(join);
            self.ints.extend(params);
        }

        fn counted_loop(&mut self, depth: usize) {
            let (head, body, exit) = (
                self.b.create_block(),
                self.b.create_block(),
                self.b.create_block(),
            );
            let zero = k(self.b, Type::I32, 0);
            let limit = k(self.b, Type::I32, self.rng.below(4) as i64);
            let ncarry = 1 + self.rng.below(2);
            let init: Vec<Value> = (0..ncarry).map(|_| self.int_operand()).collect();
            self.b.jump(head, [vec![zero], init].concat());
            let i = self.b.append_block_param(head, Type::I32);
            let carried: Vec<Value> = (0..ncarry)
                .map(|_| self.b.append_block_param(head, Type::I32))
                .collect();
            self.b.switch_to_block(head);
            let c = self.b.cmp(CmpOp::Lt, i, limit);
            self.b.branch(c, body, vec![], exit, vec![]);
            let saved = (self.ints.len(), self.bools.len());
            self.ints.push(i);
            self.ints.extend(&carried);
            self.b.switch_to_block(body);
            self.stmts(depth + 1);
            let one = k(self.b, Type::I32, 1);
            let i2 = self.b.binary(BinaryOp::Add, i, one);
            let next: Vec<Value> = carried
                .iter()
                .map(|&c| {
                    if self.rng.percent(30) {
                        c
                    } else {
                        self.int_operand()
                    }
                })
                .collect();
            self.b.jump(head, [vec![i2], next].concat());
            self.ints.truncate(saved.0);
            self.bools.truncate(saved.1);
            self.b.switch_to_block(exit);
            self.ints.push(i);
            self.ints.extend(carried);
        }
    }

    fn random_function(seed: u64) -> Function {
        let mut f = new_func(&[Type::I32, Type::I32, Type::BOOL], Some(Type::I32));
        let mut b = FunctionBuilder::new(&mut f);
        let p = b.create_entry_block();
        let mut g = Gen {
            b: &mut b,
            rng: Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
            ints: vec![p[0], p[1]],
            bools: vec![p[2]],
            budget: 80,
        };
        g.stmts(0);
        g.stmts(0);
        let mut r = g.int_operand();
        for _ in 0..g.rng.below(3) {
            let x = g.int_operand();
            r = g.b.binary(BinaryOp::Xor, r, x);
        }
        g.b.ret(Some(r));
        f
    }

    /// Runs every pass configuration on random programs and compares results with the original
    /// on a set of inputs. `NACRE_SEEDS=n` runs `n` programs instead of 400.
    #[test]
    fn passes_preserve_semantics_on_random_programs() {
        let inputs: Vec<[u64; 3]> = {
            let mut rng = Rng(12345);
            let mut v: Vec<[u64; 3]> = vec![
                [0, 0, 0],
                [1, 2, 1],
                [u32::MAX as u64, 7, 0],
                [0x8000_0000, u32::MAX as u64, 1],
            ];
            v.extend((0..8).map(|_| [rng.next() & 0xffff_ffff, rng.next() & 0xf, rng.next() & 1]));
            v
        };
        let configs = [
            PassOptions::default(),
            PassOptions {
                const_fold: true,
                ..PassOptions::none()
            },
            PassOptions {
                simplify_cfg: true,
                ..PassOptions::none()
            },
            PassOptions {
                dce: true,
                ..PassOptions::none()
            },
            PassOptions {
                const_fold: true,
                simplify_cfg: true,
                ..PassOptions::none()
            },
        ];
        let mut shrunk = (0usize, 0usize);
        for seed in 0..std::env::var("NACRE_SEEDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(400)
        {
            let f = random_function(seed);
            assert_valid(&f);
            let expect: Vec<_> = inputs.iter().map(|a| eval(&f, a)).collect();
            for options in &configs {
                let mut m = module_of(f.clone());
                run_passes(&mut m, options);
                let g = &m.functions[m.entry.unwrap()];
                assert_valid(g);
                for (a, want) in inputs.iter().zip(&expect) {
                    let got = eval(g, a);
                    assert_eq!(
                        &got, want,
                        "seed {seed}, {options:?}, input {a:?}\nbefore:\n{f}\nafter:\n{g}"
                    );
                }
                if *options == PassOptions::default() {
                    shrunk.0 += f.live_inst_count();
                    shrunk.1 += g.live_inst_count();
                    // A second run finds nothing left to do.
                    let again = run_passes(&mut m, options);
                    assert!(
                        !again.changed(),
                        "seed {seed}: not a fixpoint: {again:?}\n{}",
                        m.functions[m.entry.unwrap()]
                    );
                }
            }
        }
        assert!(
            shrunk.1 * 2 < shrunk.0,
            "the pipeline should remove much of the random code: {shrunk:?}"
        );
    }
}
