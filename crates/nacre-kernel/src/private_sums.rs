//! Sums a CPU launch may give each worker privately: pointer parameters a kernel reaches only
//! through relaxed atomic integer additions whose results it never reads.
//!
//! A histogram's global bins, a counter of matches or a total are such *sum* parameters: every
//! thread adds to them and none reads them. On the CPU, blocks run on a few workers at once,
//! and atomics of different workers on the same cache lines take the lines from each other
//! (the histogram spent most of its time so). Since integer addition wraps, commutes and
//! associates, a launch may instead give each worker a zeroed copy of a sum's memory, run its
//! blocks against the copy, and add the copies into the memory at the end: the memory then
//! holds exactly what the atomics would have left, and nothing in the kernel could have seen
//! the difference, as it reads the memory by no other way.
//!
//! [`private_sums`] finds the parameters; the CPU runtime decides per launch (the memory must
//! be small, and no other pointer argument may reach it).
//!
//! A parameter `p` is a sum when every use of a pointer derived from `p` (element pointers,
//! pointer casts, selects, block parameters: [`PointerRoots`]) is one of:
//!
//! - a derivation of another pointer;
//! - a bounds check (address or base): translating `p` and its base by the same amount keeps
//!   every check's outcome;
//! - the pointer of an [`InstKind::AtomicRmw`] adding or subtracting an integer, relaxed, whose
//!   result has no use, on a pointer derived from `p` alone; every such atomic of `p` has one
//!   integer type.
//!
//! Any other use (a load or store through it, a compare-exchange, another operation, an
//! ordering other than relaxed, a call, storing or comparing the pointer, a cast to an integer)
//! makes it no sum. A kernel that accesses memory through a pointer with no parameter root
//! (other than its shared memory) has no sums: such a pointer could reach a sum's memory.

use crate::shared_atomics::{demote_where, is_shared};
use cranelift_entity::SecondaryMap;
use nacre_ir::analysis::pointer_roots::{param_bit, ParamSet, PointerRoots};
use nacre_ir::transform::companion_positions;
use nacre_ir::{AtomicOp, Function, InstKind, MemOrder, Scalar, Type, Value};
use std::collections::HashMap;

/// A parameter a launch may privatise (see the module docs).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct PrivateSum {
    /// The pointer parameter's position.
    pub param: usize,
    /// The integer type every atomic addition through it has.
    pub elem: Scalar,
    /// In a bounds-checked kernel, the positions of its base and size companions.
    pub companions: Option<(usize, usize)>,
}

/// A kernel's sum parameters and what a launch checks before it privatises them.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct PrivateSums {
    /// The sum parameters (see the module docs).
    pub sums: Vec<PrivateSum>,
    /// Every pointer parameter of the kernel as written (before companions were added), with
    /// its companions in a bounds-checked kernel: the memory a launch must find disjoint from
    /// a sum's.
    pub pointers: Vec<(usize, Option<(usize, usize)>)>,
}

/// The sum parameters of kernel `f` (see the module docs); `bounds_checked` says whether its
/// signature ends with companions (see [`companion_positions`]).
pub fn private_sums(f: &Function, bounds_checked: bool) -> PrivateSums {
    let params = &f.signature.params;
    let companions = match bounds_checked {
        true => match original_params(params) {
            Some(n) => companion_positions(&params[..n]),
            None => return PrivateSums::default(),
        },
        false => vec![None; params.len()],
    };
    // Past 62 parameters a root set is no longer exact.
    let Some(uses) = Uses::of(f).filter(|_| params.len() < 63) else {
        return PrivateSums::default();
    };
    let sums = companions
        .iter()
        .enumerate()
        .filter_map(|(param, &companions)| {
            let elem = *uses.adds.get(&param)?;
            let free = |i: usize| uses.other & param_bit(i) == 0;
            let base_free = companions.is_none_or(|(base, _)| free(base));
            (free(param) && base_free).then_some(PrivateSum {
                param,
                elem,
                companions,
            })
        })
        .collect();
    let pointers = companions
        .iter()
        .enumerate()
        .filter(|&(i, _)| params[i].is_ptr())
        .map(|(i, &c)| (i, c))
        .collect();
    PrivateSums { sums, pointers }
}

/// Makes the atomic additions to the sums of `f` plain (a load, the addition, a store), for a
/// variant of the kernel that runs only where no other thread adds to the same memory at the
/// same time: on one worker, or on workers that each add into private copies of every sum
/// (`sums` as [`private_sums`] found them for `f`). Returns how many atomics it replaced.
///
/// The atomics on a sum's memory are then the only accesses to it (see the module docs), and
/// in the order one worker runs its blocks a plain addition leaves what the atomic would.
pub fn make_sums_plain(f: &mut Function, sums: &PrivateSums) -> usize {
    if sums.sums.is_empty() {
        return 0;
    }
    let roots = PointerRoots::compute(f);
    let sum_params: Vec<usize> = sums.sums.iter().map(|s| s.param).collect();
    demote_where(f, |_, ptr| {
        roots
            .unique(ptr)
            .is_some_and(|param| sum_params.contains(&param))
    })
}

