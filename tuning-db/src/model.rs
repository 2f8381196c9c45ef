//! The rows the database stores and returns: keys, targets, runs, measurements,
//! winners and report entries. All are plain serializable data.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::printable::printable;
use crate::settings::Settings;

/// The machine a tuning result is valid for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Target {
    /// The CPU model string, e.g. `AMD EPYC 7B13`.
    pub cpu_model: String,
    /// The CPU features the code may use, e.g. `avx2,fma`, in a canonical order.
    pub features: String,
    /// The number of threads the kernel runs on.
    pub threads: u32,
}

impl fmt::Display for Target {
    /// `<model, [features], n threads>`, control characters escaped (see [`printable`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = if self.threads == 1 { "" } else { "s" };
        write!(
            f,
            "<{}, [{}], {} thread{plural}>",
            printable(&self.cpu_model),
            printable(&self.features),
            self.threads
        )
    }
}

/// The backend of records made before the database knew backends (schema version 1, export
/// version 1): strata compiled everything with Cranelift then.
pub const DEFAULT_BACKEND: &str = "cranelift";

/// [`DEFAULT_BACKEND`], for serde: an export without a backend is Cranelift's.
fn default_backend() -> String {
    DEFAULT_BACKEND.to_string()
}

/// What a tuning result is for: one kernel (by hash) at one shape with one set of scalar
/// parameter values on one target, compiled by one backend. A schedule's speed depends on the
/// code generator as much as on the machine (LLVM's vectors are wider than Cranelift's), and on
/// the parameters' values as much as on the shape (a parameter may bound a loop or pick a
/// branch), so a winner for one backend or one set of values is never another's.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TuningKey {
    /// The hash of the kernel's canonical source; identifies the kernel.
    pub kernel_hash: String,
    /// The kernel's name, for people (not part of the identity).
    pub kernel_name: String,
    /// The shape, canonical: `K=256,M=256,N=256`, sorted by name (see [`canonical_shape`]).
    pub shape: String,
    /// The scalar parameters' values, canonical: `alpha=1,intensity_levels=8`, sorted by name
    /// (see [`canonical_params`]); empty for a kernel without scalar parameters. Absent in old
    /// exports, whose runs recorded none.
    #[serde(default)]
    pub params: String,
    /// The machine.
    pub target: Target,
    /// The code generator's name (`cranelift`, `llvm`); absent in old exports, which are
    /// Cranelift's ([`DEFAULT_BACKEND`]).
    #[serde(default = "default_backend")]
    pub backend: String,
}

/// Formats shape bindings canonically: `name=value` pairs sorted by name, joined by commas.
///
/// ```
/// let s = strata_tuning_db::canonical_shape([("N", 64), ("M", 128), ("K", 32)]);
/// assert_eq!(s, "K=32,M=128,N=64");
/// ```
pub fn canonical_shape<I, S>(dims: I) -> String
where
    I: IntoIterator<Item = (S, u64)>,
    S: AsRef<str>,
{
    let mut pairs: Vec<(String, u64)> = dims
        .into_iter()
        .map(|(name, value)| (name.as_ref().to_string(), value))
        .collect();
    pairs.sort();
    let parts: Vec<String> = pairs.iter().map(|(n, v)| format!("{n}={v}")).collect();
    parts.join(",")
}

/// Formats scalar parameter values canonically, as [`canonical_shape`] does shapes:
/// `name=value` pairs sorted by name, joined by commas; empty for no parameters. Each value is
/// its text as given (`Display`), so a caller formats one value one way every time (integers
/// in decimal, floats as Rust prints them: the shortest text that reads back the same).
///
/// ```
/// let p = strata_tuning_db::canonical_params([("intensity_levels", "8"), ("alpha", "1")]);
/// assert_eq!(p, "alpha=1,intensity_levels=8");
/// assert_eq!(strata_tuning_db::canonical_params([("beta", 0.5f32), ("alpha", 2.0)]), "alpha=2,beta=0.5");
/// assert_eq!(strata_tuning_db::canonical_params(Vec::<(&str, i32)>::new()), "");
/// ```
pub fn canonical_params<I, S, V>(pairs: I) -> String
where
    I: IntoIterator<Item = (S, V)>,
    S: AsRef<str>,
    V: fmt::Display,
{
    let mut pairs: Vec<(String, String)> = pairs
        .into_iter()
        .map(|(name, value)| (name.as_ref().to_string(), value.to_string()))
        .collect();
    pairs.sort();
    let parts: Vec<String> = pairs.iter().map(|(n, v)| format!("{n}={v}")).collect();
    parts.join(",")
}

