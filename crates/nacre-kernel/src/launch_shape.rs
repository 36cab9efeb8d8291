//! Launch-shape specialisation: a kernel whose every launch in the module uses the same
//! constant block (or grid) size in a dimension reads that size as a constant.
//!
//! [`launch_shapes`] reads the module's launches: for each kernel and each of `gridDim` and
//! `blockDim` in x, y and z, the size every launch agrees on, if all of them pass the same
//! constant ([`LaunchShape`]). [`specialise_launch_shapes`] replaces the kernel's reads of
//! those sizes by constants and returns the shapes ([`LaunchShapes`]) for the backend,
//! so that the usual passes can fold what depends on them: a tree reduction over
//! `blockDim.x / 2, .., 1` gets constant bounds and unrolls, and a backend can tell its compiler
//! the block size (CUDA's `__launch_bounds__`).
//!
//! Only a backend that launches exactly the grid and block the host code asks for may run a
//! specialised kernel (the CUDA and Metal runtimes do; the CPU runtime's serial mode does not).
//! The shapes are not stored in the IR: [`specialised_for_launches`] returns them with the
//! module they describe ([`Specialised`]), and debug builds check that every launch passes the
//! constants its kernel was specialised for.

use nacre_ir::analysis::GpuBounds;
use nacre_ir::passes::{optimize, PassOptions, PassStats};
use nacre_ir::{
    Const, Dim, FuncId, FuncKind, Function, GpuIndex, InstKind, Module, Type, Value, ValueDef,
    VerifiedModule,
};
use std::collections::HashMap;

/// The launch shape of each specialised kernel (kernels absent: nothing known).
pub type LaunchShapes = HashMap<FuncId, LaunchShape>;

/// A module whose kernels were specialised for their launch shapes, and those shapes.
#[derive(Clone, Debug)]
pub struct Specialised {
    /// The specialised and re-optimised module.
    pub module: VerifiedModule,
    /// What each kernel was specialised for.
    pub shapes: LaunchShapes,
}

impl Specialised {
    /// The shape kernel `id` was specialised for (unknown if it was not).
    pub fn shape(&self, id: FuncId) -> LaunchShape {
        self.shapes.get(&id).copied().unwrap_or_default()
    }
}

/// The grid and block sizes a kernel's launches are known to use (`None`: varies or unknown).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct LaunchShape {
    /// Blocks per grid in x, y, z.
    pub grid: [Option<u32>; 3],
    /// Threads per block in x, y, z.
    pub block: [Option<u32>; 3],
}

impl LaunchShape {
    /// The ranges of the GPU indices under this shape: the known block sizes, else the
    /// launch limits.
    pub fn bounds(&self) -> GpuBounds {
        let mut bounds = GpuBounds::LIMITS;
        for (d, known) in self.block.iter().enumerate() {
            if let Some(size) = known {
                bounds.block[d] = bounds.block[d].min(*size);
            }
        }
        bounds
    }

    /// The known size that `index` (`GridDim` or `BlockDim`) reads in `dim`.
    pub fn size(&self, index: GpuIndex, dim: Dim) -> Option<u32> {
        match index {
            GpuIndex::GridDim => self.grid[dim.index()],
            GpuIndex::BlockDim => self.block[dim.index()],
            GpuIndex::ThreadIdx | GpuIndex::BlockIdx => None,
        }
    }

    /// Threads per block, if all three block sizes are known (and the product fits a `u32`).
    pub fn threads_per_block(&self) -> Option<u32> {
        let [x, y, z] = self.block;
        x?.checked_mul(y?)?.checked_mul(z?)
    }

    /// True if nothing is known.
    pub fn is_unknown(&self) -> bool {
        *self == LaunchShape::default()
    }

    /// Folds one launch's sizes into what earlier launches agreed on.
    fn meet(&mut self, other: &LaunchShape) {
        for (a, b) in self.grid.iter_mut().zip(other.grid) {
            if *a != b {
                *a = None;
            }
        }
        for (a, b) in self.block.iter_mut().zip(other.block) {
            if *a != b {
                *a = None;
            }
        }
    }
}

/// The `u32` constant `v` is, if it is one.
pub fn const_u32(f: &Function, v: Value) -> Option<u32> {
    let ValueDef::Result(i) = f.values[v].def else {
        return None;
    };
    match f.insts[i].kind {
        InstKind::Const(Const { ty, bits }) if ty == Type::U32 => u32::try_from(bits).ok(),
        _ => None,
    }
}

