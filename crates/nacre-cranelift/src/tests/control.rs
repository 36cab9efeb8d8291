//! Control flow, memory access, calls between IR functions, external calls and trap
//! propagation.

use super::*;
use nacre_backend::{BackendError, ExternAddr};
use nacre_ir::semantics;
use nacre_ir::{BinaryOp, CmpOp, Const, ExternFunc, ExternId, FuncId, Trap};

fn int(b: &mut FunctionBuilder<'_>, ty: Type, v: i64) -> Value {
    b.constant(Const {
        ty,
        bits: semantics::normalize(ty, v as u128),
    })
}

/// `fib(n)` by iteration: a loop whose block parameters carry `(a, b, i)`.
fn iterative_fib() -> Function {
    function("fib", &[Type::U64], Some(Type::U64), |b, p| {
        let header = b.create_block();
        let a = b.append_block_param(header, Type::U64);
        let c = b.append_block_param(header, Type::U64);
        let i = b.append_block_param(header, Type::U64);
        let body = b.create_block();
        let exit = b.create_block();
        let zero = int(b, Type::U64, 0);
        let one = int(b, Type::U64, 1);
        b.jump(header, vec![zero, one, p[0]]);
        b.switch_to_block(header);
        let done = b.cmp(CmpOp::Eq, i, zero);
        b.branch(done, exit, vec![], body, vec![]);
        b.switch_to_block(body);
        let next = b.binary(BinaryOp::Add, a, c);
        let one = int(b, Type::U64, 1);
        let i1 = b.binary(BinaryOp::Sub, i, one);
        b.jump(header, vec![c, next, i1]);
        b.switch_to_block(exit);
        b.ret(Some(a));
    })
}

#[test]
fn loop_with_block_params_fibonacci() {
    for opt in OPT_LEVELS {
        let exe = compile_fn(&backend(opt), iterative_fib());
        let (mut a, mut c) = (0u64, 1u64);
        for n in 0..94 {
            assert_eq!(exe.call(&[n]), Ok(a), "fib({n})");
            (a, c) = (c, a.wrapping_add(c));
        }
        // SAFETY: `fib` is `fn(u64) -> u64`.
        let f = unsafe {
            std::mem::transmute::<*const u8, extern "C" fn(u64, *mut u32) -> u64>(
                exe.native_entry().expect("native"),
            )
        };
        let mut status = 0;
        assert_eq!(f(90, &mut status), 2880067194370816120);
        assert_eq!(status, 0);
    }
}

#[test]
fn gcd_with_remainder_in_a_loop() {
    let f = function("gcd", &[Type::I32, Type::I32], Some(Type::I32), |b, p| {
        let header = b.create_block();
        let x = b.append_block_param(header, Type::I32);
        let y = b.append_block_param(header, Type::I32);
        let body = b.create_block();
        let exit = b.create_block();
        b.jump(header, vec![p[0], p[1]]);
        b.switch_to_block(header);
        let zero = int(b, Type::I32, 0);
        let done = b.cmp(CmpOp::Eq, y, zero);
        b.branch(done, exit, vec![], body, vec![]);
        b.switch_to_block(body);
        let r = b.binary(BinaryOp::Rem, x, y);
        b.jump(header, vec![y, r]);
        b.switch_to_block(exit);
        let r = b.unary(nacre_ir::UnaryOp::Abs, x);
        b.ret(Some(r));
    });
    for opt in OPT_LEVELS {
        let exe = compile_fn(&backend(opt), f.clone());
        for (a, c, want) in [
            (48, 18, 6),
            (17, 5, 1),
            (0, 9, 9),
            (-12, 8, 4),
            (1071, 462, 21),
        ] {
            let args = [a as u32 as u64, c as u32 as u64];
            assert_eq!(exe.call(&args), Ok(want), "gcd({a}, {c})");
        }
    }
}

