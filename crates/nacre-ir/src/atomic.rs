//! The vocabulary of atomic memory operations: which read-modify-write ([`AtomicOp`]), the
//! memory ordering ([`MemOrder`], Rust's and C++'s five) and the scope of threads it orders
//! against ([`Scope`], a GPU's block or the whole device).
//!
//! The instructions themselves are [`crate::InstKind::AtomicRmw`], [`crate::InstKind::AtomicCas`]
//! and [`crate::InstKind::Fence`]; their value semantics is [`crate::semantics::atomic_rmw`].

use crate::types::Scalar;

/// The read-modify-write of an [`crate::InstKind::AtomicRmw`]: the element becomes
/// `op(old, value)`, the instruction's result is `old`.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum AtomicOp {
    /// `old + value` (wrapping for integers; for floats rounded, as `+`).
    Add,
    /// `old - value` (wrapping; integers only).
    Sub,
    /// The smaller (signed or unsigned by the type; for floats Rust's `min`, a NaN ignored).
    Min,
    /// The larger (as [`AtomicOp::Min`]).
    Max,
    /// `old & value` (integers only).
    And,
    /// `old | value` (integers only).
    Or,
    /// `old ^ value` (integers only).
    Xor,
    /// `value` (Rust's `swap`).
    Swap,
}

impl AtomicOp {
    /// Every operation.
    pub const ALL: [AtomicOp; 8] = [
        AtomicOp::Add,
        AtomicOp::Sub,
        AtomicOp::Min,
        AtomicOp::Max,
        AtomicOp::And,
        AtomicOp::Or,
        AtomicOp::Xor,
        AtomicOp::Swap,
    ];

    /// The operation's name in the IR text (`add`, `swap`, ...).
    pub fn name(self) -> &'static str {
        match self {
            AtomicOp::Add => "add",
            AtomicOp::Sub => "sub",
            AtomicOp::Min => "min",
            AtomicOp::Max => "max",
            AtomicOp::And => "and",
            AtomicOp::Or => "or",
            AtomicOp::Xor => "xor",
            AtomicOp::Swap => "swap",
        }
    }

    /// The binary operator that combines the old value with the operand (`op(old, value)`),
    /// or `None` for [`AtomicOp::Swap`], which stores the operand.
    pub fn binary(self) -> Option<crate::BinaryOp> {
        use crate::BinaryOp;
        Some(match self {
            AtomicOp::Add => BinaryOp::Add,
            AtomicOp::Sub => BinaryOp::Sub,
            AtomicOp::Min => BinaryOp::Min,
            AtomicOp::Max => BinaryOp::Max,
            AtomicOp::And => BinaryOp::And,
            AtomicOp::Or => BinaryOp::Or,
            AtomicOp::Xor => BinaryOp::Xor,
            AtomicOp::Swap => return None,
        })
    }

    /// Whether the operation is defined on elements of type `s`: 32- and 64-bit integers for
    /// every operation; `f32` for add, min, max and swap; `f64` for add and swap.
    pub fn supports(self, s: Scalar) -> bool {
        match s {
            Scalar::I32 | Scalar::U32 | Scalar::I64 | Scalar::U64 => true,
            Scalar::F32 => matches!(
                self,
                AtomicOp::Add | AtomicOp::Min | AtomicOp::Max | AtomicOp::Swap
            ),
            Scalar::F64 => matches!(self, AtomicOp::Add | AtomicOp::Swap),
            _ => false,
        }
    }
}

/// Whether `s` is a type [`crate::InstKind::AtomicCas`] compares and exchanges: the 32- and
/// 64-bit integers.
pub fn cas_supports(s: Scalar) -> bool {
    matches!(s, Scalar::I32 | Scalar::U32 | Scalar::I64 | Scalar::U64)
}

/// A memory ordering, with the meaning of Rust's `std::sync::atomic::Ordering` (C++'s
/// `memory_order`) among the threads of the operation's [`Scope`].
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum MemOrder {
    /// Atomic, with no ordering of other accesses.
    Relaxed,
    /// Later accesses stay after it.
    Acquire,
    /// Earlier accesses stay before it.
    Release,
    /// Both.
    AcqRel,
    /// Both, and one total order of all sequentially consistent operations.
    SeqCst,
}

