//! Random pipelines, not only random schedules: kernels drawn by
//! `generate_pipeline::random_pipeline` (stencils, inline reductions, updates over reduction
//! domains, scans, histograms, casts between every numeric type, boundary conditions, gathers),
//! each with a random legal schedule (`generate::random_schedule`) or the default one, on a random
//! shape (output extents of 0 and 1 included, so update domains are often empty), run by the
//! reference evaluator, the loop-IR interpreter and the JIT with one to three threads.
//!
//! The three must agree: integers exactly, floats within 1e-4 relative to the larger of 1 and the
//! expected value (reassociated sums, fused multiply-adds, the vector `exp` polynomial). The only
//! other accepted outcomes are a `round_up` schedule refusing an input smaller than it reads (as
//! in `differential.rs`), and all three refusing the same arguments.
//!
//! `STRATA_CASES=n` sets the number of cases (default 400); a failure prints the kernel text, the
//! schedule, the sizes and the seed, and `STRATA_SEED=s` replays that one case.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::fmt;
use strata_dsl::random::{agree, random_args};
use strata_dsl::{evaluate, Args, Buffer, EvalError, Pipeline};
use strata_jit::{CallError, CodegenOptions, CompiledKernel};
use strata_scheduler::generate::random_schedule;
use strata_scheduler::generate_pipeline::{random_pipeline, GeneratedKernel};
use strata_scheduler::interp::{interpret, InterpError};
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::Schedule;

const FLOAT_TOLERANCE: f64 = 1e-4;
const DEFAULT_CASES: u64 = 400;

/// Everything needed to replay one case by hand.
struct Case {
    seed: u64,
    kernel: GeneratedKernel,
    pipeline: Pipeline,
    schedule: Schedule,
    sizes: BTreeMap<String, usize>,
    threads: usize,
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "seed {}, sizes {:?}, threads {}",
            self.seed, self.sizes, self.threads
        )?;
        writeln!(f, "kernel:\n{}", self.kernel.text)?;
        writeln!(f, "schedule:\n{}", self.schedule)
    }
}

/// How a case ended when it did not fail.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// All three computed the same output.
    Matched,
    /// A `round_up` schedule refused an input smaller than it reads.
    RoundUpRefused,
    /// The reference and both compiled forms refused the arguments.
    AllRefused,
}

fn draw(seed: u64) -> Result<Case, String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let kernel = random_pipeline(&mut rng);
    let pipeline = kernel
        .pipeline()
        .map_err(|e| format!("generator bug: the checker rejects\n{}\n{e}", kernel.text))?;
    let schedule = if rng.random_bool(0.15) {
        Schedule::new()
    } else {
        random_schedule(&pipeline, &mut rng)
    };
    let sizes = kernel.random_sizes(&mut rng);
    let threads = rng.random_range(1..=3);
    Ok(Case {
        seed,
        kernel,
        pipeline,
        schedule,
        sizes,
        threads,
    })
}

fn options() -> CodegenOptions {
    CodegenOptions {
        verify: true,
        ..CodegenOptions::default()
    }
}

/// Runs one case; `Err` describes a failure.
fn run_case(case: &Case) -> Result<Outcome, String> {
    let mut rng = StdRng::seed_from_u64(case.seed ^ 0x5eed);
    let args = random_args(&case.pipeline, &case.sizes, &mut rng)?;
    let reparsed = parse_schedule(&case.schedule.to_string())
        .map_err(|e| format!("the schedule's text does not parse back: {e}"))?;
    if reparsed != case.schedule {
        return Err("the schedule's text does not round-trip".into());
    }
    let lowered =
        lower(&case.pipeline, &case.schedule).map_err(|e| format!("lowering failed: {e}"))?;
    let compiled = CompiledKernel::new(&lowered, &options())
        .map_err(|e| format!("compilation failed: {e}\n{lowered}"))?;
    let expected = evaluate(&case.pipeline, &args);
    let interpreted = interpret(&lowered, &args);
    let jitted = compiled.run(&args, case.threads);
    let round_up = case.schedule.to_string().contains("round_up");
    let outcome = compare(&expected, &interpreted, &jitted, round_up);
    outcome.map_err(|e| format!("{e}\nloop IR:\n{lowered}"))
}

