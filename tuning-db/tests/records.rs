//! Recording runs and measurements, reading them back, resume, winners and the report.

mod common;

use common::{failed, key, new_run, ok, target, TempPath};
use strata_tuning_db::{Db, DbError, Miss, Status, TuningKey};

#[test]
fn runs_and_measurements_round_trip() {
    let tmp = TempPath::new("roundtrip");
    let k = key("matmul", "hash-mm", 64);
    let mut run = new_run(&k, u64::MAX, 0);
    run.float_ops = None;
    run.budget_trials = None;
    let written = vec![
        ok(0, 2.0),
        failed(1, Status::CompileError("no such loop `q`".into())),
        failed(2, Status::Crash("SIGSEGV".into())),
        failed(3, Status::Timeout("time".into())),
        failed(4, Status::WrongAnswer("max abs error 0.5 at (3, 4)".into())),
        failed(5, Status::Refused("vector width 64 > 16".into())),
        ok(6, 1.0),
    ];
    let id = {
        let db = Db::open(tmp.path()).unwrap();
        let id = db.start_run(&run).unwrap();
        for m in &written {
            db.record(id, m).unwrap();
        }
        db.finish_run(id, "budget spent", "2026-05-01T10:05:00Z")
            .unwrap();
        id
    };
    let db = Db::open_existing(tmp.path()).unwrap();
    let runs = db.runs().unwrap();
    assert_eq!(runs.len(), 1);
    let (stored_id, stored) = &runs[0];
    assert_eq!(*stored_id, id);
    assert_eq!(stored.start, run, "seed u64::MAX and None budgets survive");
    assert_eq!(stored.uid.len(), 32);
    assert_eq!(stored.ended_at.as_deref(), Some("2026-05-01T10:05:00Z"));
    assert_eq!(stored.stop_reason.as_deref(), Some("budget spent"));
    assert_eq!(db.measurements(id).unwrap(), written);
    assert_eq!(db.integrity_check().unwrap(), "ok");
}

#[test]
fn an_unfinished_run_has_no_end() {
    let tmp = TempPath::new("unfinished");
    let db = Db::open(tmp.path()).unwrap();
    let k = key("matmul", "h", 64);
    db.start_run(&new_run(&k, 1, 0)).unwrap();
    let (_, run) = &db.runs().unwrap()[0];
    assert_eq!(run.ended_at, None);
    assert_eq!(run.stop_reason, None);
}

