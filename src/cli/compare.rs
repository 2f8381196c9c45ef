//! `strata compare`: two schedules of one kernel timed side by side in one process (the
//! interleaved timing is in `crate::compare`).

use clap::Args;
use std::path::PathBuf;

use super::common::{print_out, seconds, TimedKernelArgs};
use crate::compare;

#[derive(Args)]
pub(crate) struct CompareArgs {
    /// The `.strata` file holding the kernel.
    file: PathBuf,
    /// Schedule A: text, `@FILE`, `best` (the tuning database's winner for this kernel,
    /// shape, threads and backend) or `default` (also ``).
    a: String,
    /// Schedule B, as A.
    b: String,
    #[command(flatten)]
    common: TimedKernelArgs,
    /// Time both for at least this many seconds in all (half each), split into rounds.
    #[arg(long, default_value_t = 2.0, value_parser = seconds)]
    min_time: f64,
}

/// Both schedules resolved and compiled (an error names the side), then timed interleaved.
pub(crate) fn command(args: CompareArgs) -> Result<(), String> {
    let json = args.common.json;
    let t = args.common.prepare(&args.file, args.min_time)?;
    let side = |label: &str, text: &str| {
        let schedule = t.schedule(text).map_err(|e| compare::on_side(label, &e))?;
        compare::side(label, &t.kernel, schedule, &t.sizes, &t.inputs, &t.settings)
    };
    let sides = [side("A", &args.a)?, side("B", &args.b)?];
    let c = compare::compare(&t.kernel, &t.inputs, sides, &t.settings)?;
    print_out(&if json {
        compare::json_text(&t.kernel, &t.sizes, &t.settings, &c)
    } else {
        compare::report_text(&t.kernel, &t.sizes, &t.settings, &c)
    })?;
    match compare::wrong_answers(&c) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}
