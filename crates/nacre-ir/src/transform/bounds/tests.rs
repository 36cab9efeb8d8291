use super::*;
use crate::function::FuncKind;
use crate::instructions::{BinaryOp, CmpOp};
use crate::semantics::in_bounds;
use crate::types::Scalar;
use insta::assert_snapshot;

fn f32p() -> Type {
    Type::ptr(Scalar::F32)
}

/// Verifies `m`, inserts checks, verifies the result again and returns it.
fn checked(m: Module) -> Module {
    let out = insert_bounds_checks(crate::verify(m).unwrap(), BoundsOptions::default());
    crate::verify(out.into_inner())
        .expect("the transform keeps modules valid")
        .into_inner()
}

/// `sum(p, n)`: a loop over `p[0..n]` that carries a derived pointer, and a call that passes it.
fn looped_module() -> Module {
    let mut m = Module::new();
    let helper = m.add_function(FunctionBuilder::build(
        "first",
        FuncKind::Host,
        &[f32p()],
        Some(Type::F32),
        |b, p| {
            let x = b.load(p[0]);
            b.ret(Some(x));
        },
    ));
    let mut f = Function::new(
        "sum",
        FuncKind::Host,
        crate::Signature {
            params: vec![f32p(), Type::I64],
            ret: Some(Type::F32),
        },
    );
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let head = b.create_block();
    let ptr = b.append_block_param(head, f32p());
    let i = b.append_block_param(head, Type::I64);
    let acc = b.append_block_param(head, Type::F32);
    let body = b.create_block();
    let exit = b.create_block();
    let zero = b.const_bits(Type::I64, 0);
    let fzero = b.const_bits(Type::F32, 0);
    b.jump(head, vec![p[0], zero, fzero]);
    b.switch_to_block(head);
    let more = b.cmp(CmpOp::Lt, i, p[1]);
    b.branch(more, body, vec![], exit, vec![]);
    b.switch_to_block(body);
    let x = b.load(ptr);
    let acc2 = b.binary(BinaryOp::Add, acc, x);
    let one = b.const_bits(Type::I64, 1);
    let next = b.elem_ptr(ptr, one);
    let i2 = b.binary(BinaryOp::Add, i, one);
    b.jump(head, vec![next, i2, acc2]);
    b.switch_to_block(exit);
    let first = b.call(helper, vec![p[0]], Some(Type::F32)).unwrap();
    let r = b.binary(BinaryOp::Add, acc, first);
    b.ret(Some(r));
    let id = m.add_function(f);
    m.entry = Some(id);
    m
}

#[test]
fn companions_follow_pointers_through_blocks_and_calls() {
    let m = checked(looped_module());
    assert_snapshot!(m.to_string());
}

#[test]
fn signatures_gain_two_companions_per_pointer() {
    let m = checked(looped_module());
    for f in m.functions.values() {
        let ptrs = f.signature.params.iter().filter(|t| t.is_ptr()).count();
        // One original pointer gives one extra pointer (its base) and one u64.
        assert_eq!(ptrs, 2, "{}", f.name);
        assert_eq!(*f.signature.params.last().unwrap(), Type::U64);
    }
    assert_eq!(
        companion_positions(&[f32p(), Type::I64, f32p()]),
        vec![Some((3, 4)), None, Some((5, 6))]
    );
}

#[test]
fn every_access_is_checked_and_names_its_parameter() {
    let m = checked(looped_module());
    let sum = m.functions.values().find(|f| f.name == "sum").unwrap();
    let checks: Vec<Trap> = sum
        .live_insts()
        .filter_map(|d| match d.kind {
            InstKind::BoundsCheck { trap, .. } => Some(trap),
            _ => None,
        })
        .collect();
    // The loop's pointer is a block parameter derived only from parameter 0.
    assert_eq!(checks, vec![Trap::out_of_bounds(Some(1), Some(0))]);
}

