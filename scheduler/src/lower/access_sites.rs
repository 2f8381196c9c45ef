//! The boxes a call checks, one per site that accesses a buffer, each with the conditions under
//! which it runs: the extents of the loops around it are positive, the `if`s around it hold.
//! Establishes: a site inside a loop that runs zero times is not checked. Its
//! box, taken over an empty range, need not be empty (a fused loop's clamped coordinates, an
//! empty reduction domain whose indices still bound something), and checking it refused valid
//! calls; `bounds::live_access_bounds`, which realizations use, unions every site that is not
//! under a loop of constant extent 0 instead.
//!
//! The same conditions say when a producer is needed at all (`run_condition`): realization
//! computes a function only `if` some site reading it runs, so a producer read only inside
//! empty loops (an output of extent 0, an empty reduction domain) computes nothing and reads
//! nothing, and the sites under that `if` are checked only where it holds.
//!
//! Code generation may hoist an input's load out of loops its index does not depend on (input
//! loads are `can_move`), to before a loop that runs zero times. So for a `hoistable` buffer a
//! loop's extent conditions a site only if the site's index depends on that loop's variable or
//! on a loop inside it (the load cannot leave the innermost loop whose variable it reads, nor
//! any loop around that one). A load never rises above an `if` it is under (see
//! `load_flags` in the jit's `codegen/expr.rs`), so an `if`'s condition conditions every site
//! under it.

use super::bounds::{
    expr_box, guarded, loop_interval, map_box, over_loop_scope, over_scope, union_boxes,
};
use super::bounds::{Interval, Scope};
use crate::ir::{Expr, Stmt};
use crate::simplify::free_vars;
use strata_dsl::BinOp;

/// One access site's box, and the conditions under which it runs: `0 < extent` of the loops
/// around it, and the conjuncts of the `if`s around it (from `access_sites`, only those that
/// are expressions of the sizes). The site touches nothing when one of them is false.
#[derive(Clone, Debug, PartialEq)]
pub struct Site {
    /// The box touched: one interval per dimension.
    pub region: Vec<Interval>,
    /// The conditions under which the site runs; it touches nothing when one is false.
    pub runs_if: Vec<Expr>,
    /// Whether the index depends on a loop variable seen so far (the site is pinned inside
    /// that loop and every loop around it).
    pinned: bool,
}

/// Every site of `s` accessing `func`, sites under the same conditions merged into one box.
/// `sizes` names the variables bound when the kernel is called; `hoistable` says whether loads
/// of `func` may be hoisted out of loops (see the module doc).
pub fn access_sites(s: &Stmt, func: &str, sizes: &[String], hoistable: bool) -> Vec<Site> {
    let mut merged: Vec<Site> = Vec::new();
    for mut site in sites(s, func, hoistable, true) {
        // The call decides these before anything runs: only sizes are known then (a scalar
        // parameter's value is not part of the shape).
        site.runs_if.retain(|e| {
            let mut reads_param = false;
            e.for_each(&mut |x| reads_param |= matches!(x, Expr::Param(..)));
            !reads_param && free_vars(e).iter().all(|v| sizes.contains(v))
        });
        site.runs_if.dedup();
        site.region = site.region.iter().map(settled).collect();
        match merged.iter_mut().find(|m| m.runs_if == site.runs_if) {
            Some(m) => {
                m.region =
                    union_boxes(Some(m.region.clone()), Some(site.region)).unwrap_or_default()
            }
            None => merged.push(site),
        }
    }
    merged
}

