//! Loop partitioning (`lower/partition_loops.rs`, issue 20): a loop whose body reads an input
//! through a boundary condition runs as a prologue, a steady state with the condition removed,
//! and an epilogue. The answer must not change: for every boundary condition strata has, stencils
//! reaching both ways (and far past the input, and inputs smaller than the stencil), under hand
//! schedules that tile, vectorize, unroll and compute producers inside tiles and under random
//! schedules, the interpreter and every backend (one and three threads) give the reference's
//! answer. A structural check keeps the partitioning itself from silently disappearing.

mod common;

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::random::random_args;
use strata_dsl::{evaluate, parse_kernel, Pipeline};
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::Schedule;
use strata_testkit::generate::random_schedule;

const BOUNDARIES: [&str; 4] = ["clamp_edge", "constant(7)", "mirror", "mirror_interior"];

/// A separable 3x3 blur reading one pixel before and after in each dimension, and a producer
/// reading three and five columns away (past the whole input when it is small).
fn blur(boundary: &str) -> Pipeline {
    let source = format!(
        "kernel blur(input: i32[H, W] with {boundary}) -> out: i32[H, W] {{
    bx(y, x) = input(y, x - 1) + input(y, x) * 2 + input(y, x + 1) - input(y, x + 5) + input(y - 3, x);
    out(y, x) = bx(y - 1, x) + bx(y, x) * 3 + bx(y + 1, x);
}}"
    );
    parse_kernel(&source, "blur.strata").unwrap_or_else(|e| panic!("{e}"))
}

const HAND_SCHEDULES: [&str; 6] = [
    "",
    "out: vectorize(x, 8)\nbx: compute_root().vectorize(x, 4)",
    "out: tile(y, x, yo, xo, yi, xi, 8, 16).vectorize(xi, 8).unroll(yi, 2).parallel(yo)\nbx: compute_at(out, xo).vectorize(x, 8).unroll(y, 2)",
    "out: split(x, xo, xi, 8, guard).vectorize(xi)\nbx: compute_at(out, y).split(x, xo, xi, 4, round_up).vectorize(xi)",
    "out: tile(y, x, yo, xo, yi, xi, 4, 4).parallel(yo)\nbx: compute_at(out, yo).split(y, yo, yi, 3).unroll(yi)",
    "out: fuse(y, x, t).split(t, to, ti, 8).vectorize(ti)\nbx: compute_root().reorder(y, x)",
];

const SHAPES: [(i64, i64); 6] = [(1, 1), (2, 3), (3, 1), (5, 9), (13, 37), (40, 70)];

/// The reference, the interpreter and every backend (one and three threads) agree at each of
/// `shapes` (`H`, `W`); the kernel is lowered and compiled once.
fn all_answer(p: &Pipeline, schedule: &Schedule, shapes: &[(i64, i64)]) {
    let context = format!("{:?}: schedule `{schedule}`", p.inputs[0].kind);
    let lowered =
        strata_scheduler::lower::lower(p, schedule).unwrap_or_else(|e| panic!("{context}: {e}"));
    let kernels =
        common::compile_with_every_backend(&p.to_string(), &schedule.to_string(), &lowered);
    for &(h, w) in shapes {
        let context = format!("{context} at H={h}, W={w}");
        let sizes = strata_dsl::sizes(&[("H", h), ("W", w)]);
        let args = random_args(p, &sizes, &mut StdRng::seed_from_u64(20)).unwrap();
        let expected = evaluate(p, &args).unwrap_or_else(|e| panic!("{context}: {e}"));
        common::all_agree(&lowered, &kernels, &args, &expected, 0.0, &[1, 3], &context);
    }
}

#[test]
fn every_boundary_under_hand_schedules_gives_the_reference_answer() {
    for boundary in BOUNDARIES {
        let p = blur(boundary);
        for text in HAND_SCHEDULES {
            let schedule = parse_schedule(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            all_answer(&p, &schedule, &SHAPES);
        }
    }
}

#[test]
fn every_boundary_under_random_schedules_gives_the_reference_answer() {
    let mut rng = StdRng::seed_from_u64(2020);
    for boundary in BOUNDARIES {
        let p = blur(boundary);
        for _ in 0..6 {
            let schedule = random_schedule(&p, &mut rng);
            all_answer(&p, &schedule, &[(2, 2), (7, 11), (24, 33)]);
        }
    }
}

/// With a boundary on the input, the tiled schedule's steady state reads the input with dense
/// vector loads: at least one loop is partitioned for every boundary condition, and some store
/// of `bx` reads the input with no clamp, select or reflection left in it.
#[test]
fn the_steady_state_reads_the_input_without_its_boundary() {
    let schedule = parse_schedule(HAND_SCHEDULES[2]).unwrap();
    for boundary in BOUNDARIES {
        let lowered = strata_scheduler::lower::lower(&blur(boundary), &schedule).unwrap();
        let text = lowered.body.to_string();
        assert!(
            text.contains(".steady."),
            "{boundary}: not partitioned:\n{text}"
        );
        let clean_store = text.lines().any(|line| {
            line.trim_start().starts_with("bx[")
                && line.contains("input[ramp(")
                && !line.contains("clamp")
                && !line.contains("select")
                && !line.contains('%')
        });
        assert!(
            clean_store,
            "{boundary}: no store of bx reads the input densely:\n{text}"
        );
    }
}
