//! The simplifier: one-line rule tests (every rule fires somewhere below), tests that rules do
//! not fire where they would be wrong, property tests that simplification and CSE keep every
//! value bit-exact (evaluated by the loop-IR interpreter), and statement-level tests of
//! bounds-aware index simplification, loop cleanup and hoisting.

use crate::interp::{eval_expr, interpret, VValue};
use crate::ir::{BufferArg, UnOp};
use crate::simplify::{
    cse, rule_names, simplify, simplify_expr, simplify_expr_traced, simplify_expr_with_bounds,
    ConstantInterval, Scope,
};
use crate::{Expr, ForKind, LoweredKernel, Stmt, Type};
use proptest::prelude::*;
use proptest::test_runner::Config;
use std::collections::{BTreeSet, HashMap};
use strata_dsl::{Args, BinOp, Buffer, Dtype, Intrinsic, Value};

// ----- small constructors -----

fn var(name: &str) -> Expr {
    Expr::var(name)
}

fn var_t(name: &str, dtype: Dtype) -> Expr {
    Expr::Var(name.into(), Type::scalar(dtype))
}

fn fvar(name: &str) -> Expr {
    var_t(name, Dtype::F32)
}

fn bvar(name: &str) -> Expr {
    var_t(name, Dtype::Bool)
}

fn int(v: i32) -> Expr {
    Expr::int(v)
}

fn c(v: Value) -> Expr {
    Expr::Const(v)
}

fn f(v: f32) -> Expr {
    c(Value::F32(v))
}

fn b(v: bool) -> Expr {
    c(Value::Bool(v))
}

fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::binary(op, a, b)
}

fn add(a: Expr, b: Expr) -> Expr {
    bin(BinOp::Add, a, b)
}

fn sub(a: Expr, b: Expr) -> Expr {
    bin(BinOp::Sub, a, b)
}

fn mul(a: Expr, b: Expr) -> Expr {
    bin(BinOp::Mul, a, b)
}

fn div(a: Expr, b: Expr) -> Expr {
    bin(BinOp::Div, a, b)
}

fn rem(a: Expr, b: Expr) -> Expr {
    bin(BinOp::Mod, a, b)
}

fn lt(a: Expr, b: Expr) -> Expr {
    bin(BinOp::Lt, a, b)
}

fn le(a: Expr, b: Expr) -> Expr {
    bin(BinOp::Le, a, b)
}

/// `x` confined to `[0, 1000]`, so linear forms over it provably fit in i32.
fn clamp(x: Expr) -> Expr {
    call(Intrinsic::Clamp, vec![x, int(0), int(1000)])
}

fn neg(a: Expr) -> Expr {
    Expr::Unary(UnOp::Neg, Box::new(a))
}

fn not(a: Expr) -> Expr {
    Expr::Unary(UnOp::Not, Box::new(a))
}

fn call(f: Intrinsic, args: Vec<Expr>) -> Expr {
    Expr::Intrinsic(f, args)
}

fn min(a: Expr, b: Expr) -> Expr {
    call(Intrinsic::Min, vec![a, b])
}

fn max(a: Expr, b: Expr) -> Expr {
    call(Intrinsic::Max, vec![a, b])
}

fn select(c: Expr, t: Expr, f: Expr) -> Expr {
    Expr::Select(Box::new(c), Box::new(t), Box::new(f))
}

fn cast(d: Dtype, a: Expr) -> Expr {
    let lanes = a.ty().lanes;
    Expr::Cast(Type::scalar(d).with_lanes(lanes), Box::new(a))
}

fn ramp(base: Expr, stride: Expr, lanes: u16) -> Expr {
    Expr::Ramp {
        base: Box::new(base),
        stride: Box::new(stride),
        lanes,
    }
}

fn bc(value: Expr, lanes: u16) -> Expr {
    Expr::Broadcast {
        value: Box::new(value),
        lanes,
    }
}

fn let_(name: &str, value: Expr, body: Expr) -> Expr {
    Expr::Let {
        name: name.into(),
        value: Box::new(value),
        body: Box::new(body),
    }
}

fn load(buffer: &str, index: Expr) -> Expr {
    Expr::Load {
        buffer: buffer.into(),
        index: Box::new(index),
        ty: Type::I32,
    }
}

/// Exact comparison: `Debug` tells `-0.0` from `0.0`.
fn assert_same(got: &Expr, want: &Expr, input: &Expr) {
    assert_eq!(
        format!("{got:?}"),
        format!("{want:?}"),
        "simplifying {input}: got {got}, want {want}"
    );
}

// ----- (1) one rule per line -----

