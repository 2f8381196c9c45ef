//! The tuning driver: computes the reference answer, measures the default schedule, then
//! candidates from a strategy until the budget (trials, time, or Ctrl-C) runs out, each in a
//! worker process and each recorded in the tuning database as it is made (a candidate
//! interrupted by Ctrl-C or cut off by the time budget is not: a resumed run measures it);
//! re-measures the best few and the default in a fresh worker (their confirmed times); ends
//! with a stop reason. A kernel and shape tuned before continue where they left off: measured
//! schedules are skipped and the search starts from the database's best.
//!
//! Trials are counted as [`strata_tuning_db::TRIAL_DEFINITION`] says: search candidates only,
//! numbered 1, 2, … in their run; the default schedule is trial 0, and a re-measurement
//! carries the number of the trial it confirms. A time budget bounds the whole run: the
//! reference answer, the default, the search and the re-measurement (the search stops early
//! enough to leave time to confirm its best; what still does not fit is skipped).

use crate::space::{schedule_hash, Genome, Space};
use crate::strategy::{Candidate, Searcher, StrategyKind};
use crate::worker::{run_inputs, InputData, Outcome, Request, Setup, Worker, WorkerCommand};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use strata_dsl::{Args, Buffer, Pipeline, Sizes, Value, Work};
use strata_jit::Backend;
use strata_scheduler::lower::lift_reductions::lift_reductions;
use strata_scheduler::schedule::validate::validate;
use strata_scheduler::Schedule;
use strata_tuning_db::{
    canonical_params, printable, Db, DbError, Measurement, Miss, NewRun, Status, Target, TuningKey,
    Winner,
};

/// The float tolerance answers are checked with.
pub const FLOAT_TOLERANCE: f64 = 1e-4;
/// How many of the best schedules are re-measured in a fresh worker at the end.
const REMEASURE: usize = 3;

/// A candidate may take this many times the best time so far before it is given up on
/// (within `--timeout`, and never less than [`SLOW_FLOOR`]).
pub const SLOW_FACTOR: f64 = 100.0;
/// The least time a candidate is given once something was timed (compiling an app-sized
/// pipeline takes seconds).
pub const SLOW_FLOOR: Duration = Duration::from_secs(10);
/// The least time a compiled candidate's runs are given once something was timed: its
/// checked run, warm-up and repetitions of at least `--min-time` take 100 times the best
/// time at [`SLOW_FACTOR`], which for a kernel of microseconds is nothing.
pub const RUN_FLOOR: Duration = Duration::from_secs(2);

/// The trial budget when neither trials nor time is given (the library's and `strata tune`'s).
pub const DEFAULT_TRIALS: u64 = 100;
/// How long each candidate's repetitions are timed at least, by default.
pub const DEFAULT_MIN_TIME: Duration = Duration::from_millis(50);
/// How long a candidate may take before its worker is killed, by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How a tuning run is set up.
#[derive(Clone, Debug)]
pub struct TuneOptions {
    /// Stop after this many trials (search candidates measured, failures included; `None`: no
    /// trial budget). With neither `trials` nor `time`, the search runs until the space is
    /// exhausted or `stop` is set.
    pub trials: Option<u64>,
    /// Stop after this long, counting the whole run (reference answer, default schedule, search
    /// and re-measurement).
    pub time: Option<Duration>,
    /// How candidates are proposed.
    pub strategy: StrategyKind,
    /// Seed of the search and of the random inputs: the same seed proposes the same candidates.
    pub seed: u64,
    /// Threads of parallel loops, in every measurement (part of the database key).
    pub threads: usize,
    /// Values of scalar parameters (`--param`); the others are seeded random. Every
    /// parameter's value, given or drawn, is part of the database key: a schedule's speed
    /// can depend on it (the local Laplacian's work grows with its `intensity_levels`).
    pub params: Vec<(String, Value)>,
    /// Buffer inputs given as data (`--input`), replacing the seeded random ones of the same
    /// names: tuning on representative data where the answer's check needs it (a kernel
    /// dividing by an interpolated alpha is ill-conditioned on random inputs near zero). Each
    /// must have the type and shape the kernel takes at the run's sizes. Not part of the
    /// database key: a schedule's speed is taken not to depend on the data.
    pub inputs: Vec<(String, Buffer)>,
    /// Floats agree with the reference within this, relative to the larger of 1 and the
    /// expected value (default [`FLOAT_TOLERANCE`]); recorded with every measurement. A deep
    /// float pipeline can need more: the local Laplacian's level lookup `i32(gray * 7)` takes
    /// the other pair of levels where a fused multiply-add moves `gray` by one ulp, and its
    /// 8 levels of upsampling carry that to 1.1e-4.
    pub tolerance: f64,
    /// Time each candidate's repetitions for at least this long.
    pub min_time: Duration,
    /// Give up on a candidate (and its worker) after this long.
    pub timeout: Duration,
    /// The program measurements run in (default: this one, which must call
    /// [`run_worker_if_requested`](crate::run_worker_if_requested) first; see the crate doc).
    pub worker: WorkerCommand,
    /// The backend every candidate is compiled with (the workers are told on their command
    /// line); part of the database key, and it decides the space's vector widths.
    pub backend: Backend,
    /// Set from another thread (Ctrl-C) to stop: the search candidate being measured is
    /// abandoned (and not recorded), then the best few are re-measured as usual.
    pub stop: Arc<AtomicBool>,
    /// Draw the progress bar on stderr.
    pub progress: bool,
}

impl Default for TuneOptions {
    /// What `strata tune` does without flags: 100 trials with the cost model, seed 1, every
    /// core, candidates timed for at least 50 ms and given up after 60 s, workers running this
    /// program (which must call `run_worker_if_requested` first) compiling with Cranelift, a
    /// progress bar.
    fn default() -> TuneOptions {
        TuneOptions {
            trials: Some(DEFAULT_TRIALS),
            time: None,
            strategy: StrategyKind::Model,
            seed: 1,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            params: Vec::new(),
            inputs: Vec::new(),
            tolerance: FLOAT_TOLERANCE,
            min_time: DEFAULT_MIN_TIME,
            timeout: DEFAULT_TIMEOUT,
            worker: WorkerCommand::default(),
            backend: Backend::Cranelift,
            stop: Arc::new(AtomicBool::new(false)),
            progress: true,
        }
    }
}

