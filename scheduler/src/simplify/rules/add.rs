//! Rules for `+`, `-` and negation. Integer rules use that wrapping arithmetic is exact modulo
//! 2^bits (so it is associative and `x - x` is 0); float rules are only those exact in IEEE.

use super::is_int_k;
use super::{bin, cst, fold, fold_binary, int_cst, int_like, is_float, is_float_k, is_int};
use super::{konst, lanes, mk, rule, same, Rule};
use crate::ir::{Expr, UnOp};
use crate::simplify::interval::Scope;
use strata_dsl::{BinOp, Value};

pub(super) const RULES: &[Rule] = &[
    rule("c1 + c2 -> fold", fold_binary),
    rule("-c -> fold", neg_const),
    rule("c + x -> x + c", const_right),
    rule("x + 0 -> x, x - 0 -> x (ints)", int_zero),
    rule("x + -0.0 -> x, x - 0.0 -> x (floats)", float_zero),
    rule("0 - x -> -x (ints)", zero_minus),
    rule("-(-x) -> x", neg_neg),
    rule("-(x - y) -> y - x (ints)", neg_sub),
    rule("x + -y -> x - y", add_neg),
    rule("x - -y -> x + y", sub_neg),
    rule("x + c -> x - fold(-c) if c < 0 (ints)", negative_const),
    rule(
        "(x + c1) + c2 -> x + fold(c1 + c2), any signs (ints)",
        nested_offsets,
    ),
    rule("x - x -> 0 (ints)", sub_self),
    rule("(x + y) - y -> x, (x + y) - x -> y (ints)", add_sub_cancel),
    rule("(x - y) + y -> x, x + (y - x) -> y (ints)", sub_add_cancel),
    rule("x - (x - y) -> y (ints)", sub_sub_cancel),
    rule(
        "(x + c1) - (y + c2) -> (x - y) + fold(c1 - c2), any signs (ints)",
        sub_offsets,
    ),
    rule(
        "x - y -> c if the linear forms of x and y differ by c (i32, lets substituted)",
        linear_difference,
    ),
];

fn linear_difference(e: &Expr, scope: &Scope) -> Option<Expr> {
    let (x, y) = bin(e, BinOp::Sub)?;
    let c = super::linear::constant_difference(x, y, scope)?;
    i32::try_from(c).ok().map(Expr::int)
}

/// The operands of `e` if it is `a + b` or `a - b`.
fn add_or_sub(e: &Expr) -> Option<(BinOp, &Expr, &Expr)> {
    match e {
        Expr::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) => Some((*op, a, b)),
        _ => None,
    }
}

fn neg(e: &Expr) -> Option<&Expr> {
    match e {
        Expr::Unary(UnOp::Neg, a) => Some(a),
        _ => None,
    }
}

fn neg_const(e: &Expr, _: &Scope) -> Option<Expr> {
    match neg(e)? {
        Expr::Const(v) => v.neg().ok().map(Expr::Const),
        _ => None,
    }
}

/// Constants go right, so the other rules need one form only (`+` commutes exactly for
/// ints and in IEEE).
fn const_right(e: &Expr, _: &Scope) -> Option<Expr> {
    let (c, x) = bin(e, BinOp::Add)?;
    (cst(c).is_some() && cst(x).is_none()).then(|| mk(BinOp::Add, x, c))
}

fn int_zero(e: &Expr, _: &Scope) -> Option<Expr> {
    let (_, x, z) = add_or_sub(e)?;
    (is_int(x) && is_int_k(z, 0)).then(|| x.clone())
}

/// `x + 0.0` is not `x` (`-0.0 + 0.0` is `+0.0`), but adding `-0.0` or subtracting `+0.0`
/// returns `x` exactly, signed zeros included.
fn float_zero(e: &Expr, _: &Scope) -> Option<Expr> {
    let (op, x, z) = add_or_sub(e)?;
    let zero = if op == BinOp::Add { -0.0 } else { 0.0 };
    (is_float(x) && is_float_k(z, zero)).then(|| x.clone())
}

/// Floats excluded: `0.0 - 0.0` is `+0.0` but `-(0.0)` is `-0.0`.
fn zero_minus(e: &Expr, _: &Scope) -> Option<Expr> {
    let (z, x) = bin(e, BinOp::Sub)?;
    (is_int(x) && is_int_k(z, 0)).then(|| Expr::Unary(UnOp::Neg, Box::new(x.clone())))
}

