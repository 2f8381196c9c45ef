//! Export and import as JSON lines, so tuning done on one machine serves another.
//!
//! The stream is a header line, then every run, then every measurement:
//!
//! ```text
//! {"record":"header","format":"strata-tuning-db","version":4}
//! {"record":"run","uid":"…","start":{"key":{…},…},"ended_at":"…","stop_reason":"…"}
//! {"record":"measurement","run_uid":"…","measurement":{"trial":0,…}}
//! ```
//!
//! Measurements name their run by its uid, never by a row id, so importing the same
//! stream twice adds nothing the second time.
//!
//! Imported measurements are not trusted: times must be positive and plausible
//! ([`crate::MAX_RATE_PER_S`]), and a caller that knows kernels checks each schedule
//! against its run's kernel ([`Db::import_checked`]).

use std::collections::HashMap;
use std::io::{BufRead, Write};

use rusqlite::{named_params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::checksum::VERIFIED_WHERE;
use crate::db::Db;
use crate::error::DbError;
use crate::model::{Measurement, Run};
use crate::plausible::check_measurement;
use crate::query::{
    measurement_from_row, run_from_row, MEASUREMENT_COLUMNS, MEASUREMENT_COLUMN_COUNT, RUN_COLUMNS,
    RUN_COLUMN_COUNT,
};
use crate::records::{insert_measurement_if_new, insert_run_row, to_i64, RunValues};

/// The `format` of an export stream's header.
pub const EXPORT_FORMAT: &str = "strata-tuning-db";

/// The newest export format version this build writes and reads. Version 2 added the
/// backend to each run's key; a version-1 stream has none, and its runs import as
/// Cranelift's (the only backend then). A build that reads only version 1 refuses a
/// version-2 stream rather than take an LLVM run for a Cranelift one. Version 3 added the
/// scalar parameters' values to each run's key (`params`); a version-1 or 2 stream has
/// none, and its runs import with `""` (no parameters), as schema version 5 keeps older
/// runs. A build that reads only version 2 refuses a version-3 stream rather than take a
/// run tuned at some parameter values for one without parameters. Version 4 writes a
/// measurement's settings as an object of typed fields ([`crate::Settings`], the compile
/// time among them) where older versions wrote one JSON text; that text still imports, read
/// by [`crate::Settings::from_legacy`], as schema version 6 reads older rows.
pub const EXPORT_VERSION: u32 = 4;

/// One line of an export stream.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
enum Line {
    /// The first line: what the stream is.
    Header {
        /// Always [`EXPORT_FORMAT`].
        format: String,
        /// The format version.
        version: u32,
    },
    /// A run.
    Run(Run),
    /// A measurement of a run named by uid.
    Measurement(MeasurementLine),
}

/// A measurement with its run's uid.
#[derive(Debug, Serialize, Deserialize)]
struct MeasurementLine {
    /// The uid of the measurement's run.
    run_uid: String,
    /// The measurement.
    measurement: Measurement,
}

/// Writes one JSON line.
fn write_line(out: &mut dyn Write, line: &Line) -> Result<(), DbError> {
    serde_json::to_writer(&mut *out, line).map_err(std::io::Error::from)?;
    out.write_all(b"\n")?;
    Ok(())
}

impl Db {
    /// Writes every run, then every measurement, as JSON lines after a header; returns
    /// the number of records written (header not counted). Reads one consistent snapshot
    /// ([`Db::snapshot`]: call [`Db::damaged`] in the same one for what it skipped).
    /// Damaged measurements (content not matching their checksum) are not written.
    pub fn export(&self, out: &mut dyn Write) -> Result<u64, DbError> {
        self.snapshot(|db| {
            let header = Line::Header {
                format: EXPORT_FORMAT.into(),
                version: EXPORT_VERSION,
            };
            write_line(out, &header)?;
            let runs = db.export_runs(&db.conn, out)?;
            let measurements = db.export_measurements(&db.conn, out)?;
            out.flush()?;
            Ok(runs + measurements)
        })
    }

    /// Writes every run in insertion order; returns how many.
    fn export_runs(&self, conn: &Connection, out: &mut dyn Write) -> Result<u64, DbError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs r ORDER BY r.id");
        let mut stmt = conn.prepare(&sql).map_err(|e| self.err(e))?;
        let rows = stmt.query_map([], run_from_row).map_err(|e| self.err(e))?;
        let mut n = 0;
        for run in rows {
            write_line(out, &Line::Run(run.map_err(|e| self.err(e))?))?;
            n += 1;
        }
        Ok(n)
    }

    /// Writes every measurement in insertion order; returns how many.
    fn export_measurements(&self, conn: &Connection, out: &mut dyn Write) -> Result<u64, DbError> {
        let sql = format!(
            "SELECT {MEASUREMENT_COLUMNS}, r.uid FROM measurements m
             JOIN runs r ON m.run_id = r.id WHERE {VERIFIED_WHERE} ORDER BY m.id"
        );
        let mut stmt = conn.prepare(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |row| {
                Ok(MeasurementLine {
                    measurement: measurement_from_row(row, 0)?,
                    run_uid: row.get(MEASUREMENT_COLUMN_COUNT)?,
                })
            })
            .map_err(|e| self.err(e))?;
        let mut n = 0;
        for line in rows {
            write_line(out, &Line::Measurement(line.map_err(|e| self.err(e))?))?;
            n += 1;
        }
        Ok(n)
    }

    /// Imports an export stream in one transaction; returns the number of records that
    /// were new. Records already present (same run uid; same run, trial, schedule hash
    /// and re-measured flag) are skipped, so importing twice adds nothing. A malformed
    /// line fails the whole import ([`DbError::Import`]) and nothing is imported.
    pub fn import(&self, input: &mut dyn BufRead) -> Result<u64, DbError> {
        self.import_checked(input, &|_, _| Ok(()))
    }

    /// [`Db::import`], with `check` judging each measurement beside its run (as the
    /// database holds the run) beyond what the database can: `Err(why)` refuses the
    /// import like a malformed line. Every measurement's times are checked either way.
    pub fn import_checked(
        &self,
        input: &mut dyn BufRead,
        check: &ImportCheck<'_>,
    ) -> Result<u64, DbError> {
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        let mut importer = Importer {
            db: self,
            conn: &tx,
            runs: HashMap::new(),
            check,
            added: 0,
        };
        importer.read_all(input)?;
        let added = importer.added;
        tx.commit().map_err(|e| self.err(e))?;
        Ok(added)
    }
}

