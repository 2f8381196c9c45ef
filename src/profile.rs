//! `strata run --profile`: how long each computed function takes under the schedule.
//!
//! A second copy of the kernel is compiled with profiling markers (`strata::jit::profile`)
//! and run for the same minimum time as the measurement; the timed kernel itself carries no
//! markers, so `run`'s figures are unaffected. Times are per-thread self times (a producer
//! computed inside its consumer's loop is not counted in the consumer; a parallel loop's
//! iterations count for the function around the loop on the thread that ran them, and the
//! thread waiting for the loop counts nothing), summed over threads. With one thread, shares
//! are of the wall time; with several, of the thread time spent in all functions together.

use crate::run::RunSettings;
use std::time::{Duration, Instant};
use strata::jit::profile::FunctionTime;
use strata::{Args, Buffer, LoweredKernel};

/// One function's line of the profile, per run.
pub struct Row {
    pub name: String,
    /// Self time per run.
    pub self_time: Duration,
    /// Its share of the wall time of a run (one thread) or of the thread time of all the
    /// functions together (several threads, where thread time exceeds wall time).
    pub share: f64,
    pub calls_per_run: f64,
}

/// The per-function profile of a schedule.
pub struct Profile {
    pub rows: Vec<Row>,
    /// Wall time per profiled run (markers included).
    pub wall: Duration,
    pub runs: usize,
    /// The profiled runs' output matched the unprofiled first run's exactly.
    pub same_answer: bool,
}

/// Compiles `lowered` with profiling, runs it for at least `settings.min_time` (and 5 runs),
/// and sums each function's times; `expected` is the unprofiled output, which the profiled
/// one must equal.
pub fn profile(
    lowered: &LoweredKernel,
    args: &Args,
    expected: &Buffer,
    settings: &RunSettings,
) -> Result<Profile, String> {
    let options = strata::CodegenOptions {
        backend: settings.backend,
        profile: true,
        ..Default::default()
    };
    let kernel =
        strata::CompiledKernel::new(lowered, &options).map_err(|e| format!("error: {e}"))?;
    let mut output = expected.clone();
    let mut totals: Vec<FunctionTime> = Vec::new();
    let (mut runs, mut wall) = (0usize, Duration::ZERO);
    let start = Instant::now();
    while runs < 5 || start.elapsed() < settings.min_time {
        let t = Instant::now();
        let times = kernel
            .run_profiled_into(args, &mut output, settings.threads)
            .map_err(|e| format!("error: {e}"))?
            .ok_or("strata bug: a kernel compiled with profiling returned no profile")?;
        wall += t.elapsed();
        runs += 1;
        add(&mut totals, times);
        if runs >= 100_000 {
            break;
        }
    }
    let same_answer = strata::dsl::random::agree(&output, expected, 0.0).is_ok();
    let per_run = |d: u64| Duration::from_nanos(d / runs as u64);
    let whole = match settings.threads {
        1 => wall.as_nanos() as u64,
        _ => totals.iter().map(|t| t.self_nanos).sum(),
    };
    let rows = totals
        .into_iter()
        .map(|t| Row {
            self_time: per_run(t.self_nanos),
            share: t.self_nanos as f64 / whole.max(1) as f64,
            calls_per_run: t.calls as f64 / runs as f64,
            name: t.name,
        })
        .collect();
    Ok(Profile {
        rows,
        wall: wall / runs as u32,
        runs,
        same_answer,
    })
}

fn add(totals: &mut Vec<FunctionTime>, times: Vec<FunctionTime>) {
    if totals.is_empty() {
        *totals = times;
        return;
    }
    for (total, t) in totals.iter_mut().zip(times) {
        total.self_nanos += t.self_nanos;
        total.calls += t.calls;
    }
}

/// The table `strata run --profile` prints.
pub fn table(p: &Profile, threads: usize) -> String {
    let mut lines = vec![format!(
        "profile: self time per run ({} profiled runs, {:.4} ms wall per run with markers{})",
        p.runs,
        p.wall.as_secs_f64() * 1e3,
        if threads > 1 {
            "; thread time: each function's time on every thread that ran it, summed; shares \
             are of all the functions' thread time"
        } else {
            ""
        }
    )];
    lines.push(format!(
        "  {:<20} {:>12} {:>8} {:>14}",
        "function", "self ms", "share", "calls per run"
    ));
    for r in &p.rows {
        lines.push(format!(
            "  {:<20} {:>12.4} {:>7.1}% {:>14}",
            r.name,
            r.self_time.as_secs_f64() * 1e3,
            r.share * 100.0,
            calls(r.calls_per_run)
        ));
    }
    let inside: Duration = p.rows.iter().map(|r| r.self_time).sum();
    if threads == 1 {
        let outside = p.wall.saturating_sub(inside);
        lines.push(format!(
            "  {:<20} {:>12.4} {:>7.1}%",
            "(outside produce)",
            outside.as_secs_f64() * 1e3,
            outside.as_secs_f64() / p.wall.as_secs_f64().max(1e-12) * 100.0
        ));
    }
    if !p.same_answer {
        lines
            .push("  WARNING: the profiled kernel's answer differs from the unprofiled one".into());
    }
    lines.join("\n")
}

fn calls(per_run: f64) -> String {
    if per_run.fract() == 0.0 {
        format!("{per_run:.0}")
    } else {
        format!("{per_run:.2}")
    }
}

/// `"profile"` in `strata run --json`.
pub fn json(p: &Profile) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = p
        .rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "function": r.name,
                "self_s": r.self_time.as_secs_f64(),
                "share": r.share,
                "calls_per_run": r.calls_per_run,
            })
        })
        .collect();
    serde_json::json!({
        "runs": p.runs,
        "wall_s": p.wall.as_secs_f64(),
        "same_answer": p.same_answer,
        "functions": rows,
    })
}