#[test]
fn recording_into_an_unknown_run_or_twice_is_a_clear_error() {
    let tmp = TempPath::new("badrecord");
    let db = Db::open(tmp.path()).unwrap();
    let err = db.record(42, &ok(0, 1.0)).unwrap_err();
    assert!(
        matches!(err, DbError::UnknownRun { run_id: 42, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("no run with id 42"), "{err}");
    let err = db.finish_run(42, "done", "t").unwrap_err();
    assert!(
        matches!(err, DbError::UnknownRun { run_id: 42, .. }),
        "{err:?}"
    );

    let id = db.start_run(&new_run(&key("k", "h", 8), 1, 0)).unwrap();
    db.record(id, &ok(3, 1.0)).unwrap();
    let err = db.record(id, &ok(3, 1.0)).unwrap_err();
    assert!(
        matches!(err, DbError::DuplicateMeasurement { trial: 3, .. }),
        "{err:?}"
    );
    // The re-measurement of the same trial is a different record.
    let again = strata_tuning_db::Measurement {
        remeasured: true,
        ..ok(3, 1.1)
    };
    db.record(id, &again).unwrap();
    assert_eq!(db.measurements(id).unwrap().len(), 2);
}

#[test]
fn values_beyond_i64_are_refused() {
    let tmp = TempPath::new("range");
    let db = Db::open(tmp.path()).unwrap();
    let mut run = new_run(&key("k", "h", 8), 1, 0);
    run.bytes = u64::MAX;
    let err = db.start_run(&run).unwrap_err();
    assert!(
        matches!(err, DbError::OutOfRange { field: "bytes", .. }),
        "{err:?}"
    );
    assert!(db.runs().unwrap().is_empty());
}

#[test]
fn resume_sees_every_measured_hash_and_the_best_across_runs() {
    let tmp = TempPath::new("resume");
    let db = Db::open(tmp.path()).unwrap();
    let k = key("matmul", "h", 64);
    let other = key("matmul", "h", 128);
    assert!(db.measured_hashes(&k).unwrap().is_empty());
    assert_eq!(db.best(&k).unwrap(), None);
    assert_eq!(db.max_trial(&k).unwrap(), None);

    let r1 = db.start_run(&new_run(&k, 1, 0)).unwrap();
    db.record(r1, &ok(0, 3.0)).unwrap();
    db.record(r1, &ok(1, 1.5)).unwrap();
    db.record(r1, &failed(2, Status::Crash("SIGBUS".into())))
        .unwrap();
    // Killed: never finished.
    let r2 = db.start_run(&new_run(&k, 1, 30)).unwrap();
    db.record(r2, &ok(3, 1.2)).unwrap();
    let r3 = db.start_run(&new_run(&other, 1, 40)).unwrap();
    db.record(r3, &ok(9, 0.1)).unwrap();

    let hashes = db.measured_hashes(&k).unwrap();
    let mut sorted: Vec<_> = hashes.into_iter().collect();
    sorted.sort();
    assert_eq!(
        sorted,
        ["s0", "s1", "s2", "s3"],
        "failed ones too, other shapes not"
    );
    assert_eq!(db.max_trial(&k).unwrap(), Some(3));
    let (best, run) = db.best(&k).unwrap().unwrap();
    assert_eq!((best.schedule_hash.as_str(), run), ("s3", r2));

    // Once a re-measurement exists, only re-measured rows compete.
    let remeasured = strata_tuning_db::Measurement {
        remeasured: true,
        ..ok(1, 1.4)
    };
    db.record(r2, &remeasured).unwrap();
    let (best, run) = db.best(&k).unwrap().unwrap();
    assert_eq!(
        (best.schedule_hash.as_str(), best.remeasured, run),
        ("s1", true, r2)
    );
}

/// A database with `matmul` (hash `h1`) tuned at 64³ on 4 threads, plus a kernel whose
/// every candidate failed.
fn winner_fixture(tmp: &TempPath) -> Db {
    let db = Db::open(tmp.path()).unwrap();
    let k = key("matmul", "h1aaaaaaaaaaaaaaaa", 64);
    let r = db.start_run(&new_run(&k, 1, 0)).unwrap();
    db.record(r, &ok(0, 2.0)).unwrap();
    db.record(r, &ok(1, 0.5)).unwrap();
    let bad = key("conv", "hconv", 32);
    let r = db.start_run(&new_run(&bad, 1, 1)).unwrap();
    db.record(r, &failed(0, Status::Crash("SIGSEGV".into())))
        .unwrap();
    db.record(r, &failed(1, Status::Timeout("compile".into())))
        .unwrap();
    db
}

#[test]
fn winner_hit() {
    let tmp = TempPath::new("winner");
    let db = winner_fixture(&tmp);
    let w = db.winner(&key("matmul", "h1aaaaaaaaaaaaaaaa", 64)).unwrap();
    assert_eq!(w.measurement.schedule_hash, "s1");
    assert_eq!(w.measurement.median_s, Some(0.5e-3));
    assert_eq!(w.run_id, 1);
}

#[test]
fn winner_miss_on_the_kernel_names_its_other_hashes() {
    let tmp = TempPath::new("miss-kernel");
    let db = winner_fixture(&tmp);
    let miss = db
        .winner(&key("matmul", "h2bbbbbbbbbbbbbbbb", 64))
        .unwrap_err();
    assert!(
        matches!(&miss, Miss::Kernel { other_hashes, .. } if other_hashes == &["h1aaaaaaaaaaaaaaaa"])
    );
    let text = miss.to_string();
    assert!(
        text.contains("no tuning for kernel `matmul` (hash h2bbbbbbbbbb)"),
        "{text}"
    );
    assert!(
        text.contains("other hashes (its source changed?): h1aaaaaaaaaa"),
        "{text}"
    );

    let miss = db.winner(&key("softmax", "hsoft", 64)).unwrap_err();
    assert_eq!(
        miss.to_string(),
        "no tuning for kernel `softmax` (hash hsoft)"
    );
}

#[test]
fn winner_miss_on_the_shape_lists_the_tuned_shapes() {
    let tmp = TempPath::new("miss-shape");
    let db = winner_fixture(&tmp);
    let miss = db
        .winner(&key("matmul", "h1aaaaaaaaaaaaaaaa", 128))
        .unwrap_err();
    assert!(matches!(miss, Miss::Shape { .. }), "{miss:?}");
    assert_eq!(
        miss.to_string(),
        "kernel `matmul` is not tuned for shape K=128,M=128,N=128; tuned only for shapes: K=64,M=64,N=64"
    );
}

#[test]
fn winner_miss_on_the_target_lists_the_tuned_targets() {
    let tmp = TempPath::new("miss-target");
    let db = winner_fixture(&tmp);
    let k = TuningKey {
        target: target(8),
        ..key("matmul", "h1aaaaaaaaaaaaaaaa", 64)
    };
    let miss = db.winner(&k).unwrap_err();
    assert!(matches!(miss, Miss::Target { .. }), "{miss:?}");
    assert_eq!(
        miss.to_string(),
        "kernel `matmul` at shape K=64,M=64,N=64 is not tuned for target \
         <Test CPU 9000, [avx2,fma], 8 threads>; tuned only for targets: \
         <Test CPU 9000, [avx2,fma], 4 threads>"
    );
}

#[test]
fn winner_miss_when_nothing_succeeded() {
    let tmp = TempPath::new("miss-none");
    let db = winner_fixture(&tmp);
    let miss = db.winner(&key("conv", "hconv", 32)).unwrap_err();
    assert!(
        matches!(miss, Miss::NoSuccess { measured: 2, .. }),
        "{miss:?}"
    );
    assert!(
        miss.to_string()
            .contains("none of its 2 measurements succeeded"),
        "{miss}"
    );
}

#[test]
fn report_has_speedup_failures_by_kind_and_the_series() {
    let tmp = TempPath::new("report");
    let db = Db::open(tmp.path()).unwrap();
    let k = key("matmul", "hmm", 64);
    let r1 = db.start_run(&new_run(&k, 1, 0)).unwrap();
    let default = strata_tuning_db::Measurement {
        is_default: true,
        ..ok(0, 2.0)
    };
    db.record(r1, &default).unwrap();
    db.record(r1, &ok(1, 1.0)).unwrap();
    db.record(r1, &failed(2, Status::Crash("SIGSEGV".into())))
        .unwrap();
    db.record(r1, &failed(3, Status::CompileError("x".into())))
        .unwrap();
    db.finish_run(r1, "interrupted", "2026-05-01T10:02:00Z")
        .unwrap();
    let r2 = db.start_run(&new_run(&k, 1, 30)).unwrap();
    db.record(r2, &failed(4, Status::Timeout("time".into())))
        .unwrap();
    db.record(r2, &ok(5, 0.4)).unwrap();
    db.record(r2, &failed(6, Status::WrongAnswer("off by 1".into())))
        .unwrap();
    db.record(r2, &failed(7, Status::Crash("SIGILL".into())))
        .unwrap();
    let final_ = strata_tuning_db::Measurement {
        remeasured: true,
        ..ok(5, 0.5)
    };
    db.record(r2, &final_).unwrap();
    let small = key("matmul", "hmm", 16);
    let r3 = db.start_run(&new_run(&small, 2, 50)).unwrap();
    db.record(r3, &ok(0, 0.01)).unwrap();
    let other = key("add", "hadd", 16);
    let r4 = db.start_run(&new_run(&other, 3, 55)).unwrap();
    db.record(r4, &ok(0, 0.02)).unwrap();

    let report = db.report(None).unwrap();
    let names: Vec<(&str, &str)> = report
        .iter()
        .map(|e| (e.key.kernel_name.as_str(), e.key.shape.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("add", "K=16,M=16,N=16"),
            ("matmul", "K=16,M=16,N=16"),
            ("matmul", "K=64,M=64,N=64")
        ]
    );
    let e = &report[2];
    assert_eq!(e.key, k);
    assert_eq!(e.runs, 2);
    // Trials 1..=7: the default (trial 0) and the re-measurement are not trials.
    assert_eq!(e.trials, 7);
    assert_eq!(e.default_median_s, Some(2.0e-3));
    assert_eq!(e.default_search_s, Some(2.0e-3));
    assert_eq!(e.default_confirmed_s, None);
    assert_eq!(e.best_median_s, Some(0.5e-3), "the re-measured time wins");
    // The search best and the winner name their runs and trials: here the same schedule
    // (trial 5 of run 2), searched at 0.4 ms and confirmed at 0.5 ms.
    let search = e.search_best.as_ref().unwrap();
    assert_eq!(
        (search.run_id, search.trial, search.median_s),
        (r2, 5, 0.4e-3)
    );
    assert!(!search.remeasured);
    let winner = e.winner.as_ref().unwrap();
    assert_eq!(
        (winner.run_id, winner.trial, winner.median_s),
        (r2, 5, 0.5e-3)
    );
    assert!(winner.remeasured);
    assert_eq!(winner.schedule_hash, search.schedule_hash);
    assert_eq!(e.best_schedule_hash.as_deref(), Some("s5"));
    assert_eq!(
        e.best_schedule.as_deref(),
        Some("tile(i, j, 5, 8).vectorize(j, 8)")
    );
    assert!((e.speedup.unwrap() - 4.0).abs() < 1e-12);
    let failures: Vec<(&str, u64)> = e.failures.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(
        failures,
        [
            ("compile_error", 1),
            ("crash", 2),
            ("timeout", 1),
            ("wrong_answer", 1)
        ]
    );
    assert_eq!(e.series, [(0, 2.0e-3), (1, 1.0e-3), (5, 0.4e-3)]);
    assert_eq!(e.float_ops, Some(2 * 64 * 64 * 64));
    assert_eq!(e.bytes, 3 * 64 * 64 * 4);

    // No default measured: no speedup.
    assert_eq!(report[0].default_median_s, None);
    assert_eq!(report[0].speedup, None);

    let only = db.report(Some("matmul")).unwrap();
    assert_eq!(only.len(), 2);
    let by_hash = db.report(Some("had")).unwrap();
    assert_eq!(by_hash.len(), 1);
    assert_eq!(by_hash[0].key.kernel_name, "add");
    assert!(db.report(Some("nothing")).unwrap().is_empty());
}

/// `ok(trial, …)` with the median `median_s` seconds (min and max alike).
fn timed(trial: u64, median_s: f64) -> strata_tuning_db::Measurement {
    strata_tuning_db::Measurement {
        median_s: Some(median_s),
        min_s: Some(median_s),
        max_s: Some(median_s),
        ..ok(trial, 1.0)
    }
}

#[test]
fn implausible_times_never_win() {
    let tmp = TempPath::new("implausible");
    let db = Db::open(tmp.path()).unwrap();
    let k = key("matmul", "h", 64);
    let r = db.start_run(&new_run(&k, 1, 0)).unwrap();
    db.record(r, &ok(0, 2.0)).unwrap();
    // 2·64³ flops in 1e-12 s is 5e17 flop/s; then a zero and a negative time.
    for (trial, t) in [(1, 1e-12), (2, 0.0), (3, -1.0)] {
        db.record(r, &timed(trial, t)).unwrap();
        let w = db.winner(&k).unwrap();
        assert_eq!(w.measurement.trial, 0, "{t} s won");
    }
    let entry = &db.report(None).unwrap()[0];
    assert_eq!(entry.best_median_s, Some(2e-3));
}

#[test]
fn ranked_winners_are_best_first_one_per_schedule() {
    let tmp = TempPath::new("ranked");
    let db = Db::open(tmp.path()).unwrap();
    let k = key("matmul", "h", 64);
    let r = db.start_run(&new_run(&k, 1, 0)).unwrap();
    db.record(r, &ok(0, 2.0)).unwrap();
    db.record(r, &ok(1, 0.5)).unwrap();
    db.record(r, &ok(2, 1.0)).unwrap();
    db.record(r, &failed(3, Status::Crash("SIGSEGV".into())))
        .unwrap();
    // Trial 1's schedule re-measured slower: re-measured rows still come first.
    let again = strata_tuning_db::Measurement {
        remeasured: true,
        ..ok(1, 0.9)
    };
    db.record(r, &again).unwrap();
    let order: Vec<(u64, bool)> = db
        .ranked_winners(&k)
        .unwrap()
        .iter()
        .map(|w| (w.measurement.trial, w.measurement.remeasured))
        .collect();
    assert_eq!(order, [(1, true), (2, false), (0, false)]);
    assert_eq!(db.winner(&k).unwrap().measurement, again);
    assert!(db
        .ranked_winners(&key("other", "h2", 8))
        .unwrap()
        .is_empty());
}

#[test]
fn miss_messages_escape_what_the_database_holds() {
    let tmp = TempPath::new("miss-escape");
    let db = Db::open(tmp.path()).unwrap();
    let mut k = key("matmul", "h", 64);
    k.shape = "M=1\u{1b}[2J".into();
    k.target.cpu_model = "cpu\u{1b}]0;x\u{7}".into();
    db.start_run(&new_run(&k, 1, 0)).unwrap();
    let asked = key("matmul", "h", 64);
    let text = db.winner(&asked).unwrap_err().to_string();
    assert!(text.contains("M=1\\u{1b}[2J"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text:?}");
    let mut asked_shape = asked.clone();
    asked_shape.shape = k.shape.clone();
    let text = db.winner(&asked_shape).unwrap_err().to_string();
    assert!(text.contains("cpu\\u{1b}]0;x\\u{7}"), "{text}");
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
}

#[test]
fn short_hashes_never_cut_a_character() {
    assert_eq!(
        strata_tuning_db::short_hash("0123456789abcdef"),
        "0123456789ab"
    );
    assert_eq!(
        strata_tuning_db::short_hash("ab€€€€€€€€€€€€"),
        "ab€€€€€€€€€€"
    );
    assert_eq!(strata_tuning_db::short_hash("é"), "é");
}
