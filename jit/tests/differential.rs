//! The answer never depends on the schedule, through the JIT too: for every example kernel,
//! random legal schedules (vectorized, unrolled, parallel, compute_at) on random shapes are
//! lowered, compiled with every backend built in (Cranelift; LLVM with `--features llvm`), run
//! with one to three threads, and compared with the
//! reference evaluator (integers exactly, floats within 1e-4 relative: reassociation and fused
//! multiply-adds) and with the loop-IR interpreter.
//!
//! `STRATA_CASES=n` sets the cases per kernel (default 120); `STRATA_SEED=s` replays one case.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata_dsl::random::{agree, random_args};
use strata_dsl::{evaluate, Pipeline, Sizes};
use strata_jit::{Backend, CodegenOptions, CompiledKernel};
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::lower;
use strata_testkit::differential::{refused_for_round_up, run_cases, seeds, Outcome};
use strata_testkit::generate::random_schedule;
use strata_testkit::{example, example_schedule, example_sizes, Widths};

const FLOAT_TOLERANCE: f64 = 1e-4;

fn options(backend: Backend) -> CodegenOptions {
    CodegenOptions {
        backend,
        verify: true,
        ..CodegenOptions::default()
    }
}

/// One seeded case, on every backend built in.
fn case(name: &str, pipeline: &Pipeline, seed: u64) -> Result<Outcome, String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let schedule = random_schedule(pipeline, &mut rng);
    let sizes = example_sizes(name, Widths::Vectors, &mut rng);
    let args = random_args(pipeline, &sizes, &mut rng)?;
    let threads = rng.random_range(1..=3);
    let context = |what: String| {
        format!(
            "{name} seed {seed} sizes {sizes:?} threads {threads}\nschedule:\n{schedule}\n{what}"
        )
    };
    let lowered =
        lower(pipeline, &schedule).map_err(|e| context(format!("lowering failed: {e}")))?;
    let expected =
        evaluate(pipeline, &args).map_err(|e| context(format!("reference failed: {e}")))?;
    let mut interpreted = None;
    for backend in Backend::built() {
        let compiled = CompiledKernel::new(&lowered, &options(backend))
            .map_err(|e| context(format!("{backend}: compilation failed: {e}\n{lowered}")))?;
        let got = match compiled.run(&args, threads) {
            Err(e) if refused_for_round_up(&e, &schedule) => return Ok(Outcome::Refused),
            Err(e) => {
                return Err(context(format!(
                    "{backend}: the call was refused: {e}\n{lowered}"
                )))
            }
            Ok(got) => got,
        };
        agree(&got, &expected, FLOAT_TOLERANCE)
            .map_err(|e| context(format!("{backend} vs reference: {e}\n{lowered}")))?;
        if interpreted.is_none() {
            interpreted = Some(
                interpret(&lowered, &args)
                    .map_err(|e| context(format!("interpreter failed: {e}")))?,
            );
        }
        let interpreted = interpreted.as_ref().expect("interpreted above");
        agree(&got, interpreted, FLOAT_TOLERANCE)
            .map_err(|e| context(format!("{backend} vs interpreter: {e}\n{lowered}")))?;
    }
    Ok(Outcome::Matched)
}

fn differential(name: &str) {
    let pipeline = example(name);
    let replay = format!("cargo test -p strata-jit --test differential {name}");
    let seeds = seeds(120, 104_729, name.len() as u64);
    run_cases(name, &replay, seeds, |seed| case(name, &pipeline, seed));
}

#[test]
fn matmul() {
    differential("matmul");
}

#[test]
fn blur3x3() {
    differential("blur3x3");
}

#[test]
fn softmax() {
    differential("softmax");
}

#[test]
fn conv2d() {
    differential("conv2d");
}

#[test]
fn histogram() {
    differential("histogram");
}

#[test]
fn gaussian5() {
    differential("gaussian5");
}

#[test]
fn brighten() {
    differential("brighten");
}

