//! Rules for vectors: ramps and broadcasts. A lane-wise operation on broadcasts is the
//! broadcast of the scalar operation (every type). Ramp rules are for ints only: the IR
//! computes lane `i` of a ramp as `base + i * stride`, which for floats rounds differently
//! from any rearrangement (and is NaN in lane 0 when `stride` is infinite).

use super::{is_int, is_int_k, mk, rule, Rule};
use crate::ir::{Expr, UnOp};
use crate::simplify::interval::Scope;
use strata_dsl::BinOp;

pub(super) const RULES: &[Rule] = &[
    rule("broadcast(x, 1) -> x, ramp(b, s, 1) -> b (ints)", one_lane),
    rule("ramp(b, 0, n) -> broadcast(b, n) (ints)", zero_stride),
    rule(
        "broadcast(a, n) op broadcast(b, n) -> broadcast(a op b, n)",
        binary_of_broadcasts,
    ),
    rule(
        "-broadcast(a, n) -> broadcast(-a, n), and !",
        unary_of_broadcast,
    ),
    rule(
        "f(broadcast(a, n), ...) -> broadcast(f(a, ...), n)",
        intrinsic_of_broadcasts,
    ),
    rule(
        "select(c, broadcast(a, n), broadcast(b, n)) -> broadcast(select(c, a, b), n)",
        select_of_broadcasts,
    ),
    rule(
        "T(broadcast(a, n)) -> broadcast(T(a), n)",
        cast_of_broadcast,
    ),
    rule(
        "ramp(a, s, n) + broadcast(b, n) -> ramp(a + b, s, n) (ints; also b + ramp, ramp - b)",
        ramp_plus_broadcast,
    ),
    rule(
        "broadcast(b, n) - ramp(a, s, n) -> ramp(b - a, -s, n) (ints)",
        broadcast_minus_ramp,
    ),
    rule(
        "ramp(a, s1, n) + ramp(b, s2, n) -> ramp(a + b, s1 + s2, n) (ints; also -)",
        ramp_plus_ramp,
    ),
    rule(
        "ramp(a, s, n) * broadcast(c, n) -> ramp(a * c, s * c, n) (ints; also c * ramp)",
        ramp_times_broadcast,
    ),
];

fn broadcast(e: &Expr) -> Option<(&Expr, u16)> {
    match e {
        Expr::Broadcast { value, lanes } => Some((value, *lanes)),
        _ => None,
    }
}

fn ramp(e: &Expr) -> Option<(&Expr, &Expr, u16)> {
    match e {
        Expr::Ramp {
            base,
            stride,
            lanes,
        } => Some((base, stride, *lanes)),
        _ => None,
    }
}

fn mk_broadcast(value: Expr, lanes: u16) -> Expr {
    Expr::Broadcast {
        value: Box::new(value),
        lanes,
    }
}

fn mk_ramp(base: Expr, stride: Expr, lanes: u16) -> Expr {
    Expr::Ramp {
        base: Box::new(base),
        stride: Box::new(stride),
        lanes,
    }
}

fn one_lane(e: &Expr, _: &Scope) -> Option<Expr> {
    match e {
        Expr::Broadcast { value, lanes: 1 } => Some((**value).clone()),
        Expr::Ramp { base, lanes: 1, .. } if is_int(base) => Some((**base).clone()),
        _ => None,
    }
}

fn zero_stride(e: &Expr, _: &Scope) -> Option<Expr> {
    let (base, stride, lanes) = ramp(e)?;
    (is_int(base) && is_int_k(stride, 0)).then(|| mk_broadcast(base.clone(), lanes))
}

/// The scalars of broadcasts that all have `lanes` lanes.
fn scalars<'a>(args: impl IntoIterator<Item = &'a Expr>, lanes: u16) -> Option<Vec<Expr>> {
    let each = |a: &'a Expr| {
        broadcast(a)
            .filter(|(_, n)| *n == lanes)
            .map(|(v, _)| v.clone())
    };
    args.into_iter().map(each).collect()
}

fn binary_of_broadcasts(e: &Expr, _: &Scope) -> Option<Expr> {
    let Expr::Binary(op, a, b) = e else {
        return None;
    };
    let (_, lanes) = broadcast(a)?;
    let [x, y] = <[Expr; 2]>::try_from(scalars([&**a, &**b], lanes)?).ok()?;
    Some(mk_broadcast(Expr::binary(*op, x, y), lanes))
}

