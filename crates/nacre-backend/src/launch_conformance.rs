//! A conformance suite for kernel launches in CPU backends (enabled by the `conformance`
//! feature, for the backends' tests): a recording launcher, a host module that launches
//! kernels in every way, and checks that every backend must pass — the launcher receives the
//! sizes and the bits of every argument, a failed launch traps and stops the caller, a module
//! without a launch binding is rejected, kernels are never compiled.
//!
//! A backend's test calls each `check_*` function with a closure that compiles a module.

use crate::{BackendError, Executable, LaunchBinding, LaunchDims, Linkage};
use nacre_ir::{
    verify, BinaryOp, CmpOp, Const, Dim, FuncId, FuncKind, Function, FunctionBuilder, GpuIndex,
    Module, Scalar, Signature, Trap, Type, Value,
};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;

/// Compiles a module with its linkage (the backend under test).
pub type Compile<'a> = &'a dyn Fn(Module, Linkage) -> Result<Arc<dyn Executable>, BackendError>;

fn compile(compile: Compile<'_>, (m, linkage): (Module, Linkage)) -> Arc<dyn Executable> {
    verify(m.clone()).expect("the conformance modules are valid IR");
    compile(m, linkage).unwrap_or_else(|e| panic!("{e}"))
}

/// A constant.
fn konst(b: &mut FunctionBuilder<'_>, ty: Type, bits: u64) -> Value {
    b.constant(Const {
        ty,
        bits: u128::from(bits),
    })
}

/// A host function built by `body` from the entry block's parameters.
pub fn function(
    name: &str,
    params: Vec<Type>,
    ret: Option<Type>,
    body: impl FnOnce(&mut FunctionBuilder<'_>, &[Value]),
) -> Function {
    FunctionBuilder::build(name, FuncKind::Host, &params, ret, body)
}

/// Sets the status the recording launcher writes (0: success).
pub fn set_launch_status(code: u32) {
    FAIL.with(|f| f.set(code));
}

/// The handle the test launcher knows kernel `k` by.
pub const K_HANDLE: usize = 0x1000;
/// The handle of kernel `k2`.
pub const K2_HANDLE: usize = 0x2000;
/// The handle of kernel `k_wide`.
pub const WIDE_HANDLE: usize = 0x3000;
/// The handle of kernel `k0`, which has no parameters.
pub const K0_HANDLE: usize = 0x4000;
/// Parameters of `k_wide`: more than backends keep in small fixed buffers.
pub const WIDE_PARAMS: usize = 20;

/// One launch as the launcher saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The kernel's handle.
    pub handle: usize,
    /// Grid then block sizes, then the bytes of dynamic shared memory.
    pub dims: [u32; LaunchDims::WORDS],
    /// Argument bits.
    pub args: Vec<u64>,
}

thread_local! {
    /// Launches made on this thread (backends call the launcher on the caller's thread).
    static RECORDS: RefCell<Vec<Record>> = const { RefCell::new(Vec::new()) };
    /// The status the launcher writes (0: success).
    static FAIL: Cell<u32> = const { Cell::new(0) };
}

/// Takes the launches recorded so far.
pub fn take_records() -> Vec<Record> {
    RECORDS.with(|r| std::mem::take(&mut *r.borrow_mut()))
}

/// Number of parameters of the kernel with `handle`.
fn arity(handle: usize) -> usize {
    match handle {
        K_HANDLE => 7,
        K2_HANDLE => 1,
        WIDE_HANDLE => WIDE_PARAMS,
        _ => 0,
    }
}

/// The test launcher: records the launch and writes [`FAIL`] into the status.
///
/// # Safety
/// The `LaunchFn` contract: `dims` points to a [`LaunchDims`], `args` to one `u64` per parameter of
/// the kernel `handle` stands for, `status` to a writable status word.
pub unsafe extern "C" fn record_launch(
    handle: usize,
    dims: *const u32,
    args: *const u64,
    status: *mut u32,
) {
    // SAFETY: guaranteed by the caller (the launch contract).
    let (dims, args) = unsafe {
        (
            LaunchDims::read(dims),
            std::slice::from_raw_parts(args, arity(handle)),
        )
    };
    RECORDS.with(|r| {
        r.borrow_mut().push(Record {
            handle,
            dims: dims.words(),
            args: args.to_vec(),
        })
    });
    let code = FAIL.with(Cell::get);
    if code != 0 {
        // SAFETY: guaranteed by the caller.
        unsafe { *status = code };
    }
}

/// A kernel whose body would not lower on the CPU (GPU intrinsics): it must be skipped.
pub fn kernel(name: &str, params: Vec<Type>) -> Function {
    let mut k = Function::new(name, FuncKind::Kernel, Signature { params, ret: None });
    let mut b = FunctionBuilder::new(&mut k);
    b.create_entry_block();
    b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
    b.barrier();
    b.ret(None);
    k
}

