//! The region lowering (one loop over the threads per region between barriers): which
//! kernels get it, and kernels that exercise its corners (narrowed loops on 2- and
//! 3-dimensional blocks, uniform and per-thread values carried around a loop with a barrier,
//! values live across two barriers, early returns) give the GPU's results on every backend.

mod common;

use common::*;
use nacre_cpu::CpuMode;
use nacre_ir::{
    AtomicOp, BinaryOp, CmpOp, Dim, FuncId, FunctionBuilder, GpuIndex, MathFn, MemOrder, Module,
    Scalar, Scope, Type, UnaryOp,
};
use nacre_kernel::step::StepShape;
use nacre_runtime::Array;

/// The linear thread index within the block and the threads per block (x, y and z).
fn linear(b: &mut FunctionBuilder<'_>) -> (nacre_ir::Value, nacre_ir::Value) {
    let [tx, ty, tz] = Dim::ALL.map(|d| b.gpu_index(GpuIndex::ThreadIdx, d));
    let [bx, by, bz] = Dim::ALL.map(|d| b.gpu_index(GpuIndex::BlockDim, d));
    let zy = b.binary(BinaryOp::Mul, tz, by);
    let row = b.binary(BinaryOp::Add, zy, ty);
    let rx = b.binary(BinaryOp::Mul, row, bx);
    let lin = b.binary(BinaryOp::Add, rx, tx);
    let xy = b.binary(BinaryOp::Mul, bx, by);
    let n = b.binary(BinaryOp::Mul, xy, bz);
    (lin, n)
}

/// `narrow(out, out2, u)` with `x OP u` deciding which threads write `out`:
///
/// ```text
/// s[lin] = lin + 1; barrier
/// if keep(x) { out[block * n + lin] = s[(lin + 1) % n] + 100 }     keep = x OP u, or its negation
/// barrier; out2[block * n + lin] = s[lin]                          when `skip_on_true`, with
///                                                                  the sides of the branch swapped
/// ```
fn narrow(op: CmpOp, skip_on_true: bool) -> (Module, FuncId) {
    narrow_rows(op, skip_on_true, [0, 0, 0])
}

/// [`narrow`] with `x + y cy + z cz + k OP u` (`[cy, cz, k]`) deciding which threads write.
fn narrow_rows(op: CmpOp, skip_on_true: bool, [cy, cz, k]: [u32; 3]) -> (Module, FuncId) {
    let mut f = kernel("narrow", &[PU32, PU32, Type::U32]);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let s = b.shared_alloc(Scalar::U32, 1024);
    let (lin, _) = linear(&mut b);
    let one = ku32(&mut b, 1);
    let v = b.binary(BinaryOp::Add, lin, one);
    store_at(&mut b, s, lin, v);
    b.barrier();
    let [x, y, z] = Dim::ALL.map(|d| b.gpu_index(GpuIndex::ThreadIdx, d));
    let tested = if [cy, cz, k] == [0, 0, 0] {
        x
    } else {
        let (cy, cz, k) = (ku32(&mut b, cy), ku32(&mut b, cz), ku32(&mut b, k));
        let yy = b.binary(BinaryOp::Mul, y, cy);
        let zz = b.binary(BinaryOp::Mul, cz, z);
        let xy = b.binary(BinaryOp::Add, yy, x);
        let xyz = b.binary(BinaryOp::Add, xy, zz);
        b.binary(BinaryOp::Add, xyz, k)
    };
    let c = b.cmp(op, tested, p[2]);
    let write = b.create_block();
    let join = b.create_block();
    if skip_on_true {
        b.branch(c, join, vec![], write, vec![]);
    } else {
        b.branch(c, write, vec![], join, vec![]);
    }
    b.switch_to_block(write);
    let (lin, n) = linear(&mut b);
    let bid = b.gpu_index(GpuIndex::BlockIdx, Dim::X);
    let base = b.binary(BinaryOp::Mul, bid, n);
    let g = b.binary(BinaryOp::Add, base, lin);
    let one = ku32(&mut b, 1);
    let l1 = b.binary(BinaryOp::Add, lin, one);
    let j = b.binary(BinaryOp::Rem, l1, n);
    let nb = load_at(&mut b, s, j);
    let hundred = ku32(&mut b, 100);
    let w = b.binary(BinaryOp::Add, nb, hundred);
    store_at(&mut b, p[0], g, w);
    b.jump(join, vec![]);
    b.switch_to_block(join);
    b.barrier();
    let (lin, n) = linear(&mut b);
    let bid = b.gpu_index(GpuIndex::BlockIdx, Dim::X);
    let base = b.binary(BinaryOp::Mul, bid, n);
    let g = b.binary(BinaryOp::Add, base, lin);
    let mine = load_at(&mut b, s, lin);
    store_at(&mut b, p[1], g, mine);
    b.ret(None);
    module_of(f, vec![])
}

