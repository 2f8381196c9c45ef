//! Opening a database: checks that refuse a file without touching it, WAL,
//! the busy timeout, and migrations.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode, OpenFlags, Transaction, TransactionBehavior};

use crate::error::DbError;
use crate::schema::{self, FileKind, MIGRATIONS, SCHEMA_VERSION};

/// How long a writer waits for another writer's lock by default.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// A strata tuning database: one SQLite connection to one file.
///
/// Every write is its own committed transaction, so a killed process loses only the
/// write in flight. Several `Db`s (threads or processes) may write the same file at
/// once; each waits up to the busy timeout for the others.
pub struct Db {
    /// The connection.
    pub(crate) conn: Connection,
    /// The file, for error messages.
    pub(crate) path: PathBuf,
    /// The busy timeout, for error messages.
    pub(crate) busy_timeout: Duration,
}

impl std::fmt::Debug for Db {
    /// Shows the file and the busy timeout.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("path", &self.path)
            .field("busy_timeout", &self.busy_timeout)
            .finish_non_exhaustive()
    }
}

/// How [`Db::open_with`] opens a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenOptions {
    /// Create the file (and its schema) when it does not exist.
    pub create: bool,
    /// How long to wait for another connection's lock before failing with [`DbError::Locked`].
    pub busy_timeout: Duration,
}

impl Default for OpenOptions {
    /// Create if missing, wait [`DEFAULT_BUSY_TIMEOUT`] for locks.
    fn default() -> Self {
        OpenOptions {
            create: true,
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
        }
    }
}

impl Db {
    /// Opens the database at `path`, creating the file and its schema if missing.
    ///
    /// Fails, leaving the file untouched, on a missing directory, a file that is not
    /// SQLite or is corrupt, a SQLite file that is not a strata database, a schema newer
    /// than this build, or a lock held longer than [`DEFAULT_BUSY_TIMEOUT`].
    pub fn open(path: impl AsRef<Path>) -> Result<Db, DbError> {
        Db::open_with(path, &OpenOptions::default())
    }

    /// Opens an existing database; a missing file is [`DbError::Missing`].
    ///
    /// For readers (`report`, `export`, winner lookups) that should not create files.
    pub fn open_existing(path: impl AsRef<Path>) -> Result<Db, DbError> {
        let options = OpenOptions {
            create: false,
            ..OpenOptions::default()
        };
        Db::open_with(path, &options)
    }

    /// Opens the database at `path` with explicit options.
    ///
    /// Everything that could refuse the file (foreign, newer, inconsistent version,
    /// damaged b-trees) is checked before anything is written, so a refused file is
    /// left as it was.
    pub fn open_with(path: impl AsRef<Path>, options: &OpenOptions) -> Result<Db, DbError> {
        let path = path.as_ref();
        check_path(path, options.create)?;
        let db = Db::connect(path, options)?;
        let kind = db.read(schema::classify)?;
        db.refuse_unless_ours(&kind)?;
        db.refuse_if_damaged()?;
        db.prepare_schema()?;
        Ok(db)
    }

    /// Opens an existing database for reading only (`report`, `export`, winner lookups).
    ///
    /// Writes nothing and switches no mode, so it works on a read-only file or in a
    /// read-only directory. Writing through the returned `Db` fails. A file this build
    /// would have to set up or migrate first is [`DbError::NotReady`].
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Db, DbError> {
        let path = path.as_ref();
        check_path(path, false)?;
        match Db::open_reader(path, false) {
            // A WAL database in a directory we cannot write: SQLite cannot create the
            // shared-memory index ("cannot open" or "read-only"). With no WAL file beside
            // it, every committed row is in the main file, and nobody can start one here,
            // so it is safe to read as immutable (without locks).
            Err(e) if needs_immutable(&e) && !has_wal(path) => Db::open_reader(path, true),
            result => result,
        }
        .map_err(|e| map_error(path, DEFAULT_BUSY_TIMEOUT, e))?
    }

