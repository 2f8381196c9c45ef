//! Tuning from Rust and using the result: tunes a matmul for a few seconds into a database
//! (exactly what `strata tune` does), then `compile_tuned` compiles the winner for the same
//! kernel, shape and machine, and falls back to the default schedule, with a warning, for a
//! shape that was never tuned.
//!
//! Run with `cargo run --release --example tuned` (it writes `tuned-example.db` here).

use std::time::Duration;
use strata::tuner::TuneOptions;
use strata::tuning_db::Db;

const SOURCE: &str = "kernel matmul(A: f32[M, K], B: f32[K, N]) -> C: f32[M, N] {
    C(i, j) = sum(k in 0..K) A(i, k) * B(k, j);
}";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Candidates are measured in child processes running this same program (started with
    // `--strata-worker` and `STRATA_WORKER` set), so a crashing or hanging candidate cannot take
    // the tuner down. In such a child this call serves the tuner and exits; here it returns at
    // once. It must come before anything else `main` does.
    strata::tuner::run_worker_if_requested();

    let matmul = strata::parse_kernel(SOURCE, "matmul")?;
    let db = Db::open("tuned-example.db")?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let sizes = strata::sizes(&[("M", 128), ("N", 128), ("K", 128)]);

    // Everything not named is `strata tune`'s default (see `TuneOptions::default`).
    let options = TuneOptions {
        trials: Some(40),
        time: Some(Duration::from_secs(20)),
        threads,
        min_time: Duration::from_millis(20),
        timeout: Duration::from_secs(30),
        ..TuneOptions::default()
    };
    let result = strata::tuner::tune(&db, &matmul, SOURCE, &sizes, &options)?;
    println!(
        "tuning stopped ({}) after {} trials",
        result.stop, result.trials
    );

    let (_, from) = strata::compile_tuned(&db, &matmul, &sizes, threads)?;
    match from {
        strata::TunedFrom::Winner { schedule, median_s } => {
            println!(
                "compiled the winner ({:.3} ms):\n{schedule}",
                median_s.unwrap_or(0.0) * 1e3
            )
        }
        strata::TunedFrom::Default { reason } => println!("no winner: {reason}"),
    }
    // A shape never tuned: the default schedule, with a warning that says what differed.
    let untuned = strata::sizes(&[("M", 96), ("N", 96), ("K", 96)]);
    let (_, from) = strata::compile_tuned(&db, &matmul, &untuned, threads)?;
    if let strata::TunedFrom::Default { reason } = from {
        println!("96x96x96 falls back to the default schedule: {reason}");
    }
    Ok(())
}
