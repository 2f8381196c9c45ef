//! Lowering's size limits (`lower::limits`, and the unrolled-copy limit validation enforces):
//! past them a clear error, within them no stack overflow, whatever stack the caller runs on
//! (a test thread has 2 MiB).

use strata_dsl::parse_kernel;
use strata_scheduler::lower::limits::{MAX_COMPUTED_FUNCS, MAX_EXPR_DEPTH, MAX_EXPR_NODES};
use strata_scheduler::lower::{lower, LowerError};
use strata_scheduler::schedule::lift_reductions::lift_reductions;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::schedule::validate::{validate, MAX_UNROLLED_COPIES};
use strata_scheduler::Schedule;
use strata_testkit::example;

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
/// took 30 s and 1 GB to lower). Inlined by the schedule, it is refused by size, quickly;
/// computing the middle level fits; the default computes at root what would multiply past
/// `DEFAULT_INLINE_NODES`, so it lowers.
#[test]
fn an_inlined_diamond_past_the_size_limit_is_refused() {
    let mut src = String::from("kernel diamond(A: f32[N]) -> out: f32[N] {\n    h0(i) = A(i);\n");
    for k in 1..40 {
        src.push_str(&format!("    h{k}(i) = h{}(i) + h{}(i);\n", k - 1, k - 1));
    }
    src.push_str("    out(i) = h39(i);\n}\n");
    let pipeline = parse_kernel(&src, "diamond").unwrap();
    lower(&pipeline, &Schedule::new()).unwrap();
    let inline = (0..40).map(|k| format!("h{k}: compute_inline()"));
    let inline = parse_schedule(&inline.collect::<Vec<_>>().join("; ")).unwrap();
    let start = std::time::Instant::now();
    let err = lower(&pipeline, &inline).unwrap_err();
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

/// Bounds inference took 33 s (release build) to lower this schedule, and more than 2 minutes
/// with the rest of its random schedule (seed 320891 of the jit's random pipelines,
/// 2026-12-01, where it stalled a long run): regions of wrappers fused over `(y, x)`, inside a
/// factored reduction, were substituted into one another. They are named lets now.
#[test]
fn nested_fused_wrappers_lower_promptly() {
    let pipeline = parse_kernel(
        r#"kernel generated(A: i32[N, M] with constant(-4), B: i32[N, M] with mirror_interior, k: i32) -> out: f64[N - 3, M - 1] {
    f0(y, x) = !!(A(y, x + 1) != i32(y));
    f1(y) = min(r1 in 0..M) i8(f0(y, r1));
    f2(y, x) = select(i64(f0(y, x)) <= (min(r2 in 1..2) i64(A(y + r2 + 2, x))), (-5i16 + i16(A(y, x))) / 4i16, prod(r3 in 0..1 where r3 != x) prod(r4 in 0..3) i16(A(y + r4 + 1, x + r3 + 1)));
    f2(y, x) = f2(y, x) * 2i16 + clamp(i16(f0(y - 1, x)), min(-2i16, 1i16), max(-2i16, 1i16));
    out(y, x) = select((min(r5 in 0..M) i64(k)) > i64(k), f64(B(clamp(i32(B(y, x + 2)), 0, N - 1), x)), select(f0(y, x), f64(k), -f64(f2(y, x + 1))));
}"#,
        "seed320891",
    )
    .unwrap();
    let schedule = parse_schedule(
        r#"f2_prod0.update(0): split(r3, r3o_5, r3i_6, 4).rfactor(r3i_6, f2_prod0_rf_4)
f2: tile(y, x, yo_12, xo_13, yi_14, xi_15, 3, 5)
f2_prod0_prod0: wrap(A, A_w_9)
f2_prod0_rf_4: wrap(f2_prod0_prod0, f2_prod0_prod0_w_10)
f2_prod0_rf_4.update(1): fuse(y, x, f_40)
f2_prod0_prod0_w_10: compute_root().fuse(y, x, f_45)
f2_prod0_prod0.update(0): fuse(y, x, f_48)
A_w_9: compute_root()"#,
    )
    .unwrap();
    let start = std::time::Instant::now();
    let lowered = lower(&pipeline, &schedule);
    let took = start.elapsed();
    // A hang guard, not a speed test: it took minutes when regions were substituted into
    // one another, about a second (debug build) since they are named lets.
    assert!(
        took.as_secs() < 60,
        "lowering took {took:?}: {:?}",
        lowered.err()
    );
}
