//! Sliding window (Halide's `SlidingWindow`): a function stored outside the serial loop it is
//! computed in computes, in each iteration after the first, only the values no earlier
//! iteration computed, instead of its whole region again.
//!
//! ```text
//! bx: store_root().compute_at(out, y)                  (blur3x3: each row of out reads 3 of bx)
//!
//! for out.s0.y in [out.y.min, ..):                     for out.s0.y in [out.y.min, ..):
//!   let bx.y.min = out.s0.y                              let bx.y.min = out.s0.y
//!   let bx.y.max = out.s0.y + 2                          let bx.y.max = out.s0.y + 2
//!   produce bx {                                    ->   let bx.y.min.slid = select(out.s0.y > out.y.min,
//!     for bx.s0.y in [bx.y.min, bx.y.max + 1): ..          max(bx.y.min, out.s0.y - 1 + 2 + 1), bx.y.min)
//!   }                                                    produce bx {
//!                                                          for bx.s0.y in [bx.y.min.slid, bx.y.max + 1): ..
//! ```
//!
//! Why it is safe: the loop runs its iterations in order, the storage outlives them, and the
//! region `[min(l), max(l)]` iteration `l` needs of the sliding dimension never moves back
//! (both ends are non-decreasing in `l`: checked on the expressions, `direction`) while the
//! other dimensions do not move at all. Then everything iteration `l` needs below
//! `max(l - 1) + 1` an earlier iteration computed, and it is still there: each value is written
//! once, in increasing order, so a folded buffer (`fold_storage`, which ran before and sized
//! the fold for the whole region of one iteration) overwrites a slot only with a value at least
//! `n` above it, past everything still to be read. The values are pure (no update stages), so
//! computing them in another iteration gives the same result. A function computed only when a
//! consumer's loop runs (`if (f.needed)`) slides only when that condition never turns from
//! false back to true (the guarded tail of a split consumer turns it off for good), so no
//! iteration relies on one that computed nothing; under any other condition it does not slide.
//!
//! Not slid (computed whole each iteration, as before): functions with update stages, loops
//! that are neither serial nor unrolled, a sliding dimension whose loop in the producer is split, vectorized,
//! unrolled or not serial (the split's rounding would compute values below the new minimum
//! and, in a folded buffer, overwrite what is still to be read), regions whose expressions are
//! not provably monotone, and previous-iteration expressions past `EXPANSION_BUDGET` nodes.
//! A region that does not depend on the loop at all is computed in the first iteration only.
//!
//! Establishes: in each iteration of a loop, a function stored outside it computes only the
//! part of its region in the sliding dimension above what the previous iteration computed.

use super::loop_nest::{region_max, region_min};
use crate::ir::{Expr, ForKind, Stmt, UnOp};
use crate::simplify::subst_stmt;
use std::collections::HashMap;
use strata_dsl::{BinOp, Intrinsic, Pipeline};

/// The most nodes the previous iteration's maximum may have once the loop's lets are
/// substituted into it (past it, the function is computed whole: slower, never wrong).
const EXPANSION_BUDGET: usize = 4096;

/// Slides every function stored outside the serial (or unrolled) loop it is computed in, where
/// that is safe.
pub fn slide_windows(s: &Stmt, pipeline: &Pipeline) -> Stmt {
    let mut stored = Vec::new();
    walk(s, pipeline, &mut stored)
}

/// Rewrites `s`, `stored` naming the functions whose `realize` encloses it.
fn walk(s: &Stmt, pipeline: &Pipeline, stored: &mut Vec<String>) -> Stmt {
    match s {
        Stmt::Realize { func, .. } => {
            stored.push(func.clone());
            let out = s.map(&mut |e| e.clone(), &mut |c| walk(c, pipeline, stored));
            stored.pop();
            out
        }
        // An unrolled loop's copies run in order too: each slides over the one before.
        Stmt::For {
            var,
            min,
            extent,
            kind: kind @ (ForKind::Serial | ForKind::Unrolled),
            body,
        } => {
            let slid = slide_in_loop(body, var, min, pipeline, stored);
            let body = walk(slid.as_ref().unwrap_or(body), pipeline, stored);
            Stmt::For {
                var: var.clone(),
                min: min.clone(),
                extent: extent.clone(),
                kind: *kind,
                body: Box::new(body),
            }
        }
        _ => s.map(&mut |e| e.clone(), &mut |c| walk(c, pipeline, stored)),
    }
}

