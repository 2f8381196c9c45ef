//! Rules for `*`, `/` and `%`. Integer `/` and `%` are Euclidean and division by zero gives 0.
//! `(x * 2) / 2 -> x` is wrong for wrapping ints in general, so the rules that undo a
//! multiplication (the split rules) first prove from intervals that nothing can wrap.

use super::{bin, cst, dtype, fold, fold_binary, int_cst, int_like, is_float, is_float_k};
use super::{is_int, is_int_k, konst, lanes, mk, rule, same, Rule};
use crate::ir::{Expr, UnOp};
use crate::simplify::interval::{bounds, Scope};
use strata_dsl::bounds::ConstantInterval;
use strata_dsl::BinOp;

pub(super) const RULES: &[Rule] = &[
    rule("c1 * c2 -> fold", fold_binary),
    rule("c * x -> x * c", const_right),
    rule("x * 1 -> x, x / 1 -> x", by_one),
    rule("x * 0 -> 0 (ints)", mul_zero),
    rule("x * -1 -> -x, x / -1 -> -x (signed ints)", by_minus_one),
    rule("(x * c1) * c2 -> x * fold(c1 * c2) (ints)", mul_mul_const),
    rule("x / 0 -> 0, x % 0 -> 0 (ints)", by_zero),
    rule("x % 1 -> 0, x % -1 -> 0 (ints)", mod_unit),
    rule("0 / x -> 0, 0 % x -> 0 (ints)", zero_over),
    rule("x % x -> 0 (ints)", mod_self),
    rule(
        "(x * c + y) / c -> x if 0 <= y < c and no wrap (ints)",
        split_div,
    ),
    rule(
        "(x * c + y) % c -> y if 0 <= y < c and (c | 2^bits or no wrap) (ints)",
        split_mod,
    ),
    rule(
        "x / c -> 0, x % c -> x if 0 <= x < c (ints)",
        small_numerator,
    ),
];

/// The operator and operands of `e` if it is `*`, `/` or `%`.
fn mul_div_mod(e: &Expr) -> Option<(BinOp, &Expr, &Expr)> {
    match e {
        Expr::Binary(op @ (BinOp::Mul | BinOp::Div | BinOp::Mod), a, b) => Some((*op, a, b)),
        _ => None,
    }
}

/// `*` commutes exactly for ints and in IEEE.
fn const_right(e: &Expr, _: &Scope) -> Option<Expr> {
    let (c, x) = bin(e, BinOp::Mul)?;
    (cst(c).is_some() && cst(x).is_none()).then(|| mk(BinOp::Mul, x, c))
}

/// Exact for floats too: multiplying or dividing by 1.0 returns `x`, signed zeros included.
fn by_one(e: &Expr, _: &Scope) -> Option<Expr> {
    let (op, x, one) = mul_div_mod(e)?;
    let unit = (is_int(x) && is_int_k(one, 1)) || (is_float(x) && is_float_k(one, 1.0));
    (op != BinOp::Mod && unit).then(|| x.clone())
}

/// Ints only: for floats `inf * 0` is NaN and `-1 * 0` is `-0.0`.
fn mul_zero(e: &Expr, _: &Scope) -> Option<Expr> {
    let (x, z) = bin(e, BinOp::Mul)?;
    (is_int(x) && is_int_k(z, 0)).then(|| int_like(e, 0))
}

/// Wrapping `x * -1` and Euclidean `x / -1` both equal wrapping `-x` (`MIN` included).
fn by_minus_one(e: &Expr, _: &Scope) -> Option<Expr> {
    let (op, x, m) = mul_div_mod(e)?;
    let ok = op != BinOp::Mod && dtype(x).is_signed_int() && is_int_k(m, -1);
    ok.then(|| Expr::Unary(UnOp::Neg, Box::new(x.clone())))
}

/// Wrapping multiplication is associative modulo 2^bits.
fn mul_mul_const(e: &Expr, _: &Scope) -> Option<Expr> {
    let (l, c2) = bin(e, BinOp::Mul)?;
    let (x, c1) = bin(l, BinOp::Mul)?;
    is_int(e).then_some(())?;
    let k = fold(BinOp::Mul, cst(c1)?, cst(c2)?)?;
    Some(mk(BinOp::Mul, x, &konst(k, lanes(e))))
}

