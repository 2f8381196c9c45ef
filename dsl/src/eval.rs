//! The reference evaluator: computes a kernel's output straight from its definitions. Slow on
//! purpose and simple on purpose: every function is computed over the whole region its consumers
//! need (found by `bounds`), point by point in row-major order, then its updates run in order,
//! pure variables outside reduction variables. A function no consumer reads a point of (read
//! only by an output of extent 0, or inside an empty reduction domain) is not computed at all.
//! It is the oracle every schedule is checked against.
//!
//! Reads of an input outside its extents follow its boundary condition; without one, such a read
//! is an `EvalError::OutOfBounds`, never undefined. An input with an empty dimension reads as
//! its `constant(v)`; under any other boundary a read of it is `CallError::ReadsEmptyInput`
//! (`clamp_edge` and the mirrors have no edge to repeat), as compiled code's call check says.
//! `select` evaluates only the branch it picks.

pub use crate::args::Args;
use crate::bounds::{bounds, ConstantInterval};
use crate::buffer::Buffer;
use crate::ir::*;
use crate::signature::{check_inside_output, CallError, SizeExpr};
use crate::value::{BinOp, OpError, Value};
use std::collections::{BTreeMap, HashMap};

/// The most elements the evaluator computes for one function.
pub const MAX_REGION_ELEMENTS: u64 = 1 << 26;

/// Why a kernel could not be evaluated on the given arguments.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EvalError {
    /// The arguments do not fit the kernel's signature (the check every executor shares).
    #[error(transparent)]
    Call(#[from] CallError),
    /// A function would be computed over a region too large to hold (an unbounded
    /// data-dependent index).
    #[error("the region of `{func}` needed is too large to compute ({elements} elements, dimension {dim} spans {lo}..={hi}); bound data-dependent indices with clamp()")]
    RegionTooLarge {
        /// The function.
        func: String,
        /// The elements the region holds.
        elements: u64,
        /// A dimension past the limit.
        dim: usize,
        /// The lowest index needed there.
        lo: i64,
        /// The highest index needed there.
        hi: i64,
    },
    /// The memory for a function's values could not be allocated.
    #[error("could not allocate {bytes} bytes for the {elements} values of `{func}` the reference evaluator computes")]
    OutOfMemory {
        /// The function.
        func: String,
        /// The values it holds.
        elements: usize,
        /// The bytes they need.
        bytes: usize,
    },
    /// A read outside an input without a boundary condition.
    #[error("input `{input}` read at {index:?}, outside its shape {shape:?}, and it has no boundary condition")]
    OutOfBounds {
        /// The input.
        input: String,
        /// The index read.
        index: Vec<i64>,
        /// The input's shape.
        shape: Vec<usize>,
    },
    /// A bug in strata (an earlier rung let through what the evaluator cannot compute).
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<OpError> for EvalError {
    fn from(e: OpError) -> EvalError {
        EvalError::Internal(e.to_string())
    }
}

type EResult<T> = Result<T, EvalError>;

/// Computes the output of `pipeline` on `args`. Sizes are read off the input buffers' shapes.
pub fn evaluate(pipeline: &Pipeline, args: &Args) -> EResult<Buffer> {
    evaluate_counting(pipeline, args).map(|(buffer, _)| buffer)
}

/// What evaluating a kernel did, counted as the algorithm states it (every function computed
/// once over the region its consumers need).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Floating-point additions, subtractions, multiplications, divisions and math functions.
    pub float_ops: u64,
}

/// `evaluate`, also counting the floating-point operations the algorithm performs: the flop
/// count that GFLOP/s figures are based on.
pub fn evaluate_counting(pipeline: &Pipeline, args: &Args) -> EResult<(Buffer, Work)> {
    crate::with_big_stack(|| evaluate_here(pipeline, args))
}

fn evaluate_here(pipeline: &Pipeline, args: &Args) -> EResult<(Buffer, Work)> {
    let binding = pipeline.call_signature().bind(args)?;
    let mut evaluator = Evaluator {
        pipeline,
        args,
        sizes: binding.sizes,
        realized: HashMap::new(),
        float_ops: std::cell::Cell::new(0),
        dependent: std::cell::RefCell::new(Vec::new()),
    };
    let extents: Vec<i64> = binding.output_shape.iter().map(|&e| e as i64).collect();
    let regions = evaluator.regions(&extents)?;
    for func in pipeline.topo_order() {
        if let Some(region) = regions.get(&func.name) {
            evaluator.realize(func, region)?;
        }
    }
    let work = Work {
        float_ops: evaluator.float_ops.get(),
    };
    evaluator.output(&extents).map(|b| (b, work))
}

/// A function computed over a box: `values` in row-major order over `region`.
struct Realized {
    region: Vec<ConstantInterval>,
    values: Vec<Value>,
}

impl Realized {
    fn offset(&self, index: &[i64]) -> Option<usize> {
        let mut offset = 0usize;
        for (&i, dim) in index.iter().zip(&self.region) {
            if i < dim.lo || i > dim.hi {
                return None;
            }
            offset = offset * dim.len() as usize + (i - dim.lo) as usize;
        }
        Some(offset)
    }
}

