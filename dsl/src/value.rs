//! Scalar values and the arithmetic semantics of the language, written once here so the reference
//! evaluator (and every later oracle) agrees on them.
//!
//! - Integers wrap at their width (two's complement).
//! - Integer `/` and `%` are Euclidean, as in Halide: the remainder is never negative, so `/`
//!   rounds toward negative infinity for a positive divisor. Division or modulo by zero gives 0.
//! - Float `%` is `a - b * floor(a / b)` (the result has the sign of `b`).
//! - `min(a, b)` is `a < b ? a : b` and `max(a, b)` is `a > b ? a : b` (for floats this is what a
//!   vector `minps`/`maxps` computes); `clamp(x, lo, hi)` is `min(max(x, lo), hi)`.
//! - `abs` keeps the type; `abs` of the most negative integer wraps to itself.
//! - `round` rounds half to even.
//! - `fast_exp`, `fast_log` and `fast_pow` (f32 only) are the sequences of f32 operations of
//!   `crate::fast_math`, which every executor reproduces bit for bit.
//! - Casts follow Rust's `as`: integer to integer wraps, float to integer rounds toward zero and
//!   saturates (NaN gives 0), to `bool` means "is not zero", from `bool` gives 0 or 1.

use crate::dtype::Dtype;
use std::fmt;

/// One typed scalar.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A `bool`.
    Bool(bool),
    /// A `u8`.
    U8(u8),
    /// A `u16`.
    U16(u16),
    /// A `u32`.
    U32(u32),
    /// An `i8`.
    I8(i8),
    /// An `i16`.
    I16(i16),
    /// An `i32`.
    I32(i32),
    /// An `i64`.
    I64(i64),
    /// An `f32`.
    F32(f32),
    /// An `f64`.
    F64(f64),
}

/// Binary operators of the language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `+` (integers wrap).
    Add,
    /// `-` (integers wrap).
    Sub,
    /// `*` (integers wrap).
    Mul,
    /// `/` (integers: Euclidean, division by zero gives 0).
    Div,
    /// `%` (integers: Euclidean, modulo zero gives 0).
    Mod,
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
    /// `&&`.
    And,
    /// `||`.
    Or,
}

impl BinOp {
    /// The operator as the kernel language writes it (`+`, `<=`, `&&`).
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }

    /// `==`, `!=`, `<`, `<=`, `>`, `>=`: operands of one type, a `bool` result.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }

    /// `&&` and `||`: `bool` operands and result.
    pub fn is_logical(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }

    /// Binding strength; higher binds tighter. All binary operators associate to the left.
    pub fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 3,
            BinOp::Add | BinOp::Sub => 4,
            BinOp::Mul | BinOp::Div | BinOp::Mod => 5,
        }
    }
}

/// Applies `$body` to the payload of an integer value, rebuilding the same variant.
macro_rules! map_int {
    ($v:expr, |$x:ident| $body:expr, else $other:expr) => {
        match $v {
            Value::U8($x) => Value::U8($body),
            Value::U16($x) => Value::U16($body),
            Value::U32($x) => Value::U32($body),
            Value::I8($x) => Value::I8($body),
            Value::I16($x) => Value::I16($body),
            Value::I32($x) => Value::I32($body),
            Value::I64($x) => Value::I64($body),
            _ => $other,
        }
    };
}

/// Applies `$body` to the payloads of two integer values of the same type.
macro_rules! zip_int {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $body:expr, else $other:expr) => {
        match ($a, $b) {
            (Value::U8($x), Value::U8($y)) => Value::U8($body),
            (Value::U16($x), Value::U16($y)) => Value::U16($body),
            (Value::U32($x), Value::U32($y)) => Value::U32($body),
            (Value::I8($x), Value::I8($y)) => Value::I8($body),
            (Value::I16($x), Value::I16($y)) => Value::I16($body),
            (Value::I32($x), Value::I32($y)) => Value::I32($body),
            (Value::I64($x), Value::I64($y)) => Value::I64($body),
            _ => $other,
        }
    };
}

/// Applies `$body` to the payloads of two values of the same numeric type, giving a `bool`.
macro_rules! zip_cmp {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $body:expr) => {
        match ($a, $b) {
            (Value::Bool($x), Value::Bool($y)) => Some($body),
            (Value::U8($x), Value::U8($y)) => Some($body),
            (Value::U16($x), Value::U16($y)) => Some($body),
            (Value::U32($x), Value::U32($y)) => Some($body),
            (Value::I8($x), Value::I8($y)) => Some($body),
            (Value::I16($x), Value::I16($y)) => Some($body),
            (Value::I32($x), Value::I32($y)) => Some($body),
            (Value::I64($x), Value::I64($y)) => Some($body),
            (Value::F32($x), Value::F32($y)) => Some($body),
            (Value::F64($x), Value::F64($y)) => Some($body),
            _ => None,
        }
    };
}