/// The body of the loop over `var` (starting at `loop_min`) with every function computed
/// there, and stored outside it, slid where that is safe; `None` where none is.
fn slide_in_loop(
    body: &Stmt,
    var: &str,
    loop_min: &Expr,
    pipeline: &Pipeline,
    stored: &[String],
) -> Option<Stmt> {
    let lets = leading_lets(body);
    let of = |f: &str, n: &str| n.strip_prefix(f).is_some_and(|rest| rest.starts_with('.'));
    if !stored.iter().any(|f| lets.iter().any(|(n, _)| of(f, n))) {
        return None;
    }
    let directions = let_directions(&lets, var);
    let mut out = None;
    for name in stored {
        let Some(func) = pipeline.func(name) else {
            continue;
        };
        let slide = Slide {
            func: &func.name,
            vars: &func.vars,
            lets: &lets,
            directions: &directions,
            loop_var: var,
        };
        if !func.updates.is_empty() || !slide.computed_here() || !slide.needed_never_returns() {
            continue;
        }
        if let Some(rewritten) = slide.apply(out.as_ref().unwrap_or(body), loop_min) {
            out = Some(rewritten);
        }
    }
    out
}

/// The lets `s` starts with, outermost first: the regions of the functions computed there.
fn leading_lets(s: &Stmt) -> Vec<(&str, &Expr)> {
    let mut lets = Vec::new();
    let mut s = s;
    while let Stmt::Let { name, value, body } = s {
        lets.push((name.as_str(), value));
        s = body;
    }
    lets
}

/// How each let of the loop's body moves as the loop variable grows.
fn let_directions(lets: &[(&str, &Expr)], var: &str) -> HashMap<String, Direction> {
    let mut directions = HashMap::from([(var.to_string(), Direction::Up)]);
    for (name, value) in lets {
        let d = direction(value, &directions);
        directions.insert(name.to_string(), d);
    }
    directions
}

/// How an expression moves as the loop variable grows, iteration by iteration.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Direction {
    /// The same in every iteration.
    Constant,
    /// Never smaller than in the previous iteration.
    Up,
    /// Never larger than in the previous iteration.
    Down,
    /// Not known.
    Unknown,
}

impl Direction {
    /// The direction of a sum of two terms moving so.
    fn plus(self, other: Direction) -> Direction {
        use Direction::*;
        match (self, other) {
            (Constant, d) | (d, Constant) => d,
            (Up, Up) => Up,
            (Down, Down) => Down,
            _ => Unknown,
        }
    }

    fn negated(self) -> Direction {
        match self {
            Direction::Up => Direction::Down,
            Direction::Down => Direction::Up,
            d => d,
        }
    }

    /// The direction of `c * self` for a constant `c`.
    fn scaled(self, c: i64) -> Direction {
        match c.signum() {
            0 => Direction::Constant,
            1 => self,
            _ => self.negated(),
        }
    }
}

/// How `e` moves, given how the variables in `known` do (the others stay constant: sizes,
/// parameters and lets outside the loop). Index arithmetic is taken not to wrap, as bounds
/// inference takes it. Memory reads are unknown: what they read may change between iterations.
fn direction(e: &Expr, known: &HashMap<String, Direction>) -> Direction {
    use Direction::*;
    let all = |es: &[&Expr]| es.iter().fold(Constant, |d, e| d.plus(direction(e, known)));
    let invariant = |es: &[&Expr]| {
        let each = es.iter().map(|e| direction(e, known));
        if each.into_iter().all(|d| d == Constant) {
            Constant
        } else {
            Unknown
        }
    };
    match e {
        Expr::Const(_) | Expr::Param(..) => Constant,
        Expr::Var(name, _) => known.get(name).copied().unwrap_or(Constant),
        Expr::Call { .. } | Expr::Load { .. } => Unknown,
        Expr::Unary(UnOp::Neg | UnOp::Not, x) => direction(x, known).negated(),
        Expr::Binary(op, a, b) => binary_direction(*op, a, b, known),
        Expr::Select(c, t, f) if direction(c, known) == Constant => all(&[t, f]),
        Expr::Select(c, t, f) => invariant(&[c, t, f]),
        Expr::Intrinsic(Intrinsic::Min | Intrinsic::Max | Intrinsic::Clamp, args) => {
            all(&args.iter().collect::<Vec<_>>())
        }
        Expr::Let { name, value, body } => {
            let mut inner = known.clone();
            inner.insert(name.clone(), direction(value, known));
            direction(body, &inner)
        }
        other => invariant(&other.children()),
    }
}