/// A caller's judgement of an imported measurement (of the given run): `Err(why)` refuses it.
pub type ImportCheck<'a> = dyn Fn(&Run, &Measurement) -> Result<(), String> + 'a;

/// The state of one import.
struct Importer<'a> {
    /// The database, for error mapping.
    db: &'a Db,
    /// The import's transaction.
    conn: &'a Connection,
    /// Run uid → local row id and the run as stored, for runs seen so far.
    runs: HashMap<String, (i64, Run)>,
    /// The caller's check of each measurement.
    check: &'a ImportCheck<'a>,
    /// Records newly inserted.
    added: u64,
}

impl Importer<'_> {
    /// Reads and applies every line; the first non-blank one must be the header.
    fn read_all(&mut self, input: &mut dyn BufRead) -> Result<(), DbError> {
        let mut text = String::new();
        let mut number = 0u64;
        let mut seen_header = false;
        loop {
            text.clear();
            if input.read_line(&mut text)? == 0 {
                break;
            }
            number += 1;
            if text.trim().is_empty() {
                continue;
            }
            let line: Line = serde_json::from_str(&text).map_err(|e| bad(number, e.to_string()))?;
            self.apply(number, line, &mut seen_header)?;
        }
        if !seen_header {
            return Err(bad(number.max(1), "empty stream: no header line".into()));
        }
        Ok(())
    }

    /// Applies one parsed line.
    fn apply(&mut self, number: u64, line: Line, seen_header: &mut bool) -> Result<(), DbError> {
        match (line, *seen_header) {
            (Line::Header { format, version }, false) => {
                check_header(number, &format, version)?;
                *seen_header = true;
                Ok(())
            }
            (Line::Header { .. }, true) => Err(bad(number, "a second header line".into())),
            (_, false) => Err(bad(
                number,
                format!("the stream does not start with a {EXPORT_FORMAT} header line"),
            )),
            (Line::Run(run), true) => self.import_run(&run),
            (Line::Measurement(m), true) => self.import_measurement(number, &m),
        }
    }

    /// Inserts a run unless its uid is present (then fills in an end it lacked).
    fn import_run(&mut self, run: &Run) -> Result<(), DbError> {
        let values = RunValues::new(&run.start)?;
        let (end, reason) = (run.ended_at.as_deref(), run.stop_reason.as_deref());
        let err = |e| self.db.err(e);
        self.added += insert_run_row(self.conn, &run.uid, &run.start, &values, end, reason)
            .map_err(err)? as u64;
        self.conn
            .execute(
                "UPDATE runs SET ended_at = coalesce(ended_at, :e),
                     stop_reason = coalesce(stop_reason, :s) WHERE uid = :u",
                named_params! { ":e": end, ":s": reason, ":u": run.uid },
            )
            .map_err(err)?;
        Ok(())
    }

    /// Inserts a measurement unless present; its run must be in the stream or the db,
    /// and the measurement must pass the checks.
    fn import_measurement(&mut self, number: u64, line: &MeasurementLine) -> Result<(), DbError> {
        let (run_id, run) = self.run(number, &line.run_uid)?;
        let m = &line.measurement;
        check_measurement(&run.start, m)
            .and_then(|()| (self.check)(&run, m))
            .map_err(|why| {
                bad(
                    number,
                    format!("trial {} of run {}: {why}", m.trial, run.uid),
                )
            })?;
        let trial = match m.remeasured {
            true => self.search_trial(run_id, m)?,
            false => to_i64("trial", m.trial)?,
        };
        let added =
            insert_measurement_if_new(self.conn, run_id, trial, m).map_err(|e| self.db.err(e))?;
        self.added += added as u64;
        Ok(())
    }

    /// The trial number a re-measurement is stored under: its search trial's (the run's
    /// row of the same schedule), as schema version 3 numbers them, so a stream an older
    /// strata exported (re-measurements numbered after the run's last trial) imports
    /// renumbered, and importing it twice still adds nothing. Its own number when the run
    /// has no such row.
    fn search_trial(&self, run_id: i64, m: &Measurement) -> Result<i64, DbError> {
        let found: Option<i64> = self
            .conn
            .query_row(
                "SELECT min(trial) FROM measurements
                 WHERE run_id = ?1 AND schedule_hash = ?2 AND remeasured = 0",
                rusqlite::params![run_id, m.schedule_hash],
                |r| r.get(0),
            )
            .map_err(|e| self.db.err(e))?;
        match found {
            Some(t) => Ok(t),
            None => to_i64("trial", m.trial),
        }
    }

    /// The local row id of the run with `uid`, and the run as the database holds it (a
    /// run already present keeps its stored fields, whatever the stream says).
    fn run(&mut self, number: u64, uid: &str) -> Result<(i64, Run), DbError> {
        if let Some(found) = self.runs.get(uid) {
            return Ok(found.clone());
        }
        let sql = format!("SELECT {RUN_COLUMNS}, r.id FROM runs r WHERE r.uid = ?1");
        let found: Option<(i64, Run)> = self
            .conn
            .query_row(&sql, [uid], |row| {
                Ok((row.get(RUN_COLUMN_COUNT)?, run_from_row(row)?))
            })
            .optional()
            .map_err(|e| self.db.err(e))?;
        let found = found.ok_or_else(|| {
            bad(
                number,
                format!("measurement of run {uid}, which is neither earlier in the stream nor in the database"),
            )
        })?;
        self.runs.insert(uid.to_string(), found.clone());
        Ok(found)
    }
}

/// Accepts only our format at a version this build reads.
fn check_header(number: u64, format: &str, version: u32) -> Result<(), DbError> {
    if format != EXPORT_FORMAT {
        return Err(bad(
            number,
            format!("header format is `{format}`, expected `{EXPORT_FORMAT}`"),
        ));
    }
    if version > EXPORT_VERSION {
        return Err(bad(
            number,
            format!("export version {version} is newer than the version {EXPORT_VERSION} this build reads"),
        ));
    }
    Ok(())
}

/// A [`DbError::Import`] at line `line`.
fn bad(line: u64, detail: String) -> DbError {
    DbError::Import { line, detail }
}
