//! The report: one entry per (kernel hash, shape, params, target, backend) with the default and
//! best times, speedup, failures by kind and the series of measured times.

use std::collections::BTreeMap;

use rusqlite::{named_params, Connection};

use crate::checksum::VERIFIED_WHERE;
use crate::db::Db;
use crate::error::DbError;
use crate::model::{Measurement, ReportEntry, Target, TrialTime, TuningKey, UnstableTime};
use crate::query::{best_where, get_opt_u64, get_u64, key_params, KEY_WHERE};

impl Db {
    /// One entry per (kernel hash, shape, params, target, backend), sorted by kernel name,
    /// shape, params, target, backend, all read from one snapshot ([`Db::snapshot`]): rows another
    /// connection commits meanwhile are in none of them. Damaged rows are left out and
    /// listed ([`ReportEntry::damaged`]).
    ///
    /// `kernel_filter` keeps only kernels whose name equals it or whose hash starts with it.
    pub fn report(&self, kernel_filter: Option<&str>) -> Result<Vec<ReportEntry>, DbError> {
        self.report_with_seam(kernel_filter, || {})
    }

    /// [`Db::report`], calling `after_first_read` once the snapshot is taken (after the
    /// first query): the seam a test commits another connection's row through.
    pub(crate) fn report_with_seam(
        &self,
        kernel_filter: Option<&str>,
        after_first_read: impl FnOnce(),
    ) -> Result<Vec<ReportEntry>, DbError> {
        self.snapshot(|db| {
            let keys = db.keys(kernel_filter)?;
            after_first_read();
            let mut entries = keys
                .iter()
                .map(|key| db.report_entry(key))
                .collect::<Result<Vec<_>, _>>()?;
            entries.sort_by(|a, b| sort_key(&a.key).cmp(&sort_key(&b.key)));
            Ok(entries)
        })
    }

    /// The entry of one key, with its damaged rows.
    fn report_entry(&self, key: &TuningKey) -> Result<ReportEntry, DbError> {
        let entry = report_entry(&self.conn, key).map_err(|e| self.err(e))?;
        Ok(ReportEntry {
            damaged: self.damaged(Some(&entry.key))?,
            ..entry
        })
    }

    /// Every distinct key in the runs table (kernel name from one of its runs; the
    /// entry replaces it with the latest run's).
    fn keys(&self, kernel_filter: Option<&str>) -> Result<Vec<TuningKey>, DbError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT DISTINCT kernel_hash, shape, cpu_model, features, threads, backend, params
                 FROM runs
                 WHERE :f IS NULL OR kernel_name = :f OR substr(kernel_hash, 1, length(:f)) = :f",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(named_params! { ":f": kernel_filter }, |r| {
                Ok(TuningKey {
                    kernel_hash: r.get(0)?,
                    kernel_name: String::new(),
                    shape: r.get(1)?,
                    params: r.get(6)?,
                    target: Target {
                        cpu_model: r.get(2)?,
                        features: r.get(3)?,
                        threads: r.get(4)?,
                    },
                    backend: r.get(5)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| self.err(e))
    }
}

/// Report order: kernel name, shape, params, target, backend, then hash.
fn sort_key(key: &TuningKey) -> (&str, &str, &str, &Target, &str, &str) {
    (
        &key.kernel_name,
        &key.shape,
        &key.params,
        &key.target,
        &key.backend,
        &key.kernel_hash,
    )
}