/// The hand schedules of `examples/schedules/`, one and two threads.
#[test]
fn hand_schedules() {
    for name in [
        "matmul",
        "blur3x3",
        "softmax",
        "conv2d",
        "histogram",
        "gaussian5",
        "brighten",
    ] {
        let pipeline = example(name);
        let lowered = lower(&pipeline, &example_schedule(name)).unwrap();
        for backend in Backend::built() {
            hand_schedule_agrees(name, &pipeline, &lowered, backend, vector_sizes);
        }
    }
}

/// The LLVM backend's hand schedules (`examples/schedules/*_llvm.sched`), with every backend
/// built in (they are legal schedules for Cranelift too), on shapes that reach their full tiles
/// (32 and 128 columns, 16 filters) as well as tails.
#[test]
fn llvm_hand_schedules() {
    for (kernel, schedule) in [
        ("matmul", "matmul_llvm"),
        ("conv2d", "conv2d_llvm"),
        ("conv2d_staged", "conv2d_staged_llvm"),
        ("blur3x3", "blur3x3_llvm"),
        ("blur3x3_u16", "blur3x3_u16_llvm"),
        ("softmax", "softmax_llvm"),
        ("softmax_fast", "softmax_fast_llvm"),
    ] {
        let pipeline = example(kernel);
        let lowered = lower(&pipeline, &example_schedule(schedule)).unwrap();
        for backend in Backend::built() {
            hand_schedule_agrees(kernel, &pipeline, &lowered, backend, tile_sizes);
        }
    }
}

/// Shapes for `hand_schedules`: those of the random-schedule cases.
fn vector_sizes(name: &str, rng: &mut StdRng) -> Sizes {
    example_sizes(name, Widths::Vectors, rng)
}

/// Shapes for `llvm_hand_schedules`: up to a few of its tiles in each dimension.
fn tile_sizes(name: &str, rng: &mut StdRng) -> Sizes {
    let mut r = |lo: i64, hi: i64| rng.random_range(lo..=hi);
    let sizes: Vec<(&str, i64)> = match name {
        "matmul" => vec![("M", r(1, 20)), ("N", r(1, 300)), ("K", r(1, 9))],
        "blur3x3" | "blur3x3_u16" => vec![("H", r(3, 20)), ("W", r(3, 140))],
        "softmax" | "softmax_fast" => vec![("R", r(1, 4)), ("C", r(1, 70))],
        _ => vec![
            ("N", 1),
            ("C", r(1, 3)),
            ("F", r(1, 16)),
            ("H", r(3, 9)),
            ("W", r(3, 60)),
        ],
    };
    sizes.into_iter().map(|(n, v)| (n.to_string(), v)).collect()
}

/// The hand schedule of `name` compiled with `backend` agrees with the reference on random
/// shapes, with one and two threads.
fn hand_schedule_agrees(
    name: &str,
    pipeline: &Pipeline,
    lowered: &strata_scheduler::LoweredKernel,
    backend: Backend,
    shapes: fn(&str, &mut StdRng) -> Sizes,
) {
    let compiled = CompiledKernel::new(lowered, &options(backend))
        .unwrap_or_else(|e| panic!("{name} ({backend}): {e}"));
    {
        for seed in 0..10 {
            let mut rng = StdRng::seed_from_u64(seed);
            let sizes = shapes(name, &mut rng);
            let args = random_args(pipeline, &sizes, &mut rng).unwrap();
            let expected = evaluate(pipeline, &args).unwrap();
            for threads in [1, 2] {
                let got = compiled
                    .run(&args, threads)
                    .unwrap_or_else(|e| panic!("{name} ({backend}) {sizes:?}: {e}"));
                agree(&got, &expected, FLOAT_TOLERANCE).unwrap_or_else(|e| {
                    panic!("{name} ({backend}) {sizes:?} threads {threads}: {e}")
                });
            }
        }
    }
}
