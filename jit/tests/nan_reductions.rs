//! `max`/`min` over floats holding NaN, `±0` and `±inf` give the same bits under every schedule
//! (default, vectorized, split and `rfactor`ed, parallel, random), on every rung: the
//! reference, the loop-IR interpreter and each backend. The language's float `min`/`max` are
//! IEEE 754-2019 `minimum`/`maximum` (NaN wins, `-0.0 < +0.0`), which is what makes them
//! order-free; as `a > b ? a : b` a vector fold or `rfactor` answered differently from the
//! serial loop (7 of 11 schedules failed on rows holding a NaN).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata_dsl::{evaluate, parse_kernel, Args, Buffer, Pipeline};
use strata_jit::{compile_pipeline, Backend, CodegenOptions};
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::Schedule;
use strata_testkit::generate::random_schedule;

/// The kernels: whole-row reductions (inline and as an update) and an elementwise `max`/`min`.
const KERNELS: [&str; 4] = [
    "kernel rmax(X: f32[R, C]) -> out: f32[R] { out(r) = max(c in 0..C) X(r, c); }",
    "kernel rmin(X: f64[R, C]) -> out: f64[R] { out(r) = min(c in 0..C) X(r, c); }",
    "kernel umax(X: f32[R, C]) -> out: f32[R] { out(r) = -1.0; for (c in 0..C) out(r) = max(out(r), X(r, c)); }",
    "kernel clampmix(X: f32[R, C]) -> out: f32[R, C] { out(r, c) = clamp(max(X(r, c), min(X(r, 0), 0.0)), -1.0, 1.0); }",
];

/// The schedules the issue reported wrong, and more of their kind.
const SCHEDULES: [&str; 7] = [
    "",
    "out.update(0): vectorize(c, 4)",
    "out.update(0): split(c, co, ci, 4).rfactor(co, p)",
    "out.update(0): split(c, co, ci, 4).rfactor(ci, p)\np: vectorize(ci, 4)",
    "out.update(0): split(c, co, ci, 8).vectorize(ci, 8)",
    "out.update(0): split(c, co, ci, 4).rfactor(co, p)\np.update(0): parallel(co)",
    "out: vectorize(c, 4)",
];

/// The special values every row draws from, beside ordinary numbers.
const SPECIALS: [f64; 6] = [f64::NAN, 0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, 1.5];

/// An `R x C` input whose entries are mostly specials; row `r` holds a NaN when `r % 3 == 0`.
fn input(p: &Pipeline, rows: usize, cols: usize, rng: &mut StdRng) -> Args {
    let mut values: Vec<f64> = (0..rows * cols)
        .map(|_| match rng.random_range(0..3) {
            0 => rng.random_range(-16.0..16.0),
            _ => SPECIALS[rng.random_range(1..SPECIALS.len())],
        })
        .collect();
    for r in (0..rows).step_by(3) {
        values[r * cols + rng.random_range(0..cols)] = f64::NAN;
    }
    let buffer = match p.inputs[0].dtype {
        strata_dsl::Dtype::F32 => {
            Buffer::from_vec(&[rows, cols], values.iter().map(|&v| v as f32).collect())
        }
        _ => Buffer::from_vec(&[rows, cols], values),
    };
    let mut args = Args::default();
    args.buffers.insert("X".into(), buffer.unwrap());
    args
}

/// Equal bit for bit, except that any NaN matches any NaN (its payload is not specified).
fn same_bits(got: &Buffer, want: &Buffer) -> Result<(), String> {
    if got.shape() != want.shape() {
        return Err(format!(
            "shape {:?}, expected {:?}",
            got.shape(),
            want.shape()
        ));
    }
    for i in 0..want.len() {
        let (g, w) = (got.get_flat(i).unwrap(), want.get_flat(i).unwrap());
        let (gf, wf) = (g.as_f64(), w.as_f64());
        let same = (gf.is_nan() && wf.is_nan()) || (gf.to_bits() == wf.to_bits());
        if !same {
            return Err(format!("element {i} is {g:?}, expected {w:?}"));
        }
    }
    Ok(())
}

/// Every rung's answer for one schedule, checked against the reference's.
fn check(p: &Pipeline, schedule: &Schedule, args: &Args, expected: &Buffer) {
    let case = format!("{}: {schedule}", p.name);
    let lowered = lower(p, schedule).unwrap_or_else(|e| panic!("{case}: {e}"));
    let interpreted = interpret(&lowered, args).unwrap_or_else(|e| panic!("{case}: {e}"));
    same_bits(&interpreted, expected).unwrap_or_else(|e| panic!("{case} (interpreter): {e}"));
    for backend in Backend::built() {
        let options = CodegenOptions {
            backend,
            ..CodegenOptions::default()
        };
        let compiled = compile_pipeline(p, schedule, &strata_dsl::Sizes::new(), &options)
            .unwrap_or_else(|e| panic!("{case} ({backend}): {e}"));
        let got = compiled.run(args, 2).unwrap();
        same_bits(&got, expected).unwrap_or_else(|e| panic!("{case} ({backend}): {e}"));
    }
}

#[test]
fn reductions_over_nan_and_signed_zeros_do_not_depend_on_the_schedule() {
    let mut rng = StdRng::seed_from_u64(19);
    for source in KERNELS {
        let p = parse_kernel(source, "nan.strata").unwrap();
        for (rows, cols) in [(16, 16), (7, 13), (3, 1)] {
            let args = input(&p, rows, cols, &mut rng);
            let expected = evaluate(&p, &args).unwrap();
            let mut schedules: Vec<Schedule> = SCHEDULES
                .iter()
                .map(|s| parse_schedule(s).unwrap())
                .filter(|s| lower(&p, s).is_ok())
                .collect();
            // The reductions take every schedule but the last (for 2-D outputs); the
            // elementwise kernel has no update, so the default and the last.
            let lowered = if p.name == "clampmix" {
                2
            } else {
                SCHEDULES.len() - 1
            };
            assert_eq!(schedules.len(), lowered, "{}", p.name);
            schedules.extend((0..8).map(|_| random_schedule(&p, &mut rng)));
            for schedule in &schedules {
                check(&p, schedule, &args, &expected);
            }
        }
    }
}

/// The reference's own answers: NaN wins, `-0.0` is below `+0.0`, infinities order as usual.
#[test]
fn the_reference_follows_ieee_maximum_and_minimum() {
    let p = parse_kernel(KERNELS[0], "nan.strata").unwrap();
    let rows: [&[f32]; 5] = [
        &[1.0, f32::NAN, 3.0],
        &[-0.0, 0.0, -0.0],
        &[0.0, -0.0, f32::NEG_INFINITY],
        &[f32::NEG_INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY],
        &[2.0, f32::INFINITY, f32::NAN],
    ];
    let values: Vec<f32> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    let mut args = Args::default();
    args.buffers
        .insert("X".into(), Buffer::from_vec(&[5, 3], values).unwrap());
    let out = evaluate(&p, &args).unwrap();
    let got: Vec<u32> = out
        .as_slice::<f32>()
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect();
    let want = [f32::NAN, 0.0, 0.0, f32::NEG_INFINITY, f32::NAN];
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_nan() {
            f32::from_bits(*g).is_nan()
        } else {
            *g == w.to_bits()
        };
        assert!(
            ok,
            "row {i}: {} (bits {g:#x}), expected {w}",
            f32::from_bits(*g)
        );
    }
}
