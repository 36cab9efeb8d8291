//! Value types of the IR.

use std::fmt;

/// A scalar (non-pointer) type.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Scalar {
    /// A boolean, stored as 0 or 1.
    Bool,
    /// Signed 8-bit integer.
    I8,
    /// Signed 16-bit integer.
    I16,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// Unsigned 8-bit integer.
    U8,
    /// Unsigned 16-bit integer.
    U16,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary64.
    F64,
    /// IEEE 754 binary16 (`half::f16`). Arithmetic widens to `f32` and rounds back (see
    /// [`crate::semantics`]).
    F16,
    /// The bfloat16 format (`half::bf16`): `f32`'s exponent with 8 significand bits.
    /// Arithmetic widens to `f32` and rounds back.
    BF16,
    /// Signed 128-bit integer. CPU backends and CUDA (`__int128`) only; values of it cannot
    /// cross the host boundary (entry, extern and kernel signatures), atomics or warp
    /// operations: they travel through memory.
    I128,
    /// Unsigned 128-bit integer, with the limits of [`Scalar::I128`].
    U128,
}

impl Scalar {
    /// The types a value crossing the host boundary can have (arguments and results of
    /// entry functions, kernels and externs): all but the 128-bit integers.
    pub const HOST: [Scalar; 13] = [
        Scalar::Bool,
        Scalar::I8,
        Scalar::I16,
        Scalar::I32,
        Scalar::I64,
        Scalar::U8,
        Scalar::U16,
        Scalar::U32,
        Scalar::U64,
        Scalar::F32,
        Scalar::F64,
        Scalar::F16,
        Scalar::BF16,
    ];

    /// All scalar types, in declaration order: [`Scalar::HOST`], then the 128-bit integers.
    pub const ALL: [Scalar; 15] = {
        let mut all = [Scalar::U128; 15];
        let mut i = 0;
        while i < Scalar::HOST.len() {
            all[i] = Scalar::HOST[i];
            i += 1;
        }
        all[13] = Scalar::I128;
        all
    };

    /// Width in bits (bool counts as 8: its storage size).
    pub const fn bits(self) -> u32 {
        match self {
            Scalar::Bool | Scalar::I8 | Scalar::U8 => 8,
            Scalar::I16 | Scalar::U16 | Scalar::F16 | Scalar::BF16 => 16,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 32,
            Scalar::I64 | Scalar::U64 | Scalar::F64 => 64,
            Scalar::I128 | Scalar::U128 => 128,
        }
    }

    /// Storage size in bytes.
    pub const fn bytes(self) -> u32 {
        self.bits() / 8
    }

    /// True for the signed integer types.
    pub const fn is_signed_int(self) -> bool {
        matches!(
            self,
            Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 | Scalar::I128
        )
    }

    /// True for the unsigned integer types.
    pub const fn is_unsigned_int(self) -> bool {
        matches!(
            self,
            Scalar::U8 | Scalar::U16 | Scalar::U32 | Scalar::U64 | Scalar::U128
        )
    }

    /// True for all integer types (not bool).
    pub const fn is_int(self) -> bool {
        self.is_signed_int() || self.is_unsigned_int()
    }

    /// True for the float types: `f32`, `f64` and the half-precision ones.
    pub const fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64 | Scalar::F16 | Scalar::BF16)
    }

    /// True for the 16-bit floats `f16` and `bf16`, which compute in `f32`.
    pub const fn is_half(self) -> bool {
        matches!(self, Scalar::F16 | Scalar::BF16)
    }

    /// True for the 128-bit integers, which only some targets have and which cannot cross
    /// the host boundary.
    pub const fn is_wide(self) -> bool {
        matches!(self, Scalar::I128 | Scalar::U128)
    }

    /// The short name used by the printer (`i32`, `f64`, `bool`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I8 => "i8",
            Scalar::I16 => "i16",
            Scalar::I32 => "i32",
            Scalar::I64 => "i64",
            Scalar::U8 => "u8",
            Scalar::U16 => "u16",
            Scalar::U32 => "u32",
            Scalar::U64 => "u64",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
            Scalar::F16 => "f16",
            Scalar::BF16 => "bf16",
            Scalar::I128 => "i128",
            Scalar::U128 => "u128",
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The memory a pointer points into. Host code only uses [`AddressSpace::Generic`]; GPU
/// backends distinguish global (`Device`) from block-shared (`Shared`) memory.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub enum AddressSpace {
    /// Host memory or not yet inferred.
    #[default]
    Generic,
    /// GPU global memory (CUDA global, Metal `device`).
    Device,
    /// GPU block-shared memory (CUDA `__shared__`, Metal `threadgroup`).
    Shared,
}