/// The language defines integer division and modulo by zero as 0.
fn by_zero(e: &Expr, _: &Scope) -> Option<Expr> {
    let (op, x, z) = mul_div_mod(e)?;
    (op != BinOp::Mul && is_int(x) && is_int_k(z, 0)).then(|| int_like(e, 0))
}

fn mod_unit(e: &Expr, _: &Scope) -> Option<Expr> {
    let (x, m) = bin(e, BinOp::Mod)?;
    (is_int(x) && (is_int_k(m, 1) || is_int_k(m, -1))).then(|| int_like(e, 0))
}

/// `0 / x` is 0 for every `x`, zero included.
fn zero_over(e: &Expr, _: &Scope) -> Option<Expr> {
    let (op, z, x) = mul_div_mod(e)?;
    (op != BinOp::Mul && is_int(x) && is_int_k(z, 0)).then(|| int_like(e, 0))
}

/// `x % x` is 0 for nonzero `x`, and `0 % 0` is 0 too.
fn mod_self(e: &Expr, _: &Scope) -> Option<Expr> {
    let (x, y) = bin(e, BinOp::Mod)?;
    (is_int(x) && same(x, y)).then(|| int_like(e, 0))
}

/// `x * c + y` with `0 <= y < c` proven; `exact` when it provably cannot wrap.
struct Split<'a> {
    x: &'a Expr,
    y: Option<&'a Expr>,
    exact: bool,
}

/// `x` of `x * c`.
fn scaled(t: &Expr, c: i64) -> Option<&Expr> {
    bin(t, BinOp::Mul)
        .filter(|(_, k)| is_int_k(k, c))
        .map(|(x, _)| x)
}

/// `x` and `y` of `x * c + y`, `y + x * c` or `x * c` (no `y`).
fn split_terms(n: &Expr, c: i64) -> Option<(&Expr, Option<&Expr>)> {
    if let Some(x) = scaled(n, c) {
        return Some((x, None));
    }
    let (a, b) = bin(n, BinOp::Add)?;
    let first = scaled(a, c).map(|x| (x, Some(b)));
    first.or_else(|| scaled(b, c).map(|x| (x, Some(a))))
}

fn split<'a>(n: &'a Expr, c: i64, scope: &Scope) -> Option<Split<'a>> {
    let (x, y) = split_terms(n, c)?;
    let yb = y.map_or(Some(ConstantInterval::point(0)), |y| bounds(y, scope))?;
    if yb.lo < 0 || yb.hi >= c {
        return None;
    }
    let xb = bounds(x, scope)?;
    let range = ConstantInterval::of_int_type(dtype(n))?;
    let (c, y_hi) = (c as i128, yb.hi as i128);
    let exact = range.contains_exact(xb.lo as i128 * c, xb.hi as i128 * c + y_hi);
    Some(Split { x, y, exact })
}

/// A positive integer constant divisor of `e = n op d`.
fn by_positive(e: &Expr, op: BinOp) -> Option<(&Expr, i64)> {
    let (n, d) = bin(e, op)?;
    is_int(n).then_some(())?;
    Some((n, int_cst(d).filter(|&c| c > 0)?))
}

/// `floor((x * c + y) / c) = x` for `0 <= y < c`, if `x * c + y` is computed without wrapping.
fn split_div(e: &Expr, scope: &Scope) -> Option<Expr> {
    let (n, c) = by_positive(e, BinOp::Div)?;
    let s = split(n, c, scope)?;
    s.exact.then(|| s.x.clone())
}

/// Wrapping changes `x * c + y` by a multiple of 2^bits, which leaves its remainder modulo a
/// power of two `c` unchanged; other divisors need the no-wrap proof.
fn split_mod(e: &Expr, scope: &Scope) -> Option<Expr> {
    let (n, c) = by_positive(e, BinOp::Mod)?;
    let s = split(n, c, scope)?;
    let ok = s.exact || (c as u64).is_power_of_two();
    ok.then(|| s.y.cloned().unwrap_or_else(|| int_like(e, 0)))
}

fn small_numerator(e: &Expr, scope: &Scope) -> Option<Expr> {
    let (op, x, _) = mul_div_mod(e).filter(|(op, ..)| *op != BinOp::Mul)?;
    let (_, c) = by_positive(e, op)?;
    let xb = bounds(x, scope)?;
    if xb.lo < 0 || xb.hi >= c {
        return None;
    }
    Some(if op == BinOp::Div {
        int_like(e, 0)
    } else {
        x.clone()
    })
}