/// Negation is wrapping for ints and a sign flip for floats: an involution in both.
fn neg_neg(e: &Expr, _: &Scope) -> Option<Expr> {
    neg(neg(e)?).cloned()
}

fn neg_sub(e: &Expr, _: &Scope) -> Option<Expr> {
    let (x, y) = bin(neg(e)?, BinOp::Sub)?;
    is_int(x).then(|| mk(BinOp::Sub, y, x))
}

/// IEEE defines `x - y` as `x + (-y)`, so these hold for floats too.
fn add_neg(e: &Expr, _: &Scope) -> Option<Expr> {
    let (x, y) = bin(e, BinOp::Add)?;
    Some(mk(BinOp::Sub, x, neg(y)?))
}

fn sub_neg(e: &Expr, _: &Scope) -> Option<Expr> {
    let (x, y) = bin(e, BinOp::Sub)?;
    Some(mk(BinOp::Add, x, neg(y)?))
}

/// `x` and `c` of an integer `x + c`, or of `x - c` as `x + (-c)` (wrapping, so exact).
fn offset(e: &Expr) -> Option<(&Expr, Value)> {
    let (op, x, c) = add_or_sub(e)?;
    is_int(e).then_some(())?;
    let c = cst(c)?;
    Some((x, if op == BinOp::Add { c } else { c.neg().ok()? }))
}

/// `x + k` in its canonical form: `x` for 0, `x - |k|` for negative `k` (unless `-k` wraps).
fn plus(x: &Expr, k: Value, lanes: u16) -> Expr {
    let negative = k.as_i64().is_some_and(|v| v < 0);
    let minus = k.neg().ok().filter(|m| negative && *m != k);
    match (k.as_i64(), minus) {
        (Some(0), _) => x.clone(),
        (_, Some(m)) => mk(BinOp::Sub, x, &konst(m, lanes)),
        _ => mk(BinOp::Add, x, &konst(k, lanes)),
    }
}

/// Reads better (`x - 1`, not `x + -1`) and costs the same.
fn negative_const(e: &Expr, _: &Scope) -> Option<Expr> {
    let (x, c) = bin(e, BinOp::Add)?;
    let k = cst(c).filter(|_| is_int(e) && int_cst(c).is_some_and(|v| v < 0))?;
    Some(plus(x, k, lanes(e)))
}

/// Wrapping addition is associative modulo 2^bits.
fn nested_offsets(e: &Expr, _: &Scope) -> Option<Expr> {
    let (l, k2) = offset(e)?;
    let (x, k1) = offset(l)?;
    Some(plus(x, fold(BinOp::Add, k1, k2)?, lanes(e)))
}

/// Ints only: for floats `x - x` is NaN when `x` is infinite or NaN.
fn sub_self(e: &Expr, _: &Scope) -> Option<Expr> {
    let (x, y) = bin(e, BinOp::Sub)?;
    (is_int(x) && same(x, y)).then(|| int_like(e, 0))
}

fn add_sub_cancel(e: &Expr, _: &Scope) -> Option<Expr> {
    let (l, r) = bin(e, BinOp::Sub)?;
    let (x, y) = bin(l, BinOp::Add)?;
    is_int(e).then_some(())?;
    if same(y, r) {
        Some(x.clone())
    } else {
        same(x, r).then(|| y.clone())
    }
}

fn sub_add_cancel(e: &Expr, _: &Scope) -> Option<Expr> {
    let (l, r) = bin(e, BinOp::Add)?;
    is_int(e).then_some(())?;
    match (bin(l, BinOp::Sub), bin(r, BinOp::Sub)) {
        (Some((x, y)), _) if same(y, r) => Some(x.clone()),
        (_, Some((y, x))) if same(x, l) => Some(y.clone()),
        _ => None,
    }
}

fn sub_sub_cancel(e: &Expr, _: &Scope) -> Option<Expr> {
    let (x, r) = bin(e, BinOp::Sub)?;
    let (x2, y) = bin(r, BinOp::Sub)?;
    (is_int(e) && same(x, x2)).then(|| y.clone())
}

fn sub_offsets(e: &Expr, _: &Scope) -> Option<Expr> {
    let (l, r) = bin(e, BinOp::Sub)?;
    let ((x, k1), (y, k2)) = (offset(l)?, offset(r)?);
    let k = fold(BinOp::Sub, k1, k2)?;
    Some(plus(&mk(BinOp::Sub, x, y), k, lanes(e)))
}
