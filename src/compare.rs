//! `strata compare`: two schedules of one kernel timed side by side in the same process.
//!
//! Timing A in one command and B in another lets whatever else the machine does (frequency
//! changes, other processes, a warm or cold cache) land on one and not the other. Here both
//! are compiled, checked once against the reference, then timed in interleaved rounds: each
//! round runs A for a slice of the time, then B for the same slice (the order alternates from
//! round to round, so neither always runs on the cache the other left). Noise that lasts
//! longer than a round hits both alike, and the ratio of the two within a round cancels it;
//! the spread of those per-round ratios says how much to trust the difference.

use crate::run::{self, RunSettings};
use std::time::Duration;
use strata::dsl::random::agree_within;
use strata::{time_runs, Args, Buffer, CompiledKernel, Pipeline, Schedule, Sizes, Timing};

/// How many rounds the time is split into.
pub const ROUNDS: usize = 20;

/// The fewest runs of each side per round: a round's median then ignores one run the
/// machine interrupted.
pub const RUNS_PER_SLICE: usize = 3;

/// One side of a comparison, ready to time.
pub struct Side {
    /// `A` or `B` (or, for `strata explain`, the directive a variant lacks), as errors and
    /// reports name it.
    pub label: String,
    pub schedule: Schedule,
    kernel: CompiledKernel,
    output: Buffer,
}

impl Side {
    /// The side's first answer.
    pub fn output(&self) -> &Buffer {
        &self.output
    }
}

/// What one side measured.
pub struct SideStats {
    pub label: String,
    pub schedule: Schedule,
    /// `Some(true)` if the answer matched the reference, `None` unchecked.
    pub correct: Option<bool>,
    pub mismatch: Option<String>,
    pub runs: usize,
    pub median: Duration,
    pub min: Duration,
}

/// What `strata compare` measured.
pub struct Comparison {
    pub a: SideStats,
    pub b: SideStats,
    pub rounds: usize,
    /// The per-round ratios B / A (each round's median of B over its median of A), sorted.
    pub ratios: Vec<f64>,
}

impl Comparison {
    /// The median of the per-round ratios B / A.
    pub fn ratio(&self) -> f64 {
        self.ratios[self.ratios.len() / 2]
    }
}

/// Compiles `schedule` for side `label`; an error says which side it is.
pub fn side(
    label: &str,
    pipeline: &Pipeline,
    schedule: Schedule,
    sizes: &Sizes,
    args: &Args,
    settings: &RunSettings,
) -> Result<Side, String> {
    let named = |e: String| on_side(label, &e);
    let kernel = run::compile(pipeline, &schedule, sizes, settings.backend).map_err(named)?;
    let output = kernel
        .run(args, settings.threads)
        .map_err(|e| on_side(label, &format!("error: {e}")))?;
    Ok(Side {
        label: label.to_string(),
        schedule,
        kernel,
        output,
    })
}

/// `error` (as `strata` prints errors) said of side `label`: `error: schedule A: ...`. A
/// rendered diagnostic (several lines, a caret) follows the side's name on its own lines.
pub fn on_side(label: &str, error: &str) -> String {
    match error.strip_prefix("error: ") {
        Some(rest) if !rest.contains('\n') => format!("error: schedule {label}: {rest}"),
        _ => format!("error: in schedule {label}:\n{error}"),
    }
}

/// Checks both sides' first answers against the reference (evaluated once) unless the
/// settings say not, then times them in `ROUNDS` interleaved rounds, each running each side
/// for `min_time / (2 ROUNDS)` (at least `RUNS_PER_SLICE` times), after one such round of warm-up.
pub fn compare(
    pipeline: &Pipeline,
    args: &Args,
    mut sides: [Side; 2],
    settings: &RunSettings,
) -> Result<Comparison, String> {
    let checks = if settings.check {
        let (expected, _) = run::reference(pipeline, args)?;
        sides
            .each_ref()
            .map(|s| agree_within(&s.output, &expected, run::tolerance(pipeline)).err())
    } else {
        [None, None]
    };
    let slice = settings.min_time / (2 * ROUNDS) as u32;
    let rounds = Rounds {
        count: ROUNDS,
        slice,
        min_runs: RUNS_PER_SLICE,
    };
    let timed = interleaved(&mut sides, args, settings.threads, &rounds)?;
    let [ta, tb]: [Timed; 2] = timed
        .try_into()
        .map_err(|_| "error: internal: not one timing per side".to_string())?;
    let mut ratios: Vec<f64> = (ta.round_medians.iter().zip(&tb.round_medians))
        .map(|(a, b)| seconds(*b) / seconds(*a))
        .collect();
    ratios.sort_by(f64::total_cmp);
    let [a, b] = sides;
    let [ca, cb] = checks;
    Ok(Comparison {
        a: stats(a, ta.times, ca, settings.check),
        b: stats(b, tb.times, cb, settings.check),
        rounds: ROUNDS,
        ratios,
    })
}

/// What [`interleaved`] measured of one side.
pub struct Timed {
    /// Every counted run.
    pub times: Vec<Duration>,
    /// Each counted round's median.
    pub round_medians: Vec<Duration>,
}

/// How [`interleaved`] splits its time.
pub struct Rounds {
    /// The rounds counted (one more warms up).
    pub count: usize,
    /// How long each side runs per round, at least.
    pub slice: Duration,
    /// The fewest runs of each side per round.
    pub min_runs: usize,
}