/// The sites of `s`. With `outside_loops`, `s` is under no loop: a let there stays a let around
/// each bound that reads it instead of being substituted, so the region lets of functions
/// computed at root, each written in terms of its consumers' (`d1.x.min = d2.x.min * 2 - 1`),
/// are not expanded into one expression per level of a pyramid, which grew by a factor per
/// level (issue 20: the call checks of a 4-level interpolation with vectorized levels took
/// minutes).
fn sites(s: &Stmt, func: &str, hoistable: bool, outside_loops: bool) -> Vec<Site> {
    let mut out: Vec<Site> = s
        .exprs()
        .into_iter()
        .filter_map(|e| expr_box(e, func))
        .map(|region| Site {
            region,
            runs_if: Vec::new(),
            pinned: false,
        })
        .collect();
    match s {
        Stmt::For {
            var,
            min,
            extent,
            body,
            ..
        } => {
            let mut scope = Scope::default();
            scope.push(var, loop_interval(min, extent, &Scope::default()));
            for site in sites(body, func, hoistable, false) {
                let runs_if = site.runs_if.iter();
                let mut runs_if: Vec<Expr> =
                    runs_if.filter_map(|e| over_loop(e, var, &scope)).collect();
                let pinned = site.pinned || region_uses(&site.region, var);
                if pinned || !hoistable {
                    runs_if.push(Expr::lt(Expr::int(0), extent.clone()));
                }
                out.push(Site {
                    region: site
                        .region
                        .iter()
                        .map(|i| over_loop_scope(i, var, &scope))
                        .collect(),
                    runs_if,
                    pinned,
                });
            }
        }
        Stmt::Let { .. } if outside_loops => out.extend(sites_in_lets(s, func, hoistable)),
        Stmt::Let { name, value, body } => {
            let sub = |e: &Expr| e.substitute(name, value);
            let inner = sites(body, func, hoistable, outside_loops);
            out.extend(inner.into_iter().map(|site| Site {
                region: map_box(Some(site.region), &sub).unwrap_or_default(),
                runs_if: site.runs_if.iter().map(sub).collect(),
                pinned: site.pinned,
            }));
        }
        Stmt::If {
            cond,
            then_case,
            else_case,
        } => {
            out.extend(
                sites(then_case, func, hoistable, outside_loops)
                    .into_iter()
                    .map(|site| Site {
                        region: guarded(&site.region, cond),
                        runs_if: [site.runs_if, conjuncts(cond)].concat(),
                        ..site
                    }),
            );
            // An `else` runs where the condition fails (a specialization's general case runs
            // where its conditions fail: its sites are not checked where they hold).
            let not = Expr::Unary(crate::ir::UnOp::Not, Box::new(cond.clone()));
            let else_sites = else_case
                .iter()
                .flat_map(|e| sites(e, func, hoistable, outside_loops));
            for site in else_sites {
                out.push(Site {
                    runs_if: [site.runs_if.clone(), vec![not.clone()]].concat(),
                    ..site
                });
            }
        }
        Stmt::Provide { func: f, args, .. } if f == func => out.push(Site {
            region: args.iter().cloned().map(Interval::point).collect(),
            runs_if: Vec::new(),
            pinned: false,
        }),
        other => {
            for child in other.children() {
                out.extend(sites(child, func, hoistable, outside_loops));
            }
        }
    }
    out
}

/// `sites` of a chain of lets under no loop (a root's region lets, hundreds in an app-sized
/// pipeline), each end under the lets it reads (`named`, from the innermost out). The lets an
/// end needs are found by following free variables through the chain once, instead of
/// walking the growing end at every let (quadratic in the chain's length).
fn sites_in_lets(s: &Stmt, func: &str, hoistable: bool) -> Vec<Site> {
    let mut lets: Vec<(&str, &Expr)> = Vec::new();
    let mut body = s;
    let mut out = Vec::new();
    while let Stmt::Let {
        name,
        value,
        body: inner,
    } = body
    {
        // A call in a let's value lies under the lets before it.
        if let Some(region) = expr_box(value, func) {
            out.push(Site {
                region: region.iter().map(|i| under_lets(&lets, i)).collect(),
                runs_if: Vec::new(),
                pinned: false,
            });
        }
        lets.push((name, value));
        body = inner;
    }
    for site in sites(body, func, hoistable, true) {
        out.push(Site {
            region: site.region.iter().map(|i| under_lets(&lets, i)).collect(),
            runs_if: site.runs_if.iter().map(|e| named_all(&lets, e)).collect(),
            pinned: site.pinned,
        });
    }
    out
}

fn under_lets(lets: &[(&str, &Expr)], i: &Interval) -> Interval {
    Interval {
        min: i.min.as_ref().map(|e| named_all(lets, e)),
        max: i.max.as_ref().map(|e| named_all(lets, e)),
    }
}

/// `e` under each of `lets` (outermost first) that it reads, directly or through the value of
/// another: `named` applied from the innermost let out.
fn named_all(lets: &[(&str, &Expr)], e: &Expr) -> Expr {
    let mut needed = free_vars(e);
    let mut out = e.clone();
    for (name, value) in lets.iter().rev() {
        if needed.remove(*name) {
            needed.extend(free_vars(value));
            out = Expr::Let {
                name: name.to_string(),
                value: Box::new((*value).clone()),
                body: Box::new(out),
            };
        }
    }
    out
}

