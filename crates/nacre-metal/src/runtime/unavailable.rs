//! The runtime where Metal does not exist (every OS but macOS): no pipeline can be made.

use crate::device::METAL_PAGE_BYTES;
use crate::error::MetalError;
use crate::layout::{LaunchPlan, PipelineLimits};
use crate::msl::MslKernel;
use nacre_ir::Trap;

/// A compiled kernel; none exists outside macOS.
#[derive(Debug)]
pub enum Pipeline {}

/// Always [`MetalError::NotMacOs`]: there is no Metal device to open.
pub fn probe() -> Result<(), MetalError> {
    Err(MetalError::NotMacOs {
        os: std::env::consts::OS,
    })
}

/// Always [`MetalError::NotMacOs`].
pub fn compile(_kernel: &MslKernel) -> Result<Pipeline, MetalError> {
    Err(MetalError::NotMacOs {
        os: std::env::consts::OS,
    })
}

/// What a pipeline allows a launch.
pub fn limits(pipeline: &Pipeline) -> PipelineLimits {
    match *pipeline {}
}

/// The granularity of wrapped memory: Metal's page size.
pub fn page_size() -> usize {
    METAL_PAGE_BYTES
}

/// Runs a launch plan.
pub fn dispatch(pipeline: &Pipeline, _plan: &LaunchPlan) -> Result<(), Trap> {
    match *pipeline {}
}

/// The message of the last device error (`None`: launches never reach a device here).
pub fn last_device_error() -> Option<String> {
    None
}
