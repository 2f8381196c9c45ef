//! A tuning run's session: the search loop, each candidate measured in the worker and
//! recorded in the database as it is made, the time budget and the slow-candidate cutoffs,
//! and the final re-measurement of the best few.

use super::confirm::{confirm_with, unstable_detail, Measured, CONFIRM_PAUSES};
use super::key::now_rfc3339;
use super::{StopReason, TrialTime, TuneError, TuneOptions, UnstableTime};
use super::{REMEASURE, RUN_FLOOR, SLOW_FACTOR, SLOW_FLOOR};
use crate::learned::guide::Guide;
use crate::learned::{cache_run_features, samples_from_db};
use crate::space::{schedule_hash, Genome, Space};
use crate::strategy::{Candidate, Searcher};
use crate::worker::{Outcome, Request, Setup, Worker};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use strata_dsl::Pipeline;
use strata_schedule::Schedule;
use strata_tuning_db::{Db, Measurement, Settings, Status, TuningKey};

/// How many times its search measurement's time a re-measurement is budgeted (see
/// [`Session::confirm_reserve`]): it is timed five times as long
/// (`worker::CONFIRM_TIME_FACTOR`), in a fresh worker.
const CONFIRM_ALLOWANCE: u32 = 6;

/// The most measurements of earlier runs the learned model is trained on (each is lowered
/// again for its features: about a millisecond each for the example kernels).
const HISTORY: usize = 3000;

/// One timed measurement of this run, as the session remembers it.
#[derive(Clone, Debug)]
pub(super) struct Timed {
    pub(super) seconds: f64,
    pub(super) schedule: String,
    pub(super) genome: Genome,
    pub(super) trial: u64,
    /// How long measuring it took, compiling included (to budget its re-measurement).
    pub(super) wall: Duration,
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

/// Everything one run needs while it searches.
pub(super) struct Session<'a> {
    pub(super) db: &'a Db,
    pub(super) run_id: i64,
    pub(super) options: &'a TuneOptions,
    pub(super) setup: Setup,
    pub(super) worker: Option<Worker>,
    pub(super) trials: u64,
    /// When the run started (before the reference answer) and when its time budget ends.
    pub(super) started: Instant,
    pub(super) deadline: Option<Instant>,
    /// A measurement was cut off (or not started) because the time budget ran out.
    pub(super) budget_hit: bool,
    /// How long the last search step took, proposing included (the learned model's refits
    /// and lowering are part of it), to budget the next.
    pub(super) last_step: Duration,
    /// The fastest search time so far, the database's best of earlier runs included (the
    /// cutoff for slow candidates).
    pub(super) best_seconds: Option<f64>,
    pub(super) failures: BTreeMap<String, u64>,
    /// Every timed search measurement of this run (the default's included).
    pub(super) timed: Vec<Timed>,
    /// Every confirmed measurement of this run (unstable ones are not).
    pub(super) confirmed: Vec<Timed>,
    /// Every unstable confirmation of this run.
    pub(super) unstable: Vec<UnstableTime>,
    /// One call's floating-point operations and bytes, for the throughput shown while tuning.
    pub(super) work: (u64, u64),
}

impl Timed {
    pub(super) fn trial_time(&self) -> TrialTime {
        TrialTime {
            trial: self.trial,
            seconds: self.seconds,
            schedule: self.schedule.clone(),
        }
    }
}

