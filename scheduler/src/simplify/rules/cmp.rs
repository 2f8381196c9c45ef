//! Rules for comparisons, `&&`, `||` and `!`. Float comparisons are false whenever a NaN is
//! involved, so the rules that compare a value with itself or negate an ordering skip floats.
//! Dropping an operand is always allowed: expressions have no side effects.

use super::{bin, cst, fold_binary, is_float, konst, lanes, mk, rule, same, Rule};
use crate::ir::{Expr, UnOp};
use crate::simplify::interval::{bounds, Scope};
use strata_dsl::{BinOp, Value};

pub(super) const RULES: &[Rule] = &[
    rule("c1 < c2 -> fold", fold_binary),
    rule("!c -> fold", not_const),
    rule("c < x -> x > c", const_right),
    rule(
        "x < x -> false, x <= x -> true, ... (not floats)",
        compare_self,
    ),
    rule(
        "a < b -> true/false when intervals decide it (ints)",
        decided_by_bounds,
    ),
    rule(
        "a < b -> true/false when the range of b - a decides it (i32 linear forms)",
        decided_by_difference,
    ),
    rule("!!x -> x", not_not),
    rule(
        "!(a == b) -> a != b; !(a < b) -> a >= b (not floats)",
        not_compare,
    ),
    rule("true && x -> x, false && x -> false, ...", and_const),
    rule("true || x -> true, false || x -> x, ...", or_const),
    rule("x && x -> x, x || x -> x", idempotent),
];

/// Compares through the range of `b - a` in linear form (lets substituted), which is exact
/// where the operands share terms (`x + 7 <= x + 63`).
fn decided_by_difference(e: &Expr, scope: &Scope) -> Option<Expr> {
    let Expr::Binary(op, a, b) = e else {
        return None;
    };
    let (lo, hi) = super::linear::difference_range(b, a, scope)?;
    let truth = match op {
        BinOp::Lt if lo > 0 => true,
        BinOp::Lt if hi <= 0 => false,
        BinOp::Le if lo >= 0 => true,
        BinOp::Le if hi < 0 => false,
        BinOp::Gt if hi < 0 => true,
        BinOp::Gt if lo >= 0 => false,
        BinOp::Ge if hi <= 0 => true,
        BinOp::Ge if lo > 0 => false,
        BinOp::Eq if lo == 0 && hi == 0 => true,
        BinOp::Eq if lo > 0 || hi < 0 => false,
        BinOp::Ne if lo > 0 || hi < 0 => true,
        BinOp::Ne if lo == 0 && hi == 0 => false,
        _ => return None,
    };
    Some(Expr::Const(Value::Bool(truth)))
}

fn not(e: &Expr) -> Option<&Expr> {
    match e {
        Expr::Unary(UnOp::Not, a) => Some(a),
        _ => None,
    }
}

fn comparison(e: &Expr) -> Option<(BinOp, &Expr, &Expr)> {
    match e {
        Expr::Binary(op, a, b) if op.is_comparison() => Some((*op, a, b)),
        _ => None,
    }
}

fn bool_like(e: &Expr, b: bool) -> Expr {
    konst(Value::Bool(b), lanes(e))
}

fn not_const(e: &Expr, _: &Scope) -> Option<Expr> {
    match not(e)? {
        Expr::Const(v) => v.not().ok().map(Expr::Const),
        _ => None,
    }
}

/// The comparison with its operands swapped: `a < b` is `b > a` (for NaN too).
fn flipped(op: BinOp) -> BinOp {
    match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::Le => BinOp::Ge,
        BinOp::Gt => BinOp::Lt,
        BinOp::Ge => BinOp::Le,
        other => other,
    }
}

fn const_right(e: &Expr, _: &Scope) -> Option<Expr> {
    let (op, c, x) = comparison(e)?;
    (cst(c).is_some() && cst(x).is_none()).then(|| mk(flipped(op), x, c))
}

fn compare_self(e: &Expr, _: &Scope) -> Option<Expr> {
    let (op, x, y) = comparison(e)?;
    let reflexive = matches!(op, BinOp::Eq | BinOp::Le | BinOp::Ge);
    (!is_float(x) && same(x, y)).then(|| bool_like(e, reflexive))
}

/// `Some(true)` if `yes`, `Some(false)` if `no`, else undecided.
fn decide(yes: bool, no: bool) -> Option<bool> {
    if yes {
        Some(true)
    } else {
        no.then_some(false)
    }
}

fn decided_by_bounds(e: &Expr, scope: &Scope) -> Option<Expr> {
    let (op, a, b) = comparison(e)?;
    let (x, y) = (bounds(a, scope)?, bounds(b, scope)?);
    let equal = x.lo == x.hi && y.lo == y.hi && x.lo == y.lo;
    let apart = x.hi < y.lo || y.hi < x.lo;
    let v = match op {
        BinOp::Lt => decide(x.hi < y.lo, x.lo >= y.hi),
        BinOp::Le => decide(x.hi <= y.lo, x.lo > y.hi),
        BinOp::Gt => decide(x.lo > y.hi, x.hi <= y.lo),
        BinOp::Ge => decide(x.lo >= y.hi, x.hi < y.lo),
        BinOp::Eq => decide(equal, apart),
        _ => decide(apart, equal),
    };
    Some(bool_like(e, v?))
}

fn not_not(e: &Expr, _: &Scope) -> Option<Expr> {
    not(not(e)?).cloned()
}

/// The comparison that is true exactly when `op` is false, if there is one for this type:
/// `!(a < b)` is not `a >= b` when a NaN is involved, but `!(a == b)` is `a != b` always.
fn negated(op: BinOp, float: bool) -> Option<BinOp> {
    match op {
        BinOp::Eq => Some(BinOp::Ne),
        BinOp::Ne => Some(BinOp::Eq),
        _ if float => None,
        BinOp::Lt => Some(BinOp::Ge),
        BinOp::Le => Some(BinOp::Gt),
        BinOp::Gt => Some(BinOp::Le),
        _ => Some(BinOp::Lt),
    }
}

fn not_compare(e: &Expr, _: &Scope) -> Option<Expr> {
    let (op, a, b) = comparison(not(e)?)?;
    Some(mk(negated(op, is_float(a))?, a, b))
}

/// The constant bool of `e`, if it is one.
fn bool_cst(e: &Expr) -> Option<bool> {
    match cst(e)? {
        Value::Bool(b) => Some(b),
        _ => None,
    }
}

/// `a op b` where one side is a constant: `identity` gives the other side, the absorbing
/// value gives itself.
fn with_const(e: &Expr, op: BinOp, identity: bool) -> Option<Expr> {
    let (a, b) = bin(e, op)?;
    let (k, other) = match (bool_cst(a), bool_cst(b)) {
        (Some(k), _) => (k, b),
        (_, Some(k)) => (k, a),
        _ => return None,
    };
    Some(if k == identity {
        other.clone()
    } else {
        bool_like(e, k)
    })
}

fn and_const(e: &Expr, _: &Scope) -> Option<Expr> {
    with_const(e, BinOp::And, true)
}

fn or_const(e: &Expr, _: &Scope) -> Option<Expr> {
    with_const(e, BinOp::Or, false)
}

fn idempotent(e: &Expr, _: &Scope) -> Option<Expr> {
    let (a, b) = bin(e, BinOp::And).or_else(|| bin(e, BinOp::Or))?;
    same(a, b).then(|| a.clone())
}