/// Builds the report entry of one key.
fn report_entry(conn: &Connection, key: &TuningKey) -> rusqlite::Result<ReportEntry> {
    let (kernel_name, float_ops, bytes) = latest_run_facts(conn, key)?;
    let key = TuningKey {
        kernel_name,
        ..key.clone()
    };
    let best = best_where(conn, &key, "1")?;
    let default = best_where(conn, &key, "m.is_default = 1")?;
    let default_median_s = default.and_then(|(m, _)| m.median_s);
    let default_time = |filter| -> rusqlite::Result<Option<f64>> {
        Ok(best_where(conn, &key, filter)?.and_then(|(m, _)| m.median_s))
    };
    let best_median_s = best.as_ref().and_then(|(m, _)| m.median_s);
    let speedup = match (default_median_s, best_median_s) {
        (Some(d), Some(b)) if b > 0.0 => Some(d / b),
        _ => None,
    };
    Ok(ReportEntry {
        runs: count(conn, &key, "SELECT count(*) FROM runs r WHERE {KEY}")?,
        trials: count(
            conn,
            &key,
            "SELECT count(*) FROM measurements m JOIN runs r ON m.run_id = r.id \
             WHERE {KEY} AND m.remeasured = 0 AND m.is_default = 0 AND {VERIFIED}",
        )?,
        failures: failures(conn, &key)?,
        default_median_s,
        default_search_s: default_time("m.is_default = 1 AND m.remeasured = 0")?,
        default_confirmed_s: default_time("m.is_default = 1 AND m.remeasured = 1")?,
        best_median_s,
        winner: trial_time(conn, best.as_ref())?,
        search_best: trial_time(conn, best_where(conn, &key, "m.remeasured = 0")?.as_ref())?,
        best_schedule: best.as_ref().map(|(m, _)| m.schedule.clone()),
        best_schedule_hash: best.as_ref().map(|(m, _)| m.schedule_hash.clone()),
        speedup,
        float_ops,
        bytes,
        series: series(conn, &key)?,
        damaged: Vec::new(),
        unstable: unstable(conn, &key)?,
        key,
    })
}

/// Names a ranked measurement by run and trial (`None` for none, or one without a time).
fn trial_time(
    conn: &Connection,
    found: Option<&(Measurement, i64)>,
) -> rusqlite::Result<Option<TrialTime>> {
    let Some((m, run_id)) = found else {
        return Ok(None);
    };
    let Some(median_s) = m.median_s else {
        return Ok(None);
    };
    let run_uid = conn.query_row("SELECT uid FROM runs WHERE id = ?1", [run_id], |r| r.get(0))?;
    Ok(Some(TrialTime {
        run_id: *run_id,
        run_uid,
        trial: m.trial,
        median_s,
        schedule_hash: m.schedule_hash.clone(),
        remeasured: m.remeasured,
    }))
}

/// The kernel name, float ops and bytes of the key's latest run.
fn latest_run_facts(
    conn: &Connection,
    key: &TuningKey,
) -> rusqlite::Result<(String, Option<u64>, u64)> {
    let sql = format!(
        "SELECT r.kernel_name, r.float_ops, r.bytes FROM runs r WHERE {KEY_WHERE}
         ORDER BY r.started_at DESC, r.uid DESC LIMIT 1"
    );
    conn.query_row(&sql, &key_params(key)[..], |r| {
        Ok((r.get(0)?, get_opt_u64(r, 1)?, get_u64(r, 2)?))
    })
}

/// Runs a `count(*)` query whose `{KEY}` is replaced by the key condition and `{VERIFIED}`
/// by the checksum's.
fn count(conn: &Connection, key: &TuningKey, sql: &str) -> rusqlite::Result<u64> {
    let sql = sql
        .replace("{KEY}", KEY_WHERE)
        .replace("{VERIFIED}", VERIFIED_WHERE);
    conn.query_row(&sql, &key_params(key)[..], |r| get_u64(r, 0))
}

