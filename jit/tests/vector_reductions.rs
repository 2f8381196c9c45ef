//! Vectorized reduction loops (Halide's `atomic().vectorize()`): sums, products, minima and
//! maxima whose reduction loop is vectorized give the reference evaluator's answer, with the
//! loop's extent a multiple of the width (the loop gets a vector accumulator, pass
//! `vector_accumulators`) or not (a guarded tail folds lane by lane), compiled for symbolic
//! sizes and for known ones. Integers and min/max must match exactly; float sums are
//! reassociated, so they must agree within 1e-5 of the sum of the magnitudes added.

use rand::{rngs::StdRng, Rng, SeedableRng};
use strata_dsl::random::random_args;
use strata_dsl::{evaluate, parse_kernel, Buffer, Value};
use strata_jit::{Backend, CodegenOptions, CompiledKernel};
use strata_scheduler::lower::{bind_sizes, lower};
use strata_scheduler::schedule::text::parse_schedule;

const KERNELS: [(&str, &str); 5] = [
    (
        "kernel isum(A: i32[N, K]) -> S: i32[N] { S(n) = sum(k in 0..K) A(n, k) * 3; }",
        "S",
    ),
    (
        "kernel umax(A: u8[N, K]) -> M: u8[N] { M(n) = max(k in 0..K) A(n, k); }",
        "M",
    ),
    (
        "kernel fmin(A: f32[N, K]) -> M: f32[N] { M(n) = min(k in 0..K) A(n, k); }",
        "M",
    ),
    (
        "kernel iprod(A: i16[N, K]) -> P: i16[N] { P(n) = prod(k in 0..K) A(n, k); }",
        "P",
    ),
    (
        "kernel fsum(A: f32[N, K]) -> S: f32[N] { S(n) = 1.0; for (k in 0..K) S(n) += A(n, k); }",
        "S",
    ),
];

fn schedules(f: &str) -> Vec<String> {
    vec![
        format!("{f}.update(0): vectorize(k, 8)"),
        format!("{f}.update(0): vectorize(k, 4)"),
        format!("{f}.update(0): split(k, ko, ki, 16).vectorize(ki, 4)"),
        format!("{f}.update(0): vectorize(k, 8).unroll(k, 2).parallel(n)"),
    ]
}

#[test]
fn vectorized_reductions_match_the_reference() {
    let mut rng = StdRng::seed_from_u64(7);
    for (source, f) in KERNELS {
        let pipeline = parse_kernel(source, "test.strata").unwrap();
        for schedule in schedules(f) {
            let parsed = parse_schedule(&schedule).unwrap();
            let generic = lower(&pipeline, &parsed).unwrap_or_else(|e| panic!("{schedule}: {e}"));
            assert!(
                generic.to_string().contains("reduce_"),
                "{schedule}:\n{generic}"
            );
            for k in [1usize, 3, 8, 13, 32, 37] {
                let n = rng.random_range(1..4usize);
                let sizes = strata_dsl::sizes(&[("N", n as i64), ("K", k as i64)]);
                let args = random_args(&pipeline, &sizes, &mut rng).unwrap();
                let expected = evaluate(&pipeline, &args).unwrap();
                let special = bind_sizes(&generic, &sizes).unwrap();
                if k % 16 == 0 {
                    assert!(
                        special.to_string().contains(".vacc"),
                        "{schedule}:\n{special}"
                    );
                }
                for (kernel, backend) in [&generic, &special]
                    .into_iter()
                    .flat_map(|k| Backend::built().into_iter().map(move |b| (k, b)))
                {
                    let options = CodegenOptions {
                        backend,
                        ..CodegenOptions::default()
                    };
                    let compiled = CompiledKernel::new(kernel, &options)
                        .unwrap_or_else(|e| panic!("{schedule} ({backend}): {e}"));
                    let got = compiled.run(&args, 2).unwrap();
                    let input = &args.buffers["A"];
                    let what = format!("{source}\n{schedule} ({backend})\nN={n} K={k}");
                    compare(&got, &expected, input, k, &what);
                }
            }
        }
    }
}

/// Exact for integers and min/max; float sums within 1e-5 of `1 + Σ|A(n, k)|` per row.
fn compare(got: &Buffer, expected: &Buffer, input: &Buffer, k: usize, what: &str) {
    assert_eq!(got.shape(), expected.shape(), "{what}");
    for i in 0..expected.len() {
        let (g, e) = (got.get_flat(i).unwrap(), expected.get_flat(i).unwrap());
        let ok = match (g, e) {
            (Value::F32(g), Value::F32(e)) if what.contains("fsum") => {
                let magnitude: f64 = (0..k)
                    .map(|j| input.get_flat(i * k + j).unwrap().as_f64().abs())
                    .sum();
                ((g - e) as f64).abs() <= 1e-5 * (1.0 + magnitude)
            }
            (g, e) => g == e,
        };
        assert!(ok, "{what}\nelement {i}: got {g:?}, expected {e:?}");
    }
}
