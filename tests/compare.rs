//! `strata compare`: two schedules timed side by side, `best` from the tuning database, errors
//! naming the side, the JSON form.

mod common;
use common::{strata, text};

/// A fresh scratch directory for one test.
fn scratch(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("strata-compare-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const BLUR: &str = "examples/kernels/blur3x3.strata";
const QUICK: [&str; 6] = [
    "--shape",
    "H=64,W=64",
    "--threads",
    "1",
    "--min-time",
    "0.02",
];

/// `strata compare BLUR ... a b extra`, which must succeed; its stdout.
fn compare(a: &str, b: &str, extra: &[&str]) -> String {
    let args = [&["compare", BLUR, a, b][..], &QUICK[..], extra].concat();
    let out = strata(&args);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

fn compare_json(a: &str, b: &str, extra: &[&str]) -> serde_json::Value {
    let out = compare(a, b, &[extra, &["--json"]].concat());
    serde_json::from_str(out.trim()).expect("one JSON object")
}

#[test]
fn two_schedules_are_printed_side_by_side() {
    let b = "bx: compute_at(out, y)";
    let out = compare("default", b, &[]);
    assert!(
        out.contains("blur3x3 H=64,W=64 threads 1 backend cranelift"),
        "{out}"
    );
    assert!(out.contains("A: default\n"), "{out}");
    assert!(out.contains(&format!("B: {b}\n")), "{out}");
    let answer = out.lines().find(|l| l.starts_with("answer")).unwrap();
    assert_eq!(answer.matches("matches").count(), 2, "{out}");
    for row in ["median ms", "min ms", "runs"] {
        let line = out.lines().find(|l| l.starts_with(row)).unwrap();
        assert_eq!(
            line.split_whitespace().count(),
            row.split(' ').count() + 2,
            "{line}"
        );
    }
    assert!(out.contains("B/A: "), "{out}");
}

#[test]
fn json_has_both_sides_and_the_ratio_with_its_spread() {
    let b = "out: split(x, xo, xi, 8).vectorize(xi)";
    let v = compare_json("", b, &[]);
    assert_eq!(v["kernel"], "blur3x3");
    assert_eq!(v["a"]["schedule"], "");
    assert_eq!(v["b"]["schedule"], b);
    let rounds = v["rounds"].as_u64().unwrap();
    for side in ["a", "b"] {
        assert_eq!(v[side]["correct"], true, "{v}");
        // Every round runs each side at least three times (after an uncounted warm-up).
        assert!(v[side]["runs"].as_u64().unwrap() >= 3 * rounds, "{v}");
        let (median, min) = (v[side]["median_s"].as_f64(), v[side]["min_s"].as_f64());
        assert!(min.unwrap() > 0.0 && min <= median, "{v}");
    }
    let r = &v["ratio_b_over_a"];
    let (lo, mid, hi) = (r["min"].as_f64(), r["median"].as_f64(), r["max"].as_f64());
    assert!(lo.unwrap() > 0.0 && lo <= mid && mid <= hi, "{v}");
}

#[test]
fn no_check_leaves_the_answers_unchecked() {
    let v = compare_json("default", "default", &["--no-check"]);
    assert_eq!(v["a"]["correct"], serde_json::Value::Null, "{v}");
    assert_eq!(v["b"]["correct"], serde_json::Value::Null, "{v}");
}

/// A schedule that does not parse or is illegal is an error naming its side, before anything
/// is timed.
#[test]
fn a_bad_schedule_names_its_side() {
    let cases = [
        (
            "out: (",
            "default",
            "in schedule A:",
            "expected a directive",
        ),
        (
            "default",
            "bx: compute_at(out, q)",
            "error: schedule B: ",
            "`q` is not a loop",
        ),
        (
            "@no/such/file",
            "default",
            "error: schedule A: ",
            "cannot read",
        ),
    ];
    for (a, b, side, why) in cases {
        let args = [&["compare", BLUR, a, b][..], &QUICK[..]].concat();
        let out = strata(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains(side) && stderr.contains(why),
            "{args:?}: {stderr}"
        );
        assert!(text(&out.stdout).is_empty(), "{args:?}");
    }
}

/// `best` is the database's winner, the same schedule `run --schedule best` takes.
#[test]
fn best_after_a_tiny_tune_is_the_winner() {
    let db = scratch("best").join("t.db");
    let _ = std::fs::remove_file(&db);
    let db = db.to_str().unwrap();
    let args = [
        &["tune", BLUR][..],
        &QUICK[..],
        &["--trials", "3", "--db", db],
    ]
    .concat();
    let out = strata(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run = [&["run", BLUR][..], &QUICK[..]].concat();
    let run = [&run[..], &["--schedule", "best", "--json", "--db", db]].concat();
    let out = strata(&run);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    let v = compare_json("best", "default", &["--db", db]);
    assert_eq!(v["a"]["schedule"], run["schedule"], "{v}\n{run}");
    assert_eq!(v["a"]["correct"], true, "{v}");
    // Without a database `best` is an error naming the side.
    let missing = scratch("best").join("none.db");
    let args = [&["compare", BLUR, "default", "best"][..], &QUICK[..]].concat();
    let out = strata(&[&args[..], &["--db", missing.to_str().unwrap()]].concat());
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("schedule B: "), "{stderr}");
}

/// `--input` and `--param` are taken as `run` takes them: sizes come from the file, and both
/// sides run on that data.
#[test]
fn inputs_and_parameters_come_from_the_command_line() {
    let path = scratch("input").join("image.npy");
    let values: Vec<u8> = (0..6 * 9).map(|i| (i * 37 % 256) as u8).collect();
    let image = strata::Buffer::from_vec(&[6, 9], values).unwrap();
    strata::io::write(&path, &image, "compare test").unwrap();
    let input = format!("image={}", path.display());
    let brighten = "examples/kernels/brighten.strata";
    let b = "out: split(x, xo, xi, 4).vectorize(xi)";
    let args = [
        "compare", brighten, "default", b, "--input", &input, "--param", "gain=1.5",
    ];
    let out = strata(&[&args[..], &QUICK[2..], &["--json"]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(v["shape"], serde_json::json!({"H": 6, "W": 9}), "{v}");
    assert_eq!(
        (&v["a"]["correct"], &v["b"]["correct"]),
        (&true.into(), &true.into())
    );

    let wrong = [&args[..6], &["--param", "gian=2"], &QUICK[2..]].concat();
    let out = strata(&wrong);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("gian"), "{stderr}");
}
