//! `fast_exp`, `fast_log` and `fast_pow` emitted inline as Cranelift IR, on `f32` scalars and
//! `f32x4` pieces alike.
//!
//! The algorithms are `strata_dsl::fast_math`'s, which the reference evaluator runs: each
//! function here emits that module's operations in the same order with the same constants (read
//! from it), so compiled results are bit-identical to the reference (tested over millions of
//! inputs by `jit/tests/fast_math.rs`). Every `mul_add` there is one `fma` here, which is
//! always fused: one `vfmadd` with the host's FMA, an exact `fmaf` libcall without it. Every
//! `if` there is a comparison and a select here (`bitselect` of the comparison's mask on
//! vectors, `select` on scalars). No calls on a host with FMA, no branches, no tables.

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::types::{F32, F32X4, I32, I32X4};
use cranelift_codegen::ir::{Endianness, InstBuilder, MemFlagsData, Type, Value};
use cranelift_frontend::FunctionBuilder;
use strata_dsl::fast_math::{
    EXP_HI, EXP_LO, EXP_MAGIC, EXP_POLY, LN2_HI, LN2_LO, LOG_POLY, SQRT_HALF_BITS,
};

/// Flags for every `bitcast`: Cranelift wants a byte order stated when the lane count changes
/// and accepts one always.
const BITCAST_FLAGS: MemFlagsData = MemFlagsData::new().with_endianness(Endianness::Little);
/// The mantissa field of an `f32` (as in `strata_dsl::fast_math`'s split of the bits).
const MANTISSA_MASK: i32 = 0x007f_ffff;

/// `fast_exp_f32` of `x`, an `f32` or an `f32x4` (lane-wise).
pub fn fast_exp(b: &mut FunctionBuilder, x: Value) -> Value {
    let lanes = Lanes::of(b, x);
    let x = lanes.clamp_keep_nan(b, x, EXP_LO, EXP_HI);
    let log2e = lanes.float(b, std::f32::consts::LOG2_E);
    let magic = lanes.float(b, EXP_MAGIC);
    let z = b.ins().fma(x, log2e, magic);
    let n = b.ins().fsub(z, magic);
    let neg_ln2_hi = lanes.float(b, -LN2_HI);
    let neg_ln2_lo = lanes.float(b, -LN2_LO);
    let r = b.ins().fma(n, neg_ln2_hi, x);
    let r = b.ins().fma(n, neg_ln2_lo, r);
    let q = lanes.horner(b, r, &EXP_POLY);
    let z_bits = lanes.bits_of(b, z);
    let scale_bits = b.ins().ishl_imm_u(z_bits, 23);
    let scale = lanes.float_of_bits(b, scale_bits);
    b.ins().fmul(q, scale)
}

/// `fast_log_f32` of `x`, an `f32` or an `f32x4` (lane-wise).
pub fn fast_log(b: &mut FunctionBuilder, x: Value) -> Value {
    let lanes = Lanes::of(b, x);
    let bits = lanes.bits_of(b, x);
    let sqrt_half = lanes.int(b, SQRT_HALF_BITS as i32);
    let ix = b.ins().isub(bits, sqrt_half);
    let e_int = b.ins().sshr_imm_u(ix, 23);
    let e = b.ins().fcvt_from_sint(lanes.float_type, e_int);
    let mask = lanes.int(b, MANTISSA_MASK);
    let mantissa = b.ins().band(ix, mask);
    let m_bits = b.ins().iadd(mantissa, sqrt_half);
    let m = lanes.float_of_bits(b, m_bits);
    let one = lanes.float(b, 1.0);
    let f = b.ins().fsub(m, one);
    let f2 = b.ins().fmul(f, f);
    let q = lanes.horner(b, f, &LOG_POLY);
    let y = b.ins().fma(f2, q, f);
    let ln2 = lanes.float(b, LN2_HI);
    let r = b.ins().fma(e, ln2, y);
    lanes.log_special_cases(b, x, r)
}

/// `fast_pow_f32(x, y)` = `fast_exp(fast_log(x) * y)`, lane-wise on `f32` or `f32x4`.
pub fn fast_pow(b: &mut FunctionBuilder, x: Value, y: Value) -> Value {
    let log = fast_log(b, x);
    let t = b.ins().fmul(log, y);
    fast_exp(b, t)
}

