//! `strata report --html`: one self-contained page (inline SVG, inline CSS, no script).
//!
//! First a summary of every kernel and shape in the database, then per kernel and shape: its
//! numbers with the runs and trials they come from, plots drawn by `plotters` (best time so
//! far against trial and against wall time, the distribution of candidate times), the top
//! candidates (search and confirmed times, throughput, share of this machine's roofline,
//! schedule difference from the winner), failures by kind, the winning schedule and its loop
//! nest. Trials and the winner are as the text report defines them (its notes close the page).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use plotters::prelude::*;
use strata::tuning_db::{short_hash, Db, Measurement, ReportEntry, TRIAL_DEFINITION, WINNER_RULE};

use super::{ms, same_key, throughput};

/// How many candidates the top table lists.
const TOP: usize = 10;
/// The plots' size in pixels.
const PLOT: (u32, u32) = (540, 320);

/// One measurement of a key, with where it sits in the key's history.
struct Row {
    run_id: i64,
    m: Measurement,
    /// Seconds since its run started (the tuner's `elapsed_s`; older rows: whole seconds
    /// from the run's start stamp), plus the lengths of the key's earlier runs.
    wall_s: Option<f64>,
    /// Its place among the key's search trials, runs laid end to end (1, 2, …).
    index: u64,
}

/// This machine's roofline, when an entry was tuned on this CPU model.
pub struct Peak {
    roofline: strata::jit::roofline::Roofline,
    cpu_model: String,
}

impl Peak {
    /// Measures the roofline (`strata roofline --quick`, about 2 s) when some entry was tuned
    /// on this CPU model; `None` otherwise (the page says so).
    pub fn measure_if_useful(entries: &[ReportEntry]) -> Option<Peak> {
        let cpu_model = strata::tuner::tune::host_target(1).cpu_model;
        if !entries.iter().any(|e| e.key.target.cpu_model == cpu_model) {
            return None;
        }
        Some(Peak {
            roofline: strata::jit::roofline::measure(true),
            cpu_model,
        })
    }

    /// The attainable rate of `e` on this machine: (GFLOP/s or GB/s, what it is).
    /// Compute-bound kernels: min(fma peak × threads, arithmetic intensity × copy bandwidth);
    /// kernels without float work: the copy bandwidth.
    fn attainable(&self, e: &ReportEntry) -> Option<f64> {
        if e.key.target.cpu_model != self.cpu_model {
            return None;
        }
        let r = &self.roofline;
        let threads = e.key.target.threads as usize;
        let bandwidth = r.copy_bandwidth(threads);
        let Some(flops) = e.float_ops.filter(|&f| f > 0) else {
            return Some(bandwidth);
        };
        let fma = r.fma_peak(&e.key.backend, threads)?;
        let intensity = flops as f64 / e.bytes.max(1) as f64;
        Some(fma.min(intensity * bandwidth))
    }

    /// The share of the roofline a call of `seconds` reaches, as text.
    fn share(&self, e: &ReportEntry, seconds: f64) -> String {
        match (self.attainable(e), rate(e, seconds)) {
            (Some(peak), Some((achieved, _))) if peak > 0.0 => {
                format!("{:.0}%", achieved / peak * 100.0)
            }
            _ => "-".into(),
        }
    }

    fn describe(&self) -> String {
        let r = &self.roofline;
        let llvm = match &r.llvm {
            Some(Ok(p)) => {
                let widest = p.peaks.iter().map(|p| p.gflops).fold(0.0, f64::max);
                format!(", LLVM's widest fma peak {widest:.1} GFLOP/s per thread")
            }
            _ => String::new(),
        };
        format!(
            "Roofline measured by this report on this machine ({}; <code>strata roofline \
             --quick</code>): Cranelift f32x4 fma peak {:.1} GFLOP/s per thread{llvm}, copy \
             bandwidth {:.1} GB/s (1 thread) and {:.1} GB/s ({} threads). The share is the \
             achieved rate over min(fma peak &times; threads, arithmetic intensity &times; copy \
             bandwidth), or over the bandwidth for a kernel without float work; entries tuned on \
             another CPU have none.",
            escape(&self.cpu_model),
            r.f32x4_fma_gflops,
            r.copy_workload_1thread_gbps,
            r.copy_workload_all_threads_gbps,
            r.all_threads
        )
    }
}

