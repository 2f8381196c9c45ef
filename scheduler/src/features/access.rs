//! How a memory access moves with the loops around it: the coefficient of a loop variable in a
//! flat index (through the lets it reads), and from those the bytes one access touches over
//! the loops inside a level (its footprint) and the loop that reuses what it touched.

use crate::ir::{Expr, UnOp};
use strata_dsl::{BinOp, Intrinsic};

/// Lets are followed this deep when a coefficient is asked for; deeper, the index counts as
/// irregular (a let chain that long is rare, and following it is exponential at worst).
const LET_DEPTH: u32 = 8;

/// A let in scope: its name and value (innermost last).
pub(super) type Lets = Vec<(String, Expr)>;

/// The coefficient of `var` in the integer expression `e` (the first lane's value for a
/// vector): `Some(0)` when `e` does not depend on it, `None` when it does but not linearly
/// (a division, a data-dependent index, a product of two varying terms).
pub(super) fn coefficient(e: &Expr, var: &str, lets: &[(String, Expr)]) -> Option<i64> {
    coefficient_within(e, var, lets, LET_DEPTH)
}

fn coefficient_within(e: &Expr, var: &str, lets: &[(String, Expr)], depth: u32) -> Option<i64> {
    let of = |x: &Expr| coefficient_within(x, var, lets, depth);
    match e {
        Expr::Const(_) | Expr::Param(..) => Some(0),
        Expr::Var(name, _) if name == var => Some(1),
        Expr::Var(name, _) => let_coefficient(name, var, lets, depth),
        Expr::Binary(BinOp::Add, a, b) => of(a)?.checked_add(of(b)?),
        Expr::Binary(BinOp::Sub, a, b) => of(a)?.checked_sub(of(b)?),
        Expr::Binary(BinOp::Mul, a, b) => product_coefficient(of(a)?, a, of(b)?, b),
        Expr::Unary(UnOp::Neg, a) => of(a)?.checked_neg(),
        Expr::Ramp { base, .. } => of(base),
        Expr::Broadcast { value, .. } | Expr::Cast(_, value) => of(value),
        Expr::Let { name, value, body } => {
            let mut inner = lets.to_vec();
            inner.push((name.clone(), (**value).clone()));
            coefficient_within(body, var, &inner, depth)
        }
        other => invariant_or_irregular(other, var, lets, depth),
    }
}

/// A let-bound (or unknown) variable's coefficient: its value's, innermost binding first.
fn let_coefficient(name: &str, var: &str, lets: &[(String, Expr)], depth: u32) -> Option<i64> {
    let Some(at) = lets.iter().rposition(|(n, _)| n == name) else {
        // A loop variable of another loop, or a size: independent of `var`.
        return Some(0);
    };
    if depth == 0 {
        return None;
    }
    // The let's value sees only the lets bound before it.
    coefficient_within(&lets[at].1, var, &lets[..at], depth - 1)
}

/// `a * b`'s coefficient when at most one side varies and the other is a constant.
fn product_coefficient(ca: i64, a: &Expr, cb: i64, b: &Expr) -> Option<i64> {
    match (ca, cb) {
        (0, 0) => Some(0),
        (c, 0) => c.checked_mul(constant(b)?),
        (0, c) => c.checked_mul(constant(a)?),
        _ => None,
    }
}

/// Zero when no operand of `e` varies with `var`, `None` otherwise (`e` is not linear in it).
fn invariant_or_irregular(e: &Expr, var: &str, lets: &[(String, Expr)], depth: u32) -> Option<i64> {
    let mut varies = false;
    e.for_each_child(&mut |child| {
        varies = varies || coefficient_within(child, var, lets, depth) != Some(0);
    });
    (!varies).then_some(0)
}

/// The value of a constant (or a broadcast constant).
fn constant(e: &Expr) -> Option<i64> {
    match e {
        Expr::Const(v) => v.as_i64(),
        Expr::Broadcast { value, .. } => constant(value),
        _ => None,
    }
}

/// How the lanes of an index lie in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lanes {
    /// A scalar access.
    Scalar,
    /// Consecutive elements (`ramp(base, 1, n)`).
    Dense,
    /// One element repeated (`broadcast`).
    Repeated,
    /// Any other vector of indices: one element per lane, wherever it is.
    Gather,
}

