use super::*;
use crate::builder::FunctionBuilder;
use crate::function::FuncKind;
use crate::instructions::Dim;

fn iv(lo: i128, hi: i128) -> Option<Interval> {
    Some(Interval::new(lo, hi))
}

/// The block-sum shape: `s` halves from 128 while `s > 0`, and `t + s` is formed under
/// `t < s` with `t` a thread index of a 256-thread block.
struct Reduction {
    func: Function,
    t: Value,
    s: Value,
    sum: Value,
    body: Block,
    quotient: Value,
}

fn reduction() -> Reduction {
    let mut t = None;
    let mut parts = None;
    let func = FunctionBuilder::build("r", FuncKind::Kernel, &[], None, |b, _| {
        let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
        let init = b.const_u32(128);
        let header = b.create_block();
        let s = b.append_block_param(header, Type::U32);
        let test = b.create_block();
        let body = b.create_block();
        let latch = b.create_block();
        let exit = b.create_block();
        b.jump(header, vec![init]);
        b.switch_to_block(header);
        let zero = b.const_u32(0);
        let more = b.cmp(CmpOp::Gt, s, zero);
        b.branch(more, test, vec![], exit, vec![]);
        b.switch_to_block(test);
        let active = b.cmp(CmpOp::Lt, tid, s);
        b.branch(active, body, vec![], latch, vec![]);
        b.switch_to_block(body);
        let sum = b.binary(BinaryOp::Add, tid, s);
        b.jump(latch, vec![]);
        b.switch_to_block(latch);
        let two = b.const_u32(2);
        let q = b.binary(BinaryOp::Div, s, two);
        b.jump(header, vec![q]);
        b.switch_to_block(exit);
        b.ret(None);
        t = Some(tid);
        parts = Some((s, sum, body, q));
    });
    let (s, sum, body, quotient) = parts.unwrap();
    Reduction {
        func,
        t: t.unwrap(),
        s,
        sum,
        body,
        quotient,
    }
}

fn bounds_256() -> GpuBounds {
    GpuBounds {
        block: [256, 1, 1],
        ..GpuBounds::LIMITS
    }
}

#[test]
fn a_halving_loop_parameter_stays_within_its_start() {
    let r = reduction();
    let ranges = Ranges::compute(&r.func, bounds_256());
    assert_eq!(ranges.range(&r.func, r.s), iv(0, 128));
    assert_eq!(ranges.range(&r.func, r.quotient), iv(0, 64));
    assert_eq!(ranges.range(&r.func, r.t), iv(0, 255));
}

#[test]
fn branch_conditions_narrow_values_where_they_hold() {
    let r = reduction();
    let ranges = Ranges::compute(&r.func, bounds_256());
    // Globally the sum may reach 255 + 128; under `s > 0` and `t < s` it stays below 256.
    assert_eq!(ranges.range(&r.func, r.sum), iv(0, 383));
    assert_eq!(ranges.at(&r.func, r.t, r.body), iv(0, 127));
    assert_eq!(ranges.at(&r.func, r.s, r.body), iv(1, 128));
    assert_eq!(ranges.at(&r.func, r.sum, r.body), iv(1, 255));
}

#[test]
fn without_a_known_block_size_the_launch_limit_bounds_thread_indices() {
    let r = reduction();
    let ranges = Ranges::compute(&r.func, GpuBounds::LIMITS);
    assert_eq!(ranges.range(&r.func, r.t), iv(0, 1023));
    // `t < s <= 128` still bounds the sum.
    assert_eq!(ranges.at(&r.func, r.sum, r.body), iv(1, 255));
}