impl MemOrder {
    /// The ordering's name in the IR text.
    pub fn name(self) -> &'static str {
        match self {
            MemOrder::Relaxed => "relaxed",
            MemOrder::Acquire => "acquire",
            MemOrder::Release => "release",
            MemOrder::AcqRel => "acq_rel",
            MemOrder::SeqCst => "seq_cst",
        }
    }

    /// Rust's ordering of the same name.
    pub fn to_std(self) -> std::sync::atomic::Ordering {
        use std::sync::atomic::Ordering as O;
        match self {
            MemOrder::Relaxed => O::Relaxed,
            MemOrder::Acquire => O::Acquire,
            MemOrder::Release => O::Release,
            MemOrder::AcqRel => O::AcqRel,
            MemOrder::SeqCst => O::SeqCst,
        }
    }

    /// The ordering of Rust's ordering (`None` for a variant Rust adds later).
    pub fn from_std(o: std::sync::atomic::Ordering) -> Option<MemOrder> {
        use std::sync::atomic::Ordering as O;
        Some(match o {
            O::Relaxed => MemOrder::Relaxed,
            O::Acquire => MemOrder::Acquire,
            O::Release => MemOrder::Release,
            O::AcqRel => MemOrder::AcqRel,
            O::SeqCst => MemOrder::SeqCst,
            _ => return None,
        })
    }

    /// The ordering a failed compare-exchange loads with: the success ordering without its
    /// release part (as Rust's `compare_exchange` allows at most).
    pub fn failure(self) -> MemOrder {
        match self {
            MemOrder::Release | MemOrder::Relaxed => MemOrder::Relaxed,
            MemOrder::AcqRel | MemOrder::Acquire => MemOrder::Acquire,
            MemOrder::SeqCst => MemOrder::SeqCst,
        }
    }
}

/// The threads an atomic operation or fence orders against.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Scope {
    /// The threads of the calling thread's block (CUDA's `_block` atomics, `__threadfence_block`;
    /// Metal's threadgroup). On the CPU, where a block runs on one core, the same as
    /// [`Scope::Device`].
    Block,
    /// Every thread of the device (and host code).
    Device,
}

impl Scope {
    /// The scope's name in the IR text.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Block => "block",
            Scope::Device => "device",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantics::atomic_rmw;

    #[test]
    fn every_operation_is_its_operator() {
        let (a, b) = ((-7i32) as u32 as u128, 5u128);
        let i32s: Vec<u128> = AtomicOp::ALL
            .iter()
            .map(|&op| atomic_rmw(op, Scalar::I32, a, b))
            .collect();
        let want = [-2i32, -12, -7, 5, -7 & 5, -7 | 5, -7 ^ 5, 5];
        assert_eq!(i32s, want.map(|x| x as u32 as u128));
        // Unsigned min and max compare as unsigned.
        assert_eq!(atomic_rmw(AtomicOp::Min, Scalar::U32, a, b), 5);
        assert_eq!(
            atomic_rmw(AtomicOp::Max, Scalar::U64, u64::MAX.into(), 1),
            u64::MAX.into()
        );
        // Float min ignores a NaN; add rounds as `+`.
        let nan = u128::from(f32::NAN.to_bits());
        let two = u128::from(2f32.to_bits());
        assert_eq!(atomic_rmw(AtomicOp::Min, Scalar::F32, nan, two), two);
        let sum = atomic_rmw(
            AtomicOp::Add,
            Scalar::F64,
            0.1f64.to_bits().into(),
            0.2f64.to_bits().into(),
        );
        assert_eq!(f64::from_bits(sum as u64), 0.1 + 0.2);
    }

    #[test]
    fn types_and_orderings() {
        assert!(AtomicOp::ALL.iter().all(|op| op.supports(Scalar::U64)));
        assert!(AtomicOp::Min.supports(Scalar::F32) && !AtomicOp::Min.supports(Scalar::F64));
        assert!(!AtomicOp::Xor.supports(Scalar::F32) && !AtomicOp::Add.supports(Scalar::I16));
        assert!(cas_supports(Scalar::I64) && !cas_supports(Scalar::F32));
        assert_eq!(MemOrder::AcqRel.failure(), MemOrder::Acquire);
        assert_eq!(MemOrder::Release.failure(), MemOrder::Relaxed);
        for o in [
            MemOrder::Relaxed,
            MemOrder::Acquire,
            MemOrder::Release,
            MemOrder::AcqRel,
            MemOrder::SeqCst,
        ] {
            assert_eq!(MemOrder::from_std(o.to_std()), Some(o));
        }
    }
}
