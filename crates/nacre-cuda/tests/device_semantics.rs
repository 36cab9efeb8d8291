//! The generated CUDA C has Nacre's semantics on a real GPU: every operator on every type,
//! fused multiply-add, comparisons, selects and casts between all scalar types run on edge
//! values (denormals, NaNs, infinities, signed zeros, integer limits) and are compared with
//! [`nacre_ir::semantics`], bit for bit (any NaN matches any NaN). Division by zero traps
//! through the status word, from a kernel and through a device function.
//!
//! Each case is a device function; one kernel, `dispatch(sels, args, out, n)`, runs case
//! `sels[i]` on the three argument slots `args[3i..3i + 3]` in thread `i` and stores the result
//! into the low bytes of the zeroed `out[i]`, so one NVRTC compilation and one launch cover
//! every case. Without a CUDA device (or NVRTC) the tests say so on stderr and pass.
//!
//! The math functions are not exact: their test measures the largest distance in ulps from
//! the reference (`libm`) over edge and random inputs, with CUDA's accurate library (checked
//! against the bounds of the CUDA Programming Guide plus one ulp for the reference's own
//! error) and with fast math (reported only), and writes the table to the file named by
//! `NACRE_ACCURACY_OUT` when it is set.

use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use nacre_cuda::codegen::{emit_kernel_with, CudaDialect};
use nacre_cuda::nvrtc::{self, Arch};
use nacre_ir::semantics::{self, normalize};
use nacre_ir::{
    BinaryOp, Block, CmpOp, Const, FuncId, FuncKind, Function, FunctionBuilder, MathFn, MathFn2,
    Module, Scalar, Signature, Trap, Type, UnaryOp, Value, VerifiedModule,
};
use std::sync::Arc;

/// The GPU and its compute capability, or `None` (with the reason on stderr).
fn gpu(test: &str) -> Option<(Arc<CudaContext>, Arch)> {
    // SAFETY: probing loads and unloads libcuda; its initialisers have no preconditions.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        eprintln!("{test} skipped: the CUDA driver library (libcuda) is not installed");
        return None;
    }
    if let Err(e) = nvrtc::available() {
        eprintln!("{test} skipped: {e}");
        return None;
    }
    let ctx = match CudaContext::new(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("{test} skipped: no CUDA device ({e})");
            return None;
        }
    };
    let (major, minor) = ctx.compute_capability().expect("compute capability");
    Some((ctx, Arch::new(major as u32, minor as u32)))
}

fn konst(b: &mut FunctionBuilder<'_>, ty: Type, bits: u64) -> Value {
    b.constant(Const {
        ty,
        bits: u128::from(bits),
    })
}

/// The expected result of a case for given arguments.
type Expected = Box<dyn Fn(&[u64]) -> Result<u64, Trap>>;

/// One device function under test.
struct Case {
    what: String,
    ret: Scalar,
    inputs: Vec<Vec<u64>>,
    expected: Expected,
}

#[derive(Default)]
struct Suite {
    functions: Vec<Function>,
    cases: Vec<Case>,
}

