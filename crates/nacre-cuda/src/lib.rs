//! Nacre's CUDA backend.
//!
//! Kernel functions of a module are printed as CUDA C ([`codegen`]), compiled at run time by
//! NVRTC for the device's own architecture ([`nvrtc`]), and launched through the CUDA driver
//! API ([`runtime`]) from host code compiled by a CPU backend. Arrays live in managed memory
//! that the runtime prefetches to the device before launches and back before host access.
//! The CUDA libraries are loaded at run time: building needs no CUDA toolkit, and a machine
//! without a GPU gets typed errors, never a crash.

#![warn(missing_docs)]

pub mod codegen;
pub mod nvrtc;
pub mod runtime;