#[test]
fn kernels_can_be_left_unchecked() {
    let mut m = Module::new();
    let k = m.add_function(FunctionBuilder::build(
        "k",
        FuncKind::Kernel,
        &[f32p()],
        None,
        |b, p| {
            let x = b.load(p[0]);
            b.store(p[0], x);
            b.ret(None);
        },
    ));
    m.entry = Some(k);
    let out = insert_bounds_checks(
        crate::verify(m).unwrap(),
        BoundsOptions {
            check_kernels: false,
        },
    );
    let f = &out.module().functions[k];
    assert_eq!(f.signature.params.len(), 3);
    assert!(!f
        .live_insts()
        .any(|d| matches!(d.kind, InstKind::BoundsCheck { .. })));
}

#[test]
fn in_bounds_is_exact_at_the_edges() {
    assert!(in_bounds(100, 100, 4, 4));
    assert!(!in_bounds(101, 100, 4, 4));
    assert!(!in_bounds(99, 100, 4, 4));
    assert!(!in_bounds(100, 100, 3, 4));
    assert!(!in_bounds(100, 100, 0, 1));
    assert!(in_bounds(104, 100, 8, 4));
    assert!(!in_bounds(108, 100, 8, 4));
    assert!(!in_bounds(u64::MAX, 100, 8, 4));
}

#[test]
fn out_of_bounds_codes_round_trip() {
    for t in [
        Trap::out_of_bounds(None, None),
        Trap::out_of_bounds(Some(3), Some(1)),
        Trap::out_of_bounds(Some(70_000), Some(300)),
        Trap::out_of_bounds(Some(0), None),
    ] {
        assert_eq!(Trap::from_code(t.code()), Some(t));
    }
    assert_eq!(Trap::from_code(0x105), None);
}

/// `sum(p, n)`: `for i in 0..n { acc += p[i] }`.
fn indexed_sum() -> Module {
    let mut m = Module::new();
    let mut f = Function::new(
        "sum",
        FuncKind::Host,
        crate::Signature {
            params: vec![f32p(), Type::I64],
            ret: Some(Type::F32),
        },
    );
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let head = b.create_block();
    let i = b.append_block_param(head, Type::I64);
    let acc = b.append_block_param(head, Type::F32);
    let body = b.create_block();
    let exit = b.create_block();
    let zero = b.const_bits(Type::I64, 0);
    let fzero = b.const_bits(Type::F32, 0);
    b.jump(head, vec![zero, fzero]);
    b.switch_to_block(head);
    let more = b.cmp(CmpOp::Lt, i, p[1]);
    b.branch(more, body, vec![], exit, vec![]);
    b.switch_to_block(body);
    let addr = b.elem_ptr(p[0], i);
    let x = b.load(addr);
    let acc2 = b.binary(BinaryOp::Add, acc, x);
    let one = b.const_bits(Type::I64, 1);
    let i2 = b.binary(BinaryOp::Add, i, one);
    b.jump(head, vec![i2, acc2]);
    b.switch_to_block(exit);
    b.ret(Some(acc));
    let id = m.add_function(f);
    m.entry = Some(id);
    m
}

#[test]
fn counted_loops_check_their_range_before_the_loop() {
    let m = checked(indexed_sum());
    let f = m.functions.values().next().unwrap();
    let entry = f.entry().unwrap();
    let checks_in = |b: Block| {
        f.blocks[b]
            .insts
            .iter()
            .filter(|&&i| matches!(f.insts[i].kind, InstKind::BoundsCheck { .. }))
            .count()
    };
    assert_eq!(checks_in(entry), 2, "{f}");
    let in_loop: usize = f
        .layout
        .iter()
        .filter(|&&b| b != entry)
        .map(|&b| checks_in(b))
        .sum();
    assert_eq!(in_loop, 0, "{f}");
    assert_snapshot!(f.to_string());
}

fn check_count(f: &Function) -> usize {
    f.live_insts()
        .filter(|d| matches!(d.kind, InstKind::BoundsCheck { .. }))
        .count()
}

