//! The region lowering's first condition: no barrier is in divergent control flow (see
//! "Uniformity" in the docs of `regions`), by `nacre_ir`'s uniformity analysis.

use super::Input;
use nacre_ir::analysis::uniformity::divergence;
pub(super) use nacre_ir::analysis::uniformity::{arithmetic, Divergence};
use nacre_ir::InstKind;

/// The uniformity analysis of the kernel, with `threadIdx` and the thread index as the
/// non-uniform seeds; `None` if a barrier sits in divergent control flow or some block cannot
/// reach a return.
pub(super) fn uniform_barriers(input: &Input<'_>) -> Option<Divergence> {
    let mut seeds = input.xyz.to_vec();
    seeds.push(input.t);
    let div = divergence(input.f, input.body, &seeds)?;
    for &b in input.body {
        let barrier = input.f.blocks[b]
            .insts
            .iter()
            .any(|&i| matches!(input.f.insts[i].kind, InstKind::Barrier));
        if barrier && div.blocks.contains(&b) {
            return None;
        }
    }
    Some(div)
}