/// Why a run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum StopReason {
    /// `TuneOptions::trials` trials were measured.
    TrialBudget(u64),
    /// `TuneOptions::time` (seconds) ran out.
    TimeBudget(f64),
    /// `TuneOptions::stop` was set (Ctrl-C).
    Interrupted,
    /// No unmeasured legal candidate could be found.
    SpaceExhausted,
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::TrialBudget(n) => write!(f, "trial budget of {n} reached"),
            StopReason::TimeBudget(s) => write!(f, "time budget of {s:.0} s reached"),
            StopReason::Interrupted => f.write_str("interrupted"),
            StopReason::SpaceExhausted => f.write_str("no unmeasured schedule left to try"),
        }
    }
}

/// Why tuning could not run.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// The tuning database could not be opened, read or written.
    #[error(transparent)]
    Db(#[from] DbError),
    /// The run could not start: a backend not built, a shape the kernel refuses, no reference
    /// answer.
    #[error("{0}")]
    Setup(String),
}

/// One measurement of this run, named by its trial.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TrialTime {
    /// The trial number in the run (0: the default schedule).
    pub trial: u64,
    /// Median seconds per call.
    pub seconds: f64,
    /// The schedule, as text (empty: the default).
    pub schedule: String,
}

/// What a run found. Search times come from the worker that measured the search, confirmed
/// times from the fresh worker of the end; the two differ by noise and by the worker's
/// state, and re-measurement may reorder close candidates.
#[derive(Clone, Debug)]
pub struct TuneResult {
    /// This run's id in the database.
    pub run_id: i64,
    /// What the run was recorded under (with the scalar parameters' values it used).
    pub key: TuningKey,
    /// Why the run ended.
    pub stop: StopReason,
    /// This run's trials ([`strata_tuning_db::TRIAL_DEFINITION`]).
    pub trials: u64,
    /// Seconds the whole run took, the reference answer and the re-measurement included.
    pub elapsed_s: f64,
    /// The default schedule's search time (trial 0).
    pub default_seconds: Option<f64>,
    /// The default schedule's confirmed time.
    pub default_confirmed: Option<f64>,
    /// This run's fastest search measurement (the default's included).
    pub search_best: Option<TrialTime>,
    /// This run's fastest confirmed measurement (the default's included; unstable ones are
    /// not confirmed).
    pub confirmed_best: Option<TrialTime>,
    /// This run's unstable confirmations ([`MAX_DISAGREEMENT`]), which decide nothing.
    pub unstable: Vec<UnstableTime>,
    /// The database's winner after this run (it may be an earlier run's): schedule, time.
    pub best: Option<(String, f64)>,
    /// The winner's row, with its run id and trial ([`strata_tuning_db::WINNER_RULE`]).
    pub winner: Option<Winner>,
    /// Failed trials by kind.
    pub failures: BTreeMap<String, u64>,
}

/// A confirmation of this run that kept disagreeing with its search time.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct UnstableTime {
    /// The trial it re-measured (0: the default schedule).
    pub trial: u64,
    /// The times, in words ([`unstable_detail`]).
    pub detail: String,
}

/// One timed measurement of this run, as the session remembers it.
#[derive(Clone, Debug)]
struct Timed {
    seconds: f64,
    schedule: String,
    genome: Genome,
    trial: u64,
    /// How long measuring it took, compiling included (to budget its re-measurement).
    wall: Duration,
}

/// What kind of measurement [`Session::measure`] makes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// The default schedule, trial 0.
    Default,
    /// The next search trial.
    Search,
    /// A re-measurement in the fresh worker of the run's end, of the given trial, whose
    /// search time was `search_s`.
    Confirm {
        /// The trial it confirms.
        trial: u64,
        /// That trial's search time, seconds.
        search_s: f64,
    },
}

/// What measuring a candidate gave, before it is recorded.
struct Measured {
    /// The last outcome.
    outcome: Outcome,
    /// How long measuring took, compiling included.
    wall: Duration,
    /// Every timed confirmation, in order (empty unless confirming).
    confirmations: Vec<f64>,
}

/// How far a confirmation may be from its search time, either way, and still confirm it.
/// Two workers' times of one schedule differ by noise, a few percent; twice or half is not
/// the schedule but the machine (busy with something else during one of the two: the issue
/// that led here saw a confirmation 140 times its search time, and took it as the winner's).
pub const MAX_DISAGREEMENT: f64 = 2.0;

/// How many more times a confirmation that disagrees with its search time is measured
/// before it is recorded as unstable ([`Status::Unstable`]).
pub const EXTRA_CONFIRMATIONS: usize = 2;

/// What a schedule's confirmations so far say.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    /// This confirmation (the last) agrees with the search time: it is the confirmed time.
    Confirmed(f64),
    /// None agrees yet, and another may be measured.
    MeasureAgain,
    /// None of the `1 + EXTRA_CONFIRMATIONS` agrees: the times are not trusted.
    Unstable,
}

/// Whether `confirmed_s` is within [`MAX_DISAGREEMENT`] of `search_s`, either way.
pub fn agrees(search_s: f64, confirmed_s: f64) -> bool {
    let ratio = confirmed_s / search_s;
    ratio.is_finite() && (1.0 / MAX_DISAGREEMENT..=MAX_DISAGREEMENT).contains(&ratio)
}

/// The verdict on the timed confirmations of a schedule measured at `search_s`, in order
/// (measuring stops at the first that agrees).
pub fn confirmation_verdict(search_s: f64, confirmations: &[f64]) -> Verdict {
    match confirmations.last() {
        Some(&t) if agrees(search_s, t) => Verdict::Confirmed(t),
        Some(_) if confirmations.len() > EXTRA_CONFIRMATIONS => Verdict::Unstable,
        _ => Verdict::MeasureAgain,
    }
}

/// Why confirmations of a schedule measured at `search_s` are not trusted, in words; `None`
/// when the last agrees, or none was timed (a failure is recorded as itself). A confirmation
/// cut short (by the time budget) after disagreeing is not trusted either.
pub fn unstable_detail(search_s: f64, confirmations: &[f64]) -> Option<String> {
    let &last = confirmations.last()?;
    if agrees(search_s, last) {
        return None;
    }
    let times: Vec<String> = confirmations.iter().map(|&t| ms_text(t)).collect();
    Some(format!(
        "search {}, confirmations {}: more than {MAX_DISAGREEMENT}x apart, so none is trusted",
        ms_text(search_s),
        times.join(", ")
    ))
}

/// Seconds as milliseconds with four significant decimals (`1.2000 ms`).
fn ms_text(seconds: f64) -> String {
    format!("{:.4} ms", seconds * 1e3)
}

