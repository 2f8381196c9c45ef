//! One way to time a compiled kernel. The tuner's search and its confirmations (in their
//! workers), `strata run` and `strata compare` all time through [`time_runs`], so a schedule
//! measured by any of them is measured alike: untimed warm-up runs first (the output's pages,
//! the caches, the thread pool and the CPU's clock), then repetitions into one output buffer
//! (the timings hold the kernel, not its allocation) for at least a minimum time and a
//! minimum count. The figure reported is the steady median ([`Timings::steady`]): the timed
//! runs are cut, in the order they ran, into up to [`BATCHES`] consecutive batches, and the
//! fastest batch's median is the time. On the shared machines strata is measured on, a
//! kernel's speed drops by half for spells of 0.3 to 2 seconds that nothing inside the
//! process causes or can see (one process timing one matmul schedule on the same buffers in
//! 150 ms batches: 0.90 ms, then 1.85 ms for eleven batches, then 0.90 ms again); the median
//! of all runs took such a spell whole into a measurement that overlapped it by half, while
//! the fastest batch's median is the kernel's own speed whenever one batch missed it (Halide's
//! `benchmark` keeps the best of its samples for the same reason). The caller gives the inputs
//! and the output, so where they lie in memory is the caller's, the same for every run.

use crate::kernel::{CallError, CompiledKernel};
use std::time::{Duration, Instant};
use strata_dsl::{Args, Buffer};

/// How a kernel is timed.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    /// Untimed runs before the timed ones.
    pub warm_up_runs: usize,
    /// The fewest timed runs (the median of three ignores one run the machine interrupted).
    pub min_runs: usize,
    /// Timed runs continue until this much time has passed (and `min_runs` are done).
    pub min_time: Duration,
    /// The most timed runs, however short they are.
    pub max_runs: usize,
    /// A run (warm-up or the first timed one) longer than this and than `min_time` is the
    /// only timing: a tuning candidate far slower than the best so far is not worth its
    /// repetitions.
    pub cutoff: Option<Duration>,
}

impl Timing {
    /// One warm-up run, then at least [`Timing::MIN_RUNS`] timed runs and `min_time`.
    pub fn for_at_least(min_time: Duration) -> Timing {
        Timing {
            warm_up_runs: 1,
            min_runs: Timing::MIN_RUNS,
            min_time,
            max_runs: Timing::MAX_RUNS,
            cutoff: None,
        }
    }

    /// The fewest timed runs by default.
    pub const MIN_RUNS: usize = 3;
    /// The most timed runs by default.
    pub const MAX_RUNS: usize = 10_000;

    /// This timing, cut short by a run past `cutoff`.
    pub fn with_cutoff(self, cutoff: Option<Duration>) -> Timing {
        Timing { cutoff, ..self }
    }

    /// This timing without warm-up runs (the kernel ran just before).
    pub fn without_warm_up(self) -> Timing {
        Timing {
            warm_up_runs: 0,
            ..self
        }
    }

    /// Whether one run of `took` is far enough past the cutoff to be the only timing. Past
    /// the minimum time too: a first run pays for cold caches and pages, which for a kernel of
    /// microseconds can be 20 times a warm run; past the minimum time, it is the kernel's own.
    pub fn past_cutoff(&self, took: Duration) -> bool {
        self.cutoff.is_some_and(|c| took > c.max(self.min_time))
    }
}

/// Into how many consecutive batches [`Timings::steady`] cuts the timed runs, at most.
pub const BATCHES: usize = 5;

/// The fewest runs in one batch: a batch's median then ignores a run the machine interrupted.
pub const MIN_BATCH_RUNS: usize = 3;

/// What timing a kernel gave: every timed run's time, fastest first (never empty).
#[derive(Clone, Debug, PartialEq)]
pub struct Timings {
    sorted: Vec<Duration>,
    steady: Duration,
    batches: usize,
    /// The only timing is a warm-up run past the cutoff.
    pub cut_at_warm_up: bool,
}

impl Timings {
    /// The timed runs' times, fastest first.
    pub fn times(&self) -> &[Duration] {
        &self.sorted
    }

    /// How many runs were timed.
    pub fn runs(&self) -> usize {
        self.sorted.len()
    }

    /// The median run (the upper one of an even count).
    pub fn median(&self) -> Duration {
        self.sorted[self.sorted.len() / 2]
    }

    /// The steady median, the time every measurement reports: the runs cut in the order they
    /// ran into [`Timings::batches`] consecutive batches, the least of the batches' medians.
    /// With fewer than two batches' runs, the median.
    pub fn steady(&self) -> Duration {
        self.steady
    }

    /// Into how many batches [`Timings::steady`] cut the runs (1 to [`BATCHES`]).
    pub fn batches(&self) -> usize {
        self.batches
    }

    /// The fastest run.
    pub fn min(&self) -> Duration {
        self.sorted[0]
    }

    /// The slowest run.
    pub fn max(&self) -> Duration {
        self.sorted[self.sorted.len() - 1]
    }

    /// The timings of `in_order`, the runs as they were timed (not empty).
    pub fn of(in_order: Vec<Duration>, cut_at_warm_up: bool) -> Timings {
        let batches = (in_order.len() / MIN_BATCH_RUNS).clamp(1, BATCHES);
        let steady = batch_medians(&in_order, batches)
            .into_iter()
            .min()
            .unwrap_or_default();
        let mut sorted = in_order;
        sorted.sort();
        Timings {
            sorted,
            steady,
            batches,
            cut_at_warm_up,
        }
    }
}

/// The medians (the upper one of an even count) of `times` cut into `batches` consecutive
/// batches of sizes as equal as can be (the first ones longer by one).
fn batch_medians(times: &[Duration], batches: usize) -> Vec<Duration> {
    let (base, longer) = (times.len() / batches, times.len() % batches);
    let mut medians = Vec::with_capacity(batches);
    let mut start = 0;
    for b in 0..batches {
        let len = base + usize::from(b < longer);
        let mut batch = times[start..start + len].to_vec();
        batch.sort();
        medians.extend(batch.get(len / 2));
        start += len;
    }
    medians
}

/// Times `kernel` on `args` into `output` on `threads` threads as `timing` says.
pub fn time_runs(
    kernel: &CompiledKernel,
    args: &Args,
    output: &mut Buffer,
    threads: usize,
    timing: &Timing,
) -> Result<Timings, CallError> {
    for _ in 0..timing.warm_up_runs {
        let took = run_once(kernel, args, output, threads)?;
        if timing.past_cutoff(took) {
            return Ok(Timings::of(vec![took], true));
        }
    }
    let start = Instant::now();
    let mut times = Vec::new();
    while times.len() < timing.min_runs.max(1) || start.elapsed() < timing.min_time {
        let took = run_once(kernel, args, output, threads)?;
        times.push(took);
        if times.len() == 1 && timing.past_cutoff(took) || times.len() >= timing.max_runs {
            break;
        }
    }
    Ok(Timings::of(times, false))
}

fn run_once(
    kernel: &CompiledKernel,
    args: &Args,
    output: &mut Buffer,
    threads: usize,
) -> Result<Duration, CallError> {
    let start = Instant::now();
    kernel.run_into(args, output, threads)?;
    Ok(start.elapsed())
}