impl Session<'_> {
    /// The search loop; returns why it stopped and the default schedule's time.
    pub(super) fn search(
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
        if self.options.strategy == crate::StrategyKind::Model {
            searcher.set_guide(self.guide(pipeline, key)?);
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
            let step = Instant::now();
            let Some(candidate) = searcher.propose() else {
                break StopReason::SpaceExhausted;
            };
            let seconds = self.measure(&candidate, Kind::Search)?;
            searcher.observe_candidate(&candidate, seconds);
            self.last_step = step.elapsed();
            self.update_bar(&bar, default, start);
        };
        bar.finish_and_clear();
        // Only a speed-up of later runs' models: a cache that cannot be written costs them
        // the time to lower these schedules again, and this run nothing.
        let known = searcher.known_loop_features();
        let _ = cache_run_features(
            self.db,
            self.run_id,
            pipeline,
            &self.setup.sizes,
            key,
            &known,
        );
        Ok((stop, default))
    }

    /// The learned model for this run, trained on the database's measurements on this
    /// machine with this backend (every kernel's, at most [`HISTORY`] of the newest).
    fn guide(&self, pipeline: &Pipeline, key: &TuningKey) -> Result<Guide, TuneError> {
        let history = samples_from_db(self.db, &key.target, &key.backend, HISTORY, true)?;
        let threads = self.options.threads;
        Ok(Guide::for_kernel(
            pipeline,
            &self.setup.sizes,
            threads,
            history,
        ))
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
        // The next step is expected to take as long as the last one did (proposing, which
        // the learned model makes longer, and measuring): a candidate that could not finish
        // would be cut off and its time lost, and the re-measurement's time eaten.
        let last_timed = self.timed.last().map_or(Duration::ZERO, |t| t.wall);
        let next = last_timed.max(self.last_step);
        let end = Instant::now() + self.confirm_reserve(time) + next;
        (self.budget_hit || end >= deadline).then_some(StopReason::TimeBudget(time.as_secs_f64()))
    }

    /// The time to keep for the final re-measurement: [`CONFIRM_ALLOWANCE`] times what
    /// measuring the schedules it would re-measure took in the search, and a twentieth of the
    /// budget at least, at most a quarter of it (the search is the point; a re-measurement that
    /// does not fit is skipped, best first kept). A confirmation costs more than its search
    /// measurement did: a fresh worker starts and draws its inputs, and one that disagrees is
    /// measured twice more. With the search's time alone, a 60 s run left 0.5 s: its best
    /// was unstable, nothing else was confirmed, and the default became the winner.
    fn confirm_reserve(&self, budget: Duration) -> Duration {
        let expected: Duration = self.to_confirm().iter().map(|t| t.wall).sum();
        (expected * CONFIRM_ALLOWANCE)
            .max(budget / 20)
            .min(budget / 4)
    }

    /// The measurements the run's end re-measures, in that order: the fastest search
    /// schedule, the default (the baseline, measured the same way), then the next fastest
    /// up to [`REMEASURE`] candidates.
    fn to_confirm(&self) -> Vec<Timed> {
        self.finalists(REMEASURE)
    }

    /// The fastest search schedule, the default, then the next fastest: `n` schedules
    /// besides the default.
    fn finalists(&self, n: usize) -> Vec<Timed> {
        let mut timed = self.timed.clone();
        timed.sort_by(|a, b| a.seconds.total_cmp(&b.seconds).then(a.trial.cmp(&b.trial)));
        timed.dedup_by(|a, b| a.schedule == b.schedule);
        let default = timed.iter().find(|t| t.schedule.is_empty()).cloned();
        let mut chosen: Vec<Timed> = timed
            .into_iter()
            .filter(|t| !t.schedule.is_empty())
            .take(n)
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
        searcher.observe_candidate(&candidate, seconds);
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
            schedule: c.schedule.clone(),
            cutoff_s: self.best_seconds.map(|b| b * 20.0),
            confirm: kind.confirms(),
        };
        let measured = match kind {
            Kind::Confirm { search_s, .. } => confirm_with(search_s, |attempt| {
                self.pause_before_confirming(attempt);
                self.measure_once(&request, kind)
            }),
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

    /// Before the `attempt`th confirmation of one schedule (from 0), waits its
    /// [`CONFIRM_PAUSES`] entry (none before the first), or what is left of the time budget
    /// when that is less.
    fn pause_before_confirming(&self, attempt: usize) {
        let Some(pause) = attempt.checked_sub(1).and_then(|i| CONFIRM_PAUSES.get(i)) else {
            return;
        };
        let left = self
            .deadline
            .map_or(*pause, |d| d.saturating_duration_since(Instant::now()));
        std::thread::sleep((*pause).min(left));
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
        let schedule = request.schedule.to_string();
        let seconds = timing.filter(|_| status.is_ok()).map(|t| t.median_s);
        if let Some(t) = seconds {
            self.remember(c, kind, &schedule, trial, t, measured.wall);
        }
        let m = Measurement {
            trial,
            schedule,
            schedule_hash: c.hash.clone(),
            status,
            median_s: timing.map(|t| t.median_s),
            min_s: timing.map(|t| t.min_s),
            max_s: timing.map(|t| t.max_s),
            runs: timing.map_or(0, |t| t.runs),
            settings: self.settings(c, request.cutoff_s, compile_seconds(&measured.outcome)),
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

    /// A measurement's settings, as recorded.
    fn settings(&self, c: &Candidate, cutoff: Option<f64>, compile_s: Option<f64>) -> Settings {
        Settings {
            threads: u32::try_from(self.options.threads).ok(),
            min_time_s: Some(self.options.min_time.as_secs_f64()),
            cutoff_s: cutoff,
            tolerance: Some(self.options.tolerance),
            // Seconds since the run started (the reference answer included): the report's
            // time axis.
            elapsed_s: Some(self.started.elapsed().as_secs_f64()),
            compile_s,
            genome: serde_json::to_string(&c.genome).ok(),
            other: None,
        }
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
    ///
    /// Each finalist whose confirmations are not trusted (unstable) brings the next fastest
    /// one in, up to [`REMEASURE`] more: the winner is then a confirmed finalist rather
    /// than the default whenever one of them can be trusted.
    pub(super) fn remeasure_best(&mut self) -> Result<(), TuneError> {
        self.worker = None;
        let mut left = self.to_confirm().len();
        let spinner = self.confirm_spinner(left);
        for t in self.finalists(2 * REMEASURE) {
            if left == 0 {
                break;
            }
            left -= 1;
            let unstable_before = self.unstable.len();
            let Ok(schedule) = strata_schedule::text::parse_schedule(&t.schedule) else {
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
            if self.unstable.len() > unstable_before {
                left += 1;
                spinner.inc_length(1);
            }
            if self.budget_hit {
                break;
            }
        }
        spinner.finish_and_clear();
        Ok(())
    }
}

impl Kind {
    /// Whether this is a re-measurement.
    fn confirms(self) -> bool {
        matches!(self, Kind::Confirm { .. })
    }
}

/// The timing statistics a measurement records.
#[derive(Clone, Copy, Debug)]
struct RecordedTiming {
    median_s: f64,
    min_s: f64,
    max_s: f64,
    runs: u32,
}

/// The status to record and, when it ran, its timing.
fn status_of(outcome: &Outcome) -> (Status, Option<RecordedTiming>) {
    match outcome {
        &Outcome::Timed {
            median_s,
            min_s,
            max_s,
            runs,
            ..
        } => {
            let timing = RecordedTiming {
                median_s,
                min_s,
                max_s,
                runs,
            };
            (Status::Ok, Some(timing))
        }
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
fn genome_of(settings: &Settings) -> Option<Genome> {
    serde_json::from_str(settings.genome.as_deref()?).ok()
}

/// The compile time a worker reported (only a timed candidate reports one).
fn compile_seconds(outcome: &Outcome) -> Option<f64> {
    match *outcome {
        Outcome::Timed { compile_s, .. } => Some(compile_s),
        _ => None,
    }
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
