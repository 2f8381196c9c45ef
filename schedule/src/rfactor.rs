//! Factored reductions (`f.update(i): split(k, ko, ki, 8).rfactor(ki, fi)`, Halide's
//! `Func::rfactor`; see `Directive::Rfactor`): the first step of validation. Each `rfactor`
//! adds the intermediate function `fi`, whose update computes partial results of the reduction
//! over the loops that remain, one per value of the factored loop, and turns `f`'s update into
//! the merge, a reduction of `fi` over that loop. The intermediate is then an ordinary function
//! with updates (computed at root unless placed), so its loops can be vectorized or run in
//! parallel over the factored variable, which in `f` carried the reduction.
//!
//! Establishes: no `Rfactor` directive remains in the schedule it returns, whose lines for a
//! factored stage hold only the directives after the `rfactor` (they schedule the merge), and
//! every reduction domain it makes is rectangular, so nothing downstream knows of rfactor.
//!
//! Legal only for an associative and commutative fold into the update's own point:
//! `f(v..) += e`, `-=`, `*=`, `f(v..) = f(v..) + e` (or `*`, or `f(v..) - e`), `f(v..) =
//! max(f(v..), e)` or min, where `e` reads `f` nowhere, not even through another function.
//! Integer sums and products wrap, which is associative, so integers are exact. A float sum or
//! product is reassociated (Halide allows it too): each partial result is a sum of fewer terms,
//! and the error of any order of summing `n` terms is at most about `n * eps * sum(|term|)`,
//! typically `sqrt(n) * eps * sum(|term|)` for terms of random sign: the random schedules'
//! domains (tens of points) and the dot product's hand tests (up to 40961 products of values in
//! [-1, 1)) stay within the tests' 1e-4 tolerance (relative, at least 1 absolute), which the
//! vectorized reductions' partial sums already rely on. Float
//! `min`/`max` are exact (with NaN among the values either may be kept, as vectorized folds do).
//!
//! A split's last partial piece: `k = lo + ko * F + ki` with `ko` over the `(hi - lo) / F` whole
//! pieces only, and the remaining `(hi - lo) mod F` points folded, by the intermediate's second
//! update, into its element at factored index 0. Every domain stays rectangular and the main
//! update needs no guard (where Halide keeps the split's predicate on the domain), so vectorizing
//! the factored loop costs nothing at the tail.
//!
//! Rfactors apply before wrappers (`wrap.rs`), in the order written, each to the pipeline the
//! earlier ones made: a read the intermediate makes is wrapped on the intermediate's line, and
//! an intermediate's update may be factored again on a later line.

use super::wrap::name_owner;
use super::{Directive, Schedule, StageRef, TailStrategy};
use crate::errors::{directive_error, unknown, Rule, ScheduleError};
use crate::lift_reductions::Lifted;
use crate::limits::MAX_SPLIT_FACTOR;
use strata_dsl::ir::{
    is_reserved, Call, CallTarget, Expr, Func, Intrinsic, Pipeline, RVar, Update, UpdateOp,
};
use strata_dsl::{BinOp, Dtype, Value};

/// `lifted` with every intermediate of `schedule` made and each factored update turned into
/// its merge, and `schedule` without the `rfactor` directives and the splits they consume.
pub fn apply_rfactors(
    lifted: &Lifted,
    schedule: &Schedule,
) -> Result<(Lifted, Schedule), ScheduleError> {
    let mut out = lifted.clone();
    let mut schedule = schedule.clone();
    for l in 0..schedule.lines.len() {
        while let Some(at) = (schedule.lines[l].directives.iter())
            .position(|d| matches!(d, Directive::Rfactor { .. }))
        {
            let (func, stage) = (schedule.lines[l].func.clone(), schedule.lines[l].stage);
            let d = schedule.lines[l].directives[at].clone();
            let before = before_in_stage(&schedule, l, at);
            out.pipeline = factor_stage(&out.pipeline, &func, stage, &before, &d)?;
            remove_first(&mut schedule, &func, stage, before.len() + 1);
        }
    }
    Ok((out, schedule))
}

