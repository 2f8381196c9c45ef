//! Regions written in terms of scalar parameters (issue 20, item 3): a data-dependent index
//! clamped with bounds that read an integer parameter, as Halide's local Laplacian clamps its
//! LUT index with `(levels - 1) * 256`. The producer's region, its allocation and the call's
//! check of an input's region then depend on the parameter's value. Every schedule (hand and
//! random) gives the reference's answer, on the interpreter and every backend, for values that
//! make the clamp's range empty, a point, or wide; a value that makes the code read past an
//! input is refused by the call, naming the input and the region, before anything runs.

mod common;

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::random::random_args;
use strata_dsl::{evaluate, parse_kernel, Args, CallError, Pipeline, Value};
use strata_scheduler::interp::interpret;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::Schedule;
use strata_testkit::generate::random_schedule;

/// `remap` is a table computed over the range the clamp allows; `table` an input read at an
/// index clamped with `top`.
const SOURCE: &str = "kernel lut(input: i32[H, W] with clamp_edge, table: i32[T], levels: i32, top: i32) -> out: i32[H, W] {
    remap(i) = i * 3 - 7;
    lookup(y, x) = remap(clamp(input(y, x) % 50, 0, (levels - 1) * 4)) + table(clamp(input(y, x) % 20, 0, top));
    out(y, x) = lookup(y, x) - lookup(y, x + 1) / 2;
}";

fn pipeline() -> Pipeline {
    parse_kernel(SOURCE, "lut.strata").unwrap_or_else(|e| panic!("{e}"))
}

const HAND_SCHEDULES: [&str; 5] = [
    "",
    "remap: compute_root()",
    "remap: compute_root().vectorize(i, 8)\nlookup: compute_at(out, y)\nout: vectorize(x, 4)",
    "remap: compute_at(out, y).split(i, io, ii, 4)\nout: parallel(y)",
    "remap: compute_root().parallel(i)\nlookup: compute_root().vectorize(x, 4)\nout: tile(y, x, yo, xo, yi, xi, 4, 4)",
];

/// `(levels, top)`: the clamp's upper bound below its lower one, at it, and well above.
const PARAMS: [(i32, i32); 5] = [(-3, 0), (0, 4), (1, 8), (4, 2), (20, 8)];

fn args(p: &Pipeline, levels: i32, top: i32) -> Args {
    let sizes = strata_dsl::sizes(&[("H", 7), ("W", 13), ("T", 9)]);
    let mut args = random_args(p, &sizes, &mut StdRng::seed_from_u64(3)).unwrap();
    args.scalars.insert("levels".into(), Value::I32(levels));
    args.scalars.insert("top".into(), Value::I32(top));
    args
}

/// The reference, the interpreter and every backend (one and three threads) agree for every
/// value of the parameters.
fn all_answer(p: &Pipeline, schedule: &Schedule) {
    let lowered = strata_scheduler::lower::lower(p, schedule)
        .unwrap_or_else(|e| panic!("schedule `{schedule}`: {e}"));
    let kernels = common::compile_with_every_backend(SOURCE, &schedule.to_string(), &lowered);
    for (levels, top) in PARAMS {
        let context = format!("schedule `{schedule}`, levels={levels}, top={top}");
        let args = args(p, levels, top);
        let expected = evaluate(p, &args).unwrap_or_else(|e| panic!("{context}: {e}"));
        common::all_agree(&lowered, &kernels, &args, &expected, 0.0, &[1, 3], &context);
    }
}

#[test]
fn a_region_clamped_by_a_parameter_gives_the_reference_answer_under_hand_schedules() {
    let p = pipeline();
    for text in HAND_SCHEDULES {
        all_answer(&p, &parse_schedule(text).unwrap());
    }
}

#[test]
fn a_region_clamped_by_a_parameter_gives_the_reference_answer_under_random_schedules() {
    let p = pipeline();
    for seed in 0..8 {
        all_answer(&p, &random_schedule(&p, &mut StdRng::seed_from_u64(seed)));
    }
}

/// The computed table's extent follows the parameter: the lowered code allocates it with an
/// extent that reads `levels`, not a constant (a region widened to the index's type would be
/// refused as too large, as it was before parameters were allowed in regions).
#[test]
fn the_computed_table_is_allocated_by_the_parameter() {
    let p = pipeline();
    let lowered =
        strata_scheduler::lower::lower(&p, &parse_schedule("remap: compute_root()").unwrap())
            .unwrap();
    let text = lowered.to_string();
    let extent = (text.lines())
        .find(|l| l.contains("let remap.buffer.extent.0"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(extent.contains("levels"), "{text}");
}

/// A value of `top` that reads past `table` is refused by the call (interpreter and every
/// backend), naming the input and the region read; so is one below it.
#[test]
fn a_parameter_that_reads_past_an_input_is_refused_by_the_call() {
    let p = pipeline();
    let schedule = parse_schedule("remap: compute_root()").unwrap();
    let lowered = strata_scheduler::lower::lower(&p, &schedule).unwrap();
    let kernels = common::compile_with_every_backend(SOURCE, &schedule.to_string(), &lowered);
    for (top, min, max) in [(9, 0, 9), (-1, -1, -1)] {
        let args = args(&p, 2, top);
        let refused = |e: CallError| match e {
            CallError::InputTooSmall {
                input,
                min: got_min,
                max: got_max,
                extent: 9,
                ..
            } => assert!(
                input == "table" && got_min == min && got_max == max,
                "top={top}: {input} {got_min}..={got_max}"
            ),
            other => panic!("top={top}: {other}"),
        };
        match interpret(&lowered, &args) {
            Err(strata_scheduler::interp::InterpError::Call(e)) => refused(e),
            other => panic!("top={top}: {other:?}"),
        }
        for kernel in &kernels {
            refused(kernel.run(&args, 1).map(|_| ()).unwrap_err());
        }
    }
}
