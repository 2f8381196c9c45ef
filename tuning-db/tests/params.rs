//! The scalar parameters' values are part of every key: a winner tuned at one set of values
//! is never another's (nor a kernel-without-parameters' one), misses say which values were
//! tuned, reports list each set apart, and exports carry them. Runs from before parameters
//! were recorded (schema version 4 and older, export version 2 and older) read as runs
//! without parameters (`""`).
//!
//! Migration and read-only reading of a version-4 file are tested beside the migrations
//! (`src/schema.rs`), which build one with the real steps and checksums.

mod common;

use common::{key, new_run, ok, target, TempPath};
use strata_tuning_db::{canonical_params, Db, Miss, NewRun, TuningKey};

/// Kernel `blur` at H=8,W=8 (see [`key`]) with scalar parameter values `params`.
fn blur(params: &str) -> TuningKey {
    TuningKey {
        shape: strata_tuning_db::canonical_shape([("H", 8), ("W", 8)]),
        params: params.into(),
        ..key("blur", "hblur", 8)
    }
}

/// Starts a run of `k` at second `second` and records `ok(trial, ms)` for each pair.
fn tuned(db: &Db, k: &TuningKey, second: u32, trials: &[(u64, f64)]) -> i64 {
    let run = db.start_run(&new_run(k, 1, second)).unwrap();
    for &(trial, ms) in trials {
        db.record(run, &ok(trial, ms)).unwrap();
    }
    run
}

/// The miss of `k`, which must be a parameters miss listing `tuned`.
fn params_miss(db: &Db, k: &TuningKey, tuned: &[&str]) -> String {
    let miss = db.winner(k).unwrap_err();
    match &miss {
        Miss::Params { tuned_params, .. } => assert_eq!(tuned_params, tuned),
        other => panic!("expected a parameters miss, got {other:?}"),
    }
    miss.to_string()
}

#[test]
fn canonical_params_sorts_by_name() {
    let p = canonical_params([("intensity_levels", "8"), ("beta", "1"), ("alpha", "1")]);
    assert_eq!(p, "alpha=1,beta=1,intensity_levels=8");
    assert_eq!(canonical_params([("alpha", 0.25f32)]), "alpha=0.25");
    assert_eq!(canonical_params(Vec::<(String, String)>::new()), "");
}

#[test]
fn runs_with_and_without_params_have_separate_winners() {
    let tmp = TempPath::new("params-key");
    let db = Db::open(tmp.path()).unwrap();
    let (none, one) = (blur(""), blur("alpha=1"));
    tuned(&db, &none, 0, &[(0, 2.0), (1, 1.0)]);
    tuned(&db, &one, 10, &[(5, 0.25)]);
    assert_eq!(db.winner(&none).unwrap().measurement.trial, 1);
    assert_eq!(db.winner(&one).unwrap().measurement.trial, 5);
    assert_eq!(db.best(&none).unwrap().unwrap().0.trial, 1);
    assert_eq!(db.max_trial(&none).unwrap(), Some(1));
    assert_eq!(db.max_trial(&one).unwrap(), Some(5));
    assert_eq!(db.measured_hashes(&none).unwrap().len(), 2);
    assert_eq!(db.measured_hashes(&one).unwrap().len(), 1);
    let ranked: Vec<u64> = db
        .ranked_winners(&one)
        .unwrap()
        .iter()
        .map(|w| w.measurement.trial)
        .collect();
    assert_eq!(ranked, [5]);
    let keys: Vec<TuningKey> = db
        .runs()
        .unwrap()
        .into_iter()
        .map(|(_, r)| r.start.key)
        .collect();
    assert_eq!(keys, [none, one]);
}

