//! Warnings for wasteful schedules. `warnings::recomputed`: a producer computed inside a loop
//! of its consumer that its values do not depend on is named, with the loops and where to
//! compute it instead; placements that do not recompute anything give no warning.
//! `warnings::serial_vectors`: a vectorized loop lowering left serial is named, with why.

use strata_dsl::{parse_kernel, Pipeline};
use strata_scheduler::ir::SerialReason;
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::warnings::{recomputed, serial_vectors, Recomputed};

const NORM: &str = "kernel norm(X: f32[R, C]) -> Y: f32[R, C] {
    ss(r) = sum(c in 0..C) X(r, c) * X(r, c);
    Y(r, c) = X(r, c) / sqrt(ss(r) + 1.0);
}";

fn warnings_for(pipeline: &Pipeline, schedule: &str) -> Vec<Recomputed> {
    let schedule = parse_schedule(schedule).unwrap_or_else(|e| panic!("{e}"));
    recomputed(&lower(pipeline, &schedule).unwrap_or_else(|e| panic!("{e}")))
}

fn norm() -> Pipeline {
    parse_kernel(NORM, "norm.strata").unwrap()
}

#[test]
fn a_row_sum_computed_per_element_is_named_with_where_to_compute_it() {
    let warnings = warnings_for(&norm(), "ss: compute_at(Y, c)");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = &warnings[0];
    assert_eq!(
        (w.func.as_str(), w.loops.as_slice()),
        ("ss", &["Y.s0.c".to_string()][..])
    );
    assert_eq!(w.instead.as_deref(), Some("Y.s0.r"));
    assert_eq!(
        w.to_string(),
        "`ss` computes the same values in every iteration of `Y`'s loop `c` (compute_at(Y, c)); \
         compute it at `Y`'s loop `r` (compute_at(Y, r)) instead"
    );
}

#[test]
fn recomputation_across_an_inner_tile_loop_is_counted_where_extents_are_constant() {
    let warnings = warnings_for(&norm(), "Y: split(c, co, ci, 8); ss: compute_at(Y, ci)");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].loops, ["Y.s0.co", "Y.s0.ci"]);
    assert_eq!(warnings[0].times, None, "co's extent depends on C");
    let pipeline = norm();
    let sized = strata_dsl::sizes(&[("R", 4), ("C", 32)]);
    let kernel = lower(
        &pipeline,
        &parse_schedule("Y: split(c, co, ci, 8); ss: compute_at(Y, ci)").unwrap(),
    )
    .unwrap();
    let kernel = strata_scheduler::lower::bind_sizes(&kernel, &sized).unwrap();
    assert_eq!(recomputed(&kernel)[0].times, Some(32));
}

#[test]
fn placements_that_compute_each_value_once_give_no_warning() {
    for schedule in [
        "",
        "ss: compute_at(Y, r)",
        "ss: compute_root()",
        "Y: parallel(r); ss: compute_at(Y, r)",
    ] {
        assert_eq!(warnings_for(&norm(), schedule), [], "{schedule}");
    }
}

/// blur3x3's hand schedule computes `bx` per tile of rows: each tile's rows differ, so no
/// warning; at the innermost column loop of a row, `bx`'s three rows of one column are still
/// needed per column (its region moves with `x`).
#[test]
fn stencil_producers_whose_region_moves_give_no_warning() {
    let path = format!(
        "{}/../examples/kernels/blur3x3.strata",
        env!("CARGO_MANIFEST_DIR")
    );
    let blur = parse_kernel(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
    for schedule in [
        "out: split(y, yo, yi, 8).vectorize(x, 8); bx: compute_at(out, yo).vectorize(x, 8)",
        "bx: compute_at(out, x)",
        "bx: compute_at(out, y)",
    ] {
        assert_eq!(warnings_for(&blur, schedule), [], "{schedule}");
    }
}

/// A producer read at a fixed point depends on no consumer loop: the advice is root.
#[test]
fn a_producer_depending_on_no_consumer_loop_is_advised_to_root() {
    let src = "kernel k(A: f32[K], B: f32[N]) -> out: f32[N] {
        g(x) = sum(k in 0..K) A(k) * f32(x);
        out(x) = B(x) + g(1);
    }";
    let pipeline = parse_kernel(src, "k.strata").unwrap();
    let warnings = warnings_for(&pipeline, "g: compute_at(out, x)");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].instead, None);
    assert!(
        warnings[0]
            .to_string()
            .ends_with("; compute it at root instead (compute_root())"),
        "{}",
        warnings[0]
    );
}