/// The verdict on the three results.
fn compare(
    expected: &Result<Buffer, EvalError>,
    interpreted: &Result<Buffer, InterpError>,
    jitted: &Result<Buffer, CallError>,
    round_up: bool,
) -> Result<Outcome, String> {
    match (expected, interpreted, jitted) {
        (Ok(e), Ok(i), Ok(j)) => {
            agree(i, e, FLOAT_TOLERANCE).map_err(|d| format!("interpreter vs reference: {d}"))?;
            agree(j, e, FLOAT_TOLERANCE).map_err(|d| format!("JIT vs reference: {d}"))?;
            Ok(Outcome::Matched)
        }
        (Ok(_), Err(i), Err(j)) if round_up && too_small(i) && too_small(j) => {
            Ok(Outcome::RoundUpRefused)
        }
        (Err(_), Err(_), Err(_)) => Ok(Outcome::AllRefused),
        _ => Err(format!(
            "disagreement:\n  reference: {}\n  interpreter: {}\n  JIT: {}",
            summary(expected),
            summary(interpreted),
            summary(jitted)
        )),
    }
}

/// Whether a refusal is "an input is too small for this schedule" (matched by name: the
/// interpreter wraps the call check's error, the JIT returns it).
fn too_small(e: &impl fmt::Debug) -> bool {
    format!("{e:?}").contains("InputTooSmall")
}

fn summary<E: fmt::Display>(r: &Result<Buffer, E>) -> String {
    match r {
        Ok(b) => format!("ok, {} {:?}", b.dtype(), b.shape()),
        Err(e) => format!("error: {e}"),
    }
}