/// Confirms a schedule measured at `search_s`: `measure` until a time agrees, at most
/// `1 + EXTRA_CONFIRMATIONS` times ([`confirmation_verdict`]); a failure ends it at once.
/// `None` when the first gave nothing to record (interrupted, out of time).
fn confirm_with(
    search_s: f64,
    mut measure: impl FnMut() -> Option<(Outcome, Duration)>,
) -> Option<Measured> {
    let (mut outcome, mut wall) = measure()?;
    let mut confirmations = Vec::new();
    while let Outcome::Timed { median_s, .. } = outcome {
        confirmations.push(median_s);
        if confirmation_verdict(search_s, &confirmations) != Verdict::MeasureAgain {
            break;
        }
        match measure() {
            Some((next, took)) => (outcome, wall) = (next, wall + took),
            None => break,
        }
    }
    Some(Measured {
        outcome,
        wall,
        confirmations,
    })
}

/// Everything one run needs while it searches.
struct Session<'a> {
    db: &'a Db,
    run_id: i64,
    options: &'a TuneOptions,
    setup: Setup,
    worker: Option<Worker>,
    trials: u64,
    /// When the run started (before the reference answer) and when its time budget ends.
    started: Instant,
    deadline: Option<Instant>,
    /// A measurement was cut off (or not started) because the time budget ran out.
    budget_hit: bool,
    /// The fastest search time so far, the database's best of earlier runs included (the
    /// cutoff for slow candidates).
    best_seconds: Option<f64>,
    failures: BTreeMap<String, u64>,
    /// Every timed search measurement of this run (the default's included).
    timed: Vec<Timed>,
    /// Every confirmed measurement of this run (unstable ones are not).
    confirmed: Vec<Timed>,
    /// Every unstable confirmation of this run.
    unstable: Vec<UnstableTime>,
    /// One call's floating-point operations and bytes, for the throughput shown while tuning.
    work: (u64, u64),
}

/// The database key of a kernel at a shape with the scalar parameters' values `scalars` (by
/// name; empty for a kernel without any) on this machine, compiled by `backend`.
pub fn tuning_key(
    pipeline: &Pipeline,
    sizes: &Sizes,
    scalars: &BTreeMap<String, Value>,
    threads: usize,
    backend: Backend,
) -> TuningKey {
    TuningKey {
        kernel_hash: pipeline.hash().to_string(),
        kernel_name: pipeline.name.clone(),
        shape: shape_text(sizes),
        params: params_text(scalars),
        target: host_target(threads),
        backend: backend.name().to_string(),
    }
}

