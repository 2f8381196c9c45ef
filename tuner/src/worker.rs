//! Measurement in a child process. Untrusted work (compiling and running a candidate) happens in
//! a worker: a process that reads one JSON request per line on stdin and answers one JSON line
//! on stdout. A candidate that crashes the worker, hangs it or gives a wrong answer becomes a
//! recorded outcome, and the tuner starts a new worker and goes on.
//!
//! Any program can be a worker: it calls `run_worker_if_requested()` first thing in `main`, which
//! takes over when started with the argument `--strata-worker` and the environment variable
//! `STRATA_WORKER` set, as `Worker::start` does (the `strata` binary calls it). The backend it
//! compiles with follows: `--strata-worker --backend llvm` (Cranelift when absent).
//!
//! For tests, `STRATA_WORKER_FAULT=kind:text[,kind:text]` makes the worker misbehave on
//! candidates whose schedule text contains `text`: `crash` aborts the process, `hang` loops
//! forever, `hang_run` loops forever once it has compiled the candidate, `wrong` corrupts the
//! answer, `unstable` reports a re-measurement's times a million times slower (as a machine
//! busy during the re-measurement would, past any doubt).

use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};
use strata_dsl::random::{agree_within, random_args, Tolerance};
use strata_dsl::{Args, Buffer, Dtype, Pipeline, Sizes, Value};

/// The line a worker writes when it has compiled a candidate, before running it: from then on
/// the candidate is given only its run's time limit (see `Worker::measure`).
pub const COMPILED_MARK: &str = "compiled";

/// The environment variable that turns a program into a worker, with `WORKER_ARG`.
pub const WORKER_ENV: &str = "STRATA_WORKER";
/// The first argument a worker is started with. Both it and `WORKER_ENV` are needed: a user
/// who leaves `STRATA_WORKER` in the environment still gets the command they typed.
pub const WORKER_ARG: &str = "--strata-worker";
/// The argument after `WORKER_ARG` naming the backend the worker compiles with (its value
/// follows it).
pub const BACKEND_ARG: &str = "--backend";
/// The test-only fault switch.
pub const FAULT_ENV: &str = "STRATA_WORKER_FAULT";
/// How often a waiting tuner looks at its interrupt flag.
const INTERRUPT_POLL: Duration = Duration::from_millis(50);

/// What a worker needs once: the kernel, the shape, the inputs' seed, the expected answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Setup {
    /// The kernel's source text (the worker parses it again).
    pub kernel_source: String,
    /// Which kernel of the source.
    pub kernel_name: String,
    /// The shape every candidate runs at.
    pub sizes: Sizes,
    /// Seed of the random inputs (the reference answer was computed from the same).
    pub seed: u64,
    /// Every scalar parameter's value as plain text ([`Value::plain_text`]), by name: the
    /// values the user gave and the seeded random ones, so the worker runs with exactly the
    /// values the reference answer was computed with.
    #[serde(default)]
    pub params: Vec<(String, String)>,
    /// Buffer inputs given as data (`tune --input`), each in a file the tuner wrote; they
    /// replace the seeded random inputs of the same names.
    #[serde(default)]
    pub inputs: Vec<InputData>,
    /// Threads of parallel loops.
    pub threads: usize,
    /// Where the reference output is: `<path>.bin` (bytes) and its dtype and shape here.
    pub expected_path: PathBuf,
    /// The element type's name (`f32`, ...).
    pub expected_dtype: String,
    /// The reference output's shape.
    pub expected_shape: Vec<usize>,
    /// Relative tolerance of float comparisons with the reference.
    pub tolerance: f64,
    /// Time repetitions for at least this long.
    pub min_time_s: f64,
}

/// A buffer input's elements in a file: raw bytes of `dtype`, of `shape`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InputData {
    /// The kernel input's name.
    pub name: String,
    /// The file of its bytes.
    pub path: PathBuf,
    /// The element type's name (`f32`, ...).
    pub dtype: String,
    /// Its shape.
    pub shape: Vec<usize>,
}

impl InputData {
    /// The buffer the file holds.
    fn read(&self) -> Result<Buffer, String> {
        let bytes = read_data(&self.path, &format!("input `{}`", self.name))?;
        let dtype = Dtype::from_name(&self.dtype).ok_or("bad input dtype")?;
        Buffer::from_bytes(dtype, &self.shape, &bytes)
            .map_err(|e| format!("input `{}`: {e}", self.name))
    }
}

