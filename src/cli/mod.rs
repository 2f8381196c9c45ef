//! The `strata` command line: one file per command, each with its clap `Args` struct and a
//! `command(args)` that runs it; `common.rs` holds what several commands share. The work
//! behind the commands is in the modules beside this one (`run`, `compare`, `tuning`,
//! `profile`) and in the library.

mod autoschedule;
mod check;
mod common;
mod compare;
mod db;
mod explain;
mod lower;
mod report;
mod roofline;
mod run;
mod train;
mod tune;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

pub(crate) use common::print_out;

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
    Check(check::CheckArgs),
    /// Print a kernel at one rung of the compiler.
    Lower(lower::LowerArgs),
    /// Compile a kernel for a shape, run it on your inputs (`--input`) or seeded random ones,
    /// check the answer against the reference evaluator, time it, and write the output
    /// (`--output`).
    Run(run::RunArgs),
    /// Time two schedules of one kernel side by side in the same process: both compiled,
    /// checked against the reference once, then run in interleaved rounds (A, B, B, A, ...) so
    /// machine noise hits both alike; prints each median and minimum and the ratio B/A with
    /// its spread over the rounds.
    Compare(compare::CompareArgs),
    /// Explain a schedule (the database's winner by default): each directive left out in
    /// turn, with its share of the speedup over the default, and the add-one path from the
    /// default (the directive that helps most first), every variant checked against the
    /// reference and timed in interleaved rounds in one process.
    Explain(explain::ExplainArgs),
    /// A schedule from the learned cost model alone, nothing measured: the model, trained on
    /// the tuning database's measurements on this machine (any kernel), compares a few
    /// hundred candidates by their lowered loop nests and prints the one it predicts fastest.
    Autoschedule(autoschedule::AutoscheduleArgs),
    /// Search for a fast schedule, measuring candidates on this CPU and recording every result
    /// in the tuning database.
    Tune(tune::TuneArgs),
    /// Fill the tuning database with measurements for the learned cost model: random
    /// schedules of kernels (the bundled examples by default) at random shapes.
    Train(train::TrainArgs),
    /// Print what the tuning database holds: per kernel and shape, the default's and the best
    /// search and confirmed (re-measured) times with their runs and trials, the winner and the
    /// rule that chose it, speedup, throughput, trials, failures and the winning schedule.
    Report(report::ReportArgs),
    /// Export or import the tuning database as JSON lines.
    Db(db::DbArgs),
    /// Measure this machine's roofline: the fma peak of each backend built in (Cranelift's
    /// f32x4 and f32; LLVM's xmm, ymm and zmm vectors) and copy bandwidth.
    Roofline(roofline::RooflineArgs),
}

/// Parses the command line and runs its command (or, in a tuner's worker process, the
/// worker); an error is printed to stderr and becomes the exit status.
pub(crate) fn run_command_line() -> ExitCode {
    strata::tuner::run_worker_if_requested();
    let result = match Cli::parse().command {
        Command::Check(args) => check::command(args),
        Command::Lower(args) => lower::command(args),
        Command::Run(args) => run::command(args),
        Command::Compare(args) => compare::command(args),
        Command::Explain(args) => explain::command(args),
        Command::Autoschedule(args) => autoschedule::command(args),
        Command::Tune(args) => tune::command(args),
        Command::Train(args) => train::command(args),
        Command::Report(args) => report::command(args),
        Command::Db(args) => db::command(args),
        Command::Roofline(args) => roofline::command(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            common::print_error(&message);
            ExitCode::FAILURE
        }
    }
}