/// GFLOP/s (or GB/s for a kernel without float work) at `seconds` per call, and its unit.
fn rate(e: &ReportEntry, seconds: f64) -> Option<(f64, &'static str)> {
    if seconds <= 0.0 {
        return None;
    }
    Some(match e.float_ops.filter(|&f| f > 0) {
        Some(f) => (f as f64 / seconds / 1e9, "GFLOP/s"),
        None => (e.bytes as f64 / seconds / 1e9, "GB/s"),
    })
}

fn rate_text(e: &ReportEntry, seconds: f64) -> String {
    rate(e, seconds).map_or("-".into(), |(v, unit)| format!("{v:.2} {unit}"))
}

/// The page. `nests[i]` is the loop nest of `entries[i]`'s winner (or why there is none).
pub fn page(db: &Db, entries: &[ReportEntry], nests: &[String], peak: Option<&Peak>) -> String {
    let mut page = String::from(HEAD);
    page.push_str("<h1>strata tuning report</h1>");
    let _ = write!(
        page,
        "<p class=note>Database <code>{}</code>. {}.<br>{}.</p>",
        escape(&db.path().display().to_string()),
        escape(&sentence(TRIAL_DEFINITION)),
        escape(&sentence(WINNER_RULE))
    );
    let rows: Vec<Vec<Row>> = entries.iter().map(|e| rows_of(db, e)).collect();
    summary_table(&mut page, entries, peak);
    match peak {
        Some(p) => {
            let _ = write!(page, "<p class=note>{}</p>", p.describe());
        }
        None => page.push_str(
            "<p class=note>No roofline share: no entry was tuned on this machine's CPU model, \
             and a roofline measured elsewhere is not in the database.</p>",
        ),
    }
    let over = |e: &ReportEntry| {
        let p = peak?;
        let (achieved, _) = rate(e, e.best_median_s?)?;
        Some(achieved > p.attainable(e)?)
    };
    if entries.iter().any(|e| over(e) == Some(true)) {
        page.push_str(
            "<p class=note>A share above 100% means the roofline measured now is lower than \
             what the kernel reached while it was tuned: the machine is busier now than then \
             (or the kernel's bytes stay in cache). Take the shares as rough.</p>",
        );
    }
    for (i, ((e, nest), rows)) in entries.iter().zip(nests).zip(&rows).enumerate() {
        entry_section(&mut page, i, e, nest, rows, peak);
    }
    page.push_str("</body></html>\n");
    page
}

const HEAD: &str = "<!doctype html><html lang=en><head><meta charset=\"utf-8\">\
<meta name=viewport content=\"width=device-width\"><title>strata tuning report</title><style>\
body{font-family:sans-serif;margin:2em auto;max-width:1140px;padding:0 1em;color:#222}\
h2{margin-top:2em;border-bottom:1px solid #ccc}\
pre,code{font-family:monospace;font-size:13px}\
pre{background:#f4f4f4;padding:.8em;white-space:pre-wrap;overflow-wrap:anywhere}\
pre.nest{max-height:40em;overflow:auto}\
table{border-collapse:collapse;margin:.5em 0;font-size:14px}\
td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}\
td.n{text-align:right;white-space:nowrap}\
td.diff{font-family:monospace;font-size:12px;overflow-wrap:anywhere;max-width:34em}\
.del,.add{white-space:nowrap}.del{color:#a11}.add{color:#161}.win{background:#eef8ee}\
.plots{display:flex;flex-wrap:wrap;gap:1em}.plots svg{border:1px solid #ddd}\
.note{color:#555;font-size:14px}.warn{color:#a11}\
</style></head><body>";

