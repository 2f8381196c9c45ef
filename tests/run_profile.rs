//! `strata run --profile`: the per-function table and its JSON form.

mod common;
use common::{strata, text};

const BLUR: [&str; 6] = [
    "run",
    "examples/kernels/blur3x3.strata",
    "--threads",
    "1",
    "--min-time",
    "0.05",
];

/// A shape whose rows are easy to count.
const SMALL: &str = "H=130,W=130";
/// A shape where a run's work is far larger than a call's own bookkeeping (checks, counters):
/// about 1 ms a run against tens of microseconds. At 130x130 the run is ~70 us and the
/// bookkeeping a quarter of it, so one stall of the machine outside the produce blocks took
/// the shares below a half (0.39 under a concurrent test suite).
const LARGE: &str = "H=514,W=514";

fn run(shape: &str, extra: &[&str]) -> String {
    let args = [&BLUR[..], &["--shape", shape], extra].concat();
    let out = strata(&args);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn the_table_lists_each_function_with_its_calls() {
    let out = run(
        SMALL,
        &["--schedule", "bx: compute_at(out, y)", "--profile"],
    );
    assert!(out.contains("answer: matches the reference"), "{out}");
    let row = |name: &str| {
        let line = out.lines().find(|l| l.trim_start().starts_with(name));
        let line = line.unwrap_or_else(|| panic!("no row {name}: {out}"));
        line.split_whitespace()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    // function, self ms, share, calls per run: bx once per output row.
    assert_eq!(row("bx")[3], "128", "{out}");
    assert_eq!(row("out")[3], "1", "{out}");
    assert!(out.contains("(outside produce)"), "{out}");
    let plain = run(SMALL, &["--schedule", "bx: compute_at(out, y)"]);
    assert!(!plain.contains("profile:"), "{plain}");
}

#[test]
fn json_shares_add_up_to_most_of_a_run() {
    for schedule in ["bx: compute_root()", "bx: compute_at(out, y)"] {
        let out = run(LARGE, &["--schedule", schedule, "--profile", "--json"]);
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        let p = &v["profile"];
        assert_eq!(p["same_answer"], true, "{v}");
        let functions = p["functions"].as_array().unwrap();
        let mut names: Vec<&str> = functions
            .iter()
            .map(|f| f["function"].as_str().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["bx", "out"], "{v}");
        let shares: f64 = functions.iter().map(|f| f["share"].as_f64().unwrap()).sum();
        // One thread: self times partition the time in produce blocks, inside each run, and
        // at this shape those blocks are nearly all of a run (0.97 when measured).
        assert!((0.5..=1.0).contains(&shares), "{schedule}: {shares} {v}");
    }
    let plain = run(SMALL, &["--json"]);
    let v: serde_json::Value = serde_json::from_str(plain.trim()).unwrap();
    assert!(v.get("profile").is_none(), "{v}");
}
