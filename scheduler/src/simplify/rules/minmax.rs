//! Rules for `min`, `max` and `clamp`, where on ints and bools `min(a, b) = a < b ? a : b`
//! and `max(a, b) = a > b ? a : b`, and on floats they are IEEE 754-2019 `minimum`/`maximum`
//! (NaN wins, `-0.0 < +0.0`; `strata_dsl::Value::min`). Float `min`/`max` are commutative
//! and associative too, but no rule needs that: beyond folding and `min(x, x)` every rule
//! here is for ints and bools only.

use super::{call, cst, is_float, konst, lanes, rule, same, Rule};
use crate::ir::Expr;
use crate::simplify::interval::{bounds, Scope};
use strata_dsl::{BinOp, Intrinsic, Value};

pub(super) const RULES: &[Rule] = &[
    rule("min(c1, c2) -> fold, clamp(c1, c2, c3) -> fold", fold),
    rule("min(x, x) -> x", same_args),
    rule("min(c, x) -> min(x, c) (not floats)", const_right),
    rule(
        "min(min(x, c1), c2) -> min(x, fold(min(c1, c2))) (not floats)",
        nested_consts,
    ),
    rule(
        "min(max(x, c1), c2) -> c2 if c2 <= c1, and max dually (not floats)",
        crossed_consts,
    ),
    rule(
        "min(x, max(x, y)) -> x, max(x, min(x, y)) -> x (not floats)",
        absorb,
    ),
    rule(
        "min(x, y) -> x if x <= y by intervals, and max dually (ints)",
        decided_by_bounds,
    ),
    rule(
        "min(x, x + c) -> x if c >= 0, and max dually (i32 linear forms, lets substituted)",
        decided_by_difference,
    ),
    rule(
        "clamp(x, lo, hi) -> x if lo <= x <= hi by intervals (ints)",
        clamp_in_range,
    ),
];

/// The two arguments and the kind of a `min` or `max`.
fn min_max(e: &Expr) -> Option<(Intrinsic, &Expr, &Expr)> {
    match e {
        Expr::Intrinsic(f @ (Intrinsic::Min | Intrinsic::Max), args) => match args.as_slice() {
            [a, b] => Some((*f, a, b)),
            _ => None,
        },
        _ => None,
    }
}

fn dual(f: Intrinsic) -> Intrinsic {
    if f == Intrinsic::Min {
        Intrinsic::Max
    } else {
        Intrinsic::Min
    }
}

fn apply(f: Intrinsic, a: Value, b: Value) -> Option<Value> {
    let v = if f == Intrinsic::Min {
        Value::min(a, b)
    } else {
        Value::max(a, b)
    };
    v.ok()
}

fn mk(f: Intrinsic, a: &Expr, b: &Expr) -> Expr {
    Expr::Intrinsic(f, vec![a.clone(), b.clone()])
}

/// Scalar constants only: the folder computes what the program would, NaN and zeros included.
fn fold(e: &Expr, _: &Scope) -> Option<Expr> {
    let Expr::Intrinsic(f, args) = e else {
        return None;
    };
    let consts = args.iter().map(|a| match a {
        Expr::Const(v) => Some(*v),
        _ => None,
    });
    match (f, consts.collect::<Option<Vec<_>>>()?.as_slice()) {
        (Intrinsic::Min | Intrinsic::Max, &[a, b]) => apply(*f, a, b).map(Expr::Const),
        (Intrinsic::Clamp, &[x, lo, hi]) => {
            apply(Intrinsic::Min, apply(Intrinsic::Max, x, lo)?, hi).map(Expr::Const)
        }
        _ => None,
    }
}

/// `min(x, x)` is `x` for every type (on floats a NaN `x` gives NaN: a NaN again).
fn same_args(e: &Expr, _: &Scope) -> Option<Expr> {
    let (_, a, b) = min_max(e)?;
    same(a, b).then(|| a.clone())
}

