//! Loop-nest synthesis: turns each stage of a function into a nest of loops as its schedule
//! says, and converts Pipeline expressions into loop IR.
//!
//! A stage of `f` over pure variable `x` loops over `f.x.min ..= f.x.max` (variables
//! bounds inference defines later); a reduction variable over its domain. Splits and fuses
//! become loops over new variables, and, innermost, lets that rebuild the definition's variables
//! (`let f.s0.x = f.x.min + f.s0.xo * 8 + f.s0.xi`) followed by tail guards
//! (`if (f.s0.x <= f.x.max)`) and the `Provide`. Establishes: every stage of a
//! computed function is a loop nest whose free variables are region bounds, sizes and params.
//!
//! A reduction variable whose bounds read other variables of its stage (a triangular domain)
//! gets a loop whose bounds are those expressions, written in the loops around it; validation
//! keeps it inside them. A domain's `where` predicate becomes an `if` around the `Provide`, so
//! the points where it is false compute nothing:
//!
//! ```text
//! for (r in 0..N, s in r..N where r + s < N) f(r, s) += g(s);
//! ==>
//! for (f.s1.r, 0, N) { for (f.s1.s, f.s1.r, N - f.s1.r) {
//!     if (f.s1.r + f.s1.s < N) { f(f.s1.r, f.s1.s) = f(f.s1.r, f.s1.s) + g(f.s1.s) } } }
//! ```
//!
//! With `r` split (`ro`, `ri`), `f.s1.r` is a let inside both loops: the loop of `s` reads its
//! value (`f.r.min + ro * 8 + ri`) directly, and the lets are ordered so each comes after those
//! its value reads.

use crate::ir::{Expr as LExpr, Stmt, Type, UnOp};
use crate::schedule::loops::{StageLoops, Step};
use crate::schedule::TailStrategy;
use std::collections::HashMap;
use strata_dsl::ir::{Boundary, CallTarget, Expr, Extent, Func, InputKind, Intrinsic, Pipeline};
use strata_dsl::{BinOp, Dtype};

/// The variable holding the smallest computed index of dimension `var` of `func`.
pub fn region_min(func: &str, var: &str) -> String {
    format!("{func}.{var}.min")
}

/// The variable holding the largest computed index of dimension `var` of `func`.
pub fn region_max(func: &str, var: &str) -> String {
    format!("{func}.{var}.max")
}

/// `max - min + 1`: the extent of an inclusive range, in the form bounds inference recognises.
pub fn extent_of(min: &LExpr, max: &LExpr) -> LExpr {
    LExpr::add(LExpr::sub(max.clone(), min.clone()), LExpr::int(1))
}

/// The loop variable of a stage's dimension `dim` (before any renaming by splits).
pub fn stage_var(func: &str, stage: usize, dim: &str) -> String {
    format!("{func}.s{stage}.{dim}")
}

/// Converts Pipeline expressions of one stage into loop IR.
pub struct Converter<'a> {
    /// The pipeline the expressions belong to.
    pub pipeline: &'a Pipeline,
    /// The function whose stage is converted.
    pub func: &'a str,
    /// The stage: 0 the pure definition, `i + 1` update `i`.
    pub stage: usize,
}