/// Float arithmetic; `%` is `a - b * floor(a / b)`.
macro_rules! float_arith {
    ($op:expr, $x:expr, $y:expr, $t:ty) => {
        match $op {
            BinOp::Add => $x + $y,
            BinOp::Sub => $x - $y,
            BinOp::Mul => $x * $y,
            BinOp::Div => $x / $y,
            _ => $x - $y * ($x / $y).floor(),
        }
    };
}

/// Casts a payload to every type with Rust's `as` semantics.
macro_rules! cast_payload {
    ($x:expr, $to:expr) => {
        match $to {
            Dtype::Bool => Value::Bool($x as f64 != 0.0),
            Dtype::U8 => Value::U8($x as u8),
            Dtype::U16 => Value::U16($x as u16),
            Dtype::U32 => Value::U32($x as u32),
            Dtype::I8 => Value::I8($x as i8),
            Dtype::I16 => Value::I16($x as i16),
            Dtype::I32 => Value::I32($x as i32),
            Dtype::I64 => Value::I64($x as i64),
            Dtype::F32 => Value::F32($x as f32),
            Dtype::F64 => Value::F64($x as f64),
        }
    };
}

/// A value reached an operator it has no meaning for; the type checker rules this out, so seeing
/// it means a bug in an earlier rung.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("internal error: `{op}` applied to {operands}")]
pub struct OpError {
    /// The operator.
    pub op: String,
    /// The operand values, as text.
    pub operands: String,
}

pub(crate) fn op_error(op: &str, values: &[Value]) -> OpError {
    let operands = values
        .iter()
        .map(|v| v.dtype().name())
        .collect::<Vec<_>>()
        .join(", ");
    OpError {
        op: op.to_string(),
        operands,
    }
}

impl Value {
    /// The element type of this value.
    pub fn dtype(self) -> Dtype {
        match self {
            Value::Bool(_) => Dtype::Bool,
            Value::U8(_) => Dtype::U8,
            Value::U16(_) => Dtype::U16,
            Value::U32(_) => Dtype::U32,
            Value::I8(_) => Dtype::I8,
            Value::I16(_) => Dtype::I16,
            Value::I32(_) => Dtype::I32,
            Value::I64(_) => Dtype::I64,
            Value::F32(_) => Dtype::F32,
            Value::F64(_) => Dtype::F64,
        }
    }

    /// Zero of a type (`false` for bool).
    pub fn zero(dtype: Dtype) -> Value {
        Value::I64(0).cast(dtype)
    }

    /// The integer value of an integer or bool, widened to `i64` (`u32` fits).
    pub fn as_i64(self) -> Option<i64> {
        match self {
            Value::Bool(x) => Some(x as i64),
            Value::U8(x) => Some(x as i64),
            Value::U16(x) => Some(x as i64),
            Value::U32(x) => Some(x as i64),
            Value::I8(x) => Some(x as i64),
            Value::I16(x) => Some(x as i64),
            Value::I32(x) => Some(x as i64),
            Value::I64(x) => Some(x),
            Value::F32(_) | Value::F64(_) => None,
        }
    }

    /// The value as `f64` (exact for every type but `i64` beyond 2^53).
    pub fn as_f64(self) -> f64 {
        match self {
            Value::F32(x) => x as f64,
            Value::F64(x) => x,
            other => other.as_i64().unwrap_or(0) as f64,
        }
    }

    /// A value of `dtype` from plain text as a user types it (`8`, `-3`, `0.5`, `1e-3`, `nan`,
    /// `true`/`false` or `1`/`0` for bool), or `None` when the text is not one or an integer
    /// does not fit (`300` for a `u8` is a mistake, not 44). The inverse of
    /// [`Value::plain_text`].
    pub fn parse_as(dtype: Dtype, text: &str) -> Option<Value> {
        let text = text.trim();
        match dtype {
            Dtype::Bool => match text {
                "true" | "1" => Some(Value::Bool(true)),
                "false" | "0" => Some(Value::Bool(false)),
                _ => None,
            },
            Dtype::F32 => Some(Value::F32(text.parse().ok()?)),
            Dtype::F64 => Some(Value::F64(text.parse().ok()?)),
            t => {
                let v: i64 = text.parse().ok()?;
                let cast = Value::I64(v).cast(t);
                (cast.as_i64() == Some(v)).then_some(cast)
            }
        }
    }

