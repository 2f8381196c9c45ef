//! `strata tune`, `strata report` and `strata db`: the command line of the tuner and of the
//! tuning database.

mod html;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use strata::tuner::tune::TrialTime;
use strata::tuner::{StrategyKind, TuneOptions, TuneResult, WorkerCommand};
use strata::tuning_db::{
    printable, short_hash, Db, DbError, Measurement, ReportEntry, Run, TuningKey, TRIAL_DEFINITION,
    WINNER_RULE,
};
use strata::{Pipeline, Schedule, Sizes, Value};

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
    /// The relative float tolerance of the answers' check.
    pub tolerance: f64,
    /// The code generator of every candidate (one this build has).
    pub backend: strata::Backend,
    /// Print the final summary as one JSON object instead of text and the report.
    pub json: bool,
}

pub fn tune(
    db_path: &Path,
    kernel: &Pipeline,
    source: &str,
    sizes: &Sizes,
    (params, inputs): (Vec<(String, Value)>, Vec<(String, strata::Buffer)>),
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
        params,
        inputs,
        tolerance: settings.tolerance,
        min_time: Duration::from_secs_f64(settings.min_time),
        timeout,
        worker: WorkerCommand::current_exe().map_err(|e| format!("error: {e}"))?,
        backend: settings.backend,
        stop,
        progress: true,
    };
    let result = strata::tuner::tune(&db, kernel, source, sizes, &options)
        .map_err(|e| format!("error: {e}"))?;
    let key = result.key.clone();
    let entry = db
        .report(Some(&kernel.name))
        .map_err(|e| format!("error: {e}"))?
        .into_iter()
        .find(|e| same_key(&e.key, &key))
        .ok_or_else(|| "error: the run's results are not in the report".to_string())?;
    if settings.json {
        let summary = summary_json(&result, &entry);
        return crate::print_out(
            &serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?,
        );
    }
    crate::print_out(&summary_text(&result, &entry))?;
    crate::print_out(&format!("{}\n{}", text_entry(&entry), notes()))
}

/// Whether two keys name the same results (the kernel's name is not part of the identity).
fn same_key(a: &TuningKey, b: &TuningKey) -> bool {
    a.kernel_hash == b.kernel_hash
        && a.shape == b.shape
        && a.params == b.params
        && a.target == b.target
        && a.backend == b.backend
}

/// The run's summary: why it stopped, its trials, its search and confirmed times with their
/// trials, and the database's winner (which may be an earlier run's).
fn summary_text(r: &TuneResult, e: &ReportEntry) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "stopped: {} after {} trials in {:.1} s (run {})",
        r.stop, r.trials, r.elapsed_s, r.run_id
    );
    let _ = writeln!(
        s,
        "  default schedule: search {}, confirmed {}",
        ms(r.default_seconds),
        ms(r.default_confirmed)
    );
    let _ = writeln!(s, "  search best: {}", run_trial(r.search_best.as_ref()));
    let _ = writeln!(
        s,
        "  confirmed best: {} (re-measured in a fresh worker)",
        run_trial(r.confirmed_best.as_ref())
    );
    for u in &r.unstable {
        let _ = writeln!(s, "  unstable: trial {}: {}", u.trial, u.detail);
    }
    let _ = write!(s, "  winner in the database: {}", winner_text(e));
    s
}

/// `0.0958 ms (trial 4)`, or `-`.
fn run_trial(t: Option<&TrialTime>) -> String {
    t.map_or("-".into(), |t| {
        format!("{} (trial {})", ms(Some(t.seconds)), t.trial)
    })
}