/// Variable bindings in scope: `(name, value)`, innermost last.
type Scope<'a> = Vec<(&'a str, i64)>;

struct Evaluator<'a> {
    pipeline: &'a Pipeline,
    args: &'a Args,
    sizes: BTreeMap<String, i64>,
    realized: HashMap<String, Realized>,
    float_ops: std::cell::Cell<u64>,
    /// The reduction variables in scope whose bounds read other variables (a triangular
    /// domain's), while regions are taken: `index_bounds` follows them exactly.
    dependent: std::cell::RefCell<Vec<&'a RVar>>,
}

impl<'a> Evaluator<'a> {
    /// Counts one floating-point operation producing `v`.
    fn count(&self, v: Value) -> Value {
        if v.dtype().is_float() {
            self.float_ops.set(self.float_ops.get() + 1);
        }
        v
    }

    /// Evaluates an expression of sizes and constants exactly (an error where it would wrap).
    fn size_expr(&self, e: &'a Expr) -> EResult<i64> {
        e.eval_size(&self.sizes).map_err(|reason| {
            EvalError::Call(CallError::SizeExprFailed {
                what: "the reduction domain bound".into(),
                expr: e.to_string(),
                reason,
            })
        })
    }

    /// The interval of a reduction variable's domain, given the intervals of the variables
    /// around it (`env`): exact for bounds of sizes, the hull over `env` for bounds that read
    /// variables (a triangular domain's), empty where a variable they read has no value.
    fn rvar_interval(
        &self,
        rvar: &'a RVar,
        env: &[(String, ConstantInterval)],
    ) -> EResult<ConstantInterval> {
        if !rvar.lo.reads_vars() && !rvar.hi.reads_vars() {
            let lo = self.size_expr(&rvar.lo)?;
            let hi = self.size_expr(&rvar.hi)?;
            return Ok(ConstantInterval::new(lo, hi.saturating_sub(1)));
        }
        let mut unbound = false;
        for bound in [&rvar.lo, &rvar.hi] {
            bound.for_each(&mut |e| {
                if matches!(e, Expr::Var(_) | Expr::RVar(_)) {
                    unbound |= self.interval_of(env, e).is_none_or(|i| i.is_empty());
                }
            });
        }
        if unbound {
            return Ok(ConstantInterval::EMPTY);
        }
        let lookup = |e: &Expr| self.interval_of(env, e);
        let lo = bounds(&rvar.lo, &lookup);
        let hi = bounds(&rvar.hi, &lookup);
        Ok(ConstantInterval::new(lo.lo, hi.hi.saturating_sub(1)))
    }

    /// Adds a domain's reduction variables whose bounds read variables to `dependent`; returns
    /// its length before, to truncate to on leaving the domain.
    fn enter_domain(&self, rvars: &'a [RVar]) -> usize {
        let mut dependent = self.dependent.borrow_mut();
        let outer = dependent.len();
        dependent.extend(
            rvars
                .iter()
                .filter(|r| r.lo.reads_vars() || r.hi.reads_vars()),
        );
        outer
    }

    /// The interval of an index over the variables of `env`. A reduction variable whose bounds
    /// read other variables (`s in r..N`), read affinely, is replaced by the bound that gives
    /// the extreme (innermost first), so correlated terms cancel (`s - r` is `0..N - 1`, where
    /// the hulls of `s` and `r` alone give `-(N - 1)..N - 1`). Where such a variable's range is
    /// empty the substituted value only widens the interval, never narrows it.
    fn index_bounds(&self, e: &Expr, env: &[(String, ConstantInterval)]) -> ConstantInterval {
        let dependent = self.dependent.borrow().clone();
        self.index_bounds_over(e, env, &dependent)
    }

