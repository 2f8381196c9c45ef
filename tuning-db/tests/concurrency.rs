//! Two tuners writing one database at once both keep every record.

mod common;

use std::sync::{Arc, Barrier};
use std::thread;

use common::{key, new_run, ok, TempPath};
use strata_tuning_db::Db;

/// Opens `path` (after `barrier`), starts a run and records `n` measurements.
fn writer(path: std::path::PathBuf, barrier: Arc<Barrier>, seed: u64, n: u64) -> i64 {
    barrier.wait();
    let db = Db::open(&path).unwrap();
    let k = key("matmul", "hmm", 64);
    let run = db.start_run(&new_run(&k, seed, seed as u32)).unwrap();
    for t in 0..n {
        let mut m = ok(t, 1.0 + t as f64);
        m.schedule_hash = format!("w{seed}-{t}");
        db.record(run, &m).unwrap();
    }
    db.finish_run(run, "budget", "2026-05-01T11:00:00Z")
        .unwrap();
    run
}

#[test]
fn two_writers_on_one_new_file_keep_all_1000_measurements() {
    let tmp = TempPath::new("two-writers");
    let barrier = Arc::new(Barrier::new(2));
    let handles: Vec<_> = [1u64, 2]
        .into_iter()
        .map(|seed| {
            let (path, barrier) = (tmp.path().to_path_buf(), barrier.clone());
            thread::spawn(move || writer(path, barrier, seed, 500))
        })
        .collect();
    let runs: Vec<i64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let db = Db::open(tmp.path()).unwrap();
    for run in &runs {
        assert_eq!(db.measurements(*run).unwrap().len(), 500);
    }
    let k = key("matmul", "hmm", 64);
    assert_eq!(db.measured_hashes(&k).unwrap().len(), 1000);
    assert_eq!(db.report(None).unwrap()[0].trials, 1000);
    assert_eq!(db.integrity_check().unwrap(), "ok");
}

#[test]
fn many_openers_of_a_new_file_create_one_schema() {
    for round in 0..5 {
        let tmp = TempPath::new(&format!("openers-{round}"));
        let barrier = Arc::new(Barrier::new(4));
        let handles: Vec<_> = (0..4u64)
            .map(|seed| {
                let (path, barrier) = (tmp.path().to_path_buf(), barrier.clone());
                thread::spawn(move || writer(path, barrier, seed, 3))
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let db = Db::open(tmp.path()).unwrap();
        assert_eq!(db.runs().unwrap().len(), 4);
    }
}
