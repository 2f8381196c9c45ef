//! `strata tune`, `strata report` and `strata db`: the command line of the tuner and of the
//! tuning database.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use strata::tuner::{StrategyKind, TuneOptions, WorkerCommand};
use strata::tuning_db::{printable, short_hash, Db, DbError, Measurement, ReportEntry, Run};
use strata::{Pipeline, Sizes};

/// Settings of `strata tune` beyond the kernel and shape.
pub struct TuneSettings {
    pub trials: Option<u64>,
    pub time: Option<f64>,
    pub strategy: StrategyKind,
    pub seed: u64,
    pub threads: usize,
    pub min_time: f64,
    /// Seconds a candidate may take before its worker is killed.
    pub timeout: f64,
    /// The code generator of every candidate (one this build has).
    pub backend: strata::Backend,
}

pub fn tune(
    db_path: &Path,
    kernel: &Pipeline,
    source: &str,
    sizes: &Sizes,
    settings: &TuneSettings,
) -> Result<(), String> {
    let timeout = Duration::try_from_secs_f64(settings.timeout)
        .ok()
        .filter(|t| !t.is_zero())
        .ok_or_else(|| {
            format!(
                "error: --timeout must be a positive number of seconds, not {}",
                settings.timeout
            )
        })?;
    let db = Db::open(db_path).map_err(|e| format!("error: {e}"))?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let _ = ctrlc::set_handler(move || flag.store(true, std::sync::atomic::Ordering::SeqCst));
    let trials = match (settings.trials, settings.time) {
        (None, None) => Some(strata::tuner::tune::DEFAULT_TRIALS),
        (t, _) => t,
    };
    let options = TuneOptions {
        trials,
        time: settings.time.map(Duration::from_secs_f64),
        strategy: settings.strategy,
        seed: settings.seed,
        threads: settings.threads,
        min_time: Duration::from_secs_f64(settings.min_time),
        timeout,
        worker: WorkerCommand::current_exe().map_err(|e| format!("error: {e}"))?,
        backend: settings.backend,
        stop,
        progress: true,
    };
    let result = strata::tuner::tune(&db, kernel, source, sizes, &options)
        .map_err(|e| format!("error: {e}"))?;
    crate::print_out(&format!(
        "stopped: {} after {} trials",
        result.stop, result.trials
    ))?;
    report(db_path, Some(&kernel.name), false, None)
}

/// Prints the report of every (or one) kernel: text, JSON, and optionally an HTML page.
pub fn report(
    db_path: &Path,
    kernel: Option<&str>,
    json: bool,
    html: Option<&Path>,
) -> Result<(), String> {
    let db = Db::open_read_only(db_path).map_err(|e| format!("error: {e}"))?;
    let entries = db.report(kernel).map_err(|e| format!("error: {e}"))?;
    if json {
        crate::print_out(&serde_json::to_string_pretty(&entries).map_err(|e| e.to_string())?)?;
    } else if entries.is_empty() {
        crate::print_out(&format!(
            "no tuning results in {}{}",
            db_path.display(),
            kernel
                .map(|k| format!(" for kernel `{}`", printable(k)))
                .unwrap_or_default()
        ))?;
    } else {
        let texts: Vec<String> = entries.iter().map(text_entry).collect();
        crate::print_out(&texts.join("\n"))?;
    }
    if let Some(path) = html {
        let nests: Vec<String> = entries.iter().map(|e| winner_loop_nest(&db, e)).collect();
        let page = html_page(&entries, &nests);
        db.write_output(path, |out| Ok(out.write_all(page.as_bytes())?))
            .map_err(|e| format!("error: {e}"))?;
        crate::print_out(&format!("wrote {}", path.display()))?;
    }
    Ok(())
}

fn ms(seconds: Option<f64>) -> String {
    seconds.map_or("-".into(), |s| format!("{:.4} ms", s * 1e3))
}

