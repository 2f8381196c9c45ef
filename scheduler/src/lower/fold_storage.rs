//! Storage folding (Halide's `StorageFolding`): a function stored outside the loop it is
//! computed in keeps, in a dimension, only as many slots as one iteration of that loop touches,
//! element `y` in slot `y mod n` (a circular buffer).
//!
//! Why it is safe: every read of a function lies inside the loop it is computed at
//! (validation's `NotEnclosing`), and each iteration of that loop computes the whole region its
//! body reads before reading it (strata recomputes; it does not slide a window over values an
//! earlier iteration left). So no value outlives its iteration, and when the values one
//! iteration touches in dimension `y` (its writes, its updates' reads and its consumers' reads:
//! `access_bounds` of the loop's body) span at most `n`, no two of them share a slot. Iterations
//! running at once would share slots, so nothing is folded under a parallel loop between the
//! buffer and the computation. With no sliding window the footprint need not move
//! monotonically either: each iteration starts afresh.
//!
//! Which dimensions: those `fold_storage(y, n)` names (refused, with the function, the
//! dimension, the rows needed and the fold given, when `n` is smaller than the footprint bounds
//! inference finds or no constant bound is found, or under a parallel loop), and on its own
//! every other dimension of a function computed in a loop below its storage whose footprint
//! there has a constant bound, to the next power of two at or above it, where that is smaller
//! than the buffer (`y mod 2^k` is a mask). Automatic folding leaves the innermost storage
//! dimension alone: `x mod n` across a vector's lanes is no longer a dense load.
//!
//! ```text
//! bx: store_root().compute_at(out, y)            (blur3x3; automatic, the footprint is 3 rows)
//!
//! realize bx[0, H) x [0, W - 2):                  realize bx[0, 4) x [0, W - 2):
//!   for out.s0.y in [0, H - 2):                     for out.s0.y in [0, H - 2):
//!     for bx.s0.y in [out.s0.y, out.s0.y + 3):  ->    for bx.s0.y in [out.s0.y, out.s0.y + 3):
//!       bx[bx.s0.y, x] = ..                             bx[bx.s0.y % 4, x] = ..
//!     out[y, x] = bx[y, x] + bx[y + 1, x] + ..        out[y, x] = bx[y % 4, x] + bx[(y + 1) % 4, x] + ..
//! ```
//!
//! Establishes: each folded dimension of a `Realize` is `[0, n)`, and every access of the
//! function indexes it `% n` (Euclidean, so negative indices fold too); nothing else changes.

use super::bounds::access_bounds;
use super::LowerError;
use crate::ir::{Expr, ForKind, Range, Stmt};
use crate::schedule::loops::MAX_SPLIT_FACTOR;
use crate::schedule::validate::{Plan, Rule, ScheduleError};
use crate::schedule::StageRef;
use crate::simplify::{bounds, loop_interval, simplify_expr_with_bounds, ConstantInterval, Scope};
use std::collections::HashMap;
use strata_dsl::signature::MAX_EXTENT;
use strata_dsl::{BinOp, Intrinsic, Pipeline};

/// The most nodes `Walk::difference_bound` visits for one dimension of one function.
const DIFFERENCE_BUDGET: u32 = 512;

/// `x + c` or `x - c` for a constant `c`: `x` and `c` (negated for `-`).
fn plus_constant(e: &Expr) -> Option<(&Expr, i64)> {
    match e {
        Expr::Binary(BinOp::Add, x, c) => Some((x, c.as_int()?)),
        Expr::Binary(BinOp::Sub, x, c) => Some((x, c.as_int()?.checked_neg()?)),
        _ => None,
    }
}

/// `min(a, b)` or `max(a, b)`: which, and the operands.
fn min_max(e: &Expr) -> Option<(Intrinsic, &Expr, &Expr)> {
    match e {
        Expr::Intrinsic(f @ (Intrinsic::Min | Intrinsic::Max), args) if args.len() == 2 => {
            Some((*f, &args[0], &args[1]))
        }
        _ => None,
    }
}