/// `0.0958 ms, confirmed, run 1 trial 4; speedup 16.49x over the default's 1.58 ms (confirmed)`.
fn winner_text(e: &ReportEntry) -> String {
    let Some(w) = &e.winner else {
        return "none".into();
    };
    let how = if w.remeasured {
        "confirmed"
    } else {
        "search time, not confirmed"
    };
    let speedup = e.speedup.map_or("-".into(), |x| format!("{x:.2}x"));
    format!(
        "{} ({how}), run {} trial {}; speedup {speedup} over the default's {}{}; {}",
        ms(Some(w.median_s)),
        w.run_id,
        w.trial,
        ms(e.default_median_s),
        baseline_note(e),
        throughput(e)
    )
}

/// What the speedup's baseline is when the default's re-measurement was unstable: its
/// search time (the unstable times decide nothing).
fn baseline_note(e: &ReportEntry) -> &'static str {
    let unstable_default = e.unstable.iter().any(|u| u.is_default);
    if unstable_default && e.default_confirmed_s.is_none() {
        " (search time: its re-measurement was unstable)"
    } else {
        ""
    }
}

/// Warning lines for the rows a report entry left out or did not trust.
fn entry_warnings(e: &ReportEntry) -> Vec<String> {
    let damaged = e.damaged.iter().map(|d| format!("damaged record: {d}"));
    let unstable = e.unstable.iter().map(|u| {
        format!(
            "unstable re-measurement: run {} trial {}: {}",
            u.run_id,
            u.trial,
            printable(&u.detail)
        )
    });
    damaged.chain(unstable).collect()
}

/// What the numbers mean: the trial count and the winner rule, said once under every report.
fn notes() -> String {
    format!(
        "notes: {TRIAL_DEFINITION}.\n  {WINNER_RULE}; the speedup divides the default's time \
         (confirmed when it was re-measured) by the winner's."
    )
}

/// `strata tune --json`: this run's numbers and the report entry of its key.
fn summary_json(r: &TuneResult, e: &ReportEntry) -> serde_json::Value {
    serde_json::json!({
        "run": {
            "run_id": r.run_id,
            "stop": r.stop.to_string(),
            "trials": r.trials,
            "elapsed_s": r.elapsed_s,
            "default_search_s": r.default_seconds,
            "default_confirmed_s": r.default_confirmed,
            "search_best": r.search_best,
            "confirmed_best": r.confirmed_best,
            "unstable": r.unstable,
            "failures": r.failures,
        },
        "report": e,
        "trial_definition": TRIAL_DEFINITION,
        "winner_rule": WINNER_RULE,
    })
}

/// Prints the report of every (or one) kernel: text, JSON, and optionally an HTML page.
pub fn report(
    db_path: &Path,
    kernel: Option<&str>,
    json: bool,
    html: Option<&Path>,
) -> Result<(), String> {
    let db = Db::open_read_only(db_path).map_err(|e| format!("error: {e}"))?;
    // Everything the text, the JSON and the page show comes from one snapshot, so a tune
    // committing meanwhile cannot make the page's summary and its tables disagree.
    let (entries, page) = db
        .snapshot(|db| {
            let entries = db.report(kernel)?;
            let page = html.map(|_| html_page(db, &entries));
            Ok::<_, DbError>((entries, page))
        })
        .map_err(|e| format!("error: {e}"))?;
    if json {
        // The text report has them in its entries; JSON readers see them here too.
        for warning in entries.iter().flat_map(entry_warnings) {
            eprintln!("warning: {warning}");
        }
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
        crate::print_out(&format!("{}\n{}", texts.join("\n"), notes()))?;
    }
    if let (Some(path), Some(page)) = (html, page) {
        db.write_output(path, |out| Ok(out.write_all(page.as_bytes())?))
            .map_err(|e| format!("error: {e}"))?;
        crate::print_out(&format!("wrote {}", path.display()))?;
    }
    Ok(())
}

