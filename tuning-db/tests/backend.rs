//! The backend is part of every key: a winner for one backend is never another's, reports
//! list each backend apart, exports carry it. Files and exports from before backends (schema
//! version 1, export version 1) keep working, their records Cranelift's.
//!
//! `data/v1-database.sqlite` and `data/v1-export.jsonl` were written by the tuning database
//! of commit c4e798f (schema version 1): `Db::open`, one run of kernel `scale` at N=1024 on
//! "Test CPU 9000" with 2 threads, its default (2 µs) and `Y: vectorize(i, 8)` (1 µs)
//! measured, `finish_run`, then `export`.

mod common;

use common::{key, new_run, ok, TempPath};
use strata_tuning_db::{canonical_shape, Db, Miss, Target, TuningKey, SCHEMA_VERSION};

/// The directory of the test data.
fn data(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// The key the version-1 fixtures hold, for `backend`.
fn v1_key(backend: &str) -> TuningKey {
    TuningKey {
        kernel_hash: "9b1f0c0de5ca1ab1e0000000000000000000000000000000000000000000000f".into(),
        kernel_name: "scale".into(),
        shape: canonical_shape([("N", 1024)]),
        params: String::new(),
        target: Target {
            cpu_model: "Test CPU 9000".into(),
            features: "avx2,fma".into(),
            threads: 2,
        },
        backend: backend.into(),
    }
}

/// A copy of the version-1 database at a temporary path.
fn v1_copy(tag: &str) -> TempPath {
    let tmp = TempPath::new(tag);
    std::fs::copy(data("v1-database.sqlite"), tmp.path()).unwrap();
    tmp
}

/// The schema version a file records.
fn stored_version(path: &std::path::Path) -> i64 {
    let raw = rusqlite::Connection::open(path).unwrap();
    let text: String = raw
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    text.parse().unwrap()
}

/// The miss of `key`, which must be a backend miss listing `tuned`.
fn backend_miss(db: &Db, key: &TuningKey, tuned: &[&str]) -> String {
    let miss = db.winner(key).unwrap_err();
    match &miss {
        Miss::Backend { tuned_backends, .. } => assert_eq!(tuned_backends, tuned),
        other => panic!("expected a backend miss, got {other:?}"),
    }
    miss.to_string()
}

#[test]
fn a_version_1_database_migrates_and_its_runs_are_cranelift_runs() {
    let tmp = v1_copy("v1-migrate");
    assert_eq!(stored_version(tmp.path()), 1);
    let db = Db::open(tmp.path()).unwrap();
    assert_eq!(stored_version(tmp.path()), SCHEMA_VERSION);
    let runs = db.runs().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].1.start.key, v1_key("cranelift"));
    let winner = db.winner(&v1_key("cranelift")).unwrap();
    assert_eq!(winner.measurement.schedule, "Y: vectorize(i, 8)");
    let message = backend_miss(&db, &v1_key("llvm"), &["cranelift"]);
    assert_eq!(
        message,
        "kernel `scale` at shape N=1024 on <Test CPU 9000, [avx2,fma], 2 threads> is not tuned \
         with the llvm backend; tuned only with: cranelift"
    );
    // New runs go beside the old ones, each under its own backend.
    let run = db.start_run(&new_run(&v1_key("llvm"), 1, 0)).unwrap();
    db.record(run, &ok(0, 0.5)).unwrap();
    assert_eq!(db.winner(&v1_key("llvm")).unwrap().measurement.trial, 0);
    assert_eq!(
        db.winner(&v1_key("cranelift"))
            .unwrap()
            .measurement
            .schedule,
        "Y: vectorize(i, 8)"
    );
    assert_eq!(db.integrity_check().unwrap(), "ok");
}

