//! `strata db`: export the tuning database as JSON lines, or import them.

use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args)]
pub(crate) struct DbArgs {
    #[command(subcommand)]
    action: DbAction,
    #[arg(long, global = true)]
    db: Option<PathBuf>,
}

#[derive(Subcommand)]
enum DbAction {
    /// Write every run and measurement as JSON lines (to FILE or stdout).
    Export { file: Option<PathBuf> },
    /// Read JSON lines from FILE into the database (records already present are skipped).
    Import { file: PathBuf },
}

pub(crate) fn command(args: DbArgs) -> Result<(), String> {
    let db = args.db.unwrap_or_else(strata::tuner::tune::default_db_path);
    match args.action {
        DbAction::Export { file } => crate::tuning::export(&db, file.as_deref()),
        DbAction::Import { file } => crate::tuning::import(&db, &file),
    }
}
