//! Two loops of one nest vectorized (`vectorize(xi, 2).vectorize(xo, 4)`): the inner keeps
//! the vectors and the outer runs serially, since widening vectors again would make vectors of
//! vectors (`ramp(ramp(..), x4(1), 2)`), which lowering used to emit as malformed IR (a
//! Cranelift verifier error, or "load of u8x3 at index of 2 lanes").

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::random::{agree, random_args};
use strata_dsl::{evaluate, parse_kernel};
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::text::parse_schedule;

const SHIFT: &str = "kernel shift(A: u8[H, W]) -> out: u8[H, W] {
    f(y, x) = A(y, x) + u8(3);
    out(y, x) = f(y, x) * u8(2);
}";

/// Random pipeline 170 (jit/tests/random_pipelines.rs), where the bug showed.
const GENERATED_170: &str = "kernel generated(A: f64[N, M] with constant(1.0f64), lut: u32[256]) -> out: f64[N, M] {
    f0(y, x) = f32(clamp((max(r1 in 0..1) u16(lut(u8((y + r1 * 7))))), min(65535u16, 1u16), max(65535u16, 1u16)));
    out(y, x) = clamp(f64(f0(y + 2, x - 2)), min(-1.5f64, 1.0f64), max(-1.5f64, 1.0f64));
}";

#[test]
fn a_generated_pipeline_with_two_vectorized_loops_lowers_to_well_formed_vectors() {
    let pipeline = parse_kernel(GENERATED_170, "generated.strata").unwrap();
    let schedule = "out: fuse(y, x, f_1).parallel(f_1); \
        f0: compute_root().split(x, xo_4, xi_5, 2, round_up).vectorize(xi_5, 2).vectorize(xo_4, 4)";
    let kernel = lower(&pipeline, &parse_schedule(schedule).unwrap()).unwrap();
    let ir = kernel.to_string();
    assert!(!ir.contains("ramp(ramp("), "{ir}");
    let sizes = strata_dsl::sizes(&[("N", 1), ("M", 11)]);
    let args = random_args(&pipeline, &sizes, &mut StdRng::seed_from_u64(170)).unwrap();
    let got = interpret(&kernel, &args).unwrap();
    agree(&got, &evaluate(&pipeline, &args).unwrap(), 0.0).unwrap();
}

#[test]
fn the_outer_of_two_vectorized_loops_runs_serially_with_the_reference_answer() {
    let pipeline = parse_kernel(SHIFT, "shift.strata").unwrap();
    for schedule in [
        "f: compute_root().split(x, xo, xi, 2).vectorize(xi, 2).vectorize(xo, 4)",
        "out: vectorize(y, 3).vectorize(x, 2)",
        "out: split(x, xo, xi, 8).vectorize(xi, 4).vectorize(xo, 2).reorder(xo.v, y, xo, xi, xi.v)",
    ] {
        let kernel = lower(&pipeline, &parse_schedule(schedule).unwrap())
            .unwrap_or_else(|e| panic!("{schedule}: {e}"));
        let ir = kernel.to_string();
        assert!(!ir.contains("ramp(ramp("), "{schedule}:\n{ir}");
        let mut rng = StdRng::seed_from_u64(4);
        for (h, w) in [(3, 11), (1, 1), (5, 16)] {
            let sizes = strata_dsl::sizes(&[("H", h), ("W", w)]);
            let args = random_args(&pipeline, &sizes, &mut rng).unwrap();
            let got = interpret(&kernel, &args).unwrap_or_else(|e| panic!("{schedule}: {e}"));
            agree(&got, &evaluate(&pipeline, &args).unwrap(), 0.0)
                .unwrap_or_else(|e| panic!("{schedule} H={h} W={w}: {e}"));
        }
    }
}
