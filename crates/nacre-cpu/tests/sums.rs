//! Kernels whose only use of a parameter is a relaxed atomic addition (a histogram's bins):
//! launches that privatise every such sum, or run on one worker, run the step function whose
//! additions are plain; the others keep the atomics. Every way gives the exact counts.

mod common;

use common::*;
use nacre_cpu::CpuMode;
use nacre_ir::{AtomicOp, BinaryOp, CmpOp, Dim, FuncId, FunctionBuilder, MemOrder, Module, Scope};
use nacre_runtime::Array;

/// Bins of the small histogram (private copies) and of the large one (over the 64 KiB a launch
/// privatises).
const SMALL: u32 = 16;
const LARGE: u32 = 20_000;

/// `hist(data, small, large, n)`: `i = global.x; if i < n { small[data[i] % 16] += 1;
/// large[data[i] % 20000] += 1 }`, both atomic and relaxed.
fn hist() -> (Module, FuncId) {
    let mut f = kernel("hist", &[PU32, PU32, PU32, nacre_ir::Type::U32]);
    let mut b = FunctionBuilder::new(&mut f);
    let p = b.create_entry_block();
    let (body, done) = (b.create_block(), b.create_block());
    let i = global(&mut b, Dim::X);
    let inside = b.cmp(CmpOp::Lt, i, p[3]);
    b.branch(inside, body, vec![], done, vec![]);
    b.switch_to_block(body);
    let v = load_at(&mut b, p[0], i);
    for (bins, count) in [(p[1], SMALL), (p[2], LARGE)] {
        let c = ku32(&mut b, count);
        let at = b.binary(BinaryOp::Rem, v, c);
        let e = b.elem_ptr(bins, at);
        let one = ku32(&mut b, 1);
        b.atomic_rmw(AtomicOp::Add, e, one, MemOrder::Relaxed, Scope::Device);
    }
    b.jump(done, vec![]);
    b.switch_to_block(done);
    b.ret(None);
    module_of(f, vec![])
}

/// The data, and the counts the kernel must leave in each histogram.
fn case(n: u32) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let data: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761) >> 7).collect();
    let (mut small, mut large) = (vec![0; SMALL as usize], vec![0; LARGE as usize]);
    for &v in &data {
        small[(v % SMALL) as usize] += 1;
        large[(v % LARGE) as usize] += 1;
    }
    (data, small, large)
}

/// Launches `kernel` over `n` elements in blocks of 64 with the large histogram at `large`
/// bins (all of them, or only the first `SMALL`: then both sums fit the private limit);
/// returns both histograms.
fn run(
    kernel: &std::sync::Arc<nacre_cpu::CpuKernel>,
    data: &[u32],
    large: usize,
) -> (Vec<u32>, Vec<u32>) {
    let n = data.len() as u32;
    let d = Array::copy(data).unwrap();
    let s = Array::copy(&vec![0u32; SMALL as usize]).unwrap();
    let l = Array::copy(&vec![0u32; large]).unwrap();
    let args = [
        ptr_arg(d.as_ptr()),
        ptr_arg(s.as_ptr()),
        ptr_arg(l.as_ptr()),
        n as u64,
    ];
    launch(kernel, [n.div_ceil(64), 1, 1], [64, 1, 1], &args).unwrap();
    (s.as_slice().to_vec(), l.as_slice().to_vec())
}

/// Runs `f` in a rayon pool of `workers` threads (the launches in it run on those).
fn on_workers<R: Send>(workers: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new()
        .num_threads(workers)
        .build()
        .expect("a thread pool")
        .install(f)
}

#[test]
fn sums_are_exact_with_plain_or_atomic_additions() {
    let n = 100_000;
    let (data, small, large) = case(n);
    let (m, id) = hist();
    for backend in backends() {
        let kernel = prepare(&m, id, &*backend, CpuMode::Grid);
        assert_eq!(kernel.private_params(), [1, 2], "{}", backend.name());
        assert!(kernel.has_plain_sums(), "{}", backend.name());
        // The large histogram is over the private limit: the launch keeps the atomics.
        assert_eq!(
            run(&kernel, &data, LARGE as usize),
            (small.clone(), large.clone())
        );
        // One worker runs the plain additions.
        assert_eq!(
            on_workers(1, || run(&kernel, &data, LARGE as usize)),
            (small.clone(), large.clone())
        );
        // Data below SMALL bins only: both sums fit, every worker adds into copies of its own.
        let few: Vec<u32> = data.iter().map(|v| v % SMALL).collect();
        // `few % 16` is `data % 16`: the small histogram is the same, the large one too.
        let want_large = small.clone();
        assert_eq!(
            on_workers(4, || run(&kernel, &few, SMALL as usize)),
            (small.clone(), want_large),
            "{}",
            backend.name()
        );
    }
}
