//! The runtime on macOS, through `objc2-metal`.

use crate::error::MetalError;
use crate::layout::{Binding, LaunchPlan, PipelineLimits};
use crate::msl::MslKernel;
use nacre_ir::Trap;
use objc2::rc::Retained;
use objc2::runtime::ProtocolObject;
use objc2_foundation::NSString;
use objc2_metal::{
    MTLBuffer, MTLCommandBuffer, MTLCommandBufferStatus, MTLCommandEncoder, MTLCommandQueue,
    MTLCompileOptions, MTLComputeCommandEncoder, MTLComputePipelineState,
    MTLCreateSystemDefaultDevice, MTLDevice, MTLLibrary, MTLResourceOptions, MTLSize,
};
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::{Mutex, OnceLock};

/// The process's device and command queue (both thread-safe in Metal).
struct Context {
    device: Retained<ProtocolObject<dyn MTLDevice>>,
    queue: Retained<ProtocolObject<dyn MTLCommandQueue>>,
}

/// The process-wide context, created on first use.
fn context() -> Result<&'static Context, MetalError> {
    static CONTEXT: OnceLock<Context> = OnceLock::new();
    if let Some(c) = CONTEXT.get() {
        return Ok(c);
    }
    let device = MTLCreateSystemDefaultDevice().ok_or_else(|| MetalError::NoDevice {
        reason: "MTLCreateSystemDefaultDevice returned no device".to_string(),
    })?;
    let queue = device
        .newCommandQueue()
        .ok_or_else(|| MetalError::NoDevice {
            reason: "the device could not create a command queue".to_string(),
        })?;
    Ok(CONTEXT.get_or_init(|| Context { device, queue }))
}

/// Opens the process's Metal device and command queue (once), or says why there is none.
pub fn probe() -> Result<(), MetalError> {
    context().map(|_| ())
}

/// A compiled kernel: its compute pipeline state.
#[derive(Debug)]
pub struct Pipeline {
    state: Retained<ProtocolObject<dyn MTLComputePipelineState>>,
    limits: PipelineLimits,
}

/// Compiles a kernel's MSL at run time and makes its pipeline.
pub fn compile(kernel: &MslKernel) -> Result<Pipeline, MetalError> {
    let ctx = context()?;
    let options = MTLCompileOptions::new();
    // IEEE semantics (NaN checks, exact fmod): fast math would let the compiler drop them.
    #[allow(deprecated)]
    options.setFastMathEnabled(false);
    let library = ctx
        .device
        .newLibraryWithSource_options_error(&NSString::from_str(&kernel.source), Some(&options))
        .map_err(|e| MetalError::Compile {
            kernel: kernel.name.clone(),
            log: e.localizedDescription().to_string(),
        })?;
    let function = library
        .newFunctionWithName(&NSString::from_str(&kernel.symbol))
        .ok_or_else(|| MetalError::Pipeline {
            kernel: kernel.name.clone(),
            message: format!("the compiled library has no function {}", kernel.symbol),
        })?;
    let state = ctx
        .device
        .newComputePipelineStateWithFunction_error(&function)
        .map_err(|e| MetalError::Pipeline {
            kernel: kernel.name.clone(),
            message: e.localizedDescription().to_string(),
        })?;
    let width = state.threadExecutionWidth() as u32;
    if kernel.simd_groups && width != crate::simd::SIMD_WIDTH {
        return Err(MetalError::SimdWidth {
            kernel: kernel.name.clone(),
            width,
        });
    }
    let device_shared = ctx.device.maxThreadgroupMemoryLength() as u64;
    let limits = PipelineLimits {
        max_threads: state.maxTotalThreadsPerThreadgroup() as u64,
        max_dynamic_shared: device_shared
            .saturating_sub(state.staticThreadgroupMemoryLength() as u64),
    };
    Ok(Pipeline { state, limits })
}

/// What a pipeline allows a launch.
pub fn limits(pipeline: &Pipeline) -> PipelineLimits {
    pipeline.limits
}

/// The system's page size (16 KiB on Apple silicon, 4 KiB on Intel Macs).
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n)
        .ok()
        .filter(|n| n.is_power_of_two())
        .unwrap_or(crate::device::METAL_PAGE_BYTES)
}

static LAST_ERROR: Mutex<Option<String>> = Mutex::new(None);

/// Records why a launch failed with [`Trap::DeviceError`].
fn device_error(message: impl Into<String>) -> Trap {
    *LAST_ERROR.lock().unwrap_or_else(|e| e.into_inner()) = Some(message.into());
    Trap::DeviceError
}