/// Everything known when a tuning run starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewRun {
    /// What is being tuned.
    pub key: TuningKey,
    /// The kernel's source text (the thing `key.kernel_hash` hashes).
    pub kernel_source: String,
    /// The strata version that ran the tuner.
    pub strata_version: String,
    /// The search strategy, e.g. `random`, `evolutionary`, `cost-model`.
    pub strategy: String,
    /// The search's seed.
    pub seed: u64,
    /// The trial budget, if any.
    pub budget_trials: Option<u64>,
    /// The time budget in seconds, if any.
    pub budget_seconds: Option<f64>,
    /// Floating-point operations per kernel call, when the kernel computes (for GFLOP/s).
    pub float_ops: Option<u64>,
    /// Bytes moved per kernel call (for GB/s).
    pub bytes: u64,
    /// When the run started, RFC 3339 UTC.
    pub started_at: String,
}

/// A run as stored: what it started with and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// A random identifier, stable across export and import (unlike the row id).
    pub uid: String,
    /// What the run started with.
    pub start: NewRun,
    /// When it ended, RFC 3339 UTC; `None` while running or if it was killed.
    pub ended_at: Option<String>,
    /// Why it stopped (budget spent, interrupted, …); `None` while running or if it was killed.
    pub stop_reason: Option<String>,
}

/// The outcome of measuring one candidate schedule.
///
/// Stored as a kind column (`ok`, `compile_error`, `crash`, `timeout`, `wrong_answer`,
/// `refused`, `unstable`) and a detail column.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum Status {
    /// Compiled, ran, gave the reference answer, and was timed.
    Ok,
    /// The schedule did not compile; the compiler's message.
    CompileError(String),
    /// The measuring process died; the signal or message.
    Crash(String),
    /// Ran past its time limit; the phase (compile, check, time).
    Timeout(String),
    /// Ran but its output differed from the reference; how.
    WrongAnswer(String),
    /// Refused before running (invalid schedule, over a resource limit); why.
    Refused(String),
    /// A re-measurement that kept disagreeing with the search time by more than the tuner's
    /// stated factor (the machine was busy during one of them): the times, not trusted, so
    /// never a winner or a baseline. Only re-measured rows have it.
    Unstable(String),
}

impl Status {
    /// Every kind, in the order reports list them.
    pub const KINDS: [&'static str; 7] = [
        "ok",
        "compile_error",
        "crash",
        "timeout",
        "wrong_answer",
        "refused",
        "unstable",
    ];

    /// The kind as stored in the `status` column.
    pub fn kind(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::CompileError(_) => "compile_error",
            Status::Crash(_) => "crash",
            Status::Timeout(_) => "timeout",
            Status::WrongAnswer(_) => "wrong_answer",
            Status::Refused(_) => "refused",
            Status::Unstable(_) => "unstable",
        }
    }

    /// The detail as stored in the `status_detail` column (`None` for [`Status::Ok`]).
    pub fn detail(&self) -> Option<&str> {
        match self {
            Status::Ok => None,
            Status::CompileError(d)
            | Status::Crash(d)
            | Status::Timeout(d)
            | Status::WrongAnswer(d)
            | Status::Refused(d)
            | Status::Unstable(d) => Some(d),
        }
    }

    /// Rebuilds a status from its stored kind and detail; `None` for an unknown kind.
    pub fn from_parts(kind: &str, detail: Option<String>) -> Option<Status> {
        let d = detail.unwrap_or_default();
        Some(match kind {
            "ok" => Status::Ok,
            "compile_error" => Status::CompileError(d),
            "crash" => Status::Crash(d),
            "timeout" => Status::Timeout(d),
            "wrong_answer" => Status::WrongAnswer(d),
            "refused" => Status::Refused(d),
            "unstable" => Status::Unstable(d),
            _ => return None,
        })
    }

    /// Whether this is [`Status::Ok`].
    pub fn is_ok(&self) -> bool {
        matches!(self, Status::Ok)
    }
}

/// One measured candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The trial number within its run.
    pub trial: u64,
    /// The schedule, as text.
    pub schedule: String,
    /// The hash of the schedule's canonical form; what resume skips by.
    pub schedule_hash: String,
    /// The outcome.
    pub status: Status,
    /// Median time per call in seconds (for [`Status::Ok`]).
    pub median_s: Option<f64>,
    /// Fastest timed call in seconds.
    pub min_s: Option<f64>,
    /// Slowest timed call in seconds.
    pub max_s: Option<f64>,
    /// How many timed calls the statistics cover.
    pub runs: u32,
    /// How it was measured (threads, timing, tolerance, compile time) and the search's
    /// encoding of the candidate. An export of version 3 or older holds the legacy JSON text
    /// here, read by [`Settings::from_legacy`].
    #[serde(deserialize_with = "crate::settings::deserialize_any")]
    pub settings: Settings,
    /// This is the default schedule's measurement (the speedup baseline).
    pub is_default: bool,
    /// This is a final re-measurement in a fresh process (preferred for winners).
    pub remeasured: bool,
    /// When it was measured, RFC 3339 UTC.
    pub measured_at: String,
}

/// The best schedule for exactly one [`TuningKey`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Winner {
    /// The winning measurement (its `schedule` is what to compile).
    pub measurement: Measurement,
    /// The run that measured it.
    pub run_id: i64,
}

