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

mod confirm;
mod key;
mod progress;
mod session;
mod setup;
mod winner;

pub use confirm::{
    agrees, confirmation_verdict, unstable_detail, Verdict, CONFIRM_PAUSES, EXTRA_CONFIRMATIONS,
    MAX_DISAGREEMENT,
};
pub use key::{host_target, now_rfc3339, params_text, shape_text, tuning_key};
pub use session::status_kind;
pub use winner::{checked_schedule, default_db_path, usable_winner, UsableWinner};

use crate::strategy::StrategyKind;
use crate::worker::WorkerCommand;
use session::{Session, Timed};
use setup::prepare;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata_dsl::{Buffer, Pipeline, Sizes, Value};
use strata_jit::Backend;
use strata_tuning_db::{Db, DbError, NewRun, TuningKey, Winner};

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
        last_step: Duration::ZERO,
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
