//! The canonical grid-stride loop of a kernel: [`grid_stride_loop`].
//!
//! A kernel of the shape
//!
//! ```text
//! entry:   pure code; jump header(blockIdx.x * blockDim.x + threadIdx.x)   [optionally cast]
//! header(i): c = i < X; br c, body, exit        X defined in the entry (thread-independent)
//! body...: any blocks, ending in the latch
//! latch:   jump header(i + gridDim.x * blockDim.x)                          [optionally cast]
//! exit:    return
//! ```
//!
//! where the index computations are the only uses of the GPU indices, the loop carries nothing
//! but `i`, nothing but the header leaves the loop and nothing returns inside it, has no
//! barriers and no shared memory. Launched on a one-dimensional grid of `T` threads (`T`
//! representable in `i`'s type, and `X <= max - T` so that `i + T` never wraps), thread `g`
//! runs the body for `i = g, g + T, ...` below `X`: every `i` of `[0, X)` exactly once, and
//! the body depends on nothing else of the thread. Any interleaving of the threads is a valid
//! execution, and the iterations of one thread are independent apart from memory (which
//! another thread could race on just as well), so a backend may run the iterations in another
//! order or grouping: the CPU runtime runs contiguous chunks of `[0, X)` in parallel, and
//! [`lane_access`] says when a GPU backend may run four consecutive iterations per thread with
//! one wide memory access per array.

use crate::launch_shape::LaunchShape;
use nacre_ir::{BinaryOp, CmpOp, Dim, GpuIndex, InstKind};
use nacre_ir::{Block, Inst, Value};
use nacre_ir::{Function, ValueDef};
use nacre_ir::{Scalar, Type};
use std::collections::HashSet;

/// Where the grid-stride loop of a kernel is (see the module docs).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GridStrideLoop {
    /// The kernel's entry block (the loop's preheader).
    pub entry: Block,
    /// The entry's `jump header(start)`.
    pub entry_jump: Inst,
    /// The loop header.
    pub header: Block,
    /// The header's parameter `i`.
    pub index: Value,
    /// The type of `i` (`u32`, `i32`, `u64` or `i64`).
    pub ty: Type,
    /// The largest value of `ty`.
    pub max: u64,
    /// The header's comparison `i < X` (or `X > i`).
    pub cmp: Inst,
    /// The bound `X`, defined in the entry.
    pub bound: Value,
    /// The first index of a thread, `blockIdx.x * blockDim.x + threadIdx.x` (possibly cast).
    pub start: Value,
    /// The step, `gridDim.x * blockDim.x` (possibly cast).
    pub stride: Value,
    /// The first block of the loop body (the header's `then` destination).
    pub body: Block,
    /// The block that jumps back to the header.
    pub latch: Block,
    /// The latch's `i + stride`.
    pub advance: Inst,
    /// The block the header leaves to, a lone `return`.
    pub exit: Block,
}

/// The defining instruction of `v`, if it is the result of one.
fn def(f: &Function, v: Value) -> Option<Inst> {
    match f.values[v].def {
        ValueDef::Result(i) => Some(i),
        _ => None,
    }
}

/// `v` itself, or the operand of `v` if it is a cast.
fn uncast(f: &Function, v: Value, chain: &mut Vec<Inst>) -> Value {
    if let Some(i) = def(f, v) {
        if let InstKind::Cast(a) = f.insts[i].kind {
            if f.values[a].ty == Type::U32 {
                chain.push(i);
                return a;
            }
        }
    }
    v
}

/// True if `v` is `a * b` with `a` the index `x` and `b` the index `y` (in either order).
fn is_mul_of(
    f: &Function,
    shape: &LaunchShape,
    v: Value,
    x: GpuIndex,
    y: GpuIndex,
    chain: &mut Vec<Inst>,
) -> bool {
    let Some(i) = def(f, v) else { return false };
    let InstKind::Binary(BinaryOp::Mul, a, b) = f.insts[i].kind else {
        return false;
    };
    let (Some(ia), Some(ib)) = (def(f, a), def(f, b)) else {
        return false;
    };
    let (ka, kb) = (&f.insts[ia].kind, &f.insts[ib].kind);
    // A size the kernel was specialised for reads as its constant.
    let is = |k: &InstKind, g: GpuIndex| match k {
        InstKind::GpuIndex(h, Dim::X) => *h == g,
        InstKind::Const(c) => shape
            .size(g, Dim::X)
            .is_some_and(|n| c.ty == Type::U32 && c.bits == u128::from(n)),
        _ => false,
    };
    if (is(ka, x) && is(kb, y)) || (is(ka, y) && is(kb, x)) {
        chain.extend([i, ia, ib]);
        true
    } else {
        false
    }
}