#[test]
fn array_sum_over_a_rust_vec() {
    let f = function(
        "sum",
        &[Type::ptr(Scalar::I64), Type::U32],
        Some(Type::I64),
        |b, p| {
            let header = b.create_block();
            let i = b.append_block_param(header, Type::U32);
            let acc = b.append_block_param(header, Type::I64);
            let body = b.create_block();
            let exit = b.create_block();
            let zero = int(b, Type::U32, 0);
            let zero64 = int(b, Type::I64, 0);
            b.jump(header, vec![zero, zero64]);
            b.switch_to_block(header);
            let more = b.cmp(CmpOp::Lt, i, p[1]);
            b.branch(more, body, vec![], exit, vec![]);
            b.switch_to_block(body);
            let ptr = b.elem_ptr(p[0], i);
            let x = b.load(ptr);
            let acc1 = b.binary(BinaryOp::Add, acc, x);
            let one = int(b, Type::U32, 1);
            let i1 = b.binary(BinaryOp::Add, i, one);
            b.jump(header, vec![i1, acc1]);
            b.switch_to_block(exit);
            b.ret(Some(acc));
        },
    );
    let data: Vec<i64> = (1..=1000)
        .map(|x| x * if x % 3 == 0 { -1 } else { 1 })
        .collect();
    let want: i64 = data.iter().sum();
    for opt in OPT_LEVELS {
        let exe = compile_fn(&backend(opt), f.clone());
        let args = [data.as_ptr() as u64, data.len() as u64];
        assert_eq!(exe.call(&args), Ok(want as u64));
        assert_eq!(exe.call(&[data.as_ptr() as u64, 0]), Ok(0));
    }
}

#[test]
fn stores_through_pointers_with_signed_indices() {
    // fn put(p: ptr<u16>, i: i8, v: u16) { p[i] = v } -- called with p in the middle of a Vec.
    let f = function(
        "put",
        &[Type::ptr(Scalar::U16), Type::I8, Type::U16],
        None,
        |b, p| {
            let ptr = b.elem_ptr(p[0], p[1]);
            b.store(ptr, p[2]);
            b.ret(None);
        },
    );
    for opt in OPT_LEVELS {
        let exe = compile_fn(&backend(opt), f.clone());
        let mut data = vec![0u16; 9];
        let mid = data[4..].as_mut_ptr() as u64;
        assert_eq!(
            exe.call(&[
                mid,
                (semantics::normalize(Type::I8, u128::from(-3i64 as u64)) as u64),
                0xbeef
            ]),
            Ok(0)
        );
        assert_eq!(exe.call(&[mid, 2, 0x1234]), Ok(0));
        assert_eq!(data, [0, 0xbeef, 0, 0, 0, 0, 0x1234, 0, 0]);
    }
}

#[test]
fn parallel_block_argument_swaps() {
    // loop(a, b, n): if n == 0 { return a * 1000 + b } else { loop(b, a, n - 1) }
    let f = function(
        "swap",
        &[Type::I64, Type::I64, Type::I64],
        Some(Type::I64),
        |b, p| {
            let header = b.create_block();
            let x = b.append_block_param(header, Type::I64);
            let y = b.append_block_param(header, Type::I64);
            let n = b.append_block_param(header, Type::I64);
            let body = b.create_block();
            let exit = b.create_block();
            b.jump(header, vec![p[0], p[1], p[2]]);
            b.switch_to_block(header);
            let zero = int(b, Type::I64, 0);
            let done = b.cmp(CmpOp::Eq, n, zero);
            b.branch(done, exit, vec![], body, vec![]);
            b.switch_to_block(body);
            let one = int(b, Type::I64, 1);
            let n1 = b.binary(BinaryOp::Sub, n, one);
            b.jump(header, vec![y, x, n1]);
            b.switch_to_block(exit);
            let k = int(b, Type::I64, 1000);
            let hi = b.binary(BinaryOp::Mul, x, k);
            let r = b.binary(BinaryOp::Add, hi, y);
            b.ret(Some(r));
        },
    );
    for opt in OPT_LEVELS {
        let exe = compile_fn(&backend(opt), f.clone());
        assert_eq!(exe.call(&[1, 2, 0]), Ok(1002));
        assert_eq!(exe.call(&[1, 2, 1]), Ok(2001));
        assert_eq!(exe.call(&[1, 2, 7]), Ok(2001));
        assert_eq!(exe.call(&[1, 2, 10]), Ok(1002));
    }
}

#[test]
fn branch_to_one_block_with_different_arguments() {
    // fn pick(c: bool, x: i32, y: i32) -> i32 { join(if c { x } else { y }) }
    let f = function(
        "pick",
        &[Type::BOOL, Type::I32, Type::I32],
        Some(Type::I32),
        |b, p| {
            let join = b.create_block();
            let v = b.append_block_param(join, Type::I32);
            b.branch(p[0], join, vec![p[1]], join, vec![p[2]]);
            b.switch_to_block(join);
            b.ret(Some(v));
        },
    );
    for opt in OPT_LEVELS {
        let exe = compile_fn(&backend(opt), f.clone());
        assert_eq!(exe.call(&[1, 10, 20]), Ok(10));
        assert_eq!(exe.call(&[0, 10, 20]), Ok(20));
    }
}

