//! The schema, its version, and the migrations that bring an older file up to date.
//!
//! A strata database is recognised by its SQLite `application_id` ([`APPLICATION_ID`])
//! and its `meta` table, which holds `schema_version`. Migration `n` takes a database
//! from version `n - 1` to `n`; adding a schema change is adding one [`Migration`] to
//! [`MIGRATIONS`].

use rusqlite::{Connection, OptionalExtension};

use crate::checksum::{self, COVERED, COVERED_V1, FUNCTION, FUNCTION_V1};
use crate::settings::{self, LEGACY_FUNCTION};

/// The SQLite `application_id` of a strata tuning database (`"STRA"` in ASCII).
pub const APPLICATION_ID: i32 = 0x5354_5241;

/// One step of the schema's history.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// The schema version this step produces.
    pub version: i64,
    /// The SQL that takes the previous version to this one.
    pub sql: &'static str,
}

/// Version 1: runs, measurements and the meta table.
const V1: &str = r#"
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE runs (
    id             INTEGER PRIMARY KEY,
    uid            TEXT NOT NULL UNIQUE,
    kernel_hash    TEXT NOT NULL,
    kernel_name    TEXT NOT NULL,
    kernel_source  TEXT NOT NULL,
    shape          TEXT NOT NULL,
    cpu_model      TEXT NOT NULL,
    features       TEXT NOT NULL,
    threads        INTEGER NOT NULL,
    strata_version TEXT NOT NULL,
    strategy       TEXT NOT NULL,
    seed           INTEGER NOT NULL,   -- the u64 seed's bits, as i64
    budget_trials  INTEGER,
    budget_seconds REAL,
    float_ops      INTEGER,
    bytes          INTEGER NOT NULL,
    started_at     TEXT NOT NULL,
    ended_at       TEXT,
    stop_reason    TEXT
);
CREATE INDEX runs_by_key ON runs (kernel_hash, shape, cpu_model, features, threads);
CREATE TABLE measurements (
    id            INTEGER PRIMARY KEY,
    run_id        INTEGER NOT NULL REFERENCES runs (id),
    trial         INTEGER NOT NULL,
    schedule      TEXT NOT NULL,
    schedule_hash TEXT NOT NULL,
    status        TEXT NOT NULL,
    status_detail TEXT,
    median_s      REAL,
    min_s         REAL,
    max_s         REAL,
    runs          INTEGER NOT NULL,
    settings      TEXT NOT NULL,
    is_default    INTEGER NOT NULL,
    remeasured    INTEGER NOT NULL,
    measured_at   TEXT NOT NULL,
    UNIQUE (run_id, trial, schedule_hash, remeasured)
);
CREATE INDEX measurements_by_schedule ON measurements (schedule_hash);
INSERT INTO meta (key, value) VALUES ('schema_version', '0');
"#;

/// Version 2: runs name the backend that compiled their candidates, and it is part of the
/// key (a winner for Cranelift is not one for LLVM). Every run of a version-1 file was
/// Cranelift's, the only backend strata had then.
const V2: &str = r#"
ALTER TABLE runs ADD COLUMN backend TEXT NOT NULL DEFAULT 'cranelift';
DROP INDEX runs_by_key;
CREATE INDEX runs_by_key ON runs (kernel_hash, shape, cpu_model, features, threads, backend);
"#;

/// Version 3: a re-measured row carries the trial number of the search measurement it
/// confirms (the same run's row of the same schedule), so a winner names the trial its
/// schedule came from. Older tuners gave re-measurements the run's last trial number, which
/// named another schedule. Only numbers change (`OR IGNORE` keeps a row whose new number
/// would collide, as it was); no row is added or removed.
const V3: &str = r#"
UPDATE OR IGNORE measurements SET trial = (
    SELECT min(s.trial) FROM measurements s
    WHERE s.run_id = measurements.run_id AND s.schedule_hash = measurements.schedule_hash
      AND s.remeasured = 0)
WHERE remeasured = 1 AND EXISTS (
    SELECT 1 FROM measurements s
    WHERE s.run_id = measurements.run_id AND s.schedule_hash = measurements.schedule_hash
      AND s.remeasured = 0);
"#;