fn holds(op: CmpOp, a: u32, b: u32) -> bool {
    match op {
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
    }
}

#[test]
fn narrowed_thread_loops_keep_exactly_the_guarded_threads() {
    let ops = [CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge, CmpOp::Eq];
    let blocks = 3usize;
    for backend in backends() {
        for op in ops {
            for skip_on_true in [false, true] {
                let (m, id) = narrow(op, skip_on_true);
                let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
                // `x != u` keeps threads on both sides of `u`: not a range.
                let narrowed = usize::from(!(op == CmpOp::Eq && skip_on_true));
                assert_eq!(
                    kernel.info().shape,
                    StepShape::Regions { loops: 3, narrowed },
                    "{op:?}"
                );
                for dims in [[8u32, 1, 1], [8, 4, 1], [4, 2, 3], [1, 1, 1]] {
                    let n = (dims[0] * dims[1] * dims[2]) as usize;
                    for u in [0, 1, 3, dims[0] - 1, dims[0], dims[0] + 3, u32::MAX] {
                        let out = Array::copy(&vec![u32::MAX; blocks * n]).unwrap();
                        let out2 = Array::copy(&vec![u32::MAX; blocks * n]).unwrap();
                        let args = [ptr_arg(out.as_ptr()), ptr_arg(out2.as_ptr()), u as u64];
                        launch(&kernel, [blocks as u32, 1, 1], dims, &args).unwrap();
                        let mut want = vec![u32::MAX; blocks * n];
                        let mut want2 = vec![0u32; blocks * n];
                        for blk in 0..blocks {
                            for lin in 0..n {
                                let x = (lin % dims[0] as usize) as u32;
                                let keep = holds(op, x, u) != skip_on_true;
                                if keep {
                                    want[blk * n + lin] = ((lin + 1) % n) as u32 + 1 + 100;
                                }
                                want2[blk * n + lin] = lin as u32 + 1;
                            }
                        }
                        let what = format!(
                            "{} x {op:?} u={u} skip_on_true={skip_on_true} block {dims:?}",
                            backend.name()
                        );
                        assert_eq!(out.as_slice(), &want[..], "{what}");
                        assert_eq!(out2.as_slice(), &want2[..], "{what}");
                    }
                }
            }
        }
    }
}

/// Narrowed per row: a test on `x + y cy + z cz + k` (the tile loads' `ty * 16 + tx < 324`)
/// keeps, in each row of threads, the range where it holds, on 1-, 2- and 3-dimensional
/// blocks and bounds below, inside and above every row's values.
#[test]
fn thread_loops_narrowed_per_row_keep_exactly_the_guarded_threads() {
    let ops = [CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge, CmpOp::Eq];
    let blocks = 2usize;
    for backend in backends() {
        for op in ops {
            for skip_on_true in [false, true] {
                for offset in [[8u32, 0, 0], [3, 20, 5], [16, 0, 256]] {
                    let (m, id) = narrow_rows(op, skip_on_true, offset);
                    let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
                    let narrowed = usize::from(!(op == CmpOp::Eq && skip_on_true));
                    assert_eq!(
                        kernel.info().shape,
                        StepShape::Regions { loops: 3, narrowed },
                        "{op:?} {offset:?}"
                    );
                    let [cy, cz, k] = offset;
                    for dims in [[8u32, 1, 1], [8, 4, 1], [4, 2, 3]] {
                        let n = (dims[0] * dims[1] * dims[2]) as usize;
                        for u in [0, 5, 12, 21, 30, 70, 262, 300, u32::MAX] {
                            let out = Array::copy(&vec![u32::MAX; blocks * n]).unwrap();
                            let out2 = Array::copy(&vec![u32::MAX; blocks * n]).unwrap();
                            let args = [ptr_arg(out.as_ptr()), ptr_arg(out2.as_ptr()), u as u64];
                            launch(&kernel, [blocks as u32, 1, 1], dims, &args).unwrap();
                            let mut want = vec![u32::MAX; blocks * n];
                            for blk in 0..blocks {
                                for lin in 0..n {
                                    let d = dims[0] as usize;
                                    let x = (lin % d) as u32;
                                    let y = (lin / d % dims[1] as usize) as u32;
                                    let z = (lin / d / dims[1] as usize) as u32;
                                    let tested = x + y * cy + z * cz + k;
                                    if holds(op, tested, u) != skip_on_true {
                                        want[blk * n + lin] = ((lin + 1) % n) as u32 + 1 + 100;
                                    }
                                }
                            }
                            let what = format!(
                                "{} {offset:?} {op:?} u={u} skip_on_true={skip_on_true} \
                                 block {dims:?}",
                                backend.name()
                            );
                            assert_eq!(out.as_slice(), &want[..], "{what}");
                        }
                    }
                }
            }
        }
    }
}