/// The type of an IR value.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Type {
    /// A scalar.
    Scalar(Scalar),
    /// A typed pointer to elements of a scalar type in an address space.
    Ptr(Scalar, AddressSpace),
}

impl Type {
    /// `bool`.
    pub const BOOL: Type = Type::Scalar(Scalar::Bool);
    /// `i8`.
    pub const I8: Type = Type::Scalar(Scalar::I8);
    /// `i16`.
    pub const I16: Type = Type::Scalar(Scalar::I16);
    /// `i32`.
    pub const I32: Type = Type::Scalar(Scalar::I32);
    /// `i64`.
    pub const I64: Type = Type::Scalar(Scalar::I64);
    /// `u8`.
    pub const U8: Type = Type::Scalar(Scalar::U8);
    /// `u16`.
    pub const U16: Type = Type::Scalar(Scalar::U16);
    /// `u32`.
    pub const U32: Type = Type::Scalar(Scalar::U32);
    /// `u64`.
    pub const U64: Type = Type::Scalar(Scalar::U64);
    /// `f32`.
    pub const F32: Type = Type::Scalar(Scalar::F32);
    /// `f64`.
    pub const F64: Type = Type::Scalar(Scalar::F64);
    /// `f16`.
    pub const F16: Type = Type::Scalar(Scalar::F16);
    /// `bf16`.
    pub const BF16: Type = Type::Scalar(Scalar::BF16);
    /// `i128`.
    pub const I128: Type = Type::Scalar(Scalar::I128);
    /// `u128`.
    pub const U128: Type = Type::Scalar(Scalar::U128);

    /// A generic-address-space pointer to `elem`.
    pub const fn ptr(elem: Scalar) -> Type {
        Type::Ptr(elem, AddressSpace::Generic)
    }

    /// The scalar type, or `None` for pointers.
    pub const fn scalar(self) -> Option<Scalar> {
        match self {
            Type::Scalar(s) => Some(s),
            Type::Ptr(..) => None,
        }
    }

    /// The element type of a pointer, or `None` for scalars.
    pub const fn pointee(self) -> Option<Scalar> {
        match self {
            Type::Ptr(s, _) => Some(s),
            Type::Scalar(_) => None,
        }
    }

    /// True for pointers.
    pub const fn is_ptr(self) -> bool {
        matches!(self, Type::Ptr(..))
    }

    /// True for integer scalars.
    pub const fn is_int(self) -> bool {
        matches!(self, Type::Scalar(s) if s.is_int())
    }

    /// True for float scalars.
    pub const fn is_float(self) -> bool {
        matches!(self, Type::Scalar(s) if s.is_float())
    }

    /// True for `bool`.
    pub const fn is_bool(self) -> bool {
        matches!(self, Type::Scalar(Scalar::Bool))
    }

    /// Storage size in bytes (pointers are 8 bytes).
    pub const fn bytes(self) -> u32 {
        match self {
            Type::Scalar(s) => s.bytes(),
            Type::Ptr(..) => 8,
        }
    }
}

impl From<Scalar> for Type {
    fn from(s: Scalar) -> Type {
        Type::Scalar(s)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Scalar(s) => f.write_str(s.name()),
            Type::Ptr(s, AddressSpace::Generic) => write!(f, "ptr<{s}>"),
            Type::Ptr(s, AddressSpace::Device) => write!(f, "ptr<{s}, device>"),
            Type::Ptr(s, AddressSpace::Shared) => write!(f, "ptr<{s}, shared>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Scalar::ALL` holds each type once, at the place the match gives it. The match is
    /// exhaustive: a new type does not compile until it has a place there, which must then
    /// be its place in `ALL`.
    #[test]
    fn all_lists_every_scalar_once() {
        let position = |s: Scalar| match s {
            Scalar::Bool => 0,
            Scalar::I8 => 1,
            Scalar::I16 => 2,
            Scalar::I32 => 3,
            Scalar::I64 => 4,
            Scalar::U8 => 5,
            Scalar::U16 => 6,
            Scalar::U32 => 7,
            Scalar::U64 => 8,
            Scalar::F32 => 9,
            Scalar::F64 => 10,
            Scalar::F16 => 11,
            Scalar::BF16 => 12,
            Scalar::I128 => 13,
            Scalar::U128 => 14,
        };
        for (i, &s) in Scalar::ALL.iter().enumerate() {
            assert_eq!(position(s), i, "{s:?} is listed at {i}");
        }
        let host: Vec<Scalar> = Scalar::ALL.into_iter().filter(|s| !s.is_wide()).collect();
        assert_eq!(host, Scalar::HOST);
    }
}
