//! `strata run`: compile a kernel for a shape, run it on the given or seeded random inputs,
//! check the answer, time it, print the report and write the outputs (the work is in
//! `crate::run`; the per-function profile in `crate::profile`).

use clap::Args;
use std::path::{Path, PathBuf};
use strata::{Buffer, Pipeline, Schedule, Sizes};

use super::common::{
    load, pick_kernel, print_out, resolve_schedule, run_settings, seconds, shape_or_none,
    warn_if_wasteful, BackendArg,
};
use crate::{profile, run, tuning};

#[derive(Args)]
pub(crate) struct RunArgs {
    /// The `.strata` file holding the kernel.
    file: PathBuf,
    /// Which kernel of the file (needed when it holds several).
    #[arg(long)]
    kernel: Option<String>,
    /// Sizes, e.g. `M=512,N=512,K=512`: every size no `--input` file gives (those it gives
    /// may be repeated here and must agree).
    #[arg(long)]
    shape: Option<String>,
    /// An input from a file, `NAME=FILE` (repeat for several): `.npy` (C order, the
    /// input's element type exactly) or, for `u8`/`u16` inputs, `.png` (8-bit → u8,
    /// 16-bit → u16; shape [H, W] for a rank-2 input, which must be a one-channel image,
    /// or [H, W, C] with channels interleaved for rank 3). Sizes are taken from the files.
    /// Inputs not given are seeded random.
    #[arg(long, value_name = "NAME=FILE")]
    input: Vec<String>,
    /// Write the output (of the first, checked run) to FILE (`.npy`, or `.png` for u8/u16
    /// outputs of shape [H, W] or [H, W, C] with C up to 4); `NAME=FILE` with the output's
    /// name works too. Repeat to write several files.
    #[arg(long, value_name = "[NAME=]FILE")]
    output: Vec<String>,
    /// A scalar parameter's value, `NAME=VALUE` (repeat for several); others are seeded
    /// random.
    #[arg(long, value_name = "NAME=VALUE")]
    param: Vec<String>,
    /// The schedule, as text, `@FILE`, or `best` (the tuning database's winner).
    #[arg(long)]
    schedule: Option<String>,
    /// Threads for parallel loops (default: every core).
    #[arg(long)]
    threads: Option<usize>,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Keep repeating for at least this many seconds (and at least 3 runs, after one untimed warm-up run; the timing the tuner uses).
    #[arg(long, default_value_t = 1.0, value_parser = seconds)]
    min_time: f64,
    /// Skip the reference check (it is slow for large shapes); no GFLOP/s then.
    #[arg(long)]
    no_check: bool,
    /// Also print each computed function's self time per run, share and calls per run,
    /// from a copy of the kernel compiled with profiling markers around each function's
    /// `produce` block (the timed kernel has none).
    #[arg(long)]
    profile: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// The tuning database (for `--schedule best`; default `STRATA_DB` or `strata.db`).
    #[arg(long)]
    db: Option<PathBuf>,
    /// The code generator (`--schedule best` takes the winner tuned with it).
    #[arg(long, value_enum, default_value_t = BackendArg::Cranelift)]
    backend: BackendArg,
}

pub(crate) fn command(args: RunArgs) -> Result<(), String> {
    let backend = args.backend.built()?;
    let mut settings = run_settings(
        args.threads,
        args.seed,
        args.min_time,
        !args.no_check,
        backend,
    );
    settings.profile = args.profile;
    let db = args.db.unwrap_or_else(strata::tuner::tune::default_db_path);
    let data = run::RunData {
        inputs: args.input,
        outputs: args.output,
        params: args.param,
        db: Some(db.clone()),
    };
    let kernels = load(&args.file)?;
    let chosen = pick_kernel(&kernels, args.kernel.as_deref(), &args.file)?;
    let shape = shape_or_none(args.shape.as_deref())?;
    let (sizes, inputs, outputs) = run::prepare(chosen, &shape, &data, settings.seed)?;
    let schedule = resolve_schedule(
        args.schedule.as_deref(),
        &db,
        chosen,
        &sizes,
        &inputs,
        &settings,
    )?;
    let ran = execute(chosen, schedule, sizes, &inputs, outputs, &settings, &db)?;
    print_out(&match args.json {
        true => json_text(chosen, &settings, &ran).to_string(),
        false => report_text(chosen, &settings, &ran),
    })?;
    match ran.measurement.correct {
        Some(false) => Err(format!(
            "error: the answer is wrong: {}",
            ran.measurement.mismatch.unwrap_or_default()
        )),
        _ => Ok(()),
    }
}

/// What one `strata run` did, for its report.
struct Ran {
    sizes: Sizes,
    schedule: Schedule,
    measurement: run::Measurement,
    /// The output of the first (checked) run.
    output: Buffer,
    /// Where it was written.
    outputs: Vec<PathBuf>,
    /// Each function's share (`--profile`).
    profile: Option<profile::Profile>,
}