/// `K=256,M=256,N=256`: sizes in name order.
pub fn shape_text(sizes: &Sizes) -> String {
    sizes
        .iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `alpha=0.5,levels=8`: scalar parameters' values in name order, as plain text.
pub fn params_text(scalars: &BTreeMap<String, Value>) -> String {
    canonical_params(scalars.iter().map(|(n, v)| (n, v.plain_text())))
}

/// This machine: CPU model, the vector features codegen uses, and the thread count.
pub fn host_target(threads: usize) -> Target {
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    Target {
        cpu_model,
        features: host_features(),
        threads: threads as u32,
    }
}

#[cfg(target_arch = "x86_64")]
fn host_features() -> String {
    let mut f = Vec::new();
    if std::arch::is_x86_feature_detected!("sse4.1") {
        f.push("sse4.1");
    }
    if std::arch::is_x86_feature_detected!("avx2") {
        f.push("avx2");
    }
    if std::arch::is_x86_feature_detected!("fma") {
        f.push("fma");
    }
    if std::arch::is_x86_feature_detected!("avx512f") {
        f.push("avx512f");
    }
    f.join(",")
}

#[cfg(not(target_arch = "x86_64"))]
fn host_features() -> String {
    std::env::consts::ARCH.to_string()
}

/// Why `tune` refuses to run in a process started as a worker.
pub const NO_WORKER_HOOK: &str = "this process was started as a tuning worker but tuned instead \
     of working: call `strata::tuner::worker::run_worker_if_requested()` first thing in `main` \
     (the tuner measures candidates in child processes running this program)";

/// Tunes `pipeline` (whose source text is `source`) at `sizes`, recording into `db`.
pub fn tune(
    db: &Db,
    pipeline: &Pipeline,
    source: &str,
    sizes: &Sizes,
    options: &TuneOptions,
) -> Result<TuneResult, TuneError> {
    if !options.backend.is_built() {
        let why = strata_jit::CodegenError::NotBuilt(options.backend);
        return Err(TuneError::Setup(why.to_string()));
    }
    if crate::worker::started_as_worker() {
        // A program whose main tunes without calling the hook first: its workers would run
        // its main again and tune in turn, each starting workers of its own, without end.
        return Err(TuneError::Setup(NO_WORKER_HOOK.to_string()));
    }
    let started = Instant::now();
    let deadline = options.time.map(|t| started + t);
    let (setup, scalars, float_ops, bytes, data_files) =
        prepare(pipeline, source, sizes, options, deadline)?;
    let key = tuning_key(pipeline, sizes, &scalars, options.threads, options.backend);
    let run = NewRun {
        key: key.clone(),
        kernel_source: source.to_string(),
        strata_version: env!("CARGO_PKG_VERSION").to_string(),
        strategy: options.strategy.name().to_string(),
        seed: options.seed,
        budget_trials: options.trials,
        budget_seconds: options.time.map(|t| t.as_secs_f64()),
        float_ops: Some(float_ops),
        bytes,
        started_at: now_rfc3339(),
    };
    let run_id = db.start_run(&run)?;
    let mut session = Session {
        db,
        run_id,
        options,
        setup,
        worker: None,
        trials: 0,
        started,
        deadline,
        budget_hit: false,
        best_seconds: None,
        failures: BTreeMap::new(),
        timed: Vec::new(),
        confirmed: Vec::new(),
        unstable: Vec::new(),
        work: (float_ops, bytes),
    };
    // The expected answer stays until the re-measurement's fresh worker has read it.
    let result = session
        .search(pipeline, &key)
        .and_then(|found| session.remeasure_best().map(|()| found));
    drop(data_files);
    let (stop, default_seconds) = result?;
    db.finish_run(run_id, &stop.to_string(), &now_rfc3339())?;
    let winner = db.best(&key)?.map(|(measurement, run_id)| Winner {
        measurement,
        run_id,
    });
    let best = winner.as_ref().and_then(|w| {
        let m = &w.measurement;
        m.median_s.map(|t| (m.schedule.clone(), t))
    });
    let fastest = |timed: &[Timed]| {
        timed
            .iter()
            .min_by(|a, b| a.seconds.total_cmp(&b.seconds).then(a.trial.cmp(&b.trial)))
            .map(Timed::trial_time)
    };
    let default_confirmed = session
        .confirmed
        .iter()
        .find(|t| t.trial == 0)
        .map(|t| t.seconds);
    Ok(TuneResult {
        run_id,
        key,
        stop,
        trials: session.trials,
        elapsed_s: started.elapsed().as_secs_f64(),
        default_seconds,
        default_confirmed,
        search_best: fastest(&session.timed),
        confirmed_best: fastest(&session.confirmed),
        unstable: session.unstable,
        best,
        winner,
        failures: session.failures,
    })
}

impl Timed {
    fn trial_time(&self) -> TrialTime {
        TrialTime {
            trial: self.trial,
            seconds: self.seconds,
            schedule: self.schedule.clone(),
        }
    }
}

/// Computes the reference answer once, for every worker to check against.
fn prepare(
    pipeline: &Pipeline,
    source: &str,
    sizes: &Sizes,
    options: &TuneOptions,
    deadline: Option<Instant>,
) -> Result<(Setup, BTreeMap<String, Value>, u64, u64, Vec<ExpectedFile>), TuneError> {
    let mut args =
        run_inputs(pipeline, sizes, options.seed, &options.params).map_err(TuneError::Setup)?;
    let inputs = given_inputs(&mut args, &options.inputs)?;
    let scalars = args.scalars.clone();
    let input_bytes = args
        .buffers
        .values()
        .map(|b| b.len() * b.dtype().bytes())
        .sum::<usize>();
    let (expected, work) = reference_answer(pipeline, args, options, deadline)?;
    let bytes = input_bytes + expected.len() * expected.dtype().bytes();
    let expected_bytes = expected
        .try_to_bytes()
        .map_err(|e| TuneError::Setup(format!("the expected answer: {e}")))?;
    let file = ExpectedFile::write(&expected_bytes).map_err(TuneError::Setup)?;
    let (inputs, mut files): (Vec<InputData>, Vec<ExpectedFile>) = inputs.into_iter().unzip();
    let setup = Setup {
        kernel_source: source.to_string(),
        kernel_name: pipeline.name.clone(),
        sizes: sizes.clone(),
        seed: options.seed,
        params: (scalars.iter())
            .map(|(name, value)| (name.clone(), value.plain_text()))
            .collect(),
        inputs,
        threads: options.threads,
        expected_path: file.path.clone(),
        expected_dtype: expected.dtype().name().to_string(),
        expected_shape: expected.shape().to_vec(),
        tolerance: options.tolerance,
        min_time_s: options.min_time.as_secs_f64(),
    };
    files.push(file);
    Ok((setup, scalars, work.float_ops, bytes as u64, files))
}

/// The buffers `given` put in `args` in place of the random ones, each written to a file for
/// the workers; refused where a name is not a buffer input or the type or shape differs.
fn given_inputs(
    args: &mut Args,
    given: &[(String, Buffer)],
) -> Result<Vec<(InputData, ExpectedFile)>, TuneError> {
    let mut out = Vec::new();
    for (name, buffer) in given {
        let Some(random) = args.buffers.get(name) else {
            return Err(TuneError::Setup(format!(
                "the kernel has no buffer input `{name}`"
            )));
        };
        if random.dtype() != buffer.dtype() || random.shape() != buffer.shape() {
            return Err(TuneError::Setup(format!(
                "input `{name}` is {}{:?}, but the kernel takes {}{:?} at this shape",
                buffer.dtype(),
                buffer.shape(),
                random.dtype(),
                random.shape()
            )));
        }
        let bytes = (buffer.try_to_bytes())
            .map_err(|e| TuneError::Setup(format!("input `{name}`: {e}")))?;
        let file = ExpectedFile::write(&bytes).map_err(TuneError::Setup)?;
        let data = InputData {
            name: name.clone(),
            path: file.path.clone(),
            dtype: buffer.dtype().name().to_string(),
            shape: buffer.shape().to_vec(),
        };
        args.buffers.insert(name.clone(), buffer.clone());
        out.push((data, file));
    }
    Ok(out)
}

/// How often a wait for the reference answer looks at the clock and at Ctrl-C.
const REFERENCE_POLL: Duration = Duration::from_millis(100);

/// The reference evaluator's answer (and its work count) for `args`, computed on its own
/// thread so that the time budget and Ctrl-C bound the wait, with a spinner while it runs
/// (the evaluator interprets every point: minutes for a large matmul). When the budget runs
/// out or Ctrl-C comes first, the run ends before anything is measured; the thread is left to
/// finish on its own (the command exits; a library caller's process keeps it until then).
fn reference_answer(
    pipeline: &Pipeline,
    args: Args,
    options: &TuneOptions,
    deadline: Option<Instant>,
) -> Result<(Buffer, Work), TuneError> {
    let (send, answer) = mpsc::channel();
    // The inputs move to the evaluator's thread: a copy could be as large as they are.
    let pipeline = pipeline.clone();
    std::thread::Builder::new()
        .name("strata-reference".into())
        .spawn(move || {
            let _ = send.send(strata_dsl::evaluate_counting(&pipeline, &args));
        })
        .map_err(|e| TuneError::Setup(format!("cannot start the reference evaluator: {e}")))?;
    let spinner = reference_spinner(options.progress);
    let started = Instant::now();
    let result = loop {
        match answer.recv_timeout(REFERENCE_POLL) {
            Ok(result) => {
                break result.map_err(|e| format!("the reference evaluator failed: {e}"));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err("the reference evaluator stopped without an answer".into());
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        let waited = started.elapsed().as_secs_f64();
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break Err(format!(
                "the time budget ran out after {waited:.1} s while the reference evaluator \
                 was computing the expected answer, before any schedule was measured: give \
                 --time more seconds or tune a smaller shape"
            ));
        }
        if options.stop.load(Ordering::SeqCst) {
            break Err(format!(
                "interrupted after {waited:.1} s while the reference evaluator was computing \
                 the expected answer, before any schedule was measured"
            ));
        }
    };
    spinner.finish_and_clear();
    result.map_err(TuneError::Setup)
}

/// A spinner saying the reference answer is being computed (hidden without progress, and
/// by indicatif when stderr is not a terminal).
fn reference_spinner(progress: bool) -> ProgressBar {
    if !progress {
        return ProgressBar::hidden();
    }
    let spinner = ProgressBar::new_spinner();
    let style = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] computing the reference answer with the evaluator \
         (every candidate is checked against it; slow for large shapes)",
    )
    .unwrap_or_else(|_| ProgressStyle::default_spinner());
    spinner.set_style(style);
    spinner.enable_steady_tick(Duration::from_millis(200));
    spinner
}