impl Converter<'_> {
    /// The loop-IR expression computing `e` in this stage (variables become the stage's loop
    /// variables).
    pub fn expr(&self, e: &Expr) -> LExpr {
        match e {
            Expr::Const(v) => LExpr::Const(*v),
            Expr::Var(v) | Expr::RVar(v) => LExpr::var(stage_var(self.func, self.stage, v)),
            Expr::Size(s) => LExpr::var(s.clone()),
            Expr::Param(name, t) => LExpr::Param(name.clone(), *t),
            Expr::Call(call) => {
                let args: Vec<LExpr> = call.args.iter().map(|a| as_index(self.expr(a))).collect();
                match call.target {
                    CallTarget::Func => LExpr::Call {
                        func: call.name.clone(),
                        args,
                        ty: Type::scalar(call.dtype),
                    },
                    CallTarget::Input => self.input_read(&call.name, args, call.dtype),
                }
            }
            Expr::Neg(a) => LExpr::Unary(UnOp::Neg, Box::new(self.expr(a))),
            Expr::Not(a) => LExpr::Unary(UnOp::Not, Box::new(self.expr(a))),
            Expr::Binary(op, a, b) => LExpr::binary(*op, self.expr(a), self.expr(b)),
            Expr::Select(c, t, f) => LExpr::Select(
                Box::new(self.expr(c)),
                Box::new(self.expr(t)),
                Box::new(self.expr(f)),
            ),
            Expr::Cast(t, a) => LExpr::Cast(Type::scalar(*t), Box::new(self.expr(a))),
            Expr::Intrinsic(op, args) => {
                LExpr::Intrinsic(*op, args.iter().map(|a| self.expr(a)).collect())
            }
            // Lifting removed every reduction before lowering.
            Expr::Reduce(_) => LExpr::int(0),
        }
    }

    /// A read of an input, with its boundary condition turned into index arithmetic so the
    /// read itself always stays inside the buffer.
    fn input_read(&self, name: &str, args: Vec<LExpr>, dtype: Dtype) -> LExpr {
        let Some(input) = self.pipeline.input(name) else {
            return LExpr::Call {
                func: name.to_string(),
                args,
                ty: Type::scalar(dtype),
            };
        };
        let InputKind::Buffer { shape, boundary } = &input.kind else {
            return LExpr::Call {
                func: name.to_string(),
                args,
                ty: Type::scalar(dtype),
            };
        };
        let extents: Vec<LExpr> = shape.iter().map(extent_expr).collect();
        let call = |args: Vec<LExpr>| LExpr::Call {
            func: name.to_string(),
            args,
            ty: Type::scalar(dtype),
        };
        let clamped = |args: &[LExpr]| -> Vec<LExpr> {
            args.iter()
                .zip(&extents)
                .map(|(a, e)| {
                    clamp(
                        a.clone(),
                        LExpr::int(0),
                        LExpr::sub(e.clone(), LExpr::int(1)),
                    )
                })
                .collect()
        };
        match boundary {
            None => call(args),
            Some(Boundary::ClampEdge) => call(clamped(&args)),
            Some(Boundary::Constant(v)) => {
                let inside = args
                    .iter()
                    .zip(&extents)
                    .map(|(a, e)| {
                        and(
                            LExpr::le(LExpr::int(0), a.clone()),
                            LExpr::lt(a.clone(), e.clone()),
                        )
                    })
                    .reduce(and)
                    .unwrap_or(LExpr::Const(strata_dsl::Value::Bool(true)));
                LExpr::Select(
                    Box::new(inside),
                    Box::new(call(clamped(&args))),
                    Box::new(LExpr::Const(*v)),
                )
            }
            // A reflected index lies in 0..extent, which bounds inference cannot see through
            // the select: a bounds hint says so.
            Some(Boundary::Mirror) => call(
                args.iter()
                    .zip(&extents)
                    .map(|(a, e)| in_extent(mirror(a, e), e))
                    .collect(),
            ),
            Some(Boundary::MirrorInterior) => call(
                args.iter()
                    .zip(&extents)
                    .map(|(a, e)| in_extent(mirror_interior(a, e), e))
                    .collect(),
            ),
        }
    }
}

/// The loop-IR expression of an input's extent: its size variable or its constant.
pub fn extent_expr(e: &Extent) -> LExpr {
    match e {
        Extent::Size(s) => LExpr::var(s.clone()),
        Extent::Const(c) => LExpr::int(*c as i32),
    }
}

/// Indices are `i32`; narrower or unsigned index types are converted.
fn as_index(e: LExpr) -> LExpr {
    if e.ty() == Type::I32 {
        e
    } else {
        LExpr::Cast(Type::I32, Box::new(e))
    }
}

fn clamp(x: LExpr, lo: LExpr, hi: LExpr) -> LExpr {
    LExpr::Intrinsic(Intrinsic::Clamp, vec![x, lo, hi])
}

fn and(a: LExpr, b: LExpr) -> LExpr {
    LExpr::binary(BinOp::And, a, b)
}

/// `index`, marked as lying in `0 ..= extent - 1`.
fn in_extent(index: LExpr, extent: &LExpr) -> LExpr {
    bounds_hint(
        index,
        LExpr::int(0),
        LExpr::sub(extent.clone(), LExpr::int(1)),
    )
}