/// `carried(out, rounds)`: a loop with a barrier whose values flow around it, with shared
/// memory double-buffered so that the rounds do not race:
///
/// ```text
/// k = 0
/// loop: half = (k & 1) * bdim; s[half + tid] = k * 10 + tid
///       v = 2k + 1 (uniform); w = 3 tid + k (per thread)
///       barrier
///       out[(block * rounds + k) * bdim + tid] = s[half + (tid + 1) % bdim] + v + w
///       k += 1; if k < rounds goto loop
/// ```
///
/// After the barrier, each thread runs the rest of round `k` and the start of round `k + 1`
/// up to the barrier, so the copy of the loop's first part redefines `v` and `w` before the
/// next thread reads the old ones: they must come from the loop's entry (uniform `v`) and
/// from the thread's own state (`w`), not from the previous thread.
fn carried() -> (Module, FuncId) {
    let mut f = kernel("carried", &[PU32, Type::U32]);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let s = b.shared_alloc(Scalar::U32, 2048);
    let head = b.create_block();
    let k = b.append_block_param(head, Type::U32);
    let exit = b.create_block();
    let zero = ku32(&mut b, 0);
    b.jump(head, vec![zero]);
    b.switch_to_block(head);
    let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
    let bdim = b.gpu_index(GpuIndex::BlockDim, Dim::X);
    let one = ku32(&mut b, 1);
    let parity = b.binary(BinaryOp::And, k, one);
    let half = b.binary(BinaryOp::Mul, parity, bdim);
    let ten = ku32(&mut b, 10);
    let k10 = b.binary(BinaryOp::Mul, k, ten);
    let val = b.binary(BinaryOp::Add, k10, tid);
    let at = b.binary(BinaryOp::Add, half, tid);
    store_at(&mut b, s, at, val);
    let two = ku32(&mut b, 2);
    let k2 = b.binary(BinaryOp::Mul, k, two);
    let v = b.binary(BinaryOp::Add, k2, one);
    let three = ku32(&mut b, 3);
    let t3 = b.binary(BinaryOp::Mul, tid, three);
    let w = b.binary(BinaryOp::Add, t3, k);
    b.barrier();
    let t1 = b.binary(BinaryOp::Add, tid, one);
    let nbi = b.binary(BinaryOp::Rem, t1, bdim);
    let from = b.binary(BinaryOp::Add, half, nbi);
    let nb = load_at(&mut b, s, from);
    let sum = b.binary(BinaryOp::Add, nb, v);
    let sum = b.binary(BinaryOp::Add, sum, w);
    let bid = b.gpu_index(GpuIndex::BlockIdx, Dim::X);
    let br = b.binary(BinaryOp::Mul, bid, p[1]);
    let brk = b.binary(BinaryOp::Add, br, k);
    let row = b.binary(BinaryOp::Mul, brk, bdim);
    let g = b.binary(BinaryOp::Add, row, tid);
    store_at(&mut b, p[0], g, sum);
    let next = b.binary(BinaryOp::Add, k, one);
    let more = b.cmp(CmpOp::Lt, next, p[1]);
    b.branch(more, head, vec![next], exit, vec![]);
    b.switch_to_block(exit);
    b.ret(None);
    module_of(f, vec![])
}

