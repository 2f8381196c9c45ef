//! The app-sized examples (issue 20): `examples/kernels/interpolate.strata`, Halide's
//! `apps/interpolate` at 10 pyramid levels, and `local_laplacian.strata`, Halide's
//! `apps/local_laplacian` at 8, are the generator's kernels at those depths, and under their
//! hand schedules (`examples/schedules/`) every backend, on one and two threads, gives the
//! reference evaluator's answer at small odd sizes (smaller than the pyramid: the deepest
//! levels are a pixel wide, read through the boundary). So does `bilateral_grid.strata`,
//! Halide's `apps/bilateral_grid` (a data-dependent scatter into a grid, blurred and sampled
//! back), under its hand schedule and the default one.
//!
//! The inputs are drawn from [0.25, 1), like the alpha of an image: the kernel divides by the
//! interpolated alpha, and with the default random inputs in [-1, 1) that can be near zero,
//! where a one-ulp difference in any term (a fused multiply-add) moves the quotient past the
//! float tolerance under every schedule, the reference's own order included.

mod common;

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::random::random_args;
use strata_dsl::{evaluate, parse_kernel, Pipeline, Sizes, Value};
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::Schedule;
use strata_testkit::generate_apps::{interpolate, local_laplacian};

fn example_source(name: &str) -> String {
    let path = format!(
        "{}/../examples/kernels/{name}.strata",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn hand_schedule(name: &str) -> Schedule {
    let path = format!(
        "{}/../examples/schedules/{name}.sched",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    parse_schedule(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The source without its leading comment lines.
fn without_header(source: &str) -> String {
    let body: Vec<&str> = source.lines().skip_while(|l| l.starts_with("//")).collect();
    body.join("\n") + "\n"
}

#[test]
fn the_interpolate_example_is_the_generated_app() {
    assert_eq!(
        without_header(&example_source("interpolate")),
        interpolate(10)
    );
}

#[test]
fn the_local_laplacian_example_is_the_generated_app() {
    assert_eq!(
        without_header(&example_source("local_laplacian")),
        local_laplacian(8)
    );
}

/// Random inputs with every float input element moved from [-1, 1) into [0.25, 1).
fn image_like_args(p: &Pipeline, sizes: &Sizes) -> strata_dsl::Args {
    let mut args = random_args(p, sizes, &mut StdRng::seed_from_u64(20)).unwrap();
    for input in &p.inputs {
        let Some(buffer) = args.buffers.get_mut(&input.name) else {
            continue;
        };
        for i in 0..buffer.len() {
            if let Some(Value::F32(v)) = buffer.get_flat(i) {
                buffer.set_flat(i, Value::F32(0.25 + (v + 1.0) * 0.375));
            }
        }
    }
    args
}

/// One case of an app's check: its shape (`H`, `W`) and the scalar parameters it is given.
type AppCase = ((i64, i64), Vec<(&'static str, Value)>);

/// `name` under `schedule`, lowered and compiled once: at each case, on image-like inputs, the
/// interpreter and every backend (one and two threads) give the reference's answer.
fn app_gives_the_reference_answer(name: &str, schedule: &Schedule, cases: &[AppCase]) {
    let source = example_source(name);
    let p = parse_kernel(&source, &format!("{name}.strata")).unwrap();
    let lowered = strata_scheduler::lower::lower(&p, schedule).unwrap();
    let kernels = common::compile_with_every_backend(&source, &schedule.to_string(), &lowered);
    for ((h, w), scalars) in cases {
        let context = format!("{name} `{schedule}` at {h}x{w}, {scalars:?}");
        let sizes = strata_dsl::sizes(&[("H", *h), ("W", *w)]);
        let mut args = image_like_args(&p, &sizes);
        for (param, value) in scalars {
            args.scalars.insert(param.to_string(), *value);
        }
        let expected = evaluate(&p, &args).unwrap_or_else(|e| panic!("{context}: {e}"));
        common::all_agree(
            &lowered,
            &kernels,
            &args,
            &expected,
            1e-4,
            &[1, 2],
            &context,
        );
    }
}

#[test]
fn interpolate_under_its_hand_schedule_gives_the_reference_answer() {
    let cases = [((1, 1), vec![]), ((37, 19), vec![])];
    app_gives_the_reference_answer("interpolate", &hand_schedule("interpolate"), &cases);
}

/// Halide's local Laplacian under its CPU schedule, at Halide's parameters (8 intensity
/// levels, `alpha = beta = 1`) and at others (the LUT's range and the levels a pixel reads
/// follow `intensity_levels`, a run-time parameter). Each case computes the whole pyramid (the
/// coarsest level's stencils reach hundreds of pixels of the finest level, whatever the
/// image's size), which the reference and the interpreter take tens of seconds for in a test
/// build: two cases.
#[test]
fn local_laplacian_under_its_hand_schedule_gives_the_reference_answer() {
    let params = |levels: i32, alpha: f32, beta: f32| {
        vec![
            ("intensity_levels", Value::I32(levels)),
            ("alpha", Value::F32(alpha)),
            ("beta", Value::F32(beta)),
        ]
    };
    let cases = [
        ((1, 1), params(8, 1.0, 1.0)),
        ((9, 21), params(3, 2.5, 0.5)),
    ];
    let schedule = hand_schedule("local_laplacian");
    app_gives_the_reference_answer("local_laplacian", &schedule, &cases);
}

/// Halide's bilateral grid under its CPU schedule and the default one, at sizes smaller than a
/// grid cell, a few cells with partial ones at the edges, and Halide's range resolution
/// (`range_bins` 10, r_sigma = 0.1) and a coarser one.
#[test]
fn bilateral_grid_under_its_hand_schedule_gives_the_reference_answer() {
    let bins = |n: i32| vec![("range_bins", Value::I32(n))];
    let cases = [
        ((1, 1), bins(10)),
        ((37, 29), bins(10)),
        ((19, 70), bins(3)),
    ];
    for schedule in [hand_schedule("bilateral_grid"), Schedule::new()] {
        app_gives_the_reference_answer("bilateral_grid", &schedule, &cases);
    }
}
