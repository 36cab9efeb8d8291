use super::*;
use nacre_ir::transform::{insert_bounds_checks, BoundsOptions};
use nacre_ir::{verify, Dim, GpuIndex, Scalar};

/// `k(input, out, w, h)`: thread `(x, y)` of a 2D launch reads
/// `input[min(y, h - 1) * w + min(x, w - 1)]` and, if `x < w && y < h`, writes `out[y * w + x]`;
/// with `gather`, it also reads `input[input_index[x]]` (an index the launch cannot bound).
fn stencil_like(gather: bool) -> Module {
    let mut m = Module::new();
    let p = Type::ptr(Scalar::U32);
    let k = m.add_function(FunctionBuilder::build(
        "k",
        FuncKind::Kernel,
        &[p, p, Type::U32, Type::U32],
        None,
        |b, a| {
            let (input, out, w, h) = (a[0], a[1], a[2], a[3]);
            let global = |b: &mut FunctionBuilder<'_>, d| {
                let bid = b.gpu_index(GpuIndex::BlockIdx, d);
                let bdim = b.gpu_index(GpuIndex::BlockDim, d);
                let tid = b.gpu_index(GpuIndex::ThreadIdx, d);
                let scaled = b.binary(BinaryOp::Mul, bid, bdim);
                b.binary(BinaryOp::Add, scaled, tid)
            };
            let x = global(b, Dim::X);
            let y = global(b, Dim::Y);
            let one = b.const_u32(1);
            let w1 = b.binary(BinaryOp::Sub, w, one);
            let h1 = b.binary(BinaryOp::Sub, h, one);
            let cx = b.binary(BinaryOp::Min, x, w1);
            let cy = b.binary(BinaryOp::Min, y, h1);
            let row = b.binary(BinaryOp::Mul, cy, w);
            let at = b.binary(BinaryOp::Add, row, cx);
            let src = b.elem_ptr(input, at);
            let v = b.load(src);
            let v = if gather {
                let idx = b.elem_ptr(input, v);
                b.load(idx)
            } else {
                v
            };
            let in_x = b.cmp(CmpOp::Lt, x, w);
            let second = b.create_block();
            let join = b.create_block();
            let body = b.create_block();
            let exit = b.create_block();
            let no = b.constant(nacre_ir::Const {
                ty: Type::BOOL,
                bits: 0,
            });
            b.branch(in_x, second, vec![], join, vec![no]);
            b.switch_to_block(second);
            let in_y = b.cmp(CmpOp::Lt, y, h);
            b.jump(join, vec![in_y]);
            b.switch_to_block(join);
            let both = b.append_block_param(join, Type::BOOL);
            b.branch(both, body, vec![], exit, vec![]);
            b.switch_to_block(body);
            let yw = b.binary(BinaryOp::Mul, y, w);
            let o = b.binary(BinaryOp::Add, yw, x);
            let dst = b.elem_ptr(out, o);
            b.store(dst, v);
            b.jump(exit, vec![]);
            b.switch_to_block(exit);
            b.ret(None);
        },
    ));
    with_host(m, k, &[p, p, Type::U32, Type::U32])
}

/// `m` with an entry function that launches kernel `k` (parameters `params`) on 16 × 16
/// blocks.
fn with_host(mut m: Module, k: nacre_ir::FuncId, params: &[Type]) -> Module {
    crate::test_host::launch_once(&mut m, k, params, [16, 16, 1], [16, 16, 1]);
    m
}

fn checked(m: Module) -> Module {
    let verified = verify(m).expect("valid");
    insert_bounds_checks(
        verified,
        BoundsOptions {
            check_kernels: true,
        },
    )
    .into_inner()
}

/// The bounds checks of the blocks reachable from `from` without passing `stop`.
fn checks_from(f: &Function, from: Block, stop: Block) -> usize {
    let mut seen = HashSet::from([from]);
    let mut todo = vec![from];
    let mut n = 0;
    while let Some(b) = todo.pop() {
        n += f.blocks[b]
            .insts
            .iter()
            .filter(|&&i| matches!(f.insts[i].kind, InstKind::BoundsCheck { .. }))
            .count();
        for s in f.successors(b) {
            if s != stop && seen.insert(s) {
                todo.push(s);
            }
        }
    }
    n
}

