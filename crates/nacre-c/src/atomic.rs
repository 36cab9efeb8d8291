//! Atomic operations in the C family: what the printer hands a dialect for one atomic
//! instruction ([`AtomicAccess`]), what the dialect gives back ([`AtomicSpelling`]), host C's
//! spelling through GCC's `__atomic` builtins ([`c_atomic`], [`c_fence`]), and the
//! compare-exchange loop that every dialect can use for an operation its target lacks
//! ([`loop_definition`], behind [`Helper::AtomicLoop`]).

use crate::dialect::Dialect;
use crate::error::DialectError;
use crate::helpers::Helper;
use nacre_ir::{AddressSpace, AtomicOp, MemOrder, Scalar, Scope};

/// What an atomic instruction does.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum AtomicKind<'a> {
    /// A read-modify-write with its operand.
    Rmw {
        /// The operation.
        op: AtomicOp,
        /// The operand's expression.
        value: &'a str,
    },
    /// A compare-exchange.
    Cas {
        /// The expected value's expression.
        expected: &'a str,
        /// The replacement's expression.
        new: &'a str,
    },
}

/// One atomic instruction as the printer hands it to [`Dialect::atomic`].
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct AtomicAccess<'a> {
    /// The variable that receives the old value.
    pub result: &'a str,
    /// The pointer's expression (of the element's pointer type).
    pub ptr: &'a str,
    /// The pointer's address space.
    pub space: AddressSpace,
    /// The element type.
    pub elem: Scalar,
    /// What the instruction does.
    pub kind: AtomicKind<'a>,
    /// The memory ordering.
    pub order: MemOrder,
    /// The threads it orders against.
    pub scope: Scope,
}

/// A dialect's spelling of an atomic instruction.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct AtomicSpelling {
    /// One or more statements, assigning the old value to [`AtomicAccess::result`].
    pub statements: String,
    /// The helper those statements call, which the printer then defines.
    pub helper: Option<Helper>,
}

impl AtomicSpelling {
    /// `result = expr;`, with no helper.
    pub fn assign(a: &AtomicAccess<'_>, expr: impl std::fmt::Display) -> AtomicSpelling {
        AtomicSpelling {
            statements: format!("{} = {expr};", a.result),
            helper: None,
        }
    }

    /// `result = helper(ptr, value);` for a read-modify-write done by [`Helper::AtomicLoop`].
    pub fn looped(a: &AtomicAccess<'_>, op: AtomicOp, value: &str) -> AtomicSpelling {
        let helper = Helper::AtomicLoop { op, s: a.elem };
        AtomicSpelling {
            statements: format!("{} = {}({}, {value});", a.result, helper.name(), a.ptr),
            helper: Some(helper),
        }
    }
}

/// GCC's name of a memory ordering.
pub fn c_order(order: MemOrder) -> &'static str {
    match order {
        MemOrder::Relaxed => "__ATOMIC_RELAXED",
        MemOrder::Acquire => "__ATOMIC_ACQUIRE",
        MemOrder::Release => "__ATOMIC_RELEASE",
        MemOrder::AcqRel => "__ATOMIC_ACQ_REL",
        MemOrder::SeqCst => "__ATOMIC_SEQ_CST",
    }
}