/// Version 4: every measurement row carries a checksum of its content
/// ([`crate::checksum`]), so a damaged row is found and skipped rather than trusted.
/// Rows of older versions get theirs computed here, from their content as it is now.
const V4: &str = r#"
ALTER TABLE measurements ADD COLUMN checksum TEXT NOT NULL DEFAULT '';
UPDATE measurements SET checksum = (
    SELECT strata_measurement_checksum(r.uid, m.trial, m.schedule, m.schedule_hash, m.status,
        m.status_detail, m.median_s, m.min_s, m.max_s, m.runs, m.settings, m.is_default,
        m.remeasured, m.measured_at)
    FROM measurements m JOIN runs r ON m.run_id = r.id WHERE m.id = measurements.id);
"#;

/// Version 5: runs name the values of the kernel's scalar parameters they were tuned with
/// ([`crate::canonical_params`]), and they are part of the key (a schedule fast at one value
/// may be slow at another). Older runs recorded none: their kernels had no parameters, or
/// the tuner drew values it did not keep, so their values are unknown and `''` (no
/// parameters) is the only key they can claim. No column the checksums cover changes.
const V5: &str = r#"
ALTER TABLE runs ADD COLUMN params TEXT NOT NULL DEFAULT '';
DROP INDEX runs_by_key;
CREATE INDEX runs_by_key ON runs (kernel_hash, shape, params, cpu_model, features, threads, backend);
"#;

/// Version 6: a measurement's settings are typed columns, and its compile time is one of
/// them ([`crate::Settings`]); the JSON text column `settings` is gone. Each older row's
/// text is read by [`crate::Settings::from_legacy`] (as the SQL function
/// `strata_legacy_setting`), which keeps whatever has no column in `other_settings`, so
/// nothing recorded is lost. The checksum now covers the new columns: a row whose version-4
/// checksum matched gets the new one; a row whose did not (damaged) stays damaged.
const V6: &str = r#"
ALTER TABLE measurements ADD COLUMN threads INTEGER;
ALTER TABLE measurements ADD COLUMN min_time_s REAL;
ALTER TABLE measurements ADD COLUMN cutoff_s REAL;
ALTER TABLE measurements ADD COLUMN tolerance REAL;
ALTER TABLE measurements ADD COLUMN elapsed_s REAL;
ALTER TABLE measurements ADD COLUMN compile_s REAL;
ALTER TABLE measurements ADD COLUMN genome TEXT;
ALTER TABLE measurements ADD COLUMN other_settings TEXT;
UPDATE measurements SET
    threads = strata_legacy_setting(settings, 'threads'),
    min_time_s = strata_legacy_setting(settings, 'min_time_s'),
    cutoff_s = strata_legacy_setting(settings, 'cutoff_s'),
    tolerance = strata_legacy_setting(settings, 'tolerance'),
    elapsed_s = strata_legacy_setting(settings, 'elapsed_s'),
    compile_s = strata_legacy_setting(settings, 'compile_s'),
    genome = strata_legacy_setting(settings, 'genome'),
    other_settings = strata_legacy_setting(settings, 'other_settings');
UPDATE measurements SET checksum = (
    SELECT CASE
        WHEN m.checksum = strata_measurement_checksum(r.uid, m.trial, m.schedule,
            m.schedule_hash, m.status, m.status_detail, m.median_s, m.min_s, m.max_s, m.runs,
            m.settings, m.is_default, m.remeasured, m.measured_at)
        THEN strata_measurement_checksum_v2(r.uid, m.trial, m.schedule, m.schedule_hash,
            m.status, m.status_detail, m.median_s, m.min_s, m.max_s, m.runs, m.threads,
            m.min_time_s, m.cutoff_s, m.tolerance, m.elapsed_s, m.compile_s, m.genome,
            m.other_settings, m.is_default, m.remeasured, m.measured_at)
        ELSE m.checksum END
    FROM measurements m JOIN runs r ON m.run_id = r.id WHERE m.id = measurements.id);
ALTER TABLE measurements DROP COLUMN settings;
"#;

/// Version 7: a cache of the loop-nest features of measured schedules, which the tuner's
/// learned cost model trains on (derived data: the kernel's source, the shape and the
/// schedule are in the run and its measurements, and a feature computed again is the same).
/// Keyed by what they depend on: kernel, shape, schedule and the features' version (a newer
/// tuner computes newer features beside the old). Not covered by checksums, not exported: a
/// damaged or missing row can only cost the model a sample or the time to lower it again.
const V7: &str = r#"
CREATE TABLE loop_features (
    kernel_hash   TEXT NOT NULL,
    shape         TEXT NOT NULL,
    schedule_hash TEXT NOT NULL,
    version       INTEGER NOT NULL,
    features      TEXT NOT NULL,   -- a JSON array of numbers
    PRIMARY KEY (kernel_hash, shape, schedule_hash, version)
);
"#;