#[test]
fn values_carried_around_a_loop_with_a_barrier() {
    let (m, id) = carried();
    let grid = 3usize;
    for backend in backends() {
        let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
        assert!(
            matches!(kernel.info().shape, StepShape::Regions { .. }),
            "{:?}",
            kernel.info()
        );
        // Only `w` needs a state word; `v`, `half` and `k` are uniform.
        assert_eq!(kernel.info().state_words, 1);
        for block in [1usize, 7, 64] {
            for rounds in [1usize, 2, 5] {
                let out = Array::<u32>::alloc_unified(grid * rounds * block).unwrap();
                let args = [ptr_arg(out.as_ptr()), rounds as u64];
                launch(&kernel, [grid as u32, 1, 1], [block as u32, 1, 1], &args).unwrap();
                let mut want = Vec::with_capacity(grid * rounds * block);
                for _ in 0..grid {
                    for k in 0..rounds {
                        for t in 0..block {
                            let nb = k * 10 + (t + 1) % block;
                            want.push((nb + 2 * k + 1 + 3 * t + k) as u32);
                        }
                    }
                }
                assert_eq!(
                    out.as_slice(),
                    &want[..],
                    "{} block {block} rounds {rounds}",
                    backend.name()
                );
            }
        }
    }
}

/// `relay(out, in)`: a per-thread value live across two barriers:
/// `a = 7 tid + block` (or `in[tid] + block` when `loaded`); `s[tid] = a; barrier;
/// s2[tid] = s[(tid + 1) % bdim]; barrier; out[block * bdim + tid] = a + s2[(tid + 2) % bdim]`.
fn relay(loaded: bool) -> (Module, FuncId) {
    let mut f = kernel("relay", &[PU32, PU32]);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let s = b.shared_alloc(Scalar::U32, 1024);
    let s2 = b.shared_alloc(Scalar::U32, 1024);
    let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
    let bdim = b.gpu_index(GpuIndex::BlockDim, Dim::X);
    let bid = b.gpu_index(GpuIndex::BlockIdx, Dim::X);
    let per_thread = if loaded {
        load_at(&mut b, p[1], tid)
    } else {
        let seven = ku32(&mut b, 7);
        b.binary(BinaryOp::Mul, tid, seven)
    };
    let a = b.binary(BinaryOp::Add, per_thread, bid);
    store_at(&mut b, s, tid, a);
    b.barrier();
    let one = ku32(&mut b, 1);
    let t1 = b.binary(BinaryOp::Add, tid, one);
    let j = b.binary(BinaryOp::Rem, t1, bdim);
    let nb = load_at(&mut b, s, j);
    store_at(&mut b, s2, tid, nb);
    b.barrier();
    let two = ku32(&mut b, 2);
    let t2 = b.binary(BinaryOp::Add, tid, two);
    let j2 = b.binary(BinaryOp::Rem, t2, bdim);
    let nb2 = load_at(&mut b, s2, j2);
    let r = b.binary(BinaryOp::Add, a, nb2);
    let g = global(&mut b, Dim::X);
    store_at(&mut b, p[0], g, r);
    b.ret(None);
    module_of(f, vec![])
}

#[test]
fn per_thread_values_live_across_two_barriers() {
    let (grid, block) = (4usize, 33usize);
    let input: Vec<u32> = (0..block as u32).map(|t| t * t + 5).collect();
    for loaded in [false, true] {
        let want: Vec<u32> = (0..grid * block)
            .map(|g| {
                let (bid, t) = (g / block, g % block);
                let a = |t: usize| {
                    let per_thread = if loaded { input[t] } else { 7 * t as u32 };
                    per_thread + bid as u32
                };
                a(t) + a((t + 3) % block)
            })
            .collect();
        let (m, id) = relay(loaded);
        for backend in backends() {
            let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
            assert_eq!(
                kernel.info().shape,
                StepShape::Regions {
                    loops: 3,
                    narrowed: 0
                }
            );
            // `7 tid + block` is recomputed from the thread's index after each barrier (see
            // `regions::remat`); a loaded `a` keeps a word, which the middle thread loop
            // neither reloads nor saves (see `regions::carry`).
            assert_eq!(kernel.info().state_words, usize::from(loaded));
            let out = Array::<u32>::alloc_unified(grid * block).unwrap();
            let inp = Array::copy(&input).unwrap();
            launch(
                &kernel,
                [grid as u32, 1, 1],
                [block as u32, 1, 1],
                &[ptr_arg(out.as_ptr()), ptr_arg(inp.as_ptr())],
            )
            .unwrap();
            assert_eq!(out.as_slice(), &want[..], "{}", backend.name());
        }
    }
}

