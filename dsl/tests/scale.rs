//! Large inputs: checking takes time linear in the size of the file, and a long chain of
//! functions does not overflow the stack.

use std::time::{Duration, Instant};
use strata_dsl::parse_kernels;

/// Far more than linear checking needs for the inputs below (well under a second when
/// optimized), far less than quadratic checking took (about half a minute for 100,000 functions,
/// minutes for 100,000 kernels).
const TIME_LIMIT: Duration = Duration::from_secs(15);

#[track_caller]
fn checks_in_time(src: &str, kernels: usize) {
    let start = Instant::now();
    let checked = parse_kernels(src, "large.strata").expect("checks");
    let took = start.elapsed();
    assert_eq!(checked.len(), kernels);
    assert!(took < TIME_LIMIT, "checking took {took:?}");
}

#[test]
fn a_hundred_thousand_one_line_kernels_check_in_linear_time() {
    let src: String = (0..100_000)
        .map(|k| format!("kernel k{k}(A: f32[N]) -> B: f32[N] {{ B(i) = A(i) + 1.0; }}\n"))
        .collect();
    checks_in_time(&src, 100_000);
}

#[test]
fn a_hundred_thousand_chained_functions_check_in_linear_time() {
    let mut src = String::from("kernel chain(A: f32[N]) -> out: f32[N] {\n    h0(i) = A(i);\n");
    for k in 1..100_000 {
        src.push_str(&format!("    h{k}(i) = h{}(i) + 1.0;\n", k - 1));
    }
    src.push_str("    out(i) = h99999(i);\n}\n");
    checks_in_time(&src, 1);
}
