//! `fast_exp`, `fast_log` and `fast_pow` for `f32`: the one definition of each algorithm.
//!
//! The kernel language's accurate `exp`/`log`/`pow` are libm's in the reference and a 1-ulp
//! polynomial in compiled vector code, so the two may differ in the last bits. The fast
//! intrinsics are different by design: each is a fixed sequence of IEEE 754 operations, written
//! here once. The reference evaluator calls these functions, and the code generator
//! (`strata-jit`'s `vmath::fast`) emits the same operations in the same order, scalar or four
//! lanes at a time, so compiled code gives bit-identical results on every input (NaN payloads
//! aside: which NaN comes out of an operation with two NaN operands is the hardware's choice).
//!
//! Every step is one of: `+`, `-`, `*`, a fused multiply-add ([`f32::mul_add`], rounded once;
//! the code generator always emits Cranelift's `fma`, which is one `vfmadd` on a host with FMA
//! and an exactly fused `fmaf` libcall without it), a comparison feeding a select, integer
//! shifts, masks and additions on the bits, and an exact `i32 -> f32` conversion. No branches
//! on data in compiled code, no tables: the algorithms vectorize as they are.
//!
//! Error bounds, measured over every `f32` (every bit pattern, release build, against `f64`
//! `exp`/`ln`; `dsl/tests/fast_math.rs` asserts them on every value of the core ranges and a
//! dense sample elsewhere, and its ignored test runs the exhaustive check):
//!
//! | function | inputs | relative error | ulp |
//! |---|---|---|---|
//! | [`fast_exp_f32`] | `-86.98997 <= x <= 88.72283` | `<= 1.65e-7` | `<= 2.02` |
//! | [`fast_log_f32`] | positive normal `x` | `<= 2.5e-7` | `<= 3.4` |
//! | [`fast_pow_f32`] | `x` positive normal, finite result | `<= 2.5e-7 + 3e-7 * abs(y * ln x)` | |
//!
//! `f32::exp` and `f32::ln` are within about 1 ulp; the fast versions are a few ulp, about
//! 21-22 correct bits (Halide's `fast_exp`, by comparison, promises all but the last 5 bits).

#![allow(
    clippy::excessive_precision,
    reason = "coefficients are written as the exact bits the algorithm uses"
)]

