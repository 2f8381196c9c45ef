//! Vector `exp` and `log` for f32x4, emitted inline as Cranelift IR.
//!
//! There is no vector libm to call: a call per lane costs four extractlane/call/insertlane
//! round trips (about 5 ns each), so a vectorised kernel computes `exp`/`log` itself and
//! stays in xmm registers. Both follow the classic Cephes single-precision algorithms
//! (`expf.c`, `logf.c`): range reduction by bit manipulation of the IEEE 754 encoding,
//! then a short polynomial evaluated with `fma` (Cephes' own for `log`, a minimax fit of
//! one degree less for `exp`).
//!
//! Only instructions the x86-64 backend of Cranelift 0.135 lowers for F32X4/I32X4 are
//! used: `fmul`, `fadd`, `fsub`, `fma` (one `vfmadd` with the host ISA flags from
//! `cranelift_native::builder()`; four `fmaf` libcalls without them), `fcmp` +
//! `bitselect` (`blendvps`, or `minps`/`maxps` for the clamps), `iadd`, `isub`, `band`,
//! `bor`, shifts by an immediate, `fcvt_from_sint` and lane-preserving `bitcast`s.
//!
//! Accuracy (measured by `jit/tests/vmath.rs` against `f32::exp` / `f32::ln`): see the
//! constant `MAX_ULP` there.

#![allow(
    clippy::excessive_precision,
    reason = "polynomial coefficients are kept digit for digit, and LN2_HI is exact"
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
pub(crate) const EXP_CLAMP_HI: f32 = 89.0;
/// Inputs below `-104.32` (`n <= -151`) underflow to 0 (`exp(-103.97...)` is half the
/// smallest subnormal). Clamping to this value, which has `n = -151`, keeps `n` small
/// enough for the exponent field and makes [`scale_pow2`]'s `s2` exactly `+0`, so such
/// lanes (`-inf`, `-1e9` masks, ...) get their 0 without an underflowing multiply, which
/// x86 handles in microcode at about a hundred cycles per instruction.
pub(crate) const EXP_CLAMP_LO: f32 = -104.7;
/// `1.5 * 2^23`: adding it to a float of magnitude < 2^22 rounds to the nearest integer
/// and leaves that integer in the low mantissa bits.
pub(crate) const ROUND_MAGIC: f32 = 12_582_912.0;
/// How far [`scale_pow2`] moves the exponent of `2^n`'s first factor into its second for
/// `n <= 0`: `s2`'s exponent field is then `n + 151`, 0 (so `s2 = +0`) exactly at the
/// clamped `n = -151`.
pub(crate) const EXP_SPLIT_SHIFT: i32 = 150;
/// ln 2 split in two (Cody-Waite): `LN2_HI` has 9 significant bits, so `n * LN2_HI` is
/// exact for |n| < 2^15 and `x - n * ln2` loses no bits to cancellation.
pub(crate) const LN2_HI: f32 = 0.693_359_375;
/// `ln 2 - LN2_HI`.
pub(crate) const LN2_LO: f32 = -2.121_944_4e-4;
/// `e^r - 1 ~= r + r^2 * P(r)` on `|r| <= ln2 / 2`, coefficients of `P` from degree 0 up:
/// a minimax fit (Remez exchange, weighted for the relative error of `e^r`) whose error,
/// after rounding the coefficients to f32, is below `3.9e-9` relative (0.07 ulp at worst),
/// so the result's error is dominated by f32 rounding. One degree lower than Cephes'
/// `expf` polynomial, whose `2.7e-9` makes no difference at f32 precision.
pub(crate) const EXP_POLY: [f32; 5] = [
    0.499_999_94,
    0.166_665_21,
    0.041_668_389,
    0.008_368_710_1,
    0.001_381_461_3,
];

