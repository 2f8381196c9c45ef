//! Common-subexpression elimination inside one expression (global value numbering, as
//! Halide's `CSE.cpp`), and removal of dead or trivial lets.

use super::rules::{shallow, ty_of};
use super::subst::{is_trivial, names_in_stmt, stmt_uses_var};
use super::subst::{subst_expr, subst_stmt};
use crate::ir::{Expr, Stmt, Type};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use strata_dsl::{BinOp, Value};

/// Names every subexpression of `e` bigger than a variable, constant or parameter that occurs
/// more than once: `(a*b + c) * (a*b + c)` becomes `let t0 = a*b + c in t0 * t0`. Names are
/// `t0`, `t1`, ... skipping any name `e` already uses.
///
/// A let's value and body, and a `select` arm or the right operand of `&&`/`||` that reads
/// memory (evaluated on one path only), are handled as expressions of their own, so that
/// nothing escapes the scope of a variable and no load is evaluated where the program would
/// not evaluate it. Broadcasts of trivial values are cheap to rebuild, so not named; ramps are
/// never named (a load at a named ramp would be a gather), their bases are.
#[cfg(test)]
pub fn cse(e: &Expr) -> Expr {
    let mut taken = HashSet::new();
    super::subst::names_in_expr(e, &mut taken);
    cse_in(e, &mut Fresh { taken, next: 0 })
}

/// [`cse`] on every expression of `s`, with names unique across the whole statement.
pub(crate) fn cse_stmt(s: &Stmt) -> Stmt {
    let mut taken = HashSet::new();
    names_in_stmt(s, &mut taken);
    cse_stmt_in(s, &RefCell::new(Fresh { taken, next: 0 }))
}

fn cse_stmt_in(s: &Stmt, fresh: &RefCell<Fresh>) -> Stmt {
    s.map(&mut |e| cse_in(e, &mut fresh.borrow_mut()), &mut |c| {
        cse_stmt_in(c, fresh)
    })
}

/// A source of variable names unused so far.
struct Fresh {
    taken: HashSet<String>,
    next: usize,
}

impl Fresh {
    fn name(&mut self) -> String {
        loop {
            let name = format!("t{}", self.next);
            self.next += 1;
            if self.taken.insert(name.clone()) {
                return name;
            }
        }
    }
}

fn cse_in(e: &Expr, fresh: &mut Fresh) -> Expr {
    let e = scopes_first(e, fresh);
    let mut gvn = Gvn::default();
    let root = gvn.number(&e);
    gvn.count(root);
    let named: Vec<usize> = (0..gvn.nodes.len())
        .filter(|&id| gvn.should_name(id))
        .collect();
    for &id in &named {
        gvn.nodes[id].name = Some(fresh.name());
    }
    // Ids are in post-order, so each value only uses names bound before it.
    named
        .iter()
        .rev()
        .fold(gvn.build(root, false), |body, &id| Expr::Let {
            name: gvn.nodes[id].name.clone().unwrap_or_default(),
            value: Box::new(gvn.build(id, true)),
            body: Box::new(body),
        })
}

/// For each child of `e`, whether it is a scope of its own (see [`cse`]).
fn walls(e: &Expr) -> Vec<bool> {
    match e {
        Expr::Let { .. } => vec![true, true],
        Expr::Select(_, t, f) => vec![false, t.reads_memory(), f.reads_memory()],
        Expr::Binary(BinOp::And | BinOp::Or, _, b) => vec![false, b.reads_memory()],
        _ => vec![false; e.children().len()],
    }
}

/// `e` with CSE already done inside each of its own scopes.
fn scopes_first(e: &Expr, fresh: &mut Fresh) -> Expr {
    let walls = walls(e);
    let mut i = 0;
    e.map_children(&mut |c| {
        i += 1;
        if walls[i - 1] {
            cse_in(c, fresh)
        } else {
            scopes_first(c, fresh)
        }
    })
}

fn worth_naming(e: &Expr) -> bool {
    match e {
        _ if is_trivial(e) => false,
        Expr::Broadcast { value, .. } => worth_naming(value),
        // A ramp stays where it indexes, so code generation sees a dense load or store (a
        // named ramp became a gather); its base, when shared, is named instead.
        Expr::Ramp { .. } => false,
        _ => true,
    }
}

