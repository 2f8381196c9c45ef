//! Files written from a database (exports, reports): never the database itself, and
//! never half written.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::db::{companion, Db};
use crate::error::DbError;

/// The suffixes of the files SQLite keeps beside a database.
const COMPANIONS: [&str; 4] = ["", "-wal", "-shm", "-journal"];

impl Db {
    /// Whether writing `output` would write this database: the file itself or its
    /// `-wal`, `-shm` or `-journal` file, by name or as the same file under another name.
    pub fn is_database_file(&self, output: &Path) -> bool {
        is_file_of_database(&self.path, output)
    }

    /// Writes the output file `path` with `write`, whole or not at all ([`write_replacing`]).
    /// Refuses a path that [`Db::is_database_file`].
    pub fn write_output<T>(
        &self,
        path: &Path,
        write: impl FnOnce(&mut dyn Write) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        if self.is_database_file(path) {
            return Err(DbError::OutputIsDatabase {
                path: self.path.clone(),
                output: path.to_path_buf(),
            });
        }
        let io_error = |source| DbError::Output {
            path: path.to_path_buf(),
            source,
        };
        write_replacing(path, write, io_error)
    }
}

/// [`Db::is_database_file`] for the database at `database`, open or not (a command that
/// writes files checks them against the database it was given before opening it).
pub fn is_file_of_database(database: &Path, output: &Path) -> bool {
    COMPANIONS
        .iter()
        .any(|suffix| is_same_file(&companion(database, suffix), output))
}

/// Whether `a` and `b` name one file: the same path once made absolute with its directory's
/// links resolved (neither need exist), or one existing file under two names (a symbolic or
/// hard link).
pub fn is_same_file(a: &Path, b: &Path) -> bool {
    normalized(a) == normalized(b) || same_file(a, b)
}

/// Writes the file `path` whole or not at all: `write` fills a temporary file beside it
/// (beside the file it links to, if it is a symbolic link), which is flushed, synced and
/// renamed over it only once complete, so a failure (a full disk, a file size limit, an error
/// of `write`) leaves `path` as it was and is returned. A path naming a device or a pipe
/// (`/dev/null`), which nothing can be renamed over, is written directly, its errors returned
/// all the same. `io_error` turns this function's own I/O errors into `E`.
pub fn write_replacing<T, E>(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<T, E>,
    io_error: impl Fn(std::io::Error) -> E,
) -> Result<T, E> {
    let target = replaced_file(path).map_err(&io_error)?;
    if target.special {
        return write_in_place(path, write, io_error);
    }
    let mut file = temporary_beside(&target.path).map_err(&io_error)?;
    // Into the file itself: the temporary file's own writer names it in errors.
    let mut out = std::io::BufWriter::new(file.as_file_mut());
    let value = write(&mut out)?;
    // Flushed here, not on drop, where an error would be lost.
    out.flush().map_err(&io_error)?;
    drop(out);
    if let Some(permissions) = target.permissions {
        file.as_file()
            .set_permissions(permissions)
            .map_err(&io_error)?;
    }
    file.as_file().sync_all().map_err(&io_error)?;
    file.persist(&target.path).map_err(|e| io_error(e.error))?;
    Ok(value)
}

/// [`write_replacing`] for a device or pipe: written through, the flush's error returned.
fn write_in_place<T, E>(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<T, E>,
    io_error: impl Fn(std::io::Error) -> E,
) -> Result<T, E> {
    let device = std::fs::OpenOptions::new().write(true).open(path);
    let mut out = std::io::BufWriter::new(device.map_err(&io_error)?);
    let value = write(&mut out)?;
    out.flush().map_err(&io_error)?;
    Ok(value)
}

/// Whether [`write_replacing`] can start on `path`: its temporary file can be created (it is
/// removed again). For a command to refuse an output it could not write before it does the
/// work. A device or pipe is not opened here (opening a pipe waits for its reader).
pub fn check_replaceable(path: &Path) -> std::io::Result<()> {
    let target = replaced_file(path)?;
    if !target.special {
        temporary_beside(&target.path)?;
    }
    Ok(())
}

/// What [`write_replacing`] writes for a path.
struct Replaced {
    /// The file renamed over: the path, or the file it links to.
    path: PathBuf,
    /// The permissions of the file replaced, if there is one (a new file gets the default).
    permissions: Option<std::fs::Permissions>,
    /// Whether it is a device or pipe, written in place.
    special: bool,
}

fn replaced_file(path: &Path) -> std::io::Result<Replaced> {
    let Ok(metadata) = std::fs::metadata(path) else {
        // No file yet (or a link to none): the path itself is created.
        return Ok(Replaced {
            path: path.to_path_buf(),
            permissions: None,
            special: false,
        });
    };
    if metadata.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "it is a directory",
        ));
    }
    Ok(Replaced {
        path: path.canonicalize()?,
        permissions: Some(metadata.permissions()),
        special: !metadata.is_file(),
    })
}

/// A temporary file in `path`'s directory (a rename within one file system is atomic),
/// created with the permissions a plain new file would get.
fn temporary_beside(path: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".strata-output-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Opened with 0666 under the umask, as `File::create` would.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    builder.tempfile_in(dir).map_err(|e| {
        // `tempfile` appends " at path <the temporary file>"; the directory is what the user
        // knows (and the cause alone is kept if the wording ever changes: harmless).
        let text = e.to_string();
        let cause = text.split(" at path ").next().unwrap_or(&text);
        let message = format!("cannot create a file in {}: {cause}", dir.display());
        std::io::Error::new(e.kind(), message)
    })
}

/// `path` made absolute with its directory's symbolic links resolved (the file itself
/// need not exist); the path as given when its directory cannot be resolved.
fn normalized(path: &Path) -> PathBuf {
    if let Ok(full) = path.canonicalize() {
        return full;
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    match (dir.canonicalize(), path.file_name()) {
        (Ok(dir), Some(name)) => dir.join(name),
        _ => path.to_path_buf(),
    }
}

/// Whether both paths exist and are one file (a hard link, a symbolic link).
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
    }
}
