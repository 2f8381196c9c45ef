//! Scoping helpers: which variables a statement uses, and capture-avoiding substitution.

use crate::ir::{Expr, Stmt};
use std::cell::Cell;
use std::collections::HashSet;

/// Whether `e` is a leaf that costs nothing to repeat: a variable, constant or parameter.
pub fn is_trivial(e: &Expr) -> bool {
    matches!(e, Expr::Var(..) | Expr::Const(_) | Expr::Param(..))
}

/// The buffers and functions `e` reads.
pub fn buffers_read(e: &Expr) -> HashSet<String> {
    let mut names = HashSet::new();
    e.for_each(&mut |x| match x {
        Expr::Load { buffer, .. } => drop(names.insert(buffer.clone())),
        Expr::Call { func, .. } => drop(names.insert(func.clone())),
        _ => {}
    });
    names
}

/// The buffers and functions `s` writes.
pub fn buffers_written(s: &Stmt) -> HashSet<String> {
    let mut names = HashSet::new();
    s.for_each(&mut |x| match x {
        Stmt::Store { buffer, .. } => drop(names.insert(buffer.clone())),
        Stmt::Provide { func, .. } => drop(names.insert(func.clone())),
        _ => {}
    });
    names
}

/// Every variable name `e` mentions, free or bound.
pub fn names_in_expr(e: &Expr, names: &mut HashSet<String>) {
    e.for_each(&mut |x| match x {
        Expr::Var(n, _) | Expr::Let { name: n, .. } => drop(names.insert(n.clone())),
        _ => {}
    });
}

/// Every variable name `s` mentions, free or bound.
pub fn names_in_stmt(s: &Stmt, names: &mut HashSet<String>) {
    s.for_each(&mut |x| match x {
        Stmt::For { var: n, .. } | Stmt::Let { name: n, .. } => drop(names.insert(n.clone())),
        _ => {}
    });
    s.for_each_expr(&mut |e| names_in_expr(e, names));
}

/// Whether the variable `name` occurs free in `s`.
pub fn stmt_uses_var(s: &Stmt, name: &str) -> bool {
    match s {
        Stmt::For {
            var,
            min,
            extent,
            body,
            ..
        } => {
            min.uses_var(name)
                || extent.uses_var(name)
                || (var != name && stmt_uses_var(body, name))
        }
        Stmt::Let {
            name: bound,
            value,
            body,
        } => value.uses_var(name) || (bound != name && stmt_uses_var(body, name)),
        _ => {
            s.exprs().iter().any(|e| e.uses_var(name))
                || s.children().iter().any(|c| stmt_uses_var(c, name))
        }
    }
}

/// The free variables of `e` (not those its own lets bind), in one walk (testing each name
/// `e` mentions with `uses_var` walked `e` once per name: quadratic on the call checks' region
/// ends under hundreds of region lets).
pub(crate) fn free_vars(e: &Expr) -> HashSet<String> {
    match e {
        Expr::Var(n, _) => HashSet::from([n.clone()]),
        Expr::Let { name, value, body } => {
            let mut free = free_vars(body);
            free.remove(name);
            free.extend(free_vars(value));
            free
        }
        other => {
            let mut free = HashSet::new();
            other.for_each_child(&mut |c| free.extend(free_vars(c)));
            free
        }
    }
}

/// `e` with every free `name` replaced by `value`; `None` where a let inside `e` would capture
/// a free variable of `value`.
pub fn subst_expr(e: &Expr, name: &str, value: &Expr) -> Option<Expr> {
    Subst {
        name,
        value,
        free: free_vars(value),
    }
    .expr(e)
}

/// `s` with every free `name` replaced by `value`; `None` where a loop or let inside `s` would
/// capture a free variable of `value`.
pub fn subst_stmt(s: &Stmt, name: &str, value: &Expr) -> Option<Stmt> {
    Subst {
        name,
        value,
        free: free_vars(value),
    }
    .stmt(s)
}

struct Subst<'a> {
    name: &'a str,
    value: &'a Expr,
    free: HashSet<String>,
}

impl Subst<'_> {
    /// Whether binding `bound` around a scope that uses `name` would capture part of `value`.
    /// `uses_name` walks the scope, so it is asked only when `bound` is free in `value` (asked
    /// at every let and loop, it made substitution quadratic in the statement's depth).
    fn captures(&self, bound: &str, uses_name: impl FnOnce() -> bool) -> bool {
        self.free.contains(bound) && uses_name()
    }

    fn expr(&self, e: &Expr) -> Option<Expr> {
        match e {
            Expr::Var(n, _) if n == self.name => Some(self.value.clone()),
            Expr::Let {
                name: bound,
                value,
                body,
            } => {
                let value = Box::new(self.expr(value)?);
                let body = if bound == self.name {
                    body.clone()
                } else if self.captures(bound, || body.uses_var(self.name)) {
                    return None;
                } else {
                    Box::new(self.expr(body)?)
                };
                Some(Expr::Let {
                    name: bound.clone(),
                    value,
                    body,
                })
            }
            _ => {
                let ok = Cell::new(true);
                let out = e.map_children(&mut |c| self.expr(c).unwrap_or_else(|| fail(&ok, c)));
                ok.get().then_some(out)
            }
        }
    }

    /// The body of a loop or let binding `bound`: untouched when `bound` shadows `name`.
    fn scoped(&self, bound: &str, body: &Stmt) -> Option<Box<Stmt>> {
        if bound == self.name {
            Some(Box::new(body.clone()))
        } else if self.captures(bound, || stmt_uses_var(body, self.name)) {
            None
        } else {
            Some(Box::new(self.stmt(body)?))
        }
    }

    fn stmt(&self, s: &Stmt) -> Option<Stmt> {
        match s {
            Stmt::For {
                var,
                min,
                extent,
                kind,
                body,
            } => Some(Stmt::For {
                var: var.clone(),
                min: self.expr(min)?,
                extent: self.expr(extent)?,
                kind: *kind,
                body: self.scoped(var, body)?,
            }),
            Stmt::Let { name, value, body } => Some(Stmt::Let {
                name: name.clone(),
                value: self.expr(value)?,
                body: self.scoped(name, body)?,
            }),
            _ => {
                let ok = Cell::new(true);
                let out = s.map(
                    &mut |e| self.expr(e).unwrap_or_else(|| fail(&ok, e)),
                    &mut |c| self.stmt(c).unwrap_or_else(|| fail(&ok, c)),
                );
                ok.get().then_some(out)
            }
        }
    }
}

/// Records a failed substitution and keeps the original node (the result is then dropped).
fn fail<T: Clone>(ok: &Cell<bool>, original: &T) -> T {
    ok.set(false);
    original.clone()
}