#[test]
fn a_lookup_with_other_params_misses_listing_the_tuned_ones() {
    let tmp = TempPath::new("params-miss");
    let db = Db::open(tmp.path()).unwrap();
    tuned(&db, &blur("alpha=1"), 0, &[(0, 1.0)]);
    let message = params_miss(&db, &blur("alpha=2"), &["alpha=1"]);
    assert_eq!(
        message,
        "kernel `blur` at shape H=8,W=8 is not tuned with parameters alpha=2; \
         tuned only with: alpha=1"
    );
    // A kernel without parameters reads as "(none)", whichever side it is on.
    let message = params_miss(&db, &blur(""), &["alpha=1"]);
    assert_eq!(
        message,
        "kernel `blur` at shape H=8,W=8 is not tuned with parameters (none); \
         tuned only with: alpha=1"
    );
    tuned(&db, &blur(""), 10, &[(0, 1.0)]);
    tuned(&db, &blur("alpha=1,beta=2"), 20, &[(0, 1.0)]);
    let message = params_miss(&db, &blur("alpha=2"), &["", "alpha=1", "alpha=1,beta=2"]);
    assert!(
        message.ends_with("tuned only with: (none); alpha=1; alpha=1,beta=2"),
        "{message}"
    );
}

/// Parameter values print as data: a control character in them cannot reach the terminal.
#[test]
fn a_params_miss_prints_the_values_escaped() {
    let tmp = TempPath::new("params-printable");
    let db = Db::open(tmp.path()).unwrap();
    tuned(&db, &blur("a=\u{1b}[2J"), 0, &[(0, 1.0)]);
    let message = params_miss(&db, &blur("a=1"), &["a=\u{1b}[2J"]);
    assert!(
        message.ends_with("tuned only with: a=\\u{1b}[2J"),
        "{message}"
    );
}

/// The target and backend a miss lists are those tuned with the asked values, not those
/// tuned at the shape with other values.
#[test]
fn target_and_backend_misses_are_within_the_params() {
    let tmp = TempPath::new("params-target");
    let db = Db::open(tmp.path()).unwrap();
    let one = blur("alpha=1");
    tuned(&db, &one, 0, &[(0, 1.0)]);
    let other_values_on_8 = TuningKey {
        target: target(8),
        backend: "llvm".into(),
        ..blur("")
    };
    tuned(&db, &other_values_on_8, 10, &[(0, 1.0)]);
    let on_8 = TuningKey {
        target: target(8),
        ..one.clone()
    };
    let miss = db.winner(&on_8).unwrap_err();
    match &miss {
        Miss::Target { tuned_targets, .. } => assert_eq!(tuned_targets, &[target(4)]),
        other => panic!("expected a target miss, got {other:?}"),
    }
    assert_eq!(
        miss.to_string(),
        "kernel `blur` at shape H=8,W=8 with alpha=1 is not tuned for target \
         <Test CPU 9000, [avx2,fma], 8 threads>; tuned only for targets: \
         <Test CPU 9000, [avx2,fma], 4 threads>"
    );
    let llvm = TuningKey {
        backend: "llvm".into(),
        ..one
    };
    let miss = db.winner(&llvm).unwrap_err();
    match &miss {
        Miss::Backend { tuned_backends, .. } => assert_eq!(tuned_backends, &["cranelift"]),
        other => panic!("expected a backend miss, got {other:?}"),
    }
    assert_eq!(
        miss.to_string(),
        "kernel `blur` at shape H=8,W=8 with alpha=1 on <Test CPU 9000, [avx2,fma], 4 threads> \
         is not tuned with the llvm backend; tuned only with: cranelift"
    );
}

#[test]
fn a_no_success_miss_names_the_params() {
    let tmp = TempPath::new("params-none");
    let db = Db::open(tmp.path()).unwrap();
    let one = blur("alpha=1");
    let run = db.start_run(&new_run(&one, 1, 0)).unwrap();
    let crash = strata_tuning_db::Status::Crash("SIGSEGV".into());
    db.record(run, &common::failed(0, crash)).unwrap();
    let miss = db.winner(&one).unwrap_err();
    assert!(matches!(&miss, Miss::NoSuccess { params, .. } if params == "alpha=1"));
    assert!(
        miss.to_string().starts_with(
            "kernel `blur` at shape H=8,W=8 with alpha=1 on <Test CPU 9000, [avx2,fma], \
             4 threads> with the cranelift backend was tuned, but none of its 1 measurements"
        ),
        "{miss}"
    );
}

