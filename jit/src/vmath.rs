//! Vector `exp` and `log` for f32x4, emitted inline as Cranelift IR.
//!
//! There is no vector libm to call: a call per lane costs four extractlane/call/insertlane
//! round trips (about 5 ns each), so a vectorised kernel computes `exp`/`log` itself and
//! stays in xmm registers. Both use the classic Cephes single-precision algorithms
//! (`expf.c`, `logf.c`): range reduction by bit manipulation of the IEEE 754 encoding,
//! then a short polynomial evaluated with `fma`.
//!
//! Only instructions the x86-64 backend of Cranelift 0.135 lowers for F32X4/I32X4 are
//! used: `fmul`, `fadd`, `fsub`, `fma` (one `vfmadd` with the host ISA flags from
//! `cranelift_native::builder()`; four `fmaf` libcalls without them), `fcmp` +
//! `bitselect` (`blendvps`, or `minps`/`maxps` for the clamps), `iadd`, `isub`, `band`,
//! `bor`, shifts by an immediate, `fcvt_from_sint` and lane-preserving `bitcast`s.
//!
//! Accuracy (measured by `jit/tests/vmath.rs` against `f32::exp` / `f32::ln`): see the
//! constants `EXP_MAX_ULP` / `LOG_MAX_ULP` there.