/// Whether a line of a failure report is the reason (not the kernel, schedule or loop IR).
fn is_reason(line: &str) -> bool {
    [
        "failed",
        "disagreement",
        " vs ",
        "generator bug",
        "round-trip",
        "parse back",
    ]
    .iter()
    .any(|w| line.contains(w))
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The seeds to run: `STRATA_SEED` alone, or `STRATA_CASES` (default `default`) seeds.
fn seeds(default: u64) -> Vec<u64> {
    match env_u64("STRATA_SEED") {
        Some(seed) => vec![seed],
        None => (0..env_u64("STRATA_CASES").unwrap_or(default)).collect(),
    }
}

#[test]
fn random_pipelines_agree_with_the_reference() {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for seed in seeds(DEFAULT_CASES) {
        let result = draw(seed).and_then(|case| run_case(&case).map_err(|e| format!("{case}{e}")));
        match result {
            Ok(outcome) => *counts.entry(format!("{outcome:?}")).or_default() += 1,
            Err(e) => {
                let reason: Vec<&str> = e.lines().skip_while(|l| !is_reason(l)).take(4).collect();
                println!("seed {seed} failed: {}", reason.join("\n    "));
                failures.push((seed, e));
            }
        }
    }
    println!("outcomes: {counts:?}, failures: {}", failures.len());
    if let Some((seed, first)) = failures.first() {
        let seeds: Vec<u64> = failures.iter().map(|(s, _)| *s).collect();
        panic!(
            "{} of the cases failed (seeds {seeds:?}); the first:\n{first}\nreplay with STRATA_SEED={seed} cargo test -p strata-jit --test random_pipelines",
            failures.len()
        );
    }
    let matched = counts.get("Matched").copied().unwrap_or(0);
    let total: usize = counts.values().sum();
    assert!(
        2 * matched >= total,
        "too few cases ran to completion: {counts:?}"
    );
}

/// Every generated kernel passes the checker (a rejected one is a generator bug), and the
/// generator is a function of its seed.
#[test]
fn generated_kernels_check_and_replay() {
    for seed in 0..1000u64 {
        let kernel = random_pipeline(&mut StdRng::seed_from_u64(seed));
        if let Err(e) = kernel.pipeline() {
            panic!("seed {seed}: the checker rejects\n{}\n{e}", kernel.text);
        }
        let again = random_pipeline(&mut StdRng::seed_from_u64(seed));
        assert_eq!(kernel.text, again.text, "seed {seed} does not replay");
    }
}

/// `args` for `pipeline` with `sizes`, when every buffer is empty (a zero size somewhere), so
/// no memory is needed however large the other sizes are.
fn empty_args(pipeline: &Pipeline, sizes: &BTreeMap<String, usize>) -> Option<Args> {
    random_args(pipeline, sizes, &mut StdRng::seed_from_u64(0)).ok()
}

/// Shapes at and past the i32 limit cannot be allocated, but a buffer with a zero extent has no
/// elements whatever its other extents: such arguments must get the reference's (empty) answer
/// or a clear error from every door, never a crash or a wrong shape.
#[test]
fn shapes_near_the_i32_limit_are_refused_or_empty() {
    let huge = [
        i32::MAX as usize - 1,
        i32::MAX as usize,
        i32::MAX as usize + 1,
        u32::MAX as usize,
        1 << 40,
    ];
    let mut checked = 0;
    for seed in seeds(60) {
        let case = draw(seed).unwrap_or_else(|e| panic!("{e}"));
        if case.kernel.sizes.len() != 2 {
            continue;
        }
        for (zero, big) in [(0, 1), (1, 0)] {
            for &h in &huge {
                let sizes: BTreeMap<String, usize> = [
                    (case.kernel.sizes[zero].clone(), 0),
                    (case.kernel.sizes[big].clone(), h),
                ]
                .into_iter()
                .collect();
                let Some(args) = empty_args(&case.pipeline, &sizes) else {
                    continue;
                };
                let what = format!("{case}sizes {sizes:?}");
                huge_case(&case, &args).unwrap_or_else(|e| panic!("{what}\n{e}"));
                checked += 1;
            }
        }
    }
    println!("{checked} huge shapes checked");
}

/// One near-limit call: the JIT either refuses clearly or returns the reference's answer.
fn huge_case(case: &Case, args: &Args) -> Result<(), String> {
    let lowered = lower(&case.pipeline, &case.schedule).map_err(|e| format!("lowering: {e}"))?;
    let compiled =
        CompiledKernel::new(&lowered, &options()).map_err(|e| format!("compiling: {e}"))?;
    let Ok(got) = compiled.run(args, case.threads) else {
        return Ok(());
    };
    match evaluate(&case.pipeline, args) {
        Ok(expected) => agree(&got, &expected, FLOAT_TOLERANCE),
        Err(e) => Err(format!(
            "the JIT ran ({} {:?}) where the reference refused: {e}",
            got.dtype(),
            got.shape()
        )),
    }
}

/// A replay tool for minimizing a failure by hand, not a check: runs the kernel in the file
/// `STRATA_KERNEL` with the schedule in `STRATA_SCHEDULE` (default: the default schedule) on
/// `STRATA_SIZES` (`N=3,M=1`) through the three executors, and prints what each gave:
/// `STRATA_KERNEL=k.strata STRATA_SIZES=N=1 cargo test -p strata-jit --test random_pipelines
/// replay -- --ignored --nocapture`.
#[test]
#[ignore = "a tool for minimizing failures; needs STRATA_KERNEL"]
fn replay() {
    let read = |var: &str| {
        std::env::var(var)
            .ok()
            .map(|p| std::fs::read_to_string(p).unwrap())
    };
    let text = read("STRATA_KERNEL").expect("STRATA_KERNEL names a kernel file");
    let pipeline = strata_dsl::parse_kernel(&text, "kernel").unwrap_or_else(|e| panic!("{e}"));
    let schedule = read("STRATA_SCHEDULE")
        .map(|s| parse_schedule(&s).unwrap_or_else(|e| panic!("{e}")))
        .unwrap_or_default();
    let sizes: BTreeMap<String, usize> = std::env::var("STRATA_SIZES")
        .unwrap_or_default()
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().parse().unwrap()))
        .collect();
    let case = Case {
        seed: env_u64("STRATA_SEED").unwrap_or(0),
        kernel: GeneratedKernel {
            text,
            sizes: sizes.keys().cloned().collect(),
            margins: vec![0; sizes.len()],
        },
        pipeline,
        schedule,
        sizes,
        threads: env_u64("STRATA_THREADS").unwrap_or(1) as usize,
    };
    println!("{case}");
    match run_case(&case) {
        Ok(outcome) => println!("{outcome:?}"),
        Err(e) => println!("{e}"),
    }
}
