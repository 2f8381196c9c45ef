//! The differential harness: a test runs seeded cases, each drawing a schedule, a shape and
//! arguments from its seed, and compares what the rung under test computes with the reference
//! evaluator. Every failing seed is named with the command that replays it alone.
//!
//! `STRATA_CASES=n` sets how many seeds a test runs, `STRATA_SEED=s` replays the one seed `s`.

use strata_dsl::CallError;
use strata_scheduler::Schedule;

/// How a case ended when it did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The result agreed with the reference.
    Matched,
    /// The kernel refused the input as smaller than a `round_up` schedule reads (checked before
    /// running, so nothing was computed): the one other accepted outcome.
    Refused,
}

/// Whether `error` is the refusal a `round_up` schedule may give (an input smaller than the
/// region it computes past the extent reads); for any other schedule it is a failure.
pub fn refused_for_round_up(error: &CallError, schedule: &Schedule) -> bool {
    matches!(
        error,
        CallError::InputTooSmall { .. } | CallError::ReadsEmptyInput { .. }
    ) && schedule.to_string().contains("round_up")
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The seeds a test runs: `STRATA_SEED` alone, or `STRATA_CASES` (default `cases`) seeds
/// `i * stride + offset`, spread so that tests of different kernels draw different cases.
pub fn seeds(cases: u64, stride: u64, offset: u64) -> Vec<u64> {
    match env_u64("STRATA_SEED") {
        Some(seed) => vec![seed],
        None => (0..env_u64("STRATA_CASES").unwrap_or(cases))
            .map(|i| i * stride + offset)
            .collect(),
    }
}

/// Runs `case` on every seed; panics at the first failure with its description and `replay`
/// (the cargo command that runs this test) prefixed by `STRATA_SEED=<seed>`, and when fewer
/// than four in five cases matched (so refusals cannot quietly replace the comparisons).
pub fn run_cases(
    name: &str,
    replay: &str,
    seeds: Vec<u64>,
    mut case: impl FnMut(u64) -> Result<Outcome, String>,
) {
    let (mut matched, mut refused) = (0, 0);
    for seed in seeds {
        match case(seed) {
            Ok(Outcome::Matched) => matched += 1,
            Ok(Outcome::Refused) => refused += 1,
            Err(e) => panic!("{e}\nreplay with STRATA_SEED={seed} {replay}"),
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
