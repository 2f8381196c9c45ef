//! Rules for `let name = value in body` inside expressions. Expressions have no side effects,
//! so an unused value can go, and a trivial one (a variable, constant or parameter) is cheaper
//! to repeat than to name.

use super::{rule, Rule};
use crate::ir::Expr;
use crate::simplify::interval::Scope;
use crate::simplify::subst::{is_trivial, subst_expr};

pub(super) const RULES: &[Rule] = &[
    rule("let x = v in b -> b if b does not use x", dead),
    rule(
        "let x = y in b -> b[x := y] if y is a variable, constant or parameter",
        trivial,
    ),
];

fn dead(e: &Expr, _: &Scope) -> Option<Expr> {
    match e {
        Expr::Let { name, body, .. } if !body.uses_var(name) => Some((**body).clone()),
        _ => None,
    }
}

/// Skipped (not wrong) when a let inside `b` would capture `y`.
fn trivial(e: &Expr, _: &Scope) -> Option<Expr> {
    match e {
        Expr::Let { name, value, body } if is_trivial(value) => subst_expr(body, name, value),
        _ => None,
    }
}
