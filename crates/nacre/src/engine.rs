//! [`Engine`]: traces, optimises and compiles functions, and caches the results.

use crate::args::ArgPlan;
use crate::compiled::{Compiled, Inner, SecondTierSlot, Tier, Timings, Unchecked};
use crate::error::Error;
use crate::options::{BackendKind, DumpTarget, FirstTier, OptLevel, Options, SecondTier, Stage};
use crate::runtimes;
use nacre_backend::Backend;
use nacre_ir::transform::{insert_bounds_checks, BoundsOptions};
use nacre_ir::{FuncKind, Module, PassOptions, VerifiedModule};
use nacre_runtime::{Device, KernelRuntime};
use nacre_trace::{TraceFn, Traced};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::time::Instant;

type Job = Box<dyn FnOnce() + Send>;

/// The second tier's backend and the queue of the thread that runs its compiles.
struct Background {
    backend: Arc<dyn Backend>,
    queue: Mutex<Sender<Job>>,
}

/// The JIT engine. Create one with [`Engine::new`], then [`Engine::compile`] traced functions.
/// An engine is `Send + Sync`; compiled functions are cached per function.
pub struct Engine {
    options: Options,
    backend: Arc<dyn Backend>,
    /// The background tier (tiering only).
    second: Option<Background>,
    /// The kernel runtime: where kernels run and arrays should be allocated.
    runtime: Arc<dyn KernelRuntime>,
    /// Compiled functions by function type and whether they are bounds-checked.
    cache: Mutex<HashMap<(TypeId, bool), Arc<dyn Any + Send + Sync>>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

fn cranelift(opt_level: OptLevel, keep_listing: bool) -> Result<Arc<dyn Backend>, Error> {
    Ok(Arc::new(nacre_cranelift::CraneliftBackend::new(
        nacre_cranelift::CraneliftOptions {
            opt_level,
            keep_listing,
        },
    )?))
}

fn c_backend(options: &Options) -> Arc<dyn Backend> {
    Arc::new(nacre_c::CBackend::new(options.c.clone()))
}

/// Creates the backend selected by the options (the first tier under tiered compilation).
pub fn make_backend(options: &Options) -> Result<Arc<dyn Backend>, Error> {
    let keep_listing = options.dump.stages.contains(&Stage::Backend);
    if let Some(t) = options.tiering {
        return match t.first {
            FirstTier::Interp => Ok(Arc::new(nacre_interp::Interpreter::new())),
            FirstTier::CraneliftFast => cranelift(OptLevel::None, keep_listing),
        };
    }
    match options.backend {
        BackendKind::Interp => Ok(Arc::new(nacre_interp::Interpreter::new())),
        BackendKind::Cranelift => cranelift(options.opt_level, keep_listing),
        BackendKind::C => Ok(c_backend(options)),
    }
}

/// Traces `f` into an IR module (the capture, before any pass) and its linkage.
pub fn trace_module<Args, F: TraceFn<Args>>(f: &F) -> Result<Traced, Error> {
    Ok(nacre_trace::trace(f)?)
}

/// Verifies a captured module, widens its half-precision arithmetic to `f32`
/// ([`nacre_ir::transform::widen_half()`], which backends rely on) and runs the optimisation
/// passes on it, then folds the comparisons of kernels that their launch shapes decide
/// ([`nacre_kernel::fold_proven_compares`]) (the engine's own pipeline: one verification, right after tracing; passes keep
/// the module valid).
pub fn optimize(module: Module, passes: &PassOptions) -> Result<VerifiedModule, Error> {
    let verified = nacre_ir::transform::widen_half(nacre_ir::verify(module)?);
    let verified = nacre_ir::passes::optimize(verified, passes).0;
    Ok(nacre_kernel::fold_proven_compares(verified, passes).0)
}

/// The bounds checking [`Engine::compile`] applies to an optimised module: companions and
/// checks for every pointer ([`nacre_ir::transform::insert_bounds_checks`], kernels included
/// when `check_kernels`), with the checks of counted and grid-stride loops hoisted before the
/// loop, those proven in range removed, and the launch-uniform checks of kernels made by the
/// host before each launch. The entry then takes, after its declared parameters, the base and size in bytes of
/// each pointer parameter ([`nacre_ir::transform::companion_positions`]).
pub fn bounds_checked(
    module: VerifiedModule,
    check_kernels: bool,
    check_free: nacre_kernel::CheckFreeOptions,
) -> Result<VerifiedModule, Error> {
    let options = BoundsOptions { check_kernels };
    let mut module = insert_bounds_checks(module, options).into_inner();
    nacre_kernel::hoist_grid_stride_checks(&mut module);
    nacre_kernel::remove_proven_kernel_checks(&mut module);
    nacre_kernel::hoist_guarded_global_checks(&mut module);
    nacre_kernel::move_uniform_checks_to_launches(&mut module);
    nacre_kernel::add_check_free_versions(&mut module, check_free);
    Ok(nacre_ir::verify(module)?)
}

impl Engine {
    /// An engine with these options (dumps as `NACRE_DUMP` asks, where it is set).
    ///
    /// The kernel runtime of [`Options::runtime`] is opened now, so that a machine without a
    /// usable GPU, driver or NVRTC fails here with [`Error::Runtime`] saying what is missing
    /// ([`crate::DeviceKind::best_available`] picks the CPU there instead).
    pub fn new(options: Options) -> Result<Engine, Error> {
        let options = options.with_env_dumps()?;
        options.validate()?;
        let runtime = runtimes::open(&options)?;
        Engine::assemble(options, runtime)
    }

