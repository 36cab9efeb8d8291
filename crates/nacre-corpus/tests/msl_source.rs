//! The MSL of every kernel of the kernel corpus, snapshot-tested: traced, optimised, given
//! address spaces and printed by the Metal backend. The output must be deterministic and free
//! of `goto`, and every kernel must carry its shared arrays as `threadgroup` storage. Every
//! kernel has two snapshots: unchecked (`Engine::compile_unchecked`) and bounds-checked as
//! `Engine::compile` makes it (the name with `__checked`).

use crate::emulation::Form;
use nacre_corpus::kernels::{all, without_metal};
use nacre_metal::{emit_msl, MslKernel};

fn msl_of(case: &nacre_corpus::kernels::KernelCase, form: Form) -> Vec<MslKernel> {
    let module = (case.trace)()
        .unwrap_or_else(|e| panic!("{}: {e}", case.name))
        .module;
    let verified = form.prepare(module).expect("verifies");
    emit_msl(&verified).unwrap_or_else(|e| panic!("{} ({form:?}): {e}", case.name))
}

#[test]
fn msl_of_every_corpus_kernel() {
    let mut kernels = 0;
    for case in all().into_iter() {
        for form in [Form::Unchecked, Form::Checked] {
            let msl = msl_of(&case, form);
            assert!(!msl.is_empty(), "{} launches no kernel", case.name);
            assert_eq!(
                msl,
                msl_of(&case, form),
                "{} ({form:?}): output is not deterministic",
                case.name
            );
            for k in msl {
                kernels += 1;
                assert!(!k.source.contains("goto"), "{}:\n{}", case.name, k.source);
                assert!(
                    k.source.contains(&format!("kernel void {}(", k.symbol)),
                    "{}:\n{}",
                    case.name,
                    k.source
                );
                if k.shared_bytes > 0 {
                    assert!(k.source.contains("threadgroup "), "{}", k.source);
                    assert!(
                        k.source
                            .contains("threadgroup_barrier(mem_flags::mem_threadgroup);"),
                        "{}",
                        k.source
                    );
                }
                let suffix = match form {
                    Form::Unchecked => "",
                    Form::Checked => "__checked",
                };
                insta::assert_snapshot!(format!("msl_{}__{}{suffix}", case.name, k.name), k.source);
            }
        }
    }
    assert!(kernels >= 2 * 17, "only {kernels} kernels");
}

/// Metal has no 128-bit integers: the kernels that use them are refused with a typed error
/// that names the type and the target.
#[test]
fn wide_integer_kernels_are_a_typed_error_on_metal() {
    let cases = without_metal();
    assert!(!cases.is_empty());
    for case in cases {
        let module = (case.trace)()
            .unwrap_or_else(|e| panic!("{}: {e}", case.name))
            .module;
        let verified = Form::Unchecked.prepare(module).expect("verifies");
        let e = emit_msl(&verified).expect_err("Metal refuses i128");
        let message = e.to_string();
        assert!(
            message.contains("i128") && message.contains("Metal"),
            "{}: {message}",
            case.name
        );
    }
}
