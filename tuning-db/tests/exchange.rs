//! Export to JSON lines and import into another database.

mod common;

use common::{failed, key, new_run, ok, TempPath};
use strata_tuning_db::{Db, DbError, Measurement, Settings, Status};

/// Fills `db` with two kernels, three runs (one unfinished), every status kind, a
/// default and a re-measurement, and a seed above `i64::MAX`.
fn populate(db: &Db) {
    let k = key("matmul", "hmm", 64);
    let r1 = db.start_run(&new_run(&k, u64::MAX - 1, 0)).unwrap();
    db.record(
        r1,
        &Measurement {
            is_default: true,
            ..ok(0, 2.0)
        },
    )
    .unwrap();
    db.record(r1, &ok(1, 0.7)).unwrap();
    db.record(r1, &failed(2, Status::Crash("SIGSEGV".into())))
        .unwrap();
    db.record(r1, &failed(3, Status::Refused("too big".into())))
        .unwrap();
    db.finish_run(r1, "budget", "2026-05-01T10:03:00Z").unwrap();
    let r2 = db.start_run(&new_run(&k, 7, 20)).unwrap();
    db.record(
        r2,
        &failed(4, Status::CompileError("bad \"quote\"\nnewline".into())),
    )
    .unwrap();
    db.record(r2, &failed(5, Status::Timeout("check".into())))
        .unwrap();
    db.record(r2, &failed(6, Status::WrongAnswer("nan".into())))
        .unwrap();
    db.record(r2, &ok(7, 0.3333333333333333)).unwrap();
    db.record(
        r2,
        &Measurement {
            remeasured: true,
            ..ok(7, 0.35)
        },
    )
    .unwrap();
    let other = key("softmax ünïcode", "hsm", 16);
    let r3 = db.start_run(&new_run(&other, 3, 40)).unwrap();
    db.record(r3, &ok(0, 0.01)).unwrap();
}

/// Exports `db` to a string.
fn export(db: &Db) -> (String, u64) {
    let mut out = Vec::new();
    let n = db.export(&mut out).unwrap();
    (String::from_utf8(out).unwrap(), n)
}

