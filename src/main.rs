//! The `strata` command: `check`, `lower` (any rung) and `run`.

mod compare;
mod profile;
mod run;
mod tuning;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use strata::scheduler::schedule::text::parse_schedule;
use strata::{Backend, Pipeline, Schedule, Sizes};

/// Lowering allocates and frees many small expression trees: mimalloc makes that several times
/// cheaper than the system allocator (the tuner's workers are this binary too).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
        /// The schedule, as text (`out: tile(...)...; bx: compute_at(out, xo)`) or `@FILE`.
        #[arg(long)]
        schedule: Option<String>,
        /// Sizes to fix, e.g. `H=256,W=256`; the loop nest is simplified for them.
        #[arg(long)]
        shape: Option<String>,
        /// The code generator, for the stages `ir`, `clif` and `asm`.
        #[arg(long, value_enum, default_value_t = BackendArg::Cranelift)]
        backend: BackendArg,
    },
    /// Compile a kernel for a shape, run it on your inputs (`--input`) or seeded random ones,
    /// check the answer against the reference evaluator, time it, and write the output
    /// (`--output`).
    Run {
        /// The `.strata` file holding the kernel.
        file: PathBuf,
        /// Which kernel of the file (needed when it holds several).
        #[arg(long)]
        kernel: Option<String>,
        /// Sizes, e.g. `M=512,N=512,K=512`: every size no `--input` file gives (those it gives
        /// may be repeated here and must agree).
        #[arg(long)]
        shape: Option<String>,
        /// An input from a file, `NAME=FILE` (repeat for several): `.npy` (C order, the
        /// input's element type exactly) or, for `u8`/`u16` inputs, `.png` (8-bit → u8,
        /// 16-bit → u16; shape [H, W] for a rank-2 input, which must be a one-channel image,
        /// or [H, W, C] with channels interleaved for rank 3). Sizes are taken from the files.
        /// Inputs not given are seeded random.
        #[arg(long, value_name = "NAME=FILE")]
        input: Vec<String>,
        /// Write the output (of the first, checked run) to FILE (`.npy`, or `.png` for u8/u16
        /// outputs of shape [H, W] or [H, W, C] with C up to 4); `NAME=FILE` with the output's
        /// name works too. Repeat to write several files.
        #[arg(long, value_name = "[NAME=]FILE")]
        output: Vec<String>,
        /// A scalar parameter's value, `NAME=VALUE` (repeat for several); others are seeded
        /// random.
        #[arg(long, value_name = "NAME=VALUE")]
        param: Vec<String>,
        /// The schedule, as text, `@FILE`, or `best` (the tuning database's winner).
        #[arg(long)]
        schedule: Option<String>,
        /// Threads for parallel loops (default: every core).
        #[arg(long)]
        threads: Option<usize>,
        /// Seed of the random inputs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Keep repeating for at least this many seconds (and at least 3 runs, after one untimed warm-up run; the timing the tuner uses).
        #[arg(long, default_value_t = 1.0, value_parser = seconds)]
        min_time: f64,
        /// Skip the reference check (it is slow for large shapes); no GFLOP/s then.
        #[arg(long)]
        no_check: bool,
        /// Also print each computed function's self time per run, share and calls per run,
        /// from a copy of the kernel compiled with profiling markers around each function's
        /// `produce` block (the timed kernel has none).
        #[arg(long)]
        profile: bool,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// The tuning database (for `--schedule best`; default `STRATA_DB` or `strata.db`).
        #[arg(long)]
        db: Option<PathBuf>,
        /// The code generator (`--schedule best` takes the winner tuned with it).
        #[arg(long, value_enum, default_value_t = BackendArg::Cranelift)]
        backend: BackendArg,
    },
    /// Time two schedules of one kernel side by side in the same process: both compiled,
    /// checked against the reference once, then run in interleaved rounds (A, B, B, A, ...) so
    /// machine noise hits both alike; prints each median and minimum and the ratio B/A with
    /// its spread over the rounds.
    Compare {
        /// The `.strata` file holding the kernel.
        file: PathBuf,
        /// Schedule A: text, `@FILE`, `best` (the tuning database's winner for this kernel,
        /// shape, threads and backend) or `default` (also ``).
        a: String,
        /// Schedule B, as A.
        b: String,
        /// Which kernel of the file (needed when it holds several).
        #[arg(long)]
        kernel: Option<String>,
        /// Sizes, e.g. `M=512,N=512,K=512`: every size no `--input` file gives.
        #[arg(long)]
        shape: Option<String>,
        /// An input from a file, `NAME=FILE` (repeat for several), as `run --input` takes it;
        /// both sides run on the same data. Inputs not given are seeded random.
        #[arg(long, value_name = "NAME=FILE")]
        input: Vec<String>,
        /// A scalar parameter's value, `NAME=VALUE` (repeat for several); others are seeded
        /// random.
        #[arg(long, value_name = "NAME=VALUE")]
        param: Vec<String>,
        /// Threads for parallel loops (default: every core).
        #[arg(long)]
        threads: Option<usize>,
        /// Seed of the random inputs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Time both for at least this many seconds in all (half each), split into rounds.
        #[arg(long, default_value_t = 2.0, value_parser = seconds)]
        min_time: f64,
        /// Skip the reference check.
        #[arg(long)]
        no_check: bool,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// The tuning database (for `best`; default `STRATA_DB` or `strata.db`).
        #[arg(long)]
        db: Option<PathBuf>,
        /// The code generator (`best` takes the winner tuned with it).
        #[arg(long, value_enum, default_value_t = BackendArg::Cranelift)]
        backend: BackendArg,
    },
    /// Search for a fast schedule, measuring candidates on this CPU and recording every result
    /// in the tuning database.
    Tune {
        /// The `.strata` file holding the kernel.
        file: PathBuf,
        /// Which kernel of the file (needed when it holds several).
        #[arg(long)]
        kernel: Option<String>,
        /// Every size no `--input` file gives, e.g. `M=256,N=256,K=256`.
        #[arg(long)]
        shape: Option<String>,
        /// An input from a file, `NAME=FILE` (repeat for several), as `run --input` takes it:
        /// every candidate and the reference run on it (representative data, where random
        /// inputs make the answer's check ill-conditioned). Inputs not given are seeded
        /// random. The data is not part of the database key.
        #[arg(long, value_name = "NAME=FILE")]
        input: Vec<String>,
        /// A scalar parameter's value, `NAME=VALUE` (repeat for several); others are seeded
        /// random. Every parameter's value is part of the database key.
        #[arg(long, value_name = "NAME=VALUE")]
        param: Vec<String>,
        /// Stop after this many trials (default 100 when no budget is given). A trial is one
        /// search candidate measured, failures included; the default schedule (trial 0) and
        /// the final re-measurements are not trials.
        #[arg(long)]
        trials: Option<u64>,
        /// Stop after this many seconds, counting everything: the reference answer, the
        /// default schedule, the search and the final re-measurement (the search stops early
        /// enough to leave time to confirm its best).
        #[arg(long, value_parser = seconds)]
        time: Option<f64>,
        /// How candidates are proposed.
        #[arg(long, value_enum, default_value_t = Strategy::Model)]
        strategy: Strategy,
        /// Seed of the search and of the random inputs (the same seed proposes the same
        /// candidates).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Threads for parallel loops (default: every core).
        #[arg(long)]
        threads: Option<usize>,
        /// Floats agree with the reference within this, relative to the larger of 1 and the
        /// expected value (recorded with every measurement).
        #[arg(long, default_value_t = strata::tuner::tune::FLOAT_TOLERANCE, value_parser = tolerance)]
        tolerance: f64,
        /// Time each candidate for at least this many seconds.
        #[arg(long, default_value_t = strata::tuner::tune::DEFAULT_MIN_TIME.as_secs_f64(), value_parser = seconds)]
        min_time: f64,
        /// Give up on a candidate that has not answered after this many seconds (its worker
        /// is killed and the candidate recorded as a timeout).
        #[arg(long, default_value_t = strata::tuner::tune::DEFAULT_TIMEOUT.as_secs_f64(), value_parser = seconds)]
        timeout: f64,
        /// The tuning database (default `STRATA_DB` or `strata.db`).
        #[arg(long)]
        db: Option<PathBuf>,
        /// The code generator every candidate is compiled with (its results are kept apart
        /// from other backends': the winner is per backend).
        #[arg(long, value_enum, default_value_t = BackendArg::Cranelift)]
        backend: BackendArg,
        /// Print the final summary as one JSON object (this run's numbers and the report
        /// entry of its kernel and shape) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print what the tuning database holds: per kernel and shape, the default's and the best
    /// search and confirmed (re-measured) times with their runs and trials, the winner and the
    /// rule that chose it, speedup, throughput, trials, failures and the winning schedule.
    Report {
        /// Only this kernel (by name).
        #[arg(long)]
        kernel: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Also write a self-contained HTML page: a summary of every kernel and shape, then
        /// per kernel and shape plots (best so far against trial and wall time, the
        /// distribution of candidate times), the top candidates with their throughput, share
        /// of this machine's roofline and schedule difference from the winner, failures by
        /// kind, the winning schedule and its loop nest.
        #[arg(long)]
        html: Option<PathBuf>,
        /// The tuning database (default `STRATA_DB` or `strata.db`).
        #[arg(long)]
        db: Option<PathBuf>,
    },
    /// Export or import the tuning database as JSON lines.
    Db {
        #[command(subcommand)]
        action: DbAction,
        #[arg(long, global = true)]
        db: Option<PathBuf>,
    },
    /// Measure this machine's roofline: the fma peak of each backend built in (Cranelift's
    /// f32x4 and f32; LLVM's xmm, ymm and zmm vectors) and copy bandwidth.
    Roofline {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Shorter measurements and a smaller large copy.
        #[arg(long)]
        quick: bool,
    },
}