/// Folds the storage of `s`'s realized functions (see the module doc). `pipeline` is the one
/// realization built `s` from; `plan` holds the `fold_storage` directives.
pub fn fold_storage(s: &Stmt, pipeline: &Pipeline, plan: &Plan) -> Result<Stmt, LowerError> {
    let mut walk = Walk {
        scope: Scope::new(),
        loops: Vec::new(),
        realized: HashMap::new(),
        sites: HashMap::new(),
    };
    for size in pipeline.size_vars() {
        walk.scope
            .push(&size, Some(ConstantInterval::new(0, MAX_EXTENT)));
    }
    walk.visit(s);
    let folds = decide(&walk.sites, plan)?;
    if folds.is_empty() {
        return Ok(s.clone());
    }
    Ok(rewrite(s, &folds))
}

/// Per function, the folded dimensions (positions among its variables) and their slots.
type Folds = HashMap<String, Vec<(usize, i64)>>;

/// What the walk learns about a realized function where it is computed.
struct Site {
    /// Per dimension, a constant bound on how many values one iteration of the loop it is
    /// computed in touches (the whole buffer's bound when it is computed where it is stored);
    /// `None` where bounds inference finds none.
    footprint: Vec<Option<i64>>,
    /// Per dimension, a constant bound on the buffer's extent, where there is one.
    stored: Vec<Option<i64>>,
    /// A parallel loop between the buffer and the computation, by its variable.
    parallel: Option<String>,
    /// Whether a loop lies between the buffer and the computation (else folding gains nothing).
    below_storage: bool,
}

impl Site {
    /// A function computed at several sites (the copies `specialize` makes) is folded alike
    /// at all of them, so what holds for both: the larger bounds, any parallel loop.
    fn merge(self, other: Site) -> Site {
        let larger = |a: Vec<Option<i64>>, b: Vec<Option<i64>>| -> Vec<Option<i64>> {
            let both = a.into_iter().zip(b);
            both.map(|(a, b)| a.zip(b).map(|(a, b)| a.max(b))).collect()
        };
        Site {
            footprint: larger(self.footprint, other.footprint),
            stored: larger(self.stored, other.stored),
            parallel: self.parallel.or(other.parallel),
            below_storage: self.below_storage && other.below_storage,
        }
    }
}

/// A walk over the statement keeping the simplifier's view of the scope (loop intervals, let
/// values), as `constant_extents` does, so correlated bounds cancel.
struct Walk<'a> {
    scope: Scope,
    /// The enclosing loops, outermost first: variable, kind and body.
    loops: Vec<(&'a str, ForKind, &'a Stmt)>,
    /// Per realized function: how many loops enclose its `Realize`, and its extents' bounds.
    realized: HashMap<&'a str, (usize, Vec<Option<i64>>)>,
    sites: HashMap<String, Site>,
}

impl<'a> Walk<'a> {
    fn visit(&mut self, s: &'a Stmt) {
        match s {
            Stmt::For {
                var,
                min,
                extent,
                kind,
                body,
            } => {
                let min = simplify_expr_with_bounds(min, &self.scope);
                let extent = simplify_expr_with_bounds(extent, &self.scope);
                let interval = loop_interval(&min, &extent, &self.scope);
                self.scope.push(var, interval);
                self.loops.push((var, *kind, body));
                self.visit(body);
                self.loops.pop();
                self.scope.pop();
            }
            Stmt::Let { name, value, body } => {
                let value = simplify_expr_with_bounds(value, &self.scope);
                self.scope
                    .push_let(name, bounds(&value, &self.scope), &value);
                self.visit(body);
                self.scope.pop();
            }
            Stmt::Realize {
                func, region, body, ..
            } => {
                let stored = region.iter().map(|r| self.bound(&r.extent)).collect();
                self.realized.insert(func, (self.loops.len(), stored));
                self.visit(body);
            }
            Stmt::Produce { func, body } => {
                self.site(func);
                self.visit(body);
            }
            other => {
                for child in other.children() {
                    self.visit(child);
                }
            }
        }
    }

