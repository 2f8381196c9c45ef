//! Rules for casts, whose semantics are Rust's `as`: integer to integer wraps, float to integer
//! rounds toward zero and saturates, to bool means "is not zero".

use super::{rule, ty_of, Rule};
use crate::ir::Expr;
use crate::simplify::interval::Scope;
use strata_dsl::Dtype;

pub(super) const RULES: &[Rule] = &[
    rule("T(c) -> fold", fold),
    rule("T(x) -> x if x: T", no_op),
    rule("A(B(x)) -> x if x: A and B holds every A", round_trip),
];

fn fold(e: &Expr, _: &Scope) -> Option<Expr> {
    match e {
        Expr::Cast(t, a) if !t.is_vector() => match &**a {
            Expr::Const(v) => Some(Expr::Const(v.cast(t.dtype))),
            _ => None,
        },
        _ => None,
    }
}

fn no_op(e: &Expr, _: &Scope) -> Option<Expr> {
    match e {
        Expr::Cast(t, a) if ty_of(a) == *t => Some((**a).clone()),
        _ => None,
    }
}

/// Whether every value of `a` converts to `b` and back unchanged.
fn holds(b: Dtype, a: Dtype) -> bool {
    let int_range = |t: Dtype| t.int_range().filter(|_| t.is_int());
    match (int_range(a), int_range(b)) {
        _ if a == b || a == Dtype::Bool => true,
        (Some(ra), Some(rb)) => rb.0 <= ra.0 && ra.1 <= rb.1,
        // Integers of up to 24 (f32) or 53 (f64) bits are exact in the float.
        (Some(_), None) if b == Dtype::F32 => a.bytes() <= 2,
        (Some(_), None) if b == Dtype::F64 => a.bytes() <= 4,
        _ => a == Dtype::F32 && b == Dtype::F64,
    }
}

fn round_trip(e: &Expr, _: &Scope) -> Option<Expr> {
    let Expr::Cast(a, inner) = e else {
        return None;
    };
    let Expr::Cast(b, x) = &**inner else {
        return None;
    };
    (ty_of(x) == *a && holds(b.dtype, a.dtype)).then(|| (**x).clone())
}