/// Every measurement of `e`'s key, runs in the order they started.
fn rows_of(db: &Db, e: &ReportEntry) -> Vec<Row> {
    let Ok(runs) = db.runs() else {
        return Vec::new();
    };
    let mut rows = Vec::new();
    let (mut offset, mut index) = (0.0, 0);
    let mut runs: Vec<_> = runs
        .into_iter()
        .filter(|(_, r)| same_key(&r.start.key, &e.key))
        .collect();
    runs.sort_by(|a, b| (&a.1.start.started_at, a.0).cmp(&(&b.1.start.started_at, b.0)));
    for (run_id, run) in runs {
        let Ok(ms) = db.measurements(run_id) else {
            continue;
        };
        let start = seconds_of(&run.start.started_at);
        let mut longest: f64 = 0.0;
        for m in ms {
            let own = m
                .settings
                .elapsed_s
                .or_else(|| Some(seconds_of(&m.measured_at)? - start?));
            if let Some(t) = own {
                longest = longest.max(t);
            }
            if !m.remeasured && !m.is_default {
                index += 1;
            }
            rows.push(Row {
                run_id,
                wall_s: own.map(|t| t + offset),
                index,
                m,
            });
        }
        offset += longest;
    }
    rows
}

/// Seconds since 1970 of a `YYYY-MM-DDTHH:MM:SS…Z` stamp (fractions ignored).
fn seconds_of(stamp: &str) -> Option<f64> {
    let num = |range: std::ops::Range<usize>| stamp.get(range)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    // Days from civil (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (mo + if mo > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + h * 3600 + mi * 60 + s) as f64)
}

fn summary_table(page: &mut String, entries: &[ReportEntry], peak: Option<&Peak>) {
    page.push_str(
        "<h2>Summary</h2><table><tr><th>kernel</th><th>shape</th><th>backend</th>\
         <th>threads</th><th>trials</th><th>runs</th><th>default</th><th>winner</th>\
         <th>speedup</th><th>throughput</th><th>roofline</th><th>failures</th></tr>",
    );
    for (i, e) in entries.iter().enumerate() {
        let winner = e.winner.as_ref().map_or("-".into(), |w| {
            format!(
                "{} ({}, run {} trial {})",
                ms(Some(w.median_s)),
                if w.remeasured { "confirmed" } else { "search" },
                w.run_id,
                w.trial
            )
        });
        let share = match (peak, e.best_median_s) {
            (Some(p), Some(t)) => p.share(e, t),
            _ => "-".into(),
        };
        let failures: u64 = e.failures.values().sum();
        let _ = write!(
            page,
            "<tr><td><a href=\"#k{i}\">{}</a></td><td>{}</td><td>{}</td><td class=n>{}</td>\
             <td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td>\
             <td class=n>{}</td><td class=n>{}</td><td class=n>{share}</td><td class=n>{failures}</td></tr>",
            escape(&e.key.kernel_name),
            escape(&super::instance_text(&e.key)),
            escape(&e.key.backend),
            e.key.target.threads,
            e.trials,
            e.runs,
            ms(e.default_median_s),
            winner,
            e.speedup.map_or("-".into(), |x| format!("{x:.2}x")),
            throughput(e),
        );
    }
    page.push_str("</table>");
}

fn entry_section(
    page: &mut String,
    i: usize,
    e: &ReportEntry,
    nest: &str,
    rows: &[Row],
    peak: Option<&Peak>,
) {
    let _ = write!(
        page,
        "<h2 id=\"k{i}\">{} &mdash; {}</h2><p>kernel hash <code>{}</code>, target {}, backend {}; \
         {} trials in {} run(s)</p>",
        escape(&e.key.kernel_name),
        escape(&super::instance_text(&e.key)),
        escape(short_hash(&e.key.kernel_hash)),
        escape(&e.key.target.to_string()),
        escape(&e.key.backend),
        e.trials,
        e.runs
    );
    for warning in super::entry_warnings(e) {
        let _ = write!(page, "<p class=warn>Warning: {}</p>", escape(&warning));
    }
    numbers_table(page, e, rows);
    page.push_str("<div class=plots>");
    for svg in [
        best_so_far_svg(rows, e, Axis::Trial),
        best_so_far_svg(rows, e, Axis::Wall),
        distribution_svg(rows),
    ] {
        match svg {
            Ok(svg) => page.push_str(&svg),
            Err(why) => {
                let _ = write!(page, "<p class=note>(no plot: {})</p>", escape(&why));
            }
        }
    }
    page.push_str("</div>");
    top_table(page, e, rows, peak);
    failures_table(page, rows);
    let winner = e.best_schedule.as_deref().unwrap_or("");
    let shown = if winner.is_empty() {
        "(the default schedule)"
    } else {
        winner
    };
    let _ = write!(
        page,
        "<h3>Winning schedule</h3><pre>{}</pre><h3>Its loop nest</h3><pre class=nest>{}</pre>",
        escape(shown),
        escape(nest)
    );
}