/// `early_exit(out, out2)`: `s[tid] = tid; barrier; if tid == 0 { out[block] = s[bdim - 1];
/// return } out2[block * bdim + tid] = s[(tid + 1) % bdim]`: a return in divergent control
/// flow with no barrier after it.
fn early_exit() -> (Module, FuncId) {
    let mut f = kernel("early_exit", &[PU32, PU32]);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let s = b.shared_alloc(Scalar::U32, 1024);
    let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
    let bdim = b.gpu_index(GpuIndex::BlockDim, Dim::X);
    let bid = b.gpu_index(GpuIndex::BlockIdx, Dim::X);
    store_at(&mut b, s, tid, tid);
    b.barrier();
    let zero = ku32(&mut b, 0);
    let first = b.cmp(CmpOp::Eq, tid, zero);
    let lead = b.create_block();
    let rest = b.create_block();
    b.branch(first, lead, vec![], rest, vec![]);
    b.switch_to_block(lead);
    let one = ku32(&mut b, 1);
    let last = b.binary(BinaryOp::Sub, bdim, one);
    let v = load_at(&mut b, s, last);
    store_at(&mut b, p[0], bid, v);
    b.ret(None);
    b.switch_to_block(rest);
    let one = ku32(&mut b, 1);
    let t1 = b.binary(BinaryOp::Add, tid, one);
    let j = b.binary(BinaryOp::Rem, t1, bdim);
    let v = load_at(&mut b, s, j);
    let g = global(&mut b, Dim::X);
    store_at(&mut b, p[1], g, v);
    b.ret(None);
    module_of(f, vec![])
}

#[test]
fn early_returns_without_a_barrier_after_them() {
    let (m, id) = early_exit();
    let (grid, block) = (3usize, 16usize);
    for backend in backends() {
        let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
        assert!(matches!(kernel.info().shape, StepShape::Regions { .. }));
        let out = Array::copy(&vec![u32::MAX; grid]).unwrap();
        let out2 = Array::copy(&vec![u32::MAX; grid * block]).unwrap();
        let args = [ptr_arg(out.as_ptr()), ptr_arg(out2.as_ptr())];
        launch(&kernel, [grid as u32, 1, 1], [block as u32, 1, 1], &args).unwrap();
        assert_eq!(out.as_slice(), &vec![block as u32 - 1; grid][..]);
        let want: Vec<u32> = (0..grid * block)
            .map(|g| match g % block {
                0 => u32::MAX,
                t => ((t + 1) % block) as u32,
            })
            .collect();
        assert_eq!(out2.as_slice(), &want[..], "{}", backend.name());
    }
}

/// `loaded_rounds(out, counts)`: the trip count of a loop with a barrier is loaded from
/// memory, which the analysis does not treat as uniform:
/// `n = counts[0]; for k in 0..n { s[tid] = k + tid; barrier; out[block * bdim + tid] +=
/// s[(tid + 1) % bdim]; barrier }`.
fn loaded_rounds() -> (Module, FuncId) {
    let mut f = kernel("loaded_rounds", &[PU32, PU32]);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let s = b.shared_alloc(Scalar::U32, 1024);
    let zero = ku32(&mut b, 0);
    let n = load_at(&mut b, p[1], zero);
    let head = b.create_block();
    let k = b.append_block_param(head, Type::U32);
    let body = b.create_block();
    let exit = b.create_block();
    b.jump(head, vec![zero]);
    b.switch_to_block(head);
    let more = b.cmp(CmpOp::Lt, k, n);
    b.branch(more, body, vec![], exit, vec![]);
    b.switch_to_block(body);
    let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
    let bdim = b.gpu_index(GpuIndex::BlockDim, Dim::X);
    let v = b.binary(BinaryOp::Add, k, tid);
    store_at(&mut b, s, tid, v);
    b.barrier();
    let one = ku32(&mut b, 1);
    let t1 = b.binary(BinaryOp::Add, tid, one);
    let j = b.binary(BinaryOp::Rem, t1, bdim);
    let nb = load_at(&mut b, s, j);
    let g = global(&mut b, Dim::X);
    let old = load_at(&mut b, p[0], g);
    let new = b.binary(BinaryOp::Add, old, nb);
    store_at(&mut b, p[0], g, new);
    b.barrier();
    let k1 = b.binary(BinaryOp::Add, k, one);
    b.jump(head, vec![k1]);
    b.switch_to_block(exit);
    b.ret(None);
    module_of(f, vec![])
}

#[test]
fn barriers_under_non_uniform_control_keep_the_state_machine() {
    let (grid, block, rounds) = (2usize, 8usize, 3u32);
    let want: Vec<u32> = (0..grid * block)
        .map(|g| {
            (0..rounds)
                .map(|k| k + ((g % block + 1) % block) as u32)
                .sum()
        })
        .collect();
    let (m, id) = loaded_rounds();
    for backend in backends() {
        let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
        assert_eq!(kernel.info().shape, StepShape::StateMachine);
        let out = Array::copy(&vec![0u32; grid * block]).unwrap();
        let counts = Array::copy(&[rounds]).unwrap();
        let args = [ptr_arg(out.as_ptr()), ptr_arg(counts.as_ptr())];
        launch(&kernel, [grid as u32, 1, 1], [block as u32, 1, 1], &args).unwrap();
        assert_eq!(out.as_slice(), &want[..], "{}", backend.name());
    }
}