    fn index_bounds_over(
        &self,
        e: &Expr,
        env: &[(String, ConstantInterval)],
        dependent: &[&'a RVar],
    ) -> ConstantInterval {
        let hull = || self.affine_bounds(e, env);
        let Some(at) = (dependent.iter()).rposition(|r| reads_rvar(e, &r.name)) else {
            return hull();
        };
        let s = dependent[at];
        let rest = &dependent[..at];
        let Some(c) = coefficient(e, &s.name).filter(|&c| c != 0) else {
            return hull();
        };
        let last = Expr::binary(BinOp::Sub, s.hi.clone(), Expr::Const(Value::I32(1)));
        let (at_lo, at_last) = (
            substitute_rvar(e, &s.name, &s.lo),
            substitute_rvar(e, &s.name, &last),
        );
        let (at_min, at_max) = if c > 0 {
            (at_lo, at_last)
        } else {
            (at_last, at_lo)
        };
        let exact = ConstantInterval::new(
            self.index_bounds_over(&at_min, env, rest).lo,
            self.index_bounds_over(&at_max, env, rest).hi,
        );
        // Never wider than the hull (an empty range of `s` may give a wider one).
        let hull = hull();
        ConstantInterval::new(exact.lo.max(hull.lo), exact.hi.min(hull.hi))
    }

    /// The interval of `e` over `env`, each variable's terms collected first where `e` is
    /// affine (so `r - r` is `0`), else by intervals alone.
    fn affine_bounds(&self, e: &Expr, env: &[(String, ConstantInterval)]) -> ConstantInterval {
        let hull = || bounds(e, &|x| self.interval_of(env, x));
        let mut terms = Vec::new();
        let mut rest = Vec::new();
        if e.dtype() != crate::dtype::Dtype::I32 || !affine_terms(e, 1, &mut terms, &mut rest) {
            return hull();
        }
        let mut coefficients: Vec<(String, i64)> = Vec::new();
        for (name, c) in terms {
            match coefficients.iter_mut().find(|(n, _)| *n == name) {
                Some((_, total)) => *total = total.saturating_add(c),
                None => coefficients.push((name, c)),
            }
        }
        let (mut lo, mut hi) = (0i64, 0i64);
        let mut add = |i: ConstantInterval, c: i64| {
            let (a, b) = (i.lo.saturating_mul(c), i.hi.saturating_mul(c));
            lo = lo.saturating_add(a.min(b));
            hi = hi.saturating_add(a.max(b));
        };
        for (name, c) in coefficients.into_iter().filter(|(_, c)| *c != 0) {
            match env.iter().rev().find(|(n, _)| *n == name) {
                Some((_, i)) if !i.is_empty() => add(*i, c),
                _ => return hull(),
            }
        }
        for (c, term) in rest {
            add(bounds(term, &|x| self.interval_of(env, x)), c);
        }
        // Past `i32` the index wraps, and only the hull (the type's range) holds.
        if lo < i64::from(i32::MIN) || hi > i64::from(i32::MAX) {
            return hull();
        }
        let hull = hull();
        ConstantInterval::new(lo.max(hull.lo), hi.min(hull.hi))
    }

    /// One bound of a reduction variable at a point: exact for sizes, else in `scope`.
    fn bound_at(&self, e: &'a Expr, scope: &mut Scope<'a>) -> EResult<i64> {
        if e.reads_vars() {
            self.index_value(e, scope)
        } else {
            self.size_expr(e)
        }
    }

    /// Whether the domain's predicate holds at the point in `scope` (no predicate: always).
    fn holds(&self, predicate: Option<&'a Expr>, scope: &mut Scope<'a>) -> EResult<bool> {
        match predicate {
            None => Ok(true),
            Some(p) => Ok(self.eval(p, scope)? == Value::Bool(true)),
        }
    }

    /// The region to compute of every function the output needs, consumers before producers.
    fn regions(&self, extents: &[i64]) -> EResult<HashMap<String, Vec<ConstantInterval>>> {
        let mut required: HashMap<String, Vec<ConstantInterval>> = HashMap::new();
        let out_region = extents
            .iter()
            .map(|&e| ConstantInterval::new(0, e - 1))
            .collect();
        required.insert(self.pipeline.output.name.clone(), out_region);
        let mut regions = HashMap::new();
        for func in self.pipeline.topo_order().into_iter().rev() {
            // A function no consumer reads a point of is not computed (its updates neither):
            // an empty region is never an error, as compiled code computes a producer only
            // when a loop reading it runs.
            let Some(needed) = required.get(&func.name).cloned() else {
                continue;
            };
            if func.name == self.pipeline.output.name {
                self.check_output_updates(func, &needed)?;
            }
            let region = self.region_with_updates(func, needed)?;
            let calls = self.calls_of(func, &region)?;
            let reads_something =
                |(_, b): &(String, Vec<ConstantInterval>)| !b.iter().any(|i| i.is_empty());
            for (callee, boxes) in calls.into_iter().filter(reads_something) {
                let entry = required
                    .entry(callee)
                    .or_insert_with(|| vec![ConstantInterval::EMPTY; boxes.len()]);
                for (dim, b) in entry.iter_mut().zip(boxes) {
                    *dim = dim.union(b);
                }
            }
            regions.insert(func.name.clone(), region);
        }
        Ok(regions)
    }

    /// The output is computed over its extents only: an update touching it elsewhere (reading
    /// `out(r - 1, x)` at `r = 0`) is an error, as it is for compiled code, which checks the box
    /// each update writes and reads of the output (its target and its reads together).
    fn check_output_updates(&self, func: &'a Func, extents: &[ConstantInterval]) -> EResult<()> {
        for update in &func.updates {
            let mut touched = vec![ConstantInterval::EMPTY; extents.len()];
            for boxes in self.update_touches(func, update, extents)? {
                for (dim, b) in touched.iter_mut().zip(boxes) {
                    *dim = dim.union(b);
                }
            }
            for (dim, (e, t)) in extents.iter().zip(&touched).enumerate() {
                check_inside_output(&func.name, dim, t.lo, t.hi, e.len() as usize)?;
            }
        }
        Ok(())
    }

    /// Grows a function's region to hold what its updates write and read of it, then checks it
    /// is small enough to compute.
    fn region_with_updates(
        &self,
        func: &'a Func,
        mut region: Vec<ConstantInterval>,
    ) -> EResult<Vec<ConstantInterval>> {
        for _ in 0..8 {
            let mut grown = region.clone();
            for update in &func.updates {
                for boxes in self.update_touches(func, update, &region)? {
                    for (dim, b) in grown.iter_mut().zip(boxes) {
                        *dim = dim.union(b);
                    }
                }
            }
            if grown == region {
                break;
            }
            region = grown;
        }
        check_region_size(&func.name, &region)?;
        Ok(region)
    }

    /// Boxes of `func` that one update writes (its targets) and reads (calls to `func`).
    fn update_touches(
        &self,
        func: &'a Func,
        update: &'a Update,
        region: &[ConstantInterval],
    ) -> EResult<Vec<Vec<ConstantInterval>>> {
        let mut env = self.update_intervals(func, update, region)?;
        if runs_nothing(func, update, &env) {
            return Ok(Vec::new());
        }
        let outer = self.enter_domain(&update.rvars);
        let target = update
            .args
            .iter()
            .map(|a| self.index_bounds(a, &env))
            .collect();
        let mut touched = vec![target];
        let mut calls = Vec::new();
        let collected = self.collect_calls(&update.value, &mut env, &mut calls);
        self.dependent.borrow_mut().truncate(outer);
        collected?;
        touched.extend(
            calls
                .into_iter()
                .filter(|(n, _)| n == &func.name)
                .map(|(_, b)| b),
        );
        Ok(touched)
    }

    /// Intervals of an update's variables: pure ones over the region, reduction ones over
    /// their domains.
    fn update_intervals(
        &self,
        func: &'a Func,
        update: &'a Update,
        region: &[ConstantInterval],
    ) -> EResult<Vec<(String, ConstantInterval)>> {
        let mut env: Vec<(String, ConstantInterval)> = func
            .vars
            .iter()
            .zip(region)
            .map(|(v, r)| (v.clone(), *r))
            .collect();
        for rvar in &update.rvars {
            let interval = self.rvar_interval(rvar, &env)?;
            env.push((rvar.name.clone(), interval));
        }
        Ok(env)
    }

    fn interval_of(
        &self,
        env: &[(String, ConstantInterval)],
        e: &Expr,
    ) -> Option<ConstantInterval> {
        match e {
            Expr::Var(name) | Expr::RVar(name) => {
                env.iter().rev().find(|(n, _)| n == name).map(|(_, i)| *i)
            }
            Expr::Size(name) => self.sizes.get(name).map(|&v| ConstantInterval::point(v)),
            Expr::Param(name, _) => (self.args.scalars.get(name))
                .and_then(|v| v.as_i64())
                .map(ConstantInterval::point),
            _ => None,
        }
    }

    /// Every call to another function from `func`'s definitions, with the box it reads. Calls
    /// inside loops that run zero times (the pure definition over an empty region, an update
    /// that runs nothing, a reduction over an empty domain) read nothing and are left out.
    fn calls_of(
        &self,
        func: &'a Func,
        region: &[ConstantInterval],
    ) -> EResult<Vec<(String, Vec<ConstantInterval>)>> {
        let mut calls = Vec::new();
        let mut env: Vec<(String, ConstantInterval)> = func
            .vars
            .iter()
            .cloned()
            .zip(region.iter().copied())
            .collect();
        if !region.iter().any(|i| i.is_empty()) {
            self.collect_calls(&func.value, &mut env, &mut calls)?;
        }
        for update in &func.updates {
            let mut env = self.update_intervals(func, update, region)?;
            if runs_nothing(func, update, &env) {
                continue;
            }
            let outer = self.enter_domain(&update.rvars);
            let collected = (update.args.iter().chain([&update.value]))
                .try_for_each(|e| self.collect_calls(e, &mut env, &mut calls));
            self.dependent.borrow_mut().truncate(outer);
            collected?;
        }
        calls.retain(|(name, _)| name != &func.name);
        Ok(calls)
    }

    /// Calls to functions inside `e`, with the box of each, given variable intervals `env`.
    fn collect_calls(
        &self,
        e: &'a Expr,
        env: &mut Vec<(String, ConstantInterval)>,
        out: &mut Vec<(String, Vec<ConstantInterval>)>,
    ) -> EResult<()> {
        match e {
            Expr::Call(call) => {
                if call.target == CallTarget::Func {
                    let b = call
                        .args
                        .iter()
                        .map(|a| self.index_bounds(a, env))
                        .collect();
                    out.push((call.name.clone(), b));
                }
                for arg in &call.args {
                    self.collect_calls(arg, env, out)?;
                }
            }
            Expr::Reduce(r) => {
                let scope = env.len();
                for rvar in &r.rvars {
                    let interval = self.rvar_interval(rvar, env)?;
                    env.push((rvar.name.clone(), interval));
                }
                if !env[scope..].iter().any(|(_, i)| i.is_empty()) {
                    let outer = self.enter_domain(&r.rvars);
                    let collected = self.collect_calls(&r.body, env, out);
                    self.dependent.borrow_mut().truncate(outer);
                    collected?;
                }
                env.truncate(scope);
            }
            Expr::Neg(a) | Expr::Not(a) | Expr::Cast(_, a) => self.collect_calls(a, env, out)?,
            Expr::Binary(_, a, b) => {
                self.collect_calls(a, env, out)?;
                self.collect_calls(b, env, out)?;
            }
            Expr::Select(c, t, f) => {
                for x in [c, t, f] {
                    self.collect_calls(x, env, out)?;
                }
            }
            Expr::Intrinsic(_, args) => {
                for a in args {
                    self.collect_calls(a, env, out)?;
                }
            }
            Expr::Const(_) | Expr::Var(_) | Expr::RVar(_) | Expr::Size(_) | Expr::Param(..) => {}
        }
        Ok(())
    }

    /// Computes `func` over `region`: the pure definition at every point, then each update.
    fn realize(&mut self, func: &'a Func, region: &[ConstantInterval]) -> EResult<()> {
        let extents: Vec<i64> = region.iter().map(|r| r.len() as i64).collect();
        let elements = extents.iter().product::<i64>().max(0) as usize;
        let mut values = Vec::new();
        values
            .try_reserve_exact(elements)
            .map_err(|_| EvalError::OutOfMemory {
                func: func.name.clone(),
                elements,
                bytes: elements.saturating_mul(std::mem::size_of::<Value>()),
            })?;
        let mut scope: Scope<'a> = Vec::new();
        for_each_point(&extents, &mut |point| {
            scope.clear();
            for ((var, p), r) in func.vars.iter().zip(point).zip(region) {
                scope.push((var, r.lo + p));
            }
            values.push(self.eval(&func.value, &mut scope)?);
            Ok(())
        })?;
        self.realized.insert(
            func.name.clone(),
            Realized {
                region: region.to_vec(),
                values,
            },
        );
        for update in &func.updates {
            self.run_update(func, update, region)?;
        }
        Ok(())
    }

    /// Runs one update: pure variables (those bare in the target) outermost, then the reduction
    /// variables in declaration order.
    fn run_update(
        &mut self,
        func: &'a Func,
        update: &'a Update,
        region: &[ConstantInterval],
    ) -> EResult<()> {
        let mut loops: Vec<NestLoop<'a>> = Vec::new();
        for ((var, arg), r) in func.vars.iter().zip(&update.args).zip(region) {
            if matches!(arg, Expr::Var(v) if v == var) {
                loops.push(NestLoop::fixed(var, r.lo, r.hi.saturating_add(1)));
            }
        }
        loops.extend(update.rvars.iter().map(NestLoop::rvar));
        let mut scope: Scope<'a> = Vec::new();
        let mut nest = Nest::new(loops, 0);
        let mut more = nest.descend(self, &mut scope)?;
        while more {
            if self.holds(update.predicate.as_ref(), &mut scope)? {
                self.update_point(func, update, &mut scope)?;
            }
            more = nest.next(self, &mut scope)?;
        }
        Ok(())
    }

    fn update_point(
        &mut self,
        func: &'a Func,
        update: &'a Update,
        scope: &mut Scope<'a>,
    ) -> EResult<()> {
        let mut index = Vec::with_capacity(update.args.len());
        for arg in &update.args {
            index.push(self.index_value(arg, scope)?);
        }
        let value = self.eval(&update.value, scope)?;
        let realized = self
            .realized
            .get_mut(&func.name)
            .ok_or_else(|| EvalError::Internal(format!("`{}` is not realized", func.name)))?;
        let offset = realized.offset(&index).ok_or_else(|| {
            EvalError::Internal(format!(
                "update of `{}` writes {index:?}, outside its region",
                func.name
            ))
        })?;
        let slot = &mut realized.values[offset];
        *slot = match update.op.combiner() {
            None => value,
            Some(op) => {
                let combined = Value::binary(op, *slot, value)?;
                if combined.dtype().is_float() {
                    self.float_ops.set(self.float_ops.get() + 1);
                }
                combined
            }
        };
        Ok(())
    }

    fn output(&self, extents: &[i64]) -> EResult<Buffer> {
        let output = &self.pipeline.output;
        let realized = self
            .realized
            .get(&output.name)
            .ok_or_else(|| EvalError::Internal("the output was not computed".into()))?;
        let shape: Vec<usize> = extents.iter().map(|&e| e as usize).collect();
        let mut buffer = Buffer::zeros(output.dtype, &shape).map_err(CallError::from)?;
        let mut flat = 0;
        for_each_point(extents, &mut |point| {
            let value = realized
                .offset(point)
                .map(|o| realized.values[o])
                .ok_or_else(|| EvalError::Internal("the output region is too small".into()))?;
            buffer.set_flat(flat, value);
            flat += 1;
            Ok(())
        })?;
        Ok(buffer)
    }

    fn index_value(&self, e: &'a Expr, scope: &mut Scope<'a>) -> EResult<i64> {
        let v = self.eval(e, scope)?;
        v.as_i64()
            .ok_or_else(|| EvalError::Internal(format!("index `{e}` is not an integer")))
    }

    /// The value of `e` with the variables of `scope`.
    fn eval(&self, e: &'a Expr, scope: &mut Scope<'a>) -> EResult<Value> {
        Ok(match e {
            Expr::Const(v) => *v,
            Expr::Var(name) | Expr::RVar(name) => {
                let found = scope.iter().rev().find(|(n, _)| n == name);
                let (_, v) = found
                    .ok_or_else(|| EvalError::Internal(format!("unbound variable `{name}`")))?;
                Value::I32(*v as i32)
            }
            Expr::Size(name) => {
                let v = self
                    .sizes
                    .get(name)
                    .ok_or_else(|| EvalError::Internal(format!("unbound size `{name}`")))?;
                Value::I32(*v as i32)
            }
            Expr::Param(name, _) => *self
                .args
                .scalars
                .get(name)
                .ok_or_else(|| EvalError::Internal(format!("unbound parameter `{name}`")))?,
            Expr::Call(call) => self.call(call, scope)?,
            Expr::Neg(a) => self.eval(a, scope)?.neg()?,
            Expr::Not(a) => self.eval(a, scope)?.not()?,
            Expr::Binary(op, a, b) => self.binary(*op, a, b, scope)?,
            Expr::Select(c, t, f) => {
                let pick = if self.eval(c, scope)? == Value::Bool(true) {
                    t
                } else {
                    f
                };
                self.eval(pick, scope)?
            }
            Expr::Cast(to, a) => self.eval(a, scope)?.cast(*to),
            Expr::Intrinsic(f, args) => self.intrinsic(*f, args, scope)?,
            Expr::Reduce(r) => self.reduce(r, scope)?,
        })
    }

    fn binary(&self, op: BinOp, a: &'a Expr, b: &'a Expr, scope: &mut Scope<'a>) -> EResult<Value> {
        let a = self.eval(a, scope)?;
        // `&&` and `||` short-circuit; both sides are pure, so this only saves work.
        match (op, a) {
            (BinOp::And, Value::Bool(false)) | (BinOp::Or, Value::Bool(true)) => return Ok(a),
            _ => {}
        }
        let b = self.eval(b, scope)?;
        let v = Value::binary(op, a, b)?;
        if !op.is_comparison() {
            self.count(v);
        }
        Ok(v)
    }

    fn intrinsic(&self, f: Intrinsic, args: &'a [Expr], scope: &mut Scope<'a>) -> EResult<Value> {
        let mut values = Vec::with_capacity(args.len());
        for arg in args {
            values.push(self.eval(arg, scope)?);
        }
        Ok(Value::intrinsic(f, &values)?)
    }

    /// An inline reduction: fold the body over the domain, first variable outermost.
    fn reduce(&self, r: &'a Reduce, scope: &mut Scope<'a>) -> EResult<Value> {
        let dtype = r.body.dtype();
        let mut acc = match r.op {
            ReduceOp::Sum => Value::zero(dtype),
            ReduceOp::Prod => Value::I64(1).cast(dtype),
            ReduceOp::Max => Value::lowest(dtype),
            ReduceOp::Min => Value::highest(dtype),
        };
        let base = scope.len();
        let mut nest = Nest::new(r.rvars.iter().map(NestLoop::rvar).collect(), base);
        let mut more = nest.descend(self, scope);
        while let Ok(true) = more {
            if self.holds(r.predicate.as_deref(), scope)? {
                let v = self.eval(&r.body, scope)?;
                acc = match r.op {
                    ReduceOp::Sum => self.count(Value::binary(BinOp::Add, acc, v)?),
                    ReduceOp::Prod => self.count(Value::binary(BinOp::Mul, acc, v)?),
                    ReduceOp::Max => Value::max(acc, v)?,
                    ReduceOp::Min => Value::min(acc, v)?,
                };
            }
            more = nest.next(self, scope);
        }
        scope.truncate(base);
        more.map(|_| acc)
    }

    fn call(&self, call: &'a Call, scope: &mut Scope<'a>) -> EResult<Value> {
        let mut index = Vec::with_capacity(call.args.len());
        for arg in &call.args {
            index.push(self.index_value(arg, scope)?);
        }
        match call.target {
            CallTarget::Func => {
                let realized = self.realized.get(&call.name).ok_or_else(|| {
                    EvalError::Internal(format!("`{}` read before it was computed", call.name))
                })?;
                let offset = realized.offset(&index).ok_or_else(|| {
                    EvalError::Internal(format!(
                        "`{}` read at {index:?}, outside its computed region",
                        call.name
                    ))
                })?;
                Ok(realized.values[offset])
            }
            CallTarget::Input => self.read_input(&call.name, index),
        }
    }

    fn read_input(&self, name: &str, mut index: Vec<i64>) -> EResult<Value> {
        let buffer = self
            .args
            .buffers
            .get(name)
            .ok_or_else(|| EvalError::Internal(format!("unbound input `{name}`")))?;
        let boundary = match self.pipeline.input(name).map(|i| &i.kind) {
            Some(InputKind::Buffer { boundary, .. }) => boundary.as_ref(),
            _ => None,
        };
        let inside = |index: &[i64]| buffer.get(index);
        if let Some(v) = inside(&index) {
            return Ok(v);
        }
        let out_of_bounds = |index: Vec<i64>| EvalError::OutOfBounds {
            input: name.to_string(),
            index,
            shape: buffer.shape().to_vec(),
        };
        match boundary {
            Some(Boundary::Constant(v)) => Ok(*v),
            _ if buffer.is_empty() => Err(reads_empty(name, &index, buffer.shape())),
            None => Err(out_of_bounds(index)),
            Some(b) => {
                for (i, &extent) in index.iter_mut().zip(buffer.shape()) {
                    *i = apply_boundary(b, *i, extent as i64);
                }
                inside(&index).ok_or_else(|| out_of_bounds(index))
            }
        }
    }
}

/// Whether `e` reads reduction variable `name`.
fn reads_rvar(e: &Expr, name: &str) -> bool {
    let mut found = false;
    e.for_each(&mut |x| found |= matches!(x, Expr::RVar(n) if n == name));
    found
}

/// The coefficient of reduction variable `name` in `e` when `e` is an `i32` expression affine
/// in it (sums, differences, negations and products with constants); `None` otherwise.
fn coefficient(e: &Expr, name: &str) -> Option<i64> {
    if e.dtype() != crate::dtype::Dtype::I32 {
        return None;
    }
    if !reads_rvar(e, name) {
        return Some(0);
    }
    match e {
        Expr::RVar(n) if n == name => Some(1),
        Expr::Neg(a) => coefficient(a, name)?.checked_neg(),
        Expr::Binary(BinOp::Add, a, b) => coefficient(a, name)?.checked_add(coefficient(b, name)?),
        Expr::Binary(BinOp::Sub, a, b) => coefficient(a, name)?.checked_sub(coefficient(b, name)?),
        Expr::Binary(BinOp::Mul, a, b) => match (a.as_ref(), b.as_ref()) {
            (Expr::Const(c), x) | (x, Expr::Const(c)) => {
                c.as_i64()?.checked_mul(coefficient(x, name)?)
            }
            _ => None,
        },
        _ => None,
    }
}

/// `e` as `scale` times a sum of variables times constants (`terms`) and of expressions that
/// read no variable times constants (`rest`); `false` where it is not affine in its variables.
fn affine_terms<'e>(
    e: &'e Expr,
    scale: i64,
    terms: &mut Vec<(String, i64)>,
    rest: &mut Vec<(i64, &'e Expr)>,
) -> bool {
    if !e.reads_vars() {
        rest.push((scale, e));
        return true;
    }
    match e {
        Expr::Var(n) | Expr::RVar(n) => {
            terms.push((n.clone(), scale));
            true
        }
        Expr::Neg(a) => affine_terms(a, -scale, terms, rest),
        Expr::Binary(BinOp::Add, a, b) => {
            affine_terms(a, scale, terms, rest) && affine_terms(b, scale, terms, rest)
        }
        Expr::Binary(BinOp::Sub, a, b) => {
            affine_terms(a, scale, terms, rest) && affine_terms(b, -scale, terms, rest)
        }
        Expr::Binary(BinOp::Mul, a, b) => match (a.as_ref(), b.as_ref()) {
            (Expr::Const(c), x) | (x, Expr::Const(c)) => match c.as_i64() {
                Some(c) => affine_terms(x, scale.saturating_mul(c), terms, rest),
                None => false,
            },
            _ => false,
        },
        _ => false,
    }
}

/// `e` with reduction variable `name` replaced by `value`.
fn substitute_rvar(e: &Expr, name: &str, value: &Expr) -> Expr {
    let sub = |x: &Expr| substitute_rvar(x, name, value);
    match e {
        Expr::RVar(n) if n == name => value.clone(),
        Expr::Neg(a) => Expr::Neg(Box::new(sub(a))),
        Expr::Not(a) => Expr::Not(Box::new(sub(a))),
        Expr::Cast(t, a) => Expr::Cast(*t, Box::new(sub(a))),
        Expr::Binary(op, a, b) => Expr::binary(*op, sub(a), sub(b)),
        Expr::Select(c, t, f) => Expr::Select(Box::new(sub(c)), Box::new(sub(t)), Box::new(sub(f))),
        Expr::Intrinsic(f, args) => Expr::Intrinsic(*f, args.iter().map(sub).collect()),
        Expr::Call(call) => Expr::Call(Call {
            args: call.args.iter().map(sub).collect(),
            ..call.clone()
        }),
        other => other.clone(),
    }
}

/// A loop of the nest an update or a reduction runs: `name` over `lo..hi`, bounds that may read
/// the loops outside it (a triangular domain).
struct NestLoop<'a> {
    name: &'a str,
    lo: NestBound<'a>,
    hi: NestBound<'a>,
}

