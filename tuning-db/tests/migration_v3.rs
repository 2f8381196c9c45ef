//! Schema version 3: a re-measurement carries the trial number of the search measurement it
//! confirms. A version-2 file (whose tuner numbered re-measurements after the run's last
//! trial) is renumbered when a writer opens it, keeping every row, and a reader sees it
//! renumbered without writing a byte.

mod common;

use common::{key, TempPath};
use rusqlite::Connection;
use strata_tuning_db::{Db, TuningKey, APPLICATION_ID, MIGRATIONS};

/// A version-2 file as strata wrote it before version 3: one run, the default (trial 0) and
/// trials 1..=3, then trials 2 and 0 re-measured, both numbered 3 (the run's last trial).
fn version_2_file(tag: &str) -> (TempPath, TuningKey) {
    let tmp = TempPath::new(tag);
    let k = key("matmul", "hmm", 64);
    let conn = Connection::open(tmp.path()).unwrap();
    for step in &MIGRATIONS[..2] {
        conn.execute_batch(step.sql).unwrap();
    }
    conn.execute(
        "UPDATE meta SET value = '2' WHERE key = 'schema_version'",
        [],
    )
    .unwrap();
    conn.pragma_update(None, "application_id", APPLICATION_ID)
        .unwrap();
    conn.execute(
        "INSERT INTO runs (id, uid, kernel_hash, kernel_name, kernel_source, shape, cpu_model,
             features, threads, strata_version, strategy, seed, bytes, started_at, backend)
         VALUES (1, 'u1', ?1, ?2, 'src', ?3, ?4, ?5, ?6, '0.1.0', 'model', 1, 64,
             '2026-05-01T10:00:00Z', ?7)",
        rusqlite::params![
            k.kernel_hash,
            k.kernel_name,
            k.shape,
            k.target.cpu_model,
            k.target.features,
            k.target.threads,
            k.backend
        ],
    )
    .unwrap();
    let rows = [
        (0, "s0", false, 2.0),
        (1, "s1", false, 0.5),
        (2, "s2", false, 0.4),
        (3, "s3", false, 0.6),
        (3, "s2", true, 0.45),
        (3, "s0", true, 2.1),
    ];
    for (trial, hash, remeasured, ms) in rows {
        conn.execute(
            "INSERT INTO measurements (run_id, trial, schedule, schedule_hash, status, median_s,
                 min_s, max_s, runs, settings, is_default, remeasured, measured_at)
             VALUES (1, ?1, ?2, ?2, 'ok', ?3, ?3, ?3, 5, '{}', ?4, ?5, '2026-05-01T10:00:01Z')",
            rusqlite::params![trial, hash, ms * 1e-3, hash == "s0", remeasured],
        )
        .unwrap();
    }
    (tmp, k)
}

/// (trial, hash) of every re-measurement `db` holds, by time.
fn remeasured(db: &Db) -> Vec<(u64, String)> {
    let mut ms: Vec<_> = db
        .measurements(1)
        .unwrap()
        .into_iter()
        .filter(|m| m.remeasured)
        .collect();
    ms.sort_by(|a, b| a.median_s.unwrap().total_cmp(&b.median_s.unwrap()));
    ms.into_iter().map(|m| (m.trial, m.schedule_hash)).collect()
}

fn expected() -> Vec<(u64, String)> {
    vec![(2, "s2".into()), (0, "s0".into())]
}

#[test]
fn a_writer_renumbers_a_version_2_file_keeping_every_row() {
    let (tmp, k) = version_2_file("v2-migrate");
    let db = Db::open(tmp.path()).unwrap();
    assert_eq!(db.measurements(1).unwrap().len(), 6, "no row lost");
    assert_eq!(remeasured(&db), expected());
    let winner = db.winner(&k).unwrap().measurement;
    assert_eq!((winner.trial, winner.schedule_hash.as_str()), (2, "s2"));
    let e = &db.report(None).unwrap()[0];
    assert_eq!(e.trials, 3);
    assert_eq!(e.winner.as_ref().map(|w| w.trial), Some(2));
    assert_eq!(e.default_confirmed_s, Some(2.1 * 1e-3));
    assert_eq!(db.integrity_check().unwrap(), "ok");
}

#[test]
fn a_reader_sees_a_version_2_file_renumbered_without_writing() {
    let (tmp, k) = version_2_file("v2-read");
    let before = common::bytes(tmp.path());
    let db = Db::open_read_only(tmp.path()).unwrap();
    assert_eq!(remeasured(&db), expected());
    assert_eq!(db.winner(&k).unwrap().measurement.trial, 2);
    assert_eq!(
        db.report(None).unwrap()[0].winner.as_ref().map(|w| w.trial),
        Some(2)
    );
    drop(db);
    assert_eq!(common::bytes(tmp.path()), before, "a reader wrote");
}
