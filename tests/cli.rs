//! The `strata` command: `check` and `lower --stage high` on the example kernels and on broken
//! input.

use std::process::{Command, Output};

mod common;
use common::{strata, text};

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

/// A fresh scratch directory for one test (files and databases stay out of the repository).
fn scratch(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("strata-cli-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every duration argument is checked when parsed: negative, NaN, infinite and absurdly
/// large values are usage errors, not a panic in `Duration::from_secs_f64`.
#[test]
fn duration_arguments_out_of_range_are_usage_errors() {
    let db = scratch("durations").join("t.db");
    let db = db.to_str().unwrap();
    let matmul = "examples/kernels/matmul.strata";
    let tune = [
        "tune",
        matmul,
        "--shape",
        "M=4,N=4,K=4",
        "--trials",
        "1",
        "--db",
        db,
    ];
    let run = ["run", matmul, "--shape", "M=4,N=4,K=4", "--db", db];
    let mut cases: Vec<Vec<String>> = Vec::new();
    for bad in ["-1", "nan", "inf", "1e300"] {
        for flag in ["--time", "--min-time", "--timeout"] {
            cases.push(
                tune.iter()
                    .map(|s| s.to_string())
                    .chain([format!("{flag}={bad}")])
                    .collect(),
            );
        }
        cases.push(
            run.iter()
                .map(|s| s.to_string())
                .chain([format!("--min-time={bad}")])
                .collect(),
        );
    }
    for args in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = strata(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("is out of range: give a number of seconds"),
            "{args:?}: {stderr}"
        );
    }
}

/// Starts `strata` with its stdout a pipe whose reader is already gone, as after
/// `strata run ... | grep -m1 answer` once grep has its line.
fn strata_into_a_closed_pipe(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(writer)
        .output()
        .unwrap()
}

/// Every command's printer ends quietly on a closed pipe: exit 0, no panic.
#[test]
fn every_printer_ends_quietly_on_a_closed_pipe() {
    let db = scratch("pipe").join("t.db");
    let db = db.to_str().unwrap();
    let matmul = "examples/kernels/matmul.strata";
    let shape = "M=8,N=8,K=8";
    let run = ["run", matmul, "--shape", shape, "--min-time", "0"];
    let commands: [&[&str]; 9] = [
        &["check", matmul],
        &["lower", matmul, "--stage", "high"],
        &run,
        &[&run[..], &["--json"]].concat(),
        // `tune` prints when it stops, then the report; the database it fills serves `report`.
        &[
            "tune",
            matmul,
            "--shape",
            shape,
            "--trials",
            "2",
            "--min-time",
            "0",
            "--db",
            db,
        ],
        &["report", "--db", db],
        &["report", "--json", "--db", db],
        &["db", "export", "--db", db],
        &["roofline", "--quick", "--json"],
    ];
    for args in commands {
        let out = strata_into_a_closed_pipe(args);
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn run_on_a_file_without_kernels_says_so() {
    let empty = scratch("empty").join("empty.strata");
    std::fs::write(&empty, "// nothing here\n").unwrap();
    for extra in [&[][..], &["--kernel", "k"][..]] {
        let mut args = vec!["run", empty.to_str().unwrap(), "--shape", "N=4"];
        args.extend(extra);
        let out = strata(&args);
        assert!(!out.status.success());
        let stderr = text(&out.stderr);
        assert!(stderr.contains("holds no kernel"), "{args:?}: {stderr}");
    }
}

#[test]
fn a_size_given_twice_in_the_shape_is_an_error() {
    let matmul = "examples/kernels/matmul.strata";
    let lower = ["lower", matmul, "--stage", "loops", "--shape", "M=4,M=8"];
    let run = [
        "run",
        matmul,
        "--shape",
        "M=4,N=4,K=4,M=8",
        "--min-time",
        "0",
    ];
    for args in [&lower[..], &run[..]] {
        let out = strata(args);
        assert!(!out.status.success(), "{args:?}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("--shape gives the size `M` more than once"),
            "{args:?}: {stderr}"
        );
    }
}

/// `STRATA_WORKER` left in the environment does not turn a command into a tuning worker: a
/// worker is started with a hidden argument as well.
#[test]
fn strata_worker_in_the_environment_does_not_hijack_commands() {
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["check", "examples/kernels/matmul.strata"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("STRATA_WORKER", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("kernel matmul("),
        "{}",
        text(&out.stdout)
    );
}

/// `h0(i) = A(i); h1(i) = h0(i) + 1.0; ...; out(i) = h{n-1}(i)`: inlined by default, one
/// expression as deep as the chain is long.
fn chain_of_functions(n: usize) -> String {
    let mut src = String::from("kernel chain(A: f32[N]) -> out: f32[N] {\n    h0(i) = A(i);\n");
    for k in 1..n {
        src.push_str(&format!("    h{k}(i) = h{}(i) + 1.0;\n", k - 1));
    }
    src.push_str(&format!("    out(i) = h{}(i);\n}}\n", n - 1));
    src
}

/// 10,000 chained functions passed `check` but aborted `lower` and `run` with a stack
/// overflow; lowering refuses them, past its stated depth limit, with a clear error.
#[test]
fn ten_thousand_chained_functions_are_refused_not_a_stack_overflow() {
    let file = scratch("chain10k").join("chain.strata");
    std::fs::write(&file, chain_of_functions(10_000)).unwrap();
    let file = file.to_str().unwrap();
    let lower = ["lower", file, "--stage", "loops"];
    let run = ["run", file, "--shape", "N=16", "--min-time", "0"];
    for args in [&lower[..], &run[..]] {
        let out = strata(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("too large to lower: `h4095` is an expression 4097 deep")
                && stderr.contains("lowering accepts at most 4096"),
            "{args:?}: {stderr}"
        );
    }
}

/// The longest chain within the limit lowers, compiles and gives the reference's answer.
#[test]
fn the_deepest_chain_lowering_accepts_runs() {
    let file = scratch("chain4095").join("chain.strata");
    std::fs::write(&file, chain_of_functions(4095)).unwrap();
    let out = strata(&[
        "run",
        file.to_str().unwrap(),
        "--shape",
        "N=16",
        "--min-time",
        "0",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("answer: matches the reference"),
        "{}",
        text(&out.stdout)
    );
}

/// Computing more functions than lowering accepts is refused before any pass (lowering them
/// took minutes, and each nests the loop IR deeper).
#[test]
fn computing_too_many_functions_is_refused() {
    let n = 300;
    let dir = scratch("computed");
    let file = dir.join("fan.strata");
    let terms: Vec<String> = (0..n).map(|k| format!("g{k}(i)")).collect();
    let defs: String = (0..n)
        .map(|k| format!("    g{k}(i) = A(i) + {k}.0;\n"))
        .collect();
    std::fs::write(
        &file,
        format!(
            "kernel fan(A: f32[N]) -> out: f32[N] {{\n{defs}    out(i) = {};\n}}\n",
            terms.join(" + ")
        ),
    )
    .unwrap();
    let schedule: Vec<String> = (0..n).map(|k| format!("g{k}: compute_root()")).collect();
    let out = strata(&[
        "lower",
        file.to_str().unwrap(),
        "--stage",
        "loops",
        "--schedule",
        &schedule.join("; "),
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the schedule computes 301 functions; lowering accepts at most 256"),
        "{stderr}"
    );
}

// ---------------------------------------------------------------------------------------------
// The reproductions of crashes and wrong answers: each is now a clear error (exit
// status 1, a message naming what is wrong), never a signal or `WRONG`.

/// A kernel file in the scratch directory of `test`.
fn kernel_file(test: &str, name: &str, source: &str) -> std::path::PathBuf {
    let path = scratch(test).join(format!("{name}.strata"));
    std::fs::write(&path, source).unwrap();
    path
}

/// Runs the command and expects a refusal: exit status 1 and `message` on stderr.
fn refused(args: &[&str], message: &str) {
    let out = strata(args);
    let (stderr, stdout) = (text(&out.stderr), text(&out.stdout));
    assert_eq!(out.status.code(), Some(1), "{args:?}\n{stderr}\n{stdout}");
    assert!(stderr.contains(message), "{args:?}\n{stderr}");
    assert!(!stdout.contains("WRONG"), "{stdout}");
}

#[test]
fn element_counts_that_wrap_are_refused() {
    let pick = kernel_file(
        "limits-pick",
        "pick",
        "kernel pick(A: u8[X,Y,Z]) -> B: u8[X] { B(i) = A(i, Y-1, Z-1); }",
    );
    let pick = pick.to_str().unwrap();
    let shape = "X=4194304,Y=2097152,Z=2097152";
    let message = "error: input `A` of shape [4194304, 2097152, 2097152] is too large";
    refused(&["run", pick, "--shape", shape], message);
    refused(&["run", pick, "--shape", shape, "--no-check"], message);
}

/// Every command that binds sizes refuses an element count past the limit in the same words
/// (`lower --shape` printed a loop nest for it).
#[test]
fn every_command_binding_sizes_refuses_the_same_shape() {
    let pick = kernel_file(
        "limits-every-command",
        "pick",
        "kernel pick(A: u8[X, Y, Z]) -> B: u8[X] { B(x) = A(x, 0, 0); }",
    );
    let pick = pick.to_str().unwrap();
    let db = scratch("limits-every-command").join("t.db");
    let db = db.to_str().unwrap();
    let shape = "X=4194304,Y=2097152,Z=2097152";
    let message = "error: input `A` of shape [4194304, 2097152, 2097152] is too large";
    refused(
        &["lower", pick, "--stage", "loops", "--shape", shape],
        message,
    );
    refused(
        &["lower", pick, "--stage", "asm", "--shape", shape],
        message,
    );
    refused(&["run", pick, "--shape", shape], message);
    refused(
        &["compare", pick, "default", "default", "--shape", shape],
        message,
    );
    refused(&["explain", pick, "", "--shape", shape], message);
    refused(
        &["tune", pick, "--shape", shape, "--trials", "1", "--db", db],
        message,
    );
    // Sizes left unbound check what the others determine: `B` alone is within the limits.
    let out = strata(&["lower", pick, "--stage", "loops", "--shape", "X=4194304"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// A `specialize` condition that wraps for the sizes refuses the call naming the condition
/// (it was reported as an internal region expression).
#[test]
fn a_specialize_condition_that_overflows_is_named() {
    let schedule = "out: split(x, xo, xi, 16).specialize(W * W > 100).vectorize(xi)";
    let brighten = "examples/kernels/brighten.strata";
    let message = "error: `out`'s specialize condition `W * W > 100` cannot be computed for these \
                   sizes: a step overflows i32";
    let shape = "H=2,W=65536";
    refused(
        &["run", brighten, "--shape", shape, "--schedule", schedule],
        message,
    );
    let lower = ["lower", brighten, "--stage", "loops", "--shape", shape];
    refused(&[&lower[..], &["--schedule", schedule]].concat(), message);
    let out = strata(&[
        "run",
        brighten,
        "--shape",
        "H=2,W=46340",
        "--schedule",
        schedule,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn split_factors_that_overflow_are_refused() {
    for factor in ["2147483645", "6442450941"] {
        refused(
            &[
                "run",
                "examples/kernels/brighten.strata",
                "--shape",
                "H=64,W=64",
                "--schedule",
                &format!("out: split(y, yo, yi, {factor})"),
            ],
            &format!("a split factor of {factor} is too large"),
        );
    }
}

#[test]
fn output_extents_that_wrap_are_refused() {
    let sq = kernel_file(
        "limits-sq",
        "sq",
        "kernel sq(A: f32[N]) -> B: f32[N * N] { B(i) = A(i % N); }",
    );
    for n in ["N=65536", "N=65537"] {
        refused(
            &["run", sq.to_str().unwrap(), "--shape", n],
            "error: the output extent `N * N` cannot be computed for these sizes: a step overflows i32",
        );
    }
}

#[test]
fn an_update_reading_its_output_outside_it_is_a_check_error() {
    let iir = kernel_file(
        "limits-iir",
        "iir_r0",
        "kernel iir_r0(input: f32[H, W], a: f32) -> out: f32[H, W] { out(y, x) = input(y, x); \
         for (r in 0..H) out(r, x) = a * input(r, x) + (1.0 - a) * out(r - 1, x); }",
    );
    let iir = iir.to_str().unwrap();
    let message = "this index of the output `out` reaches -1";
    refused(&["check", iir], message);
    refused(
        &["run", iir, "--shape", "H=2,W=8000000", "--no-check"],
        message,
    );
}

/// Issue 14: an empty output is answered under a hand schedule as under the default. A
/// depthwise 3x3 convolution of an image 2 rows high has no output row; computing the input's
/// wrapper over the (fused) output loops was refused ("input `I` is too small").
#[test]
fn an_empty_output_runs_under_a_hand_schedule() {
    let dw = kernel_file(
        "empty-output",
        "dw",
        "kernel dw(I: f32[C, H, W], K: f32[C, 3, 3]) -> O: f32[C, H - 2, W - 2] { \
         O(c, y, x) = sum(ky in 0..3, kx in 0..3) I(c, y + ky, x + kx) * K(c, ky, kx); }",
    );
    let schedule = "O: wrap(I, Iw).parallel(c); \
                    O.update(0): fuse(y, x, yx).split(yx, o, i, 8).vectorize(i).parallel(c); \
                    Iw: compute_root().parallel(c)";
    for schedule in ["", schedule] {
        let args = [
            "run",
            dw.to_str().unwrap(),
            "--shape",
            "C=4,H=2,W=10",
            "--schedule",
            schedule,
            "--min-time",
            "0",
            "--json",
        ];
        let out = strata(&args);
        assert!(out.status.success(), "{schedule}: {}", text(&out.stderr));
        let report: serde_json::Value =
            serde_json::from_str(text(&out.stdout).trim()).expect("one JSON object");
        assert_eq!(report["correct"], true, "{schedule}: {report}");
    }
}

// ---------------------------------------------------------------------------------------------
// `--backend`: which code generator compiles (Cranelift always; LLVM with the feature `llvm`).

const SCALE: &str = "kernel scale(X: f32[N], alpha: f32) -> Y: f32[N] { Y(i) = alpha * X(i); }";

/// `strata run` of the scale kernel with `extra` arguments, as JSON; it must succeed.
fn run_scale_json(test: &str, extra: &[&str]) -> serde_json::Value {
    let scale = kernel_file(test, "scale", SCALE);
    let mut args = vec![
        scale.to_str().unwrap(),
        "--shape",
        "N=1000",
        "--min-time",
        "0",
    ];
    args.extend(["--threads", "1", "--json"]);
    args.extend(extra);
    let out = strata(&[&["run"], args.as_slice()].concat());
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    serde_json::from_str(text(&out.stdout).trim()).expect("one JSON object")
}

#[test]
fn every_compiling_command_lists_the_backends() {
    for command in ["run", "tune", "lower"] {
        let help = text(&strata(&[command, "--help"]).stdout);
        assert!(help.contains("--backend <BACKEND>"), "{command}: {help}");
        assert!(
            help.contains("[default: cranelift]") && help.contains("llvm:"),
            "{command}: {help}"
        );
    }
    let out = strata(&["run", "x.strata", "--shape", "N=1", "--backend", "gcc"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown backend is a usage error"
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("[possible values: cranelift, llvm]"),
        "{stderr}"
    );
}

#[test]
fn run_names_the_backend_it_compiled_with() {
    let cranelift = run_scale_json(
        "backend-run",
        &["--schedule", "Y: vectorize(i, 8)", "--backend", "cranelift"],
    );
    assert_eq!(cranelift["backend"], "cranelift", "{cranelift}");
    assert_eq!(cranelift["correct"], true, "{cranelift}");
    let default = run_scale_json("backend-run-default", &[]);
    assert_eq!(default["backend"], "cranelift", "{default}");
}

/// `--stage ir` prints the chosen backend's IR: Cranelift IR by default, what `--stage clif`
/// prints.
#[test]
fn lower_stage_ir_prints_the_backend_ir() {
    let scale = kernel_file("backend-ir", "scale", SCALE);
    let scale = scale.to_str().unwrap();
    let lower = |stage: &str| {
        let schedule = "Y: vectorize(i, 8)";
        let out = strata(&["lower", scale, "--stage", stage, "--schedule", schedule]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let ir = lower("ir");
    assert!(ir.contains("function ") && ir.contains("f32x4"), "{ir}");
    assert_eq!(ir, lower("clif"));
    assert!(!lower("asm").is_empty());
}

/// Asking a build without LLVM for it is an error saying how to build it, before anything is
/// read, compiled or written.
#[cfg(not(feature = "llvm"))]
#[test]
fn llvm_without_the_feature_says_how_to_get_it() {
    let scale = kernel_file("backend-missing", "scale", SCALE);
    let scale = scale.to_str().unwrap();
    let db = scratch("backend-missing").join("never.db");
    let db = db.to_str().unwrap();
    let commands: [&[&str]; 4] = [
        &["run", scale, "--shape", "N=8", "--backend", "llvm"],
        &[
            "tune",
            scale,
            "--shape",
            "N=8",
            "--backend",
            "llvm",
            "--db",
            db,
        ],
        &["lower", scale, "--stage", "ir", "--backend", "llvm"],
        &["lower", scale, "--stage", "asm", "--backend", "llvm"],
    ];
    for args in commands {
        refused(
            args,
            "error: this strata was built without the llvm backend",
        );
        let stderr = text(&strata(args).stderr);
        assert!(stderr.contains("LLVM 19"), "{stderr}");
        assert!(
            stderr.contains("cargo install --path . --features llvm"),
            "{stderr}"
        );
    }
    assert!(
        !std::path::Path::new(db).exists(),
        "tune created its database"
    );
}

#[cfg(feature = "llvm")]
#[test]
fn llvm_runs_lowers_and_tunes() {
    let wide = run_scale_json(
        "llvm-run",
        &["--schedule", "Y: vectorize(i, 32)", "--backend", "llvm"],
    );
    assert_eq!(wide["backend"], "llvm", "{wide}");
    assert_eq!(wide["correct"], true, "{wide}");
    let scale = kernel_file("llvm-lower", "scale", SCALE);
    let scale = scale.to_str().unwrap();
    let out = strata(&["lower", scale, "--stage", "ir", "--backend", "llvm"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("define "),
        "{}",
        text(&out.stdout)
    );
    refused(
        &["lower", scale, "--stage", "clif", "--backend", "llvm"],
        "the llvm backend's IR is --stage ir",
    );
    let db = scratch("llvm-tune").join("tune.db");
    let _ = std::fs::remove_file(&db);
    let db = db.to_str().unwrap();
    let quick = ["--min-time", "0.005", "--threads", "1", "--trials", "2"];
    let tune = [
        &["tune", scale, "--shape", "N=4096", "--backend", "llvm"],
        &quick[..],
    ];
    let out = strata(&[&tune.concat()[..], &["--db", db]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("backend llvm"),
        "{}",
        text(&out.stdout)
    );
    let best = ["run", scale, "--shape", "N=4096", "--schedule", "best"];
    let best = [&best[..], &["--threads", "1", "--db", db]].concat();
    let out = strata(&[&best[..], &["--backend", "llvm", "--min-time", "0"]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    refused(
        &[&best[..], &["--min-time", "0"]].concat(),
        "is not tuned with the cranelift backend; tuned only with: llvm",
    );
}

/// `lower` prints the scheduler's warnings on stderr and the loop nest on stdout: here a
/// vectorized loop around another that runs serially.
#[test]
fn lower_warns_of_a_vectorized_loop_that_runs_serially() {
    let schedule = "C: split(j, jo, ji, 4).split(jo, joo, joi, 2).vectorize(ji).vectorize(joi)";
    let out = strata(&[
        "lower",
        "examples/kernels/matmul.strata",
        "--stage",
        "loops",
        "--schedule",
        schedule,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        "warning: `C: vectorize(joi)` runs as a serial loop: a loop inside it is vectorized already\n"
    );
    assert!(
        text(&out.stdout).contains("for C.s0.joi"),
        "{}",
        text(&out.stdout)
    );
}

/// The learned model's commands on a database without measurements: each says what to run
/// first, and a shape missing a size is named.
#[test]
fn autoschedule_and_train_evaluate_explain_an_empty_database() {
    let scale = kernel_file("learned", "scale", SCALE);
    let scale = scale.to_str().unwrap();
    let db = scratch("learned").join("empty.db");
    let db = db.to_str().unwrap();
    // A database with no runs (a reader does not create one).
    drop(strata::tuning_db::Db::open(db).unwrap());
    let auto = [
        "autoschedule",
        scale,
        "--shape",
        "N=1024",
        "--threads",
        "1",
        "--db",
        db,
    ];
    refused(&auto, "0 usable measurements");
    refused(&auto, "strata tune");
    refused(
        &["autoschedule", scale, "--shape", "M=4", "--db", db],
        "leaves size `N` unbound",
    );
    let out = strata(&["train", "--evaluate", "--threads", "1", "--db", db]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("too few kernels"),
        "{}",
        text(&out.stdout)
    );
}
