//! The error bounds `strata_dsl::fast_math` states, measured: `fast_exp` and `fast_log` against
//! `f64` `exp`/`ln` on every `f32` of their core ranges and a dense sample of the rest, their
//! special values, and `fast_pow` on a grid of bases and exponents.
//!
//! Every `f32` at once (about 4e9 values, a few minutes in a release build) is the ignored
//! test `every_f32`: `cargo test --release -p strata-dsl --test fast_math -- --ignored`.

use strata_dsl::fast_math::{fast_exp_f32, fast_log_f32, fast_pow_f32};

/// The documented bound of `fast_exp` (relative, on `[EXP_FIRST_NONZERO, EXP_LAST_FINITE]`).
const EXP_BOUND: f64 = 1.65e-7;
/// The documented bound of `fast_log` (relative, on positive normal inputs).
const LOG_BOUND: f64 = 2.5e-7;
/// The smallest input whose `fast_exp` is not `+0`.
const EXP_FIRST_NONZERO: f32 = -86.98997;
/// The largest input whose `fast_exp` is finite.
const EXP_LAST_FINITE: f32 = 88.72283;

/// The largest error seen and the input it was seen at.
#[derive(Debug, Clone, Copy)]
struct Worst {
    error: f64,
    at: f32,
}

impl Worst {
    const NONE: Worst = Worst {
        error: 0.0,
        at: f32::NAN,
    };

    /// Records `error` at `x` if it is the largest so far.
    fn see(&mut self, error: f64, x: f32) {
        if error > self.error {
            *self = Worst { error, at: x };
        }
    }
}

/// `|got - want| / |want|`, exact enough in f64 for errors near 1e-7.
fn relative_error(got: f32, want: f64) -> f64 {
    (f64::from(got) - want).abs() / want.abs()
}

/// Checks `fast_exp` at `x`: `+0` at and below the underflow point, `+inf` above the overflow
/// point, else within the returned relative error (which the caller bounds).
fn exp_error_at(x: f32) -> f64 {
    let got = fast_exp_f32(x);
    if x < EXP_FIRST_NONZERO {
        assert_eq!(got.to_bits(), 0, "fast_exp({x:e}) = {got:e}, expected +0");
        return 0.0;
    }
    if x > EXP_LAST_FINITE {
        assert_eq!(
            got,
            f32::INFINITY,
            "fast_exp({x:e}) = {got:e}, expected +inf"
        );
        return 0.0;
    }
    assert!(
        got.is_normal(),
        "fast_exp({x:e}) = {got:e}, expected a normal float"
    );
    relative_error(got, f64::from(x).exp())
}

/// Checks `fast_log` at a positive normal `x` and returns its relative error (0 at `x = 1`,
/// where the result must be exactly 0).
fn log_error_at(x: f32) -> f64 {
    let got = fast_log_f32(x);
    if x == 1.0 {
        assert_eq!(got.to_bits(), 0, "fast_log(1) = {got:e}");
        return 0.0;
    }
    relative_error(got, f64::from(x).ln())
}

/// The worst of `error_at` over every `f32` whose bits lie in `lo..=hi`, stepping by `stride`
/// bit patterns.
fn worst_over(lo: u32, hi: u32, stride: usize, error_at: fn(f32) -> f64) -> Worst {
    let mut worst = Worst::NONE;
    for bits in (lo..=hi).step_by(stride) {
        let x = f32::from_bits(bits);
        worst.see(error_at(x), x);
    }
    worst
}

/// The bits of the positive `f32`s `a ..= b`.
fn positive(a: f32, b: f32) -> (u32, u32) {
    (a.to_bits(), b.to_bits())
}

/// The bits of the negative `f32`s `-b ..= -a` (`0 <= a <= b`).
fn negative(a: f32, b: f32) -> (u32, u32) {
    ((-a).to_bits(), (-b).to_bits())
}

