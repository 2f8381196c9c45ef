//! The lets of a variable, constant or parameter that the simplifier inlines, kept as a map
//! and applied to each expression as the walk reaches it, in one pass over the statement.
//! Substituting each such let into its whole body at once made simplification quadratic in
//! a large pipeline, whose region lets (`let up0.y.min = interp0.y.min`, hundreds of them
//! nested) each copied everything inside them.
//!
//! Capture is handled where it happens: a loop or let that rebinds a variable some pending
//! value reads gets those lets back, around it (where their values still mean what they
//! meant), and an expression with an inner let that would capture or shadow one gets its lets
//! as expression lets around it.

use crate::ir::{Expr, Stmt};
use std::collections::HashMap;

/// Pending inlined lets: each name and the trivial value it stands for (in the names of the
/// scope where it was bound).
#[derive(Clone, Debug, Default)]
pub(crate) struct Renames {
    values: HashMap<String, Expr>,
}

impl Renames {
    /// Records that `name` stands for `value` (already renamed) from here on.
    pub(crate) fn insert(&mut self, name: &str, value: Expr) {
        self.values.insert(name.to_string(), value);
    }

    /// Ends the scope of `name` (its let's body is done).
    pub(crate) fn remove(&mut self, name: &str) {
        self.values.remove(name);
    }

    /// `e` with every pending name replaced by its value.
    pub(crate) fn apply(&self, e: &Expr) -> Expr {
        if self.values.is_empty() {
            return e.clone();
        }
        match self.replace(e) {
            Some(out) => out,
            None => self.around_expr(e),
        }
    }

    /// One walk replacing pending names; `None` at an inner let binding a pending name or a
    /// variable some value reads (the walk would capture or shadow it).
    fn replace(&self, e: &Expr) -> Option<Expr> {
        match e {
            Expr::Var(n, _) => Some(self.values.get(n).cloned().unwrap_or_else(|| e.clone())),
            Expr::Let { name, .. } if self.conflicts(name) => None,
            _ => {
                let mut ok = true;
                let out = e.map_children(&mut |c| {
                    self.replace(c).unwrap_or_else(|| {
                        ok = false;
                        c.clone()
                    })
                });
                ok.then_some(out)
            }
        }
    }

    /// `e` inside expression lets of the pending names it reads.
    fn around_expr(&self, e: &Expr) -> Expr {
        self.used_by(|n| e.uses_var(n))
            .into_iter()
            .fold(e.clone(), |body, (name, value)| Expr::Let {
                name,
                value: Box::new(value),
                body: Box::new(body),
            })
    }

    /// Whether binding `name` would shadow a pending name or capture a variable a pending
    /// value reads.
    fn conflicts(&self, name: &str) -> bool {
        self.values.contains_key(name) || self.values.values().any(|v| v.uses_var(name))
    }

    /// The pending lets that `uses` says are read, sorted by name (a stable order).
    fn used_by(&self, uses: impl Fn(&str) -> bool) -> Vec<(String, Expr)> {
        let mut used: Vec<(String, Expr)> = self
            .values
            .iter()
            .filter(|(n, _)| uses(n))
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect();
        used.sort_by(|a, b| a.0.cmp(&b.0));
        used
    }

    /// Before entering a scope binding `name` (a loop or let): the pending lets `name` would
    /// shadow or whose value reads `name`, removed from `self` for the scope. The caller puts
    /// them back after it, for the statements that follow, and binds again around the
    /// statement those it reads ([`Renames::wrap`]).
    pub(crate) fn take_conflicting(&mut self, name: &str) -> Vec<(String, Expr)> {
        if !self.conflicts(name) {
            return Vec::new();
        }
        let conflicting: Vec<String> = self
            .values
            .iter()
            .filter(|(n, v)| n.as_str() == name || v.uses_var(name))
            .map(|(n, _)| n.clone())
            .collect();
        let mut taken: Vec<(String, Expr)> = conflicting
            .into_iter()
            .filter_map(|n| self.values.remove(&n).map(|v| (n, v)))
            .collect();
        taken.sort_by(|a, b| a.0.cmp(&b.0));
        taken
    }

    /// `simplified` (the statement `original` became) inside the lets of `taken` that
    /// `original` reads (see [`Renames::take_conflicting`]).
    pub(crate) fn wrap(taken: &[(String, Expr)], original: &Stmt, simplified: Stmt) -> Stmt {
        taken
            .iter()
            .filter(|(n, _)| super::subst::stmt_uses_var(original, n))
            .fold(simplified, |body, (name, value)| Stmt::Let {
                name: name.clone(),
                value: value.clone(),
                body: Box::new(body),
            })
    }
}

#[cfg(test)]
mod tests {
    use crate::ir::{Expr, ForKind, Stmt};

    fn store(index: Expr, value: Expr) -> Stmt {
        Stmt::Store {
            buffer: "out".into(),
            index,
            value,
        }
    }

    fn serial(var: &str, body: Stmt) -> Stmt {
        Stmt::For {
            var: var.into(),
            min: Expr::int(0),
            extent: Expr::var("n"),
            kind: ForKind::Serial,
            body: Box::new(body),
        }
    }

    fn let_(name: &str, value: Expr, body: Stmt) -> Stmt {
        Stmt::Let {
            name: name.into(),
            value,
            body: Box::new(body),
        }
    }

    /// `let a = b; for b { out[b] = a }`: inlining `a` inside the loop would read the loop's
    /// `b`; the let is bound again around the loop, where `b` is still the outer one.
    #[test]
    fn a_loop_rebinding_a_pending_value_gets_its_let_back() {
        let s = let_(
            "a",
            Expr::var("b"),
            serial("b", store(Expr::var("b"), Expr::var("a"))),
        );
        let out = crate::simplify::simplify(&s);
        let expected = let_(
            "a",
            Expr::var("b"),
            serial("b", store(Expr::var("b"), Expr::var("a"))),
        );
        assert_eq!(out, expected, "{out}");
    }

    /// `let a = c; out[0] = a; for a { out[a] = a }; out[1] = a`: the loop's `a` shadows the
    /// pending one inside it only; the stores around it read `c`.
    #[test]
    fn a_shadowing_loop_leaves_the_pending_let_to_its_siblings() {
        let s = let_(
            "a",
            Expr::var("c"),
            Stmt::block(vec![
                store(Expr::int(0), Expr::var("a")),
                serial("a", store(Expr::var("a"), Expr::var("a"))),
                store(Expr::int(1), Expr::var("a")),
            ]),
        );
        let out = crate::simplify::simplify(&s);
        let expected = Stmt::block(vec![
            store(Expr::int(0), Expr::var("c")),
            serial("a", store(Expr::var("a"), Expr::var("a"))),
            store(Expr::int(1), Expr::var("c")),
        ]);
        assert_eq!(out, expected, "{out}");
    }
}