/// `(input, expected)`: the rule tests, grouped by rule file.
fn rule_cases() -> Vec<(Expr, Expr)> {
    let (x, y, z) = (var("x"), var("y"), var("z"));
    let (xf, yf) = (fvar("xf"), fvar("yf"));
    let bb = bvar("b");
    let x8 = var_t("x8", Dtype::U8);
    let x16 = var_t("x16", Dtype::I16);
    let wide8 = cast(Dtype::I32, x8.clone());
    vec![
        // add.rs
        (add(int(3), int(4)), int(7)),
        (neg(int(5)), int(-5)),
        (add(int(3), x.clone()), add(x.clone(), int(3))),
        (add(x.clone(), int(0)), x.clone()),
        (sub(x.clone(), int(0)), x.clone()),
        (add(xf.clone(), f(-0.0)), xf.clone()),
        (sub(xf.clone(), f(0.0)), xf.clone()),
        (sub(int(0), x.clone()), neg(x.clone())),
        (neg(neg(xf.clone())), xf.clone()),
        (neg(sub(x.clone(), y.clone())), sub(y.clone(), x.clone())),
        (add(x.clone(), neg(y.clone())), sub(x.clone(), y.clone())),
        (
            sub(xf.clone(), neg(yf.clone())),
            add(xf.clone(), yf.clone()),
        ),
        (add(add(x.clone(), int(3)), int(4)), add(x.clone(), int(7))),
        (add(sub(x.clone(), int(3)), int(4)), add(x.clone(), int(1))),
        (sub(add(x.clone(), int(3)), int(4)), sub(x.clone(), int(1))),
        (add(x.clone(), int(-5)), sub(x.clone(), int(5))),
        (add(x.clone(), int(i32::MIN)), add(x.clone(), int(i32::MIN))),
        (sub(sub(x.clone(), int(3)), int(4)), sub(x.clone(), int(7))),
        (sub(x.clone(), x.clone()), int(0)),
        (sub(add(x.clone(), y.clone()), y.clone()), x.clone()),
        (sub(add(x.clone(), y.clone()), x.clone()), y.clone()),
        (add(sub(x.clone(), y.clone()), y.clone()), x.clone()),
        (add(x.clone(), sub(y.clone(), x.clone())), y.clone()),
        (sub(x.clone(), sub(x.clone(), y.clone())), y.clone()),
        (
            sub(add(x.clone(), int(3)), add(y.clone(), int(1))),
            add(sub(x.clone(), y.clone()), int(2)),
        ),
        (
            sub(add(x.clone(), int(3)), add(y.clone(), int(3))),
            sub(x.clone(), y.clone()),
        ),
        (
            sub(sub(x.clone(), int(3)), add(y.clone(), int(1))),
            sub(sub(x.clone(), y.clone()), int(4)),
        ),
        // mul.rs
        (mul(int(6), int(7)), int(42)),
        (div(int(-7), int(2)), int(-4)),
        (rem(int(-7), int(2)), int(1)),
        (div(int(5), int(0)), int(0)),
        (mul(int(3), x.clone()), mul(x.clone(), int(3))),
        (mul(x.clone(), int(1)), x.clone()),
        (div(xf.clone(), f(1.0)), xf.clone()),
        (mul(x.clone(), int(0)), int(0)),
        (mul(x.clone(), int(-1)), neg(x.clone())),
        (div(x.clone(), int(-1)), neg(x.clone())),
        (mul(mul(x.clone(), int(3)), int(4)), mul(x.clone(), int(12))),
        (div(x.clone(), int(0)), int(0)),
        (rem(x.clone(), int(0)), int(0)),
        (rem(x.clone(), int(1)), int(0)),
        (div(int(0), x.clone()), int(0)),
        (rem(x.clone(), x.clone()), int(0)),
        // 0 <= u8 < 256 and x8 * 256 + 255 fits in i32: the split rules need no loop.
        (
            div(add(mul(wide8.clone(), int(256)), int(255)), int(256)),
            wide8.clone(),
        ),
        (rem(add(mul(x.clone(), int(8)), int(7)), int(8)), int(7)),
        (div(wide8.clone(), int(256)), int(0)),
        (rem(wide8.clone(), int(300)), wide8.clone()),
        // cmp.rs
        (lt(int(3), int(4)), b(true)),
        (not(b(true)), b(false)),
        (lt(int(3), x.clone()), bin(BinOp::Gt, x.clone(), int(3))),
        (lt(x.clone(), x.clone()), b(false)),
        (bin(BinOp::Le, x.clone(), x.clone()), b(true)),
        (lt(wide8.clone(), int(256)), b(true)),
        (not(not(bb.clone())), bb.clone()),
        (
            not(lt(x.clone(), y.clone())),
            bin(BinOp::Ge, x.clone(), y.clone()),
        ),
        (
            not(bin(BinOp::Eq, xf.clone(), yf.clone())),
            bin(BinOp::Ne, xf.clone(), yf.clone()),
        ),
        (bin(BinOp::And, b(true), bb.clone()), bb.clone()),
        (bin(BinOp::And, bb.clone(), b(false)), b(false)),
        (bin(BinOp::Or, b(false), bb.clone()), bb.clone()),
        (bin(BinOp::Or, bb.clone(), b(true)), b(true)),
        (bin(BinOp::And, bb.clone(), bb.clone()), bb.clone()),
        // minmax.rs
        (min(int(3), int(4)), int(3)),
        (
            call(Intrinsic::Clamp, vec![int(10), int(0), int(5)]),
            int(5),
        ),
        (min(xf.clone(), xf.clone()), xf.clone()),
        (min(int(3), x.clone()), min(x.clone(), int(3))),
        (min(min(x.clone(), int(3)), int(5)), min(x.clone(), int(3))),
        (max(max(x.clone(), int(3)), int(5)), max(x.clone(), int(5))),
        (min(max(x.clone(), int(5)), int(3)), int(3)),
        (min(x.clone(), max(x.clone(), y.clone())), x.clone()),
        (max(min(y.clone(), x.clone()), x.clone()), x.clone()),
        (min(wide8.clone(), int(300)), wide8.clone()),
        (max(wide8.clone(), int(-1)), wide8.clone()),
        (
            call(Intrinsic::Clamp, vec![wide8.clone(), int(0), int(255)]),
            wide8.clone(),
        ),
        // math.rs
        (call(Intrinsic::Abs, vec![int(-3)]), int(3)),
        (call(Intrinsic::Floor, vec![f(2.5)]), f(2.0)),
        (call(Intrinsic::Round, vec![f(2.5)]), f(2.0)),
        (call(Intrinsic::Sqrt, vec![f(4.0)]), f(2.0)),
        (
            call(Intrinsic::FastExp, vec![f(1.0)]),
            f(strata_dsl::fast_math::fast_exp_f32(1.0)),
        ),
        (
            call(Intrinsic::FastPow, vec![f(2.0), f(10.0)]),
            f(strata_dsl::fast_math::fast_pow_f32(2.0, 10.0)),
        ),
        (
            call(Intrinsic::Abs, vec![call(Intrinsic::Abs, vec![x.clone()])]),
            call(Intrinsic::Abs, vec![x.clone()]),
        ),
        (call(Intrinsic::Abs, vec![x8.clone()]), x8.clone()),
        (
            call(
                Intrinsic::Floor,
                vec![call(Intrinsic::Ceil, vec![xf.clone()])],
            ),
            call(Intrinsic::Ceil, vec![xf.clone()]),
        ),
        // select.rs
        (select(b(true), x.clone(), y.clone()), x.clone()),
        (select(bb.clone(), xf.clone(), xf.clone()), xf.clone()),
        (
            select(not(bb.clone()), x.clone(), y.clone()),
            select(bb.clone(), y.clone(), x.clone()),
        ),
        (select(bb.clone(), b(true), b(false)), bb.clone()),
        (select(bb.clone(), b(false), b(true)), not(bb.clone())),
        (
            select(
                bb.clone(),
                select(bb.clone(), x.clone(), y.clone()),
                z.clone(),
            ),
            select(bb.clone(), x.clone(), z.clone()),
        ),
        // cast.rs
        (cast(Dtype::I32, c(Value::U8(200))), int(200)),
        (cast(Dtype::U8, int(300)), c(Value::U8(44))),
        (cast(Dtype::I32, x.clone()), x.clone()),
        (cast(Dtype::I16, cast(Dtype::I32, x16.clone())), x16.clone()),
        (cast(Dtype::F32, cast(Dtype::F64, xf.clone())), xf.clone()),
        // vector.rs
        (bc(x.clone(), 1), x.clone()),
        (ramp(x.clone(), int(0), 4), bc(x.clone(), 4)),
        (
            add(bc(x.clone(), 4), bc(y.clone(), 4)),
            bc(add(x.clone(), y.clone()), 4),
        ),
        (neg(bc(xf.clone(), 4)), bc(neg(xf.clone()), 4)),
        (
            min(bc(x.clone(), 4), bc(y.clone(), 4)),
            bc(min(x.clone(), y.clone()), 4),
        ),
        (
            select(bb.clone(), bc(x.clone(), 4), bc(y.clone(), 4)),
            bc(select(bb.clone(), x.clone(), y.clone()), 4),
        ),
        (
            cast(Dtype::F32, bc(x.clone(), 4)),
            bc(cast(Dtype::F32, x.clone()), 4),
        ),
        (
            add(ramp(x.clone(), int(1), 4), bc(y.clone(), 4)),
            ramp(add(x.clone(), y.clone()), int(1), 4),
        ),
        (
            sub(bc(y.clone(), 4), ramp(x.clone(), int(1), 4)),
            ramp(sub(y.clone(), x.clone()), int(-1), 4),
        ),
        (
            add(ramp(x.clone(), int(1), 4), ramp(y.clone(), int(2), 4)),
            ramp(add(x.clone(), y.clone()), int(3), 4),
        ),
        (
            mul(ramp(x.clone(), int(2), 4), bc(int(3), 4)),
            ramp(mul(x.clone(), int(3)), int(6), 4),
        ),
        // linear.rs, through add.rs, minmax.rs and cmp.rs: `a` is bounded, `b = a + 63`
        (
            let_(
                "a",
                clamp(x.clone()),
                let_("b", add(var("a"), int(63)), sub(var("b"), var("a"))),
            ),
            int(63),
        ),
        (
            let_(
                "a",
                clamp(x.clone()),
                let_("b", add(var("a"), int(63)), min(var("a"), var("b"))),
            ),
            let_("a", clamp(x.clone()), var("a")),
        ),
        (
            let_(
                "a",
                clamp(x.clone()),
                le(add(var("a"), int(7)), add(var("a"), int(63))),
            ),
            b(true),
        ),
        // lets.rs
        (let_("t", add(x.clone(), int(1)), y.clone()), y.clone()),
        (
            let_("t", x.clone(), add(var("t"), var("t"))),
            add(x.clone(), x.clone()),
        ),
    ]
}