#[test]
fn a_counting_loop_widens_and_terminates() {
    let mut parts = None;
    let func = FunctionBuilder::build("count", FuncKind::Host, &[Type::U32], None, |b, p| {
        let zero = b.const_u32(0);
        let header = b.create_block();
        let i = b.append_block_param(header, Type::U32);
        let body = b.create_block();
        let exit = b.create_block();
        b.jump(header, vec![zero]);
        b.switch_to_block(header);
        let go = b.cmp(CmpOp::Lt, i, p[0]);
        b.branch(go, body, vec![], exit, vec![]);
        b.switch_to_block(body);
        let one = b.const_u32(1);
        let next = b.binary(BinaryOp::Add, i, one);
        b.jump(header, vec![next]);
        b.switch_to_block(exit);
        b.ret(None);
        parts = Some((i, next, body, exit));
    });
    let (i, next, body, exit) = parts.unwrap();
    let ranges = Ranges::compute(&func, GpuBounds::LIMITS);
    assert_eq!(ranges.range(&func, i), iv(0, u32::MAX as i128));
    // In the body `i < n <= u32::MAX`, so `i + 1` cannot wrap.
    assert_eq!(ranges.at(&func, i, body), iv(0, u32::MAX as i128 - 1));
    assert_eq!(ranges.at(&func, next, body), iv(1, u32::MAX as i128));
    assert_eq!(ranges.at(&func, i, exit), iv(0, u32::MAX as i128));
}

#[test]
fn signed_values_wrap_to_their_whole_type() {
    let mut vals = None;
    let func = FunctionBuilder::build("s", FuncKind::Host, &[Type::I8], None, |b, p| {
        let big = b.const_bits(Type::I8, 100);
        let minus = b.const_bits(Type::I8, (-3i8) as u8 as u64);
        let sum = b.binary(BinaryOp::Add, big, big);
        let neg = b.binary(BinaryOp::Mul, big, minus);
        let wide = b.cast(p[0], Type::I32);
        let low = b.binary(BinaryOp::And, p[0], big);
        b.ret(None);
        vals = Some((minus, sum, neg, wide, low));
    });
    let (minus, sum, neg, wide, low) = vals.unwrap();
    let ranges = Ranges::compute(&func, GpuBounds::LIMITS);
    assert_eq!(ranges.range(&func, minus), iv(-3, -3));
    assert_eq!(ranges.range(&func, sum), iv(-128, 127));
    assert_eq!(ranges.range(&func, neg), iv(-128, 127));
    assert_eq!(ranges.range(&func, wide), iv(-128, 127));
    assert_eq!(ranges.range(&func, low), iv(0, 100));
}

#[test]
fn division_remainder_and_shifts() {
    let mut vals = None;
    let func = FunctionBuilder::build("d", FuncKind::Host, &[Type::U32], None, |b, p| {
        let eight = b.const_u32(8);
        let three = b.const_u32(3);
        let rem = b.binary(BinaryOp::Rem, p[0], eight);
        let shr = b.binary(BinaryOp::Shr, p[0], eight);
        let shl = b.binary(BinaryOp::Shl, rem, three);
        let div = b.binary(BinaryOp::Div, rem, p[0]);
        b.ret(None);
        vals = Some((rem, shr, shl, div));
    });
    let (rem, shr, shl, div) = vals.unwrap();
    let ranges = Ranges::compute(&func, GpuBounds::LIMITS);
    assert_eq!(ranges.range(&func, rem), iv(0, 7));
    assert_eq!(ranges.range(&func, shr), iv(0, (u32::MAX >> 8) as i128));
    assert_eq!(ranges.range(&func, shl), iv(0, 56));
    assert_eq!(ranges.range(&func, div), iv(0, 7));
}

