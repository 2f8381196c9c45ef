//! Loop partitioning (Halide's `PartitionLoops`): a serial loop whose body holds a boundary
//! condition that is inactive over a middle range of the loop's variable becomes three loops,
//! a prologue and an epilogue that keep the body as it is, and a steady state between them
//! whose body has the condition removed. Establishes: inside the steady state of every
//! partitioned loop, no boundary condition this pass recognizes remains on an index that the
//! loop's variable moves.
//!
//! Boundary conditions are what `loop_nest` writes for an input's boundary, and what users write
//! by hand for one:
//! - `clamp(i, lo, hi)` on an `i32` index, with `lo` and `hi` invariant in the loop: `i` where
//!   `lo <= i <= hi` for every value the loops inside can give it (`clamp_edge`);
//! - `select(a <= b && c < d .., value, constant)` whose condition is a conjunction of integer
//!   comparisons: `value` where all of them hold (`constant(v)`);
//! - the reflection `mirror` and `mirror_interior` write, `select(i % p < n, i % p, ..)` with the
//!   period `p` those write: `i` where `0 <= i <= n - 1`.
//!
//! The range where a condition is inactive is solved from the interval of its index over the
//! loops and lets inside the partitioned loop (`bounds`), as an expression of the loop's
//! variable: affine forms, and `min`, `max` and `clamp` of them (a `max` that is at least a bound
//! when either side is; a side the loop does not move becomes a run-time test). A loop whose
//! steady state provably covers its whole range keeps one copy, with the conditions removed.
//!
//! Outer loops are partitioned first; only the steady state is partitioned further, so the
//! statement grows by two copies of a body per partitioned loop, not by a power of the depth.
//! Parallel loops are not partitioned (the serial loops inside them are). Without this a clamped
//! read inside a vectorized loop is a gather; in the steady state it is a dense vector load.
//!
//! ```text
//! for x in [0, W) { out[x] = input[clamp(x - 1, 0, W - 1)] + input[clamp(x + 1, 0, W - 1)] }
//! ==>
//! let x.steady.min = max(min(1, W), 0)          (solved: x - 1 >= 0 and x + 1 <= W - 1)
//! let x.steady.end = max(min(W - 1, W), x.steady.min)
//! for x in [0, x.steady.min) { ..clamps.. }
//! for x in [x.steady.min, x.steady.end - x.steady.min) { out[x] = input[x - 1] + input[x + 1] }
//! for x in [x.steady.end, W - x.steady.end) { ..clamps.. }
//! ```

use super::bounds::{self, Interval, Scope};
use super::loop_nest::{mirror_interior_period, mirror_period};
use crate::ir::{Expr, ForKind, Stmt, Type};
use strata_dsl::{BinOp, Intrinsic, Value};

/// Partitions every serial loop of `s` whose body holds a boundary condition its variable moves.
pub fn partition_loops(s: &Stmt) -> Stmt {
    match s {
        Stmt::For {
            kind: ForKind::Serial,
            ..
        } => partition_loop(s).unwrap_or_else(|| s.map(&mut |e| e.clone(), &mut partition_loops)),
        other => other.map(&mut |e| e.clone(), &mut partition_loops),
    }
}

