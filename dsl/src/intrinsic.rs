//! The built-in functions (`min`, `sqrt`, `fast_exp`, ...) applied to values, with the
//! language's semantics: written once here for every oracle (the reference evaluator, the
//! loop-IR interpreter, the simplifier's constant folding).

use crate::fast_math;
use crate::ir::Intrinsic;
use crate::value::{op_error, OpError, Value};

impl Value {
    /// Applies a built-in function to its arguments, with the language's semantics. Written once
    /// here for every oracle (the reference evaluator, the loop-IR interpreter).
    pub fn intrinsic(f: Intrinsic, args: &[Value]) -> Result<Value, OpError> {
        use Intrinsic as I;
        let unary = |g32: fn(f32) -> f32, g64: fn(f64) -> f64| match args {
            [a] => a.float_fn(f.name(), g32, g64),
            _ => Err(op_error(f.name(), args)),
        };
        match (f, args) {
            (I::Min, &[a, b]) => Value::min(a, b),
            (I::Max, &[a, b]) => Value::max(a, b),
            (I::Clamp, &[x, lo, hi]) => Value::min(Value::max(x, lo)?, hi),
            (I::Abs, &[a]) => a.abs(),
            (I::Pow, &[a, b]) => Value::pow(a, b),
            (I::Floor, _) => unary(f32::floor, f64::floor),
            (I::Ceil, _) => unary(f32::ceil, f64::ceil),
            (I::Round, _) => unary(f32::round_ties_even, f64::round_ties_even),
            (I::Sqrt, _) => unary(f32::sqrt, f64::sqrt),
            (I::Exp, _) => unary(f32::exp, f64::exp),
            (I::Log, _) => unary(f32::ln, f64::ln),
            (I::Sin, _) => unary(f32::sin, f64::sin),
            (I::Cos, _) => unary(f32::cos, f64::cos),
            (I::Tanh, _) => unary(f32::tanh, f64::tanh),
            (I::FastExp, &[Value::F32(x)]) => Ok(Value::F32(fast_math::fast_exp_f32(x))),
            (I::FastLog, &[Value::F32(x)]) => Ok(Value::F32(fast_math::fast_log_f32(x))),
            (I::FastPow, &[Value::F32(x), Value::F32(y)]) => {
                Ok(Value::F32(fast_math::fast_pow_f32(x, y)))
            }
            _ => Err(op_error(f.name(), args)),
        }
    }
}