    /// The value as plain text without a type suffix (`8`, `0.5`, `true`), which
    /// [`Value::parse_as`] reads back to the same value of the same type (floats are written
    /// in Rust's shortest round-trip form). Used where values are named by text: `--param`
    /// and the tuning database's record of the parameters a run used.
    pub fn plain_text(self) -> String {
        match self {
            Value::Bool(x) => x.to_string(),
            Value::F32(x) => x.to_string(),
            Value::F64(x) => x.to_string(),
            v => v.as_i64().unwrap_or(0).to_string(),
        }
    }

    /// Converts to `to` with the language's cast semantics (Rust's `as`).
    pub fn cast(self, to: Dtype) -> Value {
        match self {
            Value::Bool(x) => cast_payload!(x as u8, to),
            Value::U8(x) => cast_payload!(x, to),
            Value::U16(x) => cast_payload!(x, to),
            Value::U32(x) => cast_payload!(x, to),
            Value::I8(x) => cast_payload!(x, to),
            Value::I16(x) => cast_payload!(x, to),
            Value::I32(x) => cast_payload!(x, to),
            Value::I64(x) => cast_payload!(x, to),
            Value::F32(x) => cast_payload!(x, to),
            Value::F64(x) => cast_payload!(x, to),
        }
    }

    /// Applies a binary operator to two values of the same type.
    pub fn binary(op: BinOp, a: Value, b: Value) -> Result<Value, OpError> {
        let fail = || op_error(op.symbol(), &[a, b]);
        if op.is_comparison() {
            return compare(op, a, b).ok_or_else(fail).map(Value::Bool);
        }
        if op.is_logical() {
            return match (a, b) {
                (Value::Bool(x), Value::Bool(y)) => Ok(Value::Bool(match op {
                    BinOp::And => x && y,
                    _ => x || y,
                })),
                _ => Err(fail()),
            };
        }
        match (a, b) {
            (Value::F32(x), Value::F32(y)) => Ok(Value::F32(float_arith!(op, x, y, f32))),
            (Value::F64(x), Value::F64(y)) => Ok(Value::F64(float_arith!(op, x, y, f64))),
            _ => int_arith(op, a, b).ok_or_else(fail),
        }
    }

    /// Negation: wrapping for integers, sign flip for floats.
    pub fn neg(self) -> Result<Value, OpError> {
        match self {
            Value::F32(x) => Ok(Value::F32(-x)),
            Value::F64(x) => Ok(Value::F64(-x)),
            v => Ok(map_int!(v, |x| x.wrapping_neg(), else return Err(op_error("-", &[v])))),
        }
    }

    /// Logical not of a bool.
    pub fn not(self) -> Result<Value, OpError> {
        match self {
            Value::Bool(x) => Ok(Value::Bool(!x)),
            v => Err(op_error("!", &[v])),
        }
    }

    /// The smaller of `a` and `b`. On floats, IEEE 754-2019 `minimum`: a NaN argument gives
    /// NaN and `-0.0` is below `+0.0`, so `min` is commutative and associative on every value
    /// and a `min` reduction's answer does not depend on the order a schedule folds it in.
    pub fn min(a: Value, b: Value) -> Result<Value, OpError> {
        if let Some(v) = float_extreme(a, b, true) {
            return Ok(v);
        }
        let less = compare(BinOp::Lt, a, b).ok_or_else(|| op_error("min", &[a, b]))?;
        Ok(if less { a } else { b })
    }

    /// The larger of `a` and `b`. On floats, IEEE 754-2019 `maximum` (see [`Value::min`]).
    pub fn max(a: Value, b: Value) -> Result<Value, OpError> {
        if let Some(v) = float_extreme(a, b, false) {
            return Ok(v);
        }
        let greater = compare(BinOp::Gt, a, b).ok_or_else(|| op_error("max", &[a, b]))?;
        Ok(if greater { a } else { b })
    }

    /// Absolute value in the same type (wrapping for the most negative integer).
    pub fn abs(self) -> Result<Value, OpError> {
        match self {
            Value::F32(x) => Ok(Value::F32(x.abs())),
            Value::F64(x) => Ok(Value::F64(x.abs())),
            Value::I8(x) => Ok(Value::I8(x.wrapping_abs())),
            Value::I16(x) => Ok(Value::I16(x.wrapping_abs())),
            Value::I32(x) => Ok(Value::I32(x.wrapping_abs())),
            Value::I64(x) => Ok(Value::I64(x.wrapping_abs())),
            Value::U8(_) | Value::U16(_) | Value::U32(_) => Ok(self),
            Value::Bool(_) => Err(op_error("abs", &[self])),
        }
    }