    /// Connects read-only and classifies the file; the outer `Result` holds SQLite's
    /// errors unmapped so [`Db::open_read_only`] can retry.
    fn open_reader(path: &Path, immutable: bool) -> rusqlite::Result<Result<Db, DbError>> {
        let conn = if immutable {
            let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_URI;
            let uri = immutable_uri(path).ok_or_else(|| cannot_open(path))?;
            Connection::open_with_flags(uri, flags)?
        } else {
            let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            Connection::open_with_flags(path, flags)?
        };
        conn.busy_timeout(DEFAULT_BUSY_TIMEOUT)?;
        let kind = {
            let tx = Transaction::new_unchecked(&conn, TransactionBehavior::Deferred)?;
            let kind = schema::classify(&tx)?;
            tx.commit()?;
            kind
        };
        let db = Db {
            conn,
            path: path.to_path_buf(),
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
        };
        Ok(db
            .refuse_unless_ours(&kind)
            .and_then(|()| db.read_as_current(&kind))
            .map(|()| db))
    }

    /// The database file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the SQLite connection and sets per-connection options (nothing is written).
    fn connect(path: &Path, options: &OpenOptions) -> Result<Db, DbError> {
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if options.create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let err = |e| map_error(path, options.busy_timeout, e);
        let mut conn = Connection::open_with_flags(path, flags).map_err(err)?;
        conn.busy_timeout(options.busy_timeout).map_err(err)?;
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(err)?;
        conn.set_transaction_behavior(TransactionBehavior::Immediate);
        Ok(Db {
            conn,
            path: path.to_path_buf(),
            busy_timeout: options.busy_timeout,
        })
    }

    /// Fails for a foreign file, a newer schema or a version no strata writes; fine
    /// for an empty or strata file.
    fn refuse_unless_ours(&self, kind: &FileKind) -> Result<(), DbError> {
        match kind {
            FileKind::Empty => Ok(()),
            // The application id is set in the transaction that creates the tables and
            // sets the version to 1 or more: version 0 (or less) with it means the meta
            // table was altered, and migrating "from 0" would build on unknown tables.
            FileKind::Strata(v) if *v < 1 => Err(DbError::Corrupt {
                path: self.path.clone(),
                detail: format!("it has strata's application id and tables but schema version {v}"),
            }),
            FileKind::Strata(v) if *v > SCHEMA_VERSION => Err(DbError::NewerSchema {
                path: self.path.clone(),
                found: *v,
                supported: SCHEMA_VERSION,
            }),
            FileKind::Strata(_) => Ok(()),
            FileKind::Foreign(detail) => Err(DbError::Foreign {
                path: self.path.clone(),
                detail: detail.clone(),
            }),
        }
    }

    /// A reader cannot set up or migrate a file: fails unless it is at this schema version
    /// or at an older one it can read as this one without writing ([`schema::reader_views`]:
    /// views in the connection's own temporary schema, so `report` and winner lookups keep
    /// working on a database no tuner has opened since an upgrade).
    fn read_as_current(&self, kind: &FileKind) -> Result<(), DbError> {
        let why = match kind {
            FileKind::Strata(v) if *v == SCHEMA_VERSION => return Ok(()),
            FileKind::Strata(v) => match schema::reader_views(*v) {
                Some(views) => return self.conn.execute_batch(&views).map_err(|e| self.err(e)),
                None => format!("has schema version {v}, older than {SCHEMA_VERSION}"),
            },
            _ => "is empty".to_string(),
        };
        Err(DbError::NotReady {
            path: self.path.clone(),
            why,
        })
    }

    /// `PRAGMA quick_check` before the first write: a writer must not add rows to
    /// damaged b-trees (a broken index would take the new rows' damage further).
    fn refuse_if_damaged(&self) -> Result<(), DbError> {
        let findings = self.read(|conn| {
            let mut stmt = conn.prepare("PRAGMA quick_check")?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            rows.collect::<rusqlite::Result<Vec<String>>>()
        })?;
        if findings.len() == 1 && findings[0] == "ok" {
            return Ok(());
        }
        let shown: Vec<&str> = findings.iter().take(3).map(String::as_str).collect();
        Err(DbError::Corrupt {
            path: self.path.clone(),
            detail: format!("PRAGMA quick_check found: {}", shown.join("; ")),
        })
    }

    /// Switches to WAL and durable commits, then migrates under the write lock.
    ///
    /// Taking the write lock here makes a database that another process keeps locked
    /// fail at open ([`DbError::Locked`]) rather than at the first measurement.
    fn prepare_schema(&self) -> Result<(), DbError> {
        self.enable_wal()?;
        self.conn
            .pragma_update(None, "synchronous", "FULL")
            .map_err(|e| self.err(e))?;
        self.write(|conn| {
            // Re-read under the lock: another process may have created or migrated it.
            let kind = schema::classify(conn)?;
            let from = match kind {
                FileKind::Strata(v) => v,
                _ => 0,
            };
            if matches!(kind, FileKind::Empty | FileKind::Strata(_)) && from < SCHEMA_VERSION {
                schema::migrate(conn, from, MIGRATIONS)?;
            }
            Ok(kind)
        })
        .and_then(|kind| self.refuse_unless_ours(&kind))
    }

