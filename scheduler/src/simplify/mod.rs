//! The simplifier: algebraic rewriting of loop-IR expressions, bounds-aware index arithmetic,
//! dead-code removal, common-subexpression elimination and loop-invariant hoisting.
//!
//! # Laws
//!
//! Every rewrite (as in Halide's `Simplify_*.cpp` and Cranelift's `opts/README.md`):
//! 1. **never makes code bigger**: cost is one unit per lane of every node, and the driver
//!    refuses any rewrite that raises it (the rules are small functions, one file per
//!    operator group under `rules/`; `rule_names` lists them);
//! 2. **never changes a value**: bit-exact for integers, which wrap (so `(x * 2) / 2` stays);
//!    for floats only rewrites exact in IEEE arithmetic (`x * 1.0 -> x` and `x - 0.0 -> x`,
//!    but not `x * 0.0 -> 0.0`, `x + 0.0 -> x` or `x - x -> 0.0`). A NaN stays a NaN, but its
//!    payload (which IEEE leaves unspecified) may change when operands are reordered;
//! 3. **never evaluates what the program would not**: a scalar `select` evaluates only the arm
//!    it picks, so nothing that reads memory is moved out of an arm, and a let that reads memory
//!    is hoisted only out of a loop that provably runs;
//! 4. **no general commutativity or associativity**: the only reordering is moving constants
//!    to the right (of `+`, `*`, comparisons, and integer `min`/`max`) and folding constant
//!    chains such as `(x + c1) + c2 -> x + fold(c1 + c2)` for integers.
//!
//! # Order
//!
//! [`simplify`] runs, in this order:
//! 1. every expression is simplified to a fixed point ([`simplify_expr_with_bounds`]) knowing
//!    the intervals of the enclosing loop variables (where the loop's min and extent have
//!    constant bounds) and lets; an `if` whose condition becomes constant is replaced by its
//!    branch; a loop of constant extent `<= 0` is removed (the IR runs it zero times); a loop of
//!    extent 1 becomes `let var = min`; a let of a variable, constant or parameter is inlined
//!    (so constants fold); loops, lets and ifs whose bodies are empty are removed;
//! 2. dead lets are removed and lets of a variable, constant or parameter are inlined
//!    ([`remove_dead_lets`]);
//! 3. repeated subexpressions of each expression are named by lets (`cse.rs`);
//! 4. loop-invariant lets are hoisted out of loops ([`hoist_loop_invariants`]).

pub mod cse;
pub mod hoist;
pub mod interval;
mod renames;
mod rules;
mod subst;
mod ty;

#[cfg(test)]
mod tests;
pub(crate) use subst::{free_vars, subst_stmt};

#[cfg(test)]
pub use cse::cse;
pub use cse::remove_dead_lets;
pub use hoist::hoist_loop_invariants;
pub use interval::{bounds, Scope};
pub use strata_dsl::bounds::ConstantInterval;

use crate::ir::{Expr, Stmt};
use renames::Renames;
use rules::{rewrite_once, same};
use std::cell::RefCell;
use subst::is_trivial;

/// At most this many bottom-up passes over an expression (each normally ends at a fixed point
/// long before).
const MAX_PASSES: usize = 32;

/// At most this many rewrites of one node within a pass.
const MAX_REWRITES: usize = 64;

/// Simplifies an expression, knowing nothing about its variables.
pub fn simplify_expr(e: &Expr) -> Expr {
    simplify_expr_with_bounds(e, &Scope::new())
}

/// Simplifies an expression whose variables lie in the intervals of `scope`.
pub fn simplify_expr_with_bounds(e: &Expr, scope: &Scope) -> Expr {
    simplify_expr_traced(e, scope).0
}

/// [`simplify_expr_with_bounds`], also returning the names of the rules applied, in order
/// (to see why an expression came out as it did).
pub fn simplify_expr_traced(e: &Expr, scope: &Scope) -> (Expr, Vec<&'static str>) {
    let mut trace = Vec::new();
    let mut current = e.clone();
    for _ in 0..MAX_PASSES {
        let next = pass(&current, scope, &mut trace);
        if same(&next, &current) {
            break;
        }
        current = next;
    }
    (current, trace)
}

/// The names of every rule, table by table (each name is the rewrite it does): the tests check
/// that each one fires somewhere.
#[cfg(test)]
pub fn rule_names() -> Vec<&'static str> {
    rules::all().map(|r| r.name).collect()
}

/// One bottom-up pass: children first, then rules at the node until none applies.
fn pass(e: &Expr, scope: &Scope, trace: &mut Vec<&'static str>) -> Expr {
    let e = match e {
        Expr::Let { name, value, body } => {
            let value = pass(value, scope, trace);
            let mut inner = scope.clone();
            inner.push_let(name, bounds(&value, scope), &value);
            let body = pass(body, &inner, trace);
            Expr::Let {
                name: name.clone(),
                value: Box::new(value),
                body: Box::new(body),
            }
        }
        _ => e.map_children(&mut |c| pass(c, scope, trace)),
    };
    rewrite(e, scope, trace)
}

fn rewrite(mut e: Expr, scope: &Scope, trace: &mut Vec<&'static str>) -> Expr {
    for _ in 0..MAX_REWRITES {
        let Some((rule, next)) = rewrite_once(&e, scope) else {
            break;
        };
        trace.push(rule);
        e = next;
    }
    e
}

/// Simplifies a statement: see the module doc for what runs, in which order.
pub fn simplify(s: &Stmt) -> Stmt {
    let s = simplify_stmt(s, &mut Scope::new(), &mut Renames::default());
    let s = remove_dead_lets(&s);
    let s = cse::cse_stmt(&s);
    hoist_loop_invariants(&s)
}

