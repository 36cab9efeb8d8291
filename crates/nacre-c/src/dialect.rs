//! The per-dialect parts of C-family printing.
//!
//! The function printer ([`crate::function`]) is shared by every C-like target; what differs
//! between plain C, CUDA C and Metal is collected behind the [`Dialect`] trait: type names,
//! address-space qualifiers, function qualifiers, math-function names and the helper prelude.
//! This crate implements only [`CDialect`].

use crate::helpers::{self, Helper};
use nacre_ir::{AddressSpace, FuncKind, Scalar};

/// A math-library function the printer calls on floats.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum MathFn {
    /// Absolute value (`fabs`).
    Abs,
    /// Square root (`sqrt`).
    Sqrt,
    /// Round towards negative infinity (`floor`).
    Floor,
    /// Round towards positive infinity (`ceil`).
    Ceil,
    /// Fused multiply-add (`fma`).
    Fma,
    /// Floating-point remainder with the sign of the dividend (`fmod`).
    Rem,
}

impl MathFn {
    /// The C99 `<math.h>` name of the `double` version.
    pub const fn c_name(self) -> &'static str {
        match self {
            MathFn::Abs => "fabs",
            MathFn::Sqrt => "sqrt",
            MathFn::Floor => "floor",
            MathFn::Ceil => "ceil",
            MathFn::Fma => "fma",
            MathFn::Rem => "fmod",
        }
    }
}

/// The target-specific spelling of a C-family language.
///
/// Methods that can refuse return `Err(what)`, a description of the unsupported construct that
/// the printer turns into [`nacre_backend::BackendError::Unsupported`].
pub trait Dialect {
    /// The backend's name, used in error messages (`c`, `cuda`, `metal`).
    fn backend_name(&self) -> &'static str;

    /// The lines at the top of every source file (includes, pragmas).
    fn preamble(&self) -> &'static str;

    /// The name of a scalar type (`bool` is stored as an unsigned byte).
    fn scalar_type(&self, s: Scalar) -> &'static str;

    /// The unsigned integer type that holds an address (for pointer comparisons and
    /// pointer-integer conversions).
    fn address_type(&self) -> &'static str;

    /// The qualifier written before a pointer's element type for an address space (empty or
    /// ending in a space).
    fn address_space_qualifier(&self, space: AddressSpace) -> Result<&'static str, String>;

    /// The qualifiers written before the return type of an internal (not exported) function of
    /// the given kind (empty or ending in a space).
    fn function_qualifier(&self, kind: FuncKind) -> Result<&'static str, String>;

    /// The name of a math function for a float type.
    fn math_function(&self, f: MathFn, s: Scalar) -> String;

    /// The full definition of a helper function (see [`Helper`]).
    fn helper_definition(&self, helper: Helper) -> String;

    /// The spelling of a pointer type to `elem` in `space`, ending in `*`.
    fn pointer_type(&self, elem: Scalar, space: AddressSpace) -> Result<String, String> {
        let qualifier = self.address_space_qualifier(space)?;
        Ok(format!("{qualifier}{} *", self.scalar_type(elem)))
    }
}

/// Plain C99 (GNU dialect) for the host: `<stdint.h>` types, `<math.h>` functions and
/// `static inline` helpers.
#[derive(Copy, Clone, Debug, Default)]
pub struct CDialect;

impl Dialect for CDialect {
    fn backend_name(&self) -> &'static str {
        "c"
    }

    fn preamble(&self) -> &'static str {
        "#include <stdint.h>\n#include <string.h>\n#include <math.h>\n"
    }

    fn scalar_type(&self, s: Scalar) -> &'static str {
        match s {
            Scalar::Bool | Scalar::U8 => "uint8_t",
            Scalar::I8 => "int8_t",
            Scalar::I16 => "int16_t",
            Scalar::I32 => "int32_t",
            Scalar::I64 => "int64_t",
            Scalar::U16 => "uint16_t",
            Scalar::U32 => "uint32_t",
            Scalar::U64 => "uint64_t",
            Scalar::F32 => "float",
            Scalar::F64 => "double",
        }
    }

    fn address_type(&self) -> &'static str {
        "uintptr_t"
    }

    fn address_space_qualifier(&self, _space: AddressSpace) -> Result<&'static str, String> {
        // On the host every address space is ordinary memory.
        Ok("")
    }

    fn function_qualifier(&self, kind: FuncKind) -> Result<&'static str, String> {
        match kind {
            FuncKind::Host => Ok("static "),
            FuncKind::Kernel => Err("GPU kernels".to_string()),
        }
    }

    fn math_function(&self, f: MathFn, s: Scalar) -> String {
        match s {
            Scalar::F32 => format!("{}f", f.c_name()),
            _ => f.c_name().to_string(),
        }
    }

    fn helper_definition(&self, helper: Helper) -> String {
        helpers::c_definition(self, "static inline ", helper)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_spellings() {
        let d = CDialect;
        assert_eq!(d.scalar_type(Scalar::Bool), "uint8_t");
        assert_eq!(
            d.pointer_type(Scalar::F64, AddressSpace::Generic).unwrap(),
            "double *"
        );
        assert_eq!(d.math_function(MathFn::Rem, Scalar::F32), "fmodf");
        assert_eq!(d.math_function(MathFn::Sqrt, Scalar::F64), "sqrt");
        assert!(d.function_qualifier(FuncKind::Kernel).is_err());
    }
}
