//! The boxes a call checks, one per site that accesses a buffer, each with the extents of the
//! loops around it. Establishes: a site inside a loop that runs zero times is not checked. Its
//! box, taken over an empty range, need not be empty (a fused loop's clamped coordinates, an
//! empty reduction domain whose indices still bound something), and checking it refused valid
//! calls; `bounds::access_bounds`, which realizations use, unions every site instead.
//!
//! Code generation may hoist an input's load out of loops its index does not depend on (input
//! loads are `can_move`), to before a loop that runs zero times. So for a `hoistable` buffer a
//! loop's extent conditions a site only if the site's index depends on that loop's variable or
//! on a loop inside it (the load cannot leave the innermost loop whose variable it reads, nor
//! any loop around that one).

use super::bounds::{
    expr_box, guarded, loop_interval, map_box, over_scope, substitute, union_boxes,
};
use super::bounds::{Interval, Scope};
use crate::ir::{Expr, Stmt};

/// One access site's box, and the extents of the loops around it that are expressions of the
/// sizes: the site touches nothing when any of them is 0 or less.
#[derive(Clone, Debug, PartialEq)]
pub struct Site {
    pub region: Vec<Interval>,
    pub runs_if_positive: Vec<Expr>,
    /// Whether the index depends on a loop variable seen so far (the site is pinned inside
    /// that loop and every loop around it).
    pinned: bool,
}

/// Every site of `s` accessing `func`, sites under the same loop extents merged into one box.
/// `sizes` names the variables bound when the kernel is called; `hoistable` says whether loads
/// of `func` may be hoisted out of loops (see the module doc).
pub fn access_sites(s: &Stmt, func: &str, sizes: &[String], hoistable: bool) -> Vec<Site> {
    let mut merged: Vec<Site> = Vec::new();
    for mut site in sites(s, func, hoistable) {
        site.runs_if_positive
            .retain(|e| free_vars(e).iter().all(|v| sizes.contains(v)));
        site.runs_if_positive.dedup();
        site.region = site
            .region
            .iter()
            .map(|i| over_scope(i, &Scope::default()))
            .collect();
        match merged
            .iter_mut()
            .find(|m| m.runs_if_positive == site.runs_if_positive)
        {
            Some(m) => {
                m.region =
                    union_boxes(Some(m.region.clone()), Some(site.region)).unwrap_or_default()
            }
            None => merged.push(site),
        }
    }
    merged
}

fn sites(s: &Stmt, func: &str, hoistable: bool) -> Vec<Site> {
    let mut out: Vec<Site> = s
        .exprs()
        .into_iter()
        .filter_map(|e| expr_box(e, func))
        .map(|region| Site {
            region,
            runs_if_positive: Vec::new(),
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
            for site in sites(body, func, hoistable) {
                let mut runs_if_positive = site.runs_if_positive;
                runs_if_positive.retain(|e| !free_vars(e).contains(var));
                let pinned = site.pinned || region_uses(&site.region, var);
                if pinned || !hoistable {
                    runs_if_positive.push(extent.clone());
                }
                out.push(Site {
                    region: site.region.iter().map(|i| over_scope(i, &scope)).collect(),
                    runs_if_positive,
                    pinned,
                });
            }
        }
        Stmt::Let { name, value, body } => {
            let sub = |e: &Expr| substitute(e, name, value);
            out.extend(sites(body, func, hoistable).into_iter().map(|site| Site {
                region: map_box(Some(site.region), &sub).unwrap_or_default(),
                runs_if_positive: site.runs_if_positive.iter().map(sub).collect(),
                pinned: site.pinned,
            }));
        }
        Stmt::If {
            cond,
            then_case,
            else_case,
        } => {
            out.extend(
                sites(then_case, func, hoistable)
                    .into_iter()
                    .map(|site| Site {
                        region: guarded(&site.region, cond),
                        ..site
                    }),
            );
            if let Some(e) = else_case {
                out.extend(sites(e, func, hoistable));
            }
        }
        Stmt::Provide { func: f, args, .. } if f == func => out.push(Site {
            region: args.iter().cloned().map(Interval::point).collect(),
            runs_if_positive: Vec::new(),
            pinned: false,
        }),
        other => {
            for child in other.children() {
                out.extend(sites(child, func, hoistable));
            }
        }
    }
    out
}

/// Whether a bound of `region` reads the variable `var`.
fn region_uses(region: &[Interval], var: &str) -> bool {
    let uses = |e: &Option<Expr>| {
        e.as_ref()
            .is_some_and(|e| free_vars(e).iter().any(|v| v == var))
    };
    region.iter().any(|i| uses(&i.min) || uses(&i.max))
}

/// The names of the variables `e` reads.
fn free_vars(e: &Expr) -> Vec<String> {
    let mut vars = Vec::new();
    e.for_each(&mut |x| {
        if let Expr::Var(name, _) = x {
            vars.push(name.clone());
        }
    });
    vars
}
