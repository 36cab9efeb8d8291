use super::*;
use crate::step::{lower_kernel, CpuMode, StepShape};
use crate::test_host::{kernel, launch_once};
use nacre_ir::{verify, AtomicOp, FuncKind, MemOrder, Module, Scalar, Scope};

/// How [`grid_stride`] varies its kernel.
#[derive(Clone, Copy, Default)]
struct Variant {
    /// The index is stored after the loop.
    index_after: bool,
    /// The body ends in a compare-and-swap.
    cas: bool,
    /// The loop runs only for threads below 5 (divergent control flow).
    divergent: bool,
}

/// `k(out, n)`: `c = 0; for (i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i +=
/// gridDim.x * blockDim.x) { out[i] = c; c += 1 }` then `out[threadIdx.x] = c`, the stride
/// computed in the body; a host function launches it.
fn grid_stride(v: Variant) -> Module {
    let mut m = Module::new();
    let p32 = Type::ptr(Scalar::U32);
    let k = m.add_function(FunctionBuilder::build(
        "k",
        FuncKind::Kernel,
        &[p32, Type::U32],
        None,
        |b, a| {
            let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
            let bid = b.gpu_index(GpuIndex::BlockIdx, Dim::X);
            let bdim = b.gpu_index(GpuIndex::BlockDim, Dim::X);
            let base = b.binary(BinaryOp::Mul, bid, bdim);
            let start = b.binary(BinaryOp::Add, base, tid);
            let zero = b.const_u32(0);
            let header = b.create_block();
            let body = b.create_block();
            let exit = b.create_block();
            let done = b.create_block();
            if v.divergent {
                let five = b.const_u32(5);
                let low = b.cmp(CmpOp::Lt, tid, five);
                b.branch(low, header, vec![start, zero], done, vec![]);
            } else {
                b.jump(header, vec![start, zero]);
            }
            b.switch_to_block(header);
            let i = b.append_block_param(header, Type::U32);
            let c = b.append_block_param(header, Type::U32);
            let go = b.cmp(CmpOp::Lt, i, a[1]);
            b.branch(go, body, vec![], exit, vec![]);
            b.switch_to_block(body);
            let at = b.elem_ptr(a[0], i);
            b.store(at, c);
            if v.cas {
                b.atomic_cas(at, c, zero, MemOrder::Relaxed, Scope::Device);
            }
            let grid = b.gpu_index(GpuIndex::GridDim, Dim::X);
            let bdim2 = b.gpu_index(GpuIndex::BlockDim, Dim::X);
            let stride = b.binary(BinaryOp::Mul, grid, bdim2);
            let next = b.binary(BinaryOp::Add, i, stride);
            let one = b.const_u32(1);
            let c1 = b.binary(BinaryOp::Add, c, one);
            b.jump(header, vec![next, c1]);
            b.switch_to_block(exit);
            let mine = b.elem_ptr(a[0], tid);
            b.store(mine, if v.index_after { i } else { c });
            b.jump(done, vec![]);
            b.switch_to_block(done);
            b.ret(None);
        },
    ));
    launch_once(&mut m, k, &[p32, Type::U32], [64, 1, 1], [64, 1, 1]);
    verify(m).expect("the test kernel verifies").into_inner()
}

/// The kernel's step function's shape and yields.
fn lowered(m: &Module) -> (StepShape, u32) {
    let id = m
        .functions
        .iter()
        .find(|(_, f)| f.kind == FuncKind::Kernel)
        .map(|(id, _)| id)
        .expect("a kernel");
    let k = lower_kernel(m, id, CpuMode::Grid).expect("the kernel lowers");
    (k.info.shape, k.info.yields)
}

#[test]
fn a_grid_stride_loop_becomes_a_uniform_loop_beside_its_fallback() {
    let mut m = grid_stride(Variant::default());
    let skip = lockstep_strided_loops(kernel(&mut m));
    assert_eq!(skip.len(), 2, "the uniform loop and the fallback");
    let m = verify(m)
        .expect("the rewritten kernel verifies")
        .into_inner();
    let k = m.functions.values().find(|f| f.kind == FuncKind::Kernel);
    let k = k.expect("a kernel");
    let loops = compute_loops(k);
    assert_eq!(loops.headers.len(), 2, "{k}");
    let barriers = k
        .live_insts()
        .filter(|d| matches!(d.kind, InstKind::Barrier))
        .count();
    assert_eq!(
        barriers, 2,
        "one before the uniform loop, one per iteration: {k}"
    );
    // The fallback's body, eight in the uniform loop, and the running count after the loop
    // (from whichever loop ran).
    let stores = k
        .live_insts()
        .filter(|d| matches!(d.kind, InstKind::Store(..)))
        .count();
    assert_eq!(stores, 1 + UNROLL + 1, "{k}");
    // The step lowering rewrites the loop itself.
    let (shape, yields) = lowered(&grid_stride(Variant::default()));
    assert!(matches!(shape, StepShape::Regions { .. }), "{shape:?}");
    assert_eq!(yields, 0);
}

#[test]
fn an_index_used_after_the_loop_is_carried_through_the_uniform_loop() {
    let v = Variant {
        index_after: true,
        ..Variant::default()
    };
    let mut m = grid_stride(v);
    let k = kernel(&mut m);
    let skip = lockstep_strided_loops(k);
    // The original header has the index and the count; the uniform one `j` besides.
    let carried = skip.iter().any(|&b| k.blocks[b].params.len() == 3);
    assert!(carried, "{k}");
    verify(m).expect("the rewritten kernel verifies");
    let (shape, yields) = lowered(&grid_stride(v));
    assert!(matches!(shape, StepShape::Regions { .. }), "{shape:?}");
    assert_eq!(yields, 0);
}

#[test]
fn without_the_rewrite_the_loop_yields_in_a_state_machine() {
    let declined = [
        Variant {
            cas: true,
            ..Variant::default()
        },
        Variant {
            divergent: true,
            ..Variant::default()
        },
    ];
    for v in declined {
        let mut m = grid_stride(v);
        assert!(lockstep_strided_loops(kernel(&mut m)).is_empty());
        let (shape, yields) = lowered(&grid_stride(v));
        assert_eq!(shape, StepShape::StateMachine);
        assert!(yields >= 1);
    }
}

#[test]
fn a_fire_and_forget_atomic_add_keeps_the_loop_in_lockstep() {
    let used = HashSet::new();
    let mut f = Function::new(
        "f",
        FuncKind::Kernel,
        nacre_ir::Signature {
            params: vec![Type::ptr(Scalar::U32)],
            ret: None,
        },
    );
    let mut b = FunctionBuilder::new(&mut f);
    let a = b.create_entry_block();
    let one = b.const_u32(1);
    b.atomic_rmw(AtomicOp::Add, a[0], one, MemOrder::Relaxed, Scope::Device);
    let end = b.create_block();
    b.jump(end, vec![]);
    b.switch_to_block(end);
    b.ret(None);
    let entry = f.entry().expect("an entry block");
    assert!(waits_on_nobody(&f, entry, &used));
    let old = f.live_insts().find_map(|d| match d.kind {
        InstKind::AtomicRmw { .. } => d.result,
        _ => None,
    });
    let used: HashSet<Value> = old.into_iter().collect();
    assert!(!waits_on_nobody(&f, entry, &used), "its old value is used");
}