/// For every kernel launched by the module's host functions, the sizes all its launches agree
/// on (kernels never launched are absent).
pub fn launch_shapes(module: &Module) -> HashMap<FuncId, LaunchShape> {
    let mut shapes: HashMap<FuncId, LaunchShape> = HashMap::new();
    for f in module
        .functions
        .values()
        .filter(|f| f.kind == FuncKind::Host)
    {
        for data in f.live_insts() {
            let InstKind::Launch(l) = &data.kind else {
                continue;
            };
            let shape = LaunchShape {
                grid: l.grid.map(|v| const_u32(f, v)),
                block: l.block.map(|v| const_u32(f, v)),
            };
            shapes
                .entry(l.kernel)
                .and_modify(|s| s.meet(&shape))
                .or_insert(shape);
        }
    }
    shapes
}

/// Replaces each kernel's reads of the sizes its launches agree on by constants (module docs).
/// Returns the shapes of the kernels it specialised and the reads replaced as `folded`; run
/// the function passes on the kernels afterwards to fold what depends on them.
pub fn specialise_launch_shapes(module: &mut Module) -> (LaunchShapes, PassStats) {
    let mut stats = PassStats::default();
    let mut specialised = LaunchShapes::new();
    for (id, shape) in launch_shapes(module) {
        let f = &mut module.functions[id];
        if f.kind != FuncKind::Kernel || shape.is_unknown() {
            continue;
        }
        specialised.insert(id, shape);
        for b in f.layout.clone() {
            for i in f.blocks[b].insts.clone() {
                let InstKind::GpuIndex(index, dim) = f.insts[i].kind else {
                    continue;
                };
                if let Some(n) = shape.size(index, dim) {
                    f.insts[i].kind = InstKind::Const(Const {
                        ty: Type::U32,
                        bits: u128::from(n),
                    });
                    stats.folded += 1;
                }
            }
        }
    }
    (specialised, stats)
}

/// A copy of `module` whose kernels are specialised for their launch shapes
/// ([`specialise_launch_shapes`]) and optimised again where that changed them: what a backend
/// that launches exactly the host code's grids and blocks prints.
pub fn specialised_for_launches(module: &VerifiedModule) -> Specialised {
    let mut copy = module.module().clone();
    let (shapes, stats) = specialise_launch_shapes(&mut copy);
    let module = if stats.changed() {
        // Replacing a `u32` read by a `u32` constant keeps the module valid.
        let verified = nacre_ir::verify(copy).expect("specialisation keeps the module valid");
        optimize(verified, &PassOptions::default()).0
    } else {
        module.clone()
    };
    debug_assert_eq!(launch_mismatch(module.module(), &shapes), None);
    Specialised { module, shapes }
}

