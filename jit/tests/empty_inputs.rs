//! An empty input (an extent of 0) with a `constant(v)` boundary is read as `v` everywhere: the
//! reference answers, and so must every legal schedule (issue 19: every schedule was refused,
//! "input `X` is too small for this schedule: dimension 0 is read at -1..=-1, but its extent
//! is 0", and compiled code would have loaded from the empty buffer). An empty input with an
//! edge-repeating boundary (`clamp_edge`, `mirror`, `mirror_interior`) has no edge to repeat:
//! every executor refuses the call with the same error naming the input and its empty dimension.

mod common;

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::random::{agree, random_args};
use strata_dsl::{evaluate, parse_kernel, CallError, EvalError, Pipeline, Sizes};
use strata_jit::CompiledKernel;
use strata_scheduler::interp::{interpret, InterpError};
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::{LoweredKernel, Schedule};
use strata_testkit::generate::random_schedule;

const EMPTY_CONSTANT: &str =
    "kernel empty_constant(X: f32[N] with constant(7.0), Y: f32[M]) -> out: f32[M] {
    out(i) = X(i - 1) + Y(i);
}";

/// Two inputs with constant boundaries, one of them two-dimensional, read through a producer.
const TWO_CONSTANTS: &str = "kernel two_constants(A: i32[H, W] with constant(3), B: i32[W] with constant(-5), C: i32[H, W]) -> out: i32[H, W] {
    f(y, x) = A(y - 1, x + 1) * 2 + B(x - 2);
    out(y, x) = f(y, x) + f(y + 1, x) + C(y, x);
}";

fn pipeline(source: &str) -> Pipeline {
    parse_kernel(source, "test.strata").unwrap_or_else(|e| panic!("{e}"))
}

/// The reference, the loop-IR interpreter and the JIT (every backend, one and three threads)
/// answer `sizes` under `schedule`, and agree.
/// `lowered` compiled by every backend built in, verifier on.
fn every_backend(
    p: &Pipeline,
    schedule: &Schedule,
    lowered: &LoweredKernel,
) -> Vec<CompiledKernel> {
    common::compile_with_every_backend(&p.to_string(), &schedule.to_string(), lowered)
}

fn all_answer(pipeline: &Pipeline, schedule: &Schedule, sizes: &Sizes) {
    let context = format!("schedule `{schedule}` at {sizes:?}");
    let args = random_args(pipeline, sizes, &mut StdRng::seed_from_u64(3)).unwrap();
    let expected = evaluate(pipeline, &args).unwrap_or_else(|e| panic!("{context}: {e}"));
    let lowered = strata_scheduler::lower::lower(pipeline, schedule)
        .unwrap_or_else(|e| panic!("{context}: {e}"));
    let interpreted = interpret(&lowered, &args).unwrap_or_else(|e| panic!("{context}: {e}"));
    agree(&interpreted, &expected, 1e-4).unwrap_or_else(|e| panic!("{context}: {e}"));
    for kernel in every_backend(pipeline, schedule, &lowered) {
        for threads in [1, 3] {
            let backend = kernel.backend();
            let jitted = kernel
                .run(&args, threads)
                .unwrap_or_else(|e| panic!("{backend} {context}: {e}"));
            agree(&jitted, &expected, 1e-4).unwrap_or_else(|e| panic!("{backend} {context}: {e}"));
        }
    }
}

fn schedules(texts: &[&str]) -> Vec<Schedule> {
    texts
        .iter()
        .map(|t| parse_schedule(t).unwrap_or_else(|e| panic!("{t}: {e}")))
        .collect()
}

#[test]
fn an_empty_input_with_a_constant_boundary_reads_the_constant() {
    let pipeline = pipeline(EMPTY_CONSTANT);
    let hand = schedules(&[
        "",
        "out: split(i, io, ii, 4).vectorize(ii)",
        "out: split(i, io, ii, 8).vectorize(ii, 4).parallel(io)",
        "out: wrap(X, Xw).split(i, io, ii, 2).unroll(ii)\nXw: compute_root()",
        "out: wrap(X, Xw).split(i, io, ii, 4).vectorize(ii)\nXw: compute_at(out, io)",
    ]);
    for schedule in &hand {
        for (n, m) in [(0, 5), (0, 0), (1, 5), (6, 5), (0, 17)] {
            all_answer(
                &pipeline,
                schedule,
                &strata_dsl::sizes(&[("N", n), ("M", m)]),
            );
        }
    }
}

