//! The high rung prints itself: print -> parse -> print is a fixed point for every example, the
//! re-parsed Pipeline equals the original, and the content hash ignores layout, comments and
//! redundant parentheses. The printed form of each example is a golden file (insta).

mod common;

use common::*;
use strata_dsl::parse_kernel;

#[test]
fn print_parse_print_is_a_fixed_point() {
    for name in EXAMPLES {
        let kernel = example(name);
        let printed = kernel.to_string();
        let reparsed = parse_kernel(&printed, "printed").unwrap_or_else(|e| panic!("{name}:\n{e}"));
        assert_eq!(reparsed, kernel, "{name}: re-parsed Pipeline differs");
        assert_eq!(
            reparsed.to_string(),
            printed,
            "{name}: second print differs"
        );
        assert_eq!(reparsed.hash(), kernel.hash(), "{name}: hash differs");
    }
}

#[test]
fn printed_examples_match_golden_files() {
    for name in EXAMPLES {
        insta::assert_snapshot!(name, example(name).to_string());
    }
}

#[test]
fn hash_ignores_layout_comments_and_redundant_parentheses() {
    let plain = parse_kernel(
        "kernel matmul(A: f32[M, K], B: f32[K, N]) -> C: f32[M, N] { C(i, j) = sum(k in 0..K) A(i, k) * B(k, j); }",
        "a",
    )
    .unwrap();
    let noisy = parse_kernel(
        "// a comment\nkernel matmul(A: f32[M, K],\n    B: f32[K, N]) -> C: f32[M, N]\n{\n  /* block */ C(i, j) = sum(k in 0..K) ((A(i, k)) * (B(k, j)));\n}\n",
        "b",
    )
    .unwrap();
    assert_eq!(plain.hash(), noisy.hash());
    assert_eq!(plain.hash(), example("matmul").hash());
}

#[test]
fn hash_changes_when_the_kernel_changes() {
    let base = example("matmul");
    let changed = parse_kernel(
        "kernel matmul(A: f32[M, K], B: f32[K, N]) -> C: f32[M, N] { C(i, j) = sum(k in 0..K) A(i, k) * B(k, j) + 1; }",
        "c",
    )
    .unwrap();
    assert_ne!(base.hash(), changed.hash());
    let hashes: std::collections::HashSet<_> = EXAMPLES.iter().map(|n| example(n).hash()).collect();
    assert_eq!(
        hashes.len(),
        EXAMPLES.len(),
        "every example hashes differently"
    );
}

#[test]
fn literals_print_with_the_type_they_were_given() {
    let kernel = parse_kernel(
        "kernel k(A: u8[N], B: f64[N], C: i64[N]) -> O: f64[N] {\n    t(i) = A(i) + 200;\n    u(i) = C(i) * -3;\n    O(i) = B(i) * 0.1 + f64(t(i)) + f64(u(i)) + 1e-7;\n}",
        "lit",
    )
    .unwrap();
    let printed = kernel.to_string();
    assert!(printed.contains("A(i) + 200u8"), "{printed}");
    assert!(printed.contains("C(i) * -3i64"), "{printed}");
    assert!(printed.contains("B(i) * 0.1f64"), "{printed}");
    assert!(printed.contains("1e-7f64"), "{printed}");
    assert_eq!(parse_kernel(&printed, "again").unwrap(), kernel);
}

#[test]
fn operators_keep_their_grouping_through_print() {
    let source = "kernel k(A: i32[N]) -> O: i32[N] {\n    O(i) = (A(i) - (A(i) - 1)) * -(A(i) + 2) / (3 % A(i)) - sum(r in 0..N) A(r) + select(A(i) < 0 && !(A(i) == 2 || A(i) > 5), 1, 2);\n}";
    let kernel = parse_kernel(source, "ops").unwrap();
    let printed = kernel.to_string();
    // A reduction's body extends as far right as it can, so the select is inside the sum.
    assert!(
        printed.contains("(A(i) - (A(i) - 1)) * -(A(i) + 2) / (3 % A(i)) - (sum(r in 0..N) A(r) + select(A(i) < 0 && !(A(i) == 2 || A(i) > 5), 1, 2))"),
        "{printed}"
    );
    assert_eq!(parse_kernel(&printed, "again").unwrap(), kernel);
}

proptest::proptest! {
    /// A value written as plain text (`--param`, the tuning database's record of parameters)
    /// reads back as the same value of the same type, for every type; NaN stays NaN.
    #[test]
    fn plain_text_reads_back_as_the_same_value(bits in proptest::num::u64::ANY, t in 0usize..10) {
        use strata_dsl::{Dtype, Value};
        let types = [Dtype::Bool, Dtype::U8, Dtype::U16, Dtype::U32, Dtype::I8, Dtype::I16,
            Dtype::I32, Dtype::I64, Dtype::F32, Dtype::F64];
        let dtype = types[t];
        let value = match dtype {
            Dtype::F32 => Value::F32(f32::from_bits(bits as u32)),
            Dtype::F64 => Value::F64(f64::from_bits(bits)),
            _ => Value::I64(bits as i64).cast(dtype),
        };
        let back = Value::parse_as(dtype, &value.plain_text());
        let back = back.unwrap_or_else(|| panic!("{value:?} as {:?} does not read back", value.plain_text()));
        if value.as_f64().is_nan() {
            proptest::prop_assert!(back.as_f64().is_nan() && back.dtype() == dtype);
        } else {
            proptest::prop_assert_eq!(back, value);
        }
    }
}

#[test]
fn parse_as_refuses_what_does_not_fit_its_type() {
    use strata_dsl::{Dtype, Value};
    assert_eq!(Value::parse_as(Dtype::U8, "300"), None);
    assert_eq!(Value::parse_as(Dtype::I8, "-129"), None);
    assert_eq!(Value::parse_as(Dtype::I32, "0.5"), None);
    assert_eq!(Value::parse_as(Dtype::Bool, "2"), None);
    assert_eq!(Value::parse_as(Dtype::F32, "x"), None);
    assert_eq!(Value::parse_as(Dtype::U8, " 255 "), Some(Value::U8(255)));
    assert_eq!(Value::parse_as(Dtype::F32, "0.5"), Some(Value::F32(0.5)));
}
