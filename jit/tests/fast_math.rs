//! `fast_exp`, `fast_log` and `fast_pow` compiled (scalar, vectorized in f32x4 pieces, and
//! vectorized in lanes without native pieces) give bit for bit what `strata_dsl::fast_math`
//! gives, with every backend built in, on every special value and a dense sample of every `f32`.
//! Any NaN matches any NaN: only NaN payloads may differ (see `strata_dsl::fast_math`).

mod common;
use strata_dsl::fast_math::{fast_exp_f32, fast_log_f32, fast_pow_f32};
use strata_dsl::{evaluate, Args, Buffer};
use strata_jit::CompiledKernel;

const EXP: &str = "kernel e(X: f32[N]) -> O: f32[N] { O(i) = fast_exp(X(i)); }";
const LOG: &str = "kernel l(X: f32[N]) -> O: f32[N] { O(i) = fast_log(X(i)); }";
const POW: &str = "kernel p(X: f32[N], Y: f32[N]) -> O: f32[N] { O(i) = fast_pow(X(i), Y(i)); }";

/// Scalar (the default), f32x4 pieces (8 and 16 lanes, with scalar or guarded tails) and 2
/// lanes (no native piece: one scalar per lane).
const SCHEDULES: [&str; 4] = [
    "",
    "O: vectorize(i, 8)",
    "O: vectorize(i, 16)",
    "O: vectorize(i, 2)",
];

/// Inputs where implementations go wrong: zeros, infinities, NaNs, subnormals, the clamps
/// and thresholds of `fast_exp`, ties of its rounding, the reduction boundaries of
/// `fast_log`, and the extremes.
fn special_inputs() -> Vec<f32> {
    let mut xs = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7fc0_1234),
        f32::from_bits(0xff80_0001),
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::MIN_POSITIVE,
        f32::MIN_POSITIVE.next_down(),
        -f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        f32::EPSILON,
        1.0,
        -1.0,
        std::f32::consts::FRAC_1_SQRT_2,
        std::f32::consts::SQRT_2,
        -1e30,
        1e30,
        -200.0,
        -104.7,
        -88.0,
        -87.5,
        -87.33654,
        -86.98997,
        -86.989975,
        -86.0,
        88.0,
        88.37626,
        88.72283,
        88.72284,
        89.0,
        100.0,
        0.5 * std::f32::consts::LN_2,
        -0.5 * std::f32::consts::LN_2,
    ];
    let around: Vec<f32> = xs
        .iter()
        .filter(|x| x.is_finite())
        .flat_map(|&x| [x.next_up(), x.next_down()])
        .collect();
    xs.extend(around);
    xs
}

/// The specials, then every `stride`-th bit pattern of every `f32`.
fn inputs(stride: usize) -> Vec<f32> {
    let mut xs = special_inputs();
    xs.extend((0..=u32::MAX).step_by(stride).map(f32::from_bits));
    xs
}

fn compile(source: &str, schedule: &str) -> (strata_dsl::Pipeline, CompiledKernel) {
    let (pipeline, compiled) = common::compile(source, schedule);
    let clif = compiled.clif().join("\n");
    assert!(clif.contains("fma"), "{schedule}: no fma inline\n{clif}");
    assert!(
        !clif.contains("strata_"),
        "{schedule}: a runtime call\n{clif}"
    );
    if schedule.contains("vectorize(i, 8)") {
        assert!(
            clif.contains("f32x4"),
            "{schedule}: no f32x4 pieces\n{clif}"
        );
    }
    (pipeline, compiled)
}

/// `compile`'s Cranelift kernel, then the kernel from every other backend built in (each must
/// give the reference's bits too).
fn every_backend(source: &str, schedule: &str) -> Vec<CompiledKernel> {
    let (_, cranelift) = compile(source, schedule);
    let (_, lowered) = common::lower_source(source, schedule);
    let others = common::compile_with_every_backend(source, schedule, &lowered);
    std::iter::once(cranelift)
        .chain(others.into_iter().skip(1))
        .collect()
}