/// One entry per set of values, ordered by them before the target.
#[test]
fn reports_list_each_set_of_params_apart() {
    let tmp = TempPath::new("params-report");
    let db = Db::open(tmp.path()).unwrap();
    tuned(&db, &blur("alpha=2"), 0, &[(0, 2.0)]);
    let on_8 = TuningKey {
        target: target(8),
        ..blur("")
    };
    tuned(&db, &on_8, 10, &[(0, 3.0), (1, 1.5)]);
    tuned(&db, &blur("alpha=1"), 20, &[(0, 1.0)]);
    let report = db.report(None).unwrap();
    let keys: Vec<(&str, u32)> = report
        .iter()
        .map(|e| (e.key.params.as_str(), e.key.target.threads))
        .collect();
    assert_eq!(keys, [("", 8), ("alpha=1", 4), ("alpha=2", 4)]);
    let best: Vec<Option<f64>> = report.iter().map(|e| e.best_median_s).collect();
    assert_eq!(best, [Some(1.5e-3), Some(1e-3), Some(2e-3)]);
    assert_eq!(report[0].trials, 2);
}

/// Float ops can depend on the values (a parameter may bound a loop): a count is the one of
/// the asked values.
#[test]
fn float_ops_are_per_params() {
    let tmp = TempPath::new("params-flops");
    let db = Db::open(tmp.path()).unwrap();
    let with_ops = |k: &TuningKey, ops, second| NewRun {
        float_ops: Some(ops),
        ..new_run(k, 1, second)
    };
    let (none, one) = (blur(""), blur("levels=8"));
    db.start_run(&with_ops(&none, 64, 0)).unwrap();
    db.start_run(&with_ops(&one, 512, 10)).unwrap();
    let ops = |params| db.float_ops("hblur", &none.shape, params).unwrap();
    assert_eq!(ops(""), Some(64));
    assert_eq!(ops("levels=8"), Some(512));
    assert_eq!(ops("levels=16"), None);
}

/// Exports `db` to a string.
fn export(db: &Db) -> String {
    let mut out = Vec::new();
    db.export(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn exports_carry_the_params() {
    let (a, b) = (
        TempPath::new("params-export"),
        TempPath::new("params-import"),
    );
    let source = Db::open(a.path()).unwrap();
    let one = blur("alpha=1,intensity_levels=8");
    tuned(&source, &one, 0, &[(0, 1.0)]);
    tuned(&source, &blur(""), 10, &[(0, 2.0)]);
    let text = export(&source);
    assert!(text.starts_with(r#"{"record":"header","format":"strata-tuning-db","version":4}"#));
    assert!(
        text.contains(r#""params":"alpha=1,intensity_levels=8""#),
        "{text}"
    );
    let target = Db::open(b.path()).unwrap();
    assert_eq!(target.import(&mut text.as_bytes()).unwrap(), 4);
    let runs = |db: &Db| -> Vec<_> { db.runs().unwrap().into_iter().map(|(_, r)| r).collect() };
    assert_eq!(runs(&target), runs(&source));
    assert_eq!(
        target.winner(&one).unwrap().measurement.median_s,
        Some(1e-3)
    );
    assert_eq!(
        target.winner(&blur("")).unwrap().measurement.median_s,
        Some(2e-3)
    );
    assert_eq!(export(&target), text, "a second export is the same stream");
}

/// A version-2 stream (before parameters were exported) imports as runs without them.
#[test]
fn a_version_2_stream_imports_without_params() {
    let (a, b) = (TempPath::new("params-v2-a"), TempPath::new("params-v2-b"));
    let source = Db::open(a.path()).unwrap();
    tuned(&source, &blur(""), 0, &[(0, 1.0)]);
    let text = export(&source);
    // What strata wrote before version 3: the same lines without `params`.
    let v2 = text
        .replace(r#""version":4"#, r#""version":2"#)
        .replace(r#""params":"","#, "");
    assert!(
        !v2.contains("params") && v2.contains(r#""version":2"#),
        "{v2}"
    );
    let target = Db::open(b.path()).unwrap();
    assert_eq!(target.import(&mut v2.as_bytes()).unwrap(), 2);
    let (_, run) = target.runs().unwrap().remove(0);
    assert_eq!(run.start.key.params, "");
    assert_eq!(target.winner(&blur("")).unwrap().measurement.trial, 0);
    params_miss(&target, &blur("alpha=1"), &[""]);
}