fn kernel(m: &nacre_ir::VerifiedModule) -> &Function {
    let m = m.module();
    m.functions
        .values()
        .find(|f| f.kind == FuncKind::Kernel)
        .unwrap()
}

/// The kernel's entry branch: `(check-free start, checked start)`.
fn bodies(f: &Function) -> (Block, Block) {
    let entry = f.entry().unwrap();
    let t = f.terminator(entry).unwrap();
    match &f.insts[t].kind {
        InstKind::Branch {
            then_dest,
            else_dest,
            ..
        } => (then_dest.block, else_dest.block),
        other => panic!("the entry ends in {other:?}"),
    }
}

#[test]
fn clamped_loads_and_guarded_stores_get_a_check_free_body() {
    let mut m = checked(stencil_like(false));
    assert_eq!(
        add_check_free_versions(&mut m, CheckFreeOptions::default()),
        1
    );
    let m = verify(m).expect("the versioned kernel verifies");
    let f = kernel(&m);
    let (fast, slow) = bodies(f);
    assert_eq!(
        checks_from(f, fast, slow),
        0,
        "{}",
        nacre_ir::printer::with_loops(f)
    );
    assert_eq!(checks_from(f, slow, fast), 2);
}

#[test]
fn the_host_chooses_the_body_before_each_launch() {
    let mut m = checked(stencil_like(false));
    add_check_free_versions(&mut m, CheckFreeOptions::default());
    let m = verify(m).expect("the versioned kernel verifies");
    let f = kernel(&m);
    let entry = f.entry().unwrap();
    // The entry only branches, on its last parameter.
    let choice = *f.blocks[entry].params.last().unwrap();
    assert_eq!(f.value_type(choice), Type::BOOL);
    assert_eq!(f.signature.params.last(), Some(&Type::BOOL));
    assert_eq!(f.blocks[entry].insts.len(), 1);
    let t = f.terminator(entry).unwrap();
    assert!(matches!(f.insts[t].kind, InstKind::Branch { cond, .. } if cond == choice));
    // The host computes the choice (a conjunction) and passes it last.
    let host = &m.module().functions[m.module().entry.unwrap()];
    let launch = host
        .live_insts()
        .find_map(|d| match &d.kind {
            InstKind::Launch(l) => Some(l.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(launch.args.len(), f.signature.params.len());
    let last = *launch.args.last().unwrap();
    assert_eq!(host.value_type(last), Type::BOOL);
    assert!(matches!(
        host.defining_inst(last),
        Some(InstKind::Binary(BinaryOp::And, ..))
    ));
}

#[test]
fn an_index_read_from_memory_keeps_its_check_in_both_bodies() {
    let mut m = checked(stencil_like(true));
    assert_eq!(
        add_check_free_versions(&mut m, CheckFreeOptions::default()),
        1
    );
    let m = verify(m).expect("the versioned kernel verifies");
    let f = kernel(&m);
    let (fast, slow) = bodies(f);
    assert_eq!(checks_from(f, fast, slow), 1);
    assert_eq!(checks_from(f, slow, fast), 3);
}

#[test]
fn kernels_without_checks_and_unchecked_modules_are_left_alone() {
    let mut unchecked = verify(stencil_like(false)).unwrap().into_inner();
    assert_eq!(
        add_check_free_versions(&mut unchecked, CheckFreeOptions::default()),
        0
    );
    let mut m = Module::new();
    let k = m.add_function(FunctionBuilder::build(
        "k",
        FuncKind::Kernel,
        &[],
        None,
        |b, _| {
            b.ret(None);
        },
    ));
    let mut m = checked(with_host(m, k, &[]));
    assert_eq!(
        add_check_free_versions(&mut m, CheckFreeOptions::default()),
        0
    );
}