#[test]
fn every_rule_rewrites_as_written() {
    let mut fired = BTreeSet::new();
    for (input, want) in rule_cases() {
        let (got, trace) = simplify_expr_traced(&input, &Scope::new());
        assert_same(&got, &want, &input);
        fired.extend(trace);
    }
    let unused: Vec<_> = rule_names()
        .into_iter()
        .filter(|r| !fired.contains(r))
        .collect();
    assert!(unused.is_empty(), "rules no test exercises: {unused:#?}");
}

#[test]
fn constants_fold_inside_larger_expressions() {
    // ((x + 1) + 2) * 1 - (0 + x) -> 3
    let e = sub(
        mul(add(add(var("x"), int(1)), int(2)), int(1)),
        add(int(0), var("x")),
    );
    assert_same(&simplify_expr(&e), &int(3), &e);
}

// ----- (2) rules that must not fire -----

#[test]
fn rules_do_not_fire_where_they_would_be_wrong() {
    let (x, xf, yf) = (var("x"), fvar("xf"), fvar("yf"));
    let unchanged = [
        // Floats: inf * 0 is NaN, -1 * 0 is -0.0, -0.0 + 0.0 is +0.0, inf - inf is NaN.
        mul(xf.clone(), f(0.0)),
        add(xf.clone(), f(0.0)),
        sub(xf.clone(), xf.clone()),
        sub(f(0.0), xf.clone()),
        // NaN: x < x, !(x < y) and min/max reorderings differ.
        lt(xf.clone(), xf.clone()),
        not(lt(xf.clone(), yf.clone())),
        min(f(3.0), xf.clone()),
        min(min(xf.clone(), f(1.0)), f(2.0)),
        max(xf.clone(), min(xf.clone(), yf.clone())),
        // select of arms equal under `==` but not bit-identical.
        select(bvar("b"), f(0.0), f(-0.0)),
        // Wrapping: x * 2 can overflow, so (x * 2) / 2 is not x; nor is x / x always 1.
        div(mul(x.clone(), int(2)), int(2)),
        div(x.clone(), x.clone()),
        // x + 1 < 5 is not x < 4 when x + 1 wraps.
        lt(add(x.clone(), int(1)), int(5)),
        // Wrapping breaks (x * 3 + 1) % 3 == 1: 3 does not divide 2^32.
        rem(add(mul(x.clone(), int(3)), int(1)), int(3)),
        // Float ramps compute base + i * stride, which rearranging changes.
        ramp(xf.clone(), f(0.0), 4),
        add(ramp(xf.clone(), f(1.0), 4), bc(yf.clone(), 4)),
        // Transcendental functions are not folded (the JIT may compute them differently).
        call(Intrinsic::Exp, vec![f(1.0)]),
        // i32 -> f32 -> i32 loses bits.
        cast(Dtype::I32, cast(Dtype::F32, x.clone())),
    ];
    for e in unchanged {
        assert_same(&simplify_expr(&e), &e, &e);
    }
}