    /// Applies a one-argument float function (`f32` or `f64`).
    pub fn float_fn(
        self,
        name: &str,
        f32_fn: fn(f32) -> f32,
        f64_fn: fn(f64) -> f64,
    ) -> Result<Value, OpError> {
        match self {
            Value::F32(x) => Ok(Value::F32(f32_fn(x))),
            Value::F64(x) => Ok(Value::F64(f64_fn(x))),
            v => Err(op_error(name, &[v])),
        }
    }

    /// `a` raised to `b`, both floats of the same type.
    pub fn pow(a: Value, b: Value) -> Result<Value, OpError> {
        match (a, b) {
            (Value::F32(x), Value::F32(y)) => Ok(Value::F32(x.powf(y))),
            (Value::F64(x), Value::F64(y)) => Ok(Value::F64(x.powf(y))),
            _ => Err(op_error("pow", &[a, b])),
        }
    }

    /// The smallest value of a numeric type (`-inf` for floats): the start of a `max` reduction.
    pub fn lowest(dtype: Dtype) -> Value {
        match dtype {
            Dtype::F32 => Value::F32(f32::NEG_INFINITY),
            Dtype::F64 => Value::F64(f64::NEG_INFINITY),
            t => Value::I64(t.int_range().map_or(0, |r| r.0) as i64).cast(t),
        }
    }

    /// The largest value of a numeric type (`+inf` for floats): the start of a `min` reduction.
    pub fn highest(dtype: Dtype) -> Value {
        match dtype {
            Dtype::F32 => Value::F32(f32::INFINITY),
            Dtype::F64 => Value::F64(f64::INFINITY),
            t => Value::I64(t.int_range().map_or(0, |r| r.1) as i64).cast(t),
        }
    }
}

fn int_arith(op: BinOp, a: Value, b: Value) -> Option<Value> {
    let v = match op {
        BinOp::Add => zip_int!(a, b, |x, y| x.wrapping_add(y), else return None),
        BinOp::Sub => zip_int!(a, b, |x, y| x.wrapping_sub(y), else return None),
        BinOp::Mul => zip_int!(a, b, |x, y| x.wrapping_mul(y), else return None),
        BinOp::Div => {
            zip_int!(a, b, |x, y| if y == 0 { 0 } else { x.wrapping_div_euclid(y) }, else return None)
        }
        BinOp::Mod => {
            zip_int!(a, b, |x, y| if y == 0 { 0 } else { x.wrapping_rem_euclid(y) }, else return None)
        }
        _ => return None,
    };
    Some(v)
}

fn compare(op: BinOp, a: Value, b: Value) -> Option<bool> {
    match op {
        BinOp::Eq => zip_cmp!(a, b, |x, y| x == y),
        BinOp::Ne => zip_cmp!(a, b, |x, y| x != y),
        BinOp::Lt => zip_cmp!(a, b, |x, y| x < y),
        BinOp::Le => zip_cmp!(a, b, |x, y| x <= y),
        BinOp::Gt => zip_cmp!(a, b, |x, y| x > y),
        BinOp::Ge => zip_cmp!(a, b, |x, y| x >= y),
        _ => None,
    }
}

/// IEEE 754-2019 `minimum` (`is_min`) or `maximum` of two floats of one type; `None` for
/// anything else. The ordering is the usual one with `-0.0 < +0.0`, and NaN wins.
fn float_extreme(a: Value, b: Value, is_min: bool) -> Option<Value> {
    macro_rules! extreme {
        ($x:expr, $y:expr, $t:ty) => {{
            let (x, y): ($t, $t) = ($x, $y);
            if x.is_nan() || y.is_nan() {
                <$t>::NAN
            } else if (x < y || (x == y && x.is_sign_negative())) == is_min {
                x
            } else {
                y
            }
        }};
    }
    match (a, b) {
        (Value::F32(x), Value::F32(y)) => Some(Value::F32(extreme!(x, y, f32))),
        (Value::F64(x), Value::F64(y)) => Some(Value::F64(extreme!(x, y, f64))),
        _ => None,
    }
}

/// Prints a value as a literal that parses back to the same value and type: `i32` bare (`3`),
/// `f32` bare with a decimal point or exponent (`0.5`), every other type with its suffix
/// (`3u8`, `0.5f64`), `bool` as `true`/`false`.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Value::Bool(x) => write!(f, "{x}"),
            Value::I32(x) => write!(f, "{x}"),
            Value::F32(x) => write!(f, "{}", float_text(x as f64, format!("{x:?}"))),
            Value::F64(x) => write!(f, "{}f64", float_text(x, format!("{x:?}"))),
            v => write!(f, "{}{}", v.as_i64().unwrap_or(0), v.dtype().name()),
        }
    }
}

/// Rust's shortest round-trip float text, written so the lexer reads it as a float.
fn float_text(x: f64, debug: String) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    debug
}
