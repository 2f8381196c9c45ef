//! Writing: starting a run, recording each measurement as it is made, finishing a run.

use rusqlite::{named_params, Connection, ErrorCode};

use crate::checksum::{COVERED, FUNCTION};
use crate::db::Db;
use crate::error::DbError;
use crate::model::{Measurement, NewRun};

/// Converts a `u64` to SQLite's `i64`, failing above `i64::MAX`.
pub(crate) fn to_i64(field: &'static str, value: u64) -> Result<i64, DbError> {
    i64::try_from(value).map_err(|_| DbError::OutOfRange { field, value })
}

/// Converts an optional `u64` like [`to_i64`].
pub(crate) fn opt_i64(field: &'static str, value: Option<u64>) -> Result<Option<i64>, DbError> {
    value.map(|v| to_i64(field, v)).transpose()
}

impl Db {
    /// Records the start of a tuning run; returns its run id (a row id of this file).
    ///
    /// The run also gets a random uid that names it across export and import.
    pub fn start_run(&self, run: &NewRun) -> Result<i64, DbError> {
        let values = RunValues::new(run)?;
        self.write(|conn| {
            let uid: String =
                conn.query_row("SELECT lower(hex(randomblob(16)))", [], |r| r.get(0))?;
            insert_run_row(conn, &uid, run, &values, None, None)?;
            Ok(conn.last_insert_rowid())
        })
    }

    /// Records one measurement of run `run_id`, committed before this returns.
    pub fn record(&self, run_id: i64, m: &Measurement) -> Result<(), DbError> {
        let trial = to_i64("trial", m.trial)?;
        let result = self.write(|conn| insert_measurement(conn, run_id, trial, m).map(|_| ()));
        result.map_err(|e| self.explain_insert_error(e, run_id, m))
    }

    /// Turns constraint failures of a measurement insert into their own variants.
    fn explain_insert_error(&self, e: DbError, run_id: i64, m: &Measurement) -> DbError {
        let DbError::Sqlite { source, .. } = &e else {
            return e;
        };
        let message = source.to_string();
        if source.sqlite_error_code() != Some(ErrorCode::ConstraintViolation) {
            return e;
        }
        if message.contains("FOREIGN KEY") {
            DbError::UnknownRun {
                path: self.path.clone(),
                run_id,
            }
        } else if message.contains("UNIQUE") {
            DbError::DuplicateMeasurement {
                path: self.path.clone(),
                run_id,
                trial: m.trial,
                schedule_hash: m.schedule_hash.clone(),
            }
        } else {
            e
        }
    }

    /// Records how and when run `run_id` ended.
    pub fn finish_run(
        &self,
        run_id: i64,
        stop_reason: &str,
        ended_at: &str,
    ) -> Result<(), DbError> {
        let changed = self.write(|conn| {
            conn.execute(
                "UPDATE runs SET stop_reason = ?1, ended_at = ?2 WHERE id = ?3",
                rusqlite::params![stop_reason, ended_at, run_id],
            )
        })?;
        if changed == 0 {
            return Err(DbError::UnknownRun {
                path: self.path.clone(),
                run_id,
            });
        }
        Ok(())
    }
}

/// A run's integer fields, checked for SQLite's range.
pub(crate) struct RunValues {
    seed: i64,
    budget_trials: Option<i64>,
    float_ops: Option<i64>,
    bytes: i64,
}

impl RunValues {
    /// Converts and checks; the seed keeps its bits (a `u64` stored as `i64`).
    pub(crate) fn new(run: &NewRun) -> Result<RunValues, DbError> {
        Ok(RunValues {
            seed: run.seed as i64,
            budget_trials: opt_i64("budget_trials", run.budget_trials)?,
            float_ops: opt_i64("float_ops", run.float_ops)?,
            bytes: to_i64("bytes", run.bytes)?,
        })
    }
}

