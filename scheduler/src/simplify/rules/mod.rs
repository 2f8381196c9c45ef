//! The rewrite rules, one file per operator group (Halide's `Simplify_*.cpp`, Cranelift's
//! `opts/*.isle`). A rule is a small function from a node (whose children are already
//! simplified) to its replacement; each table lists its rules in the order they are tried, each
//! named by the rewrite it does. The laws every rule keeps are in the module doc of
//! `simplify`; [`rewrite_once`] enforces the cost law, so no rewrite can make code bigger.
//!
//! A rule's name says what it rewrites; "(ints)" marks rules that hold only for integers
//! (wrapping arithmetic modulo 2^bits), "(not floats)" those that hold for ints and bools.

mod add;
mod cast;
mod cmp;
mod lets;
mod linear;
mod math;
mod minmax;
mod mul;
mod select;
mod vector;

use super::interval::Scope;
pub(crate) use super::ty::ty_of;
use crate::ir::{Expr, UnOp};
use strata_dsl::{BinOp, Dtype, Intrinsic, Value};

/// A rewrite of one node; `None` when it does not apply.
pub(crate) type RuleFn = fn(&Expr, &Scope) -> Option<Expr>;

/// A named rewrite.
pub(crate) struct Rule {
    pub name: &'static str,
    pub apply: RuleFn,
}

pub(crate) const fn rule(name: &'static str, apply: RuleFn) -> Rule {
    Rule { name, apply }
}

/// The rule tables that can match `e`, by its operator.
fn tables(e: &Expr) -> &'static [&'static [Rule]] {
    use BinOp::*;
    match e {
        Expr::Binary(Add | Sub, ..) | Expr::Unary(UnOp::Neg, _) => &[add::RULES, vector::RULES],
        Expr::Binary(Mul | Div | Mod, ..) => &[mul::RULES, vector::RULES],
        Expr::Binary(..) | Expr::Unary(UnOp::Not, _) => &[cmp::RULES, vector::RULES],
        Expr::Intrinsic(Intrinsic::Min | Intrinsic::Max | Intrinsic::Clamp, _) => {
            &[minmax::RULES, vector::RULES]
        }
        Expr::Intrinsic(..) => &[math::RULES, vector::RULES],
        Expr::Select(..) => &[select::RULES, vector::RULES],
        Expr::Cast(..) => &[cast::RULES, vector::RULES],
        Expr::Ramp { .. } | Expr::Broadcast { .. } => &[vector::RULES],
        Expr::Let { .. } => &[lets::RULES],
        Expr::Const(_)
        | Expr::Var(..)
        | Expr::Param(..)
        | Expr::Call { .. }
        | Expr::Load { .. }
        | Expr::VectorReduce { .. } => &[],
    }
}

/// Every rule, table by table.
#[cfg(test)]
pub(crate) fn all() -> impl Iterator<Item = &'static Rule> {
    let tables: [&'static [Rule]; 9] = [
        add::RULES,
        mul::RULES,
        cmp::RULES,
        minmax::RULES,
        math::RULES,
        select::RULES,
        cast::RULES,
        vector::RULES,
        lets::RULES,
    ];
    tables.into_iter().flatten()
}

/// The first rule that rewrites `e` without making it costlier, with the rule's name.
pub(crate) fn rewrite_once(e: &Expr, scope: &Scope) -> Option<(&'static str, Expr)> {
    let mut budget = None;
    let mut affordable = |out: &Expr| {
        let limit = *budget.get_or_insert_with(|| cost(e));
        cost(out) <= limit && !same(out, e)
    };
    let rules = tables(e).iter().flat_map(|table| table.iter());
    rules
        .filter_map(|r| (r.apply)(e, scope).map(|out| (r.name, out)))
        .find(|(_, out)| affordable(out))
}

/// The work an expression does: one unit per lane of every node. A rewrite never raises it.
pub(crate) fn cost(e: &Expr) -> usize {
    cost_and_lanes(e).0
}

/// The cost and the lanes of `e`, bottom-up (`Expr::ty` would walk down again at every node).
fn cost_and_lanes(e: &Expr) -> (usize, u16) {
    let kids: Vec<(usize, u16)> = e.children().into_iter().map(cost_and_lanes).collect();
    let lanes = match e {
        Expr::Ramp { lanes, .. } | Expr::Broadcast { lanes, .. } => *lanes,
        Expr::Var(_, t)
        | Expr::Call { ty: t, .. }
        | Expr::Load { ty: t, .. }
        | Expr::Cast(t, _) => t.lanes,
        Expr::Const(_) | Expr::Param(..) => 1,
        // A select's or let's lanes are its value's; every other node's, its first operand's.
        Expr::Select(..) | Expr::Let { .. } => kids.get(1).map_or(1, |k| k.1),
        _ => kids.first().map_or(1, |k| k.1),
    };
    (
        lanes as usize + kids.iter().map(|k| k.0).sum::<usize>(),
        lanes,
    )
}