/// Throughput at the best time: GFLOP/s when the kernel does float work, and GB/s.
fn throughput(e: &ReportEntry) -> String {
    let Some(t) = e.best_median_s.filter(|t| *t > 0.0) else {
        return "-".into();
    };
    let gbps = e.bytes as f64 / t / 1e9;
    match e.float_ops.filter(|&f| f > 0) {
        Some(f) => format!("{:.2} GFLOP/s, {gbps:.2} GB/s", f as f64 / t / 1e9),
        None => format!("{gbps:.2} GB/s"),
    }
}

fn text_entry(e: &ReportEntry) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "kernel {} ({})  shape {}  target {}  backend {}",
        printable(&e.key.kernel_name),
        printable(short_hash(&e.key.kernel_hash)),
        printable(&e.key.shape),
        e.key.target,
        printable(&e.key.backend)
    );
    let _ = writeln!(s, "  default schedule: {}", ms(e.default_median_s));
    let speedup = e.speedup.map_or("-".into(), |x| format!("{x:.2}x"));
    let _ = writeln!(
        s,
        "  best: {}  speedup {speedup}  {}",
        ms(e.best_median_s),
        throughput(e)
    );
    let failures: Vec<String> = e
        .failures
        .iter()
        .map(|(k, v)| format!("{} {v}", printable(k)))
        .collect();
    let failures = if failures.is_empty() {
        "none".to_string()
    } else {
        failures.join(", ")
    };
    let _ = writeln!(
        s,
        "  trials: {} in {} run(s); failures: {failures}",
        e.trials, e.runs
    );
    if let Some(schedule) = &e.best_schedule {
        let schedule = if schedule.is_empty() {
            "(the default schedule)"
        } else {
            schedule.as_str()
        };
        let _ = writeln!(
            s,
            "  winning schedule:\n{}",
            schedule
                .lines()
                .map(|l| format!("    {}", printable(l)))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    s
}

/// The loop nest of an entry's winning schedule at its shape, from the kernel source its runs
/// recorded (or why it cannot be shown).
fn winner_loop_nest(db: &Db, e: &ReportEntry) -> String {
    let source = db.runs().ok().and_then(|runs| {
        runs.into_iter()
            .rev()
            .find(|(_, r)| r.start.key == e.key)
            .map(|(_, r)| r.start.kernel_source)
    });
    let Some(source) = source else {
        return "(the kernel source is not in the database)".into();
    };
    let lowered = (|| {
        let kernel = kernel_of(&source, &e.key.kernel_name, &e.key.kernel_hash)?;
        let schedule = strata::tuner::tune::checked_schedule(
            &kernel,
            e.best_schedule.as_deref().unwrap_or(""),
        )?;
        let lowered = strata::lower(&kernel, &schedule).map_err(|err| err.to_string())?;
        let sizes: Sizes = e
            .key
            .shape
            .split(',')
            .filter_map(|p| p.split_once('='))
            .filter_map(|(n, v)| Some((n.to_string(), v.parse().ok()?)))
            .collect();
        strata::scheduler::lower::bind_sizes(&lowered, &sizes).map_err(|err| err.to_string())
    })();
    match lowered {
        Ok(k) => k.to_string(),
        Err(err) => format!("(cannot lower the winner: {err})"),
    }
}

/// The kernel `name` of the source a run recorded, if its hash is `hash`: a record's
/// schedules are checked against the kernel it says it tuned.
fn kernel_of(source: &str, name: &str, hash: &str) -> Result<Pipeline, String> {
    let kernels = strata::parse_kernels(source, "kernel")
        .map_err(|d| format!("its kernel source does not parse: {}", d.message))?;
    let kernel = kernels
        .into_iter()
        .find(|k| k.name == name)
        .ok_or_else(|| format!("its kernel source has no kernel `{name}`"))?;
    if kernel.hash().to_string() != hash {
        return Err(format!(
            "its kernel hash {hash} is not the hash of its kernel source ({})",
            kernel.hash()
        ));
    }
    Ok(kernel)
}

/// One self-contained page: per kernel and shape, the best-so-far curve against trials, the
/// distribution of candidate times, the winning schedule and its loop nest.
fn html_page(entries: &[ReportEntry], nests: &[String]) -> String {
    let mut page = String::from("<!doctype html><html><head><meta charset=\"utf-8\"><title>strata tuning report</title><style>body{font-family:sans-serif;margin:2em}pre{background:#f4f4f4;padding:1em}svg{border:1px solid #ccc;margin-right:1em}</style></head><body><h1>strata tuning report</h1>");
    for (e, nest) in entries.iter().zip(nests) {
        let _ = write!(page, "<h2>{} &mdash; {}</h2><p>target {}, backend {}<br>default {}, best {}, speedup {}, {}<br>trials {}, runs {}</p>",
            escape(&e.key.kernel_name), escape(&e.key.shape), escape(&e.key.target.to_string()), escape(&e.key.backend), ms(e.default_median_s), ms(e.best_median_s),
            e.speedup.map_or("-".into(), |x| format!("{x:.2}x")), throughput(e), e.trials, e.runs);
        page.push_str(&best_so_far_svg(&e.series));
        page.push_str(&histogram_svg(&e.series));
        let _ = write!(
            page,
            "<h3>winning schedule</h3><pre>{}</pre>",
            escape(e.best_schedule.as_deref().unwrap_or(""))
        );
        let _ = write!(page, "<h3>its loop nest</h3><pre>{}</pre>", escape(nest));
    }
    page.push_str("</body></html>");
    page
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

const W: f64 = 420.0;
const H: f64 = 220.0;

/// The best time so far (log scale) against the trial number.
fn best_so_far_svg(series: &[(u64, f64)]) -> String {
    let mut best = f64::INFINITY;
    let points: Vec<(f64, f64)> = series
        .iter()
        .enumerate()
        .map(|(i, &(_, t))| {
            best = best.min(t);
            (i as f64, best.ln())
        })
        .collect();
    let mut svg = format!("<svg width=\"{W}\" height=\"{H}\"><text x=\"8\" y=\"16\">best time so far (log) vs trial</text>");
    if let (Some(&(_, first)), Some(&(last_x, last))) = (points.first(), points.last()) {
        let (lo, hi) = (last.min(first), first.max(last) + 1e-9);
        let x = |v: f64| 10.0 + v / last_x.max(1.0) * (W - 20.0);
        let y = |v: f64| H - 10.0 - (v - lo) / (hi - lo).max(1e-9) * (H - 40.0);
        let path: Vec<String> = points
            .iter()
            .map(|&(a, b)| format!("{:.1},{:.1}", x(a), y(b)))
            .collect();
        let _ = write!(
            svg,
            "<polyline fill=\"none\" stroke=\"#36c\" stroke-width=\"2\" points=\"{}\"/>",
            path.join(" ")
        );
    }
    svg.push_str("</svg>");
    svg
}

/// How many candidates fell in each band of log(time).
fn histogram_svg(series: &[(u64, f64)]) -> String {
    const BINS: usize = 20;
    let logs: Vec<f64> = series.iter().map(|&(_, t)| t.ln()).collect();
    let mut svg = format!("<svg width=\"{W}\" height=\"{H}\"><text x=\"8\" y=\"16\">candidate times (log), {} candidates</text>", logs.len());
    let (lo, hi) = logs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    if lo.is_finite() {
        let mut counts = [0usize; BINS];
        for v in &logs {
            let bin = (((v - lo) / (hi - lo).max(1e-9)) * (BINS as f64 - 1.0)).round() as usize;
            counts[bin.min(BINS - 1)] += 1;
        }
        let top = *counts.iter().max().unwrap_or(&1) as f64;
        let bar_w = (W - 20.0) / BINS as f64;
        for (i, &c) in counts.iter().enumerate() {
            let h = c as f64 / top * (H - 40.0);
            let _ = write!(
                svg,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"#6a4\"/>",
                10.0 + i as f64 * bar_w,
                H - 10.0 - h,
                bar_w - 1.0
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

pub fn export(db_path: &Path, out: Option<&Path>) -> Result<(), String> {
    let db = Db::open_read_only(db_path).map_err(|e| format!("error: {e}"))?;
    let n = match out {
        Some(path) => db.write_output(path, |file| db.export(file)),
        None => match db.export(&mut std::io::stdout().lock()) {
            // The reader stopped early (`strata db export | head`): end quietly, as
            // `print_out` does.
            Err(DbError::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            written => written,
        },
    }
    .map_err(|e| format!("error: {e}"))?;
    eprintln!("exported {n} records");
    Ok(())
}

/// Imports an export file; every measurement's schedule must fit the kernel its run
/// recorded (by source and hash), or nothing is imported.
pub fn import(db_path: &Path, input: &Path) -> Result<(), String> {
    let db = Db::open(db_path).map_err(|e| format!("error: {e}"))?;
    let file = std::fs::File::open(input)
        .map_err(|e| format!("error: cannot read {}: {e}", input.display()))?;
    let kernels: RefCell<HashMap<String, Result<Pipeline, String>>> = RefCell::default();
    let check = |run: &Run, m: &Measurement| {
        let mut kernels = kernels.borrow_mut();
        let key = &run.start.key;
        let kernel = kernels.entry(run.uid.clone()).or_insert_with(|| {
            kernel_of(&run.start.kernel_source, &key.kernel_name, &key.kernel_hash)
        });
        let kernel = kernel.as_ref().map_err(|why| printable(why).into_owned())?;
        known_backend(&key.backend)?;
        strata::tuner::tune::checked_schedule(kernel, &m.schedule)
            .map(|_| ())
            .map_err(|why| printable(&why).into_owned())
    };
    let n = db
        .import_checked(&mut std::io::BufReader::new(file), &check)
        .map_err(|e| format!("error: {e}"))?;
    eprintln!("imported {n} records");
    Ok(())
}

/// Refuses a record of a backend this strata does not know (a typo or a newer strata's):
/// nothing could ever use it, and a report would list it as if it could. A known backend
/// this build lacks is fine: another build of the same strata uses its records.
fn known_backend(name: &str) -> Result<(), String> {
    match strata::Backend::from_name(name) {
        Some(_) => Ok(()),
        None => {
            let known: Vec<&str> = strata::Backend::ALL.iter().map(|b| b.name()).collect();
            Err(format!(
                "its backend `{}` is none strata knows ({})",
                printable(name),
                known.join(", ")
            ))
        }
    }
}

/// The database's best winning schedule for a kernel at a shape on this machine with
/// `backend` (one that fits the kernel: others are skipped with a warning), as text; the
/// default schedule, with a warning, when no stored winner fits.
pub fn best_schedule(
    db_path: &Path,
    kernel: &Pipeline,
    sizes: &Sizes,
    threads: usize,
    backend: strata::Backend,
) -> Result<String, String> {
    let db = Db::open_read_only(db_path).map_err(|e| format!("error: {e}"))?;
    let key = strata::tuner::tune::tuning_key(kernel, sizes, threads, backend);
    let usable = strata::tuner::tune::usable_winner(&db, kernel, &key)
        .map_err(|miss| format!("error: no tuned schedule: {miss}"))?;
    for why in &usable.skipped {
        eprintln!("warning: {why}");
    }
    match usable.found {
        Some((schedule, _)) => Ok(schedule.to_string()),
        None => {
            eprintln!(
                "warning: no stored winner for `{}` fits it: using the default schedule",
                kernel.name
            );
            Ok(String::new())
        }
    }
}