#![allow(
    clippy::excessive_precision,
    reason = "Cephes' published coefficients are kept digit for digit, and LN2_HI is exact"
)]

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::types::{F32X4, I32, I32X4};
use cranelift_codegen::ir::{Endianness, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;

/// Flags for a `bitcast` between vector types: Cranelift requires an explicit byte order
/// when the lane count changes and accepts one always, so every bitcast here states it.
const BITCAST_FLAGS: MemFlagsData = MemFlagsData::new().with_endianness(Endianness::Little);

/// Inputs above this overflow: `exp(88.7228...)` is `f32::MAX`; clamping here (not at the
/// threshold) lets the final scaling round to `+inf` exactly as IEEE arithmetic would.
const EXP_CLAMP_HI: f32 = 89.0;
/// Inputs below this underflow: `exp(-103.97...)` is half the smallest subnormal, so the
/// final scaling rounds to 0. Clamping keeps `n` small enough for the exponent field.
const EXP_CLAMP_LO: f32 = -110.0;
/// `1.5 * 2^23`: adding it to a float of magnitude < 2^22 rounds to the nearest integer
/// (ties to even) and leaves that integer in the low mantissa bits.
const ROUND_MAGIC: f32 = 12_582_912.0;
/// ln 2 split in two (Cody-Waite): `LN2_HI` has 9 significant bits, so `n * LN2_HI` is
/// exact for |n| < 2^15 and `x - n * ln2` loses no bits to cancellation.
const LN2_HI: f32 = 0.693_359_375;
/// `ln 2 - LN2_HI`.
const LN2_LO: f32 = -2.121_944_4e-4;
/// Cephes `expf` polynomial: `exp(r) ~= 1 + r + r^2 * P(r)` on `|r| <= ln2 / 2`,
/// coefficients of `P` from the highest degree down.
const EXP_POLY: [f32; 6] = [
    1.987_569_150_0e-4,
    1.398_199_950_7e-3,
    8.333_451_907_3e-3,
    4.166_579_589_4e-2,
    1.666_666_545_9e-1,
    5.000_000_120_1e-1,
];

/// sqrt(1/2): mantissas below it are doubled so the reduced argument lies in
/// `[sqrt(1/2) - 1, sqrt(2) - 1)`, where the polynomial is accurate.
const SQRT_HALF: f32 = std::f32::consts::FRAC_1_SQRT_2;
/// Cephes `logf` polynomial: `log(1 + m) ~= m - m^2/2 + m^3 * P(m)`, highest degree first.
const LOG_POLY: [f32; 9] = [
    7.037_683_629_2e-2,
    -1.151_461_031_0e-1,
    1.167_699_874_0e-1,
    -1.242_014_084_6e-1,
    1.424_932_278_7e-1,
    -1.666_805_766_5e-1,
    2.000_071_476_5e-1,
    -2.499_999_399_3e-1,
    3.333_333_117_4e-1,
];
/// 2^23: multiplying a subnormal by it gives a normal number with the same mantissa bits.
const TWO_POW_23: f32 = 8_388_608.0;

/// A f32x4 with `c` in every lane.
fn splat_f(b: &mut FunctionBuilder, c: f32) -> Value {
    let s = b.ins().f32const(c);
    b.ins().splat(F32X4, s)
}

/// An i32x4 with `c` in every lane. `iconst.i32` wants its immediate zero-extended
/// (the verifier rejects a sign-extended negative), hence the `u32` detour.
fn splat_i(b: &mut FunctionBuilder, c: i32) -> Value {
    let s = b.ins().iconst(I32, i64::from(c as u32));
    b.ins().splat(I32X4, s)
}

/// The bits of a f32x4 as an i32x4 (no instruction is emitted for it).
fn to_bits(b: &mut FunctionBuilder, v: Value) -> Value {
    b.ins().bitcast(I32X4, BITCAST_FLAGS, v)
}

/// An i32x4 of bits reinterpreted as a f32x4.
fn from_bits(b: &mut FunctionBuilder, v: Value) -> Value {
    b.ins().bitcast(F32X4, BITCAST_FLAGS, v)
}

/// Lane-wise `if a cc b { t } else { f }` on f32x4. The all-ones/all-zeros mask of a vector
/// `fcmp` lets x64 use one `blendvps` (or `minps`/`maxps` for the min/max shapes) instead
/// of and/andnot/or.
fn select_f(
    b: &mut FunctionBuilder,
    cc: FloatCC,
    a: Value,
    bb: Value,
    t: Value,
    f: Value,
) -> Value {
    let mask = b.ins().fcmp(cc, a, bb);
    let mask = from_bits(b, mask);
    b.ins().bitselect(mask, t, f)
}

/// Horner evaluation of `coeffs` (highest degree first) at `x`, one `fma` per step.
fn horner(b: &mut FunctionBuilder, x: Value, coeffs: &[f32]) -> Value {
    let mut acc = splat_f(b, coeffs[0]);
    for &c in &coeffs[1..] {
        let c = splat_f(b, c);
        acc = b.ins().fma(acc, x, c);
    }
    acc
}

/// `2^n` for each i32 lane `n` in `-126 ..= 127`, built directly in the exponent field.
fn pow2i(b: &mut FunctionBuilder, n: Value) -> Value {
    let bias = splat_i(b, 127);
    let biased = b.ins().iadd(n, bias);
    let bits = b.ins().ishl_imm_u(biased, 23);
    from_bits(b, bits)
}

/// Lane-wise `e^x` of a f32x4, within a few ulp of `f32::exp` (see the module docs).
///
/// `x` is clamped to `[-110, 89]` (`max`/`min` that keep NaN), `n = round(x / ln 2)` by the
/// `1.5 * 2^23` trick, `r = x - n ln 2` with a two-constant Cody-Waite split, Cephes'
/// degree-7 polynomial for `e^r`, and the result is scaled by `2^n` as `2^(n - n/2) *
/// 2^(n/2)`: two exact multiplies whose factors stay normal, so large `x` overflows to
/// `+inf`, very negative `x` underflows through the subnormals to `0`, and neither the
/// exponent field nor an integer overflows. NaN in gives NaN out; `-inf` gives 0 and
/// `+inf` gives `+inf`.
pub fn exp_f32x4(b: &mut FunctionBuilder, x: Value) -> Value {
    let x = clamp_keep_nan(b, x, EXP_CLAMP_LO, EXP_CLAMP_HI);
    let (n, nf) = round_log2e(b, x);
    let r = reduce_ln2(b, x, nf);
    let p = exp_poly(b, r);
    scale_pow2(b, p, n)
}

/// `min(max(x, lo), hi)` lane-wise, with NaN lanes passed through unchanged.
fn clamp_keep_nan(b: &mut FunctionBuilder, x: Value, lo: f32, hi: f32) -> Value {
    let lo = splat_f(b, lo);
    let hi = splat_f(b, hi);
    // `x < lo` and `hi < x` are false for NaN, so a NaN lane keeps `x`.
    let x = select_f(b, FloatCC::LessThan, x, lo, lo, x);
    select_f(b, FloatCC::LessThan, hi, x, hi, x)
}

/// `n = round(x * log2(e))` (ties to even) as both i32x4 and f32x4, for |x| < 2^21.
fn round_log2e(b: &mut FunctionBuilder, x: Value) -> (Value, Value) {
    let log2e = splat_f(b, std::f32::consts::LOG2_E);
    let magic = splat_f(b, ROUND_MAGIC);
    let t = b.ins().fma(x, log2e, magic);
    let nf = b.ins().fsub(t, magic);
    let t_bits = to_bits(b, t);
    let magic_bits = splat_i(b, ROUND_MAGIC.to_bits() as i32);
    let n = b.ins().isub(t_bits, magic_bits);
    (n, nf)
}

/// `x - nf * ln 2`, with ln 2 split so the first product is exact.
fn reduce_ln2(b: &mut FunctionBuilder, x: Value, nf: Value) -> Value {
    let neg_hi = splat_f(b, -LN2_HI);
    let neg_lo = splat_f(b, -LN2_LO);
    let r = b.ins().fma(nf, neg_hi, x);
    b.ins().fma(nf, neg_lo, r)
}

/// `e^r ~= 1 + r + r^2 P(r)` for `|r| <= ln2 / 2` (Cephes `expf`).
fn exp_poly(b: &mut FunctionBuilder, r: Value) -> Value {
    let p = horner(b, r, &EXP_POLY);
    let r2 = b.ins().fmul(r, r);
    let y = b.ins().fma(p, r2, r);
    let one = splat_f(b, 1.0);
    b.ins().fadd(y, one)
}

/// `p * 2^n` for `n` in `-160 ..= 130`, as two multiplies by normal powers of two so the
/// only rounding happens where the true result overflows or is subnormal.
fn scale_pow2(b: &mut FunctionBuilder, p: Value, n: Value) -> Value {
    let half = b.ins().sshr_imm_u(n, 1);
    let rest = b.ins().isub(n, half);
    let s1 = pow2i(b, half);
    let s2 = pow2i(b, rest);
    let p = b.ins().fmul(p, s1);
    b.ins().fmul(p, s2)
}

/// Lane-wise natural logarithm of a f32x4, within a few ulp of `f32::ln` (see the module
/// docs).
///
/// Subnormals are first scaled by `2^23` (exactly), the exponent and a mantissa in
/// `[sqrt(1/2), sqrt(2))` are split off by bit manipulation, Cephes' polynomial gives
/// `log(1 + m)`, and `e * ln 2` is added back in two Cody-Waite parts. Special cases as
/// `f32::ln`: `+-0 -> -inf`, `x < 0` (including `-inf`) `-> NaN`, `+inf -> +inf`,
/// `NaN -> NaN`.
pub fn log_f32x4(b: &mut FunctionBuilder, x: Value) -> Value {
    let (xs, bias) = normalize_subnormal(b, x);
    let (m, e) = split_mantissa(b, xs, bias);
    let y = log1p_poly(b, m);
    let r = add_exponent(b, y, m, e);
    log_special_cases(b, x, r)
}

/// Scales subnormal (and zero/negative, whose result is replaced later) lanes by 2^23 so
/// every positive lane is normal, and returns the exponent bias to subtract: 126 for
/// a mantissa in `[0.5, 1)`, plus 23 for scaled lanes.
fn normalize_subnormal(b: &mut FunctionBuilder, x: Value) -> (Value, Value) {
    let min_normal = splat_f(b, f32::MIN_POSITIVE);
    let two23 = splat_f(b, TWO_POW_23);
    let scaled = b.ins().fmul(x, two23);
    let is_small = b.ins().fcmp(FloatCC::LessThan, x, min_normal);
    let is_small_f = from_bits(b, is_small);
    let xs = b.ins().bitselect(is_small_f, scaled, x);
    let bias_small = splat_i(b, 126 + 23);
    let bias_normal = splat_i(b, 126);
    let bias = b.ins().bitselect(is_small, bias_small, bias_normal);
    (xs, bias)
}

/// Splits positive normal `xs = 2^e * (1 + m)` with `1 + m` in `[sqrt(1/2), sqrt(2))`:
/// returns `m` (f32x4, exact) and `e` (f32x4, exact).
fn split_mantissa(b: &mut FunctionBuilder, xs: Value, bias: Value) -> (Value, Value) {
    let bits = to_bits(b, xs);
    let field = b.ins().ushr_imm_u(bits, 23);
    let e = b.ins().isub(field, bias);
    // Mantissa with the exponent of 0.5: a value in [0.5, 1).
    let mant_mask = splat_i(b, 0x007f_ffff);
    let half_bits = splat_i(b, 0x3f00_0000);
    let mant = b.ins().band(bits, mant_mask);
    let mant = b.ins().bor(mant, half_bits);
    let m = from_bits(b, mant);
    // Below sqrt(1/2): use 2m (exponent one lower), so 1 + m' stays near 1.
    let sqrt_half = splat_f(b, SQRT_HALF);
    let small = b.ins().fcmp(FloatCC::LessThan, m, sqrt_half);
    let e = b.ins().iadd(e, small); // the mask is -1 where true
    let one = splat_f(b, 1.0);
    let m_minus_1 = b.ins().fsub(m, one);
    let small_f = from_bits(b, small);
    let zero = splat_f(b, 0.0);
    let extra = b.ins().bitselect(small_f, m, zero);
    // (m - 1) + m = 2m - 1 is exact (Sterbenz), as is m - 1.
    let m = b.ins().fadd(m_minus_1, extra);
    let ef = b.ins().fcvt_from_sint(F32X4, e);
    (m, ef)
}

/// `log(1 + m) - m + m^2/2`'s main part, `m^3 P(m)`, for `m` in `[sqrt(1/2)-1, sqrt(2)-1)`.
fn log1p_poly(b: &mut FunctionBuilder, m: Value) -> Value {
    let p = horner(b, m, &LOG_POLY);
    let z = b.ins().fmul(m, m);
    let pm = b.ins().fmul(p, m);
    b.ins().fmul(pm, z)
}

/// `m + y - m^2/2 + e ln 2`, in Cephes' order: small terms first, `e * LN2_HI` (exact)
/// last.
fn add_exponent(b: &mut FunctionBuilder, y: Value, m: Value, e: Value) -> Value {
    let ln2_lo = splat_f(b, LN2_LO);
    let ln2_hi = splat_f(b, LN2_HI);
    let minus_half = splat_f(b, -0.5);
    let y = b.ins().fma(e, ln2_lo, y);
    let z = b.ins().fmul(m, m);
    let y = b.ins().fma(z, minus_half, y);
    let r = b.ins().fadd(m, y);
    b.ins().fma(e, ln2_hi, r)
}

/// Replaces the lanes where the polynomial path is meaningless: `+inf -> +inf`,
/// `+-0 -> -inf`, negative or NaN `-> NaN`.
fn log_special_cases(b: &mut FunctionBuilder, x: Value, r: Value) -> Value {
    let zero = splat_f(b, 0.0);
    let inf = splat_f(b, f32::INFINITY);
    let neg_inf = splat_f(b, f32::NEG_INFINITY);
    let nan = splat_f(b, f32::NAN);
    let r = select_f(b, FloatCC::Equal, x, inf, inf, r);
    let r = select_f(b, FloatCC::Equal, x, zero, neg_inf, r);
    select_f(b, FloatCC::UnorderedOrLessThan, x, zero, nan, r)
}
