//! Comparisons of kernels that the launch shape decides.
//!
//! A kernel that every launch gives the same block size knows the range of its thread
//! indices: with 16 × 16 threads, `threadIdx.x + 1 < 18` holds on every thread. Indexing a
//! 2D shared array `[(y, x)]` compares each coordinate with its extent (so that a column past
//! the end cannot reach the next row); [`fold_proven_compares`] turns such comparisons, and
//! every other one the range analysis ([`nacre_ir::analysis::Ranges`]) decides, into
//! constants and re-optimises the module, which then drops the selects and branches they fed
//! (and the bounds checks those selects kept alive).

use crate::launch_shape::launch_shapes;
use nacre_ir::analysis::Ranges;
use nacre_ir::passes::PassOptions;
use nacre_ir::{Const, FuncKind, Function, InstKind, Module, Type, VerifiedModule};

/// Replaces every comparison in a kernel of `module` whose outcome the kernel's launch shape
/// decides by a constant and, if any was, runs the optimisation passes again; returns the
/// module and how many comparisons became constants.
pub fn fold_proven_compares(
    module: VerifiedModule,
    passes: &PassOptions,
) -> (VerifiedModule, usize) {
    let mut copy = module.module().clone();
    let folded = fold_in_module(&mut copy);
    if folded == 0 {
        return (module, 0);
    }
    // Replacing a comparison by the constant it always produces keeps the module valid; were
    // it not so, the module stays as it was.
    match nacre_ir::verify(copy) {
        Ok(verified) => (nacre_ir::passes::optimize(verified, passes).0, folded),
        Err(_) => (module, 0),
    }
}

fn fold_in_module(module: &mut Module) -> usize {
    let shapes = launch_shapes(module);
    module
        .functions
        .iter_mut()
        .filter(|(_, f)| f.kind == FuncKind::Kernel)
        .map(|(id, f)| fold_in_kernel(f, &shapes.get(&id).copied().unwrap_or_default()))
        .sum()
}

fn fold_in_kernel(f: &mut Function, shape: &crate::LaunchShape) -> usize {
    let ranges = Ranges::compute(f, shape.bounds());
    let mut decided = Vec::new();
    for &b in &f.layout {
        for &inst in &f.blocks[b].insts {
            let data = &f.insts[inst];
            let (InstKind::Cmp(..), Some(r)) = (&data.kind, data.result) else {
                continue;
            };
            if let Some(iv) = ranges.at(f, r, b).filter(|iv| iv.lo == iv.hi) {
                decided.push((inst, iv.lo != 0));
            }
        }
    }
    for &(inst, holds) in &decided {
        f.insts[inst].kind = InstKind::Const(Const {
            ty: Type::BOOL,
            bits: u128::from(holds),
        });
    }
    decided.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use nacre_ir::{BinaryOp, CmpOp, Dim, FunctionBuilder, GpuIndex, Scalar, Signature};

    fn signature() -> Signature {
        Signature {
            params: vec![Type::ptr(Scalar::U8)],
            ret: None,
        }
    }

    /// A kernel storing `threadIdx.x + 1 < 18` at `p`, and a host function launching it with
    /// `block` threads.
    fn kernel_comparing(block: u32) -> Module {
        let mut m = Module::new();
        let mut k = Function::new("k", FuncKind::Kernel, signature());
        {
            let mut b = FunctionBuilder::new(&mut k);
            let p = b.create_entry_block();
            let t = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
            let one = b.const_bits(Type::U32, 1);
            let x = b.binary(BinaryOp::Add, t, one);
            let limit = b.const_bits(Type::U32, 18);
            let c = b.cmp(CmpOp::Lt, x, limit);
            let byte = b.cast(c, Type::U8);
            b.store(p[0], byte);
            b.ret(None);
        }
        let kernel = m.add_function(k);
        let mut h = Function::new("host", FuncKind::Host, signature());
        {
            let mut b = FunctionBuilder::new(&mut h);
            let p = b.create_entry_block();
            let one = b.const_bits(Type::U32, 1);
            let threads = b.const_bits(Type::U32, u64::from(block));
            b.launch(kernel, [one, one, one], [threads, one, one], vec![p[0]]);
            b.ret(None);
        }
        m.entry = Some(m.add_function(h));
        m
    }

    fn folded(block: u32) -> usize {
        let m = nacre_ir::verify(kernel_comparing(block)).expect("a valid module");
        fold_proven_compares(m, &PassOptions::default()).1
    }

    #[test]
    fn a_comparison_the_block_size_decides_becomes_a_constant() {
        assert_eq!(folded(16), 1);
        assert_eq!(folded(17), 1);
    }

    #[test]
    fn a_comparison_some_thread_fails_stays() {
        assert_eq!(folded(18), 0);
        assert_eq!(folded(256), 0);
    }
}