/// `report --html`'s page of `entries`, read from `db` (in the report's snapshot).
fn html_page(db: &Db, entries: &[ReportEntry]) -> String {
    let nests: Vec<String> = entries.iter().map(|e| winner_loop_nest(db, e)).collect();
    let peak = html::Peak::measure_if_useful(entries);
    html::page(db, entries, &nests, peak.as_ref())
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

/// The shape, and the scalar parameters' values where the kernel has any: `H=8,W=8 with
/// alpha=1,levels=8`.
fn instance_text(key: &TuningKey) -> String {
    match key.params.is_empty() {
        true => key.shape.clone(),
        false => format!("{} with {}", key.shape, key.params),
    }
}

fn text_entry(e: &ReportEntry) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "kernel {} ({})  shape {}  target {}  backend {}",
        printable(&e.key.kernel_name),
        printable(short_hash(&e.key.kernel_hash)),
        printable(&instance_text(&e.key)),
        e.key.target,
        printable(&e.key.backend)
    );
    let _ = writeln!(
        s,
        "  default schedule: search {}, confirmed {}",
        ms(e.default_search_s),
        ms(e.default_confirmed_s)
    );
    let search_best = e.search_best.as_ref().map_or("-".into(), |t| {
        format!(
            "{} (run {} trial {})",
            ms(Some(t.median_s)),
            t.run_id,
            t.trial
        )
    });
    let _ = writeln!(s, "  search best: {search_best}");
    let _ = writeln!(s, "  winner: {}", winner_text(e));
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
    for warning in entry_warnings(e) {
        let _ = writeln!(s, "  warning: {warning}");
    }
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

pub fn export(db_path: &Path, out: Option<&Path>) -> Result<(), String> {
    let db = Db::open_read_only(db_path).map_err(|e| format!("error: {e}"))?;
    // The records and the list of those skipped as damaged, from one snapshot.
    let exported = db.snapshot(|db| {
        let n = match out {
            Some(path) => db.write_output(path, |file| db.export(file)),
            None => db.export(&mut std::io::stdout().lock()),
        }?;
        Ok((n, db.damaged(None)?))
    });
    let (n, damaged) = match exported {
        // The reader stopped early (`strata db export | head`): end quietly, as
        // `print_out` does.
        Err(DbError::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
        exported => exported.map_err(|e| format!("error: {e}"))?,
    };
    for row in &damaged {
        eprintln!("warning: not exported: damaged record: {row}");
    }
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
/// `backend` (one that fits the kernel: others are skipped with a warning); the default
/// schedule, with a warning, when no stored winner fits.
pub fn best_schedule(
    db_path: &Path,
    kernel: &Pipeline,
    sizes: &Sizes,
    scalars: &BTreeMap<String, Value>,
    (threads, backend): (usize, strata::Backend),
) -> Result<Schedule, String> {
    let db = Db::open_read_only(db_path).map_err(|e| format!("error: {e}"))?;
    let key = strata::tuner::tune::tuning_key(kernel, sizes, scalars, threads, backend);
    let usable = strata::tuner::tune::usable_winner(&db, kernel, &key)
        .map_err(|miss| format!("error: no tuned schedule: {miss}"))?;
    for why in &usable.skipped {
        eprintln!("warning: {why}");
    }
    match usable.found {
        Some((schedule, _)) => Ok(schedule),
        None => {
            eprintln!(
                "warning: no stored winner for `{}` fits it: using the default schedule",
                kernel.name
            );
            Ok(Schedule::new())
        }
    }
}

/// The floating-point operation count an earlier run recorded for `kernel` at `sizes` in the
/// database at `db_path` (`None` if there is no database there or no such record). Opened
/// read-only: looking never creates or changes a database.
pub fn recorded_float_ops(
    db_path: &Path,
    kernel: &Pipeline,
    sizes: &Sizes,
    args: &strata::Args,
) -> Option<u64> {
    if !db_path.exists() {
        return None;
    }
    let db = Db::open_read_only(db_path).ok()?;
    let key = strata::tuner::tune::tuning_key(
        kernel,
        sizes,
        &args.scalars,
        1,
        strata::Backend::Cranelift,
    );
    db.float_ops(&key.kernel_hash, &key.shape, &key.params)
        .ok()
        .flatten()
}