/// `.. 1 0 | 0 1 .. n-1 | n-1 n-2 ..`: `m = i mod 2n; m < n ? m : 2n - 1 - m`.
fn mirror(i: &LExpr, n: &LExpr) -> LExpr {
    let period = mirror_period(n);
    let m = LExpr::binary(BinOp::Mod, i.clone(), period.clone());
    let reflected = LExpr::sub(LExpr::sub(period, LExpr::int(1)), m.clone());
    LExpr::Select(
        Box::new(LExpr::lt(m.clone(), n.clone())),
        Box::new(m),
        Box::new(reflected),
    )
}

/// The period of `mirror` over an extent `n`: `2 * n`.
pub fn mirror_period(n: &LExpr) -> LExpr {
    LExpr::mul(LExpr::int(2), n.clone())
}

/// The period of `mirror_interior` over an extent `n`: `max(2 * n - 2, 1)`.
pub fn mirror_interior_period(n: &LExpr) -> LExpr {
    LExpr::max(LExpr::sub(mirror_period(n), LExpr::int(2)), LExpr::int(1))
}

/// `.. 2 1 | 0 1 .. n-1 | n-2 ..`: `p = max(2n - 2, 1); m = i mod p; m < n ? m : p - m`.
fn mirror_interior(i: &LExpr, n: &LExpr) -> LExpr {
    let period = mirror_interior_period(n);
    let m = LExpr::binary(BinOp::Mod, i.clone(), period.clone());
    let reflected = LExpr::sub(period, m.clone());
    LExpr::Select(
        Box::new(LExpr::lt(m.clone(), n.clone())),
        Box::new(m),
        Box::new(reflected),
    )
}

/// How one stage's loops are laid out: the loop variable of every dimension, and each
/// dimension's range.
pub struct StageNest {
    /// Loop variable name of each dimension (final and intermediate) by dimension name.
    pub names: HashMap<String, String>,
    /// The stage's loops around its body (the store of its definition).
    pub stmt: Stmt,
}

/// Builds the loop nest of one stage of `func`.
pub fn stage_nest(pipeline: &Pipeline, func: &Func, loops: &StageLoops) -> StageNest {
    let conv = Converter {
        pipeline,
        func: &func.name,
        stage: loops.stage,
    };
    let mut names: HashMap<String, String> = HashMap::new();
    let mut ranges: HashMap<String, (LExpr, LExpr)> = HashMap::new();
    for dim in &loops.original {
        names.insert(
            dim.name.clone(),
            stage_var(&func.name, loops.stage, &dim.name),
        );
        ranges.insert(
            dim.name.clone(),
            original_range(&conv, func, loops.stage, &dim.name),
        );
    }
    let mut lets: Vec<(String, LExpr)> = Vec::new();
    let mut guards: Vec<LExpr> = Vec::new();
    let original_ranges = ranges.clone();
    let original_names = names.clone();
    for (i, step) in loops.steps.iter().enumerate() {
        let exact = loops.exact.contains(&i);
        apply_step(step, exact, &mut names, &mut ranges, &mut lets, &mut guards);
    }
    let rounds_up = loops.steps.iter().any(|s| {
        matches!(
            s,
            Step::Split {
                tail: TailStrategy::RoundUp,
                ..
            }
        )
    });
    if !rounds_up {
        hint_original_ranges(
            &mut lets,
            &loops.original,
            &original_names,
            &original_ranges,
        );
    }
    let lets = defined_before_use(lets);
    let loop_vars: Vec<String> = loops.dims.iter().map(|d| names[&d.name].clone()).collect();
    // A triangular stage's lets go just inside the innermost loop they read, so the loops of
    // a reduction variable read the variables their bounds use by name, and bounds inference
    // sees `l - k` over `l in k..` as `0..` (both correlated through the let of `k`). Other
    // stages keep every let innermost.
    let depths = if has_dependent_bounds(func, loops.stage) {
        let_depths(&lets, &loop_vars)
    } else {
        vec![loop_vars.len(); lets.len()]
    };
    let mut body = stage_body(&conv, func, loops.stage);
    if let Some(cond) = guards.into_iter().reduce(and) {
        body = Stmt::If {
            cond,
            then_case: Box::new(body),
            else_case: None,
        };
    }
    // A later step defines variables an earlier step's let uses, so later lets go outside.
    let wrap_lets = |body: Stmt, depth: usize| {
        (lets.iter().zip(&depths))
            .filter(|(_, d)| **d == depth)
            .fold(body, |body, ((name, value), _)| Stmt::Let {
                name: name.clone(),
                value: value.clone(),
                body: Box::new(body),
            })
    };
    body = wrap_lets(body, loop_vars.len());
    for (position, dim) in loops.dims.iter().enumerate().rev() {
        let (min, extent) = ranges[&dim.name].clone();
        // Lets not yet defined at this loop are substituted (none, once validated).
        let inner: Vec<(String, LExpr)> = (lets.iter().zip(&depths))
            .filter(|(_, d)| **d > position)
            .map(|(l, _)| l.clone())
            .collect();
        let (min, extent) = (in_loop_vars(&min, &inner), in_loop_vars(&extent, &inner));
        body = Stmt::For {
            var: loop_vars[position].clone(),
            min,
            extent,
            kind: dim.kind,
            body: Box::new(body),
        };
        body = wrap_lets(body, position);
    }
    StageNest { names, stmt: body }
}