/// The loop `s` as prologue, steady state and epilogue, if its body holds a condition the
/// loop's variable moves and that can be solved for it.
fn partition_loop(s: &Stmt) -> Option<Stmt> {
    let Stmt::For {
        var,
        min,
        extent,
        kind,
        body,
    } = s
    else {
        return None;
    };
    let end = Expr::add(min.clone(), extent.clone());
    let solver = Solver {
        var,
        first: min.clone(),
        last: Expr::sub(end.clone(), Expr::int(1)),
    };
    let mut sites = Sites::new(&solver);
    let rewritten = sites.stmt(body);
    let steady = sites.found.into_iter().reduce(|a, b| solver.both(a, b))?;
    let steady_body = partition_loops(&rewritten);
    let covers_loop = provable(Expr::le(steady.lo.clone(), min.clone()))
        && provable(Expr::le(solver.last.clone(), steady.hi.clone()));
    let with_body = |min: Expr, extent: Expr, body: Stmt| Stmt::For {
        var: var.clone(),
        min,
        extent,
        kind: *kind,
        body: Box::new(body),
    };
    if covers_loop {
        return Some(with_body(min.clone(), extent.clone(), steady_body));
    }
    let steady_min = format!("{var}.steady.min");
    let steady_end = format!("{var}.steady.end");
    let (first, past) = (Expr::var(&steady_min), Expr::var(&steady_end));
    // Each boundary inside `min ..= end` and the second not before the first, so the three
    // loops cover the range once in order (all empty when the loop is).
    let first_value = Expr::max(Expr::min(steady.lo, end.clone()), min.clone());
    let past_value = Expr::max(
        Expr::min(Expr::add(steady.hi, Expr::int(1)), end.clone()),
        first.clone(),
    );
    let loops = Stmt::block(vec![
        with_body(
            min.clone(),
            Expr::sub(first.clone(), min.clone()),
            (**body).clone(),
        ),
        with_body(
            first.clone(),
            Expr::sub(past.clone(), first.clone()),
            steady_body,
        ),
        with_body(past.clone(), Expr::sub(end, past), (**body).clone()),
    ]);
    Some(Stmt::Let {
        name: steady_min,
        value: first_value,
        body: Box::new(Stmt::Let {
            name: steady_end,
            value: past_value,
            body: Box::new(loops),
        }),
    })
}

/// An inclusive range `lo ..= hi` of the loop's variable, as expressions of what is defined
/// outside the loop (empty when `hi < lo`).
#[derive(Clone, Debug)]
struct Steady {
    lo: Expr,
    hi: Expr,
}

/// Solves conditions on expressions of the loop's variable `var`, which runs over
/// `first ..= last`.
struct Solver<'a> {
    var: &'a str,
    first: Expr,
    last: Expr,
}

impl Solver<'_> {
    fn moves(&self, e: &Expr) -> bool {
        e.uses_var(self.var)
    }

    /// Where both hold.
    fn both(&self, a: Steady, b: Steady) -> Steady {
        Steady {
            lo: Expr::max(a.lo, b.lo),
            hi: Expr::min(a.hi, b.hi),
        }
    }

    /// The whole loop where the invariant `cond` holds, nothing otherwise.
    fn when(&self, cond: Expr) -> Steady {
        Steady {
            lo: self.first.clone(),
            hi: select(
                cond,
                self.last.clone(),
                Expr::sub(self.first.clone(), Expr::int(1)),
            ),
        }
    }

    /// Where the invariant `cond` or `other` holds: the whole loop if `cond` does.
    fn or_when(&self, cond: Expr, other: Steady) -> Steady {
        Steady {
            lo: select(cond.clone(), self.first.clone(), other.lo),
            hi: select(cond, self.last.clone(), other.hi),
        }
    }

    /// A range of the variable over which `e >= bound` (`bound` invariant).
    fn at_least(&self, e: &Expr, bound: Expr) -> Option<Steady> {
        if !self.moves(e) {
            return Some(self.when(Expr::le(bound, e.clone())));
        }
        if let Some((a, rest)) = affine(e, self.var) {
            // a * v + rest >= bound
            let slack = Expr::sub(bound, rest);
            return Some(if a > 0 {
                self.from(ceil_div(slack, a))
            } else {
                self.up_to(floor_div(Expr::sub(Expr::int(0), slack), -a))
            });
        }
        match e {
            Expr::Binary(BinOp::Add, x, y) if !self.moves(y) => {
                self.at_least(x, Expr::sub(bound, (**y).clone()))
            }
            Expr::Binary(BinOp::Add, x, y) if !self.moves(x) => {
                self.at_least(y, Expr::sub(bound, (**x).clone()))
            }
            Expr::Binary(BinOp::Sub, x, y) if !self.moves(y) => {
                self.at_least(x, Expr::add(bound, (**y).clone()))
            }
            Expr::Binary(BinOp::Sub, x, y) if !self.moves(x) => {
                self.at_most(y, Expr::sub((**x).clone(), bound))
            }
            Expr::Intrinsic(Intrinsic::Min, args) if args.len() == 2 => {
                let (x, y) = (&args[0], &args[1]);
                Some(self.both(self.at_least(x, bound.clone())?, self.at_least(y, bound)?))
            }
            Expr::Intrinsic(Intrinsic::Max, args) if args.len() == 2 => self.either(
                &args[0],
                &args[1],
                &|e| self.at_least(e, bound.clone()),
                &|e| Expr::le(bound.clone(), e.clone()),
            ),
            Expr::Intrinsic(Intrinsic::Clamp, args) if args.len() == 3 => {
                let lower = Expr::max(args[0].clone(), args[1].clone());
                self.at_least(&Expr::min(lower, args[2].clone()), bound)
            }
            _ => None,
        }
    }

    /// A range of the variable over which `e <= bound` (`bound` invariant): where
    /// `-e >= -bound`.
    fn at_most(&self, e: &Expr, bound: Expr) -> Option<Steady> {
        self.at_least(&negated(e), negated(&bound))
    }

    /// A range over which a condition holds that holds when it holds of `x` or of `y` (`max(x,
    /// y) >= b`, `min(x, y) <= b`): a side the loop does not move is a run-time test (`holds`
    /// writes it); otherwise the range of one side.
    fn either(
        &self,
        x: &Expr,
        y: &Expr,
        solve: &dyn Fn(&Expr) -> Option<Steady>,
        holds: &dyn Fn(&Expr) -> Expr,
    ) -> Option<Steady> {
        match (self.moves(x), self.moves(y)) {
            (false, _) => Some(self.or_when(holds(x), solve(y)?)),
            (_, false) => Some(self.or_when(holds(y), solve(x)?)),
            _ => solve(x).or_else(|| solve(y)),
        }
    }

    fn from(&self, lo: Expr) -> Steady {
        Steady {
            lo,
            hi: self.last.clone(),
        }
    }

    fn up_to(&self, hi: Expr) -> Steady {
        Steady {
            lo: self.first.clone(),
            hi,
        }
    }
}