/// Search and confirmed times of the default and the best, with their runs and trials.
fn numbers_table(page: &mut String, e: &ReportEntry, rows: &[Row]) {
    let named = |t: Option<&strata::tuning_db::TrialTime>| {
        t.map_or("-".into(), |t| {
            format!("run {} trial {}", t.run_id, t.trial)
        })
    };
    let winner = e.winner.as_ref();
    // The other time of a named measurement: its search row's, or its confirmation's (not
    // an unstable one: its times are not trusted).
    let other = |t: Option<&strata::tuning_db::TrialTime>, remeasured: bool| {
        let t = t?;
        rows.iter()
            .find(|r| {
                r.run_id == t.run_id
                    && r.m.trial == t.trial
                    && r.m.remeasured == remeasured
                    && r.m.schedule_hash == t.schedule_hash
                    && r.m.status.is_ok()
            })
            .and_then(|r| r.m.median_s)
    };
    let time = |t: Option<&strata::tuning_db::TrialTime>, remeasured: bool| match t {
        Some(t) if t.remeasured == remeasured => Some(t.median_s),
        _ => other(t, remeasured),
    };
    let search_best = e.search_best.as_ref();
    let _ = write!(
        page,
        "<table><tr><th></th><th>search (first measurement)</th><th>confirmed (re-measured in a \
         fresh worker)</th><th>from</th></tr>\
         <tr><td>default schedule</td><td class=n>{}</td><td class=n>{}</td><td>trial 0</td></tr>\
         <tr><td>search best</td><td class=n>{}</td><td class=n>{}</td><td>{}</td></tr>\
         <tr class=win><td>winner</td><td class=n>{}</td><td class=n>{}</td><td>{}</td></tr>\
         </table><p>speedup {} over the default; {} at the winner's time</p>",
        ms(e.default_search_s),
        ms(e.default_confirmed_s),
        ms(time(search_best, false)),
        ms(time(search_best, true)),
        named(search_best),
        ms(time(winner, false)),
        ms(time(winner, true)),
        named(winner),
        e.speedup.map_or("-".into(), |x| format!("{x:.2}x")),
        throughput(e)
    );
}

#[derive(Clone, Copy, PartialEq)]
enum Axis {
    Trial,
    Wall,
}