/// A reader (report, winner lookups, export) cannot migrate a file; it reads a version-1 file
/// as Cranelift's without writing a byte.
#[test]
fn a_reader_reads_a_version_1_database_unchanged() {
    let tmp = v1_copy("v1-read");
    let before = common::bytes(tmp.path());
    let db = Db::open_read_only(tmp.path()).unwrap();
    assert_eq!(
        db.winner(&v1_key("cranelift"))
            .unwrap()
            .measurement
            .schedule,
        "Y: vectorize(i, 8)"
    );
    backend_miss(&db, &v1_key("llvm"), &["cranelift"]);
    let report = db.report(None).unwrap();
    assert_eq!(report.len(), 1);
    assert_eq!(report[0].key.backend, "cranelift");
    assert_eq!(report[0].best_median_s, Some(1e-6));
    let mut out = Vec::new();
    db.export(&mut out).unwrap();
    assert!(String::from_utf8(out)
        .unwrap()
        .contains(r#""backend":"cranelift""#));
    drop(db);
    assert_eq!(stored_version(tmp.path()), 1);
    assert_eq!(common::bytes(tmp.path()), before, "a reader wrote");
}

#[test]
fn a_version_1_export_imports_as_cranelift() {
    let tmp = TempPath::new("v1-import");
    let db = Db::open(tmp.path()).unwrap();
    let text = std::fs::read_to_string(data("v1-export.jsonl")).unwrap();
    assert!(!text.contains("backend"), "the fixture predates backends");
    assert_eq!(db.import(&mut text.as_bytes()).unwrap(), 3);
    assert_eq!(
        db.winner(&v1_key("cranelift"))
            .unwrap()
            .measurement
            .schedule,
        "Y: vectorize(i, 8)"
    );
    backend_miss(&db, &v1_key("llvm"), &["cranelift"]);
}

#[test]
fn a_winner_for_one_backend_is_not_the_others() {
    let tmp = TempPath::new("backend-key");
    let db = Db::open(tmp.path()).unwrap();
    let cranelift = key("matmul", "hmm", 64);
    let llvm = TuningKey {
        backend: "llvm".into(),
        ..cranelift.clone()
    };
    let run = db.start_run(&new_run(&cranelift, 1, 0)).unwrap();
    db.record(run, &ok(0, 2.0)).unwrap();
    db.record(run, &ok(1, 1.0)).unwrap();
    backend_miss(&db, &llvm, &["cranelift"]);
    let run = db.start_run(&new_run(&llvm, 1, 10)).unwrap();
    db.record(run, &ok(5, 0.25)).unwrap();
    assert_eq!(db.winner(&cranelift).unwrap().measurement.trial, 1);
    assert_eq!(db.winner(&llvm).unwrap().measurement.trial, 5);
    assert_eq!(db.max_trial(&cranelift).unwrap(), Some(1));
    assert_eq!(db.max_trial(&llvm).unwrap(), Some(5));
    assert_eq!(db.measured_hashes(&llvm).unwrap().len(), 1);
    let report = db.report(None).unwrap();
    let backends: Vec<&str> = report.iter().map(|e| e.key.backend.as_str()).collect();
    assert_eq!(backends, ["cranelift", "llvm"]);
    assert_eq!(report[0].best_median_s, Some(1e-3));
    assert_eq!(report[1].best_median_s, Some(0.25e-3));
    assert_eq!(report[1].trials, 1);
}

#[test]
fn exports_carry_the_backend() {
    let (a, b) = (
        TempPath::new("backend-export"),
        TempPath::new("backend-import"),
    );
    let source = Db::open(a.path()).unwrap();
    let llvm = TuningKey {
        backend: "llvm".into(),
        ..key("matmul", "hmm", 64)
    };
    let run = source.start_run(&new_run(&llvm, 1, 0)).unwrap();
    source.record(run, &ok(0, 1.0)).unwrap();
    let mut out = Vec::new();
    source.export(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains(r#""backend":"llvm""#), "{text}");
    let target = Db::open(b.path()).unwrap();
    target.import(&mut text.as_bytes()).unwrap();
    assert_eq!(target.winner(&llvm).unwrap().measurement.trial, 0);
    backend_miss(
        &target,
        &TuningKey {
            backend: "cranelift".into(),
            ..llvm
        },
        &["llvm"],
    );
}