/// `-e`, the negation pushed through sums, differences, `min`, `max` and `clamp` (`-min(x, y)`
/// is `max(-x, -y)`), so `at_least` sees the same shapes in it as in `e`.
fn negated(e: &Expr) -> Expr {
    if let Some(c) = e.as_int() {
        return Expr::int((c as i32).wrapping_neg());
    }
    let neg = |x: &Expr| negated(x);
    match e {
        Expr::Unary(crate::ir::UnOp::Neg, x) => (**x).clone(),
        Expr::Binary(BinOp::Add, x, y) => Expr::sub(neg(x), (**y).clone()),
        Expr::Binary(BinOp::Sub, x, y) => Expr::sub((**y).clone(), (**x).clone()),
        Expr::Intrinsic(Intrinsic::Min, args) if args.len() == 2 => {
            Expr::max(neg(&args[0]), neg(&args[1]))
        }
        Expr::Intrinsic(Intrinsic::Max, args) if args.len() == 2 => {
            Expr::min(neg(&args[0]), neg(&args[1]))
        }
        // -min(max(x, lo), hi) = max(min(-x, -lo), -hi)
        Expr::Intrinsic(Intrinsic::Clamp, args) if args.len() == 3 => {
            Expr::max(Expr::min(neg(&args[0]), neg(&args[1])), neg(&args[2]))
        }
        _ => Expr::Unary(crate::ir::UnOp::Neg, Box::new(e.clone())),
    }
}

/// `e` as `a * var + rest` with a constant `a != 0` and `rest` free of `var`, if it is affine
/// in `var`.
fn affine(e: &Expr, var: &str) -> Option<(i64, Expr)> {
    let (a, rest) = linear(e, var)?;
    (a != 0).then_some((a, rest))
}

fn linear(e: &Expr, var: &str) -> Option<(i64, Expr)> {
    if !e.uses_var(var) {
        return Some((0, e.clone()));
    }
    let scaled = |x: &Expr, c: i64| -> Option<(i64, Expr)> {
        let (a, rest) = linear(x, var)?;
        Some((
            a.checked_mul(c)?,
            Expr::mul(rest, Expr::int(i32::try_from(c).ok()?)),
        ))
    };
    match e {
        Expr::Var(name, ty) if name == var && *ty == Type::I32 => Some((1, Expr::int(0))),
        Expr::Binary(BinOp::Add, x, y) => {
            let ((a, r), (b, s)) = (linear(x, var)?, linear(y, var)?);
            Some((a.checked_add(b)?, Expr::add(r, s)))
        }
        Expr::Binary(BinOp::Sub, x, y) => {
            let ((a, r), (b, s)) = (linear(x, var)?, linear(y, var)?);
            Some((a.checked_sub(b)?, Expr::sub(r, s)))
        }
        Expr::Unary(crate::ir::UnOp::Neg, x) => scaled(x, -1),
        Expr::Binary(BinOp::Mul, x, y) => match (x.as_int(), y.as_int()) {
            (_, Some(c)) => scaled(x, c),
            (Some(c), _) => scaled(y, c),
            _ => None,
        },
        _ => None,
    }
}

