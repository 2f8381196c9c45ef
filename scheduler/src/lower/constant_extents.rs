//! Constant extents: gives each loop that a schedule unrolls or vectorizes without a factor
//! (`unroll(y)`, `vectorize(x)`) the constant extent bounds inference finds for it, as Halide
//! does. Validation runs before bounds are known, so it fixes only the extents the schedule
//! itself makes constant (the inner loop of a split); a producer computed inside its consumer
//! has as many rows as the consumer reads, which only bounds inference knows:
//!
//! ```text
//! f: compute_at(g, x).unroll(y)        g(y, x) = f(y, x) + f(y + 1, x) + f(y + 2, x)
//!
//! let f.y.min = g.s0.y                  let f.y.min = g.s0.y
//! let f.y.max = g.s0.y + 2        ->    let f.y.max = g.s0.y + 2
//! unrolled for f.s0.y in                unrolled for f.s0.y in [f.y.min, f.y.min + 3)
//!   [f.y.min, f.y.min + (f.y.max - f.y.min + 1))
//! ```
//!
//! Each such extent is simplified with the lets and loops around it in scope and every size in
//! `0..=MAX_EXTENT` (the call boundary's limit, which `bind` and `bind_sizes` enforce), so
//! correlated bounds cancel exactly. An extent that does not become a constant (the output's
//! `W - 2`, a tile clipped by a tail guard) is refused with the error validation gives for a
//! loop the schedule leaves non-constant: the function, the directive, the loop and the rule.
//! Extents the schedule itself fixes (`(32 + 15) / 16` for the outer part of a split by 32
//! that `vectorize(x, 16)` splits again) are folded to literals here too: the `unroll` and
//! `vectorize` passes read only literal extents.
//! Establishes: every unrolled or vectorized loop has a literal constant extent no larger than its
//! kind allows (`loops::max_lanes`), and no stage is unrolled into more than
//! `MAX_UNROLLED_COPIES` copies of its body, counting these extents.

use super::loop_nest::stage_nest;
use super::LowerError;
use crate::ir::{Expr, ForKind, Stmt};
use crate::schedule::loops::{max_lanes, DeferredExtent};
use crate::schedule::validate::{
    check_unrolled_copies, stage_ref, FuncPlan, Plan, Rule, ScheduleError,
};
use crate::simplify::{bounds, loop_interval, simplify_expr_with_bounds, ConstantInterval, Scope};
use std::collections::{BTreeMap, HashMap};
use strata_dsl::signature::MAX_EXTENT;
use strata_dsl::Pipeline;

/// A deferred loop found by its variable in the loop IR: whose it is and what asked for it.
struct Deferred<'a> {
    func: &'a str,
    stage: usize,
    extent: &'a DeferredExtent,
}

/// Fixes the extent of every deferred loop of `plan` in `s` (see the module doc).
/// `pipeline` is the one realization built `s` from (inlined functions substituted).
pub fn constant_extents(s: &Stmt, pipeline: &Pipeline, plan: &Plan) -> Result<Stmt, LowerError> {
    let deferred = deferred_loops(pipeline, plan);
    let mut scope = sizes_scope(pipeline);
    let mut found = HashMap::new();
    let fixed = fix(s, &deferred, &mut scope, &mut found)?;
    check_copies(plan, &deferred, &found)?;
    Ok(fixed)
}

/// The deferred loops of every computed function, by their loop variable in the IR (the
/// names `loop_nest` gives them).
fn deferred_loops<'a>(pipeline: &Pipeline, plan: &'a Plan) -> HashMap<String, Deferred<'a>> {
    let mut out = HashMap::new();
    for fp in plan.funcs.values() {
        let Some(func) = pipeline.func(&fp.name) else {
            continue;
        };
        for loops in fp.stages.iter().filter(|l| !l.deferred.is_empty()) {
            let names = stage_nest(pipeline, func, loops).names;
            for extent in &loops.deferred {
                if let Some(var) = names.get(&extent.var) {
                    let deferred = Deferred {
                        func: &fp.name,
                        stage: loops.stage,
                        extent,
                    };
                    out.insert(var.clone(), deferred);
                }
            }
        }
    }
    out
}

/// The scope every extent is simplified in first: each size lies in `0..=MAX_EXTENT`.
fn sizes_scope(pipeline: &Pipeline) -> Scope {
    let mut scope = Scope::new();
    for size in pipeline.size_vars() {
        scope.push(&size, Some(ConstantInterval::new(0, MAX_EXTENT)));
    }
    scope
}