fn binary_direction(
    op: BinOp,
    a: &Expr,
    b: &Expr,
    known: &HashMap<String, Direction>,
) -> Direction {
    let (da, db) = (direction(a, known), direction(b, known));
    match op {
        BinOp::Add => da.plus(db),
        // A condition moves as a number would with `true` above `false`: `a < b` holds while
        // `b - a` stays positive, so it moves as `b - a` does; `&&` and `||` are `min` and `max`.
        BinOp::Sub | BinOp::Gt | BinOp::Ge => da.plus(db.negated()),
        BinOp::Lt | BinOp::Le => db.plus(da.negated()),
        BinOp::And | BinOp::Or => da.plus(db),
        BinOp::Mul => match (a.as_int(), b.as_int()) {
            (_, Some(c)) => da.scaled(c),
            (Some(c), _) => db.scaled(c),
            _ => da.plus(db).filter_constant(),
        },
        // Euclidean division by a positive constant rounds down: it keeps the order.
        BinOp::Div if b.as_int().is_some_and(|c| c > 0) => da,
        _ => da.plus(db).filter_constant(),
    }
}

impl Direction {
    /// `Constant` stays; anything else is unknown (for operators that keep no order).
    fn filter_constant(self) -> Direction {
        match self {
            Direction::Constant => Direction::Constant,
            _ => Direction::Unknown,
        }
    }
}

/// One function that may slide in one loop.
struct Slide<'a> {
    func: &'a str,
    vars: &'a [String],
    /// The lets the loop's body starts with, outermost first.
    lets: &'a [(&'a str, &'a Expr)],
    directions: &'a HashMap<String, Direction>,
    loop_var: &'a str,
}

impl Slide<'_> {
    fn let_value(&self, name: &str) -> Option<&Expr> {
        self.lets.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    /// How the let `name` moves: from its expression, or where that is not enough (`b.y.max -
    /// b.y.min`, both moving up), from its value with the loop's lets substituted, simplified.
    fn moves(&self, name: &str) -> Direction {
        match self.directions.get(name) {
            Some(Direction::Unknown) => {
                let Some(value) = self.expanded(name) else {
                    return Direction::Unknown;
                };
                let simplified = crate::simplify::simplify_expr(&value);
                let known = HashMap::from([(self.loop_var.to_string(), Direction::Up)]);
                direction(&simplified, &known)
            }
            Some(d) => *d,
            None => Direction::Unknown,
        }
    }

    /// Whether the function's region is bound at the top of this loop's body (it is computed
    /// here, not in a loop inside).
    fn computed_here(&self) -> bool {
        self.vars.iter().all(|v| {
            self.let_value(&region_min(self.func, v)).is_some()
                && self.let_value(&region_max(self.func, v)).is_some()
        })
    }

    /// Whether `f.needed`, if the function has one, never turns from false to true: an
    /// iteration that computes nothing is never followed by one relying on it (the tail of a
    /// split consumer, guarded, turns it off for good).
    fn needed_never_returns(&self) -> bool {
        let needed = format!("{}.needed", self.func);
        self.let_value(&needed).is_none()
            || matches!(self.moves(&needed), Direction::Constant | Direction::Down)
    }

    /// The dimension to slide along: the one whose region moves (both ends up), the others
    /// constant; with none moving, any (the region is computed in the first iteration only).
    fn dimensions(&self) -> Vec<usize> {
        let moving: Vec<usize> = (0..self.vars.len())
            .filter(|&d| {
                self.moves(&region_min(self.func, &self.vars[d])) != Direction::Constant
                    || self.moves(&region_max(self.func, &self.vars[d])) != Direction::Constant
            })
            .collect();
        match moving.as_slice() {
            [] => (0..self.vars.len()).collect(),
            [d] => {
                let var = &self.vars[*d];
                let up = |n: String| matches!(self.moves(&n), Direction::Up | Direction::Constant);
                if up(region_min(self.func, var)) && up(region_max(self.func, var)) {
                    vec![*d]
                } else {
                    Vec::new()
                }
            }
            _ => Vec::new(),
        }
    }

    /// `body` with the function's `produce` starting, after the first iteration, above the
    /// previous iteration's maximum; `None` where no dimension can slide.
    fn apply(&self, body: &Stmt, loop_min: &Expr) -> Option<Stmt> {
        let produces = find_produces(body, self.func)?;
        for d in self.dimensions() {
            let min_name = region_min(self.func, &self.vars[d]);
            let max_name = region_max(self.func, &self.vars[d]);
            let plain = |p: &&Stmt| plain_serial_loops(p, &min_name, &max_name);
            if produces.is_empty() || !produces.iter().all(plain) {
                continue;
            }
            let Some(previous_max) = self.previous(&max_name) else {
                continue;
            };
            let slid_name = format!("{min_name}.slid");
            let min = Expr::var(&min_name);
            let first = Expr::binary(BinOp::Gt, Expr::var(self.loop_var), loop_min.clone());
            let above = Expr::add(previous_max, Expr::int(1));
            let value = Expr::Select(
                Box::new(first),
                Box::new(Expr::max(min.clone(), above)),
                Box::new(min),
            );
            // A `produce` binding the new name inside (none does) would capture the renaming:
            // left as it is, it computes its whole region every iteration, which is still right.
            let renamed = |p: &Stmt| subst_stmt(p, &min_name, &Expr::var(&slid_name));
            return Some(rewrite_produce(body, self.func, &|p| Stmt::Let {
                name: slid_name.clone(),
                value: value.clone(),
                body: Box::new(renamed(p).unwrap_or_else(|| p.clone())),
            }));
        }
        None
    }

    /// The value of the let `name` in the previous iteration.
    fn previous(&self, name: &str) -> Option<Expr> {
        let back = Expr::sub(Expr::var(self.loop_var), Expr::int(1));
        Some(self.expanded(name)?.substitute(self.loop_var, &back))
    }

    /// The value of the let `name` with the lets of the loop's body that move substituted
    /// (innermost first): an expression of the loop variable and what stays constant.
    fn expanded(&self, name: &str) -> Option<Expr> {
        let position = self.lets.iter().position(|(n, _)| *n == name)?;
        let mut e = self.lets[position].1.clone();
        for (n, v) in self.lets[..position].iter().rev() {
            if self.directions.get(*n) != Some(&Direction::Constant) && e.uses_var(n) {
                e = e.substitute(n, v);
                if node_count(&e) > EXPANSION_BUDGET {
                    return None;
                }
            }
        }
        Some(e)
    }
}