/// The reference answer (or an input given as data), in a file for the workers to read
/// (`strata-expected-*.bin` in the temp directory). The tuner holds a lock on it while it lives and removes it when
/// done; a killed tuner cannot, and its lock dies with it, so the next tuner removes every
/// such file nobody holds.
struct ExpectedFile {
    path: PathBuf,
    /// Open for the lock's sake.
    _locked: std::fs::File,
}

/// The names of expected-answer files: `strata-expected-<pid>-<nanos>.bin`.
const EXPECTED_PREFIX: &str = "strata-expected-";
const EXPECTED_SUFFIX: &str = ".bin";

impl ExpectedFile {
    /// Removes the files killed tuners left, then writes `bytes` to a new locked file.
    fn write(bytes: &[u8]) -> Result<ExpectedFile, String> {
        let dir = std::env::temp_dir();
        remove_abandoned_expected_files(&dir);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let name = format!(
            "{EXPECTED_PREFIX}{}-{nanos}{EXPECTED_SUFFIX}",
            std::process::id()
        );
        let path = dir.join(&name);
        // Written under a name the sweep ignores, and locked before it gets its real
        // name, so another tuner's sweep never sees it unlocked.
        let partial = dir.join(format!("{name}.part"));
        let cannot = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
        let mut file = std::fs::File::create_new(&partial).map_err(cannot)?;
        let written = file
            .lock()
            .and_then(|()| std::io::Write::write_all(&mut file, bytes))
            .and_then(|()| std::fs::rename(&partial, &path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&partial);
            return Err(cannot(e));
        }
        Ok(ExpectedFile {
            path,
            _locked: file,
        })
    }
}

impl Drop for ExpectedFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Removes every expected-answer file in `dir` that no living tuner holds locked.
/// Best effort: a file that cannot be opened or removed (another user's) stays.
fn remove_abandoned_expected_files(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(EXPECTED_PREFIX) && name.ends_with(EXPECTED_SUFFIX)) {
            continue;
        }
        let path = entry.path();
        let Ok(file) = std::fs::File::open(&path) else {
            continue;
        };
        if file.try_lock().is_ok() {
            let _ = std::fs::remove_file(&path);
        }
    }
}