#[derive(Subcommand)]
enum DbAction {
    /// Write every run and measurement as JSON lines (to FILE or stdout).
    Export { file: Option<PathBuf> },
    /// Read JSON lines from FILE into the database (records already present are skipped).
    Import { file: PathBuf },
}

/// How `strata tune` proposes candidates.
#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum Strategy {
    /// A learned cost model ranks a pool of candidates; the best predicted are measured.
    Model,
    /// A population evolved by mutation and crossover of the best measured.
    Evolve,
    /// Uniformly random legal schedules.
    Random,
}

impl Strategy {
    fn kind(self) -> strata::tuner::StrategyKind {
        use strata::tuner::StrategyKind;
        match self {
            Strategy::Model => StrategyKind::Model,
            Strategy::Evolve => StrategyKind::Evolve,
            Strategy::Random => StrategyKind::Random,
        }
    }
}

/// The rungs `strata lower` can print.
#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum Stage {
    /// The Pipeline: typed pure functions, before any schedule.
    High,
    /// The loop nest a schedule lowers to.
    Loops,
    /// The IR the backend compiles (Cranelift IR, or LLVM IR with `--backend llvm`).
    Ir,
    /// The Cranelift IR of the compiled kernel (`--stage ir` with Cranelift).
    Clif,
    /// The machine code of the compiled kernel.
    Asm,
}