/// The number of parameters a bounds-checked signature had before its companions: the
/// largest `n` whose companions ([`companion_positions`] of the first `n`: a pointer of the
/// same type and a `u64` each) follow, then at most the `bool` a check-free kernel takes last
/// (see [`crate::check_free`]). Smaller `n` can fit too (`(p, q, m: u64)` reads as `(p)` with
/// companions `(q, m)`), a larger one cannot: past the true `n` the first companion is a
/// pointer, which needs two more slots than one extra `bool` leaves.
fn original_params(params: &[Type]) -> Option<usize> {
    (0..=params.len())
        .rev()
        .find(|&n| companions_fit(params, n))
}

/// Whether the first `n` of `params` are followed by their companions, then at most a `bool`.
fn companions_fit(params: &[Type], n: usize) -> bool {
    let positions = companion_positions(&params[..n]);
    let end = n + 2 * positions.iter().flatten().count();
    if end > params.len()
        || params[end..].iter().any(|&t| t != Type::BOOL)
        || end + 1 < params.len()
    {
        return false;
    }
    positions.iter().zip(params).all(|(c, &ty)| {
        c.is_none_or(|(base, bytes)| params[base] == ty && params[bytes] == Type::U64)
    })
}

/// How a kernel uses the pointers derived from its parameters.
struct Uses {
    /// Per parameter, the type of its atomic additions (only those that qualify).
    adds: HashMap<usize, Scalar>,
    /// The parameters with a use that is no derivation, check or qualifying addition.
    other: ParamSet,
}

impl Uses {
    /// The uses in `f`; `None` if it accesses memory through a pointer with no root.
    fn of(f: &Function) -> Option<Uses> {
        let roots = PointerRoots::compute(f);
        let read = results_read(f);
        let mut uses = Uses {
            adds: HashMap::new(),
            other: 0,
        };
        let mut types: HashMap<usize, Vec<Scalar>> = HashMap::new();
        for data in f.live_insts() {
            let kind = &data.kind;
            let accessed = match kind {
                InstKind::Load(p) | InstKind::Store(p, _) => Some(*p),
                InstKind::AtomicRmw { ptr, .. } | InstKind::AtomicCas { ptr, .. } => Some(*ptr),
                _ => None,
            };
            if let Some(p) = accessed {
                if roots.of(p) == 0 && !is_shared(f, p) {
                    return None;
                }
            }
            match kind {
                InstKind::ElemPtr(..)
                | InstKind::Select(..)
                | InstKind::BoundsCheck { .. }
                | InstKind::Jump(_)
                | InstKind::Branch { .. } => continue,
                InstKind::Cast(_) if data.result.is_some_and(|r| f.value_type(r).is_ptr()) => {
                    continue
                }
                InstKind::AtomicRmw {
                    op: AtomicOp::Add | AtomicOp::Sub,
                    ptr,
                    value,
                    order: MemOrder::Relaxed,
                    ..
                } if data.result.is_none_or(|r| !read[r]) => {
                    let ty = f.value_type(*value).scalar();
                    if let (Some(param), Some(ty)) = (roots.unique(*ptr), ty) {
                        if ty.is_int() && matches!(ty.bytes(), 1 | 2 | 4 | 8) {
                            types.entry(param).or_default().push(ty);
                            continue;
                        }
                    }
                }
                _ => {}
            }
            kind.for_each_operand(|v| uses.other |= roots.of(v));
        }
        for (param, tys) in types {
            let first = tys[0];
            if tys.iter().all(|t| t.bytes() == first.bytes()) {
                uses.adds.insert(param, first);
            } else {
                uses.other |= param_bit(param);
            }
        }
        Some(uses)
    }
}

/// Which values some live instruction reads.
fn results_read(f: &Function) -> SecondaryMap<Value, bool> {
    let mut read = SecondaryMap::new();
    for data in f.live_insts() {
        data.kind.for_each_operand(|v| read[v] = true);
    }
    read
}

#[cfg(test)]
mod tests {
    use super::*;
    use nacre_ir::{FuncKind, FunctionBuilder, Scope};

    /// A kernel of `params` whose body `body` builds (entry parameters given).
    fn kernel(params: &[Type], body: impl FnOnce(&mut FunctionBuilder, &[Value])) -> Function {
        FunctionBuilder::build("k", FuncKind::Kernel, params, None, |b, p| {
            body(b, p);
            b.ret(None);
        })
    }

    fn add(b: &mut FunctionBuilder, p: Value, at: u32, order: MemOrder) -> Value {
        let i = b.const_u32(at);
        let e = b.elem_ptr(p, i);
        let one = b.const_u32(1);
        b.atomic_rmw(AtomicOp::Add, e, one, order, Scope::Device)
    }

    fn u32p() -> Type {
        Type::ptr(Scalar::U32)
    }

