use super::*;
use crate::test_host::launch_once;
use nacre_ir::{verify, Dim, FunctionBuilder, GpuIndex};

/// `k(out)`: `for (p = tid; p < limit; p += step) out[p] = p;` then `out[0] = p` (a header
/// value used after the loop).
fn tile_loop(limit: u32, step: u32) -> Module {
    let mut m = Module::new();
    let p32 = Type::ptr(Scalar::U32);
    let k = m.add_function(FunctionBuilder::build(
        "k",
        FuncKind::Kernel,
        &[p32],
        None,
        |b, a| {
            let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
            let header = b.create_block();
            let body = b.create_block();
            let exit = b.create_block();
            b.jump(header, vec![tid]);
            b.switch_to_block(header);
            let p = b.append_block_param(header, Type::U32);
            let c = b.const_u32(limit);
            let go = b.cmp(CmpOp::Lt, p, c);
            b.branch(go, body, vec![], exit, vec![]);
            b.switch_to_block(body);
            let at = b.elem_ptr(a[0], p);
            b.store(at, p);
            let s = b.const_u32(step);
            let next = b.binary(BinaryOp::Add, p, s);
            b.jump(header, vec![next]);
            b.switch_to_block(exit);
            let zero = b.const_u32(0);
            let first = b.elem_ptr(a[0], zero);
            b.store(first, p);
            b.ret(None);
        },
    ));
    launch_once(&mut m, k, &[p32], [1, 1, 1], [256, 1, 1]);
    m
}

/// `k(out)`: `for (p = tid; p < limit; p += step) out[p] = p;`, nothing after the loop.
fn tile_loop_alone(limit: u32, step: u32) -> Module {
    let mut m = tile_loop(limit, step);
    let k = crate::test_host::kernel(&mut m);
    let exit = *k.layout.last().expect("blocks");
    // Drop the store after the loop (its address, constant and store), keeping the return.
    let insts = &mut k.blocks[exit].insts;
    let ret = insts.pop().expect("a return");
    insts.clear();
    insts.push(ret);
    m
}

fn stores(f: &Function) -> usize {
    f.live_insts()
        .filter(|d| matches!(d.kind, InstKind::Store(..)))
        .count()
}

#[test]
fn a_loop_of_at_most_two_trips_becomes_two_guarded_copies() {
    let mut m = verify(tile_loop(324, 256)).unwrap().into_inner();
    assert_eq!(unroll_short_loops(&mut m), 1);
    let m = verify(m).expect("the unrolled kernel verifies");
    let k = m
        .module()
        .functions
        .values()
        .find(|f| f.kind == FuncKind::Kernel)
        .unwrap();
    assert!(compute_loops(k).headers.is_empty(), "{k}");
    // Two copies of the body's store, and the one after the loop.
    assert_eq!(stores(k), 3, "{k}");
}

#[test]
fn long_or_unbounded_loops_stay() {
    let mut long = verify(tile_loop(1000, 100)).unwrap().into_inner();
    assert_eq!(unroll_short_loops(&mut long), 0);
    // `p + 256` could wrap past u32::MAX for a limit that high: not bounded.
    let mut wrapping = verify(tile_loop(u32::MAX - 10, 1 << 31))
        .unwrap()
        .into_inner();
    assert_eq!(unroll_short_loops(&mut wrapping), 0);
}

#[test]
fn a_loop_whose_body_is_laid_out_before_its_header_unrolls_the_same() {
    let mut m = verify(tile_loop(324, 256)).unwrap().into_inner();
    let k = m
        .functions
        .values_mut()
        .find(|f| f.kind == FuncKind::Kernel)
        .unwrap();
    // Layout: entry, header, body, exit; put the body first among the loop's blocks.
    k.layout.swap(1, 2);
    assert_eq!(unroll_short_loops(&mut m), 1);
    let m = verify(m).expect("the unrolled kernel verifies");
    let k = m
        .module()
        .functions
        .values()
        .find(|f| f.kind == FuncKind::Kernel)
        .unwrap();
    assert!(compute_loops(k).headers.is_empty(), "{k}");
    assert_eq!(stores(k), 3, "{k}");
}

#[test]
fn a_loop_carrying_only_its_index_unrolls_into_sections_in_sequence() {
    let mut m = verify(tile_loop_alone(324, 256)).unwrap().into_inner();
    assert_eq!(unroll_short_loops(&mut m), 1);
    let m = verify(m).expect("the unrolled kernel verifies");
    let k = m
        .module()
        .functions
        .values()
        .find(|f| f.kind == FuncKind::Kernel)
        .unwrap();
    assert!(compute_loops(k).headers.is_empty(), "{k}");
    assert_eq!(stores(k), 2, "{k}");
    // Each section tests the thread index against a constant (324, then 324 - 256), and
    // no block but the entry takes a parameter: the second test does not depend on the
    // first section.
    let tid = k
        .live_insts()
        .find(|d| matches!(d.kind, InstKind::GpuIndex(..)))
        .and_then(|d| d.result)
        .expect("threadIdx.x");
    let tests: Vec<u128> = k
        .live_insts()
        .filter_map(|d| match d.kind {
            InstKind::Cmp(CmpOp::Lt, a, b) if a == tid => match k.defining_inst(b) {
                Some(InstKind::Const(c)) => Some(c.bits),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(tests, [324, 68], "{k}");
    // The iterations' indices (`tid + 256 k`) are computed in `u64`: they cannot wrap.
    let indices: Vec<Type> = k
        .live_insts()
        .filter_map(|d| match d.kind {
            InstKind::ElemPtr(_, i) => Some(k.value_type(i)),
            _ => None,
        })
        .collect();
    assert_eq!(indices, [Type::U64, Type::U64], "{k}");
    let inner = k.layout.iter().skip(1);
    assert!(
        inner.into_iter().all(|&b| k.blocks[b].params.is_empty()),
        "{k}"
    );
}
