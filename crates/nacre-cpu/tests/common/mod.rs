//! Hand-built kernels (the tracing API for kernels lives elsewhere), the three CPU backends,
//! and a launch helper that goes through `cpu_launch` like compiled host code does.

#![allow(dead_code)]

use nacre_backend::{Backend, Linkage};
use nacre_c::CBackend;
use nacre_cpu::{cpu_launch, prepare_cpu, CpuKernel, CpuMode};
use nacre_cranelift::{CraneliftBackend, CraneliftOptions};
use nacre_interp::Interpreter;
use nacre_ir::{
    BinaryOp, CmpOp, Const, Dim, FuncId, FuncKind, Function, FunctionBuilder, GpuIndex, Module,
    Scalar, Signature, Trap, Type, Value,
};
use nacre_runtime::PreparedKernels;
use std::sync::Arc;

/// The three CPU backends.
pub fn backends() -> Vec<Box<dyn Backend>> {
    vec![
        Box::new(Interpreter::new()),
        Box::new(CraneliftBackend::new(CraneliftOptions::default()).expect("host supported")),
        Box::new(CBackend::default()),
    ]
}

/// Compiles the kernels of `module` and returns the kernel for `id`.
pub fn prepare(
    module: &Module,
    id: FuncId,
    backend: &dyn Backend,
    mode: CpuMode,
) -> Arc<CpuKernel> {
    let kernels = prepare_cpu(
        module,
        &Linkage::default(),
        backend,
        mode,
        &nacre_c::COptions::default(),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", backend.name()));
    let kernel = kernels.get(id).expect("kernel compiled").clone();
    assert_eq!(
        kernels.launch_binding().handles.get(&id),
        Some(&kernel.handle()),
        "the launch binding names the kernel's handle"
    );
    // Native backends are called through the step function's native signature.
    assert_eq!(
        kernel.is_native(),
        backend.name() != "interp",
        "{}",
        backend.name()
    );
    assert_eq!(kernel.mode(), mode);
    kernel
}

/// Launches through the launcher compiled host code calls.
pub fn launch(
    kernel: &Arc<CpuKernel>,
    grid: [u32; 3],
    block: [u32; 3],
    args: &[u64],
) -> Result<(), Trap> {
    let dims = nacre_backend::LaunchDims {
        grid,
        block,
        shared_bytes: 0,
    }
    .words();
    let mut status = 0u32;
    // SAFETY: the handle is live (we hold the Arc), dims and args have the right lengths, and
    // each test sizes its arrays for the grid it launches.
    unsafe { cpu_launch(kernel.handle(), dims.as_ptr(), args.as_ptr(), &mut status) };
    match status {
        0 => Ok(()),
        code => Err(Trap::from_code(code).expect("a known trap code")),
    }
}

pub fn f32_bits(x: f32) -> u64 {
    x.to_bits() as u64
}

pub fn ptr_arg<T>(p: *mut T) -> u64 {
    p as usize as u64
}

/// A module holding `f` (and `helpers`), with `f` as the entry; returns the kernel's id.
pub fn module_of(f: Function, helpers: Vec<Function>) -> (Module, FuncId) {
    let mut m = Module::new();
    for h in helpers {
        m.add_function(h);
    }
    let id = m.add_function(f);
    m.entry = Some(id);
    (m, id)
}

pub fn kernel(name: &str, params: &[Type]) -> Function {
    Function::new(
        name,
        FuncKind::Kernel,
        Signature {
            params: params.to_vec(),
            ret: None,
        },
    )
}

pub fn k(b: &mut FunctionBuilder<'_>, ty: Type, bits: u64) -> Value {
    b.constant(Const {
        ty,
        bits: u128::from(bits),
    })
}

pub fn ku32(b: &mut FunctionBuilder<'_>, x: u32) -> Value {
    k(b, Type::U32, x as u64)
}

pub fn load_at(b: &mut FunctionBuilder<'_>, base: Value, i: Value) -> Value {
    let p = b.elem_ptr(base, i);
    b.load(p)
}

pub fn store_at(b: &mut FunctionBuilder<'_>, base: Value, i: Value, v: Value) {
    let p = b.elem_ptr(base, i);
    b.store(p, v);
}

/// `blockIdx.d * blockDim.d + threadIdx.d`.
pub fn global(b: &mut FunctionBuilder<'_>, d: Dim) -> Value {
    let bid = b.gpu_index(GpuIndex::BlockIdx, d);
    let bdim = b.gpu_index(GpuIndex::BlockDim, d);
    let tid = b.gpu_index(GpuIndex::ThreadIdx, d);
    let base = b.binary(BinaryOp::Mul, bid, bdim);
    b.binary(BinaryOp::Add, base, tid)
}

pub const PF32: Type = Type::Ptr(Scalar::F32, nacre_ir::AddressSpace::Generic);
pub const PF64: Type = Type::Ptr(Scalar::F64, nacre_ir::AddressSpace::Generic);
pub const PI32: Type = Type::Ptr(Scalar::I32, nacre_ir::AddressSpace::Generic);
pub const PU32: Type = Type::Ptr(Scalar::U32, nacre_ir::AddressSpace::Generic);
pub const PU8: Type = Type::Ptr(Scalar::U8, nacre_ir::AddressSpace::Generic);

/// `vec_add(a, b, c, n)`: `i = global.x; if i < n { c[i] = a[i] + b[i] }`.
pub fn vec_add() -> (Module, FuncId) {
    let mut f = kernel("vec_add", &[PF32, PF32, PF32, Type::U32]);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let i = global(&mut b, Dim::X);
    let c = b.cmp(CmpOp::Lt, i, p[3]);
    let body = b.create_block();
    let done = b.create_block();
    b.branch(c, body, vec![], done, vec![]);
    b.switch_to_block(body);
    let x = load_at(&mut b, p[0], i);
    let y = load_at(&mut b, p[1], i);
    let s = b.binary(BinaryOp::Add, x, y);
    store_at(&mut b, p[2], i, s);
    b.jump(done, vec![]);
    b.switch_to_block(done);
    b.ret(None);
    module_of(f, vec![])
}

/// A grid-stride kernel over `params`, whose last parameter is the `u32` bound `n`:
/// `for (i = global.x; i < n; i += gridDim.x * blockDim.x) body(p, i)`.
pub fn grid_stride(
    name: &str,
    params: &[Type],
    body: impl FnOnce(&mut FunctionBuilder<'_>, &[Value], Value),
) -> (Module, FuncId) {
    let mut f = kernel(name, params);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let i0 = global(&mut b, Dim::X);
    let gdim = b.gpu_index(GpuIndex::GridDim, Dim::X);
    let bdim = b.gpu_index(GpuIndex::BlockDim, Dim::X);
    let stride = b.binary(BinaryOp::Mul, gdim, bdim);
    let head = b.create_block();
    let i = b.append_block_param(head, Type::U32);
    let body_block = b.create_block();
    let exit = b.create_block();
    b.jump(head, vec![i0]);
    b.switch_to_block(head);
    let n = *p.last().expect("a bound parameter");
    let c = b.cmp(CmpOp::Lt, i, n);
    b.branch(c, body_block, vec![], exit, vec![]);
    b.switch_to_block(body_block);
    body(&mut b, &p, i);
    let next = b.binary(BinaryOp::Add, i, stride);
    b.jump(head, vec![next]);
    b.switch_to_block(exit);
    b.ret(None);
    module_of(f, vec![])
}

/// `saxpy(alpha, x, y, n)`, grid-stride: `for (i = global.x; i < n; i += gridDim.x *
/// blockDim.x) y[i] = alpha * x[i] + y[i]`.
pub fn saxpy() -> (Module, FuncId) {
    grid_stride("saxpy", &[Type::F32, PF32, PF32, Type::U32], |b, p, i| {
        let x = load_at(b, p[1], i);
        let y = load_at(b, p[2], i);
        let ax = b.binary(BinaryOp::Mul, p[0], x);
        let r = b.binary(BinaryOp::Add, ax, y);
        store_at(b, p[2], i, r);
    })
}

/// Threads per block `block_sum` supports (its shared array's length).
pub const BLOCK_SUM_MAX: u32 = 256;

/// `block_sum(input, out, n)`: per block, the sum of its elements by a shared-memory tree
/// reduction with barriers in a loop:
///
/// ```text
/// sdata[tid] = i < n ? input[i] : 0; barrier
/// for (s = blockDim / 2; s > 0; s >>= 1) { if tid < s { sdata[tid] += sdata[tid + s] } barrier }
/// if tid == 0 { out[blockIdx] = sdata[0] }
/// ```
pub fn block_sum() -> (Module, FuncId) {
    let mut f = kernel("block_sum", &[PF32, PF32, Type::U32]);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
    let bid = b.gpu_index(GpuIndex::BlockIdx, Dim::X);
    let bdim = b.gpu_index(GpuIndex::BlockDim, Dim::X);
    let base = b.binary(BinaryOp::Mul, bid, bdim);
    let i = b.binary(BinaryOp::Add, base, tid);
    let sdata = b.shared_alloc(Scalar::F32, BLOCK_SUM_MAX);
    let in_range = b.cmp(CmpOp::Lt, i, p[2]);
    let zero = k(&mut b, Type::F32, 0);
    let ld = b.create_block();
    let st = b.create_block();
    let v = b.append_block_param(st, Type::F32);
    b.branch(in_range, ld, vec![], st, vec![zero]);
    b.switch_to_block(ld);
    let x = load_at(&mut b, p[0], i);
    b.jump(st, vec![x]);
    b.switch_to_block(st);
    store_at(&mut b, sdata, tid, v);
    b.barrier();
    let one = ku32(&mut b, 1);
    let s0 = b.binary(BinaryOp::Shr, bdim, one);
    let head = b.create_block();
    let s = b.append_block_param(head, Type::U32);
    b.jump(head, vec![s0]);
    b.switch_to_block(head);
    let z = ku32(&mut b, 0);
    let more = b.cmp(CmpOp::Gt, s, z);
    let body = b.create_block();
    let fin = b.create_block();
    b.branch(more, body, vec![], fin, vec![]);
    b.switch_to_block(body);
    let active = b.cmp(CmpOp::Lt, tid, s);
    let add = b.create_block();
    let sync = b.create_block();
    b.branch(active, add, vec![], sync, vec![]);
    b.switch_to_block(add);
    let a = load_at(&mut b, sdata, tid);
    let j = b.binary(BinaryOp::Add, tid, s);
    let c = load_at(&mut b, sdata, j);
    let sum = b.binary(BinaryOp::Add, a, c);
    store_at(&mut b, sdata, tid, sum);
    b.jump(sync, vec![]);
    b.switch_to_block(sync);
    b.barrier();
    let one = ku32(&mut b, 1);
    let s2 = b.binary(BinaryOp::Shr, s, one);
    b.jump(head, vec![s2]);
    b.switch_to_block(fin);
    let z = ku32(&mut b, 0);
    let first = b.cmp(CmpOp::Eq, tid, z);
    let write = b.create_block();
    let end = b.create_block();
    b.branch(first, write, vec![], end, vec![]);
    b.switch_to_block(write);
    let z = ku32(&mut b, 0);
    let r = load_at(&mut b, sdata, z);
    store_at(&mut b, p[1], bid, r);
    b.jump(end, vec![]);
    b.switch_to_block(end);
    b.ret(None);
    module_of(f, vec![])
}

/// `strided_sum(input, out, n)`: a grid-stride accumulation, then the block's tree reduction
/// of `block_sum` (a kernel with both barriers and a grid-stride loop):
///
/// ```text
/// acc = 0; for (i = global.x; i < n; i += gridDim.x * blockDim.x) acc += input[i]
/// sdata[tid] = acc; barrier; (tree reduction as in block_sum); out[blockIdx] = sdata[0]
/// ```
pub fn strided_sum() -> (Module, FuncId) {
    let mut f = kernel("strided_sum", &[PF32, PF32, Type::U32]);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
    let bid = b.gpu_index(GpuIndex::BlockIdx, Dim::X);
    let bdim = b.gpu_index(GpuIndex::BlockDim, Dim::X);
    let gdim = b.gpu_index(GpuIndex::GridDim, Dim::X);
    let base = b.binary(BinaryOp::Mul, bid, bdim);
    let i0 = b.binary(BinaryOp::Add, base, tid);
    let stride = b.binary(BinaryOp::Mul, gdim, bdim);
    let sdata = b.shared_alloc(Scalar::F32, BLOCK_SUM_MAX);
    let zero = k(&mut b, Type::F32, 0);
    let head = b.create_block();
    let i = b.append_block_param(head, Type::U32);
    let acc = b.append_block_param(head, Type::F32);
    b.jump(head, vec![i0, zero]);
    b.switch_to_block(head);
    let more = b.cmp(CmpOp::Lt, i, p[2]);
    let body = b.create_block();
    let after = b.create_block();
    b.branch(more, body, vec![], after, vec![]);
    b.switch_to_block(body);
    let x = load_at(&mut b, p[0], i);
    let acc2 = b.binary(BinaryOp::Add, acc, x);
    let i2 = b.binary(BinaryOp::Add, i, stride);
    b.jump(head, vec![i2, acc2]);
    b.switch_to_block(after);
    store_at(&mut b, sdata, tid, acc);
    b.barrier();
    let one = ku32(&mut b, 1);
    let s0 = b.binary(BinaryOp::Shr, bdim, one);
    let rhead = b.create_block();
    let s = b.append_block_param(rhead, Type::U32);
    b.jump(rhead, vec![s0]);
    b.switch_to_block(rhead);
    let z = ku32(&mut b, 0);
    let more = b.cmp(CmpOp::Gt, s, z);
    let rbody = b.create_block();
    let fin = b.create_block();
    b.branch(more, rbody, vec![], fin, vec![]);
    b.switch_to_block(rbody);
    let active = b.cmp(CmpOp::Lt, tid, s);
    let add = b.create_block();
    let sync = b.create_block();
    b.branch(active, add, vec![], sync, vec![]);
    b.switch_to_block(add);
    let a = load_at(&mut b, sdata, tid);
    let j = b.binary(BinaryOp::Add, tid, s);
    let c = load_at(&mut b, sdata, j);
    let sum = b.binary(BinaryOp::Add, a, c);
    store_at(&mut b, sdata, tid, sum);
    b.jump(sync, vec![]);
    b.switch_to_block(sync);
    b.barrier();
    let s2 = b.binary(BinaryOp::Shr, s, one);
    b.jump(rhead, vec![s2]);
    b.switch_to_block(fin);
    let first = b.cmp(CmpOp::Eq, tid, z);
    let write = b.create_block();
    let end = b.create_block();
    b.branch(first, write, vec![], end, vec![]);
    b.switch_to_block(write);
    let r = load_at(&mut b, sdata, z);
    store_at(&mut b, p[1], bid, r);
    b.jump(end, vec![]);
    b.switch_to_block(end);
    b.ret(None);
    module_of(f, vec![])
}

/// `index3d(out)`: every thread writes `x + 1000 y + 1000000 z` of its global 3D position at
/// that position's linear index.
pub fn index3d() -> (Module, FuncId) {
    let mut f = kernel("index3d", &[PU32]);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let gx = global(&mut b, Dim::X);
    let gy = global(&mut b, Dim::Y);
    let gz = global(&mut b, Dim::Z);
    let gdx = b.gpu_index(GpuIndex::GridDim, Dim::X);
    let bdx = b.gpu_index(GpuIndex::BlockDim, Dim::X);
    let width = b.binary(BinaryOp::Mul, gdx, bdx);
    let gdy = b.gpu_index(GpuIndex::GridDim, Dim::Y);
    let bdy = b.gpu_index(GpuIndex::BlockDim, Dim::Y);
    let height = b.binary(BinaryOp::Mul, gdy, bdy);
    let zh = b.binary(BinaryOp::Mul, gz, height);
    let zy = b.binary(BinaryOp::Add, zh, gy);
    let row = b.binary(BinaryOp::Mul, zy, width);
    let idx = b.binary(BinaryOp::Add, row, gx);
    let thousand = ku32(&mut b, 1000);
    let million = ku32(&mut b, 1_000_000);
    let ym = b.binary(BinaryOp::Mul, gy, thousand);
    let zm = b.binary(BinaryOp::Mul, gz, million);
    let v = b.binary(BinaryOp::Add, gx, ym);
    let v = b.binary(BinaryOp::Add, v, zm);
    store_at(&mut b, p[0], idx, v);
    b.ret(None);
    module_of(f, vec![])
}

/// `two_shared(input, out)` with blocks of 32 threads: `sa: [i16; 33]`, `sb: [f64; 32]`;
/// `sa[tid] = 3 tid; sb[tid] = input[i]; barrier; out[i] = sb[31 - tid] + sa[(tid + 1) % 32]`.
pub fn two_shared() -> (Module, FuncId) {
    let mut f = kernel("two_shared", &[PF64, PF64]);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
    let bdim = b.gpu_index(GpuIndex::BlockDim, Dim::X);
    let i = global(&mut b, Dim::X);
    let sa = b.shared_alloc(Scalar::I16, 33);
    let sb = b.shared_alloc(Scalar::F64, 32);
    let t16 = b.cast(tid, Type::I16);
    let three = k(&mut b, Type::I16, 3);
    let t3 = b.binary(BinaryOp::Mul, t16, three);
    store_at(&mut b, sa, tid, t3);
    let x = load_at(&mut b, p[0], i);
    store_at(&mut b, sb, tid, x);
    b.barrier();
    let one = ku32(&mut b, 1);
    let last = b.binary(BinaryOp::Sub, bdim, one);
    let r = b.binary(BinaryOp::Sub, last, tid);
    let a = load_at(&mut b, sb, r);
    let t1 = b.binary(BinaryOp::Add, tid, one);
    let j = b.binary(BinaryOp::Rem, t1, bdim);
    let c = load_at(&mut b, sa, j);
    let cf = b.cast(c, Type::F64);
    let v = b.binary(BinaryOp::Add, a, cf);
    store_at(&mut b, p[1], i, v);
    b.ret(None);
    module_of(f, vec![])
}

/// `divide(input, out, n)`: `i = global.x; if i < n { out[i] = 100 / input[i] }` (`i32`; traps
/// on a zero).
pub fn divide() -> (Module, FuncId) {
    let mut f = kernel("divide", &[PI32, PI32, Type::U32]);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let i = global(&mut b, Dim::X);
    let c = b.cmp(CmpOp::Lt, i, p[2]);
    let body = b.create_block();
    let done = b.create_block();
    b.branch(c, body, vec![], done, vec![]);
    b.switch_to_block(body);
    let x = load_at(&mut b, p[0], i);
    let hundred = k(&mut b, Type::I32, 100);
    let q = b.binary(BinaryOp::Div, hundred, x);
    store_at(&mut b, p[1], i, q);
    b.jump(done, vec![]);
    b.switch_to_block(done);
    b.ret(None);
    module_of(f, vec![])
}

/// `live_values(x, flags)`: values of several types live across a barrier (a pointer, an
/// `f64`, an `i8`, a `bool`, a `u32`), with a shared exchange between neighbours:
///
/// ```text
/// i = global.x; p = &x[i]; h = i as f64 * 0.5; small = tid as i8 - 100; odd = i % 3 == 0
/// s[tid] = i; barrier
/// nb = s[(tid + 1) % blockDim]
/// *p = h + nb as f64; flags[i] = odd ? small as u8 : 255
/// ```
pub fn live_values() -> (Module, FuncId) {
    let mut f = kernel("live_values", &[PF64, PU8]);
    let mut b = FunctionBuilder::new(&mut f);
    let prm = b.create_entry_block();
    let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
    let bdim = b.gpu_index(GpuIndex::BlockDim, Dim::X);
    let i = global(&mut b, Dim::X);
    let p = b.elem_ptr(prm[0], i);
    let fi = b.cast(i, Type::F64);
    let half = k(&mut b, Type::F64, 0.5f64.to_bits());
    let h = b.binary(BinaryOp::Mul, fi, half);
    let t8 = b.cast(tid, Type::I8);
    let hundred = k(&mut b, Type::I8, 100);
    let small = b.binary(BinaryOp::Sub, t8, hundred);
    let three = ku32(&mut b, 3);
    let m = b.binary(BinaryOp::Rem, i, three);
    let z = ku32(&mut b, 0);
    let odd = b.cmp(CmpOp::Eq, m, z);
    let s = b.shared_alloc(Scalar::U32, 1024);
    store_at(&mut b, s, tid, i);
    b.barrier();
    let one = ku32(&mut b, 1);
    let t1 = b.binary(BinaryOp::Add, tid, one);
    let j = b.binary(BinaryOp::Rem, t1, bdim);
    let nb = load_at(&mut b, s, j);
    let nbf = b.cast(nb, Type::F64);
    let v = b.binary(BinaryOp::Add, h, nbf);
    b.store(p, v);
    let su = b.cast(small, Type::U8);
    let all = k(&mut b, Type::U8, 255);
    let flag = b.select(odd, su, all);
    store_at(&mut b, prm[1], i, flag);
    b.ret(None);
    module_of(f, vec![])
}

/// Host helpers for `with_helper`: `twice(a) = a + a`, `mix(a, b) = twice(a) + b`.
fn helpers() -> (Function, Function) {
    let sig = |n: usize| Signature {
        params: vec![Type::F32; n],
        ret: Some(Type::F32),
    };
    let mut twice = Function::new("twice", FuncKind::Host, sig(1));
    let mut b = FunctionBuilder::new(&mut twice);
    let p = b.create_entry_block();
    let r = b.binary(BinaryOp::Add, p[0], p[0]);
    b.ret(Some(r));
    let mut mix = Function::new("mix", FuncKind::Host, sig(2));
    let mut b = FunctionBuilder::new(&mut mix);
    let p = b.create_entry_block();
    // `twice` is function 0 of the module (see `with_helper`).
    let t = b
        .call(FuncId::from_u32(0), vec![p[0]], Some(Type::F32))
        .expect("a result");
    let r = b.binary(BinaryOp::Add, t, p[1]);
    b.ret(Some(r));
    (twice, mix)
}

/// `with_helper(a, b, c)`: calls host functions before and after a barrier:
/// `x = mix(a[i], b[i]); barrier; c[i] = mix(x, 1)`.
pub fn with_helper() -> (Module, FuncId) {
    let (twice, mix) = helpers();
    let mix_id = FuncId::from_u32(1);
    let mut f = kernel("with_helper", &[PF32, PF32, PF32]);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let i = global(&mut b, Dim::X);
    let x = load_at(&mut b, p[0], i);
    let y = load_at(&mut b, p[1], i);
    let m = b
        .call(mix_id, vec![x, y], Some(Type::F32))
        .expect("a result");
    b.barrier();
    let one = k(&mut b, Type::F32, 1f32.to_bits() as u64);
    let r = b
        .call(mix_id, vec![m, one], Some(Type::F32))
        .expect("a result");
    store_at(&mut b, p[2], i, r);
    b.ret(None);
    module_of(f, vec![twice, mix])
}

/// `entry_loop(out, n)`: the kernel's entry block is a loop header (it has predecessors), with
/// a barrier in the loop: `while n > 0 { out[tid * 8 + n - 1] = n + tid; barrier; n -= 1 }`.
pub fn entry_loop() -> (Module, FuncId) {
    let mut f = kernel("entry_loop", &[PU32, Type::U32]);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let entry = b.current_block().expect("entry block");
    let z = ku32(&mut b, 0);
    let more = b.cmp(CmpOp::Gt, p[1], z);
    let body = b.create_block();
    let exit = b.create_block();
    b.branch(more, body, vec![], exit, vec![]);
    b.switch_to_block(body);
    let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
    let one = ku32(&mut b, 1);
    let m = b.binary(BinaryOp::Sub, p[1], one);
    let eight = ku32(&mut b, 8);
    let row = b.binary(BinaryOp::Mul, tid, eight);
    let idx = b.binary(BinaryOp::Add, row, m);
    let v = b.binary(BinaryOp::Add, p[1], tid);
    store_at(&mut b, p[0], idx, v);
    b.barrier();
    b.jump(entry, vec![p[0], m]);
    b.switch_to_block(exit);
    b.ret(None);
    module_of(f, vec![])
}

/// `divergent(out)`: a barrier only even threads reach (undefined on GPUs; on the CPU odd
/// threads finish and even threads resume after the barrier):
/// `if tid % 2 == 0 { s[tid] = tid; barrier; out[tid] = s[(tid + 2) % blockDim] } else
/// { out[tid] = 7 }`.
pub fn divergent() -> (Module, FuncId) {
    let mut f = kernel("divergent", &[PU32]);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
    let bdim = b.gpu_index(GpuIndex::BlockDim, Dim::X);
    let s = b.shared_alloc(Scalar::U32, 64);
    let two = ku32(&mut b, 2);
    let r = b.binary(BinaryOp::Rem, tid, two);
    let z = ku32(&mut b, 0);
    let even = b.cmp(CmpOp::Eq, r, z);
    let eb = b.create_block();
    let ob = b.create_block();
    b.branch(even, eb, vec![], ob, vec![]);
    b.switch_to_block(eb);
    store_at(&mut b, s, tid, tid);
    b.barrier();
    let t2 = b.binary(BinaryOp::Add, tid, two);
    let j = b.binary(BinaryOp::Rem, t2, bdim);
    let v = load_at(&mut b, s, j);
    store_at(&mut b, p[0], tid, v);
    b.ret(None);
    b.switch_to_block(ob);
    let seven = ku32(&mut b, 7);
    store_at(&mut b, p[0], tid, seven);
    b.ret(None);
    module_of(f, vec![])
}

/// `staggered(out)`: thread `t` runs `t` iterations of a block-stride loop (so later threads
/// yield more often), then a barrier guards a neighbour exchange:
/// `c = 0; for (j = 0; j < tid * blockDim; j += blockDim) c += 1; s[tid] = c; barrier;
/// out[blockIdx * blockDim + tid] = s[(tid + 1) % blockDim]`.
pub fn staggered() -> (Module, FuncId) {
    let mut f = kernel("staggered", &[PU32]);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
    let bdim = b.gpu_index(GpuIndex::BlockDim, Dim::X);
    let i = global(&mut b, Dim::X);
    let s = b.shared_alloc(Scalar::U32, 1024);
    let lim = b.binary(BinaryOp::Mul, tid, bdim);
    let z = ku32(&mut b, 0);
    let head = b.create_block();
    let j = b.append_block_param(head, Type::U32);
    let c = b.append_block_param(head, Type::U32);
    b.jump(head, vec![z, z]);
    b.switch_to_block(head);
    let more = b.cmp(CmpOp::Lt, j, lim);
    let body = b.create_block();
    let after = b.create_block();
    b.branch(more, body, vec![], after, vec![]);
    b.switch_to_block(body);
    let j2 = b.binary(BinaryOp::Add, j, bdim);
    let one = ku32(&mut b, 1);
    let c2 = b.binary(BinaryOp::Add, c, one);
    b.jump(head, vec![j2, c2]);
    b.switch_to_block(after);
    store_at(&mut b, s, tid, c);
    b.barrier();
    let one = ku32(&mut b, 1);
    let t1 = b.binary(BinaryOp::Add, tid, one);
    let k1 = b.binary(BinaryOp::Rem, t1, bdim);
    let nb = load_at(&mut b, s, k1);
    store_at(&mut b, p[0], i, nb);
    b.ret(None);
    module_of(f, vec![])
}

/// Every kernel above, by name.
pub fn all_kernels() -> Vec<(&'static str, (Module, FuncId))> {
    vec![
        ("vec_add", vec_add()),
        ("saxpy", saxpy()),
        ("block_sum", block_sum()),
        ("strided_sum", strided_sum()),
        ("index3d", index3d()),
        ("two_shared", two_shared()),
        ("divide", divide()),
        ("live_values", live_values()),
        ("with_helper", with_helper()),
        ("entry_loop", entry_loop()),
        ("divergent", divergent()),
        ("staggered", staggered()),
    ]
}

/// `stride_thread_ids(out, n)`, grid-stride with a body that depends on the thread:
/// `for (i = global.x; i < n; i += gridDim.x * blockDim.x) out[i] = threadIdx.x`.
pub fn stride_thread_ids() -> (Module, FuncId) {
    grid_stride("stride_thread_ids", &[PU32, Type::U32], |b, p, i| {
        let tid = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
        store_at(b, p[0], i, tid);
    })
}
