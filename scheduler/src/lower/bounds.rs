//! Symbolic bounds inference: the interval of values an integer loop-IR expression can take,
//! as expressions, given the intervals of the loop and let variables in scope (variables not in
//! scope are fixed symbols). This is how a producer's region is found from the accesses of its
//! consumers (Halide's `Bounds.cpp`), through stencils, splits, clamps and data-dependent
//! indices (bounded by their type).

use crate::ir::{Expr, Stmt, Type, UnOp};
use strata_dsl::{BinOp, Intrinsic};

/// An inclusive interval `min ..= max`; `None` is unbounded on that side.
#[derive(Clone, Debug, PartialEq)]
pub struct Interval {
    /// The least value, or `None` if unbounded below.
    pub min: Option<Expr>,
    /// The greatest value, or `None` if unbounded above.
    pub max: Option<Expr>,
}

impl Interval {
    /// The interval holding `e` alone.
    pub fn point(e: Expr) -> Interval {
        Interval {
            min: Some(e.clone()),
            max: Some(e),
        }
    }

    /// The interval `min ..= max`.
    pub fn new(min: Expr, max: Expr) -> Interval {
        Interval {
            min: Some(min),
            max: Some(max),
        }
    }

    /// The interval unbounded on both sides.
    pub fn everything() -> Interval {
        Interval {
            min: None,
            max: None,
        }
    }

    /// All values of an integer type. Types of 32 bits or more are unbounded: their extreme
    /// values would overflow the `i32` arithmetic bound expressions are evaluated in.
    pub fn of_type(ty: Type) -> Interval {
        match ty.dtype.int_range() {
            Some((lo, hi)) if hi - lo < 1 << 16 => {
                Interval::new(Expr::int(lo as i32), Expr::int(hi as i32))
            }
            _ => Interval::everything(),
        }
    }

    /// Whether both sides are bounded.
    pub fn is_bounded(&self) -> bool {
        self.min.is_some() && self.max.is_some()
    }

    /// The smallest interval holding both.
    pub fn union(&self, other: &Interval) -> Interval {
        Interval {
            min: both(&self.min, &other.min, |a, b| fold_min(a, b)),
            max: both(&self.max, &other.max, |a, b| fold_max(a, b)),
        }
    }
}

fn both(a: &Option<Expr>, b: &Option<Expr>, f: impl Fn(Expr, Expr) -> Expr) -> Option<Expr> {
    Some(f(a.clone()?, b.clone()?))
}

/// The interval of each variable in scope, innermost last.
pub(crate) type Scope = crate::scope::Scope<Interval>;

/// The interval of an integer expression under `scope`.
pub fn bounds(e: &Expr, scope: &Scope) -> Interval {
    let ty = e.ty();
    if ty.dtype.is_float() || ty.is_vector() {
        return Interval::everything();
    }
    match e {
        Expr::Const(v) if v.dtype().is_int() || v.dtype() == strata_dsl::Dtype::Bool => {
            Interval::point(Expr::int(v.as_i64().unwrap_or(0) as i32))
        }
        Expr::Var(name, _) => scope
            .get(name)
            .cloned()
            .unwrap_or_else(|| Interval::point(e.clone())),
        // A scalar parameter is fixed for the call, as a size is: a region may be written in
        // terms of it (Halide's local Laplacian clamps its LUT index with `(levels - 1) * 256`).
        Expr::Param(..) => Interval::point(e.clone()),
        Expr::Unary(UnOp::Neg, a) => {
            let a = bounds(a, scope);
            Interval {
                min: a.max.map(neg),
                max: a.min.map(neg),
            }
        }
        Expr::Binary(op, a, b) if !op.is_comparison() && !op.is_logical() => {
            binary_bounds(*op, bounds(a, scope), bounds(b, scope), ty)
        }
        Expr::Select(_, t, f) => bounds(t, scope).union(&bounds(f, scope)),
        Expr::Intrinsic(op, args) => intrinsic_bounds(*op, args, scope, ty),
        Expr::Cast(to, a) if a.ty().dtype.is_int() && widens(a.ty(), *to) => bounds(a, scope),
        Expr::Let { name, value, body } => {
            let mut inner = scope.clone();
            inner.push(name, bounds(value, scope));
            bounds(body, &inner)
        }
        _ => Interval::of_type(ty),
    }
}