/// The condition under which some access of `func` in `s` runs: the disjunction, over its
/// sites, of each site's conditions; `None` when `s` never accesses `func` or some site runs
/// whenever `s` does (nothing to test). Every variable it reads is free in `s`, so it can be
/// tested where `s` starts.
pub fn run_condition(s: &Stmt, func: &str) -> Option<Expr> {
    let mut disjuncts: Vec<Vec<Expr>> = Vec::new();
    for site in sites(s, func, false, false) {
        let mut terms: Vec<Expr> = Vec::new();
        for e in site.runs_if.iter().map(crate::simplify::simplify_expr) {
            if e == Expr::Const(strata_dsl::Value::Bool(true)) || terms.contains(&e) {
                continue;
            }
            terms.push(e);
        }
        if terms.is_empty() {
            return None;
        }
        if !disjuncts.contains(&terms) {
            disjuncts.push(terms);
        }
    }
    let all = |terms: Vec<Expr>| terms.into_iter().reduce(and);
    let any = disjuncts.into_iter().filter_map(all).reduce(or)?;
    Some(crate::simplify::simplify_expr(&any))
}

/// A condition a site runs under, seen from outside the loop of `var` (ranging over `scope`):
/// itself if it does not read `var`; for `a < b` or `a <= b` with only one side reading `var`,
/// the condition that it holds for some value of `var`, with that side at its extreme over
/// the loop (`v < e` becomes `v.min < e`). That is necessary for the site to run, so a site
/// under `if (ro < 0)` in a loop `ro` from 0 (the full pieces of an empty split domain) is
/// seen never to run. `None` (no condition) where neither applies.
fn over_loop(cond: &Expr, var: &str, scope: &Scope) -> Option<Expr> {
    if !cond.uses_var(var) {
        return Some(cond.clone());
    }
    let Expr::Binary(op @ (BinOp::Lt | BinOp::Le), a, b) = cond else {
        return None;
    };
    let least = |e: &Expr| super::bounds::bounds(e, scope).min;
    let greatest = |e: &Expr| super::bounds::bounds(e, scope).max;
    let (a, b) = match (a.uses_var(var), b.uses_var(var)) {
        (true, false) => (least(a)?, (**b).clone()),
        (false, true) => ((**a).clone(), greatest(b)?),
        _ => return None,
    };
    Some(Expr::binary(*op, a, b))
}

/// The conjuncts of `cond` (`a && b` is `a` and `b`), each a condition of its own: one that
/// reads a loop variable is weakened at that loop (`over_loop`) while the others still count.
fn conjuncts(cond: &Expr) -> Vec<Expr> {
    match cond {
        Expr::Binary(BinOp::And, a, b) => [conjuncts(a), conjuncts(b)].concat(),
        other => vec![other.clone()],
    }
}

/// `a && b`.
pub fn and(a: Expr, b: Expr) -> Expr {
    Expr::binary(BinOp::And, a, b)
}

fn or(a: Expr, b: Expr) -> Expr {
    Expr::binary(BinOp::Or, a, b)
}

/// Whether a bound of `region` reads the variable `var`.
fn region_uses(region: &[Interval], var: &str) -> bool {
    let uses = |e: &Option<Expr>| e.as_ref().is_some_and(|e| e.uses_var(var));
    region.iter().any(|i| uses(&i.min) || uses(&i.max))
}

/// `let name = value in e`, or `e` if it does not read `name`.
fn named(name: &str, value: &Expr, e: &Expr) -> Expr {
    if !e.uses_var(name) {
        return e.clone();
    }
    Expr::Let {
        name: name.to_string(),
        value: Box::new(value.clone()),
        body: Box::new(e.clone()),
    }
}

/// `over_scope` of an interval with nothing in scope (simplified, data-dependent values
/// replaced by their type's range), under the lets around its ends (`sites`' `outside_loops`):
/// an end is settled inside them, where their names are plain symbols, so they are not
/// substituted.
fn settled(i: &Interval) -> Interval {
    Interval {
        min: i.min.as_ref().and_then(|e| settled_end(e, true)),
        max: i.max.as_ref().and_then(|e| settled_end(e, false)),
    }
}

fn settled_end(e: &Expr, is_min: bool) -> Option<Expr> {
    if let Expr::Let { name, value, body } = e {
        let body = settled_end(body, is_min)?;
        return Some(named(name, value, &body));
    }
    let end = Some(e.clone());
    let (min, max) = if is_min { (end, None) } else { (None, end) };
    let settled = over_scope(&Interval { min, max }, &Scope::default());
    if is_min {
        settled.min
    } else {
        settled.max
    }
}