    /// An engine whose kernels run on `runtime` (any implementation of
    /// `nacre_runtime::KernelRuntime`); [`Options::runtime`] is not used.
    pub fn with_runtime(
        options: Options,
        runtime: Arc<dyn KernelRuntime>,
    ) -> Result<Engine, Error> {
        let options = options.with_env_dumps()?;
        options.validate()?;
        Engine::assemble(options, runtime)
    }

    /// The engine of validated `options` over `runtime`: the backends and the background tier.
    fn assemble(options: Options, runtime: Arc<dyn KernelRuntime>) -> Result<Engine, Error> {
        let backend = make_backend(&options)?;
        let second = match options.tiering {
            None => None,
            Some(t) => {
                let b = match t.second {
                    SecondTier::CraneliftSpeed => cranelift(OptLevel::Speed, false)?,
                    SecondTier::C => c_backend(&options),
                };
                let (tx, rx) = channel::<Job>();
                std::thread::Builder::new()
                    .name("nacre-tier2".into())
                    .spawn(move || rx.into_iter().for_each(|job| job()))
                    .map_err(|e| {
                        Error::InvalidOption(format!(
                            "cannot start the background compile thread: {e}"
                        ))
                    })?;
                Some(Background {
                    backend: b,
                    queue: Mutex::new(tx),
                })
            }
        };
        Ok(Engine {
            options,
            backend,
            second,
            runtime,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// The device kernels of this engine run on: allocate the arrays they use there
    /// (`Array::alloc_on(engine.device(), n)`, `Array::copy_on(engine.device(), &data)`).
    /// Host memory on the CPU, the CUDA device's managed memory on CUDA.
    pub fn device(&self) -> Arc<dyn Device> {
        self.runtime.device()
    }

    /// The kernel runtime this engine's kernels run on.
    pub fn runtime(&self) -> &Arc<dyn KernelRuntime> {
        &self.runtime
    }

    /// The engine's options.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The backend that compiles functions (the first tier under tiered compilation).
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// Traces, optimises and compiles `f` (or returns the cached result for a function item or
    /// non-capturing closure compiled before by this engine). Every memory access of the
    /// result is bounds-checked; its `call` is safe.
    pub fn compile<Args: 'static, F: TraceFn<Args>>(
        &self,
        f: F,
    ) -> Result<Compiled<Args, F::Ret>, Error> {
        let inner = self.compile_inner(f, true)?;
        Ok(Compiled {
            inner,
            _sig: PhantomData,
        })
    }

    /// Like [`Engine::compile`], but without bounds checks, for peak speed: the result's `call`
    /// is `unsafe` and takes raw pointers ([`crate::Unchecked`]). Kernels on GPUs are compiled
    /// without checks too.
    pub fn compile_unchecked<Args: 'static, F: TraceFn<Args>>(
        &self,
        f: F,
    ) -> Result<Unchecked<Args, F::Ret>, Error> {
        let inner = self.compile_inner(f, false)?;
        Ok(Unchecked {
            inner,
            _sig: PhantomData,
        })
    }

    fn compile_inner<Args: 'static, F: TraceFn<Args>>(
        &self,
        f: F,
        checked: bool,
    ) -> Result<Arc<Inner>, Error> {
        let cacheable = std::mem::size_of::<F>() == 0;
        let key = (TypeId::of::<F>(), checked);
        if cacheable {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(hit) = cache.get(&key) {
                if let Ok(inner) = hit.clone().downcast::<Inner>() {
                    return Ok(inner);
                }
            }
        }
        let inner = Arc::new(self.build(f, checked)?);
        if cacheable {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            cache.insert(key, inner.clone());
        }
        Ok(inner)
    }

