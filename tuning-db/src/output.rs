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
        let output_name = normalized(output);
        COMPANIONS.iter().any(|suffix| {
            let file = companion(&self.path, suffix);
            normalized(&file) == output_name || same_file(&file, output)
        })
    }

    /// Writes the output file `path` with `write`: into a temporary file beside it that
    /// replaces `path` only once complete, so a failure leaves `path` as it was.
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
        let mut file = temporary_beside(path).map_err(io_error)?;
        let value = write(&mut file)?;
        file.as_file().sync_all().map_err(io_error)?;
        file.persist(path).map_err(|e| io_error(e.error))?;
        Ok(value)
    }
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
    builder.tempfile_in(dir)
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
