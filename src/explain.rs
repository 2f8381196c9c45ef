//! `strata explain`: why a schedule is fast, directive by directive.
//!
//! Two views, each timed in one process with the interleaved rounds of `strata compare`
//! (`compare::interleaved`), so machine noise lands on every variant alike:
//!
//! - leave one out: the schedule with each directive removed in turn, against the schedule;
//!   a directive's share of the speedup is the part of the log-speedup over the default that
//!   removing it loses (negative when removing it helps). A directive others need (a
//!   `split` whose inner loop is vectorized) cannot be removed alone, and the table says why.
//! - add one: from the default schedule, the directive that helps most is added first, then
//!   the one that helps most on top of it, and so on (a greedy path to the schedule).
//!
//! Then the schedule's time per function, as `run --profile` measures it.
//!
//! Every variant's answer is checked against the reference (unless the settings say not):
//! the answer never depends on the schedule, and a variant that disagrees is an error.

use crate::compare::{self, interleaved, Rounds, Side};
use crate::profile::{self, Profile};
use crate::run::{self, RunSettings};
use crate::stage_roofline::{self, StageRoofline};
use std::time::Duration;
use strata::dsl::random::agree_within;
use strata::scheduler::{Directive, Line};
use strata::{Args, Buffer, LoweredKernel, Pipeline, Schedule, Sizes};

/// Rounds per group of variants timed together.
pub const ROUNDS: usize = 10;

/// One directive of the schedule: where it is, and its text (`C: vectorize(j, 8)`).
#[derive(Clone, Debug)]
struct Unit {
    line: usize,
    index: usize,
    text: String,
}

/// The schedule less one directive, timed against it.
pub struct Removal {
    /// The directive removed, as text.
    pub directive: String,
    /// The variant's median time and its slowdown over the schedule (median of per-round
    /// ratios), or why it could not be built.
    pub outcome: Result<(Duration, f64), String>,
    /// The share of the schedule's log-speedup over the default the removal loses; `None`
    /// when the schedule is not faster than the default or the variant did not build.
    pub share: Option<f64>,
}

/// One step of the add-one path.
pub struct Step {
    /// The directive added (or `the rest together` when none of the rest builds alone).
    pub added: String,
    /// The median time with every directive added so far.
    pub time: Duration,
    /// Its speedup over the default (median of per-round ratios).
    pub speedup: f64,
}

/// What `strata explain` measured.
pub struct Explanation {
    /// The schedule explained.
    pub schedule: Schedule,
    /// The default schedule's median time and the schedule's.
    pub default_time: Duration,
    pub schedule_time: Duration,
    /// The schedule's speedup over the default (median of per-round ratios).
    pub speedup: f64,
    pub removals: Vec<Removal>,
    pub path: Vec<Step>,
    /// The schedule's time per function (`run --profile`'s).
    pub profile: Profile,
    /// Each function on this machine's roofline (`None`: no peak for the backend).
    pub roofline: Option<StageRoofline>,
}

/// What every measurement of one explanation shares.
struct Context<'a> {
    pipeline: &'a Pipeline,
    sizes: &'a Sizes,
    args: &'a Args,
    settings: &'a RunSettings,
    /// The reference answer, when checking.
    expected: Option<Buffer>,
}

/// Explains `schedule`: the default and the schedule timed together, each directive left out
/// in turn, then the add-one path.
pub fn explain(
    pipeline: &Pipeline,
    schedule: Schedule,
    sizes: &Sizes,
    args: &Args,
    settings: &RunSettings,
) -> Result<Explanation, String> {
    let expected = match settings.check {
        true => Some(run::reference(pipeline, args)?.0),
        false => None,
    };
    let cx = Context {
        pipeline,
        sizes,
        args,
        settings,
        expected,
    };
    let units = units(&schedule);
    let (removals, default_time, schedule_time, speedup) = leave_one_out(&cx, &schedule, &units)?;
    let path = add_one_path(&cx, &schedule, &units)?;
    let (profile, lowered) = profile_of(&cx, &schedule)?;
    let peaks = strata::jit::roofline::measure(true);
    let backend = settings.backend.name();
    let roofline = stage_roofline::place(&lowered, &profile, &peaks, settings.threads, backend);
    Ok(Explanation {
        roofline,
        schedule,
        default_time,
        schedule_time,
        speedup,
        removals,
        path,
        profile,
    })
}

