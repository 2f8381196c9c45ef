//! `kernel!` reports a malformed or ill-typed kernel as a compile error at the offending token.

#[test]
fn kernel_macro_errors_point_at_the_offending_token() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
