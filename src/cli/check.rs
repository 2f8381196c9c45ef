//! `strata check`: parse and type-check kernel files; print each kernel's signature and
//! content hash.

use clap::Args;
use std::path::PathBuf;

use super::common::{load, print_error, print_out};

#[derive(Args)]
pub(crate) struct CheckArgs {
    /// `.strata` files to check.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

/// Checks every file, reporting each failure and going on; fails if any file did.
pub(crate) fn command(args: CheckArgs) -> Result<(), String> {
    let files = &args.files;
    let mut failures = 0;
    for file in files {
        match load(file) {
            Ok(kernels) => {
                let lines: Vec<String> = kernels
                    .iter()
                    .map(|k| format!("{}    # {}", k.signature(), k.hash().short()))
                    .collect();
                print_out(&lines.join("\n"))?;
            }
            Err(message) => {
                print_error(&format!("{message}\n"));
                failures += 1;
            }
        }
    }
    match failures {
        0 => Ok(()),
        n => Err(format!("{n} of {} files failed to check", files.len())),
    }
}