/// One distinct subexpression.
struct Node {
    /// The node with placeholder children (the whole expression for an opaque node).
    shape: Expr,
    ty: Type,
    kids: Vec<usize>,
    /// A scope of its own: never named, never shared.
    opaque: bool,
    nameable: bool,
    uses: usize,
    name: Option<String>,
}

/// Value numbering: equal subexpressions get the same id.
#[derive(Default)]
struct Gvn {
    nodes: Vec<Node>,
    ids: HashMap<(String, Vec<usize>), usize>,
}

/// A node without its children, as a key; float constants by their bits.
fn shape_key(shape: &Expr) -> String {
    match shape {
        Expr::Const(Value::F32(x)) => format!("f32:{:08x}", x.to_bits()),
        Expr::Const(Value::F64(x)) => format!("f64:{:016x}", x.to_bits()),
        _ => format!("{shape:?}"),
    }
}

impl Gvn {
    fn push(&mut self, e: &Expr, shape: Expr, kids: Vec<usize>, opaque: bool) -> usize {
        let nameable = !opaque && worth_naming(e);
        let ty = ty_of(e);
        let node = Node {
            shape,
            ty,
            kids,
            opaque,
            nameable,
            uses: 0,
            name: None,
        };
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    fn number(&mut self, e: &Expr) -> usize {
        let kids: Vec<usize> = (e.children().into_iter().zip(walls(e)))
            .map(|(c, wall)| {
                if wall {
                    self.push(c, c.clone(), vec![], true)
                } else {
                    self.number(c)
                }
            })
            .collect();
        let shape = shallow(e);
        let key = (shape_key(&shape), kids);
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let id = self.push(e, shape, key.1.clone(), false);
        self.ids.insert(key, id);
        id
    }

    /// Counts uses as a tree walk that does not re-enter a node seen before: a subexpression
    /// used only inside one shared parent is used once.
    fn count(&mut self, id: usize) {
        self.nodes[id].uses += 1;
        if self.nodes[id].uses == 1 {
            for kid in self.nodes[id].kids.clone() {
                self.count(kid);
            }
        }
    }

    fn should_name(&self, id: usize) -> bool {
        let node = &self.nodes[id];
        node.uses > 1 && node.nameable
    }

    /// The expression of `id`, with named subexpressions (and itself unless `top`) as variables.
    fn build(&self, id: usize, top: bool) -> Expr {
        let node = &self.nodes[id];
        match &node.name {
            Some(name) if !top => return Expr::Var(name.clone(), node.ty),
            _ if node.opaque => return node.shape.clone(),
            _ => {}
        }
        let mut kids = node.kids.iter();
        node.shape.map_children(&mut |c| {
            kids.next()
                .map_or_else(|| c.clone(), |&k| self.build(k, false))
        })
    }
}

/// Removes every let (statement or expression) whose variable is unused, and inlines every let
/// bound to a variable, constant or parameter (unless that would capture a variable).
pub fn remove_dead_lets(s: &Stmt) -> Stmt {
    let s = s.map(&mut remove_dead_lets_expr, &mut remove_dead_lets);
    let Stmt::Let { name, value, body } = s else {
        return s;
    };
    if !stmt_uses_var(&body, &name) {
        return *body;
    }
    let inlined = is_trivial(&value)
        .then(|| subst_stmt(&body, &name, &value))
        .flatten();
    inlined.unwrap_or(Stmt::Let { name, value, body })
}

/// [`remove_dead_lets`] for the lets of one expression.
pub fn remove_dead_lets_expr(e: &Expr) -> Expr {
    let e = e.map_children(&mut remove_dead_lets_expr);
    let Expr::Let { name, value, body } = e else {
        return e;
    };
    if !body.uses_var(&name) {
        return *body;
    }
    let inlined = is_trivial(&value)
        .then(|| subst_expr(&body, &name, &value))
        .flatten();
    inlined.unwrap_or(Expr::Let { name, value, body })
}
