//! `strata train`: measurements of random schedules of kernels at random shapes, recorded in
//! the tuning database for the learned cost model (the work is in `crate::train`).

use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

use super::common::{default_threads, seconds, BackendArg};
use crate::train::{train, TrainSettings};

/// Where the bundled example kernels are, from a checkout's root.
const EXAMPLES: &str = "examples/kernels";

#[derive(Args)]
pub(crate) struct TrainArgs {
    /// `.strata` files whose kernels are measured (default: every file of examples/kernels).
    files: Vec<PathBuf>,
    /// Stop after this many seconds.
    #[arg(long, default_value_t = 300.0, value_parser = seconds)]
    time: f64,
    /// Random schedules measured per kernel and shape.
    #[arg(long, default_value_t = 16)]
    trials: u64,
    /// Threads for parallel loops (default: every core).
    #[arg(long)]
    threads: Option<usize>,
    /// Time each candidate for at least this many seconds.
    #[arg(long, default_value_t = 0.02, value_parser = seconds)]
    min_time: f64,
    /// The code generator measured (the model of each backend learns from its own).
    #[arg(long, value_enum, default_value_t = BackendArg::Cranelift)]
    backend: BackendArg,
    /// The tuning database (default `STRATA_DB` or `strata.db`).
    #[arg(long)]
    db: Option<PathBuf>,
    /// Seed of the kernels, shapes and schedules drawn.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Measure nothing: print how well the model ranks each kernel's measurements in the
    /// database when trained on the other kernels' (leave-one-kernel-out).
    #[arg(long)]
    evaluate: bool,
}

pub(crate) fn command(args: TrainArgs) -> Result<(), String> {
    if args.evaluate {
        return evaluate(&args);
    }
    let files = if args.files.is_empty() {
        example_files()?
    } else {
        args.files
    };
    let mut kernels = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file)
            .map_err(|e| format!("error: cannot read {}: {e}", file.display()))?;
        let parsed = strata::parse_kernels(&source, &file.display().to_string())
            .map_err(|d| d.to_string())?;
        kernels.extend(parsed.into_iter().map(|k| (k, source.clone())));
    }
    let settings = TrainSettings {
        kernels,
        time: Duration::from_secs_f64(args.time),
        trials: args.trials,
        threads: args.threads.unwrap_or_else(default_threads),
        backend: args.backend.built()?,
        seed: args.seed,
        min_time: Duration::from_secs_f64(args.min_time),
    };
    let db_path = args.db.unwrap_or_else(strata::tuner::tune::default_db_path);
    let db = strata::tuning_db::Db::open(&db_path).map_err(|e| format!("error: {e}"))?;
    let recorded = train(&db, &settings)?;
    super::print_out(&format!(
        "recorded {recorded} measurements in {} for the cost model",
        db_path.display()
    ))
}

/// The `.strata` files of the bundled examples, in name order.
fn example_files() -> Result<Vec<PathBuf>, String> {
    let dir = std::fs::read_dir(EXAMPLES).map_err(|e| {
        format!("error: no kernel files given and {EXAMPLES} cannot be read ({e}); name the files")
    })?;
    let mut files: Vec<PathBuf> = dir
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "strata"))
        .collect();
    files.sort();
    Ok(files)
}

/// The leave-one-kernel-out table of the database's measurements on this machine.
fn evaluate(args: &TrainArgs) -> Result<(), String> {
    use strata::tuner::learned::{evaluate::leave_one_kernel_out, samples_from_db};
    let db_path = (args.db.clone()).unwrap_or_else(strata::tuner::tune::default_db_path);
    let db = strata::tuning_db::Db::open_read_only(&db_path).map_err(|e| format!("error: {e}"))?;
    let threads = args.threads.unwrap_or_else(default_threads);
    let target = strata::tuner::tune::host_target(threads);
    let backend = args.backend.built()?;
    let samples = samples_from_db(&db, &target, backend.name(), usize::MAX, false)
        .map_err(|e| format!("error: {e}"))?;
    let held = leave_one_kernel_out(&samples);
    if held.is_empty() {
        return super::print_out(&format!(
            "{} measurements on this machine with {backend}: too few kernels to hold one out",
            samples.len()
        ));
    }
    let mut lines = vec![format!(
        "{:<24} {:>8} {:>8} {:>10} {:>10}",
        "held-out kernel", "samples", "pairs", "model", "counts"
    )];
    for h in &held {
        lines.push(format!(
            "{:<24} {:>8} {:>8} {:>9.1}% {:>9.1}%",
            h.kernel,
            h.samples,
            h.pairs,
            100.0 * h.pair_agreement,
            100.0 * h.baseline_agreement
        ));
    }
    lines.push(format!(
        "pairs of one kernel's schedules (one shape, times more than 5% apart) ranked as \
         measured: by a model of the other kernels' measurements ({} in all, {backend}), and by \
         the instructions and loads counted from each loop nest; 50% is chance",
        samples.len()
    ));
    super::print_out(&lines.join("\n"))
}
