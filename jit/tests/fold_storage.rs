//! Storage folding and sliding windows through the JIT: stencils stored at root and computed
//! per row or per tile of their consumer, their buffers folded (automatically, and by
//! `fold_storage` to exactly the rows they need) and most of them slid (each row computed
//! once, `lower::sliding_window`), compiled with every backend built in, run with one to three
//! threads on random shapes, against the reference evaluator and the loop-IR interpreter.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata_dsl::random::{agree, random_args};
use strata_dsl::{evaluate, parse_kernel, Pipeline, Sizes};
use strata_jit::{Backend, CodegenOptions, CompiledKernel};
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::text::parse_schedule;

/// Three stencils in a chain, the middle one with an update reading its producer at three rows.
const CHAIN: &str = "kernel chain(input: i32[H, W] with clamp_edge) -> out: i32[H, W] {
    a(y, x) = input(y - 1, x) + 2 * input(y, x + 1);
    b(y, x) = a(y - 1, x) * 3 - a(y + 1, x - 1);
    c(y, x) = b(y, x);
    for (r in 0..3) c(y, x) += b(y + r - 1, x);
    out(y, x) = c(y - 2, x) + c(y, x) + c(y + 1, x);
}";

fn kernel(name: &str) -> Pipeline {
    if name == "chain" {
        return parse_kernel(CHAIN, "chain.strata").unwrap_or_else(|e| panic!("{e}"));
    }
    let path = format!(
        "{}/../examples/kernels/{name}.strata",
        env!("CARGO_MANIFEST_DIR")
    );
    parse_kernel(&std::fs::read_to_string(&path).unwrap(), &path).unwrap()
}

const CASES: &[(&str, &str)] = &[
    ("blur3x3", "bx: store_root().compute_at(out, y)"),
    ("blur3x3", "out: vectorize(x, 8); bx: store_root().compute_at(out, y).fold_storage(y, 3).vectorize(x, 8)"),
    ("blur3x3", "out: split(y, yo, yi, 4, shift).vectorize(x, 4); bx: store_root().compute_at(out, yo).fold_storage(y, 6)"),
    ("blur3x3", "out: tile(y, x, yo, xo, yi, xi, 4, 8).vectorize(xi, 4); bx: store_root().compute_at(out, xo).fold_storage(x, 10).vectorize(x, 4)"),
    ("blur3x3", "out: split(y, yo, yi, 8).parallel(yo); bx: store_at(out, yo).compute_at(out, yi).vectorize(x, 4).unroll(y, 2)"),
    ("gaussian5", "out: vectorize(x, 8); gx: store_root().compute_at(out, y).fold_storage(y, 5).vectorize(x, 8)"),
    ("chain", "a: store_root().compute_at(out, y).fold_storage(y, 8); b: store_root().compute_at(out, y).fold_storage(y, 6); c: store_root().compute_at(out, y).fold_storage(y, 4)"),
    ("chain", "out: split(y, yo, yi, 2).parallel(yo); a: store_at(out, yo).compute_at(out, yi); b: store_at(out, yo).compute_at(out, yi); c: store_at(out, yo).compute_at(out, yi)"),
    ("blur3x3", "out: split(y, yo, yi, 4, shift).parallel(yo).vectorize(x, 8); bx: store_at(out, yo).compute_at(out, yi).vectorize(x, 8)"),
    ("gaussian5", "out: split(y, yo, yi, 8).vectorize(x, 4); gx: store_root().compute_at(out, yi).vectorize(x, 4)"),
];

#[test]
fn folded_stencils_compute_the_reference_on_every_backend() {
    let mut rng = StdRng::seed_from_u64(1403);
    let mut slid = 0;
    for (name, text) in CASES {
        let pipeline = kernel(name);
        let schedule = parse_schedule(text).unwrap_or_else(|e| panic!("{e}"));
        let lowered = lower(&pipeline, &schedule).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!(
            lowered.to_string().contains(" % "),
            "`{text}` folds nothing"
        );
        slid += usize::from(lowered.to_string().contains(".slid = "));
        let min = if *name == "blur3x3" { 3 } else { 1 };
        for backend in Backend::built() {
            let options = CodegenOptions {
                backend,
                verify: true,
                ..CodegenOptions::default()
            };
            let compiled = CompiledKernel::new(&lowered, &options)
                .unwrap_or_else(|e| panic!("{backend} `{text}`: {e}"));
            for _ in 0..10 {
                let sizes: Sizes = [
                    ("H", rng.random_range(min..=19)),
                    ("W", rng.random_range(min..=23)),
                ]
                .map(|(n, v)| (n.to_string(), v))
                .into_iter()
                .collect();
                let args = random_args(&pipeline, &sizes, &mut rng).unwrap();
                let threads = rng.random_range(1..=3);
                let context = format!("{backend} `{text}` {sizes:?} threads {threads}");
                let expected = evaluate(&pipeline, &args).unwrap();
                let got = compiled
                    .run(&args, threads)
                    .unwrap_or_else(|e| panic!("{context}: {e}"));
                agree(&got, &expected, 1e-4).unwrap_or_else(|e| panic!("{context}: {e}"));
                let interpreted = interpret(&lowered, &args).unwrap();
                agree(&got, &interpreted, 1e-4).unwrap_or_else(|e| panic!("{context}: {e}"));
            }
        }
    }
    // Those computed per row of a serial loop slide (the chain's `c` has an update: not it).
    assert!(slid >= 7, "only {slid} of {} cases slide", CASES.len());
}