/// sqrt(1/2): mantissas below it are doubled so the reduced argument lies in
/// `[sqrt(1/2) - 1, sqrt(2) - 1)`, where the polynomial is accurate.
pub(crate) const SQRT_HALF: f32 = std::f32::consts::FRAC_1_SQRT_2;
/// Cephes `logf` polynomial: `log(1 + m) ~= m - m^2/2 + m^3 * P(m)`, highest degree first.
pub(crate) const LOG_POLY: [f32; 9] = [
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
pub(crate) const TWO_POW_23: f32 = 8_388_608.0;

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

/// Lane-wise `e^x` of a f32x4, within a few ulp of `f32::exp` (see the module docs).
///
/// `x` is clamped to `[-104.7, 89]` (`max`/`min` that keep NaN), `n = round(x / ln 2)` by
/// the `1.5 * 2^23` trick, `r = x - n ln 2` with a two-constant Cody-Waite split, a degree-6
/// polynomial (evaluated with a short dependent chain) gives `q = e^r - 1`, and the result
/// is `(s2 + q * s2) * s1` with `s1 * s2 = 2^n` split so both factors are powers of two and
/// `s2 * (1 + q)` is normal: one `fma` (so `1 + q` is not rounded separately), then one
/// multiply whose only rounding happens where the true result overflows or is subnormal.
/// So large `x` overflows to `+inf`, very negative `x` underflows through the subnormals
/// to `0`, and neither the exponent field nor an integer overflows. NaN in gives NaN out;
/// `-inf` gives 0 and `+inf` gives `+inf`.
///
/// Straight-line code on purpose: a variant that branched to a single `2^n` factor (no
/// clamps) when all four lanes have `|x| <= 86.5` was 5-20% faster on such inputs, but
/// about 40% slower on masked (`-inf`) lanes, which need both paths, and 70% slower where
/// in-range and out-of-range lanes mix unpredictably.
pub fn exp_f32x4(b: &mut FunctionBuilder, x: Value) -> Value {
    let x = clamp_keep_nan(b, x, EXP_CLAMP_LO, EXP_CLAMP_HI);
    let (z, nf) = round_log2e(b, x);
    let r = reduce_ln2(b, x, nf);
    let q = expm1_poly(b, r);
    scale_pow2(b, q, z)
}

/// `min(max(x, lo), hi)` lane-wise, with NaN lanes passed through unchanged.
fn clamp_keep_nan(b: &mut FunctionBuilder, x: Value, lo: f32, hi: f32) -> Value {
    let lo = splat_f(b, lo);
    let hi = splat_f(b, hi);
    // `x < lo` and `hi < x` are false for NaN, so a NaN lane keeps `x`.
    let x = select_f(b, FloatCC::LessThan, x, lo, lo, x);
    select_f(b, FloatCC::LessThan, hi, x, hi, x)
}

/// `n = round(x * log2(e))` for |x| < 2^21, as `z = n + 1 + 1.5 * 2^23` (a f32x4 whose low
/// mantissa bits hold `n + 1` in two's complement: `+ 1` makes `z << 23` the exponent field
/// [`scale_pow2`] wants) and `nf = n` (f32x4).
fn round_log2e(b: &mut FunctionBuilder, x: Value) -> (Value, Value) {
    let log2e = splat_f(b, std::f32::consts::LOG2_E);
    let magic = splat_f(b, ROUND_MAGIC + 1.0);
    let z = b.ins().fma(x, log2e, magic);
    let nf = b.ins().fsub(z, magic);
    (z, nf)
}

/// `x - nf * ln 2`, with ln 2 split so the first product is exact.
fn reduce_ln2(b: &mut FunctionBuilder, x: Value, nf: Value) -> Value {
    let neg_hi = splat_f(b, -LN2_HI);
    let neg_lo = splat_f(b, -LN2_LO);
    let r = b.ins().fma(nf, neg_hi, x);
    b.ins().fma(nf, neg_lo, r)
}

/// `e^r - 1 ~= r + r^2 P(r)` for `|r| <= ln2 / 2` ([`EXP_POLY`]), as
/// `r + r^2 ((c0 + c1 r) + r^2 (c2 + r (c3 + r c4)))`: `r^2`, `c0 + c1 r` and
/// `c3 + r c4` are independent, so the chain after `r` is four operations long (Horner's
/// would be five). Each `fma`'s first operand (the one x86 overwrites) is, where possible,
/// a value used for the last time, which saves register copies.
fn expm1_poly(b: &mut FunctionBuilder, r: Value) -> Value {
    let [c0, c1, c2, c3, c4] = EXP_POLY.map(|c| splat_f(b, c));
    let r2 = b.ins().fmul(r, r);
    let p01 = b.ins().fma(c1, r, c0);
    let p34 = b.ins().fma(c4, r, c3);
    let p24 = b.ins().fma(p34, r, c2);
    let p = b.ins().fma(p24, r2, p01);
    b.ins().fma(p, r2, r)
}

/// `(1 + q) * 2^n` for `n` in `-151 ..= 128`, given `z` from [`round_log2e`] (`n + 1` in its
/// low bits). `2^n = s1 * s2` with `s1 = 2^126, s2 = 2^(n - 126)` for `n > 0`
/// and `s1 = 2^-24, s2 = 2^(n + 24)` for `n <= 0`. Down to `n = -149`, both are normal and
/// so is `s2 * (1 + q)` (one `fma`, `1 + q` being in `[0.7, 1.42]`), so the final multiply
/// by `s1` is the only rounding beyond that of `1 + q`, and it happens only where the true
/// result overflows or is subnormal. At `n = -150` (results 0 or the smallest subnormal)
/// `s2 * (1 + q)` may itself be subnormal, a second rounding that costs at most one
/// subnormal step; at `n = -151` (the clamp) `s2` is `+0` and so is the result.
fn scale_pow2(b: &mut FunctionBuilder, q: Value, z: Value) -> Value {
    // `(n + 1) << 23` modulo 2^32: `z`'s low 9 mantissa bits are `n + 1` modulo 512, so this
    // is `s2` for `n > 0` (exponent field `n - 126 + 127`).
    let z_bits = to_bits(b, z);
    let e = b.ins().ishl_imm_u(z_bits, 23);
    // `n <= 0` tested on `z` rather than `nf`: `nf` then dies in `reduce_ln2`, which saves a
    // register copy, and the constant is already in a register.
    let magic = splat_f(b, ROUND_MAGIC + 1.0);
    let non_positive = b.ins().fcmp(FloatCC::LessThanOrEqual, z, magic);
    // For `n <= 0`, `EXP_SPLIT_SHIFT` moves from `s1`'s exponent field (253, 2^126) to `s2`'s.
    let shift = splat_i(b, EXP_SPLIT_SHIFT << 23);
    let shift = b.ins().band(non_positive, shift);
    let s1_bits = splat_i(b, (127 + 126) << 23);
    let s1 = b.ins().isub(s1_bits, shift);
    let s1 = from_bits(b, s1);
    let s2 = b.ins().iadd(e, shift);
    let s2 = from_bits(b, s2);
    let y = b.ins().fma(q, s2, s2);
    b.ins().fmul(y, s1)
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
