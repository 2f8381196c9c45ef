//! Every file `Db::open` refuses gets its own error naming the file, and is left
//! byte-for-byte as it was.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{bytes, key, new_run, ok, TempPath};
use strata_tuning_db::{Db, DbError, OpenOptions, SCHEMA_VERSION};

/// Asserts the message names the file.
fn names_file(err: &DbError, path: &Path) {
    let text = err.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
}

/// Asserts that neither a WAL nor a shared-memory file was left beside `path`.
fn no_companions(path: &Path) {
    for suffix in ["-wal", "-shm", "-journal"] {
        let p = format!("{}{suffix}", path.display());
        assert!(!Path::new(&p).exists(), "{p} was created");
    }
}

/// Creates a strata database with one run and one measurement, then closes it.
fn make_strata_db(path: &Path) {
    let db = Db::open(path).unwrap();
    let id = db.start_run(&new_run(&key("k", "h", 8), 1, 0)).unwrap();
    db.record(id, &ok(0, 1.0)).unwrap();
}

#[test]
fn a_new_file_is_created_with_wal() {
    let tmp = TempPath::new("create");
    let db = Db::open(tmp.path()).unwrap();
    assert_eq!(db.path(), tmp.path());
    drop(db);
    let raw = rusqlite::Connection::open(tmp.path()).unwrap();
    let mode: String = raw
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let app: i32 = raw
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .unwrap();
    assert_eq!(app, strata_tuning_db::APPLICATION_ID);
    let version: String = raw
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION.to_string());
    // Reopening a current database works and keeps its rows.
    drop(raw);
    make_strata_db(tmp.path());
    let db = Db::open(tmp.path()).unwrap();
    assert_eq!(db.runs().unwrap().len(), 1);
}

#[test]
fn a_missing_directory() {
    let dir = std::env::temp_dir().join(format!("strata-tdb-no-such-dir-{}", std::process::id()));
    let path = dir.join("tuning.db");
    let err = Db::open(&path).err().unwrap();
    assert!(matches!(err, DbError::MissingDirectory { .. }), "{err:?}");
    names_file(&err, &path);
    assert!(err.to_string().contains("does not exist"), "{err}");
    assert!(!dir.exists());
}

#[test]
fn a_missing_file_when_not_creating() {
    let tmp = TempPath::new("missing");
    let err = Db::open_existing(tmp.path()).err().unwrap();
    assert!(matches!(err, DbError::Missing { .. }), "{err:?}");
    names_file(&err, tmp.path());
    assert!(!tmp.path().exists());
}

#[test]
fn a_garbage_file() {
    let tmp = TempPath::new("garbage");
    let garbage: Vec<u8> = b"this is not a database, just some text\n".repeat(200);
    std::fs::write(tmp.path(), &garbage).unwrap();
    let err = Db::open(tmp.path()).err().unwrap();
    assert!(matches!(err, DbError::NotSqlite { .. }), "{err:?}");
    names_file(&err, tmp.path());
    assert!(err.to_string().contains("not a SQLite file"), "{err}");
    assert_eq!(bytes(tmp.path()), garbage);
    no_companions(tmp.path());
}

#[test]
fn a_sqlite_file_of_another_program() {
    let tmp = TempPath::new("foreign");
    {
        let raw = rusqlite::Connection::open(tmp.path()).unwrap();
        raw.execute_batch(
            "CREATE TABLE photos (id INTEGER, name TEXT); INSERT INTO photos VALUES (1, 'cat');",
        )
        .unwrap();
    }
    let before = bytes(tmp.path());
    let err = Db::open(tmp.path()).err().unwrap();
    assert!(matches!(err, DbError::Foreign { .. }), "{err:?}");
    names_file(&err, tmp.path());
    let text = err.to_string();
    assert!(text.contains("not a strata tuning database"), "{text}");
    assert!(text.contains("photos"), "{text}");
    assert_eq!(bytes(tmp.path()), before);
    no_companions(tmp.path());
}

