//! Vector `exp` and `log` of f32 vectors of any width, emitted inline as LLVM IR: the same
//! algorithms, constants and operation order as the Cranelift backend's `crate::vmath` (read
//! there why each step is what it is), with `llvm.fma` (always fused, as Cranelift's `fma`)
//! where it has `fma`, so both backends give the same bits.

use super::functions::{Fail, FnGen};
use super::ops::{float_binary, int_binary};
use crate::vmath::{
    EXP_CLAMP_HI, EXP_CLAMP_LO, EXP_POLY, EXP_SPLIT_SHIFT, LN2_HI, LN2_LO, LOG_POLY, ROUND_MAGIC,
    SQRT_HALF, TWO_POW_23,
};
use inkwell::values::BasicValueEnum;
use inkwell::FloatPredicate;
use strata_dsl::{Dtype, Value};
use strata_scheduler::Type as IrType;

type V<'ctx> = BasicValueEnum<'ctx>;

impl<'ctx> FnGen<'_, 'ctx> {
    fn splat_f(&mut self, c: f32, lanes: u16) -> Result<V<'ctx>, Fail> {
        self.constant_of(Value::F32(c), IrType::scalar(Dtype::F32).with_lanes(lanes))
    }

    fn splat_i(&mut self, c: i32, lanes: u16) -> Result<V<'ctx>, Fail> {
        self.constant_of(Value::I32(c), IrType::I32.with_lanes(lanes))
    }

    fn bits_of(&mut self, v: V<'ctx>, lanes: u16) -> Result<V<'ctx>, Fail> {
        let t = self.value_type(IrType::I32.with_lanes(lanes));
        Ok(self.b.build_bit_cast(v, t, "")?)
    }

    fn float_of(&mut self, v: V<'ctx>, lanes: u16) -> Result<V<'ctx>, Fail> {
        let t = self.value_type(IrType::scalar(Dtype::F32).with_lanes(lanes));
        Ok(self.b.build_bit_cast(v, t, "")?)
    }

    fn fma(&mut self, a: V<'ctx>, b: V<'ctx>, c: V<'ctx>) -> Result<V<'ctx>, Fail> {
        self.intrinsic("llvm.fma", &[a.get_type()], &[a, b, c])
    }

    /// `a p b ? t : f` lane-wise on floats.
    fn select_f(
        &mut self,
        p: FloatPredicate,
        (a, b): (V<'ctx>, V<'ctx>),
        t: V<'ctx>,
        f: V<'ctx>,
    ) -> Result<V<'ctx>, Fail> {
        let mask = self.fcmp(p, a, b)?;
        self.select(mask, t, f)
    }

    /// Lane-wise `e^x` (`crate::vmath::exp_f32x4`'s algorithm).
    pub fn exp_f32(&mut self, x: V<'ctx>, ty: IrType) -> Result<V<'ctx>, Fail> {
        let n = ty.lanes;
        // Clamp, keeping NaN lanes.
        let lo = self.splat_f(EXP_CLAMP_LO, n)?;
        let hi = self.splat_f(EXP_CLAMP_HI, n)?;
        let x = self.select_f(FloatPredicate::OLT, (x, lo), lo, x)?;
        let x = self.select_f(FloatPredicate::OLT, (hi, x), hi, x)?;
        // n = round(x log2 e), kept as z's low mantissa bits (plus one).
        let log2e = self.splat_f(std::f32::consts::LOG2_E, n)?;
        let magic = self.splat_f(ROUND_MAGIC + 1.0, n)?;
        let z = self.fma(x, log2e, magic)?;
        let nf = float_binary!(self, build_float_sub, z, magic)?;
        // r = x - n ln 2 (Cody-Waite).
        let neg_hi = self.splat_f(-LN2_HI, n)?;
        let neg_lo = self.splat_f(-LN2_LO, n)?;
        let r = self.fma(nf, neg_hi, x)?;
        let r = self.fma(nf, neg_lo, r)?;
        let q = self.expm1_poly(r, n)?;
        self.scale_pow2(q, z, magic, n)
    }

    /// `e^r - 1 ~= r + r^2 ((c0 + c1 r) + r^2 (c2 + r (c3 + r c4)))`.
    fn expm1_poly(&mut self, r: V<'ctx>, n: u16) -> Result<V<'ctx>, Fail> {
        let c: Vec<V<'ctx>> = EXP_POLY
            .iter()
            .map(|&k| self.splat_f(k, n))
            .collect::<Result<_, _>>()?;
        let r2 = float_binary!(self, build_float_mul, r, r)?;
        let p01 = self.fma(c[1], r, c[0])?;
        let p34 = self.fma(c[4], r, c[3])?;
        let p24 = self.fma(p34, r, c[2])?;
        let p = self.fma(p24, r2, p01)?;
        self.fma(p, r2, r)
    }

    /// `(1 + q) * 2^n` with `2^n` split in two normal factors (see `crate::vmath`).
    fn scale_pow2(
        &mut self,
        q: V<'ctx>,
        z: V<'ctx>,
        magic: V<'ctx>,
        n: u16,
    ) -> Result<V<'ctx>, Fail> {
        let z_bits = self.bits_of(z, n)?;
        let k23 = self.splat_i(23, n)?;
        let e = int_binary!(self, build_left_shift, z_bits, k23)?;
        let non_positive = self.fcmp(FloatPredicate::OLE, z, magic)?;
        let shift = self.splat_i(EXP_SPLIT_SHIFT << 23, n)?;
        let zero = self.splat_i(0, n)?;
        let shift = self.select(non_positive, shift, zero)?;
        let s1_bits = self.splat_i((127 + 126) << 23, n)?;
        let s1 = int_binary!(self, build_int_sub, s1_bits, shift)?;
        let s1 = self.float_of(s1, n)?;
        let s2 = int_binary!(self, build_int_add, e, shift)?;
        let s2 = self.float_of(s2, n)?;
        let y = self.fma(q, s2, s2)?;
        float_binary!(self, build_float_mul, y, s1)
    }

    /// Lane-wise natural logarithm (`crate::vmath::log_f32x4`'s algorithm).
    pub fn log_f32(&mut self, x: V<'ctx>, ty: IrType) -> Result<V<'ctx>, Fail> {
        let n = ty.lanes;
        // Subnormals scaled by 2^23, with the exponent bias to match.
        let min_normal = self.splat_f(f32::MIN_POSITIVE, n)?;
        let two23 = self.splat_f(TWO_POW_23, n)?;
        let scaled = float_binary!(self, build_float_mul, x, two23)?;
        let is_small = self.fcmp(FloatPredicate::OLT, x, min_normal)?;
        let xs = self.select(is_small, scaled, x)?;
        let bias_small = self.splat_i(126 + 23, n)?;
        let bias_normal = self.splat_i(126, n)?;
        let bias = self.select(is_small, bias_small, bias_normal)?;
        let (m, e) = self.split_mantissa(xs, bias, n)?;
        let y = self.log1p_poly(m, n)?;
        let r = self.add_exponent(y, m, e, n)?;
        self.log_special_cases(x, r, n)
    }

    /// `xs = 2^e (1 + m)` with `1 + m` in `[sqrt(1/2), sqrt(2))`: `(m, e)`, both exact f32.
    fn split_mantissa(
        &mut self,
        xs: V<'ctx>,
        bias: V<'ctx>,
        n: u16,
    ) -> Result<(V<'ctx>, V<'ctx>), Fail> {
        let bits = self.bits_of(xs, n)?;
        let k23 = self.splat_i(23, n)?;
        let field = self.shift_right_logical(bits, k23)?;
        let e = int_binary!(self, build_int_sub, field, bias)?;
        let mant_mask = self.splat_i(0x007f_ffff, n)?;
        let half_bits = self.splat_i(0x3f00_0000, n)?;
        let mant = int_binary!(self, build_and, bits, mant_mask)?;
        let mant = int_binary!(self, build_or, mant, half_bits)?;
        let m = self.float_of(mant, n)?;
        let sqrt_half = self.splat_f(SQRT_HALF, n)?;
        let small = self.fcmp(FloatPredicate::OLT, m, sqrt_half)?;
        let minus_one = self.splat_i(-1, n)?;
        let zero_i = self.splat_i(0, n)?;
        let step = self.select(small, minus_one, zero_i)?;
        let e = int_binary!(self, build_int_add, e, step)?;
        let one = self.splat_f(1.0, n)?;
        let m_minus_1 = float_binary!(self, build_float_sub, m, one)?;
        let zero = self.splat_f(0.0, n)?;
        let extra = self.select(small, m, zero)?;
        let m = float_binary!(self, build_float_add, m_minus_1, extra)?;
        let ef_type = self.value_type(IrType::scalar(Dtype::F32).with_lanes(n));
        let ef = super::ops::int_to_float!(self, build_signed_int_to_float, e, ef_type)?;
        Ok((m, ef))
    }

    /// `m^3 P(m)`, Cephes' polynomial by Horner with `fma`.
    fn log1p_poly(&mut self, m: V<'ctx>, n: u16) -> Result<V<'ctx>, Fail> {
        let mut p = self.splat_f(LOG_POLY[0], n)?;
        for &c in &LOG_POLY[1..] {
            let c = self.splat_f(c, n)?;
            p = self.fma(p, m, c)?;
        }
        let z = float_binary!(self, build_float_mul, m, m)?;
        let pm = float_binary!(self, build_float_mul, p, m)?;
        float_binary!(self, build_float_mul, pm, z)
    }

    /// `m + y - m^2/2 + e ln 2`, small terms first.
    fn add_exponent(
        &mut self,
        y: V<'ctx>,
        m: V<'ctx>,
        e: V<'ctx>,
        n: u16,
    ) -> Result<V<'ctx>, Fail> {
        let ln2_lo = self.splat_f(LN2_LO, n)?;
        let ln2_hi = self.splat_f(LN2_HI, n)?;
        let minus_half = self.splat_f(-0.5, n)?;
        let y = self.fma(e, ln2_lo, y)?;
        let z = float_binary!(self, build_float_mul, m, m)?;
        let y = self.fma(z, minus_half, y)?;
        let r = float_binary!(self, build_float_add, m, y)?;
        self.fma(e, ln2_hi, r)
    }

    /// `+inf -> +inf`, `+-0 -> -inf`, negative or NaN `-> NaN`.
    fn log_special_cases(&mut self, x: V<'ctx>, r: V<'ctx>, n: u16) -> Result<V<'ctx>, Fail> {
        let zero = self.splat_f(0.0, n)?;
        let inf = self.splat_f(f32::INFINITY, n)?;
        let neg_inf = self.splat_f(f32::NEG_INFINITY, n)?;
        let nan = self.splat_f(f32::NAN, n)?;
        let r = self.select_f(FloatPredicate::OEQ, (x, inf), inf, r)?;
        let r = self.select_f(FloatPredicate::OEQ, (x, zero), neg_inf, r)?;
        self.select_f(FloatPredicate::ULT, (x, zero), nan, r)
    }
}

/// The fast intrinsics, `strata_dsl::fast_math`'s operations in its order (so the bits are
/// the reference's), on scalars or vectors of any width.
impl<'ctx> FnGen<'_, 'ctx> {
    /// `fast_math::fast_exp_f32`, lane-wise.
    pub fn fast_exp(&mut self, x: V<'ctx>, lanes: u16) -> Result<V<'ctx>, Fail> {
        use strata_dsl::fast_math::{EXP_HI, EXP_LO, EXP_MAGIC, EXP_POLY, LN2_HI, LN2_LO};
        let lo = self.splat_f(EXP_LO, lanes)?;
        let hi = self.splat_f(EXP_HI, lanes)?;
        let x = self.select_f(FloatPredicate::OLT, (x, lo), lo, x)?;
        let x = self.select_f(FloatPredicate::OLT, (hi, x), hi, x)?;
        let log2e = self.splat_f(std::f32::consts::LOG2_E, lanes)?;
        let magic = self.splat_f(EXP_MAGIC, lanes)?;
        let z = self.fma(x, log2e, magic)?;
        let n = float_binary!(self, build_float_sub, z, magic)?;
        let neg_hi = self.splat_f(-LN2_HI, lanes)?;
        let neg_lo = self.splat_f(-LN2_LO, lanes)?;
        let r = self.fma(n, neg_hi, x)?;
        let r = self.fma(n, neg_lo, r)?;
        let q = self.horner(r, &EXP_POLY, lanes)?;
        let bits = self.bits_of(z, lanes)?;
        let k23 = self.splat_i(23, lanes)?;
        let shifted = int_binary!(self, build_left_shift, bits, k23)?;
        let scale = self.float_of(shifted, lanes)?;
        float_binary!(self, build_float_mul, q, scale)
    }

    /// `fast_math::fast_log_f32`, lane-wise.
    pub fn fast_log(&mut self, x: V<'ctx>, lanes: u16) -> Result<V<'ctx>, Fail> {
        use strata_dsl::fast_math::{LN2_HI, LOG_POLY, SQRT_HALF_BITS};
        let sqrt_half = self.splat_i(SQRT_HALF_BITS as i32, lanes)?;
        let bits = self.bits_of(x, lanes)?;
        let ix = int_binary!(self, build_int_sub, bits, sqrt_half)?;
        let k23 = self.splat_i(23, lanes)?;
        let exponent = self.shift_right_arithmetic(ix, k23)?;
        let f32_type = self.value_type(IrType::scalar(Dtype::F32).with_lanes(lanes));
        let e = super::ops::int_to_float!(self, build_signed_int_to_float, exponent, f32_type)?;
        let mantissa_mask = self.splat_i(0x007f_ffff, lanes)?;
        let mantissa = int_binary!(self, build_and, ix, mantissa_mask)?;
        let m_bits = int_binary!(self, build_int_add, mantissa, sqrt_half)?;
        let m = self.float_of(m_bits, lanes)?;
        let one = self.splat_f(1.0, lanes)?;
        let f = float_binary!(self, build_float_sub, m, one)?;
        let f2 = float_binary!(self, build_float_mul, f, f)?;
        let q = self.horner(f, &LOG_POLY, lanes)?;
        let y = self.fma(f2, q, f)?;
        let ln2 = self.splat_f(LN2_HI, lanes)?;
        let r = self.fma(e, ln2, y)?;
        let min_positive = self.splat_f(f32::MIN_POSITIVE, lanes)?;
        let neg_inf = self.splat_f(f32::NEG_INFINITY, lanes)?;
        let inf = self.splat_f(f32::INFINITY, lanes)?;
        let zero = self.splat_f(0.0, lanes)?;
        let nan = self.splat_f(f32::NAN, lanes)?;
        let r = self.select_f(FloatPredicate::OLT, (x, min_positive), neg_inf, r)?;
        let r = self.select_f(FloatPredicate::OEQ, (x, inf), inf, r)?;
        self.select_f(FloatPredicate::ULT, (x, zero), nan, r)
    }

    /// `fast_math::fast_pow_f32`: `fast_exp(fast_log(x) * y)`.
    pub fn fast_pow(&mut self, x: V<'ctx>, y: V<'ctx>, lanes: u16) -> Result<V<'ctx>, Fail> {
        let l = self.fast_log(x, lanes)?;
        let p = float_binary!(self, build_float_mul, l, y)?;
        self.fast_exp(p, lanes)
    }

    /// Horner's rule, one `fma` per coefficient after the first (highest degree first).
    fn horner(&mut self, x: V<'ctx>, coeffs: &[f32], lanes: u16) -> Result<V<'ctx>, Fail> {
        let mut acc = self.splat_f(coeffs[0], lanes)?;
        for &c in &coeffs[1..] {
            let c = self.splat_f(c, lanes)?;
            acc = self.fma(acc, x, c)?;
        }
        Ok(acc)
    }
}