#[test]
fn a_false_condition_and_a_conjunction_are_facts_too() {
    let mut vals = None;
    let func = FunctionBuilder::build(
        "c",
        FuncKind::Host,
        &[Type::I32, Type::I32],
        None,
        |b, p| {
            let ten = b.const_bits(Type::I32, 10);
            let zero = b.const_bits(Type::I32, 0);
            let big = b.cmp(CmpOp::Ge, p[0], ten);
            let nonneg = b.cmp(CmpOp::Ge, p[1], zero);
            let small = b.cmp(CmpOp::Lt, p[1], ten);
            let both = b.binary(BinaryOp::And, nonneg, small);
            let not_big = b.create_block();
            let in_both = b.create_block();
            let exit = b.create_block();
            b.branch(big, exit, vec![], not_big, vec![]);
            b.switch_to_block(not_big);
            b.branch(both, in_both, vec![], exit, vec![]);
            b.switch_to_block(in_both);
            b.jump(exit, vec![]);
            b.switch_to_block(exit);
            b.ret(None);
            vals = Some((not_big, in_both, exit));
        },
    );
    let (not_big, in_both, exit) = vals.unwrap();
    let (x, y) = (
        func.blocks[func.layout[0]].params[0],
        func.blocks[func.layout[0]].params[1],
    );
    let ranges = Ranges::compute(&func, GpuBounds::LIMITS);
    assert_eq!(ranges.at(&func, x, not_big), iv(i32::MIN as i128, 9));
    assert_eq!(ranges.at(&func, y, in_both), iv(0, 9));
    assert_eq!(ranges.at(&func, x, in_both), iv(i32::MIN as i128, 9));
    // The join has two predecessors: nothing is known there.
    assert_eq!(
        ranges.at(&func, y, exit),
        iv(i32::MIN as i128, i32::MAX as i128)
    );
}

/// Property: on random chains of integer arithmetic and guards, every value an execution
/// computes lies in its range, and in its narrowed range at the block it is computed in.
mod soundness {
    use super::*;
    use crate::semantics;
    use proptest::prelude::*;