/// Whether every value of `from` is a value of `to`.
fn widens(from: Type, to: Type) -> bool {
    match (from.dtype.int_range(), to.dtype.int_range()) {
        (Some((a, b)), Some((c, d))) => c <= a && b <= d,
        _ => false,
    }
}

fn binary_bounds(op: BinOp, a: Interval, b: Interval, ty: Type) -> Interval {
    let b_const = b
        .min
        .as_ref()
        .and_then(Expr::as_int)
        .filter(|_| b.min == b.max);
    match (op, b_const) {
        (BinOp::Add, _) => Interval {
            min: both(&a.min, &b.min, fold_add),
            max: both(&a.max, &b.max, fold_add),
        },
        (BinOp::Sub, _) => Interval {
            min: both(&a.min, &b.max, fold_sub),
            max: both(&a.max, &b.min, fold_sub),
        },
        (BinOp::Mul, Some(c)) if c >= 0 => scale(a, c, false),
        (BinOp::Mul, Some(c)) => scale(a, c, true),
        (BinOp::Div, Some(c)) if c > 0 => {
            let div = |x: Expr| fold_div(x, c);
            Interval {
                min: a.min.map(div),
                max: a.max.map(div),
            }
        }
        (BinOp::Mod, Some(c)) if c > 0 => Interval::new(Expr::int(0), Expr::int(c as i32 - 1)),
        // Euclidean: `0 <= a % b <= |b| - 1`, and `a % 0 == 0`.
        (BinOp::Mod, _) => {
            let largest = |lo: Expr, hi: Expr| {
                let magnitude =
                    fold_max(fold_sub(hi, Expr::int(1)), fold_sub(neg(lo), Expr::int(1)));
                fold_max(magnitude, Expr::int(0))
            };
            Interval {
                min: Some(Expr::int(0)),
                max: both(&b.min, &b.max, largest),
            }
        }
        (BinOp::Mul, None)
            if a.min == a.max && b.min == b.max && a.is_bounded() && b.is_bounded() =>
        {
            Interval::point(Expr::mul(
                a.min.unwrap_or(Expr::int(0)),
                b.min.unwrap_or(Expr::int(0)),
            ))
        }
        _ if a.min == a.max && b.min == b.max && a.is_bounded() && b.is_bounded() => {
            Interval::point(Expr::binary(
                op,
                a.min.unwrap_or(Expr::int(0)),
                b.min.unwrap_or(Expr::int(0)),
            ))
        }
        _ => Interval::of_type(ty),
    }
}

/// `a * c` for a constant `c`; a negative `c` swaps the ends.
fn scale(a: Interval, c: i64, negative: bool) -> Interval {
    let mul = |x: Expr| fold_mul(x, c);
    let (min, max) = (a.min.map(mul), a.max.map(mul));
    if negative {
        Interval { min: max, max: min }
    } else {
        Interval { min, max }
    }
}

fn intrinsic_bounds(op: Intrinsic, args: &[Expr], scope: &Scope, ty: Type) -> Interval {
    let b: Vec<Interval> = args.iter().map(|a| bounds(a, scope)).collect();
    match (op, b.as_slice()) {
        (Intrinsic::Min, [x, y]) => min_bounds(x, y),
        (Intrinsic::Max, [x, y]) => max_bounds(x, y),
        (Intrinsic::Clamp, [x, lo, hi]) => min_bounds(&max_bounds(x, lo), hi),
        _ => Interval::of_type(ty),
    }
}

/// `min(x, y)`: an unbounded `max` on one side is bounded by the other's.
fn min_bounds(x: &Interval, y: &Interval) -> Interval {
    Interval {
        min: both(&x.min, &y.min, fold_min),
        max: match (&x.max, &y.max) {
            (Some(a), Some(b)) => Some(fold_min(a.clone(), b.clone())),
            (Some(a), None) | (None, Some(a)) => Some(a.clone()),
            (None, None) => None,
        },
    }
}

/// `max(x, y)`: an unbounded `min` on one side is bounded by the other's.
fn max_bounds(x: &Interval, y: &Interval) -> Interval {
    Interval {
        min: match (&x.min, &y.min) {
            (Some(a), Some(b)) => Some(fold_max(a.clone(), b.clone())),
            (Some(a), None) | (None, Some(a)) => Some(a.clone()),
            (None, None) => None,
        },
        max: both(&x.max, &y.max, fold_max),
    }
}

fn neg(e: Expr) -> Expr {
    match e.as_int() {
        Some(c) => Expr::int(-c as i32),
        None => Expr::Unary(UnOp::Neg, Box::new(e)),
    }
}

