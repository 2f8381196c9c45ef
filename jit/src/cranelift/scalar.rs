//! Scalar operations with the language's semantics (../../dsl/src/value.rs): wrapping integers,
//! Euclidean division and modulo with division by zero giving 0 (never a trap), `min(a, b)` as
//! `a < b ? a : b`, casts as Rust's `as` (float to integer saturates, NaN gives 0).

use super::values::scalar_type;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, InstBuilder, Value};
use cranelift_frontend::FunctionBuilder;
use strata_dsl::{BinOp, Dtype};

/// An integer constant of type `ty`, its bits masked to the type's width (Cranelift's verifier
/// wants narrow immediates zero-extended).
pub fn iconst(b: &mut FunctionBuilder, ty: types::Type, value: i64) -> Value {
    let bits = ty.bits();
    let masked = if bits >= 64 {
        value
    } else {
        value & ((1i64 << bits) - 1)
    };
    b.ins().iconst(ty, masked)
}

/// `a op b` for two scalars of type `dtype`; comparisons give a bool (`i8` 0 or 1).
pub fn binary(b: &mut FunctionBuilder, op: BinOp, x: Value, y: Value, dtype: Dtype) -> Value {
    if op.is_comparison() {
        return compare(b, op, x, y, dtype);
    }
    let float = dtype.is_float();
    match op {
        BinOp::Add if float => b.ins().fadd(x, y),
        BinOp::Sub if float => b.ins().fsub(x, y),
        BinOp::Mul if float => b.ins().fmul(x, y),
        BinOp::Div if float => b.ins().fdiv(x, y),
        BinOp::Mod if float => float_mod(b, x, y),
        BinOp::Add => b.ins().iadd(x, y),
        BinOp::Sub => b.ins().isub(x, y),
        BinOp::Mul => b.ins().imul(x, y),
        BinOp::Div | BinOp::Mod if dtype.is_signed_int() => signed_div_mod(b, op, x, y, dtype),
        BinOp::Div | BinOp::Mod => unsigned_div_mod(b, op, x, y, dtype),
        BinOp::And => b.ins().band(x, y),
        BinOp::Or => b.ins().bor(x, y),
        _ => x,
    }
}

/// `a - b * floor(a / b)`.
fn float_mod(b: &mut FunctionBuilder, x: Value, y: Value) -> Value {
    let q = b.ins().fdiv(x, y);
    let q = b.ins().floor(q);
    let p = b.ins().fmul(y, q);
    b.ins().fsub(x, p)
}

fn compare(b: &mut FunctionBuilder, op: BinOp, x: Value, y: Value, dtype: Dtype) -> Value {
    if dtype.is_float() {
        let cc = match op {
            BinOp::Eq => FloatCC::Equal,
            BinOp::Ne => FloatCC::NotEqual,
            BinOp::Lt => FloatCC::LessThan,
            BinOp::Le => FloatCC::LessThanOrEqual,
            BinOp::Gt => FloatCC::GreaterThan,
            _ => FloatCC::GreaterThanOrEqual,
        };
        return b.ins().fcmp(cc, x, y);
    }
    let signed = dtype.is_signed_int();
    let cc = match (op, signed) {
        (BinOp::Eq, _) => IntCC::Equal,
        (BinOp::Ne, _) => IntCC::NotEqual,
        (BinOp::Lt, true) => IntCC::SignedLessThan,
        (BinOp::Le, true) => IntCC::SignedLessThanOrEqual,
        (BinOp::Gt, true) => IntCC::SignedGreaterThan,
        (BinOp::Ge, true) => IntCC::SignedGreaterThanOrEqual,
        (BinOp::Lt, false) => IntCC::UnsignedLessThan,
        (BinOp::Le, false) => IntCC::UnsignedLessThanOrEqual,
        (BinOp::Gt, false) => IntCC::UnsignedGreaterThan,
        _ => IntCC::UnsignedGreaterThanOrEqual,
    };
    b.ins().icmp(cc, x, y)
}

/// Euclidean `/` or `%` of signed integers: `b == 0` gives 0, `MIN / -1` wraps, and no
/// instruction can trap (the divisor is replaced by 1 where the real one would).
fn signed_div_mod(b: &mut FunctionBuilder, op: BinOp, x: Value, y: Value, dtype: Dtype) -> Value {
    let ty = scalar_type(dtype);
    let zero = b.ins().iconst(ty, 0);
    let one = b.ins().iconst(ty, 1);
    let minus_one = iconst(b, ty, -1);
    let is_zero = b.ins().icmp(IntCC::Equal, y, zero);
    let is_minus_one = b.ins().icmp(IntCC::Equal, y, minus_one);
    let unsafe_divisor = b.ins().bor(is_zero, is_minus_one);
    let d = b.ins().select(unsafe_divisor, one, y);
    let q = b.ins().sdiv(x, d);
    let r = b.ins().srem(x, d);
    // Euclidean: a negative remainder moves up by |b|, the quotient down by sign(b).
    let negative = b.ins().icmp(IntCC::SignedLessThan, r, zero);
    let positive_divisor = b.ins().icmp(IntCC::SignedGreaterThan, d, zero);
    let step = b.ins().select(positive_divisor, one, minus_one);
    let step = b.ins().select(negative, step, zero);
    let magnitude = b.ins().iabs(d);
    let adjust = b.ins().select(negative, magnitude, zero);
    let (result, minus_one_case) = match op {
        BinOp::Div => (b.ins().isub(q, step), b.ins().ineg(x)),
        _ => (b.ins().iadd(r, adjust), zero),
    };
    let result = b.ins().select(is_minus_one, minus_one_case, result);
    b.ins().select(is_zero, zero, result)
}

