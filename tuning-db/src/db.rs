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
    /// Leaves the file and its `-wal`/`-shm` exactly as found, creating none, so it also
    /// works on a read-only file or in a read-only directory. Writing through the returned
    /// `Db` fails. A file this build would have to set up or migrate first is
    /// [`DbError::NotReady`]. How it reads depends on what lies beside the file
    /// ([`ReadMode::for_file`]).
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Db, DbError> {
        let path = path.as_ref();
        check_path(path, false)?;
        let db = Db::connect_reader(path, ReadMode::for_file(path)?)?;
        let kind = db.read(schema::classify)?;
        db.refuse_unless_ours(&kind)?;
        db.read_as_current(&kind)?;
        Ok(db)
    }

    /// Opens a read-only SQLite connection in `mode` (nothing is written).
    fn connect_reader(path: &Path, mode: ReadMode) -> Result<Db, DbError> {
        let err = |e| map_error(path, DEFAULT_BUSY_TIMEOUT, e);
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(uri(path, mode.query()), flags).map_err(err)?;
        conn.busy_timeout(DEFAULT_BUSY_TIMEOUT).map_err(err)?;
        schema::register_functions(&conn).map_err(err)?;
        Ok(Db {
            conn,
            path: path.to_path_buf(),
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
        })
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
        schema::register_functions(&conn).map_err(err)?;
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
        self.snapshot(|db| f(&db.conn).map_err(|e| db.err(e)))
    }

    /// Runs `f` in one read transaction: every query it makes through `db` sees the
    /// database as it was at the first of them, whatever other connections commit
    /// meanwhile (a report during a tune shows one moment). Inside another snapshot, `f`
    /// runs in that one. Writes through `db` inside `f` fail.
    pub fn snapshot<T, E: From<DbError>>(
        &self,
        f: impl FnOnce(&Db) -> Result<T, E>,
    ) -> Result<T, E> {
        if !self.conn.is_autocommit() {
            return f(self);
        }
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Deferred)
            .map_err(|e| self.err(e))?;
        let value = f(self)?;
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

/// How a reader opens a file so that it writes nothing, the `-wal` and `-shm` included.
///
/// A plain read-only SQLite connection to a WAL database creates `-wal` and `-shm` files when
/// they are missing (and leaves them behind: only a writer may remove them), and writes its
/// read marks into an existing `-shm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadMode {
    /// Not a WAL database (the rollback journal, or not SQLite at all): SQLite's read-only
    /// connection creates no file for it.
    Plain,
    /// A WAL database with a `-wal` file beside it (a writer has it open, or one was
    /// killed): its rows may be in the `-wal`, so it is read through it, with the `-shm`
    /// opened read-only (`readonly_shm`: SQLite then keeps its index of the `-wal` in
    /// memory when it cannot use the file's). A `-wal` without its `-shm` cannot be read
    /// without creating one: [`DbError::NotReady`].
    WalShared,
    /// A WAL database without a `-wal` file: no writer has it open and every committed row
    /// is in the main file, read as `immutable` (no locks, no companion files). A writer
    /// that opens it during the read writes to a new `-wal`, which this reader does not
    /// see; only a checkpoint (at 1000 pages of `-wal`, or when that writer closes) writes
    /// the main file, and a read during one may see pages of both moments (SQLite reports
    /// that as corruption, or a torn row fails its checksum).
    Immutable,
}

impl ReadMode {
    /// The mode for the file at `path`, from its header's format versions (offsets 18 and
    /// 19: 2 is WAL) and the files beside it; [`DbError::NotReady`] for a `-wal` without its
    /// `-shm`.
    fn for_file(path: &Path) -> Result<ReadMode, DbError> {
        let mut header = [0u8; 20];
        let is_wal = std::fs::File::open(path)
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut header))
            .is_ok_and(|()| header[18] == 2 || header[19] == 2);
        let beside = |suffix| companion(path, suffix).exists();
        match (is_wal, beside("-wal"), beside("-shm")) {
            (false, _, _) => Ok(ReadMode::Plain),
            (true, false, _) => Ok(ReadMode::Immutable),
            (true, true, true) => Ok(ReadMode::WalShared),
            (true, true, false) => Err(DbError::NotReady {
                path: path.to_path_buf(),
                why: "has a -wal file without its -shm file (reading it would create one)".into(),
            }),
        }
    }

    /// The URI query that opens a file in this mode.
    fn query(self) -> &'static str {
        match self {
            ReadMode::Plain => "mode=ro",
            ReadMode::WalShared => "mode=ro&readonly_shm=1",
            ReadMode::Immutable => "mode=ro&immutable=1",
        }
    }
}

/// `path` with SQLite's companion suffix (`-wal`, `-shm`, `-journal`) appended.
pub(crate) fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// A `file:` URI naming `path` with `query`. Every byte but unreserved ASCII is
/// percent-encoded, so any file name (not UTF-8, holding `?` or `#`) survives.
fn uri(path: &Path, query: &str) -> String {
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push('?');
    uri.push_str(query);
    uri
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