impl Session<'_> {
    /// The search loop; returns why it stopped and the default schedule's time.
    fn search(
        &mut self,
        pipeline: &Pipeline,
        key: &TuningKey,
    ) -> Result<(StopReason, Option<f64>), TuneError> {
        let mut searcher = Searcher::new(
            self.options.strategy,
            Space::for_backend(pipeline, self.options.backend),
            self.options.seed,
        );
        for hash in self.db.measured_hashes(key)? {
            searcher.mark_seen(&hash);
        }
        if let Some((m, _)) = self.db.best(key)? {
            self.best_seconds = m.median_s;
            // Only a genome of this space: mutating one of another shape would panic.
            if let Some(genome) = genome_of(&m.settings).filter(|g| fits(&searcher.space, g)) {
                searcher.observe(&genome, m.median_s);
            }
        }
        let default = self.measure_default(&mut searcher)?;
        let bar = self.progress_bar();
        let start = Instant::now();
        let stop = loop {
            if let Some(reason) = self.budget_spent() {
                break reason;
            }
            let Some(candidate) = searcher.propose() else {
                break StopReason::SpaceExhausted;
            };
            let seconds = self.measure(&candidate, Kind::Search)?;
            searcher.observe(&candidate.genome, seconds);
            self.update_bar(&bar, default, start);
        };
        bar.finish_and_clear();
        Ok((stop, default))
    }

    /// Why the search should stop now, if it should. With a time budget, it stops once what
    /// is left would not cover re-measuring its best (see [`Session::confirm_reserve`]).
    fn budget_spent(&self) -> Option<StopReason> {
        if self.options.stop.load(Ordering::SeqCst) {
            return Some(StopReason::Interrupted);
        }
        if let Some(n) = self.options.trials.filter(|&n| self.trials >= n) {
            return Some(StopReason::TrialBudget(n));
        }
        let (Some(time), Some(deadline)) = (self.options.time, self.deadline) else {
            return None;
        };
        // The next candidate is expected to take as long as the last one did: one that
        // could not finish would be cut off and its time lost.
        let next = self.timed.last().map_or(Duration::ZERO, |t| t.wall);
        let end = Instant::now() + self.confirm_reserve(time) + next;
        (self.budget_hit || end >= deadline).then_some(StopReason::TimeBudget(time.as_secs_f64()))
    }

    /// The time to keep for the final re-measurement: what measuring the schedules it would
    /// re-measure took in the search, at most a quarter of the budget (the search is the
    /// point; a re-measurement that does not fit is skipped, best first kept).
    fn confirm_reserve(&self, budget: Duration) -> Duration {
        let expected: Duration = self.to_confirm().iter().map(|t| t.wall).sum();
        expected.min(budget / 4)
    }

    /// The measurements the run's end re-measures, in that order: the fastest search
    /// schedule, the default (the baseline, measured the same way), then the next fastest
    /// up to [`REMEASURE`] candidates.
    fn to_confirm(&self) -> Vec<Timed> {
        let mut timed = self.timed.clone();
        timed.sort_by(|a, b| a.seconds.total_cmp(&b.seconds).then(a.trial.cmp(&b.trial)));
        timed.dedup_by(|a, b| a.schedule == b.schedule);
        let default = timed.iter().find(|t| t.schedule.is_empty()).cloned();
        let mut chosen: Vec<Timed> = timed
            .into_iter()
            .filter(|t| !t.schedule.is_empty())
            .take(REMEASURE)
            .collect();
        if let Some(default) = default {
            chosen.insert(chosen.len().min(1), default);
        }
        chosen
    }

    /// Measures the default schedule: every run does, as the baseline measured beside its
    /// candidates.
    fn measure_default(&mut self, searcher: &mut Searcher) -> Result<Option<f64>, TuneError> {
        let space = &searcher.space;
        let genome = space.default_genome();
        let schedule = Schedule::new();
        let candidate = Candidate {
            hash: schedule_hash(&schedule),
            genome,
            schedule,
        };
        searcher.mark_seen(&candidate.hash);
        let seconds = self.measure(&candidate, Kind::Default)?;
        searcher.observe(&candidate.genome, seconds);
        Ok(seconds)
    }

    /// How long the next measurement may take: the per-candidate timeout ([`Self::timeout`]),
    /// or what is left of the time budget when that is less (`true` then).
    fn time_limit(&self) -> (Duration, bool) {
        let left = self
            .deadline
            .map(|d| d.saturating_duration_since(Instant::now()));
        let timeout = self.timeout();
        match left {
            Some(left) if left < timeout => (left, true),
            _ => (timeout, false),
        }
    }

    /// `--timeout`, and once something was timed, at most [`SLOW_FACTOR`] times the best
    /// time so far (never under [`SLOW_FLOOR`], which leaves room to compile): a candidate
    /// that slow loses anyway. On a pyramid, the seeds computing every level inside its
    /// consumer's loop recompute the coarse levels per row, and each ran to the 60 s timeout:
    /// eight of the local Laplacian's first ten candidates did.
    fn timeout(&self) -> Duration {
        let slow = self.slow_limit(SLOW_FLOOR);
        slow.map_or(self.options.timeout, |s| s.min(self.options.timeout))
    }

    /// How long a compiled candidate's runs may take once something was timed (at least
    /// [`RUN_FLOOR`]). Two interpolation candidates of thirty ran to the 10 s floor that
    /// leaves room to compile; the best took 17 ms.
    fn run_limit(&self) -> Option<Duration> {
        self.slow_limit(RUN_FLOOR)
    }

    /// [`SLOW_FACTOR`] times the best time so far, at least `floor`; `None` before anything
    /// was timed.
    fn slow_limit(&self, floor: Duration) -> Option<Duration> {
        self.best_seconds
            .map(|b| Duration::from_secs_f64(b * SLOW_FACTOR).max(floor))
    }

    /// Measures one candidate in the worker (starting one if needed) and records the result;
    /// a confirmation that disagrees with its search time is measured again
    /// ([`confirmation_verdict`]). `None` for a failure, an unstable confirmation, and a
    /// measurement not recorded: interrupted, or cut off by the time budget (not the
    /// candidate's doing: a resumed run measures it again).
    fn measure(&mut self, c: &Candidate, kind: Kind) -> Result<Option<f64>, TuneError> {
        let request = Request {
            schedule: c.schedule.to_string(),
            cutoff_s: self.best_seconds.map(|b| b * 20.0),
            confirm: kind.confirms(),
        };
        let measured = match kind {
            Kind::Confirm { search_s, .. } => {
                confirm_with(search_s, || self.measure_once(&request, kind))
            }
            _ => self
                .measure_once(&request, kind)
                .map(|(outcome, wall)| Measured {
                    outcome,
                    wall,
                    confirmations: Vec::new(),
                }),
        };
        match measured {
            Some(measured) => self.record(c, kind, request, measured),
            None => Ok(None),
        }
    }

    /// Runs `request` once in the worker; `None` when the outcome is not the candidate's to
    /// record (interrupted, or the time budget ran out), else the outcome and its wall time.
    fn measure_once(&mut self, request: &Request, kind: Kind) -> Option<(Outcome, Duration)> {
        let (limit, by_budget) = self.time_limit();
        if by_budget && limit.is_zero() {
            self.budget_hit = true;
            return None;
        }
        // Ctrl-C abandons a search candidate at once; the final re-measurement runs on.
        let began = Instant::now();
        let outcome = self.run_in_worker(request, !kind.confirms(), limit);
        let wall = began.elapsed();
        if self.interrupted(&outcome) {
            return None;
        }
        if by_budget && matches!(outcome, Outcome::Timeout(_)) {
            self.budget_hit = true;
            return None;
        }
        Some((outcome, wall))
    }

    /// Records what measuring `c` gave, and remembers its time for the summary (an
    /// unstable confirmation's among the unstable ones).
    fn record(
        &mut self,
        c: &Candidate,
        kind: Kind,
        request: Request,
        measured: Measured,
    ) -> Result<Option<f64>, TuneError> {
        let trial = match kind {
            Kind::Default => 0,
            Kind::Search => {
                self.trials += 1;
                self.trials
            }
            Kind::Confirm { trial, .. } => trial,
        };
        let (mut status, timing) = status_of(&measured.outcome);
        if let Kind::Confirm { search_s, .. } = kind {
            if let Some(why) = unstable_detail(search_s, &measured.confirmations) {
                status = Status::Unstable(why.clone());
                self.unstable.push(UnstableTime { trial, detail: why });
            }
        }
        if !status.is_ok() && !kind.confirms() {
            *self
                .failures
                .entry(status_kind(&status).to_string())
                .or_default() += 1;
        }
        let seconds = timing.filter(|_| status.is_ok()).map(|t| t.0);
        if let Some(t) = seconds {
            self.remember(c, kind, &request.schedule, trial, t, measured.wall);
        }
        let m = Measurement {
            trial,
            schedule: request.schedule,
            schedule_hash: c.hash.clone(),
            status,
            median_s: timing.map(|t| t.0),
            min_s: timing.map(|t| t.1),
            max_s: timing.map(|t| t.2),
            runs: timing.map_or(0, |t| t.3),
            settings: self.settings(c, request.cutoff_s),
            is_default: kind == Kind::Default || (kind.confirms() && trial == 0),
            remeasured: kind.confirms(),
            measured_at: now_rfc3339(),
        };
        self.db.record(self.run_id, &m)?;
        Ok(seconds)
    }

    /// Keeps a trusted time for the summary (and, for a search time, the slow cutoff).
    fn remember(
        &mut self,
        c: &Candidate,
        kind: Kind,
        schedule: &str,
        trial: u64,
        seconds: f64,
        wall: Duration,
    ) {
        let timed = Timed {
            seconds,
            schedule: schedule.to_string(),
            genome: c.genome.clone(),
            trial,
            wall,
        };
        if kind.confirms() {
            self.confirmed.push(timed);
        } else {
            self.best_seconds = Some(self.best_seconds.map_or(seconds, |b| b.min(seconds)));
            self.timed.push(timed);
        }
    }

    /// A measurement's settings, as recorded (JSON).
    fn settings(&self, c: &Candidate, cutoff: Option<f64>) -> String {
        let settings = serde_json::json!({
            "min_time_s": self.options.min_time.as_secs_f64(),
            "threads": self.options.threads,
            "cutoff_s": cutoff,
            "tolerance": self.options.tolerance,
            "genome": c.genome,
            // Seconds since the run started (the reference answer included): the report's
            // time axis.
            "elapsed_s": self.started.elapsed().as_secs_f64(),
        });
        settings.to_string()
    }

    /// Whether `outcome` says the worker was interrupted rather than the candidate failing:
    /// it died of SIGINT (the run then stops), or it died while the run was stopping.
    fn interrupted(&self, outcome: &Outcome) -> bool {
        match outcome {
            Outcome::Interrupted(_) => {
                self.options.stop.store(true, Ordering::SeqCst);
                true
            }
            Outcome::Crash(_) => self.options.stop.load(Ordering::SeqCst),
            _ => false,
        }
    }

    fn run_in_worker(
        &mut self,
        request: &Request,
        interruptible: bool,
        limit: Duration,
    ) -> Outcome {
        if self.worker.is_none() {
            match Worker::start(&self.options.worker, self.options.backend, &self.setup) {
                Ok(w) => self.worker = Some(w),
                Err(e) => return Outcome::Crash(e),
            }
        }
        let run_limit = self.run_limit();
        let Some(worker) = self.worker.as_mut() else {
            return Outcome::Crash("no worker".into());
        };
        let interrupt = interruptible.then_some(&*self.options.stop);
        match worker.measure(request, limit, run_limit, interrupt) {
            Ok(outcome) => outcome,
            Err(outcome) => {
                self.worker = None; // it crashed or was killed: the next candidate gets a new one
                outcome
            }
        }
    }

    /// Re-measures this run's best schedules and the default in a fresh worker, best first,
    /// as long as the time budget lasts.
    fn remeasure_best(&mut self) -> Result<(), TuneError> {
        self.worker = None;
        let chosen = self.to_confirm();
        let spinner = self.confirm_spinner(chosen.len());
        for t in chosen {
            let Ok(schedule) = strata_scheduler::schedule::text::parse_schedule(&t.schedule) else {
                continue;
            };
            let hash = schedule_hash(&schedule);
            // The real genome, so a later run that resumes from this (preferred) row can
            // evolve from it.
            let candidate = Candidate {
                genome: t.genome,
                schedule,
                hash,
            };
            let kind = Kind::Confirm {
                trial: t.trial,
                search_s: t.seconds,
            };
            self.measure(&candidate, kind)?;
            spinner.inc(1);
            if self.budget_hit {
                break;
            }
        }
        spinner.finish_and_clear();
        Ok(())
    }

    fn confirm_spinner(&self, n: usize) -> ProgressBar {
        if !self.options.progress {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::new(n as u64);
        let style = ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] confirming: re-measuring the best and the default \
             in a fresh worker {pos}/{len}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    }

    fn progress_bar(&self) -> ProgressBar {
        if !self.options.progress {
            return ProgressBar::hidden();
        }
        let (bar, template) = match self.options.trials {
            Some(n) => (
                ProgressBar::new(n),
                "{spinner} [{elapsed_precise}] trials {pos}/{len} {msg} (eta {eta})",
            ),
            None => (
                ProgressBar::new_spinner(),
                "{spinner} [{elapsed_precise}] trials {pos} {msg}",
            ),
        };
        let style =
            ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar
    }

    /// The bar's message: this run's search best (with its trial; the cutoff's best may be
    /// an earlier run's, so it is not what is shown), its speedup over the default's search
    /// time, the rate and the failures.
    fn update_bar(&self, bar: &ProgressBar, default: Option<f64>, start: Instant) {
        bar.set_position(self.trials);
        let fastest = self
            .timed
            .iter()
            .min_by(|a, b| a.seconds.total_cmp(&b.seconds));
        let best = fastest.map_or("-".to_string(), |b| {
            let (flops, bytes) = self.work;
            let rate = if flops > 0 {
                format!("{:.2} GFLOP/s", flops as f64 / b.seconds / 1e9)
            } else {
                format!("{:.2} GB/s", bytes as f64 / b.seconds / 1e9)
            };
            format!("{:.4} ms (trial {}), {rate}", b.seconds * 1e3, b.trial)
        });
        let speedup = match (default, fastest) {
            (Some(d), Some(b)) if b.seconds > 0.0 => format!("{:.2}x", d / b.seconds),
            _ => "-".to_string(),
        };
        let per_minute = self.trials as f64 / start.elapsed().as_secs_f64().max(1e-9) * 60.0;
        let failures: Vec<String> = self
            .failures
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        bar.set_message(format!(
            "search best {best} ({speedup} over default), {per_minute:.0}/min, failures: {}",
            if failures.is_empty() {
                "none".into()
            } else {
                failures.join(", ")
            }
        ));
    }
}

