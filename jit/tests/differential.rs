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
use strata_dsl::Sizes;
use strata_dsl::{evaluate, parse_kernel, Pipeline};
use strata_jit::{Backend, CallError, CodegenOptions, CompiledKernel};
use strata_scheduler::generate::random_schedule;
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::text::parse_schedule;

const FLOAT_TOLERANCE: f64 = 1e-4;

fn example(name: &str) -> Pipeline {
    let path = format!(
        "{}/../examples/kernels/{name}.strata",
        env!("CARGO_MANIFEST_DIR")
    );
    parse_kernel(&std::fs::read_to_string(&path).unwrap(), &path).unwrap()
}

fn random_sizes(name: &str, rng: &mut StdRng) -> Sizes {
    let mut r = |lo: i64, hi: i64| rng.random_range(lo..=hi);
    let sizes: Vec<(&str, i64)> = match name {
        "matmul" => vec![("M", r(1, 9)), ("N", r(1, 19)), ("K", r(1, 7))],
        "blur3x3" => vec![("H", r(3, 12)), ("W", r(3, 21))],
        "softmax" => vec![("R", r(1, 5)), ("C", r(1, 21))],
        "conv2d" => vec![
            ("N", r(1, 2)),
            ("C", r(1, 3)),
            ("F", r(1, 2)),
            ("H", r(3, 7)),
            ("W", r(3, 12)),
        ],
        "histogram" | "brighten" => vec![("H", r(1, 7)), ("W", r(1, 19))],
        "gaussian5" => vec![("H", r(1, 9)), ("W", r(1, 18))],
        _ => vec![],
    };
    sizes.into_iter().map(|(n, v)| (n.to_string(), v)).collect()
}

fn options(backend: Backend) -> CodegenOptions {
    CodegenOptions {
        backend,
        verify: true,
        ..CodegenOptions::default()
    }
}

/// One seeded case; `Ok(false)` when a round_up schedule refused a too-small input.
fn case(name: &str, pipeline: &Pipeline, seed: u64) -> Result<bool, String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let schedule = random_schedule(pipeline, &mut rng);
    let sizes = random_sizes(name, &mut rng);
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
            Err(CallError::InputTooSmall { .. } | CallError::ReadsEmptyInput { .. })
                if schedule.to_string().contains("round_up") =>
            {
                return Ok(false)
            }
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
    Ok(true)
}

fn differential(name: &str) {
    let pipeline = example(name);
    let cases: u64 = std::env::var("STRATA_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120);
    let seeds: Vec<u64> = match std::env::var("STRATA_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        Some(seed) => vec![seed],
        None => (0..cases)
            .map(|i| i * 104_729 + name.len() as u64)
            .collect(),
    };
    let (mut ran, mut refused) = (0, 0);
    for seed in seeds {
        match case(name, &pipeline, seed) {
            Ok(true) => ran += 1,
            Ok(false) => refused += 1,
            Err(e) => panic!("{e}\nreplay with STRATA_SEED={seed} cargo test -p strata-jit --test differential {name}"),
        }
    }
    println!("{name}: {ran} matched, {refused} refused a too-small input (round_up)");
    assert!(ran >= 4 * refused, "{name}: too few cases ran");
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
        let path = format!(
            "{}/../examples/schedules/{name}.sched",
            env!("CARGO_MANIFEST_DIR")
        );
        let schedule = parse_schedule(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let lowered = lower(&pipeline, &schedule).unwrap();
        for backend in Backend::built() {
            hand_schedule_agrees(name, &pipeline, &lowered, backend, random_sizes);
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
        let path = format!(
            "{}/../examples/schedules/{schedule}.sched",
            env!("CARGO_MANIFEST_DIR")
        );
        let schedule = parse_schedule(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let lowered = lower(&pipeline, &schedule).unwrap();
        for backend in Backend::built() {
            hand_schedule_agrees(kernel, &pipeline, &lowered, backend, tile_sizes);
        }
    }
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
