//! The platform-independent half of a Metal launch: how a kernel's arguments are bound
//! ([`KernelLayout`]), and what one launch binds and dispatches ([`plan_launch`]).
//!
//! Binding order: parameter `i` of the kernel is buffer slot `i` (`[[buffer(i)]]`), and the
//! status word is the slot after the last parameter. A pointer argument must lie in a live
//! `Array` (the size table of `nacre_runtime`); its memory is wrapped without copying, as the
//! whole pages that hold the array (`newBufferWithBytesNoCopy` needs page-aligned memory and
//! a length in whole pages), and bound at the pointer's offset in them. Arrays from
//! [`crate::MetalDevice`] are allocated in whole pages, so their wrap is exact. Arguments
//! that lie in the same pages share one wrapped buffer. A scalar argument is passed by value
//! (`setBytes`) in its own size.
//!
//! A kernel that reads its dynamic shared memory takes it as threadgroup memory 0
//! (`[[threadgroup(0)]]`, set with `setThreadgroupMemoryLength:atIndex:`, rounded up to 16
//! bytes as Metal requires) and its size in bytes at the slot after the status word.
//!
//! The grid is dispatched by threadgroups: the launch's grid is the number of threadgroups
//! in x, y, z and its block the threads per threadgroup. An empty grid or block, or more
//! threads per threadgroup than the pipeline allows, is [`Trap::InvalidLaunch`]; more dynamic
//! shared memory than the device leaves the pipeline is [`Trap::SharedMemoryLimit`].

use crate::error::MetalError;
use nacre_backend::LaunchDims;
use nacre_ir::{AddressSpace, Function, InstKind, Scalar, Trap, Type};
use nacre_runtime::find_buffer;

/// Buffer slots of a Metal compute function's argument table.
pub const MAX_BUFFERS: usize = 31;

/// How one kernel parameter is bound.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Param {
    /// A pointer into device memory: a wrapped array.
    Buffer(Scalar),
    /// A scalar passed by value, in its own size.
    Scalar(Scalar),
}

/// How a kernel's arguments are bound: parameter `i` at buffer slot `i`, the status word at
/// [`KernelLayout::status_slot`].
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct KernelLayout {
    /// The parameters, in order.
    pub params: Vec<Param>,
    /// Whether the kernel reads its dynamic shared memory (or its size), which then takes
    /// threadgroup memory 0 and, for its size, the slot [`KernelLayout::dynamic_shared_slot`].
    pub dynamic_shared: bool,
}

impl KernelLayout {
    /// The layout of a kernel whose pointer types carry inferred address spaces.
    ///
    /// Fails with [`MetalError::TooManyArguments`] when the parameters and the status word
    /// do not fit Metal's [`MAX_BUFFERS`] slots, and with [`MetalError::Internal`] for a
    /// pointer parameter that is not in device memory.
    pub fn of(kernel: &Function) -> Result<KernelLayout, MetalError> {
        let n = kernel.signature.params.len();
        let dynamic_shared = kernel.live_insts().any(|d| {
            matches!(
                d.kind,
                InstKind::DynamicShared { .. } | InstKind::DynamicSharedBytes
            )
        });
        let hidden = 1 + usize::from(dynamic_shared);
        if n + hidden > MAX_BUFFERS {
            return Err(MetalError::TooManyArguments {
                kernel: kernel.name.clone(),
                params: n,
                max: MAX_BUFFERS - hidden,
            });
        }
        let params = kernel
            .signature
            .params
            .iter()
            .map(|&t| match t {
                Type::Scalar(s) => Ok(Param::Scalar(s)),
                Type::Ptr(elem, AddressSpace::Device) => Ok(Param::Buffer(elem)),
                Type::Ptr(..) => Err(MetalError::Internal {
                    kernel: kernel.name.clone(),
                    message: format!("kernel parameter of type {t} is not in device memory"),
                }),
            })
            .collect::<Result<_, _>>()?;
        Ok(KernelLayout {
            params,
            dynamic_shared,
        })
    }

    /// The buffer slot of the status word.
    pub fn status_slot(&self) -> usize {
        self.params.len()
    }

    /// The buffer slot of the dynamic shared memory's size (a `uint`), when the kernel reads
    /// its dynamic shared memory.
    pub fn dynamic_shared_slot(&self) -> usize {
        self.params.len() + 1
    }
}

/// What a compiled pipeline allows a launch.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct PipelineLimits {
    /// Threads per threadgroup.
    pub max_threads: u64,
    /// Bytes of dynamic threadgroup memory: the device's maximum less the pipeline's static
    /// threadgroup memory.
    pub max_dynamic_shared: u64,
}