/// How trials are counted, everywhere (the tuner's progress bar and summary, reports): a
/// trial is one search candidate measured and recorded, failed ones included. The default
/// schedule (the baseline every run measures first, trial 0) and the final re-measurements
/// are not trials; a candidate abandoned by Ctrl-C or by the time budget is not recorded and
/// not counted.
pub const TRIAL_DEFINITION: &str = "a trial is one search candidate measured (failures \
     included); the default schedule (trial 0) and the final re-measurements are not trials";

/// How the winner is chosen ([`crate::Db::best`], [`crate::Db::winner`]), in words.
pub const WINNER_RULE: &str = "the winner is the lowest median among confirmed measurements \
     (re-measured in a fresh worker at the end of a run) of every run of this kernel, shape, \
     parameter values, target and backend; search measurements compete only when nothing was \
     confirmed; ties go to the earlier run, then the lower trial";

/// A measurement row whose content does not match its checksum: damaged on disk or edited
/// behind the database's back. Winners, reports and exports skip it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DamagedRow {
    /// The run's id in this file.
    pub run_id: i64,
    /// The run's uid (damaged itself when every row of the run is).
    pub run_uid: String,
    /// The measurement's row id in this file.
    pub row_id: i64,
    /// Its trial number, when that is still an integer.
    pub trial: Option<i64>,
}

impl fmt::Display for DamagedRow {
    /// `run 3 (uid …) trial 7 (row 12): its content does not match its checksum`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let trial = self.trial.map_or("?".to_string(), |t| t.to_string());
        write!(
            f,
            "run {} ({}) trial {trial} (row {}): its content does not match its checksum, \
             so it was skipped",
            self.run_id,
            printable(&self.run_uid),
            self.row_id
        )
    }
}

/// One measurement a report names: its run, its trial and its median.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialTime {
    /// The run's id in this file.
    pub run_id: i64,
    /// The run's uid (what `strata db export` names it by).
    pub run_uid: String,
    /// The trial number in its run; a re-measurement has the number of the search trial it
    /// confirms (0 is the default schedule).
    pub trial: u64,
    /// Median time per call, seconds.
    pub median_s: f64,
    /// The schedule's hash.
    pub schedule_hash: String,
    /// Whether this is a confirmed (re-measured in a fresh worker) time.
    pub remeasured: bool,
}

/// What `strata report` shows for one (kernel hash, shape, params, target, backend).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportEntry {
    /// The kernel, shape, parameter values, target and backend (the name is the latest run's).
    pub key: TuningKey,
    /// Number of runs for this key.
    pub runs: u64,
    /// Number of trials, as [`TRIAL_DEFINITION`] counts them, over every run.
    pub trials: u64,
    /// Number of failed search measurements by status kind (e.g. `crash` → 2); kinds with none are absent.
    pub failures: BTreeMap<String, u64>,
    /// The default schedule's median in seconds (its fastest `ok` measurement, re-measured preferred).
    pub default_median_s: Option<f64>,
    /// The default schedule's fastest search (first) measurement, seconds.
    pub default_search_s: Option<f64>,
    /// The default schedule's fastest confirmed (re-measured) time, seconds.
    pub default_confirmed_s: Option<f64>,
    /// The best median in seconds (as [`crate::Db::best`] picks it: the winner's).
    pub best_median_s: Option<f64>,
    /// The winner ([`WINNER_RULE`]): its run, trial and time.
    pub winner: Option<TrialTime>,
    /// The fastest search measurement (not re-measured), which may differ from the winner:
    /// re-measurement in a fresh worker can reorder close candidates.
    pub search_best: Option<TrialTime>,
    /// The best schedule's text.
    pub best_schedule: Option<String>,
    /// The best schedule's hash.
    pub best_schedule_hash: Option<String>,
    /// `default_median_s / best_median_s`, when both are known.
    pub speedup: Option<f64>,
    /// Floating-point operations per call (from the latest run).
    pub float_ops: Option<u64>,
    /// Bytes moved per call (from the latest run).
    pub bytes: u64,
    /// `(trial, median_s)` of every `ok` search measurement, in order (runs by start, then trial).
    pub series: Vec<(u64, f64)>,
    /// The key's damaged rows ([`DamagedRow`]), left out of everything above.
    #[serde(default)]
    pub damaged: Vec<DamagedRow>,
    /// The key's unstable re-measurements ([`Status::Unstable`]), which decide nothing above.
    #[serde(default)]
    pub unstable: Vec<UnstableTime>,
}

/// A re-measurement whose times disagreed with its search time ([`Status::Unstable`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnstableTime {
    /// The run's id in this file.
    pub run_id: i64,
    /// The trial it re-measured (0: the default schedule).
    pub trial: u64,
    /// Whether it re-measured the default schedule (then the speedup's baseline is the
    /// default's search time).
    pub is_default: bool,
    /// The times, in words (`search 1.2 ms, confirmations 168 ms, 170 ms, 171 ms`).
    pub detail: String,
}
