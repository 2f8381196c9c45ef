//! The reproductions of crashes and wrong answers from the command line: each is now a
//! clear error (exit status 1, a message naming what is wrong), never a signal or `WRONG`.

use std::path::PathBuf;
use std::process::{Command, Output};

fn strata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the strata binary runs")
}

/// A kernel file in a fresh temporary folder.
fn kernel_file(name: &str, source: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("strata-cli-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.strata"));
    std::fs::write(&path, source).unwrap();
    path
}

/// Runs the command and expects a refusal: exit status 1 and `message` on stderr.
fn refused(args: &[&str], message: &str) {
    let out = strata(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{args:?}\n{stderr}\n{stdout}");
    assert!(stderr.contains(message), "{args:?}\n{stderr}");
    assert!(!stdout.contains("WRONG"), "{stdout}");
}

#[test]
fn element_counts_that_wrap_are_refused() {
    let pick = kernel_file(
        "pick",
        "kernel pick(A: u8[X,Y,Z]) -> B: u8[X] { B(i) = A(i, Y-1, Z-1); }",
    );
    let pick = pick.to_str().unwrap();
    let shape = "X=4194304,Y=2097152,Z=2097152";
    let message = "error: input `A` of shape [4194304, 2097152, 2097152] is too large";
    refused(&["run", pick, "--shape", shape], message);
    refused(&["run", pick, "--shape", shape, "--no-check"], message);
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