/// The best search time so far (log scale, ms) against the trial or the wall time, each
/// candidate as a dot, and the winner's confirmed time as a line.
fn best_so_far_svg(rows: &[Row], e: &ReportEntry, axis: Axis) -> Result<String, String> {
    let points: Vec<(f64, f64)> = rows
        .iter()
        .filter(|r| !r.m.remeasured && r.m.status.is_ok())
        .filter_map(|r| {
            let x = match axis {
                Axis::Trial => r.index as f64,
                Axis::Wall => r.wall_s?,
            };
            Some((x, r.m.median_s? * 1e3))
        })
        .collect();
    if points.is_empty() {
        return Err("no timed candidate".into());
    }
    let mut best = f64::INFINITY;
    let mut steps = Vec::new();
    for &(x, y) in &points {
        if y < best {
            if best.is_finite() {
                steps.push((x, best));
            }
            best = y;
            steps.push((x, y));
        }
    }
    let x_max = points.iter().map(|p| p.0).fold(0.0, f64::max).max(1.0) * 1.02;
    if let Some(&(_, last)) = steps.last() {
        steps.push((x_max, last));
    }
    let winner = e.winner.as_ref().map(|w| w.median_s * 1e3);
    let (lo, hi) = y_range(points.iter().map(|p| p.1).chain(winner));
    let (caption, x_desc) = match axis {
        Axis::Trial => (
            "Best time so far by trial",
            "trial (search candidates; runs end to end)",
        ),
        Axis::Wall => (
            "Best time so far by wall time",
            "wall time, s (runs end to end; each from its start, reference included)",
        ),
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, PLOT).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(46)
            .y_label_area_size(70)
            .build_cartesian_2d(
                0f64..x_max,
                (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)),
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc("median per call, ms (log)")
            .axis_desc_style(("sans-serif", 13))
            .label_style(("sans-serif", 12))
            .y_label_formatter(&|v| short_number(*v))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(err)?;
        let grey = RGBColor(150, 150, 150);
        chart
            .draw_series(
                points
                    .iter()
                    .map(|&p| Circle::new(p, 2, grey.mix(0.6).filled())),
            )
            .map_err(err)?
            .label("candidate (search time)")
            .legend(move |(x, y)| Circle::new((x + 10, y), 3, grey.filled()));
        let blue = RGBColor(40, 90, 200);
        chart
            .draw_series(LineSeries::new(steps, blue.stroke_width(2)))
            .map_err(err)?
            .label("best so far (search)")
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], blue.stroke_width(2))
            });
        if let Some(w) = winner {
            let green = RGBColor(30, 140, 60);
            chart
                .draw_series(LineSeries::new(
                    vec![(0.0, w), (x_max, w)],
                    green.stroke_width(1),
                ))
                .map_err(err)?
                .label("winner (confirmed)")
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], green));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .label_font(("sans-serif", 12))
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// How many candidates fell in each band of time (log-spaced bins, ms).
fn distribution_svg(rows: &[Row]) -> Result<String, String> {
    const BINS: usize = 24;
    let times: Vec<f64> = rows
        .iter()
        .filter(|r| !r.m.remeasured && r.m.status.is_ok())
        .filter_map(|r| r.m.median_s.map(|t| t * 1e3))
        .collect();
    if times.is_empty() {
        return Err("no timed candidate".into());
    }
    let (lo, hi) = y_range(times.iter().copied());
    let step = (hi / lo).ln() / BINS as f64;
    let edge = |i: usize| lo * (step * i as f64).exp();
    let mut counts = [0u32; BINS];
    for t in &times {
        let bin = ((t / lo).ln() / step).floor().max(0.0) as usize;
        counts[bin.min(BINS - 1)] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(1).max(1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, PLOT).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let caption = format!("Candidate times ({} timed candidates)", times.len());
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(46)
            .y_label_area_size(52)
            .build_cartesian_2d(
                (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)),
                0u32..top + top / 8 + 1,
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("median per call, ms (log bins)")
            .y_desc("candidates")
            .axis_desc_style(("sans-serif", 13))
            .label_style(("sans-serif", 12))
            .x_label_formatter(&|v| short_number(*v))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(err)?;
        let green = RGBColor(90, 160, 70);
        chart
            .draw_series(
                counts
                    .iter()
                    .enumerate()
                    .filter(|(_, &c)| c > 0)
                    .map(|(i, &c)| {
                        Rectangle::new([(edge(i), 0), (edge(i + 1), c)], green.filled())
                    }),
            )
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// A log axis's range around `values` (positive), a little wider than they are.
fn y_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| *v > 0.0 && v.is_finite())
        .fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    if !lo.is_finite() {
        return (0.1, 1.0);
    }
    (lo / 1.15, (hi * 1.15).max(lo * 1.5))
}