/// `1.5 * 2^23 + 126`: `x * log2(e)` plus this rounds to the nearest integer `n` and leaves
/// `n + 126` in the low mantissa bits, which `<< 23` moves into the exponent field of
/// `2^(n - 1)` (the `+ 126` is `127 - 1`: see [`fast_exp_f32`] for why `n - 1`).
pub const EXP_MAGIC: f32 = 12_583_038.0;
/// `fast_exp`'s inputs are clamped to `[EXP_LO, EXP_HI]`. `EXP_LO` has `n = -126`, whose
/// scale `2^(n - 1)` has exponent field 0, i.e. is `+0`: every input at or below the
/// underflow point (`-inf`, softmax's `-1e30` masks) gives exactly `+0` this way.
pub const EXP_LO: f32 = -87.5;
/// `EXP_HI` has `n = 128` and `2 e^r > 2.6`, so its result `2 e^r * 2^127` overflows to
/// `+inf`, as does every input above it (`+inf` included).
pub const EXP_HI: f32 = 89.0;
/// `ln 2` rounded to `f32`. With a fused multiply-add, `x - n * LN2_HI` is exact for every
/// `n` the clamped inputs give (the result is small and lies on `x`'s grid).
pub const LN2_HI: f32 = f32::from_bits(0x3f31_7218);
/// `ln 2 - LN2_HI` rounded to `f32` (Cody-Waite: `x - n ln 2` to about 2^-48 of `n`).
pub const LN2_LO: f32 = f32::from_bits(0xb102_e308);
/// `2 e^r ~= 2 + r P(r)` on `|r| <= ln 2 / 2`, coefficients of the Horner chain highest degree
/// first, the last being `2`. A minimax fit of `e^r ~= 1 + r (c1 + c2 r + ... + c5 r^4)`
/// for the relative error (Remez, 9.1e-8 before rounding to `f32`; the same as XNNPACK's
/// `p5` polynomial to the last bits), every coefficient doubled: doubling is exact, so the
/// chain computes exactly twice what the undoubled one would.
pub const EXP_POLY: [f32; 6] = [
    f32::from_bits(0x3c87_d41a), // 2 * 8.290315e-3
    f32::from_bits(0x3dab_9d2a), // 2 * 4.189793e-2
    f32::from_bits(0x3eaa_ad35), // 2 * 1.6667636e-1
    f32::from_bits(0x3f7f_fee3), // 2 * 4.999915e-1
    f32::from_bits(0x3fff_fffb), // 2 * 9.999997e-1
    2.0,
];
/// The bits of `sqrt(1/2)` rounded to `f32`: subtracting them from a positive float's bits
/// puts `floor(log2(x / sqrt(1/2)))` in the bits above the mantissa (musl's `logf` split).
pub const SQRT_HALF_BITS: u32 = 0x3f35_04f3;
/// The mantissa field of an `f32`.
const MANTISSA_MASK: i32 = 0x007f_ffff;
/// `log(1 + f) ~= f + f^2 Q(f)` on `sqrt(1/2) - 1 <= f < sqrt(2) - 1`, coefficients of `Q`
/// highest degree first: a minimax fit (Remez) of degree 6 for the relative error of
/// `log(1 + f)`, 1.8e-7 before rounding to `f32`.
pub const LOG_POLY: [f32; 7] = [
    f32::from_bits(0xbdce_7cb7), // -1.0082381e-1
    f32::from_bits(0x3e25_b037), // 1.6180502e-1
    f32::from_bits(0xbe30_9214), // -1.7243224e-1
    f32::from_bits(0x3e4b_d8b3), // 1.9906883e-1
    f32::from_bits(0xbe7f_b494), // -2.4971229e-1
    f32::from_bits(0x3eaa_ac7a), // 3.3334714e-1
    f32::from_bits(0xbf00_0036), // -5.0000322e-1
];

/// `e^x` in about 13 operations: the fast, bit-reproducible `exp` of the kernel language.
///
/// Relative error at most 1.65e-7 (2.02 ulp) for every `x` in `[-86.98997, 88.72283]`.
/// Outside: `x <= -86.989975` gives `+0` (results below about `2^-125.5`, `1.67e-38`, are
/// flushed to zero: every nonzero result is a normal float, and masked lanes never take the
/// slow subnormal path), `x >= 88.72284` gives `+inf` (exactly where `e^x` rounds past
/// `f32::MAX`), `-inf` gives `+0`, `+inf` gives `+inf`, NaN gives NaN.
///
/// The steps: clamp `x` to `[EXP_LO, EXP_HI]` (a NaN passes both comparisons unchanged);
/// `n = round(x log2 e)` by the magic-number addition (one `fma`), exact in `z`'s low bits;
/// `r = x - n ln 2` in two `fma`s (Cody-Waite), `|r| <= 0.35`; `q = 2 e^r` by Horner's rule
/// with [`EXP_POLY`] (five `fma`s); the result is `q * 2^(n - 1)`, whose scale is built
/// from `z`'s bits by one shift. Scaling by `2^(n - 1)` instead of `2^n` is what lets
/// `n = 128` (inputs from 88.38 to the overflow point) be finite: `2^127` exists, `2^128` does
/// not; and the product rounds once, like IEEE arithmetic, so overflow happens exactly
/// where the true value's would (to within the polynomial's error).
pub fn fast_exp_f32(x: f32) -> f32 {
    let x = clamp_keep_nan(x, EXP_LO, EXP_HI);
    let z = x.mul_add(std::f32::consts::LOG2_E, EXP_MAGIC);
    let n = z - EXP_MAGIC;
    let r = n.mul_add(-LN2_HI, x);
    let r = n.mul_add(-LN2_LO, r);
    let q = horner(r, &EXP_POLY);
    let scale = f32::from_bits(z.to_bits() << 23);
    q * scale
}