    const TYPES: [Type; 5] = [Type::U8, Type::I8, Type::U32, Type::I32, Type::U64];
    const BINARY: [BinaryOp; 11] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Rem,
        BinaryOp::And,
        BinaryOp::Or,
        BinaryOp::Xor,
        BinaryOp::Shl,
        BinaryOp::Shr,
        BinaryOp::Min,
    ];
    const CMP: [CmpOp; 6] = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ];

    /// One step of a program: indices are reduced modulo what exists.
    #[derive(Clone, Debug)]
    enum Step {
        Const(usize, u64),
        Binary(usize, usize, usize),
        Unary(usize, usize),
        Cast(usize, usize),
        Guard(usize, usize, usize, bool),
    }

    fn arg() -> impl Strategy<Value = u64> {
        prop_oneof![
            0u64..300,
            any::<u64>(),
            (0u64..300).prop_map(|x| x.wrapping_neg())
        ]
    }

    fn step() -> impl Strategy<Value = Step> {
        let small = prop_oneof![0u64..300, any::<u64>(), Just(0u64), Just(u64::MAX)];
        prop_oneof![
            (any::<usize>(), small).prop_map(|(t, x)| Step::Const(t, x)),
            (any::<usize>(), any::<usize>(), any::<usize>())
                .prop_map(|(o, a, b)| Step::Binary(o, a, b)),
            (any::<usize>(), any::<usize>()).prop_map(|(o, a)| Step::Unary(o, a)),
            (any::<usize>(), any::<usize>()).prop_map(|(a, t)| Step::Cast(a, t)),
            (
                any::<usize>(),
                any::<usize>(),
                any::<usize>(),
                any::<bool>()
            )
                .prop_map(|(o, a, b, p)| Step::Guard(o, a, b, p)),
        ]
    }

    /// Builds a function from `steps` over two parameters of types `t0`, `t1`: a guard ends
    /// the current block with a branch whose one side goes on and whose other returns.
    fn build(t0: Type, t1: Type, steps: &[Step]) -> Function {
        FunctionBuilder::build("chain", FuncKind::Host, &[t0, t1], None, |b, p| {
            let mut vals: Vec<Value> = p.to_vec();
            let exit = b.create_block();
            let pick = |vals: &[Value], b: &FunctionBuilder<'_>, i: usize, ty: Type| {
                let same: Vec<Value> = vals
                    .iter()
                    .copied()
                    .filter(|&v| b.value_type(v) == ty)
                    .collect();
                same[i % same.len()]
            };
            for s in steps {
                match *s {
                    Step::Const(t, x) => {
                        let ty = TYPES[t % TYPES.len()];
                        vals.push(b.const_bits(ty, semantics::normalize(ty, u128::from(x)) as u64));
                    }
                    Step::Binary(o, a, c) => {
                        let a = vals[a % vals.len()];
                        let c = pick(&vals, b, c, b.value_type(a));
                        vals.push(b.binary(BINARY[o % BINARY.len()], a, c));
                    }
                    Step::Unary(o, a) => {
                        let op = [UnaryOp::Neg, UnaryOp::Not, UnaryOp::Abs][o % 3];
                        vals.push(b.unary(op, vals[a % vals.len()]));
                    }
                    Step::Cast(a, t) => {
                        let a = vals[a % vals.len()];
                        vals.push(b.cast(a, TYPES[t % TYPES.len()]));
                    }
                    Step::Guard(o, a, c, go_on_true) => {
                        let a = vals[a % vals.len()];
                        let c = pick(&vals, b, c, b.value_type(a));
                        let cond = b.cmp(CMP[o % CMP.len()], a, c);
                        let next = b.create_block();
                        if go_on_true {
                            b.branch(cond, next, vec![], exit, vec![]);
                        } else {
                            b.branch(cond, exit, vec![], next, vec![]);
                        }
                        b.switch_to_block(next);
                    }
                }
            }
            b.jump(exit, vec![]);
            b.switch_to_block(exit);
            b.ret(None);
        })
    }

    /// Runs `func` on `args`; calls `seen(value, bits, block)` for each value computed.
    fn run(func: &Function, args: [u64; 2], mut seen: impl FnMut(Value, u128, Block)) {
        let mut env: SecondaryMap<Value, u128> = SecondaryMap::new();
        let mut block = func.layout[0];
        for (&p, a) in func.blocks[block].params.iter().zip(args) {
            env[p] = semantics::normalize(func.value_type(p), u128::from(a));
            seen(p, env[p], block);
        }
        loop {
            for &inst in &func.blocks[block].insts {
                let data = &func.insts[inst];
                let ty = |v: Value| func.value_type(v);
                let s = |v: Value| ty(v).scalar().unwrap();
                let bits = match data.kind {
                    InstKind::Const(c) => c.bits,
                    InstKind::Binary(op, a, b) => match semantics::binary(op, s(a), env[a], env[b])
                    {
                        Ok(x) => x,
                        Err(_) => return,
                    },
                    InstKind::Unary(op, a) => semantics::unary(op, s(a), env[a]),
                    InstKind::Cast(a) => semantics::cast(ty(a), ty(data.result.unwrap()), env[a]),
                    InstKind::Cmp(op, a, b) => {
                        u128::from(semantics::compare(op, ty(a), env[a], env[b]))
                    }
                    InstKind::Branch {
                        cond,
                        ref then_dest,
                        ref else_dest,
                    } => {
                        block = if env[cond] != 0 {
                            then_dest.block
                        } else {
                            else_dest.block
                        };
                        break;
                    }
                    InstKind::Jump(ref to) => {
                        block = to.block;
                        break;
                    }
                    _ => return,
                };
                let v = data.result.unwrap();
                env[v] = bits;
                seen(v, bits, block);
            }
        }
    }

    /// The mathematical value of `bits` of type `ty`.
    fn value_of(ty: Type, bits: u64) -> i128 {
        let s = ty.scalar().unwrap();
        if s.is_signed_int() {
            let shift = 64 - s.bits();
            i128::from(((bits << shift) as i64) >> shift)
        } else {
            i128::from(bits)
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn every_computed_value_lies_in_its_ranges(
            t0 in 0..TYPES.len(),
            t1 in 0..TYPES.len(),
            steps in proptest::collection::vec(step(), 1..24),
            args in [arg(), arg()],
        ) {
            let func = build(TYPES[t0], TYPES[t1], &steps);
            let ranges = Ranges::compute(&func, GpuBounds::LIMITS);
            let mut bad = None;
            run(&func, args, |v, bits, block| {
                let x = value_of(func.value_type(v), bits as u64);
                for r in [ranges.range(&func, v), ranges.at(&func, v, block)] {
                    let r = r.expect("integer values have ranges");
                    if !(r.lo <= x && x <= r.hi) && bad.is_none() {
                        bad = Some((v, x, r, block));
                    }
                }
            });
            prop_assert!(bad.is_none(), "{bad:?} in\n{}", func);
        }
    }
}