#[test]
fn entry_block_that_is_a_loop_header() {
    // entry(n, acc): if n == 0 { exit(acc) } else { entry(n - 1, acc + n) }
    let f = function("tri", &[Type::U32, Type::U32], Some(Type::U32), |b, p| {
        let entry = b.current_block().expect("entry");
        let body = b.create_block();
        let exit = b.create_block();
        let zero = int(b, Type::U32, 0);
        let done = b.cmp(CmpOp::Eq, p[0], zero);
        b.branch(done, exit, vec![], body, vec![]);
        b.switch_to_block(body);
        let one = int(b, Type::U32, 1);
        let n1 = b.binary(BinaryOp::Sub, p[0], one);
        let acc = b.binary(BinaryOp::Add, p[1], p[0]);
        b.jump(entry, vec![n1, acc]);
        b.switch_to_block(exit);
        b.ret(Some(p[1]));
    });
    for opt in OPT_LEVELS {
        let exe = compile_fn(&backend(opt), f.clone());
        assert_eq!(exe.call(&[100, 0]), Ok(5050));
        assert_eq!(exe.call(&[0, 7]), Ok(7));
    }
}

#[test]
fn layout_order_differs_from_dominance_and_dead_blocks_are_skipped() {
    // entry -> late (defines v) -> early (uses v); `early` is laid out before `late`, and an
    // unreachable block uses a value that is never defined on any path.
    let f = function("order", &[Type::I32], Some(Type::I32), |b, p| {
        let early = b.create_block();
        let dead = b.create_block();
        let late = b.create_block();
        b.jump(late, vec![]);
        b.switch_to_block(late);
        let two = int(b, Type::I32, 2);
        let v = b.binary(BinaryOp::Mul, p[0], two);
        b.jump(early, vec![]);
        b.switch_to_block(early);
        let r = b.binary(BinaryOp::Add, v, p[0]);
        b.ret(Some(r));
        b.switch_to_block(dead);
        let w = b.binary(BinaryOp::Add, v, v);
        b.ret(Some(w));
    });
    let exe = compile_fn(&backend(OptLevel::None), f);
    assert_eq!(exe.call(&[5]), Ok(15));
}

/// `fib(n)` by recursion: `if n < 2 { n } else { fib(n - 1) + fib(n - 2) }`.
fn recursive_fib(me: FuncId) -> Function {
    function("rfib", &[Type::I64], Some(Type::I64), |b, p| {
        let small = b.create_block();
        let big = b.create_block();
        let two = int(b, Type::I64, 2);
        let lt = b.cmp(CmpOp::Lt, p[0], two);
        b.branch(lt, small, vec![], big, vec![]);
        b.switch_to_block(small);
        b.ret(Some(p[0]));
        b.switch_to_block(big);
        let one = int(b, Type::I64, 1);
        let n1 = b.binary(BinaryOp::Sub, p[0], one);
        let n2 = b.binary(BinaryOp::Sub, p[0], two);
        let f1 = b.call(me, vec![n1], Some(Type::I64)).expect("result");
        let f2 = b.call(me, vec![n2], Some(Type::I64)).expect("result");
        let r = b.binary(BinaryOp::Add, f1, f2);
        b.ret(Some(r));
    })
}

#[test]
fn recursion() {
    for opt in OPT_LEVELS {
        let mut m = Module::new();
        let id = m.add_function(Function::default());
        m.functions[id] = recursive_fib(id);
        m.entry = Some(id);
        let exe = compile(&backend(opt), m);
        assert_eq!(exe.call(&[20]), Ok(6765));
        assert_eq!(exe.call(&[1]), Ok(1));
    }
}

