//! Output files (exports, reports): never the database or its companions, and replaced
//! only once complete.

mod common;

use common::{key, new_run, ok, TempPath};
use std::path::PathBuf;
use strata_tuning_db::{Db, DbError};

/// A database with one run and one measurement.
fn small_db(tmp: &TempPath) -> Db {
    let db = Db::open(tmp.path()).unwrap();
    let r = db.start_run(&new_run(&key("k", "h", 8), 1, 0)).unwrap();
    db.record(r, &ok(0, 1.0)).unwrap();
    db
}

/// `path` with `suffix` appended to its name.
fn with_suffix(tmp: &TempPath, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{}{suffix}", tmp.path().display()))
}

#[test]
fn the_database_and_its_companions_are_its_files_under_any_name() {
    let tmp = TempPath::new("own-files");
    let db = small_db(&tmp);
    for suffix in ["", "-wal", "-shm", "-journal"] {
        assert!(db.is_database_file(&with_suffix(&tmp, suffix)), "{suffix}");
    }
    // Through `..`, a symbolic link and a hard link.
    let dir = tmp.path().parent().unwrap();
    let name = tmp.path().file_name().unwrap();
    let dotted = dir.join("..").join(dir.file_name().unwrap()).join(name);
    assert!(db.is_database_file(&dotted));
    let link = with_suffix(&tmp, ".link");
    let hard = with_suffix(&tmp, ".hard");
    std::os::unix::fs::symlink(tmp.path(), &link).unwrap();
    std::fs::hard_link(tmp.path(), &hard).unwrap();
    assert!(db.is_database_file(&link));
    assert!(db.is_database_file(&hard));
    let _ = std::fs::remove_file(&link);
    let _ = std::fs::remove_file(&hard);
    assert!(!db.is_database_file(&with_suffix(&tmp, ".jsonl")));
    assert!(!db.is_database_file(&with_suffix(&tmp, "-walrus")));
}

#[test]
fn an_output_that_is_the_database_is_refused_untouched() {
    let tmp = TempPath::new("refuse-output");
    let db = small_db(&tmp);
    let before = std::fs::read(tmp.path()).unwrap();
    let err = db
        .write_output(tmp.path(), |out| Ok(out.write_all(b"oops")?))
        .unwrap_err();
    assert!(matches!(err, DbError::OutputIsDatabase { .. }), "{err:?}");
    assert!(err.to_string().contains("refusing to write"), "{err}");
    assert_eq!(std::fs::read(tmp.path()).unwrap(), before);
    assert_eq!(db.runs().unwrap().len(), 1);
}

/// The names in `tmp`'s directory that start with the output's temporary prefix.
fn temporaries(tmp: &TempPath) -> Vec<String> {
    std::fs::read_dir(tmp.path().parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".strata-output-"))
        .collect()
}

#[test]
fn an_output_is_replaced_only_when_complete() {
    let tmp = TempPath::new("atomic-output");
    let db = small_db(&tmp);
    let out = with_suffix(&tmp, ".jsonl");
    std::fs::write(&out, "the older export\n").unwrap();
    let before = temporaries(&tmp);
    let err = db
        .write_output(&out, |file| -> Result<(), DbError> {
            file.write_all(b"half an export")?;
            Err(DbError::Io(std::io::Error::other("the disk is full")))
        })
        .unwrap_err();
    assert!(err.to_string().contains("the disk is full"), "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "the older export\n");
    assert_eq!(temporaries(&tmp), before, "a temporary file was left");
    let n = db.write_output(&out, |file| db.export(file)).unwrap();
    assert_eq!(n, 2);
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
    let _ = std::fs::remove_file(&out);
}

/// An output through a symbolic link replaces the file it links to (the link stays, as a
/// plain write would leave it) and keeps that file's permissions.
#[test]
fn an_output_through_a_link_replaces_the_linked_file_keeping_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = TempPath::new("linked-output");
    let db = small_db(&tmp);
    let target = with_suffix(&tmp, ".jsonl");
    let link = with_suffix(&tmp, ".link.jsonl");
    std::fs::write(&target, "the older export\n").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    db.write_output(&link, |file| db.export(file)).unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let text = std::fs::read_to_string(&target).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
    let mode = std::fs::metadata(&target).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o640);
    let _ = std::fs::remove_file(&link);
    let _ = std::fs::remove_file(&target);
}