/// How the lanes of the index `e` lie in memory.
pub(super) fn lanes_of(e: &Expr) -> Lanes {
    match e {
        _ if !e.ty().is_vector() => Lanes::Scalar,
        Expr::Ramp { stride, .. } if constant(stride) == Some(1) => Lanes::Dense,
        Expr::Broadcast { .. } => Lanes::Repeated,
        _ => Lanes::Gather,
    }
}

/// Elements closer than this share a cache line, at the element sizes kernels use: a stride
/// past it touches a line per element.
const LINE_BYTES: f64 = 64.0;

/// The bytes an access touches over the loops `inner` (outermost first, `(coefficient,
/// extent)` each), at cache-line grain: a loop whose variable does not move the index reuses
/// what the loops inside it touched; one that moves it by less than that overlaps its
/// iterations (a stencil's rows); one that moves it further touches a new piece per
/// iteration, a line at least when the pieces are a line or more apart.
pub(super) fn footprint(vector_bytes: f64, elem_bytes: f64, inner: &[(Option<i64>, f64)]) -> f64 {
    let mut bytes = vector_bytes.max(elem_bytes);
    for (coefficient, extent) in inner.iter().rev() {
        let n = extent.max(1.0);
        let step = match coefficient {
            Some(0) => continue,
            Some(c) => c.unsigned_abs() as f64 * elem_bytes,
            None => LINE_BYTES,
        };
        bytes = if step < bytes {
            bytes + step * (n - 1.0)
        } else {
            n * bytes.max(step.min(LINE_BYTES))
        };
    }
    bytes
}

/// Whether `e` calls a transcendental function (counted apart: one costs tens of operations).
pub(super) fn is_transcendental(f: Intrinsic) -> bool {
    use Intrinsic::*;
    matches!(
        f,
        Exp | Log | Pow | Sin | Cos | Tanh | FastExp | FastLog | FastPow
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(name: &str) -> Expr {
        Expr::var(name)
    }

    #[test]
    fn coefficients_of_linear_and_irregular_indices() {
        // (y * 64 + x) * 1 - 3
        let e = Expr::sub(
            Expr::add(Expr::mul(v("y"), Expr::int(64)), v("x")),
            Expr::int(3),
        );
        assert_eq!(coefficient(&e, "y", &[]), Some(64));
        assert_eq!(coefficient(&e, "x", &[]), Some(1));
        assert_eq!(coefficient(&e, "k", &[]), Some(0));
        let product = Expr::mul(v("x"), v("y"));
        assert_eq!(coefficient(&product, "x", &[]), None);
        let divided = Expr::binary(BinOp::Div, v("x"), Expr::int(2));
        assert_eq!(coefficient(&divided, "x", &[]), None);
        assert_eq!(coefficient(&divided, "y", &[]), Some(0));
    }

    #[test]
    fn coefficients_follow_lets_in_scope() {
        let lets = vec![
            ("row".to_string(), Expr::mul(v("y"), Expr::int(100))),
            ("at".to_string(), Expr::add(v("row"), v("x"))),
        ];
        let e = Expr::add(v("at"), Expr::int(1));
        assert_eq!(coefficient(&e, "y", &lets), Some(100));
        assert_eq!(coefficient(&e, "x", &lets), Some(1));
    }

    #[test]
    fn footprints_grow_with_the_loops_that_move_the_index() {
        // A row of 100 f32 read with x innermost: 400 bytes; reused over k.
        let row = footprint(4.0, 4.0, &[(Some(0), 50.0), (Some(1), 100.0)]);
        assert_eq!(row, 400.0);
        // A column: every element its own line.
        let column = footprint(4.0, 4.0, &[(Some(1000), 100.0)]);
        assert_eq!(column, 64.0 * 100.0);
        // Rows of 100 elements 1000 apart: the rows, not the span between them.
        let rows = footprint(4.0, 4.0, &[(Some(1000), 10.0), (Some(1), 100.0)]);
        assert_eq!(rows, 4000.0);
        // Three rows one row apart, each 96 elements read as 12 vectors of 8 lanes.
        let stencil = footprint(32.0, 4.0, &[(Some(100), 3.0), (Some(8), 12.0)]);
        assert_eq!(stencil, 3.0 * 384.0);
    }
}