/// Whether a reduction variable of stage `stage` of `func` has bounds that read variables.
fn has_dependent_bounds(func: &Func, stage: usize) -> bool {
    let update = stage.checked_sub(1).and_then(|u| func.updates.get(u));
    update.is_some_and(|u| (u.rvars.iter()).any(|r| r.lo.reads_vars() || r.hi.reads_vars()))
}

/// For each let (innermost first, each reading only lets after it), how many of the stage's
/// loops (outermost first) it must be inside: one past the innermost loop it reads, directly
/// or through the lets it reads; 0 when it reads none.
fn let_depths(lets: &[(String, LExpr)], loop_vars: &[String]) -> Vec<usize> {
    let mut depths = vec![0; lets.len()];
    for i in (0..lets.len()).rev() {
        let value = &lets[i].1;
        let from_loops = (loop_vars.iter().enumerate())
            .filter(|(_, v)| value.uses_var(v))
            .map(|(p, _)| p + 1);
        let from_lets = (i + 1..lets.len())
            .filter(|&j| value.uses_var(&lets[j].0))
            .map(|j| depths[j]);
        depths[i] = from_loops.chain(from_lets).max().unwrap_or(0);
    }
    depths
}

/// The lets that rebuild a stage's variables, innermost first, reordered (stably) so that each
/// let is outside every let whose value reads it. Splits and fuses alone already give that
/// order (a later step's let defines what an earlier one reads); a bound of a triangular
/// domain can read a variable an earlier step defines (`s` split, then `r` split, with `s` in
/// `r..N`).
fn defined_before_use(lets: Vec<(String, LExpr)>) -> Vec<(String, LExpr)> {
    let mut remaining: Vec<(String, LExpr)> = lets.into_iter().rev().collect();
    let mut outermost_first = Vec::new();
    while !remaining.is_empty() {
        let reads_another = |i: usize| {
            let value = &remaining[i].1;
            (remaining.iter().enumerate()).any(|(j, (name, _))| j != i && value.uses_var(name))
        };
        let next = (0..remaining.len())
            .find(|&i| !reads_another(i))
            .unwrap_or(0);
        outermost_first.push(remaining.remove(next));
    }
    outermost_first.reverse();
    outermost_first
}

/// A loop bound with the stage's let-defined variables replaced by their values (lets
/// innermost first, each reading only those after it), so it reads only the loops around it.
/// Only a triangular domain's bounds read such variables.
fn in_loop_vars(e: &LExpr, lets: &[(String, LExpr)]) -> LExpr {
    lets.iter().fold(e.clone(), |e, (name, value)| {
        if e.uses_var(name) {
            e.substitute(name, value)
        } else {
            e
        }
    })
}

/// The range of one of a stage's own variables: the function's region for a pure variable,
/// the domain for a reduction variable.
fn original_range(conv: &Converter, func: &Func, stage: usize, dim: &str) -> (LExpr, LExpr) {
    if func.vars.iter().any(|v| v == dim) {
        let (min, max) = (
            LExpr::var(region_min(&func.name, dim)),
            LExpr::var(region_max(&func.name, dim)),
        );
        let extent = extent_of(&min, &max);
        return (min, extent);
    }
    let rvar = stage
        .checked_sub(1)
        .and_then(|u| func.updates.get(u))
        .and_then(|u| u.rvars.iter().find(|r| r.name == dim));
    match rvar {
        // Bounds that read other variables: the extent is written `(hi - 1) - lo + 1`, which
        // bounds inference reads as `lo ..= hi - 1` exactly (`lo` and `hi` read the same
        // variables, which intervals alone would not cancel).
        Some(r) if r.lo.reads_vars() || r.hi.reads_vars() => {
            let lo = conv.expr(&r.lo);
            let last = LExpr::sub(conv.expr(&r.hi), LExpr::int(1));
            (lo.clone(), extent_of(&lo, &last))
        }
        Some(r) => {
            let lo = conv.expr(&r.lo);
            (lo.clone(), LExpr::sub(conv.expr(&r.hi), lo))
        }
        None => (LExpr::int(0), LExpr::int(0)),
    }
}