#[test]
fn split_division_needs_a_bounded_outer_variable() {
    let e = div(add(mul(var("xo"), int(8)), var("xi")), int(8));
    let m = rem(add(mul(var("xo"), int(8)), var("xi")), int(8));
    let mut scope = Scope::new();
    scope.push("xi", Some(ConstantInterval::new(0, 7)));
    // xo unknown: xo * 8 may wrap, which changes the quotient but not the remainder mod 8.
    assert_same(&simplify_expr_with_bounds(&e, &scope), &e, &e);
    assert_same(&simplify_expr_with_bounds(&m, &scope), &var("xi"), &m);
    scope.push("xo", Some(ConstantInterval::new(0, 1000)));
    assert_same(&simplify_expr_with_bounds(&e, &scope), &var("xo"), &e);
    // xi may reach 8: no rewrite.
    scope.push("xi", Some(ConstantInterval::new(0, 8)));
    assert_same(&simplify_expr_with_bounds(&e, &scope), &e, &e);
    assert_same(&simplify_expr_with_bounds(&m, &scope), &m, &m);
}

#[test]
fn min_and_comparisons_use_intervals() {
    let mut scope = Scope::new();
    scope.push("i", Some(ConstantInterval::new(0, 7)));
    let i = var("i");
    let cases = [
        (min(i.clone(), int(8)), i.clone()),
        (min(add(i.clone(), int(1)), int(8)), add(i.clone(), int(1))),
        (max(i.clone(), int(0)), i.clone()),
        (lt(i.clone(), int(8)), b(true)),
        (bin(BinOp::Ge, i.clone(), int(8)), b(false)),
        (lt(i.clone(), int(7)), lt(i.clone(), int(7))),
    ];
    for (input, want) in cases {
        assert_same(&simplify_expr_with_bounds(&input, &scope), &want, &input);
    }
}

// ----- CSE and lets -----

