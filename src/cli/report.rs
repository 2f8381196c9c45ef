//! `strata report`: what the tuning database holds, as text, JSON or an HTML page (the work
//! is in `crate::tuning`).

use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub(crate) struct ReportArgs {
    /// Only this kernel (by name).
    #[arg(long)]
    kernel: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Also write a self-contained HTML page: a summary of every kernel and shape, then
    /// per kernel and shape plots (best so far against trial and wall time, the
    /// distribution of candidate times), the top candidates with their throughput, share
    /// of this machine's roofline and schedule difference from the winner, failures by
    /// kind, the winning schedule and its loop nest.
    #[arg(long)]
    html: Option<PathBuf>,
    /// The tuning database (default `STRATA_DB` or `strata.db`).
    #[arg(long)]
    db: Option<PathBuf>,
}

pub(crate) fn command(args: ReportArgs) -> Result<(), String> {
    let db = args.db.unwrap_or_else(strata::tuner::tune::default_db_path);
    crate::tuning::report(&db, args.kernel.as_deref(), args.json, args.html.as_deref())
}