/// Host C: GCC's `__atomic` builtins with the instruction's ordering (every scope is the
/// process); integer min and max and every float operation but swap through
/// [`Helper::AtomicLoop`] (sequentially consistent), which GCC lacks.
pub fn c_atomic(a: &AtomicAccess<'_>) -> Result<AtomicSpelling, DialectError> {
    let (p, order) = (a.ptr, c_order(a.order));
    let failure = c_order(a.order.failure());
    Ok(match a.kind {
        AtomicKind::Cas { expected, new } => AtomicSpelling {
            statements: format!(
                "{r} = {expected}; __atomic_compare_exchange_n({p}, &{r}, {new}, 0, {order}, {failure});",
                r = a.result
            ),
            helper: None,
        },
        AtomicKind::Rmw { op, value } => {
            let builtin = match op {
                AtomicOp::Add if !a.elem.is_float() => "__atomic_fetch_add",
                AtomicOp::Sub => "__atomic_fetch_sub",
                AtomicOp::And => "__atomic_fetch_and",
                AtomicOp::Or => "__atomic_fetch_or",
                AtomicOp::Xor => "__atomic_fetch_xor",
                AtomicOp::Swap if !a.elem.is_float() => "__atomic_exchange_n",
                AtomicOp::Swap => {
                    return Ok(AtomicSpelling {
                        statements: format!(
                            "{{ {t} nacre_in = {value}; __atomic_exchange({p}, &nacre_in, &{r}, {order}); }}",
                            t = if a.elem == Scalar::F32 { "float" } else { "double" },
                            r = a.result
                        ),
                        helper: None,
                    })
                }
                _ => return Ok(AtomicSpelling::looped(a, op, value)),
            };
            AtomicSpelling::assign(a, format_args!("{builtin}({p}, {value}, {order})"))
        }
    })
}

/// Host C's fence (every scope is the process).
pub fn c_fence(order: MemOrder) -> String {
    format!("__atomic_thread_fence({});", c_order(order))
}

/// The definition of [`Helper::AtomicLoop`] `{ op, s }`: a loop that reads the element's bits,
/// computes `op(old, v)` as the IR's operator does (float min and max through
/// [`Helper::Min`]/[`Helper::Max`], bits through [`Helper::FromBits`]/[`Helper::ToBits`]) and
/// stores it with `cas(bits_ptr, expected, new)`, an expression of the dialect giving the
/// bits found, until nothing changed in between; it returns the old value.
pub fn loop_definition(
    d: &(impl Dialect + ?Sized),
    qualifier: &str,
    op: AtomicOp,
    s: Scalar,
    cas: impl Fn(&str, &str, &str) -> String,
) -> String {
    let name = Helper::AtomicLoop { op, s }.name();
    let t = d.scalar_type(s);
    let bits = if s.bytes() == 8 {
        Scalar::U64
    } else {
        Scalar::U32
    };
    let u = d.scalar_type(bits);
    let (to_value, to_bits) = if s.is_float() {
        (
            format!("{}(old)", Helper::FromBits(s).name()),
            format!("{}(y)", Helper::ToBits(s).name()),
        )
    } else {
        (format!("({t})old"), format!("({u})y"))
    };
    let combine = match op {
        AtomicOp::Min if s.is_float() => format!("{}(x, v)", Helper::Min(s).name()),
        AtomicOp::Max if s.is_float() => format!("{}(x, v)", Helper::Max(s).name()),
        AtomicOp::Min => "x < v ? x : v".to_string(),
        AtomicOp::Max => "x > v ? x : v".to_string(),
        AtomicOp::Sub => "x - v".to_string(),
        AtomicOp::And => "x & v".to_string(),
        AtomicOp::Or => "x | v".to_string(),
        AtomicOp::Xor => "x ^ v".to_string(),
        AtomicOp::Swap => "v".to_string(),
        AtomicOp::Add => "x + v".to_string(),
    };
    let swap = cas("bits", "old", "want");
    format!(
        "{qualifier}{t} {name}({t} *p, {t} v) {{
    {u} *bits = ({u} *)p;
    {u} old = *(volatile {u} *)bits;
    for (;;) {{
        {t} x = {to_value};
        {t} y = {combine};
        {u} want = {to_bits};
        {u} got = {swap};
        if (got == old) return x;
        old = got;
    }}
}}
"
    )
}

/// The C definition of [`Helper::AtomicLoop`], through `__atomic_compare_exchange_n`.
pub fn c_loop_definition(
    d: &(impl Dialect + ?Sized),
    qualifier: &str,
    op: AtomicOp,
    s: Scalar,
) -> String {
    let bits = if s.bytes() == 8 {
        "uint64_t"
    } else {
        "uint32_t"
    };
    let cas = |p: &str, e: &str, n: &str| {
        format!(
            "({{ {bits} nacre_e = {e}; __atomic_compare_exchange_n({p}, &nacre_e, {n}, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); nacre_e; }})"
        )
    };
    loop_definition(d, qualifier, op, s, cas)
}