/// Structural equality with float constants compared by their bits (`==` would equate `0.0`
/// with `-0.0`, which rules like `select(c, x, x) -> x` must not).
pub(crate) fn same(a: &Expr, b: &Expr) -> bool {
    match (a, b) {
        (Expr::Const(x), Expr::Const(y)) => same_value(*x, *y),
        _ => {
            shallow(a) == shallow(b)
                && a.children()
                    .into_iter()
                    .zip(b.children())
                    .all(|(x, y)| same(x, y))
        }
    }
}

fn same_value(a: Value, b: Value) -> bool {
    match (a, b) {
        (Value::F32(x), Value::F32(y)) => x.to_bits() == y.to_bits(),
        (Value::F64(x), Value::F64(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

/// The node with every child replaced by the same placeholder.
pub(crate) fn shallow(e: &Expr) -> Expr {
    e.map_children(&mut |_| Expr::Const(Value::Bool(false)))
}

// ----- helpers shared by the rule files -----

/// `c1 op c2 -> fold(c1 op c2)` for scalar constants, with the language's own semantics, so
/// the folded value is exactly what the program would compute (every type).
pub(crate) fn fold_binary(e: &Expr, _: &Scope) -> Option<Expr> {
    let Expr::Binary(op, a, b) = e else {
        return None;
    };
    match (&**a, &**b) {
        (Expr::Const(x), Expr::Const(y)) => Value::binary(*op, *x, *y).ok().map(Expr::Const),
        _ => None,
    }
}

/// The constant of a scalar constant or of a broadcast of one.
pub(crate) fn cst(e: &Expr) -> Option<Value> {
    match e {
        Expr::Const(v) => Some(*v),
        Expr::Broadcast { value, .. } => cst(value),
        _ => None,
    }
}

/// The value of an integer constant (or broadcast of one).
pub(crate) fn int_cst(e: &Expr) -> Option<i64> {
    cst(e).filter(|v| v.dtype().is_int())?.as_i64()
}

/// Whether `e` is the integer constant `k` (or a broadcast of it).
pub(crate) fn is_int_k(e: &Expr, k: i64) -> bool {
    int_cst(e) == Some(k)
}

/// Whether `e` is a constant float with exactly the bits of `k` (so `-0.0` is not `0.0`).
pub(crate) fn is_float_k(e: &Expr, k: f64) -> bool {
    match cst(e) {
        Some(Value::F32(x)) => x.to_bits() == (k as f32).to_bits(),
        Some(Value::F64(x)) => x.to_bits() == k.to_bits(),
        _ => false,
    }
}

/// A constant with `lanes` lanes (a broadcast for vectors).
pub(crate) fn konst(v: Value, lanes: u16) -> Expr {
    match lanes {
        1 => Expr::Const(v),
        _ => Expr::Broadcast {
            value: Box::new(Expr::Const(v)),
            lanes,
        },
    }
}

/// A constant of the integer type (and lanes) of `like`, with value `k` wrapped into it.
pub(crate) fn int_like(like: &Expr, k: i64) -> Expr {
    let t = ty_of(like);
    konst(Value::I64(k).cast(t.dtype), t.lanes)
}

pub(crate) fn lanes(e: &Expr) -> u16 {
    ty_of(e).lanes
}

pub(crate) fn dtype(e: &Expr) -> Dtype {
    ty_of(e).dtype
}

/// Integer types (not bool, not floats): the rules that rely on exact modular arithmetic.
pub(crate) fn is_int(e: &Expr) -> bool {
    dtype(e).is_int()
}

pub(crate) fn is_float(e: &Expr) -> bool {
    dtype(e).is_float()
}

/// The operands of `e` if it is `a op b`.
pub(crate) fn bin(e: &Expr, op: BinOp) -> Option<(&Expr, &Expr)> {
    match e {
        Expr::Binary(o, a, b) if *o == op => Some((a, b)),
        _ => None,
    }
}

/// The arguments of `e` if it is the intrinsic `f`.
pub(crate) fn call(e: &Expr, f: Intrinsic) -> Option<&[Expr]> {
    match e {
        Expr::Intrinsic(g, args) if *g == f => Some(args),
        _ => None,
    }
}

pub(crate) fn mk(op: BinOp, a: &Expr, b: &Expr) -> Expr {
    Expr::binary(op, a.clone(), b.clone())
}

/// Folds `a op b` on constants of the same type.
pub(crate) fn fold(op: BinOp, a: Value, b: Value) -> Option<Value> {
    Value::binary(op, a, b).ok()
}