impl Suite {
    fn case(
        &mut self,
        what: impl Into<String>,
        params: &[Scalar],
        ret: Scalar,
        body: impl FnOnce(&mut FunctionBuilder<'_>, &[Value]) -> Value,
        inputs: Vec<Vec<u64>>,
        expected: impl Fn(&[u64]) -> Result<u64, Trap> + 'static,
    ) {
        let params: Vec<Type> = params.iter().map(|&s| Type::Scalar(s)).collect();
        let name = format!("case{}", self.functions.len());
        let f = FunctionBuilder::build(
            &name,
            FuncKind::Host,
            &params,
            Some(Type::Scalar(ret)),
            |b, p| {
                let r = body(b, p);
                b.ret(Some(r));
            },
        );
        self.functions.push(f);
        self.cases.push(Case {
            what: what.into(),
            ret,
            inputs,
            expected: Box::new(expected),
        });
    }
}

/// `dispatch(sels: ptr<u32>, args: ptr<u64>, out: ptr<u64>, n: u32)` over `sigs` (case `k`
/// is function `k + 1`).
fn dispatcher(sigs: &[Signature]) -> Function {
    let u64p = Type::ptr(Scalar::U64);
    let mut f = Function::new(
        "dispatch",
        FuncKind::Kernel,
        Signature {
            params: vec![Type::ptr(Scalar::U32), u64p, u64p, Type::U32],
            ret: None,
        },
    );
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let (sels, args, out, n) = (p[0], p[1], p[2], p[3]);
    // `ptr<u64>` to `ptr<T>` goes through the address.
    let retype = |b: &mut FunctionBuilder<'_>, p: Value, s: Scalar| {
        let addr = b.cast(p, Type::U64);
        b.cast(addr, Type::ptr(s))
    };
    let bx = b.gpu_index(nacre_ir::GpuIndex::BlockIdx, nacre_ir::Dim::X);
    let bd = b.gpu_index(nacre_ir::GpuIndex::BlockDim, nacre_ir::Dim::X);
    let tx = b.gpu_index(nacre_ir::GpuIndex::ThreadIdx, nacre_ir::Dim::X);
    let base = b.binary(BinaryOp::Mul, bx, bd);
    let i = b.binary(BinaryOp::Add, base, tx);
    let inside = b.cmp(CmpOp::Lt, i, n);
    let body = b.create_block();
    let done = b.create_block();
    b.branch(inside, body, vec![], done, vec![]);
    b.switch_to_block(body);
    let sel_slot = b.elem_ptr(sels, i);
    let sel = b.load(sel_slot);
    let three = konst(&mut b, Type::U32, 3);
    let row = b.binary(BinaryOp::Mul, i, three);
    let row = b.elem_ptr(args, row);
    let out = b.elem_ptr(out, i);
    let checks: Vec<Block> = (0..=sigs.len()).map(|_| b.create_block()).collect();
    b.jump(checks[0], vec![]);
    for (k, sig) in sigs.iter().enumerate() {
        b.switch_to_block(checks[k]);
        let kv = konst(&mut b, Type::U32, k as u64);
        let hit = b.cmp(CmpOp::Eq, sel, kv);
        let case = b.create_block();
        b.branch(hit, case, vec![], checks[k + 1], vec![]);
        b.switch_to_block(case);
        let mut values = Vec::new();
        for (j, &ty) in sig.params.iter().enumerate() {
            let idx = konst(&mut b, Type::U32, j as u64);
            let slot = b.elem_ptr(row, idx);
            let s = ty.scalar().expect("scalar parameters");
            let typed = retype(&mut b, slot, s);
            values.push(b.load(typed));
        }
        let ret = sig.ret.expect("cases return a value");
        let r = b
            .call(FuncId::from_u32(k as u32 + 1), values, Some(ret))
            .expect("call result");
        let s = ret.scalar().expect("scalar results");
        let typed = retype(&mut b, out, s);
        b.store(typed, r);
        b.jump(done, vec![]);
    }
    b.switch_to_block(checks[sigs.len()]);
    b.jump(done, vec![]);
    b.switch_to_block(done);
    b.ret(None);
    f
}

/// A verified module: the dispatcher (function 0, the entry) and the cases.
fn dispatch_module(functions: Vec<Function>) -> VerifiedModule {
    let sigs: Vec<Signature> = functions.iter().map(|f| f.signature.clone()).collect();
    let mut m = Module::new();
    m.entry = Some(m.add_function(dispatcher(&sigs)));
    for f in functions {
        m.add_function(f);
    }
    let verified = nacre_ir::verify(m).unwrap_or_else(|e| panic!("test IR is invalid: {e}"));
    // Half-precision arithmetic computes in f32, as the engine widens it.
    nacre_ir::transform::widen_half(verified)
}

