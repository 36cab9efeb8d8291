//! The kernel → step function lowering: every result verifies, the shapes are as documented
//! (snapshots), and what cannot be lowered is a typed error.

mod common;

use common::*;
use nacre_cpu::CpuMode;
use nacre_ir::passes::{optimize, PassOptions};
use nacre_ir::printer::module_with_loops;
use nacre_ir::{
    verify, FuncKind, Function, FunctionBuilder, Scalar, Signature, Type, VerifiedModule,
};
use nacre_kernel::step::{lower_kernel, step_module, StepInfo};
use nacre_kernel::KernelError;

/// Lowers, builds the step module, verifies it raw and after the passes.
fn lowered(
    name: &str,
    (module, id): &(nacre_ir::Module, nacre_ir::FuncId),
) -> (VerifiedModule, StepInfo) {
    let low = lower_kernel(module, *id, CpuMode::Grid).unwrap_or_else(|e| panic!("{name}: {e}"));
    let info = low.info.clone();
    let step = step_module(module, low).unwrap();
    let raw = verify(step.clone()).unwrap_or_else(|e| panic!("{name} (raw): {e}\n{step}"));
    let (opt, _) = optimize(raw, &PassOptions::default());
    let opt = verify(opt.into_inner()).unwrap_or_else(|e| panic!("{name} (after passes): {e}"));
    (opt, info)
}

#[test]
fn every_kernel_lowers_to_valid_ir() {
    for (name, k) in all_kernels() {
        let (m, _) = lowered(name, &k);
        let step = m.module().entry_function().unwrap();
        assert_eq!(step.kind, FuncKind::Host, "{name}");
        assert_eq!(step.name, name);
        assert_eq!(step.signature, nacre_kernel::step::step_signature());
    }
}

#[test]
fn step_info_records_layout() {
    let (_, info) = lowered("vec_add", &vec_add());
    assert_eq!(info.params.len(), 4);
    assert_eq!(
        (info.shared_bytes, info.state_words, info.barriers),
        (0, 0, 0)
    );

    let (_, info) = lowered("block_sum", &block_sum());
    assert_eq!(info.shared_bytes, 4 * BLOCK_SUM_MAX as usize);
    assert_eq!(info.barriers, 2);
    // Thread loops per region: `s`, live across the barrier in the loop, is uniform and stays
    // in SSA form, so no thread needs state words.
    assert_eq!(info.state_words, 0);

    // 33 i16 = 66 bytes, then 8-aligned: 72 + 32 f64.
    let (_, info) = lowered("two_shared", &two_shared());
    assert_eq!(info.shared_bytes, 72 + 256);
    assert_eq!(info.barriers, 1);

    // In grid mode a grid-stride loop runs in lockstep: a uniform loop with a barrier per
    // group of iterations (and one before it), thread loops per region, no yield and no
    // state (`i` is recomputed from the uniform index); in serial mode it runs as written.
    let (_, info) = lowered("saxpy", &saxpy());
    assert_eq!((info.barriers, info.yields, info.state_words), (2, 0, 0));
    let (module, id) = saxpy();
    let info = lower_kernel(&module, id, CpuMode::Serial).unwrap().info;
    assert_eq!((info.barriers, info.yields, info.state_words), (0, 0, 0));
    // `strided_sum` carries `acc` across the groups' barriers in one state word (the tree
    // reduction's `s` is uniform).
    let (_, info) = lowered("block_sum", &block_sum());
    assert_eq!(info.yields, 0);
    let (_, info) = lowered("strided_sum", &strided_sum());
    assert_eq!((info.barriers, info.yields, info.state_words), (4, 0, 1));
    // A loop whose trip count and start depend on the thread (`staggered`) yields.
    let (_, info) = lowered("staggered", &staggered());
    assert_eq!((info.barriers, info.yields), (1, 1), "{info:?}");

    // pointer, f64 (h), i8 (small), bool (odd), u32 (i) are live across the barrier; all
    // but `odd`, which needs a remainder, are recomputed from the thread's index by each
    // thread loop: one state word (thread loops per region need no phase).
    let (_, info) = lowered("live_values", &live_values());
    assert_eq!(info.state_words, 1, "{info:?}");
}

#[test]
fn vec_add_snapshot() {
    let (module, id) = vec_add();
    let low = lower_kernel(&module, id, CpuMode::Grid).unwrap();
    insta::assert_snapshot!("vec_add_lowered", low.func.to_string());
    let (m, _) = lowered("vec_add", &(module, id));
    insta::assert_snapshot!("vec_add_optimised", module_with_loops(&m).to_string());
}

