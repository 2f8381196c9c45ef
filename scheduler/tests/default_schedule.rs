//! What a schedule leaves unsaid: a pure function is inlined, but one holding an inline
//! reduction inside a larger expression (`rstd(r) = 1 / sqrt(sum(c in 0..C) ...)`) is computed
//! at root, as a function with an update is: inlined, it would redo its whole reduction for
//! every element of every consumer (layernorm: C times the work per row).

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::random::{agree, random_args};
use strata_dsl::{evaluate, parse_kernel, Pipeline};
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::lift_reductions::lift_reductions;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::schedule::validate::{validate, Placement};

const LAYERNORM: &str = "kernel layernorm(X: f32[R, C]) -> Y: f32[R, C] {
    mean(r) = sum(c in 0..C) X(r, c) / f32(C);
    rstd(r) = 1.0 / sqrt(sum(c in 0..C) (X(r, c) - mean(r)) * (X(r, c) - mean(r)) / f32(C) + 0.00001);
    shifted(r, c) = X(r, c) - mean(r);
    Y(r, c) = shifted(r, c) * rstd(r);
}";

fn pipeline() -> Pipeline {
    parse_kernel(LAYERNORM, "layernorm.strata").unwrap_or_else(|e| panic!("{e}"))
}

fn placement(schedule: &str, func: &str) -> Placement {
    let lifted = lift_reductions(&pipeline());
    let plan = validate(&lifted, &parse_schedule(schedule).unwrap()).unwrap();
    plan.funcs[func].compute.clone()
}

#[test]
fn a_function_holding_a_reduction_is_computed_at_root_by_default() {
    assert_eq!(placement("", "rstd"), Placement::Root);
    assert_eq!(
        placement("", "mean"),
        Placement::Root,
        "a whole-value reduction: an update"
    );
    assert_eq!(
        placement("", "shifted"),
        Placement::Inline,
        "no reduction: inlined"
    );
}

#[test]
fn an_explicit_inline_still_inlines_it() {
    assert_eq!(
        placement("rstd: compute_inline()", "rstd"),
        Placement::Inline
    );
}

#[test]
fn the_default_gives_the_reference_answer() {
    let pipeline = pipeline();
    let kernel = lower(&pipeline, &parse_schedule("").unwrap()).unwrap();
    let mut rng = StdRng::seed_from_u64(5);
    for (r, c) in [(3, 7), (1, 1), (4, 16)] {
        let sizes = strata_dsl::sizes(&[("R", r), ("C", c)]);
        let args = random_args(&pipeline, &sizes, &mut rng).unwrap();
        let got = interpret(&kernel, &args).unwrap();
        agree(&got, &evaluate(&pipeline, &args).unwrap(), 1e-4)
            .unwrap_or_else(|e| panic!("R={r} C={c}: {e}"));
    }
}

/// Layernorm as its mean and variance are usually written: each function holds its sum inside
/// a division, so lifting makes `mu_sum0` and `var_sum0`, and `mu` and `var` are computed at
/// root by default.
const LAYERNORM_MU: &str = "kernel layernorm(X: f32[R, C]) -> Y: f32[R, C] {
    mu(r) = (sum(c in 0..C) X(r, c)) / f32(C);
    var(r) = (sum(c in 0..C) (X(r, c) - mu(r)) * (X(r, c) - mu(r))) / f32(C);
    Y(r, c) = (X(r, c) - mu(r)) / sqrt(var(r) + 0.00001);
}";

/// The reference, and the interpreter under `schedule`, agree on a few shapes.
fn agrees_with_the_reference(pipeline: &Pipeline, schedule: &str) {
    let kernel = lower(pipeline, &parse_schedule(schedule).unwrap())
        .unwrap_or_else(|e| panic!("`{schedule}`: {e}"));
    let mut rng = StdRng::seed_from_u64(9);
    for (r, c) in [(3, 7), (1, 1), (4, 16), (0, 3)] {
        let sizes = strata_dsl::sizes(&[("R", r), ("C", c)]);
        let args = random_args(pipeline, &sizes, &mut rng).unwrap();
        let got = interpret(&kernel, &args).unwrap();
        agree(&got, &evaluate(pipeline, &args).unwrap(), 1e-4)
            .unwrap_or_else(|e| panic!("`{schedule}` R={r} C={c}: {e}"));
    }
}

