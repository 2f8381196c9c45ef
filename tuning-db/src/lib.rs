//! strata's tuning database.
//!
//! A SQLite file (bundled SQLite, WAL journal) that records every tuning run and every
//! measurement the autotuner makes, each committed as it is made, so a killed tuner
//! loses nothing and `tune` resumes where it stopped. It answers:
//!
//! - resume: [`Db::measured_hashes`], [`Db::best`], [`Db::max_trial`];
//! - programs: [`Db::winner`] by (kernel hash, shape, scalar parameter values, target,
//!   backend) — a [`TuningKey`] — with a [`Miss`] that says which part differed;
//! - `strata report`: [`Db::report`];
//! - `strata db export|import`: [`Db::export`], [`Db::import`] as JSON lines.
//!
//! The crate stores plain serializable rows (schedules as text, kernels by hash and
//! source) and depends on no other strata crate.
//!
//! ```
//! use strata_tuning_db::{Db, Measurement, NewRun, Settings, Status, Target, TuningKey};
//! # let path = std::env::temp_dir().join(format!("strata-doc-{}.db", std::process::id()));
//! # let _ = std::fs::remove_file(&path);
//! let db = Db::open(&path)?;
//! let key = TuningKey {
//!     kernel_hash: "abc".into(),
//!     kernel_name: "matmul".into(),
//!     shape: strata_tuning_db::canonical_shape([("M", 64), ("N", 64), ("K", 64)]),
//!     // matmul has no scalar parameters; a kernel with some names their values here
//!     // (`canonical_params([("alpha", "1")])`), as tuned.
//!     params: String::new(),
//!     target: Target { cpu_model: "cpu".into(), features: "avx2".into(), threads: 4 },
//!     backend: "cranelift".into(),
//! };
//! let run = db.start_run(&NewRun {
//!     key: key.clone(),
//!     kernel_source: "…".into(),
//!     strata_version: "0.1.0".into(),
//!     strategy: "random".into(),
//!     seed: 1,
//!     budget_trials: Some(10),
//!     budget_seconds: None,
//!     float_ops: Some(2 * 64 * 64 * 64),
//!     bytes: 3 * 64 * 64 * 4,
//!     started_at: "2026-01-01T00:00:00Z".into(),
//! })?;
//! db.record(run, &Measurement {
//!     trial: 0,
//!     schedule: "default".into(),
//!     schedule_hash: "h0".into(),
//!     status: Status::Ok,
//!     median_s: Some(1e-3),
//!     min_s: Some(9e-4),
//!     max_s: Some(2e-3),
//!     runs: 10,
//!     settings: Settings { compile_s: Some(0.02), ..Settings::default() },
//!     is_default: true,
//!     remeasured: false,
//!     measured_at: "2026-01-01T00:00:01Z".into(),
//! })?;
//! db.finish_run(run, "budget", "2026-01-01T00:01:00Z")?;
//! assert_eq!(db.winner(&key).unwrap().measurement.schedule, "default");
//! # drop(db);
//! # for ext in ["", "-wal", "-shm"] { let _ = std::fs::remove_file(format!("{}{ext}", path.display())); }
//! # Ok::<(), strata_tuning_db::DbError>(())
//! ```

#![warn(missing_docs)]

mod checksum;
mod db;
mod error;
mod exchange;
mod features;
mod model;
mod output;
mod plausible;
mod printable;
mod query;
mod records;
mod report;
mod schema;
mod settings;

pub use db::{Db, OpenOptions, DEFAULT_BUSY_TIMEOUT};
pub use error::{short_hash, DbError, Miss};
pub use exchange::{ImportCheck, EXPORT_FORMAT, EXPORT_VERSION};
pub use features::FeatureKey;
pub use model::{
    canonical_params, canonical_shape, DamagedRow, Measurement, NewRun, ReportEntry, Run, Status,
    Target, TrialTime, TuningKey, UnstableTime, Winner, DEFAULT_BACKEND, TRIAL_DEFINITION,
    WINNER_RULE,
};
pub use output::{check_replaceable, is_file_of_database, is_same_file, write_replacing};
pub use plausible::MAX_RATE_PER_S;
pub use printable::printable;
pub use schema::{Migration, APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION};
pub use settings::Settings;