#[test]
fn a_repeated_check_is_removed() {
    let mut m = Module::new();
    let id = m.add_function(FunctionBuilder::build(
        "bump",
        FuncKind::Host,
        &[f32p(), Type::I64],
        None,
        |b, p| {
            let at = b.elem_ptr(p[0], p[1]);
            let x = b.load(at);
            let again = b.elem_ptr(p[0], p[1]);
            b.store(again, x);
            let seven = b.const_bits(Type::I64, 7);
            let other = b.elem_ptr(p[0], seven);
            b.store(other, x);
            b.ret(None);
        },
    ));
    m.entry = Some(id);
    // `p[i]` is checked once for the load and the store; `p[7]` has its own check.
    assert_eq!(check_count(&checked(m).functions[id]), 2);
}

/// A kernel that stores to `s[t]` and `s[t + 1]` of a 256-element shared array.
fn shared_kernel() -> Module {
    let mut m = Module::new();
    let id = m.add_function(FunctionBuilder::build(
        "k",
        FuncKind::Kernel,
        &[],
        None,
        |b, _| {
            let s = b.shared_alloc(Scalar::F32, 256);
            let t = b.gpu_index(crate::GpuIndex::ThreadIdx, crate::Dim::X);
            let zero = b.const_bits(Type::F32, 0);
            let at = b.elem_ptr(s, t);
            b.store(at, zero);
            let one = b.const_u32(1);
            let next = b.binary(BinaryOp::Add, t, one);
            let after = b.elem_ptr(s, next);
            b.store(after, zero);
            b.ret(None);
        },
    ));
    m.entry = Some(id);
    m
}

#[test]
fn shared_array_indices_proven_in_range_lose_their_check() {
    let mut m = checked(shared_kernel());
    let f = m.functions.values_mut().next().unwrap();
    // Up to 1024 threads per block: neither index is known to fit 256 elements.
    assert_eq!(check_count(f), 2);
    let block_256 = GpuBounds {
        block: [256, 1, 1],
        ..GpuBounds::LIMITS
    };
    assert_eq!(proven::remove_proven_checks(f, block_256), 1);
    // `s[t]` fits; `s[t + 1]` does not for the last thread.
    assert_eq!(check_count(f), 1);
    let kept = f
        .live_insts()
        .find_map(|d| match d.kind {
            InstKind::BoundsCheck { addr, .. } => Some(addr),
            _ => None,
        })
        .unwrap();
    let crate::ValueDef::Result(inst) = f.values[kept].def else {
        panic!("an elem_ptr")
    };
    assert!(
        matches!(f.insts[inst].kind, InstKind::ElemPtr(_, i) if matches!(
            f.values[i].def, crate::ValueDef::Result(add) if matches!(f.insts[add].kind, InstKind::Binary(BinaryOp::Add, ..))
        ))
    );
}

#[test]
fn dynamic_shared_memory_is_checked_against_the_launch_size() {
    let mut m = Module::new();
    let id = m.add_function(FunctionBuilder::build(
        "k",
        FuncKind::Kernel,
        &[],
        None,
        |b, _| {
            let s = b.dynamic_shared(Scalar::F32);
            let t = b.gpu_index(crate::GpuIndex::ThreadIdx, crate::Dim::X);
            let zero = b.const_bits(Type::F32, 0);
            let at = b.elem_ptr(s, t);
            b.store(at, zero);
            b.ret(None);
        },
    ));
    m.entry = Some(id);
    let mut m = checked(m);
    let f = &mut m.functions[id];
    // The size is unknown until the launch: even the first thread's store keeps its check.
    assert_eq!(proven::remove_proven_checks(f, GpuBounds::LIMITS), 0);
    let bytes = f
        .live_insts()
        .find_map(|d| match d.kind {
            InstKind::BoundsCheck { bytes, .. } => Some(bytes),
            _ => None,
        })
        .expect("the store is checked");
    // `bytes` is the launch's size widened to u64.
    let crate::ValueDef::Result(cast) = f.values[bytes].def else {
        panic!("a cast")
    };
    let InstKind::Cast(size) = f.insts[cast].kind else {
        panic!("a cast, not {:?}", f.insts[cast].kind)
    };
    let crate::ValueDef::Result(query) = f.values[size].def else {
        panic!("the size query")
    };
    assert_eq!(f.insts[query].kind, InstKind::DynamicSharedBytes);
}