/// Tick values of a log axis over `lo..hi`: the 1-2-5 steps of each decade, or finer steps
/// when the range is too narrow to hold three of those.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let within = |steps: &[f64]| -> Vec<f64> {
        let first = lo.log10().floor() as i32;
        let last = hi.log10().ceil() as i32;
        (first..=last)
            .flat_map(|d| steps.iter().map(move |s| s * 10f64.powi(d)))
            .filter(|v| (lo..=hi).contains(v))
            .collect()
    };
    let coarse = within(&[1.0, 2.0, 5.0]);
    if coarse.len() >= 3 {
        return coarse;
    }
    within(&[1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0])
}

/// `0.0958`, `1.61`, `28.5`, `1200`: enough digits for an axis label.
fn short_number(v: f64) -> String {
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else if v >= 1.0 {
        2
    } else {
        (2 - v.log10().floor() as i32).clamp(2, 6) as usize
    };
    format!("{v:.digits$}")
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The fastest candidates by search time, one row per schedule, with its confirmed time.
fn top_table(page: &mut String, e: &ReportEntry, rows: &[Row], peak: Option<&Peak>) {
    let mut best: BTreeMap<&str, (&Row, Option<f64>)> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.m.status.is_ok()) {
        let Some(t) = r.m.median_s else { continue };
        let slot = best.entry(r.m.schedule_hash.as_str()).or_insert((r, None));
        if r.m.remeasured {
            slot.1 = Some(slot.1.map_or(t, |c: f64| c.min(t)));
        } else if slot.0.m.remeasured || slot.0.m.median_s.is_some_and(|s| t < s) {
            slot.0 = r;
        }
    }
    let mut ranked: Vec<(&Row, Option<f64>)> = best
        .into_values()
        .filter(|(r, _)| !r.m.remeasured)
        .collect();
    ranked.sort_by(|a, b| {
        let (x, y) = (
            a.0.m.median_s.unwrap_or(f64::MAX),
            b.0.m.median_s.unwrap_or(f64::MAX),
        );
        x.total_cmp(&y)
    });
    let winner_hash = e.best_schedule_hash.as_deref();
    let winner_text = e.best_schedule.as_deref().unwrap_or("");
    let _ = write!(
        page,
        "<h3>Top {} candidates by search time</h3><table><tr><th>#</th><th>run, trial</th>\
         <th>search</th><th>confirmed</th><th>throughput</th><th>roofline</th>\
         <th>schedule, as a difference from the winner's</th></tr>",
        ranked.len().min(TOP)
    );
    for (n, (r, confirmed)) in ranked.iter().take(TOP).enumerate() {
        let search = r.m.median_s.unwrap_or(0.0);
        let shown = confirmed.unwrap_or(search);
        let is_winner = Some(r.m.schedule_hash.as_str()) == winner_hash;
        let share = peak.map_or("-".into(), |p| p.share(e, shown));
        let what = if r.m.is_default { " (default)" } else { "" };
        let _ = write!(
            page,
            "<tr{}><td class=n>{}</td><td>run {}, trial {}{what}</td><td class=n>{}</td>\
             <td class=n>{}</td><td class=n>{}</td><td class=n>{share}</td><td class=diff>{}</td></tr>",
            if is_winner { " class=win" } else { "" },
            n + 1,
            r.run_id,
            r.m.trial,
            ms(Some(search)),
            ms(*confirmed),
            rate_text(e, shown),
            if is_winner {
                "the winner".to_string()
            } else {
                schedule_diff(winner_text, &r.m.schedule)
            }
        );
    }
    page.push_str(
        "</table><p class=note>Throughput and roofline share at the confirmed time when there \
         is one, else at the search time.</p>",
    );
}

/// Each stage's directives: `C.update(0)` → [`split(i, i_o, i_i, 4)`, …].
fn directives(schedule: &str) -> BTreeMap<String, Vec<String>> {
    let mut stages = BTreeMap::new();
    for line in schedule.lines().flat_map(|l| l.split(';')) {
        let Some((stage, rest)) = line.split_once(':') else {
            continue;
        };
        let mut list = Vec::new();
        let mut depth = 0;
        let mut current = String::new();
        for c in rest.trim().chars() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                '.' if depth == 0 => {
                    list.push(std::mem::take(&mut current));
                    continue;
                }
                _ => {}
            }
            current.push(c);
        }
        if !current.is_empty() {
            list.push(current);
        }
        stages.insert(stage.trim().to_string(), list);
    }
    stages
}

