//! Kernels on a real Metal GPU (macOS only): MSL compiled at run time, launched through
//! [`metal_launch`] over arrays of [`MetalDevice`], with the traps a launch can report.
//! Elsewhere this file compiles to nothing; `cargo check --tests --target
//! aarch64-apple-darwin` type-checks it.
#![cfg(target_os = "macos")]

use nacre_ir::{
    verify, BinaryOp, CmpOp, Dim, FuncKind, Function, FunctionBuilder, GpuIndex, Module, Scalar,
    Signature, Trap, Type, Value, VerifiedModule,
};
use nacre_metal::{metal_launch, prepare_metal, probe, MetalDevice, MetalKernels};
use nacre_runtime::Array;

/// Two kernels: `c[i] = a[i] + b[i]` for `i < n`, and `out[t] = t / d` (a trap when `d` is
/// zero).
fn module() -> VerifiedModule {
    let f32p = Type::ptr(Scalar::F32);
    let mut add = Function::new(
        "vec_add",
        FuncKind::Kernel,
        Signature {
            params: vec![f32p, f32p, f32p, Type::U32],
            ret: None,
        },
    );
    let mut b = FunctionBuilder::new(&mut add);
    let p = b.create_entry_block();
    let t = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
    let bi = b.gpu_index(GpuIndex::BlockIdx, Dim::X);
    let bd = b.gpu_index(GpuIndex::BlockDim, Dim::X);
    let base = b.binary(BinaryOp::Mul, bi, bd);
    let i = b.binary(BinaryOp::Add, base, t);
    let inside = b.cmp(CmpOp::Lt, i, p[3]);
    let (body, done) = (b.create_block(), b.create_block());
    b.branch(inside, body, vec![], done, vec![]);
    b.switch_to_block(body);
    let (pa, pb, pc) = (
        b.elem_ptr(p[0], i),
        b.elem_ptr(p[1], i),
        b.elem_ptr(p[2], i),
    );
    let (x, y) = (b.load(pa), b.load(pb));
    let s = b.binary(BinaryOp::Add, x, y);
    b.store(pc, s);
    b.jump(done, vec![]);
    b.switch_to_block(done);
    b.ret(None);

    let mut div = Function::new(
        "div",
        FuncKind::Kernel,
        Signature {
            params: vec![Type::ptr(Scalar::U32), Type::U32],
            ret: None,
        },
    );
    let mut b = FunctionBuilder::new(&mut div);
    let p: Vec<Value> = b.create_entry_block();
    let t = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
    let q = b.binary(BinaryOp::Div, t, p[1]);
    let dst = b.elem_ptr(p[0], t);
    b.store(dst, q);
    b.ret(None);

    let mut m = Module::new();
    let entry = m.add_function(add);
    m.add_function(div);
    m.entry = Some(entry);
    verify(m).unwrap_or_else(|e| panic!("{e}"))
}

fn launch(kernels: &MetalKernels, index: usize, dims: [u32; 6], args: &[u64]) -> Result<(), Trap> {
    let (_, k) = kernels.iter().nth(index).expect("kernel");
    let mut status = 0u32;
    let [gx, gy, gz, bx, by, bz] = dims;
    let dims = [gx, gy, gz, bx, by, bz, 0];
    // SAFETY: a live kernel handle, a `LaunchDims`, one argument per parameter, a writable
    // status.
    unsafe { metal_launch(k.handle(), dims.as_ptr(), args.as_ptr(), &mut status) };
    match Trap::from_code(status) {
        None => Ok(()),
        Some(t) => Err(t),
    }
}

#[test]
fn vec_add_runs_on_the_gpu_without_copies() {
    if let Err(e) = probe() {
        eprintln!("skipped: {e}");
        return;
    }
    let kernels = prepare_metal(&module()).unwrap_or_else(|e| panic!("{e}"));
    let n = 100_000usize;
    let dev = MetalDevice::shared();
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| (2 * i) as f32).collect();
    let (xa, xb) = (
        Array::copy_on(dev.clone(), &a).unwrap(),
        Array::copy_on(dev.clone(), &b).unwrap(),
    );
    let xc = Array::<f32>::alloc_on(dev, n).unwrap();
    let blocks = n.div_ceil(256) as u32;
    let args = [
        xa.as_ptr() as u64,
        xb.as_ptr() as u64,
        xc.as_ptr() as u64,
        n as u64,
    ];
    launch(&kernels, 0, [blocks, 1, 1, 256, 1, 1], &args).unwrap();
    assert!(xc
        .as_slice()
        .iter()
        .enumerate()
        .all(|(i, &v)| v == (3 * i) as f32));

    // A second preparation of the same module compiles nothing new and shares pipelines.
    let again = prepare_metal(&module()).unwrap();
    assert_eq!(again.len(), 2);
}

#[test]
fn launch_failures_are_traps() {
    if let Err(e) = probe() {
        eprintln!("skipped: {e}");
        return;
    }
    let kernels = prepare_metal(&module()).unwrap_or_else(|e| panic!("{e}"));
    let out = Array::<u32>::alloc_on(MetalDevice::shared(), 64).unwrap();
    let ptr = out.as_ptr() as u64;
    assert_eq!(
        launch(&kernels, 1, [1, 1, 1, 64, 1, 1], &[ptr, 0]),
        Err(Trap::DivisionByZero)
    );
    launch(&kernels, 1, [1, 1, 1, 64, 1, 1], &[ptr, 2]).unwrap();
    assert_eq!(out.as_slice()[9], 4);
    assert_eq!(
        launch(&kernels, 1, [1, 1, 1, 0, 1, 1], &[ptr, 2]),
        Err(Trap::InvalidLaunch)
    );
    assert_eq!(
        launch(&kernels, 1, [1, 1, 1, 4096, 1, 1], &[ptr, 2]),
        Err(Trap::InvalidLaunch)
    );
    drop(out);
    assert_eq!(
        launch(&kernels, 1, [1, 1, 1, 64, 1, 1], &[ptr, 2]),
        Err(Trap::UnknownBuffer)
    );
}