/// Compiles `module`'s dispatcher for `arch` and runs `rows` of `(selector, args)`; returns
/// the output slots and the status word.
fn run(
    ctx: &Arc<CudaContext>,
    arch: Arch,
    module: &VerifiedModule,
    rows: &[(u32, [u64; 3])],
    dialect: CudaDialect,
) -> (Vec<u64>, u32) {
    let src =
        emit_kernel_with(module, FuncId::from_u32(0), dialect).unwrap_or_else(|e| panic!("{e}"));
    let start = std::time::Instant::now();
    let cubin = nvrtc::compile_cubin(&src, arch).unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "{} device functions: {} lines of CUDA C compiled in {:.0} ms",
        module.module().functions.len() - 1,
        src.source.lines().count(),
        start.elapsed().as_secs_f64() * 1e3
    );
    let cu = ctx
        .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
        .expect("load cubin");
    let f = cu.load_function(&src.name).expect("kernel symbol");
    let stream = ctx.default_stream();
    let sels: Vec<u32> = rows.iter().map(|r| r.0).collect();
    let args: Vec<u64> = rows.iter().flat_map(|r| r.1).collect();
    let n = rows.len() as u32;
    let sels_d = stream.clone_htod(&sels).expect("copy");
    let args_d = stream.clone_htod(&args).expect("copy");
    let mut out_d = stream.alloc_zeros::<u64>(rows.len()).expect("alloc");
    let mut status_d = stream.alloc_zeros::<u32>(1).expect("alloc");
    let cfg = LaunchConfig {
        grid_dim: (n.div_ceil(128), 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut launch = stream.launch_builder(&f);
    launch
        .arg(&sels_d)
        .arg(&args_d)
        .arg(&mut out_d)
        .arg(&n)
        .arg(&mut status_d);
    // SAFETY: the kernel's parameters are (u32 *, u64 *, u64 *, u32, u32 *), as pushed; every
    // thread reads and writes only inside the buffers for its row `i < n`.
    unsafe { launch.launch(cfg) }.expect("launch");
    let out = stream.clone_dtoh(&out_d).expect("copy back");
    let status = stream.clone_dtoh(&status_d).expect("copy back")[0];
    (out, status)
}

/// Edge values of a scalar type, encoded: integer limits and neighbours, and for floats
/// signed zeros, denormals, NaNs (canonical and others), infinities and extremes.
fn values(s: Scalar) -> Vec<u64> {
    let mut v: Vec<u64> = match s {
        Scalar::Bool => vec![0, 1],
        Scalar::F32 => {
            let mut v: Vec<u64> = floats()
                .into_iter()
                .map(|x| u64::from((x as f32).to_bits()))
                .collect();
            v.extend([
                0xffc0_0000,
                0x7f80_0001,
                u64::from(1e-40f32.to_bits()),
                u64::from(f32::MIN_POSITIVE.to_bits()),
                u64::from(f32::MAX.to_bits()),
                u64::from(16_777_217f32.to_bits()),
            ]);
            v
        }
        Scalar::F64 => {
            let mut v: Vec<u64> = floats().into_iter().map(f64::to_bits).collect();
            v.extend([
                0xfff8_0000_0000_0000,
                0x7ff0_0000_0000_0001,
                5e-324f64.to_bits(),
                f64::MAX.to_bits(),
                9_007_199_254_740_993f64.to_bits(),
            ]);
            v
        }
        Scalar::F16 | Scalar::BF16 => {
            let mut v: Vec<u64> = floats()
                .into_iter()
                .map(|x| nacre_ir::semantics::f32_to_half(s, x as f32) as u64)
                .collect();
            // Quiet and signaling NaNs, the smallest subnormal, the largest finite value.
            v.extend(if s == Scalar::F16 {
                [0xfe00, 0x7c01, 0x0001, 0x7bff]
            } else {
                [0xffc0, 0x7f81, 0x0001, 0x7f7f]
            });
            v
        }
        _ => [
            0i128,
            1,
            2,
            7,
            31,
            32,
            63,
            64,
            -1,
            -2,
            -128,
            127,
            255,
            0x8000,
            0xffff,
            i32::MAX as i128,
            i32::MIN as i128,
            u32::MAX as i128,
            i64::MAX as i128,
            i64::MIN as i128,
            -987_654_321,
        ]
        .iter()
        .map(|&i| normalize(Type::Scalar(s), i as u128) as u64)
        .collect(),
    };
    v.sort_unstable();
    v.dedup();
    v
}

fn floats() -> Vec<f64> {
    vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -2.5,
        2.5,
        0.1,
        3.0,
        -7.75,
        1e10,
        -3e9,
        2147483648.0,
        -2147483649.0,
        4294967296.0,
        1.8446744073709552e19,
        -9.3e18,
        300.7,
        -129.5,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ]
}

/// Every combination of one value per list.
fn product(lists: &[Vec<u64>]) -> Vec<Vec<u64>> {
    let mut out = vec![Vec::new()];
    for list in lists {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                list.iter().map(move |&v| {
                    let mut row = prefix.clone();
                    row.push(v);
                    row
                })
            })
            .collect();
    }
    out
}

