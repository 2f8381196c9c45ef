//! `strata explain`: a schedule's directives, each left out in turn and added one at a time,
//! timed in one process (the measuring is in `crate::explain`).

use clap::Args;
use std::path::PathBuf;

use super::common::{print_out, seconds, TimedKernelArgs};
use crate::explain;

#[derive(Args)]
pub(crate) struct ExplainArgs {
    /// The `.strata` file holding the kernel.
    file: PathBuf,
    /// The schedule: text, `@FILE`, or `best` (the tuning database's winner for this kernel,
    /// shape, threads and backend).
    #[arg(default_value = "best")]
    schedule: String,
    #[command(flatten)]
    common: TimedKernelArgs,
    /// Time each group of variants (the leave-one-out table, each step of the add-one path)
    /// for at least this many seconds in all, split into rounds.
    #[arg(long, default_value_t = 1.0, value_parser = seconds)]
    min_time: f64,
}

/// The schedule resolved, then explained.
pub(crate) fn command(args: ExplainArgs) -> Result<(), String> {
    let json = args.common.json;
    let t = args.common.prepare(&args.file, args.min_time)?;
    let schedule = t.schedule(&args.schedule)?;
    let e = explain::explain(&t.kernel, schedule, &t.sizes, &t.inputs, &t.settings)?;
    print_out(&if json {
        explain::json_text(&t.kernel, &t.sizes, &t.settings, &e)
    } else {
        explain::report_text(&t.kernel, &t.sizes, &t.settings, &e)
    })
}
