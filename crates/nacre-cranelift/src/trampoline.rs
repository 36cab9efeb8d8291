//! Array trampolines: the uniform entry through which [`nacre_backend::Executable::call`]
//! calls a compiled function of any signature.
//!
//! A trampoline is `extern "C" fn(callee, args: *const u64, status: *mut u32) -> u64`: it
//! loads each argument from `args[i]` (bits encoded as in [`nacre_ir::semantics`]: the value
//! zero-extended to 64 bits, so the low bytes are the value), calls `callee` with the native
//! calling convention and returns the result encoded the same way (0 when there is none). It
//! depends only on the signature, so a worker compiles one per signature and generation and
//! reuses it for every function of that signature.

use crate::abi;
use cranelift_codegen::ir::{self as clif, types, AbiParam, InstBuilder, MemFlagsData};
use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use nacre_ir::{Signature, Type};

/// The native type of an array trampoline.
pub(crate) type ArrayTrampoline =
    unsafe extern "C" fn(callee: *const u8, args: *const u64, status: *mut u32) -> u64;

/// The Cranelift signature of every array trampoline.
pub(crate) fn trampoline_signature(pointer: clif::Type, call_conv: CallConv) -> clif::Signature {
    let mut sig = clif::Signature::new(call_conv);
    sig.params.extend([
        AbiParam::new(pointer),
        AbiParam::new(pointer),
        AbiParam::new(pointer),
    ]);
    sig.returns.push(AbiParam::new(types::I64));
    sig
}

/// Builds the array trampoline for functions of IR signature `sig`, whose native signature is
/// `callee_sig`, into `out` (whose signature must be [`trampoline_signature`]).
pub(crate) fn build_trampoline(
    sig: &Signature,
    callee_sig: &clif::Signature,
    out: &mut clif::Function,
    fctx: &mut FunctionBuilderContext,
    frontend: TargetFrontendConfig,
    big_endian: bool,
) {
    let pointer = frontend.pointer_type();
    let mut b = FunctionBuilder::new(out, fctx);
    let block = b.create_block();
    b.append_block_params_for_function_params(block);
    b.switch_to_block(block);
    let (callee, args, status) = {
        let p = b.block_params(block);
        (p[0], p[1], p[2])
    };
    let mut call_args = Vec::with_capacity(sig.params.len() + 1);
    for (i, &ty) in sig.params.iter().enumerate() {
        let cty = abi::clif_type(ty, pointer);
        let low_bytes = if big_endian { 8 - cty.bytes() } else { 0 };
        let offset = (8 * i as u64 + u64::from(low_bytes)) as i32;
        let v = b.ins().load(cty, MemFlagsData::trusted(), args, offset);
        let v = if ty.is_bool() {
            b.ins().band_imm_u(v, 1)
        } else {
            v
        };
        call_args.push(v);
    }
    call_args.push(status);
    let sig_ref = b.import_signature(callee_sig.clone());
    let call = b.ins().call_indirect(sig_ref, callee, &call_args);
    let result = b.inst_results(call).first().copied();
    let bits = match (result, sig.ret) {
        (Some(r), Some(ty)) => encode(&mut b, r, ty, pointer),
        _ => b.ins().iconst(types::I64, 0),
    };
    b.ins().return_(&[bits]);
    b.seal_all_blocks();
    b.finalize(frontend);
}

/// Encodes a value of IR type `ty` as 64 bits (the encoding of [`nacre_ir::semantics`]):
/// integers, `bool` and pointers zero-extended, floats as their bits.
pub(crate) fn encode(
    b: &mut FunctionBuilder<'_>,
    r: clif::Value,
    ty: Type,
    pointer: clif::Type,
) -> clif::Value {
    match abi::clif_type(ty, pointer) {
        types::F32 => {
            let bits = b.ins().bitcast(types::I32, MemFlagsData::new(), r);
            b.ins().uextend(types::I64, bits)
        }
        types::F64 => b.ins().bitcast(types::I64, MemFlagsData::new(), r),
        types::I64 => r,
        _ => b.ins().uextend(types::I64, r),
    }
}