/// The parameters of `k`: one of each kind of argument.
pub fn k_params() -> Vec<Type> {
    vec![
        Type::I8,
        Type::I32,
        Type::U64,
        Type::F32,
        Type::F64,
        Type::BOOL,
        Type::ptr(Scalar::F32),
    ]
}

/// The functions of the test module.
pub struct Ids {
    /// `host(k's params.., gx: u32) -> i32`: launches `k` over `(gx, 2, 3) x (4, 5, 6)` with
    /// 48 bytes of dynamic shared memory and its first seven parameters, then stores `7.0` through the pointer and returns 1.
    pub host: FuncId,
    /// `looped(n: u32, data: ptr<u32>) -> u32`: for `i` in `0..n` launches `k2(i)` over
    /// `(data[i], 1, 1) x (i + 1, 1, 1)` with `data[i]` bytes of dynamic shared memory;
    /// returns `n`.
    pub looped: FuncId,
    /// `outer(p: ptr<f32>) -> i32`: calls `host` with constants, then stores `9.0` at `p[1]`
    /// and returns `host`'s result plus 1.
    pub outer: FuncId,
    /// `wide(x: u16) -> u16`: launches `k2(x)` over `(x, 1, 1) x (1, 1, 1)`, then `k_wide`
    /// with `x + i` for `i` in `0..20`.
    pub wide: FuncId,
}

/// Builds the test module (entry `host`) with its kernels `k`, `k2` and `k_wide`.
pub fn launch_module() -> (Module, Linkage, Ids) {
    let mut m = Module::new();
    let k = m.add_function(kernel("k", k_params()));
    let k2 = m.add_function(kernel("k2", vec![Type::U32]));
    let wide_k = m.add_function(kernel("k_wide", vec![Type::U16; WIDE_PARAMS]));
    let mut params = k_params();
    params.push(Type::U32);
    let host = m.add_function(function("host", params, Some(Type::I32), |b, p| {
        let sizes: Vec<_> = (2..=6).map(|n| konst(b, Type::U32, n)).collect();
        let shared = konst(b, Type::U32, 48);
        b.launch_shared(
            k,
            [p[7], sizes[0], sizes[1]],
            [sizes[2], sizes[3], sizes[4]],
            Some(shared),
            p[..7].to_vec(),
        );
        let seven = konst(b, Type::F32, u64::from(7f32.to_bits()));
        b.store(p[6], seven);
        let one = konst(b, Type::I32, 1);
        b.ret(Some(one));
    }));
    let looped = m.add_function(function(
        "looped",
        vec![Type::U32, Type::ptr(Scalar::U32)],
        Some(Type::U32),
        |b, p| {
            let zero = konst(b, Type::U32, 0);
            let one = konst(b, Type::U32, 1);
            let header = b.create_block();
            let i = b.append_block_param(header, Type::U32);
            let body = b.create_block();
            let exit = b.create_block();
            b.jump(header, vec![zero]);
            b.switch_to_block(header);
            let more = b.cmp(CmpOp::Lt, i, p[0]);
            b.branch(more, body, vec![], exit, vec![]);
            b.switch_to_block(body);
            let at = b.elem_ptr(p[1], i);
            let g = b.load(at);
            let next = b.binary(BinaryOp::Add, i, one);
            b.launch_shared(k2, [g, one, one], [next, one, one], Some(g), vec![i]);
            b.jump(header, vec![next]);
            b.switch_to_block(exit);
            b.ret(Some(i));
        },
    ));
    let outer = m.add_function(function(
        "outer",
        vec![Type::ptr(Scalar::F32)],
        Some(Type::I32),
        |b, p| {
            let args = vec![
                konst(b, Type::I8, 0x80),
                konst(b, Type::I32, 1),
                konst(b, Type::U64, 2),
                konst(b, Type::F32, u64::from(0.5f32.to_bits())),
                konst(b, Type::F64, 0.25f64.to_bits()),
                konst(b, Type::BOOL, 0),
                p[0],
                konst(b, Type::U32, 1),
            ];
            let r = b.call(host, args, Some(Type::I32)).expect("result");
            let one = konst(b, Type::I32, 1);
            let at = b.elem_ptr(p[0], one);
            let nine = konst(b, Type::F32, u64::from(9f32.to_bits()));
            b.store(at, nine);
            let s = b.binary(BinaryOp::Add, r, one);
            b.ret(Some(s));
        },
    ));
    let wide = m.add_function(function(
        "wide",
        vec![Type::U16],
        Some(Type::U16),
        |b, p| {
            let one = konst(b, Type::U32, 1);
            let x = b.cast(p[0], Type::U32);
            b.launch(k2, [x, one, one], [one, one, one], vec![x]);
            let args = (0..WIDE_PARAMS as u64)
                .map(|i| {
                    let c = konst(b, Type::U16, i);
                    b.binary(BinaryOp::Add, p[0], c)
                })
                .collect();
            b.launch(wide_k, [one, one, one], [one, one, one], args);
            b.ret(Some(p[0]));
        },
    ));
    m.entry = Some(host);
    let linkage = Linkage::default().with_launch(LaunchBinding {
        launcher: record_launch,
        handles: HashMap::from([(k, K_HANDLE), (k2, K2_HANDLE), (wide_k, WIDE_HANDLE)]),
    });
    (
        m,
        linkage,
        Ids {
            host,
            looped,
            outer,
            wide,
        },
    )
}