#[test]
fn export_then_import_into_an_empty_database_gives_the_same_report() {
    let (a, b) = (TempPath::new("export-a"), TempPath::new("export-b"));
    let source = Db::open(a.path()).unwrap();
    populate(&source);
    let (text, n) = export(&source);
    assert_eq!(n, 3 + 10);
    assert_eq!(text.lines().count(), 1 + 13);
    assert!(text.starts_with(r#"{"record":"header","format":"strata-tuning-db","version":4}"#));

    let target = Db::open(b.path()).unwrap();
    assert_eq!(target.import(&mut text.as_bytes()).unwrap(), 13);
    assert_eq!(target.report(None).unwrap(), source.report(None).unwrap());
    assert_eq!(
        export(&target).0,
        text,
        "a second export is the same stream"
    );
    let runs_a: Vec<_> = source.runs().unwrap().into_iter().map(|(_, r)| r).collect();
    let runs_b: Vec<_> = target.runs().unwrap().into_iter().map(|(_, r)| r).collect();
    assert_eq!(runs_a, runs_b);
    for run in 1..=3 {
        let settings = |db: &Db| -> Vec<Settings> {
            let ms = db.measurements(run).unwrap();
            ms.into_iter().map(|m| m.settings).collect()
        };
        assert_eq!(settings(&target), settings(&source), "run {run}");
        assert!(settings(&target).iter().all(|s| s.compile_s == Some(0.004)));
    }
    assert_eq!(target.integrity_check().unwrap(), "ok");
}

/// `text` as export version 3 wrote it: each measurement's settings one JSON text (the
/// genome a JSON value in it), with a key no column takes.
fn as_version_3(text: &str) -> String {
    let lines = text.lines().map(|line| {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["record"] == "header" {
            v["version"] = 3.into();
        } else if v["record"] == "measurement" {
            let settings = &mut v["measurement"]["settings"];
            let genome = settings["genome"].as_str().unwrap();
            settings["genome"] = serde_json::from_str(genome).unwrap();
            settings["warmup"] = 2.into();
            *settings = settings.to_string().into();
        }
        v.to_string()
    });
    lines.map(|l| l + "\n").collect()
}

/// A version-3 stream's settings text imports as typed settings, what has no field kept.
#[test]
fn an_export_of_version_3_imports_its_settings_text_typed() {
    let (a, b) = (
        TempPath::new("v3-settings-a"),
        TempPath::new("v3-settings-b"),
    );
    let source = Db::open(a.path()).unwrap();
    populate(&source);
    let old = as_version_3(&export(&source).0);
    assert!(old.contains(r#""settings":"{"#), "{old}");
    let target = Db::open(b.path()).unwrap();
    assert_eq!(target.import(&mut old.as_bytes()).unwrap(), 13);
    let (expected, imported) = (
        source.measurements(1).unwrap(),
        target.measurements(1).unwrap(),
    );
    for (e, i) in expected.iter().zip(&imported) {
        let other = Some(r#"{"warmup":2}"#.to_string());
        assert_eq!(
            i.settings,
            Settings {
                other,
                ..e.settings.clone()
            }
        );
    }
    assert_eq!(imported.len(), expected.len());
}

/// A setting that is negative or not a number is refused at import.
#[test]
fn an_implausible_setting_is_refused_at_import() {
    let text = export_of_one_timing(Some(1e-3), Some(1e-3))
        .replace(r#""compile_s":0.004"#, r#""compile_s":-1.0"#);
    let target_path = TempPath::new("refused-setting");
    let err = Db::open(target_path.path())
        .unwrap()
        .import(&mut text.as_bytes())
        .unwrap_err();
    assert!(err.to_string().contains("settings.compile_s = -1"), "{err}");
}

#[test]
fn importing_twice_adds_nothing() {
    let (a, b) = (TempPath::new("twice-a"), TempPath::new("twice-b"));
    let source = Db::open(a.path()).unwrap();
    populate(&source);
    let (text, _) = export(&source);
    let target = Db::open(b.path()).unwrap();
    target.import(&mut text.as_bytes()).unwrap();
    let report = target.report(None).unwrap();
    assert_eq!(target.import(&mut text.as_bytes()).unwrap(), 0);
    assert_eq!(target.report(None).unwrap(), report);
    assert_eq!(target.runs().unwrap().len(), 3);
    // Importing into the database it came from adds nothing either.
    assert_eq!(source.import(&mut text.as_bytes()).unwrap(), 0);
}

#[test]
fn importing_merges_with_local_records() {
    let (a, b) = (TempPath::new("merge-a"), TempPath::new("merge-b"));
    let source = Db::open(a.path()).unwrap();
    populate(&source);
    let (text, _) = export(&source);
    let target = Db::open(b.path()).unwrap();
    let k = key("matmul", "hmm", 64);
    let local = target.start_run(&new_run(&k, 9, 59)).unwrap();
    target.record(local, &ok(8, 0.1)).unwrap();
    assert_eq!(target.import(&mut text.as_bytes()).unwrap(), 13);
    let entry = &target.report(Some("matmul")).unwrap()[0];
    assert_eq!(entry.runs, 3);
    // Trials 1..=8 (trial 0 is the default schedule, and the re-measurement is no trial).
    assert_eq!(entry.trials, 8);
    assert_eq!(target.winner(&k).unwrap().measurement.schedule_hash, "s7");
}

#[test]
fn a_bad_stream_imports_nothing() {
    let (a, b) = (TempPath::new("bad-a"), TempPath::new("bad-b"));
    let source = Db::open(a.path()).unwrap();
    populate(&source);
    let (text, _) = export(&source);
    let target = Db::open(b.path()).unwrap();

    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(5, "{not json");
    let broken = lines.join("\n");
    let err = target.import(&mut broken.as_bytes()).unwrap_err();
    assert!(matches!(err, DbError::Import { line: 6, .. }), "{err:?}");
    assert!(err.to_string().contains("nothing was imported"), "{err}");
    assert!(target.runs().unwrap().is_empty());

    let headless: String = text.lines().skip(1).collect::<Vec<_>>().join("\n");
    let err = target.import(&mut headless.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("header"), "{err}");

    let err = target.import(&mut "".as_bytes()).unwrap_err();
    assert!(err.to_string().contains("no header"), "{err}");

    let foreign = r#"{"record":"header","format":"photos","version":1}"#;
    let err = target.import(&mut foreign.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("`photos`"), "{err}");

    let newer = r#"{"record":"header","format":"strata-tuning-db","version":9}"#;
    let err = target.import(&mut newer.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("newer"), "{err}");

    let orphan: String = text
        .lines()
        .filter(|l| !l.contains(r#""record":"run""#))
        .collect::<Vec<_>>()
        .join("\n");
    let err = target.import(&mut orphan.as_bytes()).unwrap_err();
    assert!(matches!(err, DbError::Import { line: 2, .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("neither earlier in the stream nor in the database"),
        "{err}"
    );
    assert!(target.runs().unwrap().is_empty());
}

#[test]
fn an_unfinished_run_gets_its_end_from_a_later_export() {
    let (a, b) = (TempPath::new("end-a"), TempPath::new("end-b"));
    let source = Db::open(a.path()).unwrap();
    let k = key("matmul", "hmm", 64);
    let id = source.start_run(&new_run(&k, 1, 0)).unwrap();
    source.record(id, &ok(0, 1.0)).unwrap();
    let (early, _) = export(&source);
    source
        .finish_run(id, "budget", "2026-05-01T11:00:00Z")
        .unwrap();
    let (late, _) = export(&source);
    let target = Db::open(b.path()).unwrap();
    target.import(&mut early.as_bytes()).unwrap();
    assert_eq!(target.runs().unwrap()[0].1.ended_at, None);
    assert_eq!(target.import(&mut late.as_bytes()).unwrap(), 0);
    assert_eq!(
        target.runs().unwrap()[0].1.stop_reason.as_deref(),
        Some("budget")
    );
}

/// The export of one run with one `ok` measurement whose median is `median_s`.
fn export_of_one_timing(median_s: Option<f64>, min_s: Option<f64>) -> String {
    let tmp = TempPath::new("one-timing");
    let db = Db::open(tmp.path()).unwrap();
    let r = db
        .start_run(&new_run(&key("matmul", "h", 64), 1, 0))
        .unwrap();
    db.record(
        r,
        &Measurement {
            median_s,
            min_s,
            ..ok(0, 1.0)
        },
    )
    .unwrap();
    export(&db).0
}

#[test]
fn implausible_times_are_refused_at_import() {
    let cases = [
        (
            Some(-1e-3),
            None,
            "median_s = -0.001 is not a positive time",
        ),
        (Some(0.0), None, "median_s = 0 is not a positive time"),
        // SQLite stores NaN as NULL; JSON writes it as null.
        (Some(f64::NAN), None, "an `ok` measurement has no median_s"),
        (Some(1e-3), Some(-2.0), "min_s = -2 is not a positive time"),
        (
            Some(1e-3),
            Some(2e-3),
            "median_s = 0.001 is not between min_s and max_s",
        ),
        // 2·64³ flops in 1e-12 s.
        (Some(1e-12), Some(1e-12), "more than any CPU reaches"),
    ];
    for (median_s, min_s, message) in cases {
        let max_s = median_s.map(|m| if m > 0.0 { m * 2.0 } else { 1.0 });
        let text = export_of_one_timing(median_s, min_s).replace(
            r#""max_s":0.0015"#,
            &format!(r#""max_s":{}"#, serde_json::to_string(&max_s).unwrap()),
        );
        let target_path = TempPath::new("refused-timing");
        let target = Db::open(target_path.path()).unwrap();
        let err = target.import(&mut text.as_bytes()).unwrap_err();
        assert!(matches!(err, DbError::Import { line: 3, .. }), "{err:?}");
        assert!(err.to_string().contains(message), "{message}: {err}");
        assert!(err.to_string().contains("nothing was imported"), "{err}");
        assert!(target.runs().unwrap().is_empty(), "{message}");
    }
}

#[test]
fn a_callers_check_refuses_the_whole_import_and_sees_the_stored_run() {
    let (a, b) = (TempPath::new("check-a"), TempPath::new("check-b"));
    let source = Db::open(a.path()).unwrap();
    populate(&source);
    let (text, records) = export(&source);
    let target = Db::open(b.path()).unwrap();
    let refuse_s7 = |_: &strata_tuning_db::Run, m: &Measurement| {
        if m.schedule_hash == "s7" {
            Err("s7 is not welcome".to_string())
        } else {
            Ok(())
        }
    };
    let err = target
        .import_checked(&mut text.as_bytes(), &refuse_s7)
        .unwrap_err();
    assert!(err.to_string().contains("s7 is not welcome"), "{err}");
    assert!(target.runs().unwrap().is_empty());
    assert_eq!(
        target
            .import_checked(&mut text.as_bytes(), &|_, _| Ok(()))
            .unwrap(),
        records
    );
    // A stream claiming a stored run with another kernel source: the check sees the stored one.
    let stored_source = target.runs().unwrap()[0].1.start.kernel_source.clone();
    let forged = text.replacen(&stored_source.replace('"', "\\\""), "forged", 1);
    assert_ne!(forged, text);
    let seen = std::cell::RefCell::new(Vec::new());
    let record_source = |run: &strata_tuning_db::Run, _: &Measurement| {
        seen.borrow_mut().push(run.start.kernel_source.clone());
        Ok(())
    };
    target
        .import_checked(&mut forged.as_bytes(), &record_source)
        .unwrap();
    assert!(!seen.borrow().is_empty());
    assert!(
        !seen.borrow().iter().any(|s| s == "forged"),
        "{:?}",
        seen.borrow()
    );
}

/// An older strata numbered a re-measurement after its run's last trial; importing its
/// export stores it under the trial it confirms (as schema version 3 does), and importing
/// it again still adds nothing.
#[test]
fn an_old_export_imports_with_remeasurements_renumbered() {
    let (a, b) = (TempPath::new("renumber-a"), TempPath::new("renumber-b"));
    let source = Db::open(a.path()).unwrap();
    let k = key("matmul", "hmm", 64);
    let run = source.start_run(&new_run(&k, 1, 0)).unwrap();
    source.record(run, &ok(1, 0.4)).unwrap();
    source.record(run, &ok(2, 0.5)).unwrap();
    // The old numbering: trial 1's schedule re-measured as "trial 2", the last.
    let old_numbered = Measurement {
        remeasured: true,
        schedule: ok(1, 0.0).schedule,
        schedule_hash: ok(1, 0.0).schedule_hash,
        ..ok(2, 0.45)
    };
    source.record(run, &old_numbered).unwrap();
    let (text, _) = export(&source);
    let target = Db::open(b.path()).unwrap();
    assert_eq!(target.import(&mut text.as_bytes()).unwrap(), 1 + 3);
    assert_eq!(target.import(&mut text.as_bytes()).unwrap(), 0);
    let winner = target.winner(&k).unwrap().measurement;
    assert!(winner.remeasured);
    assert_eq!((winner.trial, winner.schedule_hash.as_str()), (1, "s1"));
    let entry = &target.report(None).unwrap()[0];
    assert_eq!(entry.winner.as_ref().map(|w| w.trial), Some(1));
    assert_eq!(entry.search_best.as_ref().map(|w| w.trial), Some(1));
}
