//! The answer never depends on the schedule: for every example kernel, many random legal
//! schedules (from `strata_testkit::generate::random_schedule`) on random shapes (sizes not divisible by any
//! factor, size 1, primes) are lowered, run by the loop-IR interpreter and compared with the
//! reference evaluator: integers exactly, floats within 1e-4 relative (reassociated sums).
//!
//! A `round_up` tail computes past the needed region and so may read past an input without a
//! boundary condition: such a kernel refuses inputs smaller than it reads
//! (`CallError::InputTooSmall`) before running. That refusal is the only accepted outcome
//! other than the reference's answer, and only for schedules that use `round_up`.
//!
//! `STRATA_CASES=n` sets the cases per kernel (default 300); a failure prints the seed, and
//! `STRATA_SEED=s` replays one case.

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::random::{agree, random_args};
use strata_dsl::{evaluate, Pipeline};
use strata_scheduler::interp::{interpret, InterpError};
use strata_scheduler::lower::lower;
use strata_testkit::differential::{refused_for_round_up, run_cases, seeds, Outcome};
use strata_testkit::generate::random_schedule;
use strata_testkit::{example, example_schedule, example_sizes, Widths};

const FLOAT_TOLERANCE: f64 = 1e-4;

/// Runs one seeded case: a random schedule and random shape. Returns the failure, if any.
fn case(name: &str, pipeline: &Pipeline, seed: u64) -> Result<Outcome, String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let schedule = random_schedule(pipeline, &mut rng);
    let sizes = example_sizes(name, Widths::Interpreted, &mut rng);
    let args = random_args(pipeline, &sizes, &mut rng)?;
    let context =
        |what: String| format!("{name} seed {seed} sizes {sizes:?}\nschedule:\n{schedule}\n{what}");
    let kernel =
        lower(pipeline, &schedule).map_err(|e| context(format!("lowering failed: {e}")))?;
    let expected =
        evaluate(pipeline, &args).map_err(|e| context(format!("reference failed: {e}")))?;
    let got = match interpret(&kernel, &args) {
        Err(InterpError::Call(e)) if refused_for_round_up(&e, &schedule) => {
            return Ok(Outcome::Refused)
        }
        Err(e) => return Err(context(format!("interpreter failed: {e}\n{kernel}"))),
        Ok(got) => got,
    };
    agree(&got, &expected, FLOAT_TOLERANCE).map_err(|e| context(format!("{e}\n{kernel}")))?;
    Ok(Outcome::Matched)
}

fn differential(name: &str) {
    let pipeline = example(name);
    let replay = format!("cargo test -p strata-scheduler --test differential {name}");
    let seeds = seeds(300, 7919, name.len() as u64);
    run_cases(name, &replay, seeds, |seed| case(name, &pipeline, seed));
}

#[test]
fn matmul() {
    differential("matmul");
}

#[test]
fn blur3x3() {
    differential("blur3x3");
}

#[test]
fn softmax() {
    differential("softmax");
}

#[test]
fn softmax_fast() {
    differential("softmax_fast");
}

#[test]
fn conv2d() {
    differential("conv2d");
}

#[test]
fn histogram() {
    differential("histogram");
}

#[test]
fn gaussian5() {
    differential("gaussian5");
}

#[test]
fn brighten() {
    differential("brighten");
}

/// The hand-written schedules of `examples/schedules/` on random shapes.
#[test]
fn hand_schedules() {
    for name in [
        "matmul",
        "blur3x3",
        "softmax",
        "softmax_fast",
        "conv2d",
        "histogram",
        "gaussian5",
        "brighten",
    ] {
        hand_schedule(name, name);
    }
}

/// The hand-written schedules that pack an operand (`wrap`), on random shapes.
#[test]
fn packed_hand_schedules() {
    hand_schedule("matmul", "matmul_packed");
    hand_schedule("conv2d", "conv2d_packed");
}

/// `examples/schedules/{file}.sched` for the example kernel `name` on 20 random shapes.
fn hand_schedule(name: &str, file: &str) {
    let pipeline = example(name);
    let kernel =
        lower(&pipeline, &example_schedule(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    for seed in 0..20 {
        let mut rng = StdRng::seed_from_u64(seed);
        let sizes = example_sizes(name, Widths::Interpreted, &mut rng);
        let args = random_args(&pipeline, &sizes, &mut rng).unwrap();
        let expected = evaluate(&pipeline, &args).unwrap();
        let got = interpret(&kernel, &args).unwrap_or_else(|e| panic!("{file} {sizes:?}: {e}"));
        agree(&got, &expected, FLOAT_TOLERANCE).unwrap_or_else(|e| panic!("{file} {sizes:?}: {e}"));
    }
}