#[test]
fn cse_names_repeated_subexpressions() {
    let (x, y) = (var("x"), var("y"));
    let xy1 = add(mul(x.clone(), y.clone()), int(1));
    let e = mul(xy1.clone(), xy1.clone());
    let t0 = var("t0");
    assert_same(
        &cse(&e),
        &let_("t0", xy1.clone(), mul(t0.clone(), t0.clone())),
        &e,
    );
    // a*b is used inside a*b + 1 and on its own: only it is named.
    let e = add(xy1.clone(), mul(x.clone(), y.clone()));
    let want = let_(
        "t0",
        mul(x.clone(), y.clone()),
        add(add(t0.clone(), int(1)), t0.clone()),
    );
    assert_same(&cse(&e), &want, &e);
    // Variables and constants are never named; t0 is taken, so the name is t1.
    let e = add(add(var("t0"), int(1)), add(var("t0"), int(1)));
    let t1 = var("t1");
    assert_same(
        &cse(&e),
        &let_("t1", add(var("t0"), int(1)), add(t1.clone(), t1.clone())),
        &e,
    );
    let e = add(x.clone(), x.clone());
    assert_same(&cse(&e), &e, &e);
}

#[test]
fn cse_does_not_move_a_load_out_of_a_select_arm() {
    // The load runs only when i < n: naming it outside the select could read out of bounds.
    let (i, n) = (var("i"), var("n"));
    let guarded = select(
        lt(i.clone(), n.clone()),
        add(load("A", i.clone()), load("A", i.clone())),
        int(0),
    );
    let e = add(
        guarded.clone(),
        select(lt(i.clone(), n.clone()), load("A", i.clone()), int(1)),
    );
    let got = cse(&e);
    let Expr::Let { value, body, .. } = &got else {
        panic!("expected the condition to be named, got {got}");
    };
    assert_same(value, &lt(i.clone(), n.clone()), &e);
    let mut load_lets = 0;
    body.for_each(&mut |x| {
        load_lets +=
            matches!(x, Expr::Let { value, .. } if matches!(**value, Expr::Load { .. })) as usize
    });
    assert_eq!(load_lets, 1, "the load is named inside its arm only: {got}");
}

#[test]
fn dead_and_trivial_lets_go() {
    let e = let_(
        "a",
        add(var("x"), int(1)),
        let_("b", var("y"), mul(var("b"), var("b"))),
    );
    assert_same(&simplify_expr(&e), &mul(var("y"), var("y")), &e);
    // Inlining `b = y` under a let that rebinds y would capture it: kept.
    let e = let_(
        "b",
        var("y"),
        let_("y", add(var("z"), int(1)), mul(var("b"), var("y"))),
    );
    assert_same(&simplify_expr(&e), &e, &e);
}

// ----- (3) properties: values are unchanged, bit for bit -----

const VARS: [&str; 3] = ["x", "y", "z"];