/// The message of the last launch that failed with [`Trap::DeviceError`].
pub fn last_device_error() -> Option<String> {
    LAST_ERROR.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

fn size(d: [u64; 3]) -> MTLSize {
    MTLSize {
        width: d[0] as usize,
        height: d[1] as usize,
        depth: d[2] as usize,
    }
}

/// Runs a launch plan and waits for it: the trap a kernel raised, or
/// [`Trap::DeviceError`] when Metal failed (see [`last_device_error`]).
pub fn dispatch(pipeline: &Pipeline, plan: &LaunchPlan) -> Result<(), Trap> {
    let ctx = context().map_err(|e| device_error(e.to_string()))?;
    let shared = MTLResourceOptions::StorageModeShared;
    let mut buffers = Vec::with_capacity(plan.regions.len());
    for r in &plan.regions {
        let start = NonNull::new(r.start as *mut c_void).ok_or(Trap::UnknownBuffer)?;
        // SAFETY: the region is the whole pages holding a live array (found in the size
        // table by `plan_launch`); the buffer is dropped before this function returns, after
        // the command buffer completed, and has no deallocator: the array owns the memory.
        let buffer = unsafe {
            ctx.device
                .newBufferWithBytesNoCopy_length_options_deallocator(start, r.len, shared, None)
        }
        .ok_or_else(|| {
            device_error(format!(
                "newBufferWithBytesNoCopy refused {} bytes at {:#x}",
                r.len, r.start
            ))
        })?;
        buffers.push(buffer);
    }
    let status = ctx
        .device
        .newBufferWithLength_options(4, shared)
        .ok_or_else(|| device_error("could not allocate the status word"))?;
    // SAFETY: the buffer is 4 bytes of shared memory that nothing else uses yet.
    unsafe { status.contents().cast::<u32>().write(0) };

    let commands = ctx
        .queue
        .commandBuffer()
        .ok_or_else(|| device_error("the queue gave no command buffer"))?;
    let encoder = commands
        .computeCommandEncoder()
        .ok_or_else(|| device_error("the command buffer gave no compute encoder"))?;
    encoder.setComputePipelineState(&pipeline.state);
    for b in &plan.bindings {
        match b {
            Binding::Buffer {
                slot,
                region,
                offset,
            } => {
                let buffer = buffers.get(*region).ok_or(Trap::UnknownBuffer)?;
                // SAFETY: the buffer lives until the command buffer completed (below); the
                // offset lies in it (`plan_launch`) and the slot is below Metal's 31.
                unsafe { encoder.setBuffer_offset_atIndex(Some(buffer), *offset, *slot) };
            }
            Binding::Bytes { slot, bytes, len } => {
                let data = NonNull::from(bytes).cast::<c_void>();
                // SAFETY: `data` points to 8 readable bytes, of which `len` (at most 8) are
                // copied by the call.
                unsafe { encoder.setBytes_length_atIndex(data, *len, *slot) };
            }
        }
    }
    // SAFETY: the status buffer lives until completion, and its slot is the layout's.
    unsafe { encoder.setBuffer_offset_atIndex(Some(&status), 0, plan.status_slot) };
    if plan.dynamic_shared > 0 {
        // SAFETY: index 0 is the kernel's `[[threadgroup(0)]]` argument; the length is a
        // multiple of 16 within what the pipeline allows (`plan_launch`).
        unsafe { encoder.setThreadgroupMemoryLength_atIndex(plan.dynamic_shared as usize, 0) };
    }
    encoder.dispatchThreadgroups_threadsPerThreadgroup(
        size(plan.dispatch.threadgroups),
        size(plan.dispatch.threads),
    );
    encoder.endEncoding();
    commands.commit();
    commands.waitUntilCompleted();
    if commands.status() != MTLCommandBufferStatus::Completed {
        let why = commands
            .error()
            .map(|e| e.localizedDescription().to_string())
            .unwrap_or_else(|| format!("command buffer status {:?}", commands.status()));
        return Err(device_error(why));
    }
    // SAFETY: the GPU finished with the buffer; it holds one u32.
    let code = unsafe { status.contents().cast::<u32>().read() };
    match (code, Trap::from_code(code)) {
        (0, _) => Ok(()),
        (_, Some(trap)) => Err(trap),
        (code, None) => Err(device_error(format!("unknown status code {code}"))),
    }
}