fn node_count(e: &Expr) -> usize {
    let mut n = 0;
    e.for_each(&mut |_| n += 1);
    n
}

/// The `produce`s of `func` in `s` outside any loop of `s` (one, or one per copy of a
/// specialized consumer); `None` if one is under a condition other than `func.needed`, which
/// could skip an iteration the next one relies on.
fn find_produces<'a>(s: &'a Stmt, func: &str) -> Option<Vec<&'a Stmt>> {
    let needed = format!("{func}.needed");
    let mut found = Vec::new();
    let mut unsafe_condition = false;
    visit_produces(s, func, &needed, false, &mut |p, conditional| {
        found.push(p);
        unsafe_condition |= conditional;
    });
    (!unsafe_condition).then_some(found)
}

fn visit_produces<'a>(
    s: &'a Stmt,
    func: &str,
    needed: &str,
    conditional: bool,
    found: &mut dyn FnMut(&'a Stmt, bool),
) {
    match s {
        Stmt::Produce { func: f, .. } if f == func => found(s, conditional),
        Stmt::For { .. } => {}
        Stmt::If { cond, .. } => {
            let own = matches!(cond, Expr::Var(n, _) if n == needed);
            for c in s.children() {
                visit_produces(c, func, needed, conditional || !own, found);
            }
        }
        other => {
            for c in other.children() {
                visit_produces(c, func, needed, conditional, found);
            }
        }
    }
}

/// `s` with the `produce` of `func` (outside any loop of `s`) replaced by `f(produce)`.
fn rewrite_produce(s: &Stmt, func: &str, f: &dyn Fn(&Stmt) -> Stmt) -> Stmt {
    match s {
        Stmt::Produce { func: p, .. } if p == func => f(s),
        Stmt::For { .. } => s.clone(),
        other => other.map(&mut |e| e.clone(), &mut |c| rewrite_produce(c, func, f)),
    }
}

/// Every use of the region's minimum `min_name` in `produce` is a serial loop over the
/// region itself: `for v in [min, (max - min + 1))`, nothing split, vectorized or unrolled.
fn plain_serial_loops(produce: &Stmt, min_name: &str, max_name: &str) -> bool {
    let mut uses = 0;
    produce.for_each_expr(&mut |e| {
        if matches!(e, Expr::Var(n, _) if n == min_name) {
            uses += 1;
        }
    });
    let mut loops = 0;
    produce.for_each(&mut |s| {
        if let Stmt::For {
            min,
            extent,
            kind: ForKind::Serial,
            ..
        } = s
        {
            if matches!(min, Expr::Var(n, _) if n == min_name)
                && is_extent(extent, min_name, max_name)
            {
                loops += 1;
            }
        }
    });
    loops > 0 && uses == 2 * loops
}

/// `max - min + 1`.
fn is_extent(e: &Expr, min_name: &str, max_name: &str) -> bool {
    let var = |e: &Expr, name: &str| matches!(e, Expr::Var(n, _) if n == name);
    let Expr::Binary(BinOp::Add, diff, one) = e else {
        return false;
    };
    let Expr::Binary(BinOp::Sub, max, min) = &**diff else {
        return false;
    };
    one.as_int() == Some(1) && var(max, max_name) && var(min, min_name)
}