fn serial_vectors_for(pipeline: &Pipeline, schedule: &str) -> Vec<(String, SerialReason, String)> {
    let schedule = parse_schedule(schedule).unwrap_or_else(|e| panic!("{e}"));
    let kernel = lower(pipeline, &schedule).unwrap_or_else(|e| panic!("{e}"));
    let messages = serial_vectors(&kernel)
        .iter()
        .map(|w| w.to_string())
        .collect::<Vec<_>>();
    kernel
        .serial_vectors
        .iter()
        .zip(messages)
        .map(|(v, m)| (v.loop_name.clone(), v.reason, m))
        .collect()
}

/// Vectors of vectors do not exist: the outer of two vectorized loops in one nest runs
/// serially, and the schedule's author is told which and why.
#[test]
fn a_vectorized_loop_around_another_is_named_as_serial() {
    let schedule = "Y: split(c, co, ci, 4).split(co, coo, coi, 2).vectorize(ci).vectorize(coi)";
    let found = serial_vectors_for(&norm(), schedule);
    assert_eq!(
        found,
        [(
            "Y.s0.coi".to_string(),
            SerialReason::InnerLoopVectorized,
            "`Y: vectorize(coi)` runs as a serial loop: a loop inside it is vectorized already"
                .to_string()
        )]
    );
}

/// A `where` predicate reading the vectorized variable and an inner loop's cannot be tested
/// once for every lane.
#[test]
fn a_lane_dependent_predicate_keeps_an_update_loop_serial_and_says_so() {
    let masked = parse_kernel(
        "kernel masked(A: i32[N]) -> out: i32[N] {
            out(x) = 0;
            for (k in 0..N where (k + x) % 2 == 0) out(x) += A(k);
        }",
        "masked.strata",
    )
    .unwrap();
    let found = serial_vectors_for(&masked, "out.update(0): split(x, xo, xi, 4).vectorize(xi)");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "out.s1.xi");
    assert_eq!(found[0].1, SerialReason::LaneDependentCondition);
    assert!(
        found[0]
            .2
            .starts_with("`out.update(0): vectorize(xi)` runs as a serial loop: "),
        "{}",
        found[0].2
    );
}

/// A triangular reduction inside the vectorized loop: its bounds differ by lane, so the body
/// cannot be widened.
#[test]
fn a_loop_whose_inner_bounds_differ_by_lane_is_named_as_serial() {
    let tri = parse_kernel(
        "kernel tri(A: i32[N]) -> out: i32[N] {
            out(i) = 0;
            for (k in 0..i + 1) out(i) += A(k);
        }",
        "tri.strata",
    )
    .unwrap();
    let found = serial_vectors_for(&tri, "out.update(0): split(i, io, ii, 4).vectorize(ii)");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].0.as_str(), found[0].1),
        ("out.s1.ii", SerialReason::BodyNotWidenable)
    );
    assert!(
        found[0].2.starts_with(
            "`out.update(0): vectorize(ii)` runs as a serial loop: its body cannot be widened"
        ),
        "{}",
        found[0].2
    );
}

#[test]
fn loops_that_widen_give_no_serial_vector_warning() {
    for schedule in [
        "Y: split(c, co, ci, 4).vectorize(ci)",
        "Y: split(c, co, ci, 1).vectorize(ci)",
        "Y: split(c, co, ci, 8).vectorize(ci); ss: compute_at(Y, r)",
    ] {
        let found = serial_vectors_for(&norm(), schedule);
        assert!(found.is_empty(), "{schedule}: {found:?}");
    }
}