enum NestBound<'a> {
    Value(i64),
    Expr(&'a Expr),
}

impl<'a> NestLoop<'a> {
    fn fixed(name: &'a str, lo: i64, hi: i64) -> Self {
        let (lo, hi) = (NestBound::Value(lo), NestBound::Value(hi));
        NestLoop { name, lo, hi }
    }

    fn rvar(r: &'a RVar) -> Self {
        let (lo, hi) = (NestBound::Expr(&r.lo), NestBound::Expr(&r.hi));
        NestLoop {
            name: &r.name,
            lo,
            hi,
        }
    }
}

/// Walks the points of a loop nest in order (the last loop fastest), binding its variables in
/// a scope above `base`; each loop's bounds are evaluated when it starts, with the values of
/// the loops outside it. A loop whose range is empty there moves the loop outside it on.
struct Nest<'a> {
    loops: Vec<NestLoop<'a>>,
    /// The end of each loop entered so far.
    ends: Vec<i64>,
    base: usize,
}

impl<'a> Nest<'a> {
    fn new(loops: Vec<NestLoop<'a>>, base: usize) -> Self {
        Nest {
            loops,
            ends: Vec::new(),
            base,
        }
    }

    fn bound(ev: &Evaluator<'a>, b: &NestBound<'a>, scope: &mut Scope<'a>) -> EResult<i64> {
        match b {
            NestBound::Value(v) => Ok(*v),
            NestBound::Expr(e) => ev.bound_at(e, scope),
        }
    }