/// Whether `rfactor` can factor `update` of `func` (an associative fold into its own point
/// over a rectangular domain, reading `func` nowhere else): the tuner offers it only there.
pub fn factorable(pipeline: &Pipeline, func: &Func, update: &Update) -> bool {
    Fold::of(pipeline, func, update).is_ok() && check_rectangular(update).is_ok()
}

/// The directives of the stage of line `l` that come before its directive `at`: those on its
/// earlier lines, then those before `at` on line `l`.
fn before_in_stage(schedule: &Schedule, l: usize, at: usize) -> Vec<Directive> {
    let line = &schedule.lines[l];
    let earlier = (schedule.lines[..l].iter())
        .filter(|e| e.func == line.func && e.stage == line.stage)
        .flat_map(|e| e.directives.iter().cloned());
    earlier
        .chain(line.directives[..at].iter().cloned())
        .collect()
}

/// Removes the first `count` directives of a stage, taken along its lines in order.
fn remove_first(schedule: &mut Schedule, func: &str, stage: StageRef, mut count: usize) {
    for line in (schedule.lines.iter_mut()).filter(|l| l.func == func && l.stage == stage) {
        let n = count.min(line.directives.len());
        line.directives.drain(..n);
        count -= n;
    }
}

/// `pipeline` with the update `stage` of `func` factored as `d` asks, `before` being the
/// directives that precede `d` on that stage.
fn factor_stage(
    pipeline: &Pipeline,
    func: &str,
    stage: StageRef,
    before: &[Directive],
    d: &Directive,
) -> Result<Pipeline, ScheduleError> {
    let Directive::Rfactor { var, intermediate } = d else {
        return Ok(pipeline.clone());
    };
    let at = (pipeline.funcs.iter())
        .position(|f| f.name == func)
        .ok_or_else(|| unknown(func, pipeline))?;
    let f = &pipeline.funcs[at];
    let fail = |rule| directive_error(func, stage, d, rule);
    let StageRef::Update(index) = stage else {
        return Err(fail(Rule::RfactorOfPure));
    };
    let update = f.updates.get(index).ok_or(ScheduleError::UnknownStage {
        func: func.to_string(),
        index,
        count: f.updates.len(),
    })?;
    let fold = Fold::of(pipeline, f, update).map_err(fail)?;
    let factored = Factored::of(f, update, before, var).map_err(fail)?;
    check_name(pipeline, intermediate).map_err(fail)?;
    let (partial, merge) = factor(f, update, &fold, &factored, intermediate);
    let mut out = pipeline.clone();
    out.funcs[at].updates[index] = merge;
    out.funcs.insert(at, partial);
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// The fold
// ---------------------------------------------------------------------------------------------

/// How an update combines its target `t` with the value `e` it folds in.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Combine {
    /// `t op= e` (`+=`, `-=`, `*=`); `t = t + e`, `t = e + t`, `t = t * e`, `t = e * t` and
    /// `t = t - e` are read as these (the same values: `+` and `*` commute exactly, floats too),
    /// so the intermediate's and the merge's reduction loops may be reordered and vectorized.
    Compound(UpdateOp),
    /// `t = max(t, e)` or `min`, either order (kept: with a NaN the order picks the result).
    Extreme { op: Intrinsic, target_first: bool },
}

/// An update recognised as an associative and commutative fold: how it combines, and `e`.
struct Fold {
    combine: Combine,
    value: Expr,
}

