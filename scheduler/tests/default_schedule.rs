//! What a schedule leaves unsaid: a pure function is inlined, but one holding an inline
//! reduction inside a larger expression (`rstd(r) = 1 / sqrt(sum(c in 0..C) ...)`) is computed
//! at root, as a function with an update is: inlined, it would redo its whole reduction for
//! every element of every consumer (layernorm: C times the work per row).

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::random::{agree, random_args};
use strata_dsl::{evaluate, parse_kernel, Pipeline};
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::lift_reductions::lift_reductions;
use strata_scheduler::lower::lower;
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
