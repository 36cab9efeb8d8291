//! Structured output ([`crate::emit_c_structured`]): control flow without `goto`, compiled and
//! run on the host against the same module printed with labels.

use super::{function, konst, module};
use crate::{emit_c_structured, CBackend, COptions};
use nacre_backend::{Executable, Linkage};
use nacre_ir::{BinaryOp, CmpOp, Module, Type};

/// Two nested counted loops over `0..n`; the inner one leaves both when `i * j > limit`
/// (the structured form relays that break through `nacre_exit`), a division traps on zero
/// inside the inner loop, and the result packs where the loops stopped.
fn nested_break() -> Module {
    module(vec![function(
        "nested_break",
        &[Type::I32, Type::I32],
        Some(Type::I32),
        |b, p| {
            let (n, limit) = (p[0], p[1]);
            let zero = konst(b, Type::I32, 0);
            let one = konst(b, Type::I32, 1);
            let (oh, ob, ih, ib, inext, onext, exit) = (
                b.create_block(),
                b.create_block(),
                b.create_block(),
                b.create_block(),
                b.create_block(),
                b.create_block(),
                b.create_block(),
            );
            let i = b.append_block_param(oh, Type::I32);
            let j = b.append_block_param(ih, Type::I32);
            let r = b.append_block_param(exit, Type::I32);
            b.jump(oh, vec![zero]);
            b.switch_to_block(oh);
            let c = b.cmp(CmpOp::Lt, i, n);
            let minus = konst(b, Type::I32, (-1i32) as u32 as u64);
            b.branch(c, ob, vec![], exit, vec![minus]);
            b.switch_to_block(ob);
            b.jump(ih, vec![zero]);
            b.switch_to_block(ih);
            let c = b.cmp(CmpOp::Lt, j, n);
            b.branch(c, ib, vec![], onext, vec![]);
            b.switch_to_block(ib);
            let prod = b.binary(BinaryOp::Mul, i, j);
            let big = b.cmp(CmpOp::Gt, prod, limit);
            let thousand = konst(b, Type::I32, 1000);
            let packed = b.binary(BinaryOp::Mul, i, thousand);
            let packed = b.binary(BinaryOp::Add, packed, j);
            let q = b.binary(BinaryOp::Div, thousand, limit);
            let packed = b.binary(BinaryOp::Add, packed, q);
            b.branch(big, exit, vec![packed], inext, vec![]);
            b.switch_to_block(inext);
            let j2 = b.binary(BinaryOp::Add, j, one);
            b.jump(ih, vec![j2]);
            b.switch_to_block(onext);
            let i2 = b.binary(BinaryOp::Add, i, one);
            b.jump(oh, vec![i2]);
            b.switch_to_block(exit);
            b.ret(Some(r));
        },
    )])
}

#[test]
fn structured_c_has_no_goto_and_computes_the_same() {
    let m = nested_break();
    let verified = nacre_ir::verify(m).unwrap();
    let src = emit_c_structured(&verified).unwrap();
    assert!(!src.contains("goto"), "{src}");
    assert!(src.contains("nacre_exit = 1; break;"), "{src}");
    insta::assert_snapshot!("structured_nested_break", src);
    let plain = CBackend::new(COptions::default())
        .compile_module(&verified, &Linkage::default())
        .unwrap();
    let structured = CBackend::new(COptions::default())
        .with_structured_control_flow(true)
        .compile_module(&verified, &Linkage::default())
        .unwrap();
    assert!(structured.listing().is_some_and(|l| !l.contains("goto")));
    for n in [0u64, 1, 3, 7, 20] {
        for limit in [0i32, 1, 5, 30, 1000, -4] {
            let args = [n, limit as u32 as u64];
            assert_eq!(plain.call(&args), structured.call(&args), "{args:?}");
        }
    }
}
