//! Constant intervals of integer expressions, for the bounds-aware rules: which values an index
//! like `xo * 8 + xi` can take when `xi` is the variable of `for xi in 0..8`.
//!
//! [`bounds`] is sound: every value the expression takes (in every lane) lies in the interval.
//! Arithmetic is done exactly (in `i128`); where an exact result may leave the type's range the
//! operation may wrap, so the answer falls back to the whole range of the type.

use super::ty::ty_of;
use crate::ir::{Expr, ReduceOp, UnOp};
use std::rc::Rc;
use strata_dsl::bounds::ConstantInterval;
use strata_dsl::{BinOp, Dtype, Intrinsic};

/// The interval of each variable in scope, innermost last, and the value of a let where
/// recorded. A `None` interval records a variable whose values are unknown, so that it shadows
/// an outer variable of the same name.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    names: crate::scope::Scope<Known>,
}

/// What the simplifier knows of one variable.
#[derive(Clone, Debug)]
struct Known {
    interval: Option<ConstantInterval>,
    /// The value of a let-bound variable, where recorded (shared by the scope's copies).
    value: Option<Rc<Expr>>,
}

impl Scope {
    /// An empty scope.
    pub fn new() -> Scope {
        Scope::default()
    }

    /// Binds a variable (a loop's, or a let's whose value is not recorded) to its interval, innermost;
    /// `None` when its values are unknown.
    pub fn push(&mut self, name: &str, interval: Option<ConstantInterval>) {
        self.names.push(
            name,
            Known {
                interval,
                value: None,
            },
        );
    }

    /// Binds a let: its interval and its value, which rules may substitute (see `let_value`).
    pub fn push_let(&mut self, name: &str, interval: Option<ConstantInterval>, value: &Expr) {
        let value = Some(Rc::new(value.clone()));
        self.names.push(name, Known { interval, value });
    }

    /// The value of the innermost binding of `name` when it is a let whose variables still
    /// mean here what they meant at the let (none was rebound since).
    pub fn let_value(&self, name: &str) -> Option<&Expr> {
        let (known, rebound) = self.names.get_with_rebound(name)?;
        let value = known.value.as_deref()?;
        let mut any = false;
        value.for_each(&mut |e| {
            if let Expr::Var(v, _) = e {
                any = any || rebound(v);
            }
        });
        (!any).then_some(value)
    }

    /// Unbinds the innermost variable.
    pub fn pop(&mut self) {
        self.names.pop();
    }

    /// The interval of the innermost variable called `name`, if known.
    pub fn get(&self, name: &str) -> Option<ConstantInterval> {
        self.names.get(name).and_then(|known| known.interval)
    }
}

/// Exact endpoints, before they are checked against the type's range.
type Raw = (i128, i128);

/// An interval holding every value of the integer or bool expression `e` (every lane of a
/// vector); `None` for floats.
pub fn bounds(e: &Expr, scope: &Scope) -> Option<ConstantInterval> {
    typed_bounds(e, ty_of(e).dtype, scope)
}

/// [`bounds`] of an `e` known to have element type `dtype` (passed down, so that finding types
/// does not walk the expression again at every level).
fn typed_bounds(e: &Expr, dtype: Dtype, scope: &Scope) -> Option<ConstantInterval> {
    let range = ConstantInterval::of_int_type(dtype)?;
    match raw(e, dtype, scope) {
        Some((lo, hi)) if range.contains_exact(lo, hi) => {
            Some(ConstantInterval::new(lo as i64, hi as i64))
        }
        _ => Some(range),
    }
}

