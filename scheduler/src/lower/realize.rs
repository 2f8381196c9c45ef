//! Realization: places each computed function's loop nests where its schedule says, with the
//! region it computes found by bounds inference, and the storage that holds it.
//!
//! Functions are placed consumers first. For a function `f` computed at loop `L` (or at root),
//! the region is the box of every access of `f` inside `L`'s body, with the loops and lets
//! there ranging over their bounds and the loops outside fixed; update definitions may grow it
//! (a histogram's data-dependent target, a scan's reads). `L`'s body starts with the lets of
//! the functions already computed there (consumers of `f`, outermost first); `f`'s own go
//! inside them, so its region is stated in their names (Halide's `f.s0.x.min`), not their
//! values: `let g.x.min = ..; .. let f.x.min = g.x.min * 2 - 1; let f.x.max = ..;
//! produce f { stages }; <rest of the old body>`, and a `realize f` covering every access sits
//! inside the lets of the storage loop's body. When every access in `L`'s body lies under
//! loops that may run zero times, the `produce` is under `if (f.needed)`, a let of `0 < extent
//! && ..` of those loops (and the `needed` of the consumers around them): nothing is computed
//! (or read) for a consumer that reads nothing, such as an output of extent 0.
//! Establishes: every call of a computed function is inside its `realize`, after its `produce`,
//! and a `produce` runs only if some access of the function after it can.

use super::bounds::Interval;
use super::bounds::{access_bounds, fold_add, fold_sub, live_access_bounds, map_box};
use super::loop_nest::{region_max, region_min, stage_nest, StageNest};
use super::LowerError;
use crate::ir::{Expr, Range, Stmt};
use crate::schedule::validate::{Placement, Plan};
use std::collections::HashMap;
use strata_dsl::ir::{Func, Pipeline};

/// Builds the statement computing the output: every non-inlined function produced and stored
/// where the plan places it. `pipeline` has its inlined functions already substituted.
pub fn realize_functions(pipeline: &Pipeline, plan: &Plan) -> Result<Stmt, LowerError> {
    let mut nests: HashMap<(String, usize), StageNest> = HashMap::new();
    for func in &pipeline.funcs {
        for loops in &plan.funcs[&func.name].stages {
            nests.insert(
                (func.name.clone(), loops.stage),
                stage_nest(pipeline, func, loops),
            );
        }
    }
    let output = pipeline
        .output_func()
        .ok_or_else(|| LowerError::Internal("the output is not defined".into()))?;
    let mut stmt = produce(output, &nests);
    for func in pipeline.topo_order().into_iter().rev() {
        if func.name != output.name {
            stmt = place(stmt, func, plan, &nests)?;
        }
    }
    Ok(output_region(pipeline, output, stmt))
}

/// `produce f { stage 0; stage 1; ... }`.
fn produce(func: &Func, nests: &HashMap<(String, usize), StageNest>) -> Stmt {
    let stages = (0..=func.updates.len())
        .filter_map(|s| nests.get(&(func.name.clone(), s)))
        .map(|n| n.stmt.clone());
    Stmt::Produce {
        func: func.name.clone(),
        body: Box::new(Stmt::block(stages.collect())),
    }
}

/// The output's region is its declared extents.
fn output_region(pipeline: &Pipeline, output: &Func, body: Stmt) -> Stmt {
    let conv = super::loop_nest::Converter {
        pipeline,
        func: &output.name,
        stage: 0,
    };
    let mut stmt = body;
    for (var, extent) in output.vars.iter().zip(&pipeline.output.extents).rev() {
        let max = Expr::sub(conv.expr(extent), Expr::int(1));
        stmt = Stmt::Let {
            name: region_max(&output.name, var),
            value: max,
            body: Box::new(stmt),
        };
        stmt = Stmt::Let {
            name: region_min(&output.name, var),
            value: Expr::int(0),
            body: Box::new(stmt),
        };
    }
    stmt
}

/// The loop variable a placement names, or `None` for root.
fn site_var(
    placement: &Placement,
    nests: &HashMap<(String, usize), StageNest>,
) -> Result<Option<String>, LowerError> {
    match placement {
        Placement::Root | Placement::Inline => Ok(None),
        Placement::At { func, stage, var } => nests
            .get(&(func.clone(), *stage))
            .and_then(|n| n.names.get(var))
            .cloned()
            .map(Some)
            .ok_or_else(|| LowerError::Internal(format!("no loop {var} in {func}"))),
    }
}