#[test]
fn a_newer_schema_is_refused_untouched() {
    let tmp = TempPath::new("newer");
    make_strata_db(tmp.path());
    {
        let raw = rusqlite::Connection::open(tmp.path()).unwrap();
        raw.execute(
            "UPDATE meta SET value = '99' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
    }
    let before = bytes(tmp.path());
    let err = Db::open(tmp.path()).err().unwrap();
    assert!(
        matches!(err, DbError::NewerSchema { found: 99, supported, .. } if supported == SCHEMA_VERSION),
        "{err:?}"
    );
    names_file(&err, tmp.path());
    let text = err.to_string();
    assert!(text.contains("schema version 99"), "{text}");
    assert!(
        text.contains(&format!("version {SCHEMA_VERSION} this build")),
        "{text}"
    );
    assert_eq!(bytes(tmp.path()), before);
}

#[test]
fn a_locked_database_times_out_untouched() {
    let tmp = TempPath::new("locked");
    make_strata_db(tmp.path());
    let holder = rusqlite::Connection::open(tmp.path()).unwrap();
    holder
        .execute_batch("BEGIN EXCLUSIVE; DELETE FROM measurements;")
        .unwrap();
    let before = bytes(tmp.path());
    let options = OpenOptions {
        create: true,
        busy_timeout: Duration::from_millis(300),
    };
    let t0 = Instant::now();
    let err = Db::open_with(tmp.path(), &options).err().unwrap();
    let waited = t0.elapsed();
    assert!(matches!(err, DbError::Locked { .. }), "{err:?}");
    names_file(&err, tmp.path());
    assert!(
        err.to_string().contains("locked by another process"),
        "{err}"
    );
    assert!(
        waited >= Duration::from_millis(250),
        "gave up after {waited:?}"
    );
    assert_eq!(bytes(tmp.path()), before);
    holder.execute_batch("ROLLBACK").unwrap();
    drop(holder);
    // Once released, the database opens and lost nothing.
    let db = Db::open(tmp.path()).unwrap();
    assert_eq!(db.measurements(1).unwrap().len(), 1);
}

#[test]
fn a_writer_blocked_past_the_timeout_gets_locked_too() {
    let tmp = TempPath::new("locked-write");
    make_strata_db(tmp.path());
    let options = OpenOptions {
        create: false,
        busy_timeout: Duration::from_millis(200),
    };
    let db = Db::open_with(tmp.path(), &options).unwrap();
    let holder = rusqlite::Connection::open(tmp.path()).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let err = db.record(1, &ok(5, 1.0)).unwrap_err();
    assert!(matches!(err, DbError::Locked { .. }), "{err:?}");
    holder.execute_batch("ROLLBACK").unwrap();
    db.record(1, &ok(5, 1.0)).unwrap();
}

#[test]
fn a_database_with_a_damaged_page_reports_corruption() {
    let tmp = TempPath::new("corrupt");
    {
        let db = Db::open(tmp.path()).unwrap();
        let id = db.start_run(&new_run(&key("k", "h", 8), 1, 0)).unwrap();
        for t in 0..300 {
            db.record(id, &ok(t, 1.0)).unwrap();
        }
    }
    // Overwrite every page after the first two with noise: the schema survives, the data does not.
    let mut data = bytes(tmp.path());
    let page = 4096;
    assert!(data.len() > 4 * page, "{} bytes", data.len());
    for (i, b) in data[2 * page..].iter_mut().enumerate() {
        *b = (i * 7 + 13) as u8;
    }
    std::fs::write(tmp.path(), &data).unwrap();
    // Depending on which pages hold what, opening or the first full read finds it.
    let err = match Db::open(tmp.path()) {
        Err(err) => {
            assert_eq!(bytes(tmp.path()), data, "a refused file is left as it was");
            err
        }
        Ok(db) => {
            match db.integrity_check() {
                Ok(findings) => assert_ne!(findings, "ok"),
                Err(err) => assert!(matches!(err, DbError::Corrupt { .. }), "{err:?}"),
            }
            db.report(None).unwrap_err()
        }
    };
    assert!(matches!(err, DbError::Corrupt { .. }), "{err:?}");
    names_file(&err, tmp.path());
    assert!(err.to_string().contains("is corrupt"), "{err}");
}

/// Makes `path`'s strata database a rollback-journal one, so any write shows in its bytes
/// (a WAL switch rewrites the header).
fn to_rollback_journal(path: &Path) {
    let raw = rusqlite::Connection::open(path).unwrap();
    let mode: String = raw
        .pragma_update_and_check(None, "journal_mode", "DELETE", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "delete");
}

#[test]
fn schema_version_0_with_tables_is_refused_untouched() {
    let tmp = TempPath::new("version-0");
    make_strata_db(tmp.path());
    {
        let raw = rusqlite::Connection::open(tmp.path()).unwrap();
        raw.execute(
            "UPDATE meta SET value = '0' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
    }
    to_rollback_journal(tmp.path());
    let before = bytes(tmp.path());
    let err = Db::open(tmp.path()).err().unwrap();
    assert!(matches!(err, DbError::Corrupt { .. }), "{err:?}");
    names_file(&err, tmp.path());
    assert!(err.to_string().contains("schema version 0"), "{err}");
    assert_eq!(bytes(tmp.path()), before);
    no_companions(tmp.path());
}

/// The first page number of the b-tree `name` (a table or an index).
fn root_page(path: &Path, name: &str) -> usize {
    let raw = rusqlite::Connection::open(path).unwrap();
    let page: i64 = raw
        .query_row(
            "SELECT rootpage FROM sqlite_master WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
        .unwrap();
    usize::try_from(page).unwrap()
}

#[test]
fn a_damaged_index_is_refused_before_anything_is_written() {
    let tmp = TempPath::new("bad-index");
    {
        let db = Db::open(tmp.path()).unwrap();
        let id = db.start_run(&new_run(&key("k", "h", 8), 1, 0)).unwrap();
        for t in 0..300 {
            db.record(id, &ok(t, 1.0)).unwrap();
        }
    }
    to_rollback_journal(tmp.path());
    let page = 4096;
    let root = root_page(tmp.path(), "measurements_by_schedule");
    let mut data = bytes(tmp.path());
    // Keep the page's type byte (an interior index page), scramble its cells.
    for (i, b) in data[(root - 1) * page + 12..root * page]
        .iter_mut()
        .enumerate()
    {
        *b = (i * 31 + 7) as u8;
    }
    std::fs::write(tmp.path(), &data).unwrap();
    let err = Db::open(tmp.path()).err().unwrap();
    assert!(matches!(err, DbError::Corrupt { .. }), "{err:?}");
    names_file(&err, tmp.path());
    assert!(err.to_string().contains("quick_check"), "{err}");
    assert_eq!(bytes(tmp.path()), data, "a refused file is left as it was");
    no_companions(tmp.path());
}

#[test]
fn a_reader_writes_nothing_and_switches_no_mode() {
    let tmp = TempPath::new("reader");
    make_strata_db(tmp.path());
    to_rollback_journal(tmp.path());
    let before = bytes(tmp.path());
    let db = Db::open_read_only(tmp.path()).unwrap();
    assert_eq!(db.runs().unwrap().len(), 1);
    assert_eq!(db.winner(&key("k", "h", 8)).unwrap().measurement.trial, 0);
    let mut out = Vec::new();
    assert_eq!(db.export(&mut out).unwrap(), 2);
    assert!(db.record(1, &ok(9, 1.0)).is_err(), "a reader wrote");
    drop(db);
    assert_eq!(bytes(tmp.path()), before);
    no_companions(tmp.path());
}

#[test]
fn a_reader_refuses_what_it_would_have_to_set_up() {
    let tmp = TempPath::new("reader-empty");
    std::fs::write(tmp.path(), b"").unwrap();
    let err = Db::open_read_only(tmp.path()).err().unwrap();
    assert!(matches!(err, DbError::NotReady { .. }), "{err:?}");
    names_file(&err, tmp.path());
    assert!(err.to_string().contains("is empty"), "{err}");
    assert_eq!(bytes(tmp.path()), b"");
    let missing = TempPath::new("reader-missing");
    let err = Db::open_read_only(missing.path()).err().unwrap();
    assert!(matches!(err, DbError::Missing { .. }), "{err:?}");
    assert!(!missing.path().exists());
}