#[test]
fn which_kernels_get_thread_loops() {
    let backend = &*backends().remove(1);
    let shape = |(m, id): (Module, FuncId), mode| prepare(&m, id, backend, mode).info().shape;
    // A tree reduction: the first region, the loop body (narrowed to `t < s`) and the final
    // write (narrowed to `t == 0`).
    assert_eq!(
        shape(block_sum(), CpuMode::Grid),
        StepShape::Regions {
            loops: 3,
            narrowed: 2
        }
    );
    // A barrier only some threads reach.
    assert_eq!(shape(divergent(), CpuMode::Grid), StepShape::StateMachine);
    // Yields of a grid-stride loop in grid mode; in serial mode there are none.
    assert_eq!(shape(staggered(), CpuMode::Grid), StepShape::StateMachine);
    assert!(matches!(
        shape(staggered(), CpuMode::Serial),
        StepShape::Regions { .. }
    ));
    // No barrier and no loop: one region, its thread loop nested x in y in z.
    assert_eq!(
        shape(vec_add(), CpuMode::Grid),
        StepShape::Regions {
            loops: 1,
            narrowed: 0
        }
    );
    // No barrier, but a loop: the plain thread loop.
    assert_eq!(shape(saxpy(), CpuMode::Serial), StepShape::ThreadLoop);
}

/// `around_loop(in, out, trips)`: work before a loop whose trip count differs between
/// threads, then a barrier:
///
/// ```text
/// v = in[g]; w = e^v + e^-v + e^(v/2) + e^(-v/2)     (only w = v when `light`)
/// acc = w; for i in 0..tid % 3 { acc += 1 }         (a divergent loop without barriers;
///                                                     with `atomic`, atomically trips += 1)
/// s[tid] = acc; barrier; out[g] = s[(tid + 1) % bdim]
/// ```
fn around_loop(light: bool, atomic: bool) -> (Module, FuncId) {
    let mut f = kernel("around_loop", &[PF32, PF32, PU32]);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let s = b.shared_alloc(Scalar::F32, 1024);
    let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
    let g = global(&mut b, Dim::X);
    let v = load_at(&mut b, p[0], g);
    let w = if light {
        v
    } else {
        let half = k(&mut b, Type::F32, 0.5f32.to_bits().into());
        let h = b.binary(BinaryOp::Mul, v, half);
        let terms = [v, h].map(|x| {
            let neg = b.unary(UnaryOp::Neg, x);
            let up = b.math(MathFn::Exp, x);
            let down = b.math(MathFn::Exp, neg);
            b.binary(BinaryOp::Add, up, down)
        });
        b.binary(BinaryOp::Add, terms[0], terms[1])
    };
    let (header, body, exit) = (b.create_block(), b.create_block(), b.create_block());
    let i = b.append_block_param(header, Type::U32);
    let acc = b.append_block_param(header, Type::F32);
    let done = b.append_block_param(exit, Type::F32);
    let zero = ku32(&mut b, 0);
    b.jump(header, vec![zero, w]);
    b.switch_to_block(header);
    let three = ku32(&mut b, 3);
    let trips = b.binary(BinaryOp::Rem, tid, three);
    let more = b.cmp(CmpOp::Lt, i, trips);
    b.branch(more, body, vec![], exit, vec![acc]);
    b.switch_to_block(body);
    let one = ku32(&mut b, 1);
    let i1 = b.binary(BinaryOp::Add, i, one);
    let onef = k(&mut b, Type::F32, 1f32.to_bits().into());
    let acc1 = b.binary(BinaryOp::Add, acc, onef);
    if atomic {
        b.atomic_rmw(AtomicOp::Add, p[2], one, MemOrder::Relaxed, Scope::Device);
    }
    b.jump(header, vec![i1, acc1]);
    b.switch_to_block(exit);
    store_at(&mut b, s, tid, done);
    b.barrier();
    let bdim = b.gpu_index(GpuIndex::BlockDim, Dim::X);
    let one = ku32(&mut b, 1);
    let t1 = b.binary(BinaryOp::Add, tid, one);
    let j = b.binary(BinaryOp::Rem, t1, bdim);
    let r = load_at(&mut b, s, j);
    let g = global(&mut b, Dim::X);
    store_at(&mut b, p[1], g, r);
    b.ret(None);
    module_of(f, vec![])
}

