//! A tuner killed with SIGKILL mid-run loses no committed measurement, the file stays
//! sound, and `tune` resumes from what it holds.
//!
//! The test re-executes this test binary as the child (`--exact crash_child_writer`)
//! with [`CHILD_ENV`] naming the database; the child records measurements as fast as it
//! can, printing `@committed <trial>` after each commit, until it is killed.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use common::{key, new_run, ok, TempPath};
use strata_tuning_db::{Db, TuningKey};

/// The environment variable that makes [`crash_child_writer`] act as the child.
const CHILD_ENV: &str = "STRATA_TUNING_DB_CRASH_CHILD";

/// The key every child tunes.
fn crash_key() -> TuningKey {
    key("matmul", "hcrash", 64)
}

/// The child: a no-op unless [`CHILD_ENV`] is set.
#[test]
fn crash_child_writer() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let db = Db::open(Path::new(&path)).unwrap();
    let k = crash_key();
    let first = db.max_trial(&k).unwrap().map_or(0, |t| t + 1);
    let run = db.start_run(&new_run(&k, first, 0)).unwrap();
    println!("@run {run}");
    for trial in first.. {
        db.record(run, &ok(trial, 1.0 + (trial % 97) as f64))
            .unwrap();
        println!("@committed {trial}");
    }
}

/// What a killed child reported.
struct ChildReport {
    /// Its run id.
    run: i64,
    /// Every trial it reported as committed.
    committed: BTreeSet<u64>,
}

/// Runs a child on `path`, kills it with SIGKILL after `kill_after` commits, and
/// returns what it reported before dying.
fn run_and_kill(path: &Path, kill_after: usize) -> ChildReport {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash_child_writer",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut report = ChildReport {
        run: -1,
        committed: BTreeSet::new(),
    };
    let mut killed = false;
    while let Some(Ok(line)) = lines.next() {
        parse_line(&line, &mut report);
        if !killed && report.committed.len() >= kill_after {
            child.kill().unwrap(); // SIGKILL on Unix
            killed = true;
        }
    }
    let status = child.wait().unwrap();
    assert!(
        killed && !status.success(),
        "the child ended by itself: {status:?}"
    );
    report
}

/// Takes `@run N` and `@committed N`, wherever the test harness's own output puts them
/// on a line; ignores everything else.
fn parse_line(line: &str, report: &mut ChildReport) {
    let Some(at) = line.find('@') else {
        return;
    };
    let mut words = line[at + 1..].split_whitespace();
    match (
        words.next(),
        words.next().and_then(|n| n.parse::<u64>().ok()),
    ) {
        (Some("run"), Some(id)) => report.run = id as i64,
        (Some("committed"), Some(trial)) => {
            report.committed.insert(trial);
        }
        _ => {}
    }
}

#[test]
fn sigkill_mid_run_loses_no_committed_measurement() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let tmp = TempPath::new("crash");
    let k = crash_key();
    let mut all_committed = BTreeSet::new();
    for kill_after in [120, 77, 151] {
        let report = run_and_kill(tmp.path(), kill_after);
        assert!(report.run > 0);
        assert!(report.committed.len() >= kill_after);

        // `tune` again: open, check, resume.
        let db = Db::open(tmp.path()).unwrap();
        assert_eq!(db.integrity_check().unwrap(), "ok");
        let stored: BTreeSet<u64> = db
            .measurements(report.run)
            .unwrap()
            .iter()
            .map(|m| m.trial)
            .collect();
        let lost: Vec<_> = report.committed.difference(&stored).collect();
        assert!(lost.is_empty(), "committed but lost: {lost:?}");
        all_committed.extend(report.committed);
        let hashes = db.measured_hashes(&k).unwrap();
        for t in &all_committed {
            assert!(
                hashes.contains(&format!("s{t}")),
                "resume would re-measure s{t}"
            );
        }
        let (_, run) = db.runs().unwrap().pop().unwrap();
        assert_eq!(run.ended_at, None, "a killed run has no end");
    }
    let db = Db::open(tmp.path()).unwrap();
    assert_eq!(db.runs().unwrap().len(), 3);
    let (best, _) = db.best(&k).unwrap().unwrap();
    assert_eq!(best.median_s, Some(1.0e-3));
    assert_eq!(db.report(None).unwrap()[0].runs, 3);
}
