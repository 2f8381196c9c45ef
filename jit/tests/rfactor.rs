//! `rfactor` through the JIT: factored reductions (the intermediate's pieces in parallel, its
//! factored loop vectorized, its reduction loop vectorized as a fold, intermediates computed
//! inside the consumer, factored twice) compiled with every backend built in and run with one
//! and three threads give the reference evaluator's answer and the interpreter's, integers
//! exactly, on shapes where the split divides the domain, does not, and where the domain is
//! shorter than one piece or empty. Random schedules factor reductions too (`generate.rs`), so
//! `differential.rs` and `random_pipelines.rs` run them on every example.

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::random::{agree, random_args};
use strata_dsl::Sizes;
use strata_dsl::{evaluate, parse_kernel, Pipeline};
use strata_jit::{Backend, CodegenOptions, CompiledKernel};
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::text::parse_schedule;
use strata_testkit::example;

const FLOAT_TOLERANCE: f64 = 1e-4;

fn options(backend: Backend) -> CodegenOptions {
    CodegenOptions {
        backend,
        verify: true,
        ..CodegenOptions::default()
    }
}

/// Compiles `text` for `pipeline` with every backend built in and runs it on random inputs of
/// each shape with 1 and 3 threads, against the reference and the interpreter.
fn agrees(pipeline: &Pipeline, text: &str, shapes: &[Vec<(&str, i64)>]) {
    let schedule = parse_schedule(text).unwrap_or_else(|e| panic!("{e}"));
    let lowered = lower(pipeline, &schedule).unwrap_or_else(|e| panic!("`{text}`: {e}"));
    for backend in Backend::built() {
        let compiled = CompiledKernel::new(&lowered, &options(backend))
            .unwrap_or_else(|e| panic!("{backend} `{text}`: {e}\n{lowered}"));
        for (seed, shape) in shapes.iter().enumerate() {
            let sizes: Sizes = (shape.iter()).map(|(n, v)| (n.to_string(), *v)).collect();
            let mut rng = StdRng::seed_from_u64(seed as u64);
            let args = random_args(pipeline, &sizes, &mut rng).unwrap();
            let expected = evaluate(pipeline, &args).unwrap();
            let interpreted = interpret(&lowered, &args).unwrap();
            for threads in [1, 3] {
                let context = format!("{backend} `{text}` {shape:?} {threads} threads");
                let got = (compiled.run(&args, threads))
                    .unwrap_or_else(|e| panic!("{context}: {e}\n{lowered}"));
                agree(&got, &expected, FLOAT_TOLERANCE)
                    .unwrap_or_else(|e| panic!("{context}: JIT vs reference: {e}\n{lowered}"));
                agree(&got, &interpreted, FLOAT_TOLERANCE)
                    .unwrap_or_else(|e| panic!("{context}: JIT vs interpreter: {e}"));
            }
        }
    }
}

/// The dot product's hand schedule and its variants, on lengths around its pieces.
#[test]
fn dot_product() {
    let pipeline = example("dot");
    let shapes: Vec<Vec<(&str, i64)>> = [0, 1, 15, 64, 100, 8192, 20000, 40961]
        .iter()
        .map(|&n| vec![("N", n)])
        .collect();
    let hand = std::fs::read_to_string(format!(
        "{}/../examples/schedules/dot.sched",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    for text in [
        hand.as_str(),
        "d.update(0): split(k, ko, ki, 64).rfactor(ki, dv)\ndv.update(0): reorder(ko, ki).vectorize(ki, 16)",
        "d.update(0): split(k, ko, ki, 256).rfactor(ko, dp)\ndp.update(0): parallel(ko).split(ki, kio, kii, 8).vectorize(kii).unroll(kio, 2)\ndp: vectorize(ko, 4)",
        "d.update(0): split(k, ko, ki, 1000).rfactor(ko, dp)\ndp.update(0): parallel(ko)\ndp.update(1): unroll(k, 4)",
        "d.update(0): split(k, ko, ki, 512).rfactor(ko, dp).vectorize(ko, 8)\ndp.update(0): split(ki, kio, kii, 8).rfactor(kii, dq).parallel(ko)\ndq.update(0): reorder(kio, kii).vectorize(kii)",
    ] {
        agrees(&pipeline, text, &shapes);
    }
}

/// Integer sums, products and extremes are exact whatever the pieces.
#[test]
fn integer_folds() {
    let shapes: Vec<Vec<(&str, i64)>> = [(1, 0), (2, 1), (3, 7), (2, 16), (5, 33)]
        .iter()
        .map(|&(m, k)| vec![("M", m), ("K", k)])
        .collect();
    for update in [
        "out(i) += A(i, k) * 3",
        "out(i) -= A(i, k)",
        "out(i) *= A(i, k) + 1",
        "out(i) = max(out(i), A(i, k))",
        "out(i) = min(A(i, k), out(i))",
    ] {
        let pipeline = parse_kernel(
            &format!("kernel folds(A: i32[M, K]) -> out: i32[M] {{ out(i) = 7; for (k in 0..K) {update}; }}"),
            "folds.strata",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        for text in [
            "out.update(0): split(k, ko, ki, 4).rfactor(ki, of).parallel(i)\nof.update(0): reorder(ko, ki).vectorize(ki)",
            "out.update(0): split(k, ko, ki, 3).rfactor(ko, of)\nof.update(0): parallel(ko)\nof: compute_at(out.update(0), i)",
            "out.update(0): rfactor(k, of)\nof: vectorize(k, 4).parallel(i)",
        ] {
            agrees(&pipeline, text, &shapes);
        }
    }
}

/// Matrix products with the reduction factored: the partial products of each `k` piece as a
/// vectorized tile, then summed.
#[test]
fn matmul_with_factored_k() {
    let pipeline = example("matmul");
    let shapes: Vec<Vec<(&str, i64)>> = [(1, 1, 1), (3, 17, 9), (8, 16, 64), (5, 9, 100)]
        .iter()
        .map(|&(m, n, k)| vec![("M", m), ("N", n), ("K", k)])
        .collect();
    for text in [
        "C.update(0): split(k, ko, ki, 32).rfactor(ko, Cp).parallel(i)\nCp.update(0): parallel(ko).reorder(ko, i, ki, j).vectorize(j, 8)",
        "C.update(0): split(k, ko, ki, 4).rfactor(ki, Cp).vectorize(j, 4)\nCp.update(0): reorder(ko, i, j, ki).vectorize(ki)",
    ] {
        agrees(&pipeline, text, &shapes);
    }
}