/// Equal lane by lane: integers exactly, floats by bits (any NaN equals any NaN: IEEE leaves
/// NaN payloads unspecified).
fn bit_equal(a: &VValue, b: &VValue) -> bool {
    let lane = |x: &Value, y: &Value| match (x, y) {
        (Value::F32(x), Value::F32(y)) => (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits(),
        (Value::F64(x), Value::F64(y)) => (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits(),
        _ => x == y,
    };
    a.lanes().len() == b.lanes().len() && a.lanes().iter().zip(b.lanes()).all(|(x, y)| lane(x, y))
}

fn value_strategy(dtype: Dtype) -> BoxedStrategy<Value> {
    let small = (-4i64..=4).prop_map(move |v| Value::I64(v).cast(dtype));
    match dtype {
        Dtype::F32 => prop_oneof![
            prop::sample::select(vec![
                0.0f32,
                -0.0,
                1.0,
                -1.0,
                0.5,
                f32::INFINITY,
                f32::NEG_INFINITY,
                f32::NAN
            ]),
            any::<f32>(),
        ]
        .prop_map(Value::F32)
        .boxed(),
        _ => prop_oneof![
            small,
            any::<i64>().prop_map(move |v| Value::I64(v).cast(dtype))
        ]
        .boxed(),
    }
}

fn const_strategy(dtype: Dtype) -> BoxedStrategy<Expr> {
    let edges = prop::sample::select(vec![i64::MIN, i64::MAX, -1, 0, 1, 2, 8, 255, 256]);
    let edge = edges.prop_map(move |v| Expr::Const(Value::I64(v).cast(dtype)));
    prop_oneof![value_strategy(dtype).prop_map(Expr::Const), edge].boxed()
}

/// Random expressions of one scalar type over `x`, `y`, `z`, with conditions comparing them.
fn expr_strategy(dtype: Dtype) -> BoxedStrategy<Expr> {
    let leaf = prop_oneof![
        2 => prop::sample::select(VARS.to_vec()).prop_map(move |n| var_t(n, dtype)),
        1 => const_strategy(dtype),
    ];
    leaf.prop_recursive(5, 48, 3, move |inner| {
        let arith = prop::sample::select(vec![BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Mod]);
        let cmp = prop::sample::select(vec![BinOp::Lt, BinOp::Le, BinOp::Eq, BinOp::Ne, BinOp::Gt, BinOp::Ge]);
        let minmax = prop::sample::select(vec![Intrinsic::Min, Intrinsic::Max]);
        let cond = (cmp, inner.clone(), inner.clone()).prop_map(|(op, a, b)| bin(op, a, b));
        let cond = prop_oneof![
            3 => cond.clone(),
            1 => cond.clone().prop_map(not),
            1 => (cond.clone(), cond).prop_map(|(a, b)| bin(BinOp::And, a, b)),
        ];
        let unary = if dtype == Dtype::F32 {
            prop::sample::select(vec![Intrinsic::Abs, Intrinsic::Floor, Intrinsic::Ceil, Intrinsic::Sqrt, Intrinsic::FastExp, Intrinsic::FastLog]).boxed()
        } else if dtype.is_float() {
            prop::sample::select(vec![Intrinsic::Abs, Intrinsic::Floor, Intrinsic::Ceil, Intrinsic::Sqrt]).boxed()
        } else {
            Just(Intrinsic::Abs).boxed()
        };
        // The shapes the split rules look for: (a * k + b) / k and (a * k + b) % k.
        let k = prop::sample::select(vec![1i64, 2, 3, 4, 8, 16]).prop_map(move |k| c(Value::I64(k).cast(dtype)));
        let split_op = prop::sample::select(vec![BinOp::Div, BinOp::Mod]);
        let split = (split_op, inner.clone(), inner.clone(), k)
            .prop_map(|(op, a, b, k)| bin(op, add(mul(a, k.clone()), b), k));
        prop_oneof![
            6 => (arith, inner.clone(), inner.clone()).prop_map(|(op, a, b)| bin(op, a, b)),
            1 => split,
            2 => (minmax, inner.clone(), inner.clone()).prop_map(|(f, a, b)| call(f, vec![a, b])),
            1 => (inner.clone(), inner.clone(), inner.clone()).prop_map(|(x, lo, hi)| call(Intrinsic::Clamp, vec![x, lo, hi])),
            1 => (unary, inner.clone()).prop_map(|(f, a)| call(f, vec![a])),
            1 => inner.clone().prop_map(neg),
            2 => (cond, inner.clone(), inner.clone()).prop_map(|(c, t, f)| select(c, t, f)),
            1 => (inner.clone(), inner).prop_map(|(v, body)| let_("x", v, body)),
        ]
    })
    .boxed()
}

fn bindings_strategy(dtype: Dtype) -> impl Strategy<Value = HashMap<String, VValue>> {
    prop::collection::vec(value_strategy(dtype), VARS.len()).prop_map(|values| {
        VARS.iter()
            .zip(values)
            .map(|(n, v)| (n.to_string(), VValue::scalar(v)))
            .collect()
    })
}

/// One unit per lane of every node: the simplifier's cost, which it must never raise.
fn cost(e: &Expr) -> usize {
    e.ty().lanes as usize + e.children().into_iter().map(cost).sum::<usize>()
}

fn check_preserved(e: &Expr, vars: &HashMap<String, VValue>) -> Result<(), TestCaseError> {
    let want = eval_expr(e, vars).map_err(|err| TestCaseError::fail(format!("{e}: {err}")))?;
    let simplified = simplify_expr(e);
    let again = simplify_expr(&simplified);
    prop_assert!(
        format!("{again:?}") == format!("{simplified:?}"),
        "not a fixed point: {} -> {}",
        simplified,
        again
    );
    prop_assert!(
        cost(&simplified) <= cost(e),
        "{} grew into {}",
        e,
        simplified
    );
    for (what, got) in [
        ("simplify", &simplified),
        ("cse", &cse(e)),
        ("cse after simplify", &cse(&simplified)),
    ] {
        let value = eval_expr(got, vars)
            .map_err(|err| TestCaseError::fail(format!("{what}: {got}: {err}")))?;
        prop_assert!(
            bit_equal(&value, &want),
            "{what}: {e} = {want:?} but {got} = {value:?}"
        );
    }
    Ok(())
}

fn typed_case(dtype: Dtype) -> impl Strategy<Value = (Expr, HashMap<String, VValue>)> {
    (expr_strategy(dtype), bindings_strategy(dtype))
}

proptest! {
    #![proptest_config(Config { cases: 1000, ..Config::default() })]

    #[test]
    fn simplify_and_cse_keep_i32_values((e, vars) in typed_case(Dtype::I32)) {
        check_preserved(&e, &vars)?;
    }

    #[test]
    fn simplify_and_cse_keep_u8_values((e, vars) in typed_case(Dtype::U8)) {
        check_preserved(&e, &vars)?;
    }

    #[test]
    fn simplify_and_cse_keep_i16_values((e, vars) in typed_case(Dtype::I16)) {
        check_preserved(&e, &vars)?;
    }

    #[test]
    fn simplify_and_cse_keep_f32_values((e, vars) in typed_case(Dtype::F32)) {
        check_preserved(&e, &vars)?;
    }

    #[test]
    fn simplify_and_cse_keep_vector_values(
        (e, vars) in (vector_strategy(), bindings_strategy(Dtype::I32))
    ) {
        check_preserved(&e, &vars)?;
    }

    #[test]
    fn bounds_aware_rules_hold_inside_their_intervals(
        (e, lo, len, seeds) in (split_strategy(), -20i64..20, 1i64..20, prop::collection::vec(any::<u64>(), 3))
    ) {
        let mut scope = Scope::new();
        let mut vars = HashMap::new();
        for (name, seed) in VARS.iter().zip(seeds) {
            scope.push(name, Some(ConstantInterval::new(lo, lo + len - 1)));
            let v = lo + (seed % len as u64) as i64;
            vars.insert(name.to_string(), VValue::scalar(Value::I32(v as i32)));
        }
        let want = eval_expr(&e, &vars).map_err(|err| TestCaseError::fail(err.to_string()))?;
        let got = simplify_expr_with_bounds(&e, &scope);
        let value = eval_expr(&got, &vars).map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert!(bit_equal(&value, &want), "{e} = {want:?} but {got} = {value:?}");
    }
}

/// `i32x4` expressions from ramps and broadcasts of scalar expressions.
fn vector_strategy() -> BoxedStrategy<Expr> {
    let scalar = expr_strategy(Dtype::I32);
    let leaf = prop_oneof![
        scalar.clone().prop_map(|s| bc(s, 4)),
        (scalar.clone(), scalar).prop_map(|(b, s)| ramp(b, s, 4)),
    ];
    leaf.prop_recursive(3, 16, 2, |inner| {
        let op = prop::sample::select(vec![
            BinOp::Add,
            BinOp::Sub,
            BinOp::Mul,
            BinOp::Div,
            BinOp::Mod,
        ]);
        prop_oneof![
            (op, inner.clone(), inner.clone()).prop_map(|(op, a, b)| bin(op, a, b)),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| min(a, b)),
            (inner.clone(), inner.clone(), inner).prop_map(|(a, b, c)| select(
                lt(a.clone(), b.clone()),
                c,
                a
            )),
        ]
    })
    .boxed()
}

/// Index arithmetic as splits produce it: `(a * c + b) / c`, `% c`, mins and comparisons.
fn split_strategy() -> BoxedStrategy<Expr> {
    let leaf = prop_oneof![
        prop::sample::select(VARS.to_vec()).prop_map(var),
        (-10i32..10).prop_map(int),
    ];
    leaf.prop_recursive(4, 24, 2, |inner| {
        let k = prop::sample::select(vec![1, 2, 3, 4, 7, 8, 16, 20]);
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| add(a, b)),
            (inner.clone(), k.clone()).prop_map(|(a, k)| mul(a, int(k))),
            (inner.clone(), inner.clone(), k.clone())
                .prop_map(|(a, b, k)| div(add(mul(a, int(k)), b), int(k))),
            (inner.clone(), inner.clone(), k.clone())
                .prop_map(|(a, b, k)| rem(add(mul(a, int(k)), b), int(k))),
            (inner.clone(), k.clone()).prop_map(|(a, k)| div(a, int(k))),
            (inner.clone(), k).prop_map(|(a, k)| rem(a, int(k))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| min(a, b)),
            (inner.clone(), inner.clone(), inner.clone(), inner).prop_map(|(a, b, t, f)| select(
                lt(a, b),
                t,
                f
            )),
        ]
    })
    .boxed()
}