/// The code generators `--backend` names.
#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum BackendArg {
    /// Cranelift: always built; 128-bit vectors, compiles in milliseconds.
    Cranelift,
    /// LLVM 19: vectors as wide as the CPU has (AVX2, AVX-512); needs strata built with the
    /// cargo feature `llvm`.
    Llvm,
}

impl BackendArg {
    /// The backend this names.
    fn backend(self) -> Backend {
        match self {
            BackendArg::Cranelift => Backend::Cranelift,
            BackendArg::Llvm => Backend::Llvm,
        }
    }

    /// The backend, or, when this build lacks it, the error saying how to get one that has it.
    fn built(self) -> Result<Backend, String> {
        let backend = self.backend();
        if backend.is_built() {
            return Ok(backend);
        }
        Err(format!(
            "error: this strata was built without the {backend} backend. It needs LLVM 19 \
             (Debian/Ubuntu: apt-get install llvm-19-dev libpolly-19-dev libzstd-dev); then \
             build strata with it: cargo install --path . --features {backend} (or cargo \
             build --release --features {backend})"
        ))
    }
}

/// The stack every command runs on. Lowering runs on its own large stack (see
/// `strata::scheduler::lower`), but code generation and the reference evaluator walk the
/// lowered IR and the pipeline recursively too: 256 MiB of address space (touched only as deep
/// as a kernel needs) keeps the deepest kernel lowering accepts far from the end.
const COMMAND_STACK_BYTES: usize = 256 << 20;

fn main() -> ExitCode {
    let command = std::thread::Builder::new()
        .name("strata".into())
        .stack_size(COMMAND_STACK_BYTES)
        .spawn(run_command_line);
    match command.map(|thread| thread.join()) {
        Ok(Ok(code)) => code,
        // The panic has been reported by the hook; keep Rust's exit status for it.
        Ok(Err(_panic)) => ExitCode::from(101),
        // No thread could start (a system out of resources): run here instead.
        Err(_) => run_command_line(),
    }
}

