//! A stage's loops: the dimensions of one definition of a function after its split, fuse,
//! reorder, tile, vectorize, unroll and parallel directives, outermost first, with the steps that
//! relate the new loop variables to the definition's variables.
//!
//! The starting loops are the definition's variables: for a pure definition `f(x, y)` the loops
//! `x, y` (`y` innermost); for an update, its pure variables (those bare in its target) then its
//! reduction variables in declaration order.
//!
//! An update that reads its own function at other points (a scan, an IIR filter) fixes the order
//! of some loops: a loop is independent, free to move, run in parallel or as vectors, only when
//! its iterations touch disjoint elements of the function (see `UpdateFreedom`).

use super::{Directive, StageRef, TailStrategy};
use crate::errors::{Rule, ScheduleError};
pub use crate::limits::{MAX_LANES, MAX_SPLIT_FACTOR};
use crate::ForKind;
use strata_dsl::ir::{Call, CallTarget, Expr, Func, Pipeline, Update, UpdateOp};

/// The largest width (vectorize) or factor (unroll) for a loop of this kind.
pub fn max_lanes(kind: ForKind) -> i64 {
    if kind == ForKind::Unrolled {
        MAX_LANES * 4
    } else {
        MAX_LANES
    }
}

/// One loop of a stage.
#[derive(Clone, Debug, PartialEq)]
pub struct Dim {
    /// The loop's name.
    pub name: String,
    /// How the loop runs: serial, parallel, vectorized, unrolled.
    pub kind: ForKind,
    /// False when the loop runs over (part of) a reduction variable.
    pub pure: bool,
    /// The loop's iterations touch disjoint elements of the function, so it may move across
    /// any loop, run in parallel or as vectors: every loop of a pure definition, and an update's
    /// pure loops over variables in `UpdateFreedom::independent_vars`.
    pub independent: bool,
    /// The loop's extent when the schedule alone fixes it (the inner loop of a split).
    pub const_extent: Option<i64>,
}

/// How new loop variables are made from old ones.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// `old = outer * factor + inner`, `inner` in `0..factor`.
    Split {
        /// The variable split.
        old: String,
        /// The new outer variable.
        outer: String,
        /// The new inner variable.
        inner: String,
        /// The inner variable's extent.
        factor: i64,
        /// What the last partial piece does when `factor` does not divide the extent.
        tail: TailStrategy,
    },
    /// `fused` runs over `outer x inner`: `outer = fused / extent(inner)`, `inner = fused % extent(inner)`.
    Fuse {
        /// The outer variable fused.
        outer: String,
        /// The inner variable fused.
        inner: String,
        /// The new variable over both.
        fused: String,
    },
}

/// A stage's final loops and how they derive from its variables.
#[derive(Clone, Debug, PartialEq)]
pub struct StageLoops {
    /// The function whose stage it is.
    pub func: String,
    /// The stage: 0 the pure definition, `i + 1` update `i`.
    pub stage: usize,
    /// The definition's own variables, outermost first.
    pub original: Vec<Dim>,
    /// The loops after every directive, outermost first.
    pub dims: Vec<Dim>,
    /// The splits and fuses that make `dims` from `original`, in order.
    pub steps: Vec<Step>,
    /// Loops unrolled or vectorized without a factor whose extent the schedule does not fix
    /// (`const_extent` is `None`): lowering requires it constant once bounds are inferred.
    pub deferred: Vec<DeferredExtent>,
    /// The indices in `steps` of splits of the stage's own variables whose factor is known to
    /// divide their extent where this plan runs (a specialization's `E % k == 0`,
    /// `lower::specialize::with_known_multiples`): they need no tail. Empty as validation
    /// makes it.
    pub exact: Vec<usize>,
}

/// A loop `unroll(v)` or `vectorize(v)` (no factor) names whose extent only bounds inference
/// can find: a producer computed inside its consumer has as many rows as the consumer reads
/// (`f: compute_at(g, x).unroll(y)` with `g` reading `f(y - 1 ..= y + 1)` unrolls 3), which
/// validation, before bounds are known, cannot see. `lower::constant_extents` checks it and
/// refuses the directive, as validation would, where the extent is not a constant.
#[derive(Clone, Debug, PartialEq)]
pub struct DeferredExtent {
    /// The loop, as the schedule names it.
    pub var: String,
    /// `Unrolled` or `Vectorized`.
    pub kind: ForKind,
    /// The directive as written, for the error.
    pub directive: String,
}

