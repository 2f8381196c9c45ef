//! Lowering's size limits (`lower::limits`): past them a clear error, within them no stack
//! overflow, whatever stack the caller runs on (a test thread has 2 MiB).

use strata_dsl::parse_kernel;
use strata_scheduler::lower::limits::{MAX_COMPUTED_FUNCS, MAX_EXPR_DEPTH};
use strata_scheduler::lower::{lower, LowerError};
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::Schedule;

/// `h0(i) = A(i); h{k}(i) = h{k-1}(i) + 1.0; out(i) = h{n-1}(i)`: with the default schedule
/// every `h` is inlined into one expression `n + 1` deep.
fn chain(n: usize) -> String {
    let mut src = String::from("kernel chain(A: f32[N]) -> out: f32[N] {\n    h0(i) = A(i);\n");
    for k in 1..n {
        src.push_str(&format!("    h{k}(i) = h{}(i) + 1.0;\n", k - 1));
    }
    src.push_str(&format!("    out(i) = h{}(i);\n}}\n", n - 1));
    src
}

#[test]
fn an_inlined_chain_past_the_depth_limit_is_refused() {
    let pipeline = parse_kernel(&chain(10_000), "chain").unwrap();
    let err = lower(&pipeline, &Schedule::new()).unwrap_err();
    assert!(matches!(err, LowerError::TooLarge(_)), "{err}");
    assert!(
        err.to_string()
            .contains(&format!("lowering accepts at most {MAX_EXPR_DEPTH}")),
        "{err}"
    );
}

#[test]
fn the_deepest_inlined_chain_within_the_limit_lowers() {
    // `h{k}` is k + 2 deep (the call `A(i)` and its index are two levels), so `out` reading
    // `h{MAX - 2}` is exactly `MAX_EXPR_DEPTH` deep.
    let pipeline = parse_kernel(&chain(MAX_EXPR_DEPTH - 1), "chain").unwrap();
    lower(&pipeline, &Schedule::new()).unwrap();
    let pipeline = parse_kernel(&chain(MAX_EXPR_DEPTH), "chain").unwrap();
    assert!(matches!(
        lower(&pipeline, &Schedule::new()),
        Err(LowerError::TooLarge(_))
    ));
}

#[test]
fn computing_more_functions_than_the_limit_is_refused() {
    let n = MAX_COMPUTED_FUNCS; // and the output: one too many
    let defs: String = (0..n)
        .map(|k| format!("g{k}(i) = A(i) + {k}.0; "))
        .collect();
    let sum: Vec<String> = (0..n).map(|k| format!("g{k}(i)")).collect();
    let src = format!(
        "kernel fan(A: f32[N]) -> out: f32[N] {{ {defs} out(i) = {}; }}",
        sum.join(" + ")
    );
    let pipeline = parse_kernel(&src, "fan").unwrap();
    let roots: Vec<String> = (0..n).map(|k| format!("g{k}: compute_root()")).collect();
    let err = lower(&pipeline, &parse_schedule(&roots.join("; ")).unwrap()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "the kernel is too large to lower: the schedule computes {} functions; lowering \
             accepts at most {MAX_COMPUTED_FUNCS} (inline some of them)",
            n + 1
        )
    );
}