/// Issue 19: `mu_sum0: compute_at(Y, r)` was valid while `mu` was inlined by default and was
/// refused once it was computed at root ("`mu` also reads this function outside it"). The
/// functions between a producer placed in a consumer's loop and that consumer, left unplaced,
/// are computed in that loop too: `mu`, and `var`, which reads `mu` (its sum follows it).
#[test]
fn unplaced_functions_between_a_producer_and_its_loop_follow_the_producer() {
    let pipeline = parse_kernel(LAYERNORM_MU, "layernorm.strata").unwrap();
    let lifted = lift_reductions(&pipeline);
    let schedule = "mu_sum0: compute_at(Y, r)";
    let plan = validate(&lifted, &parse_schedule(schedule).unwrap())
        .unwrap_or_else(|e| panic!("`{schedule}` was refused: {e}"));
    let at_y_r = |func: &str| match &plan.funcs[func].compute {
        Placement::At {
            func,
            stage: 0,
            var,
        } => func == "Y" && var == "r",
        _ => false,
    };
    for func in ["mu_sum0", "mu", "var"] {
        assert!(at_y_r(func), "{func}: {:?}", plan.funcs[func].compute);
    }
    assert!(
        matches!(&plan.funcs["var_sum0"].compute, Placement::At { func, .. } if func == "var"),
        "{:?}",
        plan.funcs["var_sum0"].compute
    );
    for schedule in [
        schedule,
        "mu_sum0: compute_at(Y, r)\nY: split(c, co, ci, 4).vectorize(ci)",
        "var_sum0: compute_at(Y, r)",
        "mu_sum0: compute_at(Y, r)\nvar_sum0: compute_at(Y, r)",
    ] {
        agrees_with_the_reference(&pipeline, schedule);
    }
}

/// A function placed by the schedule does not move, and one read outside the producer's loop
/// cannot follow it: the error then says whether the function reading the producer there is
/// at root by default, and how to place it.
#[test]
fn a_function_between_that_cannot_follow_is_named_with_its_default() {
    let pipeline = parse_kernel(LAYERNORM_MU, "layernorm.strata").unwrap();
    let refusal = |pipeline: &Pipeline, schedule: &str| {
        validate(
            &lift_reductions(pipeline),
            &parse_schedule(schedule).unwrap(),
        )
        .unwrap_err()
        .to_string()
    };
    let message = refusal(&pipeline, "mu_sum0: compute_at(Y, r)\nmu: compute_root()");
    assert!(
        message.contains("`mu` also reads this function outside it"),
        "{message}"
    );
    assert!(!message.contains("by default"), "{message}");
    // `Y` reads `mu` outside `g`'s loop, so `mu` cannot be computed in it.
    let outside = parse_kernel(
        "kernel k(X: f32[R, C]) -> Y: f32[R, C] {
            mu(r) = (sum(c in 0..C) X(r, c)) / f32(C);
            g(r, c) = X(r, c) - mu(r);
            Y(r, c) = g(r, c) * mu(r);
        }",
        "outside.strata",
    )
    .unwrap();
    let message = refusal(&outside, "g: compute_root()\nmu_sum0: compute_at(g, r)");
    assert_eq!(
        message,
        "in the schedule of `mu_sum0`: `compute_at(g, r)`: that loop does not enclose every use: `mu` also reads this function outside it (`mu` is computed at root by default, as a function holding a reduction is: place it in that loop with `mu: compute_at(g, r)`, or inline it with `mu: compute_inline()`); legal: compute_root(), or compute_at(mu, v) for v in r"
    );
}
