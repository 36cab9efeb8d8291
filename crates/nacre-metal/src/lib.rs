//! Nacre's Metal backend.
//!
//! Kernels become Metal Shading Language ([`msl`]): the address-space pass of `nacre-ir`
//! gives every pointer a `device` or `threadgroup` space, and the shared C-family printer of
//! `nacre-c` prints the kernel and its device functions in the Metal dialect, with structured
//! control flow and guarded loops. On macOS the runtime ([`runtime`]) compiles the MSL at run
//! time with `newLibraryWithSource` (no Xcode toolchain), caches one pipeline per distinct
//! kernel per process ([`cache`]), and launches by threadgroups over arrays wrapped without
//! copying ([`layout`], [`device`]). Everywhere else the same code generates and checks MSL,
//! and preparing kernels is the typed error [`MetalError::NotMacOs`].
//!
//! The crate is organised one concept per module:
//!
//! - [`msl`]: the MSL dialect and [`emit_msl`];
//! - [`layout`]: argument binding order, grid arithmetic and buffer lookup for a launch;
//! - [`cache`]: the compile-once policy;
//! - [`device`]: [`MetalDevice`], page-aligned unified memory;
//! - [`runtime`]: the thin Objective-C layer (macOS) and its absence elsewhere;
//! - [`kernels`]: [`prepare_metal`], [`MetalKernels`] and the launcher [`metal_launch`];
//! - [`clang_check`]: the Linux compile check of generated MSL through clang;
//! - [`error`]: the error type, [`MetalError`].
//!
//! Two headers support the Linux tests: `clang/metal_stdlib` maps Metal onto OpenCL C++ for
//! [`clang_check`], and `emulation/metal_stdlib` maps it onto C++20 threads, so that tests run
//! generated kernels on the host (`crates/nacre-corpus/tests/msl_run.rs`). See `README.md` for
//! what runs where.

#![warn(missing_docs)]

pub mod cache;
pub mod clang_check;
pub mod device;
pub mod error;
pub mod kernels;
pub mod layout;
pub mod msl;
pub mod runtime;
pub mod simd;

pub use device::MetalDevice;
pub use error::MetalError;
pub use kernels::{metal_launch, prepare_metal, MetalKernel, MetalKernels, MetalRuntime};
pub use msl::{emit_msl, MslDialect, MslKernel};
pub use runtime::probe;
