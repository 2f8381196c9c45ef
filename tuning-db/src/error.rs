//! Errors: [`DbError`] for everything the database can refuse or fail at, and
//! [`Miss`] for a winner lookup that found nothing for exactly the asked key.

use std::path::PathBuf;
use std::time::Duration;

use crate::model::Target;

/// Everything that can go wrong while opening, reading or writing a tuning database.
///
/// Every variant that concerns a file names it. A file that [`crate::Db::open`] refuses
/// (missing, locked, corrupt, foreign, newer schema) is left exactly as it was.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The database file does not exist and the caller asked not to create it.
    #[error("tuning database {path} does not exist")]
    Missing {
        /// The path that was asked for.
        path: PathBuf,
    },

    /// The file's directory does not exist, so the database cannot be created.
    #[error("cannot create tuning database {path}: directory {dir} does not exist")]
    MissingDirectory {
        /// The path that was asked for.
        path: PathBuf,
        /// Its parent directory, which is missing.
        dir: PathBuf,
    },

    /// The file exists but is not a SQLite database at all.
    #[error("{path} is not a strata tuning database: not a SQLite file ({detail})")]
    NotSqlite {
        /// The file.
        path: PathBuf,
        /// SQLite's own words.
        detail: String,
    },

    /// The file is a SQLite database whose content is damaged.
    #[error("tuning database {path} is corrupt: {detail}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },

    /// The file is a valid SQLite database that belongs to something else.
    #[error("{path} is a SQLite database but not a strata tuning database ({detail}); refusing to touch it")]
    Foreign {
        /// The file.
        path: PathBuf,
        /// Why it is not ours (its application id, its tables).
        detail: String,
    },

    /// The database was written by a newer strata whose schema this build does not know.
    #[error("tuning database {path} has schema version {found}, newer than the version {supported} this build of strata supports; use a newer strata")]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// The schema version stored in the file.
        found: i64,
        /// The newest schema version this build knows.
        supported: i64,
    },

    /// Another connection held the database's write lock for longer than the busy timeout.
    #[error("tuning database {path} is locked by another process (gave up after {:.1} s)", waited.as_secs_f64())]
    Locked {
        /// The file.
        path: PathBuf,
        /// The busy timeout that ran out.
        waited: Duration,
    },

    /// A run id that the database does not hold.
    #[error("tuning database {path} has no run with id {run_id}")]
    UnknownRun {
        /// The file.
        path: PathBuf,
        /// The id asked for.
        run_id: i64,
    },

    /// A measurement with the same (run, trial, schedule hash, remeasured) is already recorded.
    #[error("tuning database {path}: run {run_id} already has a measurement for trial {trial} of schedule {schedule_hash}")]
    DuplicateMeasurement {
        /// The file.
        path: PathBuf,
        /// The run.
        run_id: i64,
        /// The trial number.
        trial: u64,
        /// The schedule's hash.
        schedule_hash: String,
    },

    /// A value that SQLite cannot store (an integer above `i64::MAX`).
    #[error("{field} = {value} is too large to store in the tuning database")]
    OutOfRange {
        /// The field's name.
        field: &'static str,
        /// The value.
        value: u64,
    },

    /// A stored row holds a value this build cannot interpret.
    #[error("tuning database {path} holds invalid data: {detail}")]
    InvalidData {
        /// The file.
        path: PathBuf,
        /// What was found.
        detail: String,
    },

    /// A JSON-lines import file is malformed; nothing was imported.
    #[error("cannot import line {line}: {detail}; nothing was imported")]
    Import {
        /// The 1-based line number.
        line: u64,
        /// What is wrong with it.
        detail: String,
    },

    /// Reading or writing an export stream failed.
    #[error("export/import I/O error: {0}")]
    Io(#[from] std::io::Error),

    /// Any other SQLite failure.
    #[error("tuning database {path}: {source}")]
    Sqlite {
        /// The file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
}

/// Why [`crate::Db::winner`] found no winner for exactly the asked key.
#[derive(Debug, thiserror::Error)]
pub enum Miss {
    /// No run in the database has this kernel hash.
    #[error(
        "no tuning for kernel `{kernel_name}` (hash {}){}",
        short_hash(kernel_hash),
        other_hashes_note(kernel_name, other_hashes)
    )]
    Kernel {
        /// The kernel's name, as asked.
        kernel_name: String,
        /// The kernel hash asked for.
        kernel_hash: String,
        /// Hashes under which a kernel of the same name was tuned (its source changed).
        other_hashes: Vec<String>,
    },

    /// The kernel was tuned, but never for this shape (on any target).
    #[error("kernel `{kernel_name}` is not tuned for shape {shape}; tuned only for shapes: {}", tuned_shapes.join("; "))]
    Shape {
        /// The kernel's name.
        kernel_name: String,
        /// The shape asked for.
        shape: String,
        /// The shapes it was tuned for.
        tuned_shapes: Vec<String>,
    },

    /// The kernel was tuned for this shape, but never on this target.
    #[error("kernel `{kernel_name}` at shape {shape} is not tuned for target {target}; tuned only for targets: {}", join_targets(tuned_targets))]
    Target {
        /// The kernel's name.
        kernel_name: String,
        /// The shape.
        shape: String,
        /// The target asked for.
        target: Target,
        /// The targets it was tuned on for this shape.
        tuned_targets: Vec<Target>,
    },

    /// The exact key was tuned but no candidate measured successfully.
    #[error("kernel `{kernel_name}` at shape {shape} on {target} was tuned, but none of its {measured} measurements succeeded")]
    NoSuccess {
        /// The kernel's name.
        kernel_name: String,
        /// The shape.
        shape: String,
        /// The target.
        target: Target,
        /// How many measurements were recorded for the key.
        measured: u64,
    },

    /// The database failed while looking.
    #[error(transparent)]
    Db(#[from] DbError),
}

/// The first 12 characters of a hash, for messages.
pub(crate) fn short_hash(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// "; the database has `name` under other hashes: …" when there are any.
fn other_hashes_note(name: &str, others: &[String]) -> String {
    if others.is_empty() {
        return String::new();
    }
    let shown: Vec<&str> = others.iter().map(|h| short_hash(h)).collect();
    format!(
        "; the database has `{name}` under other hashes (its source changed?): {}",
        shown.join(", ")
    )
}

/// Targets as `<a>; <b>` for messages.
fn join_targets(targets: &[Target]) -> String {
    let shown: Vec<String> = targets.iter().map(Target::to_string).collect();
    shown.join("; ")
}