/// `outer(a, b) = { *p = 1 ... }`: calls `middle`, which calls `inner`, which divides; the
/// caller writes through `p` after the call, which must not happen when the callee trapped.
fn trap_chain(rem: bool) -> Module {
    let mut m = Module::new();
    let outer_id = m.add_function(Function::default());
    let middle_id = m.add_function(Function::default());
    let inner_id = m.add_function(Function::default());
    let op = if rem { BinaryOp::Rem } else { BinaryOp::Div };
    m.functions[inner_id] = function("inner", &[Type::I32, Type::I32], Some(Type::I32), |b, p| {
        let r = b.binary(op, p[0], p[1]);
        b.ret(Some(r));
    });
    m.functions[middle_id] = function(
        "middle",
        &[Type::I32, Type::I32],
        Some(Type::I32),
        |b, p| {
            let r = b
                .call(inner_id, vec![p[0], p[1]], Some(Type::I32))
                .expect("result");
            let one = int(b, Type::I32, 1);
            let r = b.binary(BinaryOp::Add, r, one);
            b.ret(Some(r));
        },
    );
    let params = [Type::I32, Type::I32, Type::ptr(Scalar::I32)];
    m.functions[outer_id] = function("outer", &params, Some(Type::I32), |b, p| {
        let r = b
            .call(middle_id, vec![p[0], p[1]], Some(Type::I32))
            .expect("result");
        b.store(p[2], r);
        b.ret(Some(r));
    });
    m.entry = Some(outer_id);
    m
}

#[test]
fn traps_in_callees_propagate() {
    for opt in OPT_LEVELS {
        let be = backend(opt);
        for rem in [false, true] {
            let exe = compile(&be, trap_chain(rem));
            let mut out = -1i32;
            let p = &mut out as *mut i32 as u64;
            let want = if rem { 7 % 3 + 1 } else { 7 / 3 + 1 };
            assert_eq!(exe.call(&[7, 3, p]), Ok(want as u64));
            assert_eq!(out, want);
            out = -1;
            let trap = if rem {
                Trap::RemainderByZero
            } else {
                Trap::DivisionByZero
            };
            assert_eq!(exe.call(&[7, 0, p]), Err(trap));
            assert_eq!(out, -1, "code after a trapping call ran");
            // The same through the native entry: the status word carries the code.
            // SAFETY: `outer` is `fn(i32, i32, *mut i32) -> i32`.
            let f = unsafe {
                std::mem::transmute::<*const u8, extern "C" fn(i32, i32, *mut i32, *mut u32) -> i32>(
                    exe.native_entry().expect("native"),
                )
            };
            let mut status = 0;
            f(7, 0, &mut out, &mut status);
            assert_eq!(status, trap.code());
            assert_eq!(out, -1);
        }
    }
}

extern "C" fn mix(a: u8, b: i16, c: f64, d: bool) -> i64 {
    a as i64 * 1000 + b as i64 + c as i64 + d as i64 * 1_000_000
}

extern "C" fn negate_f32(x: f32) -> f32 {
    -x
}

extern "C" fn record(p: *mut u64, v: u64) {
    // SAFETY: the tests pass a valid pointer.
    unsafe { *p = v }
}

/// An interpreter trampoline the tests never use.
unsafe fn no_dyn_call(_addr: usize, _args: &[u64]) -> u64 {
    0
}

/// Declares extern `name` in `m` and links it to `addr` in `linkage`.
fn declare_extern(
    m: &mut Module,
    linkage: &mut Linkage,
    name: &str,
    params: &[Type],
    ret: Option<Type>,
    addr: usize,
) -> ExternId {
    let id = m.declare_extern(ExternFunc {
        name: name.into(),
        signature: Signature {
            params: params.to_vec(),
            ret,
        },
    });
    linkage.externs.insert(
        id,
        ExternAddr {
            addr,
            dyn_call: no_dyn_call,
        },
    );
    id
}