fn run_command_line() -> ExitCode {
    strata::tuner::run_worker_if_requested();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check { files } => check(&files),
        Command::Lower {
            file,
            kernel,
            stage,
            schedule,
            shape,
            backend,
        } => lower_command(
            &file,
            kernel.as_deref(),
            stage,
            schedule.as_deref(),
            shape.as_deref(),
            backend,
        ),
        Command::Run {
            file,
            kernel,
            shape,
            input,
            output,
            param,
            schedule,
            threads,
            seed,
            min_time,
            no_check,
            profile,
            json,
            db,
            backend,
        } => backend.built().and_then(|backend| {
            let mut settings = run_settings(threads, seed, min_time, !no_check, backend);
            settings.profile = profile;
            let db = db.unwrap_or_else(strata::tuner::tune::default_db_path);
            let data = run::RunData {
                inputs: input,
                outputs: output,
                params: param,
                db: Some(db.clone()),
            };
            run_command(
                &file,
                kernel.as_deref(),
                shape.as_deref(),
                &data,
                schedule.as_deref(),
                &settings,
                json,
                &db,
            )
        }),
        Command::Compare {
            file,
            a,
            b,
            kernel,
            shape,
            input,
            param,
            threads,
            seed,
            min_time,
            no_check,
            json,
            db,
            backend,
        } => backend.built().and_then(|backend| {
            let settings = run_settings(threads, seed, min_time, !no_check, backend);
            let db = db.unwrap_or_else(strata::tuner::tune::default_db_path);
            let file = KernelChoice {
                file: &file,
                kernel: kernel.as_deref(),
                shape: shape.as_deref(),
            };
            let data = run::RunData {
                inputs: input,
                params: param,
                ..Default::default()
            };
            compare_command(&file, &data, [&a, &b], &settings, json, &db)
        }),
        Command::Tune {
            file,
            kernel,
            shape,
            input,
            param,
            tolerance,
            trials,
            time,
            strategy,
            seed,
            threads,
            min_time,
            timeout,
            db,
            backend,
            json,
        } => backend.built().and_then(|backend| {
            let settings = tuning::TuneSettings {
                trials,
                time,
                strategy: strategy.kind(),
                seed,
                threads: threads.unwrap_or_else(default_threads),
                min_time,
                timeout,
                tolerance,
                backend,
                json,
            };
            let db = db.unwrap_or_else(strata::tuner::tune::default_db_path);
            let data = run::RunData {
                inputs: input,
                params: param,
                db: Some(db.clone()),
                ..Default::default()
            };
            tune_command(
                &file,
                kernel.as_deref(),
                shape.as_deref(),
                &data,
                &settings,
                &db,
            )
        }),
        Command::Report {
            kernel,
            json,
            html,
            db,
        } => {
            let db = db.unwrap_or_else(strata::tuner::tune::default_db_path);
            tuning::report(&db, kernel.as_deref(), json, html.as_deref())
        }
        Command::Db { action, db } => {
            let db = db.unwrap_or_else(strata::tuner::tune::default_db_path);
            match action {
                DbAction::Export { file } => tuning::export(&db, file.as_deref()),
                DbAction::Import { file } => tuning::import(&db, &file),
            }
        }
        Command::Roofline { json, quick } => roofline_command(json, quick),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            print_error(&message);
            ExitCode::FAILURE
        }
    }
}

/// Reads and checks every kernel of one file; the error is the rendered diagnostic.
fn load(file: &Path) -> Result<Vec<Pipeline>, String> {
    strata::parse_kernel_file(file).map_err(|e| match e {
        strata::dsl::KernelFileError::Read { .. } => format!("error: {e}"),
        // A diagnostic renders its own `error:` line, the file, the line and the caret.
        strata::dsl::KernelFileError::Check(d) => d.to_string(),
    })
}

