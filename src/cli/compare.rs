//! `strata compare`: two schedules of one kernel timed side by side in one process (the
//! interleaved timing is in `crate::compare`).

use clap::Args;
use std::path::PathBuf;

use super::common::{
    load, pick_kernel, print_out, resolve_schedule, run_settings, seconds, shape_or_none,
    BackendArg,
};
use crate::{compare, run};

#[derive(Args)]
pub(crate) struct CompareArgs {
    /// The `.strata` file holding the kernel.
    file: PathBuf,
    /// Schedule A: text, `@FILE`, `best` (the tuning database's winner for this kernel,
    /// shape, threads and backend) or `default` (also ``).
    a: String,
    /// Schedule B, as A.
    b: String,
    /// Which kernel of the file (needed when it holds several).
    #[arg(long)]
    kernel: Option<String>,
    /// Sizes, e.g. `M=512,N=512,K=512`: every size no `--input` file gives.
    #[arg(long)]
    shape: Option<String>,
    /// An input from a file, `NAME=FILE` (repeat for several), as `run --input` takes it;
    /// both sides run on the same data. Inputs not given are seeded random.
    #[arg(long, value_name = "NAME=FILE")]
    input: Vec<String>,
    /// A scalar parameter's value, `NAME=VALUE` (repeat for several); others are seeded
    /// random.
    #[arg(long, value_name = "NAME=VALUE")]
    param: Vec<String>,
    /// Threads for parallel loops (default: every core).
    #[arg(long)]
    threads: Option<usize>,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Time both for at least this many seconds in all (half each), split into rounds.
    #[arg(long, default_value_t = 2.0, value_parser = seconds)]
    min_time: f64,
    /// Skip the reference check.
    #[arg(long)]
    no_check: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// The tuning database (for `best`; default `STRATA_DB` or `strata.db`).
    #[arg(long)]
    db: Option<PathBuf>,
    /// The code generator (`best` takes the winner tuned with it).
    #[arg(long, value_enum, default_value_t = BackendArg::Cranelift)]
    backend: BackendArg,
}

/// Both schedules resolved and compiled (an error names the side), then timed interleaved.
pub(crate) fn command(args: CompareArgs) -> Result<(), String> {
    let backend = args.backend.built()?;
    let settings = run_settings(
        args.threads,
        args.seed,
        args.min_time,
        !args.no_check,
        backend,
    );
    let db = args.db.unwrap_or_else(strata::tuner::tune::default_db_path);
    let data = run::RunData {
        inputs: args.input,
        params: args.param,
        ..Default::default()
    };
    let kernels = load(&args.file)?;
    let chosen = pick_kernel(&kernels, args.kernel.as_deref(), &args.file)?;
    let shape = shape_or_none(args.shape.as_deref())?;
    let (sizes, inputs, _) = run::prepare(chosen, &shape, &data, settings.seed)?;
    let side = |label: &str, text: &str| {
        let schedule = resolve_schedule(Some(text), &db, chosen, &sizes, &inputs, &settings)
            .map_err(|e| compare::on_side(label, &e))?;
        compare::side(label, chosen, schedule, &sizes, &inputs, &settings)
    };
    let sides = [side("A", &args.a)?, side("B", &args.b)?];
    let c = compare::compare(chosen, &inputs, sides, &settings)?;
    print_out(&if args.json {
        compare::json_text(chosen, &sizes, &settings, &c)
    } else {
        compare::report_text(chosen, &sizes, &settings, &c)
    })?;
    match compare::wrong_answers(&c) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}
