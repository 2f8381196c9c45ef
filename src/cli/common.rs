//! What several commands share: the flags' value types and parsers, reading kernel files and
//! schedules, choosing a kernel, and printing to stdout and stderr without panicking.

use clap::ValueEnum;
use std::path::{Path, PathBuf};
use strata::scheduler::schedule::text::parse_schedule;
use strata::{Backend, Pipeline, Schedule, Sizes};

use crate::run;

/// The code generators `--backend` names.
#[derive(Clone, Copy, PartialEq, ValueEnum)]
pub(crate) enum BackendArg {
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
    pub(crate) fn built(self) -> Result<Backend, String> {
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

/// The longest duration a command-line argument may give: about 115 days. Past it a deadline
/// (`Instant::now() + d`) could overflow; no measurement or budget needs more.
const MAX_SECONDS: f64 = 1e7;

/// A duration argument in seconds (clap's value parser for `--time`, `--min-time`,
/// `--timeout`): a finite number from 0 to `MAX_SECONDS`, so converting it to a `Duration`
/// cannot fail later.
pub(crate) fn seconds(text: &str) -> Result<f64, String> {
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
pub(crate) fn tolerance(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if (0.0..=1.0).contains(&value) => Ok(value),
        _ => Err(format!("`{text}` is not a relative tolerance from 0 to 1")),
    }
}

/// The threads a command uses when `--threads` is not given: every core.
pub(crate) fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `run`'s and `compare`'s settings from their shared flags (profiling off).
pub(crate) fn run_settings(
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

/// Reads and checks every kernel of one file; the error is the rendered diagnostic.
pub(crate) fn load(file: &Path) -> Result<Vec<Pipeline>, String> {
    strata::parse_kernel_file(file).map_err(|e| match e {
        strata::dsl::KernelFileError::Read { .. } => format!("error: {e}"),
        // A diagnostic renders its own `error:` line, the file, the line and the caret.
        strata::dsl::KernelFileError::Check(d) => d.to_string(),
    })
}

/// The kernel named `name`, or the only kernel of the file.
pub(crate) fn pick_kernel<'a>(
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

/// `--shape`'s sizes, none when it is not given.
pub(crate) fn shape_or_none(shape: Option<&str>) -> Result<Sizes, String> {
    match shape {
        Some(shape) => parse_shape(shape),
        None => Ok(Sizes::new()),
    }
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

/// A schedule given inline or as `@FILE`; none, `default` or an empty text means the default
/// schedule.
pub(crate) fn read_schedule(arg: Option<&str>) -> Result<Schedule, String> {
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

/// A schedule as `--schedule` gives it: `best` is the tuning database's winner for the
/// kernel, sizes, scalar parameters' values, threads and backend; `default`, text, `@FILE` or
/// none as `read_schedule`.
pub(crate) fn resolve_schedule(
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
            crate::tuning::best_schedule(db, kernel, sizes, &args.scalars, target)
        }
        other => read_schedule(other),
    }
}

/// Warns on stderr about each producer the schedule computes again in every iteration of a
/// consumer loop its values do not depend on, and each vectorized loop that runs serially
/// (`scheduler::warnings`).
pub(crate) fn warn_if_wasteful(kernel: &strata::LoweredKernel) {
    use strata::scheduler::warnings;
    for w in warnings::recomputed(kernel) {
        print_error(&format!("warning: {w}"));
    }
    for w in warnings::serial_vectors(kernel) {
        print_error(&format!("warning: {w}"));
    }
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

/// Prints `message` and a newline to stderr. If stderr is closed there is nowhere left to
/// report anything, so a failed write is ignored (`eprintln!` would panic).
pub(crate) fn print_error(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{message}");
}

/// The flags of the commands that time schedules of one kernel in one process (`compare`,
/// `explain`): which kernel, on what data, how, and where `best` comes from.
#[derive(clap::Args)]
pub(crate) struct TimedKernelArgs {
    /// Which kernel of the file (needed when it holds several).
    #[arg(long)]
    kernel: Option<String>,
    /// Sizes, e.g. `M=512,N=512,K=512`: every size no `--input` file gives.
    #[arg(long)]
    shape: Option<String>,
    /// An input from a file, `NAME=FILE` (repeat for several), as `run --input` takes it;
    /// every schedule runs on the same data. Inputs not given are seeded random.
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
    /// Skip the reference check.
    #[arg(long)]
    no_check: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// The tuning database (for `best`; default `STRATA_DB` or `strata.db`).
    #[arg(long)]
    db: Option<PathBuf>,
    /// The code generator (`best` takes the winner tuned with it).
    #[arg(long, value_enum, default_value_t = BackendArg::Cranelift)]
    backend: BackendArg,
}

/// What [`TimedKernelArgs::prepare`] makes ready: the settings, the kernel, its sizes and
/// inputs, and the database `best` reads.
pub(crate) struct TimedKernel {
    pub(crate) settings: run::RunSettings,
    pub(crate) kernel: Pipeline,
    pub(crate) sizes: Sizes,
    pub(crate) inputs: strata::Args,
    db: PathBuf,
}

impl TimedKernelArgs {
    /// Loads `file`, picks the kernel, binds the sizes and makes the inputs; the settings
    /// time for `min_time` seconds.
    pub(crate) fn prepare(self, file: &Path, min_time: f64) -> Result<TimedKernel, String> {
        let backend = self.backend.built()?;
        let settings = run_settings(self.threads, self.seed, min_time, !self.no_check, backend);
        let db = self.db.unwrap_or_else(strata::tuner::tune::default_db_path);
        let data = run::RunData {
            inputs: self.input,
            params: self.param,
            ..Default::default()
        };
        let kernels = load(file)?;
        let kernel = pick_kernel(&kernels, self.kernel.as_deref(), file)?.clone();
        let shape = shape_or_none(self.shape.as_deref())?;
        let (sizes, inputs, _) = run::prepare(&kernel, &shape, &data, settings.seed)?;
        Ok(TimedKernel {
            settings,
            kernel,
            sizes,
            inputs,
            db,
        })
    }
}

impl TimedKernel {
    /// A schedule argument resolved: text, `@FILE`, `default`, or `best` from the database.
    pub(crate) fn schedule(&self, text: &str) -> Result<Schedule, String> {
        let t = self;
        resolve_schedule(
            Some(text),
            &t.db,
            &t.kernel,
            &t.sizes,
            &t.inputs,
            &t.settings,
        )
    }
}