impl StageLoops {
    /// The final loop named `name`, if there is one.
    pub fn dim(&self, name: &str) -> Option<&Dim> {
        self.dims.iter().find(|d| d.name == name)
    }
}

/// What an update allows a schedule to change about its order of evaluation.
#[derive(Clone, Debug, PartialEq)]
pub struct UpdateFreedom {
    /// The pure variables whose loops carry no dependence: every access of the function in the
    /// update (its target and each read) has the variable bare in its own position, so
    /// iterations at different values of it touch disjoint elements. In an IIR filter
    /// `out(r, x) = .. out(r - 1, x)` that is `x`; `out(r, x) = out(r - 1, 0) + ..` has none.
    /// None either when a function the update calls reads this one (a lifted reduction over
    /// it, computed inside the update's loops, reads elements the update does not name).
    pub independent_vars: Vec<String>,
    /// The combination is associative and commutative: reduction loops may be reordered.
    pub reorderable_reduction: bool,
    /// A reduction loop may be vectorized (Halide's `atomic().vectorize()`): the update folds
    /// into a target that no reduction variable moves (`f(x) += e` or `f(x) = max(f(x), e)`
    /// with `f(x)` first), so lanes can keep partial results combined after the loop. Float
    /// sums are reassociated (within the float tolerance); with NaN among the values a float
    /// `min`/`max` may keep a different one of them.
    pub vectorizable_reduction: bool,
}

/// The starting loops of stage `stage` of `func` (0: pure definition, `i + 1`: update `i`).
pub fn original_dims(
    func: &Func,
    stage: usize,
    freedom: &UpdateFreedom,
    const_rvar_extent: &dyn Fn(&Expr, &Expr) -> Option<i64>,
) -> Vec<Dim> {
    let dim = |name: &str, pure: bool, const_extent| Dim {
        name: name.to_string(),
        kind: ForKind::Serial,
        pure,
        independent: pure && freedom.independent_vars.iter().any(|v| v == name),
        const_extent,
    };
    let Some(update) = stage.checked_sub(1).and_then(|i| func.updates.get(i)) else {
        return func.vars.iter().map(|v| dim(v, true, None)).collect();
    };
    let mut dims: Vec<Dim> = func
        .vars
        .iter()
        .zip(&update.args)
        .filter(|(v, a)| matches!(a, Expr::Var(n) if n == *v))
        .map(|(v, _)| dim(v, true, None))
        .collect();
    dims.extend(
        update
            .rvars
            .iter()
            .map(|r| dim(&r.name, false, const_rvar_extent(&r.lo, &r.hi))),
    );
    dims
}

/// A pure definition's loops are all independent.
fn pure_freedom(func: &Func) -> UpdateFreedom {
    UpdateFreedom {
        independent_vars: func.vars.clone(),
        reorderable_reduction: true,
        vectorizable_reduction: false,
    }
}

/// What the update lets a schedule reorder (see `UpdateFreedom`).
pub fn update_freedom(pipeline: &Pipeline, func: &Func, update: &Update) -> UpdateFreedom {
    let reads = self_reads(func, update);
    let hidden_reads = reads_through_others(pipeline, func, update);
    let reads_target = reads.iter().any(|args| *args == update.args);
    let reads_other = hidden_reads || reads.iter().any(|args| *args != update.args);
    let combines = match update.op {
        UpdateOp::Add | UpdateOp::Sub | UpdateOp::Mul => !reads_target,
        UpdateOp::Assign => is_min_max_fold(func, update),
    };
    let fixed_target = update
        .args
        .iter()
        .all(|a| matches!(a, Expr::Var(n) if func.vars.contains(n)));
    let folds = match update.op {
        UpdateOp::Add | UpdateOp::Mul => !reads_target,
        UpdateOp::Sub => false,
        UpdateOp::Assign => is_min_max_fold(func, update) && target_first(func, update),
    };
    let bare_everywhere = |(position, var): &(usize, &String)| {
        reads
            .iter()
            .all(|args| matches!(args.get(*position), Some(Expr::Var(n)) if n == *var))
    };
    let independent_vars = if hidden_reads {
        Vec::new()
    } else {
        pure_positions(func, update)
            .filter(bare_everywhere)
            .map(|(_, var)| var.clone())
            .collect()
    };
    UpdateFreedom {
        independent_vars,
        reorderable_reduction: !reads_other && combines,
        vectorizable_reduction: !reads_other && fixed_target && folds,
    }
}