fn unsigned_div_mod(b: &mut FunctionBuilder, op: BinOp, x: Value, y: Value, dtype: Dtype) -> Value {
    let ty = scalar_type(dtype);
    let zero = b.ins().iconst(ty, 0);
    let one = b.ins().iconst(ty, 1);
    let is_zero = b.ins().icmp(IntCC::Equal, y, zero);
    let d = b.ins().select(is_zero, one, y);
    let result = match op {
        BinOp::Div => b.ins().udiv(x, d),
        _ => b.ins().urem(x, d),
    };
    b.ins().select(is_zero, zero, result)
}

/// The language's `min` or `max`, on scalars or native vectors: `a < b ? a : b` (`a > b ? a :
/// b`) on integers and bools; on floats Cranelift's `fmin`/`fmax`, which are WebAssembly's
/// (NaN wins, `-0.0 < +0.0`): IEEE 754-2019 `minimum`/`maximum`, as `strata_dsl::Value::min`.
pub fn min_max(b: &mut FunctionBuilder, is_min: bool, x: Value, y: Value, dtype: Dtype) -> Value {
    let vector = b.func.dfg.value_type(x).is_vector();
    match (dtype.is_float(), vector, dtype.is_signed_int(), is_min) {
        (true, _, _, true) => b.ins().fmin(x, y),
        (true, _, _, false) => b.ins().fmax(x, y),
        (false, true, true, true) => b.ins().smin(x, y),
        (false, true, true, false) => b.ins().smax(x, y),
        (false, true, false, true) => b.ins().umin(x, y),
        (false, true, false, false) => b.ins().umax(x, y),
        (false, false, ..) => {
            let op = if is_min { BinOp::Lt } else { BinOp::Gt };
            let pick_x = compare(b, op, x, y, dtype);
            b.ins().select(pick_x, x, y)
        }
    }
}

/// `abs`, keeping the type (the most negative integer wraps to itself).
pub fn abs(b: &mut FunctionBuilder, x: Value, dtype: Dtype) -> Value {
    if dtype.is_float() {
        b.ins().fabs(x)
    } else if dtype.is_signed_int() {
        b.ins().iabs(x)
    } else {
        x
    }
}

/// Converts a scalar between any two types with Rust's `as` semantics.
pub fn cast(b: &mut FunctionBuilder, x: Value, from: Dtype, to: Dtype) -> Value {
    if from == to {
        return x;
    }
    if to == Dtype::Bool {
        return is_nonzero(b, x, from);
    }
    match (from.is_float(), to.is_float()) {
        (true, true) if to == Dtype::F64 => b.ins().fpromote(types::F64, x),
        (true, true) => b.ins().fdemote(types::F32, x),
        (false, true) => int_to_float(b, x, from, to),
        (true, false) => float_to_int(b, x, to),
        (false, false) => int_to_int(b, x, from, to),
    }
}

fn is_nonzero(b: &mut FunctionBuilder, x: Value, from: Dtype) -> Value {
    match from {
        Dtype::F32 => {
            let zero = b.ins().f32const(0.0);
            b.ins().fcmp(FloatCC::NotEqual, x, zero)
        }
        Dtype::F64 => {
            let zero = b.ins().f64const(0.0);
            b.ins().fcmp(FloatCC::NotEqual, x, zero)
        }
        _ => b.ins().icmp_imm_s(IntCC::NotEqual, x, 0),
    }
}

/// Wrapping integer conversion: truncate, or extend by the source's signedness (`bool` is
/// unsigned).
fn int_to_int(b: &mut FunctionBuilder, x: Value, from: Dtype, to: Dtype) -> Value {
    let (from_ty, to_ty) = (scalar_type(from), scalar_type(to));
    if from_ty == to_ty {
        x
    } else if from_ty.bits() > to_ty.bits() {
        b.ins().ireduce(to_ty, x)
    } else if from.is_signed_int() {
        b.ins().sextend(to_ty, x)
    } else {
        b.ins().uextend(to_ty, x)
    }
}

fn int_to_float(b: &mut FunctionBuilder, x: Value, from: Dtype, to: Dtype) -> Value {
    let to_ty = scalar_type(to);
    // Widen to i64 first: every source value is then exactly a signed i64.
    let wide = if from == Dtype::I64 {
        x
    } else {
        int_to_int(b, x, from, Dtype::I64)
    };
    b.ins().fcvt_from_sint(to_ty, wide)
}

/// Truncates toward zero, saturating at the target's range; NaN gives 0.
fn float_to_int(b: &mut FunctionBuilder, x: Value, to: Dtype) -> Value {
    match to {
        Dtype::I64 => b.ins().fcvt_to_sint_sat(types::I64, x),
        Dtype::I32 => b.ins().fcvt_to_sint_sat(types::I32, x),
        Dtype::U32 => b.ins().fcvt_to_uint_sat(types::I32, x),
        _ => {
            // Narrow targets: saturate through i32, then clamp to the target's range.
            let wide = b.ins().fcvt_to_sint_sat(types::I32, x);
            let (lo, hi) = to.int_range().unwrap_or((0, 0));
            let lo = iconst(b, types::I32, lo as i64);
            let hi = iconst(b, types::I32, hi as i64);
            let clamped = b.ins().smax(wide, lo);
            let clamped = b.ins().smin(clamped, hi);
            b.ins().ireduce(scalar_type(to), clamped)
        }
    }
}