#[test]
fn empty_inputs_with_constant_boundaries_under_random_schedules() {
    let mut rng = StdRng::seed_from_u64(19);
    for source in [EMPTY_CONSTANT, TWO_CONSTANTS] {
        let pipeline = pipeline(source);
        for _ in 0..6 {
            let schedule = random_schedule(&pipeline, &mut rng);
            for shape in [
                [("N", 0), ("M", 9), ("H", 0), ("W", 6)],
                [("N", 3), ("M", 9), ("H", 4), ("W", 0)],
                [("N", 0), ("M", 1), ("H", 5), ("W", 7)],
            ] {
                let sizes: Sizes = shape
                    .iter()
                    .filter(|(name, _)| pipeline.size_vars().iter().any(|s| s == name))
                    .map(|(name, v)| (name.to_string(), *v))
                    .collect();
                all_answer(&pipeline, &schedule, &sizes);
            }
        }
    }
}

#[test]
fn two_inputs_with_constant_boundaries_either_or_both_empty() {
    let pipeline = pipeline(TWO_CONSTANTS);
    let hand = schedules(&[
        "",
        "f: compute_root().vectorize(x, 4)",
        "out: tile(y, x, yo, xo, yi, xi, 2, 4).vectorize(xi)\nf: compute_at(out, xo)",
    ]);
    // A has H rows and W columns and C the same shape, so A is empty exactly when the output
    // is; B (W) likewise: a separate kernel makes each empty on its own.
    for schedule in &hand {
        for (h, w) in [(3, 0), (0, 4), (4, 5)] {
            all_answer(
                &pipeline,
                schedule,
                &strata_dsl::sizes(&[("H", h), ("W", w)]),
            );
        }
    }
    let separate = self::pipeline(
        "kernel k(A: i32[P, Q] with constant(3), B: i32[R] with constant(-5), C: i32[H, W]) -> out: i32[H, W] {
            out(y, x) = A(y - 1, x + 1) * 2 + B(x - 2) + C(y, x);
        }",
    );
    for schedule in &schedules(&["", "out: vectorize(x, 4).parallel(y)"]) {
        for (p, q, r) in [(0, 3, 4), (2, 0, 4), (2, 3, 0), (0, 0, 0), (2, 3, 4)] {
            let sizes = strata_dsl::sizes(&[("P", p), ("Q", q), ("R", r), ("H", 3), ("W", 5)]);
            all_answer(&separate, schedule, &sizes);
        }
    }
}

/// `clamp_edge` and the mirrors on an empty input: the reference, the interpreter and the JIT
/// refuse with one error, which names the input and its empty dimension.
#[test]
fn an_empty_input_with_an_edge_boundary_is_refused_by_every_executor() {
    for boundary in ["clamp_edge", "mirror", "mirror_interior"] {
        let source = format!(
            "kernel k(X: f32[N, K] with {boundary}, Y: f32[M]) -> out: f32[M] {{ out(i) = X(i - 1, 0) + Y(i); }}"
        );
        let pipeline = pipeline(&source);
        let sizes = strata_dsl::sizes(&[("N", 0), ("K", 2), ("M", 5)]);
        let args = random_args(&pipeline, &sizes, &mut StdRng::seed_from_u64(3)).unwrap();
        let expected = match evaluate(&pipeline, &args) {
            Err(EvalError::Call(e @ CallError::ReadsEmptyInput { .. })) => e,
            other => panic!("{boundary}: the reference gave {other:?}"),
        };
        let message = expected.to_string();
        assert!(
            message.contains("`X`") && message.contains("dimension 0") && message.contains("empty"),
            "{message}"
        );
        for schedule in &schedules(&["", "out: vectorize(i, 4)"]) {
            let lowered = strata_scheduler::lower::lower(&pipeline, schedule).unwrap();
            match interpret(&lowered, &args) {
                Err(InterpError::Call(CallError::ReadsEmptyInput { input, dim, .. })) => {
                    assert_eq!((input.as_str(), dim), ("X", 0), "{boundary}")
                }
                other => panic!("{boundary} `{schedule}`: the interpreter gave {other:?}"),
            }
            for kernel in every_backend(&pipeline, schedule, &lowered) {
                match kernel.run(&args, 1) {
                    Err(CallError::ReadsEmptyInput { input, dim, .. }) => {
                        assert_eq!((input.as_str(), dim), ("X", 0), "{boundary}")
                    }
                    other => panic!("{boundary} `{schedule}`: the JIT gave {other:?}"),
                }
            }
        }
    }
}