/// `ceil(n / d)` for a constant `d > 0` (the IR's division floors for a positive divisor).
fn ceil_div(n: Expr, d: i64) -> Expr {
    if d == 1 {
        return n;
    }
    floor_div(Expr::add(n, Expr::int(d as i32 - 1)), d)
}

fn floor_div(n: Expr, d: i64) -> Expr {
    if d == 1 {
        return n;
    }
    Expr::binary(BinOp::Div, n, Expr::int(d as i32))
}

fn select(cond: Expr, then: Expr, otherwise: Expr) -> Expr {
    Expr::Select(Box::new(cond), Box::new(then), Box::new(otherwise))
}

/// The walk over a partitioned loop's body: the intervals of the loop and let variables bound
/// inside it, and the range over which each condition found is inactive.
struct Sites<'a> {
    solver: &'a Solver<'a>,
    scope: Scope,
    /// Names bound inside the loop (a solution must not read them).
    inner: Vec<String>,
    found: Vec<Steady>,
}

impl<'a> Sites<'a> {
    fn new(solver: &'a Solver<'a>) -> Sites<'a> {
        Sites {
            solver,
            scope: Scope::default(),
            inner: Vec::new(),
            found: Vec::new(),
        }
    }

    /// `s` with every condition solved for the loop's variable removed (their ranges noted).
    fn stmt(&mut self, s: &Stmt) -> Stmt {
        match s {
            Stmt::For {
                var,
                min,
                extent,
                kind,
                body,
            } => {
                let interval = bounds::loop_interval(min, extent, &self.scope);
                let (min, extent) = (self.expr(min), self.expr(extent));
                let body = self.bound(var, interval, |sites| sites.stmt(body));
                Stmt::For {
                    var: var.clone(),
                    min,
                    extent,
                    kind: *kind,
                    body: Box::new(body),
                }
            }
            Stmt::Let { name, value, body } => {
                let interval = bounds::bounds(value, &self.scope);
                let value = self.expr(value);
                let body = self.bound(name, interval, |sites| sites.stmt(body));
                Stmt::Let {
                    name: name.clone(),
                    value,
                    body: Box::new(body),
                }
            }
            other => {
                // Expressions first, then nested statements: each closure borrows `self` alone.
                let exprs_done = other.map(&mut |e| self.expr(e), &mut |c| c.clone());
                exprs_done.map(&mut |e| e.clone(), &mut |c| self.stmt(c))
            }
        }
    }

    /// `walk` with `name` bound to `interval`.
    fn bound<T>(&mut self, name: &str, interval: Interval, walk: impl FnOnce(&mut Self) -> T) -> T {
        self.scope.push(name, interval);
        self.inner.push(name.to_string());
        let out = walk(self);
        self.inner.pop();
        self.scope.pop();
        out
    }

    fn expr(&mut self, e: &Expr) -> Expr {
        match e {
            Expr::Let { name, value, body } => {
                let interval = bounds::bounds(value, &self.scope);
                let value = self.expr(value);
                let body = self.bound(name, interval, |sites| sites.expr(body));
                Expr::Let {
                    name: name.clone(),
                    value: Box::new(value),
                    body: Box::new(body),
                }
            }
            Expr::Intrinsic(Intrinsic::Clamp, args) if args.len() == 3 && e.ty() == Type::I32 => {
                let index = self.expr(&args[0]);
                match self.clamp_inactive(&args[0], &args[1], &args[2]) {
                    Some(steady) => self.removed(steady, index),
                    None => Expr::Intrinsic(
                        Intrinsic::Clamp,
                        vec![index, self.expr(&args[1]), self.expr(&args[2])],
                    ),
                }
            }
            Expr::Select(cond, then, otherwise) if !e.ty().is_vector() => {
                if let Some((steady, index)) = self.mirror_inactive(e) {
                    let index = self.expr(index);
                    return self.removed(steady, index);
                }
                let guards_a_constant = matches!(otherwise.as_ref(), Expr::Const(_));
                match guards_a_constant.then(|| self.holds(cond)).flatten() {
                    Some((steady, None)) => {
                        let then = self.expr(then);
                        self.removed(steady, then)
                    }
                    Some((steady, Some(kept))) => {
                        let narrowed = select(kept, self.expr(then), (**otherwise).clone());
                        self.removed(steady, narrowed)
                    }
                    None => e.map_children(&mut |c| self.expr(c)),
                }
            }
            _ => e.map_children(&mut |c| self.expr(c)),
        }
    }

    fn removed(&mut self, steady: Steady, kept: Expr) -> Expr {
        self.found.push(steady);
        kept
    }

    /// Where `clamp(index, lo, hi)` is `index` for every value of the loops inside, if `lo`
    /// and `hi` are invariant and the index moves with the loop's variable.
    fn clamp_inactive(&self, index: &Expr, lo: &Expr, hi: &Expr) -> Option<Steady> {
        if [lo, hi].iter().any(|e| self.reads_inner(e)) {
            return None;
        }
        let interval = self.interval(index)?;
        let solver = self.solver;
        let steady = solver.both(
            solver.at_least(&interval.min?, lo.clone())?,
            solver.at_most(&interval.max?, hi.clone())?,
        );
        self.solution(steady)
    }

    /// Where the comparisons of the conjunction `cond` that move with the loop's variable hold
    /// for every value of the loops inside, and the conjunction of the others (which the
    /// steady state still tests), if any comparison is solved.
    fn holds(&self, cond: &Expr) -> Option<(Steady, Option<Expr>)> {
        let mut terms = Vec::new();
        conjuncts(cond, &mut terms);
        let mut steady = None;
        let mut kept = Vec::new();
        for term in terms {
            match self.comparison_holds(term) {
                Some(s) => {
                    steady = Some(match steady {
                        Some(t) => self.solver.both(t, s),
                        None => s,
                    })
                }
                None => kept.push(term.clone()),
            }
        }
        let kept = kept
            .into_iter()
            .reduce(|a, b| Expr::binary(BinOp::And, a, b));
        Some((steady?, kept))
    }

    /// Where the integer comparison `c` (`<=` or `<`), which moves with the loop's variable,
    /// holds for every value of the loops inside.
    fn comparison_holds(&self, c: &Expr) -> Option<Steady> {
        let Expr::Binary(op @ (BinOp::Le | BinOp::Lt), a, b) = c else {
            return None;
        };
        if a.ty() != Type::I32 {
            return None;
        }
        // a <= b is b - a >= 0; a < b is b - a >= 1.
        let least = if *op == BinOp::Lt { 1 } else { 0 };
        let interval = self.interval(&Expr::sub((**b).clone(), (**a).clone()))?;
        let steady = self.solver.at_least(&interval.min?, Expr::int(least))?;
        self.solution(steady)
    }

    /// A reflection `select(i % p < n, i % p, ..)` (the period `p` as `mirror` and
    /// `mirror_interior` write it, so `p >= n`): where it is `i`, `0 <= i <= n - 1`.
    fn mirror_inactive<'e>(&self, e: &'e Expr) -> Option<(Steady, &'e Expr)> {
        let (index, n) = reflected(e)?;
        if self.reads_inner(n) {
            return None;
        }
        let interval = self.interval(index)?;
        let last = Expr::sub(n.clone(), Expr::int(1));
        let solver = self.solver;
        let steady = solver.both(
            solver.at_least(&interval.min?, Expr::int(0))?,
            solver.at_most(&interval.max?, last)?,
        );
        Some((self.solution(steady)?, index))
    }

    /// The interval of `index` over the loops and lets inside, simplified, if it moves with the
    /// loop's variable (a condition it does not move is left to the simplifier).
    fn interval(&self, index: &Expr) -> Option<Interval> {
        let simplify = |e: Expr| bounds::refold(&crate::simplify::simplify_expr(&e));
        let i = bounds::bounds(index, &self.scope);
        let i = Interval {
            min: i.min.map(simplify),
            max: i.max.map(simplify),
        };
        let moves = |e: &Option<Expr>| e.as_ref().is_some_and(|e| self.solver.moves(e));
        (moves(&i.min) || moves(&i.max)).then_some(i)
    }

    /// `steady`, if it reads nothing bound inside the loop (nor the loop's variable).
    fn solution(&self, steady: Steady) -> Option<Steady> {
        let ends = [&steady.lo, &steady.hi];
        let free = ends
            .iter()
            .all(|e| !self.solver.moves(e) && !self.reads_inner(e));
        free.then_some(steady)
    }

    fn reads_inner(&self, e: &Expr) -> bool {
        self.inner.iter().any(|name| e.uses_var(name))
    }
}