/// A dispatch: threadgroups per grid and threads per threadgroup, in x, y, z.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Dispatch {
    /// Threadgroups per grid (the launch's grid).
    pub threadgroups: [u64; 3],
    /// Threads per threadgroup (the launch's block).
    pub threads: [u64; 3],
}

impl Dispatch {
    /// Checks a launch's grid, block and dynamic shared memory against what the pipeline
    /// allows.
    pub fn new(dims: &LaunchDims, limits: PipelineLimits) -> Result<Dispatch, Trap> {
        if dims.grid.contains(&0) || dims.block.contains(&0) {
            return Err(Trap::InvalidLaunch);
        }
        let threads = dims.block.map(u64::from);
        if threads.iter().product::<u64>() > limits.max_threads {
            return Err(Trap::InvalidLaunch);
        }
        if u64::from(dims.shared_bytes) > limits.max_dynamic_shared {
            return Err(Trap::SharedMemoryLimit);
        }
        Ok(Dispatch {
            threadgroups: dims.grid.map(u64::from),
            threads,
        })
    }
}

/// Memory wrapped as one buffer: whole pages.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Region {
    /// The first byte (page-aligned).
    pub start: usize,
    /// The length in bytes (whole pages).
    pub len: usize,
}

/// What is bound at one buffer slot.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Binding {
    /// A wrapped region (an index into [`LaunchPlan::regions`]) at a byte offset.
    Buffer {
        /// The buffer slot.
        slot: usize,
        /// The region.
        region: usize,
        /// The argument's offset in the region.
        offset: usize,
    },
    /// Bytes passed by value.
    Bytes {
        /// The buffer slot.
        slot: usize,
        /// The value's bytes (little-endian; the first `len` count).
        bytes: [u8; 8],
        /// The value's size.
        len: usize,
    },
}

/// Everything one launch binds and dispatches, except the status word (at
/// [`LaunchPlan::status_slot`]).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LaunchPlan {
    /// The dispatch.
    pub dispatch: Dispatch,
    /// The distinct memory regions to wrap.
    pub regions: Vec<Region>,
    /// One binding per kernel parameter, in order.
    pub bindings: Vec<Binding>,
    /// The status word's slot.
    pub status_slot: usize,
    /// Bytes of threadgroup memory 0 (the dynamic shared memory, a multiple of 16; 0 for a
    /// kernel that reads none).
    pub dynamic_shared: u64,
}

/// The bytes a scalar takes as a kernel argument.
fn scalar_len(s: Scalar) -> usize {
    s.bytes() as usize
}

