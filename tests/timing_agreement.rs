//! Two measurements of one schedule in separate processes agree: the statistics check issue 21
//! asks for. Each `strata run` process compiles the schedule afresh, draws its inputs and
//! times through the one routine the tuner's workers use (`strata_jit::time_runs`, reporting
//! the steady median), as a search worker and a confirmation worker do.
//!
//! What is checked is a statistic over repeated pairs, not a wall-clock time: in most pairs
//! the two processes' times are within [`SPREAD`] of each other. The machines this runs on are
//! shared: a kernel runs at half speed for spells of 0.3 to 2 s that no process can see, and a
//! spell can cover a whole measurement. Such pairs are allowed, up to just under half of them;
//! with 15 pairs and one pair in five caught by a spell, failing by chance takes 8 such pairs
//! (a chance of about 1 in 250; one in ten: 1 in 25000). In it, its own binary, nothing else
//! of the suite runs beside it.

mod common;
use common::{strata, text};

/// How far apart two processes' times of one schedule may be, as a ratio, in most pairs.
const SPREAD: f64 = 1.10;

/// How many pairs of processes measure the schedule.
const PAIRS: usize = 15;

/// One process's steady median of the hand matmul schedule at 128^3, 1 thread, in seconds.
fn measure() -> f64 {
    let args = [
        "run",
        "examples/kernels/matmul.strata",
        "--schedule",
        "@examples/schedules/matmul.sched",
        "--shape",
        "M=128,N=128,K=128",
        "--threads",
        "1",
        "--min-time",
        "0.25",
        "--no-check",
        "--json",
    ];
    let out = strata(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    json["median_s"].as_f64().expect("median_s")
}

#[test]
fn two_processes_time_one_schedule_alike() {
    let ratios: Vec<f64> = (0..PAIRS).map(|_| measure() / measure()).collect();
    eprintln!("ratios of the pairs' times: {ratios:.3?}");
    let agreeing = ratios
        .iter()
        .filter(|&&r| (1.0 / SPREAD..=SPREAD).contains(&r))
        .count();
    assert!(
        agreeing > PAIRS / 2,
        "only {agreeing} of {PAIRS} pairs within {SPREAD}x: {ratios:?}"
    );
}