#[test]
fn extern_calls() {
    let mut m = Module::new();
    let mut linkage = Linkage::default();
    let mix_ty = [Type::U8, Type::I16, Type::F64, Type::BOOL];
    let mix_id = declare_extern(
        &mut m,
        &mut linkage,
        "mix",
        &mix_ty,
        Some(Type::I64),
        mix as *const () as usize,
    );
    let neg_id = declare_extern(
        &mut m,
        &mut linkage,
        "neg",
        &[Type::F32],
        Some(Type::F32),
        negate_f32 as *const () as usize,
    );
    let rec_ty = [Type::ptr(Scalar::U64), Type::U64];
    let rec_id = declare_extern(
        &mut m,
        &mut linkage,
        "record",
        &rec_ty,
        None,
        record as *const () as usize,
    );
    let params = [
        Type::U8,
        Type::I16,
        Type::F64,
        Type::BOOL,
        Type::ptr(Scalar::U64),
    ];
    let f = function("ext", &params, Some(Type::F32), |b, p| {
        let r = b
            .call_extern(mix_id, p[..4].to_vec(), Some(Type::I64))
            .expect("result");
        let r2 = b
            .call_extern(mix_id, p[..4].to_vec(), Some(Type::I64))
            .expect("result");
        let r = b.binary(BinaryOp::Add, r, r2);
        let ru = b.cast(r, Type::U64);
        b.call_extern(rec_id, vec![p[4], ru], None);
        let x = b.cast(p[2], Type::F32);
        let y = b
            .call_extern(neg_id, vec![x], Some(Type::F32))
            .expect("result");
        b.ret(Some(y));
    });
    let id = m.add_function(f);
    m.entry = Some(id);
    for opt in OPT_LEVELS {
        let exe = compile_linked(&backend(opt), m.clone(), &linkage);
        let mut out = 0u64;
        let args = [
            200,
            (semantics::normalize(Type::I16, u128::from(-5i64 as u64)) as u64),
            2.75f64.to_bits(),
            1,
        ];
        let p = &mut out as *mut u64 as u64;
        let got = exe
            .call(&[args[0], args[1], args[2], args[3], p])
            .expect("no trap");
        assert_eq!(f32::from_bits(got as u32), -2.75);
        assert_eq!(got >> 32, 0, "f32 results are zero-extended bits");
        assert_eq!(out, 2 * (200_000 - 5 + 2 + 1_000_000));
    }
    // Without the extern's address in the linkage the module does not compile.
    let verified = nacre_ir::verify(m).expect("valid IR");
    match backend(OptLevel::None).compile(&verified, &Linkage::default()) {
        Err(BackendError::Unsupported { backend, what }) => {
            assert_eq!(backend, "cranelift");
            assert!(what.contains("linkage"), "{what}");
        }
        Err(e) => panic!("expected Unsupported, got {e}"),
        Ok(_) => panic!("an extern without an address compiled"),
    }
}

#[test]
fn listing_is_kept_on_request() {
    let opts = CraneliftOptions {
        opt_level: OptLevel::Speed,
        keep_listing: true,
    };
    let be = CraneliftBackend::new(opts).expect("host");
    let exe = compile_fn(&be, iterative_fib());
    let listing = exe.listing().expect("listing kept");
    assert!(listing.contains("@fib"), "{listing}");
    assert!(listing.contains("function"), "{listing}");
    assert!(compile_fn(&backend(OptLevel::Speed), iterative_fib())
        .listing()
        .is_none());
}

#[test]
fn unsupported_modules_are_errors_and_the_backend_recovers() {
    let be = backend(OptLevel::None);
    let unsupported = |r: Result<Arc<dyn Executable>, BackendError>| {
        matches!(
            r,
            Err(BackendError::Unsupported {
                backend: "cranelift",
                ..
            })
        )
    };
    // A GPU kernel as the entry.
    let mut kernel = function("kernel", &[Type::I32], None, |b, _| {
        b.ret(None);
    });
    kernel.kind = FuncKind::Kernel;
    let m = nacre_ir::verify(module(kernel.clone(), Vec::new())).expect("verifies");
    assert!(unsupported(be.compile(&m, &Linkage::default())));
    // A host function calling a kernel: fails halfway through translation.
    let mut m = Module::new();
    let host = m.add_function(Function::default());
    let k = m.add_function(kernel);
    m.functions[host] = function("host", &[Type::I32], Some(Type::I32), |b, p| {
        b.call(k, vec![p[0]], None);
        b.ret(Some(p[0]));
    });
    m.entry = Some(host);
    let m = nacre_ir::verify(m).expect("verifies");
    assert!(unsupported(be.compile(&m, &Linkage::default())));
    // The worker that failed is still usable.
    let exe = compile_fn(&be, iterative_fib());
    assert_eq!(exe.call(&[10]), Ok(55));
}

#[test]
fn void_and_bool_results_through_call() {
    let f = function("is_neg", &[Type::F64], Some(Type::BOOL), |b, p| {
        let zero = b.constant(Const {
            ty: Type::F64,
            bits: u128::from(0f64.to_bits()),
        });
        let r = b.cmp(CmpOp::Lt, p[0], zero);
        b.ret(Some(r));
    });
    let exe = compile_fn(&backend(OptLevel::Speed), f);
    assert_eq!(exe.call(&[(-1.5f64).to_bits()]), Ok(1));
    assert_eq!(exe.call(&[1.5f64.to_bits()]), Ok(0));
    assert_eq!(exe.call(&[f64::NAN.to_bits()]), Ok(0));
    let g = function("nothing", &[Type::I32], None, |b, _| {
        b.ret(None);
    });
    assert_eq!(compile_fn(&backend(OptLevel::Speed), g).call(&[3]), Ok(0));
}
