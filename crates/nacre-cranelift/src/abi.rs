//! How IR types and signatures map to Cranelift types and native signatures.
//!
//! Every IR function `f(p0, .., pn) -> r` becomes `extern "C" f(p0, .., pn, status) -> r` (see
//! the calling convention in `nacre-backend`): `bool` is an `i8` holding 0 or 1, integers keep
//! their width (Cranelift integers have no sign; the sign is in the operators), floats are
//! `f32`/`f64`, the half types `f16`/`bf16` are their 16-bit storage (`i16`, converted by
//! helper calls) and pointers are the target's pointer type. Parameters and results narrower
//! than 32 bits are marked for sign or zero extension, as C compilers (and `rustc`) expect at
//! call boundaries.

use cranelift_codegen::ir::{types, AbiParam, Signature as ClifSignature, Type as ClifType};
use cranelift_codegen::isa::CallConv;
use nacre_ir::{Scalar, Signature, Type};

/// The Cranelift type that holds values of an IR type.
pub(crate) fn clif_type(ty: Type, pointer: ClifType) -> ClifType {
    match ty {
        Type::Scalar(s) => scalar_type(s),
        Type::Ptr(..) => pointer,
    }
}

/// The Cranelift type that holds values of an IR scalar.
pub(crate) fn scalar_type(s: Scalar) -> ClifType {
    match s {
        Scalar::Bool | Scalar::I8 | Scalar::U8 => types::I8,
        // The half types are their 16-bit storage; they compute through `f32`.
        Scalar::I16 | Scalar::U16 | Scalar::F16 | Scalar::BF16 => types::I16,
        Scalar::I32 | Scalar::U32 => types::I32,
        Scalar::I64 | Scalar::U64 => types::I64,
        Scalar::I128 | Scalar::U128 => types::I128,
        Scalar::F32 => types::F32,
        Scalar::F64 => types::F64,
    }
}

/// The unsigned integer scalar with the width of a pointer, which is how casts treat pointers.
pub(crate) fn pointer_scalar(pointer: ClifType) -> Scalar {
    if pointer.bits() == 32 {
        Scalar::U32
    } else {
        Scalar::U64
    }
}

/// A native parameter or result of IR type `ty`, with the extension C expects.
pub(crate) fn abi_param(ty: Type, pointer: ClifType) -> AbiParam {
    let param = AbiParam::new(clif_type(ty, pointer));
    match ty {
        Type::Scalar(Scalar::I8 | Scalar::I16) => param.sext(),
        Type::Scalar(Scalar::Bool | Scalar::U8 | Scalar::U16 | Scalar::F16 | Scalar::BF16) => {
            param.uext()
        }
        _ => param,
    }
}

/// The native signature of an IR function, with the hidden `status` pointer last when
/// `with_status` is set (IR functions), or without it (external functions).
pub(crate) fn native_signature(
    sig: &Signature,
    pointer: ClifType,
    call_conv: CallConv,
    with_status: bool,
) -> ClifSignature {
    let mut out = ClifSignature::new(call_conv);
    out.params
        .extend(sig.params.iter().map(|&ty| abi_param(ty, pointer)));
    if with_status {
        out.params.push(AbiParam::new(pointer));
    }
    if let Some(ret) = sig.ret {
        out.returns.push(abi_param(ret, pointer));
    }
    out
}