impl Kind {
    /// Whether this is a re-measurement.
    fn confirms(self) -> bool {
        matches!(self, Kind::Confirm { .. })
    }
}

/// The status to record and, when it ran, (median, min, max, runs).
fn status_of(outcome: &Outcome) -> (Status, Option<(f64, f64, f64, u32)>) {
    match outcome {
        Outcome::Timed {
            median_s,
            min_s,
            max_s,
            runs,
            ..
        } => (Status::Ok, Some((*median_s, *min_s, *max_s, *runs))),
        Outcome::CompileError(e) => (Status::CompileError(e.clone()), None),
        Outcome::Refused(e) => (Status::Refused(e.clone()), None),
        Outcome::WrongAnswer(e) => (Status::WrongAnswer(e.clone()), None),
        Outcome::Crash(e) => (Status::Crash(e.clone()), None),
        Outcome::Timeout(e) => (Status::Timeout(e.clone()), None),
        // `measure` records no interrupted candidate; kept for completeness.
        Outcome::Interrupted(e) => (Status::Crash(e.clone()), None),
    }
}

/// A short name for a failure kind.
pub fn status_kind(status: &Status) -> &'static str {
    match status {
        Status::Ok => "ok",
        Status::CompileError(_) => "compile error",
        Status::Refused(_) => "refused",
        Status::WrongAnswer(_) => "wrong answer",
        Status::Crash(_) => "crash",
        Status::Timeout(_) => "timeout",
        Status::Unstable(_) => "unstable",
    }
}

/// The genome recorded in a measurement's settings, if any.
fn genome_of(settings: &str) -> Option<Genome> {
    let value: serde_json::Value = serde_json::from_str(settings).ok()?;
    serde_json::from_value(value.get("genome")?.clone()).ok()
}