impl Fold {
    /// The update's fold, or the rule saying why it is not one rfactor can split.
    fn of(pipeline: &Pipeline, func: &Func, update: &Update) -> Result<Fold, Rule> {
        let is_target = |e: &Expr| {
            matches!(e, Expr::Call(c) if c.target == CallTarget::Func && c.name == func.name
                && c.args == update.args)
        };
        let own_point =
            (func.vars.iter().zip(&update.args)).all(|(v, a)| matches!(a, Expr::Var(n) if n == v));
        if !own_point {
            return Err(Rule::RfactorTarget);
        }
        let compound = |op: &BinOp| match op {
            BinOp::Add => UpdateOp::Add,
            BinOp::Mul => UpdateOp::Mul,
            _ => UpdateOp::Sub,
        };
        let (combine, value) = match (&update.op, &update.value) {
            (UpdateOp::Assign, Expr::Binary(op @ (BinOp::Add | BinOp::Mul | BinOp::Sub), a, b))
                if is_target(a) =>
            {
                (Combine::Compound(compound(op)), (**b).clone())
            }
            (UpdateOp::Assign, Expr::Binary(op @ (BinOp::Add | BinOp::Mul), a, b))
                if is_target(b) =>
            {
                (Combine::Compound(compound(op)), (**a).clone())
            }
            (UpdateOp::Assign, Expr::Intrinsic(op @ (Intrinsic::Max | Intrinsic::Min), args)) => {
                match args.as_slice() {
                    [a, b] if is_target(a) || is_target(b) => {
                        let target_first = is_target(a);
                        let combine = Combine::Extreme {
                            op: *op,
                            target_first,
                        };
                        (combine, if target_first { b.clone() } else { a.clone() })
                    }
                    _ => return Err(not_a_fold(func, update)),
                }
            }
            (UpdateOp::Assign, _) => return Err(not_a_fold(func, update)),
            (op, value) => (Combine::Compound(*op), value.clone()),
        };
        if reads(&value, &func.name) {
            return Err(not_a_fold(func, update));
        }
        if reads_through_others(pipeline, func, &value) {
            return Err(Rule::RfactorScan);
        }
        Ok(Fold { combine, value })
    }

    /// The value the intermediate starts from: the fold's identity.
    fn identity(&self, dtype: Dtype) -> Value {
        match self.combine {
            Combine::Compound(UpdateOp::Mul) => Value::I64(1).cast(dtype),
            Combine::Extreme {
                op: Intrinsic::Max, ..
            } => Value::lowest(dtype),
            Combine::Extreme { .. } => Value::highest(dtype),
            _ => Value::zero(dtype),
        }
    }

    /// The update folding `value` into `target` with `combine` (its `op` and value).
    fn apply(combine: Combine, target: &Call, value: Expr) -> (UpdateOp, Expr) {
        let t = Expr::Call(target.clone());
        match combine {
            Combine::Compound(op) => (op, value),
            Combine::Extreme { op, target_first } => {
                let args = if target_first {
                    vec![t, value]
                } else {
                    vec![value, t]
                };
                (UpdateOp::Assign, Expr::Intrinsic(op, args))
            }
        }
    }

    /// The intermediate's update, folding `value` into its `target`: the fold itself, except
    /// that a difference sums its terms (`fi += e`, an add the intermediate's reduction loops
    /// may vectorize) and the merge subtracts the sums.
    fn partial(&self, target: &Call, value: Expr) -> (UpdateOp, Expr) {
        let combine = match self.combine {
            Combine::Compound(UpdateOp::Sub) => Combine::Compound(UpdateOp::Add),
            other => other,
        };
        Fold::apply(combine, target, value)
    }

    /// The merge: the fold itself, of a partial result into `target`.
    fn merge(&self, target: &Call, partial: Expr) -> (UpdateOp, Expr) {
        Fold::apply(self.combine, target, partial)
    }
}

/// An update that reads its own function other than as the fold's accumulator (a scan, or
/// `f(x) = f(x) * 2 + e`) is refused; the rule says which.
fn not_a_fold(func: &Func, update: &Update) -> Rule {
    let mut other_point = false;
    update.value.for_each(&mut |e| {
        other_point |= matches!(e, Expr::Call(c) if c.target == CallTarget::Func
            && c.name == func.name && c.args != update.args)
    });
    if other_point {
        Rule::RfactorScan
    } else {
        Rule::RfactorNotAssociative
    }
}

/// Whether `e` calls the function `name`.
fn reads(e: &Expr, name: &str) -> bool {
    let mut found = false;
    e.for_each(&mut |x| {
        found |= matches!(x, Expr::Call(c) if c.target == CallTarget::Func && c.name == name)
    });
    found
}

/// Whether a function `value` calls reads `func`, directly or through others: such a read sees
/// `func` between two steps of the reduction, which factoring would change.
fn reads_through_others(pipeline: &Pipeline, func: &Func, value: &Expr) -> bool {
    let mut called = Vec::new();
    value.for_each(&mut |e| {
        if let Expr::Call(c) = e {
            if c.target == CallTarget::Func {
                called.push(c.name.clone());
            }
        }
    });
    super::loops::callees_read(pipeline, func, called)
}

