//! Interval bounds of integer expressions: given an interval for every variable, the smallest
//! interval this analysis can prove holds every value an expression takes. Used to find the
//! region of each function a consumer needs (the reference evaluator computes each function over
//! that region). Data-dependent values are bounded by their type (a `u8` index lies in 0..=255).
//!
//! [`ConstantInterval`] (Halide's name) is also the scheduler simplifier's interval; lowering's
//! bounds inference works on intervals whose ends are expressions (its own `Interval`).

use crate::dtype::Dtype;
use crate::ir::{Expr, Intrinsic};
use crate::value::BinOp;

/// A closed interval `lo..=hi` of integers; empty when `lo > hi`. Unbounded ends saturate at
/// `i64::MIN` / `i64::MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConstantInterval {
    /// The least value.
    pub lo: i64,
    /// The greatest value.
    pub hi: i64,
}

impl ConstantInterval {
    /// The empty interval.
    pub const EMPTY: ConstantInterval = ConstantInterval { lo: 1, hi: 0 };
    /// Every `i64`.
    pub const EVERYTHING: ConstantInterval = ConstantInterval {
        lo: i64::MIN,
        hi: i64::MAX,
    };

    /// The interval `lo..=hi` (empty when `lo > hi`).
    pub fn new(lo: i64, hi: i64) -> ConstantInterval {
        ConstantInterval { lo, hi }
    }

    /// The interval holding `v` alone.
    pub fn point(v: i64) -> ConstantInterval {
        ConstantInterval { lo: v, hi: v }
    }

    /// Every value of an integer or bool type; everything for floats.
    pub fn of_type(dtype: Dtype) -> ConstantInterval {
        ConstantInterval::of_int_type(dtype).unwrap_or(ConstantInterval::EVERYTHING)
    }

    /// Every value of an integer or bool type; `None` for floats.
    pub fn of_int_type(dtype: Dtype) -> Option<ConstantInterval> {
        let (lo, hi) = dtype.int_range()?;
        let clamp = |v: i128| v.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        Some(ConstantInterval::new(clamp(lo), clamp(hi)))
    }

    /// Whether it holds no integer (`lo > hi`).
    pub fn is_empty(self) -> bool {
        self.lo > self.hi
    }

    /// The number of integers inside, saturating.
    pub fn len(self) -> u64 {
        if self.is_empty() {
            0
        } else {
            (self.hi as i128 - self.lo as i128 + 1).min(u64::MAX as i128) as u64
        }
    }

    /// The smallest interval holding both.
    pub fn union(self, other: ConstantInterval) -> ConstantInterval {
        if self.is_empty() {
            return other;
        }
        if other.is_empty() {
            return self;
        }
        ConstantInterval::new(self.lo.min(other.lo), self.hi.max(other.hi))
    }

    /// Whether every integer of `other` lies inside (an empty `other` always does).
    pub fn contains(self, other: ConstantInterval) -> bool {
        other.is_empty() || (self.lo <= other.lo && other.hi <= self.hi)
    }

    /// Whether both ends of `lo..=hi`, given exactly (wider than `i64`, as arithmetic on two
    /// intervals' ends may need), lie inside, so they convert to `i64` unchanged.
    pub fn contains_exact(self, lo: i128, hi: i128) -> bool {
        self.lo as i128 <= lo && hi <= self.hi as i128
    }

    /// The hull of `f` applied to every pair of endpoints (exact for monotone `f`).
    fn corners(self, other: ConstantInterval, f: impl Fn(i64, i64) -> i64) -> ConstantInterval {
        if self.is_empty() || other.is_empty() {
            return ConstantInterval::EMPTY;
        }
        let values = [
            f(self.lo, other.lo),
            f(self.lo, other.hi),
            f(self.hi, other.lo),
            f(self.hi, other.hi),
        ];
        let lo = values.iter().copied().min().unwrap_or(i64::MIN);
        let hi = values.iter().copied().max().unwrap_or(i64::MAX);
        ConstantInterval::new(lo, hi)
    }
}