/// Whether `g` has the shape of `space`'s genomes (one recorded by another version may not).
fn fits(space: &Space, g: &Genome) -> bool {
    let d = space.default_genome();
    g.places.len() == d.places.len()
        && g.stages.len() == d.stages.len()
        && g.stages
            .iter()
            .zip(&d.stages)
            .all(|(a, b)| a.split.len() == b.split.len())
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a (year, month, day) date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `text` as a schedule of `pipeline`, or why it is not one: it does not parse, or it
/// breaks a rule for this kernel. A schedule read from a database is checked so before use.
pub fn checked_schedule(pipeline: &Pipeline, text: &str) -> Result<Schedule, String> {
    let schedule = strata_scheduler::schedule::text::parse_schedule(text)
        .map_err(|d| format!("its schedule does not parse: {}", d.message))?;
    validate(&lift_reductions(pipeline), &schedule)
        .map_err(|e| format!("its schedule is illegal for `{}`: {e}", pipeline.name))?;
    Ok(schedule)
}

/// What [`usable_winner`] found.
#[derive(Debug)]
pub struct UsableWinner {
    /// The best stored winner whose schedule fits the kernel, parsed; `None` when every
    /// stored winner was skipped.
    pub found: Option<(Schedule, Winner)>,
    /// Why each better winner was skipped, best first (for warnings).
    pub skipped: Vec<String>,
}

/// The database's best winner for `key` whose schedule fits `pipeline`: one that does not
/// parse or breaks a rule (an imported or older record) is skipped for the next best.
/// `Err` when the database has no winner at all (the miss says why).
// A miss is the cold path of a once-per-kernel lookup: its size does not matter.
#[allow(clippy::result_large_err)]
pub fn usable_winner(db: &Db, pipeline: &Pipeline, key: &TuningKey) -> Result<UsableWinner, Miss> {
    let (winners, damaged) =
        db.snapshot(|db| Ok::<_, Miss>((db.ranked_winners(key)?, db.damaged(Some(key))?)))?;
    // Damaged rows never rank; say which were left out.
    let mut skipped: Vec<String> = damaged
        .iter()
        .map(|d| format!("skipping a damaged record: {d}"))
        .collect();
    if winners.is_empty() {
        return Err(db.explain_miss(key)?);
    }
    for winner in winners {
        match checked_schedule(pipeline, &winner.measurement.schedule) {
            Ok(schedule) => {
                return Ok(UsableWinner {
                    found: Some((schedule, winner)),
                    skipped,
                })
            }
            Err(why) => skipped.push(format!(
                "skipping the stored winner of run {} (trial {}): {}",
                winner.run_id,
                winner.measurement.trial,
                printable(&why)
            )),
        }
    }
    Ok(UsableWinner {
        found: None,
        skipped,
    })
}

/// Where the tuning database is by default: `STRATA_DB`, else `strata.db` here.
pub fn default_db_path() -> PathBuf {
    std::env::var_os("STRATA_DB")
        .map_or_else(|| Path::new("strata.db").to_path_buf(), PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(median_s: f64) -> Option<(Outcome, Duration)> {
        let outcome = Outcome::Timed {
            median_s,
            min_s: median_s,
            max_s: median_s,
            runs: 3,
            compile_s: 0.0,
        };
        Some((outcome, Duration::from_millis(10)))
    }

    /// Within twice or half the search time agrees; further, or not a time, does not.
    #[test]
    fn agreement_is_within_the_stated_factor_either_way() {
        assert!(agrees(1.0, 1.0));
        assert!(agrees(1.0, MAX_DISAGREEMENT));
        assert!(agrees(1.0, 1.0 / MAX_DISAGREEMENT));
        assert!(!agrees(1.0, MAX_DISAGREEMENT * 1.01));
        assert!(!agrees(1.0, 0.99 / MAX_DISAGREEMENT));
        assert!(!agrees(1.2e-3, 168e-3), "the issue's 140x");
        assert!(!agrees(0.0, 1.0));
        assert!(!agrees(1.0, f64::NAN));
    }

    #[test]
    fn the_verdict_measures_again_then_gives_up() {
        let search = 1.2e-3;
        assert_eq!(confirmation_verdict(search, &[]), Verdict::MeasureAgain);
        assert_eq!(
            confirmation_verdict(search, &[1.3e-3]),
            Verdict::Confirmed(1.3e-3)
        );
        assert_eq!(
            confirmation_verdict(search, &[168e-3]),
            Verdict::MeasureAgain
        );
        assert_eq!(
            confirmation_verdict(search, &[168e-3, 1.25e-3]),
            Verdict::Confirmed(1.25e-3)
        );
        let all_slow = [168e-3, 170e-3, 171e-3];
        assert_eq!(all_slow.len(), 1 + EXTRA_CONFIRMATIONS);
        assert_eq!(confirmation_verdict(search, &all_slow), Verdict::Unstable);
    }

    #[test]
    fn the_unstable_detail_names_every_time() {
        let detail = unstable_detail(1.2e-3, &[168e-3, 170e-3, 171e-3]).unwrap();
        assert_eq!(
            detail,
            "search 1.2000 ms, confirmations 168.0000 ms, 170.0000 ms, 171.0000 ms: more than \
             2x apart, so none is trusted"
        );
        assert_eq!(unstable_detail(1.2e-3, &[168e-3, 1.25e-3]), None);
        assert_eq!(unstable_detail(1.2e-3, &[]), None);
        // Cut short after one disagreeing time: not trusted either.
        assert!(unstable_detail(1.2e-3, &[168e-3]).is_some());
    }

    /// The loop with a measurement that stays slow: three measurements, all kept.
    #[test]
    fn a_confirmation_that_stays_slow_is_measured_three_times() {
        let mut calls = 0;
        let measured = confirm_with(1.2e-3, || {
            calls += 1;
            timed(0.168 + calls as f64 * 1e-3)
        })
        .unwrap();
        assert_eq!(calls, 1 + EXTRA_CONFIRMATIONS);
        assert_eq!(measured.confirmations, [0.169, 0.170, 0.171]);
        assert_eq!(measured.wall, Duration::from_millis(30));
        assert!(unstable_detail(1.2e-3, &measured.confirmations).is_some());
    }

    /// A slow first confirmation followed by one that agrees: that one is the time.
    #[test]
    fn a_confirmation_that_recovers_is_trusted() {
        let mut times = vec![1.25e-3, 0.168].into_iter().collect::<Vec<_>>();
        let measured = confirm_with(1.2e-3, || timed(times.pop().unwrap())).unwrap();
        assert_eq!(measured.confirmations, [0.168, 1.25e-3]);
        assert!(matches!(measured.outcome, Outcome::Timed { median_s, .. } if median_s == 1.25e-3));
        assert_eq!(unstable_detail(1.2e-3, &measured.confirmations), None);
    }

    /// A failure ends the confirmation at once, as itself; nothing measured is `None`.
    #[test]
    fn a_failed_or_abandoned_confirmation_stops() {
        let crash = || Some((Outcome::Crash("SIGSEGV".into()), Duration::ZERO));
        let measured = confirm_with(1.2e-3, crash).unwrap();
        assert!(matches!(measured.outcome, Outcome::Crash(_)));
        assert!(measured.confirmations.is_empty());
        assert!(confirm_with(1.2e-3, || None).is_none());
        let mut first = true;
        let cut_short = confirm_with(1.2e-3, || {
            std::mem::take(&mut first).then(|| timed(0.168)).flatten()
        })
        .unwrap();
        assert_eq!(cut_short.confirmations, [0.168]);
    }
}
