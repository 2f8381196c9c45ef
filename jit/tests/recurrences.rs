//! Recurrences through the JIT: the schedules an IIR filter's independent column loop allows
//! (parallel, vectorized, moved outside the row loop), scans over an empty reduction domain,
//! and random legal schedules of both, compiled and run with one and several threads, give the
//! reference evaluator's answer and the interpreter's.

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::random::{agree, random_args};
use strata_dsl::Sizes;
use strata_dsl::{evaluate, parse_kernel, CallError, Pipeline};
use strata_jit::{Backend, CodegenOptions, CompiledKernel};
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::schedule::Schedule;
use strata_testkit::generate::random_schedule;

const FLOAT_TOLERANCE: f64 = 1e-4;

/// A first-order IIR filter down the columns (Halide's IIR blur).
const IIR: &str = "kernel iir(input: f32[H, W], a: f32) -> out: f32[H, W] {
    out(y, x) = input(y, x);
    for (r in 1..H) out(r, x) = a * input(r, x) + (1.0 - a) * out(r - 1, x);
}";

/// An inclusive scan of a function computed before the output.
const SCAN: &str = "kernel scan(A: i32[N]) -> out: i32[N] {
    p(i) = A(i);
    for (r in 1..N) p(r) = p(r - 1) + A(r - 1);
    out(i) = p(i);
}";

const IIR_SHAPES: &[&[(&str, usize)]] = &[
    &[("H", 1), ("W", 1)],
    &[("H", 3), ("W", 8)],
    &[("H", 6), ("W", 19)],
    &[("H", 17), ("W", 40)],
];

const SCAN_SHAPES: &[&[(&str, usize)]] = &[&[("N", 1)], &[("N", 2)], &[("N", 9)]];

fn kernel(source: &str) -> Pipeline {
    parse_kernel(source, "recurrences.rs").unwrap_or_else(|e| panic!("{e}"))
}

fn options(backend: Backend) -> CodegenOptions {
    CodegenOptions {
        backend,
        verify: true,
        ..CodegenOptions::default()
    }
}

/// Compiles `schedule` with every backend built in and runs it on random inputs of each shape
/// with 1 and 3 threads, against the reference and the interpreter. A `round_up` tail may read
/// past an input: its refusal is then the other right answer.
fn matches_reference(
    pipeline: &Pipeline,
    schedule: &Schedule,
    shapes: &[&[(&str, usize)]],
) -> Result<(), String> {
    let lowered = lower(pipeline, schedule).map_err(|e| format!("lowering failed: {e}"))?;
    for backend in Backend::built() {
        let compiled = CompiledKernel::new(&lowered, &options(backend))
            .map_err(|e| format!("{backend}: compilation failed: {e}\n{lowered}"))?;
        compiled_matches_reference(pipeline, schedule, shapes, &lowered, &compiled)
            .map_err(|e| format!("{backend}: {e}"))?;
    }
    Ok(())
}

/// `compiled` (from `lowered`) against the reference and the interpreter on each shape.
fn compiled_matches_reference(
    pipeline: &Pipeline,
    schedule: &Schedule,
    shapes: &[&[(&str, usize)]],
    lowered: &strata_scheduler::LoweredKernel,
    compiled: &CompiledKernel,
) -> Result<(), String> {
    for (seed, shape) in shapes.iter().enumerate() {
        let sizes: Sizes = shape
            .iter()
            .map(|(n, v)| (n.to_string(), *v as i64))
            .collect();
        let args = random_args(pipeline, &sizes, &mut StdRng::seed_from_u64(seed as u64))?;
        let expected = evaluate(pipeline, &args).map_err(|e| format!("reference: {e}"))?;
        for threads in [1, 3] {
            let context = |e: String| format!("sizes {shape:?}, {threads} threads: {e}\n{lowered}");
            let got = match compiled.run(&args, threads) {
                Err(CallError::InputTooSmall { .. } | CallError::ReadsEmptyInput { .. })
                    if schedule.to_string().contains("round_up") =>
                {
                    continue
                }
                result => result.map_err(|e| context(format!("the call was refused: {e}")))?,
            };
            agree(&got, &expected, FLOAT_TOLERANCE)
                .map_err(|e| context(format!("JIT vs reference: {e}")))?;
            let interpreted =
                interpret(lowered, &args).map_err(|e| context(format!("interpreter: {e}")))?;
            agree(&got, &interpreted, FLOAT_TOLERANCE)
                .map_err(|e| context(format!("JIT vs interpreter: {e}")))?;
        }
    }
    Ok(())
}

fn assert_matches_reference(source: &str, text: &str, shapes: &[&[(&str, usize)]]) {
    let pipeline = kernel(source);
    let schedule = parse_schedule(text).unwrap_or_else(|e| panic!("{e}"));
    if let Err(e) = matches_reference(&pipeline, &schedule, shapes) {
        panic!("`{text}` on {}: {e}", pipeline.name);
    }
}

#[test]
fn iir_schedules_of_the_column_loop() {
    for text in [
        "out.update(0): parallel(x)",
        "out.update(0): vectorize(x, 8)",
        "out.update(0): split(x, xo, xi, 8).reorder(xo, r, xi).vectorize(xi)",
        "out.update(0): split(x, xo, xi, 8).reorder(xo, r, xi).vectorize(xi).parallel(xo)",
        "out.update(0): split(x, xo, xi, 16).reorder(xo, r, xi).vectorize(xi, 4).parallel(xo)\nout: parallel(y).vectorize(x, 8)",
    ] {
        assert_matches_reference(IIR, text, IIR_SHAPES);
    }
}

#[test]
fn scans_over_an_empty_split_domain() {
    for text in [
        "p: compute_root()\np.update(0): split(r, ro, ri, 2)",
        "p: compute_root()\np.update(0): split(r, ro, ri, 4).unroll(ri)",
    ] {
        assert_matches_reference(SCAN, text, SCAN_SHAPES);
    }
}

#[test]
fn random_schedules_of_recurrences() {
    for (source, shapes) in [(IIR, IIR_SHAPES), (SCAN, SCAN_SHAPES)] {
        let pipeline = kernel(source);
        for seed in 0..60 {
            let schedule = random_schedule(&pipeline, &mut StdRng::seed_from_u64(seed));
            if let Err(e) = matches_reference(&pipeline, &schedule, shapes) {
                panic!("{} seed {seed}:\n{schedule}\n{e}", pipeline.name);
            }
        }
    }
}