/// True if `got` is an acceptable result where `want` is expected (any NaN matches any NaN).
fn same(s: Scalar, got: u64, want: u64) -> bool {
    match s {
        Scalar::F32 => {
            let (g, w) = (f32::from_bits(got as u32), f32::from_bits(want as u32));
            (g.is_nan() && w.is_nan()) || got == want
        }
        Scalar::F64 => {
            let (g, w) = (f64::from_bits(got), f64::from_bits(want));
            (g.is_nan() && w.is_nan()) || got == want
        }
        Scalar::F16 | Scalar::BF16 => {
            let wide = |bits: u64| nacre_ir::semantics::half_to_f32(s, bits.into());
            (wide(got).is_nan() && wide(want).is_nan()) || got == want
        }
        _ => got == want,
    }
}

fn unary_ok(op: UnaryOp, s: Scalar) -> bool {
    op.accepts(s)
}

/// Every valid operator, comparison, select and cast, on edge values.
fn all_cases() -> Suite {
    let mut suite = Suite::default();
    // Arguments travel as 64-bit words; the 128-bit integers (which go through memory) are
    // checked by the corpus's `wide` cases instead.
    for s in Scalar::HOST {
        let t = Type::Scalar(s);
        let vals = values(s);
        for op in UnaryOp::ALL {
            if unary_ok(op, s) {
                suite.case(
                    format!("{} {s}", op.name()),
                    &[s],
                    s,
                    |b, p| b.unary(op, p[0]),
                    product(std::slice::from_ref(&vals)),
                    move |a| Ok(semantics::unary(op, s, a[0].into()) as u64),
                );
            }
        }
        for op in BinaryOp::ALL {
            if !op.accepts(s) {
                continue;
            }
            let traps = s.is_int() && matches!(op, BinaryOp::Div | BinaryOp::Rem);
            let divisors: Vec<u64> = vals.iter().copied().filter(|&v| !traps || v != 0).collect();
            suite.case(
                format!("{} {s}", op.name()),
                &[s, s],
                s,
                |b, p| b.binary(op, p[0], p[1]),
                product(&[vals.clone(), divisors]),
                move |a| semantics::binary(op, s, a[0].into(), a[1].into()).map(|r| r as u64),
            );
        }
        if s.is_float() {
            let few: Vec<u64> = vals.iter().copied().step_by(2).collect();
            suite.case(
                format!("fma {s}"),
                &[s, s, s],
                s,
                |b, p| b.fma(p[0], p[1], p[2]),
                product(&[few.clone(), few.clone(), few]),
                move |a| Ok(semantics::fma(s, a[0].into(), a[1].into(), a[2].into()) as u64),
            );
        }
        for op in CmpOp::ALL {
            suite.case(
                format!("{} {s}", op.name()),
                &[s, s],
                Scalar::Bool,
                |b, p| b.cmp(op, p[0], p[1]),
                product(&[vals.clone(), vals.clone()]),
                move |a| {
                    Ok(u64::from(semantics::compare(
                        op,
                        t,
                        a[0].into(),
                        a[1].into(),
                    )))
                },
            );
        }
        let few: Vec<u64> = vals.iter().copied().take(6).collect();
        suite.case(
            format!("select {s}"),
            &[Scalar::Bool, s, s],
            s,
            |b, p| b.select(p[0], p[1], p[2]),
            product(&[vec![0, 1], few.clone(), few]),
            |a| Ok(if a[0] & 1 != 0 { a[1] } else { a[2] }),
        );
        for to in Scalar::HOST {
            let to_t = Type::Scalar(to);
            suite.case(
                format!("cast {s} to {to}"),
                &[s],
                to,
                |b, p| b.cast(p[0], to_t),
                product(std::slice::from_ref(&vals)),
                move |a| Ok(semantics::cast(t, to_t, a[0].into()) as u64),
            );
        }
    }
    suite
}