    /// Switches the file to WAL (a no-op when it already is).
    ///
    /// SQLite answers "busy" at once, without waiting, when two connections switch a new
    /// file at the same moment, so this retries until the busy timeout runs out.
    fn enable_wal(&self) -> Result<(), DbError> {
        let deadline = Instant::now() + self.busy_timeout;
        loop {
            let result: rusqlite::Result<String> =
                self.conn
                    .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0));
            match result {
                Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
                Ok(mode) => {
                    let why = format!("cannot switch to WAL (journal mode is {mode})");
                    return Err(self.invalid(why));
                }
                Err(e) if is_busy(&e) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(self.err(e)),
            }
        }
    }

    /// Runs `f` in one deferred (read) transaction, so it sees one snapshot.
    pub(crate) fn read<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, DbError> {
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Deferred)
            .map_err(|e| self.err(e))?;
        let value = f(&tx).map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))?;
        Ok(value)
    }

    /// Runs `f` in one immediate (write-locked) transaction and commits it.
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, DbError> {
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        let value = f(&tx).map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))?;
        Ok(value)
    }

    /// Maps a SQLite error on this database to a [`DbError`].
    pub(crate) fn err(&self, e: rusqlite::Error) -> DbError {
        map_error(&self.path, self.busy_timeout, e)
    }

    /// A [`DbError::InvalidData`] about this database.
    pub(crate) fn invalid(&self, detail: String) -> DbError {
        DbError::InvalidData {
            path: self.path.clone(),
            detail,
        }
    }
}

/// Fails early for a missing file (when not creating) or a missing directory.
fn check_path(path: &Path, create: bool) -> Result<(), DbError> {
    if path.exists() {
        return Ok(());
    }
    if !create {
        return Err(DbError::Missing {
            path: path.to_path_buf(),
        });
    }
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => {
            Err(DbError::MissingDirectory {
                path: path.to_path_buf(),
                dir: dir.to_path_buf(),
            })
        }
        _ => Ok(()),
    }
}

/// Whether `e` is how SQLite refuses to read a WAL database it cannot write beside.
fn needs_immutable(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly)
    )
}

/// Whether a WAL file lies beside the database (its rows are not all in the main file).
fn has_wal(path: &Path) -> bool {
    companion(path, "-wal").exists()
}

/// `path` with SQLite's companion suffix (`-wal`, `-shm`, `-journal`) appended.
pub(crate) fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// A `file:` URI opening `path` as immutable; `None` for a path that is not UTF-8.
fn immutable_uri(path: &Path) -> Option<String> {
    let mut uri = String::from("file:");
    for c in path.to_str()?.chars() {
        // The characters a URI filename gives a meaning to, and ASCII controls.
        if matches!(c, '%' | '?' | '#') || c.is_ascii_control() {
            uri.push_str(&format!("%{:02X}", c as u32));
        } else {
            uri.push(c);
        }
    }
    uri.push_str("?immutable=1");
    Some(uri)
}

/// SQLite's "cannot open" error, for a path that cannot be written as a URI.
fn cannot_open(path: &Path) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
        Some(format!("cannot open {} read-only", path.display())),
    )
}

/// Whether `e` is SQLite's "busy" or "locked".
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Maps SQLite's error codes to the [`DbError`] variants callers act on.
pub(crate) fn map_error(path: &Path, waited: Duration, e: rusqlite::Error) -> DbError {
    let path = path.to_path_buf();
    if let rusqlite::Error::FromSqlConversionFailure(..)
    | rusqlite::Error::IntegralValueOutOfRange(..)
    | rusqlite::Error::InvalidColumnType(..) = e
    {
        return DbError::InvalidData {
            path,
            detail: e.to_string(),
        };
    }
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            DbError::Locked { path, waited }
        }
        Some(ErrorCode::NotADatabase) => DbError::NotSqlite {
            path,
            detail: e.to_string(),
        },
        Some(ErrorCode::DatabaseCorrupt) => DbError::Corrupt {
            path,
            detail: e.to_string(),
        },
        _ => DbError::Sqlite { path, source: e },
    }
}