#[test]
fn fast_exp_is_within_its_bound_on_every_f32_from_a_sixty_fourth_to_one() {
    // 2 x 6 binades x 2^23: every value with 2^-6 <= |x| <= 1 (the rest of [-1, 1] is in the
    // sampled test below; all of it in `every_f32`).
    let mut worst = Worst::NONE;
    for (lo, hi) in [positive(1.0 / 64.0, 1.0), negative(1.0 / 64.0, 1.0)] {
        let w = worst_over(lo, hi, 1, exp_error_at);
        worst.see(w.error, w.at);
    }
    println!("fast_exp: {worst:?}");
    assert!(worst.error <= EXP_BOUND, "{worst:?}");
    // The polynomial's error is visible: the bound is not loose by orders of magnitude.
    assert!(worst.error > EXP_BOUND / 4.0, "{worst:?}");
}

#[test]
fn fast_exp_is_within_its_bound_on_a_dense_sample_of_every_f32() {
    // Every 61st bit pattern (a prime, so every mantissa residue appears) of both signs,
    // from 0 to infinity: below 2^-6 in magnitude, up through both thresholds and beyond.
    let mut worst = Worst::NONE;
    for (lo, hi) in [positive(0.0, f32::INFINITY), negative(0.0, f32::INFINITY)] {
        let w = worst_over(lo, hi, 61, exp_error_at);
        worst.see(w.error, w.at);
    }
    println!("fast_exp: {worst:?}");
    assert!(worst.error <= EXP_BOUND, "{worst:?}");
}

#[test]
fn fast_exp_is_within_its_bound_at_every_f32_near_its_thresholds() {
    // Every value within 2^16 ulp of the underflow and overflow points, so the documented
    // thresholds are exactly where the results change.
    let mut worst = Worst::NONE;
    for t in [EXP_FIRST_NONZERO, EXP_LAST_FINITE] {
        let w = worst_over(
            t.to_bits() - (1 << 16),
            t.to_bits() + (1 << 16),
            1,
            exp_error_at,
        );
        worst.see(w.error, w.at);
    }
    println!("fast_exp: {worst:?}");
    assert!(worst.error <= EXP_BOUND, "{worst:?}");
    assert_eq!(fast_exp_f32(EXP_FIRST_NONZERO.next_down()).to_bits(), 0);
    assert!(fast_exp_f32(EXP_FIRST_NONZERO) > 0.0);
    assert!(fast_exp_f32(EXP_LAST_FINITE).is_finite());
    assert_eq!(fast_exp_f32(EXP_LAST_FINITE.next_up()), f32::INFINITY);
}

#[test]
fn fast_exp_special_values() {
    assert_eq!(fast_exp_f32(0.0), 1.0);
    assert_eq!(fast_exp_f32(-0.0), 1.0);
    assert_eq!(fast_exp_f32(f32::NEG_INFINITY).to_bits(), 0);
    assert_eq!(fast_exp_f32(-1e30).to_bits(), 0);
    assert_eq!(fast_exp_f32(-200.0).to_bits(), 0);
    assert_eq!(fast_exp_f32(f32::INFINITY), f32::INFINITY);
    assert_eq!(fast_exp_f32(1e30), f32::INFINITY);
    assert!(fast_exp_f32(f32::NAN).is_nan());
    assert!(fast_exp_f32(-f32::NAN).is_nan());
    // Tiny inputs: e^x rounds to 1 (or its neighbours), never further.
    for x in [f32::MIN_POSITIVE, -f32::MIN_POSITIVE, 1e-30, -1e-30] {
        assert_eq!(fast_exp_f32(x), 1.0, "{x:e}");
    }
}

#[test]
fn fast_log_is_within_its_bound_on_every_f32_from_a_half_to_two() {
    // Every value of [0.5, 2], where the result goes through 0 and the reduction switches
    // exponent at sqrt(1/2) and sqrt(2): 2 x 2^23 values.
    let (lo, hi) = positive(0.5, 2.0);
    let worst = worst_over(lo, hi, 1, log_error_at);
    println!("fast_log: {worst:?}");
    assert!(worst.error <= LOG_BOUND, "{worst:?}");
    assert!(worst.error > LOG_BOUND / 4.0, "{worst:?}");
}

#[test]
fn fast_log_is_within_its_bound_on_a_dense_sample_of_every_positive_normal() {
    let (lo, hi) = positive(f32::MIN_POSITIVE, f32::MAX);
    let worst = worst_over(lo, hi, 29, log_error_at);
    println!("fast_log: {worst:?}");
    assert!(worst.error <= LOG_BOUND, "{worst:?}");
    // The extremes themselves.
    for x in [
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::EPSILON,
        1.0 + f32::EPSILON,
        1.0 - 1e-7,
    ] {
        assert!(log_error_at(x) <= LOG_BOUND, "{x:e}");
    }
}