fn check(files: &[PathBuf]) -> Result<(), String> {
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

fn lower_command(
    file: &Path,
    kernel: Option<&str>,
    stage: Stage,
    schedule: Option<&str>,
    shape: Option<&str>,
    backend: BackendArg,
) -> Result<(), String> {
    let kernels = load(file)?;
    let chosen = pick_kernel(&kernels, kernel, file)?;
    if stage == Stage::High {
        return print_out(&chosen.to_string());
    }
    let schedule = read_schedule(schedule)?;
    let fixed = match shape {
        Some(shape) => parse_shape(shape)?,
        None => Sizes::new(),
    };
    let lowered =
        strata::jit::lower_for(chosen, &schedule, &fixed).map_err(|e| format!("error: {e}"))?;
    warn_if_wasteful(&lowered);
    if stage == Stage::Loops {
        return print_out(&lowered.to_string());
    }
    let backend = backend.built()?;
    if stage == Stage::Clif && backend != Backend::Cranelift {
        return Err(format!(
            "error: --stage clif prints Cranelift IR; the {backend} backend's IR is --stage ir"
        ));
    }
    let options = strata::CodegenOptions {
        backend,
        keep_text: true,
        ..Default::default()
    };
    let compiled =
        strata::CompiledKernel::new(&lowered, &options).map_err(|e| format!("error: {e}"))?;
    let texts = match stage {
        Stage::Asm => compiled.asm(),
        _ => compiled.ir(),
    };
    print_out(&texts.join("\n"))
}

/// Prints `text` and a newline to stdout; every command prints through here. A reader that
/// stops early (`strata lower ... | head`, `strata run ... | grep -m1`) closes the pipe: that
/// ends the output quietly instead of failing (`println!` would panic).
pub(crate) fn print_out(text: &str) -> Result<(), String> {
    use std::io::Write;
    match writeln!(std::io::stdout().lock(), "{text}") {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("error: {e}")),
        _ => Ok(()),
    }
}

/// Warns on stderr about each producer the schedule computes again in every iteration of a
/// consumer loop its values do not depend on, and each vectorized loop that runs serially
/// (`scheduler::warnings`).
fn warn_if_wasteful(kernel: &strata::LoweredKernel) {
    use strata::scheduler::warnings;
    for w in warnings::recomputed(kernel) {
        print_error(&format!("warning: {w}"));
    }
    for w in warnings::serial_vectors(kernel) {
        print_error(&format!("warning: {w}"));
    }
}

/// Prints `message` and a newline to stderr. If stderr is closed there is nowhere left to
/// report anything, so a failed write is ignored (`eprintln!` would panic).
fn print_error(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{message}");
}

fn tune_command(
    file: &Path,
    kernel: Option<&str>,
    shape: Option<&str>,
    data: &run::RunData,
    settings: &tuning::TuneSettings,
    db: &Path,
) -> Result<(), String> {
    let source = std::fs::read_to_string(file)
        .map_err(|e| format!("error: cannot read {}: {e}", file.display()))?;
    let kernels =
        strata::parse_kernels(&source, &file.display().to_string()).map_err(|d| d.to_string())?;
    let chosen = pick_kernel(&kernels, kernel, file)?;
    let shape = match shape {
        Some(shape) => parse_shape(shape)?,
        None => Sizes::new(),
    };
    // The files are read (and the sizes inferred from them) as `run` reads them; the tuner
    // draws the other inputs itself, from the same seed.
    let (sizes, mut args, _) = run::prepare(chosen, &shape, data, settings.seed)?;
    let given = |text: &String| {
        text.split_once('=')
            .map(|(name, _)| name.trim().to_string())
    };
    let inputs = (data.inputs.iter().filter_map(given))
        .filter_map(|name| Some((name.clone(), args.buffers.remove(&name)?)))
        .collect();
    let params = (data.params.iter())
        .map(|text| run::parse_param(chosen, text))
        .collect::<Result<Vec<_>, _>>()?;
    tuning::tune(db, chosen, &source, &sizes, (params, inputs), settings)
}