fn run(kernel: &CompiledKernel, args: &Args, what: &str) -> Vec<f32> {
    let out = kernel
        .run(args, 1)
        .unwrap_or_else(|e| panic!("{what}: the call was refused: {e}"));
    out.as_slice::<f32>().unwrap_or(&[]).to_vec()
}

/// Asserts `got[i]` is bit for bit `want(i)` (both NaN also passes).
fn assert_bits(got: &[f32], want: impl Fn(usize) -> f32, inputs: impl Fn(usize) -> String) {
    let mut bad = Vec::new();
    for (i, &g) in got.iter().enumerate() {
        let w = want(i);
        if g.to_bits() != w.to_bits() && !(g.is_nan() && w.is_nan()) {
            bad.push(format!(
                "{}: got {g:e} ({:#x}), want {w:e} ({:#x})",
                inputs(i),
                g.to_bits(),
                w.to_bits()
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} mismatches, first: {:#?}",
        bad.len(),
        &bad[..bad.len().min(10)]
    );
}

/// One unary kernel under every schedule, on `xs`, against `reference`.
fn check_unary(source: &str, reference: fn(f32) -> f32, xs: &[f32]) {
    let args = Args::new().buffer("X", Buffer::from_vec(&[xs.len()], xs.to_vec()).unwrap());
    for schedule in SCHEDULES {
        for kernel in every_backend(source, schedule) {
            let what = format!("`{schedule}` ({})", kernel.backend());
            let got = run(&kernel, &args, &what);
            assert_eq!(got.len(), xs.len());
            assert_bits(
                &got,
                |i| reference(xs[i]),
                |i| format!("{what} x = {:e} ({:#x})", xs[i], xs[i].to_bits()),
            );
        }
    }
}

#[test]
fn fast_exp_is_bit_exact_scalar_and_vectorized() {
    // About 4.3 million inputs: every 1009th bit pattern, and every value near 0 and near the
    // thresholds (dense, since the result changes every few ulp there).
    let mut xs = inputs(1009);
    xs.extend((0..100_000).map(|k| f32::from_bits(0x3f80_0000 - 50_000 + k)));
    xs.extend((0..20_000).map(|k| f32::from_bits((-86.98997f32).to_bits() - 10_000 + k)));
    xs.extend((0..20_000).map(|k| f32::from_bits(88.72283f32.to_bits() - 10_000 + k)));
    check_unary(EXP, fast_exp_f32, &xs);
}

#[test]
fn fast_log_is_bit_exact_scalar_and_vectorized() {
    let mut xs = inputs(1009);
    xs.extend((0..100_000).map(|k| f32::from_bits(0x3f80_0000 - 50_000 + k)));
    xs.extend((0..20_000).map(|k| f32::from_bits(0x3f35_04f3 - 10_000 + k)));
    check_unary(LOG, fast_log_f32, &xs);
}

#[test]
fn fast_pow_is_bit_exact_scalar_and_vectorized() {
    // Bases: the specials and a sample of every f32; each paired with every exponent below in
    // turn (so every base meets every exponent across the lanes).
    let bases = inputs(65_537);
    let exponents: Vec<f32> = special_inputs()
        .into_iter()
        .chain([
            0.5,
            2.0,
            -2.0,
            3.0,
            1.0 / 3.0,
            -0.25,
            10.0,
            40.0,
            -40.0,
            127.0,
        ])
        .collect();
    let (xs, ys): (Vec<f32>, Vec<f32>) = bases
        .iter()
        .flat_map(|&x| exponents.iter().map(move |&y| (x, y)))
        .unzip();
    let args = Args::new()
        .buffer("X", Buffer::from_vec(&[xs.len()], xs.clone()).unwrap())
        .buffer("Y", Buffer::from_vec(&[ys.len()], ys.clone()).unwrap());
    for schedule in SCHEDULES {
        for kernel in every_backend(POW, schedule) {
            let what = format!("`{schedule}` ({})", kernel.backend());
            let got = run(&kernel, &args, &what);
            assert_eq!(got.len(), xs.len());
            assert_bits(
                &got,
                |i| fast_pow_f32(xs[i], ys[i]),
                |i| format!("{what} x = {:e}, y = {:e}", xs[i], ys[i]),
            );
        }
    }
}

#[test]
fn the_reference_evaluator_computes_the_same_bits() {
    // The reference evaluator (through `Value::intrinsic`) and the compiled vector code agree
    // on a kernel mixing all three with other arithmetic, as softmax uses fast_exp. No `+`
    // of a product: the code generator contracts `a + b * c` into one fma, a difference the
    // float tolerance allows elsewhere but that would show here.
    let source = "kernel m(X: f32[N]) -> O: f32[N] { \
                  O(i) = max(fast_exp(X(i) - 3.0), fast_log(abs(X(i)))) * fast_pow(abs(X(i)), 0.5); }";
    let xs = inputs(1_000_003);
    let args = Args::new().buffer("X", Buffer::from_vec(&[xs.len()], xs.clone()).unwrap());
    let (pipeline, kernel) = compile(source, "O: vectorize(i, 8)");
    let got = run(&kernel, &args, "mixed");
    let expected = evaluate(&pipeline, &args).unwrap();
    let want = expected.as_slice::<f32>().unwrap();
    assert_bits(&got, |i| want[i], |i| format!("x = {:e}", xs[i]));
}

/// `examples/kernels/<name>.strata` and its hand schedule `examples/schedules/<name>.sched`.
fn example(name: &str) -> (String, String) {
    let root = env!("CARGO_MANIFEST_DIR");
    let read =
        |path: String| std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    (
        read(format!("{root}/../examples/kernels/{name}.strata")),
        read(format!("{root}/../examples/schedules/{name}.sched")),
    )
}

#[test]
fn softmax_fast_is_softmax_within_a_few_ulp_and_masks_give_zero() {
    // Rows of values in [-12, 12), some masked (-inf) and some far below their row's maximum,
    // at a width that leaves vector tails (C = 203).
    let (rows, cols) = (7, 203);
    let mut state = 12345u32;
    let xs: Vec<f32> = (0..rows * cols)
        .map(|i| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            match i % 17 {
                3 => f32::NEG_INFINITY,
                5 => -150.0,
                _ => (state >> 8) as f32 / (1u32 << 24) as f32 * 24.0 - 12.0,
            }
        })
        .collect();
    let args = Args::new().buffer("X", Buffer::from_vec(&[rows, cols], xs.clone()).unwrap());
    let mut outputs = Vec::new();
    for name in ["softmax", "softmax_fast"] {
        let (source, hand) = example(name);
        for schedule in [String::new(), hand] {
            let (pipeline, kernel) = common::compile(&source, &schedule);
            let got = run(&kernel, &args, name);
            let expected = evaluate(&pipeline, &args).unwrap();
            strata_dsl::random::agree(
                &Buffer::from_vec(&[rows, cols], got.clone()).unwrap(),
                &expected,
                1e-6,
            )
            .unwrap_or_else(|e| panic!("{name} `{schedule}`: {e}"));
            outputs.push(got);
        }
    }
    let (accurate, fast) = (&outputs[1], &outputs[3]);
    for (i, (&a, &f)) in accurate.iter().zip(fast).enumerate() {
        if xs[i] == f32::NEG_INFINITY || xs[i] == -150.0 {
            assert_eq!(f.to_bits(), 0, "masked entry {i}: {f:e}");
            continue;
        }
        let error = (f64::from(f) - f64::from(a)).abs();
        assert!(
            error <= 1e-6 * f64::from(a) + 1e-37,
            "entry {i}: softmax {a:e}, fast {f:e}"
        );
    }
}