// ----- (4), (5) statements -----

fn for_(v: &str, min: Expr, extent: Expr, body: Stmt) -> Stmt {
    Stmt::For {
        var: v.into(),
        min,
        extent,
        kind: ForKind::Serial,
        body: Box::new(body),
    }
}

fn slet(name: &str, value: Expr, body: Stmt) -> Stmt {
    Stmt::Let {
        name: name.into(),
        value,
        body: Box::new(body),
    }
}

fn store(buffer: &str, index: Expr, value: Expr) -> Stmt {
    Stmt::Store {
        buffer: buffer.into(),
        index,
        value,
    }
}

/// A kernel with an `i32[64]` input `A`, an `i32[64]` output `out` and an `i32` parameter `p`.
fn kernel(body: Stmt) -> LoweredKernel {
    let arg = |name: &str| BufferArg {
        name: name.into(),
        dtype: Dtype::I32,
        extents: vec![int(64)],
    };
    LoweredKernel {
        name: "k".into(),
        inputs: vec![arg("A")],
        params: vec![("p".into(), Dtype::I32)],
        output: arg("out"),
        sizes: vec![],
        input_regions: vec![],
        output_region: vec![],
        domain_bounds: vec![],
        serial_vectors: vec![],
        conditions: vec![],
        body,
    }
}

/// Runs a statement before and after `simplify` and checks the outputs agree.
fn simplify_and_run(body: &Stmt) -> Stmt {
    let args = Args::new()
        .buffer(
            "A",
            Buffer::from_vec(&[64], (0..64).map(|i| i * 3 - 50).collect::<Vec<i32>>()).unwrap(),
        )
        .scalar("p", Value::I32(5));
    let simplified = simplify(body);
    let before = interpret(&kernel(body.clone()), &args).unwrap();
    let after = interpret(&kernel(simplified.clone()), &args).unwrap();
    assert_eq!(
        before, after,
        "simplify changed the output of\n{body}\ninto\n{simplified}"
    );
    simplified
}