/// Failed search measurements by status kind.
fn failures(conn: &Connection, key: &TuningKey) -> rusqlite::Result<BTreeMap<String, u64>> {
    let sql = format!(
        "SELECT m.status, count(*) FROM measurements m JOIN runs r ON m.run_id = r.id
         WHERE {KEY_WHERE} AND m.status != 'ok' AND m.remeasured = 0 AND {VERIFIED_WHERE}
         GROUP BY m.status"
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(&key_params(key)[..], |r| Ok((r.get(0)?, get_u64(r, 1)?)))?;
    rows.collect()
}

/// `(trial, median_s)` of every `ok` search measurement (the default's included): runs by
/// start, then trial.
fn series(conn: &Connection, key: &TuningKey) -> rusqlite::Result<Vec<(u64, f64)>> {
    let sql = format!(
        "SELECT m.trial, m.median_s FROM measurements m JOIN runs r ON m.run_id = r.id
         WHERE {KEY_WHERE} AND m.status = 'ok' AND m.median_s IS NOT NULL AND m.remeasured = 0
             AND {VERIFIED_WHERE}
         ORDER BY r.started_at, r.uid, m.trial, m.schedule_hash"
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(&key_params(key)[..], |r| Ok((get_u64(r, 0)?, r.get(1)?)))?;
    rows.collect()
}

/// The key's unstable re-measurements, runs by start, then trial.
fn unstable(conn: &Connection, key: &TuningKey) -> rusqlite::Result<Vec<UnstableTime>> {
    let sql = format!(
        "SELECT r.id, m.trial, m.is_default, coalesce(m.status_detail, '')
         FROM measurements m JOIN runs r ON m.run_id = r.id
         WHERE {KEY_WHERE} AND m.status = 'unstable' AND {VERIFIED_WHERE}
         ORDER BY r.started_at, r.uid, m.trial"
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(&key_params(key)[..], |r| {
        Ok(UnstableTime {
            run_id: r.get(0)?,
            trial: get_u64(r, 1)?,
            is_default: r.get(2)?,
            detail: r.get(3)?,
        })
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use crate::{Db, Measurement, NewRun, Status, Target, TuningKey};

    fn key() -> TuningKey {
        TuningKey {
            kernel_hash: "h".into(),
            kernel_name: "k".into(),
            shape: "N=8".into(),
            params: String::new(),
            target: Target {
                cpu_model: "cpu".into(),
                features: String::new(),
                threads: 1,
            },
            backend: "cranelift".into(),
        }
    }

    fn measured(trial: u64, seconds: f64) -> Measurement {
        Measurement {
            trial,
            schedule: format!("s{trial}"),
            schedule_hash: format!("h{trial}"),
            status: Status::Ok,
            median_s: Some(seconds),
            min_s: Some(seconds),
            max_s: Some(seconds),
            runs: 3,
            settings: Default::default(),
            is_default: trial == 0,
            remeasured: false,
            measured_at: "t".into(),
        }
    }

    /// A report's queries after its first see nothing another connection commits after it:
    /// the faster trial committed between them is in no part of the entry.
    #[test]
    fn a_report_reads_one_snapshot() {
        let path =
            std::env::temp_dir().join(format!("strata-report-snapshot-{}.db", std::process::id()));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        let writer = Db::open(&path).unwrap();
        let run = writer
            .start_run(&NewRun {
                key: key(),
                kernel_source: "src".into(),
                strata_version: "0".into(),
                strategy: "random".into(),
                seed: 1,
                budget_trials: None,
                budget_seconds: None,
                float_ops: None,
                bytes: 8,
                started_at: "t".into(),
            })
            .unwrap();
        writer.record(run, &measured(0, 2e-3)).unwrap();
        let reader = Db::open_read_only(&path).unwrap();
        let entries = reader
            .report_with_seam(None, || writer.record(run, &measured(1, 1e-3)).unwrap())
            .unwrap();
        let e = &entries[0];
        let seen = (e.trials, e.series.len(), e.best_median_s);
        let later = &reader.report(None).unwrap()[0];
        drop((reader, writer));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        assert_eq!(seen, (0, 1, Some(2e-3)), "the report saw a later commit");
        assert_eq!((later.trials, later.best_median_s), (1, Some(1e-3)));
    }
}