#[test]
fn divergent_loops_with_work_around_them_get_thread_loops_of_their_own() {
    let (grid, block) = (3usize, 40usize);
    let x: Vec<f32> = (0..grid * block)
        .map(|i| (i % 17) as f32 * 0.25 - 2.0)
        .collect();
    let trips: u32 = (0..grid * block).map(|g| (g % block % 3) as u32).sum();
    for (light, atomic) in [(false, false), (true, false), (false, true)] {
        let w = |v: f32| {
            if light {
                v
            } else {
                v.exp() + (-v).exp() + (0.5 * v).exp() + (-0.5 * v).exp()
            }
        };
        let want: Vec<f32> = (0..grid * block)
            .map(|g| {
                let (bid, t) = (g / block, g % block);
                let src = (t + 1) % block;
                w(x[bid * block + src]) + (src % 3) as f32
            })
            .collect();
        let (m, id) = around_loop(light, atomic);
        for backend in backends() {
            let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
            // Cut before and after the loop: the exponentials, the loop, the store, and the
            // region after the barrier. The light kernel is not cut, nor one whose loop may
            // wait on other threads (an atomic: a cut would hold a spin lock's holder at the
            // barrier while the others spin).
            let loops = if light || atomic { 2 } else { 4 };
            assert_eq!(
                kernel.info().shape,
                StepShape::Regions { loops, narrowed: 0 },
                "light: {light}, atomic: {atomic}"
            );
            let input = Array::copy(&x).unwrap();
            let out = Array::<f32>::alloc_unified(grid * block).unwrap();
            let count = Array::<u32>::alloc_unified(1).unwrap();
            launch(
                &kernel,
                [grid as u32, 1, 1],
                [block as u32, 1, 1],
                &[
                    ptr_arg(input.as_ptr()),
                    ptr_arg(out.as_ptr()),
                    ptr_arg(count.as_ptr()),
                ],
            )
            .unwrap();
            for (g, (&got, &want)) in out.as_slice().iter().zip(&want).enumerate() {
                let close = (got - want).abs() <= 1e-5 * want.abs().max(1.0);
                assert!(close, "{} at {g}: {got} vs {want}", backend.name());
            }
            let counted = if atomic { trips } else { 0 };
            assert_eq!(count.as_slice(), &[counted], "{}", backend.name());
        }
    }
}

/// `late_use(in, out, iters)`: a loaded value defined in a uniform loop after one barrier's
/// region begins and used only after a second barrier, which the region between them skips
/// on even trips:
///
/// ```text
/// acc = 0
/// for i in 0..iters {                       (uniform)
///     v = in[g * iters + i]; barrier        (v is defined in the loop body of the region
///     if i % 2 == 1 { barrier; acc += v }    after the first barrier, which reaches the
/// }                                          definition again through the back edge)
/// out[g] = acc
/// ```
fn late_use() -> (Module, FuncId) {
    let mut f = kernel("late_use", &[PU32, PU32, Type::U32]);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let [header, body, odd, next, exit] = [(); 5].map(|_| b.create_block());
    let i = b.append_block_param(header, Type::U32);
    let acc = b.append_block_param(header, Type::U32);
    let acc_next = b.append_block_param(next, Type::U32);
    let zero = ku32(&mut b, 0);
    b.jump(header, vec![zero, zero]);
    b.switch_to_block(header);
    let more = b.cmp(CmpOp::Lt, i, p[2]);
    b.branch(more, body, vec![], exit, vec![]);
    b.switch_to_block(body);
    let g = global(&mut b, Dim::X);
    let row = b.binary(BinaryOp::Mul, g, p[2]);
    let at = b.binary(BinaryOp::Add, row, i);
    let v = load_at(&mut b, p[0], at);
    b.barrier();
    let one = ku32(&mut b, 1);
    let bit = b.binary(BinaryOp::And, i, one);
    let is_odd = b.cmp(CmpOp::Eq, bit, one);
    b.branch(is_odd, odd, vec![], next, vec![acc]);
    b.switch_to_block(odd);
    b.barrier();
    let sum = b.binary(BinaryOp::Add, acc, v);
    b.jump(next, vec![sum]);
    b.switch_to_block(next);
    let one = ku32(&mut b, 1);
    let i1 = b.binary(BinaryOp::Add, i, one);
    b.jump(header, vec![i1, acc_next]);
    b.switch_to_block(exit);
    let g = global(&mut b, Dim::X);
    store_at(&mut b, p[1], g, acc);
    b.ret(None);
    module_of(f, vec![])
}