#[test]
fn fast_log_special_values() {
    assert_eq!(fast_log_f32(0.0), f32::NEG_INFINITY);
    assert_eq!(fast_log_f32(-0.0), f32::NEG_INFINITY);
    assert_eq!(fast_log_f32(f32::from_bits(1)), f32::NEG_INFINITY);
    assert_eq!(
        fast_log_f32(f32::MIN_POSITIVE.next_down()),
        f32::NEG_INFINITY
    );
    assert_eq!(fast_log_f32(f32::INFINITY), f32::INFINITY);
    for x in [
        -1.0,
        -f32::MIN_POSITIVE,
        -f32::from_bits(1),
        f32::NEG_INFINITY,
        f32::NAN,
    ] {
        assert_eq!(fast_log_f32(x).to_bits(), f32::NAN.to_bits(), "{x:e}");
    }
}

/// `fast_pow`'s documented bound at `x^y` where `t = y ln x`.
fn pow_bound(t: f64) -> f64 {
    2.5e-7 + 3e-7 * t.abs()
}

#[test]
fn fast_pow_is_within_its_bound_on_a_grid() {
    // Bases: a dense sample of positive normals; exponents from -40 to 40 and fractions.
    let ys: Vec<f32> = (-80..=80)
        .map(|k| k as f32 * 0.5)
        .chain([0.1, -0.1, 1.0 / 3.0, 0.7, -2.25, 1e-3, 17.3])
        .collect();
    let (lo, hi) = positive(f32::MIN_POSITIVE, f32::MAX);
    let mut worst = Worst::NONE;
    let mut checked = 0u32;
    for bits in (lo..=hi).step_by(4099) {
        let x = f32::from_bits(bits);
        for &y in &ys {
            let t = f64::from(y) * f64::from(x).ln();
            // Inside fast_exp's range with a margin for the log's error.
            if !(-86.9..=88.7).contains(&t) {
                continue;
            }
            let got = fast_pow_f32(x, y);
            let error = relative_error(got, t.exp()) / pow_bound(t);
            worst.see(error, x);
            checked += 1;
        }
    }
    println!("fast_pow: error / bound {worst:?} over {checked} pairs");
    assert!(checked > 100_000, "{checked}");
    assert!(worst.error <= 1.0, "error / bound {worst:?}");
}

#[test]
fn fast_pow_special_values() {
    assert_eq!(fast_pow_f32(0.0, 2.0).to_bits(), 0);
    assert_eq!(fast_pow_f32(0.0, -2.0), f32::INFINITY);
    assert!(fast_pow_f32(0.0, 0.0).is_nan());
    assert_eq!(fast_pow_f32(f32::INFINITY, 0.5), f32::INFINITY);
    assert_eq!(fast_pow_f32(f32::INFINITY, -0.5).to_bits(), 0);
    assert!(fast_pow_f32(-2.0, 2.0).is_nan());
    assert!(fast_pow_f32(2.0, f32::NAN).is_nan());
    assert!(fast_pow_f32(f32::NAN, 1.0).is_nan());
    for y in [-1e30, -3.5, 0.0, 1.0, 1e30] {
        assert_eq!(fast_pow_f32(1.0, y), 1.0, "1^{y:e}");
    }
    assert_eq!(fast_pow_f32(7.0, 0.0), 1.0);
}

#[test]
#[ignore = "every f32, about 4e9 values: run in a release build"]
fn every_f32() {
    let mut exp = Worst::NONE;
    let mut log = Worst::NONE;
    for bits in 0..=u32::MAX {
        let x = f32::from_bits(bits);
        if x.is_nan() {
            assert!(fast_exp_f32(x).is_nan() && fast_log_f32(x).is_nan());
            continue;
        }
        exp.see(exp_error_at(x), x);
        if x.is_normal() && x > 0.0 {
            log.see(log_error_at(x), x);
        }
    }
    println!("fast_exp: {exp:?}\nfast_log: {log:?}");
    assert!(exp.error <= EXP_BOUND, "{exp:?}");
    assert!(log.error <= LOG_BOUND, "{log:?}");
}