fn unary_of_broadcast(e: &Expr, _: &Scope) -> Option<Expr> {
    let Expr::Unary(op, a) = e else {
        return None;
    };
    let (x, lanes) = broadcast(a)?;
    Some(mk_broadcast(Expr::Unary(*op, Box::new(x.clone())), lanes))
}

fn intrinsic_of_broadcasts(e: &Expr, _: &Scope) -> Option<Expr> {
    let Expr::Intrinsic(f, args) = e else {
        return None;
    };
    let (_, lanes) = broadcast(args.first()?)?;
    Some(mk_broadcast(
        Expr::Intrinsic(*f, scalars(args, lanes)?),
        lanes,
    ))
}

/// The condition may be a scalar (it picks a whole arm) or a broadcast.
fn select_of_broadcasts(e: &Expr, _: &Scope) -> Option<Expr> {
    let Expr::Select(c, t, f) = e else {
        return None;
    };
    let (_, lanes) = broadcast(t)?;
    let [t, f] = <[Expr; 2]>::try_from(scalars([&**t, &**f], lanes)?).ok()?;
    let c = match broadcast(c) {
        Some((c, n)) if n == lanes => c.clone(),
        _ if super::lanes(c) == 1 => (**c).clone(),
        _ => return None,
    };
    Some(mk_broadcast(
        Expr::Select(Box::new(c), Box::new(t), Box::new(f)),
        lanes,
    ))
}

fn cast_of_broadcast(e: &Expr, _: &Scope) -> Option<Expr> {
    let Expr::Cast(t, a) = e else {
        return None;
    };
    let (x, lanes) = broadcast(a)?;
    let scalar = Expr::Cast(t.with_lanes(1), Box::new(x.clone()));
    Some(mk_broadcast(scalar, lanes))
}

/// `op` and the operands of an integer `a + b` or `a - b`.
fn int_add_sub(e: &Expr) -> Option<(BinOp, &Expr, &Expr)> {
    match e {
        Expr::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) if is_int(e) => Some((*op, a, b)),
        _ => None,
    }
}

/// Lane `i`: `(a + i*s) + b = (a + b) + i*s` modulo 2^bits.
fn ramp_plus_broadcast(e: &Expr, _: &Scope) -> Option<Expr> {
    let (op, l, r) = int_add_sub(e)?;
    if let (Some((a, s, n)), Some((b, m))) = (ramp(l), broadcast(r)) {
        return (n == m).then(|| mk_ramp(mk(op, a, b), s.clone(), n));
    }
    let ((b, m), (a, s, n)) = (broadcast(l)?, ramp(r)?);
    (op == BinOp::Add && n == m).then(|| mk_ramp(mk(op, b, a), s.clone(), n))
}

fn broadcast_minus_ramp(e: &Expr, _: &Scope) -> Option<Expr> {
    let (op, l, r) = int_add_sub(e)?;
    let (b, n) = broadcast(l).filter(|_| op == BinOp::Sub)?;
    let (a, s, m) = ramp(r).filter(|(_, _, m)| *m == n)?;
    let stride = Expr::Unary(UnOp::Neg, Box::new(s.clone()));
    Some(mk_ramp(mk(BinOp::Sub, b, a), stride, m))
}

fn ramp_plus_ramp(e: &Expr, _: &Scope) -> Option<Expr> {
    let (op, l, r) = int_add_sub(e)?;
    let ((a, s1, n), (b, s2, m)) = (ramp(l)?, ramp(r)?);
    (n == m).then(|| mk_ramp(mk(op, a, b), mk(op, s1, s2), n))
}

/// Lane `i`: `(a + i*s) * c = a*c + i*(s*c)` modulo 2^bits.
fn ramp_times_broadcast(e: &Expr, _: &Scope) -> Option<Expr> {
    let Expr::Binary(BinOp::Mul, l, r) = e else {
        return None;
    };
    let (rmp, other) = if ramp(l).is_some() {
        (&**l, &**r)
    } else {
        (&**r, &**l)
    };
    let (a, s, n) = ramp(rmp)?;
    let (c, m) = broadcast(other).filter(|(_, m)| *m == n && is_int(e))?;
    Some(mk_ramp(mk(BinOp::Mul, a, c), mk(BinOp::Mul, s, c), m))
}