#[test]
fn every_operator_matches_the_reference_semantics() {
    let Some((ctx, arch)) = gpu("device semantics") else {
        return;
    };
    let suite = all_cases();
    let mut rows: Vec<(u32, [u64; 3])> = Vec::new();
    let mut owners: Vec<(usize, usize)> = Vec::new();
    for (k, case) in suite.cases.iter().enumerate() {
        for (r, input) in case.inputs.iter().enumerate() {
            let mut slots = [0u64; 3];
            slots[..input.len()].copy_from_slice(input);
            rows.push((k as u32, slots));
            owners.push((k, r));
        }
    }
    let module = dispatch_module(suite.functions);
    let (out, status) = run(&ctx, arch, &module, &rows, CudaDialect::default());
    assert_eq!(status, 0, "no case traps");
    let mut failures = Vec::new();
    for (&(k, r), &got) in owners.iter().zip(&out) {
        let case = &suite.cases[k];
        let args = &case.inputs[r];
        let want = (case.expected)(args).expect("trapping inputs are left out");
        if !same(case.ret, got, want) {
            failures.push(format!(
                "{} on {args:x?}: got {got:#x}, want {want:#x}",
                case.what
            ));
        }
    }
    eprintln!(
        "{} cases, {} evaluations on the GPU ({arch})",
        suite.cases.len(),
        rows.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} evaluations differ:\n{}",
        failures.len(),
        rows.len(),
        failures
            .iter()
            .take(60)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn division_by_zero_traps_through_the_status_word() {
    let Some((ctx, arch)) = gpu("device traps") else {
        return;
    };
    for (op, trap) in [
        (BinaryOp::Div, Trap::DivisionByZero),
        (BinaryOp::Rem, Trap::RemainderByZero),
    ] {
        for s in [Scalar::I32, Scalar::U8, Scalar::I64] {
            let mut suite = Suite::default();
            suite.case(
                "",
                &[s, s],
                s,
                |b, p| b.binary(op, p[0], p[1]),
                vec![],
                |_| Ok(0),
            );
            // Case 1 reaches the division through another device function.
            suite.case(
                "",
                &[s, s],
                s,
                |b, p| {
                    b.call(FuncId::from_u32(1), vec![p[0], p[1]], Some(Type::Scalar(s)))
                        .expect("a result")
                },
                vec![],
                |_| Ok(0),
            );
            let module = dispatch_module(suite.functions);
            let ok_rows: Vec<(u32, [u64; 3])> = vec![(0, [7, 2, 0]), (1, [9, 3, 0])];
            let (out, status) = run(&ctx, arch, &module, &ok_rows, CudaDialect::default());
            assert_eq!(status, 0, "{} {s}", op.name());
            let want = |a: u64, b: u64| {
                semantics::binary(op, s, a.into(), b.into()).expect("no trap") as u64
            };
            assert_eq!(out, [want(7, 2), want(9, 3)], "{} {s}", op.name());
            for sel in [0, 1] {
                let rows: Vec<(u32, [u64; 3])> = vec![(sel, [7, 2, 0]), (sel, [5, 0, 0])];
                let (_, status) = run(&ctx, arch, &module, &rows, CudaDialect::default());
                assert_eq!(
                    Trap::from_code(status),
                    Some(trap),
                    "{} {s} by zero, case {sel}",
                    op.name()
                );
            }
        }
    }
}

/// The bound in ulps of CUDA's accurate library for a function and type, from the CUDA
/// Programming Guide's tables (as against the exact result; the test adds one ulp for the
/// reference's own error).
fn cuda_bound(name: &str, s: Scalar) -> u64 {
    let f64 = s == Scalar::F64;
    let (single, double) = match name {
        "exp" | "exp2" => (2, 1),
        "exp_m1" | "ln" | "log2" | "ln_1p" | "cbrt" => (1, 1),
        "log10" => (2, 1),
        "sin" | "cos" | "asin" | "acos" | "atan" | "erf" => (2, 2),
        "tan" => (4, 2),
        "sinh" => (3, 2),
        "cosh" | "tanh" => (2, 1),
        "asinh" | "acosh" => (4, 3),
        "atanh" => (3, 2),
        "pow" => (4, 2),
        _ => (3, 2),
    };
    if f64 {
        double
    } else {
        single
    }
}

/// Inputs of a math function: the edge values and 1500 values of the scale the functions
/// are used at (|x| from 1e-6 to 1e3, both signs), with `y` for two-argument functions.
fn math_inputs(s: Scalar, arity: usize) -> Vec<Vec<u64>> {
    let enc = |x: f64| {
        if s == Scalar::F32 {
            u64::from((x as f32).to_bits())
        } else {
            x.to_bits()
        }
    };
    let mut xs = values(s);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..1500 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let mag = 10f64.powf((state % 10_000) as f64 / 10_000.0 * 9.0 - 6.0);
        xs.push(enc(if state & (1 << 40) != 0 { -mag } else { mag }));
    }
    (0..xs.len())
        .map(|i| {
            let mut v = vec![xs[i]];
            if arity == 2 {
                v.push(xs[(i * 7 + 3) % xs.len()]);
            }
            v
        })
        .collect()
}