/// `run`'s and `compare`'s settings from their shared flags (profiling off).
fn run_settings(
    threads: Option<usize>,
    seed: u64,
    min_time: f64,
    check: bool,
    backend: Backend,
) -> run::RunSettings {
    run::RunSettings {
        threads: threads.unwrap_or_else(default_threads),
        seed,
        min_time: std::time::Duration::from_secs_f64(min_time),
        check,
        backend,
        profile: false,
    }
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[allow(clippy::too_many_arguments)]
fn run_command(
    file: &Path,
    kernel: Option<&str>,
    shape: Option<&str>,
    data: &run::RunData,
    schedule: Option<&str>,
    settings: &run::RunSettings,
    json: bool,
    db: &Path,
) -> Result<(), String> {
    let kernels = load(file)?;
    let chosen = pick_kernel(&kernels, kernel, file)?;
    let shape = match shape {
        Some(shape) => parse_shape(shape)?,
        None => Sizes::new(),
    };
    let (sizes, args, outputs) = run::prepare(chosen, &shape, data, settings.seed)?;
    let schedule = resolve_schedule(schedule, db, chosen, &sizes, &args, settings)?;
    if let Ok(lowered) = strata::jit::lower_for(chosen, &schedule, &sizes) {
        warn_if_wasteful(&lowered);
    }
    let (mut m, output) = run::measure(chosen, &schedule, &sizes, &args, settings)?;
    if m.float_ops.is_none() {
        // Unchecked: the reference did not count the operations; an earlier run did.
        m.float_ops = tuning::recorded_float_ops(db, chosen, &sizes, &args);
    }
    // Written even when the answer is wrong (the error below says so), for inspection.
    run::write_outputs(chosen, &output, &outputs)?;
    let profile = match settings.profile {
        true => Some(profile::profile(
            chosen, &schedule, &sizes, &args, &output, settings,
        )?),
        false => None,
    };
    print_out(&if json {
        let mut value = json_text(chosen, &sizes, &schedule, settings, &m, &outputs);
        if let Some(p) = &profile {
            value["profile"] = profile::json(p);
        }
        value.to_string()
    } else {
        let mut lines = vec![report_text(chosen, &sizes, settings, &m)];
        lines.extend(profile.map(|p| profile::table(&p, settings.threads)));
        for path in &outputs {
            lines.push(format!(
                "output: {} {}{:?} written to {}",
                chosen.output.name,
                output.dtype(),
                output.shape(),
                path.display()
            ));
        }
        lines.join("\n")
    })?;
    match m.correct {
        Some(false) => Err(format!(
            "error: the answer is wrong: {}",
            m.mismatch.unwrap_or_default()
        )),
        _ => Ok(()),
    }
}

/// A schedule as `--schedule` gives it: `best` is the tuning database's winner for the
/// kernel, sizes, scalar parameters' values, threads and backend; `default`, text, `@FILE` or none as `read_schedule`.
fn resolve_schedule(
    arg: Option<&str>,
    db: &Path,
    kernel: &Pipeline,
    sizes: &Sizes,
    args: &strata::Args,
    settings: &run::RunSettings,
) -> Result<Schedule, String> {
    match arg {
        Some("best") => {
            let target = (settings.threads, settings.backend);
            let text = tuning::best_schedule(db, kernel, sizes, &args.scalars, target)?;
            parse_schedule(&text).map_err(|d| d.to_string())
        }
        other => read_schedule(other),
    }
}

/// The kernel a command names: its file, `--kernel` and `--shape`.
struct KernelChoice<'a> {
    file: &'a Path,
    kernel: Option<&'a str>,
    shape: Option<&'a str>,
}

/// `strata compare`: both schedules resolved and compiled (an error names the side), then
/// timed interleaved (`compare.rs`).
fn compare_command(
    choice: &KernelChoice,
    data: &run::RunData,
    schedules: [&str; 2],
    settings: &run::RunSettings,
    json: bool,
    db: &Path,
) -> Result<(), String> {
    let kernels = load(choice.file)?;
    let chosen = pick_kernel(&kernels, choice.kernel, choice.file)?;
    let shape = match choice.shape {
        Some(shape) => parse_shape(shape)?,
        None => Sizes::new(),
    };
    let (sizes, args, _) = run::prepare(chosen, &shape, data, settings.seed)?;
    let side = |label: &'static str, text: &str| {
        let schedule = resolve_schedule(Some(text), db, chosen, &sizes, &args, settings)
            .map_err(|e| compare::on_side(label, &e))?;
        compare::side(label, chosen, schedule, &sizes, &args, settings)
    };
    let sides = [side("A", schedules[0])?, side("B", schedules[1])?];
    let c = compare::compare(chosen, &args, sides, settings)?;
    print_out(&if json {
        compare::json_text(chosen, &sizes, settings, &c)
    } else {
        compare::report_text(chosen, &sizes, settings, &c)
    })?;
    match compare::wrong_answers(&c) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// `strata run --json`'s one line.
fn json_text(
    kernel: &Pipeline,
    sizes: &Sizes,
    schedule: &Schedule,
    settings: &run::RunSettings,
    m: &run::Measurement,
    outputs: &[PathBuf],
) -> serde_json::Value {
    let outputs: Vec<String> = outputs.iter().map(|p| p.display().to_string()).collect();
    serde_json::json!({
        "kernel": kernel.name,
        "shape": sizes,
        "threads": settings.threads,
        "backend": settings.backend.name(),
        "schedule": schedule.to_string(),
        "runs": m.runs,
        "median_s": m.median.as_secs_f64(),
        "min_s": m.min.as_secs_f64(),
        "max_s": m.max.as_secs_f64(),
        "gflops": m.gflops(),
        "gbps": m.gbps(),
        "correct": m.correct,
        "outputs": outputs,
    })
}