/// The schedule's per-function profile, as `run --profile` takes it, and its loop nest.
fn profile_of(cx: &Context, schedule: &Schedule) -> Result<(Profile, LoweredKernel), String> {
    let lowered = strata::jit::lower_for(cx.pipeline, schedule, cx.sizes)
        .map_err(|e| format!("error: {e}"))?;
    let side = compare::side(
        "explained",
        cx.pipeline,
        schedule.clone(),
        cx.sizes,
        cx.args,
        cx.settings,
    )?;
    let profile = profile::profile(&lowered, cx.args, side.output(), cx.settings)?;
    Ok((profile, lowered))
}

/// Every directive of `schedule` but `specialize` (which says which version a line belongs
/// to, and stays with it).
fn units(schedule: &Schedule) -> Vec<Unit> {
    let mut out = Vec::new();
    for (l, line) in schedule.lines.iter().enumerate() {
        for (d, directive) in line.directives.iter().enumerate() {
            if matches!(directive, Directive::Specialize(_)) {
                continue;
            }
            // The line's `specialize` stays in front, naming its version.
            let specializes = (line.directives.iter())
                .filter(|d| matches!(d, Directive::Specialize(_)))
                .cloned();
            let alone = Line {
                directives: specializes.chain([directive.clone()]).collect(),
                ..line.clone()
            };
            out.push(Unit {
                line: l,
                index: d,
                text: alone.to_string(),
            });
        }
    }
    out
}

/// `schedule` with only the units `kept` says (and every `specialize`); lines left with no
/// directive are dropped.
fn keep(schedule: &Schedule, units: &[Unit], kept: &[bool]) -> Schedule {
    let dropped = |l: usize, d: usize| {
        units
            .iter()
            .zip(kept)
            .any(|(u, k)| !k && u.line == l && u.index == d)
    };
    let lines = schedule.lines.iter().enumerate().map(|(l, line)| Line {
        directives: (line.directives.iter().enumerate())
            .filter(|(d, _)| !dropped(l, *d))
            .map(|(_, directive)| directive.clone())
            .collect(),
        ..line.clone()
    });
    Schedule {
        lines: lines.filter(|line| !line.directives.is_empty()).collect(),
    }
}

/// Compiles `schedule` as side `label` and checks its first answer; `Ok(Err(why))` when it
/// does not build (an illegal variant: `why` is the error's first line), `Err` when its answer
/// is wrong.
fn build(cx: &Context, label: &str, schedule: Schedule) -> Result<Result<Side, String>, String> {
    let side = match compare::side(label, cx.pipeline, schedule, cx.sizes, cx.args, cx.settings) {
        Ok(side) => side,
        Err(why) => {
            let why = why.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            let prefix = format!("error: schedule {label}: ");
            return Ok(Err(why.strip_prefix(&prefix).unwrap_or(why).to_string()));
        }
    };
    if let Some(expected) = &cx.expected {
        let tolerance = run::tolerance(cx.pipeline);
        agree_within(side.output(), expected, tolerance)
            .map_err(|why| format!("error: schedule {label}: the answer is wrong: {why}"))?;
    }
    Ok(Ok(side))
}

/// Times `sides` together; per side its median time and the median over rounds of its
/// time over side `base`'s.
fn time_against(
    cx: &Context,
    sides: &mut [Side],
    base: usize,
) -> Result<Vec<(Duration, f64)>, String> {
    // One run per slice at least (`compare` takes three): a group holds up to a variant per
    // directive, some of them far slower than the schedule, and the median over the rounds
    // already ignores a round the machine interrupted.
    let rounds = Rounds {
        count: ROUNDS,
        slice: cx.settings.min_time / (ROUNDS * sides.len()) as u32,
        min_runs: 1,
    };
    let timed = interleaved(sides, cx.args, cx.settings.threads, &rounds)?;
    let base_rounds = &timed[base].round_medians;
    Ok(timed
        .iter()
        .map(|t| {
            let ratios = t.round_medians.iter().zip(base_rounds);
            let ratios = ratios.map(|(a, b)| seconds(*a) / seconds(*b)).collect();
            (median(t.times.clone()), median_f64(ratios))
        })
        .collect())
}

