//! Rules for `select(c, t, f)`. A scalar condition evaluates only the branch it picks, so a
//! rule may drop a branch but never evaluate one the program would not.

use super::{cst, lanes, rule, same, Rule};
use crate::ir::{Expr, UnOp};
use crate::simplify::interval::Scope;
use strata_dsl::Value;

pub(super) const RULES: &[Rule] = &[
    rule(
        "select(true, t, f) -> t, select(false, t, f) -> f",
        const_cond,
    ),
    rule("select(c, x, x) -> x", same_arms),
    rule("select(!c, t, f) -> select(c, f, t)", not_cond),
    rule(
        "select(c, true, false) -> c, select(c, false, true) -> !c",
        bool_arms,
    ),
    rule(
        "select(c, select(c, a, b), d) -> select(c, a, d), and in the false arm",
        nested_same_cond,
    ),
];

fn parts(e: &Expr) -> Option<(&Expr, &Expr, &Expr)> {
    match e {
        Expr::Select(c, t, f) => Some((c, t, f)),
        _ => None,
    }
}

fn select(c: &Expr, t: &Expr, f: &Expr) -> Expr {
    Expr::Select(
        Box::new(c.clone()),
        Box::new(t.clone()),
        Box::new(f.clone()),
    )
}

fn bool_cst(e: &Expr) -> Option<bool> {
    match cst(e)? {
        Value::Bool(b) => Some(b),
        _ => None,
    }
}

fn const_cond(e: &Expr, _: &Scope) -> Option<Expr> {
    let (c, t, f) = parts(e)?;
    Some(if bool_cst(c)? { t.clone() } else { f.clone() })
}

/// Bit-identical arms (see `same`): whichever is picked, the value is the same.
fn same_arms(e: &Expr, _: &Scope) -> Option<Expr> {
    let (_, t, f) = parts(e)?;
    same(t, f).then(|| t.clone())
}

fn not_cond(e: &Expr, _: &Scope) -> Option<Expr> {
    let (c, t, f) = parts(e)?;
    match c {
        Expr::Unary(UnOp::Not, c) => Some(select(c, f, t)),
        _ => None,
    }
}

/// Only when the condition has the arms' lanes (a scalar condition may pick vector arms).
fn bool_arms(e: &Expr, _: &Scope) -> Option<Expr> {
    let (c, t, f) = parts(e)?;
    if lanes(c) != lanes(t) {
        return None;
    }
    match (bool_cst(t)?, bool_cst(f)?) {
        (true, false) => Some(c.clone()),
        (false, true) => Some(Expr::Unary(UnOp::Not, Box::new(c.clone()))),
        _ => None,
    }
}

/// Inside the true arm of `select(c, ...)`, `c` is true (and false in the false arm).
fn nested_same_cond(e: &Expr, _: &Scope) -> Option<Expr> {
    let (c, t, f) = parts(e)?;
    match (parts(t), parts(f)) {
        (Some((c2, a, _)), _) if same(c, c2) => Some(select(c, a, f)),
        (_, Some((c2, _, b))) if same(c, c2) => Some(select(c, t, b)),
        _ => None,
    }
}