    /// Enters the loops not yet entered, at their first values; `false` when no point is left.
    fn descend(&mut self, ev: &Evaluator<'a>, scope: &mut Scope<'a>) -> EResult<bool> {
        while self.ends.len() < self.loops.len() {
            let l = &self.loops[self.ends.len()];
            let lo = Self::bound(ev, &l.lo, scope)?;
            let hi = Self::bound(ev, &l.hi, scope)?;
            if lo < hi {
                scope.push((l.name, lo));
                self.ends.push(hi);
            } else if !self.step(scope) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Moves the innermost entered loop on, leaving those that are done; `false` when every
    /// loop is done.
    fn step(&mut self, scope: &mut Scope<'a>) -> bool {
        while let Some(&end) = self.ends.last() {
            if scope.len() > self.base {
                if let Some((_, v)) = scope.last_mut() {
                    *v += 1;
                    if *v < end {
                        return true;
                    }
                }
            }
            scope.pop();
            self.ends.pop();
        }
        false
    }

    /// The next point; `false` when there is none.
    fn next(&mut self, ev: &Evaluator<'a>, scope: &mut Scope<'a>) -> EResult<bool> {
        if !self.step(scope) {
            return Ok(false);
        }
        self.descend(ev, scope)
    }
}

/// Whether an update's loops (its pure variables bare in the target, its reduction variables)
/// run zero times over `env`: then it touches and reads nothing (`run_update` runs no point).
fn runs_nothing(func: &Func, update: &Update, env: &[(String, ConstantInterval)]) -> bool {
    let empty = |name: &str| env.iter().any(|(n, i)| n == name && i.is_empty());
    let bare_pure = func
        .vars
        .iter()
        .zip(&update.args)
        .filter_map(|(v, a)| match a {
            Expr::Var(n) if n == v => Some(v.as_str()),
            _ => None,
        });
    let mut loops = bare_pure.chain(update.rvars.iter().map(|r| r.name.as_str()));
    loops.any(empty)
}

/// A read of an input with an empty dimension, which only a `constant(v)` boundary answers (an
/// edge-repeating one has no edge): the call error compiled code's check gives, in its words.
fn reads_empty(input: &str, index: &[i64], shape: &[usize]) -> EvalError {
    let dim = shape.iter().position(|&e| e == 0).unwrap_or(0);
    let at = index.get(dim).copied().unwrap_or(0);
    EvalError::Call(CallError::ReadsEmptyInput {
        input: input.to_string(),
        dim,
        min: at,
        max: at,
    })
}

/// Where a read at `i` of a dimension of `extent` lands under a reflecting or clamping boundary.
fn apply_boundary(b: &Boundary, i: i64, extent: i64) -> i64 {
    if extent <= 0 {
        return i;
    }
    match b {
        Boundary::ClampEdge => i.clamp(0, extent - 1),
        Boundary::Mirror => {
            let m = i.rem_euclid(2 * extent);
            if m >= extent {
                2 * extent - 1 - m
            } else {
                m
            }
        }
        Boundary::MirrorInterior if extent == 1 => 0,
        Boundary::MirrorInterior => {
            let period = 2 * extent - 2;
            let m = i.rem_euclid(period);
            if m >= extent {
                period - m
            } else {
                m
            }
        }
        Boundary::Constant(_) => i,
    }
}

fn check_region_size(func: &str, region: &[ConstantInterval]) -> EResult<()> {
    let mut elements: u64 = 1;
    for (dim, r) in region.iter().enumerate() {
        elements = elements.saturating_mul(r.len());
        if r.len() > MAX_REGION_ELEMENTS || elements > MAX_REGION_ELEMENTS {
            return Err(EvalError::RegionTooLarge {
                func: func.to_string(),
                elements,
                dim,
                lo: r.lo,
                hi: r.hi,
            });
        }
    }
    Ok(())
}

/// Calls `visit` with every point of `0..extents[0] x 0..extents[1] x ...`, the last dimension
/// fastest. Nothing is visited if any extent is 0 or less; a zero-dimensional box has one point.
fn for_each_point(extents: &[i64], visit: &mut dyn FnMut(&[i64]) -> EResult<()>) -> EResult<()> {
    if extents.iter().any(|&e| e <= 0) {
        return Ok(());
    }
    let mut point = vec![0i64; extents.len()];
    loop {
        visit(&point)?;
        let mut dim = extents.len();
        loop {
            if dim == 0 {
                return Ok(());
            }
            dim -= 1;
            point[dim] += 1;
            if point[dim] < extents[dim] {
                break;
            }
            point[dim] = 0;
        }
    }
}
