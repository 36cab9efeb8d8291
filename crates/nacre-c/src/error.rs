//! [`DialectError`]: what a [`Dialect`](crate::Dialect) refuses to spell.

use nacre_backend::BackendError;
use nacre_ir::{AddressSpace, Scalar};
use thiserror::Error;

/// A construct that a dialect cannot express, returned by the hooks of
/// [`Dialect`](crate::Dialect) that can refuse.
///
/// The message completes "the `<backend>` backend does not support ...": the printer turns the
/// error into [`BackendError::Unsupported`] with the dialect's backend name
/// ([`DialectError::unsupported`]).
#[derive(Clone, PartialEq, Eq, Hash, Debug, Error)]
pub enum DialectError {
    /// Thread, block or grid indices and dimensions ([`Dialect::gpu_index`]), in a dialect
    /// without GPU built-ins (host C).
    ///
    /// [`Dialect::gpu_index`]: crate::Dialect::gpu_index
    #[error("GPU index queries (thread, block and grid indices)")]
    GpuIndex,
    /// Block-wide barriers ([`Dialect::barrier`]), in a dialect without them.
    ///
    /// [`Dialect::barrier`]: crate::Dialect::barrier
    #[error("GPU barriers")]
    Barrier,
    /// Block-shared array storage ([`Dialect::shared_array`]), in a dialect without it.
    ///
    /// [`Dialect::shared_array`]: crate::Dialect::shared_array
    #[error("block-shared arrays")]
    SharedArray,
    /// Atomic operations and fences ([`Dialect::atomic`]), in a dialect without them.
    ///
    /// [`Dialect::atomic`]: crate::Dialect::atomic
    #[error("atomic operations")]
    Atomics,
    /// An atomic operation the target lacks on an element type, or an ordering it cannot
    /// give.
    #[error("{what} ({target} has no such atomic; {instead})")]
    Atomic {
        /// The operation, type and ordering, as people write them (`fetch_min on f32`).
        what: String,
        /// The target, as people write it (`Metal`).
        target: &'static str,
        /// What to do instead.
        instead: &'static str,
    },
    /// Warp and block collectives ([`Dialect::collective`]), in a dialect without them.
    ///
    /// [`Dialect::collective`]: crate::Dialect::collective
    #[error("warp and block collective operations (shuffles, votes, warp reductions)")]
    Collectives,
    /// Dynamic shared memory ([`Dialect::dynamic_shared`]), in a dialect without it.
    ///
    /// [`Dialect::dynamic_shared`]: crate::Dialect::dynamic_shared
    #[error("dynamic shared memory")]
    DynamicShared,
    /// GPU kernels ([`Dialect::kernel_prototype`]), in a dialect that prints only host code.
    ///
    /// [`Dialect::kernel_prototype`]: crate::Dialect::kernel_prototype
    #[error("GPU kernels")]
    Kernel,
    /// A kernel printed as an ordinary function ([`Dialect::function_qualifier`] of
    /// [`nacre_ir::FuncKind::Kernel`]), in a device dialect that prints kernels only on their
    /// own, through [`emit_kernel_source`](crate::emit_kernel_source).
    ///
    /// [`Dialect::function_qualifier`]: crate::Dialect::function_qualifier
    #[error("kernels outside device code (a kernel is printed on its own, with its callees)")]
    KernelOutsideDeviceCode,
    /// Non-kernel functions compiled for the device because a kernel calls them
    /// ([`Dialect::device_function_qualifier`]), in a dialect without device code.
    ///
    /// [`Dialect::device_function_qualifier`]: crate::Dialect::device_function_qualifier
    #[error("device functions (functions called by GPU kernels)")]
    DeviceFunction,
    /// Host functions ([`Dialect::function_qualifier`] of [`nacre_ir::FuncKind::Host`]), in a
    /// device dialect whose sources hold only kernels and the functions they call.
    ///
    /// [`Dialect::function_qualifier`]: crate::Dialect::function_qualifier
    #[error(
        "host functions ({target} sources hold only kernels and the device functions they \
         call; a CPU backend compiles host functions)"
    )]
    HostFunction {
        /// The target, as people write it (`CUDA`, `Metal`).
        target: &'static str,
    },
    /// Pointers into an address space the target does not have
    /// ([`Dialect::address_space_qualifier`]), for example generic pointers in Metal.
    ///
    /// [`Dialect::address_space_qualifier`]: crate::Dialect::address_space_qualifier
    #[error("{}", address_space_message(*.space, .target))]
    AddressSpace {
        /// The address space.
        space: AddressSpace,
        /// The target, as people write it (`CUDA`, `Metal`).
        target: &'static str,
    },
    /// A math-library function the target has neither in its library nor as a portable
    /// definition ([`Dialect::math_by_helper`]).
    ///
    /// [`Dialect::math_by_helper`]: crate::Dialect::math_by_helper
    #[error("the math function `{name}` ({target} has no such function; compute it on the host or use a CUDA or CPU backend)")]
    MathFunction {
        /// The function's Rust name (`erf`).
        name: &'static str,
        /// The target, as people write it (`Metal`).
        target: &'static str,
    },
    /// Values of a scalar type the target does not have ([`Dialect::check_scalar`]), for
    /// example `f64` in Metal.
    ///
    /// [`Dialect::check_scalar`]: crate::Dialect::check_scalar
    #[error("{}", scalar_message(*.scalar, .target))]
    Scalar {
        /// The scalar type.
        scalar: Scalar,
        /// The target, as people write it (`CUDA`, `Metal`).
        target: &'static str,
    },
}

