//! The `strata` command: `strata check FILE...`, `strata lower FILE --stage high`.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "strata",
    version,
    about = "A compute-and-schedule compiler for array kernels"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and type-check kernel files; print each kernel's signature and content hash.
    Check {
        /// `.strata` files to check.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Print a kernel at one rung of the compiler.
    Lower {
        /// The `.strata` file holding the kernel.
        file: PathBuf,
        /// Which kernel of the file (needed when it holds several).
        #[arg(long)]
        kernel: Option<String>,
        /// The rung to print.
        #[arg(long, value_enum)]
        stage: Stage,
    },
}

/// The rungs `strata lower` can print. Later rungs (loops, clif, asm) arrive with their crates.
#[derive(Clone, Copy, ValueEnum)]
enum Stage {
    /// The Pipeline: typed pure functions, before any schedule.
    High,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check { files } => check(&files),
        Command::Lower {
            file,
            kernel,
            stage: Stage::High,
        } => lower_high(&file, kernel.as_deref()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

/// Reads and checks every kernel of one file; the error is the rendered diagnostic.
fn load(file: &PathBuf) -> Result<Vec<strata::Pipeline>, String> {
    let source = std::fs::read_to_string(file)
        .map_err(|e| format!("error: cannot read {}: {e}", file.display()))?;
    strata::parse_kernels(&source, &file.display().to_string()).map_err(|d| d.to_string())
}

fn check(files: &[PathBuf]) -> Result<(), String> {
    let mut failures = 0;
    for file in files {
        match load(file) {
            Ok(kernels) => {
                for kernel in kernels {
                    println!("{}    # {}", kernel.signature(), kernel.hash().short());
                }
            }
            Err(message) => {
                eprintln!("{message}\n");
                failures += 1;
            }
        }
    }
    match failures {
        0 => Ok(()),
        n => Err(format!("{n} of {} files failed to check", files.len())),
    }
}

fn lower_high(file: &PathBuf, kernel: Option<&str>) -> Result<(), String> {
    let kernels = load(file)?;
    let chosen = pick_kernel(&kernels, kernel, file)?;
    println!("{chosen}");
    Ok(())
}

/// The kernel named `name`, or the only kernel of the file.
fn pick_kernel<'a>(
    kernels: &'a [strata::Pipeline],
    name: Option<&str>,
    file: &PathBuf,
) -> Result<&'a strata::Pipeline, String> {
    let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
    match name {
        Some(name) => kernels.iter().find(|k| k.name == name).ok_or_else(|| {
            format!(
                "error: no kernel `{name}` in {} (it has: {})",
                file.display(),
                names.join(", ")
            )
        }),
        None if kernels.len() == 1 => Ok(&kernels[0]),
        None => Err(format!(
            "error: {} holds {} kernels ({}); choose one with --kernel",
            file.display(),
            kernels.len(),
            names.join(", ")
        )),
    }
}