/// Plans a launch of a kernel with `layout`: `dims` as in [`nacre_backend::LaunchFn`], `args` one
/// value per parameter in the bits encoding of [`nacre_ir::semantics`], `page` the system's
/// page size, `limits` what the pipeline allows.
///
/// Fails with [`Trap::InvalidLaunch`] for a bad grid or block or a wrong argument count,
/// [`Trap::SharedMemoryLimit`] for too much dynamic shared memory, and
/// [`Trap::UnknownBuffer`] for a pointer outside every live array.
pub fn plan_launch(
    layout: &KernelLayout,
    dims: &LaunchDims,
    args: &[u64],
    page: usize,
    limits: PipelineLimits,
) -> Result<LaunchPlan, Trap> {
    let dispatch = Dispatch::new(dims, limits)?;
    if args.len() != layout.params.len() || !page.is_power_of_two() {
        return Err(Trap::InvalidLaunch);
    }
    let mut regions: Vec<Region> = Vec::new();
    let mut bindings = Vec::with_capacity(args.len());
    for (slot, (&param, &bits)) in layout.params.iter().zip(args).enumerate() {
        match param {
            Param::Scalar(s) => bindings.push(Binding::Bytes {
                slot,
                bytes: bits.to_le_bytes(),
                len: scalar_len(s),
            }),
            Param::Buffer(_) => {
                let addr = usize::try_from(bits).map_err(|_| Trap::UnknownBuffer)?;
                let (base, bytes) = find_buffer(addr).ok_or(Trap::UnknownBuffer)?;
                let start = base & !(page - 1);
                let end = base
                    .checked_add(bytes.max(1))
                    .and_then(|e| e.checked_add(page - 1))
                    .ok_or(Trap::UnknownBuffer)?
                    & !(page - 1);
                let region = Region {
                    start,
                    len: end - start,
                };
                let index = match regions.iter().position(|r| *r == region) {
                    Some(i) => i,
                    None => {
                        regions.push(region);
                        regions.len() - 1
                    }
                };
                bindings.push(Binding::Buffer {
                    slot,
                    region: index,
                    offset: addr - start,
                });
            }
        }
    }
    let mut dynamic_shared = 0;
    if layout.dynamic_shared {
        bindings.push(Binding::Bytes {
            slot: layout.dynamic_shared_slot(),
            bytes: u64::from(dims.shared_bytes).to_le_bytes(),
            len: 4,
        });
        // Metal wants a multiple of 16; at least 16, so the argument is always bound.
        dynamic_shared = u64::from(dims.shared_bytes).next_multiple_of(16).max(16);
    }
    Ok(LaunchPlan {
        dispatch,
        regions,
        bindings,
        status_slot: layout.status_slot(),
        dynamic_shared,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nacre_ir::{FuncKind, Signature};
    use nacre_runtime::memory::{register, unregister, Entry};

    const LIM: PipelineLimits = PipelineLimits {
        max_threads: 1024,
        max_dynamic_shared: 32768,
    };

    fn at(w: [u32; 6]) -> LaunchDims {
        LaunchDims::from_words([w[0], w[1], w[2], w[3], w[4], w[5], 0])
    }

    fn layout(params: &[Type]) -> Result<KernelLayout, MetalError> {
        let f = Function::new(
            "k",
            FuncKind::Kernel,
            Signature {
                params: params.to_vec(),
                ret: None,
            },
        );
        KernelLayout::of(&f)
    }

    fn dev(s: Scalar) -> Type {
        Type::Ptr(s, AddressSpace::Device)
    }

    // Non-canonical addresses the allocator never hands out; distinct from other tests'.
    const BASE: usize = 0xbeef_0000_0000_0000;

    fn entry(bytes: usize) -> Entry {
        Entry {
            bytes,
            device: "test".to_string(),
            owned: false,
        }
    }

    #[test]
    fn parameters_bind_in_order_and_the_status_word_last() {
        let l = layout(&[dev(Scalar::F32), Type::U32, Type::BOOL]).unwrap();
        assert_eq!(
            l.params,
            [
                Param::Buffer(Scalar::F32),
                Param::Scalar(Scalar::U32),
                Param::Scalar(Scalar::Bool)
            ]
        );
        assert_eq!(l.status_slot(), 3);
        let many = [Type::U32; 31];
        assert!(matches!(
            layout(&many),
            Err(MetalError::TooManyArguments { max: 30, .. })
        ));
        assert!(layout(&[Type::U32; 30]).is_ok());
        assert!(matches!(
            layout(&[Type::Ptr(Scalar::F32, AddressSpace::Shared)]),
            Err(MetalError::Internal { .. })
        ));
    }

    #[test]
    fn grids_are_dispatched_by_threadgroups() {
        let d = Dispatch::new(&at([4, 2, 1, 256, 1, 1]), LIM).unwrap();
        assert_eq!(d.threadgroups, [4, 2, 1]);
        assert_eq!(d.threads, [256, 1, 1]);
        assert_eq!(
            Dispatch::new(&at([1, 1, 1, 0, 1, 1]), LIM),
            Err(Trap::InvalidLaunch)
        );
        assert_eq!(
            Dispatch::new(&at([0, 1, 1, 1, 1, 1]), LIM),
            Err(Trap::InvalidLaunch)
        );
        assert_eq!(
            Dispatch::new(&at([1, 1, 1, 32, 32, 2]), LIM),
            Err(Trap::InvalidLaunch)
        );
        assert!(Dispatch::new(&at([u32::MAX, u32::MAX, u32::MAX, 1024, 1, 1]), LIM).is_ok());
        let shared = |bytes| LaunchDims {
            shared_bytes: bytes,
            ..at([1, 1, 1, 32, 1, 1])
        };
        assert!(Dispatch::new(&shared(32768), LIM).is_ok());
        assert_eq!(
            Dispatch::new(&shared(32769), LIM),
            Err(Trap::SharedMemoryLimit)
        );
    }

    #[test]
    fn buffers_are_whole_pages_and_shared_by_arguments_in_them() {
        let page = 16384;
        // An array at a page boundary with 5000 bytes, and one that starts mid-page.
        let a = BASE;
        let b = BASE + 3 * page + 100;
        register(a, entry(5000)).unwrap();
        register(b, entry(page)).unwrap();
        let l = layout(&[
            dev(Scalar::F32),
            dev(Scalar::F32),
            Type::F32,
            dev(Scalar::U8),
        ])
        .unwrap();
        let args = [
            (a + 64) as u64,
            b as u64,
            1.5f32.to_bits() as u64,
            (a + 4999) as u64,
        ];
        let plan = plan_launch(&l, &at([2, 1, 1, 64, 1, 1]), &args, page, LIM).unwrap();
        assert_eq!(
            plan.regions,
            [
                Region {
                    start: a,
                    len: page
                },
                Region {
                    start: BASE + 3 * page,
                    len: 2 * page
                }
            ]
        );
        assert_eq!(
            plan.bindings,
            [
                Binding::Buffer {
                    slot: 0,
                    region: 0,
                    offset: 64
                },
                Binding::Buffer {
                    slot: 1,
                    region: 1,
                    offset: 100
                },
                Binding::Bytes {
                    slot: 2,
                    bytes: (1.5f32.to_bits() as u64).to_le_bytes(),
                    len: 4
                },
                Binding::Buffer {
                    slot: 3,
                    region: 0,
                    offset: 4999
                },
            ]
        );
        assert_eq!(plan.status_slot, 4);
        unregister(a).unwrap();
        unregister(b).unwrap();
    }

    #[test]
    fn unknown_pointers_and_bad_launches_are_traps() {
        let l = layout(&[dev(Scalar::I32)]).unwrap();
        let freed = BASE + 0x100_0000;
        register(freed, entry(64)).unwrap();
        assert!(plan_launch(&l, &at([1, 1, 1, 1, 1, 1]), &[freed as u64], 4096, LIM).is_ok());
        unregister(freed).unwrap();
        assert_eq!(
            plan_launch(&l, &at([1, 1, 1, 1, 1, 1]), &[freed as u64], 4096, LIM),
            Err(Trap::UnknownBuffer)
        );
        assert_eq!(
            plan_launch(&l, &at([1, 1, 1, 1, 1, 1]), &[0], 4096, LIM),
            Err(Trap::UnknownBuffer)
        );
        assert_eq!(
            plan_launch(&l, &at([1, 1, 1, 1, 1, 1]), &[], 4096, LIM),
            Err(Trap::InvalidLaunch)
        );
        assert_eq!(
            plan_launch(&l, &at([1, 1, 1, 2048, 1, 1]), &[0], 4096, LIM),
            Err(Trap::InvalidLaunch)
        );
    }

    #[test]
    fn scalars_take_their_own_size() {
        let l = layout(&[Type::BOOL, Type::I16, Type::I64, Type::F32]).unwrap();
        let plan = plan_launch(
            &l,
            &at([1; 6]),
            &[1, 0xfffe, u64::MAX, 0x3f80_0000],
            4096,
            LIM,
        )
        .unwrap();
        let lens: Vec<usize> = plan
            .bindings
            .iter()
            .map(|b| match b {
                Binding::Bytes { len, .. } => *len,
                Binding::Buffer { .. } => 0,
            })
            .collect();
        assert_eq!(lens, [1, 2, 8, 4]);
        assert!(plan.regions.is_empty());
    }

    #[test]
    fn dynamic_shared_memory_is_threadgroup_memory_0_with_its_size_after_the_status() {
        let mut k = Function::new(
            "k",
            FuncKind::Kernel,
            Signature {
                params: vec![Type::U32],
                ret: None,
            },
        );
        let mut b = nacre_ir::FunctionBuilder::new(&mut k);
        b.create_entry_block();
        b.dynamic_shared(Scalar::F32);
        b.ret(None);
        let l = KernelLayout::of(&k).unwrap();
        assert!(l.dynamic_shared);
        assert_eq!((l.status_slot(), l.dynamic_shared_slot()), (1, 2));
        let dims = LaunchDims {
            shared_bytes: 100,
            ..at([1, 1, 1, 32, 1, 1])
        };
        let plan = plan_launch(&l, &dims, &[7], 4096, LIM).unwrap();
        assert_eq!(plan.dynamic_shared, 112, "a multiple of 16");
        assert_eq!(
            plan.bindings[1],
            Binding::Bytes {
                slot: 2,
                bytes: 100u64.to_le_bytes(),
                len: 4
            }
        );
        // A kernel that reads none binds none, whatever the launch gives.
        let plain = layout(&[Type::U32]).unwrap();
        let plan = plan_launch(&plain, &dims, &[7], 4096, LIM).unwrap();
        assert_eq!((plan.dynamic_shared, plan.bindings.len()), (0, 1));
        assert!(matches!(
            layout(&[Type::U32; 30]),
            Ok(KernelLayout {
                dynamic_shared: false,
                ..
            })
        ));
    }
}
