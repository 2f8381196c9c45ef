//! Helpers shared by the tests that run the `strata` command (`mod common;` in each).

use std::process::{Command, Output};

/// Runs the `strata` binary with `args` in the crate's root (where `examples/` is) and waits.
pub fn strata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the strata binary runs")
}

/// Captured stdout or stderr as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