    /// Records the site of `func`, computed here: the loops between its buffer and this point
    /// (the innermost is the loop it is computed in), and what one iteration touches.
    fn site(&mut self, func: &str) {
        let Some((depth, stored)) = self.realized.get(func) else {
            return; // the output: the caller's buffer
        };
        let between = &self.loops[(*depth).min(self.loops.len())..];
        let parallel = (between.iter())
            .find(|(_, kind, _)| *kind == ForKind::Parallel)
            .map(|(var, ..)| var.to_string());
        let footprint = match between.last() {
            None => stored.clone(),
            Some((_, _, body)) => match access_bounds(body, func) {
                Some(region) => (region.iter())
                    .map(|i| {
                        let (min, max) = (i.min.as_ref()?, i.max.as_ref()?);
                        let mut budget = DIFFERENCE_BUDGET;
                        let span = self.difference_bound(max, min, &mut budget)?;
                        let extent = span.checked_add(1)?;
                        (extent <= MAX_SPLIT_FACTOR).then_some(extent.max(0))
                    })
                    .collect(),
                None => vec![None; stored.len()],
            },
        };
        let site = Site {
            footprint,
            stored: stored.clone(),
            parallel,
            below_storage: !between.is_empty(),
        };
        let merged = match self.sites.remove(func) {
            Some(other) => site.merge(other),
            None => site,
        };
        self.sites.insert(func.to_string(), merged);
    }

    /// A constant upper bound on `a - b` here. The ends of a region are `min`/`max` trees over
    /// related terms (a shifted tail: `max(min(t, y.max - 3), y.min)` and
    /// `min(max(min(t + 3, y.max), y.min) + 2, y.max + 2)`), whose difference intervals cannot
    /// bound and the simplifier does not cancel; so the difference is bounded through the
    /// trees: `min(a1, a2) - min(b1, b2) <= max(a1 - b1, a2 - b2)` (likewise `max`),
    /// `min(a1, a2) - b <= a1 - b`, `a - max(b1, b2) <= a - b1`, `max(a1, a2) - b <=
    /// max(a1 - b, a2 - b)`, constants moved out, and at the leaves the simplifier and
    /// intervals. `budget` caps the nodes visited.
    fn difference_bound(&self, a: &Expr, b: &Expr, budget: &mut u32) -> Option<i64> {
        if *budget == 0 {
            return None;
        }
        *budget -= 1;
        let leaf = simplify_expr_with_bounds(&Expr::sub(a.clone(), b.clone()), &self.scope);
        if let Some(exact) = leaf.as_int() {
            return Some(exact);
        }
        if let Some((x, c)) = plus_constant(a) {
            return self.difference_bound(x, b, budget)?.checked_add(c);
        }
        if let Some((x, c)) = plus_constant(b) {
            return self.difference_bound(a, x, budget)?.checked_sub(c);
        }
        // Intervals give a bound of any difference, often loose (each side over its range).
        let mut best = bounds(&leaf, &self.scope)
            .map(|i| i.hi)
            .filter(|&hi| hi <= MAX_SPLIT_FACTOR);
        let mut consider = |bound: Option<i64>| {
            if let Some(v) = bound {
                best = Some(best.map_or(v, |b| b.min(v)));
            }
        };
        let (ma, mb) = (min_max(a), min_max(b));
        if let (Some((fa, a1, a2)), Some((fb, b1, b2))) = (ma, mb) {
            if fa == fb {
                let first = self.difference_bound(a1, b1, budget);
                consider(
                    first
                        .zip(self.difference_bound(a2, b2, budget))
                        .map(|(p, q)| p.max(q)),
                );
            }
        }
        match ma {
            Some((Intrinsic::Min, a1, a2)) => {
                consider(self.difference_bound(a1, b, budget));
                consider(self.difference_bound(a2, b, budget));
            }
            Some((_, a1, a2)) => {
                let first = self.difference_bound(a1, b, budget);
                consider(
                    first
                        .zip(self.difference_bound(a2, b, budget))
                        .map(|(p, q)| p.max(q)),
                );
            }
            None => {}
        }
        match mb {
            Some((Intrinsic::Max, b1, b2)) => {
                consider(self.difference_bound(a, b1, budget));
                consider(self.difference_bound(a, b2, budget));
            }
            Some((_, b1, b2)) => {
                let first = self.difference_bound(a, b1, budget);
                consider(
                    first
                        .zip(self.difference_bound(a, b2, budget))
                        .map(|(p, q)| p.max(q)),
                );
            }
            None => {}
        }
        best
    }

    /// A constant upper bound on `extent` here, within the factors validation allows (beyond
    /// them index arithmetic could leave `i32`); at least 0.
    fn bound(&self, extent: &Expr) -> Option<i64> {
        let simple = simplify_expr_with_bounds(extent, &self.scope);
        let hi = bounds(&simple, &self.scope)?.hi;
        (hi <= MAX_SPLIT_FACTOR).then_some(hi.max(0))
    }
}