/// The name of the let that marks a bounds hint (see `bounds_hint`).
pub const BOUNDS_HINT: &str = "bounds.hint";

/// `value`, marked as lying in `lo ..= hi`: `let bounds.hint = value in max(min(bounds.hint, hi), lo)`.
/// The clamp never changes the value (splits and fuses only reorder a range); it lets bounds
/// inference see the range, which arithmetic on the new loop variables hides. Stripped once
/// bounds are inferred (`strip_bounds_hints`).
fn bounds_hint(value: LExpr, lo: LExpr, hi: LExpr) -> LExpr {
    let hint = LExpr::var(BOUNDS_HINT);
    LExpr::Let {
        name: BOUNDS_HINT.to_string(),
        value: Box::new(value),
        body: Box::new(LExpr::max(LExpr::min(hint, hi), lo)),
    }
}

/// Wraps the lets that rebuild a stage's own variables in bounds hints of their ranges.
fn hint_original_ranges(
    lets: &mut [(String, LExpr)],
    original: &[crate::schedule::loops::Dim],
    names: &HashMap<String, String>,
    ranges: &HashMap<String, (LExpr, LExpr)>,
) {
    for dim in original {
        let (Some(var), Some((min, extent))) = (names.get(&dim.name), ranges.get(&dim.name)) else {
            continue;
        };
        for (_, value) in lets.iter_mut().filter(|(n, _)| n == var) {
            *value = bounds_hint(value.clone(), min.clone(), last_index(min, extent));
        }
    }
}

/// Replaces every bounds hint by the value it marks.
pub fn strip_bounds_hints(s: &Stmt) -> Stmt {
    s.map(&mut strip_expr, &mut strip_bounds_hints)
}

fn strip_expr(e: &LExpr) -> LExpr {
    match e {
        LExpr::Let { name, value, .. } if name == BOUNDS_HINT => strip_expr(value),
        other => other.map_children(&mut strip_expr),
    }
}