/// Compiles and times `chosen` with `schedule` (warning first about waste it can see), writes
/// the outputs (even a wrong answer's, for inspection: the command fails after the report)
/// and profiles it if asked.
fn execute(
    chosen: &Pipeline,
    schedule: Schedule,
    sizes: Sizes,
    inputs: &strata::Args,
    outputs: Vec<PathBuf>,
    settings: &run::RunSettings,
    db: &Path,
) -> Result<Ran, String> {
    // Lowered once: the warnings, the timed kernel and the profiled one all start from it.
    let lowered =
        strata::jit::lower_for(chosen, &schedule, &sizes).map_err(|e| format!("error: {e}"))?;
    warn_if_wasteful(&lowered);
    let (mut m, output) = run::measure(chosen, &lowered, inputs, settings)?;
    if m.float_ops.is_none() {
        // Unchecked: the reference did not count the operations; an earlier run did.
        m.float_ops = tuning::recorded_float_ops(db, chosen, &sizes, inputs);
    }
    run::write_outputs(chosen, &output, &outputs)?;
    let profile = match settings.profile {
        true => Some(profile::profile(&lowered, inputs, &output, settings)?),
        false => None,
    };
    Ok(Ran {
        sizes,
        schedule,
        measurement: m,
        output,
        outputs,
        profile,
    })
}

/// `strata run --json`'s one line.
fn json_text(kernel: &Pipeline, settings: &run::RunSettings, ran: &Ran) -> serde_json::Value {
    let m = &ran.measurement;
    let outputs: Vec<String> = ran
        .outputs
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let mut value = serde_json::json!({
        "kernel": kernel.name,
        "shape": ran.sizes,
        "threads": settings.threads,
        "backend": settings.backend.name(),
        "schedule": ran.schedule.to_string(),
        "runs": m.runs,
        "median_s": m.median.as_secs_f64(),
        "batches": m.batches,
        "all_runs_median_s": m.all_runs_median.as_secs_f64(),
        "min_s": m.min.as_secs_f64(),
        "max_s": m.max.as_secs_f64(),
        "gflops": m.gflops(),
        "gbps": m.gbps(),
        "correct": m.correct,
        "outputs": outputs,
    });
    if let Some(p) = &ran.profile {
        value["profile"] = profile::json(p);
    }
    value
}

/// `strata run`'s text: the report, the profile's table, and each output written.
fn report_text(kernel: &Pipeline, settings: &run::RunSettings, ran: &Ran) -> String {
    let mut lines = vec![measurement_text(
        kernel,
        &ran.sizes,
        settings,
        &ran.measurement,
    )];
    lines.extend(
        ran.profile
            .as_ref()
            .map(|p| profile::table(p, settings.threads)),
    );
    for path in &ran.outputs {
        lines.push(format!(
            "output: {} {}{:?} written to {}",
            kernel.output.name,
            ran.output.dtype(),
            ran.output.shape(),
            path.display()
        ));
    }
    lines.join("\n")
}

/// `strata run`'s report of the measurement: what ran, the answer, the time, the throughput.
fn measurement_text(
    kernel: &Pipeline,
    sizes: &Sizes,
    settings: &run::RunSettings,
    m: &run::Measurement,
) -> String {
    let shape: Vec<String> = sizes.iter().map(|(n, v)| format!("{n}={v}")).collect();
    let answer = match m.correct {
        Some(true) => format!(
            "answer: matches the reference ({})",
            run::tolerance_text(kernel)
        ),
        Some(false) => format!("answer: WRONG: {}", m.mismatch.as_deref().unwrap_or("")),
        None => "answer: not checked".to_string(),
    };
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let time = format!(
        "time: median {:.4} ms (the fastest of {} batches' medians; all {} runs: median {:.4}, \
         min {:.4}, max {:.4})",
        ms(m.median),
        m.batches,
        m.runs,
        ms(m.all_runs_median),
        ms(m.min),
        ms(m.max),
    );
    let throughput = match m.gflops() {
        Some(g) => format!("throughput: {g:.2} GFLOP/s, {:.2} GB/s", m.gbps()),
        None if m.correct.is_none() => format!(
            "throughput: {:.2} GB/s (GFLOP/s needs the reference's operation count: run \
             without --no-check, or tune this kernel and shape first: the database keeps it)",
            m.gbps()
        ),
        None => format!("throughput: {:.2} GB/s", m.gbps()),
    };
    let title = format!(
        "{} {} threads {} backend {}",
        kernel.name,
        shape.join(","),
        settings.threads,
        settings.backend
    );
    [title, answer, time, throughput].join("\n")
}
