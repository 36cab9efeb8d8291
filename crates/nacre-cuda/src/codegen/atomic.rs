//! Atomics in CUDA C: CUDA's `atomic*` functions (`atomic*_block` at block scope), which are
//! relaxed, between `__threadfence()` (`__threadfence_block()`) for the stronger orderings: a
//! release fences before the operation, an acquire after, acq_rel and seq_cst both. 64-bit
//! integer operations go through the `unsigned long long` (or, for min and max, `long long`)
//! overloads, which compute the same bits. Float min and max, which CUDA lacks, are a
//! compare-exchange loop ([`nacre_c::helpers::Helper::AtomicLoop`] through `atomicCAS`).

use nacre_c::atomic::{loop_definition, AtomicAccess, AtomicKind, AtomicSpelling};
use nacre_c::Dialect;
use nacre_ir::{AtomicOp, MemOrder, Scalar, Scope};

/// The statements of one atomic instruction.
pub(super) fn spell(a: &AtomicAccess<'_>) -> AtomicSpelling {
    let (fence_before, fence_after) = match a.order {
        MemOrder::Relaxed => (false, false),
        MemOrder::Acquire => (false, true),
        MemOrder::Release => (true, false),
        MemOrder::AcqRel | MemOrder::SeqCst => (true, true),
    };
    let inner = operation(a);
    let fence = fence_statement(a.scope);
    let statements = match (fence_before, fence_after) {
        (false, false) => inner.statements,
        (true, false) => format!("{fence} {}", inner.statements),
        (false, true) => format!("{} {fence}", inner.statements),
        (true, true) => format!("{fence} {} {fence}", inner.statements),
    };
    AtomicSpelling {
        statements,
        helper: inner.helper,
    }
}

/// The fence of a scope.
pub(super) fn fence_statement(scope: Scope) -> &'static str {
    match scope {
        Scope::Block => "__threadfence_block();",
        Scope::Device => "__threadfence();",
    }
}

/// The relaxed atomic itself.
fn operation(a: &AtomicAccess<'_>) -> AtomicSpelling {
    let sfx = if a.scope == Scope::Block {
        "_block"
    } else {
        ""
    };
    let (p, s) = (a.ptr, a.elem);
    let wide = s.bytes() == 8;
    // The overload's type for 64-bit integers (CUDA has no `long long` add, sub, and, or,
    // xor, exch or CAS; it has signed 64-bit min and max).
    let ull = "unsigned long long";
    let t = match s {
        Scalar::I32 => "int32_t",
        Scalar::U32 => "uint32_t",
        Scalar::I64 => "int64_t",
        Scalar::U64 => "uint64_t",
        Scalar::F32 => "float",
        _ => "double",
    };
    let call =
        |f: &str, ty: &str, v: &str| format!("({t})atomic{f}{sfx}(({ty} *){p}, ({ty})({v}))");
    match a.kind {
        AtomicKind::Cas { expected, new } => {
            let ty = if wide { ull } else { t };
            AtomicSpelling::assign(
                a,
                format_args!("({t})atomicCAS{sfx}(({ty} *){p}, ({ty})({expected}), ({ty})({new}))"),
            )
        }
        AtomicKind::Rmw { op, value } => {
            let int_ty = if wide { ull } else { t };
            let expr = match (op, s) {
                (AtomicOp::Min | AtomicOp::Max, Scalar::F32 | Scalar::F64) => {
                    return AtomicSpelling::looped(a, op, value)
                }
                (AtomicOp::Add, Scalar::F32 | Scalar::F64) => call("Add", t, value),
                (AtomicOp::Swap, Scalar::F32) => call("Exch", t, value),
                (AtomicOp::Swap, _) if s == Scalar::F64 => format!(
                    "__longlong_as_double((long long)atomicExch{sfx}(({ull} *){p}, ({ull})__double_as_longlong({value})))"
                ),
                (AtomicOp::Add, _) => call("Add", int_ty, value),
                (AtomicOp::Sub, _) if wide => call("Add", ull, &format!("0ull - ({ull})({value})")),
                (AtomicOp::Sub, _) => call("Sub", t, value),
                (AtomicOp::Min, Scalar::I64) => call("Min", "long long", value),
                (AtomicOp::Max, Scalar::I64) => call("Max", "long long", value),
                (AtomicOp::Min, _) => call("Min", int_ty, value),
                (AtomicOp::Max, _) => call("Max", int_ty, value),
                (AtomicOp::And, _) => call("And", int_ty, value),
                (AtomicOp::Or, _) => call("Or", int_ty, value),
                (AtomicOp::Xor, _) => call("Xor", int_ty, value),
                (AtomicOp::Swap, _) => call("Exch", int_ty, value),
            };
            AtomicSpelling::assign(a, expr)
        }
    }
}