/// The update's pure variables with their positions: those bare in their own place in the target.
fn pure_positions<'a>(
    func: &'a Func,
    update: &'a Update,
) -> impl Iterator<Item = (usize, &'a String)> + 'a {
    func.vars
        .iter()
        .zip(&update.args)
        .enumerate()
        .filter(|(_, (v, a))| matches!(a, Expr::Var(n) if n == *v))
        .map(|(position, (v, _))| (position, v))
}

/// The arguments of each call of `func` in the update.
fn self_reads(func: &Func, update: &Update) -> Vec<Vec<Expr>> {
    function_calls(update)
        .into_iter()
        .filter(|call| call.name == func.name)
        .map(|call| call.args)
        .collect()
}

/// Whether a function the update calls reads `func`, directly or through other functions.
fn reads_through_others(pipeline: &Pipeline, func: &Func, update: &Update) -> bool {
    let called = function_calls(update).into_iter().map(|call| call.name);
    callees_read(pipeline, func, called.collect())
}

/// Whether any of the functions `called` (other than `func` itself) reads `func`, directly or
/// through the functions it calls.
pub(super) fn callees_read(pipeline: &Pipeline, func: &Func, called: Vec<String>) -> bool {
    let mut pending: Vec<String> = called.into_iter().filter(|n| *n != func.name).collect();
    let mut seen = vec![func.name.clone()];
    while let Some(name) = pending.pop() {
        if seen.contains(&name) {
            continue;
        }
        let callees = pipeline.func(&name).map(Func::callees).unwrap_or_default();
        if callees.contains(&func.name) {
            return true;
        }
        seen.push(name);
        pending.extend(callees);
    }
    false
}

/// Every call of a function (not an input) in the update: in its value or its target's indices.
fn function_calls(update: &Update) -> Vec<Call> {
    let mut calls = Vec::new();
    for e in update.args.iter().chain([&update.value]) {
        e.for_each(&mut |e| {
            if let Expr::Call(call) = e {
                if call.target == CallTarget::Func {
                    calls.push(call.clone());
                }
            }
        });
    }
    calls
}

/// In `f(args) = max(f(args), e)`, whether `f(args)` is the first argument.
fn target_first(func: &Func, update: &Update) -> bool {
    matches!(&update.value, Expr::Intrinsic(_, args)
        if matches!(args.first(), Some(Expr::Call(c)) if c.name == func.name && c.args == update.args))
}

/// `f(args) = max(f(args), e)` (or `min`) where `e` does not read `f`.
fn is_min_max_fold(func: &Func, update: &Update) -> bool {
    use strata_dsl::ir::Intrinsic;
    let Expr::Intrinsic(Intrinsic::Max | Intrinsic::Min, args) = &update.value else {
        return false;
    };
    let is_target =
        |e: &Expr| matches!(e, Expr::Call(c) if c.name == func.name && c.args == update.args);
    let reads_f = |e: &Expr| {
        let mut found = false;
        e.for_each(&mut |x| found |= matches!(x, Expr::Call(c) if c.name == func.name));
        found
    };
    match args.as_slice() {
        [a, b] => (is_target(a) && !reads_f(b)) || (is_target(b) && !reads_f(a)),
        _ => false,
    }
}

/// Applies a stage's loop directives in order.
pub fn stage_loops(
    pipeline: &Pipeline,
    func: &Func,
    stage: StageRef,
    is_output: bool,
    directives: &[&Directive],
    const_rvar_extent: &dyn Fn(&Expr, &Expr) -> Option<i64>,
) -> Result<StageLoops, ScheduleError> {
    let index = stage.index();
    let freedom = match index.checked_sub(1).and_then(|i| func.updates.get(i)) {
        None => pure_freedom(func),
        Some(update) => update_freedom(pipeline, func, update),
    };
    let original = original_dims(func, index, &freedom, const_rvar_extent);
    let mut builder = Builder {
        func,
        stage,
        is_output,
        freedom,
        loops: StageLoops {
            func: func.name.clone(),
            stage: index,
            original: original.clone(),
            dims: original,
            steps: Vec::new(),
            deferred: Vec::new(),
            exact: Vec::new(),
        },
        consumed: Vec::new(),
    };
    for d in directives.iter().filter(|d| !d.is_placement()) {
        builder.apply(d)?;
        if let Some(rule) = bound_order_violation(func, &builder.loops) {
            return Err(builder.error(d, rule));
        }
    }
    Ok(builder.loops)
}

/// Where a reduction variable's bounds read another variable of the stage (a triangular
/// domain `for (r in 0..N, s in r..N)`, or `k in i + 1..M` over pure `i`), each loop made from
/// it must run inside every loop made from the variables they read: there the bounds are
/// known when the loop starts. The first loop that breaks this, as the rule it breaks.
fn bound_order_violation(func: &Func, loops: &StageLoops) -> Option<Rule> {
    let update = loops
        .stage
        .checked_sub(1)
        .and_then(|u| func.updates.get(u))?;
    let origins = loop_origins(loops);
    for rvar in &update.rvars {
        let mut reads = Vec::new();
        for bound in [&rvar.lo, &rvar.hi] {
            bound.for_each(&mut |e| {
                if let Expr::Var(n) | Expr::RVar(n) = e {
                    reads.push(n.clone());
                }
            });
        }
        for (i, outer) in loops.dims.iter().enumerate() {
            let Some(read) = reads.iter().find(|r| origins[i].contains(r)) else {
                continue;
            };
            let inner = loops.dims[..=i]
                .iter()
                .zip(&origins)
                .find(|(_, o)| o.contains(&rvar.name));
            if let Some((inner, _)) = inner {
                return Some(Rule::BoundReadsInnerLoop {
                    rvar: rvar.name.clone(),
                    reads: read.clone(),
                    inner: inner.name.clone(),
                    outer: outer.name.clone(),
                });
            }
        }
    }
    None
}

/// The definition's variables each loop of `loops.dims` is made from (a fused loop from both).
fn loop_origins(loops: &StageLoops) -> Vec<Vec<String>> {
    let mut origin: std::collections::HashMap<&str, Vec<String>> = loops
        .original
        .iter()
        .map(|d| (d.name.as_str(), vec![d.name.clone()]))
        .collect();
    for step in &loops.steps {
        match step {
            Step::Split {
                old, outer, inner, ..
            } => {
                let from = origin.get(old.as_str()).cloned().unwrap_or_default();
                origin.insert(outer, from.clone());
                origin.insert(inner, from);
            }
            Step::Fuse {
                outer,
                inner,
                fused,
            } => {
                let mut from = origin.get(outer.as_str()).cloned().unwrap_or_default();
                from.extend(origin.get(inner.as_str()).cloned().unwrap_or_default());
                origin.insert(fused, from);
            }
        }
    }
    (loops.dims.iter())
        .map(|d| origin.get(d.name.as_str()).cloned().unwrap_or_default())
        .collect()
}

struct Builder<'a> {
    func: &'a Func,
    stage: StageRef,
    is_output: bool,
    freedom: UpdateFreedom,
    loops: StageLoops,
    /// Loop names that splits and fuses have replaced.
    consumed: Vec<String>,
}