/// Step 1 of [`simplify`]: expressions, constant conditions and trivial loops. A loop, let or
/// `if` around nothing does nothing (expressions have no side effects), so it goes. Lets of a
/// variable, constant or parameter are inlined through `renames` (see `renames.rs`).
fn simplify_stmt(s: &Stmt, scope: &mut Scope, renames: &mut Renames) -> Stmt {
    match s {
        Stmt::For {
            var,
            min,
            extent,
            kind,
            body,
        } => binding(var, s, renames, &mut |renames| {
            simplify_for(var, min, extent, *kind, body, scope, renames)
        }),
        Stmt::Let { name, value, body } => binding(name, s, renames, &mut |renames| {
            simplify_let(name, value, body, scope, renames)
        }),
        Stmt::If {
            cond,
            then_case,
            else_case,
        } => simplify_if(cond, then_case, else_case.as_deref(), scope, renames),
        _ => {
            let outer = scope.clone();
            let cell = RefCell::new(std::mem::take(renames));
            let out = s.map(
                &mut |e| simplify_expr_with_bounds(&cell.borrow().apply(e), &outer),
                &mut |c| simplify_stmt(c, scope, &mut cell.borrow_mut()),
            );
            *renames = cell.into_inner();
            out
        }
    }
}

/// `simplify` of `s`, a loop or let binding `name`: pending inlined lets that `name` would
/// shadow or capture are bound again around it, and pending again after it.
fn binding(
    name: &str,
    s: &Stmt,
    renames: &mut Renames,
    simplify: &mut dyn FnMut(&mut Renames) -> Stmt,
) -> Stmt {
    let taken = renames.take_conflicting(name);
    let out = simplify(renames);
    for (name, value) in &taken {
        renames.insert(name, value.clone());
    }
    Renames::wrap(&taken, s, out)
}

fn simplify_for(
    var: &str,
    min: &Expr,
    extent: &Expr,
    kind: crate::ir::ForKind,
    body: &Stmt,
    scope: &mut Scope,
    renames: &mut Renames,
) -> Stmt {
    let min = simplify_expr_with_bounds(&renames.apply(min), scope);
    let extent = simplify_expr_with_bounds(&renames.apply(extent), scope);
    match extent.as_int() {
        Some(n) if n <= 0 => Stmt::NoOp,
        Some(1) => simplify_let_value(var, min, body, scope, renames),
        _ => {
            scope.push(var, loop_interval(&min, &extent, scope));
            let body = simplify_stmt(body, scope, renames);
            scope.pop();
            if body == Stmt::NoOp {
                return Stmt::NoOp;
            }
            Stmt::For {
                var: var.to_string(),
                min,
                extent,
                kind,
                body: Box::new(body),
            }
        }
    }
}

fn simplify_let(
    name: &str,
    value: &Expr,
    body: &Stmt,
    scope: &mut Scope,
    renames: &mut Renames,
) -> Stmt {
    let value = simplify_expr_with_bounds(&renames.apply(value), scope);
    simplify_let_value(name, value, body, scope, renames)
}

/// `let name = value in body` with `value` already simplified. Inlining a variable, constant
/// or parameter first lets constants fold in the body.
fn simplify_let_value(
    name: &str,
    value: Expr,
    body: &Stmt,
    scope: &mut Scope,
    renames: &mut Renames,
) -> Stmt {
    if is_trivial(&value) {
        renames.insert(name, value);
        let body = simplify_stmt(body, scope, renames);
        renames.remove(name);
        return body;
    }
    scope.push_let(name, bounds(&value, scope), &value);
    let body = simplify_stmt(body, scope, renames);
    scope.pop();
    if body == Stmt::NoOp {
        return Stmt::NoOp;
    }
    Stmt::Let {
        name: name.to_string(),
        value,
        body: Box::new(body),
    }
}

/// The values of a loop variable: `min..min + extent`, when both have bounds and the loop
/// can run. Loop variables are `i32`.
pub(crate) fn loop_interval(min: &Expr, extent: &Expr, scope: &Scope) -> Option<ConstantInterval> {
    let (m, n) = (bounds(min, scope)?, bounds(extent, scope)?);
    let hi = (m.hi as i128 + n.hi as i128 - 1).min(i32::MAX as i128);
    (n.hi >= 1).then(|| ConstantInterval::new(m.lo.max(i32::MIN as i64), hi as i64))
}

fn simplify_if(
    cond: &Expr,
    then_case: &Stmt,
    else_case: Option<&Stmt>,
    scope: &mut Scope,
    renames: &mut Renames,
) -> Stmt {
    let cond = simplify_expr_with_bounds(&renames.apply(cond), scope);
    match cond {
        Expr::Const(strata_dsl::Value::Bool(true)) => {
            return simplify_stmt(then_case, scope, renames)
        }
        Expr::Const(strata_dsl::Value::Bool(false)) => {
            return else_case.map_or(Stmt::NoOp, |e| simplify_stmt(e, scope, renames));
        }
        _ => {}
    }
    let then_case = simplify_stmt(then_case, scope, renames);
    let else_case = else_case
        .map(|e| simplify_stmt(e, scope, renames))
        .filter(|e| *e != Stmt::NoOp);
    if then_case == Stmt::NoOp && else_case.is_none() {
        return Stmt::NoOp;
    }
    Stmt::If {
        cond,
        then_case: Box::new(then_case),
        else_case: else_case.map(Box::new),
    }
}
