//! Compile-fail tests: misuse of traced values and of `#[jit]` must fail with errors that
//! point at the user's code.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