/// The types one emitted value has: `f32` with `i32` bits, or `f32x4` with `i32x4` bits.
#[derive(Clone, Copy)]
struct Lanes {
    float_type: Type,
    int_type: Type,
}

impl Lanes {
    /// The types of `x` (any type other than `f32x4` is treated as a scalar `f32`, the only
    /// other type the code generator passes).
    fn of(b: &FunctionBuilder, x: Value) -> Lanes {
        if b.func.dfg.value_type(x) == F32X4 {
            Lanes {
                float_type: F32X4,
                int_type: I32X4,
            }
        } else {
            Lanes {
                float_type: F32,
                int_type: I32,
            }
        }
    }

    fn is_vector(self) -> bool {
        self.float_type.is_vector()
    }

    /// `c` in every lane.
    fn float(self, b: &mut FunctionBuilder, c: f32) -> Value {
        let s = b.ins().f32const(c);
        if self.is_vector() {
            b.ins().splat(self.float_type, s)
        } else {
            s
        }
    }

    /// The integer `c` in every lane. `iconst.i32` wants its immediate zero-extended, hence
    /// the `u32` detour.
    fn int(self, b: &mut FunctionBuilder, c: i32) -> Value {
        let s = b.ins().iconst(I32, i64::from(c as u32));
        if self.is_vector() {
            b.ins().splat(self.int_type, s)
        } else {
            s
        }
    }

    /// The bits of a float value (no instruction on vectors; a move on scalars).
    fn bits_of(self, b: &mut FunctionBuilder, v: Value) -> Value {
        b.ins().bitcast(self.int_type, BITCAST_FLAGS, v)
    }

    /// Integer bits reinterpreted as floats.
    fn float_of_bits(self, b: &mut FunctionBuilder, v: Value) -> Value {
        b.ins().bitcast(self.float_type, BITCAST_FLAGS, v)
    }

    /// Lane-wise `if a cc c { t } else { f }`: a mask and `bitselect` on vectors (one
    /// `blendvps`), a `select` on scalars.
    fn select(
        self,
        b: &mut FunctionBuilder,
        (a, cc, c): (Value, FloatCC, Value),
        t: Value,
        f: Value,
    ) -> Value {
        let cond = b.ins().fcmp(cc, a, c);
        if self.is_vector() {
            let mask = self.float_of_bits(b, cond);
            b.ins().bitselect(mask, t, f)
        } else {
            b.ins().select(cond, t, f)
        }
    }

    /// `fast_math`'s clamp: `x < lo` gives `lo`, then `hi < x` gives `hi`; NaN stays.
    fn clamp_keep_nan(self, b: &mut FunctionBuilder, x: Value, lo: f32, hi: f32) -> Value {
        let lo = self.float(b, lo);
        let hi = self.float(b, hi);
        let x = self.select(b, (x, FloatCC::LessThan, lo), lo, x);
        self.select(b, (hi, FloatCC::LessThan, x), hi, x)
    }

    /// Horner's rule, highest degree first, one `fma(acc, x, c)` per later coefficient.
    fn horner(self, b: &mut FunctionBuilder, x: Value, coeffs: &[f32]) -> Value {
        let (&first, rest) = coeffs.split_first().unwrap_or((&0.0, &[]));
        let mut acc = self.float(b, first);
        for &c in rest {
            let c = self.float(b, c);
            acc = b.ins().fma(acc, x, c);
        }
        acc
    }

    /// `fast_math`'s special cases of the log, in its order: below `f32::MIN_POSITIVE` `-inf`,
    /// `+inf` for `+inf`, NaN (`f32::NAN`'s bits) for negative or NaN `x`.
    fn log_special_cases(self, b: &mut FunctionBuilder, x: Value, r: Value) -> Value {
        let min_positive = self.float(b, f32::MIN_POSITIVE);
        let inf = self.float(b, f32::INFINITY);
        let neg_inf = self.float(b, f32::NEG_INFINITY);
        let zero = self.float(b, 0.0);
        let nan = self.float(b, f32::NAN);
        let r = self.select(b, (x, FloatCC::LessThan, min_positive), neg_inf, r);
        let r = self.select(b, (x, FloatCC::Equal, inf), inf, r);
        self.select(b, (x, FloatCC::UnorderedOrLessThan, zero), nan, r)
    }
}