/// `s` with each deferred loop's extent replaced by its constant, recorded in `found` by loop
/// variable; lets and loops enter `scope` on the way down, as the simplifier's own walk does.
fn fix(
    s: &Stmt,
    deferred: &HashMap<String, Deferred>,
    scope: &mut Scope,
    found: &mut HashMap<String, i64>,
) -> Result<Stmt, LowerError> {
    match s {
        Stmt::For {
            var,
            min,
            extent,
            kind,
            body,
        } => {
            let simple_min = simplify_expr_with_bounds(min, scope);
            let simple_extent = simplify_expr_with_bounds(extent, scope);
            let extent = match deferred.get(var) {
                Some(d) => {
                    let n = constant(d, &simple_extent)?;
                    found.insert(var.clone(), n);
                    Expr::int(n as i32)
                }
                None if matches!(kind, ForKind::Unrolled | ForKind::Vectorized) => {
                    fixed_by_schedule(var, *kind, &simple_extent)?
                }
                None => extent.clone(),
            };
            scope.push(var, loop_interval(&simple_min, &simple_extent, scope));
            let body = fix(body, deferred, scope, found);
            scope.pop();
            Ok(Stmt::For {
                var: var.clone(),
                min: min.clone(),
                extent,
                kind: *kind,
                body: Box::new(body?),
            })
        }
        Stmt::Let { name, value, body } => {
            let simple = simplify_expr_with_bounds(value, scope);
            scope.push_let(name, bounds(&simple, scope), &simple);
            let body = fix(body, deferred, scope, found);
            scope.pop();
            Ok(Stmt::Let {
                name: name.clone(),
                value: value.clone(),
                body: Box::new(body?),
            })
        }
        other => {
            let mut error = None;
            let out = other.map(&mut |e| e.clone(), &mut |c| {
                fix(c, deferred, scope, found).unwrap_or_else(|e| {
                    error.get_or_insert(e);
                    c.clone()
                })
            });
            error.map_or(Ok(out), Err)
        }
    }
}

/// The constant a deferred loop's simplified extent is, within its kind's limit; else the
/// error naming the function, the directive and the rule. An extent below 0 runs nothing,
/// as 0 does.
fn constant(d: &Deferred, extent: &Expr) -> Result<i64, LowerError> {
    let kind = d.extent.kind;
    let max = max_lanes(kind);
    let rule = match extent.as_int() {
        Some(n) if n <= max => return Ok(n.max(0)),
        Some(n) => Rule::WidthOutOfRange {
            width: n,
            max,
            kind,
        },
        None => Rule::ExtentNotConstant {
            var: d.extent.var.clone(),
            kind,
        },
    };
    Err(LowerError::Schedule(ScheduleError::Directive {
        func: d.func.to_string(),
        stage: stage_ref(d.stage),
        directive: d.extent.directive.clone(),
        rule,
    }))
}

/// The extent of a loop whose constant the schedule fixed (`split(x, xo, xi, 8).unroll(xi)`,
/// or the outer part `vectorize(x, 16)` leaves of a split by 32), as a literal: `unroll` and
/// `vectorize` read only literals. Validation proved it constant, so anything else is a bug
/// here, reported rather than lowered as a serial loop the schedule did not ask for.
fn fixed_by_schedule(var: &str, kind: ForKind, extent: &Expr) -> Result<Expr, LowerError> {
    match extent.as_int() {
        Some(n) => Ok(Expr::int(n.max(0) as i32)),
        None => Err(LowerError::Internal(format!(
            "the {kind:?} loop `{var}` has extent `{extent}`, not the constant validation proved"
        ))),
    }
}

/// Validation's limit on unrolled copies, counted again with the extents found.
fn check_copies(
    plan: &Plan,
    deferred: &HashMap<String, Deferred>,
    found: &HashMap<String, i64>,
) -> Result<(), LowerError> {
    let mut funcs: BTreeMap<String, FuncPlan> = plan.funcs.clone();
    for (var, n) in found {
        let Some(d) = deferred.get(var) else {
            continue;
        };
        let stage = (funcs.get_mut(d.func)).and_then(|fp| fp.stages.get_mut(d.stage));
        let dim = stage.and_then(|s| s.dims.iter_mut().find(|dim| dim.name == d.extent.var));
        if let Some(dim) = dim {
            dim.const_extent = Some(*n);
        }
    }
    check_unrolled_copies(&funcs).map_err(LowerError::Schedule)
}
