//! `strata run`: compile a kernel for a shape, run it on the caller's inputs (`.npy`/PNG files)
//! or seeded random ones, check the answer against the reference evaluator, time it, and write
//! the output to files if asked.

use rand::rngs::StdRng;
use rand::SeedableRng;
use std::path::{Path, PathBuf};
use std::time::Duration;
use strata::dsl::random::{agree_within, random_args, Tolerance};
use strata::dsl::InputKind;
use strata::io::{Declared, FileInput};
use strata::{
    Args, Buffer, CompiledKernel, Dtype, LoweredKernel, Pipeline, Schedule, Sizes, Value,
};

/// The float tolerance answers are checked with (reassociation and fused multiply-adds).
pub const FLOAT_TOLERANCE: f64 = 1e-4;

/// How far `pipeline`'s answers may be from the reference's (`Tolerance` states the rule).
pub fn tolerance(pipeline: &Pipeline) -> Tolerance {
    Tolerance::for_kernel(pipeline, FLOAT_TOLERANCE)
}

/// The tolerance `pipeline`'s answers are checked with, in words.
pub fn tolerance_text(pipeline: &Pipeline) -> String {
    let integer_output = !pipeline.output.dtype.is_float() && pipeline.output.dtype != Dtype::Bool;
    match tolerance(pipeline).integers_from_floats && integer_output {
        true => format!("integers computed through floats within 1 + {FLOAT_TOLERANCE} x |value|"),
        false => format!("floats within {FLOAT_TOLERANCE}"),
    }
}

/// What `strata run` measured.
pub struct Measurement {
    pub runs: usize,
    /// The time reported: the steady median (`strata::Timings::steady`), as the tuner records.
    pub median: Duration,
    /// The median of all runs.
    pub all_runs_median: Duration,
    /// Into how many batches the steady median cut the runs.
    pub batches: usize,
    pub min: Duration,
    pub max: Duration,
    /// Floating-point operations of one run, from the reference evaluator (if it ran).
    pub float_ops: Option<u64>,
    /// Bytes of every input and the output.
    pub bytes: usize,
    /// `Some(true)` if the answer matched the reference, `Some(false)` if not, `None` unchecked.
    pub correct: Option<bool>,
    pub mismatch: Option<String>,
}

pub struct RunSettings {
    pub threads: usize,
    pub seed: u64,
    pub min_time: Duration,
    pub check: bool,
    /// The code generator (one this build has).
    pub backend: strata::Backend,
    /// Also time each function with a profiled copy of the kernel (`run --profile`).
    pub profile: bool,
}

/// Every size bound by `shape`, or the error naming the one that is not.
pub fn complete_shape(pipeline: &Pipeline, shape: &Sizes) -> Result<Sizes, String> {
    let mut sizes = Sizes::new();
    for name in pipeline.size_vars() {
        let value = shape.get(&name).copied().ok_or_else(|| {
            format!("error: the shape leaves size `{name}` unbound (give --shape {name}=...)")
        })?;
        if value < 0 {
            return Err(format!("error: size `{name}` must not be negative"));
        }
        sizes.insert(name, value);
    }
    Ok(sizes)
}

/// What `strata run` reads and writes besides the kernel: `--input NAME=PATH`,
/// `--output [NAME=]PATH` and `--param NAME=VALUE`, as given.
#[derive(Default)]
pub struct RunData {
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub params: Vec<String>,
    /// The tuning database the command was given, which no output may overwrite.
    pub db: Option<PathBuf>,
}

