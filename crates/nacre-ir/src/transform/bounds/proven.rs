//! Bounds checks the IR proves cannot fail, removed.
//!
//! - **In range.** A check of an address `base[i]` (an `elem_ptr` chain from the check's own
//!   base) into memory of constant size, a shared array, whose index ranges where the check
//!   runs ([`Ranges::at`]) keep the whole element inside it: `s[t]` with `t` a thread index of a
//!   block of at most 256 threads and `s` 256 elements long, or `s[t + k]` under `t < k`.
//! - **Repeated.** A check dominated by an identical one (the same base and size, and the same
//!   address or one computed the same way from the same pointer and index): the first passed, so
//!   the second does. `p[i] = p[i] + x` keeps one check.
//!
//! A removed check could never have trapped, so every backend still agrees and no trap moves.

use crate::analysis::ranges::{GpuBounds, Interval, Ranges};
use crate::analysis::DominatorTree;
use crate::entities::{Block, Inst, Value};
use crate::function::Function;
use crate::instructions::InstKind;
use std::collections::{HashMap, HashSet};

/// Removes the checks of `func` that cannot fail (module docs), GPU indices bounded by `gpu`;
/// returns how many it removed.
pub fn remove_proven_checks(func: &mut Function, gpu: GpuBounds) -> usize {
    let dom = DominatorTree::compute(func);
    let ranges = has_fixed_size_check(func).then(|| Ranges::compute(func, gpu));
    let mut seen: HashMap<Block, Vec<CheckKey>> = HashMap::new();
    let mut doomed: HashSet<Inst> = HashSet::new();
    for &b in dom.reverse_postorder() {
        for &inst in &func.blocks[b].insts {
            let InstKind::BoundsCheck {
                addr, base, bytes, ..
            } = func.insts[inst].kind
            else {
                continue;
            };
            let key = CheckKey::new(func, addr, base, bytes);
            let in_range = ranges
                .as_ref()
                .is_some_and(|r| proven_in_range(func, r, addr, base, bytes, b));
            if in_range || checked_before(&seen, &dom, b, key) {
                doomed.insert(inst);
            }
            seen.entry(b).or_default().push(key);
        }
    }
    for &b in &func.layout {
        func.blocks[b].insts.retain(|i| !doomed.contains(i));
    }
    doomed.len()
}

/// What a check compares: its address (or how it is computed), base and size.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
struct CheckKey {
    addr: Address,
    base: Value,
    bytes: Value,
}

/// An address: a value, or an `elem_ptr` of a pointer and an index.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
enum Address {
    Value(Value),
    Elem(Value, Value),
}

impl CheckKey {
    fn new(func: &Function, addr: Value, base: Value, bytes: Value) -> CheckKey {
        let addr = match func.defining_inst(addr) {
            Some(InstKind::ElemPtr(p, i)) => Address::Elem(*p, *i),
            _ => Address::Value(addr),
        };
        CheckKey { addr, base, bytes }
    }
}

/// True if a check with `key` ran before every execution of block `b`'s next check: earlier
/// in `b`, or in a block that dominates `b`.
fn checked_before(
    seen: &HashMap<Block, Vec<CheckKey>>,
    dom: &DominatorTree,
    b: Block,
    key: CheckKey,
) -> bool {
    let mut at = Some(b);
    while let Some(block) = at {
        if seen.get(&block).is_some_and(|keys| keys.contains(&key)) {
            return true;
        }
        at = dom.idom(block);
    }
    false
}

/// True if some check's size is a constant (only those can be proven in range).
fn has_fixed_size_check(func: &Function) -> bool {
    func.live_insts().any(|data| match data.kind {
        InstKind::BoundsCheck { bytes, .. } => constant(func, bytes).is_some(),
        _ => false,
    })
}

/// True if the element at `addr`, reached from `base`, lies within `bytes` (a constant)
/// wherever block `block` runs.
fn proven_in_range(
    func: &Function,
    ranges: &Ranges,
    addr: Value,
    base: Value,
    bytes: Value,
    block: Block,
) -> bool {
    let (Some(size), Some(elem)) = (constant(func, bytes), func.value_type(addr).pointee()) else {
        return false;
    };
    let Some(offset) = byte_offset(func, ranges, addr, base, block) else {
        return false;
    };
    offset.lo >= 0 && offset.hi + i128::from(elem.bytes()) <= i128::from(size)
}

/// The range of `addr - base` in bytes, if `addr` is `base` or an `elem_ptr` chain from it.
fn byte_offset(
    func: &Function,
    ranges: &Ranges,
    addr: Value,
    base: Value,
    block: Block,
) -> Option<Interval> {
    if addr == base {
        return Some(Interval::point(0));
    }
    let Some(&InstKind::ElemPtr(p, i)) = func.defining_inst(addr) else {
        return None;
    };
    let elem = i128::from(func.value_type(p).pointee()?.bytes());
    let before = byte_offset(func, ranges, p, base, block)?;
    let index = ranges.at(func, i, block)?;
    Some(Interval::new(
        before.lo.checked_add(index.lo.checked_mul(elem)?)?,
        before.hi.checked_add(index.hi.checked_mul(elem)?)?,
    ))
}

/// The bits of `v` if it is a constant.
fn constant(func: &Function, v: Value) -> Option<u64> {
    match func.defining_inst(v)? {
        InstKind::Const(c) => u64::try_from(c.bits).ok(),
        _ => None,
    }
}