/// `ln x` in about 20 operations: the fast, bit-reproducible `log` of the kernel language.
///
/// Relative error at most 2.5e-7 (3.4 ulp) for every positive normal `x` (and `ln 1` is
/// exactly 0). Outside: `+0`, `-0` and subnormal `x` (below `f32::MIN_POSITIVE`) give
/// `-inf`; `x < 0` (`-inf` included) and NaN give NaN (always `f32::NAN`'s bits); `+inf`
/// gives `+inf`.
///
/// The steps: `x = 2^e m` with `m` in `[sqrt(1/2), sqrt 2)` by integer arithmetic on the bits
/// (musl's split: subtract [`SQRT_HALF_BITS`], shift for `e`, mask and add back for `m`);
/// `f = m - 1` (exact); `log(1 + f) = f + f^2 Q(f)` with [`LOG_POLY`] (Horner, six `fma`s,
/// then one more with the rounded `f^2`, so the result keeps its relative accuracy as `f`
/// goes to 0); `e ln 2` added by a last `fma` (one rounding; `LN2_HI`'s error times
/// `|e| <= 128` is far below the result's ulp). Three selects give the special cases.
pub fn fast_log_f32(x: f32) -> f32 {
    let ix = x.to_bits().wrapping_sub(SQRT_HALF_BITS) as i32;
    let e = (ix >> 23) as f32;
    let m = f32::from_bits(((ix & MANTISSA_MASK) as u32).wrapping_add(SQRT_HALF_BITS));
    let f = m - 1.0;
    let f2 = f * f;
    let q = horner(f, &LOG_POLY);
    let y = f2.mul_add(q, f);
    let r = e.mul_add(LN2_HI, y);
    log_special_cases(x, r)
}

/// `x^y` as `fast_exp(fast_log(x) * y)`, Halide's `fast_pow`: the fast, bit-reproducible
/// `pow` of the kernel language.
///
/// For positive normal `x` and a result that is neither flushed to 0 nor infinite, the
/// relative error is at most `2.5e-7 + 3e-7 * |y ln x|`: the log's error (and the rounding
/// of the product) is multiplied by `|y|` and becomes a relative error through the
/// exponential. So it is below 1e-5 while `|y ln x| <= 32` (results from `e^-32 = 1.3e-14`
/// to `e^32 = 7.9e13`). Results below about `1.67e-38` are `+0`, above `f32::MAX` `+inf`.
/// Other inputs follow from the parts: `x < 0` gives NaN (there is no integer-`y` case), as
/// does NaN in either argument; `x = 0` gives `+0` for `y > 0`, `+inf` for `y < 0`, NaN for
/// `y = 0`; `x = +inf` gives `+inf` for `y > 0`, `+0` for `y < 0`, NaN for `y = 0`; `x = 1`
/// gives exactly 1 for finite `y`.
pub fn fast_pow_f32(x: f32, y: f32) -> f32 {
    fast_exp_f32(fast_log_f32(x) * y)
}

/// `x` clamped to `[lo, hi]` by two selects, as vector code computes it: a NaN fails both
/// comparisons and passes through unchanged.
fn clamp_keep_nan(x: f32, lo: f32, hi: f32) -> f32 {
    let x = if x < lo { lo } else { x };
    if hi < x {
        hi
    } else {
        x
    }
}

/// Horner's rule with one fused multiply-add per coefficient after the first (highest
/// degree first), the order the code generator emits.
fn horner(x: f32, coeffs: &[f32]) -> f32 {
    let (first, rest) = coeffs
        .split_first()
        .map_or((0.0, &[][..]), |(f, r)| (*f, r));
    rest.iter().fold(first, |acc, &c| acc.mul_add(x, c))
}

/// Replaces `fast_log`'s result where the bit split is meaningless, in the order the code
/// generator selects: below `f32::MIN_POSITIVE` (zeros, subnormals, negatives) `-inf`, then
/// `+inf` for `+inf`, then NaN for negative or NaN inputs.
fn log_special_cases(x: f32, r: f32) -> f32 {
    let r = if x < f32::MIN_POSITIVE {
        f32::NEG_INFINITY
    } else {
        r
    };
    let r = if x == f32::INFINITY { f32::INFINITY } else { r };
    if x < 0.0 || x.is_nan() {
        f32::NAN
    } else {
        r
    }
}