/// The module with `entry` as its entry function, and its linkage.
pub fn with_entry(entry: impl FnOnce(&Ids) -> FuncId) -> (Module, Linkage) {
    let (mut m, linkage, ids) = launch_module();
    m.entry = Some(entry(&ids));
    (m, linkage)
}

/// The launcher receives the grid and block sizes and the exact bits of every argument, and
/// code after a successful launch runs.
pub fn check_sizes_and_argument_bits(compile_fn: Compile<'_>) {
    take_records();
    set_launch_status(0);
    let exe = compile(compile_fn, with_entry(|ids| ids.host));
    let mut out = [0f32; 2];
    let ptr = out.as_mut_ptr() as u64;
    let nan = f64::from_bits(0x7ff8_0000_dead_beef);
    let args = [
        u64::from((-1i8) as u8),
        u64::from((-2i32) as u32),
        u64::MAX - 1,
        u64::from((-1.5f32).to_bits()),
        nan.to_bits(),
        1,
        ptr,
        17,
    ];
    assert_eq!(exe.call(&args), Ok(1));
    assert_eq!(
        take_records(),
        [Record {
            handle: K_HANDLE,
            dims: [17, 2, 3, 4, 5, 6, 48],
            args: args[..7].to_vec(),
        }]
    );
    assert_eq!(out[0], 7.0, "code after a successful launch runs");
}

/// Launches in a loop, with sizes read from memory.
pub fn check_launches_in_a_loop(compile_fn: Compile<'_>) {
    take_records();
    set_launch_status(0);
    let exe = compile(compile_fn, with_entry(|ids| ids.looped));
    let data = [5u32, 0, u32::MAX, 9];
    assert_eq!(exe.call(&[4, data.as_ptr() as u64]), Ok(4));
    let expected: Vec<Record> = (0u32..4)
        .map(|i| Record {
            handle: K2_HANDLE,
            dims: [data[i as usize], 1, 1, i + 1, 1, 1, data[i as usize]],
            args: vec![u64::from(i)],
        })
        .collect();
    assert_eq!(take_records(), expected);
    assert_eq!(exe.call(&[0, data.as_ptr() as u64]), Ok(0));
    assert!(take_records().is_empty());
}

/// A launch with many arguments, after a smaller one in the same function.
pub fn check_many_arguments(compile_fn: Compile<'_>) {
    take_records();
    set_launch_status(0);
    let exe = compile(compile_fn, with_entry(|ids| ids.wide));
    assert_eq!(exe.call(&[0xfffe]), Ok(0xfffe));
    let expected: Vec<u64> = (0..WIDE_PARAMS as u64)
        .map(|i| (0xfffe + i) & 0xffff)
        .collect();
    assert_eq!(
        take_records(),
        [
            Record {
                handle: K2_HANDLE,
                dims: [0xfffe, 1, 1, 1, 1, 1, 0],
                args: vec![0xfffe],
            },
            Record {
                handle: WIDE_HANDLE,
                dims: [1, 1, 1, 1, 1, 1, 0],
                args: expected,
            }
        ]
    );
}

/// A launch that fails (inside a callee) traps, and neither the callee nor its caller
/// continues.
pub fn check_failed_launch_traps(compile_fn: Compile<'_>) {
    take_records();
    let exe = compile(compile_fn, with_entry(|ids| ids.outer));
    for (code, trap) in [
        (5, Trap::UnknownBuffer),
        (4, Trap::InvalidLaunch),
        (77, Trap::DeviceError),
    ] {
        set_launch_status(code);
        let mut out = [0f32; 2];
        assert_eq!(exe.call(&[out.as_mut_ptr() as u64]), Err(trap));
        assert_eq!(
            out,
            [0.0, 0.0],
            "neither the callee nor the caller continues"
        );
        assert_eq!(take_records().len(), 1);
    }
    set_launch_status(0);
    let mut out = [0f32; 2];
    assert_eq!(exe.call(&[out.as_mut_ptr() as u64]), Ok(2));
    assert_eq!(out, [7.0, 9.0]);
    let records = take_records();
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0].args,
        [
            0x80,
            1,
            2,
            u64::from(0.5f32.to_bits()),
            0.25f64.to_bits(),
            0,
            out.as_ptr() as u64
        ]
    );
}