/// One candidate to measure.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Request {
    /// The schedule (serialized as data: the worker compiles exactly the schedule the tuner
    /// made, with no text to parse again).
    pub schedule: strata_schedule::Schedule,
    /// Stop timing early when the first run is this many seconds or slower (a candidate far
    /// slower than the best so far).
    pub cutoff_s: Option<f64>,
    /// This is a re-measurement at the run's end: timed [`CONFIRM_TIME_FACTOR`] times as long
    /// (and the fault `unstable` acts only on these).
    #[serde(default)]
    pub confirm: bool,
}

/// What measuring a candidate gave.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Outcome {
    /// Compiled, checked against the reference and timed.
    Timed {
        /// The steady median of the timed runs (`strata_jit::Timings::steady`), seconds.
        median_s: f64,
        /// Fastest timed run, seconds.
        min_s: f64,
        /// Slowest timed run, seconds.
        max_s: f64,
        /// How many runs were timed.
        runs: u32,
        /// Seconds lowering and code generation took.
        compile_s: f64,
    },
    /// Lowering or code generation refused the schedule.
    CompileError(String),
    /// The compiled kernel refused the input (a `round_up` schedule reading past it).
    Refused(String),
    /// The answer differs from the reference's (how, in words).
    WrongAnswer(String),
    /// The worker died (signal or exit status).
    Crash(String),
    /// No answer within the time limit; the worker was killed.
    Timeout(String),
    /// The worker was interrupted (SIGINT): nothing is known about the candidate.
    Interrupted(String),
}

/// Whether this process was started as a worker: `WORKER_ARG` first and `WORKER_ENV` set.
pub fn started_as_worker() -> bool {
    let first_arg = std::env::args_os().nth(1);
    first_arg.is_some_and(|a| a == WORKER_ARG) && std::env::var_os(WORKER_ENV).is_some()
}

/// Runs the worker loop and exits, if this process was started as a worker.
pub fn run_worker_if_requested() {
    if !started_as_worker() {
        return;
    }
    let code = match worker_loop() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("strata worker: {e}");
            2
        }
    };
    std::process::exit(code);
}