// ---------------------------------------------------------------------------------------------
// The factored variable
// ---------------------------------------------------------------------------------------------

/// Which loop becomes the intermediate's pure variable.
enum Part {
    /// A reduction variable as declared: `fi(v.., r)` reduces over the other variables.
    Whole,
    /// The inner loop of `split(r, outer, inner, factor)`: `fi(v.., inner)` reduces over the
    /// whole pieces `outer`.
    Inner { outer: String, factor: i64 },
    /// Its outer loop: `fi(v.., outer)` reduces one piece over `inner`.
    Outer { inner: String, factor: i64 },
}

/// The factored variable: which reduction variable of the update, which part of it, and the
/// name the intermediate gives it.
struct Factored {
    /// The position of the reduction variable among the update's.
    rvar: usize,
    part: Part,
    name: String,
}

impl Factored {
    /// Reads `var` against the update's reduction variables and the directives before the
    /// `rfactor`, of which only the split of the factored variable may come first.
    fn of(func: &Func, update: &Update, before: &[Directive], var: &str) -> Result<Self, Rule> {
        let rvars: Vec<String> = update.rvars.iter().map(|r| r.name.clone()).collect();
        let not_reduction = |loops: Vec<String>| Rule::RfactorNotReduction {
            var: var.to_string(),
            loops,
        };
        let position = |name: &str| rvars.iter().position(|r| r == name);
        let (rvar, part) = match before {
            [] => (
                position(var).ok_or_else(|| not_reduction(rvars.clone()))?,
                Part::Whole,
            ),
            [split @ Directive::Split {
                var: old,
                outer,
                inner,
                factor,
                tail,
            }] => {
                let Some(rvar) = position(old) else {
                    return Err(Rule::RfactorAfterDirective {
                        first: split.to_string(),
                    });
                };
                check_split(*factor, *tail)?;
                let part = if var == inner {
                    Part::Inner {
                        outer: outer.clone(),
                        factor: *factor,
                    }
                } else if var == outer {
                    Part::Outer {
                        inner: inner.clone(),
                        factor: *factor,
                    }
                } else {
                    let mut loops = rvars.clone();
                    loops.splice(rvar..=rvar, [outer.clone(), inner.clone()]);
                    return Err(not_reduction(loops));
                };
                (rvar, part)
            }
            [first, ..] => {
                return Err(Rule::RfactorAfterDirective {
                    first: first.to_string(),
                })
            }
        };
        let factored = Factored {
            rvar,
            part,
            name: var.to_string(),
        };
        factored.check_names(func, update)?;
        check_rectangular(update)?;
        Ok(factored)
    }

    /// The split's other loop, which stays a reduction variable of the intermediate.
    fn other(&self) -> Option<&str> {
        match &self.part {
            Part::Whole => None,
            Part::Inner { outer, .. } => Some(outer),
            Part::Outer { inner, .. } => Some(inner),
        }
    }

    /// The intermediate's variables (the function's, then the factored one) and its reduction
    /// variables must all differ.
    fn check_names(&self, func: &Func, update: &Update) -> Result<(), Rule> {
        let others = (update.rvars.iter().enumerate())
            .filter(|(i, _)| *i != self.rvar)
            .map(|(_, r)| r.name.as_str());
        let mut taken: Vec<&str> = func.vars.iter().map(String::as_str).chain(others).collect();
        for name in std::iter::once(self.name.as_str()).chain(self.other()) {
            if taken.contains(&name) {
                return Err(Rule::NameInUse {
                    name: name.to_string(),
                });
            }
            taken.push(name);
        }
        Ok(())
    }
}

/// The split before an `rfactor` follows a split's rules on an update: a positive factor of at
/// most `MAX_SPLIT_FACTOR`, no `shift` or `round_up` tail.
fn check_split(factor: i64, tail: Option<TailStrategy>) -> Result<(), Rule> {
    if factor <= 0 {
        return Err(Rule::FactorNotPositive { factor });
    }
    if factor > MAX_SPLIT_FACTOR {
        return Err(Rule::FactorTooLarge { factor });
    }
    match tail {
        Some(TailStrategy::Shift) => Err(Rule::ShiftOnUpdate),
        Some(TailStrategy::RoundUp) => Err(Rule::RoundUpNeedsPadding { is_output: false }),
        _ => Ok(()),
    }
}

