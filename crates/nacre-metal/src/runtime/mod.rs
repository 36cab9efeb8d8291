//! The Objective-C layer: compiling a kernel's MSL into a pipeline, and dispatching a
//! [`crate::layout::LaunchPlan`] on the Metal device. Everything it needs to decide (which
//! buffers to wrap, at which offsets and slots, with which grid) is decided before, in
//! [`crate::layout`]; this layer only makes the calls.
//!
//! On macOS (`runtime/macos.rs`) it uses `objc2-metal`: one device and one command queue per process,
//! MSL compiled at run time with `newLibraryWithSource:options:error:` (fast math off, so
//! floating point keeps IEEE semantics; no external toolchain), and per launch a command
//! buffer whose encoder binds the wrapped arrays (`newBufferWithBytesNoCopy`), the scalar
//! arguments (`setBytes`) and a fresh status word, then dispatches by threadgroups and waits.
//! Elsewhere (`runtime/unavailable.rs`) there is no pipeline: compiling reports
//! [`crate::MetalError::NotMacOs`].
//!
//! Both provide the same items: [`probe`], [`Pipeline`], [`compile`], [`limits`],
//! [`page_size`], [`dispatch`] and [`last_device_error`].

#[cfg(target_os = "macos")]
pub mod macos;
#[cfg(target_os = "macos")]
pub use macos::{compile, dispatch, last_device_error, limits, page_size, probe, Pipeline};

#[cfg(not(target_os = "macos"))]
pub mod unavailable;
#[cfg(not(target_os = "macos"))]
pub use unavailable::{compile, dispatch, last_device_error, limits, page_size, probe, Pipeline};