fn raw(e: &Expr, dtype: Dtype, scope: &Scope) -> Option<Raw> {
    let of = |x: &Expr| typed_bounds(x, dtype, scope).and_then(of_interval);
    match e {
        Expr::Const(v) => v.as_i64().map(|v| (v as i128, v as i128)),
        Expr::Var(name, _) => of_interval(scope.get(name)?),
        Expr::Unary(UnOp::Neg, a) => of(a).map(|(lo, hi)| (-hi, -lo)),
        Expr::Binary(op, a, b) if !op.is_comparison() && !op.is_logical() => {
            binary(*op, of(a)?, of(b)?)
        }
        Expr::Select(_, t, f) => {
            let (t, f) = (of(t)?, of(f)?);
            Some((t.0.min(f.0), t.1.max(f.1)))
        }
        Expr::Cast(_, a) => bounds(a, scope).and_then(of_interval),
        Expr::Intrinsic(f, args) => {
            intrinsic(*f, &args.iter().map(of).collect::<Option<Vec<_>>>()?)
        }
        Expr::Ramp {
            base,
            stride,
            lanes,
        } => ramp(of(base)?, of(stride)?, *lanes),
        Expr::Broadcast { value, .. } => of(value),
        Expr::VectorReduce {
            op: ReduceOp::Min | ReduceOp::Max,
            value,
        } => of(value),
        Expr::VectorReduce { .. } => None,
        Expr::Let { name, value, body } => {
            let mut inner = scope.clone();
            inner.push_let(name, bounds(value, scope), value);
            raw(body, dtype, &inner)
        }
        Expr::Binary(..)
        | Expr::Param(..)
        | Expr::Call { .. }
        | Expr::Load { .. }
        | Expr::Unary(UnOp::Not, _) => None,
    }
}

fn of_interval(i: ConstantInterval) -> Option<Raw> {
    Some((i.lo as i128, i.hi as i128))
}

/// The hull of `f` at the four corners: exact for functions monotone in each argument.
fn corners(a: Raw, b: Raw, f: impl Fn(i128, i128) -> i128) -> Raw {
    let v = [f(a.0, b.0), f(a.0, b.1), f(a.1, b.0), f(a.1, b.1)];
    (
        v.into_iter().fold(i128::MAX, i128::min),
        v.into_iter().fold(i128::MIN, i128::max),
    )
}

fn binary(op: BinOp, a: Raw, b: Raw) -> Option<Raw> {
    let excludes_zero = b.0 > 0 || b.1 < 0;
    match op {
        BinOp::Add => Some(corners(a, b, |x, y| x + y)),
        BinOp::Sub => Some(corners(a, b, |x, y| x - y)),
        BinOp::Mul => Some(corners(a, b, |x, y| x * y)),
        // Euclidean division is monotone in each argument on either side of zero.
        BinOp::Div if excludes_zero => Some(corners(a, b, i128::div_euclid)),
        // Division by zero gives 0; otherwise |a / b| <= |a|.
        BinOp::Div => {
            let m = a.0.abs().max(a.1.abs());
            Some((-m, m))
        }
        BinOp::Mod if b.0 > 0 && a.0 >= 0 && a.1 < b.0 => Some(a),
        // The Euclidean remainder lies in 0..|b| (and modulo zero gives 0).
        BinOp::Mod => Some((0, (b.0.abs().max(b.1.abs()) - 1).max(0))),
        _ => None,
    }
}

fn intrinsic(f: Intrinsic, args: &[Raw]) -> Option<Raw> {
    match (f, args) {
        (Intrinsic::Min, &[a, b]) => Some(corners(a, b, i128::min)),
        (Intrinsic::Max, &[a, b]) => Some(corners(a, b, i128::max)),
        (Intrinsic::Clamp, &[x, lo, hi]) => Some(corners(corners(x, lo, i128::max), hi, i128::min)),
        (Intrinsic::Abs, &[a]) if a.0 >= 0 => Some(a),
        (Intrinsic::Abs, &[a]) => Some((0, a.0.abs().max(a.1.abs()))),
        _ => None,
    }
}

/// Lanes `base + i * stride` for `i` in `0..lanes`: between the first and the last lane.
fn ramp(base: Raw, stride: Raw, lanes: u16) -> Option<Raw> {
    let n = lanes.checked_sub(1)? as i128;
    Some((
        base.0 + (stride.0 * n).min(0),
        base.1 + (stride.1 * n).max(0),
    ))
}