/// Every math function on `f32` and `f64`.
fn math_cases() -> Suite {
    let mut suite = Suite::default();
    for s in [Scalar::F32, Scalar::F64] {
        for f in MathFn::ALL {
            suite.case(
                format!("{} {s}", f.name()),
                &[s],
                s,
                |b, p| b.math(f, p[0]),
                math_inputs(s, 1),
                move |a| Ok(semantics::math(f, s, a[0].into()) as u64),
            );
        }
        for f in MathFn2::ALL {
            suite.case(
                format!("{} {s}", f.name()),
                &[s, s],
                s,
                |b, p| b.math2(f, p[0], p[1]),
                math_inputs(s, 2),
                move |a| Ok(semantics::math2(f, s, a[0].into(), a[1].into()) as u64),
            );
        }
    }
    suite
}

/// One row of the accuracy table: the case, its type, the largest ulps and where.
type UlpsRow = (String, Scalar, u64, String);

/// The largest ulps of each math case under `dialect`, with the worst input.
fn math_ulps(ctx: &Arc<CudaContext>, arch: Arch, dialect: CudaDialect) -> Vec<UlpsRow> {
    let suite = math_cases();
    let mut rows: Vec<(u32, [u64; 3])> = Vec::new();
    for (k, case) in suite.cases.iter().enumerate() {
        for input in &case.inputs {
            let mut slots = [0u64; 3];
            slots[..input.len()].copy_from_slice(input);
            rows.push((k as u32, slots));
        }
    }
    let cases = suite.cases;
    let module = dispatch_module(suite.functions);
    let (out, status) = run(ctx, arch, &module, &rows, dialect);
    assert_eq!(status, 0, "no math function traps");
    let mut worst: Vec<(u64, String)> = vec![(0, String::new()); cases.len()];
    for (&(k, slots), &got) in rows.iter().zip(&out) {
        let case = &cases[k as usize];
        let args = &slots[..case.inputs[0].len()];
        let want = (case.expected)(args).expect("math functions do not trap");
        let d = semantics::ulps(case.ret, got, want);
        if d > worst[k as usize].0 {
            worst[k as usize] = (d, format!("{args:x?}: got {got:#x}, want {want:#x}"));
        }
    }
    cases
        .iter()
        .zip(worst)
        .map(|(c, (d, at))| (c.what.clone(), c.ret, d, at))
        .collect()
}

#[test]
fn math_functions_are_within_their_documented_ulps() {
    let Some((ctx, arch)) = gpu("device math") else {
        return;
    };
    let accurate = math_ulps(&ctx, arch, CudaDialect::default());
    let fast = math_ulps(&ctx, arch, CudaDialect { fast_math: true });
    let mut table = String::from(
        "| function | accurate (max ulps) | bound | fast math (max ulps) | accurate, worst input |\n|---|---|---|---|---|\n",
    );
    let mut failures = Vec::new();
    let show = |d: u64| {
        if d == u64::MAX {
            "NaN vs number".to_string()
        } else {
            d.to_string()
        }
    };
    for ((what, s, d, at), (_, _, fd, _)) in accurate.iter().zip(&fast) {
        let name = what.split(' ').next().unwrap_or("");
        let bound = cuda_bound(name, *s) + 1;
        table.push_str(&format!(
            "| {what} | {} | {bound} | {} | {at} |\n",
            show(*d),
            show(*fd)
        ));
        if *d > bound {
            failures.push(format!("{what}: {} ulps at {at}", show(*d)));
        }
    }
    eprintln!("{table}");
    if let Ok(path) = std::env::var("NACRE_ACCURACY_OUT") {
        let text = format!("Max ulps from libm on the GPU ({arch})\n\n{table}");
        std::fs::write(&path, text).expect("write the accuracy table");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
