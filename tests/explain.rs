//! `strata explain`: each directive left out in turn, the add-one path and the profile, every
//! variant checked against the reference; the text and JSON forms; errors.

mod common;
use common::{strata, text};

const BLUR: &str = "examples/kernels/blur3x3.strata";
const QUICK: [&str; 6] = [
    "--shape",
    "H=66,W=66",
    "--threads",
    "1",
    "--min-time",
    "0.02",
];
/// Four directives; `vectorize(xi)` needs the `split` that makes `xi`.
const SCHEDULE: &str = "out: split(x, xo, xi, 8).vectorize(xi).parallel(y)\nbx: compute_at(out, y)";

/// `strata explain BLUR schedule QUICK extra`: its exit status, stdout and stderr.
fn explain(schedule: &str, extra: &[&str]) -> (bool, String, String) {
    let args = [&["explain", BLUR, schedule][..], &QUICK[..], extra].concat();
    let out = strata(&args);
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn every_directive_is_left_out_and_added_once() {
    let (ok, out, err) = explain(SCHEDULE, &["--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    let removals = v["leave_one_out"].as_array().unwrap();
    let directives: Vec<&str> = removals
        .iter()
        .map(|r| r["directive"].as_str().unwrap())
        .collect();
    assert_eq!(
        directives,
        [
            "out: split(x, xo, xi, 8)",
            "out: vectorize(xi)",
            "out: parallel(y)",
            "bx: compute_at(out, y)"
        ]
    );
    // Without the split, `xi` is no loop: that removal is refused, with the reason.
    let refused = removals[0]["error"].as_str().unwrap();
    assert!(refused.contains("`xi` is not a loop"), "{refused}");
    for r in &removals[1..] {
        let slowdown = r["slowdown"].as_f64().unwrap();
        assert!(slowdown.is_finite() && slowdown > 0.0, "{r}");
        assert!(r["median_s"].as_f64().unwrap() > 0.0, "{r}");
    }
    // The add-one path adds each directive once, ending at the whole schedule.
    let path = v["add_one"].as_array().unwrap();
    let mut added: Vec<&str> = path.iter().map(|s| s["added"].as_str().unwrap()).collect();
    added.sort();
    let mut expected = directives.clone();
    expected.sort();
    assert_eq!(added, expected, "{path:?}");
    assert!(v["speedup"].as_f64().unwrap() > 0.0);
    assert_eq!(v["schedule"].as_str().unwrap(), SCHEDULE);
    // The schedule's profile names both functions (bx is computed inside out's rows).
    let profile = &v["profile"];
    assert_eq!(profile["same_answer"], true, "{profile}");
    let mut functions: Vec<&str> = (profile["functions"].as_array().unwrap().iter())
        .map(|f| f["function"].as_str().unwrap())
        .collect();
    functions.sort();
    assert_eq!(functions, ["bx", "out"], "{profile}");
}

#[test]
fn the_text_report_has_both_tables() {
    let (ok, out, err) = explain("out: parallel(y)\nbx: compute_root()", &[]);
    assert!(ok, "{err}");
    assert!(
        out.contains("blur3x3 H=66,W=66 threads 1 backend cranelift"),
        "{out}"
    );
    assert!(out.contains("leave one out"), "{out}");
    assert!(out.contains("add one"), "{out}");
    assert!(out.contains("profile: self time per run"), "{out}");
    for directive in ["out: parallel(y)", "bx: compute_root()"] {
        // Table rows are indented; the schedule printed above them is not.
        let rows = out
            .lines()
            .filter(|l| l.starts_with(&format!("  {directive}")));
        assert_eq!(rows.count(), 2, "{directive} in each table: {out}");
    }
}

#[test]
fn an_illegal_schedule_is_an_error_naming_it() {
    let (ok, out, err) = explain("out: vectorize(nope)", &[]);
    assert!(!ok);
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("error: the schedule:"), "{err}");
    assert!(err.contains("nope"), "{err}");
}

#[test]
fn best_without_a_tuned_winner_is_an_error() {
    let db = std::env::temp_dir().join(format!("strata-explain-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&db);
    let (ok, _, err) = explain("best", &["--db", db.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.starts_with("error:"), "{err}");
}