/// `strata run`'s report.
fn report_text(
    kernel: &Pipeline,
    sizes: &Sizes,
    settings: &run::RunSettings,
    m: &run::Measurement,
) -> String {
    let shape: Vec<String> = sizes.iter().map(|(n, v)| format!("{n}={v}")).collect();
    let answer = match m.correct {
        Some(true) => format!(
            "answer: matches the reference ({})",
            run::tolerance_text(kernel)
        ),
        Some(false) => format!("answer: WRONG: {}", m.mismatch.as_deref().unwrap_or("")),
        None => "answer: not checked".to_string(),
    };
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let time = format!(
        "time: median {:.4} ms (min {:.4}, max {:.4}; {} runs)",
        ms(m.median),
        ms(m.min),
        ms(m.max),
        m.runs
    );
    let throughput = match m.gflops() {
        Some(g) => format!("throughput: {g:.2} GFLOP/s, {:.2} GB/s", m.gbps()),
        None if m.correct.is_none() => format!(
            "throughput: {:.2} GB/s (GFLOP/s needs the reference's operation count: run \
             without --no-check, or tune this kernel and shape first: the database keeps it)",
            m.gbps()
        ),
        None => format!("throughput: {:.2} GB/s", m.gbps()),
    };
    let title = format!(
        "{} {} threads {} backend {}",
        kernel.name,
        shape.join(","),
        settings.threads,
        settings.backend
    );
    [title, answer, time, throughput].join("\n")
}

/// The longest duration a command-line argument may give: about 115 days. Past it a deadline
/// (`Instant::now() + d`) could overflow; no measurement or budget needs more.
const MAX_SECONDS: f64 = 1e7;

/// A duration argument in seconds (clap's value parser for `--time`, `--min-time`,
/// `--timeout`): a finite number from 0 to `MAX_SECONDS`, so converting it to a `Duration`
/// cannot fail later.
fn seconds(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if (0.0..=MAX_SECONDS).contains(&value) {
        Ok(value)
    } else {
        Err(format!(
            "`{text}` is out of range: give a number of seconds from 0 to {MAX_SECONDS}"
        ))
    }
}

/// A relative float tolerance: a number from 0 to 1.
fn tolerance(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if (0.0..=1.0).contains(&value) => Ok(value),
        _ => Err(format!("`{text}` is not a relative tolerance from 0 to 1")),
    }
}

/// A schedule given inline or as `@FILE`; none, `default` or an empty text means the default
/// schedule.
fn read_schedule(arg: Option<&str>) -> Result<Schedule, String> {
    let Some(arg) = arg.filter(|a| *a != "default") else {
        return Ok(Schedule::new());
    };
    let text = match arg.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("error: cannot read schedule {path}: {e}"))?,
        None => arg.to_string(),
    };
    parse_schedule(&text).map_err(|d| d.to_string())
}

/// `M=512,N=512` as `(name, value)` pairs; a name given twice is an error (which value would
/// be meant is unclear).
fn parse_shape(text: &str) -> Result<Sizes, String> {
    let mut sizes = Sizes::new();
    for part in text.split(',').filter(|part| !part.trim().is_empty()) {
        let (name, value) = parse_size(part)?;
        if sizes.insert(name.clone(), value).is_some() {
            return Err(format!(
                "error: --shape gives the size `{name}` more than once"
            ));
        }
    }
    Ok(sizes)
}

/// One `NAME=VALUE` of `--shape`.
fn parse_size(part: &str) -> Result<(String, i64), String> {
    let (name, value) = part.split_once('=').ok_or_else(|| {
        format!("error: `{part}` in --shape is not NAME=VALUE (e.g. --shape M=512,N=512)")
    })?;
    let value = value.trim().parse::<i64>().map_err(|_| {
        format!(
            "error: the size `{}` in --shape is not an integer: `{value}`",
            name.trim()
        )
    })?;
    Ok((name.trim().to_string(), value))
}

/// The kernel named `name`, or the only kernel of the file.
fn pick_kernel<'a>(
    kernels: &'a [Pipeline],
    name: Option<&str>,
    file: &Path,
) -> Result<&'a Pipeline, String> {
    if kernels.is_empty() {
        return Err(format!("error: {} holds no kernel", file.display()));
    }
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