    fn build<Args, F: TraceFn<Args>>(&self, f: F, checked: bool) -> Result<Inner, Error> {
        let name = nacre_trace::signature::fn_name::<F>();
        if self.options.direct {
            let run = move |args: &[u64], lent: &[nacre_trace::Region]| {
                nacre_trace::direct_call(&f, args, lent)
            };
            // Direct mode checks each access against the lent memory and its writability.
            let plan = ArgPlan::new(&F::param_types(), 0);
            return Ok(Inner {
                plan,
                kernels: None,
                first: Tier::Direct(Box::new(run)),
                second: None,
                timings: Timings::default(),
                module: None,
                ir: std::sync::OnceLock::new(),
                name,
            });
        }
        let t0 = Instant::now();
        let Traced { module, linkage } = nacre_trace::trace(&f)?;
        let t1 = Instant::now();
        self.dump(&name, Stage::Trace, || module.to_string())?;
        let verified = nacre_ir::transform::widen_half(nacre_ir::verify(module)?);
        let mut pass_dumps = Vec::new();
        let want_pass_dumps = self.wants(Stage::Passes);
        let (verified, _) = nacre_ir::passes::optimize_observed(
            verified,
            &self.options.passes,
            &mut |pass: &str, m: &Module| {
                if want_pass_dumps {
                    pass_dumps.push(format!("; after {pass}\n{m}"));
                }
            },
        );
        if want_pass_dumps {
            self.dump(&name, Stage::Passes, || pass_dumps.join("\n"))?;
        }
        let (verified, _) = nacre_kernel::fold_proven_compares(verified, &self.options.passes);
        let (verified, plan) = if checked {
            self.bounds_checked(verified)?
        } else if self.runtime.wide_indices() {
            let mut module = verified.into_inner();
            let options = nacre_kernel::CheckFreeOptions { wide_indices: true };
            nacre_kernel::add_check_free_versions(&mut module, options);
            (nacre_ir::verify(module)?, ArgPlan::default())
        } else {
            (verified, ArgPlan::default())
        };
        let has_kernels = verified
            .module()
            .functions
            .values()
            .any(|f| f.kind == FuncKind::Kernel);
        let (kernels, linkage) = if has_kernels {
            let kernels = self.runtime.prepare(&verified, &linkage, &*self.backend)?;
            let linkage = linkage.with_launch(kernels.launch_binding());
            (Some(kernels), linkage)
        } else {
            (None, linkage)
        };
        let t2 = Instant::now();
        self.dump(&name, Stage::Ir, || {
            nacre_ir::printer::module_with_loops(&verified).to_string()
        })?;
        let verified = Arc::new(verified);
        let linkage = Arc::new(linkage);
        let exec = self.backend.compile(&verified, &linkage)?;
        let t3 = Instant::now();
        if let Some(listing) = exec.listing() {
            self.dump(&name, Stage::Backend, || listing.to_string())?;
        }
        let second = self.second.as_ref().map(|Background { backend, queue }| {
            let slot = Arc::new(SecondTierSlot::default());
            let job_slot = slot.clone();
            let backend = backend.clone();
            let verified = verified.clone();
            let linkage = linkage.clone();
            let job: Job = Box::new(move || {
                let start = Instant::now();
                match backend.compile(&verified, &linkage) {
                    Ok(exec) => {
                        let tier = Tier::backend(exec);
                        let native = tier.native_addr();
                        let _ = job_slot.compile_time.set(start.elapsed());
                        let _ = job_slot.tier.set(tier);
                        if let Some(addr) = native {
                            job_slot.native.store(addr, Ordering::Release);
                        }
                    }
                    Err(e) => {
                        let _ = job_slot.error.set(e.to_string());
                    }
                }
            });
            let sent = queue.lock().unwrap_or_else(|e| e.into_inner()).send(job);
            if sent.is_err() {
                let _ = slot
                    .error
                    .set("the background compile thread has stopped".into());
            }
            slot
        });
        let timings = Timings {
            trace: t1 - t0,
            passes: t2 - t1,
            backend: t3 - t2,
            total: t3 - t0,
        };
        Ok(Inner {
            plan,
            kernels,
            first: Tier::backend(exec),
            second,
            timings,
            module: Some(verified),
            ir: std::sync::OnceLock::new(),
            name,
        })
    }

    /// Inserts bounds checks (in kernels too, unless the runtime compiles them unchecked), and
    /// plans how a call passes the entry's memory.
    fn bounds_checked(&self, verified: VerifiedModule) -> Result<(VerifiedModule, ArgPlan), Error> {
        let module = verified.module();
        let plan = match module.entry {
            Some(entry) => ArgPlan::new(
                &module.functions[entry].signature.params,
                nacre_ir::analysis::written_params(module)[entry],
            ),
            None => ArgPlan::default(),
        };
        Ok((
            bounds_checked(
                verified,
                self.runtime.checks_kernels(),
                nacre_kernel::CheckFreeOptions {
                    wide_indices: self.runtime.wide_indices(),
                },
            )?,
            plan,
        ))
    }

    fn wants(&self, stage: Stage) -> bool {
        self.options.dump.stages.contains(&stage)
    }

    fn dump(&self, func: &str, stage: Stage, text: impl FnOnce() -> String) -> Result<(), Error> {
        if !self.wants(stage) {
            return Ok(());
        }
        let text = text();
        match &self.options.dump.target {
            DumpTarget::Console => {
                eprintln!("==== {func}: {} ====\n{text}", stage.name());
                Ok(())
            }
            DumpTarget::Dir(dir) => {
                let path = dir.join(format!("{func}.{}.txt", stage.name()));
                std::fs::create_dir_all(dir)
                    .and_then(|()| std::fs::write(&path, text))
                    .map_err(|source| Error::Dump { path, source })
            }
        }
    }
}