/// A module with launches but no binding (or no handle for a launched kernel) is an
/// `Unsupported` error of `backend` that points to the kernel runtime; a module with kernels but no
/// launches needs no binding.
pub fn check_missing_binding(compile_fn: Compile<'_>, backend: &str) {
    let unsupported = |(m, linkage): (Module, Linkage)| match compile_fn(m, linkage) {
        Err(BackendError::Unsupported { backend: b, what }) => {
            assert_eq!(b, backend);
            assert!(what.contains("kernel runtime"), "{what}");
            what
        }
        Err(e) => panic!("expected Unsupported, got {e}"),
        Ok(_) => panic!("expected Unsupported, got an executable"),
    };
    let (m, _) = with_entry(|ids| ids.host);
    unsupported((m, Linkage::default()));
    let (m, mut linkage) = with_entry(|ids| ids.looped);
    if let Some(binding) = &mut linkage.launch {
        binding.handles.retain(|_, &mut h| h != K2_HANDLE);
    }
    let what = unsupported((m, linkage));
    assert!(what.contains("@k2"), "{what}");
    let mut m = Module::new();
    m.add_function(kernel("k", k_params()));
    let plain = m.add_function(function(
        "plain",
        vec![Type::I32],
        Some(Type::I32),
        |b, p| {
            b.ret(Some(p[0]));
        },
    ));
    m.entry = Some(plain);
    assert_eq!(
        compile(compile_fn, (m, Linkage::default())).call(&[3]),
        Ok(3)
    );
}

/// Kernels are skipped (their bodies use GPU intrinsics, which no CPU backend compiles), a
/// kernel cannot be the entry and a host function cannot call a kernel.
pub fn check_kernels_are_skipped(compile_fn: Compile<'_>) {
    compile(compile_fn, with_entry(|ids| ids.host));
    let (mut m, linkage, _) = launch_module();
    m.entry = m.functions.keys().next();
    match compile_fn(m, linkage) {
        Err(BackendError::Unsupported { what, .. }) => assert!(what.contains("kernel"), "{what}"),
        Err(e) => panic!("expected Unsupported, got {e}"),
        Ok(_) => panic!("a kernel entry compiled"),
    }
    let (mut m, linkage, _) = launch_module();
    let k2 = m.functions.keys().nth(1).expect("kernel k2");
    let caller = m.add_function(function("caller", vec![Type::U32], None, |b, p| {
        b.call(k2, vec![p[0]], None);
        b.ret(None);
    }));
    m.entry = Some(caller);
    match compile_fn(m, linkage) {
        Err(BackendError::Unsupported { what, .. }) => assert!(what.contains("@k2"), "{what}"),
        Err(e) => panic!("expected Unsupported, got {e}"),
        Ok(_) => panic!("a call of a kernel compiled"),
    }
}

/// A module launching a kernel without parameters over sizes from its argument.
pub fn no_argument_module() -> (Module, Linkage) {
    let mut m = Module::new();
    let k0 = m.add_function(kernel("k0", vec![]));
    let f = m.add_function(function("f", vec![Type::U32], None, |b, p| {
        let one = konst(b, Type::U32, 1);
        b.launch(k0, [p[0], one, one], [one, one, p[0]], vec![]);
        b.ret(None);
    }));
    m.entry = Some(f);
    let linkage = Linkage::default().with_launch(LaunchBinding {
        launcher: record_launch,
        handles: HashMap::from([(k0, K0_HANDLE)]),
    });
    (m, linkage)
}

/// A launch without arguments.
pub fn check_launch_without_arguments(compile_fn: Compile<'_>) {
    let exe = compile(compile_fn, no_argument_module());
    take_records();
    set_launch_status(0);
    assert_eq!(exe.call(&[3]), Ok(0));
    assert_eq!(
        take_records(),
        [Record {
            handle: K0_HANDLE,
            dims: [3, 1, 1, 1, 1, 3, 0],
            args: vec![],
        }]
    );
}

/// Runs every check of the suite.
pub fn check_all(compile_fn: Compile<'_>, backend: &str) {
    check_sizes_and_argument_bits(compile_fn);
    check_launches_in_a_loop(compile_fn);
    check_many_arguments(compile_fn);
    check_failed_launch_traps(compile_fn);
    check_missing_binding(compile_fn, backend);
    check_kernels_are_skipped(compile_fn);
    check_launch_without_arguments(compile_fn);
}