/// The largest value of an index type the analysis accepts.
fn type_max(ty: Type) -> Option<u64> {
    match ty {
        Type::Scalar(Scalar::U32) => Some(u32::MAX as u64),
        Type::Scalar(Scalar::I32) => Some(i32::MAX as u64),
        Type::Scalar(Scalar::U64) => Some(u64::MAX),
        Type::Scalar(Scalar::I64) => Some(i64::MAX as u64),
        _ => None,
    }
}

/// Finds the canonical grid-stride loop of kernel `f` (see the module docs); `shape` is what
/// the kernel was specialised for ([`crate::specialised_for_launches`]), whose sizes it reads
/// as constants.
pub fn grid_stride_loop(f: &Function, shape: &LaunchShape) -> Option<GridStrideLoop> {
    let entry = *f.layout.first()?;
    // No barriers, no shared memory, GPU indices in x only.
    for &b in &f.layout {
        for &i in &f.blocks[b].insts {
            match &f.insts[i].kind {
                InstKind::Barrier
                | InstKind::SharedAlloc { .. }
                | InstKind::DynamicShared { .. }
                | InstKind::DynamicSharedBytes
                | InstKind::LaneId
                | InstKind::Shuffle(..)
                | InstKind::Warp(..)
                | InstKind::BlockVote(..)
                | InstKind::Launch(_) => return None,
                InstKind::GpuIndex(_, d) if *d != Dim::X => return None,
                _ => {}
            }
        }
    }
    // Predecessor counts (a block reached twice by one branch counts twice).
    let mut preds: std::collections::HashMap<Block, Vec<Block>> = Default::default();
    for &b in &f.layout {
        for s in f.successors(b) {
            preds.entry(s).or_default().push(b);
        }
    }
    if preds.contains_key(&entry) {
        return None;
    }
    // The entry: pure, ending in `jump header(g)`.
    let entry_jump = f.terminator(entry)?;
    let InstKind::Jump(call) = &f.insts[entry_jump].kind else {
        return None;
    };
    let header = call.block;
    let [g] = call.args[..] else { return None };
    for &i in &f.blocks[entry].insts {
        // Bounds checks hoisted out of the loop are thread-independent and may run again.
        let kind = &f.insts[i].kind;
        let check = matches!(kind, InstKind::BoundsCheck { .. });
        if i != entry_jump && !check && !kind.is_pure(|v| f.values[v].ty) {
            return None;
        }
    }
    let [index] = f.blocks[header].params[..] else {
        return None;
    };
    let ty = f.values[index].ty;
    type_max(ty)?;
    // The header: `c = i < X; br c, body, exit`, X from the entry.
    let [cmp, br] = f.blocks[header].insts[..] else {
        return None;
    };
    let InstKind::Cmp(op, a, b) = f.insts[cmp].kind else {
        return None;
    };
    let bound = match op {
        CmpOp::Lt if a == index => b,
        CmpOp::Gt if b == index => a,
        _ => return None,
    };
    let bound_in_entry = f.blocks[entry].params.contains(&bound)
        || def(f, bound).is_some_and(|i| f.blocks[entry].insts.contains(&i));
    if !bound_in_entry {
        return None;
    }
    let InstKind::Branch {
        cond,
        then_dest,
        else_dest,
    } = &f.insts[br].kind
    else {
        return None;
    };
    if *cond != f.insts[cmp].result? || !then_dest.args.is_empty() || !else_dest.args.is_empty() {
        return None;
    }
    let (body, exit) = (then_dest.block, else_dest.block);
    // The exit: only `return`, reached from the header only.
    if exit == header || body == exit || preds.get(&exit)?.len() != 1 {
        return None;
    }
    let [ret] = f.blocks[exit].insts[..] else {
        return None;
    };
    if !matches!(f.insts[ret].kind, InstKind::Return(None)) {
        return None;
    }
    // The header's predecessors: the entry and one latch.
    let hp = preds.get(&header)?;
    let latch = match hp[..] {
        [x, y] if x == entry && y != entry => y,
        [x, y] if y == entry && x != entry => x,
        _ => return None,
    };
    let latch_jump = f.terminator(latch)?;
    let InstKind::Jump(back) = &f.insts[latch_jump].kind else {
        return None;
    };
    let [next] = back.args[..] else { return None };
    let advance = def(f, next)?;
    let InstKind::Binary(BinaryOp::Add, x, y) = f.insts[advance].kind else {
        return None;
    };
    let stride = match (x == index, y == index) {
        (true, false) => y,
        (false, true) => x,
        _ => return None,
    };

    // The index computations: stride = gridDim.x * blockDim.x, g = blockIdx.x * blockDim.x
    // + threadIdx.x (each optionally cast from u32).
    let mut chain: Vec<Inst> = Vec::new();
    let s = uncast(f, stride, &mut chain);
    if !is_mul_of(
        f,
        shape,
        s,
        GpuIndex::GridDim,
        GpuIndex::BlockDim,
        &mut chain,
    ) {
        return None;
    }
    let g0 = uncast(f, g, &mut chain);
    let gi = def(f, g0)?;
    let InstKind::Binary(BinaryOp::Add, x, y) = f.insts[gi].kind else {
        return None;
    };
    chain.push(gi);
    let is_tid = |v: Value| {
        def(f, v).is_some_and(|i| {
            matches!(
                f.insts[i].kind,
                InstKind::GpuIndex(GpuIndex::ThreadIdx, Dim::X)
            )
        })
    };
    let (m, t) = if is_tid(y) { (x, y) } else { (y, x) };
    if !is_tid(t)
        || !is_mul_of(
            f,
            shape,
            m,
            GpuIndex::BlockIdx,
            GpuIndex::BlockDim,
            &mut chain,
        )
    {
        return None;
    }
    chain.push(def(f, t)?);
    // Every GPU index is in the chain, and chain values feed only the chain, the entry jump
    // and the advance.
    let chain: HashSet<Inst> = chain.into_iter().collect();
    let chain_values: HashSet<Value> = chain.iter().filter_map(|&i| f.insts[i].result).collect();
    for &b in &f.layout {
        for &i in &f.blocks[b].insts {
            let kind = &f.insts[i].kind;
            if matches!(kind, InstKind::GpuIndex(..)) && !chain.contains(&i) {
                return None;
            }
            if chain.contains(&i) || i == entry_jump || i == advance {
                continue;
            }
            let mut uses_chain = false;
            kind.for_each_operand(|v| uses_chain |= chain_values.contains(&v));
            if uses_chain {
                return None;
            }
        }
    }
    // The stride and the start feed only their one use each.
    let mut stride_uses = 0;
    let mut g_uses = 0;
    for &b in &f.layout {
        for &i in &f.blocks[b].insts {
            f.insts[i].kind.for_each_operand(|v| {
                stride_uses += usize::from(v == stride);
                g_uses += usize::from(v == g);
            });
        }
    }
    if stride_uses != 1 || g_uses != 1 || stride == index {
        return None;
    }

    // The loop: every other block leads to the latch without returning, and nothing but
    // the header reaches the exit or the header.
    for &b in &f.layout {
        if b == entry || b == exit {
            continue;
        }
        let t = f.terminator(b)?;
        if matches!(f.insts[t].kind, InstKind::Return(_)) {
            return None;
        }
        if b != header && b != latch && f.successors(b).contains(&header) {
            return None;
        }
    }
    Some(GridStrideLoop {
        entry,
        entry_jump,
        header,
        index,
        ty,
        max: type_max(ty)?,
        cmp,
        bound,
        start: g,
        stride,
        body,
        latch,
        advance,
        exit,
    })
}