/// Computes and stores `func` at its placement inside `stmt`.
fn place(
    stmt: Stmt,
    func: &Func,
    plan: &Plan,
    nests: &HashMap<(String, usize), StageNest>,
) -> Result<Stmt, LowerError> {
    let fp = &plan.funcs[&func.name];
    let compute_site = site_var(&fp.compute, nests)?;
    let mut used = false;
    let stmt = at_site(&stmt, compute_site.as_deref(), &mut |body| {
        let computed = compute_here(body, func, nests)?;
        used |= computed.is_some();
        Ok(computed.unwrap_or_else(|| body.clone()))
    })?;
    if !used {
        return Ok(stmt);
    }
    let store_site = site_var(&fp.store, nests)?;
    at_site(&stmt, store_site.as_deref(), &mut |body| {
        store_here(body, func)
    })
}

/// Applies `f` to the body of the loop named `var` (or to `stmt` itself for root).
fn at_site(
    stmt: &Stmt,
    var: Option<&str>,
    f: &mut dyn FnMut(&Stmt) -> Result<Stmt, LowerError>,
) -> Result<Stmt, LowerError> {
    let Some(var) = var else {
        return f(stmt);
    };
    let mut error = None;
    let result = replace_loop_body(stmt, var, &mut |body| match f(body) {
        Ok(s) => s,
        Err(e) => {
            error = Some(e);
            body.clone()
        }
    });
    match error {
        Some(e) => Err(e),
        None => Ok(result),
    }
}

fn replace_loop_body(s: &Stmt, var: &str, f: &mut dyn FnMut(&Stmt) -> Stmt) -> Stmt {
    match s {
        Stmt::For {
            var: v,
            min,
            extent,
            kind,
            body,
        } if v == var => Stmt::For {
            var: v.clone(),
            min: min.clone(),
            extent: extent.clone(),
            kind: *kind,
            body: Box::new(f(body)),
        },
        other => other.map(&mut |e| e.clone(), &mut |c| replace_loop_body(c, var, f)),
    }
}

/// The region of `func` needed by `body`, then `body` preceded by its computation; `None` when
/// `body` does not use `func`. Accesses inside loops that never run (an empty reduction
/// domain such as `r in 0..0`) need nothing (`live_access_bounds`); a function only they read
/// keeps their region but is never computed (its `produce` is under `if (false)`).
fn compute_here(
    body: &Stmt,
    func: &Func,
    nests: &HashMap<(String, usize), StageNest>,
) -> Result<Option<Stmt>, LowerError> {
    let (lets, body) = leading_lets(body);
    let needed = live_access_bounds(body, &func.name);
    let Some(required) = needed.or_else(|| access_bounds(body, &func.name)) else {
        return Ok(None);
    };
    let required = bounded(&func.name, required)?;
    let region = grow_for_updates(func, &required, nests)?;
    let stmt = produce_when_read(body, func, nests);
    Ok(Some(wrap_lets(&lets, with_region(func, &region, stmt))))
}

/// The lets `s` starts with (outermost first) and the statement inside them. At a site, these
/// are the regions of the consumers computed there (and the lets of a split loop's
/// variables): a producer placed inside them states its region in their names, as Halide's
/// `f.s0.x.min`, instead of their values substituted, which grew with every level of a
/// pyramid (each level's region repeated its consumers' whole expressions).
fn leading_lets(s: &Stmt) -> (Vec<(String, Expr)>, &Stmt) {
    let mut lets = Vec::new();
    let mut s = s;
    while let Stmt::Let { name, value, body } = s {
        lets.push((name.clone(), value.clone()));
        s = body;
    }
    (lets, s)
}

/// `stmt` inside `lets` (outermost first).
fn wrap_lets(lets: &[(String, Expr)], stmt: Stmt) -> Stmt {
    lets.iter()
        .rev()
        .fold(stmt, |body, (name, value)| Stmt::Let {
            name: name.clone(),
            value: value.clone(),
            body: Box::new(body),
        })
}

