//! The answer never depends on the schedule: for every example kernel, many random legal
//! schedules (from `generate::random_schedule`) on random shapes (sizes not divisible by any
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
use rand::{Rng, SeedableRng};
use strata_dsl::random::{agree, random_args};
use strata_dsl::Sizes;
use strata_dsl::{evaluate, parse_kernel, Args, Buffer, CallError, Pipeline};
use strata_scheduler::generate::random_schedule;
use strata_scheduler::interp::{interpret, InterpError};
use strata_scheduler::lower::lower;

const FLOAT_TOLERANCE: f64 = 1e-4;

fn example(name: &str) -> Pipeline {
    let path = format!(
        "{}/../examples/kernels/{name}.strata",
        env!("CARGO_MANIFEST_DIR")
    );
    parse_kernel(&std::fs::read_to_string(&path).unwrap(), &path).unwrap()
}

/// A random size for each size variable, in `lo..=hi`.
fn random_sizes(name: &str, rng: &mut StdRng) -> Vec<(&'static str, usize)> {
    let mut r = |lo: usize, hi: usize| rng.random_range(lo..=hi);
    match name {
        "matmul" => vec![("M", r(1, 9)), ("N", r(1, 11)), ("K", r(1, 7))],
        "blur3x3" => vec![("H", r(3, 12)), ("W", r(3, 13))],
        "softmax" | "softmax_fast" => vec![("R", r(1, 5)), ("C", r(1, 13))],
        "conv2d" => vec![
            ("N", r(1, 2)),
            ("C", r(1, 3)),
            ("F", r(1, 2)),
            ("H", r(3, 7)),
            ("W", r(3, 8)),
        ],
        "histogram" | "brighten" => vec![("H", r(1, 7)), ("W", r(1, 9))],
        "gaussian5" => vec![("H", r(1, 9)), ("W", r(1, 10))],
        _ => vec![],
    }
}

fn args_for(pipeline: &Pipeline, sizes: &[(&str, usize)], rng: &mut StdRng) -> Args {
    let sizes: Sizes = sizes
        .iter()
        .map(|(n, v)| (n.to_string(), *v as i64))
        .collect();
    random_args(pipeline, &sizes, rng).unwrap()
}

fn close(got: &Buffer, expected: &Buffer) -> Result<(), String> {
    agree(got, expected, FLOAT_TOLERANCE)
}

/// How a case ended when it did not fail.
enum Outcome {
    Matched,
    /// The kernel refused the input as too small for a `round_up` schedule.
    Refused,
}

/// Runs one seeded case: a random schedule and random shape. Returns the failure, if any.
fn case(name: &str, pipeline: &Pipeline, seed: u64) -> Result<Outcome, String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let schedule = random_schedule(pipeline, &mut rng);
    let sizes = random_sizes(name, &mut rng);
    let args = args_for(pipeline, &sizes, &mut rng);
    let context =
        |what: String| format!("{name} seed {seed} sizes {sizes:?}\nschedule:\n{schedule}\n{what}");
    let kernel =
        lower(pipeline, &schedule).map_err(|e| context(format!("lowering failed: {e}")))?;
    let expected =
        evaluate(pipeline, &args).map_err(|e| context(format!("reference failed: {e}")))?;
    let got = match interpret(&kernel, &args) {
        Err(InterpError::Call(
            CallError::InputTooSmall { .. } | CallError::ReadsEmptyInput { .. },
        )) if schedule.to_string().contains("round_up") => return Ok(Outcome::Refused),
        Err(e) => return Err(context(format!("interpreter failed: {e}\n{kernel}"))),
        Ok(got) => got,
    };
    close(&got, &expected).map_err(|e| context(format!("{e}\n{kernel}")))?;
    Ok(Outcome::Matched)
}

fn differential(name: &str) {
    let pipeline = example(name);
    let cases: u64 = std::env::var("STRATA_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let seeds: Vec<u64> = match std::env::var("STRATA_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        Some(seed) => vec![seed],
        None => (0..cases).map(|i| i * 7919 + name.len() as u64).collect(),
    };
    let (mut matched, mut refused) = (0, 0);
    for seed in seeds {
        match case(name, &pipeline, seed) {
            Ok(Outcome::Matched) => matched += 1,
            Ok(Outcome::Refused) => refused += 1,
            Err(e) => panic!("{e}\nreplay with STRATA_SEED={seed} cargo test -p strata-scheduler --test differential {name}"),
        }
    }
    println!(
        "{name}: {matched} matched the reference, {refused} refused a too-small input (round_up)"
    );
    assert!(
        matched >= 4 * refused,
        "{name}: too few cases ran to completion"
    );
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
    let path = format!(
        "{}/../examples/schedules/{file}.sched",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let schedule =
        strata_scheduler::schedule::text::parse_schedule(&text).unwrap_or_else(|e| panic!("{e}"));
    let kernel = lower(&pipeline, &schedule).unwrap_or_else(|e| panic!("{file}: {e}"));
    for seed in 0..20 {
        let mut rng = StdRng::seed_from_u64(seed);
        let sizes = random_sizes(name, &mut rng);
        let args = args_for(&pipeline, &sizes, &mut rng);
        let expected = evaluate(&pipeline, &args).unwrap();
        let got = interpret(&kernel, &args).unwrap_or_else(|e| panic!("{file} {sizes:?}: {e}"));
        close(&got, &expected).unwrap_or_else(|e| panic!("{file} {sizes:?}: {e}"));
    }
}
