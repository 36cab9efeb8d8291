//! Choosing the device kernels run on: `Options::runtime`, `DeviceKind::best_available`,
//! `Engine::device`, and the errors for devices this machine or build cannot use.

use nacre::gpu::{cuda, launch, thread_idx_x, Array, Block, DeviceKind, Grid, RuntimeOptions};
use nacre::kernel;
use nacre::prelude::*;

fn options(device: DeviceKind) -> Options {
    Options {
        runtime: RuntimeOptions::for_device(device),
        ..Options::default()
    }
}

#[kernel]
fn write_index(out: Ptr<u32>) {
    let t = thread_idx_x();
    out[t] = t;
}

#[jit]
fn run_write_index(out: Ptr<u32>) {
    launch(write_index, Grid::new(1u32), Block::new(8u32), (out,));
}

/// Runs `write_index` through `engine` on its device and checks what it wrote.
fn assert_runs_kernels(engine: &Engine) {
    let mut out = Array::<u32>::alloc_on(engine.device(), 8).unwrap();
    engine
        .compile(run_write_index)
        .unwrap()
        .call(&mut out)
        .unwrap();
    assert_eq!(out.as_slice(), &[0, 1, 2, 3, 4, 5, 6, 7]);
}

#[test]
fn the_cpu_is_the_default_device() {
    assert_eq!(RuntimeOptions::default().device(), DeviceKind::Cpu);
    let engine = Engine::new(Options::default()).unwrap();
    assert_eq!(engine.device().name(), "cpu");
    assert_runs_kernels(&engine);
}

#[test]
fn device_kinds_parse_and_name_themselves() {
    for kind in DeviceKind::ALL {
        assert_eq!(kind.name().parse::<DeviceKind>().unwrap(), kind);
    }
    let err = "tpu".parse::<DeviceKind>().unwrap_err();
    assert!(err.to_string().contains("cpu, cuda, metal"), "{err}");
}

#[test]
fn best_available_is_cuda_exactly_when_a_cuda_device_works() {
    let cuda_works = cuda::probe(0).is_ok();
    let best = DeviceKind::best_available();
    assert_eq!(best == DeviceKind::Cuda, cuda_works);
    if !cuda_works {
        assert_eq!(best, DeviceKind::Cpu);
    }
    // Whatever it picks makes an engine that runs kernels.
    let engine = Engine::new(options(best)).unwrap();
    assert_runs_kernels(&engine);
}

#[test]
fn cuda_without_a_usable_device_fails_at_engine_creation() {
    match cuda::probe(0) {
        Ok(_) => {
            let engine = Engine::new(options(DeviceKind::Cuda)).unwrap();
            assert_eq!(engine.device().name(), "cuda:0");
        }
        Err(why) => {
            let err = Engine::new(options(DeviceKind::Cuda)).unwrap_err();
            assert!(err.runtime_error::<cuda::CudaError>().is_some(), "{err}");
            assert_eq!(err.to_string(), format!("cuda: {why}"));
        }
    }
}

#[test]
fn a_cuda_ordinal_no_machine_has_is_a_typed_error() {
    let o = Options {
        runtime: RuntimeOptions::Cuda(cuda::CudaOptions {
            device: 4096,
            ..Default::default()
        }),
        ..Options::default()
    };
    let err = Engine::new(o).unwrap_err();
    assert!(err.runtime_error::<cuda::CudaError>().is_some(), "{err}");
}

#[cfg(not(target_os = "macos"))]
#[test]
fn metal_needs_macos() {
    let err = Engine::new(options(DeviceKind::Metal)).unwrap_err();
    assert!(
        matches!(
            err.runtime_error::<nacre_metal::MetalError>(),
            Some(nacre_metal::MetalError::NotMacOs { .. })
        ),
        "{err}"
    );
    assert!(err.to_string().contains("macOS"), "{err}");
}

/// A runtime of the user's own: the CPU runtime behind a wrapper that counts its prepares.
/// The engine reaches it only through `KernelRuntime`.
struct CountingRuntime {
    inner: nacre::gpu::CpuRuntime,
    prepares: std::sync::atomic::AtomicUsize,
}

impl nacre::gpu::KernelRuntime for CountingRuntime {
    fn name(&self) -> &'static str {
        "counting"
    }

    fn device(&self) -> std::sync::Arc<dyn nacre::gpu::Device> {
        self.inner.device()
    }

    fn prepare(
        &self,
        module: &nacre::ir::VerifiedModule,
        linkage: &nacre::Linkage,
        host: &dyn nacre::Backend,
    ) -> Result<std::sync::Arc<dyn nacre::gpu::PreparedKernels>, nacre::gpu::RuntimeError> {
        self.prepares
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.prepare(module, linkage, host)
    }
}

#[test]
fn an_engine_runs_kernels_on_any_kernel_runtime() {
    let runtime = std::sync::Arc::new(CountingRuntime {
        inner: nacre::gpu::CpuRuntime::new(Default::default(), Default::default()),
        prepares: Default::default(),
    });
    let engine = Engine::with_runtime(Options::default(), runtime.clone()).unwrap();
    assert_eq!(engine.runtime().name(), "counting");
    assert_runs_kernels(&engine);
    assert_runs_kernels(&engine);
    // The second compile is the engine's cached one: the kernels were prepared once.
    assert_eq!(
        runtime.prepares.load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}