/// Each reduction variable's bounds read no variable: with one that depends on another (a
/// triangular domain), the factored variable's range would not be one box.
fn check_rectangular(update: &Update) -> Result<(), Rule> {
    for r in &update.rvars {
        let mut reads_var = false;
        for e in [&r.lo, &r.hi] {
            e.for_each(&mut |x| reads_var |= matches!(x, Expr::Var(_) | Expr::RVar(_)));
        }
        if reads_var {
            return Err(Rule::RfactorNonRectangular {
                var: r.name.clone(),
            });
        }
    }
    Ok(())
}

/// The intermediate's name is a fresh plain name, as a wrapper's is.
fn check_name(pipeline: &Pipeline, name: &str) -> Result<(), Rule> {
    let plain = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !plain || is_reserved(name) {
        return Err(Rule::WrapperNameInvalid {
            name: name.to_string(),
        });
    }
    match name_owner(pipeline, name) {
        Some(by) => Err(Rule::RfactorNameTaken {
            name: name.to_string(),
            by,
        }),
        None => Ok(()),
    }
}

// ---------------------------------------------------------------------------------------------
// The rewrite
// ---------------------------------------------------------------------------------------------

/// The intermediate `fi` and the update of `func` that merges it.
fn factor(
    func: &Func,
    update: &Update,
    fold: &Fold,
    factored: &Factored,
    name: &str,
) -> (Func, Update) {
    let r = &update.rvars[factored.rvar];
    let (lo, hi) = (r.lo.clone(), r.hi.clone());
    let mut vars = func.vars.clone();
    vars.push(factored.name.clone());
    let at = |index: Expr| Call {
        target: CallTarget::Func,
        name: name.to_string(),
        args: (func.vars.iter().map(|v| Expr::Var(v.clone())))
            .chain([index])
            .collect(),
        dtype: func.dtype,
    };
    let with_rvar = |rvar: Option<RVar>| -> Vec<RVar> {
        let mut rvars = update.rvars.clone();
        match rvar {
            Some(rvar) => rvars[factored.rvar] = rvar,
            None => {
                rvars.remove(factored.rvar);
            }
        }
        rvars
    };
    let fold_at = |target: Call, rvars: Vec<RVar>, k: Expr, guard: Option<Expr>| {
        let value = substitute(&fold.value, &r.name, &k);
        let predicate = (update.predicate.as_ref()).map(|p| substitute(p, &r.name, &k));
        let predicate = match (guard, predicate) {
            (Some(g), Some(p)) => Some(Expr::binary(BinOp::And, g, p)),
            (g, p) => g.or(p),
        };
        let (op, value) = fold.partial(&target, value);
        Update {
            rvars,
            predicate,
            args: target.args.clone(),
            op,
            value,
        }
    };
    let me = Expr::Var(factored.name.clone());
    let (main, merged_range, tail) = match &factored.part {
        Part::Whole => {
            let main = fold_at(at(me.clone()), with_rvar(None), me, None);
            (main, (lo, hi), None)
        }
        Part::Inner { outer, factor } => {
            let pieces = whole_pieces(&lo, &hi, *factor);
            let ko = rvar(outer, int(0), pieces.clone());
            let k = piece_point(&lo, Expr::RVar(outer.clone()), *factor, me.clone());
            let main = fold_at(at(me), with_rvar(Some(ko)), k, None);
            let tail = tail_rvar(&r.name, &lo, &hi, &pieces, *factor);
            (main, (int(0), int(*factor)), Some(tail))
        }
        Part::Outer { inner, factor } => {
            let pieces = whole_pieces(&lo, &hi, *factor);
            let ki = rvar(inner, int(0), int(*factor));
            let k = piece_point(&lo, me.clone(), *factor, Expr::RVar(inner.clone()));
            // The merge reads at least element 0, where the tail lies; with no whole piece
            // that element has no piece to compute (bounds inference narrows by the guard).
            let guard = match pieces.as_int() {
                Some(p) if p >= 1 => None,
                _ => Some(Expr::binary(BinOp::Lt, me.clone(), pieces.clone())),
            };
            let main = fold_at(at(me), with_rvar(Some(ki)), k, guard);
            // `split(k, k, ki, F).rfactor(k, ..)` gives the variable's name to the pieces.
            let name = if r.name == factored.name {
                inner
            } else {
                &r.name
            };
            let tail = tail_rvar(name, &lo, &hi, &pieces, *factor);
            (main, (int(0), max(pieces, int(1))), Some(tail))
        }
    };
    let mut updates = vec![main];
    if let Some(tail) = tail {
        let k = Expr::RVar(tail.name.clone());
        updates.push(fold_at(at(int(0)), with_rvar(Some(tail)), k, None));
    }
    let partial = Func {
        name: name.to_string(),
        dtype: func.dtype,
        vars,
        value: Expr::Const(fold.identity(func.dtype)),
        updates,
    };
    let target = Call {
        target: CallTarget::Func,
        name: func.name.clone(),
        args: update.args.clone(),
        dtype: func.dtype,
    };
    let (op, value) = fold.merge(&target, Expr::Call(at(Expr::RVar(factored.name.clone()))));
    let merge = Update {
        rvars: vec![rvar(&factored.name, merged_range.0, merged_range.1)],
        predicate: None,
        args: update.args.clone(),
        op,
        value,
    };
    (partial, merge)
}