#[test]
fn block_sum_snapshot() {
    let (module, id) = block_sum();
    let low = lower_kernel(&module, id, CpuMode::Grid).unwrap();
    insta::assert_snapshot!("block_sum_lowered", low.func.to_string());
    let (m, _) = lowered("block_sum", &(module, id));
    insta::assert_snapshot!("block_sum_optimised", module_with_loops(&m).to_string());
}

/// The collapsed step function of a grid-stride kernel: one loop over `lo .. min(n, hi)`
/// with a single exit, and the chunk's result after it.
#[test]
fn collapsed_snapshot() {
    let (module, id) = saxpy();
    let c = nacre_kernel::step::lower_collapsed(&module, id)
        .unwrap()
        .expect("saxpy has the collapsible shape");
    assert_eq!(c.max, u32::MAX as u64);
    // The bound `n` is the last parameter: the executor sizes chunks by it.
    assert_eq!(c.bound_param, Some(3));
    let step = step_module(&module, c.lowered).unwrap();
    let raw = verify(step.clone()).unwrap_or_else(|e| panic!("{e}\n{step}"));
    let (step, _) = optimize(raw, &PassOptions::default());
    let step = verify(step.into_inner()).unwrap();
    insta::assert_snapshot!(
        "saxpy_collapsed_optimised",
        module_with_loops(&step).to_string()
    );
    // Kernels with barriers do not collapse.
    let (module, id) = block_sum();
    assert!(nacre_kernel::step::lower_collapsed(&module, id)
        .unwrap()
        .is_none());
}

/// A kernel with a barrier and a block-stride loop whose start and trip count depend on the
/// thread (a yield) keeps the state machine.
#[test]
fn state_machine_snapshot() {
    let (module, id) = staggered();
    let low = lower_kernel(&module, id, CpuMode::Grid).unwrap();
    assert_eq!(low.info.shape, nacre_kernel::step::StepShape::StateMachine);
    insta::assert_snapshot!("staggered_lowered", low.func.to_string());
    // A grid-stride loop before a barrier runs in lockstep: thread loops per region.
    let (module, id) = strided_sum();
    let low = lower_kernel(&module, id, CpuMode::Grid).unwrap();
    assert!(matches!(
        low.info.shape,
        nacre_kernel::step::StepShape::Regions { .. }
    ));
}

#[test]
fn helpers_are_copied_into_the_step_module() {
    let (m, _) = lowered("with_helper", &with_helper());
    let names: Vec<&str> = m
        .module()
        .functions
        .values()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(names, ["with_helper", "mix", "twice"]);
}

#[test]
fn host_functions_and_kernel_calls_are_rejected() {
    let (module, _) = with_helper();
    let twice = nacre_ir::FuncId::from_u32(0);
    let err = lower_kernel(&module, twice, CpuMode::Grid).unwrap_err();
    assert!(matches!(err, KernelError::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("not a kernel") || err.to_string().contains("host function"));

    // A kernel calling a kernel.
    let (mut module, inner) = vec_add();
    let mut outer = Function::new(
        "outer",
        FuncKind::Kernel,
        Signature {
            params: vec![],
            ret: None,
        },
    );
    let mut b = FunctionBuilder::new(&mut outer);
    b.create_entry_block();
    let null = k(&mut b, Type::ptr(Scalar::F32), 0);
    let n = ku32(&mut b, 0);
    b.call(inner, vec![null, null, null, n], None);
    b.ret(None);
    let outer = module.add_function(outer);
    let err = lower_kernel(&module, outer, CpuMode::Grid).unwrap_err();
    assert!(err.to_string().contains("calls kernel @vec_add"), "{err}");
}

#[test]
fn invalid_kernels_are_verifier_errors() {
    let mut f = Function::new(
        "bad",
        FuncKind::Kernel,
        Signature {
            params: vec![],
            ret: None,
        },
    );
    let mut b = FunctionBuilder::new(&mut f);
    b.create_entry_block();
    let x = ku32(&mut b, 1);
    b.ret(Some(x));
    let (module, id) = module_of(f, vec![]);
    let err = lower_kernel(&module, id, CpuMode::Grid).unwrap_err();
    assert!(matches!(err, KernelError::Verify { .. }), "{err}");
}

#[test]
fn oversized_shared_memory_is_rejected() {
    let mut f = Function::new(
        "huge",
        FuncKind::Kernel,
        Signature {
            params: vec![],
            ret: None,
        },
    );
    let mut b = FunctionBuilder::new(&mut f);
    b.create_entry_block();
    b.shared_alloc(Scalar::F64, u32::MAX);
    b.ret(None);
    let (module, id) = module_of(f, vec![]);
    let err = lower_kernel(&module, id, CpuMode::Grid).unwrap_err();
    assert!(
        err.to_string().contains("shared arrays need more than"),
        "{err}"
    );
}
