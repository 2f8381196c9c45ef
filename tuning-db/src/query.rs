//! Reading for the tuner and for programs: what was measured, the best so far, and
//! winner lookups that explain a miss.

use std::collections::HashSet;

use rusqlite::types::{Type, ValueRef};
use rusqlite::{named_params, Connection, Row, ToSql};

use crate::checksum::VERIFIED_WHERE;
use crate::db::Db;
use crate::error::{DbError, Miss};
use crate::model::{DamagedRow, Measurement, NewRun, Run, Status, Target, TuningKey, Winner};
use crate::plausible::PLAUSIBLE_WHERE;
use crate::settings::Settings;

/// The condition selecting the runs (alias `r`) of one key; bind with [`key_params`].
pub(crate) const KEY_WHERE: &str = "r.kernel_hash = :kernel_hash AND r.shape = :shape \
     AND r.params = :params AND r.cpu_model = :cpu_model AND r.features = :features AND r.threads = :threads \
     AND r.backend = :backend";

/// The named parameters of [`KEY_WHERE`].
pub(crate) fn key_params(key: &TuningKey) -> [(&'static str, &dyn ToSql); 7] {
    [
        (":kernel_hash", &key.kernel_hash),
        (":shape", &key.shape),
        (":params", &key.params),
        (":cpu_model", &key.target.cpu_model),
        (":features", &key.target.features),
        (":threads", &key.target.threads),
        (":backend", &key.backend),
    ]
}

/// The measurement columns (alias `m`) that [`measurement_from_row`] reads, in order.
pub(crate) const MEASUREMENT_COLUMNS: &str = "m.trial, m.schedule, m.schedule_hash, m.status, \
     m.status_detail, m.median_s, m.min_s, m.max_s, m.runs, m.is_default, m.remeasured, \
     m.measured_at, m.threads, m.min_time_s, m.cutoff_s, m.tolerance, m.elapsed_s, m.compile_s, \
     m.genome, m.other_settings";

/// How many columns [`MEASUREMENT_COLUMNS`] holds: a query selecting more after them reads
/// those from here on.
pub(crate) const MEASUREMENT_COLUMN_COUNT: usize = 20;

/// A value as text whatever its type (a damaged run uid may be a blob, or not UTF-8).
fn lossy_text(value: ValueRef<'_>) -> String {
    match value {
        ValueRef::Text(b) | ValueRef::Blob(b) => String::from_utf8_lossy(b).into_owned(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => f.to_string(),
        ValueRef::Null => String::new(),
    }
}

/// Reads a non-negative integer column as `u64`.
pub(crate) fn get_u64(row: &Row<'_>, idx: usize) -> rusqlite::Result<u64> {
    let v: i64 = row.get(idx)?;
    u64::try_from(v).map_err(|_| rusqlite::Error::IntegralValueOutOfRange(idx, v))
}

/// Reads an optional non-negative integer column as `u64`.
pub(crate) fn get_opt_u64(row: &Row<'_>, idx: usize) -> rusqlite::Result<Option<u64>> {
    let v: Option<i64> = row.get(idx)?;
    v.map(|v| u64::try_from(v).map_err(|_| rusqlite::Error::IntegralValueOutOfRange(idx, v)))
        .transpose()
}

/// Builds a [`Measurement`] from [`MEASUREMENT_COLUMNS`] starting at column `at`.
pub(crate) fn measurement_from_row(row: &Row<'_>, at: usize) -> rusqlite::Result<Measurement> {
    let kind: String = row.get(at + 3)?;
    let status = Status::from_parts(&kind, row.get(at + 4)?).ok_or_else(|| {
        let why = format!("unknown measurement status `{kind}`");
        rusqlite::Error::FromSqlConversionFailure(at + 3, Type::Text, why.into())
    })?;
    Ok(Measurement {
        trial: get_u64(row, at)?,
        schedule: row.get(at + 1)?,
        schedule_hash: row.get(at + 2)?,
        status,
        median_s: row.get(at + 5)?,
        min_s: row.get(at + 6)?,
        max_s: row.get(at + 7)?,
        runs: row.get(at + 8)?,
        is_default: row.get(at + 9)?,
        remeasured: row.get(at + 10)?,
        measured_at: row.get(at + 11)?,
        settings: settings_from_row(row, at + 12)?,
    })
}

/// Builds [`Settings`] from the settings' columns of [`MEASUREMENT_COLUMNS`], from column `at`.
fn settings_from_row(row: &Row<'_>, at: usize) -> rusqlite::Result<Settings> {
    Ok(Settings {
        threads: row.get(at)?,
        min_time_s: row.get(at + 1)?,
        cutoff_s: row.get(at + 2)?,
        tolerance: row.get(at + 3)?,
        elapsed_s: row.get(at + 4)?,
        compile_s: row.get(at + 5)?,
        genome: row.get(at + 6)?,
        other: row.get(at + 7)?,
    })
}

/// The runs columns (alias `r`) that [`run_from_row`] reads, in order.
pub(crate) const RUN_COLUMNS: &str =
    "r.uid, r.kernel_hash, r.kernel_name, r.kernel_source, r.shape, \
     r.cpu_model, r.features, r.threads, r.strata_version, r.strategy, r.seed, \
     r.budget_trials, r.budget_seconds, r.float_ops, r.bytes, r.started_at, r.ended_at, \
     r.stop_reason, r.backend, r.params";

/// How many columns [`RUN_COLUMNS`] holds: a query selecting more after them reads those
/// from here on.
pub(crate) const RUN_COLUMN_COUNT: usize = 20;

/// Builds a [`Run`] from [`RUN_COLUMNS`].
pub(crate) fn run_from_row(row: &Row<'_>) -> rusqlite::Result<Run> {
    let key = TuningKey {
        kernel_hash: row.get(1)?,
        kernel_name: row.get(2)?,
        shape: row.get(4)?,
        params: row.get(19)?,
        target: Target {
            cpu_model: row.get(5)?,
            features: row.get(6)?,
            threads: row.get(7)?,
        },
        backend: row.get(18)?,
    };
    let start = NewRun {
        key,
        kernel_source: row.get(3)?,
        strata_version: row.get(8)?,
        strategy: row.get(9)?,
        seed: row.get::<_, i64>(10)? as u64,
        budget_trials: get_opt_u64(row, 11)?,
        budget_seconds: row.get(12)?,
        float_ops: get_opt_u64(row, 13)?,
        bytes: get_u64(row, 14)?,
        started_at: row.get(15)?,
    };
    Ok(Run {
        uid: row.get(0)?,
        start,
        ended_at: row.get(16)?,
        stop_reason: row.get(17)?,
    })
}

/// The `ok` measurements among the rows `filter` (on alias `m`) selects for `key`, best
/// first: re-measured rows first, then fastest median; ties by run start, run uid, trial.
/// Implausible times (not positive, or beyond any CPU's rate) and damaged rows (content not
/// matching their checksum) never compete.
pub(crate) fn ranked_where(
    conn: &Connection,
    key: &TuningKey,
    filter: &str,
    limit: Option<u64>,
) -> rusqlite::Result<Vec<(Measurement, i64)>> {
    let limit = limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
    let sql = format!(
        "SELECT {MEASUREMENT_COLUMNS}, r.id FROM measurements m JOIN runs r ON m.run_id = r.id
         WHERE {KEY_WHERE} AND m.status = 'ok' AND {PLAUSIBLE_WHERE} AND {VERIFIED_WHERE}
             AND ({filter})
         ORDER BY m.remeasured DESC, m.median_s ASC, r.started_at, r.uid, m.trial
         LIMIT {limit}"
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(&key_params(key)[..], |row| {
        Ok((
            measurement_from_row(row, 0)?,
            row.get(MEASUREMENT_COLUMN_COUNT)?,
        ))
    })?;
    rows.collect()
}

/// The first of [`ranked_where`].
pub(crate) fn best_where(
    conn: &Connection,
    key: &TuningKey,
    filter: &str,
) -> rusqlite::Result<Option<(Measurement, i64)>> {
    Ok(ranked_where(conn, key, filter, Some(1))?.into_iter().next())
}

impl Db {
    /// The hashes of every schedule measured for `key` in any run, whatever its status,
    /// so a resumed tuner measures none of them again.
    pub fn measured_hashes(&self, key: &TuningKey) -> Result<HashSet<String>, DbError> {
        let sql = format!(
            "SELECT DISTINCT m.schedule_hash FROM measurements m JOIN runs r ON m.run_id = r.id
             WHERE {KEY_WHERE}"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(&key_params(key)[..], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.err(e))
    }

    /// The fastest `ok` measurement for `key` with its run id; when any re-measured
    /// (fresh-process) rows exist, only those compete.
    pub fn best(&self, key: &TuningKey) -> Result<Option<(Measurement, i64)>, DbError> {
        best_where(&self.conn, key, "1").map_err(|e| self.err(e))
    }

    /// The floating-point operation count the reference evaluator recorded for the kernel
    /// with `kernel_hash` at `shape` with scalar parameter values `params` (both canonical, as
    /// in [`TuningKey`]; `params` is `""` for a kernel without parameters), from the latest run
    /// that has one. The count is the definition's, the same on every machine, thread count
    /// and backend, so any run of the kernel, shape and values gives it (`strata run
    /// --no-check` reports GFLOP/s with it without running the reference). Values count as
    /// much as the shape: a parameter may bound a loop or choose a branch.
    pub fn float_ops(
        &self,
        kernel_hash: &str,
        shape: &str,
        params: &str,
    ) -> Result<Option<u64>, DbError> {
        let sql = "SELECT float_ops FROM runs WHERE kernel_hash = :kernel_hash AND shape = :shape
             AND params = :params AND float_ops IS NOT NULL
             ORDER BY started_at DESC, uid DESC LIMIT 1";
        let params =
            named_params! { ":kernel_hash": kernel_hash, ":shape": shape, ":params": params };
        let found = self.conn.query_row(sql, params, |r| get_opt_u64(r, 0));
        match found {
            Ok(ops) => Ok(ops),
            Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
            Err(e) => Err(self.err(e)),
        }
    }

    /// The highest trial number recorded for `key` in any run, so a resumed tuner can
    /// number its trials on from there.
    pub fn max_trial(&self, key: &TuningKey) -> Result<Option<u64>, DbError> {
        let sql = format!(
            "SELECT max(m.trial) FROM measurements m JOIN runs r ON m.run_id = r.id
             WHERE {KEY_WHERE}"
        );
        self.conn
            .query_row(&sql, &key_params(key)[..], |r| get_opt_u64(r, 0))
            .map_err(|e| self.err(e))
    }

    /// Every run with its id, in the order they were started in this file.
    pub fn runs(&self) -> Result<Vec<(i64, Run)>, DbError> {
        let sql = format!("SELECT {RUN_COLUMNS}, r.id FROM runs r ORDER BY r.id");
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |row| {
                Ok((row.get(RUN_COLUMN_COUNT)?, run_from_row(row)?))
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.err(e))
    }

    /// Every measurement of run `run_id`, in the order they were recorded, except damaged
    /// ones (content not matching its checksum: [`Db::damaged`] lists them).
    pub fn measurements(&self, run_id: i64) -> Result<Vec<Measurement>, DbError> {
        let sql = format!(
            "SELECT {MEASUREMENT_COLUMNS} FROM measurements m JOIN runs r ON m.run_id = r.id
             WHERE m.run_id = ?1 AND {VERIFIED_WHERE} ORDER BY m.id"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([run_id], |row| measurement_from_row(row, 0))
            .map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.err(e))
    }

    /// Every winner for exactly `key`, best first (the order of [`Db::best`]), one per
    /// schedule: a program that cannot use the first (its schedule no longer fits the
    /// kernel) falls back to the next. Empty when [`Db::winner`] would miss.
    pub fn ranked_winners(&self, key: &TuningKey) -> Result<Vec<Winner>, DbError> {
        let rows = ranked_where(&self.conn, key, "1", None).map_err(|e| self.err(e))?;
        let mut seen = HashSet::new();
        Ok(rows
            .into_iter()
            .filter(|(m, _)| seen.insert(m.schedule_hash.clone()))
            .map(|(measurement, run_id)| Winner {
                measurement,
                run_id,
            })
            .collect())
    }

    /// The best schedule for exactly `key` (kernel hash, shape, parameter values, target and
    /// backend).
    ///
    /// On a miss, says which part differed: the kernel (and whether its name was tuned
    /// under other hashes), the shape (listing the tuned shapes), the parameter values
    /// (listing those tuned at the shape), the target (listing the tuned targets), the
    /// backend (listing the backends tuned), or that nothing measured for the key succeeded.
    // A miss is the cold path of a once-per-kernel lookup: its size does not matter.
    #[allow(clippy::result_large_err)]
    pub fn winner(&self, key: &TuningKey) -> Result<Winner, Miss> {
        if let Some((measurement, run_id)) = self.best(key)? {
            return Ok(Winner {
                measurement,
                run_id,
            });
        }
        Err(self.explain_miss(key)?)
    }

    /// Works out why `key` has no winner (see [`Db::winner`]): the first part of the key, in
    /// the order kernel, shape, parameter values, target, backend, that no run shares with
    /// it together with the parts before.
    pub fn explain_miss(&self, key: &TuningKey) -> Result<Miss, DbError> {
        let name = key.kernel_name.clone();
        let shapes = self.strings(
            "SELECT DISTINCT shape FROM runs WHERE kernel_hash = :h ORDER BY shape",
            named_params! { ":h": key.kernel_hash },
        )?;
        if shapes.is_empty() {
            let other_hashes = self.strings(
                "SELECT DISTINCT kernel_hash FROM runs WHERE kernel_name = :n ORDER BY kernel_hash",
                named_params! { ":n": key.kernel_name },
            )?;
            return Ok(Miss::Kernel {
                kernel_name: name,
                kernel_hash: key.kernel_hash.clone(),
                other_hashes,
            });
        }
        if !shapes.contains(&key.shape) {
            return Ok(Miss::Shape {
                kernel_name: name,
                shape: key.shape.clone(),
                tuned_shapes: shapes,
            });
        }
        let tuned_params = self.params_for(key)?;
        if !tuned_params.contains(&key.params) {
            return Ok(Miss::Params {
                kernel_name: name,
                shape: key.shape.clone(),
                params: key.params.clone(),
                tuned_params,
            });
        }
        let targets = self.targets_for(key)?;
        if !targets.contains(&key.target) {
            return Ok(Miss::Target {
                kernel_name: name,
                shape: key.shape.clone(),
                params: key.params.clone(),
                target: key.target.clone(),
                tuned_targets: targets,
            });
        }
        let backends = self.backends_for(key)?;
        if !backends.contains(&key.backend) {
            return Ok(Miss::Backend {
                kernel_name: name,
                shape: key.shape.clone(),
                params: key.params.clone(),
                target: key.target.clone(),
                backend: key.backend.clone(),
                tuned_backends: backends,
            });
        }
        Ok(Miss::NoSuccess {
            kernel_name: name,
            shape: key.shape.clone(),
            params: key.params.clone(),
            target: key.target.clone(),
            backend: key.backend.clone(),
            measured: self.measurement_count(key)?,
            damaged: self.damaged(Some(key))?.len() as u64,
        })
    }

    /// The parameter values `key`'s kernel was tuned with at its shape.
    fn params_for(&self, key: &TuningKey) -> Result<Vec<String>, DbError> {
        self.strings(
            "SELECT DISTINCT params FROM runs WHERE kernel_hash = :h AND shape = :s
             ORDER BY params",
            named_params! { ":h": key.kernel_hash, ":s": key.shape },
        )
    }

    /// The backends `key`'s kernel was tuned with at its shape and parameter values on its
    /// target.
    fn backends_for(&self, key: &TuningKey) -> Result<Vec<String>, DbError> {
        self.strings(
            "SELECT DISTINCT backend FROM runs WHERE kernel_hash = :h AND shape = :s
             AND params = :p AND cpu_model = :c AND features = :f AND threads = :t
             ORDER BY backend",
            named_params! {
                ":h": key.kernel_hash, ":s": key.shape, ":p": key.params,
                ":c": key.target.cpu_model, ":f": key.target.features, ":t": key.target.threads,
            },
        )
    }

    /// The targets that `key`'s kernel was tuned on at its shape and parameter values.
    fn targets_for(&self, key: &TuningKey) -> Result<Vec<Target>, DbError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT DISTINCT cpu_model, features, threads FROM runs
                 WHERE kernel_hash = :h AND shape = :s AND params = :p
                 ORDER BY cpu_model, features, threads",
            )
            .map_err(|e| self.err(e))?;
        let params = named_params! { ":h": key.kernel_hash, ":s": key.shape, ":p": key.params };
        let rows = stmt
            .query_map(params, |r| {
                Ok(Target {
                    cpu_model: r.get(0)?,
                    features: r.get(1)?,
                    threads: r.get(2)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.err(e))
    }

    /// How many measurements `key` has, any status.
    fn measurement_count(&self, key: &TuningKey) -> Result<u64, DbError> {
        let sql = format!(
            "SELECT count(*) FROM measurements m JOIN runs r ON m.run_id = r.id WHERE {KEY_WHERE}"
        );
        self.conn
            .query_row(&sql, &key_params(key)[..], |r| get_u64(r, 0))
            .map_err(|e| self.err(e))
    }

    /// The first column of every row of `sql`, as strings.
    pub(crate) fn strings(
        &self,
        sql: &str,
        params: &[(&str, &dyn ToSql)],
    ) -> Result<Vec<String>, DbError> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params, |r| r.get(0))
            .map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.err(e))
    }

    /// The measurement rows whose content does not match their checksum (a byte changed
    /// on disk, or a row edited behind the database's back), of `key` or of every key: what
    /// winners, reports and exports skipped. By run id, then row.
    pub fn damaged(&self, key: Option<&TuningKey>) -> Result<Vec<DamagedRow>, DbError> {
        let (filter, params) = match key {
            Some(key) => (KEY_WHERE, key_params(key).to_vec()),
            None => ("1", Vec::new()),
        };
        let sql = format!(
            "SELECT r.id, r.uid, m.id, CASE WHEN typeof(m.trial) = 'integer' THEN m.trial END
             FROM measurements m JOIN runs r ON m.run_id = r.id
             WHERE ({filter}) AND NOT coalesce({VERIFIED_WHERE}, 0) ORDER BY r.id, m.id"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(&params[..], |r| {
                Ok(DamagedRow {
                    run_id: r.get(0)?,
                    run_uid: lossy_text(r.get_ref(1)?),
                    row_id: r.get(2)?,
                    trial: r.get(3)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.err(e))
    }

    /// `PRAGMA integrity_check`: `"ok"` for a sound file, otherwise SQLite's findings, one per line.
    pub fn integrity_check(&self) -> Result<String, DbError> {
        let mut stmt = self
            .conn
            .prepare("PRAGMA integrity_check")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| self.err(e))?;
        let lines: Vec<String> = rows
            .collect::<rusqlite::Result<_>>()
            .map_err(|e| self.err(e))?;
        Ok(lines.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A query that selects more after [`RUN_COLUMNS`] reads them from [`RUN_COLUMN_COUNT`].
    #[test]
    fn the_run_column_count_counts_the_run_columns() {
        assert_eq!(RUN_COLUMNS.split(',').count(), RUN_COLUMN_COUNT);
    }

    /// The same for [`MEASUREMENT_COLUMNS`], whose last columns are the settings' columns in
    /// their order.
    #[test]
    fn the_measurement_column_count_counts_the_measurement_columns() {
        assert_eq!(
            MEASUREMENT_COLUMNS.split(',').count(),
            MEASUREMENT_COLUMN_COUNT
        );
        let settings: Vec<String> = crate::settings::COLUMNS
            .iter()
            .map(|c| format!("m.{c}"))
            .collect();
        let squeeze = |s: &str| s.split_whitespace().collect::<String>();
        assert!(squeeze(MEASUREMENT_COLUMNS).ends_with(&squeeze(&settings.join(", "))));
    }
}