/// The sizes and arguments of a run, checked before anything is compiled: inputs named by
/// `--input` are read from their files (their element type and rank must be the kernel's),
/// the sizes are inferred from them and `shape` (which must agree), every other input is
/// seeded random, scalars come from `--param` or are seeded random, and every `--output` file
/// can hold the output and be created, and is neither an input nor the tuning database.
/// Returns the output files too.
pub fn prepare(
    pipeline: &Pipeline,
    shape: &Sizes,
    data: &RunData,
    seed: u64,
) -> Result<(Sizes, Args, Vec<PathBuf>), String> {
    let signature = pipeline.call_signature();
    let mut files: Vec<FileInput> = Vec::new();
    for text in &data.inputs {
        let (name, path) = split_assignment(text, "--input", "NAME=FILE (e.g. --input A=a.npy)")?;
        let param = buffer_param(pipeline, &signature.inputs, name)?;
        if files.iter().any(|f| f.name == name) {
            return Err(format!("error: --input gives `{name}` more than once"));
        }
        let path = PathBuf::from(path);
        let buffer =
            strata::io::read(&path, &Declared::input(param)).map_err(|e| format!("error: {e}"))?;
        files.push(FileInput {
            name: name.to_string(),
            path,
            buffer,
        });
    }
    let sizes = strata::io::infer_sizes(&signature.inputs, &files, shape)
        .map_err(|e| format!("error: {e}"))?;
    let sizes = complete_shape(pipeline, &sizes)?;
    // Every input is made (checking the shapes against the limits before anything large is
    // allocated); those given by file then replace theirs, so the others are the same random
    // inputs a run without files gets.
    let mut rng = StdRng::seed_from_u64(seed);
    let mut args = random_args(pipeline, &sizes, &mut rng).map_err(|e| format!("error: {e}"))?;
    let outputs = output_files(pipeline, &signature, &sizes, &data.outputs)?;
    for path in &outputs {
        refuse_overwriting(path, &files, data.db.as_deref())?;
    }
    for file in files {
        args.buffers.insert(file.name, file.buffer);
    }
    for text in &data.params {
        let (name, value) = parse_param(pipeline, text)?;
        args.scalars.insert(name, value);
    }
    Ok((sizes, args, outputs))
}

/// `NAME=VALUE` split at the first `=`, or the error saying what `flag` takes.
fn split_assignment<'t>(
    text: &'t str,
    flag: &str,
    form: &str,
) -> Result<(&'t str, &'t str), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() && !value.is_empty() => {
            Ok((name.trim(), value))
        }
        _ => Err(format!("error: `{text}` in {flag} is not {form}")),
    }
}

/// The buffer input `name` of the kernel, or the error naming what it is instead.
fn buffer_param<'s>(
    pipeline: &Pipeline,
    params: &'s [strata::dsl::signature::BufferParam],
    name: &str,
) -> Result<&'s strata::dsl::signature::BufferParam, String> {
    if let Some(param) = params.iter().find(|p| p.name == name) {
        return Ok(param);
    }
    let scalar =
        (pipeline.inputs.iter()).any(|i| i.name == name && matches!(i.kind, InputKind::Scalar));
    if scalar {
        return Err(format!(
            "error: `{name}` is a scalar parameter of `{}`: give it with --param {name}=VALUE",
            pipeline.name
        ));
    }
    let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
    Err(format!(
        "error: kernel `{}` has no buffer input `{name}` (its buffer inputs: {})",
        pipeline.name,
        names.join(", ")
    ))
}

/// One `--param NAME=VALUE`: the scalar parameter's value in its type, refused when it does
/// not parse or does not fit.
pub fn parse_param(pipeline: &Pipeline, text: &str) -> Result<(String, Value), String> {
    let (name, value) = split_assignment(text, "--param", "NAME=VALUE (e.g. --param alpha=0.5)")?;
    let input = pipeline
        .scalar_param(name)
        .map_err(|why| format!("error: {why}"))?;
    let parsed = Value::parse_as(input.dtype, value).ok_or_else(|| {
        format!(
            "error: --param {name}={value}: not a value of type {}",
            input.dtype
        )
    })?;
    Ok((name.to_string(), parsed))
}

/// The files `--output` names (`PATH`, or `NAME=PATH` with the kernel's output name), each
/// checked to hold the output's type and shape before anything runs.
fn output_files(
    pipeline: &Pipeline,
    signature: &strata::dsl::Signature<strata::dsl::Expr>,
    sizes: &Sizes,
    outputs: &[String],
) -> Result<Vec<PathBuf>, String> {
    if outputs.is_empty() {
        return Ok(Vec::new());
    }
    let shape = signature
        .output_shape(sizes)
        .map_err(|e| format!("error: {e}"))?;
    let what = format!("output `{}`", pipeline.output.name);
    let mut files = Vec::new();
    for text in outputs {
        let path = output_path(pipeline, text)?;
        strata::io::check_writable(&path, pipeline.output.dtype, &shape, &what)
            .map_err(|e| format!("error: {e}"))?;
        files.push(path);
    }
    Ok(files)
}

/// Refuses an output file that is one of the `--input` files or the tuning database `db` (or
/// one of its files), under any name: writing it would destroy what the run reads or what
/// tuning measured.
fn refuse_overwriting(
    output: &Path,
    inputs: &[FileInput],
    db: Option<&Path>,
) -> Result<(), String> {
    for input in inputs {
        if strata::tuning_db::is_same_file(output, &input.path) {
            return Err(format!(
                "error: refusing to write {}: it is the file of input `{}` ({}); write the \
                 output to another file",
                output.display(),
                input.name,
                input.path.display()
            ));
        }
    }
    match db {
        Some(db) if strata::tuning_db::is_file_of_database(db, output) => {
            let refusal = strata::tuning_db::DbError::OutputIsDatabase {
                path: db.to_path_buf(),
                output: output.to_path_buf(),
            };
            Err(format!("error: {refusal}"))
        }
        _ => Ok(()),
    }
}

