//! `strata run`: compile a kernel for a shape, run it on seeded random inputs, check the answer
//! against the reference evaluator, and time it.

use rand::rngs::StdRng;
use rand::SeedableRng;
use std::time::{Duration, Instant};
use strata::dsl::random::{agree, random_args};
use strata::{Args, Buffer, CompiledKernel, Pipeline, Schedule, Sizes};

/// The float tolerance answers are checked with (reassociation and fused multiply-adds).
pub const FLOAT_TOLERANCE: f64 = 1e-4;

/// What `strata run` measured.
pub struct Measurement {
    pub runs: usize,
    pub median: Duration,
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

pub fn measure(
    pipeline: &Pipeline,
    schedule: &Schedule,
    sizes: &Sizes,
    settings: &RunSettings,
) -> Result<Measurement, String> {
    // The shapes are checked (and the inputs made) before anything is compiled.
    let args = random_args(pipeline, sizes, &mut StdRng::seed_from_u64(settings.seed))
        .map_err(|e| format!("error: {e}"))?;
    let options = strata::CodegenOptions {
        backend: settings.backend,
        ..Default::default()
    };
    let kernel = strata::compile_with(pipeline, schedule, sizes, &options)
        .map_err(|e| format!("error: {e}"))?;
    let first = kernel
        .run(&args, settings.threads)
        .map_err(|e| format!("error: {e}"))?;
    let (correct, mismatch, float_ops) = if settings.check {
        check(pipeline, &args, &first)?
    } else {
        (None, None, None)
    };
    let bytes = args.buffers.values().map(buffer_bytes).sum::<usize>() + buffer_bytes(&first);
    let mut output = first;
    let mut times = time_runs(&kernel, &args, &mut output, settings)?;
    times.sort();
    Ok(Measurement {
        runs: times.len(),
        median: times[times.len() / 2],
        min: times[0],
        max: times[times.len() - 1],
        float_ops,
        bytes,
        correct,
        mismatch,
    })
}

fn buffer_bytes(b: &Buffer) -> usize {
    b.len() * b.dtype().bytes()
}

type Check = (Option<bool>, Option<String>, Option<u64>);

fn check(pipeline: &Pipeline, args: &Args, got: &Buffer) -> Result<Check, String> {
    let (expected, work) = strata::dsl::evaluate_counting(pipeline, args)
        .map_err(|e| format!("error: the reference evaluator failed: {e}"))?;
    let mismatch = agree(got, &expected, FLOAT_TOLERANCE).err();
    Ok((Some(mismatch.is_none()), mismatch, Some(work.float_ops)))
}

/// Repeats the kernel until `min_time` has passed and at least 5 runs are done.
fn time_runs(
    kernel: &CompiledKernel,
    args: &Args,
    output: &mut Buffer,
    settings: &RunSettings,
) -> Result<Vec<Duration>, String> {
    let start = Instant::now();
    let mut times = Vec::new();
    while times.len() < 5 || start.elapsed() < settings.min_time {
        let t = Instant::now();
        kernel
            .run_into(args, output, settings.threads)
            .map_err(|e| format!("error: {e}"))?;
        times.push(t.elapsed());
        if times.len() >= 100_000 {
            break;
        }
    }
    Ok(times)
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