/// Times `sides` in interleaved rounds after one more of warm-up (caches, the thread pool,
/// the CPU's clock), each side running for the rounds' slice (and their fewest runs) per
/// round with the routine every measurement uses. The order rotates from round to round
/// (A B, B A for two sides), so no side always runs on the cache another left.
pub fn interleaved(
    sides: &mut [Side],
    args: &Args,
    threads: usize,
    rounds: &Rounds,
) -> Result<Vec<Timed>, String> {
    // Round 0 is the warm-up: the routine's own warm-up is not needed.
    let timing = Timing {
        min_runs: rounds.min_runs,
        ..Timing::for_at_least(rounds.slice).without_warm_up()
    };
    let n = sides.len();
    let mut timed: Vec<Timed> = (0..n)
        .map(|_| Timed {
            times: Vec::new(),
            round_medians: Vec::with_capacity(rounds.count),
        })
        .collect();
    for round in 0..=rounds.count {
        for i in (0..n).map(|k| (round + k) % n) {
            let side = &mut sides[i];
            let runs = time_runs(&side.kernel, args, &mut side.output, threads, &timing)
                .map_err(|e| on_side(&side.label, &format!("error: {e}")))?;
            if round > 0 {
                timed[i].round_medians.push(runs.median());
                timed[i].times.extend(runs.times());
            }
        }
    }
    Ok(timed)
}

fn stats(side: Side, times: Vec<Duration>, mismatch: Option<String>, checked: bool) -> SideStats {
    SideStats {
        label: side.label,
        schedule: side.schedule,
        correct: checked.then_some(mismatch.is_none()),
        mismatch,
        runs: times.len(),
        min: times.iter().copied().min().unwrap_or_default(),
        median: median(times),
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

/// A duration in seconds, never zero (a ratio of two zero durations is 1, not NaN).
fn seconds(d: Duration) -> f64 {
    d.as_secs_f64().max(1e-9)
}

/// The schedule as printed in reports: its text, or `default` for the empty schedule.
fn schedule_text(schedule: &Schedule) -> String {
    let text = schedule.to_string();
    if text.trim().is_empty() {
        "default".to_string()
    } else {
        text
    }
}

/// `strata compare`'s text report: the schedules, a table of both sides, and the ratio.
pub fn report_text(
    kernel: &Pipeline,
    sizes: &Sizes,
    settings: &RunSettings,
    c: &Comparison,
) -> String {
    let shape: Vec<String> = sizes.iter().map(|(n, v)| format!("{n}={v}")).collect();
    let ms = |d: Duration| format!("{:.4}", d.as_secs_f64() * 1e3);
    let answer = |s: &SideStats| match s.correct {
        Some(true) => "matches".to_string(),
        Some(false) => "WRONG".to_string(),
        None => "not checked".to_string(),
    };
    let mut lines = vec![format!(
        "{} {} threads {} backend {}; {} rounds, A and B interleaved",
        kernel.name,
        shape.join(","),
        settings.threads,
        settings.backend,
        c.rounds
    )];
    for s in [&c.a, &c.b] {
        lines.push(format!("{}: {}", s.label, schedule_text(&s.schedule)));
    }
    let row = |name: &str, a: String, b: String| format!("{name:<12} {a:>14} {b:>14}");
    lines.push(row("", "A".into(), "B".into()));
    lines.push(row("answer", answer(&c.a), answer(&c.b)));
    lines.push(row("median ms", ms(c.a.median), ms(c.b.median)));
    lines.push(row("min ms", ms(c.a.min), ms(c.b.min)));
    lines.push(row("runs", c.a.runs.to_string(), c.b.runs.to_string()));
    let (lo, hi) = (c.ratios[0], c.ratios[c.ratios.len() - 1]);
    let ratio = c.ratio();
    let verdict = if lo > 1.0 {
        format!("A is faster ({:.2}x) in every round", ratio)
    } else if hi < 1.0 {
        format!("B is faster ({:.2}x) in every round", 1.0 / ratio)
    } else {
        "no side is faster in every round".to_string()
    };
    lines.push(format!(
        "B/A: {ratio:.3} (median of per-round ratios; min {lo:.3}, max {hi:.3}): {verdict}"
    ));
    lines.join("\n")
}

/// `strata compare --json`'s one line.
pub fn json_text(
    kernel: &Pipeline,
    sizes: &Sizes,
    settings: &RunSettings,
    c: &Comparison,
) -> String {
    let side = |s: &SideStats| {
        serde_json::json!({
            "schedule": s.schedule.to_string(),
            "correct": s.correct,
            "runs": s.runs,
            "median_s": s.median.as_secs_f64(),
            "min_s": s.min.as_secs_f64(),
        })
    };
    serde_json::json!({
        "kernel": kernel.name,
        "shape": sizes,
        "threads": settings.threads,
        "backend": settings.backend.name(),
        "rounds": c.rounds,
        "a": side(&c.a),
        "b": side(&c.b),
        "ratio_b_over_a": {
            "median": c.ratio(),
            "min": c.ratios[0],
            "max": c.ratios[c.ratios.len() - 1],
        },
    })
    .to_string()
}

/// The error for a side whose answer is wrong, if any (both named when both are).
pub fn wrong_answers(c: &Comparison) -> Option<String> {
    let wrong: Vec<String> = [&c.a, &c.b]
        .into_iter()
        .filter(|s| s.correct == Some(false))
        .map(|s| {
            format!(
                "schedule {}: the answer is wrong: {}",
                s.label,
                s.mismatch.as_deref().unwrap_or("")
            )
        })
        .collect();
    (!wrong.is_empty()).then(|| format!("error: {}", wrong.join("; ")))
}