/// One array a lane-parallel loop body accesses at `i` (see [`lane_access`]).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LaneArray {
    /// The array's base pointer, defined in the entry (a kernel parameter or computed there).
    pub base: Value,
    /// The element type.
    pub elem: Scalar,
    /// The body loads `base[i]`.
    pub loaded: bool,
    /// The body stores `base[i]`.
    pub stored: bool,
}

/// How a single-block grid-stride loop body touches memory, when it may run four consecutive
/// iterations `4j .. 4j + 4` in one thread, each array read and written as one aligned group of
/// four elements.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LaneAccess {
    /// The arrays, in order of first access.
    pub arrays: Vec<LaneArray>,
    /// For each `elem_ptr(base, i)` of the body, the array's position in `arrays`.
    pub addresses: Vec<(Inst, usize)>,
}

impl LaneAccess {
    /// The position in [`LaneAccess::arrays`] of the array the address `inst` points into.
    pub fn array_of(&self, inst: Inst) -> Option<usize> {
        self.addresses
            .iter()
            .find(|&&(i, _)| i == inst)
            .map(|&(_, a)| a)
    }
}

/// Whether the body of `lp` (a loop of `f`) is lane-parallel, and its arrays.
///
/// It is when the body is one block (the latch) that, besides `i + stride` and the jump back,
/// holds only instructions whose operands are `i`, values of the entry or of the body itself
/// (nothing the header computed): pure instructions that cannot trap (no integer division),
/// loads and stores whose
/// addresses are `elem_ptr(base, i)` with `base` from the entry, and no call; addresses are used
/// only as such; every load comes before every store; and at least one array is accessed.
///
/// Then the iterations `4j, .., 4j + 3` may run in one thread with each array's four elements
/// loaded before any is stored: the loads of one iteration still precede its stores, and an
/// iteration's stores can only meet another iteration's loads if two arrays overlap at an
/// offset, which the loop run one iteration per thread would make a race between threads
/// anyway. Two arrays at the same base stay exact (each lane reads both before writing).
pub fn lane_access(f: &Function, lp: &GridStrideLoop) -> Option<LaneAccess> {
    if lp.body != lp.latch {
        return None;
    }
    let defined_in_entry = |v: Value| match f.values.get(v)?.def {
        ValueDef::Param(b, _) => Some(b == lp.entry),
        ValueDef::Result(i) => Some(f.blocks[lp.entry].insts.contains(&i)),
    };
    let insts = &f.blocks[lp.body].insts;
    let jump = *insts.last()?;
    let mut access = LaneAccess {
        arrays: Vec::new(),
        addresses: Vec::new(),
    };
    let mut address_values: HashSet<Value> = HashSet::new();
    let mut stored_any = false;
    // Operands come from the entry, the body itself, or are `i`: the group loop runs before
    // the header has computed anything else.
    let in_body = |v: Value| match f.values.get(v).map(|d| d.def) {
        Some(ValueDef::Result(d)) => insts.contains(&d),
        _ => false,
    };
    for &i in insts {
        if i == jump || i == lp.advance {
            continue;
        }
        let kind = &f.insts[i].kind;
        let mut foreign = false;
        kind.for_each_operand(|v| {
            foreign |= v != lp.index && defined_in_entry(v) != Some(true) && !in_body(v);
        });
        if foreign {
            return None;
        }
        match kind {
            InstKind::ElemPtr(base, idx) => {
                if *idx != lp.index || defined_in_entry(*base) != Some(true) {
                    return None;
                }
                let elem = f.values[*base].ty.pointee()?;
                let a = match access.arrays.iter().position(|a| a.base == *base) {
                    Some(a) => a,
                    None => {
                        access.arrays.push(LaneArray {
                            base: *base,
                            elem,
                            loaded: false,
                            stored: false,
                        });
                        access.arrays.len() - 1
                    }
                };
                access.addresses.push((i, a));
                address_values.insert(f.insts[i].result?);
            }
            InstKind::Load(p) => {
                if stored_any {
                    return None;
                }
                let a = access.array_of(address_def(f, *p)?)?;
                access.arrays[a].loaded = true;
            }
            InstKind::Store(p, v) => {
                if address_values.contains(v) {
                    return None;
                }
                let a = access.array_of(address_def(f, *p)?)?;
                access.arrays[a].stored = true;
                stored_any = true;
            }
            InstKind::SharedAlloc { .. }
            | InstKind::DynamicShared { .. }
            | InstKind::DynamicSharedBytes
            | InstKind::LaneId
            | InstKind::GpuIndex(..) => return None,
            k if k.is_pure(|v| f.values[v].ty) => {
                let mut uses_address = false;
                k.for_each_operand(|v| uses_address |= address_values.contains(&v));
                if uses_address {
                    return None;
                }
            }
            _ => return None,
        }
    }
    // Addresses stay in the body (only the loads and stores above use them).
    for &b in &f.layout {
        if b == lp.body {
            continue;
        }
        for &i in &f.blocks[b].insts {
            let mut uses_address = false;
            f.insts[i]
                .kind
                .for_each_operand(|v| uses_address |= address_values.contains(&v));
            if uses_address {
                return None;
            }
        }
    }
    (!access.arrays.is_empty()).then_some(access)
}