/// The schema's history, oldest first; versions are 1, 2, 3, … in order. A step is never
/// edited once released: files in the field were made by it.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sql: V1,
    },
    Migration {
        version: 2,
        sql: V2,
    },
    Migration {
        version: 3,
        sql: V3,
    },
    Migration {
        version: 4,
        sql: V4,
    },
    Migration {
        version: 5,
        sql: V5,
    },
    Migration {
        version: 6,
        sql: V6,
    },
    Migration {
        version: 7,
        sql: V7,
    },
];

/// The schema version this build writes: the last migration's.
pub const SCHEMA_VERSION: i64 = MIGRATIONS[MIGRATIONS.len() - 1].version;

/// How a read-only connection sees a file of schema version `from` (older than
/// [`SCHEMA_VERSION`]) as the current schema without writing it: temporary views, which
/// SQLite finds before the file's own tables (the `temp` schema is searched first), so the
/// readers' queries run unchanged. Each view does what a migration since `from` would.
/// `None` when no such views are known for `from`.
pub(crate) fn reader_views(from: i64) -> Option<String> {
    if !(1..SCHEMA_VERSION).contains(&from) {
        return None;
    }
    let mut views = runs_view(from);
    let mut measurements = "main.measurements";
    if from < 3 {
        views.push_str(RENUMBERED_VIEW);
        measurements = "temp.renumbered";
    }
    if from < 4 {
        views.push_str(&checksummed_view(measurements));
        measurements = "temp.checksummed";
    }
    if from < 6 {
        views.push_str(&typed_settings_views(measurements));
    }
    // Version 7's cache of features, empty: an older file has none cached.
    views.push_str(EMPTY_FEATURES_VIEW);
    Some(views)
}

/// Version 7's `loop_features`, as an empty view of an older file.
const EMPTY_FEATURES_VIEW: &str = "CREATE TEMP VIEW loop_features AS SELECT '' AS kernel_hash, \
    '' AS shape, '' AS schedule_hash, 0 AS version, '' AS features WHERE 0;";

/// The runs of an older file as the view `runs`, with the columns added since `from`
/// holding what their migrations give old rows (in the order they add them).
fn runs_view(from: i64) -> String {
    // Version 2 added `backend`: every version-1 run was Cranelift's.
    let backend = if from < 2 {
        ", 'cranelift' AS backend"
    } else {
        ""
    };
    // Version 5 added `params`: no older run recorded any.
    let params = if from < 5 { ", '' AS params" } else { "" };
    format!("CREATE TEMP VIEW runs AS SELECT *{backend}{params} FROM main.runs;")
}

/// Version 3's renumbering of re-measurements, as a view (`renumbered`) of an older file.
const RENUMBERED_VIEW: &str = "CREATE TEMP VIEW renumbered AS SELECT m.id, m.run_id,
    CASE WHEN m.remeasured = 1 THEN coalesce((SELECT min(s.trial) FROM main.measurements s
        WHERE s.run_id = m.run_id AND s.schedule_hash = m.schedule_hash AND s.remeasured = 0),
        m.trial) ELSE m.trial END AS trial,
    m.schedule, m.schedule_hash, m.status, m.status_detail, m.median_s, m.min_s, m.max_s,
    m.runs, m.settings, m.is_default, m.remeasured, m.measured_at
    FROM main.measurements m;";

/// Version 4's checksums, as the view `checksummed` of `table` (measurements older than
/// version 4): computed from the rows as they are, as the migration would.
fn checksummed_view(table: &str) -> String {
    format!(
        "CREATE TEMP VIEW checksummed AS SELECT m.*, {FUNCTION_V1}({COVERED_V1}) AS checksum \
         FROM {table} m JOIN main.runs r ON m.run_id = r.id;"
    )
}