/// Records the loops a split or fuse creates and the let that rebuilds the old variable(s).
/// `exact`: the split's factor is known to divide the extent (`StageLoops::exact`), so it
/// has no tail to shift or guard.
fn apply_step(
    step: &Step,
    exact: bool,
    names: &mut HashMap<String, String>,
    ranges: &mut HashMap<String, (LExpr, LExpr)>,
    lets: &mut Vec<(String, LExpr)>,
    guards: &mut Vec<LExpr>,
) {
    match step {
        Step::Split {
            old,
            outer,
            inner,
            factor,
            tail,
        } => {
            let old_var = names[old].clone();
            let (min, extent) = ranges[old].clone();
            let f = LExpr::int(*factor as i32);
            let outer_var = if outer == old {
                format!("{old_var}.o")
            } else {
                sibling(&old_var, outer)
            };
            let inner_var = sibling(&old_var, inner);
            let rounded = LExpr::add(extent.clone(), LExpr::int(*factor as i32 - 1));
            let count = LExpr::binary(
                BinOp::Div,
                if exact { extent.clone() } else { rounded },
                f.clone(),
            );
            ranges.insert(outer.clone(), (LExpr::int(0), count));
            ranges.insert(inner.clone(), (LExpr::int(0), f.clone()));
            let start = LExpr::mul(LExpr::var(outer_var.clone()), f.clone());
            let start = match tail {
                TailStrategy::Shift if !exact => LExpr::max(
                    LExpr::min(start, LExpr::sub(extent.clone(), f)),
                    LExpr::int(0),
                ),
                _ => start,
            };
            lets.push((
                old_var.clone(),
                LExpr::add(
                    LExpr::add(min.clone(), start),
                    LExpr::var(inner_var.clone()),
                ),
            ));
            let divides = exact || extent.as_int().is_some_and(|e| e % factor == 0);
            if *tail != TailStrategy::RoundUp && !divides {
                guards.push(LExpr::le(LExpr::var(old_var), last_index(&min, &extent)));
            }
            names.insert(outer.clone(), outer_var);
            names.insert(inner.clone(), inner_var);
        }
        Step::Fuse {
            outer,
            inner,
            fused,
        } => {
            let (outer_var, inner_var) = (names[outer].clone(), names[inner].clone());
            let (omin, oext) = ranges[outer].clone();
            let (imin, iext) = ranges[inner].clone();
            let fused_var = sibling(&outer_var, fused);
            let nonneg = |e: LExpr| LExpr::max(e, LExpr::int(0));
            ranges.insert(
                fused.clone(),
                (
                    LExpr::int(0),
                    LExpr::mul(nonneg(oext.clone()), nonneg(iext.clone())),
                ),
            );
            // The clamps never change a value in the loop's range; they tell bounds inference
            // the range, which it could not derive from a division by a variable.
            let fv = LExpr::var(fused_var.clone());
            let last = |e: LExpr| LExpr::sub(e, LExpr::int(1));
            let outer_offset = clamp(
                LExpr::binary(BinOp::Div, fv.clone(), iext.clone()),
                LExpr::int(0),
                last(oext),
            );
            let inner_offset = clamp(
                LExpr::binary(BinOp::Mod, fv, iext.clone()),
                LExpr::int(0),
                last(iext),
            );
            lets.push((outer_var, LExpr::add(omin, outer_offset)));
            lets.push((inner_var, LExpr::add(imin, inner_offset)));
            names.insert(fused.clone(), fused_var);
        }
    }
}

/// The last index of a range given by its min and extent: `max` itself when the extent is
/// `max - min + 1`, so bounds stay exact.
fn last_index(min: &LExpr, extent: &LExpr) -> LExpr {
    if let LExpr::Binary(BinOp::Add, diff, one) = extent {
        if let (LExpr::Binary(BinOp::Sub, max, m), Some(1)) = (diff.as_ref(), one.as_int()) {
            if m.as_ref() == min {
                return (**max).clone();
            }
        }
    }
    LExpr::sub(LExpr::add(min.clone(), extent.clone()), LExpr::int(1))
}

/// `f.s0.x` with its last component replaced by `name`: the stage's loop variable for `name`.
fn sibling(var: &str, name: &str) -> String {
    match var.find(".s") {
        Some(i) => {
            let stage_end = var[i + 1..].find('.').map_or(var.len(), |j| i + 1 + j);
            format!("{}.{name}", &var[..stage_end])
        }
        None => name.to_string(),
    }
}

/// The `Provide` of one stage; an update of the output whose target is not its own pure
/// variables only writes inside the output.
fn stage_body(conv: &Converter, func: &Func, stage: usize) -> Stmt {
    let Some(update) = stage.checked_sub(1).and_then(|u| func.updates.get(u)) else {
        let args = func
            .vars
            .iter()
            .map(|v| LExpr::var(stage_var(&func.name, 0, v)))
            .collect();
        return Stmt::Provide {
            func: func.name.clone(),
            args,
            value: conv.expr(&func.value),
        };
    };
    let args: Vec<LExpr> = update.args.iter().map(|a| as_index(conv.expr(a))).collect();
    let value = conv.expr(&update.value);
    let value = match update.op.combiner() {
        None => value,
        Some(op) => {
            let old = LExpr::Call {
                func: func.name.clone(),
                args: args.clone(),
                ty: Type::scalar(func.dtype),
            };
            LExpr::binary(op, old, value)
        }
    };
    // No guard keeps an update inside the output: the call refuses sizes where the box the
    // updates touch leaves the output (`LoweredKernel::output_region`), as the reference does;
    // a guard here would clip such writes silently and hide them from that box.
    let provide = Stmt::Provide {
        func: func.name.clone(),
        args,
        value,
    };
    // The domain's predicate skips the point: an `if`, so nothing is computed there.
    match &update.predicate {
        Some(p) => Stmt::If {
            cond: conv.expr(p),
            then_case: Box::new(provide),
            else_case: None,
        },
        None => provide,
    }
}
