//! The `strata` command: `check` and `lower --stage high` on the example kernels and on broken
//! input.

use std::process::{Command, Output};

fn strata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the strata binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn example_files() -> Vec<String> {
    let mut files: Vec<String> =
        std::fs::read_dir(format!("{}/examples/kernels", env!("CARGO_MANIFEST_DIR")))
            .unwrap()
            .map(|e| e.unwrap().path().display().to_string())
            .filter(|p| p.ends_with(".strata"))
            .collect();
    files.sort();
    files
}

#[test]
fn check_prints_every_example_signature() {
    let files = example_files();
    let mut args = vec!["check"];
    args.extend(files.iter().map(String::as_str));
    let out = strata(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), files.len(), "{stdout}");
    assert!(
        stdout.contains("kernel matmul(A: f32[M, K], B: f32[K, N]) -> C: f32[M, N]"),
        "{stdout}"
    );
    assert!(
        stdout.contains("kernel blur3x3(input: u16[H, W]) -> out: u16[H - 2, W - 2]"),
        "{stdout}"
    );
}

#[test]
fn check_of_a_broken_file_fails_with_the_error_on_stderr() {
    let dir = std::env::temp_dir().join(format!("strata-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.strata");
    std::fs::write(
        &bad,
        "kernel k(A: f32[N]) -> B: f32[N] {\n    B(i) = A(i) + 1u8;\n}\n",
    )
    .unwrap();
    let out = strata(&["check", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    let expected = format!(
        "error: type mismatch in `+`: f32 and u8 (cast explicitly, e.g. `f32(...)`)\n --> {}:2:12\n  |\n2 |     B(i) = A(i) + 1u8;\n  |            ^^^^^^^^^^",
        bad.display()
    );
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(text(&out.stdout).is_empty());
}

#[test]
fn check_of_a_missing_file_fails() {
    let out = strata(&["check", "no/such/file.strata"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("cannot read no/such/file.strata"));
}

#[test]
fn lower_high_prints_the_pipeline() {
    let out = strata(&[
        "lower",
        "examples/kernels/softmax.strata",
        "--stage",
        "high",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let expected = "kernel softmax(X: f32[R, C]) -> P: f32[R, C] {\n    mx(r) = max(c in 0..C) X(r, c);\n    e(r, c) = exp(X(r, c) - mx(r));\n    s(r) = sum(c in 0..C) e(r, c);\n    P(r, c) = e(r, c) / s(r);\n}\n";
    assert_eq!(text(&out.stdout), expected);
}

#[test]
fn lower_names_a_missing_kernel() {
    let out = strata(&[
        "lower",
        "examples/kernels/matmul.strata",
        "--kernel",
        "nope",
        "--stage",
        "high",
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no kernel `nope`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn lower_loops_computes_the_producer_per_tile_with_its_halo() {
    let schedule = "out: tile(y, x, yo, xo, yi, xi, 32, 64).vectorize(xi, 8); bx: compute_at(out, xo).vectorize(x, 8)";
    let out = strata(&[
        "lower",
        "examples/kernels/blur3x3.strata",
        "--stage",
        "loops",
        "--schedule",
        schedule,
        "--shape",
        "H=256,W=256",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let tile_loop = stdout
        .find("for out.s0.xo in [0, 4)")
        .expect("a loop over column tiles");
    let allocation = stdout
        .find("allocate bx: u16[")
        .expect("bx is stored per tile");
    let production = stdout.find("produce bx").expect("bx is produced per tile");
    assert!(
        tile_loop < allocation && allocation < production,
        "{stdout}"
    );
    assert!(
        stdout.contains("let bx.y.min = min(out.s0.yo * 32, 222)")
            && stdout.contains("for bx.s0.y in [bx.y.min, bx.y.min + 34)"),
        "32 rows plus a two-row halo:\n{stdout}"
    );
}

#[test]
fn lower_reports_an_illegal_schedule() {
    let out = strata(&[
        "lower",
        "examples/kernels/histogram.strata",
        "--stage",
        "loops",
        "--schedule",
        "hist.update(0): vectorize(x, 4)",
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("in the schedule of `hist.update(0)`: `vectorize(x, 4)`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("carries a reduction dependency"),
        "{stderr}"
    );
}

#[test]
fn lower_reports_a_malformed_schedule_and_shape() {
    let out = strata(&[
        "lower",
        "examples/kernels/matmul.strata",
        "--stage",
        "loops",
        "--schedule",
        "C: spilt(i, io, ii, 4)",
    ]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("spilt"), "{}", text(&out.stderr));
    let out = strata(&[
        "lower",
        "examples/kernels/matmul.strata",
        "--stage",
        "loops",
        "--shape",
        "M=x",
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("not an integer"),
        "{}",
        text(&out.stderr)
    );
    let out = strata(&[
        "lower",
        "examples/kernels/matmul.strata",
        "--stage",
        "loops",
        "--shape",
        "Q=3",
    ]);
    assert!(
        text(&out.stderr).contains("unknown size `Q`"),
        "{}",
        text(&out.stderr)
    );
}

/// A reader that stops early (`strata lower ... | head -1`) ends the listing quietly: exit 0,
/// no panic about a broken pipe.
#[test]
fn lower_stops_quietly_when_the_reader_closes_the_pipe() {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "lower",
            "examples/kernels/conv2d.strata",
            "--stage",
            "clif",
            "--schedule",
            "@examples/schedules/conv2d.sched",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The read end is dropped here, while the listing (hundreds of KiB, past any pipe buffer)
    // is still being written.
    let output = child.wait_with_output().unwrap();
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Any other write failure is an error: `strata lower` into a full device exits non-zero
/// with the reason on stderr.
#[test]
fn lower_reports_a_failed_write() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("no /dev/full on this system: nothing to check");
        return;
    };
    let output = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["lower", "examples/kernels/matmul.strata", "--stage", "high"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(full)
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("error:"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