/// Version 6's typed settings, as the view `measurements` of `table` (measurements of
/// version 4 or 5, checksums included), by way of the view `legacy_typed`: the columns in
/// the current table's order, and the checksum carried over only where the old one matched.
fn typed_settings_views(table: &str) -> String {
    let typed: Vec<String> = settings::COLUMNS
        .iter()
        .map(|c| format!("{LEGACY_FUNCTION}(m.settings, '{c}') AS {c}"))
        .collect();
    let columns: Vec<String> = settings::COLUMNS.iter().map(|c| format!("m.{c}")).collect();
    format!(
        "CREATE TEMP VIEW legacy_typed AS SELECT m.*, {typed} FROM {table} m; \
         CREATE TEMP VIEW measurements AS SELECT m.id, m.run_id, m.trial, m.schedule, \
             m.schedule_hash, m.status, m.status_detail, m.median_s, m.min_s, m.max_s, m.runs, \
             m.is_default, m.remeasured, m.measured_at, \
             CASE WHEN m.checksum = {FUNCTION_V1}({COVERED_V1}) THEN {FUNCTION}({COVERED}) \
                 ELSE m.checksum END AS checksum, \
             {columns} \
         FROM temp.legacy_typed m JOIN main.runs r ON m.run_id = r.id;",
        typed = typed.join(", "),
        columns = columns.join(", "),
    )
}

/// Registers the SQL functions that migrations, views and readers call (the checksums and
/// the legacy settings reader) on `conn`.
pub(crate) fn register_functions(conn: &Connection) -> rusqlite::Result<()> {
    checksum::register(conn)?;
    settings::register(conn)
}

/// What a file holds, as far as opening it is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// A new or empty database: no tables, no application id.
    Empty,
    /// A strata database at this schema version.
    Strata(i64),
    /// Something else; the text says why.
    Foreign(String),
}

/// Classifies the database behind `conn` without writing anything.
pub(crate) fn classify(conn: &Connection) -> rusqlite::Result<FileKind> {
    let app_id: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
    let tables = table_names(conn)?;
    if app_id == 0 && tables.is_empty() {
        return Ok(FileKind::Empty);
    }
    if app_id != APPLICATION_ID {
        return Ok(FileKind::Foreign(foreign_detail(app_id, &tables)));
    }
    match stored_version(conn)? {
        Some(v) => Ok(FileKind::Strata(v)),
        None => Ok(FileKind::Foreign(
            "it has strata's application id but no schema_version in a meta table".into(),
        )),
    }
}

/// The names of the file's tables, sorted.
fn table_names(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt =
        conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?;
    let names = stmt.query_map([], |r| r.get(0))?;
    names.collect()
}

/// Why a file is foreign, for the error message.
fn foreign_detail(app_id: i32, tables: &[String]) -> String {
    let shown: Vec<&str> = tables.iter().take(8).map(String::as_str).collect();
    let more = if tables.len() > 8 { ", …" } else { "" };
    format!(
        "application_id {app_id:#x}, expected {APPLICATION_ID:#x}; tables: {}{more}",
        shown.join(", ")
    )
}

/// The `schema_version` in the meta table, if there is a meta table holding one.
fn stored_version(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    let has_meta: bool = conn.query_row(
        "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
        [],
        |r| r.get(0),
    )?;
    if !has_meta {
        return Ok(None);
    }
    let text: Option<String> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    Ok(text.and_then(|t| t.parse().ok()))
}