fn const_right(e: &Expr, _: &Scope) -> Option<Expr> {
    let (f, c, x) = min_max(e)?;
    (!is_float(x) && cst(c).is_some() && cst(x).is_none()).then(|| mk(f, x, c))
}

/// `f(g(x, c1), c2)` with constants `c1`, `c2`, for non-float `x`.
fn inner_const(
    e: &Expr,
    inner: impl Fn(Intrinsic) -> Intrinsic,
) -> Option<(Intrinsic, &Expr, Value, Value)> {
    let (f, l, c2) = min_max(e)?;
    let (g, x, c1) = min_max(l)?;
    (g == inner(f) && !is_float(x)).then_some(())?;
    Some((f, x, cst(c1)?, cst(c2)?))
}

fn nested_consts(e: &Expr, _: &Scope) -> Option<Expr> {
    let (f, x, c1, c2) = inner_const(e, |f| f)?;
    let k = apply(f, c1, c2)?;
    Some(mk(f, x, &konst(k, lanes(e))))
}

/// `max(x, c1) >= c1 >= c2`, so the outer `min` picks `c2` (and dually for `max(min)`).
fn crossed_consts(e: &Expr, _: &Scope) -> Option<Expr> {
    let (f, _, c1, c2) = inner_const(e, dual)?;
    let (lo, hi) = if f == Intrinsic::Min {
        (c2, c1)
    } else {
        (c1, c2)
    };
    let ordered = Value::binary(BinOp::Le, lo, hi).ok()? == Value::Bool(true);
    ordered.then(|| konst(c2, lanes(e)))
}

/// Whether `e` is the dual of `f` with `x` as one of its arguments.
fn dual_with(e: &Expr, f: Intrinsic, x: &Expr) -> bool {
    matches!(min_max(e), Some((g, a, b)) if g == dual(f) && (same(a, x) || same(b, x)))
}

/// `max(x, y) >= x`, so `min(x, max(x, y))` is `x` (and dually), in either argument order.
fn absorb(e: &Expr, _: &Scope) -> Option<Expr> {
    let (f, a, b) = min_max(e)?;
    if is_float(a) {
        None
    } else if dual_with(b, f, a) {
        Some(a.clone())
    } else {
        dual_with(a, f, b).then(|| b.clone())
    }
}

/// `min(a, b)` is `a` whenever `a <= b` always holds (on a tie it returns `b`, equal to `a`).
fn decided_by_bounds(e: &Expr, scope: &Scope) -> Option<Expr> {
    let (f, a, b) = min_max(e)?;
    let (x, y) = (bounds(a, scope)?, bounds(b, scope)?);
    let (a_below, b_below) = (x.hi <= y.lo, y.hi <= x.lo);
    match f {
        Intrinsic::Min if a_below => Some(a.clone()),
        Intrinsic::Min if b_below => Some(b.clone()),
        _ if b_below => Some(a.clone()),
        _ if a_below => Some(b.clone()),
        _ => None,
    }
}

/// `min(a, b)` where `b - a` is a constant once both are written as sums of terms: which one is
/// smaller does not depend on the variables (see `linear::constant_difference`).
fn decided_by_difference(e: &Expr, scope: &Scope) -> Option<Expr> {
    let (f, a, b) = min_max(e)?;
    let b_is_larger = super::linear::constant_difference(b, a, scope)? >= 0;
    match (f, b_is_larger) {
        (Intrinsic::Min, true) | (Intrinsic::Max, false) => Some(a.clone()),
        _ => Some(b.clone()),
    }
}

fn clamp_in_range(e: &Expr, scope: &Scope) -> Option<Expr> {
    let [x, lo, hi] = call(e, Intrinsic::Clamp)? else {
        return None;
    };
    let xb = bounds(x, scope)?;
    let inside = bounds(lo, scope)?.hi <= xb.lo && xb.hi <= bounds(hi, scope)?.lo;
    inside.then(|| x.clone())
}