impl Builder<'_> {
    fn error(&self, directive: &Directive, rule: Rule) -> ScheduleError {
        ScheduleError::Directive {
            func: self.func.name.clone(),
            stage: self.stage,
            directive: directive.to_string(),
            rule,
        }
    }

    fn loop_names(&self) -> Vec<String> {
        self.loops.dims.iter().map(|d| d.name.clone()).collect()
    }

    /// The position of loop `var`, or the error saying why it is not a loop.
    fn find(&self, directive: &Directive, var: &str) -> Result<usize, ScheduleError> {
        if let Some(i) = self.loops.dims.iter().position(|d| d.name == var) {
            return Ok(i);
        }
        let rule = if self.consumed.iter().any(|c| c == var) {
            Rule::AlreadyReplaced {
                var: var.to_string(),
                loops: self.loop_names(),
            }
        } else {
            Rule::UnknownVar {
                var: var.to_string(),
                loops: self.loop_names(),
            }
        };
        Err(self.error(directive, rule))
    }

    /// Splitting or fusing a loop that already has a kind would drop the kind silently.
    fn check_serial(&self, directive: &Directive, at: usize) -> Result<(), ScheduleError> {
        let dim = &self.loops.dims[at];
        if dim.kind != ForKind::Serial {
            return Err(self.error(
                directive,
                Rule::KindBeforeSplit {
                    var: dim.name.clone(),
                    kind: dim.kind,
                },
            ));
        }
        Ok(())
    }

    fn check_fresh(
        &self,
        directive: &Directive,
        name: &str,
        allowed_reuse: Option<&str>,
    ) -> Result<(), ScheduleError> {
        let taken = self.loops.dims.iter().any(|d| d.name == name)
            || self.consumed.iter().any(|c| c == name);
        if taken && allowed_reuse != Some(name) {
            return Err(self.error(
                directive,
                Rule::NameInUse {
                    name: name.to_string(),
                },
            ));
        }
        Ok(())
    }

    fn apply(&mut self, d: &Directive) -> Result<(), ScheduleError> {
        match d {
            Directive::Split {
                var,
                outer,
                inner,
                factor,
                tail,
            } => self.split(d, var, outer, inner, *factor, *tail),
            Directive::Fuse {
                outer,
                inner,
                fused,
            } => self.fuse(d, outer, inner, fused),
            Directive::Reorder(vars) => self.reorder(d, vars),
            Directive::Tile {
                y,
                x,
                yo,
                xo,
                yi,
                xi,
                fy,
                fx,
                tail,
            } => {
                self.split(d, y, yo, yi, *fy, *tail)?;
                self.split(d, x, xo, xi, *fx, *tail)?;
                self.reorder(d, &[yo.clone(), xo.clone(), yi.clone(), xi.clone()])
            }
            Directive::Vectorize { var, width } => {
                self.set_kind(d, var, *width, ForKind::Vectorized, ".v")
            }
            Directive::Unroll { var, factor } => {
                self.set_kind(d, var, *factor, ForKind::Unrolled, ".u")
            }
            Directive::Parallel { var } => self.set_kind(d, var, None, ForKind::Parallel, ""),
            _ => Ok(()),
        }
    }

    fn split(
        &mut self,
        d: &Directive,
        var: &str,
        outer: &str,
        inner: &str,
        factor: i64,
        tail: Option<TailStrategy>,
    ) -> Result<(), ScheduleError> {
        let at = self.find(d, var)?;
        self.check_serial(d, at)?;
        if factor <= 0 {
            return Err(self.error(d, Rule::FactorNotPositive { factor }));
        }
        if factor > MAX_SPLIT_FACTOR {
            return Err(self.error(d, Rule::FactorTooLarge { factor }));
        }
        self.check_fresh(d, outer, Some(var))?;
        self.check_fresh(d, inner, None)?;
        if outer == inner {
            return Err(self.error(
                d,
                Rule::NameInUse {
                    name: inner.to_string(),
                },
            ));
        }
        let tail = self.tail_strategy(d, tail)?;
        let old = self.loops.dims[at].clone();
        let inner_extent = Some(factor);
        let outer_extent = old
            .const_extent
            .filter(|e| e % factor == 0)
            .map(|e| e / factor);
        let outer_dim = Dim {
            name: outer.to_string(),
            kind: ForKind::Serial,
            pure: old.pure,
            independent: old.independent,
            const_extent: outer_extent,
        };
        let inner_dim = Dim {
            name: inner.to_string(),
            kind: ForKind::Serial,
            pure: old.pure,
            independent: old.independent,
            const_extent: inner_extent,
        };
        self.loops.dims.splice(at..=at, [outer_dim, inner_dim]);
        if var != outer {
            self.consumed.push(var.to_string());
        }
        self.loops.steps.push(Step::Split {
            old: var.to_string(),
            outer: outer.to_string(),
            inner: inner.to_string(),
            factor,
            tail,
        });
        Ok(())
    }

    /// The tail a split uses: the one asked for if legal here, else the default (shift for a
    /// pure definition, guard for an update).
    fn tail_strategy(
        &self,
        d: &Directive,
        asked: Option<TailStrategy>,
    ) -> Result<TailStrategy, ScheduleError> {
        let is_update = self.stage != StageRef::Pure;
        match asked {
            None if is_update => Ok(TailStrategy::Guard),
            None => Ok(TailStrategy::Shift),
            Some(TailStrategy::Shift) if is_update => Err(self.error(d, Rule::ShiftOnUpdate)),
            Some(TailStrategy::RoundUp) if is_update || self.is_output => Err(self.error(
                d,
                Rule::RoundUpNeedsPadding {
                    is_output: self.is_output && !is_update,
                },
            )),
            Some(t) => Ok(t),
        }
    }

    fn fuse(
        &mut self,
        d: &Directive,
        outer: &str,
        inner: &str,
        fused: &str,
    ) -> Result<(), ScheduleError> {
        let o = self.find(d, outer)?;
        let i = self.find(d, inner)?;
        if i != o + 1 {
            return Err(self.error(
                d,
                Rule::FuseNotAdjacent {
                    loops: self.loop_names(),
                },
            ));
        }
        self.check_serial(d, o)?;
        self.check_serial(d, i)?;
        self.check_fresh(d, fused, None)?;
        let (od, id) = (self.loops.dims[o].clone(), self.loops.dims[i].clone());
        if od.pure != id.pure {
            return Err(self.error(d, Rule::FuseMixesReduction));
        }
        let const_extent = od.const_extent.zip(id.const_extent).map(|(a, b)| a * b);
        let dim = Dim {
            name: fused.to_string(),
            kind: ForKind::Serial,
            pure: od.pure,
            independent: od.independent && id.independent,
            const_extent,
        };
        self.loops.dims.splice(o..=i, [dim]);
        self.consumed.push(outer.to_string());
        self.consumed.push(inner.to_string());
        self.loops.steps.push(Step::Fuse {
            outer: outer.to_string(),
            inner: inner.to_string(),
            fused: fused.to_string(),
        });
        Ok(())
    }

    fn reorder(&mut self, d: &Directive, vars: &[String]) -> Result<(), ScheduleError> {
        let mut positions = Vec::new();
        for (i, var) in vars.iter().enumerate() {
            if vars[..i].contains(var) {
                return Err(self.error(d, Rule::ReorderRepeats { var: var.clone() }));
            }
            positions.push(self.find(d, var)?);
        }
        let mut slots = positions.clone();
        slots.sort_unstable();
        let moved: Vec<Dim> = positions
            .iter()
            .map(|&p| self.loops.dims[p].clone())
            .collect();
        let mut dims = self.loops.dims.clone();
        for (slot, dim) in slots.iter().zip(moved) {
            dims[*slot] = dim;
        }
        self.check_reorder_legal(d, &dims)?;
        self.loops.dims = dims;
        Ok(())
    }

    /// The loops that carry a dependence keep their relative order: reduction loops (unless the
    /// update's combination is associative and commutative) and pure loops that are not
    /// independent. Independent loops touch disjoint elements, so moving them reorders no two
    /// iterations that touch the same element.
    fn check_reorder_legal(&self, d: &Directive, dims: &[Dim]) -> Result<(), ScheduleError> {
        let ordered = |ds: &[Dim]| {
            ds.iter()
                .filter(|x| !x.independent && (x.pure || !self.freedom.reorderable_reduction))
                .map(|x| x.name.clone())
                .collect::<Vec<_>>()
        };
        if ordered(dims) != ordered(&self.loops.dims) {
            return Err(self.error(d, Rule::ReorderChangesReduction));
        }
        Ok(())
    }

    /// Marks a loop vectorized, unrolled or parallel; with a width, splits it first. Without
    /// one, a vectorized or unrolled loop needs a constant extent: one the schedule fixes is
    /// checked here, one only bounds inference can find is left to lowering (`deferred`).
    fn set_kind(
        &mut self,
        d: &Directive,
        var: &str,
        width: Option<i64>,
        kind: ForKind,
        suffix: &str,
    ) -> Result<(), ScheduleError> {
        let mut at = self.find(d, var)?;
        let max = max_lanes(kind);
        if let Some(w) = width {
            if w <= 0 || w > max {
                return Err(self.error(
                    d,
                    Rule::WidthOutOfRange {
                        width: w,
                        max,
                        kind,
                    },
                ));
            }
            let inner = format!("{var}{suffix}");
            self.split(d, var, var, &inner, w, None)?;
            at += 1;
        }
        let dim = self.loops.dims[at].clone();
        if dim.kind != ForKind::Serial {
            return Err(self.error(
                d,
                Rule::LoopKindTwice {
                    var: dim.name.clone(),
                    kind: dim.kind,
                },
            ));
        }
        let needs_constant = matches!(kind, ForKind::Vectorized | ForKind::Unrolled);
        match dim.const_extent {
            Some(e) if needs_constant && e > max => {
                return Err(self.error(
                    d,
                    Rule::WidthOutOfRange {
                        width: e,
                        max,
                        kind,
                    },
                ));
            }
            None if needs_constant => self.loops.deferred.push(DeferredExtent {
                var: dim.name.clone(),
                kind,
                directive: d.to_string(),
            }),
            _ => {}
        }
        let carries = !dim.independent;
        let vector_reduction =
            kind == ForKind::Vectorized && !dim.pure && self.freedom.vectorizable_reduction;
        if carries && !vector_reduction && matches!(kind, ForKind::Vectorized | ForKind::Parallel) {
            return Err(self.error(
                d,
                Rule::CarriesReduction {
                    var: dim.name.clone(),
                    kind,
                },
            ));
        }
        self.loops.dims[at].kind = kind;
        Ok(())
    }
}
