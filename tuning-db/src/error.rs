//! Errors: [`DbError`] for everything the database can refuse or fail at, and
//! [`Miss`] for a winner lookup that found nothing for exactly the asked key.

use std::path::PathBuf;
use std::time::Duration;

use crate::model::Target;
use crate::printable::printable;

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

    /// A reader found a file it would have to set up or migrate first (reading never writes).
    #[error("tuning database {path} {why}; a command that writes to it (strata tune, strata db import) sets it up")]
    NotReady {
        /// The file.
        path: PathBuf,
        /// What it lacks.
        why: String,
    },

    /// An output file (an export, a report) would overwrite the database or one of its
    /// `-wal`, `-shm` or `-journal` files.
    #[error("refusing to write {output}: it is the tuning database {path} or one of its files")]
    OutputIsDatabase {
        /// The database.
        path: PathBuf,
        /// The output path asked for.
        output: PathBuf,
    },

    /// Writing an output file failed; the file was left as it was.
    #[error("cannot write {path}: {source}")]
    Output {
        /// The output file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
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
        "no tuning for kernel `{}` (hash {}){}",
        printable(kernel_name),
        printable(short_hash(kernel_hash)),
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
    #[error("kernel `{}` is not tuned for shape {}; tuned only for shapes: {}", printable(kernel_name), printable(shape), printable(&tuned_shapes.join("; ")))]
    Shape {
        /// The kernel's name.
        kernel_name: String,
        /// The shape asked for.
        shape: String,
        /// The shapes it was tuned for.
        tuned_shapes: Vec<String>,
    },

    /// The kernel was tuned for this shape, but never with these scalar parameter values (on
    /// any target).
    #[error(
        "kernel `{}` at shape {} is not tuned with parameters {}; tuned only with: {}",
        printable(kernel_name),
        printable(shape),
        params_text(params),
        join_params(tuned_params)
    )]
    Params {
        /// The kernel's name.
        kernel_name: String,
        /// The shape.
        shape: String,
        /// The parameter values asked for, canonical (`""`: none).
        params: String,
        /// The parameter values it was tuned with at this shape.
        tuned_params: Vec<String>,
    },

    /// The kernel was tuned for this shape and these parameter values, but never on this
    /// target.
    #[error(
        "kernel `{}` at shape {}{} is not tuned for target {target}; tuned only for targets: {}",
        printable(kernel_name),
        printable(shape),
        with_params(params),
        join_targets(tuned_targets)
    )]
    Target {
        /// The kernel's name.
        kernel_name: String,
        /// The shape.
        shape: String,
        /// The parameter values, canonical (`""`: none).
        params: String,
        /// The target asked for.
        target: Target,
        /// The targets it was tuned on for this shape and these parameter values.
        tuned_targets: Vec<Target>,
    },

    /// The kernel was tuned for this shape and these parameter values on this target, but
    /// with other backends only.
    #[error(
        "kernel `{}` at shape {}{} on {target} is not tuned with the {} backend; tuned only with: {}",
        printable(kernel_name),
        printable(shape),
        with_params(params),
        printable(backend),
        printable(&tuned_backends.join(", "))
    )]
    Backend {
        /// The kernel's name.
        kernel_name: String,
        /// The shape.
        shape: String,
        /// The parameter values, canonical (`""`: none).
        params: String,
        /// The target.
        target: Target,
        /// The backend asked for.
        backend: String,
        /// The backends it was tuned with for this shape, these parameter values and this
        /// target.
        tuned_backends: Vec<String>,
    },

    /// The exact key was tuned but no candidate measured successfully.
    #[error("kernel `{}` at shape {}{} on {target} with the {} backend was tuned, but none of its {measured} measurements succeeded{}", printable(kernel_name), printable(shape), with_params(params), printable(backend), damaged_note(*damaged))]
    NoSuccess {
        /// The kernel's name.
        kernel_name: String,
        /// The shape.
        shape: String,
        /// The parameter values, canonical (`""`: none).
        params: String,
        /// The target.
        target: Target,
        /// The backend.
        backend: String,
        /// How many measurements were recorded for the key.
        measured: u64,
        /// How many of them are damaged (content not matching their checksum), so skipped.
        damaged: u64,
    },

    /// The database failed while looking.
    #[error(transparent)]
    Db(#[from] DbError),
}

/// The first 12 characters of a hash, for messages (a hash from an imported record may
/// hold any characters: never cut inside one).
pub fn short_hash(hash: &str) -> &str {
    let end = hash.char_indices().nth(12).map_or(hash.len(), |(i, _)| i);
    &hash[..end]
}

/// "; the database has `name` under other hashes: …" when there are any.
fn other_hashes_note(name: &str, others: &[String]) -> String {
    if others.is_empty() {
        return String::new();
    }
    let shown: Vec<&str> = others.iter().map(|h| short_hash(h)).collect();
    format!(
        "; the database has `{}` under other hashes (its source changed?): {}",
        printable(name),
        printable(&shown.join(", "))
    )
}

/// "; N of them are damaged ..." when any are.
fn damaged_note(damaged: u64) -> String {
    match damaged {
        0 => String::new(),
        n => format!(
            " or could be trusted: {n} of them are damaged (their content does not match \
             their checksums) and were skipped"
        ),
    }
}

/// Parameter values for messages: `(none)` for a kernel without parameters (an empty
/// string would read as a missing word).
fn params_text(params: &str) -> String {
    match params {
        "" => "(none)".to_string(),
        p => printable(p).into_owned(),
    }
}

/// Parameter value sets as `a=1; a=2` for messages (`;`, since each holds commas).
fn join_params(tuned: &[String]) -> String {
    let shown: Vec<String> = tuned.iter().map(|p| params_text(p)).collect();
    shown.join("; ")
}

/// ` with a=1` after a shape in messages; nothing for a kernel without parameters, so their
/// messages read as before parameters were part of the key.
fn with_params(params: &str) -> String {
    match params {
        "" => String::new(),
        p => format!(" with {}", printable(p)),
    }
}

/// Targets as `<a>; <b>` for messages.
fn join_targets(targets: &[Target]) -> String {
    let shown: Vec<String> = targets.iter().map(Target::to_string).collect();
    shown.join("; ")
}