/// The folds of every function: those its schedule asks for, checked against its site, and
/// the automatic ones.
fn decide(sites: &HashMap<String, Site>, plan: &Plan) -> Result<Folds, LowerError> {
    let mut folds = Folds::new();
    for (name, site) in sites {
        let Some(fp) = plan.funcs.get(name) else {
            continue;
        };
        let mut chosen = Vec::new();
        for fold in &fp.folds {
            let fail = |rule| {
                LowerError::Schedule(ScheduleError::Directive {
                    func: name.clone(),
                    stage: StageRef::Pure,
                    directive: fold.directive.clone(),
                    rule,
                })
            };
            let var = plan
                .pipeline()
                .func(name)
                .and_then(|f| f.vars.get(fold.dim).cloned())
                .unwrap_or_default();
            if let Some(parallel) = &site.parallel {
                return Err(fail(Rule::FoldUnderParallel {
                    var,
                    parallel: parallel.clone(),
                }));
            }
            let needed = (site.footprint.get(fold.dim).copied().flatten())
                .ok_or_else(|| fail(Rule::FoldNotProvable { var: var.clone() }))?;
            if fold.extent < needed {
                return Err(fail(Rule::FoldTooSmall {
                    var,
                    needed,
                    given: fold.extent,
                }));
            }
            chosen.push((fold.dim, fold.extent));
        }
        if site.parallel.is_none() && site.below_storage {
            let contiguous = fp.storage_order.last().copied();
            for (dim, footprint) in site.footprint.iter().enumerate() {
                let explicit = fp.folds.iter().any(|f| f.dim == dim);
                if explicit || Some(dim) == contiguous {
                    continue;
                }
                let Some(footprint) = *footprint else {
                    continue;
                };
                let slots = (footprint.max(1) as u64).next_power_of_two() as i64;
                let smaller = site
                    .stored
                    .get(dim)
                    .copied()
                    .flatten()
                    .is_none_or(|s| s > slots);
                if slots <= MAX_SPLIT_FACTOR && smaller {
                    chosen.push((dim, slots));
                }
            }
        }
        if !chosen.is_empty() {
            folds.insert(name.clone(), chosen);
        }
    }
    Ok(folds)
}

/// `s` with each folded dimension's realization `[0, n)` and its accesses taken `% n`.
fn rewrite(s: &Stmt, folds: &Folds) -> Stmt {
    match s {
        Stmt::Realize {
            func,
            dtype,
            region,
            body,
        } => {
            let mut region: Vec<Range> = region.iter().map(|r| map_range(r, folds)).collect();
            for &(dim, slots) in folds.get(func).into_iter().flatten() {
                if let Some(r) = region.get_mut(dim) {
                    *r = Range {
                        min: Expr::int(0),
                        extent: Expr::int(slots as i32),
                    };
                }
            }
            Stmt::Realize {
                func: func.clone(),
                dtype: *dtype,
                region,
                body: Box::new(rewrite(body, folds)),
            }
        }
        Stmt::Provide { func, args, value } => Stmt::Provide {
            func: func.clone(),
            args: fold_args(func, args, folds),
            value: rewrite_expr(value, folds),
        },
        other => other.map(&mut |e| rewrite_expr(e, folds), &mut |c| rewrite(c, folds)),
    }
}

fn map_range(r: &Range, folds: &Folds) -> Range {
    Range {
        min: rewrite_expr(&r.min, folds),
        extent: rewrite_expr(&r.extent, folds),
    }
}

fn rewrite_expr(e: &Expr, folds: &Folds) -> Expr {
    match e {
        Expr::Call { func, args, ty } => Expr::Call {
            func: func.clone(),
            args: fold_args(func, args, folds),
            ty: *ty,
        },
        other => other.map_children(&mut |c| rewrite_expr(c, folds)),
    }
}

/// The arguments of an access of `func`, each folded dimension's taken `% n`.
fn fold_args(func: &str, args: &[Expr], folds: &Folds) -> Vec<Expr> {
    let mut args: Vec<Expr> = args.iter().map(|a| rewrite_expr(a, folds)).collect();
    for &(dim, slots) in folds.get(func).into_iter().flatten() {
        if let Some(arg) = args.get_mut(dim) {
            *arg = Expr::binary(BinOp::Mod, arg.clone(), Expr::int(slots as i32));
        }
    }
    args
}
