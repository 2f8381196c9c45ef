//! Rules for the other intrinsics. Only the functions computed exactly alike everywhere are
//! folded: those IEEE specifies exactly (`abs`, `floor`, `ceil`, `round`, `sqrt`) and the fast
//! approximations (`fast_exp`, `fast_log`, `fast_pow`), each one fixed sequence of f32
//! operations (`strata_dsl::fast_math`) that the JIT reproduces bit for bit. `exp`, `log`,
//! `pow`, `sin`, `cos` and `tanh` may be computed differently by the JIT (a vector
//! polynomial) than by the folder, so they stay.

use super::{call, dtype, rule, Rule};
use crate::ir::Expr;
use crate::simplify::interval::{bounds, Scope};
use strata_dsl::{Intrinsic, Value};

pub(super) const RULES: &[Rule] = &[
    rule("abs(c), floor(c), ceil(c), round(c), sqrt(c) -> fold", fold),
    rule(
        "fast_exp(c), fast_log(c), fast_pow(c1, c2) -> fold (bit-exact everywhere)",
        fold_fast,
    ),
    rule("abs(abs(x)) -> abs(x)", abs_abs),
    rule(
        "abs(x) -> x if x is unsigned or x >= 0 by intervals",
        abs_non_negative,
    ),
    rule(
        "floor(ceil(x)) -> ceil(x) (any of floor, ceil, round)",
        round_integral,
    ),
];

fn unary(e: &Expr) -> Option<(Intrinsic, &Expr)> {
    match e {
        Expr::Intrinsic(f, args) => match args.as_slice() {
            [a] => Some((*f, a)),
            _ => None,
        },
        _ => None,
    }
}

fn fold_value(f: Intrinsic, v: Value) -> Option<Value> {
    let r = match f {
        Intrinsic::Abs => v.abs(),
        Intrinsic::Floor => v.float_fn("floor", f32::floor, f64::floor),
        Intrinsic::Ceil => v.float_fn("ceil", f32::ceil, f64::ceil),
        Intrinsic::Round => v.float_fn("round", f32::round_ties_even, f64::round_ties_even),
        Intrinsic::Sqrt => v.float_fn("sqrt", f32::sqrt, f64::sqrt),
        _ => return None,
    };
    r.ok()
}

fn fold(e: &Expr, _: &Scope) -> Option<Expr> {
    match unary(e)? {
        (f, Expr::Const(v)) => fold_value(f, *v).map(Expr::Const),
        _ => None,
    }
}

/// A fast approximation of scalar constants, computed by the one definition every executor
/// reproduces (`Value::intrinsic` calls `strata_dsl::fast_math`), so folding changes no bit.
fn fold_fast(e: &Expr, _: &Scope) -> Option<Expr> {
    let Expr::Intrinsic(f, args) = e else {
        return None;
    };
    if !f.needs_f32() {
        return None;
    }
    let values = args
        .iter()
        .map(|a| match a {
            Expr::Const(v) => Some(*v),
            _ => None,
        })
        .collect::<Option<Vec<Value>>>()?;
    Value::intrinsic(*f, &values).ok().map(Expr::Const)
}

/// `abs` is idempotent for floats (it clears the sign bit) and for wrapping ints
/// (`abs(MIN)` is `MIN`, whose `abs` is `MIN` again).
fn abs_abs(e: &Expr, _: &Scope) -> Option<Expr> {
    let inner = call(e, Intrinsic::Abs)?.first()?;
    call(inner, Intrinsic::Abs).map(|_| inner.clone())
}

fn abs_non_negative(e: &Expr, scope: &Scope) -> Option<Expr> {
    let x = call(e, Intrinsic::Abs)?.first()?;
    let non_negative = dtype(x).is_unsigned_int() || bounds(x, scope).is_some_and(|b| b.lo >= 0);
    non_negative.then(|| x.clone())
}

fn is_rounding(f: Intrinsic) -> bool {
    matches!(f, Intrinsic::Floor | Intrinsic::Ceil | Intrinsic::Round)
}

/// A rounded value is integral (or infinite, NaN or a signed zero), which every rounding
/// function returns unchanged.
fn round_integral(e: &Expr, _: &Scope) -> Option<Expr> {
    let (f, inner) = unary(e)?;
    let (g, _) = unary(inner)?;
    (is_rounding(f) && is_rounding(g)).then(|| inner.clone())
}