/// `strata roofline --json`'s `llvm`: null without LLVM built in, else its CPU and a peak per
/// register width, or the error that stopped the probe.
fn llvm_json(llvm: &Option<Result<strata::jit::roofline::LlvmPeaks, String>>) -> serde_json::Value {
    match llvm {
        None => serde_json::Value::Null,
        Some(Err(why)) => serde_json::json!({ "error": why }),
        Some(Ok(p)) => {
            let peaks: Vec<serde_json::Value> = p
                .peaks
                .iter()
                .map(|w| {
                    serde_json::json!({
                        "register": w.register,
                        "lanes": w.lanes,
                        "fma_gflops": w.gflops,
                    })
                })
                .collect();
            serde_json::json!({ "cpu": p.cpu, "native_fma": p.native_fma, "peaks": peaks })
        }
    }
}

/// `strata roofline`'s LLVM lines: a peak per register width, or why there is none.
fn llvm_lines(
    llvm: &Option<Result<strata::jit::roofline::LlvmPeaks, String>>,
    chains: usize,
) -> Vec<String> {
    match llvm {
        None => vec!["llvm: not built in (build with --features llvm to measure it)".into()],
        Some(Err(why)) => vec![format!("llvm: not measured: {why}")],
        Some(Ok(p)) => {
            let op = if p.native_fma { "fma" } else { "fmul+fadd" };
            p.peaks
                .iter()
                .map(|w| {
                    format!(
                        "llvm {} <{} x float> {op} peak ({chains} chains, 1 thread, cpu {}): {:.2} GFLOP/s",
                        w.register, w.lanes, p.cpu, w.gflops
                    )
                })
                .collect()
        }
    }
}

fn roofline_command(json: bool, quick: bool) -> Result<(), String> {
    let r = strata::jit::roofline::measure(quick);
    if json {
        let value = serde_json::json!({
            "quick": r.quick,
            "repetitions": r.repetitions,
            "min_time_s": r.min_time_s,
            "native_fma": r.native_fma,
            "fma_chains": r.fma_chains,
            "compute_threads": r.compute_threads,
            "f32x4_fma_gflops": r.f32x4_fma_gflops,
            "f32_fma_gflops": r.f32_fma_gflops,
            "all_threads": r.all_threads,
            "copy_method": "Rust copy_from_slice, one chunk per thread",
            "workload_copy_bytes": r.workload_copy_bytes,
            "copy_workload_1thread_gbps": r.copy_workload_1thread_gbps,
            "copy_workload_all_threads_gbps": r.copy_workload_all_threads_gbps,
            "large_copy_bytes": r.large_copy_bytes,
            "copy_large_1thread_gbps": r.copy_large_1thread_gbps,
            "copy_large_all_threads_gbps": r.copy_large_all_threads_gbps,
            "large_copy_skipped": r.large_copy_skipped,
            "backends": Backend::built().iter().map(|b| b.name()).collect::<Vec<_>>(),
            "llvm": llvm_json(&r.llvm),
        });
        return print_out(&format!("{value:#}"));
    }
    let op = if r.native_fma {
        "fma"
    } else {
        "fmul+fadd (no native fma)"
    };
    let mut lines = vec![format!(
        "each figure: best of {} repetitions of >= {} s; copy = Rust copy_from_slice \
         (one chunk per thread), GB/s counts bytes read + written, working set = source + destination",
        r.repetitions, r.min_time_s
    )];
    let chains = r.fma_chains;
    lines.push(format!(
        "cranelift f32x4 {op} peak ({chains} chains, 1 thread): {:.2} GFLOP/s",
        r.f32x4_fma_gflops
    ));
    lines.push(format!(
        "cranelift f32 {op} peak ({chains} chains, 1 thread): {:.2} GFLOP/s",
        r.f32_fma_gflops
    ));
    lines.extend(llvm_lines(&r.llvm, chains));
    let mib = |b: usize| b >> 20;
    let n = r.all_threads;
    let ws = mib(r.workload_copy_bytes);
    lines.push(format!(
        "copy {ws} MiB, 1 thread: {:.2} GB/s",
        r.copy_workload_1thread_gbps
    ));
    lines.push(format!(
        "copy {ws} MiB, {n} threads: {:.2} GB/s",
        r.copy_workload_all_threads_gbps
    ));
    let large = mib(r.large_copy_bytes);
    match (r.copy_large_1thread_gbps, r.copy_large_all_threads_gbps) {
        (Some(one), Some(all)) => {
            lines.push(format!("copy {large} MiB, 1 thread: {one:.2} GB/s"));
            lines.push(format!("copy {large} MiB, {n} threads: {all:.2} GB/s"));
        }
        _ => lines.push(format!(
            "copy {large} MiB: skipped ({})",
            r.large_copy_skipped.as_deref().unwrap_or("unknown reason")
        )),
    }
    print_out(&lines.join("\n"))
}