#[test]
fn values_defined_again_after_a_loops_entry_are_reloaded_before_they_are_saved() {
    let (grid, block, iters) = (3usize, 37usize, 6usize);
    let input: Vec<u32> = (0..grid * block * iters)
        .map(|k| (k as u32).wrapping_mul(2_654_435_761) >> 7)
        .collect();
    let want: Vec<u32> = (0..grid * block)
        .map(|g| {
            (1..iters)
                .step_by(2)
                .fold(0u32, |acc, i| acc.wrapping_add(input[g * iters + i]))
        })
        .collect();
    let (m, id) = late_use();
    for backend in backends() {
        let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
        assert!(matches!(kernel.info().shape, StepShape::Regions { .. }));
        let inp = Array::copy(&input).unwrap();
        let out = Array::<u32>::alloc_unified(grid * block).unwrap();
        launch(
            &kernel,
            [grid as u32, 1, 1],
            [block as u32, 1, 1],
            &[ptr_arg(inp.as_ptr()), ptr_arg(out.as_ptr()), iters as u64],
        )
        .unwrap();
        assert_eq!(out.as_slice(), &want[..], "{}", backend.name());
    }
}

/// `wide(in, out)`: a `u64` and a `u128` carried across a barrier, the `u128` in the two
/// words after the `u64`'s (an even pair), on 3-dimensional blocks:
///
/// ```text
/// a = in[g]; w = (a as u128) * (a as u128) + 1; barrier
/// out[2 g] = (w as u64) ^ a; out[2 g + 1] = (w >> 64) as u64
/// ```
fn wide() -> (Module, FuncId) {
    let pu64 = Type::ptr(Scalar::U64);
    let mut f = kernel("wide", &[pu64, pu64]);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let (lin, n) = linear(&mut b);
    let bid = b.gpu_index(GpuIndex::BlockIdx, Dim::X);
    let base = b.binary(BinaryOp::Mul, bid, n);
    let g = b.binary(BinaryOp::Add, base, lin);
    let a = load_at(&mut b, p[0], g);
    let a128 = b.cast(a, Type::U128);
    let sq = b.binary(BinaryOp::Mul, a128, a128);
    let one = k(&mut b, Type::U128, 1);
    let w = b.binary(BinaryOp::Add, sq, one);
    b.barrier();
    let low = b.cast(w, Type::U64);
    let mixed = b.binary(BinaryOp::Xor, low, a);
    let two = ku32(&mut b, 2);
    let at = b.binary(BinaryOp::Mul, g, two);
    store_at(&mut b, p[1], at, mixed);
    let sixty_four = k(&mut b, Type::U128, 64);
    let high = b.binary(BinaryOp::Shr, w, sixty_four);
    let high = b.cast(high, Type::U64);
    let one = ku32(&mut b, 1);
    let at1 = b.binary(BinaryOp::Add, at, one);
    store_at(&mut b, p[1], at1, high);
    b.ret(None);
    module_of(f, vec![])
}

#[test]
fn wide_values_carried_by_the_largest_blocks_stay_in_their_state() {
    let (grid, block) = (2usize, [8usize, 8, 16]);
    let threads = block.iter().product::<usize>();
    let input: Vec<u64> = (0..grid * threads)
        .map(|k| (k as u64 + 3).wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect();
    let want: Vec<u64> = input
        .iter()
        .flat_map(|&a| {
            let w = u128::from(a) * u128::from(a) + 1;
            [(w as u64) ^ a, (w >> 64) as u64]
        })
        .collect();
    let (m, id) = wide();
    for backend in backends() {
        let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
        assert!(matches!(kernel.info().shape, StepShape::Regions { .. }));
        // `a` in word 0, `w` in words 2 and 3.
        assert_eq!(kernel.info().state_words, 4, "{}", backend.name());
        let inp = Array::copy(&input).unwrap();
        let out = Array::<u64>::alloc_unified(2 * grid * threads).unwrap();
        let dims = block.map(|d| d as u32);
        launch(
            &kernel,
            [grid as u32, 1, 1],
            dims,
            &[ptr_arg(inp.as_ptr()), ptr_arg(out.as_ptr())],
        )
        .unwrap();
        assert_eq!(out.as_slice(), &want[..], "{}", backend.name());
    }
}