/// The leave-one-out table, and the default's and the schedule's times and speedup.
fn leave_one_out(
    cx: &Context,
    schedule: &Schedule,
    units: &[Unit],
) -> Result<(Vec<Removal>, Duration, Duration, f64), String> {
    let refused = |why: String| format!("error: the schedule: {why}");
    let default = build(cx, "default", Schedule::default())?.map_err(refused)?;
    let full = build(cx, "explained", schedule.clone())?.map_err(refused)?;
    let mut sides = vec![default, full];
    // Per unit: the index of its variant's side, or why the variant does not build.
    let mut variants: Vec<Result<usize, String>> = Vec::new();
    for (i, unit) in units.iter().enumerate() {
        let kept: Vec<bool> = (0..units.len()).map(|j| j != i).collect();
        let label = format!("without `{}`", unit.text);
        variants.push(match build(cx, &label, keep(schedule, units, &kept))? {
            Ok(side) => {
                sides.push(side);
                Ok(sides.len() - 1)
            }
            Err(why) => Err(why),
        });
    }
    let times = time_against(cx, &mut sides, 1)?;
    let (default_time, speedup) = times[0];
    let removals = units.iter().zip(variants).map(|(unit, variant)| {
        let outcome = variant.map(|at| times[at]);
        let share = match &outcome {
            Ok((_, slowdown)) if speedup > 1.0 => Some(slowdown.ln() / speedup.ln()),
            _ => None,
        };
        Removal {
            directive: unit.text.clone(),
            outcome,
            share,
        }
    });
    Ok((removals.collect(), default_time, times[1].0, speedup))
}

/// The add-one path: from the default, at each step every remaining directive added on its
/// own is timed against the default, and the fastest is kept. When none of the rest builds
/// without another (a `vectorize` of a loop only a remaining `split` makes), the rest are
/// added together.
fn add_one_path(cx: &Context, schedule: &Schedule, units: &[Unit]) -> Result<Vec<Step>, String> {
    let mut kept = vec![false; units.len()];
    let refused = |why: String| format!("error: the schedule: {why}");
    let mut default = build(cx, "default", Schedule::default())?.map_err(refused)?;
    let mut path = Vec::new();
    while kept.contains(&false) {
        let mut sides = vec![default];
        let mut candidates: Vec<Vec<usize>> = Vec::new();
        for i in (0..units.len()).filter(|&i| !kept[i]) {
            let mut with = kept.clone();
            with[i] = true;
            let label = format!("with `{}`", units[i].text);
            if let Ok(side) = build(cx, &label, keep(schedule, units, &with))? {
                candidates.push(vec![i]);
                sides.push(side);
            }
        }
        if candidates.is_empty() {
            let all = vec![true; units.len()];
            sides.push(build(cx, "explained", keep(schedule, units, &all))?.map_err(refused)?);
            candidates.push((0..units.len()).filter(|&i| !kept[i]).collect());
        }
        let times = time_against(cx, &mut sides, 0)?;
        // The fastest against the default: the least time ratio over it.
        let best = (1..sides.len())
            .min_by(|&a, &b| times[a].1.total_cmp(&times[b].1))
            .unwrap_or(1);
        let added = &candidates[best - 1];
        for &i in added {
            kept[i] = true;
        }
        let texts: Vec<&str> = added.iter().map(|&i| units[i].text.as_str()).collect();
        path.push(Step {
            added: match texts.as_slice() {
                [one] => one.to_string(),
                many => format!("the rest together: {}", many.join("; ")),
            },
            time: times[best].0,
            speedup: 1.0 / times[best].1,
        });
        default = sides.swap_remove(0);
    }
    Ok(path)
}

