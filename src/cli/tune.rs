//! `strata tune`: search for a fast schedule of one kernel and shape, measuring candidates on
//! this CPU and recording every result in the tuning database (the work is in
//! `crate::tuning` and the tuner crate).

use clap::{Args, ValueEnum};
use std::path::PathBuf;

use super::common::{default_threads, pick_kernel, seconds, shape_or_none, tolerance, BackendArg};
use crate::{run, tuning};

#[derive(Args)]
pub(crate) struct TuneArgs {
    /// The `.strata` file holding the kernel.
    file: PathBuf,
    /// Which kernel of the file (needed when it holds several).
    #[arg(long)]
    kernel: Option<String>,
    /// Every size no `--input` file gives, e.g. `M=256,N=256,K=256`.
    #[arg(long)]
    shape: Option<String>,
    /// An input from a file, `NAME=FILE` (repeat for several), as `run --input` takes it:
    /// every candidate and the reference run on it (representative data, where random
    /// inputs make the answer's check ill-conditioned). Inputs not given are seeded
    /// random. The data is not part of the database key.
    #[arg(long, value_name = "NAME=FILE")]
    input: Vec<String>,
    /// A scalar parameter's value, `NAME=VALUE` (repeat for several); others are seeded
    /// random. Every parameter's value is part of the database key.
    #[arg(long, value_name = "NAME=VALUE")]
    param: Vec<String>,
    /// Stop after this many trials (default 100 when no budget is given). A trial is one
    /// search candidate measured, failures included; the default schedule (trial 0) and
    /// the final re-measurements are not trials.
    #[arg(long)]
    trials: Option<u64>,
    /// Stop after this many seconds, counting everything: the reference answer, the
    /// default schedule, the search and the final re-measurement (the search stops early
    /// enough to leave time to confirm its best).
    #[arg(long, value_parser = seconds)]
    time: Option<f64>,
    /// How candidates are proposed.
    #[arg(long, value_enum, default_value_t = Strategy::Model)]
    strategy: Strategy,
    /// Seed of the search and of the random inputs (the same seed proposes the same
    /// candidates).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Threads for parallel loops (default: every core).
    #[arg(long)]
    threads: Option<usize>,
    /// Floats agree with the reference within this, relative to the larger of 1 and the
    /// expected value (recorded with every measurement).
    #[arg(long, default_value_t = strata::tuner::tune::FLOAT_TOLERANCE, value_parser = tolerance)]
    tolerance: f64,
    /// Time each candidate for at least this many seconds.
    #[arg(long, default_value_t = strata::tuner::tune::DEFAULT_MIN_TIME.as_secs_f64(), value_parser = seconds)]
    min_time: f64,
    /// Give up on a candidate that has not answered after this many seconds (its worker
    /// is killed and the candidate recorded as a timeout).
    #[arg(long, default_value_t = strata::tuner::tune::DEFAULT_TIMEOUT.as_secs_f64(), value_parser = seconds)]
    timeout: f64,
    /// The tuning database (default `STRATA_DB` or `strata.db`).
    #[arg(long)]
    db: Option<PathBuf>,
    /// The code generator every candidate is compiled with (its results are kept apart
    /// from other backends': the winner is per backend).
    #[arg(long, value_enum, default_value_t = BackendArg::Cranelift)]
    backend: BackendArg,
    /// Print the final summary as one JSON object (this run's numbers and the report
    /// entry of its kernel and shape) instead of text.
    #[arg(long)]
    json: bool,
}

/// How `strata tune` proposes candidates.
#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum Strategy {
    /// A learned cost model ranks a pool of candidates; the best predicted are measured.
    Model,
    /// A population evolved by mutation and crossover of the best measured.
    Evolve,
    /// Uniformly random legal schedules.
    Random,
}

impl Strategy {
    fn kind(self) -> strata::tuner::StrategyKind {
        use strata::tuner::StrategyKind;
        match self {
            Strategy::Model => StrategyKind::Model,
            Strategy::Evolve => StrategyKind::Evolve,
            Strategy::Random => StrategyKind::Random,
        }
    }
}

pub(crate) fn command(args: TuneArgs) -> Result<(), String> {
    let settings = tuning::TuneSettings {
        trials: args.trials,
        time: args.time,
        strategy: args.strategy.kind(),
        seed: args.seed,
        threads: args.threads.unwrap_or_else(default_threads),
        min_time: args.min_time,
        timeout: args.timeout,
        tolerance: args.tolerance,
        backend: args.backend.built()?,
        json: args.json,
    };
    let db = args.db.unwrap_or_else(strata::tuner::tune::default_db_path);
    let data = run::RunData {
        inputs: args.input,
        params: args.param,
        db: Some(db.clone()),
        ..Default::default()
    };
    // The source is read here (not through `load`): its text is recorded with every run.
    let file = &args.file;
    let source = std::fs::read_to_string(file)
        .map_err(|e| format!("error: cannot read {}: {e}", file.display()))?;
    let kernels =
        strata::parse_kernels(&source, &file.display().to_string()).map_err(|d| d.to_string())?;
    let chosen = pick_kernel(&kernels, args.kernel.as_deref(), file)?;
    let shape = shape_or_none(args.shape.as_deref())?;
    // The files are read (and the sizes inferred from them) as `run` reads them; the tuner
    // draws the other inputs itself, from the same seed.
    let (sizes, mut inputs, _) = run::prepare(chosen, &shape, &data, settings.seed)?;
    let given = |text: &String| {
        text.split_once('=')
            .map(|(name, _)| name.trim().to_string())
    };
    let from_files = (data.inputs.iter().filter_map(given))
        .filter_map(|name| Some((name.clone(), inputs.buffers.remove(&name)?)))
        .collect();
    let params = (data.params.iter())
        .map(|text| run::parse_param(chosen, text))
        .collect::<Result<Vec<_>, _>>()?;
    tuning::tune(
        &db,
        chosen,
        &source,
        &sizes,
        (params, from_files),
        &settings,
    )
}