/// Inserts one run row; `INSERT OR IGNORE` so an imported uid already present is kept.
pub(crate) fn insert_run_row(
    conn: &Connection,
    uid: &str,
    run: &NewRun,
    v: &RunValues,
    ended_at: Option<&str>,
    stop_reason: Option<&str>,
) -> rusqlite::Result<usize> {
    let k = &run.key;
    conn.execute(
        "INSERT OR IGNORE INTO runs (uid, kernel_hash, kernel_name, kernel_source, shape,
             cpu_model, features, threads, strata_version, strategy, seed, budget_trials,
             budget_seconds, float_ops, bytes, started_at, ended_at, stop_reason, backend,
             params)
         VALUES (:uid, :kernel_hash, :kernel_name, :kernel_source, :shape, :cpu_model,
             :features, :threads, :strata_version, :strategy, :seed, :budget_trials,
             :budget_seconds, :float_ops, :bytes, :started_at, :ended_at, :stop_reason,
             :backend, :params)",
        named_params! {
            ":uid": uid, ":kernel_hash": k.kernel_hash, ":kernel_name": k.kernel_name,
            ":kernel_source": run.kernel_source, ":shape": k.shape,
            ":cpu_model": k.target.cpu_model, ":features": k.target.features,
            ":threads": k.target.threads, ":strata_version": run.strata_version,
            ":strategy": run.strategy, ":seed": v.seed, ":budget_trials": v.budget_trials,
            ":budget_seconds": run.budget_seconds, ":float_ops": v.float_ops,
            ":bytes": v.bytes, ":started_at": run.started_at, ":ended_at": ended_at,
            ":stop_reason": stop_reason, ":backend": k.backend, ":params": k.params,
        },
    )
}

/// Inserts one measurement row of run `run_id` with `verb` (`INSERT` or
/// `INSERT OR IGNORE`), with its checksum; returns the number of rows inserted.
fn insert_measurement_with(
    conn: &Connection,
    verb: &str,
    run_id: i64,
    trial: i64,
    m: &Measurement,
) -> rusqlite::Result<usize> {
    let sql = format!(
        "{verb} INTO measurements (run_id, trial, schedule, schedule_hash, status,
             status_detail, median_s, min_s, max_s, runs, is_default, remeasured, measured_at,
             threads, min_time_s, cutoff_s, tolerance, elapsed_s, compile_s, genome,
             other_settings)
         VALUES (:run_id, :trial, :schedule, :schedule_hash, :status, :status_detail,
             :median_s, :min_s, :max_s, :runs, :is_default, :remeasured, :measured_at,
             :threads, :min_time_s, :cutoff_s, :tolerance, :elapsed_s, :compile_s, :genome,
             :other_settings)"
    );
    let s = &m.settings;
    let inserted = conn.execute(
        &sql,
        named_params! {
            ":run_id": run_id, ":trial": trial, ":schedule": m.schedule,
            ":schedule_hash": m.schedule_hash, ":status": m.status.kind(),
            ":status_detail": m.status.detail(), ":median_s": m.median_s,
            ":min_s": m.min_s, ":max_s": m.max_s, ":runs": m.runs,
            ":is_default": m.is_default, ":remeasured": m.remeasured,
            ":measured_at": m.measured_at, ":threads": s.threads, ":min_time_s": s.min_time_s,
            ":cutoff_s": s.cutoff_s, ":tolerance": s.tolerance, ":elapsed_s": s.elapsed_s,
            ":compile_s": s.compile_s, ":genome": s.genome, ":other_settings": s.other,
        },
    )?;
    if inserted > 0 {
        store_checksum(conn, conn.last_insert_rowid())?;
    }
    Ok(inserted)
}

/// Computes and stores the checksum of measurement row `id` from its columns as stored (the
/// same expression readers verify with), in the caller's transaction.
fn store_checksum(conn: &Connection, id: i64) -> rusqlite::Result<()> {
    let sql = format!(
        "UPDATE measurements SET checksum = (SELECT {FUNCTION}({COVERED})
             FROM measurements m JOIN runs r ON m.run_id = r.id WHERE m.id = ?1)
         WHERE id = ?1"
    );
    conn.execute(&sql, [id]).map(|_| ())
}

/// Inserts a new measurement; a duplicate is an error.
fn insert_measurement(
    conn: &Connection,
    run_id: i64,
    trial: i64,
    m: &Measurement,
) -> rusqlite::Result<usize> {
    insert_measurement_with(conn, "INSERT", run_id, trial, m)
}

/// Inserts an imported measurement; one already present is skipped (returns 0).
pub(crate) fn insert_measurement_if_new(
    conn: &Connection,
    run_id: i64,
    trial: i64,
    m: &Measurement,
) -> rusqlite::Result<usize> {
    insert_measurement_with(conn, "INSERT OR IGNORE", run_id, trial, m)
}
