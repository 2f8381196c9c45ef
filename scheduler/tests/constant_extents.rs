//! `unroll(v)` and `vectorize(v)` without a factor need a loop of constant extent; where only
//! bounds inference knows that extent (a producer computed inside its consumer has as many
//! rows as the consumer reads), lowering finds it and accepts the directive, as Halide does
//! (`lower::constant_extents`). Where the extent is not a constant, the directive is refused
//! with the error naming the function, the directive, the loop and the rule, and the limits on
//! unroll factors and unrolled copies count the extents found.

use strata_dsl::random::{agree, random_args};
use strata_dsl::{evaluate, parse_kernel, Pipeline, Sizes};
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::lift_reductions::lift_reductions;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::schedule::validate::validate;
use strata_scheduler::ForKind;
use strata_testkit::example;

/// `g` reads three rows of `f`: computed at `g.x`, `f` has 3 rows and 1 column.
const STENCIL: &str = "kernel st(I: f32[H, W]) -> g: f32[H - 2, W] {
    f(y, x) = I(y, x) * 2.0;
    g(y, x) = f(y, x) + f(y + 1, x) + f(y + 2, x);
}";

fn pipeline(source: &str) -> Pipeline {
    parse_kernel(source, "test.strata").unwrap_or_else(|e| panic!("{e}"))
}

/// The loop IR of `source` under `schedule`, printed.
fn lowered(source: &str, schedule: &str) -> String {
    let schedule = parse_schedule(schedule).unwrap_or_else(|e| panic!("{e}"));
    match lower(&pipeline(source), &schedule) {
        Ok(kernel) => kernel.to_string(),
        Err(e) => panic!("`{schedule}` should lower: {e}"),
    }
}

/// The message lowering `pipeline` under `schedule` fails with.
fn lower_error(pipeline: &Pipeline, schedule: &str) -> String {
    let schedule = parse_schedule(schedule).unwrap_or_else(|e| panic!("{e}"));
    match lower(pipeline, &schedule) {
        Ok(kernel) => panic!("`{schedule}` should be refused:\n{kernel}"),
        Err(e) => e.to_string(),
    }
}

/// The lines of `text` from the one starting (after indentation) with `first` to the line
/// closing it, indentation removed.
fn block(text: &str, first: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim_start().starts_with(first))
        .unwrap_or_else(|| panic!("no `{first}` in:\n{text}"));
    let indent = lines[start].len() - lines[start].trim_start().len();
    let end = (start + 1..lines.len())
        .find(|&i| lines[i].len() - lines[i].trim_start().len() == indent)
        .unwrap_or(lines.len() - 1);
    lines[start..=end]
        .iter()
        .map(|l| l.trim())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_producer_inside_its_consumer_unrolls_into_one_copy_per_row() {
    let ir = lowered(STENCIL, "f: compute_at(g, x).unroll(y)");
    assert_eq!(
        block(&ir, "produce f"),
        "produce f {
f[0] = I[g.s0.y * W + g.s0.x] * 2.0
let f.s0.y = g.s0.y + 1
f[1] = I[f.s0.y * W + g.s0.x] * 2.0
let f.s0.y = g.s0.y + 2
f[f.s0.y - g.s0.y] = I[f.s0.y * W + g.s0.x] * 2.0
}",
        "{ir}"
    );
    assert!(ir.contains("allocate f: f32[3]"), "{ir}");
}

#[test]
fn a_producer_inside_its_consumer_vectorizes_into_one_vector() {
    let ir = lowered(STENCIL, "f: compute_at(g, x).vectorize(y)");
    assert_eq!(
        block(&ir, "produce f"),
        "produce f {
f[ramp(0, 1, 3)] = I[ramp(g.s0.y * W + g.s0.x, W, 3)] as f32x3 * x3(2.0)
}",
        "{ir}"
    );
}

/// A wrapper of a 3x3 window's weights, copied per channel: its window loops have extent 3.
#[test]
fn a_wrapped_window_computed_per_channel_vectorizes_and_unrolls() {
    let depthwise = "kernel dw(I: f32[C, H, W], K: f32[C, 3, 3]) -> O: f32[C, H - 2, W - 2] {
        O(c, y, x) = sum(ky in 0..3, kx in 0..3) I(c, y + ky, x + kx) * K(c, ky, kx);
    }";
    let ir = lowered(
        depthwise,
        "O: wrap(K, Kw); Kw: compute_at(O.update(0), c).unroll(ky).vectorize(kx)",
    );
    let produce = block(&ir, "produce Kw");
    assert_eq!(produce.matches("ramp(").count(), 6, "{ir}");
    assert!(!produce.contains("for "), "{ir}");
}

/// Every schedule above computes what the reference computes, at shapes with an empty output
/// and a single column too.
#[test]
fn the_answer_does_not_change() {
    let pipeline = pipeline(STENCIL);
    let schedules = [
        "f: compute_at(g, x).unroll(y)",
        "f: compute_at(g, x).vectorize(y)",
        "g: split(x, xo, xi, 4); f: compute_at(g, xi).unroll(y)",
        "g: parallel(y).vectorize(x, 4); f: compute_at(g, x).unroll(y)",
    ];
    for schedule in schedules {
        let kernel = lower(&pipeline, &parse_schedule(schedule).unwrap())
            .unwrap_or_else(|e| panic!("{schedule}: {e}"));
        for (h, w) in [(7, 9), (3, 1), (2, 5)] {
            let sizes: Sizes = strata_dsl::sizes(&[("H", h), ("W", w)]);
            let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(h as u64);
            let args = random_args(&pipeline, &sizes, &mut rng).unwrap();
            let expected = evaluate(&pipeline, &args).unwrap();
            let got = interpret(&kernel, &args).unwrap_or_else(|e| panic!("{schedule}: {e}"));
            agree(&got, &expected, 1e-6).unwrap_or_else(|e| panic!("{schedule} H={h} W={w}: {e}"));
        }
    }
}

