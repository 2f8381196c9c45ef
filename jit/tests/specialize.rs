//! `specialize(cond)` through every backend built in: hand specializations of the examples on
//! shapes on both sides of each condition (the case's tail dropped where a condition makes an
//! output extent a multiple of the split factor), one and three threads, against the reference
//! and the interpreter; the same kernel compiled for fixed sizes keeps one branch.

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::evaluate;
use strata_dsl::random::{agree, random_args};
use strata_jit::{Backend, CodegenOptions, CompiledKernel};
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::{bind_sizes, lower};
use strata_scheduler::schedule::text::parse_schedule;
use strata_testkit::example;

fn options(backend: Backend) -> CodegenOptions {
    CodegenOptions {
        backend,
        verify: true,
        ..CodegenOptions::default()
    }
}

/// Every backend, at every shape, agrees with the reference and the interpreter.
fn agrees(kernel: &str, text: &str, shapes: &[&[(&str, i64)]]) {
    let pipeline = example(kernel);
    let schedule = parse_schedule(text).unwrap_or_else(|e| panic!("{e}"));
    let lowered = lower(&pipeline, &schedule).unwrap_or_else(|e| panic!("{text}: {e}"));
    let mut rng = StdRng::seed_from_u64(3);
    for backend in Backend::built() {
        let compiled = CompiledKernel::new(&lowered, &options(backend))
            .unwrap_or_else(|e| panic!("{backend} {text}: {e}"));
        for shape in shapes {
            let args = random_args(&pipeline, &strata_dsl::sizes(shape), &mut rng).unwrap();
            let expected = evaluate(&pipeline, &args).unwrap();
            let interpreted = interpret(&lowered, &args).unwrap();
            for threads in [1, 3] {
                let got = compiled
                    .run(&args, threads)
                    .unwrap_or_else(|e| panic!("{backend} {text} {shape:?}: {e}"));
                let context = format!("{backend} {text} {shape:?} threads {threads}");
                agree(&got, &expected, 1e-4).unwrap_or_else(|e| panic!("{context}: {e}"));
                agree(&got, &interpreted, 1e-4).unwrap_or_else(|e| panic!("{context}: {e}"));
            }
        }
    }
}

#[test]
fn blur_cases_and_general_agree() {
    let shapes: &[&[(&str, i64)]] = &[
        &[("H", 3), ("W", 3)],
        &[("H", 6), ("W", 18)],
        &[("H", 10), ("W", 34)],
        &[("H", 9), ("W", 17)],
        &[("H", 34), ("W", 66)],
        &[("H", 5), ("W", 40)],
    ];
    let schedules = [
        "out: split(x, xo, xi, 16).specialize((W - 2) % 16 == 0).vectorize(xi).parallel(y)",
        "out: tile(y, x, yo, xo, yi, xi, 4, 8)\nout.specialize((W - 2) % 8 == 0 && (H - 2) % 4 == 0): vectorize(xi).unroll(yi).parallel(yo)\nout.specialize(W >= 20): parallel(yo)\nbx: compute_at(out, xo)",
        "bx: compute_root()\nbx.specialize(W % 4 == 0): vectorize(x, 4)\nout.specialize((W - 2) % 8 == 0): vectorize(x, 8).parallel(y)",
    ];
    for text in schedules {
        agrees("blur3x3", text, shapes);
    }
}

#[test]
fn matmul_update_cases_agree() {
    let shapes: &[&[(&str, i64)]] = &[
        &[("M", 1), ("N", 1), ("K", 1)],
        &[("M", 8), ("N", 16), ("K", 5)],
        &[("M", 7), ("N", 16), ("K", 3)],
        &[("M", 8), ("N", 12), ("K", 9)],
    ];
    agrees(
        "matmul",
        "C: vectorize(j, 4)\nC.update(0): split(j, jo, ji, 8).specialize(N % 8 == 0 && M % 4 == 0).split(i, io, ii, 4).reorder(io, jo, k, ii, ji).vectorize(ji).unroll(ii)",
        shapes,
    );
}

#[test]
fn scalar_parameter_conditions_agree() {
    // `gain` is drawn at random: both cases run over the shapes.
    let shapes: &[&[(&str, i64)]] = &[
        &[("H", 1), ("W", 1)],
        &[("H", 3), ("W", 16)],
        &[("H", 4), ("W", 13)],
        &[("H", 2), ("W", 32)],
    ];
    agrees(
        "brighten",
        "out.specialize(gain > 0.5 && W % 16 == 0): vectorize(x, 16).parallel(y)\nout.specialize(gain > 0.5): vectorize(x, 4)",
        shapes,
    );
}

#[test]
fn fixed_sizes_keep_one_branch() {
    let pipeline = example("brighten");
    let schedule =
        parse_schedule("out: split(x, xo, xi, 8).specialize(W % 8 == 0).vectorize(xi)").unwrap();
    let lowered = lower(&pipeline, &schedule).unwrap();
    for (w, vector) in [(64, true), (60, false)] {
        let bound = bind_sizes(&lowered, &strata_dsl::sizes(&[("H", 4), ("W", w)])).unwrap();
        assert_eq!(bound.to_string().contains("ramp("), vector, "{bound}");
        assert!(!bound.to_string().contains("% 8 == 0"), "{bound}");
        let mut rng = StdRng::seed_from_u64(5);
        let args = random_args(
            &pipeline,
            &strata_dsl::sizes(&[("H", 4), ("W", w)]),
            &mut rng,
        )
        .unwrap();
        let expected = evaluate(&pipeline, &args).unwrap();
        for backend in Backend::built() {
            let compiled = CompiledKernel::new(&bound, &options(backend)).unwrap();
            agree(&compiled.run(&args, 1).unwrap(), &expected, 1e-4).unwrap();
        }
    }
}