impl DialectError {
    /// The error as the printer reports it: [`BackendError::Unsupported`] of `backend`
    /// ([`Dialect::backend_name`](crate::Dialect::backend_name)), with this error's message
    /// as what is not supported.
    pub fn unsupported(self, backend: &'static str) -> BackendError {
        BackendError::Unsupported {
            backend,
            what: self.to_string(),
        }
    }
}

/// The message of [`DialectError::AddressSpace`].
fn address_space_message(space: AddressSpace, target: &str) -> String {
    match space {
        AddressSpace::Generic => format!(
            "pointers without an inferred address space ({target} has no generic pointers; run \
             nacre_kernel::infer_address_spaces first)"
        ),
        AddressSpace::Device => {
            format!("pointers into device memory ({target} has no such address space)")
        }
        AddressSpace::Shared => {
            format!("pointers into block-shared memory ({target} has no such address space)")
        }
    }
}

/// The message of [`DialectError::Scalar`].
fn scalar_message(scalar: Scalar, target: &str) -> String {
    match scalar {
        Scalar::F64 => {
            format!("64-bit floats (f64): {target} has no double; use f32 in kernels")
        }
        s if s.is_wide() => format!(
            "128-bit integers ({s}): {target} has none; split the value into two 64-bit words"
        ),
        s => format!("values of type {s} ({target} has no such type)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_and_what_to_do() {
        let generic = DialectError::AddressSpace {
            space: AddressSpace::Generic,
            target: "Metal",
        };
        assert!(
            generic.to_string().contains("infer_address_spaces"),
            "{generic}"
        );
        let f64 = DialectError::Scalar {
            scalar: Scalar::F64,
            target: "Metal",
        };
        assert_eq!(
            f64.to_string(),
            "64-bit floats (f64): Metal has no double; use f32 in kernels"
        );
        let host = DialectError::HostFunction { target: "CUDA" };
        assert!(host.to_string().contains("CPU backend"), "{host}");
        match DialectError::Barrier.unsupported("c") {
            BackendError::Unsupported { backend, what } => {
                assert_eq!((backend, what.as_str()), ("c", "GPU barriers"))
            }
            other => panic!("expected Unsupported, got {other:?}"),
        }
    }
}