/// Validation cannot know the extent, so it records the loop for lowering to check.
#[test]
fn validation_leaves_the_extent_to_lowering() {
    let lifted = lift_reductions(&pipeline(STENCIL));
    let plan = validate(
        &lifted,
        &parse_schedule("f: compute_at(g, x).unroll(y)").unwrap(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let stage = &plan.funcs["f"].stages[0];
    assert_eq!(stage.deferred.len(), 1);
    assert_eq!(stage.deferred[0].var, "y");
    assert_eq!(stage.deferred[0].kind, ForKind::Unrolled);
    assert_eq!(stage.deferred[0].directive, "unroll(y)");
}

#[test]
fn vectorize_without_width_on_a_non_constant_extent() {
    assert_eq!(
        lower_error(&example("matmul"), "C: vectorize(j)"),
        "in the schedule of `C`: `vectorize(j)`: the extent of `j` is not a constant once bounds are inferred; give a width (e.g. `vectorize(j, 8)`) or split it first"
    );
}

#[test]
fn unroll_without_factor_on_a_non_constant_extent() {
    assert_eq!(
        lower_error(&example("brighten"), "out: unroll(x)"),
        "in the schedule of `out`: `unroll(x)`: the extent of `x` is not a constant once bounds are inferred; give a factor (e.g. `unroll(x, 4)`) or split it first"
    );
}

/// A tile whose tail is guarded reads fewer columns at the edge, so the producer computed per
/// tile has a varying extent: refused, naming the producer's loop.
#[test]
fn a_producer_in_a_guarded_tile_has_no_constant_extent() {
    assert_eq!(
        lower_error(
            &pipeline(STENCIL),
            "g: split(x, xo, xi, 8, guard); f: compute_at(g, xo).unroll(x)"
        ),
        "in the schedule of `f`: `unroll(x)`: the extent of `x` is not a constant once bounds are inferred; give a factor (e.g. `unroll(x, 4)`) or split it first"
    );
}

/// The unroll factor's limit applies to the extent bounds inference finds.
#[test]
fn an_extent_found_past_the_unroll_limit_is_refused() {
    let tall = "kernel tall(I: f32[H, W]) -> g: f32[H - 299, W] {
        f(y, x) = I(y, x) * 2.0;
        g(y, x) = f(y, x) + f(y + 299, x);
    }";
    assert_eq!(
        lower_error(&pipeline(tall), "f: compute_at(g, x).unroll(y)"),
        "in the schedule of `f`: `unroll(y)`: an unroll factor of 300 is out of range; use 1 to 256"
    );
}

/// Unrolled copies multiply with the unrolled loops around the producer, counting the extent
/// found: 8 columns x 200 rows.
#[test]
fn copies_counting_an_extent_found_past_the_limit_are_refused() {
    let tall = "kernel tall(I: f32[H, W]) -> g: f32[H - 199, W] {
        f(y, x) = I(y, x) * 2.0;
        g(y, x) = f(y, x) + f(y + 199, x);
    }";
    assert_eq!(
        lower_error(
            &pipeline(tall),
            "g: split(x, xo, xi, 8).unroll(xi); f: compute_at(g, xi).unroll(y)"
        ),
        "the schedule unrolls `f` into 1600 copies of its body (its own unrolled loops and those it is computed inside, multiplied); at most 1024 keep compile time and code size bounded: unroll fewer or smaller loops"
    );
}

/// The outer part `vectorize(ji, 16)` leaves of a loop split by 32 has the constant extent
/// `(32 + 15) / 16 = 2`, which the schedule fixes but no pass had folded: `unroll(ji)` on it was
/// silently lowered as a serial loop. It is unrolled into 2 vector bodies.
#[test]
fn unrolling_the_outer_part_of_a_vectorized_loop_unrolls_it() {
    let matmul = "kernel mm(A: f32[M, K], B: f32[K, N]) -> C: f32[M, N] {
        C(i, j) = sum(k in 0..K) A(i, k) * B(k, j);
    }";
    let schedule = "C.update(0): split(j, jo, ji, 32).vectorize(ji, 16).unroll(ji)";
    let ir = lowered(matmul, schedule);
    assert!(!ir.contains("for C.s1.ji.o"), "`ji` still a loop:\n{ir}");
    let stores = ir.lines().filter(|l| l.contains("C[ramp(")).count();
    assert_eq!(stores, 2, "one vector store per unrolled copy:\n{ir}");
    let p = pipeline(matmul);
    let kernel = lower(&p, &parse_schedule(schedule).unwrap()).unwrap();
    for (m, k, n) in [(3, 5, 70), (1, 1, 32), (2, 3, 17)] {
        let sizes: Sizes = strata_dsl::sizes(&[("M", m), ("K", k), ("N", n)]);
        let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(n as u64);
        let args = random_args(&p, &sizes, &mut rng).unwrap();
        let expected = evaluate(&p, &args).unwrap();
        let got = interpret(&kernel, &args).unwrap_or_else(|e| panic!("{e}"));
        agree(&got, &expected, 1e-5).unwrap_or_else(|e| panic!("M={m} K={k} N={n}: {e}"));
    }
}