/// A duration in seconds, never zero (a ratio of two zero durations is 1, not NaN).
fn seconds(d: Duration) -> f64 {
    d.as_secs_f64().max(1e-9)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

fn median_f64(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The schedule's text, or `default` for the empty schedule.
fn schedule_text(schedule: &Schedule) -> String {
    let text = schedule.to_string();
    match text.trim().is_empty() {
        true => "default".to_string(),
        false => text,
    }
}

/// Milliseconds, four decimals.
fn ms(d: Duration) -> String {
    format!("{:.4}", d.as_secs_f64() * 1e3)
}

/// `strata explain`'s text report: the schedule and its speedup, the leave-one-out table and
/// the add-one path.
pub fn report_text(
    kernel: &Pipeline,
    sizes: &Sizes,
    settings: &RunSettings,
    e: &Explanation,
) -> String {
    let shape: Vec<String> = sizes.iter().map(|(n, v)| format!("{n}={v}")).collect();
    let mut lines = vec![
        format!(
            "{} {} threads {} backend {}; each group of variants timed in {ROUNDS} interleaved rounds",
            kernel.name,
            shape.join(","),
            settings.threads,
            settings.backend
        ),
        format!("schedule:\n{}", schedule_text(&e.schedule)),
        format!(
            "default {} ms, schedule {} ms: {:.2}x",
            ms(e.default_time),
            ms(e.schedule_time),
            e.speedup
        ),
        String::new(),
        "leave one out (the schedule without each directive in turn):".to_string(),
    ];
    let width = (e.removals.iter().map(|r| r.directive.len()))
        .chain(e.path.iter().map(|s| s.added.len().min(60)))
        .max()
        .unwrap_or(0)
        .max("directive".len());
    lines.push(format!(
        "  {:<width$}  {:>12}  {:>9}  {:>8}",
        "directive", "ms without", "slowdown", "share"
    ));
    for r in &e.removals {
        lines.push(match &r.outcome {
            Ok((time, slowdown)) => {
                let share = r
                    .share
                    .map_or("-".to_string(), |s| format!("{:.0}%", s * 100.0));
                format!(
                    "  {:<width$}  {:>12}  {:>8.2}x  {:>8}",
                    r.directive,
                    ms(*time),
                    slowdown,
                    share
                )
            }
            Err(why) => format!("  {:<width$}  cannot be removed alone: {why}", r.directive),
        });
    }
    lines.push(String::new());
    lines.push("add one (from the default, the directive that helps most first):".to_string());
    lines.push(format!(
        "  {:<width$}  {:>12}  {:>9}",
        "added", "ms", "speedup"
    ));
    for s in &e.path {
        lines.push(format!(
            "  {:<width$}  {:>12}  {:>8.2}x",
            s.added,
            ms(s.time),
            s.speedup
        ));
    }
    lines.push(String::new());
    lines.push(profile::table(&e.profile, settings.threads));
    lines.push(String::new());
    lines.push(stage_roofline::table(e.roofline.as_ref()));
    lines.push(String::new());
    lines.push(
        "share: the part of the schedule's speedup over the default (in logs) the removal loses; \
         negative when the schedule is faster without it"
            .to_string(),
    );
    lines.join("\n")
}

/// `strata explain --json`'s one line.
pub fn json_text(
    kernel: &Pipeline,
    sizes: &Sizes,
    settings: &RunSettings,
    e: &Explanation,
) -> String {
    let removal = |r: &Removal| match &r.outcome {
        Ok((time, slowdown)) => serde_json::json!({
            "directive": r.directive,
            "median_s": time.as_secs_f64(),
            "slowdown": slowdown,
            "share": r.share,
        }),
        Err(why) => serde_json::json!({ "directive": r.directive, "error": why }),
    };
    let step = |s: &Step| serde_json::json!({ "added": s.added, "median_s": s.time.as_secs_f64(), "speedup": s.speedup });
    serde_json::json!({
        "kernel": kernel.name,
        "shape": sizes,
        "threads": settings.threads,
        "backend": settings.backend.name(),
        "rounds": ROUNDS,
        "schedule": e.schedule.to_string(),
        "default_median_s": e.default_time.as_secs_f64(),
        "schedule_median_s": e.schedule_time.as_secs_f64(),
        "speedup": e.speedup,
        "leave_one_out": e.removals.iter().map(removal).collect::<Vec<_>>(),
        "add_one": e.path.iter().map(step).collect::<Vec<_>>(),
        "profile": profile::json(&e.profile),
        "roofline": stage_roofline::json(e.roofline.as_ref()),
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(text: &str) -> Schedule {
        text.parse().unwrap()
    }

    #[test]
    fn each_directive_is_a_unit_but_specialize() {
        let s = schedule("out: split(y, yo, yi, 8).vectorize(x, 4)\nbx: compute_root()");
        let texts: Vec<String> = units(&s).into_iter().map(|u| u.text).collect();
        assert_eq!(
            texts,
            [
                "out: split(y, yo, yi, 8)",
                "out: vectorize(x, 4)",
                "bx: compute_root()"
            ]
        );
    }

    #[test]
    fn keeping_drops_exactly_the_units_not_kept() {
        let s = schedule("out: split(y, yo, yi, 8).vectorize(x, 4)\nbx: compute_root()");
        let u = units(&s);
        assert_eq!(keep(&s, &u, &[true, true, true]), s);
        let without_vectorize = schedule("out: split(y, yo, yi, 8)\nbx: compute_root()");
        assert_eq!(keep(&s, &u, &[true, false, true]), without_vectorize);
        // A line left empty is dropped.
        assert_eq!(
            keep(&s, &u, &[true, true, false]),
            schedule("out: split(y, yo, yi, 8).vectorize(x, 4)")
        );
        assert_eq!(keep(&s, &u, &[false, false, false]), Schedule::default());
    }

    /// `specialize` says which version a line belongs to: it is no unit, and stays.
    #[test]
    fn a_specialized_line_keeps_its_condition() {
        let s = schedule("out.specialize(W >= 64): vectorize(x, 8).parallel(y)");
        let u = units(&s);
        let texts: Vec<&str> = u.iter().map(|u| u.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "out.specialize(W >= 64): vectorize(x, 8)",
                "out.specialize(W >= 64): parallel(y)"
            ]
        );
        let kept = keep(&s, &u, &[false, true]);
        assert_eq!(kept, schedule("out.specialize(W >= 64): parallel(y)"));
    }
}