/// `e` as `base + constant` (`base` is `None` for a constant). Borrowed: the folding
/// constructors below split every operand they are given, and cloning the bases was a tenth of
/// the time lowering an app-sized pipeline took.
fn split_const(e: &Expr) -> (Option<&Expr>, i64) {
    if let Some(c) = e.as_int() {
        return (None, c);
    }
    match e {
        Expr::Binary(BinOp::Add, a, b) if b.as_int().is_some() => {
            let (base, c) = split_const(a);
            (base, c + b.as_int().unwrap_or(0))
        }
        Expr::Binary(BinOp::Sub, a, b) if b.as_int().is_some() => {
            let (base, c) = split_const(a);
            (base, c - b.as_int().unwrap_or(0))
        }
        _ => (Some(e), 0),
    }
}

/// Rebuilds `+`, `-`, `min` and `max` with the folding constructors below, so a bound
/// expression such as `min(min(t, t + 63), t)` becomes `t`.
pub fn refold(e: &Expr) -> Expr {
    let e = e.map_children(&mut refold);
    match &e {
        Expr::Binary(BinOp::Add, a, b) if e.ty() == Type::I32 => {
            fold_add((**a).clone(), (**b).clone())
        }
        Expr::Binary(BinOp::Sub, a, b) if e.ty() == Type::I32 => {
            fold_sub((**a).clone(), (**b).clone())
        }
        Expr::Intrinsic(Intrinsic::Min, args) if e.ty() == Type::I32 && args.len() == 2 => {
            fold_min(args[0].clone(), args[1].clone())
        }
        Expr::Intrinsic(Intrinsic::Max, args) if e.ty() == Type::I32 && args.len() == 2 => {
            fold_max(args[0].clone(), args[1].clone())
        }
        _ => e,
    }
}

/// `base + c`, without a `+ 0`.
fn join_const(base: Option<Expr>, c: i64) -> Expr {
    match (base, c) {
        (None, c) => Expr::int(c as i32),
        (Some(b), 0) => b,
        (Some(b), c) if c < 0 => Expr::sub(b, Expr::int(-c as i32)),
        (Some(b), c) => Expr::add(b, Expr::int(c as i32)),
    }
}

// Folding constructors for bound expressions. They treat index arithmetic as exact (no
// overflow), as Halide's bounds inference does: a region whose bounds overflow `i32` could not
// be allocated anyway. Keeping `x + c` forms together is what keeps correlated bounds exact
// (`max(y, y + 2) - min(y, y + 2)` folds to `2`).

/// `a + b`, with constants gathered and folded.
pub fn fold_add(a: Expr, b: Expr) -> Expr {
    let ((ba, ca), (bb, cb)) = (split_const(&a), split_const(&b));
    match (ba, bb) {
        (None, base) | (base, None) => join_const(base.cloned(), ca + cb),
        (Some(x), Some(y)) => join_const(Some(Expr::add(x.clone(), y.clone())), ca + cb),
    }
}

/// `a - b`, with constants gathered and folded (`x - x` is 0).
pub fn fold_sub(a: Expr, b: Expr) -> Expr {
    let ((ba, ca), (bb, cb)) = (split_const(&a), split_const(&b));
    match (ba, bb) {
        (x, None) => join_const(x.cloned(), ca - cb),
        (Some(x), Some(y)) if x == y => Expr::int((ca - cb) as i32),
        (None, Some(y)) => join_const(Some(Expr::sub(Expr::int(0), y.clone())), ca - cb),
        (Some(x), Some(y)) => join_const(Some(Expr::sub(x.clone(), y.clone())), ca - cb),
    }
}

fn fold_mul(a: Expr, c: i64) -> Expr {
    match (a.as_int(), c) {
        (Some(x), _) => Expr::int((x * c) as i32),
        (_, 0) => Expr::int(0),
        (_, 1) => a,
        _ => Expr::mul(a, Expr::int(c as i32)),
    }
}

fn fold_div(a: Expr, c: i64) -> Expr {
    match a.as_int() {
        Some(x) => Expr::int(x.div_euclid(c) as i32),
        None if c == 1 => a,
        None => Expr::binary(BinOp::Div, a, Expr::int(c as i32)),
    }
}

/// `min(a, b)`, or whichever of `x + c1`, `x + c2` is smaller (also inside a nested `min`,
/// on either side, with a constant added to it).
pub fn fold_min(a: Expr, b: Expr) -> Expr {
    fold_extreme(Intrinsic::Min, a, b)
}

