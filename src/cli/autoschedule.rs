//! `strata autoschedule`: a schedule from the learned cost model alone, nothing measured
//! (the model is trained on the tuning database's measurements on this machine; the work is
//! in the tuner's `learned::autoschedule`).

use clap::Args;
use std::path::PathBuf;

use super::common::{default_threads, load, pick_kernel, print_out, shape_or_none, BackendArg};
use strata::tuner::learned::autoschedule::{autoschedule, Autoscheduled};

#[derive(Args)]
pub(crate) struct AutoscheduleArgs {
    /// The `.strata` file holding the kernel.
    file: PathBuf,
    /// Which kernel of the file (needed when it holds several).
    #[arg(long)]
    kernel: Option<String>,
    /// Every size of the kernel, e.g. `M=256,N=256,K=256`.
    #[arg(long)]
    shape: String,
    /// Threads the schedule is for (default: every core).
    #[arg(long)]
    threads: Option<usize>,
    /// The code generator the schedule is for (the model learns from its measurements).
    #[arg(long, value_enum, default_value_t = BackendArg::Cranelift)]
    backend: BackendArg,
    /// The tuning database the model is trained on (default `STRATA_DB` or `strata.db`).
    #[arg(long)]
    db: Option<PathBuf>,
    /// Seed of the candidates the model compares.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print only the schedule (for `--schedule @FILE` of other commands).
    #[arg(long)]
    quiet: bool,
}

pub(crate) fn command(args: AutoscheduleArgs) -> Result<(), String> {
    let kernels = load(&args.file)?;
    let kernel = pick_kernel(&kernels, args.kernel.as_deref(), &args.file)?;
    let sizes = crate::run::complete_shape(kernel, &shape_or_none(Some(&args.shape))?)?;
    let threads = args.threads.unwrap_or_else(default_threads);
    let backend = args.backend.built()?;
    let db_path = args.db.unwrap_or_else(strata::tuner::tune::default_db_path);
    let db = strata::tuning_db::Db::open_read_only(&db_path).map_err(|e| format!("error: {e}"))?;
    let target = strata::tuner::tune::host_target(threads);
    let chosen = autoschedule(kernel, &sizes, threads, backend, &db, &target, args.seed)
        .map_err(|e| format!("error: {e}"))?;
    print_out(&if args.quiet {
        chosen.schedule.to_string()
    } else {
        summary(&chosen)
    })
}

/// The schedule with what the model predicted for it and for the default.
fn summary(a: &Autoscheduled) -> String {
    let ms = |s: f64| format!("{:.3} ms", s * 1e3);
    let schedule = if a.schedule.lines.is_empty() {
        "(the default schedule)".to_string()
    } else {
        a.schedule.to_string()
    };
    format!(
        "{schedule}\n\npredicted {} (the default: {}); a model of {} measurements compared {} \
         candidates, none measured",
        ms(a.predicted_s),
        ms(a.default_predicted_s),
        a.samples,
        a.candidates
    )
}
