//! Kernel launches from host code: the launcher receives the sizes and the bits of every
//! argument, a failed launch traps and stops the caller, a module without a launch binding
//! is rejected, and kernels are never compiled.

use super::{backend, OPT_LEVELS};
use crate::OptLevel;
use nacre_backend::{Backend, BackendError, Executable};
use nacre_ir::{
    verify, BinaryOp, CmpOp, Const, Dim, FuncId, FuncKind, Function, FunctionBuilder, GpuIndex,
    LaunchBinding, Module, Scalar, Signature, Trap, Type, Value,
};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;

/// A constant.
fn konst(b: &mut FunctionBuilder<'_>, ty: Type, bits: u64) -> Value {
    b.constant(Const { ty, bits })
}

/// A host function built by `body` from the entry block's parameters.
fn function(
    name: &str,
    params: Vec<Type>,
    ret: Option<Type>,
    body: impl FnOnce(&mut FunctionBuilder<'_>, &[Value]),
) -> Function {
    super::function(name, &params, ret, body)
}

/// Verifies and compiles a module at `opt_level`.
fn try_compile(m: Module, opt_level: OptLevel) -> Result<Arc<dyn Executable>, BackendError> {
    backend(opt_level).compile(&verify(m).expect("valid IR"))
}

/// Verifies and compiles a module at every optimisation level.
fn compile_all(m: &Module) -> Vec<Arc<dyn Executable>> {
    OPT_LEVELS
        .iter()
        .map(|&o| try_compile(m.clone(), o).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// The handle the test launcher knows kernel `k` by.
const K_HANDLE: usize = 0x1000;
/// The handle of kernel `k2`.
const K2_HANDLE: usize = 0x2000;
/// The handle of kernel `k_wide`.
const WIDE_HANDLE: usize = 0x3000;
/// The handle of kernel `k0`, which has no parameters.
const K0_HANDLE: usize = 0x4000;
/// Parameters of `k_wide`: more than the interpreter encodes on the host stack.
const WIDE_PARAMS: usize = 20;

/// One launch as the launcher saw it.
#[derive(Clone, Debug, PartialEq)]
struct Record {
    handle: usize,
    dims: [u32; 6],
    args: Vec<u64>,
}

thread_local! {
    /// Launches made on this thread (compiled code calls the launcher on the caller's thread).
    static RECORDS: RefCell<Vec<Record>> = const { RefCell::new(Vec::new()) };
    /// The status the launcher writes (0: success).
    static FAIL: Cell<u32> = const { Cell::new(0) };
}

/// Takes the launches recorded so far.
fn take_records() -> Vec<Record> {
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
/// The `LaunchFn` contract: `dims` points to six `u32`s, `args` to one `u64` per parameter of
/// the kernel `handle` stands for, `status` to a writable status word.
unsafe extern "C" fn record_launch(
    handle: usize,
    dims: *const u32,
    args: *const u64,
    status: *mut u32,
) {
    // SAFETY: guaranteed by the caller (the launch contract).
    let (dims, args) = unsafe {
        (
            std::slice::from_raw_parts(dims, 6),
            std::slice::from_raw_parts(args, arity(handle)),
        )
    };
    let mut d = [0u32; 6];
    d.copy_from_slice(dims);
    RECORDS.with(|r| {
        r.borrow_mut().push(Record {
            handle,
            dims: d,
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
fn kernel(name: &str, params: Vec<Type>) -> Function {
    let mut k = Function::new(name, FuncKind::Kernel, Signature { params, ret: None });
    let mut b = FunctionBuilder::new(&mut k);
    b.create_entry_block();
    b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
    b.barrier();
    b.ret(None);
    k
}

/// The parameters of `k`: one of each kind of argument.
fn k_params() -> Vec<Type> {
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
struct Ids {
    /// `host(k's params.., gx: u32) -> i32`: launches `k` over `(gx, 2, 3) x (4, 5, 6)` with
    /// its first seven parameters, then stores `7.0` through the pointer and returns 1.
    host: FuncId,
    /// `looped(n: u32, data: ptr<u32>) -> u32`: for `i` in `0..n` launches `k2(i)` over
    /// `(data[i], 1, 1) x (i + 1, 1, 1)`; returns `n`.
    looped: FuncId,
    /// `outer(p: ptr<f32>) -> i32`: calls `host` with constants, then stores `9.0` at `p[1]`
    /// and returns `host`'s result plus 1.
    outer: FuncId,
    /// `wide(x: u16) -> u16`: launches `k2(x)` over `(x, 1, 1) x (1, 1, 1)`, then `k_wide`
    /// with `x + i` for `i` in `0..20`.
    wide: FuncId,
}

/// Builds the test module (entry `host`) with its kernels `k`, `k2` and `k_wide`.
fn launch_module() -> (Module, Ids) {
    let mut m = Module::new();
    let k = m.add_function(kernel("k", k_params()));
    let k2 = m.add_function(kernel("k2", vec![Type::U32]));
    let wide_k = m.add_function(kernel("k_wide", vec![Type::U16; WIDE_PARAMS]));
    let mut params = k_params();
    params.push(Type::U32);
    let host = m.add_function(function("host", params, Some(Type::I32), |b, p| {
        let sizes: Vec<_> = (2..=6).map(|n| konst(b, Type::U32, n)).collect();
        b.launch(
            k,
            [p[7], sizes[0], sizes[1]],
            [sizes[2], sizes[3], sizes[4]],
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
            b.launch(k2, [g, one, one], [next, one, one], vec![i]);
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
    m.launch = Some(LaunchBinding {
        launcher: record_launch,
        handles: HashMap::from([(k, K_HANDLE), (k2, K2_HANDLE), (wide_k, WIDE_HANDLE)]),
    });
    (
        m,
        Ids {
            host,
            looped,
            outer,
            wide,
        },
    )
}

/// The module with `entry` as its entry function.
fn with_entry(entry: impl FnOnce(&Ids) -> FuncId) -> Module {
    let (mut m, ids) = launch_module();
    m.entry = Some(entry(&ids));
    m
}

#[test]
fn launch_passes_sizes_and_argument_bits_exactly() {
    take_records();
    FAIL.with(|f| f.set(0));
    for exe in compile_all(&with_entry(|ids| ids.host)) {
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
                dims: [17, 2, 3, 4, 5, 6],
                args: args[..7].to_vec(),
            }]
        );
        assert_eq!(out[0], 7.0, "code after a successful launch runs");
    }
}

#[test]
fn launches_in_a_loop_with_sizes_from_data() {
    take_records();
    FAIL.with(|f| f.set(0));
    for exe in compile_all(&with_entry(|ids| ids.looped)) {
        let data = [5u32, 0, u32::MAX, 9];
        assert_eq!(exe.call(&[4, data.as_ptr() as u64]), Ok(4));
        let expected: Vec<Record> = (0u32..4)
            .map(|i| Record {
                handle: K2_HANDLE,
                dims: [data[i as usize], 1, 1, i + 1, 1, 1],
                args: vec![u64::from(i)],
            })
            .collect();
        assert_eq!(take_records(), expected);
        assert_eq!(exe.call(&[0, data.as_ptr() as u64]), Ok(0));
        assert!(take_records().is_empty());
    }
}

#[test]
fn many_arguments_are_passed_too() {
    take_records();
    FAIL.with(|f| f.set(0));
    for exe in compile_all(&with_entry(|ids| ids.wide)) {
        assert_eq!(exe.call(&[0xfffe]), Ok(0xfffe));
        let expected: Vec<u64> = (0..WIDE_PARAMS as u64)
            .map(|i| (0xfffe + i) & 0xffff)
            .collect();
        assert_eq!(
            take_records(),
            [
                Record {
                    handle: K2_HANDLE,
                    dims: [0xfffe, 1, 1, 1, 1, 1],
                    args: vec![0xfffe],
                },
                Record {
                    handle: WIDE_HANDLE,
                    dims: [1; 6],
                    args: expected,
                }
            ]
        );
    }
}

#[test]
fn a_failed_launch_traps_and_stops_the_caller() {
    take_records();
    for exe in compile_all(&with_entry(|ids| ids.outer)) {
        for (code, trap) in [
            (5, Trap::UnknownBuffer),
            (4, Trap::InvalidLaunch),
            (77, Trap::DeviceError),
        ] {
            FAIL.with(|f| f.set(code));
            let mut out = [0f32; 2];
            assert_eq!(exe.call(&[out.as_mut_ptr() as u64]), Err(trap));
            assert_eq!(
                out,
                [0.0, 0.0],
                "neither the callee nor the caller continues"
            );
            assert_eq!(take_records().len(), 1);
        }
        FAIL.with(|f| f.set(0));
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
}

#[test]
fn launches_without_a_binding_are_unsupported() {
    let unsupported = |m: Module| match try_compile(m, OptLevel::None) {
        Err(BackendError::Unsupported { backend, what }) => {
            assert_eq!(backend, "cranelift");
            assert!(what.contains("nacre-gpu"), "{what}");
            what
        }
        Err(e) => panic!("expected Unsupported, got {e}"),
        Ok(_) => panic!("expected Unsupported, got an executable"),
    };
    let mut m = with_entry(|ids| ids.host);
    m.launch = None;
    unsupported(m);
    let mut m = with_entry(|ids| ids.looped);
    if let Some(binding) = &mut m.launch {
        binding.handles.retain(|_, &mut h| h != K2_HANDLE);
    }
    let what = unsupported(m);
    assert!(what.contains("@k2"), "{what}");
    // A module without launches needs no binding, even when it has kernels.
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
    for exe in compile_all(&m) {
        assert_eq!(exe.call(&[3]), Ok(3));
    }
}

#[test]
fn kernels_are_skipped() {
    // The kernels' bodies use GPU intrinsics, which this backend does not support: the module
    // compiles only because they are skipped.
    let exe = backend(OptLevel::None)
        .compile(&verify(with_entry(|ids| ids.host)).expect("valid"))
        .expect("compiles");
    assert!(exe.native_entry().is_some());
    // A kernel cannot be the entry.
    let (mut m, _) = launch_module();
    m.entry = m.functions.keys().next();
    match try_compile(m, OptLevel::None) {
        Err(BackendError::Unsupported { what, .. }) => assert!(what.contains("kernel"), "{what}"),
        Err(e) => panic!("expected Unsupported, got {e}"),
        Ok(_) => panic!("a kernel entry compiled"),
    }
    // A host function cannot call a kernel.
    let (mut m, _) = launch_module();
    let k2 = m.functions.keys().nth(1).expect("kernel k2");
    let caller = m.add_function(function("caller", vec![Type::U32], None, |b, p| {
        b.call(k2, vec![p[0]], None);
        b.ret(None);
    }));
    m.entry = Some(caller);
    assert!(matches!(
        try_compile(m, OptLevel::None),
        Err(BackendError::Unsupported { .. })
    ));
}

#[test]
fn listing_shows_the_launch_call() {
    let be = crate::CraneliftBackend::new(crate::CraneliftOptions {
        keep_listing: true,
        ..crate::CraneliftOptions::default()
    })
    .expect("the host is supported");
    let exe = be
        .compile(&verify(with_entry(|ids| ids.looped)).expect("valid"))
        .expect("compiles");
    let listing = exe.listing().expect("listing kept");
    assert!(listing.contains("call_indirect"), "{listing}");
    assert!(listing.contains("stack_addr"), "{listing}");
    assert!(
        !listing.contains("@k:"),
        "kernels are not compiled:\n{listing}"
    );
}

#[test]
fn launch_without_arguments() {
    let mut m = Module::new();
    let k0 = m.add_function(kernel("k0", vec![]));
    let f = m.add_function(function("f", vec![Type::U32], None, |b, p| {
        let one = konst(b, Type::U32, 1);
        b.launch(k0, [p[0], one, one], [one, one, p[0]], vec![]);
        b.ret(None);
    }));
    m.entry = Some(f);
    m.launch = Some(LaunchBinding {
        launcher: record_launch,
        handles: HashMap::from([(k0, K0_HANDLE)]),
    });
    for exe in compile_all(&m) {
        take_records();
        FAIL.with(|f| f.set(0));
        assert_eq!(exe.call(&[3]), Ok(0));
        assert_eq!(
            take_records(),
            [Record {
                handle: K0_HANDLE,
                dims: [3, 1, 1, 1, 1, 3],
                args: vec![],
            }]
        );
    }
}
