//! Lowering's size limits (`lower::limits`, and the unrolled-copy limit validation enforces):
//! past them a clear error, within them no stack overflow, whatever stack the caller runs on
//! (a test thread has 2 MiB).

use strata_dsl::parse_kernel;
use strata_scheduler::lower::lift_reductions::lift_reductions;
use strata_scheduler::lower::limits::{MAX_COMPUTED_FUNCS, MAX_EXPR_DEPTH, MAX_EXPR_NODES};
use strata_scheduler::lower::{lower, LowerError};
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::schedule::validate::{validate, MAX_UNROLLED_COPIES};
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

/// `h{k}(i) = h{k-1}(i) + h{k-1}(i)`: inlining doubles the expression per level (24 levels
/// took 30 s and 1 GB to lower). Refused by size, quickly; computing the middle level fits.
#[test]
fn an_inlined_diamond_past_the_size_limit_is_refused() {
    let mut src = String::from("kernel diamond(A: f32[N]) -> out: f32[N] {\n    h0(i) = A(i);\n");
    for k in 1..40 {
        src.push_str(&format!("    h{k}(i) = h{}(i) + h{}(i);\n", k - 1, k - 1));
    }
    src.push_str("    out(i) = h39(i);\n}\n");
    let pipeline = parse_kernel(&src, "diamond").unwrap();
    let start = std::time::Instant::now();
    let err = lower(&pipeline, &Schedule::new()).unwrap_err();
    assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());
    assert!(
        err.to_string()
            .contains(&format!("lowering accepts at most {MAX_EXPR_NODES}")),
        "{err}"
    );
    let split = (1..40).step_by(8).map(|k| format!("h{k}: compute_root()"));
    let schedule = parse_schedule(&split.collect::<Vec<_>>().join("; ")).unwrap();
    lower(&pipeline, &schedule).unwrap();
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

fn example(name: &str) -> strata_dsl::Pipeline {
    let path = format!(
        "{}/../examples/kernels/{name}.strata",
        env!("CARGO_MANIFEST_DIR")
    );
    parse_kernel(&std::fs::read_to_string(&path).unwrap(), &path).unwrap()
}

fn validated(kernel: &str, schedule: &str) -> Result<(), String> {
    let lifted = lift_reductions(&example(kernel));
    validate(&lifted, &parse_schedule(schedule).unwrap())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Each unroll factor is capped, but nested unrolled loops multiply: 256 x 256 x 4 = 262,144
/// copies of matmul's update took minutes and gigabytes to compile. Validation refuses them.
#[test]
fn nested_unrolled_loops_past_the_copy_limit_are_refused() {
    let err = validated(
        "matmul",
        "C.update(0): split(i, io, ii, 256).split(j, jo, ji, 256).split(k, ko, kk, 4)\
         .reorder(io, jo, ko, kk, ii, ji).unroll(ii).unroll(ji).unroll(kk)",
    )
    .unwrap_err();
    assert_eq!(
        err,
        format!(
            "the schedule unrolls `C.update(0)` into 262144 copies of its body (its own \
             unrolled loops and those it is computed inside, multiplied); at most \
             {MAX_UNROLLED_COPIES} keep compile time and code size bounded: unroll fewer or \
             smaller loops"
        )
    );
}

/// A producer computed inside a consumer's unrolled loop is copied with it.
#[test]
fn unrolled_loops_around_a_placement_count_too() {
    let at = |rows: usize| {
        format!("out: split(y, yo, yi, {rows}).unroll(yi); bx: compute_at(out, yi).split(x, xo, xi, 64).unroll(xi)")
    };
    // 16 x 64 = 1024 copies of `bx` is the limit; 32 x 64 is past it.
    assert_eq!(MAX_UNROLLED_COPIES, 1024);
    validated("blur3x3", &at(16)).unwrap();
    let err = validated("blur3x3", &at(32)).unwrap_err();
    assert!(
        err.starts_with("the schedule unrolls `bx` into 2048 copies"),
        "{err}"
    );
}