/// Applies every migration newer than `from`, in order, and records the new version.
///
/// Runs inside the caller's transaction; returns the version reached.
pub(crate) fn migrate(
    conn: &Connection,
    from: i64,
    migrations: &[Migration],
) -> rusqlite::Result<i64> {
    // Versions 4 and 6 call the checksum and legacy settings functions.
    register_functions(conn)?;
    let mut version = from;
    for step in migrations.iter().filter(|m| m.version > from) {
        conn.execute_batch(step.sql)?;
        version = step.version;
    }
    if version != from {
        conn.execute(
            "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
            [version.to_string()],
        )?;
        conn.pragma_update(None, "application_id", APPLICATION_ID)?;
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Versions 4 and 5's condition for a row that matches its checksum.
    const VERIFIED_V1_WHERE: &str = "m.checksum = strata_measurement_checksum(r.uid, m.trial, \
         m.schedule, m.schedule_hash, m.status, m.status_detail, m.median_s, m.min_s, m.max_s, \
         m.runs, m.settings, m.is_default, m.remeasured, m.measured_at)";

    /// A trivial version after the last, to exercise the mechanism.
    const TEST_NEXT: Migration = Migration {
        version: SCHEMA_VERSION + 1,
        sql: "ALTER TABLE runs ADD COLUMN note TEXT; \
              CREATE TABLE tags (run_id INTEGER REFERENCES runs (id), tag TEXT);",
    };

    #[test]
    fn migrations_are_numbered_in_order() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i as i64 + 1);
        }
    }

    #[test]
    fn empty_database_is_classified_empty_then_strata() {
        let conn = Connection::open_in_memory().unwrap();
        assert_eq!(classify(&conn).unwrap(), FileKind::Empty);
        assert_eq!(migrate(&conn, 0, MIGRATIONS).unwrap(), SCHEMA_VERSION);
        assert_eq!(classify(&conn).unwrap(), FileKind::Strata(SCHEMA_VERSION));
    }

    #[test]
    fn the_last_version_migrates_to_the_next_keeping_its_rows() {
        let conn = Connection::open_in_memory().unwrap();
        migrate(&conn, 0, MIGRATIONS).unwrap();
        conn.execute_batch(
            "INSERT INTO runs (uid, kernel_hash, kernel_name, kernel_source, shape, cpu_model,
                 features, threads, strata_version, strategy, seed, bytes, started_at)
             VALUES ('u', 'h', 'k', 'src', 'M=1', 'cpu', '', 1, '0.1.0', 'random', 7, 8, 't')",
        )
        .unwrap();
        let steps: Vec<Migration> = MIGRATIONS.iter().copied().chain([TEST_NEXT]).collect();
        let next = SCHEMA_VERSION + 1;
        assert_eq!(migrate(&conn, SCHEMA_VERSION, &steps).unwrap(), next);
        assert_eq!(classify(&conn).unwrap(), FileKind::Strata(next));
        let note: Option<String> = conn
            .query_row("SELECT note FROM runs WHERE uid = 'u'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(note, None);
        // Already at the next version: nothing to do.
        assert_eq!(migrate(&conn, next, &steps).unwrap(), next);
    }

    /// Version 2 gives every run of a version-1 file the backend `cranelift`.
    #[test]
    fn version_2_makes_old_runs_cranelift_runs() {
        let conn = Connection::open_in_memory().unwrap();
        migrate(&conn, 0, &MIGRATIONS[..1]).unwrap();
        conn.execute_batch(
            "INSERT INTO runs (uid, kernel_hash, kernel_name, kernel_source, shape, cpu_model,
                 features, threads, strata_version, strategy, seed, bytes, started_at)
             VALUES ('u', 'h', 'k', 'src', 'M=1', 'cpu', '', 1, '0.1.0', 'random', 7, 8, 't')",
        )
        .unwrap();
        assert_eq!(migrate(&conn, 1, &MIGRATIONS[..2]).unwrap(), 2);
        let backend: String = conn
            .query_row("SELECT backend FROM runs WHERE uid = 'u'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(backend, "cranelift");
    }

    /// A version-2 file's run 1: the default (trial 0) and trials 1..=3 searched, then trials
    /// 2 and 0 re-measured under the old numbering (both as trial 3, the last); trial 1's
    /// schedule re-measured twice (the second would collide once renumbered).
    fn v2_with_old_remeasurements(conn: &Connection) {
        migrate(conn, 0, &MIGRATIONS[..2]).unwrap();
        conn.execute_batch(
            "INSERT INTO runs (id, uid, kernel_hash, kernel_name, kernel_source, shape,
                 cpu_model, features, threads, strata_version, strategy, seed, bytes, started_at)
             VALUES (1, 'u', 'h', 'k', 'src', 'M=1', 'cpu', '', 1, '0.1.0', 'random', 7, 8, 't')",
        )
        .unwrap();
        let rows = [
            (0, "h0", 0, 0.9),
            (1, "h1", 0, 0.5),
            (2, "h2", 0, 0.4),
            (3, "h3", 0, 0.6),
            (3, "h2", 1, 0.45),
            (3, "h0", 1, 0.95),
            (3, "h1", 1, 0.5),
            (4, "h1", 1, 0.55),
        ];
        for (trial, hash, remeasured, median) in rows {
            conn.execute(
                "INSERT INTO measurements (run_id, trial, schedule, schedule_hash, status,
                     median_s, runs, settings, is_default, remeasured, measured_at)
                 VALUES (1, ?1, '', ?2, 'ok', ?3, 1, '{}', ?2 = 'h0', ?4, 't')",
                rusqlite::params![trial, hash, median, remeasured],
            )
            .unwrap();
        }
    }

    /// (trial, hash) of every re-measured row of `table`, by median.
    fn remeasured_trials(conn: &Connection, table: &str) -> Vec<(i64, String)> {
        let sql = format!(
            "SELECT trial, schedule_hash FROM {table} WHERE remeasured = 1 ORDER BY median_s"
        );
        let mut stmt = conn.prepare(&sql).unwrap();
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        rows.collect::<rusqlite::Result<_>>().unwrap()
    }

    /// Version 3 gives each re-measurement its search trial, keeps every row, and leaves a
    /// row whose new number would collide with another's as it was.
    #[test]
    fn version_3_renumbers_remeasurements_to_their_search_trials() {
        let conn = Connection::open_in_memory().unwrap();
        v2_with_old_remeasurements(&conn);
        let count = |c: &Connection| -> i64 {
            c.query_row("SELECT count(*) FROM measurements", [], |r| r.get(0))
                .unwrap()
        };
        let before = count(&conn);
        assert_eq!(migrate(&conn, 2, &MIGRATIONS[..3]).unwrap(), 3);
        assert_eq!(count(&conn), before, "no row lost or added");
        let renumbered = remeasured_trials(&conn, "measurements");
        let expected = [(2, "h2"), (1, "h1"), (4, "h1"), (0, "h0")];
        let expected: Vec<(i64, String)> =
            expected.iter().map(|&(t, h)| (t, h.to_string())).collect();
        assert_eq!(renumbered, expected);
    }

    /// A reader of a version-2 file sees the renumbering through a temporary view, and
    /// the file itself is unchanged.
    #[test]
    fn a_version_2_reader_sees_remeasurements_renumbered() {
        let conn = Connection::open_in_memory().unwrap();
        v2_with_old_remeasurements(&conn);
        let stored = remeasured_trials(&conn, "main.measurements");
        conn.execute_batch(&reader_views(2).unwrap()).unwrap();
        let seen = remeasured_trials(&conn, "measurements");
        let trials: Vec<i64> = seen.iter().map(|t| t.0).collect();
        // The view renumbers every row (the collision is a file's problem, not a view's).
        assert_eq!(trials, [2, 1, 1, 0]);
        assert_eq!(remeasured_trials(&conn, "main.measurements"), stored);
        assert!(stored.iter().all(|t| t.0 >= 3), "{stored:?}");
    }

    /// Version 4 gives every older row the checksum of its content, so each verifies, and
    /// a row changed afterwards does not.
    #[test]
    fn version_4_checksums_older_rows() {
        let conn = Connection::open_in_memory().unwrap();
        v2_with_old_remeasurements(&conn);
        migrate(&conn, 2, &MIGRATIONS[..3]).unwrap();
        assert_eq!(migrate(&conn, 3, &MIGRATIONS[..4]).unwrap(), 4);
        let verified = |c: &Connection| -> i64 {
            let sql = format!(
                "SELECT count(*) FROM measurements m JOIN runs r ON m.run_id = r.id
                 WHERE {}",
                VERIFIED_V1_WHERE
            );
            c.query_row(&sql, [], |r| r.get(0)).unwrap()
        };
        assert_eq!(verified(&conn), 8, "every row verifies");
        conn.execute("UPDATE measurements SET median_s = 0.1 WHERE trial = 3", [])
            .unwrap();
        assert_eq!(verified(&conn), 7);
    }

    /// The version-2 file of [`v2_with_old_remeasurements`] taken to version 4 by the real
    /// steps: what strata wrote before version 5, every row checksummed.
    fn version_4(conn: &Connection) {
        v2_with_old_remeasurements(conn);
        assert_eq!(migrate(conn, 2, &MIGRATIONS[..4]).unwrap(), 4);
    }

    /// How many rows `sql` counts.
    fn count(conn: &Connection, sql: &str) -> i64 {
        conn.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    /// Version 5 gives every older run no parameters, keeps every row, and leaves every
    /// checksum verifying (they cover no column of the runs but the uid).
    #[test]
    fn version_5_gives_older_runs_no_params() {
        let conn = Connection::open_in_memory().unwrap();
        version_4(&conn);
        let measurements = count(&conn, "SELECT count(*) FROM measurements");
        assert_eq!(migrate(&conn, 4, &MIGRATIONS[..5]).unwrap(), 5);
        let params: String = conn
            .query_row("SELECT params FROM runs WHERE uid = 'u'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(params, "");
        assert_eq!(count(&conn, "SELECT count(*) FROM runs"), 1);
        assert_eq!(
            count(&conn, "SELECT count(*) FROM measurements"),
            measurements
        );
        let verified = format!(
            "SELECT count(*) FROM measurements m JOIN runs r ON m.run_id = r.id WHERE {}",
            VERIFIED_V1_WHERE
        );
        assert_eq!(
            count(&conn, &verified),
            measurements,
            "a row became damaged"
        );
        let indexed = "SELECT count(*) FROM pragma_index_info('runs_by_key') WHERE name = 'params'";
        assert_eq!(count(&conn, indexed), 1, "the key's index lacks params");
    }

    /// A version-5 file whose run 1 holds, besides the rows of [`version_4`] (settings
    /// `{}`), a tuner's row (every legacy key), a row with keys and values no column takes,
    /// and a row of text that is no JSON; then a damaged row (its trial changed after its
    /// checksum was made).
    fn version_5_with_legacy_settings(conn: &Connection) {
        version_4(conn);
        migrate(conn, 4, &MIGRATIONS[..5]).unwrap();
        let settings = [
            (
                10,
                r#"{"min_time_s":0.05,"threads":1,"cutoff_s":null,"tolerance":0.001,"genome":{"g":[1,2]},"elapsed_s":3.5}"#,
            ),
            (11, r#"{"warmup":2,"threads":"one","elapsed_s":1}"#),
            (12, "fast"),
            (13, "{}"),
        ];
        for (trial, text) in settings {
            conn.execute(
                "INSERT INTO measurements (run_id, trial, schedule, schedule_hash, status,
                     median_s, runs, settings, is_default, remeasured, measured_at)
                 VALUES (1, ?1, '', 'h' || ?1, 'ok', 0.7, 1, ?2, 0, 0, 't')",
                rusqlite::params![trial, text],
            )
            .unwrap();
        }
        let checksum = format!(
            "UPDATE measurements SET checksum = (SELECT {FUNCTION_V1}({COVERED_V1})
                 FROM measurements m JOIN runs r ON m.run_id = r.id WHERE m.id = measurements.id)
             WHERE trial >= 10"
        );
        conn.execute_batch(&checksum).unwrap();
        conn.execute("UPDATE measurements SET trial = 14 WHERE trial = 13", [])
            .unwrap();
    }

    /// The typed settings of the row of trial `trial` in `conn`'s `measurements`.
    fn typed_settings(conn: &Connection, trial: i64) -> crate::Settings {
        let sql = format!(
            "SELECT {} FROM measurements WHERE trial = ?1",
            settings::COLUMNS.join(", ")
        );
        conn.query_row(&sql, [trial], |r| {
            Ok(crate::Settings {
                threads: r.get(0)?,
                min_time_s: r.get(1)?,
                cutoff_s: r.get(2)?,
                tolerance: r.get(3)?,
                elapsed_s: r.get(4)?,
                compile_s: r.get(5)?,
                genome: r.get(6)?,
                other: r.get(7)?,
            })
        })
        .unwrap()
    }

    /// How many measurement rows match their checksum under the current scheme.
    fn verified(conn: &Connection) -> i64 {
        let sql = format!(
            "SELECT count(*) FROM measurements m JOIN runs r ON m.run_id = r.id WHERE {}",
            crate::checksum::VERIFIED_WHERE
        );
        count(conn, &sql)
    }

    /// What version 6 (or a reader's view of version 5) must show of
    /// [`version_5_with_legacy_settings`]: each legacy text read into its columns, nothing
    /// lost, every row verifying but the damaged one.
    fn assert_typed_as_migrated(conn: &Connection) {
        let tuner = typed_settings(conn, 10);
        assert_eq!(tuner.threads, Some(1));
        assert_eq!((tuner.min_time_s, tuner.cutoff_s), (Some(0.05), None));
        assert_eq!((tuner.tolerance, tuner.elapsed_s), (Some(0.001), Some(3.5)));
        assert_eq!(tuner.genome.as_deref(), Some(r#"{"g":[1,2]}"#));
        assert_eq!(tuner.other, None);
        let foreign = typed_settings(conn, 11);
        assert_eq!((foreign.threads, foreign.elapsed_s), (None, Some(1.0)));
        assert_eq!(
            foreign.other.as_deref(),
            Some(r#"{"threads":"one","warmup":2}"#)
        );
        assert_eq!(typed_settings(conn, 12).other.as_deref(), Some("fast"));
        assert_eq!(typed_settings(conn, 0), crate::Settings::default());
        let rows = count(conn, "SELECT count(*) FROM measurements");
        assert_eq!(rows, 12);
        assert_eq!(verified(conn), rows - 1, "only the damaged row fails");
    }

    /// Version 6 reads every older row's settings into the typed columns, keeps what has
    /// no column, drops the text column, and carries checksums over only where they held.
    #[test]
    fn version_6_types_the_settings_and_keeps_damage_visible() {
        let conn = Connection::open_in_memory().unwrap();
        version_5_with_legacy_settings(&conn);
        assert_eq!(migrate(&conn, 5, &MIGRATIONS[..6]).unwrap(), 6);
        assert_typed_as_migrated(&conn);
        let text_column = "SELECT count(*) FROM pragma_table_info('measurements')
                           WHERE name = 'settings'";
        assert_eq!(count(&conn, text_column), 0);
    }

    /// A reader of a version-5 file sees what version 6 would make of it.
    #[test]
    fn a_version_5_reader_sees_typed_settings() {
        let conn = Connection::open_in_memory().unwrap();
        version_5_with_legacy_settings(&conn);
        conn.execute_batch(&reader_views(5).unwrap()).unwrap();
        assert_typed_as_migrated(&conn);
    }

    /// The column names of `SELECT * FROM table` as `conn` resolves `table` (temporary
    /// views first).
    fn columns(conn: &Connection, table: &str) -> Vec<String> {
        let stmt = conn.prepare(&format!("SELECT * FROM {table}")).unwrap();
        stmt.column_names().map(str::to_string).collect()
    }

    /// A reader of a file of any older version sees every column of the current schema, in
    /// its order, and the values the migrations would give its runs.
    #[test]
    fn every_older_version_reads_as_the_current_schema() {
        let current = Connection::open_in_memory().unwrap();
        migrate(&current, 0, MIGRATIONS).unwrap();
        for from in 1..SCHEMA_VERSION {
            let conn = Connection::open_in_memory().unwrap();
            migrate(&conn, 0, &MIGRATIONS[..from as usize]).unwrap();
            conn.execute_batch(
                "INSERT INTO runs (uid, kernel_hash, kernel_name, kernel_source, shape,
                     cpu_model, features, threads, strata_version, strategy, seed, bytes,
                     started_at)
                 VALUES ('u', 'h', 'k', 'src', 'M=1', 'cpu', '', 1, '0.1.0', 'random', 7, 8, 't')",
            )
            .unwrap();
            conn.execute_batch(&reader_views(from).unwrap()).unwrap();
            for table in ["runs", "measurements", "loop_features"] {
                assert_eq!(
                    columns(&conn, table),
                    columns(&current, table),
                    "{table} read from version {from}"
                );
            }
            let (backend, params): (String, String) = conn
                .query_row("SELECT backend, params FROM runs", [], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .unwrap();
            assert_eq!((backend.as_str(), params.as_str()), ("cranelift", ""));
        }
    }

    /// A read-only [`crate::Db`] on a version-4 file: its runs have no parameters, their
    /// winner is found under none and missed under others, and the file is not written.
    #[test]
    fn a_reader_of_a_version_4_file_sees_runs_without_params() {
        let path = std::env::temp_dir().join(format!("strata-schema-v4-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        version_4(&Connection::open(&path).unwrap());
        let before = std::fs::read(&path).unwrap();
        let db = crate::Db::open_read_only(&path).unwrap();
        let (_, run) = db.runs().unwrap().remove(0);
        let key = run.start.key;
        let winner = db.winner(&key).map(|w| w.measurement.schedule_hash);
        let other = crate::TuningKey {
            params: "a=1".into(),
            ..key.clone()
        };
        let miss = db.winner(&other).unwrap_err();
        let report = db.report(None).unwrap();
        drop(db);
        let after = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(key.params, "");
        assert_eq!(winner.unwrap(), "h2");
        assert!(
            matches!(&miss, crate::Miss::Params { tuned_params, .. } if tuned_params == &[""]),
            "{miss:?}"
        );
        assert_eq!(report[0].key.params, "");
        assert!(before == after, "a reader wrote");
    }

    #[test]
    fn a_table_without_our_application_id_is_foreign() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE photos (id INTEGER)")
            .unwrap();
        match classify(&conn).unwrap() {
            FileKind::Foreign(why) => assert!(why.contains("photos"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