/// The first launch that does not pass the constant sizes its kernel was specialised for, as
/// a message (`None`: all agree).
pub fn launch_mismatch(module: &Module, shapes: &LaunchShapes) -> Option<String> {
    for f in module.functions.values() {
        for data in f.live_insts() {
            let InstKind::Launch(l) = &data.kind else {
                continue;
            };
            let Some(shape) = shapes.get(&l.kernel) else {
                continue;
            };
            let sizes = [
                ("grid", l.grid, shape.grid),
                ("block", l.block, shape.block),
            ];
            for (what, values, known) in sizes {
                for (dim, (v, known)) in Dim::ALL.into_iter().zip(values.into_iter().zip(known)) {
                    if known.is_some_and(|n| const_u32(f, v) != Some(n)) {
                        return Some(format!(
                            "@{} launches @{} with {what} size {v} in {}, but the kernel was \
                             specialised for {}",
                            f.name,
                            module.functions[l.kernel].name,
                            dim.name(),
                            known.unwrap_or_default()
                        ));
                    }
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use nacre_ir::{verify, BinaryOp, FunctionBuilder, Scalar, Signature};

    fn u32c(b: &mut FunctionBuilder<'_>, n: u32) -> Value {
        b.constant(Const {
            ty: Type::U32,
            bits: u128::from(n),
        })
    }

    /// A kernel storing `blockDim.x / 2 + gridDim.y` at `p[threadIdx.x]`, and a host function
    /// launching it once per `(grid, block)` given (grid `None`: the run-time parameter `n`).
    fn module(launches: &[(Option<u32>, u32)]) -> Module {
        let mut m = Module::new();
        let pu = Type::ptr(Scalar::U32);
        let mut k = Function::new(
            "k",
            FuncKind::Kernel,
            Signature {
                params: vec![pu],
                ret: None,
            },
        );
        {
            let mut b = FunctionBuilder::new(&mut k);
            let p = b.create_entry_block();
            let dim = b.gpu_index(GpuIndex::BlockDim, Dim::X);
            let two = u32c(&mut b, 2);
            let half = b.binary(BinaryOp::Div, dim, two);
            let grid_y = b.gpu_index(GpuIndex::GridDim, Dim::Y);
            let sum = b.binary(BinaryOp::Add, half, grid_y);
            let t = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
            let at = b.elem_ptr(p[0], t);
            b.store(at, sum);
            b.ret(None);
        }
        let kernel = m.add_function(k);
        let mut h = Function::new(
            "host",
            FuncKind::Host,
            Signature {
                params: vec![pu, Type::U32],
                ret: None,
            },
        );
        {
            let mut b = FunctionBuilder::new(&mut h);
            let p = b.create_entry_block();
            for &(grid, block) in launches {
                let gx = match grid {
                    Some(g) => u32c(&mut b, g),
                    None => p[1],
                };
                let one = u32c(&mut b, 1);
                let bx = u32c(&mut b, block);
                b.launch(kernel, [gx, one, one], [bx, one, one], vec![p[0]]);
            }
            b.ret(None);
        }
        m.entry = Some(m.add_function(h));
        m
    }

    fn kernel_id(m: &Module) -> FuncId {
        m.functions
            .iter()
            .find(|(_, f)| f.kind == FuncKind::Kernel)
            .unwrap()
            .0
    }

    fn gpu_reads(f: &Function) -> usize {
        f.live_insts()
            .filter(|d| matches!(d.kind, InstKind::GpuIndex(..)))
            .count()
    }

    #[test]
    fn agreed_constants_become_the_kernels_sizes() {
        let m = module(&[(None, 256), (Some(7), 256)]);
        let shape = *launch_shapes(&m).values().next().unwrap();
        assert_eq!(shape.block, [Some(256), Some(1), Some(1)]);
        assert_eq!(shape.grid, [None, Some(1), Some(1)]);
        assert_eq!(shape.threads_per_block(), Some(256));

        let (shapes, stats) = specialise_launch_shapes(&mut m.clone());
        assert_eq!(stats.folded, 2, "blockDim.x and gridDim.y");
        let spec = specialised_for_launches(&verify(m).unwrap());
        assert_eq!(shapes, spec.shapes);
        let id = kernel_id(spec.module.module());
        assert_eq!(spec.shape(id), shape);
        let k = &spec.module.module().functions[id];
        assert_eq!(gpu_reads(k), 1, "only threadIdx.x is left:\n{k}");
        // 256 / 2 + 1 was folded into one constant.
        let text = k.to_string();
        assert!(text.contains("129"), "{text}");
    }

    #[test]
    fn disagreeing_or_run_time_sizes_stay_reads() {
        let mut m = module(&[(Some(1), 128), (Some(1), 256)]);
        let shape = *launch_shapes(&m).values().next().unwrap();
        assert_eq!(shape.block, [None, Some(1), Some(1)]);
        assert_eq!(shape.threads_per_block(), None);
        let _ = specialise_launch_shapes(&mut m);
        assert_eq!(
            gpu_reads(&m.functions[kernel_id(&m)]),
            2,
            "blockDim.x and threadIdx.x stay"
        );
    }

    #[test]
    fn kernels_never_launched_are_left_alone() {
        let mut m = module(&[]);
        assert!(launch_shapes(&m).is_empty());
        let (shapes, stats) = specialise_launch_shapes(&mut m);
        assert!(!stats.changed() && shapes.is_empty());
    }

    #[test]
    fn a_launch_against_the_recorded_shape_is_found() {
        let mut m = module(&[(None, 256)]);
        let (mut shapes, _) = specialise_launch_shapes(&mut m);
        assert_eq!(launch_mismatch(&m, &shapes), None);
        let id = kernel_id(&m);
        shapes.get_mut(&id).unwrap().block[0] = Some(64);
        let err = launch_mismatch(&m, &shapes).unwrap();
        assert!(err.contains("64"), "{err}");
    }
}