/// The definition of [`nacre_c::helpers::Helper::AtomicLoop`] through `atomicCAS` (device scope, which orders at
/// least as much as block scope).
pub(super) fn loop_helper(
    d: &(impl Dialect + ?Sized),
    qualifier: &str,
    op: AtomicOp,
    s: Scalar,
) -> String {
    let bits = if s.bytes() == 8 {
        "unsigned long long"
    } else {
        "unsigned int"
    };
    let cas = |p: &str, e: &str, n: &str| format!("atomicCAS(({bits} *){p}, {e}, {n})");
    loop_definition(d, qualifier, op, s, cas)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nacre_c::helpers::Helper;
    use nacre_ir::AddressSpace;

    fn access(
        elem: Scalar,
        kind: AtomicKind<'static>,
        order: MemOrder,
        scope: Scope,
    ) -> AtomicAccess<'static> {
        AtomicAccess {
            result: "r",
            ptr: "p",
            space: AddressSpace::Generic,
            elem,
            kind,
            order,
            scope,
        }
    }

    fn rmw(op: AtomicOp) -> AtomicKind<'static> {
        AtomicKind::Rmw { op, value: "v" }
    }

    #[test]
    fn orderings_are_fences_around_relaxed_atomics() {
        let relaxed = spell(&access(
            Scalar::U32,
            rmw(AtomicOp::Add),
            MemOrder::Relaxed,
            Scope::Device,
        ));
        assert_eq!(
            relaxed.statements,
            "r = (uint32_t)atomicAdd((uint32_t *)p, (uint32_t)(v));"
        );
        let seq = spell(&access(
            Scalar::I32,
            rmw(AtomicOp::Max),
            MemOrder::SeqCst,
            Scope::Block,
        ));
        assert_eq!(
            seq.statements,
            "__threadfence_block(); r = (int32_t)atomicMax_block((int32_t *)p, (int32_t)(v)); __threadfence_block();"
        );
        let release = spell(&access(
            Scalar::U32,
            rmw(AtomicOp::Swap),
            MemOrder::Release,
            Scope::Device,
        ));
        assert!(
            release.statements.starts_with("__threadfence(); r = "),
            "{}",
            release.statements
        );
        let acquire = spell(&access(
            Scalar::U32,
            rmw(AtomicOp::Or),
            MemOrder::Acquire,
            Scope::Device,
        ));
        assert!(
            acquire.statements.ends_with("; __threadfence();"),
            "{}",
            acquire.statements
        );
    }

    #[test]
    fn wide_and_float_atomics_use_the_overloads_cuda_has() {
        let sub = spell(&access(
            Scalar::I64,
            rmw(AtomicOp::Sub),
            MemOrder::Relaxed,
            Scope::Device,
        ));
        assert!(
            sub.statements.contains("atomicAdd((unsigned long long *)p"),
            "{}",
            sub.statements
        );
        assert!(sub.statements.contains("0ull - "), "{}", sub.statements);
        let min = spell(&access(
            Scalar::I64,
            rmw(AtomicOp::Min),
            MemOrder::Relaxed,
            Scope::Device,
        ));
        assert!(
            min.statements.contains("atomicMin((long long *)p"),
            "{}",
            min.statements
        );
        let cas = spell(&access(
            Scalar::U64,
            AtomicKind::Cas {
                expected: "e",
                new: "n",
            },
            MemOrder::Relaxed,
            Scope::Device,
        ));
        assert!(
            cas.statements.contains("atomicCAS((unsigned long long *)p"),
            "{}",
            cas.statements
        );
        let fmin = spell(&access(
            Scalar::F32,
            rmw(AtomicOp::Min),
            MemOrder::Relaxed,
            Scope::Device,
        ));
        assert_eq!(
            fmin.helper,
            Some(Helper::AtomicLoop {
                op: AtomicOp::Min,
                s: Scalar::F32
            })
        );
        let dswap = spell(&access(
            Scalar::F64,
            rmw(AtomicOp::Swap),
            MemOrder::Relaxed,
            Scope::Device,
        ));
        assert!(
            dswap.statements.contains("__double_as_longlong(v)"),
            "{}",
            dswap.statements
        );
    }
}