fn conjuncts<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::Binary(BinOp::And, a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        other => out.push(other),
    }
}

/// `(i, n)` when `e` is `select(i % p < n, i % p, ..)` with `p` written `2 * n` or
/// `max(2 * n - 2, 1)` (what `loop_nest`'s `mirror` and `mirror_interior` build): then `e` is
/// `i` wherever `0 <= i <= n - 1`.
fn reflected(e: &Expr) -> Option<(&Expr, &Expr)> {
    let Expr::Select(cond, then, _) = e else {
        return None;
    };
    let Expr::Binary(BinOp::Lt, m, n) = cond.as_ref() else {
        return None;
    };
    let Expr::Binary(BinOp::Mod, index, period) = m.as_ref() else {
        return None;
    };
    let known_period = **period == mirror_period(n) || **period == mirror_interior_period(n);
    (then == m && known_period && index.ty() == Type::I32).then_some((index, n))
}

/// Whether the simplifier reduces the condition `c` to `true`.
fn provable(c: Expr) -> bool {
    matches!(
        crate::simplify::simplify_expr(&c),
        Expr::Const(Value::Bool(true))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simplify::simplify_expr;

    fn load(index: Expr) -> Expr {
        Expr::Load {
            buffer: "input".into(),
            index: Box::new(index),
            ty: Type::I32,
        }
    }

    fn clamp(x: Expr, lo: Expr, hi: Expr) -> Expr {
        Expr::Intrinsic(Intrinsic::Clamp, vec![x, lo, hi])
    }

    /// `for x in [0, W) { for xi in [0, lanes) { out[x] = input[clamp(index, 0, W - 1)] } }`.
    fn clamped_loop(index: Expr, lanes: i32) -> Stmt {
        let store = Stmt::Store {
            buffer: "out".into(),
            index: Expr::var("x"),
            value: load(clamp(
                index,
                Expr::int(0),
                Expr::sub(Expr::var("W"), Expr::int(1)),
            )),
        };
        let inner = Stmt::For {
            var: "xi".into(),
            min: Expr::int(0),
            extent: Expr::int(lanes),
            kind: ForKind::Vectorized,
            body: Box::new(store),
        };
        Stmt::For {
            var: "x".into(),
            min: Expr::int(0),
            extent: Expr::var("W"),
            kind: ForKind::Serial,
            body: Box::new(inner),
        }
    }

    /// The steady range `first .. past` of the partitioned loop at `W = w`.
    fn steady_range(partitioned: &Stmt, w: i32) -> (i64, i64) {
        let at = |e: &Expr, names: &[(&str, i64)]| {
            let mut e = e.substitute("W", &Expr::int(w));
            for (name, v) in names {
                e = e.substitute(name, &Expr::int(*v as i32));
            }
            simplify_expr(&e)
                .as_int()
                .unwrap_or_else(|| panic!("not constant: {e}"))
        };
        let Stmt::Let { value, body, .. } = partitioned else {
            // One copy: steady throughout.
            assert!(!partitioned.to_string().contains("clamp"), "{partitioned}");
            return (0, i64::from(w.max(0)));
        };
        let first = at(value, &[]);
        let Stmt::Let { value, .. } = body.as_ref() else {
            panic!("not partitioned:\n{partitioned}");
        };
        (first, at(value, &[("x.steady.min", first)]))
    }

    fn index_at(index: &Expr, x: i64, xi: i64, w: i32) -> i64 {
        let e = index.substitute("x", &Expr::int(x as i32));
        let e = e.substitute("xi", &Expr::int(xi as i32));
        let e = e.substitute("W", &Expr::int(w));
        simplify_expr(&e).as_int().unwrap()
    }

    /// Every `x` of the steady range keeps every lane's index inside `0 ..= W - 1`; with
    /// `exact`, every `x` outside it takes some lane outside.
    fn check(index: Expr, lanes: i32, exact: bool) {
        let partitioned = partition_loops(&clamped_loop(index.clone(), lanes));
        for w in 0..24 {
            let (first, past) = steady_range(&partitioned, w);
            assert!(
                0 <= first && first <= past && past <= i64::from(w.max(0)),
                "W={w}: {first}..{past}"
            );
            for x in 0..i64::from(w) {
                let inside = (0..i64::from(lanes))
                    .all(|xi| (0..i64::from(w)).contains(&index_at(&index, x, xi, w)));
                let steady = (first..past).contains(&x);
                assert!(
                    !steady || inside,
                    "{index} W={w}: x={x} is steady but clamped"
                );
                assert!(
                    !exact || steady == inside,
                    "{index} W={w}: x={x} inside but not steady"
                );
            }
        }
    }

    #[test]
    fn affine_indices_are_steady_exactly_where_the_clamp_is_inactive() {
        for a in [-3, -2, -1, 1, 2, 3] {
            for b in [-7, -1, 0, 2, 5] {
                let x = Expr::var("x");
                let index = Expr::add(Expr::mul(x, Expr::int(a)), Expr::int(b));
                let index = if a < 0 {
                    Expr::add(index, Expr::var("W"))
                } else {
                    index
                };
                check(index, 1, true);
            }
        }
    }

    #[test]
    fn lanes_of_an_inner_loop_are_all_inside_in_the_steady_state() {
        let x4 = Expr::mul(Expr::var("x"), Expr::int(4));
        for k in [-2, 0, 3] {
            check(
                Expr::add(Expr::add(x4.clone(), Expr::var("xi")), Expr::int(k)),
                4,
                true,
            );
        }
    }

    /// The start a shifted tail writes, `max(min(x * 4, W - 4), 0) + xi`: sound, and the
    /// interior is steady once the input is wide enough.
    #[test]
    fn a_shifted_tail_is_solved_through_min_and_max() {
        let x4 = Expr::mul(Expr::var("x"), Expr::int(4));
        let start = Expr::max(
            Expr::min(x4, Expr::sub(Expr::var("W"), Expr::int(4))),
            Expr::int(0),
        );
        let index = Expr::add(Expr::add(start, Expr::var("xi")), Expr::int(1));
        check(index.clone(), 4, false);
        let partitioned = partition_loops(&clamped_loop(index, 4));
        let (first, past) = steady_range(&partitioned, 20);
        assert!(first <= 1 && past >= 4, "{first}..{past}");
    }

    /// A loop whose index the clamp never limits keeps one copy, without the clamp.
    #[test]
    fn a_loop_inside_its_bounds_throughout_keeps_one_copy() {
        let s = Stmt::For {
            var: "x".into(),
            min: Expr::int(0),
            extent: Expr::int(8),
            kind: ForKind::Serial,
            body: Box::new(Stmt::Store {
                buffer: "out".into(),
                index: Expr::var("x"),
                value: load(clamp(Expr::var("x"), Expr::int(0), Expr::int(9))),
            }),
        };
        let out = partition_loops(&s);
        assert!(
            matches!(out, Stmt::For { .. }) && !out.to_string().contains("clamp"),
            "{out}"
        );
    }

    /// A select on a comparison the loop does not move stays; the loop's own comparisons go.
    #[test]
    fn a_constant_boundary_keeps_the_comparisons_of_outer_loops() {
        let (x, y, w) = (Expr::var("x"), Expr::var("y"), Expr::var("W"));
        let inside = [
            Expr::le(Expr::int(0), y.clone()),
            Expr::le(Expr::int(0), x.clone()),
            Expr::lt(x.clone(), w),
        ]
        .into_iter()
        .reduce(|a, b| Expr::binary(BinOp::And, a, b))
        .unwrap();
        let s = Stmt::For {
            var: "x".into(),
            min: Expr::int(-2),
            extent: Expr::var("W"),
            kind: ForKind::Serial,
            body: Box::new(Stmt::Store {
                buffer: "out".into(),
                index: x.clone(),
                value: select(inside, load(x), Expr::int(7)),
            }),
        };
        let text = partition_loops(&s).to_string();
        let steady = text
            .lines()
            .find(|l| l.contains("out[") && !l.contains("x < W"))
            .unwrap();
        assert!(steady.contains("select(0 <= y, input[x], 7)"), "{text}");
    }
}