/// `max(a, b)`, or whichever of `x + c1`, `x + c2` is larger (also inside a nested `max`,
/// on either side, with a constant added to it).
pub fn fold_max(a: Expr, b: Expr) -> Expr {
    fold_extreme(Intrinsic::Max, a, b)
}

/// `op(a, b)` for `op` `min` or `max`, folded as `fold_min` and `fold_max` say.
fn fold_extreme(op: Intrinsic, a: Expr, b: Expr) -> Expr {
    let pick = |x: i64, y: i64| {
        if op == Intrinsic::Min {
            x.min(y)
        } else {
            x.max(y)
        }
    };
    let ((ba, ca), (bb, cb)) = (split_const(&a), split_const(&b));
    if ba == bb {
        return join_const(ba.cloned(), pick(ca, cb));
    }
    if let Some(picked) = ordered_quotients(op, &a, &b) {
        return picked;
    }
    for (nested, other) in [(&a, &b), (&b, &a)] {
        if absorbs(op, other, nested) {
            return other.clone();
        }
        let Some([x, y]) = extreme_args(op, nested) else {
            continue;
        };
        let other_base = split_const(other).0;
        if split_const(&x).0 == other_base {
            return fold_extreme(op, fold_extreme(op, x, other.clone()), y);
        }
        if split_const(&y).0 == other_base {
            return fold_extreme(op, x, fold_extreme(op, y, other.clone()));
        }
    }
    Expr::Intrinsic(op, vec![a, b])
}

/// `min` or `max` of `(x + k1) / d + c1` and `(x + k2) / d + c2` for a constant `d > 0`: the
/// smaller or larger when both `k` and `c` order them alike, as Euclidean division by a
/// positive constant never decreases. An upsampling read `f(x / 2) + f((x + 1) / 2)` keeps one
/// bound per level instead of doubling (Halide's interpolate writes it so).
fn ordered_quotients(op: Intrinsic, a: &Expr, b: &Expr) -> Option<Expr> {
    fn quotient(e: &Expr) -> Option<(&Expr, i64, i64, i64)> {
        let (base, c) = split_const(e);
        match base? {
            Expr::Binary(BinOp::Div, n, d) if d.as_int().is_some_and(|d| d > 0) => {
                let (x, k) = split_const(n);
                Some((x?, k, d.as_int()?, c))
            }
            _ => None,
        }
    }
    let ((xa, ka, da, ca), (xb, kb, db, cb)) = (quotient(a)?, quotient(b)?);
    if xa != xb || da != db {
        return None;
    }
    let a_smaller = match (ka <= kb && ca <= cb, kb <= ka && cb <= ca) {
        (true, _) => true,
        (_, true) => false,
        _ => return None,
    };
    let pick_a = if op == Intrinsic::Min {
        a_smaller
    } else {
        !a_smaller
    };
    Some(if pick_a { a.clone() } else { b.clone() })
}

/// Whether `op(kept, other) == kept` by absorption: `max(x + c, min(x, y) + d)` with `c >= d`
/// is `x + c` (and `min` of a `max` the same way round).
fn absorbs(op: Intrinsic, kept: &Expr, other: &Expr) -> bool {
    let dual = if op == Intrinsic::Min {
        Intrinsic::Max
    } else {
        Intrinsic::Min
    };
    let Some(args) = extreme_args(dual, other) else {
        return false;
    };
    let (base, c) = split_const(kept);
    args.iter().any(|arg| {
        let (arg_base, d) = split_const(arg);
        arg_base == base && if op == Intrinsic::Min { c <= d } else { c >= d }
    })
}

/// The arguments of `e` when it is `op(x, y)` or `op(x, y) + c` (as `op(x + c, y + c)`).
fn extreme_args(op: Intrinsic, e: &Expr) -> Option<[Expr; 2]> {
    let (base, c) = split_const(e);
    match base? {
        Expr::Intrinsic(o, args) if *o == op && args.len() == 2 => Some([
            fold_add(args[0].clone(), Expr::int(c as i32)),
            fold_add(args[1].clone(), Expr::int(c as i32)),
        ]),
        _ => None,
    }
}

