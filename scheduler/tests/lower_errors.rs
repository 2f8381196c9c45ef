//! Lowering refuses what bounds inference cannot bound: a function or input read at an index
//! that depends on data of an unbounded type; a narrow data-dependent index is fine.

use strata_dsl::parse_kernel;
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::text::parse_schedule;

fn lower_error(source: &str, schedule: &str) -> String {
    let pipeline = parse_kernel(source, "k").unwrap();
    lower(&pipeline, &parse_schedule(schedule).unwrap())
        .unwrap_err()
        .to_string()
}

#[test]
fn a_function_read_at_an_i32_loaded_from_an_input_is_unbounded() {
    let err = lower_error(
        "kernel k(A: i32[N]) -> O: i32[N] { g(x) = x * 2; O(i) = g(A(i)); }",
        "g: compute_root()",
    );
    assert_eq!(
        err,
        "cannot bound the region of `g` in dimension 0: an index depends on data of an unbounded type; clamp it"
    );
}

#[test]
fn an_input_gathered_at_an_i32_loaded_from_an_input_is_unbounded() {
    let err = lower_error(
        "kernel k(A: i32[N], T: f32[M]) -> O: f32[N] { O(i) = T(A(i)); }",
        "",
    );
    assert_eq!(
        err,
        "cannot bound the region of `T` in dimension 0: an index depends on data of an unbounded type; clamp it"
    );
}

#[test]
fn a_clamped_or_narrow_data_dependent_index_is_bounded() {
    let pipeline = parse_kernel(
        "kernel k(A: i32[N], B: u8[N], T: f32[256]) -> O: f32[N] { O(i) = T(clamp(A(i), 0, 255)) + T(B(i)); }",
        "k",
    )
    .unwrap();
    assert!(lower(&pipeline, &parse_schedule("").unwrap()).is_ok());
}