#[test]
fn split_indices_simplify_inside_their_loops() {
    // for xo in 0..8 { for xi in 0..8 { out[(x % 8) + (x / 8) * 8] = x / 8 } }, x = xo * 8 + xi
    let x = || add(mul(var("xo"), int(8)), var("xi"));
    let index = add(rem(x(), int(8)), mul(div(x(), int(8)), int(8)));
    let body = for_(
        "xo",
        int(0),
        int(8),
        for_("xi", int(0), int(8), store("out", index, div(x(), int(8)))),
    );
    let want = for_(
        "xo",
        int(0),
        int(8),
        for_(
            "xi",
            int(0),
            int(8),
            store("out", add(var("xi"), mul(var("xo"), int(8))), var("xo")),
        ),
    );
    assert_eq!(simplify_and_run(&body), want);
}

#[test]
fn proven_conditions_and_trivial_loops_go() {
    let guarded = Stmt::If {
        cond: lt(add(var("xi"), int(8)), int(16)),
        then_case: Box::new(store("out", var("xi"), int(1))),
        else_case: Some(Box::new(store("out", var("xi"), int(2)))),
    };
    let body = Stmt::block(vec![
        for_("xi", int(0), int(8), guarded),
        for_("e", int(3), int(0), store("out", var("e"), int(9))),
        for_("one", int(3), int(1), store("out", var("one"), int(7))),
        for_(
            "n",
            int(0),
            int(4),
            slet("unused", Expr::Param("p".into(), Dtype::I32), Stmt::NoOp),
        ),
    ]);
    let want = Stmt::block(vec![
        for_("xi", int(0), int(8), store("out", var("xi"), int(1))),
        store("out", int(3), int(7)),
    ]);
    assert_eq!(simplify_and_run(&body), want);
}

#[test]
fn loop_invariant_lets_are_hoisted() {
    // for y in 0..4 { for x in 0..8 {
    //   let s = p * 3; let row = y * 8; let v = A[row + x]; let o = out[row]; out[row + x] = v + s + o
    // } }
    let inner = slet(
        "s",
        mul(Expr::Param("p".into(), Dtype::I32), int(3)),
        slet(
            "row",
            mul(var("y"), int(8)),
            slet(
                "v",
                load("A", add(var("row"), var("x"))),
                slet(
                    "o",
                    load("out", var("row")),
                    store(
                        "out",
                        add(var("row"), var("x")),
                        add(add(var("v"), var("s")), var("o")),
                    ),
                ),
            ),
        ),
    );
    let body = for_("y", int(0), int(4), for_("x", int(0), int(8), inner));
    let got = simplify_and_run(&body);
    // s leaves both loops, row leaves the x loop; v uses x, and o reads the buffer the loop writes.
    let Stmt::Let { name, body, .. } = &got else {
        panic!("s was not hoisted:\n{got}")
    };
    assert_eq!(name, "s");
    let Stmt::For { var: y, body, .. } = &**body else {
        panic!("expected the y loop:\n{got}")
    };
    assert_eq!(y, "y");
    let Stmt::Let { name, body, .. } = &**body else {
        panic!("row was not hoisted:\n{got}")
    };
    assert_eq!(name, "row");
    let Stmt::For { body, .. } = &**body else {
        panic!("expected the x loop:\n{got}")
    };
    assert!(
        matches!(&**body, Stmt::Let { name, .. } if name == "v"),
        "v must stay in the loop:\n{got}"
    );
}

#[test]
fn hoisting_does_not_capture_or_read_in_a_loop_that_may_not_run() {
    // The loop's extent mentions an outer `n`; hoisting `let n = 2` above it would capture it.
    let shadow = slet(
        "n",
        int(8),
        for_(
            "i",
            int(0),
            var("n"),
            slet("n", add(var("p"), int(2)), store("out", var("i"), var("n"))),
        ),
    );
    let s = crate::simplify::hoist_loop_invariants(&shadow);
    assert_eq!(s, shadow);
    // A load above a loop of unknown extent could read where the loop never would.
    let maybe_empty = for_(
        "i",
        int(0),
        var("m"),
        slet("v", load("A", int(63)), store("out", var("i"), var("v"))),
    );
    let s = crate::simplify::hoist_loop_invariants(&maybe_empty);
    assert_eq!(s, maybe_empty);
}

#[test]
fn dead_statement_lets_are_removed_and_trivial_ones_inlined() {
    let body = slet(
        "a",
        var("p"),
        slet(
            "dead",
            mul(var("p"), int(2)),
            store("out", int(0), add(var("a"), int(1))),
        ),
    );
    let body = Stmt::Let {
        name: "p".into(),
        value: int(4),
        body: Box::new(body),
    };
    assert_eq!(simplify(&body), store("out", int(0), int(5)));
}

#[test]
fn statement_cse_names_stay_unique() {
    let e = || mul(add(var("t0"), int(1)), add(var("t0"), int(1)));
    let body = for_(
        "t0",
        int(0),
        int(4),
        Stmt::block(vec![
            store("out", var("t0"), e()),
            store("out", add(var("t0"), int(4)), e()),
        ]),
    );
    let got = simplify_and_run(&body);
    let mut names = Vec::new();
    got.for_each_expr(&mut |x| {
        if let Expr::Let { name, .. } = x {
            names.push(name.clone());
        }
    });
    assert_eq!(names, ["t1", "t2"], "{got}");
}