/// The interval of a loop variable running over `min .. min + extent`; an extent written
/// `max - min + 1` gives exactly `min ..= max`.
pub fn loop_interval(min: &Expr, extent: &Expr, scope: &Scope) -> Interval {
    let lo = bounds(min, scope);
    let last = match extent {
        Expr::Binary(BinOp::Add, diff, one) if one.as_int() == Some(1) => match diff.as_ref() {
            Expr::Binary(BinOp::Sub, max, m) if m.as_ref() == min => Some((**max).clone()),
            _ => None,
        },
        _ => None,
    };
    let last =
        last.unwrap_or_else(|| fold_sub(fold_add(min.clone(), extent.clone()), Expr::int(1)));
    Interval {
        min: lo.min,
        max: bounds(&last, scope).max,
    }
}

/// The box of every access (call, and provide if it is `func`'s own) of `func` in `s`, as
/// intervals in terms of the variables free in `s`; `None` if `s` never accesses `func`.
///
/// Computed inside out, as Halide does: an access's box is its arguments; passing a `let`
/// substitutes its value (so correlated bounds such as `min` and `min + extent - 1` stay
/// correlated); passing a loop takes the bounds of the box over the loop's range; passing an
/// `if (v < e)` rewrites `v` as `min(v, e - 1)`, which is the same value inside the `if`.
pub fn access_bounds(s: &Stmt, func: &str) -> Option<Vec<Interval>> {
    let b = stmt_box(s, func, false)?;
    Some(b.iter().map(|i| over_scope(i, &Scope::default())).collect())
}

/// `access_bounds` of the accesses that can run: those inside a loop of constant extent 0 or
/// less (an empty reduction domain such as `r in 0..0`, and the loops split from it) or an
/// `if (false)` are left out. Taken over their empty range, their boxes need not be empty
/// (`f(x + r - 1)` over `r` in `0..=-1` is `f(x - 1 ..= x - 2)` and widens a union to
/// `x - 1`), so a producer's region counting them read past its inputs. `None` if no access
/// of `func` in `s` can run.
pub fn live_access_bounds(s: &Stmt, func: &str) -> Option<Vec<Interval>> {
    let b = stmt_box(s, func, true)?;
    Some(b.iter().map(|i| over_scope(i, &Scope::default())).collect())
}

/// Whether a loop of this extent provably runs zero times.
fn never_runs(extent: &Expr) -> bool {
    crate::simplify::simplify_expr(extent)
        .as_int()
        .is_some_and(|n| n <= 0)
}

/// The interval of the ends of `i` with the variables of `scope` ranging (data-dependent
/// values become their type's range).
pub(super) fn over_scope(i: &Interval, scope: &Scope) -> Interval {
    over_scope_ends(i, scope, &|_| true)
}

/// `over_scope` for the loop of `var`: an end that does not read `var` is already its own
/// bound there, and is left as it is (simplified once, where the box is settled) instead of
/// being simplified at every loop around it.
pub(super) fn over_loop_scope(i: &Interval, var: &str, scope: &Scope) -> Interval {
    over_scope_ends(i, scope, &|e| e.uses_var(var))
}

fn over_scope_ends(i: &Interval, scope: &Scope, needed: &dyn Fn(&Expr) -> bool) -> Interval {
    // Simplifying first cancels correlated terms (`x - x`) that intervals cannot.
    let simplify = |e: &Expr| refold(&crate::simplify::simplify_expr(e));
    let end = |e: &Option<Expr>, is_min: bool| {
        let e = e.as_ref()?;
        if !needed(e) {
            return Some(e.clone());
        }
        let b = bounds(&simplify(e), scope);
        let end = if is_min { b.min } else { b.max };
        end.map(|m| simplify(&m))
    };
    Interval {
        min: end(&i.min, true),
        max: end(&i.max, false),
    }
}

pub(super) fn union_boxes(
    a: Option<Vec<Interval>>,
    b: Option<Vec<Interval>>,
) -> Option<Vec<Interval>> {
    match (a, b) {
        (None, b) => b,
        (a, None) => a,
        (Some(a), Some(b)) => Some(a.iter().zip(&b).map(|(x, y)| x.union(y)).collect()),
    }
}

pub(super) fn map_box(
    b: Option<Vec<Interval>>,
    f: &dyn Fn(&Expr) -> Expr,
) -> Option<Vec<Interval>> {
    b.map(|b| {
        b.iter()
            .map(|i| Interval {
                min: i.min.as_ref().map(f),
                max: i.max.as_ref().map(f),
            })
            .collect()
    })
}