/// `produce func` then `body`; the `produce` under `if (f.needed)` when every site of `body`
/// reading it may run zero times: then the function is computed only when one of them runs.
/// The required region, taken over empty loops, need not be empty (`y + ky` over `y` in
/// `0..=-1` is `0..=1`), and computing it read inputs the empty loops never read: an output
/// of extent 0 or an empty reduction domain made valid calls fail the input checks
/// (`access_sites` reads the guard). The condition is a let, `f.needed`, so that a producer's
/// condition names its consumers' (`g.needed && 0 < g.x.max - g.x.min + 1 ..`) instead of
/// repeating them: written out, each level of a pyramid repeated every level after it.
fn produce_when_read(
    body: &Stmt,
    func: &Func,
    nests: &HashMap<(String, usize), StageNest>,
) -> Stmt {
    let stmt = produce(func, nests);
    let Some(cond) = super::access_sites::run_condition(body, &func.name) else {
        return Stmt::block(vec![stmt, body.clone()]);
    };
    let needed = format!("{}.needed", func.name);
    let guarded = Stmt::If {
        cond: Expr::Var(needed.clone(), crate::ir::Type::BOOL),
        then_case: Box::new(stmt),
        else_case: None,
    };
    Stmt::Let {
        name: needed,
        value: cond,
        body: Box::new(Stmt::block(vec![guarded, body.clone()])),
    }
}

/// `let f.x.min = ..; let f.x.max = ..; ... stmt`: `stmt` with the region of `func` bound.
fn with_region(func: &Func, region: &[Interval], mut stmt: Stmt) -> Stmt {
    for (var, interval) in func.vars.iter().zip(region).rev() {
        let (min, max) = ends(interval);
        stmt = Stmt::Let {
            name: region_max(&func.name, var),
            value: max,
            body: Box::new(stmt),
        };
        stmt = Stmt::Let {
            name: region_min(&func.name, var),
            value: min,
            body: Box::new(stmt),
        };
    }
    stmt
}

fn ends(i: &Interval) -> (Expr, Expr) {
    (
        i.min.clone().unwrap_or(Expr::int(0)),
        i.max.clone().unwrap_or(Expr::int(0)),
    )
}

fn bounded(func: &str, region: Vec<Interval>) -> Result<Vec<Interval>, LowerError> {
    match region.iter().position(|i| !i.is_bounded()) {
        Some(dim) => Err(LowerError::Unbounded {
            func: func.to_string(),
            dim,
        }),
        None => Ok(region),
    }
}

/// The required region grown by what the updates write and read of the function itself
/// (those that can run: an update over an empty constant domain touches nothing).
fn grow_for_updates(
    func: &Func,
    required: &[Interval],
    nests: &HashMap<(String, usize), StageNest>,
) -> Result<Vec<Interval>, LowerError> {
    let updates: Vec<Stmt> = (1..=func.updates.len())
        .filter_map(|s| nests.get(&(func.name.clone(), s)))
        .map(|n| n.stmt.clone())
        .collect();
    if updates.is_empty() {
        return Ok(required.to_vec());
    }
    let stmt = with_region(func, required, Stmt::block(updates));
    let grown = match live_access_bounds(&stmt, &func.name) {
        Some(t) => required.iter().zip(&t).map(|(r, t)| r.union(t)).collect(),
        None => required.to_vec(),
    };
    bounded(&func.name, grown)
}

/// `realize func` over every access of it in `body`, inside the lets `body` starts with (the
/// regions of the functions computed there, so the next producer's region can name them).
/// Its own region's lets are substituted into its box, so that correlated bounds cancel: a
/// region `f.y.min = g.s0.y`, `f.y.max = g.s0.y + 2` is stored in 3 rows.
fn store_here(body: &Stmt, func: &Func) -> Result<Stmt, LowerError> {
    let own = |name: &str| {
        func.vars
            .iter()
            .any(|v| name == region_min(&func.name, v) || name == region_max(&func.name, v))
    };
    let (lets, body) = leading_lets(body);
    let Some(touched) = access_bounds(body, &func.name) else {
        return Ok(wrap_lets(&lets, body.clone()));
    };
    let touched = lets
        .iter()
        .rev()
        .filter(|(name, _)| own(name))
        .fold(Some(touched), |b, (name, value)| {
            map_box(b, &|e| e.substitute(name, value))
        })
        .unwrap_or_default();
    let region = bounded(&func.name, touched)?
        .iter()
        .map(|i| {
            let (min, max) = ends(i);
            Range {
                extent: fold_add(fold_sub(max, min.clone()), Expr::int(1)),
                min,
            }
        })
        .collect();
    let realize = Stmt::Realize {
        func: func.name.clone(),
        dtype: func.dtype,
        region,
        body: Box::new(body.clone()),
    };
    Ok(wrap_lets(&lets, realize))
}
