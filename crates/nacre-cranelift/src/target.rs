//! The host target: Cranelift's ISA description for the machine we run on, with the flags the
//! backend compiles under.

use crate::options::CraneliftOptions;
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use nacre_backend::BackendError;

/// The backend's name, used in errors.
pub(crate) const BACKEND: &str = "cranelift";

/// Wraps a Cranelift error message as a [`BackendError::Codegen`].
pub(crate) fn codegen_error(message: impl std::fmt::Display) -> BackendError {
    BackendError::Codegen {
        backend: BACKEND,
        message: message.to_string(),
    }
}

/// Builds the host ISA for `options`, with ISA-specific flags (such as `has_fma`) overridden by
/// `isa_flags`.
///
/// Flags: the chosen `opt_level`; `is_pic = false` (required by the JIT); libcalls are not
/// colocated (they are Rust functions anywhere in the address space); no unwind information
/// (JIT code is never unwound through: traps return normally); `i128` parameters and results
/// pass as rustc and C compilers pass `__int128` (`enable_llvm_abi_extensions`, which the Rust
/// helpers of `crate::runtime` rely on); Cranelift's own IR verifier runs only in debug builds.
pub(crate) fn host_isa(
    options: &CraneliftOptions,
    isa_flags: &[(&str, &str)],
) -> Result<OwnedTargetIsa, BackendError> {
    let mut flags = settings::builder();
    let set = |flags: &mut settings::Builder, name: &str, value: &str| {
        flags
            .set(name, value)
            .map_err(|e| codegen_error(format!("setting {name}={value}: {e}")))
    };
    set(&mut flags, "opt_level", options.opt_level.cranelift_name())?;
    set(&mut flags, "is_pic", "false")?;
    set(&mut flags, "use_colocated_libcalls", "false")?;
    set(&mut flags, "unwind_info", "false")?;
    set(&mut flags, "enable_llvm_abi_extensions", "true")?;
    set(
        &mut flags,
        "enable_verifier",
        if cfg!(debug_assertions) {
            "true"
        } else {
            "false"
        },
    )?;
    let mut isa = cranelift_native::builder()
        .map_err(|msg| codegen_error(format!("unsupported host: {msg}")))?;
    for (name, value) in isa_flags {
        isa.set(name, value)
            .map_err(|e| codegen_error(format!("setting {name}={value}: {e}")))?;
    }
    isa.finish(settings::Flags::new(flags))
        .map_err(codegen_error)
}