/// The box of the accesses of `func` in `s`; with `live`, only of those that can run (see
/// `live_access_bounds`).
fn stmt_box(s: &Stmt, func: &str, live: bool) -> Option<Vec<Interval>> {
    let mut own = None;
    for e in s.exprs() {
        own = union_boxes(own, expr_box(e, func));
    }
    let inner = match s {
        Stmt::For { extent, .. } if live && never_runs(extent) => None,
        Stmt::For {
            var,
            min,
            extent,
            body,
            ..
        } => {
            let mut scope = Scope::default();
            scope.push(var, loop_interval(min, extent, &Scope::default()));
            let b = stmt_box(body, func, live);
            b.map(|b| b.iter().map(|i| over_loop_scope(i, var, &scope)).collect())
        }
        Stmt::Let { name, value, body } => {
            map_box(stmt_box(body, func, live), &|e| e.substitute(name, value))
        }
        Stmt::If {
            cond,
            then_case,
            else_case,
        } => {
            let dead = live && *cond == Expr::Const(strata_dsl::Value::Bool(false));
            let then_box = (!dead)
                .then(|| stmt_box(then_case, func, live))
                .flatten()
                .map(|b| guarded(&b, cond));
            let else_box = else_case.as_ref().and_then(|e| stmt_box(e, func, live));
            union_boxes(then_box, else_box)
        }
        Stmt::Provide { func: f, args, .. } if f == func => {
            Some(args.iter().cloned().map(Interval::point).collect())
        }
        other => other
            .children()
            .into_iter()
            .fold(None, |acc, c| union_boxes(acc, stmt_box(c, func, live))),
    };
    union_boxes(own, inner)
}

/// The box of the calls of `func` inside an expression.
pub(super) fn expr_box(e: &Expr, func: &str) -> Option<Vec<Interval>> {
    match e {
        Expr::Call { func: f, args, .. } => {
            let own = (f == func).then(|| args.iter().cloned().map(Interval::point).collect());
            args.iter()
                .fold(own, |acc, a| union_boxes(acc, expr_box(a, func)))
        }
        Expr::Let { name, value, body } => {
            let inner = map_box(expr_box(body, func), &|x| x.substitute(name, value));
            union_boxes(expr_box(value, func), inner)
        }
        other => {
            // Children visited in place: most nodes a producer's region is looked for in hold
            // no call of it, and collecting each node's children was a tenth of the time an
            // app-sized pipeline's realization took.
            let mut found = None;
            other.for_each_child(&mut |c| found = union_boxes(found.take(), expr_box(c, func)));
            found
        }
    }
}

/// A box inside `if (cond)`: each end both as it is and with `cond` rewriting its variables
/// (`refine`), the tighter of the two once bounded. Both are the access's value wherever the
/// guard holds, but only the unrewritten end keeps a variable's lower bound: `min(v, e - 1)`
/// lies below `v`'s range when `e` does, and then the guard never holds. Without this, the
/// empty split reduction domain of a scan `for (r in 1..N) p(r) = p(r - 1) ..` at `N = 1`
/// made `r` range down to `0`, so `p` and what its pure definition reads grew to `-1`.
pub(super) fn guarded(b: &[Interval], cond: &Expr) -> Vec<Interval> {
    let end = |e: &Option<Expr>, tighter: fn(Expr, Expr) -> Expr| {
        e.as_ref().map(|e| tighter(refine(e, cond), e.clone()))
    };
    b.iter()
        .map(|i| Interval {
            min: end(&i.min, fold_max),
            max: end(&i.max, fold_min),
        })
        .collect()
}

/// Inside `if (cond)`, each conjunct `v < e` means `v` equals `min(v, e - 1)`.
fn refine(e: &Expr, cond: &Expr) -> Expr {
    match cond {
        Expr::Binary(BinOp::And, a, b) => refine(&refine(e, a), b),
        Expr::Binary(BinOp::Lt, v, bound) if matches!(v.as_ref(), Expr::Var(..)) => {
            let Expr::Var(name, _) = v.as_ref() else {
                return e.clone();
            };
            let capped = fold_min((**v).clone(), fold_sub((**bound).clone(), Expr::int(1)));
            e.substitute(name, &capped)
        }
        Expr::Binary(BinOp::Le, v, bound) if matches!(v.as_ref(), Expr::Var(..)) => {
            let Expr::Var(name, _) = v.as_ref() else {
                return e.clone();
            };
            e.substitute(name, &fold_min((**v).clone(), (**bound).clone()))
        }
        _ => e.clone(),
    }
}