/// `--output PATH` or `--output NAME=PATH`: a text before `=` that is a name must be the
/// output's (a kernel has one output); anything else is a path.
fn output_path(pipeline: &Pipeline, text: &str) -> Result<PathBuf, String> {
    if let Some((name, path)) = text.split_once('=') {
        let is_name = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_');
        if is_name && name == pipeline.output.name {
            return Ok(PathBuf::from(path));
        }
        if is_name {
            return Err(format!(
                "error: kernel `{}` has no output `{name}` (its output is `{}`)",
                pipeline.name, pipeline.output.name
            ));
        }
    }
    Ok(PathBuf::from(text))
}

/// Writes the output to every file `--output` named.
pub fn write_outputs(
    pipeline: &Pipeline,
    output: &Buffer,
    files: &[PathBuf],
) -> Result<(), String> {
    let what = format!("output `{}`", pipeline.output.name);
    for path in files {
        strata::io::write(path, output, &what).map_err(|e| format!("error: {e}"))?;
    }
    Ok(())
}

/// Compiles `lowered` (`pipeline` under the schedule, for the sizes fixed), runs it on `args`
/// once (checked against the reference unless the settings say not), then times repeated runs.
/// Returns the measurement and the first run's output.
pub fn measure(
    pipeline: &Pipeline,
    lowered: &LoweredKernel,
    args: &Args,
    settings: &RunSettings,
) -> Result<(Measurement, Buffer), String> {
    let options = strata::CodegenOptions {
        backend: settings.backend,
        ..Default::default()
    };
    let kernel = CompiledKernel::new(lowered, &options).map_err(|e| format!("error: {e}"))?;
    let first = kernel
        .run(args, settings.threads)
        .map_err(|e| format!("error: {e}"))?;
    let (correct, mismatch, float_ops) = if settings.check {
        check(pipeline, args, &first)?
    } else {
        (None, None, None)
    };
    let bytes = args.buffers.values().map(buffer_bytes).sum::<usize>() + buffer_bytes(&first);
    let mut output = first.try_clone().map_err(|e| format!("error: {e}"))?;
    let timing = strata::Timing::for_at_least(settings.min_time);
    let times = strata::time_runs(&kernel, args, &mut output, settings.threads, &timing)
        .map_err(|e| format!("error: {e}"))?;
    let m = Measurement {
        runs: times.runs(),
        median: times.steady(),
        all_runs_median: times.median(),
        batches: times.batches(),
        min: times.min(),
        max: times.max(),
        float_ops,
        bytes,
        correct,
        mismatch,
    };
    Ok((m, first))
}

/// The kernel compiled for `sizes` with `backend`, or the error as `strata` prints it.
pub fn compile(
    pipeline: &Pipeline,
    schedule: &Schedule,
    sizes: &Sizes,
    backend: strata::Backend,
) -> Result<CompiledKernel, String> {
    let options = strata::CodegenOptions {
        backend,
        ..Default::default()
    };
    strata::compile_with(pipeline, schedule, sizes, &options).map_err(|e| format!("error: {e}"))
}

pub fn buffer_bytes(b: &Buffer) -> usize {
    b.len() * b.dtype().bytes()
}

type Check = (Option<bool>, Option<String>, Option<u64>);

fn check(pipeline: &Pipeline, args: &Args, got: &Buffer) -> Result<Check, String> {
    let (expected, float_ops) = reference(pipeline, args)?;
    let mismatch = agree_within(got, &expected, tolerance(pipeline)).err();
    Ok((Some(mismatch.is_none()), mismatch, Some(float_ops)))
}

/// The reference evaluator's answer on `args` and the floating-point operations it counted.
pub fn reference(pipeline: &Pipeline, args: &Args) -> Result<(Buffer, u64), String> {
    let (expected, work) = strata::dsl::evaluate_counting(pipeline, args)
        .map_err(|e| format!("error: the reference evaluator failed: {e}"))?;
    Ok((expected, work.float_ops))
}

impl Measurement {
    pub fn gflops(&self) -> Option<f64> {
        self.float_ops
            .filter(|&f| f > 0)
            .map(|f| f as f64 / self.median.as_secs_f64() / 1e9)
    }

    pub fn gbps(&self) -> f64 {
        self.bytes as f64 / self.median.as_secs_f64() / 1e9
    }
}
