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
    pub fn open(path: &Path) -> Result<Db, DbError> {
        Db::open_with(path, &OpenOptions::default())
    }

    /// Opens an existing database; a missing file is [`DbError::Missing`].
    ///
    /// For readers (`report`, `export`, winner lookups) that should not create files.
    pub fn open_existing(path: &Path) -> Result<Db, DbError> {
        let options = OpenOptions {
            create: false,
            ..OpenOptions::default()
        };
        Db::open_with(path, &options)
    }

    /// Opens the database at `path` with explicit options.
    pub fn open_with(path: &Path, options: &OpenOptions) -> Result<Db, DbError> {
        check_path(path, options.create)?;
        let db = Db::connect(path, options)?;
        let kind = db.read(schema::classify)?;
        db.refuse_unless_ours(&kind)?;
        db.prepare_schema()?;
        Ok(db)
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

    /// Fails for a foreign file or a newer schema; fine for an empty or strata file.
    fn refuse_unless_ours(&self, kind: &FileKind) -> Result<(), DbError> {
        match kind {
            FileKind::Empty => Ok(()),
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