    #[test]
    fn bins_only_added_to_are_a_sum_and_read_data_is_not() {
        let f = kernel(&[u32p(), u32p()], |b, p| {
            let x = b.load(p[0]);
            let e = b.elem_ptr(p[1], x);
            let one = b.const_u32(1);
            b.atomic_rmw(AtomicOp::Add, e, one, MemOrder::Relaxed, Scope::Device);
        });
        let sums = private_sums(&f, false);
        assert_eq!(sums.pointers, [(0, None), (1, None)]);
        assert_eq!(
            sums.sums,
            [PrivateSum {
                param: 1,
                elem: Scalar::U32,
                companions: None
            }]
        );
    }

    #[test]
    fn a_read_result_an_ordering_or_a_load_makes_no_sum() {
        let used = kernel(&[u32p()], |b, p| {
            let old = add(b, p[0], 0, MemOrder::Relaxed);
            b.store(p[0], old);
        });
        assert!(private_sums(&used, false).sums.is_empty());
        let ordered = kernel(&[u32p()], |b, p| {
            add(b, p[0], 0, MemOrder::AcqRel);
        });
        assert!(private_sums(&ordered, false).sums.is_empty());
        let loaded = kernel(&[u32p()], |b, p| {
            add(b, p[0], 0, MemOrder::Relaxed);
            b.load(p[0]);
        });
        assert!(private_sums(&loaded, false).sums.is_empty());
    }

    #[test]
    fn a_pointer_with_two_roots_or_none_makes_no_sum() {
        let mixed = kernel(&[u32p(), u32p(), Type::BOOL], |b, p| {
            let s = b.select(p[2], p[0], p[1]);
            add(b, s, 0, MemOrder::Relaxed);
        });
        assert!(private_sums(&mixed, false).sums.is_empty());
        let rootless = kernel(&[u32p(), Type::U64], |b, p| {
            add(b, p[0], 0, MemOrder::Relaxed);
            let q = b.cast(p[1], u32p());
            b.load(q);
        });
        assert!(private_sums(&rootless, false).sums.is_empty());
    }

    #[test]
    fn a_checked_kernel_names_the_companions() {
        // (data, n, bins, data.base, data.bytes, bins.base, bins.bytes)
        let params = [
            u32p(),
            Type::U32,
            u32p(),
            u32p(),
            Type::U64,
            u32p(),
            Type::U64,
        ];
        let f = kernel(&params, |b, p| {
            b.bounds_check(p[2], p[5], p[6], nacre_ir::Trap::out_of_bounds(None, None));
            add(b, p[2], 3, MemOrder::Relaxed);
        });
        let sums = private_sums(&f, true);
        assert_eq!(sums.pointers, [(0, Some((3, 4))), (2, Some((5, 6)))]);
        assert_eq!(
            sums.sums,
            [PrivateSum {
                param: 2,
                elem: Scalar::U32,
                companions: Some((5, 6))
            }]
        );
        assert_eq!(original_params(&params), Some(3));
        let mut check_free = params.to_vec();
        check_free.push(Type::BOOL);
        assert_eq!(original_params(&check_free), Some(3));
        // (p, q, m) with companions also reads as (p) with (q, m): the larger count wins.
        let (p, q) = (u32p(), Type::ptr(Scalar::U64));
        let ambiguous = [p, q, Type::U64, p, Type::U64, q, Type::U64];
        assert_eq!(original_params(&ambiguous), Some(3));
        assert_eq!(original_params(&[Type::U64, u32p()]), None);
    }

    #[test]
    fn only_the_sums_atomics_become_plain() {
        // p[0] is a sum; p[1]'s atomic result is read, so it stays atomic.
        let mut f = kernel(&[u32p(), u32p()], |b, p| {
            add(b, p[0], 0, MemOrder::Relaxed);
            add(b, p[0], 1, MemOrder::Relaxed);
            let old = add(b, p[1], 0, MemOrder::Relaxed);
            let at = b.const_u32(1);
            let e = b.elem_ptr(p[1], at);
            b.store(e, old);
        });
        let sums = private_sums(&f, false);
        assert_eq!(sums.sums.len(), 1);
        assert_eq!(make_sums_plain(&mut f, &sums), 2);
        let atomics = f
            .live_insts()
            .filter(|d| matches!(d.kind, InstKind::AtomicRmw { .. }))
            .count();
        assert_eq!(atomics, 1);
        let stores = f
            .live_insts()
            .filter(|d| matches!(d.kind, InstKind::Store(..)))
            .count();
        assert_eq!(stores, 3);
        let mut m = nacre_ir::Module::new();
        m.entry = Some(m.add_function(f));
        nacre_ir::verify(m).expect("still valid");
        // Without sums nothing changes.
        let mut g = kernel(&[u32p()], |b, p| {
            add(b, p[0], 0, MemOrder::AcqRel);
        });
        let none = private_sums(&g, false);
        assert_eq!(make_sums_plain(&mut g, &none), 0);
    }
}