/// Bounds of an integer expression; `var` gives the interval of each pure, reduction or size
/// variable (`None`: unknown, so anything of its type).
pub fn bounds(e: &Expr, var: &dyn Fn(&Expr) -> Option<ConstantInterval>) -> ConstantInterval {
    let dtype = e.dtype();
    let raw = raw_bounds(e, var);
    // Arithmetic in a type wraps: an interval that leaves the type's range proves nothing.
    let range = ConstantInterval::of_type(dtype);
    if range.contains(raw) {
        raw
    } else {
        range
    }
}

fn raw_bounds(e: &Expr, var: &dyn Fn(&Expr) -> Option<ConstantInterval>) -> ConstantInterval {
    let of = |x: &Expr| bounds(x, var);
    match e {
        Expr::Const(v) => v
            .as_i64()
            .map_or(ConstantInterval::EVERYTHING, ConstantInterval::point),
        Expr::Var(_) | Expr::RVar(_) | Expr::Size(_) => {
            var(e).unwrap_or(ConstantInterval::of_type(Dtype::I32))
        }
        Expr::Param(_, t) => var(e).unwrap_or(ConstantInterval::of_type(*t)),
        Expr::Neg(a) => {
            let a = of(a);
            if a.is_empty() {
                a
            } else {
                ConstantInterval::new(a.hi.saturating_neg(), a.lo.saturating_neg())
            }
        }
        Expr::Binary(op, a, b) if !op.is_comparison() && !op.is_logical() => {
            binary_bounds(*op, of(a), of(b))
        }
        Expr::Select(_, t, f) => of(t).union(of(f)),
        Expr::Cast(to, a) if to.is_int() && a.dtype().is_int() => of(a),
        Expr::Intrinsic(f, args) => intrinsic_bounds(*f, args, &of),
        _ => ConstantInterval::of_type(e.dtype()),
    }
}

fn binary_bounds(op: BinOp, a: ConstantInterval, b: ConstantInterval) -> ConstantInterval {
    match op {
        BinOp::Add => a.corners(b, i64::saturating_add),
        BinOp::Sub => a.corners(b, i64::saturating_sub),
        BinOp::Mul => a.corners(b, i64::saturating_mul),
        BinOp::Div if b.lo > 0 || b.hi < 0 => a.corners(b, |x, y| x.div_euclid(y)),
        BinOp::Div => {
            // Division by zero gives 0; otherwise |a / b| <= |a|.
            let m = a.lo.saturating_abs().max(a.hi.saturating_abs());
            if a.is_empty() || b.is_empty() {
                ConstantInterval::EMPTY
            } else {
                ConstantInterval::new(-m, m)
            }
        }
        BinOp::Mod => {
            let m = b.lo.saturating_abs().max(b.hi.saturating_abs());
            if a.is_empty() || b.is_empty() {
                ConstantInterval::EMPTY
            } else if b.lo == b.hi && b.lo > 0 && a.lo >= 0 && a.hi < b.lo {
                a
            } else {
                ConstantInterval::new(0, (m - 1).max(0))
            }
        }
        _ => ConstantInterval::new(0, 1),
    }
}

fn intrinsic_bounds(
    f: Intrinsic,
    args: &[Expr],
    of: &dyn Fn(&Expr) -> ConstantInterval,
) -> ConstantInterval {
    let min = |a: ConstantInterval, b: ConstantInterval| a.corners(b, i64::min);
    let max = |a: ConstantInterval, b: ConstantInterval| a.corners(b, i64::max);
    match (f, args) {
        (Intrinsic::Min, [a, b]) => min(of(a), of(b)),
        (Intrinsic::Max, [a, b]) => max(of(a), of(b)),
        (Intrinsic::Clamp, [x, lo, hi]) => min(max(of(x), of(lo)), of(hi)),
        (Intrinsic::Abs, [a]) => {
            let a = of(a);
            if a.is_empty() {
                a
            } else if a.lo >= 0 {
                a
            } else {
                let m = a.lo.saturating_abs().max(a.hi.saturating_abs());
                ConstantInterval::new(if a.hi < 0 { a.hi.saturating_abs() } else { 0 }, m)
            }
        }
        (_, [first, ..]) => ConstantInterval::of_type(first.dtype()),
        _ => ConstantInterval::EVERYTHING,
    }
}