fn int(n: i64) -> Expr {
    Expr::Const(Value::I32(n as i32))
}

fn rvar(name: &str, lo: Expr, hi: Expr) -> RVar {
    RVar {
        name: name.to_string(),
        lo,
        hi,
    }
}

fn max(a: Expr, b: Expr) -> Expr {
    match (a.as_int(), b.as_int()) {
        (Some(x), Some(y)) => int(x.max(y)),
        _ => Expr::Intrinsic(Intrinsic::Max, vec![a, b]),
    }
}

/// How many whole pieces of `factor` points `lo..hi` holds: `(hi - lo) / factor`, negative
/// when the domain is empty (a piece loop over `0..pieces` then runs no iteration).
fn whole_pieces(lo: &Expr, hi: &Expr, factor: i64) -> Expr {
    match (lo.as_int(), hi.as_int()) {
        (Some(l), Some(h)) => int((h - l).div_euclid(factor)),
        _ => Expr::binary(
            BinOp::Div,
            Expr::binary(BinOp::Sub, hi.clone(), lo.clone()),
            int(factor),
        ),
    }
}

/// `lo + piece * factor + offset`, the point a split names.
fn piece_point(lo: &Expr, piece: Expr, factor: i64, offset: Expr) -> Expr {
    let start = Expr::binary(BinOp::Mul, piece, int(factor));
    let start = if lo.as_int() == Some(0) {
        start
    } else {
        Expr::binary(BinOp::Add, lo.clone(), start)
    };
    Expr::binary(BinOp::Add, start, offset)
}

/// The points past the whole pieces, `lo + max(pieces, 0) * factor .. hi`, under `name`.
fn tail_rvar(name: &str, lo: &Expr, hi: &Expr, pieces: &Expr, factor: i64) -> RVar {
    let start = match (lo.as_int(), max(pieces.clone(), int(0)).as_int()) {
        (Some(l), Some(p)) => int(l + p * factor),
        _ => Expr::binary(
            BinOp::Add,
            lo.clone(),
            Expr::binary(BinOp::Mul, max(pieces.clone(), int(0)), int(factor)),
        ),
    };
    rvar(name, start, hi.clone())
}

/// `e` with the reduction variable `name` replaced by `by`.
fn substitute(e: &Expr, name: &str, by: &Expr) -> Expr {
    match e {
        Expr::RVar(n) if n == name => by.clone(),
        other => other.map_children(&mut |c| substitute(c, name, by)),
    }
}

/// The value of an integer constant expression.
trait AsInt {
    fn as_int(&self) -> Option<i64>;
}

impl AsInt for Expr {
    fn as_int(&self) -> Option<i64> {
        match self {
            Expr::Const(v) if v.dtype() == Dtype::I32 => v.as_i64(),
            _ => None,
        }
    }
}