fn worker_loop() -> Result<(), String> {
    exit_when_orphaned();
    // `args_os`: `args` panics on an argument that is not Unicode.
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let backend = worker_backend(&args)?;
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let setup_line = lines.next().ok_or("no setup")?.map_err(|e| e.to_string())?;
    let setup: Setup = serde_json::from_str(&setup_line).map_err(|e| e.to_string())?;
    let state = WorkerState::new(&setup, backend)?;
    let faults = std::env::var(FAULT_ENV).unwrap_or_default();
    let mut out = std::io::stdout().lock();
    for line in lines {
        let line = line.map_err(|e| e.to_string())?;
        let request: Request = serde_json::from_str(&line).map_err(|e| e.to_string())?;
        let outcome = state.measure(&request, &faults, &mut || {
            // Best effort: a tuner that stopped reading learns nothing from it anyway.
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{COMPILED_MARK}").and_then(|()| out.flush());
        });
        let text = serde_json::to_string(&outcome).map_err(|e| e.to_string())?;
        writeln!(out, "{text}").map_err(|e| e.to_string())?;
        out.flush().map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Ends this worker when its tuner is gone. A worker has its own process group, so
/// signals for the tuner's group (a closed terminal's SIGHUP) miss it, and a worker stuck
/// in a candidate never reads the end of its input: a thread watches for the parent
/// process to change (the orphan is re-parented).
fn exit_when_orphaned() {
    #[cfg(unix)]
    {
        let tuner = std::os::unix::process::parent_id();
        std::thread::spawn(move || loop {
            std::thread::sleep(ORPHAN_POLL);
            if std::os::unix::process::parent_id() != tuner {
                std::process::exit(3);
            }
        });
    }
}

/// The backend a worker's command line names: `program --strata-worker --backend NAME ...`
/// (only right after `WORKER_ARG`, so a program's own arguments after it mean nothing here);
/// Cranelift when absent. An unknown name is an error: measuring with another backend than
/// the tuner records would file the times under the wrong key.
pub fn worker_backend(args: &[String]) -> Result<strata_jit::Backend, String> {
    match (args.get(2).map(String::as_str), args.get(3)) {
        (Some(BACKEND_ARG), Some(name)) => name.parse(),
        (Some(BACKEND_ARG), None) => Err(format!("{BACKEND_ARG} needs a backend name")),
        _ => Ok(strata_jit::Backend::Cranelift),
    }
}

/// How often a worker checks that its tuner is still there.
const ORPHAN_POLL: Duration = Duration::from_millis(200);

/// The bytes of a file the tuner wrote (`what` it holds, for errors), or an error naming their
/// size where the memory is not there.
fn read_data(path: &std::path::Path, what: &str) -> Result<Vec<u8>, String> {
    let cannot = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
    let mut file = std::fs::File::open(path).map_err(cannot)?;
    let len = file.metadata().map_err(cannot)?.len();
    let mut bytes = Vec::new();
    usize::try_from(len)
        .ok()
        .and_then(|n| bytes.try_reserve_exact(n).ok())
        .ok_or_else(|| format!("could not allocate {len} bytes for {what}"))?;
    std::io::Read::read_to_end(&mut file, &mut bytes).map_err(cannot)?;
    Ok(bytes)
}

/// A worker's fixed inputs.
struct WorkerState {
    pipeline: Pipeline,
    sizes: Sizes,
    args: strata_dsl::Args,
    expected: Buffer,
    /// How far an answer may be from `expected` (found once: a walk over the kernel).
    tolerance: Tolerance,
    setup: Setup,
    /// What compiles every candidate.
    backend: strata_jit::Backend,
}

/// The inputs every measurement of a run uses: buffers seeded random from `seed`, scalar
/// parameters as `params` gives them (seeded random where it does not). `params` must name
/// scalar parameters of `pipeline`, each with a value of its type.
pub fn run_inputs(
    pipeline: &Pipeline,
    sizes: &Sizes,
    seed: u64,
    params: &[(String, Value)],
) -> Result<Args, String> {
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed);
    // Drawn first for every parameter, so the buffers do not depend on which were given.
    let mut args = random_args(pipeline, sizes, &mut rng)?;
    for (name, value) in params {
        let declared = pipeline.scalar_param(name)?.dtype;
        if value.dtype() != declared {
            return Err(format!(
                "parameter `{name}` of `{}` is {declared}, not {}",
                pipeline.name,
                value.dtype()
            ));
        }
        args.scalars.insert(name.clone(), *value);
    }
    Ok(args)
}

/// [`Setup::params`] read back as values of the parameters' types.
fn parse_params(
    pipeline: &Pipeline,
    params: &[(String, String)],
) -> Result<Vec<(String, Value)>, String> {
    params
        .iter()
        .map(|(name, text)| {
            let dtype = pipeline.scalar_param(name)?.dtype;
            let value = Value::parse_as(dtype, text)
                .ok_or_else(|| format!("parameter `{name}`: `{text}` is not a {dtype}"))?;
            Ok((name.clone(), value))
        })
        .collect()
}

impl WorkerState {
    fn new(setup: &Setup, backend: strata_jit::Backend) -> Result<WorkerState, String> {
        let pipeline = strata_dsl::parse_kernels(&setup.kernel_source, "kernel")
            .map_err(|e| e.to_string())?
            .into_iter()
            .find(|k| k.name == setup.kernel_name)
            .ok_or("kernel not found")?;
        let params = parse_params(&pipeline, &setup.params)?;
        let mut args = run_inputs(&pipeline, &setup.sizes, setup.seed, &params)?;
        for input in &setup.inputs {
            args.buffers.insert(input.name.clone(), input.read()?);
        }
        let bytes = read_data(&setup.expected_path, "the expected output")?;
        let dtype = Dtype::from_name(&setup.expected_dtype).ok_or("bad expected dtype")?;
        let expected = Buffer::from_bytes(dtype, &setup.expected_shape, &bytes)
            .map_err(|e| format!("the expected output: {e}"))?;
        Ok(WorkerState {
            tolerance: Tolerance::for_kernel(&pipeline, setup.tolerance),
            pipeline,
            sizes: setup.sizes.clone(),
            args,
            expected,
            setup: setup.clone(),
            backend,
        })
    }

    /// Compiles, checks and times one candidate; `compiled` is called once it has compiled.
    fn measure(&self, request: &Request, faults: &str, compiled: &mut dyn FnMut()) -> Outcome {
        let fault = fault_for(faults, &request.schedule);
        if fault == Some("crash") {
            std::process::abort();
        }
        if fault == Some("hang") {
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        let start = Instant::now();
        let kernel = match compile(&self.pipeline, &request.schedule, &self.sizes, self.backend) {
            Ok(k) => k,
            Err(e) => return Outcome::CompileError(e),
        };
        let compile_s = start.elapsed().as_secs_f64();
        compiled();
        if fault == Some("hang_run") {
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        let checked = Instant::now();
        let mut got = match kernel.run(&self.args, self.setup.threads) {
            Ok(b) => b,
            Err(e) => return Outcome::Refused(e.to_string()),
        };
        let check = checked.elapsed();
        if fault == Some("wrong") {
            corrupt(&mut got);
        }
        if let Err(e) = agree_within(&got, &self.expected, self.tolerance) {
            return Outcome::WrongAnswer(e);
        }
        let timing = self.timing(request.cutoff_s, request.confirm);
        // Already past the cutoff on the checked run: that run is its one timing. A candidate
        // 20 times slower than the best took three of its runs (checked, warm-up, timed), and on
        // an app-sized pipeline such candidates (an inlined scatter recomputed per point:
        // seconds a run) were most of a tuning run's time.
        let timed = if timing.past_cutoff(check) {
            one_run(check.as_secs_f64(), compile_s)
        } else {
            match strata_jit::time_runs(&kernel, &self.args, &mut got, self.setup.threads, &timing)
            {
                Ok(t) => timed_outcome(&t, compile_s),
                Err(e) => Outcome::Refused(e.to_string()),
            }
        };
        match fault {
            Some("unstable") if request.confirm => slowed(timed, BUSY_FACTOR),
            _ => timed,
        }
    }

    /// How this worker times a candidate: the one timing routine `strata run` and
    /// `strata compare` use, for the tuning run's minimum time ([`CONFIRM_TIME_FACTOR`] times
    /// it for a re-measurement), cut short past `cutoff_s`.
    fn timing(&self, cutoff_s: Option<f64>, confirm: bool) -> strata_jit::Timing {
        let factor = if confirm { CONFIRM_TIME_FACTOR } else { 1.0 };
        let min_time =
            Duration::try_from_secs_f64(self.setup.min_time_s * factor).unwrap_or_default();
        let cutoff = cutoff_s.and_then(|c| Duration::try_from_secs_f64(c).ok());
        strata_jit::Timing::for_at_least(min_time).with_cutoff(cutoff)
    }
}

/// The outcome of a timed candidate.
fn timed_outcome(t: &strata_jit::Timings, compile_s: f64) -> Outcome {
    Outcome::Timed {
        median_s: t.steady().as_secs_f64(),
        min_s: t.min().as_secs_f64(),
        max_s: t.max().as_secs_f64(),
        runs: t.runs() as u32,
        compile_s,
    }
}

/// How many times the run's minimum time a re-measurement is timed for. At the minimum time
/// alone (50 ms by default), a 30 ms default schedule was timed three times, one batch, and
/// one slow spell of the machine's made its confirmation 1.32x its search time and the
/// run's speedup 1.32x too large; five times as long gives the steady median batches to
/// choose from, for about a second more per run.
pub const CONFIRM_TIME_FACTOR: f64 = 5.0;

/// The timing of a candidate run once.
fn one_run(seconds: f64, compile_s: f64) -> Outcome {
    Outcome::Timed {
        median_s: seconds,
        min_s: seconds,
        max_s: seconds,
        runs: 1,
        compile_s,
    }
}

/// Compiles a candidate for the worker's sizes with `backend`; a backend this program lacks
/// is a compile error naming it.
fn compile(
    pipeline: &Pipeline,
    schedule: &strata_schedule::Schedule,
    sizes: &Sizes,
    backend: strata_jit::Backend,
) -> Result<strata_jit::CompiledKernel, String> {
    let options = strata_jit::CodegenOptions {
        backend,
        ..Default::default()
    };
    strata_jit::compile_pipeline(pipeline, schedule, sizes, &options).map_err(|e| e.to_string())
}

/// The fault `STRATA_WORKER_FAULT` injects for this candidate, matched on its text. Without
/// faults (every real run) the schedule is not printed: this runs once per candidate.
fn fault_for<'a>(faults: &'a str, schedule: &strata_schedule::Schedule) -> Option<&'a str> {
    if faults.is_empty() {
        return None;
    }
    let text = schedule.to_string();
    fault_entries(faults)
        .into_iter()
        .find(|(_, entry)| !entry.is_empty() && text.contains(entry))
        .map(|(kind, _)| kind)
}

/// The `(kind, text)` entries of `kind:text[,kind:text]`. Schedule text holds commas
/// (`vectorize(x, 8)`), so an entry ends only at a comma that starts the next `kind:`.
fn fault_entries(faults: &str) -> Vec<(&str, &str)> {
    const KINDS: [&str; 4] = ["crash:", "hang:", "wrong:", "unstable:"];
    let mut entries = Vec::new();
    let mut rest = faults;
    while let Some((kind, after)) = rest.split_once(':') {
        let end = after
            .match_indices(',')
            .map(|(i, _)| i)
            .find(|&i| KINDS.iter().any(|k| after[i + 1..].starts_with(k)))
            .unwrap_or(after.len());
        entries.push((kind, &after[..end]));
        rest = after.get(end + 1..).unwrap_or("");
    }
    entries
}

/// How much slower the fault `unstable` makes a re-measurement: far past any agreement, even
/// with a search time a busy machine inflated (a search measurement cut short after one
/// preempted run was once 50x the kernel's time, and a 100x slower confirmation agreed with it).
const BUSY_FACTOR: f64 = 1e6;

/// `outcome`'s times multiplied by `factor` (other outcomes as they are).
fn slowed(outcome: Outcome, factor: f64) -> Outcome {
    match outcome {
        Outcome::Timed {
            median_s,
            min_s,
            max_s,
            runs,
            compile_s,
        } => Outcome::Timed {
            median_s: median_s * factor,
            min_s: min_s * factor,
            max_s: max_s * factor,
            runs,
            compile_s,
        },
        other => other,
    }
}

fn corrupt(b: &mut Buffer) {
    if let Some(v) = b.get_flat(0) {
        let changed = strata_dsl::Value::binary(
            strata_dsl::BinOp::Add,
            v,
            strata_dsl::Value::I64(1).cast(v.dtype()),
        )
        .unwrap_or(v);
        b.set_flat(0, changed);
    }
}

/// How to start a worker: a program (by default this one) with `STRATA_WORKER` set.
#[derive(Clone, Debug)]
pub struct WorkerCommand {
    /// The executable.
    pub program: PathBuf,
    /// Arguments after `--strata-worker --backend NAME`.
    pub args: Vec<String>,
    /// Environment variables set for it (beside `STRATA_WORKER`).
    pub env: Vec<(String, String)>,
}

impl Default for WorkerCommand {
    /// This program as a worker (it must call `run_worker_if_requested`). Should the system
    /// not tell this program's path, the path is empty and starting a worker fails with an
    /// error saying so.
    fn default() -> WorkerCommand {
        WorkerCommand {
            program: std::env::current_exe().unwrap_or_default(),
            args: Vec::new(),
            env: Vec::new(),
        }
    }
}

impl WorkerCommand {
    /// This program as a worker (it must call `run_worker_if_requested`). On Linux it is
    /// started as `/proc/self/exe`, the very file this process runs: a binary rebuilt or
    /// reinstalled during a long run (`cargo build` while `strata train` measures) has a new
    /// file at the old path, and its path then names nothing this process can start (every
    /// later candidate was recorded as a crash) or a program of another version.
    pub fn current_exe() -> std::io::Result<WorkerCommand> {
        let own = std::path::Path::new("/proc/self/exe");
        let program = if cfg!(target_os = "linux") && own.exists() {
            own.to_path_buf()
        } else {
            std::env::current_exe()?
        };
        Ok(WorkerCommand {
            program,
            args: Vec::new(),
            env: Vec::new(),
        })
    }
}

/// A running worker, seen from the tuner.
pub struct Worker {
    child: Child,
    stdin: ChildStdin,
    answers: Receiver<String>,
}

impl Worker {
    /// Starts a worker compiling with `backend` and sends it the setup.
    pub fn start(
        command: &WorkerCommand,
        backend: strata_jit::Backend,
        setup: &Setup,
    ) -> Result<Worker, String> {
        let mut cmd = Command::new(&command.program);
        cmd.arg(WORKER_ARG)
            .args([BACKEND_ARG, backend.name()])
            .args(&command.args)
            .env(WORKER_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        // Its own process group: Ctrl-C in a terminal signals the tuner's group, and the
        // tuner, not the worker, decides what an interrupt ends.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        for (k, v) in &command.env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start a worker ({}): {e}", command.program.display()))?;
        let stdin = child.stdin.take().ok_or("worker has no stdin")?;
        let stdout = child.stdout.take().ok_or("worker has no stdout")?;
        let (send, answers) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut worker = Worker {
            child,
            stdin,
            answers,
        };
        let line = serde_json::to_string(setup).map_err(|e| e.to_string())?;
        worker.send(&line)?;
        Ok(worker)
    }

    fn send(&mut self, line: &str) -> Result<(), String> {
        writeln!(self.stdin, "{line}")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| e.to_string())
    }

    /// Measures one candidate within `timeout`, and once it has compiled, within `run_limit`
    /// of that moment too (when given): compiling an app-sized pipeline takes seconds, running
    /// a good candidate milliseconds, and one limit for both gave a slow candidate the
    /// seconds its compile needed. `Err` means this worker is gone (crashed, killed, or
    /// abandoned because `interrupt` was set) and the outcome says why; start a new one.
    pub fn measure(
        &mut self,
        request: &Request,
        timeout: Duration,
        run_limit: Option<Duration>,
        interrupt: Option<&AtomicBool>,
    ) -> Result<Outcome, Outcome> {
        let line =
            serde_json::to_string(request).map_err(|e| Outcome::CompileError(e.to_string()))?;
        if self.send(&line).is_err() {
            return Err(self.death());
        }
        let mut deadline = Instant::now() + timeout;
        let mut run_limited = None;
        loop {
            if interrupt.is_some_and(|i| i.load(Ordering::SeqCst)) {
                self.kill();
                return Err(Outcome::Interrupted("the tuner was interrupted".into()));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.answers.recv_timeout(left.min(INTERRUPT_POLL)) {
                Ok(mark) if mark == COMPILED_MARK => {
                    if let Some(run) = run_limit.filter(|r| Instant::now() + *r < deadline) {
                        deadline = Instant::now() + run;
                        run_limited = Some(run);
                    }
                }
                Ok(answer) => {
                    return serde_json::from_str(&answer)
                        .map_err(|e| Outcome::Crash(format!("garbled answer: {e}")))
                }
                Err(RecvTimeoutError::Timeout) if Instant::now() < deadline => {}
                Err(RecvTimeoutError::Timeout) => {
                    self.kill();
                    return Err(Outcome::Timeout(match run_limited {
                        Some(run) => {
                            format!("no answer within {:.1} s of compiling", run.as_secs_f64())
                        }
                        None => format!("no answer within {:.1} s", timeout.as_secs_f64()),
                    }));
                }
                Err(RecvTimeoutError::Disconnected) => return Err(self.death()),
            }
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Why the worker is gone: an interrupt, or a crash (the candidate's doing).
    fn death(&mut self) -> Outcome {
        match self.child.wait() {
            Ok(status) if is_interrupt(status) => Outcome::Interrupted(describe_exit(status)),
            Ok(status) => Outcome::Crash(describe_exit(status)),
            Err(e) => Outcome::Crash(e.to_string()),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(unix)]
fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        Some(signal) => format!("killed by signal {signal}"),
        None => format!("exited with {status}"),
    }
}

#[cfg(not(unix))]
fn describe_exit(status: std::process::ExitStatus) -> String {
    format!("exited with {status}")
}

/// Whether the process died of SIGINT.
#[cfg(unix)]
fn is_interrupt(status: std::process::ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    /// SIGINT's number, the same on every Unix.
    const SIGINT: i32 = 2;
    status.signal() == Some(SIGINT)
}

#[cfg(not(unix))]
fn is_interrupt(_status: std::process::ExitStatus) -> bool {
    false
}