/// The `elem_ptr` instruction that defines address `p`.
fn address_def(f: &Function, p: Value) -> Option<Inst> {
    let i = def(f, p)?;
    matches!(f.insts[i].kind, InstKind::ElemPtr(..)).then_some(i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nacre_ir::test_util::assert_valid;
    use nacre_ir::FunctionBuilder;
    use nacre_ir::{FuncKind, Signature};

    /// `saxpy(alpha, x, y, n)` as a grid-stride kernel; `extra` may add instructions to the
    /// body before the jump back (given the builder, the parameters, `i` and the header's
    /// `i < n`).
    fn saxpy(extra: impl FnOnce(&mut FunctionBuilder<'_>, &[Value], Value, Value)) -> Function {
        let pf = Type::ptr(Scalar::F32);
        let mut f = Function::new(
            "saxpy",
            FuncKind::Kernel,
            Signature {
                params: vec![Type::F32, pf, pf, Type::U32],
                ret: None,
            },
        );
        let mut b = FunctionBuilder::new(&mut f);
        let p = b.create_entry_block();
        let grid = b.gpu_index(GpuIndex::GridDim, Dim::X);
        let dim = b.gpu_index(GpuIndex::BlockDim, Dim::X);
        let stride = b.binary(BinaryOp::Mul, grid, dim);
        let bid = b.gpu_index(GpuIndex::BlockIdx, Dim::X);
        let dim2 = b.gpu_index(GpuIndex::BlockDim, Dim::X);
        let base = b.binary(BinaryOp::Mul, bid, dim2);
        let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
        let start = b.binary(BinaryOp::Add, base, tid);
        let header = b.create_block();
        let i = b.append_block_param(header, Type::U32);
        let body = b.create_block();
        let exit = b.create_block();
        b.jump(header, vec![start]);
        b.switch_to_block(header);
        let more = b.cmp(CmpOp::Lt, i, p[3]);
        b.branch(more, body, vec![], exit, vec![]);
        b.switch_to_block(body);
        let xp = b.elem_ptr(p[1], i);
        let x = b.load(xp);
        let yp = b.elem_ptr(p[2], i);
        let y = b.load(yp);
        let ax = b.binary(BinaryOp::Mul, p[0], x);
        let r = b.binary(BinaryOp::Add, ax, y);
        b.store(yp, r);
        extra(&mut b, &p, i, more);
        let next = b.binary(BinaryOp::Add, i, stride);
        b.jump(header, vec![next]);
        b.switch_to_block(exit);
        b.ret(None);
        assert_valid(&f);
        f
    }

    #[test]
    fn saxpy_is_a_lane_parallel_grid_stride_loop() {
        let f = saxpy(|_, _, _, _| {});
        let lp = grid_stride_loop(&f, &LaunchShape::default()).expect("a grid-stride loop");
        assert_eq!(lp.ty, Type::U32);
        assert_eq!(lp.max, u64::from(u32::MAX));
        assert_eq!(lp.bound, f.blocks[lp.entry].params[3]);
        assert_eq!(lp.body, lp.latch);
        let access = lane_access(&f, &lp).expect("lane-parallel");
        let arrays: Vec<_> = access
            .arrays
            .iter()
            .map(|a| (a.base, a.elem, a.loaded, a.stored))
            .collect();
        let p = &f.blocks[lp.entry].params;
        assert_eq!(
            arrays,
            [
                (p[1], Scalar::F32, true, false),
                (p[2], Scalar::F32, true, true)
            ]
        );
        assert_eq!(access.addresses.len(), 2);
    }

    #[test]
    fn a_second_store_then_load_is_not_lane_parallel() {
        let f = saxpy(|b, p, i, _| {
            let xp = b.elem_ptr(p[1], i);
            let again = b.load(xp);
            b.store(xp, again);
        });
        let lp = grid_stride_loop(&f, &LaunchShape::default()).expect("still a grid-stride loop");
        assert_eq!(lane_access(&f, &lp), None);
    }

    #[test]
    fn a_value_of_the_header_is_not_lane_parallel() {
        // y[i] = (i < n) as f32, reading the header's comparison.
        let f = saxpy(|b, p, i, cond| {
            let yp = b.elem_ptr(p[2], i);
            let c = b.cast(cond, Type::F32);
            b.store(yp, c);
        });
        let lp = grid_stride_loop(&f, &LaunchShape::default()).expect("still a grid-stride loop");
        assert_eq!(lane_access(&f, &lp), None);
    }

    #[test]
    fn a_barrier_is_not_a_grid_stride_loop() {
        let f = saxpy(|b, _, _, _| {
            b.barrier();
        });
        assert_eq!(grid_stride_loop(&f, &LaunchShape::default()), None);
    }

    #[test]
    fn an_address_stored_as_a_value_is_not_lane_parallel() {
        let f = saxpy(|b, p, i, _| {
            let xp = b.elem_ptr(p[1], i);
            let q = b.cast(xp, Type::U64);
            let slot = b.elem_ptr(p[2], i);
            let bits = b.cast(q, Type::F32);
            b.store(slot, bits);
        });
        let lp = grid_stride_loop(&f, &LaunchShape::default()).expect("still a grid-stride loop");
        assert_eq!(lane_access(&f, &lp), None);
    }
}
