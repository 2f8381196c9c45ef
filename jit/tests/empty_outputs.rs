//! An empty region is never an error: a kernel whose output has no element (a depthwise 3x3
//! convolution of an image 2 rows high has `H - 2 = 0` output rows) reads nothing, so it
//! needs no input region, and every executor answers the reference's empty buffer, under the
//! default schedule and under hand schedules alike. Hand schedules that compute a producer
//! (an input's wrapper at root) over a fused loop were refused ("input `I` is too small"):
//! the producer's region, taken over the empty loops, was not empty, and it was computed
//! anyway. Now a producer is computed only when a loop reading it runs.

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::random::{agree, random_args};
use strata_dsl::signature::SizeExpr;
use strata_dsl::{evaluate, parse_kernel, Pipeline, Sizes};
use strata_jit::{Backend, CodegenOptions, CompiledKernel};
use strata_scheduler::interp::interpret;
use strata_scheduler::schedule::text::parse_schedule;

const DEPTHWISE: &str = "kernel dw(I: f32[C, H, W], K: f32[C, 3, 3]) -> O: f32[C, H - 2, W - 2] {
    O(c, y, x) = sum(ky in 0..3, kx in 0..3) I(c, y + ky, x + kx) * K(c, ky, kx);
}";

/// Tiled, vectorized and parallel schedules; the last three compute a wrapper of an input
/// over the output's (fused) loops.
const SCHEDULES: [&str; 5] = [
    "",
    "O: tile(y, x, yo, xo, yi, xi, 4, 8).vectorize(xi).parallel(c)\n\
     O.update(0): split(x, xo, xi, 8).reorder(c, y, xo, ky, kx, xi).vectorize(xi).unroll(kx).parallel(c)",
    "O: wrap(I, Iw).parallel(c)\n\
     O.update(0): fuse(y, x, yx).split(yx, o, i, 8).vectorize(i).parallel(c)\n\
     Iw: compute_root().parallel(c)",
    "O: wrap(I, Iw).fuse(c, y, cy).parallel(cy).vectorize(x, 4)\n\
     O.update(0): fuse(c, y, cy).parallel(cy).vectorize(x, 4)\n\
     Iw: compute_root().vectorize(_2, 4)",
    "O: wrap(K, Kw)\nO.update(0): fuse(c, y, cy).parallel(cy)\nKw: compute_root()",
];

/// Empty in each dimension in turn (rows, columns, channels), then a non-empty shape.
const SHAPES: [[(&str, i64); 3]; 4] = [
    [("C", 3), ("H", 2), ("W", 7)],
    [("C", 2), ("H", 5), ("W", 2)],
    [("C", 0), ("H", 6), ("W", 6)],
    [("C", 3), ("H", 6), ("W", 9)],
];

fn depthwise() -> Pipeline {
    parse_kernel(DEPTHWISE, "dw.strata").unwrap_or_else(|e| panic!("{e}"))
}

/// The reference, the loop-IR interpreter and the JIT (every backend built in, one and three
/// threads) all answer, and agree, for every schedule and shape.
#[test]
fn empty_outputs_are_answered_by_every_executor() {
    let pipeline = depthwise();
    for schedule_text in SCHEDULES {
        let schedule = parse_schedule(schedule_text).unwrap_or_else(|e| panic!("{e}"));
        let lowered = strata_jit::lower_for(&pipeline, &schedule, &Default::default())
            .unwrap_or_else(|e| panic!("{schedule_text}: {e}"));
        let compiled: Vec<CompiledKernel> = (Backend::built().into_iter())
            .map(|backend| {
                let options = CodegenOptions {
                    backend,
                    verify: true,
                    ..CodegenOptions::default()
                };
                CompiledKernel::new(&lowered, &options)
                    .unwrap_or_else(|e| panic!("{backend}: {schedule_text}: {e}"))
            })
            .collect();
        for shape in SHAPES {
            let sizes: Sizes = strata_dsl::sizes(&shape);
            let context = format!("schedule `{schedule_text}` at {shape:?}");
            let args = random_args(&pipeline, &sizes, &mut StdRng::seed_from_u64(7)).unwrap();
            let expected = evaluate(&pipeline, &args).unwrap_or_else(|e| panic!("{context}: {e}"));
            let interpreted =
                interpret(&lowered, &args).unwrap_or_else(|e| panic!("{context}: {e}"));
            agree(&interpreted, &expected, 1e-4).unwrap_or_else(|e| panic!("{context}: {e}"));
            for kernel in &compiled {
                for threads in [1, 3] {
                    let backend = kernel.backend();
                    let jitted = kernel
                        .run(&args, threads)
                        .unwrap_or_else(|e| panic!("{backend}, {threads} threads, {context}: {e}"));
                    agree(&jitted, &expected, 1e-4)
                        .unwrap_or_else(|e| panic!("{backend}, {threads} threads, {context}: {e}"));
                }
            }
        }
    }
}

/// With an empty output the call requires no region of either input: a wrapper computed at
/// root over the output's fused loops reads nothing, so each box the call checks is empty.
#[test]
fn an_empty_output_requires_no_input_region() {
    let pipeline = depthwise();
    let schedule = parse_schedule(SCHEDULES[2]).unwrap();
    let lowered = strata_jit::lower_for(&pipeline, &schedule, &Default::default()).unwrap();
    let sizes = strata_dsl::sizes(&[("C", 3), ("H", 2), ("W", 7)]);
    for (input, region) in &lowered.input_regions {
        let extents: Vec<i64> = region
            .iter()
            .map(|r| r.extent.eval_size(&sizes).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        assert!(
            extents.contains(&0),
            "`{input}` is required with extents {extents:?}\n{lowered}"
        );
    }
}
