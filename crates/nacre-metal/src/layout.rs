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
//! The grid is dispatched by threadgroups: the launch's grid is the number of threadgroups
//! in x, y, z and its block the threads per threadgroup. An empty grid or block, or more
//! threads per threadgroup than the pipeline allows, is [`Trap::InvalidLaunch`].

use crate::error::MetalError;
use nacre_ir::{AddressSpace, Function, Scalar, Trap, Type};
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
}

impl KernelLayout {
    /// The layout of a kernel whose pointer types carry inferred address spaces.
    ///
    /// Fails with [`MetalError::TooManyArguments`] when the parameters and the status word
    /// do not fit Metal's [`MAX_BUFFERS`] slots, and with [`MetalError::Internal`] for a
    /// pointer parameter that is not in device memory.
    pub fn of(kernel: &Function) -> Result<KernelLayout, MetalError> {
        let n = kernel.signature.params.len();
        if n + 1 > MAX_BUFFERS {
            return Err(MetalError::TooManyArguments {
                kernel: kernel.name.clone(),
                params: n,
                max: MAX_BUFFERS - 1,
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
        Ok(KernelLayout { params })
    }

    /// The buffer slot of the status word.
    pub fn status_slot(&self) -> usize {
        self.params.len()
    }
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
    /// Checks the six launch dimensions (grid x, y, z, block x, y, z) against the most
    /// threads per threadgroup the pipeline allows.
    pub fn new(dims: [u32; 6], max_threads: u64) -> Result<Dispatch, Trap> {
        if dims.contains(&0) {
            return Err(Trap::InvalidLaunch);
        }
        let d = dims.map(u64::from);
        let threads = [d[3], d[4], d[5]];
        if threads.iter().product::<u64>() > max_threads {
            return Err(Trap::InvalidLaunch);
        }
        Ok(Dispatch {
            threadgroups: [d[0], d[1], d[2]],
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
}

/// The bytes a scalar takes as a kernel argument.
fn scalar_len(s: Scalar) -> usize {
    s.bytes() as usize
}

/// Plans a launch of a kernel with `layout`: `dims` as in [`nacre_backend::LaunchFn`], `args` one
/// value per parameter in the bits encoding of [`nacre_ir::semantics`], `page` the system's
/// page size, `max_threads` the pipeline's most threads per threadgroup.
///
/// Fails with [`Trap::InvalidLaunch`] for a bad grid or block or a wrong argument count,
/// and [`Trap::UnknownBuffer`] for a pointer outside every live array.
pub fn plan_launch(
    layout: &KernelLayout,
    dims: [u32; 6],
    args: &[u64],
    page: usize,
    max_threads: u64,
) -> Result<LaunchPlan, Trap> {
    let dispatch = Dispatch::new(dims, max_threads)?;
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
    Ok(LaunchPlan {
        dispatch,
        regions,
        bindings,
        status_slot: layout.status_slot(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nacre_ir::{FuncKind, Signature};
    use nacre_runtime::memory::{register, unregister, Entry};

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
        let d = Dispatch::new([4, 2, 1, 256, 1, 1], 1024).unwrap();
        assert_eq!(d.threadgroups, [4, 2, 1]);
        assert_eq!(d.threads, [256, 1, 1]);
        assert_eq!(
            Dispatch::new([1, 1, 1, 0, 1, 1], 1024),
            Err(Trap::InvalidLaunch)
        );
        assert_eq!(
            Dispatch::new([0, 1, 1, 1, 1, 1], 1024),
            Err(Trap::InvalidLaunch)
        );
        assert_eq!(
            Dispatch::new([1, 1, 1, 32, 32, 2], 1024),
            Err(Trap::InvalidLaunch)
        );
        assert!(Dispatch::new([u32::MAX, u32::MAX, u32::MAX, 1024, 1, 1], 1024).is_ok());
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
        let plan = plan_launch(&l, [2, 1, 1, 64, 1, 1], &args, page, 1024).unwrap();
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
        assert!(plan_launch(&l, [1, 1, 1, 1, 1, 1], &[freed as u64], 4096, 1024).is_ok());
        unregister(freed).unwrap();
        assert_eq!(
            plan_launch(&l, [1, 1, 1, 1, 1, 1], &[freed as u64], 4096, 1024),
            Err(Trap::UnknownBuffer)
        );
        assert_eq!(
            plan_launch(&l, [1, 1, 1, 1, 1, 1], &[0], 4096, 1024),
            Err(Trap::UnknownBuffer)
        );
        assert_eq!(
            plan_launch(&l, [1, 1, 1, 1, 1, 1], &[], 4096, 1024),
            Err(Trap::InvalidLaunch)
        );
        assert_eq!(
            plan_launch(&l, [1, 1, 1, 2048, 1, 1], &[0], 4096, 1024),
            Err(Trap::InvalidLaunch)
        );
    }

    #[test]
    fn scalars_take_their_own_size() {
        let l = layout(&[Type::BOOL, Type::I16, Type::I64, Type::F32]).unwrap();
        let plan =
            plan_launch(&l, [1; 6], &[1, 0xfffe, u64::MAX, 0x3f80_0000], 4096, 1024).unwrap();
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
}