/// The directives `candidate` drops (−) and adds (+) relative to `winner`, per stage.
fn schedule_diff(winner: &str, candidate: &str) -> String {
    let (w, c) = (directives(winner), directives(candidate));
    let mut out = String::new();
    let stages: std::collections::BTreeSet<&String> = w.keys().chain(c.keys()).collect();
    for stage in stages {
        let empty = Vec::new();
        let (a, b) = (
            w.get(stage).unwrap_or(&empty),
            c.get(stage).unwrap_or(&empty),
        );
        let removed: Vec<&String> = a.iter().filter(|d| !b.contains(d)).collect();
        let added: Vec<&String> = b.iter().filter(|d| !a.contains(d)).collect();
        if removed.is_empty() && added.is_empty() {
            if a != b {
                let _ = write!(out, "{}: same directives, another order<br>", escape(stage));
            }
            continue;
        }
        let _ = write!(out, "{}:", escape(stage));
        for d in removed {
            let _ = write!(out, " <span class=del>&minus;{}</span>", escape(d));
        }
        for d in added {
            let _ = write!(out, " <span class=add>+{}</span>", escape(d));
        }
        out.push_str("<br>");
    }
    if out.is_empty() {
        "same directives as the winner".into()
    } else {
        out
    }
}

/// Failed search measurements by kind, with the first one's detail.
fn failures_table(page: &mut String, rows: &[Row]) {
    let mut kinds: BTreeMap<&str, (u64, &Row)> = BTreeMap::new();
    for r in rows
        .iter()
        .filter(|r| !r.m.remeasured && !r.m.status.is_ok())
    {
        kinds.entry(r.m.status.kind()).or_insert((0, r)).0 += 1;
    }
    if kinds.is_empty() {
        page.push_str("<h3>Failures</h3><p>none</p>");
        return;
    }
    page.push_str(
        "<h3>Failures by kind</h3><table><tr><th>kind</th><th>count</th>\
         <th>first (run, trial): detail</th></tr>",
    );
    for (kind, (n, first)) in kinds {
        let detail = first.m.status.detail().unwrap_or("");
        let detail: String = detail.chars().take(300).collect();
        let _ = write!(
            page,
            "<tr><td>{}</td><td class=n>{n}</td><td class=diff>run {}, trial {}: {}</td></tr>",
            escape(kind),
            first.run_id,
            first.m.trial,
            escape(&detail)
        );
    }
    page.push_str("</table>");
}

/// `text` with its first letter capitalised.
fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map_or(String::new(), |c| c.to_uppercase().chain(chars).collect())
}

/// Text as HTML (element content and double-quoted attributes).
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_difference_names_what_changed_per_stage() {
        let winner = "C: split(i, i_o, i_i, 4).vectorize(i_i, 4)\nC.update(0): unroll(k, 2)";
        let other = "C: split(i, i_o, i_i, 8).vectorize(i_i, 4)\nC.update(0): unroll(k, 2)";
        let diff = schedule_diff(winner, other);
        assert!(diff.starts_with("C:"), "{diff}");
        assert!(diff.contains("&minus;split(i, i_o, i_i, 4)"), "{diff}");
        assert!(diff.contains("+split(i, i_o, i_i, 8)"), "{diff}");
        assert!(!diff.contains("update"), "{diff}");
        assert_eq!(
            schedule_diff(winner, winner),
            "same directives as the winner"
        );
        assert!(schedule_diff(winner, "").contains("&minus;unroll(k, 2)"));
    }

    #[test]
    fn stamps_read_as_seconds() {
        assert_eq!(seconds_of("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(seconds_of("2000-03-01T00:00:01Z"), Some(951_868_801.0));
        assert_eq!(seconds_of("garbage"), None);
    }
}
